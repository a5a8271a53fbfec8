//! Every front end through the one engine, on the documented invocations that
//! once broke: a vector or `no_embedding` standing in for the question (the CLI,
//! `serve --stdio`, `mcp`; HTTP in particles-server's tests), `--response-json`
//! on every deterministic mode, and `serve --stdio`'s whole-response lines. Each
//! answer is compared with the same ranking asked another way, so a stand-in
//! ranks exactly as a question with that vector does.

use std::{
    io::{BufRead, BufReader, Write},
    path::PathBuf,
    process::Stdio,
};

use serde_json::{json, Value};

use crate::support::{particles_rs, particles_rs_command, workspace_root};

const NOW: &str = "2026-06-01T00:00:00Z";

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("tests/fixtures/stores").join(name)
}

/// Runs `particles-rs ARGS`, which must succeed, and parses its stdout as one
/// JSON object.
fn json_of(args: &[&str]) -> Value {
    let output = particles_rs(args);
    assert!(
        output.status.success(),
        "particles-rs {args:?} failed ({:?}):\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("particles-rs {args:?}: not one JSON object ({e})"))
}

/// The ranking's parts that do not depend on how it was asked.
fn ranking(answer: &Value) -> Value {
    json!({
        "ids": answer["hits"].as_array().unwrap().iter().map(|h| h["particle"]["id"].clone()).collect::<Vec<_>>(),
        "similarity": answer["hits"].as_array().unwrap().iter().map(|h| h["similarity"].clone()).collect::<Vec<_>>(),
        "effective": answer["hits"].as_array().unwrap().iter().map(|h| h["effective_confidence"].clone()).collect::<Vec<_>>(),
        "stats": answer["stats"].clone(),
    })
}

#[test]
fn a_vector_or_no_embedding_stands_in_for_the_question_on_the_cli() {
    let store = fixture("coins-a.db");
    let store = store.to_str().unwrap();
    let vector = fixture("coins-a.question.json");
    let vector = vector.to_str().unwrap();
    let sidecars = tempfile::tempdir().unwrap();
    let dir = sidecars.path().to_str().unwrap();
    let common = [
        "--store",
        store,
        "--now",
        NOW,
        "--top-k",
        "7",
        "--sidecar-dir",
        dir,
    ];
    let with = |extra: &[&str]| -> Value {
        let mut args = vec!["query"];
        args.extend(extra);
        args.extend(common);
        json_of(&args)
    };
    // The README's synopsis: QUESTION is optional.
    let alone = with(&["--vector-file", vector, "--json"]);
    let asked = with(&["a question", "--vector-file", vector, "--json"]);
    assert_eq!(alone["hits"].as_array().unwrap().len(), 7);
    assert_eq!(ranking(&alone), ranking(&asked));
    assert_eq!(alone["query"]["ranked_by"], "similarity");
    assert_eq!(alone["query"]["question"], Value::Null);
    let no_embedding = with(&["--no-embedding", "--json"]);
    let no_embedding_asked = with(&["a question", "--no-embedding", "--json"]);
    assert_eq!(ranking(&no_embedding), ranking(&no_embedding_asked));
    assert_eq!(no_embedding["query"]["ranked_by"], "effective_confidence");
    // The hit table too, and the whole response: the ranking's fields are the
    // question's, the answer is empty (there is nothing to ask a provider).
    let table = particles_rs(&[
        "query",
        "--vector-file",
        vector,
        "--store",
        store,
        "--now",
        NOW,
        "--sidecar-dir",
        dir,
    ]);
    assert!(
        table.status.success(),
        "{}",
        String::from_utf8_lossy(&table.stderr)
    );
    assert!(String::from_utf8_lossy(&table.stdout).contains("hit(s) from"));
    let response = with(&["--vector-file", vector, "--response-json"]);
    let asked = with(&["a question", "--vector-file", vector, "--response-json"]);
    assert!(
        response["answer"] == "" || response["answer_refused"] == true,
        "{response}"
    );
    for field in ["particles", "effective_confidences", "truncation_warning"] {
        assert_eq!(response[field], asked[field], "{field}");
    }
    // A vector with claim filters ranks the filtered claims (the question's
    // place taken), where without it they are listed.
    let filtered = with(&["--vector-file", vector, "--predicate", "weighs", "--json"]);
    assert_eq!(filtered["query"]["ranked_by"], "similarity");
    let asked = with(&[
        "q",
        "--vector-file",
        vector,
        "--predicate",
        "weighs",
        "--json",
    ]);
    assert_eq!(ranking(&filtered), ranking(&asked));
    // Neither a question nor a stand-in: the reference's refusal, exit 2.
    let refused = particles_rs(&["query", "--store", store, "--json"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a query needs a question"));
}

#[test]
fn response_json_is_honoured_on_every_deterministic_mode() {
    let store = fixture("coins-a.db");
    let store = store.to_str().unwrap();
    let modes: [&[&str]; 6] = [
        &["--predicate", "weighs"],
        &["--object-gt", "1"],
        &["--count", "--predicate", "weighs"],
        &["--group-by", "subject"],
        &["--predicates"],
        &["--vocabulary"],
    ];
    for mode in modes {
        let run = |format: &str| -> Value {
            let mut args = vec!["query", "--store", store, "--now", NOW, format];
            args.extend(mode);
            json_of(&args)
        };
        let response = run("--response-json");
        // The whole response, the same as `--json` prints for these modes.
        assert_eq!(response, run("--json"), "{mode:?}");
        assert!(response["answer"].is_string(), "{mode:?}: {response}");
        assert!(response.get("particles").is_some(), "{mode:?}");
    }
    let window = json_of(&[
        "query",
        "--store",
        store,
        "--now",
        NOW,
        "--during",
        "2000-01-01..2030-01-01",
        "--response-json",
    ]);
    assert!(window.get("window_coverage").is_some(), "{window}");
}

/// Sends `lines` to `serve --stdio` on the coins-a fixture and returns its
/// answers.
fn serve_stdio(lines: &[String]) -> Vec<Value> {
    let sidecars = tempfile::tempdir().unwrap();
    let mut child = particles_rs_command()
        .env("PARTICLES_SIDECAR_DIR", sidecars.path())
        .args(["serve", "--stdio", "--store"])
        .arg(fixture("coins-a.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
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
}

#[test]
fn serve_stdio_takes_stand_ins_and_answers_whole_responses() {
    let vector = std::fs::read_to_string(fixture("coins-a.question.json")).unwrap();
    let vector = vector.trim();
    let lines = [
        format!(r#"{{"vector": {vector}, "top_k": 10, "now": "{NOW}"}}"#),
        format!(r#"{{"no_embedding": true, "top_k": 10, "now": "{NOW}"}}"#),
        format!(r#"{{"question": "q", "vector": {vector}, "top_k": 10, "now": "{NOW}"}}"#),
        format!(r#"{{"question": "q", "no_embedding": true, "top_k": 10, "now": "{NOW}"}}"#),
        format!(r#"{{"vector": {vector}, "top_k": 10, "now": "{NOW}", "response": true}}"#),
        format!(r#"{{"predicate": "weighs", "now": "{NOW}"}}"#),
        format!(r#"{{"vector": {vector}, "no_embedding": true}}"#),
        r#"{"vector": [0.1], "response": "yes"}"#.to_owned(),
    ];
    let answers = serve_stdio(&lines);
    assert_eq!(answers.len(), lines.len());
    assert_eq!(
        answers[0]["hits"].as_array().unwrap().len(),
        10,
        "{}",
        answers[0]
    );
    assert_eq!(ranking(&answers[0]), ranking(&answers[2]));
    assert_eq!(ranking(&answers[1]), ranking(&answers[3]));
    assert_eq!(answers[1]["query"]["ranked_by"], "effective_confidence");
    // The whole response, equal to the CLI's for the same request.
    let whole = &answers[4];
    assert!(whole["journal_seq"].is_i64(), "{whole}");
    assert!(whole["cache"]["route"].is_string(), "{whole}");
    let vector_file = fixture("coins-a.question.json");
    let cli = json_of(&[
        "query",
        "--store",
        fixture("coins-a.db").to_str().unwrap(),
        "--vector-file",
        vector_file.to_str().unwrap(),
        "--top-k",
        "10",
        "--now",
        NOW,
        "--response-json",
        "--no-sidecar",
    ]);
    assert_eq!(whole["response"], cli);
    // A deterministic mode is answered with its response.
    assert!(
        answers[5]["response"]["claim_coverage"].is_object(),
        "{}",
        answers[5]
    );
    // Both stand-ins at once, and a `response` that is not a boolean: refused
    // by name, and the process goes on.
    let both = answers[6]["error"].as_str().unwrap_or_default();
    assert!(both.contains("either `vector` or `no_embedding`"), "{both}");
    let flag = answers[7]["error"].as_str().unwrap_or_default();
    assert!(flag.contains("`response` must be true or false"), "{flag}");
}

#[test]
fn the_mcp_query_tool_takes_a_vector() {
    let vector: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("coins-a.question.json")).unwrap())
            .unwrap();
    let mut child = particles_rs_command()
        .args(["mcp", "--no-sidecar", "--store"])
        .arg(fixture("coins-a.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    let mut receive = |id: i64| -> Value {
        loop {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "the server closed"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "one-engine-test", "version": "0"}}}),
    );
    receive(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut call = |id: i64, arguments: Value| -> Value {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "query", "arguments": arguments}}));
        let reply = receive(id);
        let text = reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        serde_json::from_str(text).unwrap_or_else(|_| json!({"error": text, "reply": reply}))
    };
    let by_vector = call(2, json!({"vector": vector, "top_k": 5}));
    let by_confidence = call(3, json!({"no_embedding": true, "top_k": 5}));
    drop(stdin);
    let ids = |answer: &Value| -> Vec<Value> {
        answer["particles"]
            .as_array()
            .unwrap_or_else(|| panic!("no particles: {answer}"))
            .iter()
            .map(|p| p["id"].clone())
            .collect()
    };
    assert_eq!(ids(&by_vector).len(), 5);
    assert_eq!(ids(&by_confidence).len(), 5);
    let _ = child.kill();
    let _ = child.wait();
    // The same ranking as the CLI's for that vector.
    let vector_file = fixture("coins-a.question.json");
    let cli = json_of(&[
        "query",
        "--store",
        fixture("coins-a.db").to_str().unwrap(),
        "--vector-file",
        vector_file.to_str().unwrap(),
        "--top-k",
        "5",
        "--response-json",
        "--no-sidecar",
    ]);
    assert_eq!(ids(&by_vector), ids(&cli));
}
