"""Build seeded random stores with the reference and record its rankings on them.

    make_cases.py --seed S --out DIR [--generator-size N]

Writes DIR/store-S.db and DIR/cases-S.json: a list of {"request": ..., "expected":
...}, where `expected` is what the reference's `retrieve_ranked` returned (see
oracle.py). With --generator-size the store is the reference benchmark generator's
(seed S, N beliefs) instead of a hand-shaped one.

The hand-shaped store covers what the query path must agree on: trust statements,
the seeded source-trust rules, extractor weights, an adopted lens with decay and
extractor rules, publication dates (naive and zoned), derived particles with stale
premises, narratives, co-evidential groups with edges below and above the threshold,
DOCUMENT_META / non-asserted / stance particles, foreign and legacy embedding model
ids, non-ACTIVE rows, subjects, ties in score.
"""

import argparse
import asyncio
import json
import random
import sqlite3
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import oracle  # noqa: E402

SOURCE_TYPES = [
    ("WEB_PAGE", ["https://en.wikipedia.org/wiki/Coin", "https://en.wikipedia.org/wiki/Special:Random",
                  "https://blog.example.com/post", "example.com:8080/x", None]),
    ("REDDIT_POST", ["https://www.reddit.com/r/coins/1", "https://old.reddit.com/r/x"]),
    ("GITHUB_REPO", ["https://github.com/a/b", "https://github.com/c/d"]),
    ("NUMISTA_API_COIN", ["https://en.numista.com/catalogue/pieces123.html", "https://api.numista.com/x",
                          "https://en.numista.com/catalogue/index.php?a"]),
    ("WIKIDATA_API", ["https://www.wikidata.org/wiki/Q1"]),
    ("CONVERSATION", ["file:///synthetic/chat.md", None]),
    ("LOCAL_MARKDOWN", ["file:///notes/a.md"]),
    ("PDF", ["https://papers.example.org/grading.pdf", "file:///docs/report.pdf", None]),
    ("", [None, "https://HTTPS.Example.COM:443/p"]),
]
# Every calibration source the model knows; the configured caps list subsets of the
# first four (DERIVED and IMPORTED are refused there, so they are never capped).
CALIBRATION_SOURCES = ["EXTRACTOR_DIRECT", "AGENT_ASSERTED", "CALIBRATED_BENCHMARK", "HUMAN_REVIEW", "IMPORTED"]
EXTRACTORS = ["general-extractor", "reddit-extractor", "numista-coin-extractor", "wikidata-extractor",
              "github-repo-extractor", "mystery-extractor"]
DEFAULT_EXTRACTOR_WEIGHTS = {
    "taxonomy-extractor": 1.0, "trust-lens-extractor": 1.0, "vocabulary-extractor": 1.0,
    "numista-coin-extractor": 0.9, "numista-issuer-extractor": 0.85, "numista-listing-extractor": 0.8,
    "wikidata-extractor": 0.9, "nomisma-extractor": 0.95, "rdf-extractor": 0.6, "mcp-memory-extractor": 0.6,
    "reddit-extractor": 0.4, "hackernews-extractor": 0.5, "mastodon-extractor": 0.5,
    "github-repo-extractor": 0.75, "github-gist-extractor": 0.65, "github-pages-extractor": 0.7,
    "docstring-extractor": 0.8, "journal-extractor": 0.7, "general-extractor": 0.7,
}
SEEDED_SOURCE_TRUST = [
    ("domain", "api.numista.com", 0.9, None), ("domain", "www.wikidata.org", 0.85, None),
    ("domain", "en.wikipedia.org", 0.7, None), ("domain", "en.numista.com", 0.65, None),
    ("domain", "*", 0.5, None),
    ("url_pattern", r"en\.numista\.com/(?:catalogue/pieces\d+\.html|\d+/?$)", None, 0.1),
    ("url_pattern", r"en\.numista\.com/catalogue/index\.php", None, -0.15),
    ("url_pattern", r"en\.wikipedia\.org/wiki/Special:", None, -0.2),
]
PREDICATES = ["weighs", "Weighs", "minted", "diameter"]
CLAIM_OBJECTS = [
    ("LITERAL", "5", "xsd:decimal"), ("LITERAL", "5.0", "xsd:decimal"), ("LITERAL", "12.5", "xsd:double"),
    ("LITERAL", "7", "http://www.w3.org/2001/XMLSchema#integer"), ("LITERAL", "abc", "xsd:decimal"),
    ("LITERAL", "2020-01-01", "xsd:date"), ("LITERAL", "2021-06-01T12:00:00+02:00", "http://www.w3.org/2001/XMLSchema#dateTime"),
    ("LITERAL", "Gold Coin", None), ("TOKEN", "gold", None), ("URI", "http://example.org/Silver", None),
]
# (taxonomy, tag, parent)
TAXONOMY = [
    ("tax-a", "coins", None), ("tax-a", "coins/gold", "coins"), ("tax-a", "coins/silver", "coins"),
    ("tax-a", "coins/silver/ancient", "coins/silver"), ("tax-b", "coins", None),
    ("tax-b", "coins/grading", "coins"), ("tax-b", "metals", None), ("tax-b", "metals/gold", "metals"),
]
TAGGABLE = ["coins", "coins/gold", "coins/silver/ancient", "coins/grading", "metals", "metals/gold", "ad-hoc"]
AS_OFS = ["2023-06-01T00:00:00Z", "2024-01-01T00:00:00", "2022-01-01T00:00:00+02:00", "2025-06-01T00:00:00Z",
          "2021-03-01T12:00:00Z"]
