"""Random configurations of every ranking key, and the reference's rankings under them.

    configured.py --seed S --out DIR --configs N [--requests R]

Builds a rich hand-shaped store (make_cases.build_hand_store with rich=True: the
extractor registry with conformance failures, every calibration source, trust
statements in domains only a configuration assigns, dated snapshots of every source
type, co-evidential edges of varied confidence, narratives) at DIR/configured-S.db.
Then writes N configuration files DIR/config-S-I.yaml, each varying every key that
enters ranking (config-and-stores §2) across its valid range, and for each runs R
requests through the reference's `retrieve_ranked` (oracle.py: clock frozen,
encoder stubbed to the request's float32 vector) with PARTICLES_CONFIG naming the
file, HOME an empty directory and `reset_config()` between configurations. One more
configuration, DIR/config-S-degenerate.yaml, gives every source type a half-life of
0: the reference must abort on it.

Prints the path of DIR/configured-S.json: a list of {"config": PATH, "request": ...,
"expected": ...} (expected as oracle.run_one returns it).
"""

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
import make_cases  # noqa: E402
import oracle  # noqa: E402

SOURCE_TYPE_NAMES = [name for name, _ in make_cases.SOURCE_TYPES]
# Types no store row carries, so a table may name them harmlessly.
EXTRA_SOURCE_TYPES = ["GITHUB_GIST", "GITHUB_PAGES", "MASTODON_POST", "IMAGE", "web_page"]
CAPPABLE_SOURCES = ["EXTRACTOR_DIRECT", "AGENT_ASSERTED", "CALIBRATED_BENCHMARK", "HUMAN_REVIEW"]
EXTRACTOR_IDS = sorted(set(make_cases.EXTRACTORS) | set(make_cases.DEFAULT_EXTRACTOR_WEIGHTS) | {"not-registered"})


def isolate_environment(home: str) -> None:
    """The reference reads only the file we name: no override variable, no user
    file (config-and-stores §7.1)."""
    from particles.config import env_override_names

    for name in list(os.environ):
        if name in env_override_names() or name.startswith("PARTICLES_"):
            del os.environ[name]
    os.environ["HOME"] = home


def use_config(path: Path) -> None:
    """Point the reference at `path` and drop everything cached from the last one."""
    from particles.config import reset_config

    os.environ["PARTICLES_CONFIG"] = str(path)
    reset_config()


def _number(rng: random.Random, low: float, high: float, edges: list) -> object:
    """A value in [low, high]: an edge, a short decimal, or any float; now and then
    written as a string or an int, which the reference's lax validation coerces."""
    roll = rng.random()
    if roll < 0.3:
        value = rng.choice(edges)
    elif roll < 0.6:
        value = round(rng.uniform(low, high), rng.choice([1, 2, 3]))
    else:
        value = rng.uniform(low, high)
    if rng.random() < 0.05:
        return str(value)
    if isinstance(value, float) and value.is_integer() and rng.random() < 0.5:
        return int(value)
    return value


