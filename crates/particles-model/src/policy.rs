//! The store's trust and decay policy as plain rows, before any composition.
//!
//! The store crate reads these; the rank crate composes them (lens overlay,
//! validation, regex compilation). Keeping them as data here lets the two crates
//! meet without either depending on the other.

use crate::Timestamp;

/// One `extractor_records` row: the trust weight of an extractor.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractorRecord {
    /// The extractor id (the key particles name in `extractor_ref.name`).
    pub extractor_id: String,
    /// Its trust weight.
    pub trust_weight: f64,
    /// Whether a required conformance check failed (the conformance cap's input).
    pub conformance_required_failure: Option<bool>,
}

/// One `trust_statements` row.
#[derive(Debug, Clone, PartialEq)]
pub struct TrustStatement {
    /// The domain label the statement speaks for.
    pub domain: String,
    /// `SOURCE_TYPE`, `CORPUS_ENTRY` or `AUTHOR`.
    pub source_ref_type: String,
    /// The source type, entry id or author id.
    pub source_ref_value: String,
    /// The asserted rank.
    pub trust_rank: f64,
}

/// One `source_trust` row: a domain baseline or a URL modifier.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceTrustRule {
    /// `domain` or `url_pattern`.
    pub scope: String,
    /// The host (domain rows) or the regex (url_pattern rows).
    pub pattern: String,
    /// The baseline of a domain row.
    pub score: Option<f64>,
    /// The additive modifier of a url_pattern row.
    pub modifier: Option<f64>,
}

/// One `trust_lens_entries` row, every per-kind column as stored.
#[derive(Debug, Clone, PartialEq, Default)]
#[allow(missing_docs)] // The columns are the reference's; their meaning depends on `entry_kind`.
pub struct LensEntry {
    pub entry_kind: String,
    pub domain: Option<String>,
    pub source_type: Option<String>,
    pub trust_rank: Option<f64>,
    pub pattern: Option<String>,
    pub score: Option<f64>,
    pub modifier: Option<f64>,
    pub extractor_id: Option<String>,
    pub weight: Option<f64>,
    pub half_life_days: Option<f64>,
    pub floor: Option<f64>,
    pub half_life_uses_days: Option<f64>,
    pub rank_lift: Option<f64>,
    pub modality: Option<String>,
    pub modality_when: Option<String>,
}

/// An adopted trust lens with its entries in the order the store returns them.
#[derive(Debug, Clone, PartialEq)]
pub struct Lens {
    /// The lens name.
    pub name: String,
    /// The lens version (at least 1 to be valid).
    pub version: i64,
    /// Its entries.
    pub entries: Vec<LensEntry>,
}

/// Everything one query reads of the store's policy tables, read once per query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolicyRows {
    /// `extractor_records`, in table order.
    pub extractors: Vec<ExtractorRecord>,
    /// `trust_statements`, ordered by `asserted_at` ascending.
    pub statements: Vec<TrustStatement>,
    /// `source_trust`, in the order SQLite returns them.
    pub source_trust: Vec<SourceTrustRule>,
    /// Adopted lenses, in adoption-row order.
    pub lenses: Vec<Lens>,
}

/// What the scoring path knows of a candidate's first source.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct SourceFacts {
    /// The ref's `corpus_entry_id` as stored (even when no such entry exists).
    pub entry_id: Option<String>,
    /// The entry's `source_type`, `""` when unknown.
    pub source_type: String,
    /// The entry's `uri_r`.
    pub uri: Option<String>,
    /// The snapshot's `content_published_at`.
    pub published_at: Option<Timestamp>,
    /// The snapshot's `author_id`.
    pub author_id: Option<String>,
}
