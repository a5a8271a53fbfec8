//! What the answer step is given: the ranked hits and the query's disclosures.

use std::{collections::HashMap, fmt};

use particles_model::{Particle, Timestamp};
use serde::{Deserialize, Serialize};

/// Who the answer is written for (`QueryRequest.audience`, default `GENERAL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Audience {
    /// Numeric confidences and uncertainty classes.
    Expert,
    /// Confidence in words, no numbers.
    #[default]
    General,
    /// Provenance for every claim and full confidence metadata.
    Regulatory,
}

impl Audience {
    /// The reference's spelling: `EXPERT`, `GENERAL`, `REGULATORY`.
    pub fn as_str(self) -> &'static str {
        match self {
            Audience::Expert => "EXPERT",
            Audience::General => "GENERAL",
            Audience::Regulatory => "REGULATORY",
        }
    }
}

impl fmt::Display for Audience {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One ranked hit: the particle and its effective confidence.
#[derive(Debug, Clone, Copy)]
pub struct AnswerHit<'a> {
    /// The particle, as hydrated from the store.
    pub particle: &'a Particle,
    /// The hit's effective confidence (the ranking's, merged for a co-evidential
    /// representative), shown to EXPERT and REGULATORY audiences.
    pub effective_confidence: f64,
}

/// The question-level relevance verdict (`relevance` in the response, §5.3).
///
/// `None` on [`AnswerInput`] when there was no query vector or no hit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Relevance {
    /// The largest raw cosine similarity over the rendered hits.
    pub max_similarity: f64,
    /// `query.relevance_floor` (default 0.25).
    pub floor: f64,
    /// `max_similarity < floor`: the answer is then a fixed refusal, no model call.
    pub below_floor: bool,
}

impl Relevance {
    /// The verdict for a maximum similarity against a floor.
    pub fn new(max_similarity: f64, floor: f64) -> Relevance {
        Relevance {
            max_similarity,
            floor,
            below_floor: max_similarity < floor,
        }
    }
}

/// The kind of a subject coverage gap (`subject_coverage_gaps[].kind`, §5.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CoverageGapKind {
    /// The query named a subject the registry does not hold.
    NoSubjectMatch,
    /// The subject exists but no ACTIVE CLAIM particle is linked to it.
    SubjectHasNoParticles,
    /// The subject has fewer than three such particles, or none was retrieved.
    SubjectHasLowCoverage,
}

/// The first subject coverage gap, as the prompt's coverage note reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoverageGapNote<'a> {
    /// What kind of gap.
    pub kind: CoverageGapKind,
    /// The subject's canonical name; `None` prints as Python's `None`.
    pub subject_name: Option<&'a str>,
    /// ACTIVE CLAIM particles linked to the subject.
    pub particle_count: u64,
}

/// Everything [`answer`](crate::answer) reads: the question, the hits in rank order
/// and the disclosures computed by the query path.
#[derive(Debug, Clone, Copy)]
pub struct AnswerInput<'a> {
    /// The question, as asked.
    pub question: &'a str,
    /// The requested audience.
    pub audience: Audience,
    /// The as-of instant of the request, if any (an aware value; a naive one is
    /// read as UTC, as the reference's request validator makes it).
    pub as_of: Option<Timestamp>,
    /// `request.grounded`, else `query.grounded_answers` (§6.2).
    pub grounded: bool,
    /// The rendered hits (`top`), in rank order.
    pub hits: &'a [AnswerHit<'a>],
    /// Narrative id -> its constituents in sequence order (`narrative_constituents`).
    pub constituents: &'a HashMap<String, Vec<&'a Particle>>,
    /// The relevance verdict; `None` with no query vector or no hit.
    pub relevance: Option<Relevance>,
    /// No query vector: the hits are the most confident beliefs, not the nearest.
    pub ranking_degraded: bool,
    /// `subject_coverage_gaps[0]`, if any.
    pub coverage_gap: Option<CoverageGapNote<'a>>,
}
