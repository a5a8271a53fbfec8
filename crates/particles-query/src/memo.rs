//! What the query path remembers across the queries of one read-only
//! connection, for as long as the file is unchanged
//! ([`particles_store::Store::with_remembered`]: another connection's commit,
//! of any table, starts it over).
//!
//! - The truncation band's source statics ([`crate::band`]): trust and the
//!   decay rule of every source it met.
//! - The hits' particles, as read from their rows: the rows the most confident
//!   beliefs sit in come back question after question (on the benchmark's 10k
//!   store a third of a question's 40 hits, on average over 30 questions, were
//!   a hit of an earlier one), and reading one costs a row lookup, its
//!   overflow pages and the hydration of every column.

use std::{collections::HashMap, sync::Arc};

use particles_model::Particle;

/// Particles kept at most; past this the hits start over (a bound on a
/// long-lived connection's memory, a few KB each).
const HITS_CAP: usize = 8_192;

/// One connection's memory of the query path.
#[derive(Default)]
pub(crate) struct QueryMemo {
    pub(crate) band: crate::band::BandMemo,
    hits: HashMap<i64, Arc<Particle>, foldhash::fast::RandomState>,
}

impl QueryMemo {
    /// The remembered particle of row `rowid`, if it is `id`'s.
    pub(crate) fn hit(&self, rowid: i64, id: &str) -> Option<&Arc<Particle>> {
        self.hits.get(&rowid).filter(|particle| particle.id == id)
    }

    /// Remembers the particle read at row `rowid`.
    pub(crate) fn remember_hit(&mut self, rowid: i64, particle: &Arc<Particle>) {
        if self.hits.len() >= HITS_CAP {
            self.hits.clear();
        }
        self.hits.insert(rowid, Arc::clone(particle));
    }
}
