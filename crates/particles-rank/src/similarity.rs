//! Cosine similarity with the reference's exact f32 numerics on x86-64.
//!
//! The reference computes `einsum('ij,j->i', V, q) / (norm(V) * norm(q) + 1e-10)` in
//! f32. The candidate dot products and norms come from NumPy's `einsum` inner loop
//! (SSE, four lanes, separate multiply and add: [`dot_einsum`]); the query norm comes
//! from OpenBLAS `sdot`, whose kernel (and therefore whose rounding) depends on the
//! CPU ([`NormKernel`]). Both reductions are reproduced operation for operation, so
//! `sim` agrees to the last bit. (The einsum reduction itself is
//! `particles_candidates::einsum_dot`, shared with the candidate sets' stored norms.) Rust never contracts `a * b + c` into an FMA unless
//! asked, which the einsum path relies on; the BLAS path asks explicitly.

use particles_candidates::{einsum_dot, round_down_f32, round_up_f32};

/// The OpenBLAS `sdot` kernel whose rounding the query norm reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormKernel {
    /// AVX-512 CPUs (OpenBLAS core SkylakeX and later): 16-lane FMA accumulators.
    SkylakeX,
    /// AVX2 CPUs (OpenBLAS cores Haswell and Zen): 8-lane FMA accumulators.
    Haswell,
}

impl NormKernel {
    /// The kernel OpenBLAS would pick: `OPENBLAS_CORETYPE` when set (as OpenBLAS
    /// honours it), else the CPU's features.
    pub fn detect() -> NormKernel {
        if let Ok(core) = std::env::var("OPENBLAS_CORETYPE") {
            let core = core.to_ascii_lowercase();
            if ["skylakex", "cooperlake", "sapphirerapids"].contains(&core.as_str()) {
                return NormKernel::SkylakeX;
            }
            if !core.is_empty() {
                return NormKernel::Haswell;
            }
        }
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512cd")
            {
                return NormKernel::SkylakeX;
            }
        }
        NormKernel::Haswell
    }
}

/// `sdot(x, x)` as the OpenBLAS kernel computes it (`kernel/x86_64/sdot.c`): the
/// largest multiple of 32 elements through the vector kernel (in f32, fused), the
/// rest as f32 products summed in an f64 in order, the kernel's result added to
/// that f64 last, and the total rounded to f32.
///
/// Checked against NumPy's `x.dot(x)` (OpenBLAS 0.3.31) for lengths 4 to 389,
/// tails included; the stores of the reference's own tests embed in 4 dimensions.
pub fn sdot_openblas(x: &[f32], kernel: NormKernel) -> f32 {
    let n = x.len();
    let blocked = n & !31;
    let kernel_dot = match kernel {
        NormKernel::SkylakeX => sdot_skylakex(&x[..blocked]),
        NormKernel::Haswell => sdot_haswell(&x[..blocked]),
    };
    let mut dot = 0.0f64;
    for &value in &x[blocked..] {
        dot += f64::from(value * value);
    }
    (dot + f64::from(kernel_dot)) as f32
}

fn sdot_skylakex(x: &[f32]) -> f32 {
    let n = x.len();
    let mut wide = [[0.0f32; 16]; 4];
    let mut i = 0;
    while n - i >= 64 {
        for (j, acc) in wide.iter_mut().enumerate() {
            for (lane, slot) in acc.iter_mut().enumerate() {
                let v = x[i + 16 * j + lane];
                *slot = v.mul_add(v, *slot);
            }
        }
        i += 64;
    }
    // Fold each 16-lane accumulator to 8 lanes, then continue in 32-element blocks.
    let mut narrow = [[0.0f32; 8]; 4];
    for (j, acc) in narrow.iter_mut().enumerate() {
        for lane in 0..8 {
            acc[lane] = wide[j][lane] + wide[j][lane + 8];
        }
    }
    while n - i >= 32 {
        for (j, acc) in narrow.iter_mut().enumerate() {
            for (lane, slot) in acc.iter_mut().enumerate() {
                let v = x[i + 8 * j + lane];
                *slot = v.mul_add(v, *slot);
            }
        }
        i += 32;
    }
    let mut sum = [0.0f32; 8];
    for lane in 0..8 {
        sum[lane] = ((narrow[0][lane] + narrow[1][lane]) + narrow[2][lane]) + narrow[3][lane];
    }
    let half: [f32; 4] = std::array::from_fn(|lane| sum[lane] + sum[lane + 4]);
    (half[0] + half[1]) + (half[2] + half[3])
}

