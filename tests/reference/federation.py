"""Federated queries: the reference's `query_federated` over seeded stores.

    federation.py --seed S --out DIR [--requests R]

Builds four stores in DIR:

* `a` (the default store): a hand-shaped store (make_cases.build_hand_store, rich);
* `b`: another hand-shaped store (its own extractor registry, trust statements,
  lenses: the viewer policies differ), plus particles copied from `a` under the same
  ids (some with their sources, some without, so the copies' effective confidences
  may differ), copies under new ids with the same vector, confidence and sources
  (ties across stores), `a`'s subjects (overlapping subjects) and co-evidential
  edges among the copies and to `b`'s own particles;
* `c`: a byte copy of `a` (two handles over copies of one database);
* `d`: a third hand-shaped store.

and one configuration per request, DIR/federation-S-I.yaml, naming them as handles
in `storage.stores` (with `a` also the default store), with the ranking keys either
at their defaults or random (configured.random_config). Each request names handles
in order (repeats included: `--store a --store a`), a cut, maybe a confidence floor
or a subject of `a`, and a vector (or none). The reference runs with
PARTICLES_CONFIG naming the request's file, HOME an empty directory,
`reset_config()` before each request, the clock frozen and the encoder stubbed (as
oracle.py does), and the answer step stubbed out (ranking never depends on it).

Prints the path of DIR/federation-S.json: a list of {"config", "handles", "request",
"expected"}, expected being {"hits": [{"id", "eff", "sim"}]} (ids and effective
confidences from the response; `sim` from the list the response was built from,
which the response itself does not carry) or {"error": ...}.
"""

import argparse
import asyncio
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import uuid
from datetime import datetime, timezone
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
import configured  # noqa: E402
import make_cases  # noqa: E402
import oracle  # noqa: E402

