//! Many dot products per call: a block of rows against several questions.
//!
//! A scan calls one dot kernel per row and question. Two things then bound it
//! well below the memory's speed:
//!
//! - the exact kernel (einsum's order) is one chain of dependent adds per row:
//!   96 steps of an add's latency each, with nothing else to overlap;
//! - a shared pass (several questions at once) reads each row from memory once
//!   but still converts and multiplies it once per question, in a separate call.
//!
//! A *tile* runs several independent chains at once: `R` rows × `L` questions,
//! each chain in its own register. Each row is loaded (and, for the half copy,
//! converted) once per step for every question of the tile, and each question's
//! values once per step for every row. Measured on 2 Xeon cores at 1M rows of
//! the half copy: one question 41 → 39 ms; 4 questions 48 ms and 8 questions
//! 60 ms against 4 × 41 and 8 × 41 one at a time (a C model of these loops,
//! `docs/benchmarks/query-latency.md`).
//!
//! The exact tile keeps einsum's order *within* each chain (four lanes, blocks
//! of 16 visited as sub-blocks 3, 2, 1, 0, the zero-padded tail, lanes summed
//! `(l0 + l1) + (l2 + l3)`, multiply and add unfused), so every dot it returns
//! is bit for bit [`crate::einsum_dot`] of that row and question; only which
//! chains run side by side changes. The half tile's order is free: the row's
//! radius covers any summation order (`half.rs`). A block of rows adjacent in
//! memory it reads row after row instead, a row's chains being its questions',
//! two per question (see `adjacent`).

use half::f16;

/// Questions a tile holds at most; more are taken in groups of this many.
const GROUP: usize = 4;

/// How many rows ahead of a tile's own the tiles prefetch: far enough that a
/// row's lines arrive before the tile reaches it (measured on 2 Xeon cores at
/// 1M half rows, when the half tile still read 4 rows side by side: 52 ms
/// without, 39 ms with 8 rows ahead), near enough that they are still in the
/// cache when it does. A half tile over adjacent rows prefetches nothing
/// (`adjacent`).
pub const PREFETCH_ROWS: usize = 8;

/// Row `at` of `rows` followed by `ahead`, or an empty slice past both.
fn row_at<'a, T>(rows: &[&'a [T]], ahead: &[&'a [T]], at: usize) -> &'a [T] {
    match rows.get(at) {
        Some(row) => row,
        None => ahead.get(at - rows.len()).copied().unwrap_or(&[]),
    }
}

/// `dots[r * queries.len() + q] = einsum_dot(rows[r], queries[q])` and
/// `folds[r] = fold_bits(rows[r])` (the row's integrity sum, from the same
/// loads), for rows and questions of one length. Where lengths differ, or the
/// output slices are too short, every pair is computed one by one with
/// [`crate::einsum_dot_checked`], with the same results.
///
/// `ahead` are the rows the caller reads next (the next block's): while a tile
/// computes, the rows [`PREFETCH_ROWS`] after its own, in `rows` then `ahead`,
/// are asked into the caches, a line per step, so their loads overlap the
/// arithmetic instead of waiting for it.
pub fn einsum_tile_checked(
    rows: &[&[f32]],
    ahead: &[&[f32]],
    queries: &[&[f32]],
    dots: &mut [f32],
    folds: &mut [u32],
) {
    let nq = queries.len();
    let n = queries.first().map_or(0, |q| q.len());
    let uniform = rows.iter().all(|r| r.len() == n) && queries.iter().all(|q| q.len() == n);
    if !uniform || dots.len() < rows.len() * nq || folds.len() < rows.len() {
        for (r, row) in rows.iter().enumerate() {
            for (q, query) in queries.iter().enumerate() {
                let (dot, fold) = crate::einsum_dot_checked(row, query);
                if let Some(slot) = dots.get_mut(r * nq + q) {
                    *slot = dot;
                }
                if let Some(slot) = folds.get_mut(r) {
                    *slot = fold;
                }
            }
            if nq == 0 {
                if let Some(slot) = folds.get_mut(r) {
                    *slot = crate::fold_bits(row);
                }
            }
        }
        return;
    }
    if nq == 0 {
        for (row, fold) in rows.iter().zip(folds.iter_mut()) {
            *fold = crate::fold_bits(row);
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let mut q0 = 0;
        while q0 < nq {
            let g = (nq - q0).min(GROUP);
            let tile = Tile {
                rows,
                // The first group reads the rows from memory; the others find
                // them in the caches.
                ahead: if q0 == 0 { ahead } else { &[] },
                queries: &queries[q0..q0 + g],
                n,
                stride: nq,
                column: q0,
            };
            // SSE2 is the x86-64 baseline. The tile reads `n` values of each row
            // and question, which all hold exactly `n` (checked above), and
            // writes inside `dots` (at least `rows × nq` long) and `folds`.
            match g {
                1 => {
                    let done = tile.exact::<4, 1>(0, dots, folds);
                    let done = tile.exact::<2, 1>(done, dots, folds);
                    tile.exact::<1, 1>(done, dots, folds);
                }
                2 => {
                    let done = tile.exact::<2, 2>(0, dots, folds);
                    tile.exact::<1, 2>(done, dots, folds);
                }
                3 => {
                    tile.exact::<1, 3>(0, dots, folds);
                }
                _ => {
                    tile.exact::<1, 4>(0, dots, folds);
                }
            }
            q0 += g;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        for (r, row) in rows.iter().enumerate() {
            for (q, query) in queries.iter().enumerate() {
                let (dot, fold) = crate::einsum_dot_checked(row, query);
                dots[r * nq + q] = dot;
                folds[r] = fold;
            }
        }
    }
}

/// A dot product kernel over a block of half rows and several questions:
/// `dots[r * queries.len() + q]` is the dot of `queries[q]` with `rows[r]`, in
/// an order of the kernel's choosing (each row's radius covers it). `ahead` are
/// the rows read next, prefetched as [`einsum_tile_checked`] does.
pub type HalfTile = fn(rows: &[&[f16]], ahead: &[&[f16]], queries: &[&[f32]], dots: &mut [f32]);

/// The fastest [`HalfTile`] this CPU runs (AVX-512 where present, else AVX2
/// with F16C and FMA), else [`half_tile_portable`].
pub fn half_tile_kernel() -> HalfTile {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return avx512::half_tile;
        }
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            return avx::half_tile;
        }
    }
    half_tile_portable
}

