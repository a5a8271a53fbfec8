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
//!
//! Those two things are all the band returns of the rows at or above the floor:
//! their count and their best score ([`BeyondCut`]'s `counted`), not their
//! scores. At 1M a list was ~370k scores a question, written, copied into
//! fresh pages, and read again by the warning.

use std::collections::HashMap;

use particles_candidates::{scratch::Recycled, CandidateSet};
use particles_model::Timestamp;
use particles_rank::{Policies, QueryVector, SourceStatics};
use particles_store::Store;

use particles_model::policy::SourceFacts;

use crate::{
    memo::QueryMemo,
    outcome::{BeyondCut, Counted},
    scan::Similarities,
    Result, StageTimings,
};

mod rows;

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

/// The band's scores and what scoring them counted. With the count's floor,
/// a row that scores at least the floor is counted, not listed; a row decided
/// by its interval is counted by its low end when that is at least the floor,
/// and absent otherwise: the warning's count and best score are those of the
/// exact scores ([`BeyondCut`]).
pub(crate) struct Band {
    pub(crate) beyond: BeyondCut,
    pub(crate) scored: usize,
    pub(crate) below_min_confidence: usize,
    /// Rows whose exact `f32` vector was read because their interval could not
    /// decide.
    pub(crate) read_exactly: usize,
}

/// What a connection remembers of the band's sources across queries (in its
/// [`QueryMemo`]): each source slot's statics under one set's source index and
/// one set of settings.
#[derive(Default)]
pub(crate) struct BandMemo {
    owner: u64,
    settings: Option<particles_rank::RankSettings>,
    statics: Vec<Option<SourceStatics>>,
    rows: Option<rows::RowBounds>,
}

impl BandMemo {
    /// This memo, started over unless it is of `index`'s set under `settings`.
    fn of(
        &mut self,
        index: &particles_candidates::SourceIndex,
        settings: &particles_rank::RankSettings,
    ) -> &mut BandMemo {
        if self.owner != index.id || self.settings.as_ref() != Some(settings) {
            *self = BandMemo {
                owner: index.id,
                settings: Some(settings.clone()),
                statics: vec![None; index.keys.len()],
                rows: None,
            };
        }
        self
    }
}

/// The facts of the sources at `slots` of `index`, in order (the default facts
/// for a slot without a `SOURCE` ref).
fn facts_of(
    store: &Store,
    set: &CandidateSet,
    index: &particles_candidates::SourceIndex,
    slots: impl Iterator<Item = u32>,
) -> Result<Vec<std::sync::Arc<SourceFacts>>> {
    let slots: Vec<u32> = slots.collect();
    let wanted: Vec<(u32, (&str, Option<&str>))> = slots
        .iter()
        .filter_map(|&slot| {
            index.keys[slot as usize].map(|(entry, snapshot)| {
                (slot, (set.string(entry), snapshot.map(|s| set.string(s))))
            })
        })
        .collect();
    let mut fetched =
        particles_store::shared_source_facts_by_slot(store, index.id, index.keys.len(), &wanted)?
            .into_iter();
    Ok(slots
        .iter()
        .map(|&slot| match index.keys[slot as usize] {
            None => std::sync::Arc::default(),
            Some(_) => fetched.next().unwrap_or_default(),
        })
        .collect())
}

/// The extractor weights a thread met, by interned extractor: a store names few
/// extractors, so a short list read in order beats hashing each row's.
struct Weights<'a> {
    set: &'a CandidateSet,
    policies: &'a Policies,
    few: Vec<(Option<u32>, f64)>,
    many: FastMap<Option<u32>, f64>,
}

