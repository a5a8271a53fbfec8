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

use std::{ops::Range, sync::Arc};

use particles_candidates::{scratch::Recycled, CandidateSet, HalfView, PREFETCH_ROWS};
use particles_rank::{Policies, QueryVector};

use crate::{Error, Result};

/// Below this many candidates the scan runs on one thread: spawning costs more
/// than it saves. At 10k rows two threads already win (measured, the warm 10k
/// cell on 2 Xeon cores: the scan stage 1.3 ms on one thread, 1.0-1.1 ms on two).
const PARALLEL_SCAN_MIN: usize = 4_096;

/// What the scan keeps of each surviving candidate, in loader order.
pub(crate) struct Scanned {
    /// Shared by the lanes of a pass that keep the same rows.
    pub(crate) survivors: Arc<Recycled<usize>>,
    pub(crate) similarities: Option<Similarities>,
    pub(crate) bounds: Recycled<f64>,
}

/// Each survivor's cosine with the question (parallel to the survivors).
#[derive(Debug, PartialEq)]
pub(crate) enum Similarities {
    /// Read from the `f32` rows: the exact values.
    Exact(Recycled<f64>),
    /// Read from the half-precision copy: `[low, high]`, the interval's ends
    /// (`f32`s widened: exact). A row read exactly (no interval was sound)
    /// holds `[+inf, value]`: a low end is never above 1.
    Bounded(Recycled<[f32; 2]>),
}

impl Similarities {
    /// `(low, high)` of survivor `position`'s cosine.
    #[inline]
    pub(crate) fn interval(&self, position: usize) -> (f64, f64) {
        match self {
            Similarities::Exact(values) => (values[position], values[position]),
            Similarities::Bounded(bounds) => {
                let [low, high] = bounds[position];
                let high = f64::from(high);
                if low == f32::INFINITY {
                    return (high, high);
                }
                (f64::from(low), high)
            }
        }
    }

    /// The high end of survivor `position`'s cosine: its exact value where the
    /// scan read it exactly. Cheaper than [`Similarities::interval`], which
    /// computes the low end too.
    #[inline]
    pub(crate) fn high(&self, position: usize) -> f64 {
        match self {
            Similarities::Exact(values) => values[position],
            Similarities::Bounded(bounds) => f64::from(bounds[position][1]),
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
    /// Lanes of one group keep the same rows (the caller's promise: the same
    /// filters, or none): their filters run once per row and they share their
    /// survivors.
    pub(crate) filter_group: usize,
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
        filter_group: 0,
    };
    scan_lanes(set, rows, std::slice::from_ref(&lane))
        .pop()
        .unwrap_or_else(|| {
            Ok(Scanned {
                survivors: Arc::default(),
                similarities: query.map(|_| Similarities::Exact(Recycled::default())),
                bounds: Recycled::default(),
            })
        })
}

/// The half copy, when `lane` may read intervals from it: the set has one,
/// there is a question small enough for sound intervals, and a higher
/// similarity never lowers the score (so an interval bounds it).
fn half_for<'a>(set: &'a CandidateSet, lane: &Lane<'_>) -> Option<HalfView<'a>> {
    let query = lane.query?;
    if !query.has_intervals() || !lane.policies.settings.score_rises_with_similarity() {
        return None;
    }
    set.half()
}

/// Rows a block holds: the unit of the tiles' work and of the prefetch ahead.
/// The masks are `u32`s, one bit per row.
const BLOCK: usize = 32;

/// How each lane reads its similarities, fixed for the pass.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    /// No question: no similarity.
    Nothing,
    /// The exact `f32` rows, through tile `tile` (column `at` of its dots).
    Exact { tile: usize, at: usize },
    /// The half copy, through tile `tile` (column `at`), an interval per row.
    Half { tile: usize, at: usize },
}

/// The questions one tile computes with: all of one kind and one length (in
/// practice one tile of each kind at most; questions of another length get a
/// tile of their own, so each row is read as a lone scan reads it).
struct TileSpec<'a> {
    half: bool,
    len: usize,
    queries: Vec<&'a [f32]>,
}

/// A lane's similarities over the whole pass, written in place.
enum SimBuffer {
    None,
    Exact(Recycled<f64>),
    Bounded(Recycled<[f32; 2]>),
}

/// One thread's part of a lane's similarities.
enum SimPart<'a> {
    None,
    Exact(&'a mut [f64]),
    Bounded(&'a mut [[f32; 2]]),
}

/// What one thread writes: its part of every buffer, at its range's offset.
struct ThreadParts<'a> {
    rows: &'a [usize],
    /// Per filter group.
    survivors: Vec<&'a mut [usize]>,
    /// Per lane.
    similarities: Vec<SimPart<'a>>,
    bounds: Vec<&'a mut [f64]>,
}

