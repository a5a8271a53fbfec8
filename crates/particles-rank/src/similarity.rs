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

use particles_candidates::einsum_dot;

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

/// `sdot(x, x)` as the OpenBLAS kernel computes it.
///
/// Verified against the reference for length 384 (no tail). For lengths that are
/// not a multiple of 32 the scalar tail is a fused multiply-add per element, which
/// was not verified.
pub fn sdot_openblas(x: &[f32], kernel: NormKernel) -> f32 {
    let n = x.len();
    let blocked = n & !31;
    let mut dot = match kernel {
        NormKernel::SkylakeX => sdot_skylakex(&x[..blocked]),
        NormKernel::Haswell => sdot_haswell(&x[..blocked]),
    };
    for &value in &x[blocked..] {
        dot = value.mul_add(value, dot);
    }
    dot
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
}

impl QueryVector {
    /// Prepares a query vector, computing its norm with the given BLAS kernel.
    pub fn new(values: Vec<f32>, kernel: NormKernel) -> QueryVector {
        let norm = sdot_openblas(&values, kernel).sqrt();
        QueryVector { values, norm }
    }

    /// The vector.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// Its dimension.
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

    /// The cosine from a dot product already computed in einsum order.
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

    #[test]
    fn kernels_agree_on_exact_sums() {
        let x = vec![0.5f32; 384];
        assert_eq!(sdot_openblas(&x, NormKernel::SkylakeX), 96.0);
        assert_eq!(sdot_openblas(&x, NormKernel::Haswell), 96.0);
        assert_eq!(sdot_openblas(&x[..37], NormKernel::Haswell), 9.25);
    }
}