impl<'a> Weights<'a> {
    fn new(set: &'a CandidateSet, policies: &'a Policies) -> Weights<'a> {
        Weights {
            set,
            policies,
            few: Vec::new(),
            many: FastMap::default(),
        }
    }

    fn of(&mut self, extractor: Option<u32>) -> f64 {
        if let Some(&(_, weight)) = self.few.iter().find(|(e, _)| *e == extractor) {
            return weight;
        }
        if let Some(&weight) = self.many.get(&extractor) {
            return weight;
        }
        let weight = self
            .policies
            .extractor_weight(extractor.map(|at| self.set.string(at)));
        if self.few.len() < 16 {
            self.few.push((extractor, weight));
        } else {
            self.many.insert(extractor, weight);
        }
        weight
    }
}

/// A band row that may still have to be read exactly: its interval could hold
/// the best score beyond the cut (its high end reached the best low end met so
/// far), and whether its low end was already counted.
struct MaybeBest {
    position: usize,
    effective: f64,
    high: f64,
    counted: bool,
}

/// A row to read exactly: its position, its effective confidence, and whether
/// its low end was counted.
type ToRead = (usize, f64, bool);

/// One thread's share of the band: the scores settled so far (listed, or
/// counted at the floor), the rows to read exactly, the rows that might be the
/// best, and the best low end met.
struct Part {
    scores: Vec<f64>,
    /// Rows counted at the count's floor, not listed, and the best of what
    /// they were counted by.
    counted: usize,
    counted_best: f64,
    read: Vec<(usize, f64)>,
    maybe_best: Vec<MaybeBest>,
    best_low: f64,
    below_min_confidence: usize,
    /// Derived rows, scored once their premises' statuses are read.
    derived: Vec<usize>,
}

impl Part {
    /// A row counted at the count's floor by `score` (its exact score, or a
    /// low end at least the floor).
    #[inline]
    fn count(&mut self, score: f64) {
        self.counted += 1;
        if score > self.counted_best {
            self.counted_best = score;
        }
    }

    fn new() -> Part {
        Part {
            scores: Vec::new(),
            counted: 0,
            counted_best: f64::NEG_INFINITY,
            read: Vec::new(),
            maybe_best: Vec::new(),
            best_low: f64::NEG_INFINITY,
            below_min_confidence: 0,
            derived: Vec::new(),
        }
    }
}

