//! Effective confidence and the rank score, in the reference's f64 operation order.

/// The weight of similarity in the rank score (`query.similarity_weight`).
pub const SIMILARITY_WEIGHT: f64 = 0.6;
/// The weight of effective confidence in the rank score (`query.confidence_weight`).
pub const CONFIDENCE_WEIGHT: f64 = 0.4;
/// The multiplier of a NARRATIVE particle's score (`query.narrative_rank_weight`).
pub const NARRATIVE_RANK_WEIGHT: f64 = 0.6;
/// The factor of a derived particle with a missing or non-ACTIVE premise
/// (`consolidation.abstraction.stale_support_discount`).
pub const STALE_SUPPORT_DISCOUNT: f64 = 0.5;

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

/// `0.6 × sim + 0.4 × eff`, then × 0.6 for a narrative. Not simplified: with no
/// query vector (`sim == eff`) it can differ from `eff` in the last bit, as the
/// reference's does.
pub fn rank_score(narrative: bool, similarity: f64, effective: f64) -> f64 {
    let score = SIMILARITY_WEIGHT * similarity + CONFIDENCE_WEIGHT * effective;
    if narrative {
        score * NARRATIVE_RANK_WEIGHT
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
