//! The truncation warning: the cut at `top_k` falls inside a run of near scores
//! (the reference's `_truncation_warning`, `operations/query/main.py`).

use particles_model::ParticleType;
use particles_rank::RankSettings;

use crate::QueryOutcome;

/// `query.truncation_*`: when a cut is worth a warning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TruncationSettings {
    /// `truncation_min_gap` (0.05): warn when the last kept score is closer than
    /// this to the next one.
    pub min_gap: f64,
    /// `truncation_near_margin` (0.15): scores within this of the last kept one
    /// count as near.
    pub near_margin: f64,
    /// `truncation_near_count` (5): warn when more near scores than this were cut.
    pub near_count: i64,
}

impl Default for TruncationSettings {
    fn default() -> Self {
        TruncationSettings {
            min_gap: 0.05,
            near_margin: 0.15,
            near_count: 5,
        }
    }
}

impl TruncationSettings {
    /// How far below the k-th score a candidate must be bounded before it can be
    /// skipped without changing the warning: every score it counts or compares is
    /// then computed (see `QueryInput::prune_margin`).
    pub fn prune_margin(&self) -> f64 {
        let margin = self.near_margin.max(self.min_gap);
        if margin.is_finite() && margin >= 0.0 {
            margin
        } else {
            f64::INFINITY
        }
    }
}

/// The warning for a ranked outcome, or `None`. `last` is the rank score of the
/// last hit after the collapse (with its merged effective confidence, so the gap
/// can be negative); the scores beyond the cut come from the outcome. The caller
/// drops the warning when the answer is a refusal.
pub fn truncation_warning(
    outcome: &QueryOutcome,
    top_k: u32,
    rank: &RankSettings,
    settings: &TruncationSettings,
) -> Option<String> {
    let last_hit = outcome.hits.last()?;
    // The best score beyond the cut, as the first of a descending sort gives it
    // (NaN first, as the ranking's order puts it).
    let next = outcome.beyond_cut.best()?;
    let narrative = last_hit.particle.particle_type == ParticleType::Narrative;
    let last = particles_rank::rank_score(
        rank,
        narrative,
        last_hit.similarity,
        last_hit.effective_confidence,
    );
    let gap = last - next;
    let floor = last - settings.near_margin;
    let near = outcome.beyond_cut.near(floor);
    let too_close = gap < settings.min_gap;
    let too_many = i64::try_from(near).unwrap_or(i64::MAX) > settings.near_count;
    if !(too_close || too_many) {
        return None;
    }
    let suggestion = (top_k.saturating_mul(3)).min(particles_model::MAX_TOP_K);
    Some(format!(
        "top_k={top_k} may be too low: {near} additional particles scored within {} of the cutoff (gap to next: {gap:.3}). Try --top-k {suggestion} for a more complete answer.",
        python_float_str(settings.near_margin)
    ))
}

/// Python's `str(float)`: the shortest repr that round-trips, with a `.0` on
/// integral values and scientific notation below 1e-4 and from 1e16 (`1e-05`,
/// `1e+16`), `inf` and `nan` (`particles_pytext::float_repr`).
pub(crate) fn python_float_str(value: f64) -> String {
    particles_pytext::float_repr(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_prints_them() {
        for (value, text) in [
            (0.15, "0.15"),
            (0.1, "0.1"),
            (1.0, "1.0"),
            (5.0, "5.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345.6, "123456789012345.6"),
            (0.30000000000000004, "0.30000000000000004"),
            (-2.5, "-2.5"),
            (1e-7, "1e-07"),
            (1e100, "1e+100"),
        ] {
            assert_eq!(python_float_str(value), text, "{value:?}");
        }
    }
}
