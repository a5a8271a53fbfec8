//! Work split across the machine's cores: contiguous ranges, one scoped thread
//! each, the results in range order. The scan and the truncation band use it; a
//! pass split this way computes every value as a sequential pass does, so the
//! split changes no bit.

use std::ops::Range;

/// At most this many threads, whatever the machine offers.
const MAX_THREADS: usize = 8;

/// Runs `work` over `0..len` split into one contiguous range per core, or over
/// the whole range on this thread when `len` is below `min` (spawning would cost
/// more than it saves) or the machine has one core. Returns each range's result in
/// order. A panic in a worker is resumed here.
pub(crate) fn on_cores<R: Send>(
    len: usize,
    min: usize,
    work: impl Fn(Range<usize>) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_THREADS);
    if threads < 2 || len < min {
        return vec![work(0..len)];
    }
    let chunk = len.div_ceil(threads);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..len)
            .step_by(chunk)
            .map(|start| scope.spawn(move || work(start..(start + chunk).min(len))))
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
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
}
