//! Cross-process freshness: while this process keeps a warm cache, other
//! connections (the Rust writer) and another process (the reference, through its
//! own API) write the store. After every step the cached ranking equals the
//! uncached one, and the cache took the route the journal protocol prescribes.

use std::process::Command;

use particles_cache::{CandidateCache, Route};
use particles_model::Timestamp;
use particles_store::{Store, Writer};
use rusqlite::Connection;

use crate::support::{
    assert_cache_exact, particle, raw_sql, raw_strings, unit_vector, working_copy, workspace_root,
};

fn reference_python() -> std::path::PathBuf {
    particles_testkit::reference_python()
        .expect("the test checked particles_testkit::reference_python() first")
}

/// Applies write operations through the reference's own store API in a new process.
fn reference_writes(store: &std::path::Path, ops: serde_json::Value) {
    let mut child = Command::new(reference_python())
        .arg(workspace_root().join("tests/reference/write_ops.py"))
        .arg(store)
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the reference's python runs (install it with `cargo xtask reference`)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(ops.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "write_ops.py failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn first_subject(store: &Store) -> String {
    raw_strings(
        store.path(),
        "SELECT subject_id FROM particle_subjects GROUP BY subject_id ORDER BY count(*) DESC LIMIT 1",
    )
    .remove(0)
}

fn some_active_ids(store: &Store, n: usize) -> Vec<String> {
    raw_strings(
        store.path(),
        &format!(
            "SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
             ORDER BY rowid LIMIT {n}"
        ),
    )
}

/// A long-lived cache that keeps a small store's particles: after every write
/// the kept particles are the store's (the delta's rows read, the others
/// carried over), and every hit is what the uncached loader reads.
#[test]
fn kept_particles_follow_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = working_copy(dir.path(), "coins-b.db");
    let store = Store::open_read_only(&path).unwrap();
    let ids = some_active_ids(&store, 4);
    let mut cache = CandidateCache::new();
    cache.set_keep_particles(Some(particles_cache::KEEP_PARTICLES_MAX_ROWS));
    cache.set_half_precision(Some(0));
    let mut writer = Writer::open(&path).unwrap();
    let now = Timestamp::parse("2026-01-01T00:00:00").unwrap();
    let kept_are_the_store_s = |cache: &CandidateCache, step: &str| {
        let set = cache.candidates().expect("a state");
        assert!(set.keeps_particles(), "{step}: the set keeps its particles");
        let ids: Vec<&str> = (0..set.len()).map(|row| set.id(row)).collect();
        let read = store
            .read_snapshot(|s| particles_store::particles_by_ids(s, &ids))
            .unwrap();
        let by_id: std::collections::HashMap<&str, &particles_model::Particle> =
            read.iter().map(|p| (p.id.as_str(), p)).collect();
        for row in 0..set.len() {
            let kept = set.particle(row).expect("every row's particle");
            assert_eq!(Some(&&**kept), by_id.get(set.id(row)), "{step}: row {row}");
        }
    };
    assert_eq!(
        assert_cache_exact(&store, &mut cache, None, "build"),
        Route::Rebuild
    );
    kept_are_the_store_s(&cache, "build");

    let tx = writer.transaction().unwrap();
    tx.insert(&particle("kept-new-1", 0.83, &[]), Some(&unit_vector(1)))
        .unwrap();
    tx.update(&particle(&ids[0], 0.97, &[]), Some(&unit_vector(2)))
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(
        assert_cache_exact(&store, &mut cache, None, "insert+update"),
        Route::Delta(2)
    );
    kept_are_the_store_s(&cache, "insert+update");

    let tx = writer.transaction().unwrap();
    assert!(tx.retract(&ids[1], now).unwrap());
    assert!(tx.rename(&ids[2], "kept-renamed").unwrap());
    tx.commit().unwrap();
    assert!(matches!(
        assert_cache_exact(&store, &mut cache, None, "retract+rename"),
        Route::Delta(_)
    ));
    kept_are_the_store_s(&cache, "retract+rename");

    // A set past the limit keeps none, and still answers exactly.
    let mut small = CandidateCache::new();
    small.set_keep_particles(Some(3));
    assert_cache_exact(&store, &mut small, None, "over the limit");
    assert!(!small.candidates().unwrap().keeps_particles());
}

