//! The structural crate's one error type.

/// Errors from answering a deterministic mode. Each corresponds to a case where
/// the reference's structural path fails too.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The shared gather's reads through the query path (the source facts of
    /// the candidates scored) failed: see `particles_query::Error`.
    #[error(transparent)]
    Query(#[from] particles_query::Error),
    /// Reading the store failed, or the store holds data the reference would also
    /// refuse.
    #[error(transparent)]
    Store(#[from] particles_store::Error),
    /// Scoring failed where the reference aborts too.
    #[error(transparent)]
    Rank(#[from] particles_rank::Error),
    /// A candidate's properties make a filter fail where the reference raises.
    #[error(transparent)]
    Filter(#[from] particles_candidates::Error),
    /// [`crate::run_structural_with`] was given a request with a question: it
    /// ranks semantically, through `particles_query::run_query_with`.
    #[error("a request with a question is answered by the semantic path, not a structural mode")]
    NotStructural,
    /// A `group_by subject` bucket's key is a prefix of several subject ids, where
    /// the reference's subject lookup refuses to choose (a 500 from its server).
    #[error("{message}")]
    AmbiguousSubject {
        /// The subject reference as given.
        reference: String,
        /// The reference's message, verbatim.
        message: String,
    },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