fn sdot_haswell(x: &[f32]) -> f32 {
    let n = x.len();
    let mut acc = [[0.0f32; 8]; 4];
    let mut i = 0;
    while n - i >= 32 {
        for (j, a) in acc.iter_mut().enumerate() {
            for (lane, slot) in a.iter_mut().enumerate() {
                let v = x[i + 8 * j + lane];
                *slot = v.mul_add(v, *slot);
            }
        }
        i += 32;
    }
    let folded: [[f32; 4]; 4] =
        std::array::from_fn(|j| std::array::from_fn(|lane| acc[j][lane] + acc[j][lane + 4]));
    let total: [f32; 4] = std::array::from_fn(|lane| {
        (folded[0][lane] + folded[1][lane]) + (folded[2][lane] + folded[3][lane])
    });
    (total[0] + total[1]) + (total[2] + total[3])
}

/// The query side of the cosine, computed once per query.
#[derive(Debug, Clone)]
pub struct QueryVector {
    values: Vec<f32>,
    norm: f32,
    /// `|values|₂` in f64, rounded up, when the question is small enough for
    /// half-precision intervals to be sound ([`QueryVector::similarity_interval`]).
    reach: Option<f64>,
}

impl QueryVector {
    /// Prepares a query vector, computing its norm with the given BLAS kernel.
    pub fn new(values: Vec<f32>, kernel: NormKernel) -> QueryVector {
        let norm = sdot_openblas(&values, kernel).sqrt();
        let length = values
            .iter()
            .map(|&v| f64::from(v) * f64::from(v))
            .sum::<f64>()
            .sqrt()
            * (1.0 + 1e-9);
        // Past 1e15 a product could come near f32's overflow, where the reference's
        // dot and an interval's could fall on different sides of infinity.
        let reach = (length.is_finite() && length <= 1e15).then_some(length);
        QueryVector {
            values,
            norm,
            reach,
        }
    }

    /// Whether [`QueryVector::similarity_interval`] can give intervals for this
    /// question (finite, and far from f32's overflow).
    #[inline]
    pub fn has_intervals(&self) -> bool {
        self.reach.is_some()
    }

    /// The vector.
    #[inline]
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// Its dimension.
    #[inline]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The cosine of `candidate` with this query, exactly as the reference: f32
    /// throughout, `1e-10` added to the norm product, clamped to `0..=1` (NaN stays
    /// NaN), widened to f64.
    pub fn cosine(&self, candidate: &[f32]) -> f64 {
        self.cosine_with_norm(candidate, einsum_dot(candidate, candidate).sqrt())
    }

    /// [`QueryVector::cosine`] with the candidate's norm given (it does not depend
    /// on the question, so a candidate set computes it once per row).
    pub fn cosine_with_norm(&self, candidate: &[f32], candidate_norm: f32) -> f64 {
        self.cosine_from_dot(einsum_dot(candidate, &self.values), candidate_norm)
    }

    /// Bounds of [`QueryVector::cosine_with_norm`] from a dot product `approx`
    /// read from a half-precision copy of the candidate whose `radius` bounds the
    /// gap to the reference's dot (`particles_candidates::HalfView::radius`):
    /// `(low, high)` with the exact cosine between them, bit for bit as the exact
    /// path would compute it. `None` when no interval is sound (a NaN radius, a
    /// non-finite value, a question too large); then read the row exactly.
    ///
    /// Sound because the reference's f32 dot lies in `approx ± |x|·radius`, the
    /// bounds are rounded outward to f32, and f32 division by the same positive
    /// denominator, and the clamp, are monotonic.
    pub fn similarity_interval(
        &self,
        approx: f32,
        radius: f32,
        candidate_norm: f32,
    ) -> Option<(f64, f64)> {
        Some((
            self.similarity_low(approx, radius, candidate_norm)?,
            self.similarity_high(approx, radius, candidate_norm)?,
        ))
    }

    /// The high end of [`QueryVector::similarity_interval`] alone: what a scan
    /// needs of every row (the low end only matters near the cut).
    #[inline]
    pub fn similarity_high(&self, approx: f32, radius: f32, candidate_norm: f32) -> Option<f64> {
        self.interval_end(approx, radius, candidate_norm, true)
    }

    /// The low end of [`QueryVector::similarity_interval`] alone.
    #[inline]
    pub fn similarity_low(&self, approx: f32, radius: f32, candidate_norm: f32) -> Option<f64> {
        self.interval_end(approx, radius, candidate_norm, false)
    }