/// Scores every candidate beyond the cut whose bound reaches `floor`.
///
/// Three passes, the first and last on every core:
///
/// 1. the band's positions (bound at least `floor`, not in the cut): a steady
///    row (its effective confidence known without its source) settled as it
///    is met, as pass 3 settles a row, and the others listed with the source
///    slots they name (the set's own `SourceIndex`);
/// 2. each named source's trust and decay, once per source (what they depend
///    on besides `now`, the connection remembers);
/// 3. each listed row scored with its source's factors, and settled: counted
///    when its score is at least the count's floor, listed when below; after a
///    half-precision scan, settled by its interval as it goes: counted by its
///    low end when the whole interval is at or above the count's floor, left
///    out when wholly below, read exactly when it straddles the floor; a row
///    whose high end reaches the best low end met so far is kept aside until
///    the best low end of the whole band is known, and read exactly if it
///    could be the best. Derived rows wait for their premises' statuses (one
///    statement).
pub(crate) fn score_band(input: &BandInput<'_>, timings: &mut StageTimings) -> Result<Band> {
    let mut in_cut = input.in_cut.to_vec();
    in_cut.sort_unstable();
    let index = input.set.source_index();

    // 1. With what the connection knows of the rows (`rows`); when it knows
    // nothing and the band is large beside the store's sources (it would read
    // most of them anyway), that is computed and the band picked again. A
    // steady row is settled as it is picked.
    let settle = Settle {
        policies: input.policies,
        similarities: input.similarities,
        count_floor: input.count_floor.filter(|floor| !floor.is_nan()),
        min_confidence: input.min_confidence,
    };
    let started = std::time::Instant::now();
    let remembered = rows::remembered(input.store, index, input.policies, input.now)?;
    let mut known = remembered.clone().unwrap_or_default();
    let mut picked = band_positions(input, index, &in_cut, &known, &settle);
    // The rows' bounds are the sources' time, not the scoring's.
    let mut computing = 0.0;
    if remembered.is_none() && picked.rows >= rows::MIN_BAND && picked.rows * 4 >= index.keys.len()
    {
        let computed = std::time::Instant::now();
        known = rows::compute(input.store, input.set, input.policies, input.now)?;
        computing = computed.elapsed().as_secs_f64();
        timings.source_rows += computing;
        if known.ceilings.is_some() || known.steady.is_some() {
            picked = band_positions(input, index, &in_cut, &known, &settle);
        }
    }
    timings.scoring += started.elapsed().as_secs_f64() - computing;
    let band_rows = picked.rows;
    if band_rows == 0 {
        return Ok(Band {
            beyond: BeyondCut::default(),
            scored: 0,
            below_min_confidence: 0,
            read_exactly: 0,
        });
    }

    // 2. Each named source's trust and decay. What they depend on besides
    // `now` (`SourceStatics`) the connection remembers by slot, for as long as
    // the file and the settings are unchanged; the facts of a source met for
    // the first time are fetched by slot (the connection remembers those too).
    let started = std::time::Instant::now();
    let slots = named_slots(&picked.named);
    let statics = source_statics(input.store, input.set, input.policies, index, &slots)?;
    timings.source_rows += started.elapsed().as_secs_f64();
    let factors = factors_by_slot(input, index, &slots, &statics, &picked.chunks)?;

    // 3. Score and settle the rows that are not steady, on every core. A
    // derived row's discount needs its premises' statuses (a store read):
    // derived rows are set aside, their premises read in one statement, and
    // scored after.
    let started = std::time::Instant::now();
    let scorer = Scorer {
        set: input.set,
        survivors: input.survivors,
        index,
        factors: &factors,
        policies: input.policies,
        query: input.query,
        settle,
    };
    let mut parts = picked.steady;
    if picked.chunks.iter().any(|chunk| !chunk.is_empty()) {
        parts.extend(crate::cores::on_each(picked.chunks, |positions| {
            scorer.score_chunk(&positions)
        }));
    }
    let derived: Vec<usize> = parts.iter_mut().flat_map(|p| p.derived.drain(..)).collect();
    if !derived.is_empty() {
        parts.push(scorer.score_derived(input.store, &derived)?);
    }
    let band = scorer.settle(parts, band_rows)?;
    timings.scoring += started.elapsed().as_secs_f64();
    Ok(band)
}

/// Reads and remembers, in `store`'s read transaction, the facts and statics
/// of every source of `set` under `policies`: what the first band after
/// another connection's commit would read and compute on a question's time
/// (at 1M, about 0.1 s). Returns how many sources the connection now
/// remembers, 0 when it does not remember (it can write, or no read
/// transaction is open).
pub(crate) fn warm_sources(
    store: &Store,
    set: &CandidateSet,
    policies: &Policies,
    now: Timestamp,
) -> Result<usize> {
    if store.with_remembered(|_: &mut QueryMemo| ())?.is_none() {
        return Ok(0);
    }
    // The rows' bounds read every source's statics first (`rows::compute`).
    rows::compute(store, set, policies, now)?;
    Ok(set.source_index().keys.len())
}

/// Every slot of `index`, in order.
fn all_slots(index: &particles_candidates::SourceIndex) -> Vec<u32> {
    (0..index.keys.len())
        .map(|slot| u32::try_from(slot).unwrap_or(u32::MAX))
        .collect()
}

/// What pass 1 picked: the band's rows that are not steady, one list per
/// thread in loader order, and the source slots they name (a bitmap); the
/// steady rows, already settled (one part per thread); and how many rows the
/// band has in all.
struct Picked {
    chunks: Vec<Recycled<usize>>,
    named: Vec<u64>,
    steady: Vec<Part>,
    rows: usize,
}

