//! What the topics share: the fixture stores, question vectors, and a request
//! ranked and responded to in one read transaction, as the engine does it.

use std::path::PathBuf;

use particles_model::response::QueryResponse;
use particles_query::{run_semantic_batch_streaming, QueryInput, QueryOutcome};
use particles_respond::{semantic_response, ResponseSettings};
use particles_store::{CandidateLoader, Store};

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

/// Ranks one semantic request and builds its response in the same read
/// transaction of `store`, as the engine does: the ranking hands its outcome
/// out with the store inside its transaction (a batch of one), and the
/// response is built there. A ranking error fails the test; the response's
/// error is returned.
pub(crate) fn run_semantic(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
    settings: &ResponseSettings,
) -> particles_respond::Result<(QueryOutcome, QueryResponse)> {
    let mut answer = None;
    run_semantic_batch_streaming(
        store,
        loader,
        std::slice::from_ref(input),
        &settings.observer_harness_tags,
        &mut || {},
        &mut |_, snapshot, outcome| {
            let outcome = outcome.expect("the ranking");
            answer = Some(
                semantic_response(snapshot, &outcome, input, settings)
                    .map(|response| (outcome, response)),
            );
        },
    )
    .expect("the read transaction");
    answer.expect("the batch answers its one request")
}
