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

use std::collections::HashMap;

use particles_candidates::CandidateSet;
use particles_model::Timestamp;
use particles_rank::{Factors, Policies};
use particles_store::Store;

use particles_model::policy::SourceFacts;

use crate::{gather::SourceKey, Result, StageTimings};

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
    pub(crate) similarities: Option<&'a [f64]>,
    /// Their score bounds (parallel).
    pub(crate) bounds: &'a [f64],
    /// Positions (into `survivors`) of the hits in the cut: not beyond it.
    pub(crate) in_cut: &'a [usize],
    /// Every candidate whose bound is at least this (or NaN) is scored.
    pub(crate) floor: f64,
}

/// The band's exact scores (unordered) and what scoring them counted.
pub(crate) struct Band {
    pub(crate) scores: Vec<f64>,
    pub(crate) scored: usize,
    pub(crate) below_min_confidence: usize,
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
    let mut source_of: Vec<u32> = Vec::with_capacity(positions.len());
    let mut premise_ids: Vec<&str> = Vec::new();
    for &position in &positions {
        let row = input.survivors[position];
        let global = index.of_row[row] as usize;
        if local[global] == u32::MAX {
            local[global] = keys.len() as u32;
            keys.push(index.keys[global]);
        }
        source_of.push(local[global]);
        if set.traits(row).derived {
            premise_ids.extend(set.premises(row).iter().map(String::as_str));
        }
    }
    let refs: Vec<(&str, Option<&str>)> = keys
        .iter()
        .flatten()
        .map(|&(entry, snapshot)| (set.string(entry), snapshot.map(|s| set.string(s))))
        .collect();
    let mut fetched = particles_store::shared_source_facts(input.store, &refs)?.into_iter();
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
    let (survivors, similarities, policies, min_confidence) = (
        input.survivors,
        input.similarities,
        input.policies,
        input.min_confidence,
    );
    let score = |part: &[usize], sources: &[u32]| -> (Vec<f64>, usize) {
        let mut scores = Vec::with_capacity(part.len());
        let mut below = 0;
        for (&position, &source) in part.iter().zip(sources) {
            let row = survivors[position];
            let (source_trust, decay) = factors[source as usize];
            let extractor = set.traits(row).extractor;
            let factors = Factors {
                extractor_weight: weights.get(&extractor).copied().unwrap_or(1.0),
                source_trust,
                decay,
                discount: particles_rank::stale_support_discount(set, row, &premises, policies),
            };
            let similarity = similarities.map(|s| s[position]);
            match particles_rank::score_with_similarity(
                set,
                row,
                &factors,
                similarity,
                min_confidence,
                policies,
            ) {
                Some(ranked) => scores.push(ranked.score),
                None => below += 1,
            }
        }
        (scores, below)
    };
    let parts = crate::cores::on_cores(positions.len(), PARALLEL_BAND_MIN, |range| {
        score(&positions[range.clone()], &source_of[range])
    });
    timings.scoring += started.elapsed().as_secs_f64();
    let mut band = Band {
        scores: Vec::with_capacity(positions.len()),
        scored: positions.len(),
        below_min_confidence: 0,
    };
    for (scores, below) in parts {
        band.scores.extend(scores);
        band.below_min_confidence += below;
    }
    Ok(band)
}
