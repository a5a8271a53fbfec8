//! The truncation band: every candidate beyond the cut whose score can reach
//! `last − margin`, scored exactly once the cut is known.
//!
//! The truncation warning counts the candidates beyond the cut that score within
//! `truncation_near_margin` of the last hit, and reads the best of them. Pruning
//! the ranking's walk with that margin (below the k-th score) makes the walk score
//! them in bound order, batch by batch, with per-row hashing of their sources; on
//! a dense store that is half the candidates, and it dominated the response (843
//! against 157 ms at 1M). This pass scores the same candidates after the cut,
//! without ordering them: the rows whose bound reaches the band are picked from
//! the scan's bounds, their distinct sources are read once (from the connection's
//! memo while the file is unchanged), each source's trust and decay computed
//! once, and the rows scored on every core. At 1M (Intel Xeon, 2 cores, warm):
//! the ranking with the band 210-236 ms against 150 ms bare, where the walk took
//! 843 ms (`cargo run --release -p particles-query --example band_cost`). The
//! scores it returns
//! are those of the walk, bit for bit (the same functions), for every candidate
//! the warning can count or compare: one scoring below the band changes neither
//! the count nor whether the gap is too close.
//!
//! After a scan of the half-precision copy a band row has an interval of scores,
//! not a score. The warning needs two things of the band: how many score at least
//! its floor (`last − near_margin`), and the best score. A row whose interval lies
//! wholly on one side of the floor, and whose high end is below the best low end
//! met, is decided without its exact row: it is reported by its low end when that
//! is at least the floor (so it counts, and cannot exceed the best), and left out
//! otherwise. Only the rows an interval leaves undecided are read exactly: at 1M,
//! a few thousand of ~372k.

use std::collections::HashMap;

use particles_candidates::CandidateSet;
use particles_model::Timestamp;
use particles_rank::{Factors, Policies, QueryVector};
use particles_store::Store;

use particles_model::policy::SourceFacts;

use crate::{gather::SourceKey, scan::Similarities, Result, StageTimings};

/// Below this many band rows the scores are computed on one thread.
const PARALLEL_BAND_MIN: usize = 16_384;

/// Below this many sources their factors are computed on one thread.
const PARALLEL_SOURCES_MIN: usize = 2_048;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// What the band pass needs of one gather.
pub(crate) struct BandInput<'a> {
    pub(crate) store: &'a Store,
    pub(crate) set: &'a CandidateSet,
    pub(crate) policies: &'a Policies,
    pub(crate) now: Timestamp,
    pub(crate) min_confidence: f64,
    /// The scanned survivors (rows), in loader order.
    pub(crate) survivors: &'a [usize],
    /// Their similarities (parallel), with a query vector.
    pub(crate) similarities: Option<&'a Similarities>,
    /// The query vector, to read a row exactly where its interval cannot decide.
    pub(crate) query: Option<&'a QueryVector>,
    /// The warning's floor (`last − near_margin`), when known: a bounded row
    /// wholly above it counts without being read. `None` reads every bounded row.
    pub(crate) count_floor: Option<f64>,
    /// Their score bounds (parallel).
    pub(crate) bounds: &'a [f64],
    /// Positions (into `survivors`) of the hits in the cut: not beyond it.
    pub(crate) in_cut: &'a [usize],
    /// Every candidate whose bound is at least this (or NaN) is scored.
    pub(crate) floor: f64,
}

/// The band's scores (unordered) and what scoring them counted. A row decided
/// by its interval is here by its low end when that is at least the count's
/// floor, and absent otherwise: the warning's count and best score are those of
/// the exact scores.
pub(crate) struct Band {
    pub(crate) scores: Vec<f64>,
    pub(crate) scored: usize,
    pub(crate) below_min_confidence: usize,
    /// Rows whose exact `f32` vector was read because their interval could not
    /// decide.
    pub(crate) read_exactly: usize,
}

/// A band row scored from its similarity interval: its position, the score at
/// both ends, and its effective confidence.
struct Bounded {
    position: usize,
    low: f64,
    high: f64,
    effective: f64,
}