#[test]
fn cache_stays_exact_across_writers() {
    if particles_testkit::reference_python().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = working_copy(dir.path(), "coins-b.db");
    let store = Store::open_read_only(&path).unwrap();
    let subject = first_subject(&store);
    let ids = some_active_ids(&store, 6);
    let mut cache = CandidateCache::new();
    let mut writer = Writer::open(&path).unwrap();
    let now = Timestamp::parse("2026-01-01T00:00:00").unwrap();

    // A subject query in a fresh process never builds.
    let route = assert_cache_exact(&store, &mut cache, None, "first build");
    assert_eq!(route, Route::Rebuild);
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "reuse"),
        Route::Reuse
    );
    let rows = cache.cached_rows().unwrap();
    assert!(
        cache.heap_bytes() > rows * 384 * 4,
        "heap {} for {rows} rows",
        cache.heap_bytes()
    );

    // Rust writer: insert, update, change an id, retract, delete.
    let tx = writer.transaction().unwrap();
    tx.insert(
        &particle("rust-new-1", 0.83, &[&subject]),
        Some(&unit_vector(1)),
    )
    .unwrap();
    tx.commit().unwrap();
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "insert"),
        Route::Delta(1)
    );

    let tx = writer.transaction().unwrap();
    tx.update(
        &particle("rust-new-1", 0.41, &[&subject]),
        Some(&unit_vector(2)),
    )
    .unwrap();
    tx.commit().unwrap();
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "update"),
        Route::Delta(1)
    );

    let tx = writer.transaction().unwrap();
    assert!(tx.rename(&ids[0], "renamed-by-rust").unwrap());
    tx.commit().unwrap();
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "id change"),
        Route::Delta(2)
    );

    let tx = writer.transaction().unwrap();
    assert!(tx.retract(&ids[1], now).unwrap());
    tx.commit().unwrap();
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "retract"),
        Route::Delta(1)
    );

    let tx = writer.transaction().unwrap();
    assert!(tx.delete(&ids[2]).unwrap());
    tx.commit().unwrap();
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "delete"),
        Route::Delta(1)
    );

    // A subject query while stale may bring the state up by delta.
    raw_sql(
        &path,
        &format!(
            "UPDATE particles SET confidence_value = 0.97 WHERE id = '{}'",
            ids[3]
        ),
    );
    // (assert_cache_exact runs the unfiltered request first; check the subject route
    // separately below with a subject-only call.)
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "raw update"),
        Route::Delta(1)
    );

    // The reference, in another process, through its own API.
    reference_writes(
        &path,
        serde_json::json!([
            {"op": "insert", "id": "python-new-1", "content": "Written by the reference.", "confidence": 0.9,
             "vector": unit_vector(3), "subject_ids": [subject]},
            {"op": "retract", "id": ids[4]},
            {"op": "property", "id": ids[5], "key": "extraction:polarity", "value": "DECLINED"},
        ]),
    );
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "reference writes"),
        Route::Delta(3)
    );

    // Bulk write past the delta limit (max(1000, rows / 4) distinct ids): a subject
    // query reads uncached and leaves the state alone; the next unfiltered one rebuilds.
    let tx = writer.transaction().unwrap();
    for i in 0..1001 {
        tx.insert(
            &particle(&format!("bulk-{i:04}"), 0.5, &[]),
            Some(&unit_vector(100 + i)),
        )
        .unwrap();
    }
    tx.commit().unwrap();
    let stale_head = cache.head().cloned();
    let subject_only = particles_model::QueryRequest {
        subject_id: Some(subject.clone()),
        ..particles_model::QueryRequest::question("q")
    };
    let request = subject_only
        .validate(particles_model::Timestamp::parse("2026-06-01T00:00:00Z").unwrap())
        .unwrap();
    let input = particles_query::QueryInput::new(&request, None, now);
    particles_query::run_query_with(&store, &mut cache, &input).unwrap();
    assert_eq!(cache.last_route(), Some(Route::SubjectUncached));
    assert_eq!(
        cache.head().cloned(),
        stale_head,
        "a subject call must not touch the state"
    );
    assert_eq!(
        assert_cache_exact(&store, &mut cache, Some(&subject), "bulk"),
        Route::Rebuild
    );
    assert_eq!(
        cache.cached_rows().unwrap(),
        rows + 1 + 1 + 1001 - 1 - 1 - 1
    );
}

