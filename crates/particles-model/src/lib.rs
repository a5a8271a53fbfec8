//! The Particle model of a Particles belief store: serde shapes and garde validation.
//!
//! A [`Particle`] is one belief: a claim, a [`Confidence`], provenance, subjects and
//! properties. Its JSON form is the reference's (`linkedparticles` 1.214.1)
//! `Particle.model_dump(mode="json")`, field for field, so a particle round-trips
//! through either engine. Validation follows the reference's pydantic rules and
//! reports the field by name; nothing here does IO.
//!
//! ```
//! use particles_model::{Particle, parse_particle_json};
//! let json = r#"{"id": "p1", "content": "Gold does not rust.",
//!   "confidence": {"value": 0.9}, "uncertainty_nature": "EPISTEMIC",
//!   "asserted_by": "me", "asserted_at": "2024-01-01T00:00:00"}"#;
//! let particle: Particle = parse_particle_json(json)?.into_inner();
//! assert_eq!(particle.confidence.value, 0.9);
//! # Ok::<(), particles_model::Error>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
#![forbid(unsafe_code)]

mod enums;
mod ids;
mod particle;
pub mod policy;
mod pytext;
mod request;
pub mod response;
mod timestamp;

/// The memory projection's request: its manifest, read with pydantic's verdicts.
pub use crate::request::manifest as projection;
pub use crate::{
    enums::{
        AssertionModality, CalibrationSource, CanonicalForm, ParticleType, ProvenanceRefType,
        Status, StatusReason, TermKind, UncertaintyNature, UnknownVariant, ValidKind,
    },
    ids::uuid_text,
    particle::{
        parse_schema_version, ClaimTerm, Confidence, ContributorRef, ExtractorRef, Particle,
        ProvenanceRef, StructuredClaim, SCHEMA_VERSION,
    },
    pytext::{python_float, python_splitlines},
    request::{
        parse_instant, python_repr, Audience, BoundValue, Decimal, Envelope, FieldError, GroupBy,
        Loc, Mode, QueryRequest, RecallOptions, RequestErrors, TimeWindow, ValidRequest,
        DEFAULT_TOP_K, MAX_QUESTION_CHARS, MAX_TOP_K,
    },
    timestamp::{Timestamp, TimestampParseError},
};

/// The id of the only embedding model the reference accepts.
pub const EMBEDDING_MODEL_ID: &str = "all-MiniLM-L6-v2";
/// The id a NULL or empty `embedding_model_id` stands for.
pub const LEGACY_EMBEDDING_MODEL_ID: &str = "all-MiniLM-L6-v2";
/// The dimension of the reference encoder's vectors.
pub const EMBEDDING_DIM: usize = 384;

/// Errors from reading a particle or a request.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The text is not JSON of the expected shape. Fix the JSON.
    #[error("not a valid particle JSON document")]
    Json(#[source] serde_json::Error),
    /// The value parsed but breaks a rule of the model; the report names the field.
    #[error("invalid {what}: {}", report.to_string().trim_end())]
    Invalid {
        /// What was validated, e.g. `particle p1`.
        what: String,
        /// Every failed rule, with its field path.
        report: garde::Report,
    },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Parses and validates a particle from its JSON form.
///
/// # Errors
///
/// [`Error::Json`] when the JSON does not have the particle's shape,
/// [`Error::Invalid`] when a value breaks a rule (the report names the field).
pub fn parse_particle_json(json: &str) -> Result<garde::Valid<Particle>> {
    let particle: Particle = serde_json::from_str(json).map_err(Error::Json)?;
    validate(particle, |p| format!("particle {}", p.id))
}

/// Validates a value, naming it with `what` in the error.
///
/// # Errors
///
/// [`Error::Invalid`] with the garde report when a rule fails.
pub fn validate<T: garde::Validate<Context = ()>>(
    value: T,
    what: impl FnOnce(&T) -> String,
) -> Result<garde::Valid<T>> {
    let what = what(&value);
    garde::Unvalidated::new(value)
        .validate()
        .map_err(|report| Error::Invalid { what, report })
}
