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
    /// With a subject: its ACTIVE CLAIM particles as far as the loader could
    /// count them from the links it read, for exactly that subject id in the
    /// snapshot the selection was read in. `None` when it did not count; never
    /// a count for another id or state. Shared: every question of a batch
    /// about the subject hands it on to its outcome.
    pub subject_claims: Option<std::sync::Arc<SubjectClaims>>,
}

/// A subject's ACTIVE CLAIM count (the subject coverage gap's), half settled
/// by the loader: the claims among its linked rows of the set, counted from
/// the set's flags, and the linked ids outside the set (retired rows, ACTIVE
/// ones without a vector), left for the store to settle in the same snapshot
/// only if the gap is built. Most subject questions never build it (memory
/// projection sections, federation members), and for a subject whose links are
/// mostly outside the set that lookup costs what the old join did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubjectClaims {
    /// The claims among the linked rows of the set (every row of a set is
    /// ACTIVE in the snapshot it serves).
    pub in_set: u64,
    /// The linked ids the set does not hold, each once.
    pub outside: Vec<String>,
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
