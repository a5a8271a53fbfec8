//! The semantic response on a fixture store the tests extend with rows the
//! response reads: INCONSISTENCY records, stances, extraction gaps and subjects.
//! What each field must equal is the live oracle's job
//! (`particles-cli`'s `response` test); these pin the wiring: one snapshot, the
//! parallel lists, the typed errors. (The observer's place among the ranking's
//! filters is `particles-query`'s `it::observer`.)

use std::path::{Path, PathBuf};

use particles_model::{QueryRequest, Timestamp};
use particles_query::QueryInput;
use particles_rank::NormKernel;
use particles_respond::{Error, ResponseSettings};
use particles_store::{Store, UncachedLoader};

use crate::support::run_semantic;

/// The reference's caveat beside agreement distributions (`AGREEMENT_CAVEAT`),
/// verbatim.
const AGREEMENT_CAVEAT: &str = "Holders are grouped by raw stance:holder key (unverified): \
two keys may be one agent and a key's owner is not verified. This is a count of keys, not of \
verified agents.";

/// The reference's disclosure for a ranking without a query vector
/// (`RANKING_DEGRADED_NO_ENCODER`), verbatim.
const RANKING_DEGRADED_NO_ENCODER: &str = "Semantic ranking unavailable: no embedding model \
could be loaded. These beliefs are the store's most confident ones, NOT necessarily ones about \
your question, and the relevance floor that would normally refuse an off-topic answer is \
inactive. Install the embedding model (sentence-transformers) and re-run to get a real answer.";

fn fixture_copy(dir: &Path) -> PathBuf {
    let path = dir.join("coins-a.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-a.db"),
        &path,
    )
    .unwrap();
    path
}

static SETTINGS: std::sync::LazyLock<particles_rank::RankSettings> =
    std::sync::LazyLock::new(particles_rank::RankSettings::default);

fn now() -> Timestamp {
    Timestamp::parse("2026-06-01T00:00:00Z").unwrap()
}

fn input_for<'a>(
    request: &'a particles_model::ValidRequest,
    vector: Option<&'a [f32]>,
) -> QueryInput<'a> {
    QueryInput {
        settings: &SETTINGS,
        norm_kernel: NormKernel::SkylakeX,
        ..QueryInput::new(request, vector, now())
    }
}

/// The ACTIVE particle ids with an embedding, in rowid order, and the first one's
/// vector.
fn active(path: &Path) -> (Vec<String>, Vec<f32>) {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut statement = connection
        .prepare(
            "SELECT id, embedding_json FROM particles WHERE status = 'ACTIVE' \
             AND embedding_json IS NOT NULL AND properties_json IS NULL ORDER BY rowid",
        )
        .unwrap();
    let rows: Vec<(String, String)> = statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let vector = particles_store::decode_embedding(&rows[0].1).unwrap();
    (rows.into_iter().map(|(id, _)| id).collect(), vector)
}

fn execute(path: &Path, sql: &str) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
}

fn validate(request: QueryRequest) -> particles_model::ValidRequest {
    request.validate(now()).unwrap()
}

#[test]
fn the_response_reads_gaps_badges_and_stances_around_the_hits() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let (ids, vector) = active(&path);
    let (target, other) = (&ids[0], &ids[1]);
    execute(
        &path,
        &format!(
            "INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, \
             warc_record_type, extraction_status, extraction_attempts, resume_whole) VALUES \
             ('gap-1', 'entry-p', '2024-01-01', 'h', 'RESPONSE', 'PENDING', 0, 0), \
             ('gap-2', 'entry-f', '2024-01-01', 'h', 'RESPONSE', 'FAILED', 0, 0);
             CREATE TEMP TABLE copy AS SELECT * FROM particles WHERE id = '{target}';
             UPDATE copy SET id = 'stance-1', content = 'Bob disputes it.', \
             provenance_json = '[]', embedding_json = NULL, \
             properties_json = '{{\"stance:holder\": \"agent:bob\", \"stance:magnitude\": 0.5}}';
             INSERT INTO particles SELECT * FROM copy;
             UPDATE copy SET id = 'record-1', content = 'A conflict.', status = 'INCONSISTENCY', \
             properties_json = NULL, \
             provenance_json = '[{{\"type\": \"PARTICLE\", \"corpus_entry_id\": \"{target}\"}}, \
               {{\"type\": \"PARTICLE\", \"corpus_entry_id\": \"{other}\"}}]';
             INSERT INTO particles SELECT * FROM copy;
             UPDATE particles SET assertion_modality = 'FALSIFIABLE' WHERE id IN ('{target}', '{other}');
             INSERT INTO particle_relations VALUES ('stance-1', '{target}', 'DISPUTES', 'x', \
             '2024-01-01', 1.0);"
        ),
    );
    let store = Store::open_read_only(&path).unwrap();
    let request = validate(QueryRequest {
        top_k: 5,
        include_agreement: true,
        ..QueryRequest::question("q")
    });
    let (outcome, response) = run_semantic(
        &store,
        &mut UncachedLoader,
        &input_for(&request, Some(&vector)),
        &ResponseSettings::default(),
    )
    .unwrap();
    let hit_ids: Vec<&str> = response.particles.iter().map(|p| p.id.as_str()).collect();
    let outcome_ids: Vec<&str> = outcome.hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(hit_ids, outcome_ids);
    assert_eq!(hit_ids[0], target, "the target's own vector ranks it first");
    assert_eq!(response.effective_confidences.len(), hit_ids.len());
    assert_eq!(response.content_published_ats.len(), hit_ids.len());
    assert_eq!(response.coverage_gaps, ["entry-f", "entry-p"]);
    let badge = response.contested[0]
        .as_ref()
        .expect("the target is contested");
    // The fixture adopts a lens, so the divergence basis is measured too.
    assert_eq!(badge.bases.first().map(String::as_str), Some("stance"));
    assert_eq!(
        badge.bases.last().map(String::as_str),
        Some("inconsistency")
    );
    assert_eq!(badge.inconsistency_id.as_deref(), Some("record-1"));
    assert_eq!(badge.caveat.as_deref(), Some(AGREEMENT_CAVEAT));
    let positions = &response.agreement_distributions[0];
    assert_eq!(positions.len(), 1);
    assert_eq!(
        (positions[0].kind.as_str(), positions[0].holder.as_str()),
        ("DISPUTES", "agent:bob")
    );
    assert_eq!(positions[0].magnitude, Some(0.5));
    assert_eq!(response.agreement_caveat.as_deref(), Some(AGREEMENT_CAVEAT));
    // Contestedness was not asked for: the badges read it, the response omits it.
    assert!(response.contestedness.is_empty());
    assert!(response.relevance.is_some() && response.ranking_degraded.is_none());
    assert!(response.answer.is_empty() && !response.answer_refused);
    // Twenty near-ties sit just below the fifth hit: the reference warns.
    assert_eq!(
        response.truncation_warning.as_deref(),
        Some(
            "top_k=5 may be too low: 20 additional particles scored within 0.15 of the \
             cutoff (gap to next: 0.004). Try --top-k 15 for a more complete answer."
        )
    );

    // Without a vector: no relevance note, the fixed disclosure instead.
    let (_, degraded) = run_semantic(
        &store,
        &mut UncachedLoader,
        &input_for(&request, None),
        &ResponseSettings::default(),
    )
    .unwrap();
    assert!(degraded.relevance.is_none());
    assert_eq!(
        degraded.ranking_degraded.as_deref(),
        Some(RANKING_DEGRADED_NO_ENCODER)
    );
}

