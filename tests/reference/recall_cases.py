"""Recall ranking cases: `retrieve_ranked` with the recall callers' options.

The store is a digest store (`digest_cases.py`: the hand store, enriched with
observer scopes, contested records, stances, use events and lens utility
rules), with some corpus entries tagged `rule-file`, some restated by a new
generation (so a belief is stated by an old generation only), and some
docstring-extracted beliefs. Each request is a random ranking request
(`make_cases.requests_for`) with random `apply_utility`, `apply_owner`,
`exclude_source_tags` and `code_symbol_rank_weight`, under a configuration
whose owner lens and usefulness lift bite; the reference answers each in a
process of its own.

    python recall_cases.py --seed N --out DIR   ->  DIR/recall-cases-N.json
"""

import argparse
import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

CONFIG = (
    "network:\n  egress: none\n"
    "utility:\n  default:\n    half_life_uses_days: 3.0\n    rank_lift: 0.25\n"
    "owner_lens:\n  subjects: [s, '{subject}']\n  rank_lift: 0.2\n"
)


def tag_sources(path: Path, seed: int) -> None:
    """Tags some entries `rule-file`, gives some a newer generation, marks some
    beliefs docstring-extracted."""
    rng = random.Random(seed * 911 + 3)
    db = sqlite3.connect(path)
    entries = [row[0] for row in db.execute("SELECT entry_id FROM corpus_entries ORDER BY rowid")]
    for entry in rng.sample(entries, max(1, len(entries) // 3)):
        tags = rng.choice([["rule-file"], ["rule-file", "project:alpha"], ["memory-file"]])
        db.execute("UPDATE corpus_entries SET tags_json = ? WHERE entry_id = ?", (json.dumps(tags), entry))
    for entry in rng.sample(entries, max(1, len(entries) // 4)):
        db.execute("UPDATE corpus_entries SET mutability = 'MUTABLE' WHERE entry_id = ?", (entry,))
        db.execute("INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, warc_record_type, "
                   "extraction_status, extraction_attempts, resume_whole) VALUES (?,?,?,?,?,?,?,?)",
                   (f"gen2-{entry}", entry, "2025-06-01 00:00:00.000000", "h2", "RESPONSE", "COMPLETE", 1, 0))
    ids = [row[0] for row in db.execute("SELECT id FROM particles WHERE status = 'ACTIVE' ORDER BY rowid")]
    for pid in rng.sample(ids, max(1, len(ids) // 6)):
        db.execute("UPDATE particles SET extractor_ref_json = ? WHERE id = ?",
                   ('{"name": "docstring-extractor", "version": "1.0"}', pid))
    db.commit()
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=16)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    import digest_cases
    import make_cases
    import response_oracle

    response_oracle._isolate(args.out)
    store = args.out / f"recall-store-{args.seed}.db"
    facts = make_cases.build_hand_store(store, args.seed)
    response_oracle.enrich(store, args.seed)
    subject = digest_cases.enrich_for_digest(store, args.seed)["subject"]
    tag_sources(store, args.seed)
    config = args.out / f"recall-config-{args.seed}.yaml"
    config.write_text(CONFIG.replace("{subject}", subject[:8]))

    rng = random.Random(args.seed * 4177 + 9)
    requests = make_cases.requests_for(store, facts, rng, args.requests)
    for request in requests:
        request["apply_utility"] = rng.random() < 0.7
        request["apply_owner"] = rng.random() < 0.6
        if rng.random() < 0.6:
            request["exclude_source_tags"] = rng.choice([["rule-file"], ["rule-file", "memory-file"], ["nothing"]])
        if rng.random() < 0.4:
            request["code_symbol_rank_weight"] = rng.choice([0.3, 0.0, 1.0])
        request.pop("as_of", None)  # the lifts read the wall clock; as-of is the query path's
    script = Path(__file__).parent / "oracle.py"
    env = {"PARTICLES_CONFIG": str(config)}
    import os

    done = subprocess.run([sys.executable, str(script)], input=json.dumps(requests), capture_output=True,
                          text=True, check=True, env={**os.environ, **env})
    expected = json.loads(done.stdout)
    cases = [{"request": r, "expected": e, "config": str(config)} for r, e in zip(requests, expected)]
    out = args.out / f"recall-cases-{args.seed}.json"
    out.write_text(json.dumps(cases))
    print(out)


if __name__ == "__main__":
    main()
