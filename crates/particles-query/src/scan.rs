//! The per-row pass over the candidates: the filters, the cosine with the question
//! and each survivor's score bound, split across cores for large sets.
//!
//! Several queries over the same candidates can share one pass ([`scan_lanes`]):
//! each row's vector is read from memory once and its dot product taken with every
//! question while it sits in the L1 cache. The memory read dominates a scan, so a
//! batch of questions costs little more than one; every lane's values are
//! computed exactly as a lone scan computes them.
//!
//! When the set holds a half-precision copy of its vectors
//! ([`CandidateSet::prepare_half`], made by long-lived processes) the pass reads
//! that instead, half the bytes, and keeps each row's cosine as an interval that
//! holds the exact value ([`Similarities::Bounded`]). The walk and the band then
//! read the exact `f32` row only where an interval cannot decide: the answer is
//! the exact path's, bit for bit (`tests/it/band.rs` checks it against the
//! exhaustive walk over the exact scan).

use particles_candidates::{CandidateSet, HalfDot, HalfView};
use particles_rank::{Policies, QueryVector};

use crate::{Error, Result};

/// Below this many candidates the scan runs on one thread: spawning costs more
/// than it saves. At 10k rows two threads already win (measured, the warm 10k
/// cell on 2 Xeon cores: the scan stage 1.3 ms on one thread, 1.0-1.1 ms on two).
const PARALLEL_SCAN_MIN: usize = 4_096;

/// What the scan keeps of each surviving candidate, in loader order.
pub(crate) struct Scanned {
    pub(crate) survivors: Vec<usize>,
    pub(crate) similarities: Option<Similarities>,
    pub(crate) bounds: Vec<f64>,
}

/// Each survivor's cosine with the question (parallel to the survivors).
#[derive(Debug, PartialEq)]
pub(crate) enum Similarities {
    /// Read from the `f32` rows: the exact values.
    Exact(Vec<f64>),
    /// Read from the half-precision copy: `[dot, high]`, the half dot product
    /// and the interval's high end; the low end is computed when asked for
    /// (most rows never are). A row read exactly (no interval was sound) holds
    /// `[+inf, value]`: a half dot is never infinite.
    Bounded(Vec<[f32; 2]>),
}

impl Similarities {
    /// `(low, high)` of survivor `position`'s cosine (row `row` of `set`).
    pub(crate) fn interval(
        &self,
        position: usize,
        set: &CandidateSet,
        row: usize,
        query: Option<&QueryVector>,
    ) -> (f64, f64) {
        match self {
            Similarities::Exact(values) => (values[position], values[position]),
            Similarities::Bounded(bounds) => {
                let [dot, high] = bounds[position];
                let high = f64::from(high);
                if dot == f32::INFINITY {
                    return (high, high);
                }
                // A cosine is clamped to 0..=1, so 0 bounds it from below
                // whenever no tighter end is sound.
                let low = set
                    .half()
                    .zip(query)
                    .and_then(|(half, query)| {
                        query.similarity_low(dot, half.radius(row), set.norm(row))
                    })
                    .unwrap_or(0.0);
                (low, high)
            }
        }
    }

    /// Whether survivor `position`'s similarity is known exactly.
    pub(crate) fn is_exact(&self, position: usize) -> bool {
        match self {
            Similarities::Exact(_) => true,
            Similarities::Bounded(bounds) => bounds[position][0] == f32::INFINITY,
        }
    }

    /// Survivor `position`'s exact cosine, reading row `row` (its integrity
    /// checked) when the scan kept only an interval.
    pub(crate) fn exact(
        &self,
        position: usize,
        set: &CandidateSet,
        row: usize,
        query: &QueryVector,
    ) -> Result<f64> {
        match self {
            Similarities::Exact(values) => Ok(values[position]),
            Similarities::Bounded(bounds) => {
                if self.is_exact(position) {
                    Ok(f64::from(bounds[position][1]))
                } else {
                    Ok(particles_rank::similarity(set, row, query)?)
                }
            }
        }
    }
}