/// Pass 1: the band's positions, and each steady row settled as it is met
/// (its effective confidence is known without its source): the band's rows
/// are read once, and only the others are listed for passes 2 and 3. The
/// rows' traits are not read here: they are 32 bytes a row, read once, when
/// scoring.
fn band_positions(
    input: &BandInput<'_>,
    index: &particles_candidates::SourceIndex,
    in_cut: &[usize],
    known: &rows::Known,
    settle: &Settle<'_>,
) -> Picked {
    // Only what the threads read: the store's connection stays on this one.
    let (survivors, bounds, floor) = (input.survivors, input.bounds, input.floor);
    let (set, policies, similarities) = (input.set, input.policies, input.similarities);
    let columns = set.row_columns();
    // The score at a row's ceiling and its similarity's high end bounds its
    // score (`rows::ceilings_bound_scores`).
    let under_ceiling = |position: usize, row: usize| {
        let Some(ceilings) = known.ceilings.as_deref() else {
            return true;
        };
        let ceiling = f64::from(ceilings[row]);
        let similarity = similarities.map_or(ceiling, |s| s.high(position));
        let (_, narrative) = columns.bound_input(row);
        let bound = policies.rank_score(narrative, similarity, ceiling);
        bound >= floor || bound.is_nan()
    };
    let words = index.keys.len().div_ceil(64);
    let picked = crate::cores::on_cores(bounds.len(), PARALLEL_BAND_MIN, |range| {
        // Most rows are steady when any is (`rows::USEFUL_ONE_IN`).
        let mut positions: Recycled<usize> = if known.steady.is_some() {
            Recycled::default()
        } else {
            Recycled::with_capacity(range.len())
        };
        let mut named = vec![0u64; words];
        let mut steady = Part::new();
        let mut rows = 0usize;
        // Highest confidence first (loader order ascends by it): the best low
        // end met rises early, so few rows are kept aside as maybe the best.
        // The cut's positions are sorted, and so are the range's: one cursor
        // walks them side by side (a binary search a row was 60% of this
        // loop at 1M).
        let mut cut = in_cut.partition_point(|&at| at < range.end);
        for position in range.rev() {
            let bound = bounds[position];
            if !(bound >= floor || bound.is_nan()) {
                continue;
            }
            while cut > 0 && in_cut[cut - 1] > position {
                cut -= 1;
            }
            if cut > 0 && in_cut[cut - 1] == position {
                continue;
            }
            let row = survivors[position];
            if !under_ceiling(position, row) {
                continue;
            }
            rows += 1;
            if let Some(effective) = known.steady(row) {
                let (_, narrative) = columns.bound_input(row);
                settle.row(&mut steady, position, effective, narrative);
            } else {
                let slot = index.of_row[row] as usize;
                named[slot / 64] |= 1 << (slot % 64);
                positions.push(position);
            }
        }
        positions.reverse();
        (positions, named, steady, rows)
    });
    let mut out = Picked {
        chunks: Vec::with_capacity(picked.len()),
        named: vec![0u64; words],
        steady: Vec::with_capacity(picked.len()),
        rows: 0,
    };
    for (positions, part, steady, rows) in picked {
        for (word, bits) in out.named.iter_mut().zip(part) {
            *word |= bits;
        }
        out.chunks.push(positions);
        out.steady.push(steady);
        out.rows += rows;
    }
    out
}

/// The slots a bitmap names, in ascending order.
fn named_slots(named: &[u64]) -> Vec<u32> {
    named
        .iter()
        .enumerate()
        .flat_map(|(word, &bits)| {
            let mut bits = bits;
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let bit = bits.trailing_zeros();
                    bits &= bits - 1;
                    (word * 64) as u32 + bit
                })
            })
        })
        .collect()
}

