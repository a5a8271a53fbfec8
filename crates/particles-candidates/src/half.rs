//! A half-precision copy of the vectors, each row with the radius that bounds
//! how far a dot product read from it can be from the reference's.
//!
//! A warm scan over a large set is bound by memory bandwidth: at 1M rows it
//! reads 1.5 GB of `f32` vectors per question. Read from IEEE binary16 copies,
//! it reads half that. The dot products it gets are not the reference's, so the
//! scan uses them only as intervals: each row's radius is chosen so that the
//! reference's einsum dot of the question with the stored `f32` vector lies
//! within `half_dot ± |question| · radius`, and the exact cosine is computed
//! from the `f32` row only for the few rows an interval cannot decide. Exact
//! answers stay exact.
//!
//! The radius of a row with `f32` vector `v` and half copy `h` (`e = v − h`,
//! exact in f64) covers three errors, by Cauchy–Schwarz and the standard bound
//! for a sum of `n` products in any order (`γₙ = n·u / (1 − n·u)`, `u = 2⁻²⁴`):
//!
//! - the copy: `|x·v − x·h| = |x·e| ≤ |x|·|e|`;
//! - this kernel's rounding: `|fl(x·h) − x·h| ≤ γₙ·|x|·|h|`;
//! - the reference's rounding: `|fl(x·v) − x·v| ≤ γₙ·|x|·|v|`.
//!
//! So `radius = (|e| + γₙ·(|v| + |h|))·(1 + 10⁻⁶)`, rounded up to `f32`. A row
//! that is not finite, or does not fit binary16, gets a NaN radius: it has no
//! interval and is always read exactly.

use half::{f16, slice::HalfFloatSliceExt};

use crate::{claims::BytesCheck, column::Column};

/// The half copy of a set's vectors (same offsets as the set's `f32` column)
/// and each row's radius: owned when made here, or views of a sidecar's map.
#[derive(Debug, Clone, Default)]
pub struct HalfVectors {
    pub(crate) data: Column<f16>,
    pub(crate) radius: Column<f32>,
}

impl HalfVectors {
    /// The heap bytes it holds (nothing for views of a map).
    pub fn heap_bytes(&self) -> usize {
        self.data.heap_bytes() + self.radius.heap_bytes()
    }

    /// An empty copy with room for `values` values of `rows` rows.
    pub(crate) fn with_capacity(values: usize, rows: usize) -> HalfVectors {
        HalfVectors {
            data: Column::from(Vec::with_capacity(values)),
            radius: Column::from(Vec::with_capacity(rows)),
        }
    }

    /// Appends the half copy of `vector` and its radius.
    pub(crate) fn push(&mut self, vector: &[f32]) {
        let data = self.data.to_mut();
        let start = data.len();
        data.resize(start + vector.len(), f16::ZERO);
        let copy = &mut data[start..];
        copy.convert_from_f32_slice(vector);
        self.radius.push(radius(vector, copy));
    }

    /// Appends a set's row: its half copy and radius, with no interval when the
    /// `f32` row fails its check (`norm` and `check` as stored), so the scan
    /// reads it exactly and reports it.
    pub(crate) fn push_row(&mut self, vector: &[f32], norm: f32, check: u32) {
        self.push(vector);
        if crate::row_check(vector, norm) != check {
            if let Some(radius) = self.radius.to_mut().last_mut() {
                *radius = f32::NAN;
            }
        }
    }

    /// Appends rows `rows` of `other` as they are (`span`: their values).
    pub(crate) fn push_run_from(
        &mut self,
        other: &HalfVectors,
        span: std::ops::Range<usize>,
        rows: std::ops::Range<usize>,
    ) {
        self.data.to_mut().extend_from_slice(&other.data[span]);
        self.radius.to_mut().extend_from_slice(&other.radius[rows]);
    }

    /// Appends all of `other`.
    pub(crate) fn append(&mut self, other: &HalfVectors) {
        self.data.to_mut().extend_from_slice(&other.data);
        self.radius.to_mut().extend_from_slice(&other.radius);
    }
}

/// A half copy read back from a file (a sidecar): its values, each row's
/// radius, and the check of the values' bytes, which
/// [`crate::CandidateSet::prepare_half`] runs before the scan first trusts
/// them. The radii are small and the reader checks them on open.
///
/// A stored copy serves a long-lived process from the file's pages instead of
/// a private copy (768 MB of anonymous memory at 1M rows), and spares it the
/// conversion.
#[derive(Debug, Clone)]
pub struct StoredHalf {
    /// The half values, row after row, at the set's vector offsets.
    pub data: Column<f16>,
    /// Each row's radius (NaN: no interval).
    pub radius: Column<f32>,
    /// Checks `data`'s bytes (its section checksum).
    pub check: Option<BytesCheck>,
}