/// Survivor `position`'s exact similarity, when there is a question.
pub(crate) fn exact_similarity(
    similarities: Option<&Similarities>,
    position: usize,
    set: &CandidateSet,
    row: usize,
    query: Option<&QueryVector>,
) -> Result<Option<f64>> {
    match (similarities, query) {
        (Some(similarities), Some(query)) => {
            Ok(Some(similarities.exact(position, set, row, query)?))
        }
        // Similarities come with a question; without one there are none.
        (Some(_), None) | (None, _) => Ok(None),
    }
}

/// A per-row filter, run in the scan when it needs no store read.
pub(crate) type Keep<'a> = &'a (dyn Fn(usize) -> Result<bool> + Sync);

/// One query of a shared pass.
pub(crate) struct Lane<'a> {
    pub(crate) query: Option<&'a QueryVector>,
    pub(crate) at_most_one: bool,
    pub(crate) policies: &'a Policies,
    pub(crate) keep: Option<Keep<'a>>,
}

/// One pass over the candidates, split across the available cores for large sets:
/// `keep` (the per-row filters, when they can run here), then the cosine with the
/// query and the score bound of each survivor. Every value is computed
/// independently and the parts are joined in row order, so the split changes no
/// bit; an error is the one of the first failing row, as in a sequential pass.
pub(crate) fn scan_candidates(
    set: &CandidateSet,
    rows: &[usize],
    query: Option<&QueryVector>,
    at_most_one: bool,
    policies: &Policies,
    keep: Option<Keep<'_>>,
) -> Result<Scanned> {
    let lane = Lane {
        query,
        at_most_one,
        policies,
        keep,
    };
    scan_lanes(set, rows, std::slice::from_ref(&lane))
        .pop()
        .unwrap_or_else(|| Ok(empty(rows.len(), query.is_some())))
}

fn empty(capacity: usize, with_similarities: bool) -> Scanned {
    empty_as(capacity, with_similarities.then_some(false))
}

/// An empty result; `bounded`: `None` without a question, else whether the
/// similarities are intervals.
fn empty_as(capacity: usize, bounded: Option<bool>) -> Scanned {
    Scanned {
        survivors: Vec::with_capacity(capacity),
        similarities: bounded.map(|bounded| {
            if bounded {
                Similarities::Bounded(Vec::with_capacity(capacity))
            } else {
                Similarities::Exact(Vec::with_capacity(capacity))
            }
        }),
        bounds: Vec::with_capacity(capacity),
    }
}

/// The half copy and its kernel, when `lane` may read intervals from it: the
/// set has one, there is a question small enough for sound intervals, and a
/// higher similarity never lowers the score (so an interval bounds it).
fn half_for<'a>(set: &'a CandidateSet, lane: &Lane<'_>) -> Option<(HalfView<'a>, HalfDot)> {
    let query = lane.query?;
    if !query.has_intervals() || !lane.policies.settings.score_rises_with_similarity() {
        return None;
    }
    set.half()
        .map(|half| (half, particles_candidates::half_dot_kernel()))
}

/// One lane's results over a chunk of rows, with its first filter error and first
/// similarity error kept apart: the reference filters every candidate before it
/// computes any similarity, so a filter error anywhere wins over a similarity
/// error.
struct Part {
    scanned: Scanned,
    filter_error: Option<Error>,
    similarity_error: Option<Error>,
}