/// Every [`HalfTile`] this CPU runs, by name, the one [`half_tile_kernel`]
/// picks first and [`half_tile_portable`] last: for the tests, and for
/// `examples/half_tile_cost.rs`, which times them.
pub fn half_tile_kernels() -> Vec<(&'static str, HalfTile)> {
    let mut kernels: Vec<(&'static str, HalfTile)> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            kernels.push(("avx512", avx512::half_tile));
        }
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            kernels.push(("avx2", avx::half_tile));
        }
    }
    kernels.push(("portable", half_tile_portable as HalfTile));
    kernels
}

/// [`HalfTile`] in plain Rust, one pair at a time ([`crate::half_dot_portable`]):
/// the oracle of the SIMD tile and its fallback.
pub fn half_tile_portable(
    rows: &[&[f16]],
    _ahead: &[&[f16]],
    queries: &[&[f32]],
    dots: &mut [f32],
) {
    let nq = queries.len();
    for (r, row) in rows.iter().enumerate() {
        for (q, query) in queries.iter().enumerate() {
            if let Some(slot) = dots.get_mut(r * nq + q) {
                *slot = crate::half_dot_portable(query, row);
            }
        }
    }
}

/// Asks the CPU to start loading `values` into its caches: rows a scan will
/// read a block later, so that their loads overlap this block's arithmetic. A
/// hint only: it reads nothing into the program and cannot fault.
#[inline]
pub fn prefetch<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(values);
        let start = values.as_ptr().cast::<i8>();
        let mut at = 0;
        while at < bytes {
            // SAFETY: a prefetch is a hint that never faults or reads into the
            // program; `start + at` stays inside the slice.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.add(at)) };
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = values;
    }
}

/// One group of at most [`GROUP`] questions against the block's rows.
#[cfg(target_arch = "x86_64")]
struct Tile<'a, 'b> {
    rows: &'a [&'b [f32]],
    ahead: &'a [&'b [f32]],
    queries: &'a [&'b [f32]],
    /// Every row's and question's length.
    n: usize,
    /// Questions in all: the row stride of `dots`.
    stride: usize,
    /// The first question's column in `dots`.
    column: usize,
}

#[cfg(target_arch = "x86_64")]
impl Tile<'_, '_> {
    /// Tiles of `R` rows × `L` questions from row `from` while `R` rows remain;
    /// returns the first row not done. `L` is the group's size.
    fn exact<const R: usize, const L: usize>(
        &self,
        from: usize,
        dots: &mut [f32],
        folds: &mut [u32],
    ) -> usize {
        let mut r0 = from;
        let qs: [&[f32]; L] = std::array::from_fn(|l| self.queries[l]);
        while r0 + R <= self.rows.len() {
            let rows: [&[f32]; R] = std::array::from_fn(|r| self.rows[r0 + r]);
            let next: [&[f32]; R] =
                std::array::from_fn(|r| row_at(self.rows, self.ahead, r0 + r + PREFETCH_ROWS));
            let (out, fold) = sse::tile::<R, L>(&rows, &next, &qs, self.n);
            for r in 0..R {
                let base = (r0 + r) * self.stride + self.column;
                dots[base..base + L].copy_from_slice(&out[r]);
                folds[r0 + r] = fold[r];
            }
            r0 += R;
        }
        r0
    }
}

