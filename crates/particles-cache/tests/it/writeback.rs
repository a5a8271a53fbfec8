//! Writing a server's sidecar behind it: the state a long-lived cache built
//! (or gave a half copy its file lacked) is written while queries go on, then
//! served from the file at the same head, answering exactly as before; a
//! state the file already holds, an extended one, and a cache whose file
//! cannot be written are left alone.

use std::path::{Path, PathBuf};

use particles_cache::{
    CandidateCache, Route, SharedCache, SidecarConfig, SidecarWrite, WriteBehind,
};
use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query_with, QueryInput};
use particles_rank::NormKernel;
use particles_store::{Store, UncachedLoader, Writer};

use crate::support::{assert_cache_exact, journaled_copy, particle, unit_vector};

/// A server's cache: huge pages, and a half copy for every set.
fn server_cache(sidecar: &Path) -> CandidateCache {
    let mut cache = CandidateCache::with_sidecar(SidecarConfig {
        path: sidecar.to_owned(),
        write: SidecarWrite::OnRebuild,
    });
    cache.set_huge_pages(true);
    cache.set_half_precision(Some(0));
    cache
}

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let store = journaled_copy(dir.path(), "coins-b.db");
    let sidecar = particles_cache::sidecar_path(&store, None);
    (dir, store, sidecar)
}

/// One question through the shared loader, checked against the uncached
/// loader in the same snapshot; returns the route.
fn ask(shared: &SharedCache, store: &Store, step: &str) -> Option<Route> {
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        top_k: 40,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let vector = unit_vector(5);
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(&request, Some(&vector), now)
    };
    store
        .read_snapshot(|store| {
            let mut loader = shared.loader();
            let cached = run_query_with(store, &mut loader, &input).unwrap();
            let uncached = run_query_with(store, &mut UncachedLoader, &input).unwrap();
            assert_eq!(cached.hits, uncached.hits, "{step}: the shared answer");
            assert_eq!(cached.stats, uncached.stats, "{step}: the shared stats");
            Ok(loader.route())
        })
        .unwrap()
}

fn has_half(sidecar: &Path) -> bool {
    particles_cache::verify_sidecar(sidecar)
        .unwrap()
        .sections
        .iter()
        .any(|section| section.name == "half.vectors" && !section.range.is_empty())
}

#[test]
fn a_built_state_is_written_behind_and_then_served_from_its_file() {
    let (_dir, path, sidecar) = setup();
    let store = Store::open_read_only(&path).unwrap();
    let shared = SharedCache::new(server_cache(&sidecar));
    assert_eq!(ask(&shared, &store, "build"), Some(Route::Rebuild));
    assert!(
        !sidecar.exists(),
        "a server writes nothing while it answers"
    );

    let Some(WriteBehind::Served { rows, .. }) = shared.write_behind(&path) else {
        panic!("the built state is written and served from the file");
    };
    assert!(rows > 50, "{rows} rows");
    assert!(has_half(&sidecar), "the file carries the half copy");
    assert_eq!(
        particles_cache::verify_sidecar(&sidecar).unwrap().rows,
        rows
    );
    // The same head, so the published state is reused, and it answers as the
    // store does (the shared loader's fast path, then the cache's own path).
    assert_eq!(ask(&shared, &store, "from the file"), Some(Route::Reuse));
    shared.with_cache(|cache| {
        assert_eq!(
            assert_cache_exact(&store, cache, None, "from the file"),
            Route::Reuse
        );
        assert_eq!(cache.stats().sidecar_writes, 1);
        assert!(cache.take_notes().is_empty());
    });
    assert_eq!(shared.write_behind(&path), None, "nothing is left to write");
    assert!(!shared.persist(&path), "nor to persist at exit");

    // A delta extends the state: it is not written behind, and the file's
    // state is still a start the next process brings to the head.
    let mut writer = Writer::open(&path).unwrap();
    let tx = writer.transaction().unwrap();
    tx.insert(&particle("behind-new", 0.8, &[]), Some(&unit_vector(9)))
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(ask(&shared, &store, "after a write"), Some(Route::Delta(1)));
    assert_eq!(shared.write_behind(&path), None, "an extended state");
    let next = SharedCache::new(server_cache(&sidecar));
    assert_eq!(
        ask(&next, &store, "the next process"),
        Some(Route::Delta(1))
    );
}

/// A persist at a server's stop writes the built state; a write-behind that
/// waited on it then finds nothing to write (a second write as the process
/// ends would leave its half-written file behind).
#[test]
fn a_persisted_state_is_not_written_behind_again() {
    let (_dir, path, sidecar) = setup();
    let store = Store::open_read_only(&path).unwrap();
    let shared = SharedCache::new(server_cache(&sidecar));
    assert_eq!(ask(&shared, &store, "build"), Some(Route::Rebuild));
    assert!(shared.persist(&path), "the built state is written at stop");
    assert!(sidecar.exists());
    assert_eq!(shared.write_behind(&path), None, "nothing is left to write");
    shared.with_cache(|cache| assert_eq!(cache.stats().sidecar_writes, 1));
}

#[test]
fn a_half_copy_the_file_lacked_is_written_behind() {
    let (_dir, path, sidecar) = setup();
    let store = Store::open_read_only(&path).unwrap();
    // A one-shot process writes a sidecar without a half copy.
    let mut one_shot = CandidateCache::with_sidecar(SidecarConfig {
        path: sidecar.clone(),
        write: SidecarWrite::OnChange,
    });
    assert_cache_exact(&store, &mut one_shot, None, "one-shot");
    assert!(one_shot.persist(&path));
    assert!(!has_half(&sidecar));

    let shared = SharedCache::new(server_cache(&sidecar));
    assert_eq!(ask(&shared, &store, "server start"), Some(Route::Sidecar));
    assert!(matches!(
        shared.write_behind(&path),
        Some(WriteBehind::Served { .. })
    ));
    assert!(has_half(&sidecar), "the file now carries the half copy");
    assert_eq!(
        ask(&shared, &store, "from the new file"),
        Some(Route::Reuse)
    );

    // A server that starts from that file has nothing to write.
    let next = SharedCache::new(server_cache(&sidecar));
    assert_eq!(ask(&next, &store, "next start"), Some(Route::Sidecar));
    assert_eq!(next.write_behind(&path), None);
}

#[test]
fn a_file_that_cannot_be_written_stops_the_write_behinds_with_a_note() {
    let (dir, path, _) = setup();
    // A sidecar path under a regular file: no directory can be made there.
    let blocker = dir.path().join("not-a-directory");
    std::fs::write(&blocker, b"x").unwrap();
    let sidecar = blocker.join("store.sidecar");
    let store = Store::open_read_only(&path).unwrap();
    let shared = SharedCache::new(server_cache(&sidecar));
    assert_eq!(ask(&shared, &store, "build"), Some(Route::Rebuild));
    assert_eq!(shared.write_behind(&path), Some(WriteBehind::Failed));
    let notes = shared.with_cache(CandidateCache::take_notes);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("not written behind the server again until it restarts"),
        "{notes:?}"
    );
    assert_eq!(shared.write_behind(&path), None, "no second try");
    assert_eq!(
        ask(&shared, &store, "after the failure"),
        Some(Route::Reuse),
        "the state still serves"
    );
}