/// Where [`crate::CandidateSet::prepare_half`] found the half copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfOrigin {
    /// The set had one already (made or checked by an earlier call).
    Present,
    /// The set's stored copy, which passed its check.
    Stored,
    /// Made now from the `f32` vectors: the set had no stored copy.
    Made,
    /// Made now from the `f32` vectors because the stored copy failed its
    /// check: the file it came from is damaged and should be replaced.
    StoredDamaged,
}

/// The radius of one row (see the module doc); NaN when the row has no
/// interval.
fn radius(vector: &[f32], copy: &[f16]) -> f32 {
    let unit = f64::powi(2.0, -24);
    let n = vector.len() as f64;
    if n * unit >= 0.5 {
        return f32::NAN;
    }
    let gamma = n * unit / (1.0 - n * unit);
    let (mut e2, mut v2, mut h2) = (0.0f64, 0.0f64, 0.0f64);
    for (&v, &h) in vector.iter().zip(copy) {
        let h = f64::from(h.to_f32());
        let v = f64::from(v);
        if !v.is_finite() || !h.is_finite() {
            return f32::NAN;
        }
        let e = v - h;
        e2 += e * e;
        v2 += v * v;
        h2 += h * h;
    }
    let bound = (e2.sqrt() + gamma * (v2.sqrt() + h2.sqrt())) * (1.0 + 1e-6);
    round_up_f32(bound)
}

/// The smallest `f32` at least `value` (NaN for NaN).
#[inline]
pub fn round_up_f32(value: f64) -> f32 {
    let rounded = value as f32;
    if f64::from(rounded) < value {
        next_up(rounded)
    } else {
        rounded
    }
}

/// The ends of many rows' similarity intervals (`QueryVector::similarity_ends_many`
/// in `particles-rank`, which holds the arithmetic's account): for each row
/// `j`, from its half dot `dots[j]`, radius `radii[j]` and norm `norms[j]`,
/// with the question's `reach` and `norm`, the high end into `highs[j]` and
/// the low end into `lows[j]`, NaN where unsound. On AVX2 the same source is
/// compiled for AVX2: the same IEEE operations in the same order (Rust never
/// fuses or reorders them), four or eight rows to an instruction instead of
/// the baseline's two (8.5% of a 1M server's CPU in the baseline, measured).
pub fn interval_ends(
    reach: f64,
    norm: f32,
    dots: &[f32],
    radii: &[f32],
    norms: &[f32],
    highs: &mut [f64],
    lows: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was just detected on this CPU; the function only
        // indexes slices through iterators.
        unsafe { interval_ends_avx2(reach, norm, dots, radii, norms, highs, lows) };
        return;
    }
    interval_ends_body(reach, norm, dots, radii, norms, highs, lows);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn interval_ends_avx2(
    reach: f64,
    norm: f32,
    dots: &[f32],
    radii: &[f32],
    norms: &[f32],
    highs: &mut [f64],
    lows: &mut [f32],
) {
    interval_ends_body(reach, norm, dots, radii, norms, highs, lows);
}

#[inline(always)]
fn interval_ends_body(
    reach: f64,
    norm: f32,
    dots: &[f32],
    radii: &[f32],
    norms: &[f32],
    highs: &mut [f64],
    lows: &mut [f32],
) {
    for ((((high, low), &dot), &radius), &candidate_norm) in highs
        .iter_mut()
        .zip(lows.iter_mut())
        .zip(dots)
        .zip(radii)
        .zip(norms)
    {
        let spread = reach * f64::from(radius) * (1.0 + 1e-6) + 1e-30;
        let denominator = candidate_norm * norm + 1e-10f32;
        let divides = denominator.is_finite() && denominator > 0.0;
        // `round_up_f32`, without branches: the nearest f32, moved one step
        // up when it fell below.
        let end = f64::from(dot) + spread;
        let nearest = end as f32;
        let bits = nearest.to_bits();
        let up = if f64::from(nearest) < end {
            f32::from_bits(if nearest == 0.0 {
                1
            } else if nearest > 0.0 {
                bits.wrapping_add(1)
            } else {
                bits.wrapping_sub(1)
            })
        } else {
            nearest
        };
        let value = f64::from((up / denominator).clamp(0.0, 1.0));
        *high = if end.is_finite() && divides {
            value
        } else {
            f64::NAN
        };
        // `round_down_f32` (`-round_up_f32(-end)`), the same way: one step
        // down when the nearest f32 is above.
        let end = f64::from(dot) - spread;
        let nearest = end as f32;
        let bits = nearest.to_bits();
        let down = if f64::from(nearest) > end {
            f32::from_bits(if nearest == 0.0 {
                0x8000_0001
            } else if nearest > 0.0 {
                bits.wrapping_sub(1)
            } else {
                bits.wrapping_add(1)
            })
        } else {
            nearest
        };
        let value = (down / denominator).clamp(0.0, 1.0);
        *low = if end.is_finite() && divides {
            value
        } else {
            f32::NAN
        };
    }
}

