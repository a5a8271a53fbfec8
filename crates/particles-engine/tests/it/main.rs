//! Integration tests of the engine: one module per topic.

mod concurrency;
mod follow;
mod replica;
mod structural;
mod subjects;

use std::path::Path;

use particles_engine::{CacheOptions, Engine, Settings, StoreSelection, StoreTarget};

/// An engine over the one store at `path`, the default configuration, no
/// sidecar.
fn engine_over(path: &Path) -> Engine {
    let config = particles_config::Config::default();
    Engine::new(
        Settings::from_config(&config),
        particles_engine::answer_settings(&config, &Default::default()),
        &StoreSelection {
            targets: vec![StoreTarget {
                handle: None,
                path: path.to_owned(),
            }],
            federated: false,
        },
        &CacheOptions {
            no_sidecar: true,
            ..CacheOptions::default()
        },
        None,
    )
    .unwrap()
}

/// Another process's commit: the first ACTIVE particle's confidence set to
/// `confidence`, one journal entry (through the store's triggers).
fn commit(path: &Path, confidence: f64) {
    let connection = rusqlite::Connection::open(path).unwrap();
    connection
        .execute(
            "UPDATE particles SET confidence_value = ?1 WHERE rowid = (SELECT min(rowid) FROM \
             particles WHERE status = 'ACTIVE')",
            [confidence],
        )
        .unwrap();
}
