//! The benchmarks' one quantile definition.
//!
//! Every percentile a benchmark page reports (query latency, serve-load steps,
//! the writer's commit latency, `Server-Timing` stages) comes from [`quantile`]:
//! NumPy's default, `numpy.quantile(values, q)` with `method="linear"`, the
//! definition the reference's own harness reports with.

/// The `q`-quantile (`q` in `0..=1`) of `values`, in any order, as NumPy's
/// default computes it: the sorted values' linear interpolation at position
/// `q * (n - 1)`, with NumPy's `_lerp` (from the upper neighbour when the
/// fraction is at least one half), so the result is NumPy's to the last bit.
/// `None` for no values. NaNs sort last (`f64::total_cmp`).
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let sorted_copy;
    let sorted = if values.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
        values
    } else {
        let mut copy = values.to_vec();
        copy.sort_by(f64::total_cmp);
        sorted_copy = copy;
        &sorted_copy
    };
    let last = sorted.len() - 1;
    let position = q.clamp(0.0, 1.0) * last as f64;
    let below = (position.floor() as usize).min(last);
    let above = (below + 1).min(last);
    let fraction = position - below as f64;
    let (a, b) = (sorted[below], sorted[above]);
    let difference = b - a;
    Some(if fraction >= 0.5 {
        b - difference * (1.0 - fraction)
    } else {
        a + difference * fraction
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        // numpy.quantile(values, q) for each case.
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.50), Some(2.5));
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0], 0.50), Some(2.5));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95), Some(4.8));
        assert_eq!(quantile(&[7.0], 0.99), Some(7.0));
        assert_eq!(quantile(&[1.0, 2.0], 0.0), Some(1.0));
        assert_eq!(quantile(&[1.0, 2.0], 1.0), Some(2.0));
        assert_eq!(quantile(&[], 0.5), None);
        let values: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(quantile(&values, 0.5), Some(500.5));
        assert_eq!(quantile(&values, 0.99), Some(990.01));
        assert_eq!(quantile(&values, 0.999), Some(999.001));
        assert_eq!(quantile(&[5.5, 7.5], 0.99), Some(7.48));
    }
}
