//! The claim listing and the aggregates (the reference's `_gather_store` and
//! `_assemble`, spec §7.2 and §7.3), and the window listing (`window_listing`,
//! §7.6).

use std::collections::HashMap;

use particles_model::{
    response::{AggregateBucket, ClaimCoverage, QueryResponse, StructuralAggregate, WindowReading},
    GroupBy, Particle, StructuredClaim,
};
use particles_query::QueryInput;
use particles_rank::{ClaimFilters, ClaimMatch};
use particles_store::{Store, SubjectMatch};

use super::gather::{effective_confidences, gather_claims, gather_window_listing, Gathered};
use crate::{Error, Result};

/// The bucket key of a claim about no subject at all.
const NO_SUBJECT_KEY: &str = "(no subject)";

/// One scored claim: its row in the pool and its effective confidence.
#[derive(Debug, Clone, Copy)]
struct Scored {
    row: usize,
    effective: f64,
}

/// The claim modes after matching and scoring.
struct Matched {
    gathered: Gathered,
    scored: Vec<Scored>,
    not_comparable: u64,
    active_total: u64,
    with_claims: u64,
}

impl Matched {
    fn particle(&self, scored: Scored) -> &Particle {
        &self.gathered.pool.particles[scored.row]
    }

    fn claim(&self, scored: Scored) -> Option<&StructuredClaim> {
        self.particle(scored).structured_claim.as_ref()
    }

    fn coverage(&self, below_min_effective_confidence: u64) -> ClaimCoverage {
        ClaimCoverage {
            active_total: self.active_total,
            with_claims: self.with_claims,
            matched: self.scored.len() as u64,
            not_normalizable_excluded: self.not_comparable,
            below_min_effective_confidence,
        }
    }
}

/// The claim listing or an aggregate: gather, match the claim filters (string
/// conditions first, then the typed bounds), score, drop below `min_confidence`,
/// then assemble.
pub(crate) fn claim_listing_or_aggregate(
    store: &Store,
    input: &QueryInput<'_>,
) -> Result<QueryResponse> {
    let request = input.request;
    let gathered = gather_claims(store, input)?;
    let filters = ClaimFilters::new(request);
    let mut matched_rows = Vec::with_capacity(gathered.rows.len());
    let mut not_comparable = 0;
    for &row in &gathered.rows {
        // The loaders require a claim; a row whose claim JSON is `null` has none
        // and is skipped, as the reference skips it.
        let Some(claim) = gathered.pool.particles[row].structured_claim.as_ref() else {
            continue;
        };
        if !filters.is_active() {
            matched_rows.push(row);
            continue;
        }
        match particles_rank::match_claim(claim, &filters) {
            ClaimMatch::Matched => matched_rows.push(row),
            ClaimMatch::Unmatched => {}
            ClaimMatch::NotComparable => not_comparable += 1,
        }
    }
    let scored = effective_confidences(store, &gathered.pool, &matched_rows, input)?
        .into_iter()
        .map(|(row, effective)| Scored { row, effective })
        .collect();
    if let Some(hook) = input.after_ranking {
        hook();
    }
    // The coverage counts come from the same snapshot as the rows they explain.
    let (active_total, with_claims) = particles_store::claim_coverage_counts(store)?;
    let matched = Matched {
        gathered,
        scored,
        not_comparable,
        active_total,
        with_claims,
    };
    if request.is_aggregate() {
        aggregate(store, input, &matched)
    } else {
        Ok(listing(input, matched))
    }
}

