//! The truncation band scored after the cut (`band.rs`) against the walk that
//! scores every candidate: the same hits, the same warning, and every score the
//! warning can count or compare, bit for bit. And the same after a scan of the
//! half-precision copy (a cache with `set_half_precision`), where the band
//! settles rows by their intervals: the same hits and warning, the same count
//! at the warning's floor and the same best score within the band.

use particles_cache::CandidateCache;
use particles_model::{QueryRequest, Timestamp};
use particles_query::{
    run_query, run_query_with, truncation_warning, QueryInput, TruncationSettings,
};
use particles_rank::{NormKernel, RankSettings};
use particles_store::Store;
use proptest::prelude::*;

use crate::batch::{fixture, unit_vector};

/// The scores at or above `floor` (NaN too), sorted by their bits.
fn band_scores(scores: &[f64], floor: f64) -> Vec<u64> {
    let mut bits: Vec<u64> = scores
        .iter()
        .filter(|s| **s >= floor || s.is_nan())
        .map(|s| s.to_bits())
        .collect();
    bits.sort_unstable();
    bits
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn the_band_after_the_cut_equals_the_exhaustive_walk(
        store_name in prop_oneof![Just("coins-a.db"), Just("coins-b.db")],
        seed in prop::option::weighted(0.9, 0u64..40),
        top_k in 1u32..40,
        min_confidence in prop_oneof![Just(0.0), Just(0.3), Just(0.6)],
        near_margin in prop_oneof![Just(0.15), 0.0f64..0.4],
        min_gap in prop_oneof![Just(0.05), 0.0f64..0.2],
        near_count in prop_oneof![Just(5i64), 0i64..12],
    ) {
        let store = Store::open_read_only(&fixture(store_name)).unwrap();
        let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
        let request = QueryRequest {
            top_k,
            min_confidence,
            ..QueryRequest::question("q")
        }
        .validate(now)
        .unwrap();
        let vector = seed.map(unit_vector);
        let settings = TruncationSettings { min_gap, near_margin, near_count };
        let margin = settings.prune_margin();
        let input = |exhaustive: bool| {
            QueryInput {
                norm_kernel: NormKernel::SkylakeX,
                exhaustive,
                ..QueryInput::new(&request, vector.as_deref(), now)
            }
            .with_truncation(&settings)
        };
        let band = run_query(&store, &input(false)).unwrap();
        let every = run_query(&store, &input(true)).unwrap();
        let mut cache = CandidateCache::new();
        cache.set_half_precision(Some(0));
        let half = run_query_with(&store, &mut cache, &input(false)).unwrap();
        prop_assert!(cache.candidates().is_some_and(|set| set.half().is_some()));
        prop_assert_eq!(&band.hits, &every.hits);
        prop_assert_eq!(&half.hits, &every.hits);
        let rank = RankSettings::default();
        let warning = truncation_warning(&every, top_k, &rank, &settings);
        prop_assert_eq!(&truncation_warning(&band, top_k, &rank, &settings), &warning);
        prop_assert_eq!(&truncation_warning(&half, top_k, &rank, &settings), &warning);
        if let Some(last) = half.hits.last() {
            let last = particles_rank::rank_score(
                &rank,
                last.particle.particle_type == particles_model::ParticleType::Narrative,
                last.similarity,
                last.effective_confidence,
            );
            let floor = last - near_margin;
            let near = |scores: &[f64]| scores.iter().filter(|s| **s >= floor).count();
            // The best score within the band (`last - margin`): one below it
            // leaves a gap wider than `min_gap` whichever it is, and no count
            // at the floor, so neither path needs to know it.
            let best = |scores: &[f64]| scores.iter().copied()
                .filter(|s| *s >= last - margin || s.is_nan())
                .reduce(|a, b| if a.is_nan() || (!b.is_nan() && a >= b) { a } else { b })
                .map(f64::to_bits);
            prop_assert_eq!(near(&half.beyond_cut), near(&every.beyond_cut));
            prop_assert_eq!(best(&half.beyond_cut), best(&every.beyond_cut));
        }
        if let Some(last) = band.hits.last() {
            let last = particles_rank::rank_score(
                &rank,
                last.particle.particle_type == particles_model::ParticleType::Narrative,
                last.similarity,
                last.effective_confidence,
            );
            prop_assert_eq!(
                band_scores(&band.beyond_cut, last - margin),
                band_scores(&every.beyond_cut, last - margin)
            );
        }
    }
}

/// The proptest above is not vacuous: on a fixture, the half-precision band
/// settles most of its rows by their intervals and reads only a few exactly.
#[test]
fn the_half_precision_band_settles_rows_without_reading_them() {
    let store = Store::open_read_only(&fixture("coins-b.db")).unwrap();
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest {
        top_k: 3,
        ..QueryRequest::question("q")
    }
    .validate(now)
    .unwrap();
    let vector = unit_vector(7);
    let settings = TruncationSettings {
        near_margin: 0.4,
        ..TruncationSettings::default()
    };
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(&request, Some(&vector), now)
    }
    .with_truncation(&settings);
    let mut cache = CandidateCache::new();
    cache.set_half_precision(Some(0));
    let half = run_query_with(&store, &mut cache, &input).unwrap();
    let exact = run_query(&store, &input).unwrap();
    assert_eq!(half.hits, exact.hits);
    let band = half.work.candidates_scored - half.hits.len();
    assert!(band > 20, "a band of {band} rows");
    assert!(
        half.work.band_rows_read_exactly * 4 < band,
        "{} of {band} rows read exactly",
        half.work.band_rows_read_exactly
    );
}