/// Pass 2, first half: the statics of the sources at `slots` (in order), from
/// the connection's memo where it has them, else computed from their facts
/// (fetched by slot) and remembered.
fn source_statics(
    store: &Store,
    set: &CandidateSet,
    policies: &Policies,
    index: &particles_candidates::SourceIndex,
    slots: &[u32],
) -> Result<Vec<Option<SourceStatics>>> {
    let settings = &policies.settings;
    let remembered = store.with_remembered(|memo: &mut QueryMemo| {
        let memo = memo.band.of(index, settings);
        slots
            .iter()
            .map(|&slot| memo.statics.get(slot as usize).copied().flatten())
            .collect::<Vec<_>>()
    })?;
    let mut statics: Vec<Option<SourceStatics>> =
        remembered.unwrap_or_else(|| vec![None; slots.len()]);
    let missing: Vec<usize> = (0..slots.len())
        .filter(|&at| statics[at].is_none())
        .collect();
    if missing.is_empty() {
        return Ok(statics);
    }
    let facts = facts_of(store, set, index, missing.iter().map(|&at| slots[at]))?;
    let computed = crate::cores::on_cores(missing.len(), PARALLEL_SOURCES_MIN, |range| {
        facts[range]
            .iter()
            .map(|facts| SourceStatics::of(facts, policies))
            .collect::<Vec<_>>()
    });
    for (&at, one) in missing.iter().zip(computed.into_iter().flatten()) {
        statics[at] = Some(one);
    }
    store.with_remembered(|memo: &mut QueryMemo| {
        let memo = &mut memo.band;
        for &at in &missing {
            if let Some(slot) = memo.statics.get_mut(slots[at] as usize) {
                *slot = statics[at];
            }
        }
    })?;
    Ok(statics)
}

/// Pass 2, second half: each named source's `(trust, decay)` at `now`, by slot
/// (`(1, 1)` for the slots the band does not name).
///
/// # Errors
///
/// A failing source fails the query with the error of the first band row (in
/// loader order) that names one, as a sequential pass meets it.
fn factors_by_slot(
    input: &BandInput<'_>,
    index: &particles_candidates::SourceIndex,
    slots: &[u32],
    statics: &[Option<SourceStatics>],
    chunks: &[Recycled<usize>],
) -> Result<Vec<(f64, f64)>> {
    let now = input.now;
    let computed: Vec<std::result::Result<Option<(f64, f64)>, particles_rank::Error>> =
        crate::cores::on_cores(slots.len(), PARALLEL_SOURCES_MIN, |range| {
            statics[range]
                .iter()
                .map(|one| one.map_or(Ok(None), |one| one.factors(now)))
                .collect::<Vec<_>>()
        })
        .into_iter()
        .flatten()
        .collect();
    let mut factors = vec![(1.0, 1.0); index.keys.len()];
    let mut failed: Vec<u32> = Vec::new();
    for (&slot, result) in slots.iter().zip(&computed) {
        match result {
            Ok(Some(pair)) => factors[slot as usize] = *pair,
            Ok(None) | Err(_) => failed.push(slot),
        }
    }
    if !failed.is_empty() {
        for &position in chunks.iter().flat_map(|c| c.iter()) {
            let slot = index.of_row[input.survivors[position]];
            if failed.binary_search(&slot).is_ok() {
                let facts = facts_of(input.store, input.set, index, std::iter::once(slot))?;
                if let Some(facts) = facts.first() {
                    particles_rank::source_factors(facts, input.policies, now)?;
                }
            }
        }
    }
    Ok(factors)
}

/// How a band row is settled once its effective confidence is known (passes
/// 1 and 3), shared by every thread.
#[derive(Clone, Copy)]
struct Settle<'a> {
    policies: &'a Policies,
    similarities: Option<&'a Similarities>,
    /// The warning's floor, when known and a number.
    count_floor: Option<f64>,
    min_confidence: f64,
}