/// §7.2: stable sort by `(effective, asserted_at)` descending, cut at `top_k`.
fn listing(input: &QueryInput<'_>, matched: Matched) -> QueryResponse {
    let request = input.request;
    let mut ordered = matched.scored.clone();
    // Python's `sorted(..., reverse=True)` is stable: equal keys keep loader order.
    ordered.sort_by(|a, b| {
        let key_a = (a.effective, matched.particle(*a).asserted_at.utc_micros());
        let key_b = (b.effective, matched.particle(*b).asserted_at.utc_micros());
        key_b
            .0
            .partial_cmp(&key_a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(key_b.1.cmp(&key_a.1))
    });
    let total = ordered.len();
    let top: Vec<Scored> = ordered.into_iter().take(request.top_k as usize).collect();
    let mut answer = format!("{total} claims matched the structural filter.");
    if total > top.len() {
        answer.push_str(&format!(
            " Showing the top {} by effective confidence.",
            top.len()
        ));
    }
    let mut response = QueryResponse::empty(answer);
    let gathered = &matched.gathered;
    response.claim_coverage = Some(matched.coverage(0));
    response.as_of = request.as_of;
    if request.as_of.is_some() {
        response.as_of_notes = top
            .iter()
            .map(|s| gathered.as_of_notes.get(&matched.particle(*s).id).cloned())
            .collect();
    }
    response.as_of_excluded_undatable = gathered.as_of_excluded_undatable;
    response.window = request.window;
    if let Some(window) = &gathered.window {
        response.window_hits = top
            .iter()
            .map(|s| window.hits.get(&matched.particle(*s).id).cloned())
            .collect();
        response.window_coverage = Some(window.coverage);
    }
    response.observer_scope = gathered.observer_scope.clone();
    response.effective_confidences = top.iter().map(|s| s.effective).collect();
    response.particles = top.iter().map(|s| matched.particle(*s).clone()).collect();
    response
}

/// §7.3: the optional `min_effective_confidence` floor (counted), the
/// distribution, the buckets.
fn aggregate(store: &Store, input: &QueryInput<'_>, matched: &Matched) -> Result<QueryResponse> {
    let request = input.request;
    let mut kept: Vec<Scored> = matched.scored.clone();
    let mut below_min = 0;
    if let Some(floor) = request.min_effective_confidence {
        kept.retain(|s| s.effective >= floor);
        below_min = (matched.scored.len() - kept.len()) as u64;
    }
    let effs: Vec<f64> = kept.iter().map(|s| s.effective).collect();
    let (low, middle, high) = match (py_min_of(&effs), median(&effs), py_max_of(&effs)) {
        (Some(low), Some(middle), Some(high)) => (Some(low), Some(middle), Some(high)),
        _ => (None, None, None),
    };
    let buckets = match request.group_by {
        Some(axis) => buckets(store, matched, &kept, axis)?,
        None => Vec::new(),
    };
    let answer = match request.group_by {
        Some(axis) => format!(
            "{} claims match, in {} {} bucket(s).",
            kept.len(),
            buckets.len(),
            axis.as_str()
        ),
        None => format!("{} claims match.", kept.len()),
    };
    let gathered = &matched.gathered;
    let mut response = QueryResponse::empty(answer);
    response.structural_aggregate = Some(StructuralAggregate {
        claim_count: kept.len() as u64,
        min_effective_confidence: low,
        median_effective_confidence: middle,
        max_effective_confidence: high,
        group_by: request.group_by,
        buckets,
    });
    response.claim_coverage = Some(matched.coverage(below_min));
    response.as_of = request.as_of;
    response.as_of_excluded_undatable = gathered.as_of_excluded_undatable;
    response.window = request.window;
    response.window_coverage = gathered.window.as_ref().map(|w| w.coverage);
    response.observer_scope = gathered.observer_scope.clone();
    Ok(response)
}

/// The `group_by` buckets: keys in first-seen order, labelled (subject axis)
/// through the reference's `get_subject`, sorted by `(-count, key)`.
fn buckets(
    store: &Store,
    matched: &Matched,
    kept: &[Scored],
    axis: GroupBy,
) -> Result<Vec<AggregateBucket>> {
    let mut keys: Vec<String> = Vec::new();
    let mut grouped: HashMap<String, Vec<f64>> = HashMap::new();
    for &scored in kept {
        let Some(claim) = matched.claim(scored) else {
            continue;
        };
        let particle = matched.particle(scored);
        let row_keys: Vec<&str> = match axis {
            // The claim's own subject when set, else each linked subject (a row
            // counts in each), else the no-subject bucket.
            GroupBy::Subject => match &claim.subject_id {
                Some(subject) => vec![subject.as_str()],
                None if !particle.subject_ids.is_empty() => {
                    particle.subject_ids.iter().map(String::as_str).collect()
                }
                None => vec![NO_SUBJECT_KEY],
            },
            GroupBy::Predicate => vec![claim.predicate.value.as_str()],
            GroupBy::Object => vec![claim.object.value.as_str()],
        };
        for key in row_keys {
            let effs = grouped.entry(key.to_owned()).or_insert_with(|| {
                keys.push(key.to_owned());
                Vec::new()
            });
            effs.push(scored.effective);
        }
    }
    let mut labels: HashMap<&str, String> = HashMap::new();
    if axis == GroupBy::Subject {
        for key in &keys {
            if key == NO_SUBJECT_KEY {
                continue;
            }
            match particles_store::find_subject(store, key)? {
                SubjectMatch::Found(subject) => {
                    labels.insert(key, subject.canonical_name);
                }
                SubjectMatch::NotFound => {}
                SubjectMatch::Ambiguous { matches } => {
                    return Err(Error::AmbiguousSubject {
                        reference: key.clone(),
                        message: format!(
                            "Ambiguous subject prefix {} matches {matches} subjects; use more characters.",
                            particles_model::python_repr(key)
                        ),
                    })
                }
            }
        }
    }
    let mut buckets = Vec::with_capacity(keys.len());
    for key in &keys {
        let effs = &grouped[key];
        let (Some(low), Some(middle), Some(high)) =
            (py_min_of(effs), median(effs), py_max_of(effs))
        else {
            continue;
        };
        buckets.push(AggregateBucket {
            key: key.clone(),
            label: labels.get(key.as_str()).cloned(),
            claim_count: effs.len() as u64,
            min_effective_confidence: low,
            median_effective_confidence: middle,
            max_effective_confidence: high,
        });
    }
    buckets.sort_by(|a, b| {
        b.claim_count
            .cmp(&a.claim_count)
            .then_with(|| a.key.cmp(&b.key))
    });
    Ok(buckets)
}

/// Python's `min(values)`: the first value no later value is below.
fn py_min_of(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(particles_rank::py_min)
}

/// Python's `max(values)`: the first value no later value is above.
fn py_max_of(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(particles_rank::py_max)
}

/// Python's `statistics.median`: the middle of the sorted values, or the mean
/// `(a + b) / 2` of the two middle ones.
fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = sorted.len();
    Some(if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    })
}

