//! A batch of requests answers each exactly as it is answered alone: the shared
//! pass over the vectors, the per-lane filters and the fallbacks for requests
//! that cannot share (tags, claims, as-of, windows) change no hit, bit or count.

use std::path::PathBuf;

use particles_cache::CandidateCache;
use particles_model::{AssertionModality, QueryRequest, Timestamp, UncertaintyNature};
use particles_query::{run_query, run_query_batch, QueryInput, TruncationSettings};
use particles_rank::NormKernel;
use particles_store::{Store, UncachedLoader};
use proptest::prelude::*;

pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/stores")
        .join(name)
}

pub(crate) fn unit_vector(seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut values: Vec<f32> = (0..384)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    let norm = values.iter().map(|v| v * v).sum::<f32>().sqrt();
    values.iter_mut().for_each(|v| *v /= norm);
    values
}

#[derive(Debug, Clone)]
struct Spec {
    vector: Option<u64>,
    top_k: u32,
    min_confidence: f64,
    nature: Option<UncertaintyNature>,
    modality: Option<AssertionModality>,
    meta: bool,
    tag: bool,
    as_of: bool,
    /// The response's pruning margin (the truncation band scored after the cut).
    margin: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::option::weighted(0.85, 0u64..6),
        1u32..30,
        prop_oneof![Just(0.0), Just(0.3), Just(0.6)],
        prop::option::weighted(
            0.2,
            prop_oneof![
                Just(UncertaintyNature::Aleatory),
                Just(UncertaintyNature::Epistemic)
            ],
        ),
        prop::option::weighted(
            0.2,
            prop_oneof![
                Just(AssertionModality::Falsifiable),
                Just(AssertionModality::Evaluative)
            ],
        ),
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        any::<bool>(),
    )
        .prop_map(
            |(vector, top_k, min_confidence, nature, modality, meta, tag, as_of, margin)| Spec {
                vector,
                top_k,
                min_confidence,
                nature,
                modality,
                meta,
                tag,
                as_of,
                margin,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn a_batch_answers_each_request_as_alone(specs in prop::collection::vec(spec(), 1..7)) {
        let store = Store::open_read_only(&fixture("coins-b.db")).unwrap();
        let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
        let requests: Vec<_> = specs
            .iter()
            .map(|spec| {
                QueryRequest {
                    top_k: spec.top_k,
                    min_confidence: spec.min_confidence,
                    uncertainty_nature: spec.nature,
                    assertion_modality: spec.modality,
                    include_document_meta: spec.meta,
                    tags: if spec.tag { vec!["none-such".to_owned()] } else { Vec::new() },
                    as_of: spec.as_of.then(|| Timestamp::parse("2025-01-01T00:00:00Z").unwrap()),
                    ..QueryRequest::question("q")
                }
                .validate(now)
                .unwrap()
            })
            .collect();
        let vectors: Vec<Option<Vec<f32>>> = specs.iter().map(|s| s.vector.map(unit_vector)).collect();
        let inputs: Vec<QueryInput<'_>> = requests
            .iter()
            .zip(&vectors)
            .zip(&specs)
            .map(|((request, vector), spec)| {
                let input = QueryInput {
                    norm_kernel: NormKernel::SkylakeX,
                    ..QueryInput::new(request, vector.as_deref(), now)
                };
                if spec.margin {
                    input.with_truncation(&TruncationSettings::default())
                } else {
                    input
                }
            })
            .collect();
        let batch = run_query_batch(&store, &mut UncachedLoader, &inputs).unwrap();
        // The same batch over a half-precision scan (as `serve` runs it): the same
        // hits, and the same truncation count and best score.
        let mut cache = CandidateCache::new();
        cache.set_half_precision(Some(0));
        let half = run_query_batch(&store, &mut cache, &inputs).unwrap();
        for ((input, half), spec) in inputs.iter().zip(half).zip(&specs) {
            let alone = run_query(&store, input).unwrap();
            let half = half.unwrap();
            prop_assert_eq!(&half.hits, &alone.hits);
            if spec.margin {
                if let Some(last) = alone.hits.last() {
                    let last = particles_rank::rank_score(
                        input.settings,
                        last.particle.particle_type == particles_model::ParticleType::Narrative,
                        last.similarity,
                        last.effective_confidence,
                    );
                    let floor = last - TruncationSettings::default().near_margin;
                    prop_assert_eq!(half.beyond_cut.near(floor), alone.beyond_cut.near(floor));
                    prop_assert_eq!(
                        half.beyond_cut.best().map(f64::to_bits),
                        alone.beyond_cut.best().map(f64::to_bits)
                    );
                }
            }
        }
        for (input, batched) in inputs.iter().zip(batch) {
            let alone = run_query(&store, input).unwrap();
            let batched = batched.unwrap();
            prop_assert_eq!(&batched.hits, &alone.hits);
            prop_assert_eq!(batched.stats, alone.stats);
            // In no particular order.
            let bits = |scores: &[f64]| {
                let mut bits: Vec<u64> = scores.iter().map(|s| s.to_bits()).collect();
                bits.sort_unstable();
                bits
            };
            prop_assert_eq!(bits(&batched.beyond_cut.scores), bits(&alone.beyond_cut.scores));
            let counted = |o: &particles_query::QueryOutcome| {
                let c = o.beyond_cut.counted;
                (c.floor.to_bits(), c.count, c.best.to_bits())
            };
            prop_assert_eq!(counted(&batched), counted(&alone));
        }
    }
}
