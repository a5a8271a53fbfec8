"""Structural-mode oracle: the reference's `query()` on seeded stores, without a question.

    structural_oracle.py --seed S --out DIR [--requests N]

Builds DIR/structural-S.db (the hand-shaped store of make_cases.py, then
structured claims of every shape the deterministic modes read, subjects with
classes, external links and creation instants, operator events of the modelling
decision types, and adopted vocabulary documents), draws N requests of every
structural mode (claim listing, count, group_by, predicate listing, vocabulary
report, window listing; with and without as_of, a window, tags, a subject,
min_confidence, min_effective_confidence), runs each through the reference's
`operations/query/main.py:query` in this process with the clock frozen at the
request's `now`, and writes DIR/structural-cases-S.json: a list of
{"request": ..., "expected": QueryResponse.model_dump(mode="json")} or
{"request": ..., "error": "<exception type>: <message>"}. Prints that path.

A request is expressed in the CLI's terms (`during`/`on`, a raw `group_by`
string) so the Rust side can pass it to `particles-rs query` flag for flag.
"""

import argparse
import asyncio
import json
import logging
import random
import sqlite3
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import make_cases  # noqa: E402
import oracle  # noqa: E402  (freezes decay's clock on import)

import particles.operations.query.main as query_main  # noqa: E402
import particles.operations.query.structural as structural_module  # noqa: E402

# The structural path reads the wall clock once more: the recency window.
structural_module.datetime = oracle._FrozenClock
# The reference warns on every malformed extractor ref it reads; the seeded
# stores hold some on purpose.
logging.disable(logging.CRITICAL)

PREDICATES = [
    ("TOKEN", "weighs"), ("TOKEN", "Weighs"), ("TOKEN", "weighed"), ("TOKEN", "moved to"),
    ("TOKEN", "moves to"), ("TOKEN", "Moving to"), ("TOKEN", "moved from"), ("TOKEN", "has been implemented"),
    ("TOKEN", "has status"), ("TOKEN", "was born in"), ("TOKEN", "the capital of"), ("TOKEN", "does not support"),
    ("TOKEN", "supports"), ("TOKEN", "minted in"), ("TOKEN", "diameter"), ("TOKEN", "!!"),
    ("URI", "http://schema.org/weight"), ("URI", "schema:weight"), ("URI", "http://www.wikidata.org/prop/direct/P2067"),
    ("TOKEN", "wrote"), ("TOKEN", "was written by"), ("TOKEN", "Studies"), ("TOKEN", "schema:weight"),
    ("TOKEN", "\u0130s located in"), ("TOKEN", " "), ("TOKEN", "has had"), ("TOKEN", "Stopped using"),
]
OBJECTS = [
    ("LITERAL", "5", "xsd:decimal", None), ("LITERAL", "5.0", "xsd:decimal", None),
    ("LITERAL", "12.5", "http://www.w3.org/2001/XMLSchema#double", None),
    ("LITERAL", "7", "xsd:integer", None), ("LITERAL", "abc", "xsd:decimal", None),
    ("LITERAL", "NaN", "xsd:double", None), ("LITERAL", "2020-01-01", "xsd:date", None),
    ("LITERAL", "2021-06-01T12:00:00+02:00", "http://www.w3.org/2001/XMLSchema#dateTime", None),
    ("LITERAL", "not a date", "xsd:dateTime", None), ("LITERAL", "5", "ex:grams", None),
    ("LITERAL", "1987", None, None), ("LITERAL", " 2026-10-01 ", None, None), ("LITERAL", "1e3", None, None),
    ("LITERAL", "+5", None, None), ("LITERAL", "1_000", None, None), ("LITERAL", "Infinity", None, None),
    ("LITERAL", "Gold Coin", None, None), ("LITERAL", "3 grams", None, None), ("LITERAL", "gold", None, "en"),
    ("LITERAL", "1987", None, "en"), ("LITERAL", "Paris", None, None), ("LITERAL", "Rome", None, None),
    ("TOKEN", "gold", None, None), ("TOKEN", "Paris", None, None), ("URI", "http://example.org/Silver", None, None),
    ("URI", "wd:Q90", None, None),
    # Letters that got a case pair only after Unicode 14 (U+A7CC/U+A7CD, U+1C89/U+1C8A):
    # Python 3.11's casefold leaves them as they are, so `object_contains` with the
    # other letter of the later pair must not match.
    ("LITERAL", "\ua7ccoin of \u1c89", None, None), ("TOKEN", "\ua7cd\u1c8a", None, None),
]
SUBJECT_CLASSES = [None, "", "Coin", "numista:Coin", "http://ex.org/onto#Metal", "http://ex.org/Mint",
                   "artifact:file", "Coin", "Person", "urn:isbn:1"]