impl Settle<'_> {
    /// Band row `position`, of effective confidence `effective`, scored and,
    /// after a half-precision scan, settled by its interval: its score (or
    /// counted low end) counted or listed in `part`, or set aside in
    /// `part.read` or `part.maybe_best`, or left out.
    #[inline]
    fn row(&self, part: &mut Part, position: usize, effective: f64, narrative: bool) {
        let (policies, similarities) = (self.policies, self.similarities);
        let count_floor = self.count_floor;
        if effective < self.min_confidence {
            part.below_min_confidence += 1;
            return;
        }
        let exact = match similarities {
            None => Some(effective),
            Some(s) if s.is_exact(position) => Some(s.high(position)),
            Some(_) => None,
        };
        if let Some(similarity) = exact {
            let score = policies.rank_score(narrative, similarity, effective);
            if score > part.best_low {
                part.best_low = score;
            }
            if count_floor.is_some_and(|floor| score >= floor) {
                part.count(score);
            } else {
                part.scores.push(score);
            }
            return;
        }
        let Some(similarities) = similarities else {
            return;
        };
        let high = policies.rank_score(narrative, similarities.high(position), effective);
        // Wholly below the count's floor and below the best low end met: it is
        // neither counted nor the best, and its low end cannot raise the best.
        if count_floor.is_some_and(|floor| high < floor) && high < part.best_low {
            return;
        }
        let (low, _) = similarities.interval(position);
        let low = policies.rank_score(narrative, low, effective);
        if low > part.best_low {
            part.best_low = low;
        }
        let straddles = count_floor.is_none_or(|floor| low < floor && high >= floor);
        if low.is_nan() || high.is_nan() || straddles {
            part.read.push((position, effective));
            return;
        }
        let counted = count_floor.is_some_and(|floor| low >= floor);
        if counted {
            part.count(low);
        }
        if high >= part.best_low {
            part.maybe_best.push(MaybeBest {
                position,
                effective,
                high,
                counted,
            });
        }
    }
}

/// What pass 3 reads to score a band row that is not steady, shared by every
/// thread (the store's connection stays out of it: it is read on this thread
/// only).
struct Scorer<'a> {
    set: &'a CandidateSet,
    survivors: &'a [usize],
    index: &'a particles_candidates::SourceIndex,
    /// `(trust, decay)` by source slot.
    factors: &'a [(f64, f64)],
    policies: &'a Policies,
    query: Option<&'a QueryVector>,
    settle: Settle<'a>,
}

