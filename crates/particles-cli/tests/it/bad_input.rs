//! Bad input: every mistake gets a clear message naming the thing at fault and the
//! right exit code (2 for how the command was called, 1 for everything else), and
//! the store file is never written.

use std::path::{Path, PathBuf};

use crate::support::{file_digest, particles_rs, workspace_root};

const NOW: &str = "2026-06-01T00:00:00Z";

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("tests/fixtures/stores").join(name)
}

/// A private copy of a fixture store, changed by `tamper` (raw SQL on the copy).
fn tampered_store(dir: &Path, sql: &str) -> PathBuf {
    let path = dir.join("store.db");
    std::fs::copy(fixture("coins-a.db"), &path).unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection.execute_batch(sql).unwrap();
    drop(connection);
    path
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let output = particles_rs(args);
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn query(store: &Path, extra: &[&str]) -> Run {
    let store = store.display().to_string();
    let mut args = vec!["query", "--store", store.as_str()];
    if !extra.contains(&"--now") {
        args.extend(["--now", NOW]);
    }
    args.extend_from_slice(extra);
    let before = store_digest(Path::new(&store));
    let result = run(&args);
    assert_eq!(
        before,
        store_digest(Path::new(&store)),
        "the store was written by {args:?}"
    );
    result
}

fn store_digest(path: &Path) -> Option<String> {
    path.is_file().then(|| file_digest(path))
}

fn assert_error(run: &Run, code: i32, needles: &[&str]) {
    assert_eq!(run.code, Some(code), "stderr: {}", run.stderr);
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "{needle:?} not in stderr: {}",
            run.stderr
        );
    }
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

#[test]
fn missing_store_file() {
    let run = query(Path::new("/nonexistent/store.db"), &["q", "--no-embedding"]);
    assert_error(&run, 1, &["/nonexistent/store.db", "does not exist"]);
}

#[test]
fn a_file_that_is_not_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    std::fs::write(
        &path,
        "just some text, long enough to not be a database header at all",
    )
    .unwrap();
    let run = query(&path, &["q", "--no-embedding"]);
    assert_error(&run, 1, &["notes.db", "not a readable SQLite database"]);
}

#[test]
fn a_database_without_particles() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection
        .execute_batch("CREATE TABLE notes (x TEXT)")
        .unwrap();
    drop(connection);
    let run = query(&path, &["q", "--no-embedding"]);
    assert_error(&run, 1, &["other.db", "no `particles` table"]);
}

#[test]
fn a_schema_version_of_another_major() {
    let dir = tempfile::tempdir().unwrap();
    let path = tampered_store(
        dir.path(),
        "UPDATE particles SET schema_version = '2.0.0' WHERE rowid IN (SELECT rowid FROM particles WHERE status = 'ACTIVE' LIMIT 2)",
    );
    let run = query(&path, &["q", "--no-embedding"]);
    assert_error(&run, 1, &["2 at v2.0.0", "upgrade particles-rs"]);
}

#[test]
fn an_embedding_that_is_not_an_array_of_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = tampered_store(
        dir.path(),
        "UPDATE particles SET embedding_json = '[0.1, \"oops\"]' WHERE id = (SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_model_id = 'all-MiniLM-L6-v2' LIMIT 1)",
    );
    let run = query(&path, &["q", "--no-embedding"]);
    assert_error(
        &run,
        1,
        &["embedding_json is not a JSON array of numbers", "oops"],
    );
}

#[test]
fn a_row_that_does_not_hydrate() {
    let dir = tempfile::tempdir().unwrap();
    let path = tampered_store(
        dir.path(),
        "UPDATE particles SET retired_at = 'yesterday' WHERE id = (SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL LIMIT 1)",
    );
    let run = query(&path, &["q", "--no-embedding"]);
    assert_error(&run, 1, &["retired_at", "yesterday"]);
}

