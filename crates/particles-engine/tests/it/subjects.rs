//! A subject question's coverage gap through the engine (its cache counts the
//! subject's ACTIVE CLAIMs among the links of its set, and the response looks
//! up the links outside it): the count the gap reports is the store's, for an
//! exact subject id and for a prefix, which the gap resolves and the ranking
//! does not.

use particles_model::{response::CoverageGapKind, Envelope, QueryRequest, Timestamp};
use particles_store::Store;

use crate::concurrency::{fixture, vector};

/// The fixture's most linked subject.
const SUBJECT: &str = "67c6b462-59bb-4436-802b-4b4c5fbf2e16";

#[test]
fn the_gap_counts_what_the_store_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coins-b.db");
    std::fs::copy(fixture(), &path).unwrap();
    // Leave the subject two ACTIVE CLAIMs among its links, one of them without a
    // vector (a link outside the set that counts); the rest narratives (rows of
    // the set that are no claims) and retracted rows (links outside it that do
    // not count).
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
    for (at, id) in linked.iter().enumerate().skip(1) {
        let change = if at == 1 {
            "UPDATE particles SET embedding_json = NULL WHERE id = ?1"
        } else if at % 2 == 0 {
            "UPDATE particles SET particle_type = 'NARRATIVE' WHERE id = ?1"
        } else {
            "UPDATE particles SET status = 'RETRACTED' WHERE id = ?1"
        };
        connection.execute(change, [id]).unwrap();
    }
    drop(connection);

    let engine = crate::engine_over(&path);
    let store = Store::open_read_only(&path).unwrap();
    let stored = particles_store::active_claim_count(&store, SUBJECT).unwrap();
    assert_eq!(stored, 2);
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let ask = |subject: &str| {
        let request = QueryRequest {
            subject_id: Some(subject.to_owned()),
            ..QueryRequest::question("q")
        }
        .validate(now)
        .unwrap();
        let envelope = Envelope {
            vector: Some(vector(7)),
            now: Some(now),
            ..Envelope::default()
        };
        // An unfiltered question first, so the subject's is served by the cache.
        let unfiltered = QueryRequest::question("q").validate(now).unwrap();
        engine.query(&unfiltered, &envelope).unwrap();
        engine.query(&request, &envelope).unwrap()
    };

    // The exact id: ranked among its links, and counted from them.
    let exact = ask(SUBJECT);
    assert!(!exact.particles.is_empty());
    let gaps = &exact.subject_coverage_gaps;
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].kind, CoverageGapKind::SubjectHasLowCoverage);
    assert_eq!(gaps[0].particle_count, stored);

    // A prefix: the ranking matches ids exactly, so it finds no link and counts
    // none; the gap resolves the prefix to the subject and reports its count.
    let prefix = ask(&SUBJECT[..8]);
    assert!(prefix.particles.is_empty());
    let gaps = &prefix.subject_coverage_gaps;
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0].subject_id.as_deref(), Some(SUBJECT));
    assert_eq!(gaps[0].kind, CoverageGapKind::SubjectHasLowCoverage);
    assert_eq!(gaps[0].particle_count, stored);
}
