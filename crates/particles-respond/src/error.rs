//! The respond crate's one error type.

/// Errors from building a semantic response. Each corresponds to a case where
/// the reference's response fails too.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the store failed, or the store holds data the reference would also
    /// refuse.
    #[error(transparent)]
    Store(#[from] particles_store::Error),
    /// Composing the policies failed where the reference aborts too.
    #[error(transparent)]
    Rank(#[from] particles_rank::Error),
    /// Reading through the observer or the recall lifts failed.
    #[error(transparent)]
    Query(#[from] particles_query::Error),
    /// A run's recorded LLM usage is malformed where the reference's spend line
    /// fails too (its digest is a 500). Repair the `operator_events` row.
    #[error("the store's recorded LLM spend cannot be read: {0}")]
    Spend(String),
    /// The request's `subject_id` is a prefix of several subject ids, where the
    /// reference's subject lookup refuses to choose (a 500 from its server). Give
    /// more of the id.
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
