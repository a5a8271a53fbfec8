//! The streaming batch the engine runs, with each response built in the
//! ranking's snapshot: every request answered once, after its group's shared
//! pass, each whole response equal to the request's lone one.

use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_semantic_batch_streaming, QueryInput};
use particles_rank::NormKernel;
use particles_respond::{semantic_response, ResponseSettings};
use particles_store::{Store, UncachedLoader};

use crate::support::{fixture, run_semantic, unit_vector};

/// The streaming batch a server runs: every request answered once, each
/// shared pass over before the first answer of its group, and each whole
/// response equal to the request's lone response (`run_semantic`).
#[test]
fn a_streamed_batch_answers_each_once_after_its_passes() {
    let store = Store::open_read_only(&fixture("coins-b.db")).unwrap();
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let requests: Vec<_> = [(0.0, false), (0.3, false), (0.0, true), (0.0, false)]
        .iter()
        .map(|&(min_confidence, tag)| {
            QueryRequest {
                top_k: 7,
                min_confidence,
                tags: if tag {
                    vec!["none-such".to_owned()]
                } else {
                    Vec::new()
                },
                ..QueryRequest::question("q")
            }
            .validate(now)
            .unwrap()
        })
        .collect();
    let vectors: Vec<Vec<f32>> = (0..requests.len() as u64).map(unit_vector).collect();
    let inputs: Vec<QueryInput<'_>> = requests
        .iter()
        .zip(&vectors)
        .map(|(request, vector)| QueryInput {
            norm_kernel: NormKernel::SkylakeX,
            ..QueryInput::new(request, Some(vector), now)
        })
        .collect();
    let settings = ResponseSettings::default();
    let mut events: Vec<Option<usize>> = Vec::new();
    let mut answers = Vec::new();
    {
        let events = std::cell::RefCell::new(&mut events);
        run_semantic_batch_streaming(
            &store,
            &mut UncachedLoader,
            &inputs,
            &settings.observer_harness_tags,
            &mut || events.borrow_mut().push(None),
            &mut |at, snapshot, outcome| {
                events.borrow_mut().push(Some(at));
                // The response, built in the ranking's snapshot as the engine
                // builds it.
                let answer = outcome.map(|outcome| {
                    let response = semantic_response(snapshot, &outcome, &inputs[at], &settings);
                    (outcome, response)
                });
                answers.push((at, answer));
            },
        )
        .unwrap();
    }
    // The two groups' passes (min_confidence 0.0 and 0.3) end before any
    // answer; the tagged request, which cannot share, comes last.
    assert_eq!(events[0], None, "{events:?}");
    assert_eq!(events.iter().filter(|e| e.is_none()).count(), 1);
    let mut order: Vec<usize> = events.iter().flatten().copied().collect();
    assert_eq!(order.last(), Some(&2));
    order.sort_unstable();
    assert_eq!(order, [0, 1, 2, 3]);
    for (at, answer) in answers {
        let (outcome, response) = answer.unwrap();
        let response = response.unwrap();
        let (alone_outcome, alone) =
            run_semantic(&store, &mut UncachedLoader, &inputs[at], &settings).unwrap();
        assert_eq!(outcome.hits, alone_outcome.hits);
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            serde_json::to_value(&alone).unwrap(),
            "request {at}"
        );
    }
}