NAMESPACES = ["wikidata", "numista", "km_catalog"]
LINK_CONFIDENCES = [None, 1.0, 0.5, 0.1, 0.8, 0.25, 0.2499, 1.0, 0.95]
EVENT_TYPES = ["DUPLICATES_MERGED", "DUPLICATES_UNMERGED", "INCONSISTENCY_CLOSED", "REVIEW_RESOLVED",
               "SUBJECTS_MERGED", "SUBJECTS_SPLIT", "SUBJECT_ALIASED", "SUBJECT_RECLASSIFIED",
               "SUBJECT_LINK_CONFIRMED", "SUBJECT_LINK_REMOVED", "PARTICLE_CREATED", "VOCABULARY_CHANGED"]
AS_OFS = ["2023-06-01T00:00:00Z", "2024-01-01T00:00:00", "2022-01-01T00:00:00+02:00", "2025-06-01T00:00:00Z",
          "2021-03-01T12:00:00Z", "2024-06-30T23:59:59-05:00"]
NOWS = ["2026-06-01T00:00:00Z", "2024-03-15T12:30:00", "2025-01-01T00:00:00+05:00"]
DURINGS = ["2019-01-01..2021-12-31", "..2020-06-30", "2022-01-01..", "2020-05-01T00:00:00Z..2020-05-31",
           "2018-01-01..2018-12-31", "2017-01-01..2026-01-01"]
ONS = ["2020-03-15", "2021-06-01", "2019-11-30T15:00:00", "2022-02-02"]
TAGS = [t for _, t, _ in make_cases.TAXONOMY] + ["ad-hoc", "unknown-tag"]


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S.%f")


