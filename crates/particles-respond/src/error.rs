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
    /// A memory manifest includes a file section (a mechanical block), which a
    /// remote engine cannot read: the reference's 422, its sentence verbatim.
    #[error("the memory manifest includes a file section, which a remote engine cannot read")]
    ClientFileSection,
    /// A manifest section's `select.allow` pin names no ACTIVE belief (the
    /// reference's `SelectPinError`, its sentence verbatim): re-pin the successor.
    #[error("{0}")]
    StalePin(String),
    /// A manifest's mechanical block could not be read (names the file).
    #[error("{0}")]
    Block(String),
    /// A manifest section's query is one the reference refuses too (a title
    /// past the question's length, say).
    #[error("{0}")]
    Section(String),
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