    #[inline]
    fn interval_end(
        &self,
        approx: f32,
        radius: f32,
        candidate_norm: f32,
        high: bool,
    ) -> Option<f64> {
        let reach = self.reach?;
        let spread = reach * f64::from(radius) * (1.0 + 1e-6) + 1e-30;
        let end = if high {
            f64::from(approx) + spread
        } else {
            f64::from(approx) - spread
        };
        if !end.is_finite() {
            return None;
        }
        let denominator = candidate_norm * self.norm + 1e-10f32;
        if !(denominator.is_finite() && denominator > 0.0) {
            return None;
        }
        let end = if high {
            round_up_f32(end)
        } else {
            round_down_f32(end)
        };
        Some(f64::from((end / denominator).clamp(0.0, 1.0)))
    }

    /// [`QueryVector::similarity_high`] and [`QueryVector::similarity_low`] of
    /// many rows at once: `highs[j]` and `lows[j]` are their values for
    /// `dots[j]`, `radii[j]`, `norms[j]` where they are `Some`, and NaN where
    /// they are `None` (a `Some` is never NaN; a low end is an `f32` widened,
    /// so it is kept as one). The same arithmetic, bit for bit, as
    /// straight-line code over the slices, so that the compiler runs it on
    /// vector registers: a scan calls it for every block of rows, and the low
    /// end, which only the truncation band reads, costs a few instructions
    /// here against a row's reads there.
    pub fn similarity_ends_many(
        &self,
        dots: &[f32],
        radii: &[f32],
        norms: &[f32],
        highs: &mut [f64],
        lows: &mut [f32],
    ) {
        let Some(reach) = self.reach else {
            highs.iter_mut().for_each(|v| *v = f64::NAN);
            lows.iter_mut().for_each(|v| *v = f32::NAN);
            return;
        };
        particles_candidates::interval_ends(reach, self.norm, dots, radii, norms, highs, lows);
    }

    /// [`QueryVector::cosine_from_dot`] of many rows at once, as straight-line
    /// code the compiler vectorizes: `out[j]` for `dots[j]` and `norms[j]`.
    pub fn cosines_from_dots(&self, dots: &[f32], norms: &[f32], out: &mut [f64]) {
        let norm = self.norm;
        for ((out, &dot), &candidate_norm) in out.iter_mut().zip(dots).zip(norms) {
            let denominator = candidate_norm * norm + 1e-10f32;
            *out = f64::from((dot / denominator).clamp(0.0, 1.0));
        }
    }

