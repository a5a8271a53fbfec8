//! Following the stores' writes: a long-lived engine brings a store's candidate
//! cache to its head, and warms the sources the truncation band reads, soon
//! after another process commits to it, so the next question does not pay for
//! either. At 1M beliefs that is 0.1-0.2 s of the first answer after a commit
//! (the delta, and the band's facts a commit makes the connection forget).
//!
//! One thread per engine polls each followed store's `PRAGMA data_version` on a
//! connection of its own every [`POLL`]: a read-only connection never commits,
//! so the version moves only when another connection did. A change waits for a
//! poll that sees no further change (a writer's burst is warmed once), or at
//! most [`SETTLE_MAX`], then the engine warms on a pooled connection, which goes
//! back on top of the pool, where the next batch takes its connection
//! ([`crate::Engine`]'s `warm_after_write`). A question that comes first does
//! the work itself, as it would without a follower, and the warm-up then finds
//! it done. Nothing an answer holds depends on the follower: the cache and the
//! memo follow their own rules whoever calls them.
//!
//! The thread holds the engine weakly and ends once it is dropped. A
//! Litestream replica is not followed: its follower does not move
//! `data_version` (its connections forget by a watch of their own).

use std::{
    path::PathBuf,
    sync::Weak,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use particles_store::Store;

use crate::Engine;

/// How often the stores' versions are read.
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// The longest a warm-up waits for a writer's burst to end.
const SETTLE_MAX: Duration = Duration::from_millis(500);

/// One followed store: its slot in the engine, the connection its version is
/// read on, the version last read, and since when a change waits.
struct Followed {
    at: usize,
    path: PathBuf,
    watch: Store,
    version: i64,
    changed_since: Option<Instant>,
}

/// Starts the follower over `stores` (slot and path), or `None` when none of
/// them can be watched or the thread cannot start.
pub(crate) fn spawn(engine: Weak<Engine>, stores: Vec<(usize, PathBuf)>) -> Option<JoinHandle<()>> {
    let mut followed: Vec<Followed> = stores
        .into_iter()
        .filter_map(|(at, path)| {
            let watch = Store::open_read_only(&path).ok()?;
            let version = watch.data_version().ok()?;
            Some(Followed {
                at,
                path,
                watch,
                version,
                changed_since: None,
            })
        })
        .collect();
    if followed.is_empty() {
        return None;
    }
    std::thread::Builder::new()
        .name("particles-follow".into())
        .spawn(move || loop {
            std::thread::sleep(POLL);
            let Some(engine) = engine.upgrade() else {
                return;
            };
            for one in &mut followed {
                if one.due() {
                    warm(&engine, one);
                }
            }
        })
        .ok()
}

impl Followed {
    /// Reads the version: whether a change has settled (no further change in
    /// the last poll, or waited [`SETTLE_MAX`]).
    fn due(&mut self) -> bool {
        let Ok(version) = self.watch.data_version() else {
            return false;
        };
        let now = Instant::now();
        if version != self.version {
            self.version = version;
            let since = *self.changed_since.get_or_insert(now);
            if now.duration_since(since) < SETTLE_MAX {
                return false;
            }
        }
        self.changed_since.take().is_some()
    }
}

/// Warms one store after a write, and says how it went.
fn warm(engine: &Engine, one: &Followed) {
    let started = Instant::now();
    match engine.warm_after_write(one.at) {
        Ok((route, sources)) => tracing::debug!(
            store = %one.path.display(),
            route = route.map_or("uncached", |r| r.as_str()),
            sources,
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "followed a write: the cache at the store's head, the band's sources warm"
        ),
        Err(error) => tracing::warn!(
            store = %one.path.display(),
            %error,
            "a write could not be followed; the next question reads it"
        ),
    }
}