/// What one thread reports: how many survivors each group kept, and each
/// lane's first filter error and first similarity error (kept apart: the
/// reference filters every candidate before it computes any similarity, so a
/// filter error anywhere wins over a similarity error).
struct ThreadOut {
    written: Vec<usize>,
    filter_error: Vec<Option<Error>>,
    similarity_error: Vec<Option<Error>>,
}

/// The shared pass: every lane over the same rows, each row's vector read once.
/// Returns each lane's result, in lane order.
///
/// Rows are taken a block at a time. First each filter group's filters mark the
/// rows it keeps; then one tile computes the dots of the block's marked rows
/// with every lane's question (the exact tile for the lanes that read `f32`
/// rows, the half tile for those that read the half copy), prefetching the
/// next block's rows; then each lane turns its dots into similarities and
/// bounds, in row order. Each thread writes its range's results in place, at
/// the range's offset, so joining the threads' parts moves nothing unless a
/// filter dropped rows. Every value is the one a lone scan of the row computes.
pub(crate) fn scan_lanes(
    set: &CandidateSet,
    rows: &[usize],
    lanes: &[Lane<'_>],
) -> Vec<Result<Scanned>> {
    let halves: Vec<Option<HalfView<'_>>> = lanes.iter().map(|lane| half_for(set, lane)).collect();
    let half = halves.iter().flatten().next().copied();
    let (tiles, reads) = plan_tiles(lanes, &halves);
    let (leaders, group_of) = filter_groups(lanes);

    let ranges = crate::cores::ranges(rows.len(), PARALLEL_SCAN_MIN);
    let mut buffers = Buffers::stale(rows.len(), leaders.len(), &reads);
    let parts = buffers.cut(rows, &ranges);
    let pass = Pass {
        set,
        columns: set.row_columns(),
        lanes,
        reads: &reads,
        group_of: &group_of,
        leaders: &leaders,
        half,
        half_tile: particles_candidates::half_tile_kernel(),
        any_exact: tiles.iter().any(|t| !t.half),
        any_half: tiles.iter().any(|t| t.half),
        tiles: &tiles,
    };
    let outs: Vec<ThreadOut> = crate::cores::on_each(parts, |part| pass.run(part));
    let kept = buffers.join(&ranges, &outs, &group_of);
    buffers.into_results(outs, &group_of, &kept)
}

/// Each lane's tile and column in its dots, and the tiles: one per kind and
/// question length met.
fn plan_tiles<'q>(
    lanes: &[Lane<'q>],
    halves: &[Option<HalfView<'_>>],
) -> (Vec<TileSpec<'q>>, Vec<Read>) {
    let mut tiles: Vec<TileSpec<'q>> = Vec::new();
    let reads: Vec<Read> = lanes
        .iter()
        .zip(halves)
        .map(|(lane, view)| {
            let Some(query) = lane.query else {
                return Read::Nothing;
            };
            let half = view.is_some();
            let values = query.values();
            let tile = match tiles
                .iter()
                .position(|t| t.half == half && t.len == values.len())
            {
                Some(tile) => tile,
                None => {
                    tiles.push(TileSpec {
                        half,
                        len: values.len(),
                        queries: Vec::new(),
                    });
                    tiles.len() - 1
                }
            };
            tiles[tile].queries.push(values);
            let at = tiles[tile].queries.len() - 1;
            if half {
                Read::Half { tile, at }
            } else {
                Read::Exact { tile, at }
            }
        })
        .collect();
    (tiles, reads)
}

/// Filter groups: each group's first lane (its leader), and each lane's group
/// index.
fn filter_groups(lanes: &[Lane<'_>]) -> (Vec<usize>, Vec<usize>) {
    let mut leaders: Vec<usize> = Vec::new();
    let group_of: Vec<usize> = lanes
        .iter()
        .enumerate()
        .map(|(at, lane)| {
            match leaders
                .iter()
                .position(|&leader| lanes[leader].filter_group == lane.filter_group)
            {
                Some(group) => group,
                None => {
                    leaders.push(at);
                    leaders.len() - 1
                }
            }
        })
        .collect();
    (leaders, group_of)
}

/// The pass's results over all its rows, each thread writing its range's part
/// in place: each group's survivors, each lane's similarities and bounds.
struct Buffers {
    /// Per filter group.
    survivors: Vec<Recycled<usize>>,
    /// Per lane.
    similarities: Vec<SimBuffer>,
    bounds: Vec<Recycled<f64>>,
}

impl Buffers {
    /// Buffers of `n` values from the previous queries (fresh ones would be new
    /// pages to fault in and zero: 8 MB each at 1M rows); each thread
    /// overwrites what it keeps and the rest is truncated.
    fn stale(n: usize, groups: usize, reads: &[Read]) -> Buffers {
        let survivors: Vec<Recycled<usize>> = (0..groups).map(|_| Recycled::stale(n)).collect();
        let similarities: Vec<SimBuffer> = reads
            .iter()
            .map(|read| match read {
                Read::Nothing => SimBuffer::None,
                Read::Exact { .. } => SimBuffer::Exact(Recycled::stale(n)),
                Read::Half { .. } => SimBuffer::Bounded(Recycled::stale(n)),
            })
            .collect();
        let bounds: Vec<Recycled<f64>> = reads.iter().map(|_| Recycled::stale(n)).collect();
        Buffers {
            survivors,
            similarities,
            bounds,
        }
    }

    /// Every buffer cut by the threads' ranges, then gathered per thread.
    fn cut<'b>(&'b mut self, rows: &'b [usize], ranges: &[Range<usize>]) -> Vec<ThreadParts<'b>> {
        let mut parts: Vec<ThreadParts<'_>> = ranges
            .iter()
            .map(|range| ThreadParts {
                rows: &rows[range.clone()],
                survivors: Vec::new(),
                similarities: Vec::new(),
                bounds: Vec::new(),
            })
            .collect();
        for buffer in &mut self.survivors {
            for (part, slice) in parts.iter_mut().zip(crate::cores::split_by(buffer, ranges)) {
                part.survivors.push(slice);
            }
        }
        for buffer in &mut self.similarities {
            let pieces: Vec<SimPart<'_>> = match buffer {
                SimBuffer::None => ranges.iter().map(|_| SimPart::None).collect(),
                SimBuffer::Exact(values) => crate::cores::split_by(values, ranges)
                    .into_iter()
                    .map(SimPart::Exact)
                    .collect(),
                SimBuffer::Bounded(values) => crate::cores::split_by(values, ranges)
                    .into_iter()
                    .map(SimPart::Bounded)
                    .collect(),
            };
            for (part, piece) in parts.iter_mut().zip(pieces) {
                part.similarities.push(piece);
            }
        }
        for buffer in &mut self.bounds {
            for (part, slice) in parts.iter_mut().zip(crate::cores::split_by(buffer, ranges)) {
                part.bounds.push(slice);
            }
        }
        parts
    }

    /// Join: each group's survivors (and its lanes' values) moved down where a
    /// thread kept fewer rows than its range holds; then truncated. Returns
    /// how many rows each group kept.
    fn join(
        &mut self,
        ranges: &[Range<usize>],
        outs: &[ThreadOut],
        group_of: &[usize],
    ) -> Vec<usize> {
        let mut kept = vec![0usize; self.survivors.len()];
        for (group, kept) in kept.iter_mut().enumerate() {
            let mut to = 0;
            for (range, out) in ranges.iter().zip(outs) {
                let count = out.written[group];
                if to != range.start {
                    let from = range.start..range.start + count;
                    self.survivors[group].copy_within(from.clone(), to);
                    for (lane, _) in group_of.iter().enumerate().filter(|(_, &g)| g == group) {
                        match &mut self.similarities[lane] {
                            SimBuffer::None => {}
                            SimBuffer::Exact(values) => values.copy_within(from.clone(), to),
                            SimBuffer::Bounded(values) => values.copy_within(from.clone(), to),
                        }
                        self.bounds[lane].copy_within(from.clone(), to);
                    }
                }
                to += count;
            }
            *kept = to;
            self.survivors[group].truncate(to);
        }
        kept
    }

    /// Each lane's result, in lane order: its first error, else its values cut
    /// to its group's `kept` rows.
    fn into_results(
        self,
        mut outs: Vec<ThreadOut>,
        group_of: &[usize],
        kept: &[usize],
    ) -> Vec<Result<Scanned>> {
        let survivors: Vec<Arc<Recycled<usize>>> =
            self.survivors.into_iter().map(Arc::new).collect();
        self.similarities
            .into_iter()
            .zip(self.bounds)
            .enumerate()
            .map(|(lane, (similarities, mut bounds))| {
                // The first thread (in row order) with an error holds the first
                // failing row's.
                for out in outs.iter_mut() {
                    if let Some(error) = out.filter_error[lane].take() {
                        return Err(error);
                    }
                }
                for out in outs.iter_mut() {
                    if let Some(error) = out.similarity_error[lane].take() {
                        return Err(error);
                    }
                }
                let group = group_of[lane];
                let count = kept[group];
                bounds.truncate(count);
                Ok(Scanned {
                    survivors: Arc::clone(&survivors[group]),
                    similarities: match similarities {
                        SimBuffer::None => None,
                        SimBuffer::Exact(mut values) => {
                            values.truncate(count);
                            Some(Similarities::Exact(values))
                        }
                        SimBuffer::Bounded(mut values) => {
                            values.truncate(count);
                            Some(Similarities::Bounded(values))
                        }
                    },
                    bounds,
                })
            })
            .collect()
    }
}

/// What every thread of one pass reads.
struct Pass<'a, 'l> {
    set: &'a CandidateSet,
    /// The set's norms (and more) resolved once, for the per-row loops.
    columns: particles_candidates::RowColumns<'a>,
    lanes: &'a [Lane<'l>],
    reads: &'a [Read],
    group_of: &'a [usize],
    leaders: &'a [usize],
    half: Option<HalfView<'a>>,
    half_tile: particles_candidates::HalfTile,
    /// Whether a tile reads the `f32` rows, whether one reads the half copy.
    any_exact: bool,
    any_half: bool,
    tiles: &'a [TileSpec<'a>],
}

