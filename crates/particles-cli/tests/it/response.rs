//! The semantic response against the reference: `particles-rs query
//! --response-json` against the reference's `query()` (operations/query/main.py) on
//! the same store, query vector and frozen clock, every deterministic field of the
//! `QueryResponse` compared (floats bit-equal after parsing), the answer step's
//! fields and the truncation warning included.
//!
//! `tests/reference/response_oracle.py` builds the seeded stores (make_cases.py's
//! hand store plus INCONSISTENCY records, stances, lenses, gaps, narratives,
//! subjects and project observers) and records the reference's responses. Raise
//! the number of seeds with `PARTICLES_RESPONSE_SEEDS`. Without the reference's
//! venv the test says what is missing and passes, unless
//! `PARTICLES_REQUIRE_REFERENCE=1`.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

use crate::support::{file_digest, particles_rs, workspace_root};

/// Every field is compared: the answer too (both engines run with
/// `network.egress: none`, so the answer step fails fast and identically, or
/// refuses below the relevance floor without a call).
const NOT_COMPARED: &[&str] = &[];

/// The reference's Python, or `None` (after saying why) when it is not installed
/// and the reference is not required.
fn reference_python() -> Option<PathBuf> {
    let path = std::env::var_os("PARTICLES_REFERENCE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".reference/venv/bin/python"));
    if path.exists() {
        return Some(path);
    }
    let message = format!(
        "the reference (linkedparticles 1.214.1) is not installed at {}: run `cargo xtask reference` \
         (or set PARTICLES_REFERENCE_PYTHON) to compare the response with it",
        path.display()
    );
    if std::env::var("PARTICLES_REQUIRE_REFERENCE").as_deref() == Ok("1") {
        panic!("{message}");
    }
    eprintln!("skipped: {message}");
    None
}

fn oracle_cases(python: &Path, dir: &Path, seed: u64) -> Vec<Value> {
    let script = workspace_root().join("tests/reference/response_oracle.py");
    let output = Command::new(python)
        .arg(&script)
        .args(["--seed", &seed.to_string(), "--out"])
        .arg(dir)
        .output()
        .expect("the reference's python runs");
    assert!(
        output.status.success(),
        "response_oracle.py --seed {seed} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let text = std::fs::read_to_string(&path).expect("the oracle wrote its cases");
    serde_json::from_str(&text).expect("cases are JSON")
}

/// The binary's arguments for one oracle request.
fn arguments(dir: &Path, request: &Value) -> Vec<String> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut args: Vec<String> = vec![
        "--config".into(),
        dir.join("response-config.yaml").display().to_string(),
        "query".into(),
        "the question".into(),
        "--response-json".into(),
        "--store".into(),
        text(&request["store"]),
        "--top-k".into(),
        text(&request["top_k"]),
        "--min-confidence".into(),
        text(&request["min_confidence"]),
        "--now".into(),
        text(&request["now"]),
    ];
    if request["vector"].is_null() {
        args.push("--no-embedding".into());
    } else {
        let path = dir.join("response-vector.json");
        std::fs::write(&path, request["vector"].to_string()).expect("the vector file is written");
        args.extend(["--vector-file".into(), path.display().to_string()]);
    }
    for (flag, key) in [
        ("--include-agreement", "include_agreement"),
        ("--contestedness", "include_contestedness"),
        ("--include-document-meta", "include_document_meta"),
        ("--include-non-asserted", "include_non_asserted"),
    ] {
        if request[key].as_bool() == Some(true) {
            args.push(flag.into());
        }
    }
    for tag in request["tags"].as_array().into_iter().flatten() {
        args.extend(["--tag".into(), text(tag)]);
    }
    for (flag, key) in [
        ("--subject", "subject_id"),
        ("--observer-project", "observer_project"),
        ("--as-of", "as_of"),
        ("--during", "during"),
        ("--on", "on"),
        ("--object-contains", "object_contains"),
        ("--predicate", "predicate"),
        ("--object-gt", "object_gt"),
    ] {
        if !request[key].is_null() {
            args.push(format!("{flag}={}", text(&request[key])));
        }
    }
    args
}

/// Differences between two JSON values, each named by its path: object keys in
/// order, arrays element by element, numbers as f64 bits (an integer and a float
/// differ), everything else by equality.
fn differences(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let keys_a: Vec<&String> = a.keys().collect();
            let keys_b: Vec<&String> = b.keys().collect();
            if keys_a != keys_b {
                out.push(format!(
                    "{path}: keys {keys_a:?} vs the reference's {keys_b:?}"
                ));
                return;
            }
            for (key, value) in a {
                differences(&format!("{path}.{key}"), value, &b[key], out);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!(
                    "{path}: {} items vs the reference's {}",
                    a.len(),
                    b.len()
                ));
                return;
            }
            for (at, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{at}]"), x, y, out);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let same_kind = a.is_f64() == b.is_f64();
            let same_bits = a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits);
            if !(same_kind && same_bits) {
                out.push(format!("{path}: {a} vs the reference's {b}"));
            }
        }
        _ if ours != theirs => out.push(format!("{path}: {ours} vs the reference's {theirs}")),
        _ => {}
    }
}

