//! The ACTIVE candidates of a Particles store, held in memory for the scan and kept
//! exact by the store's change journal.
//!
//! [`CandidateCache`] is a [`CandidateLoader`]: a query through it returns exactly
//! what the uncached loader would return at that moment (same rows, values, vectors
//! and order), but a warm query reads no particle row, decodes no JSON and allocates
//! nothing per candidate. The protocol is the reference's (linkedparticles 1.214.1,
//! `candidate_cache.py`), so a Python writer and this reader share one journal:
//!
//! - no journal triggers, or an empty journal: read uncached, keep the state;
//! - same head as the state's: reuse it;
//! - the state's entry still carries its token: re-read the ids changed since, if
//!   there are at most `max(1000, rows / 4)` of them (chunks of 500);
//! - otherwise rebuild, except on a subject-filtered call, which reads uncached.
//!
//! States are immutable and shared (`Arc`); a refresh builds a new one and swaps it
//! in, so the replaced one is freed as soon as no query holds it.
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

use std::{collections::HashSet, sync::Arc};

use particles_model::{CandidateSet, Selection};
use particles_store::{
    particle_columns, read_candidates, CandidateLoader, JournalHead, Result, RowFilter, Store,
    ID_CHUNK,
};

/// The fewest changed ids a delta may re-read, whatever the cache size.
pub const DELTA_FLOOR: usize = 1000;

/// How the last call was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The store has no journal triggers: read uncached.
    NoJournal,
    /// The journal is empty: read uncached; the state is kept.
    EmptyJournal,
    /// The head is unchanged: served from the state, no row read.
    Reuse,
    /// Brought up to date by re-reading this many changed ids.
    Delta(usize),
    /// Built from scratch.
    Rebuild,
    /// A subject-filtered call that would have needed a rebuild: read uncached.
    SubjectUncached,
}

/// Counters over the cache's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Full builds.
    pub rebuilds: u64,
    /// Delta refreshes.
    pub deltas: u64,
    /// Calls served by an unchanged state.
    pub reuses: u64,
    /// Calls read uncached.
    pub uncached: u64,
}

struct CacheState {
    head: JournalHead,
    set: Arc<CandidateSet>,
    /// Rows sorted by particle id, for subject lookups.
    by_id: Vec<u32>,
}

impl CacheState {
    fn new(head: JournalHead, set: CandidateSet) -> CacheState {
        let mut by_id: Vec<u32> = (0..set.len() as u32).collect();
        by_id.sort_by(|&a, &b| set.id(a as usize).cmp(set.id(b as usize)));
        CacheState {
            head,
            set: Arc::new(set),
            by_id,
        }
    }

    fn row_of(&self, id: &str) -> Option<usize> {
        self.by_id
            .binary_search_by(|&row| self.set.id(row as usize).cmp(id))
            .ok()
            .map(|at| self.by_id[at] as usize)
    }
}

/// The candidate cache of one store. Use one per store file; it is a
/// [`CandidateLoader`] for `particles_query::run_query_with`.
#[derive(Default)]
pub struct CandidateCache {
    state: Option<CacheState>,
    last_route: Option<Route>,
    stats: CacheStats,
}

impl CandidateCache {
    /// An empty cache; the first unfiltered query builds it.
    pub fn new() -> CandidateCache {
        CandidateCache::default()
    }

    /// How the last call was served.
    pub fn last_route(&self) -> Option<Route> {
        self.last_route
    }

    /// Counters over the cache's life.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// The number of cached rows, or `None` before the first build.
    pub fn cached_rows(&self) -> Option<usize> {
        self.state.as_ref().map(|s| s.set.len())
    }

    /// Heap bytes the cached state holds (vectors, columns, ids, the id index).
    pub fn heap_bytes(&self) -> usize {
        self.state
            .as_ref()
            .map_or(0, |s| s.set.heap_bytes() + s.by_id.capacity() * 4)
    }

    /// The journal head the state is valid at.
    pub fn head(&self) -> Option<&JournalHead> {
        self.state.as_ref().map(|s| &s.head)
    }

    /// Drops the cached state.
    pub fn clear(&mut self) {
        self.state = None;
    }