/// One tile's work space in a thread: its dots and folds over a block, and which
/// rows of the block it took (bit i: row i).
struct TileWork {
    dots: Vec<f32>,
    folds: [u32; BLOCK],
    tiled: u32,
}

/// A lane's column of a tile's dots: column `at` of `width`.
#[derive(Clone, Copy)]
struct DotColumn<'w> {
    work: &'w TileWork,
    width: usize,
    at: usize,
}

impl DotColumn<'_> {
    /// Whether the tile took the row at block position `i`.
    #[inline(always)]
    fn tiled(&self, i: usize) -> bool {
        self.work.tiled & (1 << i) != 0
    }

    /// The lane's dot with the row at block position `i`.
    #[inline(always)]
    fn dot(&self, i: usize) -> f32 {
        self.work.dots[i * self.width + self.at]
    }

    /// The integrity fold of the row at block position `i` (an exact tile's).
    #[inline(always)]
    fn fold(&self, i: usize) -> u32 {
        self.work.folds[i]
    }
}

/// The element of the half copy's rows (`half::f16`, which only
/// `particles-candidates` depends on), named from the half tile's signature so
/// that a thread's lists of half rows can be typed.
trait TileRows {
    type Element;
}

impl<H> TileRows for fn(&[&[H]], &[&[H]], &[&[f32]], &mut [f32]) {
    type Element = H;
}

