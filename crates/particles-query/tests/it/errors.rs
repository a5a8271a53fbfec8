//! Which error a query reports when several rows are bad: the reference filters
//! every candidate before it computes any similarity, so a filter error anywhere
//! wins over a dimension error on an earlier row, whichever loader or core split
//! found them.

use std::path::Path;

use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query, Error, QueryInput};
use particles_rank::NormKernel;
use particles_store::Store;

/// A copy of the fixture with the first candidate's vector of another length and
/// the last candidate carrying an unhashable `extraction:scope_action`.
fn two_bad_rows(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("coins-a.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-a.db"),
        &path,
    )
    .unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    let long: Vec<String> = (0..768)
        .map(|i| format!("{}", (i % 7) as f64 / 10.0))
        .collect();
    connection
        .execute(
            "UPDATE particles SET embedding_json = ?1 WHERE rowid = (SELECT rowid FROM particles \
             WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
             ORDER BY confidence_value ASC, rowid ASC LIMIT 1)",
            [format!("[{}]", long.join(", "))],
        )
        .unwrap();
    connection
        .execute(
            "UPDATE particles SET properties_json = ?1 WHERE rowid = (SELECT rowid FROM particles \
             WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
             ORDER BY confidence_value DESC, rowid DESC LIMIT 1)",
            [r#"{"extraction:scope": "DOCUMENT_META", "extraction:scope_action": ["observe"]}"#],
        )
        .unwrap();
    path
}

#[test]
fn a_filter_error_wins_over_an_earlier_dimension_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_read_only(&two_bad_rows(dir.path())).unwrap();
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest::question("q").validate(now).unwrap();
    let vector = vec![0.05f32; 384];
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(&request, Some(&vector), now)
    };
    let error = run_query(&store, &input).unwrap_err();
    assert!(
        matches!(
            error,
            Error::Filter(particles_candidates::Error::UnhashableProperty { .. })
        ),
        "{error:?}"
    );
    // Without the filter that raises, the dimension error is reported.
    let request = QueryRequest {
        include_document_meta: true,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let error = run_query(
        &store,
        &QueryInput {
            request: &request,
            ..input
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Rank(particles_rank::Error::DimensionMismatch { .. })
        ),
        "{error:?}"
    );
}
