//! Requests without a question through the engine (what `serve --stdio` and the
//! HTTP engine answer): each deterministic mode's response equals
//! particles-structural's on the same store, and a federated engine refuses
//! them by name instead of ranking something else.

use std::path::{Path, PathBuf};

use particles_engine::{CacheOptions, Engine, Settings, StoreSelection, StoreTarget};
use particles_model::{Envelope, GroupBy, QueryRequest, Timestamp};
use particles_query::QueryInput;
use particles_store::Store;
use particles_structural::run_structural_with;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-b.db")
}

fn engine_over(paths: &[&Path], federated: bool) -> Engine {
    let config = particles_config::Config::default();
    Engine::new(
        Settings::from_config(&config),
        particles_engine::answer_settings(&config, &Default::default()),
        &StoreSelection {
            targets: paths
                .iter()
                .map(|path| StoreTarget {
                    handle: federated.then(|| "default".to_owned()),
                    path: path.to_path_buf(),
                })
                .collect(),
            federated,
        },
        &CacheOptions {
            no_sidecar: true,
            ..CacheOptions::default()
        },
        None,
    )
    .unwrap()
}

#[test]
fn deterministic_modes_answer_through_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coins-b.db");
    std::fs::copy(fixture(), &path).unwrap();
    let engine = engine_over(&[&path], false);
    let settings = Settings::from_config(&particles_config::Config::default());
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let store = Store::open_read_only(&path).unwrap();
    let requests = [
        QueryRequest {
            count: true,
            ..QueryRequest::default()
        },
        QueryRequest {
            group_by: Some(GroupBy::Predicate),
            ..QueryRequest::default()
        },
        QueryRequest {
            list_predicates: true,
            ..QueryRequest::default()
        },
        QueryRequest {
            list_vocabulary: true,
            ..QueryRequest::default()
        },
    ];
    let envelope = Envelope {
        vector: None,
        no_embedding: false,
        now: Some(now),
        ..Envelope::default()
    };
    for request in requests {
        let request = request.validate(now).unwrap();
        let ours = engine.query(&request, &envelope).unwrap();
        let input = QueryInput {
            settings: &settings.rank,
            ..QueryInput::new(&request, None, now)
        };
        let direct = run_structural_with(&store, &input, &settings.structural).unwrap();
        assert_eq!(ours, direct, "{:?}", request.mode());
        assert!(!ours.answer.is_empty(), "the mode's sentence is the answer");
    }

    let federated = engine_over(&[&path, &path], true);
    let request = QueryRequest {
        count: true,
        ..QueryRequest::default()
    }
    .validate(now)
    .unwrap();
    let refused = federated.query(&request, &envelope).unwrap_err();
    assert!(
        refused.to_string().contains("federated structural"),
        "{refused}"
    );
}