/// The largest `f32` at most `value` (NaN for NaN).
#[inline]
pub fn round_down_f32(value: f64) -> f32 {
    -round_up_f32(-value)
}

/// The next `f32` towards +∞ (`f32::next_up`, stable only after this crate's
/// minimum Rust).
#[inline]
fn next_up(value: f32) -> f32 {
    if value.is_nan() || value == f32::INFINITY {
        return value;
    }
    if value == 0.0 {
        return f32::from_bits(1);
    }
    let bits = value.to_bits();
    f32::from_bits(if value > 0.0 { bits + 1 } else { bits - 1 })
}

/// One part's half copy: the part's vector offsets, its values and radii
/// (slices resolved once, so a row read is two loads from registers).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HalfPart<'a> {
    pub(crate) offsets: &'a [u64],
    pub(crate) data: &'a [f16],
    pub(crate) radius: &'a [f32],
}

impl<'a> HalfPart<'a> {
    pub(crate) fn new(offsets: &'a [u64], copy: &'a HalfVectors) -> HalfPart<'a> {
        HalfPart {
            offsets,
            data: &copy.data,
            radius: &copy.radius,
        }
    }
}

/// A view of a set's half copy, row by row: of its base's rows (an extended
/// set's, [`crate::CandidateSet::extended`]) and its own.
#[derive(Debug, Clone, Copy)]
pub struct HalfView<'a> {
    pub(crate) base: Option<HalfPart<'a>>,
    pub(crate) base_rows: usize,
    pub(crate) own: HalfPart<'a>,
}

impl<'a> HalfView<'a> {
    /// The part holding row `row`, and the row there (as
    /// `CandidateSet::at`).
    #[inline(always)]
    fn at(&self, row: usize) -> (HalfPart<'a>, usize) {
        match self.base {
            None => (self.own, row),
            Some(base) if row < self.base_rows => (base, row),
            Some(_) => (self.own, row - self.base_rows),
        }
    }

    /// Row `row`'s half vector.
    #[inline]
    pub fn vector(&self, row: usize) -> &'a [f16] {
        let (part, row) = self.at(row);
        &part.data[part.offsets[row] as usize..part.offsets[row + 1] as usize]
    }

    /// The half values back to back, as [`HalfView::vector`] slices them, of
    /// the set's own rows (every row's when it extends none).
    pub fn values(&self) -> &'a [f16] {
        self.own.data
    }

    /// The radius of each of the set's own rows (every row's when it extends
    /// none).
    pub fn radii(&self) -> &'a [f32] {
        self.own.radius
    }

    /// Row `row`'s radius: the reference's dot of a question `x` with the row
    /// lies within `half_dot(x, row) ± |x|·radius`. NaN: no interval.
    #[inline]
    pub fn radius(&self, row: usize) -> f32 {
        let (part, row) = self.at(row);
        part.radius[row]
    }
}

/// A dot product of an `f32` question with a half row, in whatever order is
/// fastest here. Its rounding is covered by the row's radius.
pub type HalfDot = fn(&[f32], &[f16]) -> f32;

/// The fastest [`HalfDot`] this CPU runs: AVX2 with F16C and FMA where present
/// (checked once per call of this function), else a portable loop.
pub fn half_dot_kernel() -> HalfDot {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
        {
            return avx::dot;
        }
    }
    half_dot_portable
}

