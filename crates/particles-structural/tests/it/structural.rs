//! The deterministic modes through the library: each mode on its own path
//! (`run_structural_with` answers the deterministic modes and refuses a
//! question, which `particles_query::run_query_with` ranks), and one snapshot
//! for the rows and the counts that explain them. Equality with the reference
//! lives in the CLI's live-oracle test (`particles-cli/tests/it/structural.rs`).

use std::path::{Path, PathBuf};

use particles_model::{response::QueryResponse, GroupBy, QueryRequest, Timestamp};
use particles_query::{run_query_with, QueryInput};
use particles_store::{Store, UncachedLoader};
use particles_structural::{run_structural_with, Error, StructuralSettings};

/// A structural request with the compiled default settings.
fn run_structural(store: &Store, input: &QueryInput<'_>) -> Result<QueryResponse, Error> {
    run_structural_with(store, input, &StructuralSettings::default())
}

fn fixture_copy(dir: &Path) -> PathBuf {
    let path = dir.join("coins-b.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-b.db"),
        &path,
    )
    .unwrap();
    path
}

fn now() -> Timestamp {
    Timestamp::parse("2026-06-01T00:00:00Z").unwrap()
}

#[test]
fn each_mode_is_answered_by_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_read_only(&fixture_copy(dir.path())).unwrap();
    let semantic = QueryRequest::question("q").validate(now()).unwrap();
    let outcome = run_query_with(
        &store,
        &mut UncachedLoader,
        &QueryInput::new(&semantic, None, now()),
    );
    assert!(outcome.is_ok());
    for request in [
        QueryRequest {
            list_predicates: true,
            ..QueryRequest::default()
        },
        QueryRequest {
            list_vocabulary: true,
            ..QueryRequest::default()
        },
        QueryRequest {
            count: true,
            ..QueryRequest::default()
        },
        QueryRequest {
            object_contains: Some("a".to_owned()),
            ..QueryRequest::default()
        },
    ] {
        let request = request.validate(now()).unwrap();
        let input = QueryInput::new(&request, None, now());
        assert!(
            matches!(
                run_query_with(&store, &mut UncachedLoader, &input),
                Err(particles_query::Error::UnsupportedMode { .. })
            ),
            "{:?} was ranked",
            request.mode()
        );
        let response = run_structural(&store, &input).unwrap();
        assert!(response.claim_coverage.is_some(), "{:?}", request.mode());
    }
    assert!(matches!(
        run_structural(&store, &QueryInput::new(&semantic, None, now())),
        Err(Error::NotStructural)
    ));
}

#[test]
fn buckets_partition_the_counted_claims() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_read_only(&fixture_copy(dir.path())).unwrap();
    for axis in [GroupBy::Predicate, GroupBy::Object] {
        let request = QueryRequest {
            group_by: Some(axis),
            ..QueryRequest::default()
        }
        .validate(now())
        .unwrap();
        let response = run_structural(&store, &QueryInput::new(&request, None, now())).unwrap();
        let aggregate = response.structural_aggregate.unwrap();
        let in_buckets: u64 = aggregate.buckets.iter().map(|b| b.claim_count).sum();
        assert_eq!(in_buckets, aggregate.claim_count, "{axis:?}");
        assert!(aggregate.claim_count > 0);
        assert!(aggregate
            .buckets
            .windows(2)
            .all(|w| (w[1].claim_count, &w[0].key) <= (w[0].claim_count, &w[1].key)));
    }
}

#[test]
fn the_counts_read_the_rows_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let writer = rusqlite::Connection::open(&path).unwrap();
    writer
        .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .unwrap();
    let store = Store::open_read_only(&path).unwrap();
    let request = QueryRequest {
        count: true,
        ..QueryRequest::default()
    }
    .validate(now())
    .unwrap();
    let retract_all = || {
        writer
            .execute_batch("UPDATE particles SET status = 'RETRACTED' WHERE status = 'ACTIVE'")
            .unwrap();
    };
    let input = QueryInput {
        after_ranking: Some(&retract_all),
        ..QueryInput::new(&request, None, now())
    };
    let during = run_structural(&store, &input).unwrap();
    let coverage = during.claim_coverage.unwrap();
    assert!(
        coverage.active_total > 0,
        "the counts saw the commit: {coverage:?}"
    );
    assert_eq!(
        coverage.matched,
        during.structural_aggregate.unwrap().claim_count
    );
    let after = run_structural(&store, &QueryInput::new(&request, None, now())).unwrap();
    assert_eq!(after.claim_coverage.unwrap().active_total, 0);
}
