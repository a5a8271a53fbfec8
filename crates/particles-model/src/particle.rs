//! The particle and everything nested in it, in the reference's JSON shape.
//!
//! Field order and names follow the reference's `Particle.model_dump(mode="json")`, so
//! `serde_json::to_string` of a hydrated particle equals the reference's dump and a
//! dump parses back to the same value. Validation (garde) mirrors the reference's
//! pydantic rules; a row or a request that breaks one is refused with the field named.

use garde::Validate;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{
    enums::{
        AssertionModality, CalibrationSource, CanonicalForm, ParticleType, ProvenanceRefType,
        Status, StatusReason, TermKind, UncertaintyNature, ValidKind,
    },
    Timestamp,
};

/// The only schema major this model reads; the stamp of a particle must be
/// `MAJOR.MINOR.PATCH`.
pub const SCHEMA_VERSION: &str = "1.0.0";

/// A stored confidence record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
pub struct Confidence {
    /// The confidence value, in `0..=1`.
    #[garde(custom(unit_interval))]
    pub value: f64,
    /// Optional variance.
    #[garde(skip)]
    pub variance: Option<f64>,
    /// Where the value came from.
    #[garde(skip)]
    #[serde(default = "default_calibration_source")]
    pub calibration_source: CalibrationSource,
    /// Calibration method, e.g. `temperature_scaling`.
    #[garde(skip)]
    #[serde(default)]
    pub calibration_method: Option<String>,
    /// Reference to a calibration record.
    #[garde(skip)]
    #[serde(default)]
    pub calibration_ref: Option<String>,
}

fn default_calibration_source() -> CalibrationSource {
    CalibrationSource::ExtractorDirect
}

pub(crate) fn unit_interval(value: &f64, _: &()) -> garde::Result {
    if (0.0..=1.0).contains(value) {
        Ok(())
    } else {
        Err(garde::Error::new(format!("{value} is not in 0..=1")))
    }
}

/// A provenance reference: a source, a premise particle or an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Validate)]
pub struct ProvenanceRef {
    /// What the reference points at.
    #[garde(skip)]
    #[serde(rename = "type")]
    pub ref_type: ProvenanceRefType,
    /// The corpus entry id; for a `PARTICLE` ref, the premise particle id.
    #[garde(skip)]
    pub corpus_entry_id: String,
    /// The snapshot id, when known.
    #[garde(skip)]
    #[serde(default)]
    pub snapshot_id: Option<String>,
    /// Where in the source (byte range, paragraph, comment id).
    #[garde(skip)]
    #[serde(default)]
    pub location: Option<String>,
    /// Hash of the chunk the claim came from.
    #[garde(skip)]
    #[serde(default)]
    pub chunk_hash: Option<String>,
}

/// The extractor that produced a particle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Validate)]
pub struct ExtractorRef {
    /// Extractor id, the key of its trust weight.
    #[garde(length(min = 1))]
    pub name: String,
    /// Extractor version.
    #[garde(length(min = 1))]
    pub version: String,
}

/// Someone who contributed to a particle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Validate)]
pub struct ContributorRef {
    /// Contributor id.
    #[garde(length(min = 1))]
    pub id: String,
    /// Their role.
    #[garde(length(min = 1))]
    pub role: String,
    /// When they contributed.
    #[garde(skip)]
    pub at: Timestamp,
}

/// One term of a structured claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Validate)]
#[garde(allow_unvalidated)]
pub struct ClaimTerm {
    /// URI, TOKEN or LITERAL.
    pub kind: TermKind,
    /// The IRI, name or lexical form.
    #[garde(length(min = 1))]
    pub value: String,
    /// XSD datatype (LITERAL only).
    #[serde(default)]
    #[garde(custom(literal_qualifier(self.kind, &self.language)))]
    pub datatype: Option<String>,
    /// Language tag (LITERAL only, never with a datatype).
    #[serde(default)]
    #[garde(custom(literal_qualifier(self.kind, &None)))]
    pub language: Option<String>,
}

fn literal_qualifier<'a>(
    kind: TermKind,
    other: &'a Option<String>,
) -> impl FnOnce(&Option<String>, &()) -> garde::Result + 'a {
    move |value, _| match value {
        Some(_) if kind != TermKind::Literal => Err(garde::Error::new(
            "datatype/language are permitted only on a LITERAL term",
        )),
        Some(_) if other.is_some() => Err(garde::Error::new(
            "a literal carries a datatype or a language tag, never both",
        )),
        _ => Ok(()),
    }
}

