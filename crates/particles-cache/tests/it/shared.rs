//! The shared cache under concurrency: readers on several threads query through
//! one `SharedCache` while a writer commits; every answer equals the uncached
//! answer read in the same snapshot, and readers at an unchanged head are served
//! from the published state.

use std::sync::atomic::{AtomicBool, Ordering};

use particles_cache::{CandidateCache, Route, SharedCache};
use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query_with, QueryInput};
use particles_rank::NormKernel;
use particles_store::{Store, UncachedLoader, Writer};

use crate::support::{journaled_copy, particle, unit_vector};

#[test]
fn concurrent_readers_stay_exact_across_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = journaled_copy(dir.path(), "coins-b.db");
    {
        // WAL, as the reference leaves a store: readers beside a writer.
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
            .unwrap();
    }
    let shared = SharedCache::new(CandidateCache::new());
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        top_k: 25,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let vector = unit_vector(3);
    let writing = AtomicBool::new(true);
    let checked = std::sync::atomic::AtomicUsize::new(0);
    let reused = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut writer = Writer::open(&path).unwrap();
            for round in 0u32..12 {
                let tx = writer.transaction().unwrap();
                let id = format!("concurrent-{round}");
                tx.insert(
                    &particle(&id, 0.5 + f64::from(round) / 40.0, &[]),
                    Some(&unit_vector(100 + u64::from(round))),
                )
                .unwrap();
                tx.commit().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(15));
            }
            writing.store(false, Ordering::SeqCst);
        });
        for _ in 0..3 {
            scope.spawn(|| {
                let store = Store::open_read_only(&path).unwrap();
                let input = QueryInput {
                    norm_kernel: NormKernel::SkylakeX,
                    ..QueryInput::new(&request, Some(&vector), now)
                };
                let mut last_pass = true;
                while writing.load(Ordering::SeqCst) || std::mem::take(&mut last_pass) {
                    // Both answers read the same snapshot: the outer transaction.
                    let (cached, uncached, route) = store
                        .read_snapshot(|store| {
                            let mut loader = shared.loader();
                            let cached = run_query_with(store, &mut loader, &input).unwrap();
                            let uncached =
                                run_query_with(store, &mut UncachedLoader, &input).unwrap();
                            Ok((cached, uncached, loader.route()))
                        })
                        .unwrap();
                    assert_eq!(cached.hits, uncached.hits, "served by {route:?}");
                    checked.fetch_add(1, Ordering::SeqCst);
                    if route == Some(Route::Reuse) {
                        reused.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
    });
    assert!(checked.into_inner() >= 3);
    assert!(
        reused.into_inner() > 0,
        "readers at an unchanged head reuse the state"
    );
}
