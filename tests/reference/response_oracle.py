"""Response oracle: run the reference's `query()` on seeded rich stores and record
the whole QueryResponse.

    response_oracle.py --seed S --out DIR [--requests N] [--cli]

Writes DIR/response-store-S.db and DIR/response-cases-S.json, a list of
{"request": ..., "expected": ...}, and prints the cases' path. `expected` is the
reference's `QueryResponse.model_dump(mode="json")`, or {"error": "<type>: <message>"}
when the reference raised.

The store is make_cases.py's hand-shaped store (every factor of the score), enriched
with what the response reads besides the ranking: open INCONSISTENCY records naming
their pair through PARTICLE refs, DISPUTES/ENDORSES stance particles with
`stance:holder` and `stance:magnitude` (dangling, retired and holder-less ones too),
an adopted trust lens for the contestedness spread (with modality rules on some
seeds) and operator-pinned modalities, PENDING and FAILED snapshots, NARRATIVE
particles with PART_OF / SEQUENCE_IN constituents, subjects with few, no and
ambiguous-prefix particles, and project observers: `project:` tags, harness and
unattributed entries, MUTABLE entries with later and ABSENT generations, widenings,
and (on most seeds) the OBSERVER_SCOPE_RESCOPED marker.

The reference runs in-process with the clock frozen at the request's `now` (as in
oracle.py), the question encoder replaced by the request's vector, and a
configuration of compiled defaults plus `network.egress: none`, so the answer step
fails fast and identically (HOME and PARTICLES_CONFIG point into DIR).

With --cli, each case also carries "cli": what the reference's `particles query`
prints for it (stdout, stderr, exit code), run in-process through its typer app
with `--show-particles` (and `--contestedness` where the request asks for the
spread) on DIR/cli-config.yaml, whose `storage.database_url` is the store. The
CLI has no flag for include_agreement or observer_project, so those requests are
printed without them; `cli_args` lists the flags used.
"""

import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path


def _isolate(out: Path) -> None:
    """Point the reference's configuration at a file of ours before it is read."""
    config = out / "response-config.yaml"
    config.write_text("network:\n  egress: none\n")
    os.environ["PARTICLES_CONFIG"] = str(config)
    os.environ["HOME"] = str(out)
    for key in list(os.environ):
        if key.startswith("PARTICLES_") and key != "PARTICLES_CONFIG":
            del os.environ[key]


sys.path.insert(0, str(Path(__file__).parent))

EPOCH = datetime(2024, 1, 1)
PROJECT_TAGS = [
    [], [], ["project:alpha"], ["project:beta"], ["project:alpha", "project:beta"], ["claude-code"],
    ["scope:unattributed"], ["claude-code", "project:alpha"], ["project:"], ["other", "project:gamma"],
]
HOLDERS = ["agent:alice", "agent:bob", "agent:carol", "agent:dave"]


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S.%f")


def _insert_particles(path: Path, new_particles: list) -> None:
    """Write (Particle, embedding, extra columns) through the reference's row mapping."""
    from sqlalchemy import create_engine, insert

    import particles._orm_modules  # noqa: F401 - registers every table
    from particles.store.particle_store import ParticleRow

    rows = []
    for particle, embedding, extra in new_particles:
        row = ParticleRow.from_model(particle, embedding)
        values = {c.key: getattr(row, c.key) for c in ParticleRow.__table__.columns}
        values["born_retired"] = False
        values["retired_at"] = None
        values.update(extra)
        rows.append(values)
    if not rows:
        return
    engine = create_engine(f"sqlite:///{path}")
    with engine.begin() as conn:
        conn.execute(insert(ParticleRow.__table__), rows)
    engine.dispose()