fn vector_file(dir: &Path, text: &str) -> String {
    let path = dir.join("vector.json");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn vector_files_of_the_wrong_shape() {
    let dir = tempfile::tempdir().unwrap();
    let store = fixture("coins-a.db");
    // Any dimension ranks, but a stored row of another length fails the query
    // where the ranking meets it, naming both (numpy's product fails there).
    let short = vector_file(dir.path(), "[0.1, 0.2, 0.3]");
    assert_error(
        &query(&store, &["q", "--vector-file", &short]),
        1,
        &["384 dimensions", "the query vector has 3"],
    );
    let empty = vector_file(dir.path(), "[]");
    assert_error(
        &query(&store, &["q", "--vector-file", &empty]),
        1,
        &["vector.json", "the query vector is empty"],
    );
    let values: Vec<String> = (0..384)
        .map(|i| if i == 7 { "NaN".into() } else { "0.05".into() })
        .collect();
    let nan = vector_file(dir.path(), &format!("[{}]", values.join(",")));
    assert_error(
        &query(&store, &["q", "--vector-file", &nan]),
        1,
        &["element 7", "not a finite number"],
    );
    let not_json = vector_file(dir.path(), "{\"vector\": 1}");
    assert_error(
        &query(&store, &["q", "--vector-file", &not_json]),
        1,
        &["not a JSON array of numbers"],
    );
    let missing = dir.path().join("absent.json").display().to_string();
    assert_error(
        &query(&store, &["q", "--vector-file", &missing]),
        1,
        &["absent.json"],
    );
}

#[test]
fn no_question_gets_the_references_verdict() {
    let run = query(&fixture("coins-a.db"), &[]);
    assert_error(
        &run,
        2,
        &["Invalid query request", "a query needs a question"],
    );
}

#[test]
fn a_missing_model_names_the_fetch_command() {
    if !cfg!(feature = "encoder") {
        eprintln!("skipping: this build has no encoder (the `encoder` feature is off)");
        return;
    }
    let run = query(
        &fixture("coins-a.db"),
        &["how are coins graded?", "--model-dir", "/nonexistent/model"],
    );
    assert_error(&run, 1, &["/nonexistent/model", "particles-rs model fetch"]);
}

#[test]
fn top_k_outside_the_references_limits() {
    for top_k in ["0", "201", "many"] {
        let run = query(
            &fixture("coins-a.db"),
            &["q", "--no-embedding", "--top-k", top_k],
        );
        assert_error(&run, 2, &["--top-k"]);
    }
}

#[test]
fn bad_flags_name_the_flag() {
    let store = fixture("coins-a.db");
    assert_error(
        &query(&store, &["q", "--no-embedding", "--min-confidence", "1.5"]),
        2,
        &["--min-confidence"],
    );
    assert_error(
        &query(&store, &["q", "--no-embedding", "--now", "last tuesday"]),
        2,
        &["--now", "RFC 3339"],
    );
    // The reference's messages (it exits 1 on both; a bad value is a usage error
    // here).
    assert_error(
        &query(
            &store,
            &["q", "--no-embedding", "--assertion-modality", " maybe"],
        ),
        2,
        &["Unknown assertion modality ' maybe'. Valid: FALSIFIABLE, EVALUATIVE, EXPERIENTIAL, CONSTITUTIVE."],
    );
    assert_error(
        &query(&store, &["q", "--no-embedding", "--audience", "expert"]),
        2,
        &["Invalid query request: 'expert' is not a valid AudienceHint"],
    );
}

#[test]
fn enum_flags_are_taken_as_the_reference_takes_them() {
    let store = fixture("coins-a.db");
    let run = query(
        &store,
        &[
            "q",
            "--no-embedding",
            "--json",
            "--assertion-modality",
            " evaluative ",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["query"]["assertion_modality"], "EVALUATIVE");
    let run = query(&store, &["q", "--no-embedding", "--audience", "EXPERT"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("not applied") && run.stderr.contains("audience"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_or_ambiguous_subject_is_refused_as_the_reference_refuses_it() {
    let run = query(
        &fixture("coins-a.db"),
        &["q", "--no-embedding", "--subject", "no-such-subject"],
    );
    assert_error(
        &run,
        1,
        &["No subject matches 'no-such-subject' by ID, ID prefix, or name."],
    );
    // Every subject of the fixture is called `s`.
    let run = query(
        &fixture("coins-a.db"),
        &["q", "--no-embedding", "--subject", "S"],
    );
    assert_error(
        &run,
        1,
        &[
            "Subject 'S' is ambiguous: it matches ",
            "(by name)",
            "Pass more characters of the ID you mean.",
        ],
    );
}

#[test]
fn a_subject_id_prefix_resolves_to_its_subject() {
    let run = query(
        &fixture("coins-a.db"),
        &["q", "--no-embedding", "--json", "--subject", " F44D7E40 "],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        json["query"]["subject_id"],
        "f44d7e40-c78f-4c45-9a9e-994cf1a9a658"
    );
    assert!(!json["hits"].as_array().unwrap().is_empty());
}

#[test]
fn other_embedding_models_are_skipped_with_a_warning() {
    let run = query(&fixture("coins-a.db"), &["q", "--no-embedding", "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("skipped 1 ACTIVE belief(s) embedded by another model"),
        "{}",
        run.stderr
    );
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["stats"]["skipped_other_model"], 1);
}

#[test]
fn query_surface_flags_refuse_bad_values() {
    let store = fixture("coins-a.db");
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--as-of", "not a date"], &["--as-of", "RFC 3339"]),
        (&["--as-of", "2999-01-01T00:00:00Z"], &["as_of", "future"]),
        (
            &["--during", "2021-01-01..2020-01-01"],
            &["--during", "after its end"],
        ),
        (&["--during", "2020-01-01"], &["--during", "START..END"]),
        (&["--on", "someday"], &["--on"]),
        (
            &["--object-gt", "heavy"],
            &["'heavy'", "neither a number nor an ISO-8601 date"],
        ),
    ];
    for (flags, needles) in cases {
        let mut args = vec!["q", "--no-embedding"];
        args.extend_from_slice(flags);
        let run = query(&store, &args);
        assert_error(&run, 2, needles);
    }
    let run = query(
        &store,
        &[
            "q",
            "--no-embedding",
            "--on",
            "2020-03-15",
            "--during",
            "2020-01-01..",
        ],
    );
    assert_error(&run, 2, &["--on", "--during"]);
}

#[test]
fn an_unknown_tag_matches_nothing_with_a_warning() {
    let run = query(
        &fixture("coins-a.db"),
        &["q", "--no-embedding", "--tag", "no-such-tag"],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("No beliefs matched"), "{}", run.stdout);
    assert!(
        run.stderr.contains("no-such-tag") && run.stderr.contains("no taxonomy"),
        "{}",
        run.stderr
    );
}

#[test]
fn query_surface_reports_its_counts() {
    let run = query(
        &fixture("coins-a.db"),
        &[
            "q",
            "--no-embedding",
            "--json",
            "--as-of",
            "2023-06-01T00:00:00Z",
            "--during",
            "2010-01-01..",
            "--object-contains",
            "x",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["as_of"], "2023-06-01T00:00:00Z");
    assert!(json["as_of_excluded_undatable"].is_u64());
    assert!(json["window_coverage"]["undated"].as_u64().unwrap() > 0);
    assert!(json["claim_coverage"]["active_total"].as_u64().unwrap() > 0);
}
