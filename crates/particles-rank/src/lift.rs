//! The recall lifts: the rank-only addends the session digest and the memory
//! projection put on effective confidence (the reference's
//! `operations/query/utility_policy.py`, `owner_policy.py` and its core's
//! `scoring/utility.py`).
//!
//! `rank_score = (effective + λ·ln(1 + R)) + ω·A`: `R` is a belief's
//! reinforcement (its use events, each halved every `half_life_uses_days`), `λ`
//! the resolved `rank_lift`, `A` whether the belief is about one of the owner's
//! subjects and `ω` the owner lens's lift. Both addends only promote; neither is
//! ever shown as a confidence. The semantic query never applies them.

use std::collections::HashMap;

use particles_model::Timestamp;
use particles_pyre::PyRegex;

use crate::{policy::micros_to_seconds, score::py_min};

/// `utility.*`: the store-local usefulness policy.
#[derive(Debug, Clone, PartialEq)]
pub struct UtilitySettings {
    /// `utility.enabled` (true).
    pub enabled: bool,
    /// `utility.default.half_life_uses_days` (30).
    pub half_life_uses_days: f64,
    /// `utility.default.rank_lift` (0.015).
    pub rank_lift: f64,
    /// `utility.explicit_weight` (25): the weight of an explicit credit.
    pub explicit_weight: f64,
}

impl Default for UtilitySettings {
    fn default() -> Self {
        UtilitySettings {
            enabled: true,
            half_life_uses_days: 30.0,
            rank_lift: 0.015,
            explicit_weight: 25.0,
        }
    }
}

/// `owner_lens.*`.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnerLensSettings {
    /// `owner_lens.enabled` (true).
    pub enabled: bool,
    /// `owner_lens.subjects`: canonical names, aliases or subject ids.
    pub subjects: Vec<String>,
    /// `owner_lens.rank_lift` (ω, 0: the lens is inert).
    pub rank_lift: f64,
}

impl Default for OwnerLensSettings {
    fn default() -> Self {
        OwnerLensSettings {
            enabled: true,
            subjects: Vec::new(),
            rank_lift: 0.0,
        }
    }
}

/// `(half_life_uses_days, rank_lift)`.
pub type UtilityParams = (f64, f64);

/// The least promoting of two rules, each parameter alone (Python `min`: the
/// first wins a tie).
pub(crate) fn more_skeptical(a: UtilityParams, b: UtilityParams) -> UtilityParams {
    (py_min(a.0, b.0), py_min(a.1, b.1))
}

/// One store's usefulness policy: the local default (made stricter by any
/// adopted lens's default) and the lenses' source-type and URL rules, each
/// composed across lenses by `more_skeptical` (each parameter's minimum). A lens's source-type or URL
/// rule is not bounded by the local default: the reference composes only the
/// default scope with it.
#[derive(Debug, Clone)]
pub struct UtilityPolicy {
    pub(crate) default: UtilityParams,
    pub(crate) source_type_rules: HashMap<String, UtilityParams>,
    pub(crate) url_rules: Vec<(PyRegex, UtilityParams)>,
    pub(crate) explicit_weight: f64,
}

impl UtilityPolicy {
    /// The rule of a belief with this source: the URL rules that match its URI
    /// (any `file://` URI excepted), composed, else its source type's rule, else
    /// the default.
    pub fn resolve(&self, source_type: &str, uri: Option<&str>) -> UtilityParams {
        if let Some(uri) = uri.filter(|u| !u.starts_with("file://")) {
            let mut best: Option<UtilityParams> = None;
            for (pattern, params) in &self.url_rules {
                if pattern.search(uri) {
                    best = Some(best.map_or(*params, |b| more_skeptical(b, *params)));
                }
            }
            if let Some(best) = best {
                return best;
            }
        }
        self.source_type_rules
            .get(source_type)
            .copied()
            .unwrap_or(self.default)
    }

    /// The weight of one use event: `utility.explicit_weight` for an explicit
    /// credit, 1 for anything else (mined, or a channel this engine does not know).
    pub fn event_weight(&self, source: &str) -> f64 {
        if source == "explicit" {
            self.explicit_weight
        } else {
            1.0
        }
    }
}

/// A belief's reinforcement at `now`: the sum, in the events' order, of each
/// event's weight halved once per `half_life_uses_days` of its age (an event in
/// the future counts as now; a weight at or below zero counts nothing).
///
/// The age is the exact microsecond difference over 10⁶ then over 86,400, as
/// Python's `timedelta.total_seconds() / 86400.0`. The reference reads the wall
/// clock for `now` once per belief; this takes one instant for all.
pub fn reinforcement_score(
    events: impl IntoIterator<Item = (Timestamp, f64)>,
    half_life_uses_days: f64,
    now: Timestamp,
) -> f64 {
    if half_life_uses_days <= 0.0 {
        return 0.0;
    }
    let mut total = 0.0;
    for (at, weight) in events {
        if weight <= 0.0 {
            continue;
        }
        let mut age_days = micros_to_seconds(now.utc_micros() - at.utc_micros()) / 86_400.0;
        if age_days < 0.0 {
            age_days = 0.0;
        }
        total += weight * 0.5f64.powf(age_days / half_life_uses_days);
    }
    total
}

/// `λ·ln(1 + R)`, 0 without reinforcement or without a lift.
pub fn utility_rank_bonus(reinforcement: f64, rank_lift: f64) -> f64 {
    if reinforcement <= 0.0 || rank_lift <= 0.0 {
        return 0.0;
    }
    rank_lift * reinforcement.ln_1p()
}

/// `ω` for a belief about one of the owner's subjects, else 0.
pub fn owner_rank_bonus(relevant: bool, rank_lift: f64) -> f64 {
    if !relevant || rank_lift <= 0.0 {
        return 0.0;
    }
    rank_lift
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("a valid instant")
    }

    #[test]
    fn reinforcement_halves_per_half_life_and_clamps_the_future() {
        let now = at("2026-01-31T00:00:00Z");
        assert_eq!(reinforcement_score([(now, 1.0)], 30.0, now), 1.0);
        assert_eq!(
            reinforcement_score([(at("2026-01-01T00:00:00Z"), 1.0)], 30.0, now),
            0.5
        );
        assert_eq!(
            reinforcement_score([(at("2026-03-01T00:00:00Z"), 25.0)], 30.0, now),
            25.0
        );
        assert_eq!(
            reinforcement_score([(now, 0.0), (now, -1.0)], 30.0, now),
            0.0
        );
        assert_eq!(reinforcement_score([(now, 1.0)], 0.0, now), 0.0);
    }

    #[test]
    fn bonuses_only_promote() {
        assert_eq!(utility_rank_bonus(0.0, 0.5), 0.0);
        assert_eq!(utility_rank_bonus(24.0, 0.0), 0.0);
        assert_eq!(utility_rank_bonus(24.0, 0.02), 0.02 * 24.0f64.ln_1p());
        assert_eq!(owner_rank_bonus(true, 0.5), 0.5);
        assert_eq!(owner_rank_bonus(false, 0.5), 0.0);
        assert_eq!(owner_rank_bonus(true, 0.0), 0.0);
    }
}