/// §7.6: the window listing. Scored (decay at `as_of`), dropped below
/// `min_confidence`, stably sorted by `(valid_from, reading rank)`, cut at
/// `top_k`.
pub(crate) fn window_listing(store: &Store, input: &QueryInput<'_>) -> Result<QueryResponse> {
    let request = input.request;
    let gathered = gather_window_listing(store, input)?;
    let scored = effective_confidences(store, &gathered.pool, &gathered.rows, input)?;
    let Some(window) = gathered.window.as_ref() else {
        return Err(Error::NotStructural);
    };
    let particles = &gathered.pool.particles;
    let hit_of = |row: usize| window.hits.get(&particles[row].id);
    // Every admitted row has a hit; the key of a missing one sorts last, as the
    // reference's rank 9 would.
    let key = |row: usize| {
        hit_of(row).map_or((i64::MAX, 9), |hit| {
            (hit.valid_from.utc_micros(), reading_rank(hit.reading))
        })
    };
    let mut ordered = scored;
    ordered.sort_by_key(|&(row, _)| key(row));
    let began = ordered
        .iter()
        .filter(|&&(row, _)| hit_of(row).is_some_and(|hit| hit.reading == WindowReading::Began))
        .count();
    let total = ordered.len();
    let top: Vec<(usize, f64)> = ordered.into_iter().take(request.top_k as usize).collect();
    let mut answer = format!(
        "{total} claims sit in the window: {began} began in it, {} were in force.",
        total - began
    );
    if total > top.len() {
        answer.push_str(&format!(" Showing the first {} by valid_from.", top.len()));
    }
    let mut response = QueryResponse::empty(answer);
    response.particles = top.iter().map(|&(row, _)| particles[row].clone()).collect();
    response.effective_confidences = top.iter().map(|&(_, eff)| eff).collect();
    response.window = request.window;
    response.window_hits = top.iter().map(|&(row, _)| hit_of(row).cloned()).collect();
    response.window_coverage = Some(window.coverage);
    response.as_of = request.as_of;
    if request.as_of.is_some() {
        response.as_of_notes = top
            .iter()
            .map(|&(row, _)| gathered.as_of_notes.get(&particles[row].id).cloned())
            .collect();
    }
    response.as_of_excluded_undatable = gathered.as_of_excluded_undatable;
    response.observer_scope = gathered.observer_scope.clone();
    Ok(response)
}

/// A day's events read before the states that frame them: `BEGAN` first.
fn reading_rank(reading: WindowReading) -> u8 {
    match reading {
        WindowReading::Began => 0,
        WindowReading::InForce => 1,
        WindowReading::HeldAt => 2,
        WindowReading::Within => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_is_pythons() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[0.3]), Some(0.3));
        assert_eq!(median(&[0.9, 0.1, 0.5]), Some(0.5));
        assert_eq!(median(&[0.1, 0.2]), Some((0.1 + 0.2) / 2.0));
        assert_eq!(median(&[0.4, 0.1, 0.3, 0.2]), Some((0.2 + 0.3) / 2.0));
    }

    #[test]
    fn min_and_max_keep_the_first_extreme() {
        assert_eq!(py_min_of(&[0.5, 0.2, 0.2, 0.9]), Some(0.2));
        assert_eq!(py_max_of(&[0.5, 0.9, 0.2]), Some(0.9));
        assert_eq!(py_min_of(&[]), None);
    }
}