def enrich(path: Path, seed: int) -> dict:
    """Adds the shapes the response reads to a hand store. Returns request facts."""
    from particles.core.schema import (
        Confidence, ExtractorRef, Particle, ProvenanceRef, ProvenanceRefType,
    )

    rng = random.Random(seed * 104729 + 7)
    db = sqlite3.connect(path)
    entries = [r[0] for r in db.execute("SELECT entry_id FROM corpus_entries ORDER BY rowid")]
    snapshots_of = {}
    for entry_id, snapshot_id in db.execute("SELECT entry_id, snapshot_id FROM snapshots ORDER BY rowid"):
        snapshots_of.setdefault(entry_id, []).append(snapshot_id)
    candidates = db.execute(
        "SELECT id, embedding_json FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL "
        "AND embedding_model_id = 'all-MiniLM-L6-v2' AND (properties_json IS NULL OR "
        "(properties_json NOT LIKE '%stance:holder%' AND properties_json NOT LIKE '%extraction:scope%' "
        "AND properties_json NOT LIKE '%extraction:polarity%')) ORDER BY rowid").fetchall()
    every_id = [r[0] for r in db.execute("SELECT id FROM particles ORDER BY rowid")]
    targets = rng.sample(candidates, min(len(candidates), 14))
    target_ids = [t[0] for t in targets]
    vectors = [json.loads(t[1]) for t in targets]

    # Co-evidential twins among the targets, so stances reach a hit through its group.
    for _ in range(rng.randint(1, 4)):
        a, b = sorted(rng.sample(target_ids, 2))
        db.execute("INSERT OR IGNORE INTO particle_relations VALUES (?,?,?,?,?,?)",
                   (a, b, "CO_EVIDENTIAL", "gen", _ts(EPOCH), rng.choice([1.0, 0.8, 0.0])))

    def source_ref():
        entry_id = rng.choice(entries)
        return ProvenanceRef(type=ProvenanceRefType.SOURCE, corpus_entry_id=entry_id,
                             snapshot_id=rng.choice(snapshots_of.get(entry_id, []) + [None]))

    new_particles = []

    def particle(pid, content, **fields):
        defaults = dict(
            id=pid, content=content,
            confidence=Confidence(value=rng.choice([0.4, 0.6, 0.8, 0.9, 1.0]),
                                  calibration_source=rng.choice(["EXTRACTOR_DIRECT", "HUMAN_REVIEW"])),
            uncertainty_nature="EPISTEMIC", provenance=[source_ref()], asserted_by="gen",
            asserted_at=EPOCH - timedelta(days=rng.uniform(0, 900)),
            extractor_ref=rng.choice([None, ExtractorRef(name=rng.choice(
                ["general-extractor", "reddit-extractor", "mystery-extractor"]), version="1")]),
        )
        defaults.update(fields)
        return Particle(**defaults)

    # Stance particles: one target each (a stance with edges of both kinds to one
    # member keeps DISPUTES); dangling, retired and holder-less ones too.
    for i in range(rng.randint(6, 16)):
        sid = _uid(rng)
        holder = rng.choice(HOLDERS + HOLDERS + ["", None])
        properties = {}
        if holder is not None:
            properties["stance:holder"] = holder
        magnitude = rng.choice([None, 0.7, 1, 0.25, True, "high", 0.0])
        if magnitude is not None:
            properties["stance:magnitude"] = magnitude
        derived = rng.random() < 0.15
        provenance = [source_ref()]
        calibration = rng.choice(["EXTRACTOR_DIRECT", "HUMAN_REVIEW"])
        if derived:
            calibration = "DERIVED"
            provenance.append(ProvenanceRef(type=ProvenanceRefType.PARTICLE,
                                            corpus_entry_id=rng.choice(every_id), snapshot_id=None))
        status = rng.choices(["ACTIVE", "RETRACTED", "SUPERSEDED"], [8, 1, 1])[0]
        new_particles.append((particle(
            sid, f"{holder} holds a view on claim {i}.", properties=properties or None, status=status,
            provenance=provenance,
            confidence=Confidence(value=rng.choice([0.3, 0.5, 0.75, 0.9]), calibration_source=calibration),
        ), None, {}))
        target = rng.choice(target_ids)
        kinds = rng.choice([["DISPUTES"], ["ENDORSES"], ["ENDORSES"], ["ENDORSES", "DISPUTES"]])
        for kind in kinds:
            db.execute("INSERT OR IGNORE INTO particle_relations VALUES (?,?,?,?,?,?)",
                       (sid, target, kind, "gen", _ts(EPOCH), 1.0))
    for _ in range(rng.randint(0, 2)):  # dangling: no such stance particle
        db.execute("INSERT OR IGNORE INTO particle_relations VALUES (?,?,?,?,?,?)",
                   (_uid(rng), rng.choice(target_ids), rng.choice(["DISPUTES", "ENDORSES"]), "gen",
                    _ts(EPOCH), 1.0))

    # Open INCONSISTENCY records naming their pair through PARTICLE refs.
    for i in range(rng.randint(2, 6)):
        members = rng.sample(target_ids, rng.randint(1, 2))
        roll = rng.random()
        if roll < 0.2:
            members.append(_uid(rng))  # a member that no longer exists
        elif roll < 0.4:
            members.append(rng.choice(every_id))  # any status
        provenance = [ProvenanceRef(type=ProvenanceRefType.PARTICLE, corpus_entry_id=m, snapshot_id=m)
                      for m in members]
        new_particles.append((particle(
            _uid(rng), f"Conflict record {i}.", status=rng.choices(["INCONSISTENCY", "RETRACTED"], [5, 1])[0],
            provenance=provenance, assertion_modality="FALSIFIABLE",
        ), None, {}))

    # Narratives: a chain, an isolated constituent, an edge leaving the set, a
    # missing constituent, a narrative with no constituents.
    for n in range(rng.randint(1, 3)):
        nid = _uid(rng)
        base = rng.choice(vectors)
        new_particles.append((particle(nid, f"The story {n} of the coins.", particle_type="NARRATIVE",
                                       provenance=[source_ref()]), base, {}))
        vectors.append(base)
        if n == 0 and rng.random() < 0.3:
            continue
        constituents = rng.sample(every_id, min(len(every_id), rng.randint(2, 6)))
        if rng.random() < 0.3:
            constituents.append(_uid(rng))
        for cid in constituents:
            db.execute("INSERT OR IGNORE INTO particle_relations VALUES (?,?,?,?,?,?)",
                       (cid, nid, "PART_OF", "gen", _ts(EPOCH), 1.0))
        chain = rng.sample(constituents, rng.randint(0, len(constituents)))
        for a, b in zip(chain, chain[1:]):
            db.execute("INSERT OR IGNORE INTO particle_relations VALUES (?,?,?,?,?,?)",
                       (a, b, "SEQUENCE_IN", "gen", _ts(EPOCH), 1.0))
        if chain and rng.random() < 0.4:
            db.execute("INSERT OR IGNORE INTO particle_relations VALUES (?,?,?,?,?,?)",
                       (chain[-1], rng.choice(every_id), "SEQUENCE_IN", "gen", _ts(EPOCH), 1.0))

    db.commit()
    db.close()
    _insert_particles(path, new_particles)
    db = sqlite3.connect(path)

    # Pending and failed snapshots, interleaved in rowid order.
    gap_entries = rng.sample(entries, min(len(entries), rng.randint(1, 4)))
    for _ in range(rng.randint(2, 8)):
        entry_id = rng.choice(gap_entries + [None])
        if entry_id is None:
            entry_id = _uid(rng)
            db.execute("INSERT INTO corpus_entries (entry_id, uri_r, source_type, mutability, fetch_policy, "
                       "created_at, deposited_by, tags_json) VALUES (?,?,?,?,?,?,?,?)",
                       (entry_id, None, "WEB_PAGE", "STABLE", "NEVER", _ts(EPOCH), "gen", "[]"))
            gap_entries.append(entry_id)
        db.execute("INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, warc_record_type, "
                   "extraction_status, extraction_attempts, resume_whole) VALUES (?,?,?,?,?,?,?,?)",
                   (_uid(rng), entry_id, _ts(EPOCH), "h", "RESPONSE", rng.choice(["PENDING", "FAILED"]), 0, 0))

    # Subjects: none, few and many particles; an ambiguous prefix; quotes in names.
    subject_specs = [
        ("sub-empty-0001", "An empty subject", 0), ("sub-few-0001", "O'Brien's coin", 1),
        ("sub-few-0002", 'The "few" coin', 2), ("sub-many-0001", "Many coins", 5),
        ("amb-1-0001", "Ambiguous one", 1), ("amb-2-0001", "Ambiguous two", 0),
    ]
    active_claims = [r[0] for r in db.execute(
        "SELECT id FROM particles WHERE status = 'ACTIVE' AND particle_type = 'CLAIM' ORDER BY rowid")]
    for subject_id, name, count in subject_specs:
        db.execute("INSERT INTO subjects (id, canonical_name, aliases_json, external_ids_json, created_at, "
                   "asserted_by) VALUES (?,?,?,?,?,?)", (subject_id, name, "[]", "{}", _ts(EPOCH), "gen"))
        linked = rng.sample(target_ids, min(count, len(target_ids)))
        if count and rng.random() < 0.5:
            linked.append(rng.choice(every_id))  # maybe retired or not a CLAIM
        for pid in linked:
            db.execute("INSERT OR IGNORE INTO particle_subjects VALUES (?,?)", (pid, subject_id))
            (current,) = db.execute("SELECT subject_ids_json FROM particles WHERE id = ?", (pid,)).fetchone()
            ids = json.loads(current or "[]")
            if subject_id not in ids:
                ids.append(subject_id)
            db.execute("UPDATE particles SET subject_ids_json = ? WHERE id = ?", (json.dumps(ids), pid))
    del active_claims

    # An adopted lens that moves trust for the hits' sources (contestedness), with
    # modality rules on some seeds; operator-pinned modalities. Adopted last but
    # named first, so the renderings' order is adoption order, not name order. (It
    # has no url_pattern rule: the ranking's own lens composition reads lenses in
    # name order, which only the order of summed URL modifiers could show.)
    if rng.random() < 0.8:
        lens_id, name = _uid(rng), f"a-lens-{seed}"
        db.execute("INSERT INTO trust_lenses VALUES (?,?,?,?,?,?,?)", (lens_id, name, 2, "pub", None, None, _ts(EPOCH)))
        entries_rows = [
            ("statement", dict(domain="social media", source_type="REDDIT_POST", trust_rank=0.2)),
            ("statement", dict(domain="numismatics", source_type="NUMISTA_API_COIN", trust_rank=0.35)),
            ("domain", dict(pattern="en.wikipedia.org", score=0.15)),
            ("domain", dict(pattern="blog.example.com", score=0.95)),
            ("domain", dict(pattern="*", score=0.4)),
            ("extractor_weight", dict(extractor_id="general-extractor", weight=0.35)),
            ("extractor_weight", dict(extractor_id="reddit-extractor", weight=0.9)),
        ]
        if rng.random() < 0.5:
            pick = rng.choice(target_ids)
            entries_rows += [
                ("modality_particle", dict(pattern=pick, modality="EVALUATIVE")),
                ("modality_particle", dict(pattern=rng.choice(target_ids), modality="FALSIFIABLE")),
                ("modality_subject", dict(pattern="sub-many-0001", modality="EXPERIENTIAL", modality_when="FALSIFIABLE")),
                ("modality_source_type", dict(pattern="REDDIT_POST", modality="FALSIFIABLE")),
                ("modality_source_type", dict(pattern="WEB_PAGE", modality="CONSTITUTIVE", modality_when="EVALUATIVE")),
                ("modality_url_pattern", dict(pattern=r"wikipedia\.org", modality="EVALUATIVE")),
                ("modality_url_pattern", dict(pattern=r"[unclosed", modality="EVALUATIVE")),
            ]
        for kind, fields in rng.sample(entries_rows, rng.randint(3, len(entries_rows))):
            columns = ["id", "lens_id", "entry_kind", *fields]
            db.execute(f"INSERT INTO trust_lens_entries ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       (_uid(rng), lens_id, kind, *fields.values()))
        db.execute("INSERT INTO trust_lens_adoptions VALUES (?,?,?)", (name, _ts(EPOCH), "op"))
    for pid in rng.sample(target_ids, rng.randint(0, 3)):
        db.execute("UPDATE particles SET modality_classifier = 'operator' WHERE id = ?", (pid,))

    # Observer scope: project tags, mutable entries with later generations.
    for entry_id in entries:
        db.execute("UPDATE corpus_entries SET tags_json = ? WHERE entry_id = ?",
                   (json.dumps(rng.choice(PROJECT_TAGS)), entry_id))
    mutable = rng.sample(entries, min(len(entries), rng.randint(1, 4)))
    for k, entry_id in enumerate(mutable):
        db.execute("UPDATE corpus_entries SET mutability = 'MUTABLE' WHERE entry_id = ?", (entry_id,))
        # Distinct capture instants: ties would fall to SQLite's row order.
        for j, snapshot_id in enumerate(snapshots_of.get(entry_id, [])):
            db.execute("UPDATE snapshots SET captured_at = ? WHERE snapshot_id = ?",
                       (_ts(EPOCH - timedelta(days=400 - 30 * j, minutes=k)), snapshot_id))
        roll = rng.random()
        later = EPOCH + timedelta(days=rng.choice([100, 600]), minutes=k)
        if roll < 0.35:  # a newer generation nobody cites: the entry's claims lapse
            db.execute("INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, warc_record_type, "
                       "extraction_status, extraction_attempts, resume_whole) VALUES (?,?,?,?,?,?,?,?)",
                       (_uid(rng), entry_id, _ts(later), "h2", "RESPONSE", "COMPLETE", 1, 0))
        elif roll < 0.55:  # the source was looked for and not found
            db.execute("INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, warc_record_type, "
                       "extraction_status, extraction_attempts, resume_whole) VALUES (?,?,?,?,?,?,?,?)",
                       (_uid(rng), entry_id, _ts(later), "h3", "ABSENT", "COMPLETE", 1, 0))
        elif roll < 0.7:  # a newer generation that was collapsed
            db.execute("INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, warc_record_type, "
                       "extraction_status, extraction_attempts, resume_whole, superseded_by_snapshot_id) "
                       "VALUES (?,?,?,?,?,?,?,?,?)",
                       (_uid(rng), entry_id, _ts(later), "h4", "RESPONSE", "COMPLETE", 1, 0, "x"))
    rescoped = seed % 3 != 0  # seeds 3, 6, ... are never rescoped: the observer stays off
    if rescoped:
        db.execute("INSERT INTO operator_events (event_id, occurred_at, actor, event_type) VALUES (?,?,?,?)",
                   (_uid(rng), _ts(EPOCH), "op", "OBSERVER_SCOPE_RESCOPED"))
    if rng.random() < 0.4:
        db.execute("INSERT INTO observer_scope_statements VALUES (?,?,?,?)",
                   ("particle", rng.choice(target_ids), _ts(EPOCH), "op"))
    if rng.random() < 0.3:
        db.execute("INSERT INTO observer_scope_statements VALUES (?,?,?,?)",
                   ("corpus_entry", rng.choice(entries), _ts(EPOCH), "op"))
    db.commit()
    db.close()
    return {"vectors": vectors, "targets": target_ids, "rescoped": rescoped}


NOWS = ["2026-06-01T00:00:00Z", "2024-03-15T12:30:00", "2025-01-10T08:00:00+05:00"]
AS_OFS = ["2023-06-01T00:00:00Z", "2024-01-01T00:00:00", "2024-06-01T00:00:00+02:00", "2025-06-01T00:00:00Z"]
SUBJECTS = ["sub-empty-0001", "sub-few-0001", "sub-few-0002", "sub-many-0001", "sub-many", "SUB-MANY",
            "amb-", "amb-1", "no-such-subject", "it's-missing", "sub%", "sub_few"]


def requests_for(store: Path, facts: dict, rng: random.Random, count: int) -> list[dict]:
    import numpy as np

    nrng = np.random.default_rng(rng.getrandbits(32))
    out = []
    for i in range(count):
        roll = rng.random()
        if roll < 0.1:
            vector = None
        elif roll < 0.85:
            vector = rng.choice(facts["vectors"])
        else:
            v = nrng.standard_normal(384).astype(np.float32)
            vector = (v / np.linalg.norm(v)).astype(np.float32).tolist()
        request = {
            "store": str(store),
            "vector": vector,
            "top_k": rng.choice([3, 5, 10, 20, 40]),
            "min_confidence": rng.choice([0.0, 0.0, 0.0, 0.2]),
            "now": rng.choice(NOWS),
            "include_agreement": rng.random() < 0.6,
            "include_contestedness": rng.random() < 0.6,
        }
        if rng.random() < 0.5:
            request["observer_project"] = rng.choice(["alpha", "beta", "gamma", "alpha"])
        if rng.random() < 0.3:
            request["subject_id"] = rng.choice(SUBJECTS)
        if rng.random() < 0.2:
            request["as_of"] = rng.choice(AS_OFS)
        if rng.random() < 0.12:
            if rng.random() < 0.3:
                request["on"] = rng.choice(["2020-03-15", "2021-06-01"])
            else:
                request["during"] = rng.choice(["2019-01-01..2021-12-31", "..2020-06-30", "2022-01-01.."])
        if rng.random() < 0.1:
            request["tags"] = rng.sample(["coins", "coins/gold", "metals", "coins/grading"], rng.randint(1, 2))
        if rng.random() < 0.15:
            claim = rng.choice(["object_contains", "object_contains", "predicate", "object_gt"])
            request[claim] = {"object_contains": ["old", "Coin", "5"], "predicate": ["weighs", "MINTED"],
                              "object_gt": ["4", "2019-12-31"]}[claim][rng.randrange(2)]
        if rng.random() < 0.1:
            request["include_document_meta"] = True
        if rng.random() < 0.1:
            request["include_non_asserted"] = True
        out.append(request)
    return out


def _window(during, on):
    import oracle

    return oracle._window(during, on)


async def run_one(request: dict) -> dict:
    """The reference's whole response to one request, or the error it raised."""
    import numpy as np
    from sqlalchemy import event
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    import oracle
    import particles.operations.query.main as query_main
    from particles.core.schema import QueryRequest
    from particles.db import _sqlite_set_pragmas

    now = datetime.fromisoformat(request["now"])
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    oracle._FrozenClock.frozen = now
    vector = request.get("vector")
    query_vector = None if vector is None else np.asarray(vector, dtype=np.float32)
    query_main._embed = lambda _text: query_vector
    fields = {
        key: request[key]
        for key in ("top_k", "subject_id", "min_confidence", "tags", "object_contains", "predicate",
                    "object_gt", "as_of", "include_agreement", "include_contestedness",
                    "observer_project", "include_document_meta", "include_non_asserted")
        if request.get(key) is not None
    }
    try:
        window = _window(request.get("during"), request.get("on"))
        if window is not None:
            fields["window"] = window
        query_request = QueryRequest(question="the question", **fields)
        engine = create_async_engine(f"sqlite+aiosqlite:///{request['store']}")
        event.listen(engine.sync_engine, "connect", _sqlite_set_pragmas)
        try:
            async with AsyncSession(engine) as session:
                response = await query_main.query(session, query_request)
        finally:
            await engine.dispose()
    except Exception as exc:  # compared too: particles-rs must fail where this raises
        return {"error": f"{type(exc).__name__}: {exc}"}
    return response.model_dump(mode="json")


def cli_flags(request: dict) -> list[str]:
    """The `particles query` flags that express `request` (what its CLI can)."""
    flags = ["--show-particles", "--top-k", str(request["top_k"]),
             "--min-confidence", str(request["min_confidence"])]
    if request.get("include_contestedness"):
        flags.append("--contestedness")
    if request["top_k"] in (3, 10):
        flags.append("--show-source")
    for flag, key in (("--include-document-meta", "include_document_meta"),
                      ("--include-non-asserted", "include_non_asserted")):
        if request.get(key):
            flags.append(flag)
    for tag in request.get("tags") or []:
        flags += ["--tag", tag]
    for flag, key in (("--subject", "subject_id"), ("--as-of", "as_of"), ("--during", "during"),
                      ("--on", "on"), ("--object-contains", "object_contains"),
                      ("--predicate", "predicate"), ("--object-gt", "object_gt")):
        if request.get(key) is not None:
            flags.append(f"{flag}={request[key]}")
    return flags


def run_cli(request: dict, out: Path) -> dict:
    """What the reference's CLI prints for `request` on its store."""
    import contextlib
    import io

    import numpy as np

    import oracle
    import particles.operations.query.main as query_main
    from particles.api.cli import app
    from particles.config import reset_config

    config = out / "cli-config.yaml"
    config.write_text(
        f"storage:\n  database_url: sqlite+aiosqlite:///{request['store']}\nnetwork:\n  egress: none\n"
    )
    os.environ["PARTICLES_CONFIG"] = str(config)
    reset_config()
    now = datetime.fromisoformat(request["now"])
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    oracle._FrozenClock.frozen = now
    vector = request.get("vector")
    query_vector = None if vector is None else np.asarray(vector, dtype=np.float32)
    query_main._embed = lambda _text: query_vector
    flags = cli_flags(request)
    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            app(["query", "the question", *flags], prog_name="particles")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:  # an uncaught error ends the CLI with a traceback, exit 1
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
            code = 1
    return {"cli_args": flags, "stdout": stdout.getvalue(), "stderr": stderr.getvalue(),
            "code": code}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--cli", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    _isolate(args.out)

    import make_cases

    store = args.out / f"response-store-{args.seed}.db"
    make_cases.build_hand_store(store, args.seed)
    facts = enrich(store, args.seed)
    rng = random.Random(args.seed * 6151 + 3)
    requests = requests_for(store, facts, rng, args.requests)

    async def run_all():
        return [await run_one(r) for r in requests]

    expected = asyncio.run(run_all())
    cases = [{"request": r, "expected": e} for r, e in zip(requests, expected)]
    if args.cli:
        for case in cases:
            case["cli"] = run_cli(case["request"], args.out)
    path = args.out / f"response-cases-{args.seed}.json"
    path.write_text(json.dumps(cases))
    print(path)


if __name__ == "__main__":
    main()
