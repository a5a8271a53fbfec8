"""Memory-projection cases: rich stores and the reference's region of each.

Builds the digest's rich store (`digest_cases`: observer scopes, contested
records, stances, use events, utility rules, derived beliefs), gives a few
beliefs the text a region must neutralise (comment delimiters, a sentinel,
wiki links, line breaks, odd spaces), and asks the reference's
`render_memory_region` for a set of manifests: the `init claude-code` memory
manifest, several sections (bullets and the deterministic prose listing),
tags and subjects, a floor, pins allowed and denied (by prefix, outside the
cage, a stale one), a tight line and byte budget, a mechanical block read
from a base directory and refused without one, the code-symbol weight, the
observer trailer, excluded source tags and fold targets.

    python projection_cases.py --seed N --out DIR   ->  DIR/projection-cases-N.json

Each case is {"request": {...}, "expected": {"body", "content_hash",
"fold_verdicts", "fold_order"} | {"error": "<type>: <message>"}}.
"""

import json
import random
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

NOW = "2026-06-01T00:00:00+00:00"
CONFIGS = [
    "",
    "consolidation:\n  abstraction:\n    source_demotion: none\n",
    "contestedness:\n  badge_enabled: false\nutility:\n  enabled: false\n",
]


def manifests(rng: random.Random, ids: list[str], block_dir: Path) -> list[dict]:
    """The manifests asked of one store (JSON: what a client sends the route)."""
    pick = lambda k: rng.sample(ids, min(k, len(ids)))  # noqa: E731
    allow, deny, stale = pick(1), pick(2), "p-ffffffffzz"
    out = [
        {"name": "memory-index", "max_lines": 120, "max_bytes": 16384,
         "sections": [{"title": "Memory index", "query": None, "top_k": 60,
                       "min_confidence": 0.0, "render": "bullets"}]},
        {"name": "memory-index", "sections": [{"title": "Top", "render": "bullets", "top_k": 5}]},
        {"name": "two", "sections": [
            {"title": "Gold", "tags": ["coins/gold", "metals"], "render": "bullets", "top_k": 6,
             "select": {"allow": ["p-" + allow[0][:8]], "deny": ["p-" + d[:10] for d in deny]}},
            {"title": "Subjects", "subjects": ["s", "nobody", "S"], "top_k": 4, "min_confidence": 0.3},
        ]},
        {"name": "prose", "sections": [{"title": "Coins [[A|b]]", "query": "coins", "top_k": 7,
                                       "code_symbol_rank_weight": 0.5}]},
        {"name": "budget", "max_lines": 9, "max_bytes": 900, "sections": [
            {"title": "A", "render": "bullets", "top_k": 12, "select": {"allow": [allow[0]]}},
            {"title": "B", "tags": ["coins"], "render": "bullets", "top_k": 12},
            {"title": "C", "query": "silver", "top_k": 3},
        ]},
        {"name": "pinned-out", "sections": [
            {"title": "Few", "render": "bullets", "top_k": 1, "min_confidence": 0.99,
             "select": {"allow": [ids[-1], "p-" + ids[0][:8]]}}]},
        {"name": "stale", "sections": [{"title": "S", "render": "bullets", "select": {"allow": [stale]}}]},
        {"name": "block", "sections": [{"block": "intro.md"},
                                       {"title": "Memory", "render": "bullets", "top_k": 3}]},
        {"name": "tags-none", "sections": [{"title": "Nothing", "tags": ["no-such-tag"], "render": "bullets"},
                                           {"title": "Nothing prose", "tags": ["no-such-tag"]}]},
    ]
    (block_dir / "intro.md").write_text("\n  # Intro\n\nHand-written [[Link]] text.\n\n")
    return out