type HalfElement = <particles_candidates::HalfTile as TileRows>::Element;

/// The rows a tile reads over one block: the block positions it takes and
/// their vectors, and the first rows of the next block, for it to prefetch.
struct RowLists<'a> {
    picked: Vec<usize>,
    exact_rows: Vec<&'a [f32]>,
    half_rows: Vec<&'a [HalfElement]>,
    exact_ahead: Vec<&'a [f32]>,
    half_ahead: Vec<&'a [HalfElement]>,
}

/// One thread's work space, allocated once for its range and reused block
/// after block.
struct Scratch<'a> {
    /// Per filter group: whether a filter failed (the group keeps nothing
    /// more), and the block's rows it keeps (bit i: row i).
    group_failed: Vec<bool>,
    group_mask: Vec<u32>,
    /// Per filter group: the block's rows it keeps, with what every lane of
    /// the group reads of each (its norm, its half row's radius), gathered
    /// once for all the group's lanes.
    kept: Vec<GroupRows>,
    /// Per tile.
    work: Vec<TileWork>,
    lists: RowLists<'a>,
}

impl<'a> Pass<'a, '_> {
    /// One thread's range, block by block: the filters, the tiles, each lane's
    /// similarities and bounds, the groups' survivors.
    fn run(&self, mut part: ThreadParts<'_>) -> ThreadOut {
        let rows = part.rows;
        let mut out = ThreadOut {
            written: vec![0; self.leaders.len()],
            filter_error: self.lanes.iter().map(|_| None).collect(),
            similarity_error: self.lanes.iter().map(|_| None).collect(),
        };
        let mut scratch = self.scratch();
        for (at, block) in rows.chunks(BLOCK).enumerate() {
            let next = rows.iter().skip((at + 1) * BLOCK).take(PREFETCH_ROWS);
            self.look_ahead(next, &mut scratch.lists);
            self.filter_block(block, &mut scratch, &mut out);
            self.run_tiles(block, &mut scratch, &out);
            self.gather_kept(block, &mut scratch);
            for lane in 0..self.lanes.len() {
                self.lane_block(lane, &scratch, &mut part, &mut out);
            }
            write_survivors(block, &scratch.group_mask, &mut part, &mut out);
        }
        out
    }

    /// A thread's work space, empty.
    fn scratch(&self) -> Scratch<'a> {
        Scratch {
            group_failed: vec![false; self.leaders.len()],
            group_mask: vec![0u32; self.leaders.len()],
            kept: vec![GroupRows::default(); self.leaders.len()],
            work: self
                .tiles
                .iter()
                .map(|tile| TileWork {
                    dots: vec![0.0; BLOCK * tile.queries.len()],
                    folds: [0; BLOCK],
                    tiled: 0,
                })
                .collect(),
            lists: RowLists {
                picked: Vec::with_capacity(BLOCK),
                exact_rows: Vec::with_capacity(BLOCK),
                half_rows: Vec::with_capacity(BLOCK),
                exact_ahead: Vec::with_capacity(PREFETCH_ROWS),
                half_ahead: Vec::with_capacity(PREFETCH_ROWS),
            },
        }
    }

    /// The vectors of `next` (the next block's first rows), for the tiles to
    /// prefetch: `f32` rows if a tile reads them, half rows if one reads those.
    #[inline(always)]
    fn look_ahead<'r>(
        &self,
        next: impl Iterator<Item = &'r usize> + Clone,
        lists: &mut RowLists<'a>,
    ) {
        lists.exact_ahead.clear();
        lists.half_ahead.clear();
        if self.any_exact {
            let set = self.set;
            lists
                .exact_ahead
                .extend(next.clone().map(|&row| set.vector(row)));
        }
        if let (true, Some(view)) = (self.any_half, self.half.as_ref()) {
            lists.half_ahead.extend(next.map(|&row| view.vector(row)));
        }
    }

    /// Each group's filters, in row order, once for all its lanes. A group
    /// that failed a filter keeps nothing more; a lane that failed a
    /// similarity reads nothing more (its group still filters, for the others
    /// and for a filter error further on).
    #[inline(always)]
    fn filter_block(&self, block: &[usize], scratch: &mut Scratch<'_>, out: &mut ThreadOut) {
        let full = if block.len() >= 32 {
            u32::MAX
        } else {
            (1u32 << block.len()) - 1
        };
        for (group, &leader) in self.leaders.iter().enumerate() {
            scratch.group_mask[group] = 0;
            if scratch.group_failed[group] {
                continue;
            }
            let Some(keep) = self.lanes[leader].keep else {
                scratch.group_mask[group] = full;
                continue;
            };
            let mut mask = 0u32;
            for (i, &row) in block.iter().enumerate() {
                match keep(row) {
                    Ok(true) => mask |= 1 << i,
                    Ok(false) => {}
                    Err(_) => {
                        // Each lane of the group reports its own filter's
                        // error for this row.
                        scratch.group_failed[group] = true;
                        for (lane, _) in self.lanes_of(group) {
                            out.filter_error[lane] =
                                self.lanes[lane].keep.and_then(|keep| keep(row).err());
                        }
                        mask = 0;
                        break;
                    }
                }
            }
            scratch.group_mask[group] = mask;
        }
    }

    /// The block's rows lane `lane` reads (bit i: row i): its group's, unless
    /// the lane failed.
    #[inline(always)]
    fn lane_mask(&self, lane: usize, group_mask: &[u32], out: &ThreadOut) -> u32 {
        if out.similarity_error[lane].is_some() || out.filter_error[lane].is_some() {
            0
        } else {
            group_mask[self.group_of[lane]]
        }
    }

    /// The tiles, each over the rows its lanes kept.
    #[inline(always)]
    fn run_tiles(&self, block: &[usize], scratch: &mut Scratch<'a>, out: &ThreadOut) {
        for (spec_at, (spec, work)) in self.tiles.iter().zip(&mut scratch.work).enumerate() {
            let mut want = 0u32;
            for (lane, read) in self.reads.iter().enumerate() {
                if let Read::Exact { tile, .. } | Read::Half { tile, .. } = *read {
                    if tile == spec_at {
                        want |= self.lane_mask(lane, &scratch.group_mask, out);
                    }
                }
            }
            work.tiled = 0;
            if want != 0 {
                self.run_tile(spec, work, want, block, &mut scratch.lists);
            }
        }
    }

    /// One tile's dots and folds over the rows of `block` that `want` marks,
    /// at their block positions (`work.tiled` says which it took).
    #[inline(always)]
    fn run_tile(
        &self,
        spec: &TileSpec<'_>,
        work: &mut TileWork,
        want: u32,
        block: &[usize],
        lists: &mut RowLists<'a>,
    ) {
        let width = spec.queries.len();
        let picked = &mut lists.picked;
        picked.clear();
        if spec.half {
            let Some(view) = self.half.as_ref() else {
                return;
            };
            let rows = &mut lists.half_rows;
            if whole_block(block, want) {
                rows.clear();
                rows.extend(block.iter().map(|&row| view.vector(row)));
                if rows.iter().all(|vector| vector.len() == spec.len) {
                    // Every row's dots, at its block position: nothing to
                    // spread. The dots of the rows nobody wants are never
                    // read (`tiled` marks only the wanted).
                    (self.half_tile)(
                        rows,
                        &lists.half_ahead,
                        &spec.queries,
                        &mut work.dots[..block.len() * width],
                    );
                    work.tiled = want;
                    return;
                }
            }
            pick_rows(block, want, spec.len, |row| view.vector(row), picked, rows);
            (self.half_tile)(
                rows,
                &lists.half_ahead,
                &spec.queries,
                &mut work.dots[..picked.len() * width],
            );
        } else {
            let (set, rows) = (self.set, &mut lists.exact_rows);
            pick_rows(block, want, spec.len, |row| set.vector(row), picked, rows);
            particles_candidates::einsum_tile_checked(
                rows,
                &lists.exact_ahead,
                &spec.queries,
                &mut work.dots[..picked.len() * width],
                &mut work.folds[..picked.len()],
            );
        }
        // Spread to block positions, last first so nothing is
        // overwritten before it moves.
        for (k, &i) in picked.iter().enumerate().rev() {
            work.tiled |= 1 << i;
            if k != i {
                work.dots.copy_within(k * width..(k + 1) * width, i * width);
                work.folds[i] = work.folds[k];
            }
        }
    }

    /// Each filter group's kept rows of `block`, with their norms and radii
    /// ([`GroupRows`]).
    #[inline(always)]
    fn gather_kept(&self, block: &[usize], scratch: &mut Scratch<'_>) {
        for (kept, &mask) in scratch.kept.iter_mut().zip(&scratch.group_mask) {
            let m = kept_rows_of(block, mask, &mut kept.rows, &mut kept.at_block);
            kept.len = m;
            for (norm, &row) in kept.norms.iter_mut().zip(&kept.rows[..m]) {
                *norm = self.columns.norm(row);
            }
            if let Some(view) = self.half.as_ref() {
                for (radius, &row) in kept.radii.iter_mut().zip(&kept.rows[..m]) {
                    *radius = view.radius(row);
                }
            }
        }
    }

    /// Lane `lane`'s similarities and bounds, in row order, at its group's next
    /// positions.
    #[inline(always)]
    fn lane_block(
        &self,
        lane: usize,
        scratch: &Scratch<'_>,
        part: &mut ThreadParts<'_>,
        out: &mut ThreadOut,
    ) {
        let mask = self.lane_mask(lane, &scratch.group_mask, out);
        if mask == 0 {
            return;
        }
        let spec = &self.lanes[lane];
        let base = out.written[self.group_of[lane]];
        // The lane reads its group's rows (its mask is the group's).
        let kept = &scratch.kept[self.group_of[lane]];
        let m = kept.len;
        let mut values = [0.0f64; BLOCK];
        let error = &mut out.similarity_error[lane];
        // How many of the kept rows were read (all, unless one failed).
        let read = match (self.reads[lane], spec.query) {
            (Read::Nothing, _) | (_, None) => m,
            (Read::Exact { tile, at }, Some(query)) => {
                let SimPart::Exact(sims) = &mut part.similarities[lane] else {
                    return;
                };
                let column = self.column(&scratch.work, tile, at);
                let read = self.exact_values(query, column, kept, &mut values, error);
                sims[base..base + read].copy_from_slice(&values[..read]);
                read
            }
            (Read::Half { tile, at }, Some(query)) => {
                let SimPart::Bounded(sims) = &mut part.similarities[lane] else {
                    return;
                };
                let column = self.column(&scratch.work, tile, at);
                let sims = &mut sims[base..];
                self.half_values(query, column, kept, &mut values, sims, error)
            }
        };
        // The bounds, from the interval's high end where there is one:
        // the score rises with the similarity, so it bounds the exact
        // score too.
        particles_rank::score_bounds(
            &self.columns,
            &kept.rows[..read],
            spec.query.map(|_| &values[..read]),
            spec.at_most_one,
            spec.policies,
            &mut part.bounds[lane][base..base + read],
        );
    }

    /// Column `at` of tile `tile`'s dots in a thread's `work`.
    #[inline(always)]
    fn column<'w>(&self, work: &'w [TileWork], tile: usize, at: usize) -> DotColumn<'w> {
        DotColumn {
            work: &work[tile],
            width: self.tiles[tile].queries.len(),
            at,
        }
    }

    /// The exact similarities of the kept rows from their dots in an exact
    /// tile's `column`, into `values`: the integrity check of every
    /// row the tile read, and a lone read of any row it did not take. Returns
    /// how many were read: all, unless one failed (its error in `error`).
    #[inline(always)]
    fn exact_values(
        &self,
        query: &QueryVector,
        column: DotColumn<'_>,
        kept: &GroupRows,
        values: &mut [f64; BLOCK],
        error: &mut Option<Error>,
    ) -> usize {
        let set = self.set;
        let m = kept.len;
        let (kept_rows, at_block, norms) = (&kept.rows[..m], &kept.at_block[..m], &kept.norms);
        let mut dots = [0.0f32; BLOCK];
        for (j, &i) in at_block.iter().enumerate() {
            dots[j] = column.dot(i);
        }
        query.cosines_from_dots(&dots[..m], &norms[..m], &mut values[..m]);
        for (j, (&row, &i)) in kept_rows.iter().zip(at_block).enumerate() {
            let checked = if column.tiled(i) {
                let sum = column.fold(i).wrapping_add(norms[j].to_bits());
                if sum == set.check(row) {
                    Ok(values[j])
                } else {
                    particles_rank::similarity_from_dot(set, row, query, dots[j], column.fold(i))
                }
            } else {
                particles_rank::similarity(set, row, query)
            };
            match checked {
                Ok(value) => values[j] = value,
                Err(e) => {
                    *error = Some(e.into());
                    return j;
                }
            }
        }
        m
    }

    /// The intervals of the kept rows from their dots in a half tile's
    /// `column`: each row's `[dot, high]` into `sims` and its high end
    /// into `values`, or, where no interval is sound, the row read exactly.
    /// Returns how many were read: all, unless one failed (its error in
    /// `error`).
    #[inline(always)]
    fn half_values(
        &self,
        query: &QueryVector,
        column: DotColumn<'_>,
        kept: &GroupRows,
        values: &mut [f64; BLOCK],
        sims: &mut [[f32; 2]],
        error: &mut Option<Error>,
    ) -> usize {
        let set = self.set;
        let m = kept.len;
        let (kept_rows, at_block, norms) = (&kept.rows[..m], &kept.at_block[..m], &kept.norms);
        let mut dots = [0.0f32; BLOCK];
        let mut radii = [f32::NAN; BLOCK];
        for (j, &i) in at_block.iter().enumerate() {
            if column.tiled(i) {
                dots[j] = column.dot(i);
                radii[j] = kept.radii[j];
            }
        }
        // NaN: no sound interval (a NaN radius, a row the tile did not take):
        // the row is read exactly.
        let mut lows = [0.0f32; BLOCK];
        query.similarity_ends_many(
            &dots[..m],
            &radii[..m],
            &norms[..m],
            &mut values[..m],
            &mut lows[..m],
        );
        for (j, &row) in kept_rows.iter().enumerate() {
            let high = values[j];
            // Values are f32 widened, so the narrowing is exact.
            let pair = if high.is_nan() {
                match particles_rank::similarity(set, row, query) {
                    Ok(value) => {
                        values[j] = value;
                        // Marked as exact by a dot no half row gives.
                        [f32::INFINITY, value as f32]
                    }
                    Err(e) => {
                        *error = Some(e.into());
                        return j;
                    }
                }
            } else {
                // A cosine is clamped to 0..=1, so 0 bounds it from below
                // whenever no tighter end is sound.
                let low = if lows[j].is_nan() { 0.0 } else { lows[j] };
                [low, high as f32]
            };
            sims[j] = pair;
        }
        m
    }

    /// The lanes of filter group `group`, with their index.
    fn lanes_of(&self, group: usize) -> impl Iterator<Item = (usize, &Lane<'_>)> {
        self.lanes
            .iter()
            .enumerate()
            .filter(move |(lane, _)| self.group_of[*lane] == group)
    }
}