#[cfg(target_arch = "x86_64")]
mod sse {
    use core::arch::x86_64::{
        __m128, __m128i, _mm_add_epi32, _mm_add_ps, _mm_castps_si128, _mm_loadu_ps, _mm_mul_ps,
        _mm_prefetch, _mm_setzero_ps, _mm_setzero_si128, _mm_storeu_ps, _mm_storeu_si128,
        _MM_HINT_T0,
    };

    /// `R × L` einsum chains side by side; every row and question holds at
    /// least `n` values. Returns the dots (`[row][question]`) and each row's
    /// fold. `next` are prefetched a line (16 floats) per step.
    #[inline(always)]
    pub(super) fn tile<const R: usize, const L: usize>(
        rows: &[&[f32]; R],
        next: &[&[f32]; R],
        queries: &[&[f32]; L],
        n: usize,
    ) -> ([[f32; L]; R], [u32; R]) {
        debug_assert!(rows.iter().all(|r| r.len() >= n) && queries.iter().all(|q| q.len() >= n));
        // SAFETY: SSE2 is the x86-64 baseline; every load reads four floats at an
        // index `< n` of a slice holding at least `n` (the caller's contract,
        // and the padded tail copies into local arrays); `loadu`/`storeu` need
        // no alignment, and the cast reinterprets bits without touching memory.
        unsafe {
            let mut acc: [[__m128; L]; R] = [[_mm_setzero_ps(); L]; R];
            let mut fold: [__m128i; R] = [_mm_setzero_si128(); R];
            let mut i = 0;
            while n - i >= 16 {
                for ahead in next {
                    if i < ahead.len() {
                        // A hint: never faults, reads nothing into the program.
                        _mm_prefetch::<_MM_HINT_T0>(ahead.as_ptr().add(i).cast());
                    }
                }
                for block in [3usize, 2, 1, 0] {
                    let at = i + 4 * block;
                    let y: [__m128; L] =
                        std::array::from_fn(|l| _mm_loadu_ps(queries[l].as_ptr().add(at)));
                    for r in 0..R {
                        let x = _mm_loadu_ps(rows[r].as_ptr().add(at));
                        fold[r] = _mm_add_epi32(fold[r], _mm_castps_si128(x));
                        for l in 0..L {
                            acc[r][l] = _mm_add_ps(_mm_mul_ps(x, y[l]), acc[r][l]);
                        }
                    }
                }
                i += 16;
            }
            while i < n {
                let take = (n - i).min(4);
                let mut y = [[0.0f32; 4]; L];
                for l in 0..L {
                    y[l][..take].copy_from_slice(&queries[l][i..i + take]);
                }
                for r in 0..R {
                    let mut x = [0.0f32; 4];
                    x[..take].copy_from_slice(&rows[r][i..i + take]);
                    let xv = _mm_loadu_ps(x.as_ptr());
                    fold[r] = _mm_add_epi32(fold[r], _mm_castps_si128(xv));
                    for l in 0..L {
                        acc[r][l] =
                            _mm_add_ps(_mm_mul_ps(xv, _mm_loadu_ps(y[l].as_ptr())), acc[r][l]);
                    }
                }
                i += 4;
            }
            let mut dots = [[0.0f32; L]; R];
            let mut folds = [0u32; R];
            for r in 0..R {
                for l in 0..L {
                    let mut lanes = [0.0f32; 4];
                    _mm_storeu_ps(lanes.as_mut_ptr(), acc[r][l]);
                    dots[r][l] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
                }
                let mut words = [0u32; 4];
                _mm_storeu_si128(words.as_mut_ptr().cast(), fold[r]);
                folds[r] = words.iter().fold(0u32, |sum, w| sum.wrapping_add(*w));
            }
            (dots, folds)
        }
    }
}

