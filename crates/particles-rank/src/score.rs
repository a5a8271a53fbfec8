//! Effective confidence and the rank score, in the reference's f64 operation order.

/// Python's `max(a, b)`: `a` unless `b > a` (so `max(0.0, NaN)` is 0.0).
pub fn py_max(a: f64, b: f64) -> f64 {
    if b > a {
        b
    } else {
        a
    }
}

/// Python's `min(a, b)`: `a` unless `b < a`.
pub fn py_min(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// `min(1, max(0, ((value × weight) × trust) × decay)) × discount`, exactly in this
/// order: the discount applies after the clamp.
pub fn effective_confidence(value: f64, weight: f64, trust: f64, decay: f64, discount: f64) -> f64 {
    let product = ((value * weight) * trust) * decay;
    py_min(1.0, py_max(0.0, product)) * discount
}

/// `sw × sim + cw × eff` (each product rounded, then the sum: never a fused
/// multiply-add), then × the narrative weight for a narrative. Not simplified:
/// with no query vector (`sim == eff`) it can differ from `eff` in the last bit,
/// as the reference's does.
#[inline]
pub fn rank_score(
    settings: &crate::RankSettings,
    narrative: bool,
    similarity: f64,
    effective: f64,
) -> f64 {
    let score = settings.similarity_weight * similarity + settings.confidence_weight * effective;
    if narrative {
        score * settings.narrative_rank_weight
    } else {
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance_vectors() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(effective_confidence(0.80, 1.0, 0.90, 1.0, 1.0), 0.72));
        assert!(close(effective_confidence(0.50, 0.8, 1.0, 0.5, 1.0), 0.20));
        assert_eq!(effective_confidence(0.90, 1.0, 1.0, 1.0, 1.0), 0.90);
        assert_eq!(effective_confidence(0.95, 1.5, 1.0, 1.0, 1.0), 1.0);
        assert_eq!(effective_confidence(-0.1, 1.0, 1.0, 1.0, 1.0), 0.0);
        assert_eq!(effective_confidence(f64::NAN, 1.0, 1.0, 1.0, 1.0), 0.0);
        assert_eq!(effective_confidence(1.0, 1.0, 1.0, 1.0, 0.5), 0.5);
    }
}