/// The rows of a block a filter group keeps, in row order, their positions in
/// the block, and each one's norm and half row radius: what every lane of the
/// group reads per row, gathered once a block rather than once a lane (a
/// batch's shared pass has up to 16 lanes in one group).
#[derive(Clone, Copy)]
struct GroupRows {
    len: usize,
    rows: [usize; BLOCK],
    at_block: [usize; BLOCK],
    norms: [f32; BLOCK],
    /// NaN without a half copy (no interval).
    radii: [f32; BLOCK],
}

impl Default for GroupRows {
    fn default() -> GroupRows {
        GroupRows {
            len: 0,
            rows: [0; BLOCK],
            at_block: [0; BLOCK],
            norms: [0.0; BLOCK],
            radii: [f32::NAN; BLOCK],
        }
    }
}

/// The rows of `block` that `mask` marks (bit i: row i) into `rows`, in row
/// order, and their block positions into `at_block`. Returns how many.
#[inline(always)]
fn kept_rows_of(
    block: &[usize],
    mask: u32,
    rows: &mut [usize; BLOCK],
    at_block: &mut [usize; BLOCK],
) -> usize {
    let mut m = 0;
    let mut bits = mask;
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        rows[m] = block[i];
        at_block[m] = i;
        m += 1;
    }
    m
}