/// `(trust, decay)` of each source, split across the cores when there are many:
/// each is a pure function of its facts, the policies and `now`. The error is
/// the first failing source's, in order, as a sequential pass gives it.
fn source_factors(
    facts: &[std::sync::Arc<SourceFacts>],
    policies: &Policies,
    now: Timestamp,
) -> Result<Vec<(f64, f64)>> {
    let one = |part: &[std::sync::Arc<SourceFacts>]| -> Result<Vec<(f64, f64)>> {
        part.iter()
            .map(|facts| Ok(particles_rank::source_factors(facts, policies, now)?))
            .collect()
    };
    let parts =
        crate::cores::on_cores(
            facts.len(),
            PARALLEL_SOURCES_MIN,
            |range| one(&facts[range]),
        );
    let mut out = Vec::with_capacity(facts.len());
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// Scores every candidate beyond the cut whose bound reaches `floor`.
pub(crate) fn score_band(input: &BandInput<'_>, timings: &mut StageTimings) -> Result<Band> {
    let set = input.set;
    let mut in_cut = input.in_cut.to_vec();
    in_cut.sort_unstable();
    let positions: Vec<usize> = input
        .bounds
        .iter()
        .enumerate()
        .filter(|&(position, &bound)| {
            (bound >= input.floor || bound.is_nan()) && in_cut.binary_search(&position).is_err()
        })
        .map(|(position, _)| position)
        .collect();
    if positions.is_empty() {
        return Ok(Band {
            scores: Vec::new(),
            scored: 0,
            below_min_confidence: 0,
            read_exactly: 0,
        });
    }

    // Each row's source as a dense index into the distinct sources met, through
    // the set's own source index (built once per set). Candidates share sources
    // (~31k for ~372k band rows at 1M), so each source's facts are fetched, and
    // its trust and decay computed, once.
    let started = std::time::Instant::now();
    let index = set.source_index();
    let mut local = vec![u32::MAX; index.keys.len()];
    let mut keys: Vec<SourceKey> = Vec::new();
    let mut slots: Vec<u32> = Vec::new();
    let mut source_of: Vec<u32> = Vec::with_capacity(positions.len());
    let mut premise_ids: Vec<&str> = Vec::new();
    for &position in &positions {
        let row = input.survivors[position];
        let global = index.of_row[row];
        if local[global as usize] == u32::MAX {
            local[global as usize] = keys.len() as u32;
            keys.push(index.keys[global as usize]);
            slots.push(global);
        }
        source_of.push(local[global as usize]);
        if set.derived(row) {
            premise_ids.extend(set.premises(row).iter().map(String::as_str));
        }
    }
    // Fetched by the index's slots: the connection remembers them by slot too.
    let wanted: Vec<(u32, (&str, Option<&str>))> = keys
        .iter()
        .zip(&slots)
        .filter_map(|(key, &slot)| {
            key.map(|(entry, snapshot)| {
                (slot, (set.string(entry), snapshot.map(|s| set.string(s))))
            })
        })
        .collect();
    let mut fetched = particles_store::shared_source_facts_by_slot(
        input.store,
        index.id,
        index.keys.len(),
        &wanted,
    )?
    .into_iter();
    let facts: Vec<std::sync::Arc<SourceFacts>> = keys
        .iter()
        .map(|key| match key {
            None => std::sync::Arc::default(),
            Some(_) => fetched.next().unwrap_or_default(),
        })
        .collect();
    timings.source_rows += started.elapsed().as_secs_f64();
    let factors = source_factors(&facts, input.policies, input.now)?;
    let started = std::time::Instant::now();
    let premises = particles_store::premise_statuses(input.store, premise_ids)?;
    timings.support_discounts += started.elapsed().as_secs_f64();

    // The extractor weight depends on the extractor alone.
    let mut weights: FastMap<Option<u32>, f64> = FastMap::default();
    for &position in &positions {
        let extractor = set.traits(input.survivors[position]).extractor;
        weights.entry(extractor).or_insert_with(|| {
            input
                .policies
                .extractor_weight(extractor.map(|at| set.string(at)))
        });
    }

    let started = std::time::Instant::now();
    // Only what the threads read: the store's connection stays on this one.
    let (survivors, similarities, policies, min_confidence, query) = (
        input.survivors,
        input.similarities,
        input.policies,
        input.min_confidence,
        input.query,
    );
    let score = |part: &[usize], sources: &[u32]| -> (Vec<f64>, Vec<Bounded>, usize) {
        let mut scores = Vec::with_capacity(part.len());
        let mut bounded = Vec::new();
        let mut below = 0;
        for (&position, &source) in part.iter().zip(sources) {
            let row = survivors[position];
            let (source_trust, decay) = factors[source as usize];
            let extractor = set.extractor(row);
            let factors = Factors {
                extractor_weight: weights.get(&extractor).copied().unwrap_or(1.0),
                source_trust,
                decay,
                discount: particles_rank::stale_support_discount(set, row, &premises, policies),
            };
            let (low, high) = similarities.map_or((None, None), |s| {
                let (low, high) = s.interval(position, set, row, query);
                (Some(low), Some(high))
            });
            let exact = similarities.is_none_or(|s| s.is_exact(position));
            match particles_rank::score_with_similarity(
                set,
                row,
                &factors,
                low,
                min_confidence,
                policies,
            ) {
                Some(ranked) if exact => scores.push(ranked.score),
                Some(ranked) => bounded.push(Bounded {
                    position,
                    low: ranked.score,
                    high: policies.rank_score(
                        set.narrative(row),
                        high.unwrap_or(ranked.similarity),
                        ranked.effective_confidence,
                    ),
                    effective: ranked.effective_confidence,
                }),
                None => below += 1,
            }
        }
        (scores, bounded, below)
    };
    let parts = crate::cores::on_cores(positions.len(), PARALLEL_BAND_MIN, |range| {
        score(&positions[range.clone()], &source_of[range])
    });
    let mut band = Band {
        scores: Vec::with_capacity(positions.len()),
        scored: positions.len(),
        below_min_confidence: 0,
        read_exactly: 0,
    };
    let mut bounded = Vec::new();
    for (scores, rows, below) in parts {
        band.scores.extend(scores);
        bounded.extend(rows);
        band.below_min_confidence += below;
    }
    if !bounded.is_empty() {
        decide(input, &mut band, bounded)?;
    }
    timings.scoring += started.elapsed().as_secs_f64();
    Ok(band)
}

/// Settles the rows scored from intervals: reads exactly those that could be
/// the best score or could fall on either side of the count's floor, reports
/// the others by their low end when it counts (see [`Band`]).
fn decide(input: &BandInput<'_>, band: &mut Band, bounded: Vec<Bounded>) -> Result<()> {
    // The best low end met: no row whose high end is below it can be the best.
    let best_low = band
        .scores
        .iter()
        .chain(bounded.iter().map(|b| &b.low))
        .copied()
        .filter(|score| !score.is_nan())
        .fold(f64::NEG_INFINITY, f64::max);
    let undecided = |b: &Bounded| {
        b.low.is_nan()
            || b.high.is_nan()
            || b.high >= best_low
            || input
                .count_floor
                .is_none_or(|floor| floor.is_nan() || (b.low < floor && b.high >= floor))
    };
    let (read, settled): (Vec<Bounded>, Vec<Bounded>) = bounded.into_iter().partition(undecided);
    for b in settled {
        if input.count_floor.is_some_and(|floor| b.low >= floor) {
            band.scores.push(b.low);
        }
    }
    let Some(query) = input.query else {
        return Ok(());
    };
    band.read_exactly = read.len();
    let (set, survivors, policies) = (input.set, input.survivors, input.policies);
    let exact = |part: &[Bounded]| -> Result<Vec<f64>> {
        part.iter()
            .map(|b| {
                let row = survivors[b.position];
                let similarity = particles_rank::similarity(set, row, query)?;
                Ok(policies.rank_score(set.narrative(row), similarity, b.effective))
            })
            .collect()
    };
    for part in crate::cores::on_cores(read.len(), PARALLEL_BAND_MIN, |range| exact(&read[range])) {
        band.scores.extend(part?);
    }
    Ok(())
}