HANDLE_LISTS = [
    ["a", "b"], ["b", "a"], ["a", "b", "d"], ["d", "b", "a"], ["a", "a"], ["a", "c"], ["c", "a"],
    ["default"], ["b"], ["a", "b", "a"], ["b", "c", "a"], ["default", "c"],
]


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def overlap(a: Path, b: Path, rng: random.Random) -> None:
    """Copies of `a`'s particles into `b`: same ids, new ids (ties), subjects, edges."""
    db = sqlite3.connect(b)
    db.execute("ATTACH DATABASE ? AS a", (str(a),))
    ids = [r[0] for r in db.execute("SELECT id FROM a.particles WHERE status = 'ACTIVE' ORDER BY rowid")]
    shared = rng.sample(ids, min(len(ids), 15))
    tied = rng.sample(ids, min(len(ids), 6))
    db.execute("INSERT OR IGNORE INTO subjects SELECT * FROM a.subjects")
    marks = ",".join("?" * len(shared))
    db.execute(f"INSERT INTO particles SELECT * FROM a.particles WHERE id IN ({marks})", shared)
    db.execute(f"INSERT OR IGNORE INTO particle_subjects SELECT * FROM a.particle_subjects WHERE particle_id IN ({marks})",
               shared)
    # Sources of every tied particle and of half the shared ones: the rest rank on
    # `b`'s lack of a source row.
    with_sources = tied + shared[: len(shared) // 2]
    for pid in with_sources:
        (provenance,) = db.execute("SELECT provenance_json FROM a.particles WHERE id = ?", (pid,)).fetchone()
        for ref in json.loads(provenance or "[]"):
            entry = ref.get("corpus_entry_id")
            if entry:
                db.execute("INSERT OR IGNORE INTO corpus_entries SELECT * FROM a.corpus_entries WHERE entry_id = ?",
                           (entry,))
                db.execute("INSERT OR IGNORE INTO snapshots SELECT * FROM a.snapshots WHERE entry_id = ?", (entry,))
    db.execute("CREATE TEMP TABLE tied AS SELECT * FROM a.particles WHERE 0")
    for pid in tied:
        db.execute("INSERT INTO temp.tied SELECT * FROM a.particles WHERE id = ?", (pid,))
        db.execute("UPDATE temp.tied SET id = ? WHERE id = ?", (_uid(rng), pid))
    db.execute("INSERT INTO main.particles SELECT * FROM temp.tied")
    copies = [r[0] for r in db.execute("SELECT id FROM temp.tied")]
    own = [r[0] for r in db.execute("SELECT id FROM main.particles WHERE status = 'ACTIVE' ORDER BY rowid")]
    # Co-evidential groups inside `b` across the copies and its own particles; `a`'s
    # edges among the shared ids come along where `a` had them.
    db.execute(f"INSERT OR IGNORE INTO main.particle_relations SELECT * FROM a.particle_relations "
               f"WHERE particle_a IN ({marks}) AND particle_b IN ({marks})", shared + shared)
    for _ in range(12):
        first, second = sorted(rng.sample(shared + copies + own, 2))
        db.execute("INSERT OR IGNORE INTO main.particle_relations VALUES (?,?,?,?,?,?)",
                   (first, second, "CO_EVIDENTIAL", "gen", "2024-01-01 00:00:00.000000",
                    rng.choice([1.0, 0.75, 0.5, 0.25, 0.0])))
    db.commit()
    db.close()


def build_stores(out: Path, seed: int) -> tuple[dict, dict]:
    stores = {name: (out / f"fed-{seed}-{name}.db").resolve() for name in "abcd"}
    facts = make_cases.build_hand_store(stores["a"], seed, rich=True)
    make_cases.build_hand_store(stores["b"], seed + 5000, rich=True)
    make_cases.build_hand_store(stores["d"], seed + 9000)
    overlap(stores["a"], stores["b"], random.Random(seed))
    shutil.copyfile(stores["a"], stores["c"])
    return stores, facts


def config_for(stores: dict, rng: random.Random) -> dict:
    config = configured.random_config(rng, stores["a"]) if rng.random() < 0.5 else {"network": {"egress": "none"}}
    config["storage"] = {
        "database_url": f"sqlite+aiosqlite:///{stores['a']}",
        "stores": {name: f"sqlite+aiosqlite:///{path}" for name, path in stores.items()},
    }
    return config


def plan(stores: dict, facts: dict, out: Path, seed: int, count: int) -> list[dict]:
    import numpy as np

    rng = random.Random(seed * 31337 + 11)
    nrng = np.random.default_rng(seed)
    cases = []
    for index in range(count):
        path = (out / f"federation-{seed}-{index}.yaml").resolve()
        path.write_text(yaml.safe_dump(config_for(stores, rng), sort_keys=False))
        roll = rng.random()
        vector = None if roll < 0.2 else (rng.choice(facts["vectors"]) if roll < 0.7 else make_cases._unit(nrng).tolist())
        request = {
            "vector": vector,
            "top_k": rng.choice([1, 2, 3, 5, 10, 20, 40, 200]),
            "min_confidence": rng.choice([0.0, 0.0, 0.0, 0.3]),
            "now": rng.choice(make_cases.NOWS),
        }
        if rng.random() < 0.15:
            request["subject_id"] = rng.choice(facts["subjects"])
        handles = HANDLE_LISTS[index % len(HANDLE_LISTS)]
        cases.append({"config": str(path), "handles": handles, "request": request})
    return cases


async def run_case(case: dict) -> dict:
    import numpy as np

    import particles.operations.query.main as query_main
    from particles.core.schema import QueryRequest

    configured.use_config(Path(case["config"]))
    request = case["request"]
    now = datetime.fromisoformat(request["now"])
    oracle._FrozenClock.frozen = now if now.tzinfo else now.replace(tzinfo=timezone.utc)
    vector = request["vector"]
    query_vector = None if vector is None else np.asarray(vector, dtype=np.float32)
    query_main._embed = lambda _text: query_vector
    fields = {k: request[k] for k in ("top_k", "min_confidence", "subject_id") if request.get(k) is not None}
    built = {}
    original = query_main._build_response

    async def capture(req, top, *args, **kwargs):
        built["top"] = [(p.id, float(sim), float(eff)) for p, sim, eff in top]
        return await original(req, top, *args, **kwargs)

    async def no_answer(*_args, **_kwargs):
        return "stubbed answer"

    query_main._build_response = capture
    query_main._generate_response = no_answer
    try:
        response = await query_main.query_federated(list(case["handles"]), QueryRequest(question="the question", **fields))
    except Exception as exc:  # compared: ours must fail too
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        query_main._build_response = original
    top = built.get("top", [])
    return {"hits": [{"id": p.id, "eff": float(eff), "sim": top[i][1] if i < len(top) and top[i][0] == p.id else None}
                     for i, (p, eff) in enumerate(zip(response.particles, response.effective_confidences))]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=24)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    configured.isolate_environment(tempfile.mkdtemp(prefix="particles-home-"))
    stores, facts = build_stores(args.out, args.seed)
    cases = plan(stores, facts, args.out, args.seed, args.requests)

    async def run_all():
        for case in cases:
            case["expected"] = await run_case(case)

    asyncio.run(run_all())
    out = args.out / f"federation-{args.seed}.json"
    out.write_text(json.dumps(cases))
    print(out)


if __name__ == "__main__":
    main()
