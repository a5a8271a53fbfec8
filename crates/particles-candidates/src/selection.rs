//! What a loader hands the ranking.

use crate::{scratch::Recycled, CandidateSet};

/// What a loader hands the ranking: a candidate set and the rows of it to rank, in
/// `(confidence, rowid)` order.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The candidates (possibly shared with a cache).
    pub set: std::sync::Arc<CandidateSet>,
    /// The rows to rank, in loader order (a buffer the next query reuses).
    pub rows: Recycled<usize>,
    /// ACTIVE rows left out because their vector is of another embedding model.
    pub skipped_other_model: usize,
}

impl Selection {
    /// Every row of `set`, in its order.
    pub fn all(set: CandidateSet, skipped_other_model: usize) -> Selection {
        let mut rows = Recycled::with_capacity(set.len());
        rows.extend(0..set.len());
        Selection {
            set: std::sync::Arc::new(set),
            rows,
            skipped_other_model,
        }
    }
}
