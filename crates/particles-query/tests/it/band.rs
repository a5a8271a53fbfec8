//! The truncation band scored after the cut (`band.rs`) against the walk that
//! scores every candidate: the same hits, the same warning, and every score the
//! warning can count or compare, bit for bit.

use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query, truncation_warning, QueryInput, TruncationSettings};
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
        let input = |exhaustive: bool| QueryInput {
            norm_kernel: NormKernel::SkylakeX,
            prune_margin: margin,
            exhaustive,
            ..QueryInput::new(&request, vector.as_deref(), now)
        };
        let band = run_query(&store, &input(false)).unwrap();
        let every = run_query(&store, &input(true)).unwrap();
        prop_assert_eq!(&band.hits, &every.hits);
        let rank = RankSettings::default();
        prop_assert_eq!(
            truncation_warning(&band, top_k, &rank, &settings),
            truncation_warning(&every, top_k, &rank, &settings)
        );
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
