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
    // A vector near the store's embeddings, so the similarities mean something.
    insta::assert_snapshot!(ranking(
        "coins-a.db",
        Some("coins-a.centroid.json"),
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

/// coins-a with what the query surface filters on added: a taxonomy with tags,
/// world-time validity (events and states, some closed) and typed claims.
fn rich_fixture(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("coins-rich.db");
    std::fs::copy(fixture("coins-a.db"), &path).unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute_batch(
            r#"
            INSERT INTO tag_nodes (taxonomy_id, tag, parent, aliases_json) VALUES
                ('coins', 'metal', NULL, '[]'),
                ('coins', 'gold', 'metal', '[]'),
                ('coins', 'silver', 'metal', '[]');
            INSERT INTO particle_tag_edges (particle_id, tag)
                SELECT id, CASE WHEN rowid % 3 = 0 THEN 'gold' WHEN rowid % 3 = 1 THEN 'silver' ELSE 'metal' END
                FROM particles WHERE rowid % 2 = 0;
            UPDATE particles SET valid_from = printf('20%02d-0%d-15 00:00:00.000000', 10 + rowid % 12, 1 + rowid % 9),
                                 valid_kind = CASE WHEN rowid % 4 = 0 THEN 'EVENT' ELSE 'STATE' END
                WHERE rowid % 3 != 2;
            UPDATE particles SET valid_until = printf('20%02d-12-31 00:00:00.000000', 12 + rowid % 12)
                WHERE valid_kind = 'STATE' AND rowid % 5 = 0;
            UPDATE particles SET structured_claim_json = printf(
                    '{"subject": {"kind": "TOKEN", "value": "coin"}, "predicate": {"kind": "TOKEN", "value": "%s"}, "object": {"kind": "LITERAL", "value": "%s", "datatype": "%s"}}',
                    CASE WHEN rowid % 2 = 0 THEN 'weighs' ELSE 'minted' END,
                    CASE WHEN rowid % 2 = 0 THEN printf('%d.5', rowid % 9) ELSE printf('19%02d-06-01', rowid % 90) END,
                    CASE WHEN rowid % 2 = 0 THEN 'xsd:decimal' ELSE 'xsd:date' END),
                structurizer_id = 'gen', structurizer_version = '1',
                structured_claim_generated_at = '2024-01-01 00:00:00.000000'
                WHERE rowid % 4 = 1;
            "#,
        )
        .unwrap();
    path
}

/// A ranking of the rich fixture with the as-of and window annotations.
fn annotated(request: QueryRequest) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = rich_fixture(dir.path());
    let store = Store::open_read_only(&path).unwrap();
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = request.validate(now).unwrap();
    let vector = vector("coins-a.centroid.json");
    let input = QueryInput {
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(&request, Some(&vector), now)
    };
    let outcome = run_query(&store, &input).unwrap();
    let mut out = String::new();
    for hit in &outcome.hits {
        let note = match (&hit.as_of_note, &hit.window_hit) {
            (Some(note), _) => format!(
                "retired {} ({}) at {}",
                note.status,
                note.basis.as_str(),
                note.retired_at
            ),
            (None, Some(window)) => format!(
                "{} from {}{}",
                window.reading.as_str(),
                window.valid_from,
                window
                    .closed_at
                    .map(|t| format!(" closed {t}"))
                    .unwrap_or_default()
            ),
            (None, None) => String::new(),
        };
        writeln!(
            out,
            "{:>2}  {}  sim={:.6}  eff={:.6}  {}",
            hit.rank,
            &hit.id[..8],
            hit.similarity,
            hit.effective_confidence,
            note
        )
        .unwrap();
    }
    writeln!(
        out,
        "candidates={} filtered_out={} undatable={} window={:?} claims={:?} unknown_tags={:?}",
        outcome.stats.candidates,
        outcome.stats.filtered_out,
        outcome.as_of_excluded_undatable,
        outcome.window_coverage,
        outcome.claim_coverage,
        outcome.unknown_tags
    )
    .unwrap();
    out
}

#[test]
fn as_of_a_past_instant() {
    insta::assert_snapshot!(annotated(QueryRequest {
        as_of: Some(Timestamp::parse("2025-03-01T00:00:00Z").unwrap()),
        ..top(12)
    }));
}

#[test]
fn window_of_a_decade() {
    insta::assert_snapshot!(annotated(QueryRequest {
        window: Some(particles_model::TimeWindow {
            start: Some(Timestamp::parse("2012-01-01T00:00:00Z").unwrap()),
            end: Some(Timestamp::parse("2016-12-31T23:59:59Z").unwrap()),
        }),
        ..top(12)
    }));
}

#[test]
fn tag_subtree_and_an_unknown_tag() {
    insta::assert_snapshot!(annotated(QueryRequest {
        tags: vec!["metal".to_owned(), "platinum".to_owned()],
        ..top(12)
    }));
}

#[test]
fn typed_claim_bounds() {
    insta::assert_snapshot!(annotated(QueryRequest {
        predicate: Some("WEIGHS".to_owned()),
        object_gt: Some("2".to_owned()),
        ..top(12)
    }));
    insta::assert_snapshot!(annotated(QueryRequest {
        predicate: Some("minted".to_owned()),
        object_lt: Some("1950-01-01".to_owned()),
        ..top(12)
    }));
}
