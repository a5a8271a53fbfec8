"""Digest cases: rich stores and the reference's digest of each, to compare with.

Builds a hand store (`make_cases.build_hand_store`), enriches it as the response
oracle does (observer tags and the rescope marker, INCONSISTENCY records,
stances, co-evidential groups), then adds what only the digest reads: use events
(mined and explicit, some in the future, some offset), utility rules on the
adopted lenses, recorded LLM spend (priced, unpriced, malformed-but-skipped) and
sources the extraction model declined (in and out of the retry window, under
another model, on append-only entries). Each case is a store, a configuration
(the belief cap, the badge, the owner lens, utility on or off), a project or
none, an instant, and the reference's `RenderedDigest` (or its error).

    python digest_cases.py --seed N --out DIR   ->  DIR/digest-cases-N.json
"""

import argparse
import json
import random
import sqlite3
import sys
import uuid
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

NOW = "2026-06-01T00:00:00+00:00"
CONFIGS = [
    "",
    "mcp:\n  recall:\n    digest_max_beliefs: 3\n",
    "mcp:\n  recall:\n    digest_max_beliefs: 0\ncontestedness:\n  badge_enabled: false\n",
    "utility:\n  enabled: false\n",
    "utility:\n  default:\n    half_life_uses_days: 2.5\n    rank_lift: 0.4\n  explicit_weight: 3.0\n",
    "owner_lens:\n  subjects: [s, ' S ', nobody, '{subject}']\n  rank_lift: 0.35\n"
    "mcp:\n  recall:\n    digest_max_beliefs: 7\n",
    "extraction:\n  refusal_retry_days: 0\n",
    "llm:\n  extraction:\n    provider: local\n    model: m\n",
]


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def enrich_for_digest(path: Path, seed: int) -> dict:
    """Adds the digest's own rows; returns a subject id the owner lens names."""
    rng = random.Random(seed * 3313 + 11)
    db = sqlite3.connect(path)
    ids = [row[0] for row in db.execute("SELECT id FROM particles WHERE status = 'ACTIVE' ORDER BY rowid")]
    for pid in rng.sample(ids, min(len(ids), max(3, len(ids) // 3))):
        for k in range(rng.randint(1, 4)):
            when = rng.choice([
                "2026-05-30 12:00:00.000000", "2026-04-01 00:00:00.250000", "2025-01-01 00:00:00.000000",
                "2026-07-01 00:00:00.000000", "2026-05-31T20:00:00+02:00", "2026-05-31 23:59:59.999999",
            ])
            db.execute("INSERT INTO utility_events (id, particle_id, session_id, observed_at, match_basis, source) "
                       "VALUES (?,?,?,?,?,?)", (_uid(rng), pid, f"s-{k}", when, None,
                                                rng.choice(["mined", "mined", "explicit", "other"])))
    lens_ids = [row[0] for row in db.execute("SELECT lens_id FROM trust_lenses")]
    for lens_id in lens_ids:
        for kind, pattern, half_life, lift in rng.sample([
            ("utility_default", None, 12.0, 0.3), ("utility_source_type", "CONVERSATION", 5.0, 0.9),
            ("utility_source_type", "WEB_PAGE", 40.0, 0.05), ("utility_url_pattern", r"reddit\.com", 9.0, 0.6),
            ("utility_url_pattern", r"(unclosed", 9.0, 0.6), ("utility_url_pattern", r"github\.com/c", 90.0, 0.01),
        ], rng.randint(0, 4)):
            db.execute("INSERT INTO trust_lens_entries (id, lens_id, entry_kind, pattern, half_life_uses_days, "
                       "rank_lift) VALUES (?,?,?,?,?,?)", (_uid(rng), lens_id, kind, pattern, half_life, lift))
    payloads = [
        {"llm_usage": {"rows": [{"calls": 2}], "cost_usd": 1.25}},
        {"llm_usage": {"rows": [{"calls": 1}, {"calls": 0}], "cost_usd": 1232.875}},
        {"llm_usage": {"rows": [{"calls": 3}], "cost_usd": None}},
        {"llm_usage": {"rows": [{"calls": 0}], "cost_usd": 9.0}},
        {"llm_usage": {"rows": {"calls": 1}}},
        {"llm_usage": "none"},
        None,
        {"other": 1},
    ]
    for payload in rng.sample(payloads, rng.randint(0, len(payloads))):
        db.execute("INSERT INTO operator_events (event_id, occurred_at, actor, event_type, reason, payload) "
                   "VALUES (?,?,?,?,?,?)", (_uid(rng), rng.choice(["2024-12-31 23:00:00.000000", "2025-03-02 10:00:00.000000"]),
                                            "op", rng.choice(["EXTRACT_RUN", "CONSOLIDATION_RUN", "OTHER"]), None,
                                            None if payload is None else json.dumps(payload)))
    snapshots = db.execute("SELECT snapshots.snapshot_id, snapshots.entry_id FROM snapshots ORDER BY rowid").fetchall()
    tags = [[], ["project:alpha"], ["project:beta"], ["claude-code"], ["scope:unattributed"], "not json"]
    for snapshot_id, entry_id in rng.sample(snapshots, min(len(snapshots), rng.randint(0, 5))):
        content_hash = f"held-{snapshot_id}"
        db.execute("UPDATE snapshots SET extraction_status = 'PENDING', content_hash = ? WHERE snapshot_id = ?",
                   (content_hash, snapshot_id))
        entry_tags = rng.choice(tags)
        db.execute("UPDATE corpus_entries SET tags_json = ?, mutability = ? WHERE entry_id = ?",
                   (entry_tags if isinstance(entry_tags, str) else json.dumps(entry_tags),
                    rng.choice(["STABLE", "STABLE", "APPEND_ONLY", "MUTABLE"]), entry_id))
        db.execute("INSERT OR REPLACE INTO extraction_refusals (content_hash, purpose, provider_model, snapshot_id, "
                   "entry_id, category, first_refused_at, last_refused_at, refusals) VALUES (?,?,?,?,?,?,?,?,?)",
                   (content_hash, rng.choice(["extraction", "extraction", "consolidation"]),
                    rng.choice(["anthropic:claude-sonnet-5-5", "anthropic:claude-sonnet-5-5", "local:m"]),
                    snapshot_id, entry_id, None, "2026-01-01 00:00:00.000000",
                    rng.choice(["2026-05-20 00:00:00.000000", "2026-04-01 00:00:00.000000", "2026-05-02 00:00:00.000001"]), 1))
    subject = db.execute("SELECT id FROM subjects ORDER BY id LIMIT 1").fetchone()
    db.commit()
    db.close()
    return {"subject": subject[0] if subject else "none"}


def ask_in_own_process(oracle_script: str, requests: list) -> list:
    """[{"request", "expected"}] of each request, `oracle_script` answering in a
    process of its own: building the store ran the reference's code here, and
    its process-wide caches (the extractor trust weights) would leak in."""
    import subprocess

    done = subprocess.run([sys.executable, str(Path(__file__).parent / oracle_script)],
                          input=json.dumps(requests), capture_output=True, text=True, check=True)
    expected = json.loads(done.stdout)
    return [{"request": r, "expected": e} for r, e in zip(requests, expected)]


def seed_and_out() -> argparse.Namespace:
    """`--seed N --out DIR` (DIR made)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def rich_store(out: Path, seed: int, name: str) -> tuple[Path, dict]:
    """The digest's rich store `OUT/<name>-store-<seed>.db`, the reference's
    configuration pointed at a file of ours; returns it and its facts."""
    import make_cases
    import response_oracle

    response_oracle._isolate(out)
    store = out / f"{name}-store-{seed}.db"
    make_cases.build_hand_store(store, seed)
    response_oracle.enrich(store, seed)
    return store, enrich_for_digest(store, seed)


def main() -> None:
    args = seed_and_out()
    store, facts = rich_store(args.out, args.seed, "digest")
    rng = random.Random(args.seed * 7 + 5)
    requests = []
    for i, text in enumerate(CONFIGS):
        config = args.out / f"digest-config-{args.seed}-{i}.yaml"
        config.write_text("network:\n  egress: none\n" + text.replace("{subject}", facts["subject"][:8]))
        for project in (None, rng.choice(["alpha", "beta", "gamma"])):
            requests.append({"store": str(store), "project": project, "now": NOW, "config": str(config)})

    cases = ask_in_own_process("digest_oracle.py", requests)
    out = args.out / f"digest-cases-{args.seed}.json"
    out.write_text(json.dumps(cases))
    print(out)


if __name__ == "__main__":
    main()
