//! Work split across the machine's cores: contiguous ranges, one task each on
//! a pool of threads that stay up, the results in range order. The scan and
//! the truncation band use it; a pass split this way computes every value as a
//! sequential pass does, so the split changes no bit.

use std::ops::Range;

/// At most this many threads, whatever the machine offers.
const MAX_THREADS: usize = 8;

/// How many threads a pass over `len` items uses: one below `min` (spawning
/// would cost more than it saves) or on a one-core machine, else one per core.
fn threads_for(len: usize, min: usize) -> usize {
    let threads = machine_threads();
    if threads < 2 || len < min {
        1
    } else {
        threads
    }
}

/// The machine's cores (at most [`MAX_THREADS`]), asked once per process:
/// `available_parallelism` reads the cgroup's quota files on Linux (two
/// `open`s and reads), which under load was 0.8% of a server's CPU when every
/// pass asked (measured, `perf record` at 80 questions a second, 100k).
fn machine_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(MAX_THREADS)
    })
}

/// `0..len` split into one contiguous range per thread [`on_cores`] would use:
/// for callers that hand each thread its own part of their buffers
/// ([`on_each`]).
pub(crate) fn ranges(len: usize, min: usize) -> Vec<Range<usize>> {
    let threads = threads_for(len, min);
    if threads == 1 || len == 0 {
        return std::iter::once(0..len).collect();
    }
    let chunk = len.div_ceil(threads);
    (0..len)
        .step_by(chunk)
        .map(|start| start..(start + chunk).min(len))
        .collect()
}

/// Runs `work` on each state: the last on this thread, the others on the
/// process's worker pool (rayon's, threads that stay up between queries), or
/// on this thread too when every worker is busy. Returns the results in state
/// order. A panic in a worker is resumed here.
pub(crate) fn on_each<S: Send, R: Send>(
    mut states: Vec<S>,
    work: impl Fn(S) -> R + Sync,
) -> Vec<R> {
    let Some(last) = states.pop() else {
        return Vec::new();
    };
    if states.is_empty() {
        return vec![work(last)];
    }
    let work = &work;
    let mut out: Vec<Option<R>> = states.iter().map(|_| None).collect();
    let mine = rayon::in_place_scope(|scope| {
        for (state, slot) in states.into_iter().zip(out.iter_mut()) {
            scope.spawn(move |_| *slot = Some(work(state)));
        }
        work(last)
    });
    let mut out: Vec<R> = out.into_iter().flatten().collect();
    out.push(mine);
    out
}

/// Runs `work` over `0..len` split into one contiguous range per core, or over
/// the whole range on this thread when `len` is below `min` (spawning would cost
/// more than it saves) or the machine has one core. Returns each range's result in
/// order. A panic in a worker is resumed here.
pub(crate) fn on_cores<R: Send>(
    len: usize,
    min: usize,
    work: impl Fn(Range<usize>) -> R + Sync,
) -> Vec<R> {
    on_each(ranges(len, min), work)
}

/// `values` cut into consecutive mutable parts of the ranges' lengths (the
/// ranges cover `0..values.len()` in order, as [`ranges`] gives them).
pub(crate) fn split_by<'a, T>(
    mut values: &'a mut [T],
    ranges: &[Range<usize>],
) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(ranges.len());
    for range in ranges {
        let taken = std::mem::take(&mut values);
        let at = range.len().min(taken.len());
        let (part, rest) = taken.split_at_mut(at);
        parts.push(part);
        values = rest;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_whole_in_order() {
        for (len, min) in [(0, 1), (5, 10), (10, 1), (10_001, 1), (3, 1)] {
            let ranges = on_cores(len, min, |range| range);
            let covered: Vec<usize> = ranges.into_iter().flatten().collect();
            assert_eq!(covered, (0..len).collect::<Vec<_>>(), "len {len}");
        }
    }

    #[test]
    fn each_state_runs_once_in_order() {
        let out = on_each((0..5).collect(), |state: usize| state * 10);
        assert_eq!(out, vec![0, 10, 20, 30, 40]);
        assert!(on_each(Vec::<usize>::new(), |s| s).is_empty());
    }

    #[test]
    fn buffers_split_by_the_ranges() {
        let mut values: Vec<usize> = (0..10).collect();
        let ranges = [0..4, 4..8, 8..10];
        let parts = split_by(&mut values, &ranges);
        let lengths: Vec<usize> = parts.iter().map(|p| p.len()).collect();
        assert_eq!(lengths, vec![4, 4, 2]);
        assert_eq!(parts[1][0], 4);
    }
}