impl<'a> Scorer<'a> {
    fn weights(&self) -> Weights<'a> {
        Weights::new(self.set, self.policies)
    }

    /// One thread's band positions (none steady) scored, but for the derived
    /// rows, set aside in `Part::derived`.
    #[inline]
    fn score_chunk(&self, positions: &[usize]) -> Part {
        let mut part = Part::new();
        let mut weights = self.weights();
        // Highest confidence first, as pass 1 walks.
        for &position in positions.iter().rev() {
            if self.set.derived(self.survivors[position]) {
                part.derived.push(position);
            } else {
                self.score_row(&mut part, &mut weights, position, 1.0);
            }
        }
        part
    }

    /// The derived rows scored, on this thread, once their premises'
    /// statuses are read (one statement).
    fn score_derived(&self, store: &Store, derived: &[usize]) -> Result<Part> {
        let (set, survivors) = (self.set, self.survivors);
        let premises = particles_store::premise_statuses(
            store,
            derived
                .iter()
                .flat_map(|&position| set.premises(survivors[position]).iter().map(String::as_str)),
        )?;
        let mut part = Part::new();
        let mut weights = self.weights();
        for &position in derived {
            let discount = particles_rank::stale_support_discount(
                set,
                survivors[position],
                &premises,
                self.policies,
            );
            self.score_row(&mut part, &mut weights, position, discount);
        }
        Ok(part)
    }

    /// Band row `position` scored with its source's factors and settled
    /// ([`Settle::row`]).
    #[inline]
    fn score_row(
        &self,
        part: &mut Part,
        weights: &mut Weights<'_>,
        position: usize,
        discount: f64,
    ) {
        let (set, policies) = (self.set, self.policies);
        let row = self.survivors[position];
        let (source_trust, decay) = self.factors[self.index.of_row[row] as usize];
        // `score_with_similarity`'s arithmetic, taken apart so that the low end
        // is computed only for the rows that need it.
        let effective = particles_rank::effective_confidence(
            policies.capped_confidence(set.confidence(row), set.calibration_source(row)),
            weights.of(set.extractor(row)),
            source_trust,
            decay,
            discount,
        );
        self.settle
            .row(part, position, effective, set.narrative(row));
    }

    /// The band from the threads' parts: the rows set aside read exactly
    /// where they must be, and every score joined, counted at the count's
    /// floor or listed.
    fn settle(&self, mut parts: Vec<Part>, band_rows: usize) -> Result<Band> {
        let read = rows_to_read(&mut parts);
        let below_min_confidence = parts.iter().map(|p| p.below_min_confidence).sum();
        let floor = self.settle.count_floor;
        let mut counted = Counted {
            floor: floor.unwrap_or(f64::INFINITY),
            count: parts.iter().map(|p| p.counted).sum(),
            best: parts
                .iter()
                .map(|p| p.counted_best)
                .fold(f64::NEG_INFINITY, f64::max),
        };
        let mut scores: Vec<f64> =
            Vec::with_capacity(parts.iter().map(|p| p.scores.len()).sum::<usize>() + read.len());
        let mut read_exactly = 0;
        if let Some(query) = self.query.filter(|_| !read.is_empty()) {
            read_exactly = read.len();
            let scored: Vec<f64> = crate::cores::on_cores(read.len(), PARALLEL_BAND_MIN, |range| {
                self.exact_scores(&read[range], query)
            })
            .into_iter()
            .collect::<Result<Vec<Vec<f64>>>>()?
            .into_iter()
            .flatten()
            .collect();
            for (&(_, _, was_counted), score) in read.iter().zip(scored) {
                // A row counted by its low end stays counted (its score is at
                // least that end): the exact score can only raise the best
                // of the counted, as the low end it replaces was at most it.
                if floor.is_some_and(|floor| score >= floor) {
                    counted.count += usize::from(!was_counted);
                    counted.best = counted.best.max(score);
                } else {
                    counted.count -= usize::from(was_counted);
                    scores.push(score);
                }
            }
        }
        for part in parts {
            scores.extend(part.scores);
        }
        Ok(Band {
            beyond: BeyondCut { scores, counted },
            scored: band_rows,
            below_min_confidence,
            read_exactly,
        })
    }

    /// The exact scores of rows to read, from their `f32` vectors.
    fn exact_scores(&self, rows: &[ToRead], query: &QueryVector) -> Result<Vec<f64>> {
        rows.iter()
            .map(|&(position, effective, _)| {
                let row = self.survivors[position];
                let similarity = particles_rank::similarity(self.set, row, query)?;
                Ok(self
                    .policies
                    .rank_score(self.set.narrative(row), similarity, effective))
            })
            .collect()
    }
}

/// The rows left to read: those that straddle the floor, and those whose
/// interval reaches the band's best low end (the best score could be theirs).
fn rows_to_read(parts: &mut [Part]) -> Vec<ToRead> {
    let best_low = parts
        .iter()
        .map(|part| part.best_low)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut read: Vec<ToRead> = Vec::new();
    for part in parts.iter_mut() {
        read.extend(
            part.read
                .drain(..)
                .map(|(position, effective)| (position, effective, false)),
        );
        for maybe in part.maybe_best.drain(..) {
            if maybe.high >= best_low {
                read.push((maybe.position, maybe.effective, maybe.counted));
            }
        }
    }
    read
}