/// Whether every row of `rows` starts where the one before it ends: an
/// unfiltered scan of a set in order. The half tiles read such a block row
/// after row, each start to end with every question of the group, and leave
/// the prefetching to the CPU, which streams a run of adjacent rows by itself.
/// Rows far apart (a filtered scan) are read side by side instead, `R` rows a
/// step at a time with the rows ahead prefetched by hand: their loads are
/// then in flight together, which no prefetcher could have started.
///
/// Measured on 2 cores of an AMD EPYC (Zen 4), 100k half rows, one question
/// (`cargo run --release -p particles-candidates --example half_tile_cost`):
/// adjacent rows 4.0-5.1 ms side by side, 2.0-2.5 ms row after row; rows
/// about one in four apart 4.8-5.1 ms side by side, where reading them row
/// after row (with each next row prefetched whole) took 6.2-7.8 ms.
/// Side by side, a step touches a line of each of `R` rows in turn, a pattern
/// the CPU's prefetcher follows badly; row after row, the hand-made prefetch
/// has only one row's loads to overlap.
///
/// Only a tile of one group of questions reads its rows row after row. With
/// more groups (a batch's shared pass of more than 4 questions), row after row
/// loads each question's values once per row and converts each row once per
/// group, where side by side one load of a question's values serves `R` rows.
/// Same host and example, three
/// runs each, AVX-512 tile: 16 questions 15.6-16.6 ms row after row,
/// 10.9-11.9 ms side by side; 8 questions 8.8-9.9 against 7.4-10.2 ms; 4
/// questions (one group) 4.6-6.1 against 4.9-5.7 ms; 3 questions 3.1-5.3
/// against 4.8-5.9 ms; 2 questions 3.3 against 5.6 ms, one run
/// (`half_tile_cost -- 100000 Q`).
fn adjacent<T>(rows: &[&[T]]) -> bool {
    rows.windows(2)
        .all(|pair| pair[0].as_ptr_range().end == pair[1].as_ptr())
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use core::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_castps256_ps128, _mm256_cvtph_ps, _mm256_extractf128_ps,
        _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32,
        _mm_loadu_si128, _mm_movehl_ps, _mm_prefetch, _mm_shuffle_ps, _MM_HINT_T0,
    };

    use super::{row_at, PREFETCH_ROWS};

    use half::f16;

    /// Questions per group and rows per tile, as the 16 `ymm` registers allow:
    /// `R × L` sums, `R` converted rows and one question's values.
    const GROUP: usize = 4;

    pub(super) fn half_tile(
        rows: &[&[f16]],
        ahead: &[&[f16]],
        queries: &[&[f32]],
        dots: &mut [f32],
    ) {
        let nq = queries.len();
        let n = queries.first().map_or(0, |q| q.len());
        let uniform = rows.iter().all(|r| r.len() == n) && queries.iter().all(|q| q.len() == n);
        if !uniform || dots.len() < rows.len() * nq {
            super::half_tile_portable(rows, ahead, queries, dots);
            return;
        }
        // SAFETY: `half_tile_kernel` returns this function only after detecting
        // AVX2, FMA and F16C on this CPU; every row and question holds exactly
        // `n` values and `dots` holds `rows × nq` (checked above).
        unsafe { tiles(rows, ahead, queries, n, dots) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn tiles(
        rows: &[&[f16]],
        ahead: &[&[f16]],
        queries: &[&[f32]],
        n: usize,
        dots: &mut [f32],
    ) {
        let nq = queries.len();
        // Row after row for one group only (see `adjacent`).
        let row_after_row = nq <= GROUP && super::adjacent(rows);
        let mut q0 = 0;
        while q0 < nq {
            let g = (nq - q0).min(GROUP);
            let group = &queries[q0..q0 + g];
            // The first group reads the rows from memory; the others find them
            // in the caches.
            let ahead = if q0 == 0 { ahead } else { &[] };
            let out = Out {
                dots: &mut *dots,
                stride: nq,
                column: q0,
            };
            // SAFETY: as in `half_tile`; the helpers write only columns
            // `q0..q0 + g` of rows inside `rows`.
            unsafe {
                if row_after_row {
                    match g {
                        1 => by_row::<1>(rows, group, n, out),
                        2 => by_row::<2>(rows, group, n, out),
                        3 => by_row::<3>(rows, group, n, out),
                        _ => by_row::<4>(rows, group, n, out),
                    }
                    q0 += g;
                    continue;
                }
                match g {
                    1 => {
                        let (done, out) = run::<4, 1>(rows, ahead, 0, group, n, out);
                        run::<1, 1>(rows, ahead, done, group, n, out);
                    }
                    2 => {
                        let (done, out) = run::<4, 2>(rows, ahead, 0, group, n, out);
                        run::<1, 2>(rows, ahead, done, group, n, out);
                    }
                    3 => {
                        let (done, out) = run::<2, 3>(rows, ahead, 0, group, n, out);
                        run::<1, 3>(rows, ahead, done, group, n, out);
                    }
                    _ => {
                        let (done, out) = run::<2, 4>(rows, ahead, 0, group, n, out);
                        run::<1, 4>(rows, ahead, done, group, n, out);
                    }
                }
            }
            q0 += g;
        }
    }

    /// Where a group's dots go: columns from `column` of rows `stride` apart.
    struct Out<'a> {
        dots: &'a mut [f32],
        stride: usize,
        column: usize,
    }

    /// Tiles of `R` rows from `from` while `R` remain; the first row not done.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn run<'a, const R: usize, const L: usize>(
        rows: &[&[f16]],
        ahead: &[&[f16]],
        from: usize,
        group: &[&[f32]],
        n: usize,
        out: Out<'a>,
    ) -> (usize, Out<'a>) {
        let Out {
            dots,
            stride,
            column,
        } = out;
        let mut r0 = from;
        while r0 + R <= rows.len() {
            let next: [&[f16]; R] =
                std::array::from_fn(|r| row_at(rows, ahead, r0 + r + PREFETCH_ROWS));
            // SAFETY: the caller's contract (lengths `n`, AVX2/FMA/F16C present).
            let out = unsafe { tile::<R, L>(&rows[r0..r0 + R], &next, group, n) };
            for (r, values) in out.iter().enumerate() {
                let base = (r0 + r) * stride + column;
                dots[base..base + L].copy_from_slice(values);
            }
            r0 += R;
        }
        (
            r0,
            Out {
                dots,
                stride,
                column,
            },
        )
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn tile<const R: usize, const L: usize>(
        rows: &[&[f16]],
        next: &[&[f16]; R],
        group: &[&[f32]],
        n: usize,
    ) -> [[f32; L]; R] {
        let mut acc: [[__m256; L]; R] = [[_mm256_setzero_ps(); L]; R];
        let mut i = 0;
        // SAFETY: every load of 8 values at `i` happens only when `i + 8 <= n`,
        // inside slices of `n` values; the loads need no alignment and `f16` is
        // `u16` in memory. A prefetch is a hint that never faults.
        unsafe {
            while n - i >= 8 {
                if i % 32 == 0 {
                    // A line (32 halves) of each next row per four steps.
                    for ahead in next {
                        if i < ahead.len() {
                            _mm_prefetch::<_MM_HINT_T0>(ahead.as_ptr().add(i).cast());
                        }
                    }
                }
                let h: [__m256; R] = std::array::from_fn(|r| {
                    _mm256_cvtph_ps(_mm_loadu_si128(rows[r].as_ptr().add(i).cast()))
                });
                for l in 0..L {
                    let x = _mm256_loadu_ps(group[l].as_ptr().add(i));
                    for r in 0..R {
                        acc[r][l] = _mm256_fmadd_ps(x, h[r], acc[r][l]);
                    }
                }
                i += 8;
            }
        }
        let mut out = [[0.0f32; L]; R];
        for r in 0..R {
            for l in 0..L {
                let sum = horizontal_sum(acc[r][l]);
                let mut tail = 0.0f32;
                for k in i..n {
                    tail = group[l][k].mul_add(rows[r][k].to_f32(), tail);
                }
                out[r][l] = sum + tail;
            }
        }
        out
    }

    /// Every row's dots with the group's `L` questions, row after row (the
    /// block's rows are adjacent in memory: see [`super::adjacent`]).
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn by_row<const L: usize>(rows: &[&[f16]], group: &[&[f32]], n: usize, out: Out<'_>) {
        for (r, row) in rows.iter().enumerate() {
            // SAFETY: the caller's contract (lengths `n`, AVX2/FMA/F16C present).
            let values = unsafe { row_dots::<L>(row, group, n) };
            let base = r * out.stride + out.column;
            out.dots[base..base + L].copy_from_slice(&values);
        }
    }

    /// One row's dots with `L` questions: two sums per question, so that the
    /// row's chains of dependent adds are half as long.
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn row_dots<const L: usize>(row: &[f16], group: &[&[f32]], n: usize) -> [f32; L] {
        let mut acc: [[__m256; 2]; L] = [[_mm256_setzero_ps(); 2]; L];
        let mut i = 0;
        // SAFETY: every load of 8 values at `i` happens only when `i + 8 <= n`,
        // inside slices of `n` values; the loads need no alignment and `f16` is
        // `u16` in memory.
        unsafe {
            while n - i >= 16 {
                let h0 = _mm256_cvtph_ps(_mm_loadu_si128(row.as_ptr().add(i).cast()));
                let h1 = _mm256_cvtph_ps(_mm_loadu_si128(row.as_ptr().add(i + 8).cast()));
                for (sums, query) in acc.iter_mut().zip(group) {
                    sums[0] = _mm256_fmadd_ps(_mm256_loadu_ps(query.as_ptr().add(i)), h0, sums[0]);
                    sums[1] =
                        _mm256_fmadd_ps(_mm256_loadu_ps(query.as_ptr().add(i + 8)), h1, sums[1]);
                }
                i += 16;
            }
            if n - i >= 8 {
                let h = _mm256_cvtph_ps(_mm_loadu_si128(row.as_ptr().add(i).cast()));
                for (sums, query) in acc.iter_mut().zip(group) {
                    sums[0] = _mm256_fmadd_ps(_mm256_loadu_ps(query.as_ptr().add(i)), h, sums[0]);
                }
                i += 8;
            }
        }
        let mut out = [0.0f32; L];
        for ((value, sums), query) in out.iter_mut().zip(&acc).zip(group) {
            let sum = horizontal_sum(_mm256_add_ps(sums[0], sums[1]));
            let mut tail = 0.0f32;
            for k in i..n {
                tail = query[k].mul_add(row[k].to_f32(), tail);
            }
            *value = sum + tail;
        }
        out
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    fn horizontal_sum(v: __m256) -> f32 {
        let low = _mm256_castps256_ps128(v);
        let high = _mm256_extractf128_ps::<1>(v);
        let quad = _mm_add_ps(low, high);
        let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
        let one = _mm_add_ss(pair, _mm_shuffle_ps::<0b01>(pair, pair));
        _mm_cvtss_f32(one)
    }
}

/// The half tile on 512-bit registers: sixteen values a step, and 32
/// registers, so a tile holds 4 rows × 4 questions. Where several questions
/// share a pass the tile is bound by its multiply-adds, which this doubles.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use core::arch::x86_64::{
        __m512, _mm256_loadu_si256, _mm512_add_ps, _mm512_cvtph_ps, _mm512_fmadd_ps,
        _mm512_loadu_ps, _mm512_reduce_add_ps, _mm512_setzero_ps, _mm_prefetch, _MM_HINT_T0,
    };

    use half::f16;

    use super::{row_at, PREFETCH_ROWS};

    const GROUP: usize = 4;

    pub(super) fn half_tile(
        rows: &[&[f16]],
        ahead: &[&[f16]],
        queries: &[&[f32]],
        dots: &mut [f32],
    ) {
        let nq = queries.len();
        let n = queries.first().map_or(0, |q| q.len());
        let uniform = rows.iter().all(|r| r.len() == n) && queries.iter().all(|q| q.len() == n);
        if !uniform || dots.len() < rows.len() * nq {
            super::half_tile_portable(rows, ahead, queries, dots);
            return;
        }
        // SAFETY: `half_tile_kernel` returns this function only after detecting
        // AVX-512F on this CPU; every row and question holds exactly `n` values
        // and `dots` holds `rows × nq` (checked above).
        unsafe { tiles(rows, ahead, queries, n, dots) }
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn tiles(
        rows: &[&[f16]],
        ahead: &[&[f16]],
        queries: &[&[f32]],
        n: usize,
        dots: &mut [f32],
    ) {
        let nq = queries.len();
        // Row after row for one group only (see `adjacent`).
        let row_after_row = nq <= GROUP && super::adjacent(rows);
        let mut q0 = 0;
        while q0 < nq {
            let g = (nq - q0).min(GROUP);
            let group = &queries[q0..q0 + g];
            let ahead = if q0 == 0 { ahead } else { &[] };
            // SAFETY: as in `half_tile`.
            unsafe {
                if row_after_row {
                    match g {
                        1 => by_row::<1>(rows, group, n, dots, nq, q0),
                        2 => by_row::<2>(rows, group, n, dots, nq, q0),
                        3 => by_row::<3>(rows, group, n, dots, nq, q0),
                        _ => by_row::<4>(rows, group, n, dots, nq, q0),
                    }
                    q0 += g;
                    continue;
                }
                let done = match g {
                    1 => run::<4, 1>(rows, ahead, 0, group, n, dots, nq, q0),
                    2 => run::<4, 2>(rows, ahead, 0, group, n, dots, nq, q0),
                    3 => run::<4, 3>(rows, ahead, 0, group, n, dots, nq, q0),
                    _ => run::<4, 4>(rows, ahead, 0, group, n, dots, nq, q0),
                };
                match g {
                    1 => run::<1, 1>(rows, ahead, done, group, n, dots, nq, q0),
                    2 => run::<1, 2>(rows, ahead, done, group, n, dots, nq, q0),
                    3 => run::<1, 3>(rows, ahead, done, group, n, dots, nq, q0),
                    _ => run::<1, 4>(rows, ahead, done, group, n, dots, nq, q0),
                };
            }
            q0 += g;
        }
    }

    /// Tiles of `R` rows from `from` while `R` remain; the first row not done.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const R: usize, const L: usize>(
        rows: &[&[f16]],
        ahead: &[&[f16]],
        from: usize,
        group: &[&[f32]],
        n: usize,
        dots: &mut [f32],
        stride: usize,
        column: usize,
    ) -> usize {
        let mut r0 = from;
        while r0 + R <= rows.len() {
            let next: [&[f16]; R] =
                std::array::from_fn(|r| row_at(rows, ahead, r0 + r + PREFETCH_ROWS));
            // SAFETY: the caller's contract (lengths `n`, AVX-512F present).
            let out = unsafe { tile::<R, L>(&rows[r0..r0 + R], &next, group, n) };
            for (r, values) in out.iter().enumerate() {
                let base = (r0 + r) * stride + column;
                dots[base..base + L].copy_from_slice(values);
            }
            r0 += R;
        }
        r0
    }

    #[target_feature(enable = "avx512f")]
    unsafe fn tile<const R: usize, const L: usize>(
        rows: &[&[f16]],
        next: &[&[f16]; R],
        group: &[&[f32]],
        n: usize,
    ) -> [[f32; L]; R] {
        let mut acc: [[__m512; L]; R] = [[_mm512_setzero_ps(); L]; R];
        let mut i = 0;
        // SAFETY: every load of 16 values at `i` happens only when
        // `i + 16 <= n`, inside slices of `n` values; the loads need no
        // alignment and `f16` is `u16` in memory. A prefetch is a hint that
        // never faults.
        unsafe {
            while n - i >= 16 {
                if i % 32 == 0 {
                    for ahead in next {
                        if i < ahead.len() {
                            _mm_prefetch::<_MM_HINT_T0>(ahead.as_ptr().add(i).cast());
                        }
                    }
                }
                let h: [__m512; R] = std::array::from_fn(|r| {
                    _mm512_cvtph_ps(_mm256_loadu_si256(rows[r].as_ptr().add(i).cast()))
                });
                for l in 0..L {
                    let x = _mm512_loadu_ps(group[l].as_ptr().add(i));
                    for r in 0..R {
                        acc[r][l] = _mm512_fmadd_ps(x, h[r], acc[r][l]);
                    }
                }
                i += 16;
            }
        }
        let mut out = [[0.0f32; L]; R];
        for r in 0..R {
            for l in 0..L {
                let sum = _mm512_reduce_add_ps(acc[r][l]);
                let mut tail = 0.0f32;
                for k in i..n {
                    tail = group[l][k].mul_add(rows[r][k].to_f32(), tail);
                }
                out[r][l] = sum + tail;
            }
        }
        out
    }

    /// Every row's dots with the group's `L` questions, row after row (the
    /// block's rows are adjacent in memory: see [`super::adjacent`]), into
    /// columns `column..column + L` of rows `stride` apart.
    #[target_feature(enable = "avx512f")]
    unsafe fn by_row<const L: usize>(
        rows: &[&[f16]],
        group: &[&[f32]],
        n: usize,
        dots: &mut [f32],
        stride: usize,
        column: usize,
    ) {
        for (r, row) in rows.iter().enumerate() {
            // SAFETY: the caller's contract (lengths `n`, AVX-512F present).
            let values = unsafe { row_dots::<L>(row, group, n) };
            let base = r * stride + column;
            dots[base..base + L].copy_from_slice(&values);
        }
    }

    /// One row's dots with `L` questions: two sums per question, so that the
    /// row's chains of dependent adds are half as long.
    #[target_feature(enable = "avx512f")]
    unsafe fn row_dots<const L: usize>(row: &[f16], group: &[&[f32]], n: usize) -> [f32; L] {
        let mut acc: [[__m512; 2]; L] = [[_mm512_setzero_ps(); 2]; L];
        let mut i = 0;
        // SAFETY: every load of 16 values at `i` happens only when
        // `i + 16 <= n`, inside slices of `n` values; the loads need no
        // alignment and `f16` is `u16` in memory.
        unsafe {
            while n - i >= 32 {
                let h0 = _mm512_cvtph_ps(_mm256_loadu_si256(row.as_ptr().add(i).cast()));
                let h1 = _mm512_cvtph_ps(_mm256_loadu_si256(row.as_ptr().add(i + 16).cast()));
                for (sums, query) in acc.iter_mut().zip(group) {
                    sums[0] = _mm512_fmadd_ps(_mm512_loadu_ps(query.as_ptr().add(i)), h0, sums[0]);
                    sums[1] =
                        _mm512_fmadd_ps(_mm512_loadu_ps(query.as_ptr().add(i + 16)), h1, sums[1]);
                }
                i += 32;
            }
            if n - i >= 16 {
                let h = _mm512_cvtph_ps(_mm256_loadu_si256(row.as_ptr().add(i).cast()));
                for (sums, query) in acc.iter_mut().zip(group) {
                    sums[0] = _mm512_fmadd_ps(_mm512_loadu_ps(query.as_ptr().add(i)), h, sums[0]);
                }
                i += 16;
            }
        }
        let mut out = [0.0f32; L];
        for ((value, sums), query) in out.iter_mut().zip(&acc).zip(group) {
            let sum = _mm512_reduce_add_ps(_mm512_add_ps(sums[0], sums[1]));
            let mut tail = 0.0f32;
            for k in i..n {
                tail = query[k].mul_add(row[k].to_f32(), tail);
            }
            *value = sum + tail;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rows_of(values: &[Vec<f32>]) -> Vec<&[f32]> {
        values.iter().map(Vec::as_slice).collect()
    }

    proptest! {
        /// Every dot of the tile is einsum's, bit for bit, and every fold the
        /// row's, for any number of rows and questions and any length.
        #[test]
        fn the_exact_tile_is_einsum_pair_by_pair(
            n in 0usize..70,
            nrows in 0usize..11,
            nq in 0usize..10,
            seed in any::<u64>(),
        ) {
            let mut state = seed | 1;
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
            };
            let rows: Vec<Vec<f32>> = (0..nrows).map(|_| (0..n).map(|_| next()).collect()).collect();
            let queries: Vec<Vec<f32>> = (0..nq).map(|_| (0..n).map(|_| next()).collect()).collect();
            let (rs, qs) = (rows_of(&rows), rows_of(&queries));
            let mut dots = vec![f32::NAN; nrows * nq];
            let mut folds = vec![0u32; nrows];
            einsum_tile_checked(&rs, &[], &qs, &mut dots, &mut folds);
            for r in 0..nrows {
                prop_assert_eq!(folds[r], crate::fold_bits(&rows[r]));
                for q in 0..nq {
                    prop_assert_eq!(
                        dots[r * nq + q].to_bits(),
                        crate::einsum_dot(&rows[r], &queries[q]).to_bits()
                    );
                }
            }
        }

        /// The SIMD half tile is within rounding of the portable one (both are
        /// covered by a row's radius; here, within a relative 1e-5 of the sum
        /// of absolute products).
        #[test]
        fn the_half_tile_agrees_with_the_portable_dot(
            n in 0usize..70,
            nrows in 0usize..11,
            nq in 0usize..10,
            seed in any::<u64>(),
        ) {
            let mut state = seed | 1;
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            };
            let rows: Vec<Vec<f16>> = (0..nrows)
                .map(|_| (0..n).map(|_| f16::from_f32(next())).collect())
                .collect();
            let queries: Vec<Vec<f32>> = (0..nq).map(|_| (0..n).map(|_| next()).collect()).collect();
            // Each row in its own allocation (read side by side), and the
            // same rows back to back in one (read row after row).
            let apart: Vec<&[f16]> = rows.iter().map(Vec::as_slice).collect();
            let flat: Vec<f16> = rows.concat();
            let adjacent: Vec<&[f16]> = (0..nrows).map(|r| &flat[r * n..(r + 1) * n]).collect();
            let qs = rows_of(&queries);
            let mut slow = vec![f32::NAN; nrows * nq];
            half_tile_portable(&apart, &[], &qs, &mut slow);
            for ((_, kernel), rs) in half_tile_kernels().into_iter().flat_map(|k| [(k, &apart), (k, &adjacent)]) {
                let mut fast = vec![f32::NAN; nrows * nq];
                kernel(rs, rs, &qs, &mut fast);
                for r in 0..nrows {
                    for q in 0..nq {
                        let scale: f32 = rows[r].iter().zip(&queries[q])
                            .map(|(h, x)| (h.to_f32() * x).abs()).sum();
                        let (a, b) = (fast[r * nq + q], slow[r * nq + q]);
                        prop_assert!((a - b).abs() <= 1e-5 * scale + 1e-30, "{a} vs {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn unequal_lengths_fall_back_to_pairs() {
        let rows: Vec<Vec<f32>> = vec![vec![1.0, 2.0, 3.0], vec![1.0; 20]];
        let queries: Vec<Vec<f32>> = vec![vec![0.5; 20], vec![2.0; 3]];
        let (rs, qs) = (rows_of(&rows), rows_of(&queries));
        let mut dots = vec![0.0; 4];
        let mut folds = vec![0; 2];
        einsum_tile_checked(&rs, &[], &qs, &mut dots, &mut folds);
        for r in 0..2 {
            for q in 0..2 {
                assert_eq!(dots[r * 2 + q], crate::einsum_dot(&rows[r], &queries[q]));
            }
        }
        // The fold is of what the pair's dot read: the row up to the shorter.
        assert_eq!(folds[1], crate::fold_bits(&rows[1][..3]));
    }
}
