//! A subject question's coverage gap through the engine (its cache counts the
//! subject's ACTIVE CLAIMs among the links of its set, and the response looks
//! up the links outside it): the count the gap reports is the store's, for an
//! exact subject id and for a prefix, which the gap resolves and the ranking
//! does not; and where the subject has enough claims among the set's rows, no
//! gap without looking up the rest.

use std::path::Path;

use particles_engine::Engine;
use particles_model::{
    response::{CoverageGapKind, SubjectCoverageGap},
    Envelope, QueryRequest, Timestamp,
};
use particles_store::Store;

use crate::concurrency::{fixture, vector};

/// The fixture's most linked subject.
const SUBJECT: &str = "67c6b462-59bb-4436-802b-4b4c5fbf2e16";

/// A copy of the fixture in `dir` whose subject's ACTIVE CLAIMs (in id order)
/// are changed by `change`: the statement for the claim at each position, if
/// any (`?1` is its id).
fn subject_store(dir: &Path, change: impl Fn(usize) -> Option<&'static str>) -> std::path::PathBuf {
    let path = dir.join("coins-b.db");
    std::fs::copy(fixture(), &path).unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    let linked: Vec<String> = connection
        .prepare(
            "SELECT particles.id FROM particle_subjects JOIN particles \
             ON particles.id = particle_subjects.particle_id \
             WHERE subject_id = ?1 AND status = 'ACTIVE' AND particle_type = 'CLAIM' \
             ORDER BY particles.id",
        )
        .unwrap()
        .query_map([SUBJECT], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert!(
        linked.len() > 6,
        "the fixture's subject has {} claims",
        linked.len()
    );
    for (at, id) in linked.iter().enumerate() {
        if let Some(statement) = change(at) {
            connection.execute(statement, [id]).unwrap();
        }
    }
    path
}

const TO_NARRATIVE: &str = "UPDATE particles SET particle_type = 'NARRATIVE' WHERE id = ?1";
const RETRACT: &str = "UPDATE particles SET status = 'RETRACTED' WHERE id = ?1";
const DROP_VECTOR: &str = "UPDATE particles SET embedding_json = NULL WHERE id = ?1";

/// The subject gaps `engine` reports for a question about `subject`, asked
/// after an unfiltered one, so that the cache serves it.
fn ask(engine: &Engine, subject: &str) -> (usize, Vec<SubjectCoverageGap>) {
    ask_above(engine, subject, 0.0)
}

/// [`ask`] with a `min_confidence`.
fn ask_above(
    engine: &Engine,
    subject: &str,
    min_confidence: f64,
) -> (usize, Vec<SubjectCoverageGap>) {
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        subject_id: Some(subject.to_owned()),
        min_confidence,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let envelope = Envelope {
        vector: Some(vector(7)),
        now: Some(now),
        ..Envelope::default()
    };
    let unfiltered = QueryRequest::question("q").validate(now).unwrap();
    engine.query(&unfiltered, &envelope).unwrap();
    let answer = engine.query(&request, &envelope).unwrap();
    (answer.particles.len(), answer.subject_coverage_gaps)
}

#[test]
fn the_gap_counts_what_the_store_counts() {
    let dir = tempfile::tempdir().unwrap();
    // Leave the subject two ACTIVE CLAIMs among its links, one of them without a
    // vector (a link outside the set that counts); the rest narratives (rows of
    // the set that are no claims) and retracted rows (links outside it that do
    // not count).
    let path = subject_store(dir.path(), |at| match at {
        0 => None,
        1 => Some(DROP_VECTOR),
        at if at % 2 == 0 => Some(TO_NARRATIVE),
        _ => Some(RETRACT),
    });
    let engine = crate::engine_over(&path);
    let store = Store::open_read_only(&path).unwrap();
    let stored = particles_store::active_claim_count(&store, SUBJECT).unwrap();
    assert_eq!(stored, 2);

    // The exact id: ranked among its links, and counted from them.
    let (hits, gaps) = ask(&engine, SUBJECT);
    assert!(hits > 0);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].kind, CoverageGapKind::SubjectHasLowCoverage);
    assert_eq!(gaps[0].particle_count, stored);

    // A prefix: the ranking matches ids exactly, so it finds no link and counts
    // none; the gap resolves the prefix to the subject and reports its count.
    let (hits, gaps) = ask(&engine, &SUBJECT[..8]);
    assert_eq!(hits, 0);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].subject_id.as_deref(), Some(SUBJECT));
    assert_eq!(gaps[0].kind, CoverageGapKind::SubjectHasLowCoverage);
    assert_eq!(gaps[0].particle_count, stored);
}

/// At the low-coverage threshold (three claims) there is no gap, whether all
/// three are rows of the set (the links outside it are then not looked up)
/// or one is a link outside it (they are); two claims in the set and no more
/// are a gap.
#[test]
fn three_claims_are_enough_in_the_set_or_outside_it() {
    let cases: [(&str, Option<&'static str>, Option<u64>); 3] = [
        ("three in the set", None, None),
        ("two in the set, one outside", Some(DROP_VECTOR), None),
        ("two in the set", Some(RETRACT), Some(2)),
    ];
    for (what, third, gap) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = subject_store(dir.path(), |at| match at {
            0 | 1 => None,
            2 => third,
            _ => Some(RETRACT),
        });
        let engine = crate::engine_over(&path);
        let (hits, gaps) = ask(&engine, SUBJECT);
        assert!(hits > 0, "{what}");
        let counts: Vec<Option<u64>> = gaps
            .iter()
            .map(|gap| {
                assert_eq!(gap.kind, CoverageGapKind::SubjectHasLowCoverage, "{what}");
                Some(gap.particle_count)
            })
            .collect();
        assert_eq!(
            counts,
            gap.into_iter().map(Some).collect::<Vec<_>>(),
            "{what}"
        );
    }
}

/// Without a hit, three claims in the set are a low-coverage gap all the same,
/// with the whole count: the links outside the set are looked up.
#[test]
fn no_hit_is_a_gap_whatever_the_set_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = subject_store(dir.path(), |at| match at {
        0..=2 => None,
        3 => Some(DROP_VECTOR),
        _ => Some(RETRACT),
    });
    let engine = crate::engine_over(&path);
    let (hits, gaps) = ask_above(&engine, SUBJECT, 1.0);
    assert_eq!(hits, 0);
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].kind, CoverageGapKind::SubjectHasLowCoverage);
    assert_eq!(gaps[0].particle_count, 4);
}