/// Whether a half tile reads all of `block`, the rows `want` leaves out
/// included: the block's rows are consecutive rows of the set (an unfiltered
/// scan, or one whose filters keep most rows, of a set in order), so their
/// half rows sit back to back and the tile streams them row after row. Read
/// only the wanted ones, a single row left out would break the run, and the
/// tile would read the block side by side at well under half the speed: the
/// benchmark's 100k store had a row left out of two blocks in three, by the
/// filters every question applies. Half the block wanted or fewer, the
/// wanted rows alone are read.
#[inline(always)]
fn whole_block(block: &[usize], want: u32) -> bool {
    want.count_ones() as usize * 2 > block.len()
        && block.windows(2).all(|pair| pair[1] == pair[0] + 1)
}

/// The block positions in `want` whose vector has the tile's length `len`,
/// into `picked`, and their vectors into `rows`.
#[inline(always)]
fn pick_rows<'v, T>(
    block: &[usize],
    want: u32,
    len: usize,
    vector: impl Fn(usize) -> &'v [T],
    picked: &mut Vec<usize>,
    rows: &mut Vec<&'v [T]>,
) {
    rows.clear();
    for (i, &row) in block.iter().enumerate() {
        let vector = vector(row);
        if want & (1 << i) != 0 && vector.len() == len {
            picked.push(i);
            rows.push(vector);
        }
    }
}

