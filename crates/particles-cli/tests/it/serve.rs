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
        format!(
            r#"{{"question": "q", "vector": {vector}, "top_k": 5, "now": "2026-06-01T00:00:00Z"}}"#
        ),
        "this is not json".to_owned(),
        r#"{"question": "q", "no_embedding": true, "top_k": 0}"#.to_owned(),
        r#"{"question": "q", "vector": [0.5, 0.5]}"#.to_owned(),
        r#"{"top_k": 3}"#.to_owned(),
        r#"{"question": "q", "no_embedding": true, "topk": 3, "top_k": "2"}"#.to_owned(),
        String::new(),
        format!(
            r#"{{"question": "q", "vector": {vector}, "top_k": 5, "now": "2026-06-01T00:00:00Z"}}"#
        ),
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
    assert_eq!(responses[0]["cache"]["route"], "rebuild");
    assert_eq!(responses[0]["query"]["top_k"], 5);
    for (at, needle) in [
        (1, "not valid JSON"),
        (2, "top_k"),
        (3, "the query vector has 2"),
        (4, "a query needs a question"),
    ] {
        let error = responses[at]["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(needle),
            "response {at}: {error:?} lacks {needle:?}"
        );
    }
    // Pydantic's shape for a field error, and unknown fields ignored with lax
    // coercion of known ones.
    assert_eq!(responses[2]["detail"][0]["type"], "greater_than_equal");
    assert_eq!(
        responses[2]["detail"][0]["loc"],
        serde_json::json!(["top_k"])
    );
    assert_eq!(responses[5]["hits"].as_array().unwrap().len(), 2);
    assert_eq!(responses[6]["cache"]["route"], "reuse");
    assert_eq!(responses[6]["hits"], responses[0]["hits"]);
}

/// `--half-precision`: with the copy the cache holds more (the copy itself) and
/// every answer is the one without it, bit for bit.
#[test]
fn the_half_precision_copy_changes_memory_not_answers() {
    let fixtures = workspace_root().join("tests/fixtures/stores");
    let vector = std::fs::read_to_string(fixtures.join("coins-b.question.json")).unwrap();
    let requests: Vec<String> = [3, 10, 40]
        .iter()
        .map(|top_k| {
            format!(
                r#"{{"question": "q", "vector": {}, "top_k": {top_k}, "now": "2026-06-01T00:00:00Z"}}"#,
                vector.trim()
            )
        })
        .collect();
    let serve = |when: &str| -> Vec<Value> {
        let sidecars = tempfile::tempdir().unwrap();
        let mut child = crate::support::particles_rs_command()
            .env("PARTICLES_SIDECAR_DIR", sidecars.path())
            .args(["serve", "--stdio", "--half-precision", when, "--store"])
            .arg(fixtures.join("coins-b.db"))
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
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    };
    let (on, off, auto) = (serve("on"), serve("off"), serve("auto"));
    assert_eq!(on.len(), requests.len());
    for ((on, off), auto) in on.iter().zip(&off).zip(&auto) {
        assert!(!on["hits"].as_array().unwrap().is_empty());
        assert_eq!(on["hits"], off["hits"]);
        assert_eq!(on["hits"], auto["hits"]);
        let heap = |v: &Value| v["cache"]["heap_bytes"].as_u64().unwrap();
        // A fixture is far below the 4 MiB where `auto` makes a copy.
        assert!(heap(on) > heap(off), "{} vs {}", heap(on), heap(off));
        assert_eq!(heap(auto), heap(off));
    }
}

/// `serve --stdio` follows its store's writes and writes its sidecar behind
/// itself, as `serve --http` and `mcp` do (the engine's own tests show what
/// those threads do): after another process's commit, its follower brings the
/// cache to the head before the next line asks (that line reuses the state),
/// whose answer is the one a process reading the store afresh gives; and the
/// sidecar is there once the input ends.
#[test]
fn follows_its_stores_writes_as_the_servers_do() {
    let fixtures = workspace_root().join("tests/fixtures/stores");
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("coins-b.db");
    std::fs::copy(fixtures.join("coins-b.db"), &store).unwrap();
    let installed = crate::support::particles_rs_command()
        .args(["store", "install-journal", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    assert!(installed.status.success(), "{installed:?}");
    let vector = std::fs::read_to_string(fixtures.join("coins-b.question.json")).unwrap();
    let line = format!(
        r#"{{"question": "q", "vector": {}, "top_k": 30, "now": "2026-06-01T00:00:00Z"}}"#,
        vector.trim()
    );
    let sidecars = tempfile::tempdir().unwrap();
    let mut child = crate::support::particles_rs_command();
    child
        .env("PARTICLES_SIDECAR_DIR", sidecars.path())
        .args([
            "serve",
            "--stdio",
            "--log-level",
            "debug",
            "--log-format",
            "json",
        ])
        .arg("--store")
        .arg(&store);
    let mut child = piped(&mut child);
    // The log, line by line, as the process writes it.
    let (to_test, log) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
            let Ok(line) = line else { break };
            let _ = to_test.send(line);
        }
    });
    let mut seen = Vec::new();
    let mut wait_for = |needle: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !seen.iter().any(|line: &String| line.contains(needle)) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match log.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("no log line with {needle:?}: {seen:#?}"),
            }
        }
    };
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut ask = || -> Value {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut answer).unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    // Both threads run: the follower and the write-behind.
    wait_for("\"writes\":true");
    wait_for("\"write_behind\":true");
    let before = ask();
    assert_eq!(before["cache"]["route"], "rebuild");
    // Another process lowers the confidence of every seventh belief.
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute(
            "UPDATE particles SET confidence_value = confidence_value * 0.5 \
             WHERE rowid % 7 = 0 AND status = 'ACTIVE'",
            [],
        )
        .unwrap();
    wait_for("followed a write");
    let after = ask();
    assert_eq!(
        after["cache"]["route"], "reuse",
        "the follower made the delta"
    );
    assert_ne!(after["hits"], before["hits"], "the write moves the ranking");
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    assert!(status.success(), "{seen:#?}");
    // The same line, answered by a process that reads the store itself.
    let mut fresh = piped(
        crate::support::particles_rs_command()
            .args(["serve", "--stdio", "--no-sidecar", "--store"])
            .arg(&store),
    );
    writeln!(fresh.stdin.take().unwrap(), "{line}").unwrap();
    let fresh = fresh.wait_with_output().unwrap();
    let fresh: Value = serde_json::from_slice(&fresh.stdout).unwrap();
    assert_eq!(after["hits"], fresh["hits"]);
    assert!(
        particles_cache::sidecar_path(&store, Some(sidecars.path())).exists(),
        "the sidecar is written by the end of input"
    );
}

/// `command` started with its three streams piped to the test.
fn piped(command: &mut std::process::Command) -> std::process::Child {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}
