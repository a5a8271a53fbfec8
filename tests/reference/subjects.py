"""How the reference resolves `particles query --subject REF`, on a seeded store.

    subjects.py --out DIR

Builds DIR/subjects.db (make_cases.build_hand_store, seed 7) and adds subjects whose
ids share prefixes (one with LIKE's `%`, `_` and `\\` in it), names that collide with
prefixes or with each other, names with non-ASCII capitals (which SQLite's `lower()`
leaves alone), and aliases in the alias index. Then runs the reference's own
`lookup_subject` (the function `particles query --subject` calls) on a list of typed
references and prints a JSON object {"store": PATH, "results": [{"ref": REF,
"id": ID} | {"ref": REF, "message": TEXT}]}, where TEXT is what the reference's CLI
prints before exiting 1 (no match, or ambiguity).
"""

import argparse
import asyncio
import json
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import make_cases  # noqa: E402

# (id, canonical name, created_at, aliases)
SUBJECTS = [
    ("23bafd6c-aaaa-4aaa-8aaa-000000000001", "Gold", "2024-01-03 00:00:00.000000", ["Au", "Aurum"]),
    ("23bafd6c-bbbb-4bbb-8bbb-000000000002", "Silver", "2024-01-02 00:00:00.000000", ["Ag", "ARGENTUM"]),
    ("cafe0000-cccc-4ccc-8ccc-000000000003", "Copper", "2024-01-01 00:00:00.000000", []),
    ("99990000-dddd-4ddd-8ddd-000000000004", "cafe", "2024-01-01 00:00:00.000000", []),
    ("7f00aa00-eeee-4eee-8eee-000000000005", "Émile Zola", "2024-01-01 00:00:00.000000", ["Zola", "ÉMILE"]),
    ("a%b_c\\d-ffff-4fff-8fff-000000000006", "Odd", "2024-01-01 00:00:00.000000", []),
    ("abxc0000-0000-4000-8000-000000000007", "Not odd", "2024-01-01 00:00:00.000000", []),
    ("d0000000-0000-4000-8000-000000000008", "Twin", "2024-01-02 00:00:00.000000", []),
    ("d0000000-0000-4000-8000-000000000009", "twin", "2024-01-01 00:00:00.000000", ["Gemini"]),
    ("5a000000-0000-4000-8000-000000000010", "İstanbul", "2024-01-01 00:00:00.000000", ["Constantinople"]),
    ("5b000000-0000-4000-8000-000000000011", "Straße", "2024-01-01 00:00:00.000000", ["strasse"]),
    ("5c000000-0000-4000-8000-000000000012", "Quartz", "2024-01-01 00:00:00.000000", ["gemini"]),
] + [
    (f"eeee{i:04d}-0000-4000-8000-0000000000{20 + i}", f"E{i}", f"2024-01-0{1 + i % 3} 00:00:00.000000", [])
    for i in range(7)
]

REFERENCES = [
    "23bafd6c-aaaa-4aaa-8aaa-000000000001", " 23bafd6c-aaaa-4aaa-8aaa-000000000001\t",
    "23BAFD6C-AAAA-4AAA-8AAA-000000000001", "23bafd6c", "23BAFD6C-A", "23bafd6c-b", "cafe", "CAFE", "Cafe0",
    "copper", "COPPER", "gold", "aurum", "AU", "argentum", "ag", "Émile Zola", "émile zola", "zola",
    "émile", "ÉMILE", "a%b", "a%", "a_", "ab", "a%b_c\\", "a%b_c\\d", "%", "_", "\\", "odd", "not odd",
    "twin", "TWIN", "gemini", "eeee", "eeee0003", "e3", "İstanbul", "istanbul", "i̇stanbul", "constantinople",
    "straße", "STRASSE", "strasse", "", "   ", "\x1fGold\x1c", "\u00a0gold\u3000", "no-such-subject", "d0000000",
    "'quoted'", "both'\"quotes", "s",
]


def build(out: Path) -> Path:
    store = (out / "subjects.db").resolve()
    make_cases.build_hand_store(store, 7)
    db = sqlite3.connect(store)
    for subject_id, name, created, aliases in SUBJECTS:
        db.execute("INSERT INTO subjects (id, canonical_name, aliases_json, external_ids_json, created_at, "
                   "asserted_by) VALUES (?,?,?,?,?,?)", (subject_id, name, json.dumps(aliases), "[]", created, "gen"))
        keys = {}
        for alias in aliases:
            keys.setdefault(alias.lower(), alias)  # the reference's alias_key: Python lower()
        for key, alias in keys.items():
            db.execute("INSERT INTO subject_aliases VALUES (?,?,?)", (subject_id, key, alias))
    db.commit()
    db.close()
    return store


async def resolve_all(store: Path) -> list[dict]:
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    from particles.store.subject_store import lookup_subject

    engine = create_async_engine(f"sqlite+aiosqlite:///{store}")
    results = []
    try:
        for ref in REFERENCES:
            async with AsyncSession(engine) as session:
                try:
                    subject = await lookup_subject(session, ref)
                except ValueError as exc:
                    results.append({"ref": ref, "message": str(exc)})
                    continue
            if subject is None:
                # api/cli/query.py: the typed text, untrimmed, in Python's repr.
                results.append({"ref": ref, "message": f"No subject matches {ref!r} by ID, ID prefix, or name."})
            else:
                results.append({"ref": ref, "id": subject.id})
    finally:
        await engine.dispose()
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    store = build(args.out)
    results = asyncio.run(resolve_all(store))
    print(json.dumps({"store": str(store), "results": results}))


if __name__ == "__main__":
    main()