def random_config(rng: random.Random, store: Path) -> dict:
    """A configuration that varies every ranking key (or leaves it to its default)."""
    config: dict = {
        "storage": {"database_url": f"sqlite+aiosqlite:///{store}"},
        "network": {"egress": "none"},
    }
    query: dict = {}
    for key in ("similarity_weight", "confidence_weight"):
        if rng.random() < 0.9:
            query[key] = _number(rng, 0.0, 3.0, [0, 0.0, 1.0, 3.0, 0.6, 0.4])
    if rng.random() < 0.85:
        query["narrative_rank_weight"] = _number(rng, 0.0, 1.0, [0.0, 1.0, 0.6, 0.5])
    if rng.random() < 0.85:
        query["equivalence_threshold"] = _number(rng, 0.0, 1.0, [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    config["query"] = query

    roll = rng.random()
    if roll < 0.15:
        config["content_age_decay"] = {"sources": {}}
    elif roll < 0.8:
        table = {}
        for source_type in rng.sample(SOURCE_TYPE_NAMES + EXTRA_SOURCE_TYPES, rng.randint(1, 8)):
            rule = {"half_life_days": rng.choice([0.5, 1, 30.0, 365, 5000.0, round(rng.uniform(0.1, 4000), 2),
                                                  rng.uniform(0.01, 10000)])}
            floor_roll = rng.random()
            if floor_roll < 0.2:
                pass  # the default floor, 0.10
            elif floor_roll < 0.3:
                rule["floor"] = rng.choice([1.2, 1.5, 2])  # above 1: only the clamp caps it
            elif floor_roll < 0.35:
                rule["floor"] = -0.5  # never wins
            else:
                rule["floor"] = _number(rng, 0.0, 1.0, [0.0, 0.1, 0.5, 0.99, 1.0])
            table[source_type] = rule
        config["content_age_decay"] = {"sources": table}

    roll = rng.random()
    if roll < 0.15:
        config["trust"] = {"source_type_domains": {}}
    elif roll < 0.8:
        domains = {
            "WEB_PAGE": "web", "PDF": rng.choice(["web", "documents"]),
            "CONVERSATION": rng.choice(["agent-memory", "web"]), "LOCAL_MARKDOWN": "",
            "": rng.choice(["", "web"]), "REDDIT_POST": "web",  # a claimed type: never re-domained
            "NUMISTA_API_COIN": "web", "MASTODON_POST": "social media",
        }
        keys = rng.sample(sorted(domains), rng.randint(1, len(domains)))
        config["trust"] = {"source_type_domains": {key: domains[key] for key in keys}}

    if rng.random() < 0.85:
        config["consolidation"] = {"abstraction": {
            "stale_support_discount": _number(rng, 0.0, 1.0, [0.0, 0.5, 1.0])}}
    if rng.random() < 0.85:
        cap = {"enabled": rng.random() < 0.7}
        if rng.random() < 0.9:
            cap["cap_value"] = _number(rng, 0.0, 1.0, [0.0, 0.3, 0.5, 0.7, 1.0])
        if rng.random() < 0.85:
            cap["sources"] = rng.sample(CAPPABLE_SOURCES, rng.randint(0, len(CAPPABLE_SOURCES)))
        config["confidence"] = {"uncalibrated_cap": cap}
    if rng.random() < 0.85:
        cap = {"enabled": rng.random() < 0.7}
        if rng.random() < 0.9:
            cap["cap_value"] = _number(rng, 0.0, 1.0, [0.0, 0.3, 0.5, 1.0])
        if rng.random() < 0.85:
            cap["exempt"] = rng.sample(EXTRACTOR_IDS, rng.randint(0, 4))
        config["conformance"] = {"trust_cap": cap}
    return config


def plain_requests(store: Path, facts: dict, rng: random.Random, count: int) -> list[dict]:
    """Requests with few filters, so that the configuration decides most of the
    ranking: a stored vector (similarity near 1), a random one or none; cuts from 1
    to 200; now and then a confidence floor, an as-of instant or a subject."""
    import numpy as np

    nrng = np.random.default_rng(rng.getrandbits(32))
    out = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.2:
            vector = None
        elif roll < 0.6:
            vector = rng.choice(facts["vectors"])
        else:
            vector = make_cases._unit(nrng).tolist()
        request = {
            "store": str(store), "vector": vector, "use_embeddings": vector is not None,
            "top_k": rng.choice([1, 3, 10, 40, 40, 200, rng.randint(1, 200)]),
            "min_confidence": rng.choice([0.0, 0.0, 0.0, 0.2, 0.5]),
            "now": rng.choice(make_cases.NOWS),
        }
        if rng.random() < 0.1:
            request["as_of"] = rng.choice(make_cases.AS_OFS)
        if rng.random() < 0.1:
            request["subject_id"] = rng.choice(facts["subjects"])
        out.append(request)
    return out


def degenerate_config(store: Path) -> dict:
    """Every source type decays with a half-life of 0: the first dated, aged
    candidate divides by zero."""
    return {
        "storage": {"database_url": f"sqlite+aiosqlite:///{store}"},
        "network": {"egress": "none"},
        "content_age_decay": {"sources": {t: {"half_life_days": 0} for t in SOURCE_TYPE_NAMES}},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--configs", type=int, default=8)
    parser.add_argument("--requests", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    home = tempfile.mkdtemp(prefix="particles-home-")
    isolate_environment(home)

    store = (args.out / f"configured-{args.seed}.db").resolve()
    facts = make_cases.build_hand_store(store, args.seed, rich=True)
    rng = random.Random(args.seed * 104729 + 7)
    plans = []
    for index in range(args.configs):
        path = args.out / f"config-{args.seed}-{index}.yaml"
        path.write_text(yaml.safe_dump(random_config(rng, store), sort_keys=False))
        plans.append((path, plain_requests(store, facts, rng, args.requests)))
    degenerate = args.out / f"config-{args.seed}-degenerate.yaml"
    degenerate.write_text(yaml.safe_dump(degenerate_config(store), sort_keys=False))
    aged = {"store": str(store), "vector": None, "use_embeddings": False, "top_k": 40,
            "min_confidence": 0.0, "now": "2026-06-01T00:00:00Z", "degenerate": True}
    plans.append((degenerate, [aged]))

    async def run_all():
        from particles.config import get_config

        cases = []
        for path, requests in plans:
            use_config(path.resolve())
            try:
                get_config()
            except Exception as exc:  # the configuration itself is refused
                refused = {"error": f"{type(exc).__name__}: {exc}"}
                cases.extend({"config": str(path.resolve()), "request": r, "expected": refused} for r in requests)
                continue
            for request in requests:
                expected = await oracle.run_one(request)
                cases.append({"config": str(path.resolve()), "request": request, "expected": expected})
        return cases

    cases = asyncio.run(run_all())
    out = args.out / f"configured-{args.seed}.json"
    out.write_text(json.dumps(cases))
    print(out)


if __name__ == "__main__":
    main()
