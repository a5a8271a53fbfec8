//! A candidate cache shared by concurrent queries.
//!
//! A query whose snapshot is at the head the cache's state was built at takes the
//! state (an `Arc`) under a read lock held for a pointer copy, and ranks without
//! any lock: queries at the same head never wait for one another. A query that
//! finds the state behind its head takes the refresher's lock, brings the state to
//! its head by the journal protocol (delta or rebuild, once: queries that queued
//! meanwhile find it done) and publishes it; queries already ranking on the old
//! state finish on it.
//!
//! Memory: a delta builds the new state beside the old one, and a rebuild drops
//! the published state before it builds, so the old one lives on only while the
//! queries that started on it run. Worst case (a rebuild under a long query), two
//! states at once: about 1.7 KB per cached row each.

use std::{
    path::Path,
    sync::{Arc, Mutex, PoisonError, RwLock},
};

use particles_candidates::Selection;
use particles_store::{CandidateLoader, Result, Store};

use crate::{select_from, writeback::Taken, CacheState, CandidateCache, Route, WriteBehind};

/// A [`CandidateCache`] for several threads: lock-free reads at the current head,
/// one refresh at a time. Query through [`SharedCache::loader`].
pub struct SharedCache {
    published: RwLock<Option<Arc<CacheState>>>,
    refresher: Mutex<CandidateCache>,
    /// Held while the sidecar is written, so two writes never race.
    writing: Mutex<()>,
}

impl SharedCache {
    /// Shares `cache` (empty, or with a sidecar to start from).
    pub fn new(cache: CandidateCache) -> SharedCache {
        let published = RwLock::new(cache.state.clone());
        SharedCache {
            published,
            refresher: Mutex::new(cache),
            writing: Mutex::new(()),
        }
    }

    /// A loader for one query.
    pub fn loader(&self) -> SharedLoader<'_> {
        SharedLoader {
            cache: self,
            route: None,
        }
    }

    /// Runs `f` on the underlying cache, under the refresher's lock (to persist
    /// its sidecar, read its counters or take its notes).
    pub fn with_cache<T>(&self, f: impl FnOnce(&mut CandidateCache) -> T) -> T {
        f(&mut self
            .refresher
            .lock()
            .unwrap_or_else(PoisonError::into_inner))
    }

    /// Writes the sidecar if the state changed since it was read or written and
    /// the policy asks for it ([`CandidateCache::persist`]), after any
    /// write-behind under way. Returns whether a file was written.
    pub fn persist(&self, store: &Path) -> bool {
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        self.with_cache(|cache| cache.persist(store))
    }

    /// Writes the state to the sidecar while queries go on, when the file
    /// would then serve it from its map where the state now holds memory of
    /// its own (built, compacted, or given a half copy the file lacks), and
    /// serves the same head from the file once written (see `writeback.rs`).
    /// For long-lived processes, from a thread of their own: at 1M rows the
    /// write is 2.5 GB. `None` when there is nothing to write; the cache's
    /// notes say why a write failed.
    pub fn write_behind(&self, store: &Path) -> Option<WriteBehind> {
        let writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let job = self.with_cache(|cache| cache.writeback())?;
        let (fresh, took) = job.run(store);
        let taken = {
            let mut cache = self
                .refresher
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let taken = cache.written(&job, fresh);
            if matches!(taken, Taken::Swapped(_)) {
                // Under the refresher's lock the published state is the cache's.
                self.publish(cache.state.clone());
            }
            taken
        };
        // The file is written and taken: a `persist` (a server stopping) need
        // not wait for the freeing and the trim.
        drop(writing);
        Some(job.outcome(took, taken))
    }

    /// Drops the state and deletes the sidecar after a query found them damaged
    /// (see [`CandidateCache::discard`]).
    pub fn discard(&self) {
        let mut cache = self
            .refresher
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.publish(None);
        cache.discard();
    }

    fn current(&self) -> Option<Arc<CacheState>> {
        self.published
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn publish(&self, state: Option<Arc<CacheState>>) {
        *self
            .published
            .write()
            .unwrap_or_else(PoisonError::into_inner) = state;
    }
}

/// One query's view of a [`SharedCache`]; it remembers how its call was served.
pub struct SharedLoader<'a> {
    cache: &'a SharedCache,
    route: Option<Route>,
}

impl SharedLoader<'_> {
    /// How the last call through this loader was served.
    pub fn route(&self) -> Option<Route> {
        self.route
    }
}

impl CandidateLoader for SharedLoader<'_> {
    fn select(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Selection> {
        // The fast path: the published state is at this snapshot's head.
        if particles_store::journal_installed(store)? {
            if let (Some(head), Some(state)) =
                (particles_store::read_head(store)?, self.cache.current())
            {
                if state.head == head {
                    self.route = Some(Route::Reuse);
                    return select_from(&state, store, min_confidence, subject_id);
                }
            }
        }
        // Behind, or no journal: one refresher at a time. A rebuild frees the
        // published state first, so only queries in flight still hold it.
        let mut cache = self
            .cache
            .refresher
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if cache.state.is_some() {
            self.cache.publish(None);
        }
        let selection = cache.select(store, min_confidence, subject_id);
        self.route = cache.last_route();
        self.cache.publish(cache.state.clone());
        selection
    }
}
