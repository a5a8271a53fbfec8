//! A full build's failures: its rows are hydrated and decoded in batches, on
//! this thread or a worker, in rowid order, and whichever finishes first, a
//! build that meets bad rows names the fault the reference's build names. That
//! build fetches `(confidence_value, rowid)` order in partitions of 2,000 rows
//! and meets, in each, a TEXT value that is not UTF-8, else a DATETIME that
//! does not parse, else the first row whose embedding does not decode or whose
//! columns do not hydrate (in that order within the row); its uncached loader
//! does the same over its whole result. Every case here was run through the
//! reference 1.214.1 too (`docs/benchmarks/results-2026-12-07/stop53/oracle*.txt`).

use std::path::{Path, PathBuf};

use particles_cache::CandidateCache;
use particles_store::{load_active, CandidateLoader, Error, Store, Writer};

use crate::support::{journaled_copy, particle, raw_sql, raw_strings, unit_vector};

/// A journaled copy of a fixture with enough rows for several batches, and
/// its cacheable ids in rowid order.
fn store_of_batches(dir: &Path) -> (PathBuf, Vec<String>) {
    let path = journaled_copy(dir, "coins-b.db");
    let mut writer = Writer::open(&path).unwrap();
    let tx = writer.transaction().unwrap();
    // More than the reference's build partition (2,000 rows).
    for n in 0..2_500u64 {
        tx.insert(
            &particle(&format!("batch-{n:04}"), 0.5, &[]),
            Some(&unit_vector(1_000 + n)),
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let ids = raw_strings(
        &path,
        "SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
         ORDER BY rowid",
    );
    (path, ids)
}

pub(crate) fn build_error(path: &Path) -> Error {
    let store = Store::open_read_only(path).unwrap();
    let mut cache = CandidateCache::new();
    let error = store
        .read_snapshot(|s| cache.load(s, 0.0, None).map(|_| ()))
        .expect_err("a bad row fails the build");
    let uncached = store
        .read_snapshot(|s| load_active(s, 0.0, None).map(|_| ()))
        .expect_err("a bad row fails the uncached loader");
    assert_eq!(
        error.to_string(),
        uncached.to_string(),
        "the build names what the uncached loader names"
    );
    error
}

pub(crate) fn set(path: &Path, id: &str, assignments: &str) {
    raw_sql(
        path,
        &format!("UPDATE particles SET {assignments} WHERE id = '{id}'"),
    );
}

pub(crate) const BAD_EMBEDDING: &str = "embedding_json = '[0.5, oops]'";
pub(crate) const BAD_TYPE: &str = "particle_type = 'NOT_A_TYPE'";

#[test]
fn a_failing_build_names_the_first_bad_row_in_confidence_then_rowid_order() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = store_of_batches(dir.path());
    let restore = |id: &str| {
        set(
            &path,
            id,
            &format!(
                "particle_type = 'CLAIM', confidence_value = 0.5, \
                 embedding_json = (SELECT embedding_json FROM particles WHERE id = '{}')",
                ids[0]
            ),
        );
    };
    let expect_embedding = |row: &str| {
        for round in 0..5 {
            match build_error(&path) {
                Error::BadEmbedding { id, .. } => assert_eq!(id, row, "round {round}"),
                other => panic!("round {round}: expected {row}'s embedding, got {other}"),
            }
        }
    };
    let expect_type = |row: &str| {
        for round in 0..5 {
            match build_error(&path) {
                Error::InvalidRow { id, field, .. } => {
                    assert_eq!(
                        (id.as_str(), field.as_str()),
                        (row, "particle_type"),
                        "round {round}"
                    );
                }
                other => panic!("round {round}: expected {row}'s type, got {other}"),
            }
        }
    };
    // Rows some batches apart: the later one may be hydrated first.
    let (early, late) = (&ids[700], &ids[1_400]);

    set(&path, late, BAD_TYPE);
    set(&path, early, BAD_EMBEDDING);
    expect_embedding(early);

    restore(early);
    restore(late);
    set(&path, late, BAD_EMBEDDING);
    set(&path, early, BAD_TYPE);
    expect_type(early);

    // A lower confidence puts the later rowid first: the build walks the
    // table in rowid order, the reference its confidence order.
    set(&path, late, "confidence_value = 0.25");
    expect_embedding(late);
    restore(late);
    set(&path, early, "confidence_value = 0.75");
    set(&path, late, BAD_EMBEDDING);
    expect_embedding(late);
}

pub(crate) const BAD_ASSERTED_AT: &str = "asserted_at = 'garbage'";
const NOT_UTF8_EMBEDDING: &str = "embedding_json = CAST(X'5B302E352C20FF5D' AS TEXT)";

pub(crate) fn expect_field(error: Error, row: &str, wanted: &str) {
    match error {
        Error::InvalidRow { id, field, .. } => {
            assert_eq!((id.as_str(), field.as_str()), (row, wanted))
        }
        other => panic!("expected {row}'s {wanted}, got {other}"),
    }
}

/// A DATETIME that does not parse, or a value that is not UTF-8, is met as the
/// rows are fetched: before any row's embedding is decoded or its columns
/// validated, in the same row or a later one.
#[test]
fn faults_met_while_fetching_come_before_those_met_reading_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = store_of_batches(dir.path());
    let (early, late) = (&ids[700], &ids[1_400]);
    // Both before the 2,500 rows at 0.5: in the build's first partition.
    set(&path, early, "confidence_value = 0.3");
    set(&path, late, "confidence_value = 0.31");

    set(&path, early, &format!("{BAD_EMBEDDING}, {BAD_ASSERTED_AT}"));
    expect_field(build_error(&path), early, "asserted_at");

    set(&path, early, &format!("{BAD_TYPE}, asserted_at = (SELECT asserted_at FROM particles WHERE id = '{}'), embedding_json = (SELECT embedding_json FROM particles WHERE id = '{}')", ids[0], ids[0]));
    set(&path, late, BAD_ASSERTED_AT);
    expect_field(build_error(&path), late, "asserted_at");

    set(&path, late, &format!("asserted_at = (SELECT asserted_at FROM particles WHERE id = '{}'), {NOT_UTF8_EMBEDDING}", ids[0]));
    expect_field(build_error(&path), late, "embedding_json");

    // Every DATETIME is parsed, even one that is read only with a claim
    // (these rows have none): the store's one fault.
    set(&path, early, "particle_type = 'CLAIM'");
    set(
        &path,
        late,
        &format!(
            "embedding_json = (SELECT embedding_json FROM particles WHERE id = '{}'), \
             structured_claim_generated_at = 'garbage'",
            ids[0]
        ),
    );
    expect_field(build_error(&path), late, "structured_claim_generated_at");
}

