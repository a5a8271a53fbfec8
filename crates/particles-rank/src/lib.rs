//! Scoring for particles, bit-exact with the reference (`linkedparticles` 1.214.1):
//! trust, decay, effective confidence, cosine similarity, the stable sort, top-k and
//! the co-evidential collapse.
//!
//! Everything here is pure: functions take `particles_model` values and return
//! scores. Nothing reads SQLite or the clock; callers pass `now` in. Equal scores
//! keep candidate order (confidence, then rowid), as the reference's stable sort
//! does, so the loader's order is the tie-break.
//!
//! A query runs [`Policies::compile`] once; per candidate, [`similarity`] and
//! [`score_bound`] in the scan, then, for the candidates whose bound can still
//! reach the top k, [`factors`] and [`score_with_similarity`]; the query crate's
//! collector keeps the best, then [`sort_and_truncate`] and
//! [`collapse_co_evidential`] finish. The per-row filters that run before scoring
//! live with the candidate layout (`particles_candidates::passes_filters`).
//!
//! ```
//! use particles_rank::{effective_confidence, merge_co_evidential};
//! assert_eq!(effective_confidence(0.95, 1.5, 1.0, 1.0, 1.0), 1.0);
//! let merged = merge_co_evidential(&[(0.6, "entry-a"), (0.5, "entry-b")]);
//! assert!((merged - 0.8).abs() < 1e-12);
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
#![forbid(unsafe_code)]

mod claims;
mod collapse;
mod error;
mod lift;
mod netloc;
mod policy;
mod score;
mod settings;
mod similarity;

use std::collections::HashMap;

use particles_candidates::CandidateSet;
use particles_model::{policy::SourceFacts, Status, Timestamp};

pub use crate::{
    claims::{match_claim, ClaimFilters, ClaimMatch},
    collapse::{co_evidential_closure, collapse_co_evidential, merge_co_evidential},
    error::{Error, Result},
    lift::{
        owner_rank_bonus, reinforcement_score, utility_rank_bonus, OwnerLensSettings,
        UtilityParams, UtilityPolicy, UtilitySettings,
    },
    netloc::{netloc, NetlocError},
    policy::{
        infer_domain, member_policies, recency_factor, steady_decay, DecayPolicy, MemberPolicy,
        Policies, TrustPolicy,
    },
    score::{effective_confidence, py_max, py_min, rank_score},
    settings::{ConformanceCap, DecayRule, RankSettings, UncalibratedCap},
    similarity::{sdot_openblas, NormKernel, QueryVector},
};

/// One scored candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranked {
    /// The candidate's row in its `CandidateSet`.
    pub row: usize,
    /// Cosine similarity (or the effective confidence when there is no query vector).
    pub similarity: f64,
    /// Effective confidence (the merged value for a collapsed representative).
    pub effective_confidence: f64,
    /// The rank score the sort used.
    pub score: f64,
}

/// The factors behind one candidate's effective confidence, for display.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Factors {
    /// Extractor trust weight.
    pub extractor_weight: f64,
    /// Source trust rank (1.0 when no rule applies).
    pub source_trust: f64,
    /// Recency decay.
    pub decay: f64,
    /// Stale-support discount.
    #[serde(rename = "stale_support_discount")]
    pub discount: f64,
}

/// The stale-support factor of candidate `row`: the configured
/// `stale_support_discount` for a derived particle with a premise that is missing
/// from `premise_status` or not ACTIVE, else 1.0.
pub fn stale_support_discount(
    set: &CandidateSet,
    row: usize,
    premise_status: &HashMap<String, Status>,
    policies: &Policies,
) -> f64 {
    if !set.derived(row) {
        return 1.0;
    }
    let stale = set
        .premises(row)
        .iter()
        .any(|id| premise_status.get(id) != Some(&Status::Active));
    if stale {
        policies.settings.stale_support_discount
    } else {
        1.0
    }
}

/// Computes the factors of candidate `row`'s effective confidence.
///
/// # Errors
///
/// [`Error::BadUri`] when the source URI cannot be split, [`Error::DecayHalfLife`]
/// when a configured half-life makes the decay fail.
pub fn factors(
    set: &CandidateSet,
    row: usize,
    source: &SourceFacts,
    discount: f64,
    policies: &Policies,
    now: Timestamp,
) -> Result<Factors> {
    let (source_trust, decay) = source_factors(source, policies, now)?;
    Ok(Factors {
        extractor_weight: extractor_weight(set, row, policies),
        source_trust,
        decay,
        discount,
    })
}

