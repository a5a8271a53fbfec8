//! A long-lived engine follows another process's commits: the cache reaches the
//! store's head with no question asked, and the next answer reuses that head
//! and is the answer a fresh engine gives.

use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use particles_engine::Engine;
use particles_model::{Envelope, QueryRequest, Timestamp};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-b.db")
}

/// Ids and effective-confidence bits of one question's answer.
fn ask(engine: &Engine) -> Vec<(String, u64)> {
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        top_k: 20,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let envelope = Envelope {
        vector: Some(crate::concurrency::vector(11)),
        no_embedding: false,
        now: Some(now),
        ..Envelope::default()
    };
    let response = engine.query(&request, &envelope).unwrap();
    response
        .particles
        .iter()
        .map(|p| p.id.clone())
        .zip(response.effective_confidences.iter().map(|e| e.to_bits()))
        .collect()
}

fn deltas(engine: &Engine) -> u64 {
    engine
        .cache_route_counts()
        .into_iter()
        .find(|(route, _)| *route == "delta")
        .map_or(0, |(_, count)| count)
}

#[test]
fn a_commit_is_followed_before_the_next_question() {
    for wal in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coins-b.db");
        std::fs::copy(fixture(), &path).unwrap();
        if wal {
            rusqlite::Connection::open(&path)
                .unwrap()
                .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
                .unwrap();
        }
        let engine = Arc::new(crate::engine_over(&path));
        // The first question builds the cache.
        ask(&engine);
        assert_eq!(
            engine.follow_writes(),
            particles_engine::Following {
                writes: true,
                write_behind: true
            },
            "wal {wal}: both threads run"
        );
        for (step, confidence) in [0.99, 0.01, 0.42].into_iter().enumerate() {
            let before = deltas(&engine);
            crate::commit(&path, confidence);
            let deadline = Instant::now() + Duration::from_secs(30);
            while deltas(&engine) == before {
                assert!(
                    Instant::now() < deadline,
                    "wal {wal}, step {step}: the write was not followed"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            let answer = ask(&engine);
            let route = engine.cache_report().and_then(|report| report.route);
            assert_eq!(
                route.map(|r| r.as_str()),
                Some("reuse"),
                "wal {wal}, step {step}: the question found the head reached"
            );
            assert_eq!(
                answer,
                ask(&crate::engine_over(&path)),
                "wal {wal}, step {step}: the answer of a fresh engine"
            );
        }
        // The follower holds the engine weakly: dropping it frees it.
        let weak = Arc::downgrade(&engine);
        drop(engine);
        std::thread::sleep(Duration::from_millis(200));
        assert!(weak.upgrade().is_none(), "wal {wal}: the engine was freed");
    }
}

/// A server's engine writes the sidecar of the state it built behind it
/// (with the half copy), and then answers from the file as it did before.
#[test]
fn a_built_state_is_written_behind_a_following_engine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coins-b.db");
    std::fs::copy(fixture(), &path).unwrap();
    let sidecar = particles_cache::sidecar_path(&path, None);
    let config = particles_config::Config::default();
    let engine = Arc::new(
        Engine::new(
            particles_engine::Settings::from_config(&config),
            particles_engine::answer_settings(&config, &Default::default()),
            &particles_engine::StoreSelection {
                targets: vec![particles_engine::StoreTarget {
                    handle: None,
                    path: path.clone(),
                }],
                federated: false,
            },
            &particles_engine::CacheOptions {
                write: Some(particles_cache::SidecarWrite::OnRebuild),
                huge_pages: true,
                half_precision: Some(0),
                ..particles_engine::CacheOptions::default()
            },
            None,
        )
        .unwrap(),
    );
    let built = ask(&engine);
    let heap_built = engine.cache_report().unwrap().heap_bytes;
    assert!(!sidecar.exists(), "answering writes no file");
    assert!(engine.follow_writes().write_behind);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sidecar.exists() {
        assert!(
            Instant::now() < deadline,
            "the sidecar was not written behind"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // A persist waits for a write-behind under way, and finds nothing left.
    assert_eq!(engine.persist_counted().0, 0, "nothing is left to persist");
    let report = particles_cache::verify_sidecar(&sidecar).unwrap();
    assert!(
        report
            .sections
            .iter()
            .any(|section| section.name == "half.vectors" && !section.range.is_empty()),
        "the file carries the half copy: {report:?}"
    );
    assert_eq!(ask(&engine), built, "the answer from the file");
    assert_eq!(
        engine.cache_report().and_then(|report| report.route),
        Some(particles_cache::Route::Reuse)
    );
    let heap = engine.cache_report().unwrap().heap_bytes;
    assert!(
        heap < heap_built,
        "the half copy is the file's now: {heap} heap bytes, {heap_built} before"
    );
}