    fn uncached(
        &mut self,
        route: Route,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Selection> {
        self.last_route = Some(route);
        self.stats.uncached += 1;
        particles_store::load_active(store, min_confidence, subject_id)
    }

    /// Brings the state to `head`, or says why it cannot.
    fn refresh(
        &mut self,
        store: &Store,
        head: JournalHead,
        subject_call: bool,
    ) -> Result<Option<Route>> {
        if let Some(state) = &self.state {
            if state.head == head {
                self.stats.reuses += 1;
                return Ok(Some(Route::Reuse));
            }
            let token = particles_store::token_at(store, state.head.seq)?;
            if token.as_deref() == Some(state.head.token.as_slice()) {
                let limit = DELTA_FLOOR.max(state.set.len() / 4);
                if let Some(changed) = particles_store::changed_since(store, state.head.seq, limit)?
                {
                    let added = read_rows_by_id(store, &changed)?;
                    let set = state.set.replaced(&changed, &added);
                    self.state = Some(CacheState::new(head, set));
                    self.stats.deltas += 1;
                    return Ok(Some(Route::Delta(changed.len())));
                }
            }
        }
        if subject_call {
            return Ok(None);
        }
        let mut set = CandidateSet::new();
        read_candidates(
            store,
            "cache build",
            &format!(
                "SELECT {} FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
                 ORDER BY confidence_value ASC, particles.rowid ASC",
                particle_columns()
            ),
            [],
            RowFilter::AnyModel,
            &mut set,
        )?;
        // Replace, so the old state is freed before anything else is kept.
        self.state = Some(CacheState::new(head, set));
        self.stats.rebuilds += 1;
        Ok(Some(Route::Rebuild))
    }
}

/// Re-reads changed ids that are still cacheable (ACTIVE with an embedding), in
/// chunks of [`ID_CHUNK`].
fn read_rows_by_id(store: &Store, ids: &HashSet<String>) -> Result<CandidateSet> {
    let mut sorted: Vec<&str> = ids.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    let mut set = CandidateSet::new();
    for chunk in sorted.chunks(ID_CHUNK) {
        let sql = format!(
            "SELECT {} FROM particles WHERE id IN ({}) AND status = 'ACTIVE' AND embedding_json IS NOT NULL",
            particle_columns(),
            vec!["?"; chunk.len()].join(",")
        );
        read_candidates(
            store,
            "cache delta",
            &sql,
            rusqlite::params_from_iter(chunk.iter()),
            RowFilter::AnyModel,
            &mut set,
        )?;
    }
    Ok(set)
}

impl CandidateLoader for CandidateCache {
    fn load(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Selection> {
        if !particles_store::journal_installed(store)? {
            return self.uncached(Route::NoJournal, store, min_confidence, subject_id);
        }
        let Some(head) = particles_store::read_head(store)? else {
            return self.uncached(Route::EmptyJournal, store, min_confidence, subject_id);
        };
        let Some(route) = self.refresh(store, head, subject_id.is_some())? else {
            return self.uncached(Route::SubjectUncached, store, min_confidence, subject_id);
        };
        self.last_route = Some(route);
        let state = self
            .state
            .as_ref()
            .expect("refresh leaves a state when it returns a route");
        let set = &state.set;
        let candidate_rows: Vec<usize> = match subject_id {
            None => (0..set.len()).collect(),
            Some(subject) => {
                // Links are not journaled: read them live on every call.
                let mut rows: Vec<usize> = particles_store::subject_particle_ids(store, subject)?
                    .iter()
                    .filter_map(|id| state.row_of(id))
                    .collect();
                // Rows are stored in (confidence, rowid) order already.
                rows.sort_unstable();
                rows.dedup();
                rows
            }
        };
        let mut skipped_other_model = 0;
        let mut rows = Vec::with_capacity(candidate_rows.len());
        for row in candidate_rows {
            if set.confidence(row) < min_confidence {
                continue;
            }
            if !set.model_current(row) {
                skipped_other_model += 1;
                continue;
            }
            rows.push(row);
        }
        Ok(Selection {
            set: Arc::clone(set),
            rows,
            skipped_other_model,
        })
    }
}