/// The reference's build fetches 2,000 rows at a time, its uncached loader
/// the whole result: a bad type in the first partition is named by the build,
/// a DATETIME in a later partition by the uncached loader.
#[test]
fn a_build_meets_its_partitions_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = store_of_batches(dir.path());
    let (first, last) = (&ids[0], &ids[ids.len() - 1]);
    set(
        &path,
        first,
        &format!("confidence_value = 0.001, {BAD_TYPE}"),
    );
    set(
        &path,
        last,
        &format!("confidence_value = 0.999, {BAD_ASSERTED_AT}"),
    );
    let both = || {
        let store = Store::open_read_only(&path).unwrap();
        let mut cache = CandidateCache::new();
        let built = store
            .read_snapshot(|s| cache.load(s, 0.0, None).map(|_| ()))
            .expect_err("a bad row fails the build");
        let uncached = store
            .read_snapshot(|s| load_active(s, 0.0, None).map(|_| ()))
            .expect_err("a bad row fails the uncached loader");
        (built, uncached)
    };
    let (built, uncached) = both();
    expect_field(built, first, "particle_type");
    expect_field(uncached, last, "asserted_at");
    // Text that is not UTF-8 is judged per partition too.
    set(
        &path,
        last,
        &format!("asserted_at = '2024-01-01T00:00:00', {NOT_UTF8_EMBEDDING}"),
    );
    let (built, uncached) = both();
    expect_field(built, first, "particle_type");
    expect_field(uncached, last, "embedding_json");
}

/// A row of another embedding model is skipped by the uncached loader, as
/// by the reference's, but fetched first: a fault met while fetching it
/// fails both, as it fails the reference's.
#[test]
fn a_skipped_rows_fetch_fault_fails_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = store_of_batches(dir.path());
    let other = &other_model_row(&path);
    set(&path, other, BAD_ASSERTED_AT);
    expect_field(build_error(&path), other, "asserted_at");
}

/// The first cacheable row, in rowid order, of another embedding model.
pub(crate) fn other_model_row(path: &Path) -> String {
    raw_strings(
        path,
        "SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
         AND embedding_model_id != 'all-MiniLM-L6-v2' ORDER BY rowid LIMIT 1",
    )
    .pop()
    .expect("the fixture has a row of another model")
}

/// Within one row the vector fails before the other columns: text that is
/// not UTF-8 because the reference meets it as it fetches the row, a vector
/// that is not an array of numbers because its loaders decode the JSON before
/// they validate the row. Both fail a row whose type is bad too.
#[test]
fn a_rows_embedding_fails_before_its_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = store_of_batches(dir.path());
    let row = &ids[900];
    set(
        &path,
        row,
        &format!("{BAD_TYPE}, embedding_json = CAST(X'5B302E352C20FF5D' AS TEXT)"),
    );
    match build_error(&path) {
        Error::InvalidRow { id, field, .. } => {
            assert_eq!((&id, field.as_str()), (row, "embedding_json"));
        }
        other => panic!("expected the embedding's UTF-8, got {other}"),
    }
    set(&path, row, BAD_EMBEDDING);
    match build_error(&path) {
        Error::BadEmbedding { id, .. } => assert_eq!(&id, row),
        other => panic!("expected the row's embedding, got {other}"),
    }
}