NOWS = ["2026-06-01T00:00:00Z", "2024-03-15T12:30:00", "2019-01-01T00:00:00+05:00"]


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _unit(rng: np.random.Generator, dim: int = 384) -> np.ndarray:
    v = rng.standard_normal(dim).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M:%S.%f")


def build_hand_store(path: Path, seed: int, rich: bool = False) -> dict:
    """A small store of every shape the query path distinguishes. Returns facts the
    request generator needs (subject ids, vectors).

    With `rich`, every configuration key of the ranking bites: the extractor
    registry (with conformance failures) and the source-trust rules are always
    seeded, every trust statement key is present, and every source type has a dated,
    aged snapshot."""
    from sqlalchemy import create_engine, insert

    import particles._orm_modules  # noqa: F401 - registers every table
    from particles.core.schema import (
        Confidence, ExtractorRef, Particle, ProvenanceRef, ProvenanceRefType, StructuredClaim, ClaimTerm,
    )
    from particles.db import Base
    from particles.store.particle_store import ParticleRow

    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    path.unlink(missing_ok=True)
    engine = create_engine(f"sqlite:///{path}")
    Base.metadata.create_all(engine)
    engine.dispose()

    db = sqlite3.connect(path)
    epoch = datetime(2024, 1, 1)

    if rich or rng.random() < 0.75:
        for extractor_id, weight in DEFAULT_EXTRACTOR_WEIGHTS.items():
            weight = weight if rng.random() < 0.8 else round(rng.uniform(0.1, 1.0), 2)
            db.execute("INSERT INTO extractor_records VALUES (?,?,?,?,?,?,?,?)",
                       (extractor_id, extractor_id, "1.0.0", "{}", weight, rng.choice([None, 0, 1]),
                        "init", "2024-01-01T00:00:00"))
    if rich or rng.random() < 0.75:
        rules = list(SEEDED_SOURCE_TRUST)
        if rng.random() < 0.5:
            rules.append(("url_pattern", r"reddit\.com/r/coins", None, rng.choice([-0.3, 0.2])))
            rules.append(("url_pattern", r"(?<=github\.com/)a/", None, -0.1))
            rules.append(("url_pattern", r"[unclosed", None, 0.5))
            rules.append(("domain", "github.com", 0.8, None))
        for scope, pattern, score, modifier in rules:
            db.execute("INSERT INTO source_trust VALUES (?,?,?,?,?,?,?,?)",
                       (_uid(rng), scope, pattern, score, modifier, None, _ts(epoch), "seed"))

    # Sources: entries with snapshots, some dated, some zoned, some in the future.
    entries = []
    authors = [f"author-{i}" for i in range(4)]
    # One entry of every source type first (a rich store dates all their snapshots
    # in the past, so decay bites whatever type a configuration names).
    kinds = list(SOURCE_TYPES) + [rng.choice(SOURCE_TYPES) for _ in range(rng.randint(0, 8))]
    for i, (source_type, uris) in enumerate(kinds):
        entry_id = _uid(rng)
        db.execute("INSERT INTO corpus_entries (entry_id, uri_r, source_type, mutability, fetch_policy, "
                   "created_at, deposited_by, tags_json) VALUES (?,?,?,?,?,?,?,?)",
                   (entry_id, rng.choice(uris), source_type, "STABLE", "NEVER", _ts(epoch), "gen", "[]"))
        snaps = []
        for _ in range(rng.randint(1, 3)):
            snapshot_id = _uid(rng)
            roll = rng.random()
            if rich and i < len(SOURCE_TYPES) and not snaps:
                published = _ts(epoch - timedelta(days=rng.uniform(30, 3000)))
            elif roll < 0.2:
                published = None
            elif roll < 0.35:
                published = (epoch + timedelta(days=rng.uniform(-3000, 900))).strftime("%Y-%m-%d %H:%M:%S+02:00")
            else:
                published = _ts(epoch + timedelta(days=rng.uniform(-3000, 900)))
            db.execute("INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, "
                       "warc_record_type, extraction_status, content_published_at, author_id, "
                       "extraction_attempts, resume_whole) VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (snapshot_id, entry_id, _ts(epoch), "h", "RESPONSE", "COMPLETE", published,
                        rng.choice(authors + [None]), 1, 0))
            snaps.append(snapshot_id)
        entries.append((entry_id, source_type, snaps))

    # Trust statements for domains the source types map to.
    statement_keys = [("social media", "SOURCE_TYPE", "REDDIT_POST"), ("software", "SOURCE_TYPE", "GITHUB_REPO"),
                      ("numismatics", "SOURCE_TYPE", "NUMISTA_API_COIN"), ("agent-memory", "SOURCE_TYPE", "CONVERSATION"),
                      ("Wikidata", "CORPUS_ENTRY", rng.choice(entries)[0]), ("social media", "AUTHOR", "author-1"),
                      ("numismatics", "AUTHOR", "author-2"),
                      # Domains only a configuration's source_type_domains gives.
                      ("web", "SOURCE_TYPE", "WEB_PAGE"), ("web", "AUTHOR", "author-0"), ("web", "SOURCE_TYPE", "PDF"),
                      ("agent-memory", "AUTHOR", "author-3"), ("", "SOURCE_TYPE", "LOCAL_MARKDOWN"),
                      ("documents", "SOURCE_TYPE", "PDF")]
    chosen = statement_keys if rich else rng.sample(statement_keys, rng.randint(0, len(statement_keys)))
    for key in chosen:
        for _ in range(rng.randint(1, 2)):  # repeated keys: the latest asserted wins
            db.execute("INSERT INTO trust_statements VALUES (?,?,?,?,?,?,?,?,?,?)",
                       (_uid(rng), *key, round(rng.uniform(0, 1), 3), "local", "op",
                        _ts(epoch + timedelta(days=rng.randint(0, 100))), None, None))

    # Adopted lenses.
    for lens_index in range(rng.choice([0, 0, 1, 2])):
        lens_id, name = _uid(rng), f"lens-{lens_index}"
        db.execute("INSERT INTO trust_lenses VALUES (?,?,?,?,?,?,?)",
                   (lens_id, name, 1 if rng.random() > 0.04 else 0, "pub", None, None, _ts(epoch)))
        lens_entries = [
            ("statement", dict(domain="social media", source_type="REDDIT_POST", trust_rank=round(rng.uniform(0, 1), 2))),
            ("statement", dict(domain="software", source_type="", trust_rank=0.1)),  # pre-check drops it
            ("domain", dict(pattern="www.reddit.com", score=round(rng.uniform(0, 1), 2))),
            ("domain", dict(pattern="github.com", score=0.3)),
            ("url_pattern", dict(pattern=r"github\.com/c", modifier=-0.25)),
            ("url_pattern", dict(pattern=r"github\.com/c", modifier=0.05)),
            ("url_pattern", dict(pattern=r"en\.wikipedia\.org/wiki/Special:", modifier=-0.4)),
            ("extractor_weight", dict(extractor_id="general-extractor", weight=round(rng.uniform(0.3, 1), 2))),
            ("extractor_weight", dict(extractor_id="mystery-extractor", weight=0.55)),
            ("decay_source_type", dict(pattern="WEB_PAGE", half_life_days=rng.choice([30.0, 400.0]), floor=0.2)),
            ("decay_source_type", dict(pattern="REDDIT_POST", half_life_days=10.0, floor=0.05)),
            ("decay_url_pattern", dict(pattern=r"wikipedia\.org", half_life_days=200.0, floor=rng.choice([0.3, 0.6]))),
            ("decay_url_pattern", dict(pattern=r"example\.com", half_life_days=90.0, floor=0.1)),
            ("utility_default", dict(half_life_uses_days=30.0, rank_lift=0.1)),
        ]
        if rng.random() < 0.05:
            lens_entries.append(("extractor_weight", dict(extractor_id="bad", weight=1.5)))
        for kind, fields in rng.sample(lens_entries, rng.randint(3, len(lens_entries))):
            columns = ["id", "lens_id", "entry_kind", *fields]
            db.execute(f"INSERT INTO trust_lens_entries ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                       (_uid(rng), lens_id, kind, *fields.values()))
        db.execute("INSERT INTO trust_lens_adoptions VALUES (?,?,?)", (name, _ts(epoch), "op"))
    db.commit()

    subjects = [_uid(rng) for _ in range(5)]
    for subject in subjects:
        db.execute("INSERT INTO subjects (id, canonical_name, aliases_json, external_ids_json, created_at, asserted_by) "
                   "VALUES (?,?,?,?,?,?)", (subject, "s", "[]", "{}", _ts(epoch), "gen"))
    db.commit()
    db.close()

    # Particles, through the reference's own row mapping. One store in two embeds
    # in another dimension than MiniLM's 384: the reference ranks any dimension.
    dim = random.Random(seed * 31 + 7).choice([384, 384, 384, 4, 8, 33])
    engine = create_engine(f"sqlite:///{path}")
    rows, ids, vectors, zoned = [], [], [], []
    n = rng.randint(30, 160)
    for i in range(n):
        pid = _uid(rng)
        ids.append(pid)
        if vectors and rng.random() < 0.12:
            vector = vectors[rng.randrange(len(vectors))]  # identical vectors: score ties
        else:
            vector = _unit(nrng, dim)
        vectors.append(vector)
        provenance = []
        if rng.random() < 0.85:
            entry_id, _, snaps = rng.choice(entries)
            if rng.random() < 0.05:
                provenance.append(ProvenanceRef(type=ProvenanceRefType.SOURCE, corpus_entry_id=""))
            provenance.append(ProvenanceRef(type=ProvenanceRefType.SOURCE, corpus_entry_id=entry_id,
                                            snapshot_id=rng.choice(snaps + [None])))
        if rng.random() < 0.1:
            provenance.append(ProvenanceRef(type=ProvenanceRefType.AGENT, corpus_entry_id="agent-x"))
        derived = i > 3 and rng.random() < 0.12
        if derived:
            for premise in rng.sample(ids[:-1], min(len(ids) - 1, rng.randint(1, 3))):
                provenance.append(ProvenanceRef(type=ProvenanceRefType.PARTICLE, corpus_entry_id=premise,
                                                snapshot_id=premise))
            if rng.random() < 0.2:
                provenance.append(ProvenanceRef(type=ProvenanceRefType.PARTICLE, corpus_entry_id=_uid(rng)))
        roll = rng.random()
        properties = None
        if roll < 0.1:
            properties = {}
        elif roll < 0.2:
            properties = {"extraction:scope": "DOCUMENT_META",
                          "extraction:scope_action": rng.choice(["observe", "source_exempt", "drop", None])}
        elif roll < 0.3:
            properties = {"extraction:polarity": rng.choice(["DECLINED", "HYPOTHETICAL", "ASSERTED"])}
        elif roll < 0.36:
            properties = {"stance:holder": rng.choice(["someone", ""])}
        elif roll < 0.5:
            properties = {"extraction:gated_subjects": ["a", "b"], "note": "x"}
        confidence = rng.choice([0.3, 0.5, 0.7, 0.7, 0.9, 0.95, 1.0, round(rng.random(), 2), 0.0])
        structured = None
        if rng.random() < 0.3:
            kind, value, datatype = rng.choice(CLAIM_OBJECTS)
            structured = StructuredClaim(subject=ClaimTerm(kind="TOKEN", value="coin"),
                                         predicate=ClaimTerm(kind="TOKEN", value=rng.choice(PREDICATES)),
                                         object=ClaimTerm(kind=kind, value=value, datatype=datatype),
                                         structurizer_id="gen", structurizer_version="1",
                                         generated_at=epoch)
        # World time: a start with a kind and a basis (and a granularity for a
        # coarse one) on about half the beliefs.
        valid_from = valid_kind = None
        if rng.random() < 0.5:
            valid_from = epoch + timedelta(days=rng.uniform(-2500, 700))
            if rng.random() < 0.1:
                valid_from = valid_from.replace(hour=0, minute=0, second=0, microsecond=0)
            valid_kind = rng.choice(["EVENT", "STATE", "STATE", None])
            basis = rng.choice(["stated", "prose", "as-of", "coarse", "session", "operator", None])
            if basis is not None:
                properties = dict(properties or {})
                properties["extraction:valid_from_basis"] = basis
                if basis == "coarse":
                    properties["extraction:valid_from_granularity"] = rng.choice(["year", "month", "day"])
        particle = Particle(
            id=pid,
            valid_from=valid_from,
            valid_kind=valid_kind,
            content=f"Belief {i} about coins and {rng.choice(['gold', 'silver', 'grading'])}.",
            confidence=Confidence(value=confidence,
                                  calibration_source="DERIVED" if derived else rng.choice(CALIBRATION_SOURCES)),
            uncertainty_nature=rng.choice(["EPISTEMIC", "ALEATORY"]),
            provenance=provenance,
            asserted_by="gen",
            asserted_at=epoch - timedelta(days=rng.uniform(0, 2000)),
            status=rng.choices(["ACTIVE", "SUPERSEDED", "RETRACTED", "PROVENANCE_STALE", "INCONSISTENCY"], [75, 9, 9, 4, 3])[0],
            particle_type=rng.choices(["CLAIM", "NARRATIVE", "REVIEW"], [80, 12, 8])[0],
            assertion_modality=rng.choice(["FALSIFIABLE", "FALSIFIABLE", "EVALUATIVE", "EXPERIENTIAL"]),
            extractor_ref=(None if rng.random() < 0.2 else
                           ExtractorRef(name=rng.choice(EXTRACTORS), version="1.0")),
            subject_ids=rng.sample(subjects, rng.randint(0, 2)),
            properties=properties,
            structured_claim=structured,
            tags=rng.choice([None, None, rng.sample(TAGGABLE, rng.randint(1, 2))]),
        )
        embedding = None if rng.random() < 0.05 else vector.tolist()
        row = ParticleRow.from_model(particle, embedding)
        values = {c.key: getattr(row, c.key) for c in ParticleRow.__table__.columns}
        values["born_retired"] = False
        # Retirement history in every shape the as-of ladder distinguishes: stored
        # (naive or zoned), missing (dated by successor, event or expiry, or not at
        # all), a re-activated row that keeps its stored instant, born retired.
        roll = rng.random()
        if particle.status.value == "ACTIVE":
            values["retired_at"] = None if roll < 0.95 else epoch - timedelta(days=rng.uniform(0, 900))
        elif roll < 0.45:
            values["retired_at"] = values["asserted_at"] + timedelta(days=rng.uniform(1, 1500))
        elif roll < 0.55:
            zoned.append((pid, (values["asserted_at"] + timedelta(days=rng.uniform(1, 900))).strftime("%Y-%m-%d %H:%M:%S+02:00")))
            values["retired_at"] = None
        else:
            values["retired_at"] = None
        values["born_retired"] = particle.status.value == "INCONSISTENCY" and rng.random() < 0.7
        rows.append(values)
    with engine.begin() as conn:
        rng.shuffle(rows)  # rowid order differs from id order
        conn.execute(insert(ParticleRow.__table__), rows)
    engine.dispose()

    db = sqlite3.connect(path)
    for (particle_id, subject_ids) in db.execute("SELECT id, subject_ids_json FROM particles").fetchall():
        for subject in json.loads(subject_ids):
            db.execute("INSERT INTO particle_subjects VALUES (?,?)", (particle_id, subject))
    for (particle_id, tags) in db.execute("SELECT id, tags_json FROM particles WHERE tags_json IS NOT NULL").fetchall():
        for tag in json.loads(tags):
            db.execute("INSERT OR IGNORE INTO particle_tag_edges VALUES (?,?)", (particle_id, tag))
    for taxonomy in ("tax-a", "tax-b"):
        db.execute("INSERT INTO taxonomies VALUES (?,?,?,?,?,?,?)", (taxonomy, taxonomy, "1", "gen", None, None, _ts(epoch)))
    for taxonomy, tag, parent in TAXONOMY:
        db.execute("INSERT INTO tag_nodes VALUES (?,?,?,?,?)", (taxonomy, tag, parent, "[]", None))
    for pid, text in zoned:
        db.execute("UPDATE particles SET retired_at = ? WHERE id = ?", (text, pid))
    # Retirement datings: supersedes pointers, operator events, validity expiry,
    # pending conflict losers; valid_until bounds on believed rows.
    retired = [r[0] for r in db.execute("SELECT id FROM particles WHERE status != 'ACTIVE' AND retired_at IS NULL")]
    others = [r[0] for r in db.execute("SELECT id FROM particles ORDER BY rowid")]
    for pid in retired:
        roll = rng.random()
        if roll < 0.3:
            successor = rng.choice(others)
            if successor != pid:
                db.execute("UPDATE particles SET supersedes = ? WHERE id = ?", (pid, successor))
        elif roll < 0.55:
            for _ in range(rng.randint(1, 2)):
                event_id = _uid(rng)
                db.execute("INSERT INTO operator_events (event_id, occurred_at, actor, event_type) VALUES (?,?,?,?)",
                           (event_id, _ts(epoch + timedelta(days=rng.uniform(-1500, 600))), "op",
                            rng.choice(["PARTICLE_SUPERSEDED", "PARTICLE_RETRACTED", "REVIEW_RESOLVED", "PARTICLE_CREATED"])))
                db.execute("INSERT INTO operator_event_refs VALUES (?,?,?)", (event_id, rng.choice(["particle", "particle", "entry"]), pid))
        elif roll < 0.7:
            db.execute("UPDATE particles SET status_reason = 'VALIDITY_EXPIRED', valid_until = ? WHERE id = ?",
                       (_ts(epoch + timedelta(days=rng.uniform(-1000, 500))), pid))
        elif roll < 0.78:
            db.execute("UPDATE particles SET status_reason = 'CONFLICT_PENDING' WHERE id = ?", (pid,))
    for pid in rng.sample(others, max(1, len(others) // 5)):
        # A STATE's end, after its start.
        db.execute("UPDATE particles SET valid_until = datetime(valid_from, '+' || ? || ' days') "
                   "WHERE id = ? AND valid_kind = 'STATE' AND valid_from IS NOT NULL AND valid_until IS NULL",
                   (rng.randint(1, 900), pid))
    for pid in rng.sample(others, max(1, len(others) // 10)):
        db.execute("UPDATE particles SET valid_until = ? WHERE id = ? AND valid_from IS NULL AND valid_until IS NULL",
                   (rng.choice([_ts(epoch + timedelta(days=rng.uniform(-1200, 900))), (epoch + timedelta(days=100)).strftime("%Y-%m-%d %H:%M:%S-05:00")]), pid))
    if rich:
        # Every row hydrates, so that no configured request is lost to a store the
        # reference refuses: no EVENT with an end, no end beside a start.
        db.execute("UPDATE particles SET valid_until = NULL WHERE valid_kind = 'EVENT' OR valid_from IS NOT NULL")
    # Foreign and legacy embedding model ids, malformed extractor refs.
    for pid in rng.sample(ids, max(1, n // 15)):
        model = rng.choice(["other-model", "", None])
        db.execute("UPDATE particles SET embedding_model_id = ? WHERE id = ?", (model, pid))
        if model == "other-model":
            # Another model's space may have another dimension: skipped, never compared.
            db.execute("UPDATE particles SET embedding_json = ? WHERE id = ?", (json.dumps(_unit(nrng, dim + 3).tolist()), pid))
    for pid in rng.sample(ids, max(1, n // 25)):
        db.execute("UPDATE particles SET extractor_ref_json = ? WHERE id = ?",
                   (rng.choice(['{"name": ""}', "not json", '["x"]', '{"name": "x", "version": "1", "extra": 1}']), pid))
    # Co-evidential relations, some through missing or inactive particles.
    for _ in range(rng.randint(0, n // 4)):
        a, b = sorted(rng.sample(ids + [_uid(rng)], 2))
        db.execute("INSERT OR IGNORE INTO particle_relations VALUES (?,?,?,?,?,?)",
                   (a, b, "CO_EVIDENTIAL", "gen", _ts(epoch), rng.choice([1.0, 0.9, 0.75, 0.5, 0.25, 0.1, 0.0, -0.3])))
    db.commit()
    db.close()
    return {"subjects": subjects, "vectors": [v.tolist() for v in vectors[:20]], "hand": True, "dim": dim}


def build_generator_store(path: Path, seed: int, size: int) -> dict:
    from particles.benchmark.query_latency.generator import build_store, query_vectors

    manifest = asyncio.run(build_store(path, seed=seed, size=size))
    subjects = sorted({subject for subject, _ in manifest.query_subjects})
    return {"subjects": subjects, "vectors": [v.tolist() for v in query_vectors(seed, 8)]}


def requests_for(store: Path, facts: dict, rng: random.Random, count: int) -> list[dict]:
    out = []
    nrng = np.random.default_rng(rng.getrandbits(32))
    for _ in range(count):
        roll = rng.random()
        if roll < 0.15:
            vector = None
        elif roll < 0.55 and facts["vectors"]:
            vector = rng.choice(facts["vectors"])  # a stored vector: sim near 1
        else:
            vector = _unit(nrng, facts.get("dim", 384)).tolist()
        request = {
            "store": str(store),
            "vector": vector,
            "use_embeddings": vector is not None,
            "top_k": rng.choice([1, 2, 3, 5, 10, 40, 200, rng.randint(1, 200)]),
            "min_confidence": rng.choice([0.0, 0.0, 0.0, 0.3, 0.5, 0.9]),
            "now": rng.choice(NOWS),
        }
        if rng.random() < 0.3 and facts["subjects"]:
            request["subject_id"] = rng.choice(facts["subjects"] + ["no-such-subject"])
        if rng.random() < 0.15:
            request["include_document_meta"] = True
        if rng.random() < 0.15:
            request["include_non_asserted"] = True
        if rng.random() < 0.1:
            request["uncertainty_nature"] = rng.choice(["EPISTEMIC", "ALEATORY"])
        if rng.random() < 0.1:
            request["assertion_modality"] = rng.choice(["FALSIFIABLE", "EVALUATIVE"])
        if rng.random() < 0.1:
            request["recency_window_days"] = rng.choice([365, 1000, -10])
        if rng.random() < 0.3:
            request["as_of"] = rng.choice(AS_OFS)
        if rng.random() < 0.3 and facts.get("hand"):
            if rng.random() < 0.3:
                request["on"] = rng.choice(["2020-03-15", "2021-06-01", "2019-11-30T15:00:00"])
            else:
                request["during"] = rng.choice(["2019-01-01..2021-12-31", "..2020-06-30", "2022-01-01..",
                                                "2020-05-01T00:00:00Z..2020-05-31", "2018-01-01..2018-12-31"])
        if rng.random() < 0.2 and facts.get("hand"):
            request["tags"] = rng.sample([t for _, t, _ in TAXONOMY], rng.randint(1, 2))
            request["include_ancestors"] = rng.random() < 0.5
        if rng.random() < 0.25 and facts.get("hand"):
            choice = rng.random()
            if choice < 0.3:
                request["predicate"] = rng.choice(["weighs", "WEIGHS", "minted"])
            if rng.random() < 0.4:
                request["object_gt"] = rng.choice(["4", "5", "2019-12-31", "6.5"])
            if rng.random() < 0.3:
                request["object_lt"] = rng.choice(["10", "2021-06-01T10:00:00Z", "5.00"])
            if rng.random() < 0.3:
                request["object_eq"] = rng.choice(["5", "5.000", "gold", "GOLD", "2020-01-01T00:00:00Z"])
            if rng.random() < 0.3 or not any(k in request for k in ("predicate", "object_gt", "object_lt", "object_eq")):
                request["object_contains"] = rng.choice(["old", "Coin", "2020", "silver"])
        out.append(request)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--generator-size", type=int)
    parser.add_argument("--requests", type=int, default=16)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.generator_size:
        store = args.out / f"generator-{args.seed}-{args.generator_size}.db"
        facts = build_generator_store(store, args.seed, args.generator_size)
        name = f"cases-generator-{args.seed}-{args.generator_size}.json"
    else:
        store = args.out / f"store-{args.seed}.db"
        facts = build_hand_store(store, args.seed)
        name = f"cases-{args.seed}.json"
    rng = random.Random(args.seed * 7919 + 1)
    requests = requests_for(store, facts, rng, args.requests)

    async def run_all():
        return [await oracle.run_one(r) for r in requests]

    expected = asyncio.run(run_all())
    cases = [{"request": r, "expected": e} for r, e in zip(requests, expected)]
    (args.out / name).write_text(json.dumps(cases))
    print(args.out / name)


if __name__ == "__main__":
    main()
