//! One answer, one snapshot: every count a query reports (claim coverage, unknown
//! tags, whether the subject is linked) is read in the ranking's read transaction,
//! so a writer that commits between the ranking and the counts changes none of
//! them.

use std::path::Path;

use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query, QueryInput};
use particles_rank::NormKernel;
use particles_store::Store;

#[test]
fn a_commit_between_the_steps_changes_no_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coins-a.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-a.db"),
        &path,
    )
    .unwrap();
    // WAL, as the reference leaves every store: a writer commits beside a reader.
    let writer = rusqlite::Connection::open(&path).unwrap();
    writer
        .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .unwrap();
    let subject = "subject-linked-later";
    let tag = "tag-defined-later";

    let store = Store::open_read_only(&path).unwrap();
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        object_contains: Some("a".to_owned()),
        tags: vec![tag.to_owned()],
        subject_id: Some(subject.to_owned()),
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let committed = std::cell::Cell::new(false);
    let commit = || {
        writer
            .execute_batch(&format!(
                "BEGIN;
                 UPDATE particles SET status = 'RETRACTED' WHERE status = 'ACTIVE';
                 INSERT INTO tag_nodes (taxonomy_id, tag, parent, aliases_json) VALUES ('t', '{tag}', NULL, '[]');
                 INSERT INTO particle_subjects (particle_id, subject_id) SELECT id, '{subject}' FROM particles LIMIT 1;
                 COMMIT;"
            ))
            .unwrap();
        committed.set(true);
    };
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        after_ranking: Some(&commit),
        ..QueryInput::new(&request, None, now)
    };
    let during = run_query(&store, &input).unwrap();
    assert!(committed.get(), "the hook ran");

    // What the store held before the commit, counted on its own.
    let before = {
        let copy = dir.path().join("before.db");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-a.db"),
            &copy,
        )
        .unwrap();
        let store = Store::open_read_only(&copy).unwrap();
        run_query(&store, &QueryInput::new(&request, None, now)).unwrap()
    };
    let coverage = during.claim_coverage.unwrap();
    assert_eq!(coverage, before.claim_coverage.unwrap());
    assert!(coverage.active_total > 0, "counted before the retraction");
    assert_eq!(during.unknown_tags, vec![tag.to_owned()]);
    assert_eq!(during.subject_linked, Some(false));

    // And a query after the commit sees it.
    let after = run_query(&store, &QueryInput::new(&request, None, now)).unwrap();
    assert_eq!(after.claim_coverage.unwrap().active_total, 0);
    assert!(after.unknown_tags.is_empty());
    assert_eq!(after.subject_linked, Some(true));
}