/// The groups' survivors of the block, at their next positions.
#[inline(always)]
fn write_survivors(
    block: &[usize],
    group_mask: &[u32],
    part: &mut ThreadParts<'_>,
    out: &mut ThreadOut,
) {
    for (group, &mask) in group_mask.iter().enumerate() {
        let survivors = &mut *part.survivors[group];
        let mut k = out.written[group];
        let mut bits = mask;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            survivors[k] = block[i];
            k += 1;
        }
        out.written[group] = k;
    }
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
        let aleatory_only = |row: usize| -> Result<bool> {
            Ok(set.id(row).len().is_multiple_of(2) || row.is_multiple_of(3))
        };
        let lanes: Vec<Lane<'_>> = vec![
            Lane {
                query: Some(&queries[0]),
                at_most_one: true,
                policies: &policies,
                keep: None,
                filter_group: 0,
            },
            Lane {
                query: Some(&queries[1]),
                at_most_one: true,
                policies: &policies,
                keep: Some(&aleatory_only),
                filter_group: 1,
            },
            Lane {
                query: None,
                at_most_one: false,
                policies: &policies,
                keep: None,
                filter_group: 0,
            },
            Lane {
                query: Some(&queries[2]),
                at_most_one: false,
                policies: &policies,
                keep: Some(&aleatory_only),
                filter_group: 1,
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
            assert_eq!(**shared.survivors, sequential);
            if let Some(query) = lane.query {
                let direct: Vec<f64> = sequential
                    .iter()
                    .map(|&row| particles_rank::similarity(&set, row, query).unwrap())
                    .collect();
                assert_eq!(
                    shared.similarities,
                    Some(Similarities::Exact(direct.into()))
                );
            }
        }
    }
}