def augment(path: Path, seed: int) -> dict:
    """Adds to the hand store what the structural modes read."""
    from particles.core.schema import ClaimTerm, StructuredClaim
    from particles.core.vocabulary import (
        Alias, Alignment, MatchStrength, Ruling, VocabularyDocument, VocabularyTerm,
    )
    from particles.core.vocabulary_jsonld import dumps
    from particles.store.particle_store import structured_claim_payload

    rng = random.Random(seed * 31 + 7)
    epoch = datetime(2024, 1, 1)
    db = sqlite3.connect(path)

    # More rows: copies of the hand-shaped ones under new ids (links and tags
    # copied too), some with the same confidence and assertion instant as their
    # original, so ties on effective confidence and on asserted_at are common.
    columns = [r[1] for r in db.execute("PRAGMA table_info(particles)")]
    originals = db.execute(f"SELECT {', '.join(columns)} FROM particles ORDER BY rowid").fetchall()
    for _ in range(len(originals) * rng.choice([1, 2])):
        row = dict(zip(columns, rng.choice(originals)))
        row["id"] = make_cases._uid(rng)
        row["content"] += " (again)"
        if rng.random() < 0.5:
            row["confidence_value"] = rng.choice([0.3, 0.5, 0.7, 0.9, 1.0])
        db.execute(f"INSERT INTO particles ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                   [row[c] for c in columns])
        for subject in json.loads(row["subject_ids_json"] or "[]"):
            db.execute("INSERT OR IGNORE INTO particle_subjects VALUES (?,?)", (row["id"], subject))
        for tag in json.loads(row["tags_json"] or "null") or []:
            db.execute("INSERT OR IGNORE INTO particle_tag_edges VALUES (?,?)", (row["id"], tag))

    # Subjects: names, classes, links, creation instants (naive and zoned); a few
    # more, some sharing an id prefix.
    subjects = [r[0] for r in db.execute("SELECT id FROM subjects ORDER BY rowid")]
    extra = [make_cases._uid(rng) for _ in range(rng.randint(2, 5))]
    if rng.random() < 0.5:
        extra += ["amb-1", "amb-2"]
    for sid in extra:
        db.execute("INSERT INTO subjects (id, canonical_name, aliases_json, external_ids_json, created_at, "
                   "asserted_by) VALUES (?,?,?,?,?,?)", (sid, "x", "[]", "[]", _ts(epoch), "gen"))
    subjects += extra
    for i, sid in enumerate(subjects):
        links = []
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            link = {"namespace": rng.choice(NAMESPACES), "id": f"Q{rng.randint(1, 999)}"}
            if rng.random() < 0.3:
                link["uri"] = "https://www.wikidata.org/wiki/" + link["id"]
            confidence = rng.choice(LINK_CONFIDENCES)
            if confidence is not None:
                link["confidence"] = confidence
            links.append(link)
        created = epoch + timedelta(days=rng.uniform(-1500, 800))
        created_text = _ts(created) if rng.random() < 0.7 else created.strftime("%Y-%m-%d %H:%M:%S+02:00")
        db.execute("UPDATE subjects SET canonical_name = ?, subject_class = ?, external_ids_json = ?, "
                   "created_at = ? WHERE id = ?",
                   (f"Subject {i} {rng.choice(['Aurum', 'Mint', 'Coin'])}", rng.choice(SUBJECT_CLASSES),
                    json.dumps(links) if links or rng.random() < 0.5 else "{}", created_text, sid))

    # Structured claims on most particles, of every term shape.
    claim_subject_ids = subjects + [None] * len(subjects) + ["unknown-subject", subjects[0][:8],
                                                            subjects[1][:8].upper()]
    if "amb-1" in subjects and rng.random() < 0.3:
        claim_subject_ids.append("amb")  # an ambiguous prefix: group_by subject must fail
    rows = db.execute("SELECT id FROM particles ORDER BY rowid").fetchall()
    for index, (pid,) in enumerate(rows):
        # The first two rows always carry the late-case-pair objects (the last
        # two of OBJECTS), so every store can tell Unicode 14 from a later one.
        if rng.random() < 0.35 and index >= 2:
            continue
        pkind, pvalue = rng.choice(PREDICATES)
        okind, ovalue, datatype, language = rng.choice(OBJECTS) if index >= 2 else OBJECTS[index - 2]
        claim = StructuredClaim(
            subject=ClaimTerm(kind=rng.choice(["TOKEN", "URI"]), value=rng.choice(["coin", "wd:Q1"])),
            predicate=ClaimTerm(kind=pkind, value=pvalue),
            object=ClaimTerm(kind=okind, value=ovalue, datatype=datatype, language=language),
            subject_id=rng.choice(claim_subject_ids),
            structurizer_id=rng.choice(["gen", "llm"]), structurizer_version=rng.choice(["1", "2"]),
            generated_at=epoch,
        )
        db.execute("UPDATE particles SET structured_claim_json = ?, structurizer_id = ?, "
                   "structurizer_version = ?, structured_claim_generated_at = ? WHERE id = ?",
                   (structured_claim_payload(claim), claim.structurizer_id, claim.structurizer_version,
                    _ts(epoch), pid))

    # Restatements: a retired STATE and the ACTIVE claim that supersedes it, both
    # dated (so a window admits both and the successor stands in), the
    # predecessor asserted first (so an as-of instant between the two sees it,
    # with its successor named).
    def parse(text):
        value = datetime.fromisoformat(text)
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)

    def shifted(text, days):
        value = datetime.fromisoformat(text) - timedelta(days=days)
        return _ts(value) if value.tzinfo is None else value.isoformat(sep=" ")

    def zoned(text):
        """The same wall-clock time written with a +02:00 offset."""
        return datetime.fromisoformat(text).replace(tzinfo=None).isoformat(sep=" ") + "+02:00"

    successors = db.execute("SELECT id FROM particles WHERE status = 'ACTIVE' AND valid_from IS NOT NULL "
                            "AND supersedes IS NULL ORDER BY rowid").fetchall()
    for (successor,) in rng.sample(successors, min(len(successors), rng.randint(3, 10))):
        row = dict(zip(columns, db.execute(f"SELECT {', '.join(columns)} FROM particles WHERE id = ?",
                                           (successor,)).fetchone()))
        predecessor = make_cases._uid(rng)
        successor_asserted = row["asserted_at"]
        row.update(id=predecessor, content=row["content"] + " (before)",
                   status=rng.choice(["SUPERSEDED", "SUPERSEDED", "RETRACTED"]), status_reason=None,
                   valid_kind="STATE", valid_until=None, supersedes=None, born_retired=0,
                   valid_from=shifted(row["valid_from"], rng.uniform(10, 700)),
                   asserted_at=shifted(row["asserted_at"], rng.uniform(1, 600)),
                   retired_at=rng.choice([None, None, row["asserted_at"], zoned(row["asserted_at"])]))
        db.execute(f"INSERT INTO particles ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                   [row[c] for c in columns])
        for subject in json.loads(row["subject_ids_json"] or "[]"):
            db.execute("INSERT OR IGNORE INTO particle_subjects VALUES (?,?)", (predecessor, subject))
        db.execute("UPDATE particles SET supersedes = ? WHERE id = ?", (predecessor, successor))
        if rng.random() < 0.3:
            db.execute("UPDATE particles SET asserted_at = ? WHERE id = ?", (zoned(successor_asserted), successor))

    # The hand store's expiry datings can leave a row its model refuses (an EVENT
    # with an end, an end before the start); such a row fails every query that
    # loads it, in both engines. Most are repaired so requests exercise more than
    # that failure; the ambiguous subject prefix keeps an error path.
    for pid, valid_from, valid_until, kind in db.execute(
            "SELECT id, valid_from, valid_until, valid_kind FROM particles WHERE valid_until IS NOT NULL").fetchall():
        if kind == "EVENT" or (valid_from is not None and parse(valid_from) > parse(valid_until)):
            db.execute("UPDATE particles SET valid_until = NULL WHERE id = ?", (pid,))

    # Operator events of the modelling-decision types (and others), dated
    # naive and zoned, so the as-of cut is a text comparison as the reference's.
    for _ in range(rng.randint(0, 25)):
        occurred = epoch + timedelta(days=rng.uniform(-1500, 800))
        text = _ts(occurred) if rng.random() < 0.7 else occurred.strftime("%Y-%m-%d %H:%M:%S+02:00")
        db.execute("INSERT INTO operator_events (event_id, occurred_at, actor, event_type) VALUES (?,?,?,?)",
                   (make_cases._uid(rng), text, "op", rng.choice(EVENT_TYPES)))

    # Vocabulary documents: two versions of one (the latest counts), another
    # riding a lens, adopted store-wide, with a lens (adopted or not), or not.
    ruling = Ruling(confirmed_by="op", confirmed_at=epoch)

    def term(local, form, cls, aliases=(), alignments=()):
        return VocabularyTerm(
            local_name=local, form=form, subject_class=cls,
            aliases=[Alias(form=a, ruling=ruling) for a in aliases],
            alignments=[Alignment(target=t, match=MatchStrength(m), confidence=1.0 if m == "equivalent" else 0.9,
                                  ruling=ruling) for t, m in alignments],
            ruling=ruling)

    documents = [
        VocabularyDocument(name="coins", prefix="cn", namespace="https://ex.org/coins/", version=1, issued=epoch,
                           terms=[term("weigh", "weigh", "Coin")]),
        VocabularyDocument(name="coins", prefix="cn", namespace="https://ex.org/coins/", version=2, issued=epoch,
                           terms=[term("weigh", "weigh", "Coin", aliases=["mass"],
                                       alignments=[("wdt:P2067", "exact"), ("schema:weight", "close")]),
                                  term("moveTo", "mov to", "Person", alignments=[("wdt:P551", "close")]),
                                  term("weighPerson", "weigh", "Person")]),
        VocabularyDocument(name="people", prefix="pp", namespace="https://ex.org/people#", version=1, issued=epoch,
                           terms=[term("born", "born in", "Person", alignments=[("wdt:P19", "equivalent")]),
                                  term("moves", "mov to", "Person")]),
    ]
    for doc in documents:
        db.execute("INSERT INTO vocabulary_versions VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (make_cases._uid(rng), doc.name, doc.version, doc.prefix, doc.namespace, None,
                    len(doc.terms), dumps(doc), None, _ts(epoch)))
    lenses = [r[0] for r in db.execute("SELECT lens_name FROM trust_lens_adoptions")]
    roll = rng.random()
    if roll < 0.6:
        db.execute("INSERT INTO vocabulary_adoptions VALUES (?,?,?,?)", ("coins", "", _ts(epoch), "op"))
    if rng.random() < 0.5:
        lens = rng.choice(lenses + ["lens-not-adopted"])
        db.execute("INSERT INTO vocabulary_adoptions VALUES (?,?,?,?)", ("people", lens, _ts(epoch), "op"))
    if rng.random() < 0.2:
        db.execute("INSERT INTO vocabulary_adoptions VALUES (?,?,?,?)", ("ghost", "", _ts(epoch), "op"))
    db.commit()
    db.close()
    return {"subjects": subjects}