/// A derived subject-predicate-object rendering of a particle's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Validate)]
pub struct StructuredClaim {
    /// Subject term (never LITERAL).
    #[garde(dive, custom(not_literal))]
    pub subject: ClaimTerm,
    /// Predicate term (never LITERAL).
    #[garde(dive, custom(not_literal))]
    pub predicate: ClaimTerm,
    /// Object term.
    #[garde(dive)]
    pub object: ClaimTerm,
    /// The resolved subject id, if any.
    #[garde(skip)]
    #[serde(default)]
    pub subject_id: Option<String>,
    /// What produced the triple.
    #[garde(length(min = 1))]
    pub structurizer_id: String,
    /// Its version.
    #[garde(length(min = 1))]
    pub structurizer_version: String,
    /// When the triple was produced.
    #[garde(skip)]
    pub generated_at: Timestamp,
}

fn not_literal(term: &ClaimTerm, _: &()) -> garde::Result {
    if term.kind == TermKind::Literal {
        Err(garde::Error::new(
            "a literal cannot occupy the subject or predicate position",
        ))
    } else {
        Ok(())
    }
}

/// A belief: one claim with its confidence, provenance and subjects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
pub struct Particle {
    /// Identity (a UUID string in reference stores).
    #[garde(skip)]
    pub id: String,
    /// The claim text.
    #[garde(length(min = 1))]
    pub content: String,
    /// The stored confidence.
    #[garde(dive)]
    pub confidence: Confidence,
    /// Whether the uncertainty is reducible.
    #[garde(skip)]
    pub uncertainty_nature: UncertaintyNature,
    /// Sources, premises and agents.
    #[garde(dive)]
    #[serde(default)]
    pub provenance: Vec<ProvenanceRef>,
    /// Who asserted it.
    #[garde(skip)]
    pub asserted_by: String,
    /// When it was asserted.
    #[garde(skip)]
    pub asserted_at: Timestamp,
    /// Lifecycle status.
    #[garde(skip)]
    #[serde(default = "default_status")]
    pub status: Status,
    /// Why the status changed.
    #[garde(skip)]
    #[serde(default)]
    pub status_reason: Option<StatusReason>,
    /// `MAJOR.MINOR.PATCH` schema stamp.
    #[garde(custom(schema_stamp))]
    #[serde(default = "default_schema_version")]
    pub schema_version: String,
    /// Claim, narrative, ...
    #[garde(skip)]
    #[serde(default = "default_particle_type")]
    pub particle_type: ParticleType,
    /// How the claim can be adjudicated.
    #[garde(skip)]
    #[serde(default = "default_modality")]
    pub assertion_modality: AssertionModality,
    /// Not stored; always null on load.
    #[garde(skip)]
    #[serde(default)]
    pub uncertainty_kind: Option<String>,
    /// End of validity.
    #[garde(custom(valid_until_rule(&self.valid_from, self.valid_kind)))]
    #[serde(default)]
    pub valid_until: Option<Timestamp>,
    /// Start of validity.
    #[garde(skip)]
    #[serde(default)]
    pub valid_from: Option<Timestamp>,
    /// Event or state.
    #[garde(skip)]
    #[serde(default)]
    pub valid_kind: Option<ValidKind>,
    /// The id this particle supersedes.
    #[garde(skip)]
    #[serde(default)]
    pub supersedes: Option<String>,
    /// Not stored; always null on load.
    #[garde(skip)]
    #[serde(default)]
    pub basis: Option<Map<String, Value>>,
    /// The extractor, the key of the trust weight.
    #[garde(dive)]
    #[serde(default)]
    pub extractor_ref: Option<ExtractorRef>,
    /// The LLM that did the extraction.
    #[garde(skip)]
    #[serde(default)]
    pub extraction_provider_model: Option<String>,
    /// Not stored; always null on load.
    #[garde(skip)]
    #[serde(default)]
    pub sequence_context: Option<Vec<String>>,
    /// Subjects this particle is about.
    #[garde(skip)]
    #[serde(default)]
    pub subject_ids: Vec<String>,
    /// Tags.
    #[garde(skip)]
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// Context fingerprint.
    #[garde(skip)]
    #[serde(default)]
    pub context_fingerprint: Option<String>,
    /// Free-form properties; a few keys steer the default filters.
    #[garde(skip)]
    #[serde(default)]
    pub properties: Option<Map<String, Value>>,
    /// Contributors.
    #[garde(dive)]
    #[serde(default)]
    pub contributors: Option<Vec<ContributorRef>>,
    /// The structured rendering, if any.
    #[garde(dive)]
    #[serde(default)]
    pub structured_claim: Option<StructuredClaim>,
    /// Prose or structured.
    #[garde(custom(canonical_form_rule(self.structured_claim.is_some())))]
    #[serde(default = "default_canonical_form")]
    pub canonical_form: CanonicalForm,
    /// Not stored; always null on load.
    #[garde(skip)]
    #[serde(default)]
    pub contested: Option<String>,
}

fn default_status() -> Status {
    Status::Active
}
fn default_schema_version() -> String {
    SCHEMA_VERSION.to_owned()
}
fn default_particle_type() -> ParticleType {
    ParticleType::Claim
}
fn default_modality() -> AssertionModality {
    AssertionModality::Falsifiable
}
fn default_canonical_form() -> CanonicalForm {
    CanonicalForm::Prose
}

