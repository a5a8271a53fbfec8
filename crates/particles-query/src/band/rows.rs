//! What the band knows of each row before it reads any source, from an
//! instant `since` on: a ceiling on its effective confidence (which leaves out
//! of the band the rows that cannot reach its floor) and, where it cannot
//! change with `now`, the effective confidence itself (which the band then
//! scores the row with, reading 8 bytes of it instead of its traits, its
//! confidence, its source's slot and factors). Computed once per store state
//! and set (a commit starts the connection's memo over), when a band is large
//! or the follower warms the memo, and remembered by the connection.
//!
//! Both hold at every `now` from `since` on, `since` being a little before the
//! question that computed them; a question asked for an earlier instant (an
//! `as_of`, a clock set back) does without them.

use std::sync::Arc;

use particles_candidates::CandidateSet;
use particles_model::Timestamp;
use particles_rank::Policies;
use particles_store::Store;

use super::{all_slots, source_statics, Weights, PARALLEL_BAND_MIN};
use crate::{memo::QueryMemo, Result};

/// A band of fewer rows does not compute them (it would read the store's
/// every source); the connection's remembered ones serve any band.
pub(super) const MIN_BAND: usize = 64;

/// They hold from this long before the question that computed them, so a
/// question that started a little earlier (a batch's members, a follower's
/// warm-up) can use them too. Decay's half-lives are days: ten minutes loosen
/// a ceiling by a few parts in a hundred thousand.
const LEAD_MICROS: i64 = 10 * 60 * 1_000_000;

/// Ceilings stay sound as time runs on but loosen as decay runs; past this
/// age both are computed again.
const MAX_AGE_MICROS: i64 = 6 * 3_600 * 1_000_000;

/// Each is kept only when at least one row in this many gains by it (a
/// ceiling below what the scan's bound assumes of the row's effective
/// confidence, or a steady row): otherwise the band would only pay for
/// reading it. On the benchmark's stores every factor is 1 and every row is
/// steady, so no ceiling is kept and every steady value is.
const USEFUL_ONE_IN: usize = 16;

/// What a connection remembers (in its band memo).
pub(crate) struct RowBounds {
    since: i64,
    known: Known,
}

/// The rows' ceilings and steady effective confidences, by row; `None` where
/// not worth reading (or, for ceilings, where they cannot bound a score).
#[derive(Clone, Default)]
pub(super) struct Known {
    /// An upper bound on each row's effective confidence (see [`compute`]).
    pub(super) ceilings: Option<Arc<[f32]>>,
    /// Each row's effective confidence where it is the same at every `now`
    /// from `since` on, else NaN: a row not derived, whose source's trust
    /// is known and whose decay no longer moves
    /// ([`particles_rank::steady_decay`]).
    pub(super) steady: Option<Arc<[f64]>>,
}

impl Known {
    /// Whether row `row` has a steady effective confidence, and which.
    #[inline]
    pub(super) fn steady(&self, row: usize) -> Option<f64> {
        self.steady
            .as_ref()
            .map(|steady| steady[row])
            .filter(|value| !value.is_nan())
    }
}

/// Whether an upper bound on effective confidence bounds the rank score: the
/// score must not fall as the similarity or the effective confidence rises
/// (with no query vector the effective confidence stands in for the
/// similarity), and the stale-support discount must be a number (its largest
/// value with 1 bounds the one a row gets).
fn ceilings_bound_scores(policies: &Policies) -> bool {
    let settings = &policies.settings;
    settings.score_rises_with_similarity()
        && settings.confidence_weight >= 0.0
        && settings.stale_support_discount.is_finite()
}

/// What the connection remembers for `index`'s set that holds at `now`;
/// `None` when it remembers nothing that does.
pub(super) fn remembered(
    store: &Store,
    index: &particles_candidates::SourceIndex,
    policies: &Policies,
    now: Timestamp,
) -> Result<Option<Known>> {
    let now = now.utc_micros();
    Ok(store
        .with_remembered(|memo: &mut QueryMemo| {
            let memo = memo.band.of(index, &policies.settings);
            memo.rows
                .as_ref()
                .filter(|rows| rows.since <= now && now - rows.since <= MAX_AGE_MICROS)
                .map(|rows| rows.known.clone())
        })?
        .flatten())
}