/// The shared pass: every lane over the same rows, each row's vector read once.
/// Returns each lane's result, in lane order.
pub(crate) fn scan_lanes(
    set: &CandidateSet,
    rows: &[usize],
    lanes: &[Lane<'_>],
) -> Vec<Result<Scanned>> {
    let halves: Vec<Option<(HalfView<'_>, HalfDot)>> =
        lanes.iter().map(|lane| half_for(set, lane)).collect();
    let scan = |rows: &[usize]| -> Vec<Part> {
        let mut parts: Vec<Part> = lanes
            .iter()
            .zip(&halves)
            .map(|(lane, half)| Part {
                scanned: empty_as(rows.len(), lane.query.map(|_| half.is_some())),
                filter_error: None,
                similarity_error: None,
            })
            .collect();
        for &row in rows {
            // The row's integrity is checked by the first lane that reads its
            // vector; the others read the same bytes, already vouched for.
            //
            // Every scan checks, a warm `serve` too, not once per opened state: the
            // check rides on loads the dot product makes anyway (one integer add
            // per four floats; its cost is measured in docs/reliability.md), a
            // query reads only the rows its filters keep, so no single query could
            // vouch for a whole state, and in `serve` the norms and checks stay
            // views of the file map, which a program writing the file in place
            // can change under a state that was checked when it was opened.
            let mut verified = false;
            for ((lane, part), half) in lanes.iter().zip(parts.iter_mut()).zip(&halves) {
                if part.filter_error.is_some() {
                    continue;
                }
                if let Some(keep) = lane.keep {
                    match keep(row) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            part.filter_error = Some(e);
                            continue;
                        }
                    }
                }
                if part.similarity_error.is_some() {
                    // Only the filters still matter: they may fail further on.
                    continue;
                }
                // From the half copy: the dot and the interval's high end, when
                // an interval is sound for this row.
                let interval = match (lane.query, half) {
                    (Some(query), Some((half, dot))) => {
                        let vector = half.vector(row);
                        if vector.len() == query.len() {
                            let dot = dot(query.values(), vector);
                            query
                                .similarity_high(dot, half.radius(row), set.norm(row))
                                .map(|high| (dot, high))
                        } else {
                            None
                        }
                    }
                    _ => None,
                };
                let similarity = match (lane.query, interval) {
                    (None, _) => None,
                    (Some(_), Some((_, high))) => Some(high),
                    (Some(query), None) => {
                        let value = if verified {
                            particles_rank::similarity_of_verified(set, row, query)
                        } else {
                            particles_rank::similarity(set, row, query)
                        };
                        match value {
                            Ok(value) => {
                                verified = true;
                                Some(value)
                            }
                            Err(e) => {
                                part.similarity_error = Some(e.into());
                                continue;
                            }
                        }
                    }
                };
                let out = &mut part.scanned;
                out.survivors.push(row);
                match (out.similarities.as_mut(), similarity) {
                    (Some(Similarities::Exact(all)), Some(value)) => all.push(value),
                    (Some(Similarities::Bounded(all)), Some(value)) => {
                        // Values are f32 widened, so the narrowing is exact.
                        all.push(match interval {
                            Some((dot, high)) => [dot, high as f32],
                            None => [f32::INFINITY, value as f32],
                        });
                    }
                    _ => {}
                }
                // The bound from the interval's high end: the score rises with
                // the similarity, so it bounds the exact score too.
                out.bounds.push(particles_rank::score_bound(
                    set,
                    row,
                    similarity,
                    lane.at_most_one,
                    lane.policies,
                ));
            }
        }
        parts
    };
    let chunks: Vec<Vec<Part>> =
        crate::cores::on_cores(rows.len(), PARALLEL_SCAN_MIN, |range| scan(&rows[range]));
    // Regroup by lane: each lane's parts in row order.
    let mut by_lane: Vec<Vec<Part>> = lanes.iter().map(|_| Vec::new()).collect();
    for chunk in chunks {
        for (lane, part) in chunk.into_iter().enumerate() {
            by_lane[lane].push(part);
        }
    }
    by_lane
        .into_iter()
        .zip(lanes)
        .map(|(parts, lane)| join(parts, rows.len(), lane.query.is_some()))
        .collect()
}