def requests_for(store: Path, facts: dict, rng: random.Random, count: int) -> list[dict]:
    out = []
    for _ in range(count):
        mode = rng.choices(["listing", "count", "group_by", "predicates", "vocabulary", "window"],
                           [20, 12, 20, 14, 16, 18])[0]
        request = {"store": str(store), "now": rng.choice(NOWS),
                   "top_k": rng.choice([1, 2, 3, 5, 10, 40, 200, rng.randint(1, 20)]),
                   "min_confidence": rng.choice([0.0, 0.0, 0.0, 0.0, 0.1, 0.3, 0.5])}
        if rng.random() < 0.15:
            request["subject_id"] = rng.choice(facts["subjects"] + ["no-such-subject"])
        if rng.random() < 0.12:
            request["include_document_meta"] = True
        if rng.random() < 0.12:
            request["include_non_asserted"] = True
        if rng.random() < 0.07:
            request["uncertainty_nature"] = rng.choice(["EPISTEMIC", "ALEATORY"])
        if rng.random() < 0.07:
            request["assertion_modality"] = rng.choice(["FALSIFIABLE", "EVALUATIVE"])
        if rng.random() < 0.07:
            request["recency_window_days"] = rng.choice([365, 1000, -10, 3000])
        if rng.random() < (0.5 if mode in ("listing", "window") else 0.3):
            request["as_of"] = rng.choice(AS_OFS)
        if rng.random() < 0.12:
            request["tags"] = rng.sample(TAGS, rng.randint(1, 2))
            request["include_ancestors"] = rng.random() < 0.5
        windowed = mode == "window" or (mode in ("listing", "count", "group_by") and rng.random() < 0.3)
        if windowed:
            if rng.random() < 0.3:
                request["on"] = rng.choice(ONS)
            else:
                request["during"] = rng.choice(DURINGS)
        filters = mode == "listing" or (mode in ("count", "group_by") and rng.random() < 0.5)
        if filters:
            conditions = rng.sample(["predicate", "object_gt", "object_lt", "object_eq", "object_contains"],
                                    rng.choice([1, 1, 1, 2, 2, 3]))
            if "predicate" in conditions:
                request["predicate"] = rng.choice([v for _, v in PREDICATES] + ["WEIGHS", "MOVED TO"])
            if "object_gt" in conditions:
                request["object_gt"] = rng.choice(["4", "5", "2019-12-31", "6.5", "1e2", "-1"])
            if "object_lt" in conditions:
                request["object_lt"] = rng.choice(["10", "2021-06-01T10:00:00Z", "5.00", "2000", "2030-01-01"])
            if "object_eq" in conditions:
                request["object_eq"] = rng.choice(["5", "5.000", "gold", "GOLD", "2020-01-01T00:00:00Z", "paris",
                                                   "1987", "2021-06-01T10:00:00Z"])
            if "object_contains" in conditions:
                request["object_contains"] = rng.choice(["o", "O", "Coin", "20", "silver", "a", "5", "e",
                                                         "\ua7cdoin", "\ua7cc", "\u1c8a", "\u1c89"])
        if mode == "count":
            request["count"] = True
        if mode == "group_by":
            request["group_by"] = rng.choice(["subject", "predicate", "object", " Subject ", "OBJECT"])
            if rng.random() < 0.3:
                request["count"] = True
        if mode in ("count", "group_by") and rng.random() < 0.4:
            request["min_effective_confidence"] = rng.choice([0.0, 0.1, 0.3, 0.5, 0.8])
        if mode == "predicates":
            request["list_predicates"] = True
        if mode == "vocabulary":
            request["list_vocabulary"] = True
        if rng.random() < 0.3:
            request["observer_project"] = rng.choice(["alpha", "beta", "gamma", "-proj-a"])
        out.append(request)
    # Alone, on every store: the late case pairs. Python 3.11 (Unicode 14)
    # casefolds neither letter of U+A7CC/U+A7CD nor of U+1C89/U+1C8A, so each
    # matches only itself; a later Unicode would match its pair too.
    for needle in ["\ua7cdoin", "\ua7cc", "\u1c8a", "\u1c89"]:
        out.append({"store": str(store), "now": NOWS[0], "top_k": 40, "min_confidence": 0.0,
                    "object_contains": needle})
    return out


