//! Integration tests of the engine: one module per topic.

mod concurrency;
mod follow;
mod replica;
mod structural;

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