#[test]
fn an_ambiguous_subject_prefix_is_an_error_and_a_missing_one_a_gap() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let (_, vector) = active(&path);
    execute(
        &path,
        "INSERT INTO subjects (id, canonical_name, aliases_json, external_ids_json, created_at, \
         asserted_by) VALUES ('dup-1', 'One', '[]', '{}', '2024-01-01', 'x'), \
         ('dup-2', 'Two', '[]', '{}', '2024-01-01', 'x');",
    );
    let store = Store::open_read_only(&path).unwrap();
    let ask = |subject: &str| {
        let request = validate(QueryRequest {
            subject_id: Some(subject.to_owned()),
            ..QueryRequest::question("q")
        });
        run_semantic(
            &store,
            &mut UncachedLoader,
            &input_for(&request, Some(&vector)),
            &ResponseSettings::default(),
        )
    };
    match ask("dup-") {
        Err(Error::AmbiguousSubject { message, .. }) => assert_eq!(
            message,
            "Ambiguous subject prefix 'dup-' matches 2 subjects; use more characters."
        ),
        other => panic!("expected the ambiguous-prefix error, got {other:?}"),
    }
    let (_, response) = ask("it's-gone").unwrap();
    assert_eq!(
        response.subject_coverage_gaps[0].detail,
        "Subject ID \"it's-gone\" not found in the registry"
    );
    // A unique prefix resolves for the gap, while the loader matched nothing.
    let (outcome, response) = ask("dup-1").unwrap();
    assert!(outcome.hits.is_empty());
    assert_eq!(
        response.subject_coverage_gaps[0].detail,
        "'One' exists in the registry but has no ACTIVE CLAIM particles"
    );
}

#[test]
fn a_commit_after_the_ranking_changes_nothing_in_the_response() {
    let dir = tempfile::tempdir().unwrap();
    let path = fixture_copy(dir.path());
    let (ids, vector) = active(&path);
    // WAL, as the reference leaves every store: a writer commits beside a reader.
    let writer = rusqlite::Connection::open(&path).unwrap();
    writer
        .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .unwrap();
    let store = Store::open_read_only(&path).unwrap();
    let request = validate(QueryRequest {
        top_k: 3,
        include_agreement: true,
        ..QueryRequest::question("q")
    });
    let commit = || {
        writer
            .execute_batch(&format!(
                "BEGIN;
                 INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, \
                 warc_record_type, extraction_status, extraction_attempts, resume_whole) VALUES \
                 ('late', 'entry-late', '2024-01-01', 'h', 'RESPONSE', 'FAILED', 0, 0);
                 UPDATE particles SET status = 'INCONSISTENCY', provenance_json = \
                 '[{{\"type\": \"PARTICLE\", \"corpus_entry_id\": \"{}\"}}]' WHERE id = '{}';
                 COMMIT;",
                ids[0],
                ids[ids.len() - 1]
            ))
            .unwrap();
    };
    let input = QueryInput {
        after_ranking: Some(&commit),
        ..input_for(&request, Some(&vector))
    };
    let (_, during) = run_semantic(
        &store,
        &mut UncachedLoader,
        &input,
        &ResponseSettings::default(),
    )
    .unwrap();
    assert!(!during.coverage_gaps.contains(&"entry-late".to_owned()));
    assert!(during.contested[0]
        .as_ref()
        .is_none_or(|badge| !badge.bases.contains(&"inconsistency".to_owned())));
    let (_, after) = run_semantic(
        &store,
        &mut UncachedLoader,
        &input_for(&request, Some(&vector)),
        &ResponseSettings::default(),
    )
    .unwrap();
    assert!(after.coverage_gaps.contains(&"entry-late".to_owned()));
}
