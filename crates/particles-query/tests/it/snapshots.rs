//! Rankings of the fixture stores as readable tables, reviewed with `cargo insta`.
//! A change in ranking, score or factor shows up here as a diff. (Whether the
//! ranking is *right* is the reference-equivalence test's job.)

use std::{fmt::Write, path::PathBuf};

use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query, QueryInput};
use particles_rank::NormKernel;
use particles_store::Store;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/stores")
        .join(name)
}

fn vector(name: &str) -> Vec<f32> {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    particles_store::decode_embedding(text.trim()).unwrap()
}

/// The ranking as a table: one line per hit with its factors.
fn ranking(store: &str, vector_file: Option<&str>, request: QueryRequest) -> String {
    let store = Store::open_read_only(&fixture(store)).unwrap();
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = request.validate(now).unwrap();
    let vector = vector_file.map(vector);
    let input = QueryInput {
        // Fixed, so the snapshot does not depend on the CPU it runs on.
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(&request, vector.as_deref(), now)
    };
    let outcome = run_query(&store, &input).unwrap();
    let mut out = String::new();
    for (rank, hit) in outcome.hits.iter().enumerate() {
        writeln!(
            out,
            "{:>2}  {}  sim={:.6}  eff={:.6}  score={:.6}  w={:.2} trust={:.4} decay={:.4} disc={:.1}  {}",
            rank + 1,
            &hit.particle.id[..8],
            hit.similarity,
            hit.effective_confidence,
            hit.score,
            hit.factors.extractor_weight,
            hit.factors.source_trust,
            hit.factors.decay,
            hit.factors.discount,
            hit.particle.particle_type,
        )
        .unwrap();
    }
    let stats = outcome.stats;
    writeln!(
        out,
        "candidates={} skipped_other_model={} filtered_out={} below_min={} collapsed={} pruned={}",
        stats.candidates,
        stats.skipped_other_model,
        stats.filtered_out,
        stats.below_min_confidence,
        stats.collapsed,
        stats.pruned
    )
    .unwrap();
    out
}

fn top(k: u32) -> QueryRequest {
    QueryRequest {
        top_k: k,
        ..QueryRequest::question("which coins are rare?")
    }
}

#[test]
fn coins_a_by_question_vector() {
    insta::assert_snapshot!(ranking(
        "coins-a.db",
        Some("coins-a.question.json"),
        top(15)
    ));
}

#[test]
fn coins_a_by_confidence_alone() {
    insta::assert_snapshot!(ranking("coins-a.db", None, top(15)));
}

#[test]
fn coins_b_by_question_vector() {
    insta::assert_snapshot!(ranking(
        "coins-b.db",
        Some("coins-b.question.json"),
        top(20)
    ));
}

#[test]
fn coins_b_with_every_default_filter_off() {
    let request = QueryRequest {
        include_document_meta: true,
        include_non_asserted: true,
        min_confidence: 0.3,
        ..top(20)
    };
    insta::assert_snapshot!(ranking("coins-b.db", Some("coins-b.near.json"), request));
}
