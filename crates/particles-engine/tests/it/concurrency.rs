//! Concurrent queries through one engine: they are batched into shared passes,
//! and each answer equals the query answered alone.

use std::path::PathBuf;

use particles_engine::Settings;
use particles_model::{Envelope, QueryRequest, Timestamp};
use particles_query::{run_query, QueryInput};
use particles_store::Store;

pub(crate) fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-b.db")
}

pub(crate) fn vector(seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut values: Vec<f32> = (0..384)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    values.iter_mut().for_each(|v| *v /= norm);
    values
}

#[test]
fn concurrent_answers_equal_lone_answers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coins-b.db");
    std::fs::copy(fixture(), &path).unwrap();
    let settings = Settings::from_config(&particles_config::Config::default());
    let engine = crate::engine_over(&path);
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let store = Store::open_read_only(&path).unwrap();
    std::thread::scope(|scope| {
        for thread in 0..4u64 {
            let engine = &engine;
            let path = &path;
            let settings = &settings;
            scope.spawn(move || {
                let store = Store::open_read_only(path).unwrap();
                for round in 0..6u64 {
                    let request = QueryRequest {
                        top_k: (3 + thread * 5 + round) as u32,
                        min_confidence: if round % 3 == 0 { 0.2 } else { 0.0 },
                        ..QueryRequest::question("q")
                    }
                    .validate(now)
                    .unwrap();
                    let vector = vector(thread * 100 + round);
                    let envelope = Envelope {
                        vector: Some(vector.clone()),
                        no_embedding: false,
                        now: Some(now),
                        ..Envelope::default()
                    };
                    let response = engine.query(&request, &envelope).unwrap();
                    let alone = run_query(
                        &store,
                        &QueryInput {
                            settings: &settings.rank,
                            ..QueryInput::new(&request, Some(&vector), now)
                        }
                        .with_truncation(&settings.truncation),
                    )
                    .unwrap();
                    let ids: Vec<&str> = response.particles.iter().map(|p| p.id.as_str()).collect();
                    let expected: Vec<&str> = alone.hits.iter().map(|h| h.id.as_str()).collect();
                    assert_eq!(ids, expected);
                    let effs: Vec<u64> = response
                        .effective_confidences
                        .iter()
                        .map(|e| e.to_bits())
                        .collect();
                    let expected: Vec<u64> = alone
                        .hits
                        .iter()
                        .map(|h| h.effective_confidence.to_bits())
                        .collect();
                    assert_eq!(effs, expected);
                }
            });
        }
    });
    drop(store);
}