async def run_one(request: dict) -> dict:
    from sqlalchemy import event
    from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

    from particles.core.schema import QueryRequest, StructuralGroupBy
    from particles.db import _sqlite_set_pragmas

    now = datetime.fromisoformat(request["now"])
    if now.tzinfo is None:
        now = now.replace(tzinfo=timezone.utc)
    oracle._FrozenClock.frozen = now
    fields = {key: request[key] for key in (
        "top_k", "subject_id", "min_confidence", "uncertainty_nature", "assertion_modality",
        "recency_window_days", "include_document_meta", "include_non_asserted", "tags", "include_ancestors",
        "predicate", "object_eq", "object_gt", "object_lt", "object_contains", "as_of", "count",
        "min_effective_confidence", "list_predicates", "list_vocabulary", "observer_project",
    ) if request.get(key) is not None}
    if request.get("group_by") is not None:
        fields["group_by"] = StructuralGroupBy(request["group_by"].strip().lower())
    window = oracle._window(request.get("during"), request.get("on"))
    if window is not None:
        fields["window"] = window
    try:
        query_request = QueryRequest(question=None, **fields)
    except ValueError as exc:
        return {"invalid": str(exc)}
    engine = create_async_engine(f"sqlite+aiosqlite:///{request['store']}")
    event.listen(engine.sync_engine, "connect", _sqlite_set_pragmas)
    try:
        async with AsyncSession(engine) as session:
            response = await query_main.query(session, query_request)
    except Exception as exc:  # compared with the Rust side's failure
        return {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        await engine.dispose()
    return {"expected": response.model_dump(mode="json")}


def observe(store: Path, seed: int) -> None:
    """Project tags on the corpus entries and, on odd seeds, the rescope marker:
    a project observer then filters the structural modes too (an even seed's
    observer is disclosed but not applied)."""
    import sqlite3
    import uuid

    rng = random.Random(seed * 2027 + 1)
    db = sqlite3.connect(store)
    tags = [[], ["project:alpha"], ["project:beta"], ["claude-code"], ["scope:unattributed"],
            ["project:alpha", "project:beta"]]
    for (entry,) in db.execute("SELECT entry_id FROM corpus_entries ORDER BY rowid").fetchall():
        db.execute("UPDATE corpus_entries SET tags_json = ? WHERE entry_id = ?", (json.dumps(rng.choice(tags)), entry))
    if seed % 2 == 1:
        db.execute("INSERT INTO operator_events (event_id, occurred_at, actor, event_type) VALUES (?,?,?,?)",
                   (str(uuid.UUID(int=rng.getrandbits(128))), "2024-01-01 00:00:00.000000", "op",
                    "OBSERVER_SCOPE_RESCOPED"))
    db.commit()
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / f"structural-{args.seed}.db"
    make_cases.build_hand_store(store, args.seed)
    facts = augment(store, args.seed)
    observe(store, args.seed)
    rng = random.Random(args.seed * 104729 + 3)
    requests = requests_for(store, facts, rng, args.requests)

    async def run_all():
        return [await run_one(r) for r in requests]

    results = asyncio.run(run_all())
    cases = [{"request": r, **result} for r, result in zip(requests, results)]
    path = args.out / f"structural-cases-{args.seed}.json"
    path.write_text(json.dumps(cases))
    print(path)


if __name__ == "__main__":
    main()