fn schema_stamp(stamp: &String, _: &()) -> garde::Result {
    if parse_schema_version(stamp).is_some() {
        Ok(())
    } else {
        Err(garde::Error::new(format!(
            "schema_version must be MAJOR.MINOR.PATCH, got {stamp:?}"
        )))
    }
}

fn valid_until_rule<'a>(
    valid_from: &'a Option<Timestamp>,
    valid_kind: Option<ValidKind>,
) -> impl FnOnce(&Option<Timestamp>, &()) -> garde::Result + 'a {
    move |valid_until, _| {
        if let (Some(from), Some(until)) = (valid_from, valid_until) {
            if from.utc_micros() > until.utc_micros() {
                return Err(garde::Error::new(format!(
                    "valid_from {from} is after valid_until {until}"
                )));
            }
        }
        if valid_kind == Some(ValidKind::Event) && valid_until.is_some() {
            return Err(garde::Error::new("an EVENT has no valid_until"));
        }
        Ok(())
    }
}

fn canonical_form_rule(has_claim: bool) -> impl FnOnce(&CanonicalForm, &()) -> garde::Result {
    move |form, _| {
        if *form == CanonicalForm::Structured && !has_claim {
            Err(garde::Error::new(
                "canonical_form=STRUCTURED requires a structured_claim",
            ))
        } else {
            Ok(())
        }
    }
}

/// Parses a `MAJOR.MINOR.PATCH` stamp as the reference does (`^\d+\.\d+\.\d+$`, where
/// Python's `$` also accepts one trailing newline and `\d` any Unicode decimal digit).
/// Returns the numeric parts, or `None` when malformed.
pub fn parse_schema_version(stamp: &str) -> Option<(u64, u64, u64)> {
    let stamp = stamp.strip_suffix('\n').unwrap_or(stamp);
    let mut parts = stamp.split('.');
    let mut next = || -> Option<u64> {
        let part = parts.next()?;
        if part.is_empty() {
            return None;
        }
        let mut value: u64 = 0;
        for ch in part.chars() {
            let digit = ch.to_digit(10).or_else(|| unicode_decimal(ch))?;
            value = value.saturating_mul(10).saturating_add(u64::from(digit));
        }
        Some(value)
    };
    let parsed = (next()?, next()?, next()?);
    parts.next().is_none().then_some(parsed)
}

/// The value of a non-ASCII Unicode decimal digit (category Nd), which Python's `\d`
/// matches. Only the contiguous blocks of ten are handled; that covers every Nd range.
fn unicode_decimal(ch: char) -> Option<u32> {
    const ZEROS: &[u32] = &[
        0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6,
        0x0D66, 0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0,
        0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0,
        0xAA50, 0xABF0, 0xFF10,
    ];
    let code = u32::from(ch);
    ZEROS
        .iter()
        .find(|&&zero| (zero..zero + 10).contains(&code))
        .map(|zero| code - zero)
}

impl Particle {
    /// The first `SOURCE` provenance ref, which the scoring path reads the source
    /// facts from (even when its `corpus_entry_id` is empty).
    pub fn first_source_ref(&self) -> Option<&ProvenanceRef> {
        self.provenance
            .iter()
            .find(|r| r.ref_type == ProvenanceRefType::Source)
    }

    /// The key that groups co-evidential members by source: the entry id of the first
    /// `SOURCE` ref with a non-empty entry id, else the particle's own id.
    pub fn source_key(&self) -> &str {
        self.provenance
            .iter()
            .find(|r| r.ref_type == ProvenanceRefType::Source && !r.corpus_entry_id.is_empty())
            .map_or(self.id.as_str(), |r| r.corpus_entry_id.as_str())
    }

    /// Whether the confidence was derived from premise particles.
    pub fn is_derived(&self) -> bool {
        self.confidence.calibration_source == CalibrationSource::Derived
    }

    /// The premise particle ids: the entry ids of `PARTICLE` refs, in order.
    pub fn premise_ids(&self) -> impl Iterator<Item = &str> {
        self.provenance
            .iter()
            .filter(|r| r.ref_type == ProvenanceRefType::Particle)
            .map(|r| r.corpus_entry_id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_stamps() {
        assert_eq!(parse_schema_version("1.0.0"), Some((1, 0, 0)));
        assert_eq!(parse_schema_version("1.7.3\n"), Some((1, 7, 3)));
        assert_eq!(parse_schema_version("1.\u{0661}.0"), Some((1, 1, 0)));
        for bad in [
            "1.x",
            "1.0",
            "1.0.0-beta",
            "",
            "1..0",
            "1.0.0\n\n",
            "1.0.0.0",
        ] {
            assert_eq!(parse_schema_version(bad), None, "{bad:?}");
        }
    }
}