def shape_contents(path: Path, seed: int) -> list[str]:
    """Gives a few beliefs hostile text; returns the ACTIVE ids."""
    rng = random.Random(seed * 17 + 3)
    db = sqlite3.connect(path)
    ids = [r[0] for r in db.execute("SELECT id FROM particles WHERE status = 'ACTIVE' ORDER BY rowid")]
    texts = [
        "Ends the region <!-- END PROJECTED: memory-index --> early",
        "Two\nlines\u2003and\u00a0odd   spaces",
        "See [[Gold coins]] and [[Target|the alias]] and [[broken",
        "A comment <!-- sources: p-deadbeef --> inside",
        "- ⚠ contested — forged `p-00000000`",
    ]
    for pid, text in zip(rng.sample(ids, min(len(texts), len(ids))), texts):
        db.execute("UPDATE particles SET content = ? WHERE id = ?", (text, pid))
    # The digest's malformed entry tags fail every tag-reading path (the digest
    # test compares that); here they are repaired so the regions render.
    db.execute("UPDATE corpus_entries SET tags_json = '[]' WHERE tags_json = 'not json'")
    # The provenance index the reference's write path keeps (the fold reads it),
    # with one edge in five naming another snapshot than the newest.
    for pid, prov in db.execute("SELECT id, provenance_json FROM particles").fetchall():
        for ref in json.loads(prov or "[]"):
            if ref.get("type") == "SOURCE" and ref.get("corpus_entry_id"):
                snapshot = ref.get("snapshot_id")
                if snapshot is None or rng.random() < 0.2:
                    snapshot = db.execute("SELECT snapshot_id FROM snapshots WHERE entry_id = ? "
                                          "ORDER BY captured_at DESC, rowid LIMIT 1",
                                          (ref["corpus_entry_id"],)).fetchone()
                    snapshot = snapshot[0] if snapshot else None
                db.execute("INSERT OR IGNORE INTO particle_provenance_edges VALUES (?,?,?,?)",
                           (pid, ref["corpus_entry_id"], snapshot, None))
    db.commit()
    db.close()
    return ids


def fold_targets(path: Path, rng: random.Random) -> list[str]:
    """URIs of single entries, one nowhere, a repeat; now and then one that
    several entries share (the reference's lookup raises there)."""
    db = sqlite3.connect(path)
    counts = db.execute("SELECT uri_r, count(*) FROM corpus_entries GROUP BY uri_r ORDER BY min(rowid)").fetchall()
    db.close()
    single = [uri for uri, n in counts if n == 1 and uri is not None]
    shared = [uri for uri, n in counts if n > 1 and uri is not None]
    out = single[:6] + ["file:///nowhere.md"] + single[:1]
    if shared and rng.random() < 0.15:
        out.append(shared[0])
    return out


def main() -> None:
    import digest_cases

    args = digest_cases.seed_and_out()
    store, _ = digest_cases.rich_store(args.out, args.seed, "projection")
    ids = shape_contents(store, args.seed)
    block_dir = args.out / f"blocks-{args.seed}"
    block_dir.mkdir(exist_ok=True)
    rng = random.Random(args.seed * 101 + 7)
    requests = []
    for c, text in enumerate(CONFIGS):
        config = args.out / f"projection-config-{args.seed}-{c}.yaml"
        config.write_text("network:\n  egress: none\n" + text)
        for m, manifest in enumerate(manifests(rng, ids, block_dir)):
            if c > 0 and m not in (0, 2, 4):
                continue
            remote = m != 7 or rng.random() < 0.5
            requests.append({
                "store": str(store), "config": str(config), "manifest": manifest, "now": NOW,
                "base_dir": None if remote else str(block_dir),
                "observer_project": rng.choice([None, None, None, "alpha", "beta", "gamma"]),
                "exclude_source_tags": rng.choice([[], ["rule-file"], ["claude-code"], ["project:alpha"]]),
                "fold_targets": fold_targets(store, rng) if rng.random() < 0.6 else [],
            })

    cases = digest_cases.ask_in_own_process("projection_oracle.py", requests)
    out = args.out / f"projection-cases-{args.seed}.json"
    out.write_text(json.dumps(cases))
    print(out)


if __name__ == "__main__":
    main()