/// [`HalfDot`] in plain Rust: the oracle of the SIMD kernel and its fallback.
pub fn half_dot_portable(x: &[f32], h: &[f16]) -> f32 {
    x.iter()
        .zip(h)
        .fold(0.0f32, |sum, (&x, &h)| x.mul_add(h.to_f32(), sum))
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use core::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
        _mm256_setzero_ps, _mm256_storeu_ps, _mm_loadu_si128,
    };

    use half::f16;

    /// Four 8-lane accumulators over blocks of 32, then 8 at a time, then a
    /// scalar tail.
    pub(super) fn dot(x: &[f32], h: &[f16]) -> f32 {
        // SAFETY: `half_dot_kernel` returns this function only after detecting
        // AVX2, FMA and F16C on this CPU.
        unsafe { dot_inner(x, h) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot_inner(x: &[f32], h: &[f16]) -> f32 {
        let n = x.len().min(h.len());
        let mut acc: [__m256; 4] = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        // SAFETY: every load of 8 values at `i + 8k` happens only when
        // `i + 8k + 8 <= n`, inside both slices; the unaligned loads need no
        // alignment, and `f16` is `u16` in memory (`repr(transparent)`).
        unsafe {
            while n - i >= 32 {
                for (k, sum) in acc.iter_mut().enumerate() {
                    let at = i + 8 * k;
                    let halves = _mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr().add(at).cast()));
                    let floats = _mm256_loadu_ps(x.as_ptr().add(at));
                    *sum = _mm256_fmadd_ps(floats, halves, *sum);
                }
                i += 32;
            }
            while n - i >= 8 {
                let halves = _mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr().add(i).cast()));
                let floats = _mm256_loadu_ps(x.as_ptr().add(i));
                acc[0] = _mm256_fmadd_ps(floats, halves, acc[0]);
                i += 8;
            }
            let total = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
            let mut lanes = [0.0f32; 8];
            _mm256_storeu_ps(lanes.as_mut_ptr(), total);
            let mut sum = lanes.iter().sum::<f32>();
            while i < n {
                sum = x[i].mul_add(h[i].to_f32(), sum);
                i += 1;
            }
            sum
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn copy_of(vector: &[f32]) -> HalfVectors {
        let mut copy = HalfVectors::default();
        copy.push(vector);
        copy
    }

    proptest! {
        /// The reference's einsum dot lies within the interval, whatever the
        /// question, for rows of every scale binary16 holds.
        #[test]
        fn the_radius_bounds_the_reference_dot(
            row in prop::collection::vec(-1.0f32..1.0, 1..420),
            question in prop::collection::vec(-1.0f32..1.0, 420),
            scale in prop::sample::select(vec![1.0f32, 1e-3, 1e-6, 300.0]),
        ) {
            let row: Vec<f32> = row.iter().map(|v| v * scale).collect();
            let question = &question[..row.len()];
            let copy = copy_of(&row);
            let radius = copy.radius[0];
            prop_assert!(radius.is_finite());
            let norm: f64 = question.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>().sqrt();
            let reach = norm * f64::from(radius);
            for kernel in [half_dot_kernel(), half_dot_portable as HalfDot] {
                let approx = f64::from(kernel(question, &copy.data));
                let exact = f64::from(crate::einsum_dot(&row, question));
                prop_assert!((exact - approx).abs() <= reach, "{exact} vs {approx} ± {reach}");
            }
        }

        #[test]
        fn the_simd_kernel_is_close_to_the_portable_one(
            pairs in prop::collection::vec((-1.0f32..1.0, -1.0f32..1.0), 0..700),
        ) {
            let (x, v): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
            let copy = copy_of(&v);
            let simd = f64::from(half_dot_kernel()(&x, &copy.data));
            let plain = f64::from(half_dot_portable(&x, &copy.data));
            prop_assert!((simd - plain).abs() <= 1e-4, "{simd} vs {plain}");
        }
    }

    #[test]
    fn rows_binary16_cannot_hold_have_no_interval() {
        assert!(copy_of(&[1.0, f32::NAN]).radius[0].is_nan());
        assert!(copy_of(&[1.0, f32::INFINITY]).radius[0].is_nan());
        assert!(copy_of(&[1.0, 1e6]).radius[0].is_nan());
        assert!(copy_of(&[1.0, 0.5]).radius[0] > 0.0);
        // Exactly representable: only the rounding terms remain.
        assert!(copy_of(&[0.5, 0.25]).radius[0] < 1e-6);
    }

    #[test]
    fn rounding_goes_the_way_it_says() {
        for value in [0.1f64, 1.0 / 3.0, 1e-40, 3.0e38, 0.0, -0.1, -1e-46, 1e-46] {
            let (up, down) = (round_up_f32(value), round_down_f32(value));
            assert!(
                f64::from(up) >= value && f64::from(down) <= value,
                "{value}"
            );
            assert!(f64::from(next_up(down)) >= f64::from(up), "{value}: tight");
        }
        assert_eq!(round_up_f32(0.5), 0.5);
        assert!(round_up_f32(f64::NAN).is_nan());
    }
}