/// One lane's parts joined in row order, or the error of its first failing row.
fn join(mut parts: Vec<Part>, capacity: usize, with_similarities: bool) -> Result<Scanned> {
    if let Some(at) = parts.iter().position(|p| p.filter_error.is_some()) {
        if let Some(error) = parts.swap_remove(at).filter_error {
            return Err(error);
        }
    }
    if let Some(at) = parts.iter().position(|p| p.similarity_error.is_some()) {
        if let Some(error) = parts.swap_remove(at).similarity_error {
            return Err(error);
        }
    }
    if parts.len() == 1 {
        if let Some(part) = parts.pop() {
            return Ok(part.scanned);
        }
    }
    let bounded = parts
        .first()
        .is_some_and(|p| matches!(p.scanned.similarities, Some(Similarities::Bounded(_))));
    let mut out = empty_as(capacity, with_similarities.then_some(bounded));
    for part in parts {
        let part = part.scanned;
        out.survivors.extend(part.survivors);
        match (out.similarities.as_mut(), part.similarities) {
            (Some(Similarities::Exact(all)), Some(Similarities::Exact(values))) => {
                all.extend(values);
            }
            (Some(Similarities::Bounded(all)), Some(Similarities::Bounded(values))) => {
                all.extend(values);
            }
            _ => {}
        }
        out.bounds.extend(part.bounds);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use particles_model::parse_particle_json;
    use particles_rank::{NormKernel, RankSettings};

    use super::*;

    /// A set large enough for the scan to split across threads.
    fn big_set(rows: usize) -> CandidateSet {
        let mut set = CandidateSet::new();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for row in 0..rows {
            let json = format!(
                r#"{{"id": "p{row}", "content": "belief {row}", "confidence": {{"value": {}}},
                    "uncertainty_nature": "{}", "asserted_by": "test",
                    "asserted_at": "2025-01-01T00:00:00"}}"#,
                (row % 97) as f64 / 97.0,
                if row % 3 == 0 {
                    "ALEATORY"
                } else {
                    "EPISTEMIC"
                }
            );
            let particle = parse_particle_json(&json).unwrap().into_inner();
            let vector: Vec<f32> = (0..16)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect();
            set.push(row as i64 + 1, &particle, &vector, None);
        }
        set
    }

    #[test]
    fn shared_lanes_equal_lone_scans_across_threads() {
        let set = big_set(PARALLEL_SCAN_MIN * 2 + 123);
        let rows: Vec<usize> = (0..set.len()).collect();
        let policies = Policies::compile(&Default::default(), &RankSettings::default()).unwrap();
        let queries: Vec<QueryVector> = (0..3)
            .map(|q| {
                let values: Vec<f32> = (0..16)
                    .map(|i| ((i * 7 + q * 3) % 11) as f32 - 5.0)
                    .collect();
                QueryVector::new(values, NormKernel::SkylakeX)
            })
            .collect();
        let aleatory_only =
            |row: usize| -> Result<bool> { Ok(set.id(row).len() % 2 == 0 || row % 3 == 0) };
        let lanes: Vec<Lane<'_>> = vec![
            Lane {
                query: Some(&queries[0]),
                at_most_one: true,
                policies: &policies,
                keep: None,
            },
            Lane {
                query: Some(&queries[1]),
                at_most_one: true,
                policies: &policies,
                keep: Some(&aleatory_only),
            },
            Lane {
                query: None,
                at_most_one: false,
                policies: &policies,
                keep: None,
            },
            Lane {
                query: Some(&queries[2]),
                at_most_one: false,
                policies: &policies,
                keep: Some(&aleatory_only),
            },
        ];
        let shared = scan_lanes(&set, &rows, &lanes);
        for (lane, shared) in lanes.iter().zip(shared) {
            let alone = scan_candidates(
                &set,
                &rows,
                lane.query,
                lane.at_most_one,
                lane.policies,
                lane.keep,
            )
            .unwrap();
            let shared = shared.unwrap();
            assert_eq!(shared.survivors, alone.survivors);
            assert_eq!(shared.bounds, alone.bounds);
            assert_eq!(shared.similarities, alone.similarities);
            // And one thread's sequential pass agrees with the split one.
            let sequential: Vec<usize> = rows
                .iter()
                .copied()
                .filter(|&row| lane.keep.is_none_or(|keep| keep(row).unwrap()))
                .collect();
            assert_eq!(shared.survivors, sequential);
            if let Some(query) = lane.query {
                let direct: Vec<f64> = sequential
                    .iter()
                    .map(|&row| particles_rank::similarity(&set, row, query).unwrap())
                    .collect();
                assert_eq!(shared.similarities, Some(Similarities::Exact(direct)));
            }
        }
    }
}
