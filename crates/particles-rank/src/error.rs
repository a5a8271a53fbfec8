//! The rank crate's one error type.

/// Errors from composing policies or scoring candidates. Each corresponds to a case
/// where the reference aborts the query.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An adopted trust lens holds a value its model forbids. Fix or un-adopt the lens.
    #[error("adopted trust lens {lens:?}: {entry_kind} entry: {reason}")]
    InvalidLens {
        /// The lens name.
        lens: String,
        /// The entry kind at fault.
        entry_kind: String,
        /// What is wrong.
        reason: String,
    },
    /// A source URI that Python's `urlsplit` refuses.
    #[error("source URI {uri:?} cannot be parsed: {reason}")]
    BadUri {
        /// The URI.
        uri: String,
        /// Python's reason.
        reason: &'static str,
    },
    /// A candidate's vector has another dimension than the query's.
    #[error("particle {id}: embedding has {found} dimensions, the query vector has {expected}")]
    DimensionMismatch {
        /// The particle id.
        id: String,
        /// The query's dimension.
        expected: usize,
        /// The candidate's.
        found: usize,
    },
    /// A candidate's vector or norm no longer matches the check recorded when its
    /// row was added: the bytes changed underneath (a damaged sidecar). The caller
    /// drops the cached state and answers again from the store.
    #[error("particle {id}: its stored vector fails its integrity check (a damaged sidecar)")]
    DamagedVector {
        /// The particle id.
        id: String,
    },
    /// A configured content-age decay rule's half-life makes the reference's decay
    /// raise (zero divides by zero; a negative one overflows the power). Fix
    /// `content_age_decay.sources` in the configuration.
    #[error("content_age_decay half-life {half_life_days} makes the decay of an aged, dated source fail ({reason}); fix content_age_decay.sources in the configuration")]
    DecayHalfLife {
        /// The configured half-life.
        half_life_days: f64,
        /// Python's error message.
        reason: &'static str,
    },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
