//! Writing the followed stores' sidecars behind their caches: a server that
//! built its state, compacted it, or gave it a half copy its sidecar lacked
//! holds that memory of its own (at 1M rows, up to 1.5 GB of vectors in huge
//! pages and a 768 MB half copy) until the file serves it from its map. One
//! thread per engine asks each store's cache every [`POLL`] whether it has a
//! state to write ([`particles_cache::SharedCache::write_behind`]), writes it
//! while queries go on, and then the cache serves the same head from the
//! file; the band's sources of the new state are warmed as after a write.
//!
//! Its own thread, not the follower's: a write at 1M rows takes seconds, and
//! following a commit must not wait for it. The thread holds the engine
//! weakly and ends once it is dropped.

use std::{path::PathBuf, sync::Weak, time::Duration};

use particles_cache::WriteBehind;

use crate::Engine;

/// How often the caches are asked. A state waits at most this long to be
/// written: against its seconds of writing, nothing.
const POLL: Duration = Duration::from_secs(1);

/// Starts the thread over `stores` (slot and path); `false` when it cannot
/// start (the caches then keep their memory until the process ends).
pub(crate) fn spawn(engine: Weak<Engine>, stores: Vec<(usize, PathBuf)>) -> bool {
    if stores.is_empty() {
        return false;
    }
    std::thread::Builder::new()
        .name("particles-writeback".into())
        .spawn(move || loop {
            std::thread::sleep(POLL);
            for (at, path) in &stores {
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                let (outcome, notes) = engine.write_behind(*at);
                report(path, outcome, &notes);
            }
        })
        .is_ok()
}

/// Says what a write-behind did, for the operator.
fn report(path: &std::path::Path, outcome: Option<WriteBehind>, notes: &[String]) {
    for note in notes {
        tracing::warn!(store = %path.display(), "{note}");
    }
    match outcome {
        Some(WriteBehind::Served {
            rows,
            written,
            opened,
            freed,
            released,
        }) => tracing::info!(
            store = %path.display(),
            rows,
            written_ms = written.as_secs_f64() * 1000.0,
            opened_ms = opened.as_secs_f64() * 1000.0,
            freed_ms = freed.as_secs_f64() * 1000.0,
            released_ms = released.as_secs_f64() * 1000.0,
            "the sidecar was written behind the cache, which now serves it from the file"
        ),
        Some(WriteBehind::Outrun { written }) => tracing::info!(
            store = %path.display(),
            written_ms = written.as_secs_f64() * 1000.0,
            "the sidecar was written behind the cache, which had moved on meanwhile"
        ),
        Some(WriteBehind::Failed) | None => {}
    }
}