    /// The cosine from a dot product already computed in einsum order.
    #[inline]
    pub fn cosine_from_dot(&self, dot: f32, candidate_norm: f32) -> f64 {
        let denominator = candidate_norm * self.norm + 1e-10f32;
        let raw = dot / denominator;
        // NumPy's clip keeps NaN and -0.0, as `clamp` does.
        f64::from(raw.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_vector_has_zero_similarity() {
        let q = QueryVector::new(vec![1.0; 384], NormKernel::SkylakeX);
        assert_eq!(q.cosine(&[0.0; 384]), 0.0);
        assert!(q.cosine(&[f32::NAN; 384]).is_nan());
    }

    /// Floats of every kind a scan meets: ordinary, tiny, huge, zero of both
    /// signs, infinite and NaN.
    fn any_float() -> impl proptest::strategy::Strategy<Value = f32> {
        use proptest::prelude::*;
        prop_oneof![
            6 => -2.0f32..2.0,
            1 => prop::sample::select(vec![
                0.0f32, -0.0, 1e-38, -1e-38, 1e-45, 3.0e38, -3.0e38, f32::MAX, f32::INFINITY,
                f32::NEG_INFINITY, f32::NAN, 1.0, -1.0,
            ]),
            1 => any::<f32>(),
        ]
    }

    proptest::proptest! {
        /// The block functions are the row functions, bit for bit.
        #[test]
        fn the_block_ends_are_the_row_ends(
            question in proptest::collection::vec(-1.0f32..1.0, 1..40),
            scale in proptest::sample::select(vec![1.0f32, 1e-20, 1e20, 1e16]),
            rows in proptest::collection::vec((any_float(), any_float(), any_float()), 0..40),
        ) {
            let question: Vec<f32> = question.iter().map(|v| v * scale).collect();
            let q = QueryVector::new(question, NormKernel::SkylakeX);
            let dots: Vec<f32> = rows.iter().map(|r| r.0).collect();
            let radii: Vec<f32> = rows.iter().map(|r| r.1.abs()).collect();
            let norms: Vec<f32> = rows.iter().map(|r| r.2).collect();
            let mut highs = vec![0.0; rows.len()];
            let mut lows = vec![0.0f32; rows.len()];
            q.similarity_ends_many(&dots, &radii, &norms, &mut highs, &mut lows);
            let mut cosines = vec![0.0; rows.len()];
            q.cosines_from_dots(&dots, &norms, &mut cosines);
            for j in 0..rows.len() {
                let one = q.similarity_high(dots[j], radii[j], norms[j]);
                proptest::prop_assert_eq!(
                    one.map(f64::to_bits),
                    (!highs[j].is_nan()).then_some(highs[j].to_bits()),
                    "row {}", j
                );
                let low = q.similarity_low(dots[j], radii[j], norms[j]);
                proptest::prop_assert_eq!(
                    low.map(f64::to_bits),
                    (!lows[j].is_nan()).then_some(f64::from(lows[j]).to_bits()),
                    "row {}", j
                );
                proptest::prop_assert_eq!(
                    q.cosine_from_dot(dots[j], norms[j]).to_bits(),
                    cosines[j].to_bits()
                );
            }
        }

        /// Over a half copy of the candidate, the interval holds the exact cosine.
        #[test]
        fn the_interval_holds_the_exact_cosine(
            row in proptest::collection::vec(-1.0f32..1.0, 384),
            question in proptest::collection::vec(-1.0f32..1.0, 384),
            bias in -1.0f32..1.0,
        ) {
            // A bias makes large cosines as likely as small ones.
            let row: Vec<f32> = row.iter().zip(&question).map(|(r, q)| r + bias * q).collect();
            let mut set = particles_candidates::CandidateSet::new();
            let particle = particles_model::parse_particle_json(
                r#"{"id": "p", "content": "c", "confidence": {"value": 0.5}, "asserted_by": "t", "uncertainty_nature": "EPISTEMIC",
                    "asserted_at": "2025-01-01T00:00:00"}"#,
            ).unwrap().into_inner();
            set.push(1, &particle, &row, None);
            set.prepare_half();
            let half = set.half().unwrap();
            for kernel in [NormKernel::SkylakeX, NormKernel::Haswell] {
                let query = QueryVector::new(question.clone(), kernel);
                let exact = query.cosine_with_norm(&row, set.norm(0));
                let approx = particles_candidates::half_dot_kernel()(query.values(), half.vector(0));
                let (low, high) = query
                    .similarity_interval(approx, half.radius(0), set.norm(0))
                    .unwrap();
                proptest::prop_assert!(low <= exact && exact <= high, "{low} <= {exact} <= {high}");
                proptest::prop_assert!(high - low < 1e-3, "{low}..{high}");
            }
        }
    }

    #[test]
    fn no_interval_without_a_radius_or_for_a_huge_question() {
        let query = QueryVector::new(vec![1.0; 4], NormKernel::Haswell);
        assert!(query.similarity_interval(1.0, f32::NAN, 2.0).is_none());
        assert!(query.similarity_interval(1.0, 1e-4, 2.0).is_some());
        let huge = QueryVector::new(vec![1e20; 4], NormKernel::Haswell);
        assert!(huge.similarity_interval(1.0, 1e-4, 2.0).is_none());
    }

    #[test]
    fn kernels_agree_on_exact_sums() {
        let x = vec![0.5f32; 384];
        assert_eq!(sdot_openblas(&x, NormKernel::SkylakeX), 96.0);
        assert_eq!(sdot_openblas(&x, NormKernel::Haswell), 96.0);
        assert_eq!(sdot_openblas(&x[..37], NormKernel::Haswell), 9.25);
    }

    /// Bits of NumPy 2.4's `x.dot(x)` (OpenBLAS 0.3.31, its SkylakeX kernel) for
    /// `x[i] = f32((i * 7919) % 1000) / 997`: lengths under 32 are all tail (the
    /// same on every kernel), 33 and 71 mix the kernel and the tail.
    #[test]
    fn tails_sum_in_f64_after_the_kernel() {
        let x: Vec<f32> = (0..71u32)
            .map(|i| ((i * 7919) % 1000) as f32 / 997.0)
            .collect();
        for (n, bits) in [(4, 0x4008_7d05), (8, 0x4059_c98e), (31, 0x4135_9266)] {
            assert_eq!(
                sdot_openblas(&x[..n], NormKernel::SkylakeX).to_bits(),
                bits,
                "{n}"
            );
            assert_eq!(
                sdot_openblas(&x[..n], NormKernel::Haswell).to_bits(),
                bits,
                "{n}"
            );
        }
        for (n, bits) in [(33, 0x413c_19b0u32), (71, 0x41bf_6f52)] {
            assert_eq!(
                sdot_openblas(&x[..n], NormKernel::SkylakeX).to_bits(),
                bits,
                "{n}"
            );
        }
    }
}
