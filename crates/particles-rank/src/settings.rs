//! The configuration keys that change what a query ranks, with the reference's
//! compiled defaults. The configuration crate reads them from the user's file; here
//! they are plain values, so scoring stays pure.

use particles_model::CalibrationSource;

use crate::{OwnerLensSettings, UtilitySettings};

/// A content-age decay rule: `max(floor, 0.5 ** (age_days / half_life_days))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DecayRule {
    /// `half_life_days`.
    pub half_life_days: f64,
    /// `floor` (default 0.10).
    pub floor: f64,
}

/// `confidence.uncalibrated_cap` when enabled: stored confidences from these
/// calibration sources are capped before any multiplication.
#[derive(Debug, Clone, PartialEq)]
pub struct UncalibratedCap {
    /// `cap_value` (0..=1).
    pub cap_value: f64,
    /// `sources`.
    pub sources: Vec<CalibrationSource>,
}

/// `conformance.trust_cap` when enabled: extractors with a failed required
/// conformance check weigh at most `cap_value`, unless exempt.
#[derive(Debug, Clone, PartialEq)]
pub struct ConformanceCap {
    /// `cap_value` (0..=1).
    pub cap_value: f64,
    /// `exempt` extractor ids (exact match).
    pub exempt: Vec<String>,
}

/// Every configuration key that enters ranking (spec: config-and-stores §2).
#[derive(Debug, Clone, PartialEq)]
pub struct RankSettings {
    /// `query.similarity_weight` (0.6).
    pub similarity_weight: f64,
    /// `query.confidence_weight` (0.4).
    pub confidence_weight: f64,
    /// `query.narrative_rank_weight` (0.6).
    pub narrative_rank_weight: f64,
    /// `query.equivalence_threshold` (0.0): co-evidential edges below it are not
    /// followed by the collapse.
    pub equivalence_threshold: f64,
    /// `content_age_decay.sources`, in the file's order; a configured table
    /// replaces the four defaults whole.
    pub decay_sources: Vec<(String, DecayRule)>,
    /// `trust.source_type_domains` (`{CONVERSATION: agent-memory}`); consulted only
    /// for source types no built-in extractor claims.
    pub source_type_domains: Vec<(String, String)>,
    /// `consolidation.abstraction.stale_support_discount` (0.5).
    pub stale_support_discount: f64,
    /// `confidence.uncalibrated_cap`, when enabled.
    pub uncalibrated_cap: Option<UncalibratedCap>,
    /// `conformance.trust_cap`, when enabled.
    pub conformance_cap: Option<ConformanceCap>,
    /// `utility.*`, for the recall lifts (never the semantic query's ranking).
    pub utility: UtilitySettings,
    /// `owner_lens.*`, for the recall lifts.
    pub owner_lens: OwnerLensSettings,
    /// `observer_scope.harness_tags` (`[claude-code]`): keyless entries carrying
    /// one are unattributed rather than global, for a project observer.
    pub harness_tags: Vec<String>,
}

impl RankSettings {
    /// Whether a higher similarity never lowers a rank score (`sw·sim + cw·eff`,
    /// times the narrative weight): what lets bounds of a similarity bound the
    /// score. False for a negative (or NaN) similarity or narrative weight.
    pub fn score_rises_with_similarity(&self) -> bool {
        self.similarity_weight >= 0.0 && self.narrative_rank_weight >= 0.0
    }
}

impl Default for RankSettings {
    fn default() -> Self {
        let rule = |half_life_days, floor| DecayRule {
            half_life_days,
            floor,
        };
        RankSettings {
            similarity_weight: 0.6,
            confidence_weight: 0.4,
            narrative_rank_weight: 0.6,
            equivalence_threshold: 0.0,
            decay_sources: vec![
                ("REDDIT_POST".to_owned(), rule(60.0, 0.10)),
                ("GITHUB_REPO".to_owned(), rule(365.0, 0.40)),
                ("GITHUB_GIST".to_owned(), rule(180.0, 0.20)),
                ("GITHUB_PAGES".to_owned(), rule(365.0, 0.25)),
            ],
            source_type_domains: vec![("CONVERSATION".to_owned(), "agent-memory".to_owned())],
            stale_support_discount: 0.5,
            uncalibrated_cap: None,
            conformance_cap: None,
            utility: UtilitySettings::default(),
            owner_lens: OwnerLensSettings::default(),
            harness_tags: vec!["claude-code".to_owned()],
        }
    }
}
