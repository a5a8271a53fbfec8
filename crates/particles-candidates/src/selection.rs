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
    /// With a subject: the ACTIVE CLAIM particles linked to exactly that
    /// subject id in the snapshot the selection was read in, when the loader
    /// counted them as it read the links (the subject coverage gap's count, which
    /// otherwise costs the store two more B-tree descents per link). `None`
    /// when it did not count; never a count for another id or state.
    pub subject_claims: Option<u64>,
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
            subject_claims: None,
        }
    }
}
