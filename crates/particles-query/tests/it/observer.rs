//! The project observer among the ranking's filters, on a fixture store the
//! test rescopes: nothing is filtered before the store is rescoped, then each
//! project sees only what its entries attest.

use std::path::{Path, PathBuf};

use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query_with, QueryInput};
use particles_rank::NormKernel;
use particles_store::{Store, UncachedLoader};

fn fixture_copy(dir: &Path) -> PathBuf {
    let path = dir.join("coins-a.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-a.db"),
        &path,
    )
    .unwrap();
    path
}

static SETTINGS: std::sync::LazyLock<particles_rank::RankSettings> =
    std::sync::LazyLock::new(particles_rank::RankSettings::default);

fn now() -> Timestamp {
    Timestamp::parse("2026-06-01T00:00:00Z").unwrap()
}

fn input_for<'a>(
    request: &'a particles_model::ValidRequest,
    vector: Option<&'a [f32]>,
) -> QueryInput<'a> {
    QueryInput {
        settings: &SETTINGS,
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(request, vector, now())
    }
}

/// The ACTIVE particle ids with an embedding, in rowid order, and the first one's
/// vector.
fn active(path: &Path) -> (Vec<String>, Vec<f32>) {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut statement = connection
        .prepare(
            "SELECT id, embedding_json FROM particles WHERE status = 'ACTIVE' \
             AND embedding_json IS NOT NULL AND properties_json IS NULL ORDER BY rowid",
        )
        .unwrap();
    let rows: Vec<(String, String)> = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let vector = particles_store::decode_embedding(&rows[0].1).unwrap();
    (rows.into_iter().map(|(id, _)| id).collect(), vector)
}

fn execute(path: &Path, sql: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
}

fn validate(request: QueryRequest) -> particles_model::ValidRequest {
    request.validate(now()).unwrap()
}

#[test]
fn the_observer_filters_only_a_rescoped_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let (_, vector) = active(&path);
    let ask = |project: Option<&str>| {
        let store = Store::open_read_only(&path).unwrap();
        let request = validate(QueryRequest {
            observer_project: project.map(str::to_owned),
            top_k: 200,
            ..QueryRequest::question("q")
        });
        run_query_with(
            &store,
            &mut UncachedLoader,
            &input_for(&request, Some(&vector)),
        )
        .unwrap()
    };
    let everyone = ask(None);
    assert!(everyone.observer_scope.is_none());
    let before = ask(Some("alpha"));
    let note = before.observer_scope.clone().unwrap();
    assert!(!note.engaged);
    assert_eq!((note.in_scope, note.total), (note.total, note.total));
    assert_eq!(before.hits.len(), everyone.hits.len());

    // Rescoped, with one entry keyed to project alpha and every other entry a
    // harness's: alpha sees the keyed entry's claims and the sourceless ones
    // stay out (unattributed).
    execute(
        &path,
        "UPDATE corpus_entries SET tags_json = '[\"claude-code\"]'; \
         UPDATE corpus_entries SET tags_json = '[\"project:alpha\"]' \
           WHERE rowid = (SELECT min(rowid) FROM corpus_entries); \
         INSERT INTO operator_events (event_id, occurred_at, actor, event_type) \
           VALUES ('e1', '2024-01-01', 'op', 'OBSERVER_SCOPE_RESCOPED');",
    );
    let alpha = ask(Some("alpha"));
    let note = alpha.observer_scope.clone().unwrap();
    assert!(note.engaged);
    assert!(note.in_scope < note.total && note.in_scope > 0, "{note:?}");
    assert_eq!(note.total, before.observer_scope.unwrap().total);
    assert!(note.unattributed > 0);
    assert!(alpha.hits.len() < everyone.hits.len());
    let beta = ask(Some("beta"));
    assert_eq!(beta.observer_scope.unwrap().in_scope, 0);
    assert!(beta.hits.is_empty());
}