/// The factors that depend on the source alone: `(source trust, decay)`. Every
/// candidate with the same source facts has the same pair, so a caller scoring
/// many candidates of few sources may compute it once per source.
///
/// # Errors
///
/// As [`factors`].
pub fn source_factors(
    source: &SourceFacts,
    policies: &Policies,
    now: Timestamp,
) -> Result<(f64, f64)> {
    Ok((
        policies.trust.evaluate(source)?.unwrap_or(1.0),
        policies.decay.factor(source, now)?,
    ))
}

/// What a source's factors depend on besides `now`: its trust, the decay rule
/// that applies to it and its publication instant. Computed once per source
/// and policy set, it gives [`source_factors`] at any `now` for the price of
/// the decay's power (trust alone is a domain lookup, a URL split and every
/// pattern of the policy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceStatics {
    /// The source trust; `None` when evaluating it fails (then
    /// [`source_factors`] gives the error).
    pub trust: Option<f64>,
    /// The decay rule's `(half_life_days, floor)`, if one applies.
    pub decay: Option<(f64, f64)>,
    /// The source's publication instant.
    pub published_at: Option<Timestamp>,
}

impl SourceStatics {
    /// The statics of `source` under `policies`.
    pub fn of(source: &SourceFacts, policies: &Policies) -> SourceStatics {
        SourceStatics {
            trust: policies
                .trust
                .evaluate(source)
                .ok()
                .map(|trust| trust.unwrap_or(1.0)),
            decay: policies
                .decay
                .resolve(&source.source_type, source.uri.as_deref()),
            published_at: source.published_at,
        }
    }

    /// `(trust, decay)` at `now`, the value [`source_factors`] returns; `None`
    /// when the trust failed (call [`source_factors`] for its error).
    ///
    /// # Errors
    ///
    /// [`Error::DecayHalfLife`] as [`source_factors`].
    pub fn factors(&self, now: Timestamp) -> Result<Option<(f64, f64)>> {
        let Some(trust) = self.trust else {
            return Ok(None);
        };
        let decay = match self.decay {
            None => 1.0,
            Some((half_life, floor)) => recency_factor(self.published_at, half_life, floor, now)?,
        };
        Ok(Some((trust, decay)))
    }
}

impl SourceStatics {
    /// `(trust, decay)` as [`SourceStatics::factors`] gives them at every
    /// `now` from `since` on, when they are the same at all of them (see
    /// [`steady_decay`]); `None` when they may differ, or the trust failed.
    pub fn steady_factors(&self, since: Timestamp) -> Option<(f64, f64)> {
        let trust = self.trust?;
        let decay = match self.decay {
            None => 1.0,
            Some((half_life, floor)) => steady_decay(self.published_at, half_life, floor, since)?,
        };
        Some((trust, decay))
    }
}

/// The extractor trust weight of candidate `row` (see [`Policies::extractor_weight`]).
pub fn extractor_weight(set: &CandidateSet, row: usize, policies: &Policies) -> f64 {
    let extractor = set.extractor(row).map(|at| set.string(at));
    policies.extractor_weight(extractor)
}

/// The similarity of candidate `row` with the query (its cosine; the caller uses
/// the effective confidence when there is no query vector).
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the vector's dimension differs from the query's;
/// [`Error::DamagedVector`] when the vector or its norm no longer matches the row's
/// check (bytes damaged since the set was built: a sidecar on a bad disk).
pub fn similarity(set: &CandidateSet, row: usize, query: &QueryVector) -> Result<f64> {
    let vector = set.vector(row);
    if vector.len() != query.len() {
        return Err(Error::DimensionMismatch {
            id: set.id(row).to_owned(),
            expected: query.len(),
            found: vector.len(),
        });
    }
    let (dot, fold) = particles_candidates::einsum_dot_checked(vector, query.values());
    similarity_from_dot(set, row, query, dot, fold)
}

/// [`similarity`] from the einsum dot of the row's vector with the query and the
/// fold of the vector's bits, computed elsewhere (a scan's tile,
/// `particles_candidates::einsum_tile_checked`): the same value, after the same
/// check. The caller has checked that the dimensions agree.
///
/// # Errors
///
/// [`Error::DamagedVector`] when the fold and the norm do not match the row's
/// check.
#[inline]
pub fn similarity_from_dot(
    set: &CandidateSet,
    row: usize,
    query: &QueryVector,
    dot: f32,
    fold: u32,
) -> Result<f64> {
    let norm = set.norm(row);
    if fold.wrapping_add(norm.to_bits()) != set.check(row) {
        return Err(Error::DamagedVector {
            id: set.id(row).to_owned(),
        });
    }
    Ok(query.cosine_from_dot(dot, norm))
}