/// Runs one case; returns the fields compared and any differences.
fn compare(dir: &Path, case: &Value) -> (usize, Vec<String>) {
    let request = &case["request"];
    let expected = &case["expected"];
    let args = arguments(dir, request);
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = particles_rs(&arg_refs);
    let mut shown = request.clone();
    shown["vector"] = Value::String("<elided>".into());
    let stderr = String::from_utf8_lossy(&output.stderr);
    if let Some(error) = expected.get("error") {
        return if output.status.code() == Some(1) {
            (1, Vec::new())
        } else {
            (
                1,
                vec![format!(
                    "request {shown}: the reference raised {error} but particles-rs exited {:?}",
                    output.status.code()
                )],
            )
        };
    }
    if !output.status.success() {
        return (
            0,
            vec![format!("request {shown}: particles-rs failed: {stderr}")],
        );
    }
    let ours: Value = match serde_json::from_slice(&output.stdout) {
        Ok(value) => value,
        Err(error) => return (0, vec![format!("request {shown}: not JSON: {error}")]),
    };
    let mut problems = Vec::new();
    let (Some(our_fields), Some(their_fields)) = (ours.as_object(), expected.as_object()) else {
        return (0, vec![format!("request {shown}: not a JSON object")]);
    };
    let our_keys: Vec<&String> = our_fields.keys().collect();
    let their_keys: Vec<&String> = their_fields.keys().collect();
    if our_keys != their_keys {
        problems.push(format!(
            "response fields {our_keys:?} vs the reference's {their_keys:?}"
        ));
    }
    let mut compared = 0;
    for (field, theirs) in their_fields {
        if NOT_COMPARED.contains(&field.as_str()) {
            continue;
        }
        compared += 1;
        differences(field, &ours[field], theirs, &mut problems);
    }
    problems.truncate(8);
    let problems = problems
        .into_iter()
        .map(|p| format!("request {shown}: {p}"))
        .collect();
    (compared, problems)
}

fn seeds() -> u64 {
    std::env::var("PARTICLES_RESPONSE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

#[test]
fn responses_equal_the_references_on_rich_stores() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (mut requests, mut fields, mut errors) = (0, 0, 0);
    let mut failures = Vec::new();
    for seed in 1..=seeds() {
        let cases = oracle_cases(&python, dir.path(), seed);
        let store = cases[0]["request"]["store"].as_str().unwrap().to_owned();
        let before = file_digest(Path::new(&store));
        for case in &cases {
            requests += 1;
            if case["expected"].get("error").is_some() {
                errors += 1;
            }
            let (compared, problems) = compare(dir.path(), case);
            fields += compared;
            failures.extend(problems.into_iter().map(|p| format!("seed {seed}: {p}")));
        }
        assert_eq!(
            before,
            file_digest(Path::new(&store)),
            "particles-rs changed the store file of seed {seed}"
        );
    }
    eprintln!(
        "compared {requests} responses ({errors} where the reference raised), {fields} fields"
    );
    assert!(requests >= 24, "too few requests compared: {requests}");
    assert!(
        failures.is_empty(),
        "{} differences from the reference:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
