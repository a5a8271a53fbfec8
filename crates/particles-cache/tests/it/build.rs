//! A full build's failures: its rows are hydrated and decoded in batches, on
//! this thread or a worker, and whichever finishes first, a build that meets
//! bad rows reports the one a sequential read in rowid order meets first.

use std::path::{Path, PathBuf};

use particles_cache::CandidateCache;
use particles_store::{CandidateLoader, Error, Store, Writer};

use crate::support::{journaled_copy, particle, raw_sql, raw_strings, unit_vector};

/// A journaled copy of a fixture with enough rows for several batches, and
/// its cacheable ids in rowid order.
fn store_of_batches(dir: &Path) -> (PathBuf, Vec<String>) {
    let path = journaled_copy(dir, "coins-b.db");
    let mut writer = Writer::open(&path).unwrap();
    let tx = writer.transaction().unwrap();
    for n in 0..1_500u64 {
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

fn build_error(path: &Path) -> Error {
    let store = Store::open_read_only(path).unwrap();
    let mut cache = CandidateCache::new();
    store
        .read_snapshot(|s| cache.load(s, 0.0, None).map(|_| ()))
        .expect_err("a bad row fails the build")
}

#[test]
fn a_failing_build_reports_the_first_bad_row_in_rowid_order() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = store_of_batches(dir.path());
    let bad_embedding = |id: &str| {
        raw_sql(
            &path,
            &format!("UPDATE particles SET embedding_json = '[0.5, oops]' WHERE id = '{id}'"),
        );
    };
    let bad_type = |id: &str| {
        raw_sql(
            &path,
            &format!("UPDATE particles SET particle_type = 'NOT_A_TYPE' WHERE id = '{id}'"),
        );
    };
    let restore = |id: &str| {
        raw_sql(
            &path,
            &format!(
                "UPDATE particles SET particle_type = 'CLAIM', \
                 embedding_json = (SELECT embedding_json FROM particles WHERE id = '{}') \
                 WHERE id = '{id}'",
                ids[0]
            ),
        );
    };
    // Rows some batches apart: the later one may be hydrated first.
    let (early, late) = (&ids[700], &ids[1_400]);

    bad_type(late);
    bad_embedding(early);
    for round in 0..5 {
        match build_error(&path) {
            Error::BadEmbedding { id, .. } => assert_eq!(&id, early, "round {round}"),
            other => panic!("round {round}: expected the early bad embedding, got {other}"),
        }
    }

    restore(early);
    restore(late);
    bad_embedding(late);
    bad_type(early);
    for round in 0..5 {
        match build_error(&path) {
            Error::InvalidRow { id, field, .. } => {
                assert_eq!(
                    (&id, field.as_str()),
                    (early, "particle_type"),
                    "round {round}"
                );
            }
            other => panic!("round {round}: expected the early invalid row, got {other}"),
        }
    }
}

/// Within one row, a build fails where it did before it decoded from bytes:
/// on an embedding text that is not UTF-8 before the other columns, on one
/// that is not an array of numbers after them (the build decodes the vector
/// first, and checks the text's UTF-8 only when it does not decode).
#[test]
fn a_row_fails_on_its_embeddings_utf8_before_its_columns_and_on_its_numbers_after() {
    let dir = tempfile::tempdir().unwrap();
    let (path, ids) = store_of_batches(dir.path());
    let row = &ids[900];
    raw_sql(
        &path,
        &format!(
            "UPDATE particles SET particle_type = 'NOT_A_TYPE', \
             embedding_json = CAST(X'5B302E352C20FF5D' AS TEXT) WHERE id = '{row}'"
        ),
    );
    match build_error(&path) {
        Error::InvalidRow { id, field, .. } => {
            assert_eq!((&id, field.as_str()), (row, "embedding_json"));
        }
        other => panic!("expected the embedding's UTF-8, got {other}"),
    }
    raw_sql(
        &path,
        &format!("UPDATE particles SET embedding_json = '[0.5, oops]' WHERE id = '{row}'"),
    );
    match build_error(&path) {
        Error::InvalidRow { id, field, .. } => {
            assert_eq!((&id, field.as_str()), (row, "particle_type"));
        }
        other => panic!("expected the row's type, got {other}"),
    }
}