/// The similarity of candidate `row` whose vector a previous read in this pass
/// already checked ([`similarity`] did): the same value, without the check.
///
/// # Errors
///
/// [`Error::DimensionMismatch`] when the vector's dimension differs from the query's.
pub fn similarity_of_verified(set: &CandidateSet, row: usize, query: &QueryVector) -> Result<f64> {
    let vector = set.vector(row);
    if vector.len() != query.len() {
        return Err(Error::DimensionMismatch {
            id: set.id(row).to_owned(),
            expected: query.len(),
            found: vector.len(),
        });
    }
    Ok(query.cosine_with_norm(vector, set.norm(row)))
}

/// Scores candidate `row` with its similarity already computed (`None`: no query
/// vector, the similarity is the effective confidence), or `None` when its effective
/// confidence is below `min_confidence`.
pub fn score_with_similarity(
    set: &CandidateSet,
    row: usize,
    factors: &Factors,
    similarity: Option<f64>,
    min_confidence: f64,
    policies: &Policies,
) -> Option<Ranked> {
    let effective = effective_confidence(
        policies.capped_confidence(set.confidence(row), set.calibration_source(row)),
        factors.extractor_weight,
        factors.source_trust,
        factors.decay,
        factors.discount,
    );
    if effective < min_confidence {
        return None;
    }
    let similarity = similarity.unwrap_or(effective);
    Some(Ranked {
        row,
        similarity,
        effective_confidence: effective,
        score: policies.rank_score(set.narrative(row), similarity, effective),
    })
}

/// An upper bound of candidate `row`'s rank score that needs no source lookup.
///
/// Effective confidence is `min(1, max(0, v·w·r·d))·discount` (with `v` at most the
/// stored value, the uncalibrated cap only lowering it); when every factor is at
/// most 1 ([`Policies::factors_at_most_one`]), it is at most the stored confidence
/// (clamped to `0..=1` and rounded up to an `f32`: the 4-byte column the scan reads),
/// else at most 1. Rounding is monotonic, so the score computed the same way from that bound
/// (and from the similarity, or the bound itself without a query vector) is never
/// below the candidate's true score: a candidate whose bound is below the k-th best
/// score found so far cannot enter the top k.
#[inline]
pub fn score_bound(
    set: &CandidateSet,
    row: usize,
    similarity: Option<f64>,
    factors_at_most_one: bool,
    policies: &Policies,
) -> f64 {
    let (confidence, narrative) = set.row_columns().bound_input(row);
    let confidence_bound = if factors_at_most_one { confidence } else { 1.0 };
    policies.rank_score(
        narrative,
        similarity.unwrap_or(confidence_bound),
        confidence_bound,
    )
}

/// [`score_bound`] of many rows at once: `out[j]` for `rows[j]` with
/// `similarities[j]` (or without a similarity), the same values bit for bit,
/// as straight-line code over the rows.
pub fn score_bounds(
    columns: &particles_candidates::RowColumns<'_>,
    rows: &[usize],
    similarities: Option<&[f64]>,
    factors_at_most_one: bool,
    policies: &Policies,
    out: &mut [f64],
) {
    let settings = &policies.settings;
    let n = rows.len().min(out.len());
    let out = &mut out[..n];
    // The clamped confidence rounded up to an `f32` (`bound_input`): at least
    // the exact clamp, so still a bound, from 4 bytes a row instead of 40.
    columns.for_each_bound_input(&rows[..n], |j, confidence, narrative| {
        let confidence_bound = if factors_at_most_one { confidence } else { 1.0 };
        let similarity = similarities.map_or(confidence_bound, |s| s[j]);
        out[j] = score::rank_score(settings, narrative, similarity, confidence_bound);
    });
}

/// Sorts by score descending, keeping the loader's order among equal scores (a stable
/// sort; `-0.0` and `0.0` are equal, as in Python), then keeps the first `top_k`.
pub fn sort_and_truncate(scored: &mut Vec<Ranked>, top_k: usize) {
    scored.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    scored.truncate(top_k);
}