/// The case the journal token exists for: a reader that saw a head inside a write
/// transaction that then rolled back must not trust a later entry that reuses the
/// same seq.
#[test]
fn rolled_back_rowid_reuse_forces_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = working_copy(dir.path(), "coins-a.db");
    let ids = {
        let store = Store::open_read_only(&path).unwrap();
        some_active_ids(&store, 2)
    };
    // The reader's own connection can write: it reads inside its write transaction.
    let reader = Store::from_connection(Connection::open(&path).unwrap(), path.clone()).unwrap();
    let mut cache = CandidateCache::new();
    assert_eq!(
        assert_cache_exact(&reader, &mut cache, None, "build"),
        Route::Rebuild
    );

    // The test shapes the file through the reader's own connection, taken back
    // from the store and handed to it again.
    let connection = reader.into_connection();
    connection
        .execute_batch(&format!(
            "BEGIN; UPDATE particles SET confidence_value = 0.99 WHERE id = '{}';",
            ids[0]
        ))
        .unwrap();
    let reader = Store::from_connection(connection, path.clone()).unwrap();
    assert_eq!(
        assert_cache_exact(&reader, &mut cache, None, "inside the transaction"),
        Route::Delta(1)
    );
    let seen = cache.head().cloned().unwrap();
    let connection = reader.into_connection();
    connection.execute_batch("ROLLBACK").unwrap();
    let reader = Store::from_connection(connection, path.clone()).unwrap();

    // Another connection commits a different change; it gets the same seq.
    raw_sql(
        &path,
        &format!(
            "UPDATE particles SET confidence_value = 0.11 WHERE id = '{}'",
            ids[1]
        ),
    );
    let head = particles_store::read_head(&reader).unwrap().unwrap();
    assert_eq!(
        head.seq, seen.seq,
        "the committed entry reuses the rolled-back seq"
    );
    assert_ne!(head.token, seen.token);

    assert_eq!(
        assert_cache_exact(&reader, &mut cache, None, "after rollback"),
        Route::Rebuild
    );
}

#[test]
fn journal_absent_or_empty_reads_uncached() {
    let dir = tempfile::tempdir().unwrap();
    let path = working_copy(dir.path(), "coins-a.db");
    let store = Store::open_read_only(&path).unwrap();
    let mut cache = CandidateCache::new();
    assert_eq!(
        assert_cache_exact(&store, &mut cache, None, "build"),
        Route::Rebuild
    );

    raw_sql(&path, "DELETE FROM particle_changes");
    assert_eq!(
        assert_cache_exact(&store, &mut cache, None, "empty journal"),
        Route::EmptyJournal
    );
    assert!(cache.cached_rows().is_some(), "the state is kept");

    raw_sql(
        &path,
        "UPDATE particles SET content = content WHERE rowid = (SELECT min(rowid) FROM particles)",
    );
    assert_eq!(
        assert_cache_exact(&store, &mut cache, None, "journal restarted"),
        Route::Rebuild
    );

    raw_sql(&path, "DROP TRIGGER trg_particle_changes_prune");
    assert_eq!(
        assert_cache_exact(&store, &mut cache, None, "trigger dropped"),
        Route::NoJournal
    );

    // Installing the journal again brings the cache back.
    let mut writer = Writer::open(&path).unwrap();
    let report = particles_store::install_journal(&mut writer).unwrap();
    assert_eq!(report.created_triggers, 1);
    assert!(!report.wrote_first_entry);
    assert!(matches!(
        assert_cache_exact(&store, &mut cache, None, "reinstalled"),
        Route::Reuse | Route::Delta(_) | Route::Rebuild
    ));
}
