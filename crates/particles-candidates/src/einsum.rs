//! The dot product in NumPy `einsum`'s reduction order for contiguous f32 (the
//! x86-64 wheel's SSE baseline): four lanes, each block of 16 visited as
//! sub-blocks 3, 2, 1, 0, a zero-padded tail four at a time, lanes summed as
//! `(l0 + l1) + (l2 + l3)`, multiply and add never fused. The reference computes
//! every candidate's dot with the question and its norm this way, so the bits of
//! `similarity` depend on this order.
//!
//! It lives beside `CandidateSet` because a candidate's norm does not depend on the
//! question: loaders compute it once per row.

/// `a · b` in einsum's order. Slices of unequal length are read up to the shorter.
pub fn einsum_dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        sse::dot(a, b)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        einsum_dot_portable(a, b)
    }
}

/// `a · b` as [`einsum_dot`] computes it (the same bits), and the wrapping sum of
/// `a`'s words as `u32` ([`fold_bits`]): the integrity check of a stored vector
/// rides along the scan that reads it anyway, at the cost of one integer add per
/// four floats.
pub fn einsum_dot_checked(a: &[f32], b: &[f32]) -> (f32, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        sse::dot_checked(a, b)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let n = a.len().min(b.len());
        (einsum_dot_portable(a, b), fold_bits(&a[..n]))
    }
}

/// The wrapping sum of the floats' bit patterns as `u32`: order-free, so any
/// split of the work gives the same value, and any one flipped bit changes it.
pub fn fold_bits(values: &[f32]) -> u32 {
    values
        .iter()
        .fold(0u32, |acc, v| acc.wrapping_add(v.to_bits()))
}

/// The same reduction in plain Rust, for other targets and as the oracle of the SSE
/// path.
pub fn einsum_dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 4];
    let mut i = 0;
    while n - i >= 16 {
        for block in [3usize, 2, 1, 0] {
            let base = i + 4 * block;
            for lane in 0..4 {
                acc[lane] += a[base + lane] * b[base + lane];
            }
        }
        i += 16;
    }
    while i < n {
        for lane in 0..4 {
            // The padded lanes add +0.0, which turns an accumulated -0.0 into +0.0
            // exactly as the vector load of zeros does.
            let product = if i + lane < n {
                a[i + lane] * b[i + lane]
            } else {
                0.0
            };
            acc[lane] += product;
        }
        i += 4;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

#[cfg(target_arch = "x86_64")]
mod sse {
    use core::arch::x86_64::{
        _mm_add_epi32, _mm_add_ps, _mm_castps_si128, _mm_loadu_ps, _mm_mul_ps, _mm_setzero_ps,
        _mm_setzero_si128, _mm_storeu_ps, _mm_storeu_si128,
    };

    /// [`dot`] with the wrapping sum of `a`'s words accumulated from the same loads.
    pub(super) fn dot_checked(a: &[f32], b: &[f32]) -> (f32, u32) {
        let n = a.len().min(b.len());
        let mut i = 0;
        // SAFETY: as in `dot`: SSE2 is the x86-64 baseline, every load reads four
        // floats inside both slices, `loadu`/`storeu` need no alignment, and the
        // cast reinterprets the loaded bits without touching memory.
        let (lanes, folds) = unsafe {
            let mut acc = _mm_setzero_ps();
            let mut fold = _mm_setzero_si128();
            while n - i >= 16 {
                for block in [3usize, 2, 1, 0] {
                    let x = _mm_loadu_ps(a.as_ptr().add(i + 4 * block));
                    let y = _mm_loadu_ps(b.as_ptr().add(i + 4 * block));
                    acc = _mm_add_ps(_mm_mul_ps(x, y), acc);
                    fold = _mm_add_epi32(fold, _mm_castps_si128(x));
                }
                i += 16;
            }
            while i < n {
                let mut x = [0.0f32; 4];
                let mut y = [0.0f32; 4];
                let take = (n - i).min(4);
                x[..take].copy_from_slice(&a[i..i + take]);
                y[..take].copy_from_slice(&b[i..i + take]);
                let xv = _mm_loadu_ps(x.as_ptr());
                acc = _mm_add_ps(_mm_mul_ps(xv, _mm_loadu_ps(y.as_ptr())), acc);
                fold = _mm_add_epi32(fold, _mm_castps_si128(xv));
                i += 4;
            }
            let mut lanes = [0.0f32; 4];
            _mm_storeu_ps(lanes.as_mut_ptr(), acc);
            let mut folds = [0u32; 4];
            _mm_storeu_si128(folds.as_mut_ptr().cast(), fold);
            (lanes, folds)
        };
        let folded = folds.iter().fold(0u32, |sum, lane| sum.wrapping_add(*lane));
        ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]), folded)
    }

    /// SSE is part of the x86-64 baseline, so no run-time detection is needed; the
    /// separate `mulps` and `addps` are exactly NumPy's unfused multiply-add.
    pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let mut i = 0;
        // SAFETY: SSE is always available on x86-64; every load reads four floats at
        // `i + 4 * block + 3 < n`, inside both slices, and `loadu` needs no alignment.
        let lanes = unsafe {
            let mut acc = _mm_setzero_ps();
            while n - i >= 16 {
                for block in [3usize, 2, 1, 0] {
                    let x = _mm_loadu_ps(a.as_ptr().add(i + 4 * block));
                    let y = _mm_loadu_ps(b.as_ptr().add(i + 4 * block));
                    acc = _mm_add_ps(_mm_mul_ps(x, y), acc);
                }
                i += 16;
            }
            while i < n {
                let mut x = [0.0f32; 4];
                let mut y = [0.0f32; 4];
                let take = (n - i).min(4);
                x[..take].copy_from_slice(&a[i..i + take]);
                y[..take].copy_from_slice(&b[i..i + take]);
                acc = _mm_add_ps(
                    _mm_mul_ps(_mm_loadu_ps(x.as_ptr()), _mm_loadu_ps(y.as_ptr())),
                    acc,
                );
                i += 4;
            }
            let mut lanes = [0.0f32; 4];
            _mm_storeu_ps(lanes.as_mut_ptr(), acc);
            lanes
        };
        (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_checked_kernel_is_the_kernel_and_the_fold(
            a in prop::collection::vec(-1.0f32..1.0, 0..400),
            b in prop::collection::vec(-1.0f32..1.0, 0..400),
        ) {
            let n = a.len().min(b.len());
            let (dot, fold) = einsum_dot_checked(&a, &b);
            prop_assert_eq!(dot.to_bits(), einsum_dot(&a, &b).to_bits());
            prop_assert_eq!(fold, fold_bits(&a[..n]));
        }
    }

    #[test]
    fn exact_on_small_sums() {
        let a: Vec<f32> = (0..5).map(|i| i as f32 * 0.5).collect();
        assert_eq!(einsum_dot(&a, &a), 7.5);
        assert_eq!(einsum_dot(&[], &[]), 0.0);
    }

    proptest! {
        #[test]
        fn sse_equals_the_portable_order(
            pairs in prop::collection::vec((-1.0f32..1.0, -1.0f32..1.0), 0..700),
        ) {
            let (a, b): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
            prop_assert_eq!(einsum_dot(&a, &b).to_bits(), einsum_dot_portable(&a, &b).to_bits());
        }
    }
}
