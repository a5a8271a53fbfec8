//! The configuration as the query crates take it.

use particles_config::Config;
use particles_model::CalibrationSource;
use particles_query::TruncationSettings;
use particles_rank::{ConformanceCap, DecayRule, RankSettings, UncalibratedCap};
use particles_respond::{DigestSettings, ResponseSettings};
use particles_structural::StructuralSettings;

/// Every setting a query reads, from one loaded configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The keys that change the ranking (spec: config-and-stores §2).
    pub rank: RankSettings,
    /// `query.truncation_*`.
    pub truncation: TruncationSettings,
    /// `query.relevance_floor`.
    pub relevance_floor: f64,
    /// `contestedness.badge_enabled`.
    pub badge_enabled: bool,
    /// `contestedness.callout_threshold`.
    pub callout_threshold: f64,
    /// `query.grounded_answers`.
    pub grounded_answers: bool,
    /// `observer_scope.harness_tags`.
    pub harness_tags: Vec<String>,
    /// What the deterministic modes read (`subjects.wikidata_link_suppress_threshold`).
    pub structural: StructuralSettings,
    /// What the session digest reads beyond the ranking's keys.
    pub digest: DigestSettings,
    /// Whether the memory projection leaves an ACTIVE abstraction's premises out
    /// (`consolidation.abstraction.source_demotion`).
    pub suppress_premises: bool,
}

impl Settings {
    /// The settings of a validated configuration. Validation already refused
    /// every out-of-range value, so this only copies.
    pub fn from_config(config: &Config) -> Settings {
        let query = &config.query;
        let rank = RankSettings {
            similarity_weight: query.similarity_weight,
            confidence_weight: query.confidence_weight,
            narrative_rank_weight: query.narrative_rank_weight,
            equivalence_threshold: query.equivalence_threshold,
            decay_sources: config
                .content_age_decay
                .iter()
                .map(|(source_type, rule)| {
                    (
                        source_type.clone(),
                        DecayRule {
                            half_life_days: rule.half_life_days,
                            floor: rule.floor,
                        },
                    )
                })
                .collect(),
            source_type_domains: config
                .trust_source_type_domains
                .iter()
                .map(|(source_type, domain)| (source_type.clone(), domain.clone()))
                .collect(),
            stale_support_discount: config.stale_support_discount,
            uncalibrated_cap: config.uncalibrated_cap.enabled.then(|| UncalibratedCap {
                cap_value: config.uncalibrated_cap.cap_value,
                // Validation admits only these four names.
                sources: config
                    .uncalibrated_cap
                    .sources
                    .iter()
                    .filter_map(|name| name.parse::<CalibrationSource>().ok())
                    .collect(),
            }),
            conformance_cap: config
                .conformance_trust_cap
                .enabled
                .then(|| ConformanceCap {
                    cap_value: config.conformance_trust_cap.cap_value,
                    exempt: config.conformance_trust_cap.exempt.clone(),
                }),
            utility: particles_rank::UtilitySettings {
                enabled: config.utility.enabled,
                half_life_uses_days: config.utility.half_life_uses_days,
                rank_lift: config.utility.rank_lift,
                explicit_weight: config.utility.explicit_weight,
            },
            harness_tags: config.observer_harness_tags.clone(),
            owner_lens: particles_rank::OwnerLensSettings {
                enabled: config.owner_lens.enabled,
                subjects: config.owner_lens.subjects.clone(),
                rank_lift: config.owner_lens.rank_lift,
            },
        };
        Settings {
            rank,
            truncation: TruncationSettings {
                min_gap: query.truncation_min_gap,
                near_margin: query.truncation_near_margin,
                near_count: query.truncation_near_count,
            },
            relevance_floor: query.relevance_floor,
            badge_enabled: config.contestedness.badge_enabled,
            callout_threshold: config.contestedness.callout_threshold,
            grounded_answers: query.grounded_answers,
            harness_tags: config.observer_harness_tags.clone(),
            structural: StructuralSettings {
                link_suppress_threshold: config.wikidata_link_suppress_threshold,
            },
            suppress_premises: config.source_demotion == "suppress_in_projection",
            digest: DigestSettings {
                max_beliefs: u64::try_from(config.mcp.digest_max_beliefs).unwrap_or(0),
                badge_enabled: config.contestedness.badge_enabled,
                callout_threshold: config.contestedness.callout_threshold,
                harness_tags: config.observer_harness_tags.clone(),
                refusal_retry_days: config.refusal_retry_days,
                extraction_model: {
                    let selection = config.llm.for_extraction();
                    format!("{}:{}", selection.provider, selection.model)
                },
            },
        }
    }

    /// The response's settings.
    pub fn response(&self) -> ResponseSettings {
        ResponseSettings {
            relevance_floor: self.relevance_floor,
            badge_enabled: self.badge_enabled,
            callout_threshold: self.callout_threshold,
            truncation_min_gap: self.truncation.min_gap,
            truncation_near_margin: self.truncation.near_margin,
            truncation_near_count: u64::try_from(self.truncation.near_count).unwrap_or(0),
            observer_harness_tags: self.harness_tags.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_rank_crates_defaults() {
        let settings = Settings::from_config(&Config::default());
        let mut expected = RankSettings::default();
        // Order is irrelevant to a lookup table; compare as sets.
        expected.decay_sources.sort_by(|a, b| a.0.cmp(&b.0));
        let mut got = settings.rank.clone();
        got.decay_sources.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, expected);
        assert_eq!(settings.truncation, TruncationSettings::default());
        assert_eq!(settings.relevance_floor, 0.25);
        assert!(settings.badge_enabled);
    }
}
