//! `serve --stdio`: one response line per request line, errors answered in-line
//! without stopping, the cache warm between requests, a clean exit at end of input.

use std::{io::Write, process::Stdio};

use serde_json::Value;

use crate::support::workspace_root;

#[test]
fn answers_line_by_line_and_survives_bad_requests() {
    let fixtures = workspace_root().join("tests/fixtures/stores");
    let vector = std::fs::read_to_string(fixtures.join("coins-a.question.json")).unwrap();
    let vector = vector.trim();
    let requests = [
        format!(r#"{{"vector": {vector}, "top_k": 5, "now": "2026-06-01T00:00:00Z"}}"#),
        "this is not json".to_owned(),
        r#"{"no_embedding": true, "top_k": 0}"#.to_owned(),
        r#"{"vector": [0.5, 0.5]}"#.to_owned(),
        r#"{"top_k": 3}"#.to_owned(),
        r#"{"no_embedding": true, "topk": 3}"#.to_owned(),
        String::new(),
        format!(r#"{{"vector": {vector}, "top_k": 5, "now": "2026-06-01T00:00:00Z"}}"#),
    ];
    // A sidecar directory of its own, so the first request builds.
    let sidecars = tempfile::tempdir().unwrap();
    let mut child = crate::support::particles_rs_command()
        .env("PARTICLES_SIDECAR_DIR", sidecars.path())
        .args(["serve", "--stdio", "--store"])
        .arg(fixtures.join("coins-a.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for request in &requests {
        writeln!(stdin, "{request}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let responses: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(responses.len(), 7, "one response per non-empty line");
    assert_eq!(responses[0]["hits"].as_array().unwrap().len(), 5);
    assert_eq!(responses[0]["cache"]["route"], "Rebuild");
    for (at, needle) in [
        (1, "not a valid JSON request"),
        (2, "top_k"),
        (3, "2 numbers"),
        (4, "no query vector"),
        (5, "topk"),
    ] {
        let error = responses[at]["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(needle),
            "response {at}: {error:?} lacks {needle:?}"
        );
    }
    assert_eq!(responses[6]["cache"]["route"], "Reuse");
    assert_eq!(responses[6]["hits"], responses[0]["hits"]);
}