/// Computes and remembers each row's ceiling and steady effective confidence
/// from `since` (shortly before `now`) on, after reading every source's
/// statics into the connection's memo. Nothing when the connection does not
/// remember (every source would be read for one question).
///
/// Why a ceiling is a bound. A row's effective confidence is
/// `min(1, max(0, ((value × weight) × trust) × decay)) × discount`. Value,
/// weight and trust do not depend on `now`; the discount is 1 or the
/// configured one, at most `max(1, discount)`. Decay is `max(floor, 0.5 **
/// (age / half_life))` (1 for content not older than `now`), which does not
/// rise as `now` (so the age) grows when the half-life is positive or NaN:
/// every rounded step is monotonic, and `powf`'s last-bit error is covered by
/// rounding the bound up to `f32` and one `f32` step more (2^-24 relative,
/// far above an `f64` ulp). Products by a non-negative factor and the clamps
/// keep the order; a negative product clamps to 0 either way. A source whose
/// trust fails or whose half-life is zero or negative (the query fails on
/// it, or its decay rises with age) gets an infinite ceiling: its rows stay
/// in the band as before, and so does the failure.
///
/// Why a steady value is exact: it is computed by the band's own arithmetic
/// (`effective_confidence` of the capped value, the extractor's weight, the
/// source's trust and decay, a discount of 1 for a row that is not derived),
/// with the decay every later `now` gives too.
pub(super) fn compute(
    store: &Store,
    set: &CandidateSet,
    policies: &Policies,
    now: Timestamp,
) -> Result<Known> {
    if store.with_remembered(|_: &mut QueryMemo| ())?.is_none() {
        return Ok(Known::default());
    }
    let index = set.source_index();
    let statics = source_statics(store, set, policies, index, &all_slots(index))?;
    let since_micros = now.utc_micros().saturating_sub(LEAD_MICROS);
    let Some(since) = Timestamp::from_utc_micros(since_micros) else {
        return Ok(Known::default());
    };
    // By slot: the factors at `since` a ceiling is computed with (`None`: no
    // ceiling), and the steady factors (`None`: not steady).
    type Pair = Option<(f64, f64)>;
    let factors: Vec<(Pair, Pair)> = statics
        .iter()
        .map(|one| {
            let Some(one) = one else {
                return (None, None);
            };
            let monotonic = one
                .decay
                .is_none_or(|(half_life, _)| half_life > 0.0 || half_life.is_nan());
            let at_since = if monotonic {
                one.factors(since).ok().flatten()
            } else {
                None
            };
            (at_since, one.steady_factors(since))
        })
        .collect();
    let with_ceilings = ceilings_bound_scores(policies);
    let discount = particles_rank::py_max(1.0, policies.settings.stale_support_discount);
    let at_most_one = policies.factors_at_most_one();
    let columns = set.row_columns();
    let parts = crate::cores::on_cores(set.len(), PARALLEL_BAND_MIN, |range| {
        let mut weights = Weights::new(set, policies);
        let mut part = Part::default();
        for row in range {
            let (at_since, steady) = factors[index.of_row[row] as usize];
            let confidence = set.confidence(row);
            let capped = policies.capped_confidence(confidence, set.calibration_source(row));
            let weight = weights.of(set.extractor(row));
            let effective = |(trust, decay): (f64, f64), discount: f64| {
                particles_rank::effective_confidence(capped, weight, trust, decay, discount)
            };
            let ceiling = if with_ceilings {
                at_since.map_or(f32::INFINITY, |pair| ceiling_of(effective(pair, discount)))
            } else {
                f32::INFINITY
            };
            // What `score_bounds` assumes of it.
            let (assumed, _) = columns.bound_input(row);
            let assumed = if at_most_one { assumed } else { 1.0 };
            part.tighter += usize::from(f64::from(ceiling) < assumed);
            part.ceilings.push(ceiling);
            let steady = steady
                .filter(|_| !set.derived(row))
                .map_or(f64::NAN, |pair| effective(pair, 1.0));
            part.steady_rows += usize::from(!steady.is_nan());
            part.steady.push(steady);
        }
        part
    });
    let useful = |count: usize| count.saturating_mul(USEFUL_ONE_IN) >= set.len();
    let tighter = useful(parts.iter().map(|p| p.tighter).sum());
    let steady = useful(parts.iter().map(|p| p.steady_rows).sum());
    let mut ceilings_out = Vec::with_capacity(if tighter { set.len() } else { 0 });
    let mut steady_out = Vec::with_capacity(if steady { set.len() } else { 0 });
    for part in parts {
        if tighter {
            ceilings_out.extend(part.ceilings);
        }
        if steady {
            steady_out.extend(part.steady);
        }
    }
    let known = Known {
        ceilings: tighter.then(|| ceilings_out.into()),
        steady: steady.then(|| steady_out.into()),
    };
    store.with_remembered(|memo: &mut QueryMemo| {
        memo.band.of(index, &policies.settings).rows = Some(RowBounds {
            since: since_micros,
            known: known.clone(),
        });
    })?;
    Ok(known)
}

/// One thread's rows.
#[derive(Default)]
struct Part {
    ceilings: Vec<f32>,
    steady: Vec<f64>,
    tighter: usize,
    steady_rows: usize,
}

/// `value` rounded up to an `f32`, and one `f32` step above that.
fn ceiling_of(value: f64) -> f32 {
    if value.is_nan() {
        return f32::NAN;
    }
    particles_candidates::round_up_f32(value).next_up()
}
