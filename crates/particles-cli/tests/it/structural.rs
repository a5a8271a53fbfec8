//! The deterministic modes against the reference: `particles-rs query --json`
//! without a question (claim listing, `--count`, `--group-by`, `--predicates`,
//! `--vocabulary`, the window listing) against the reference's `query()` on the
//! same store with the clock frozen at the same instant. The whole
//! `QueryResponse` JSON must be equal, field by field, floats bit for bit; where
//! the reference raises, `particles-rs` must fail (exit 1), and where its
//! request validation refuses, exit 2 having printed nothing.
//!
//! Stores and requests come from `tests/reference/structural_oracle.py` (seeded;
//! raise the number of seeds with `PARTICLES_STRUCTURAL_SEEDS`). Without the
//! reference's venv the comparison is skipped with a note, unless
//! `PARTICLES_REQUIRE_REFERENCE=1`. The bad-input checks at the end need no
//! reference.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

use crate::support::{file_digest, particles_rs, reference_python, workspace_root};

fn oracle_cases(python: &Path, dir: &Path, seed: u64, requests: u64) -> Vec<Value> {
    let script = workspace_root().join("tests/reference/structural_oracle.py");
    let output = Command::new(python)
        .arg(&script)
        .args([
            "--seed",
            &seed.to_string(),
            "--requests",
            &requests.to_string(),
        ])
        .arg("--out")
        .arg(dir)
        .output()
        .expect("the reference's python runs");
    assert!(
        output.status.success(),
        "structural_oracle.py --seed {seed} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let text = std::fs::read_to_string(&path).expect("the oracle wrote its cases");
    serde_json::from_str(&text).expect("cases are JSON")
}

/// The mode a request selects, as the reference dispatches.
fn mode(request: &Value) -> &'static str {
    let set = |key: &str| !request[key].is_null() && request[key] != Value::Bool(false);
    let filters = [
        "predicate",
        "object_eq",
        "object_gt",
        "object_lt",
        "object_contains",
    ]
    .iter()
    .any(|k| set(k));
    let aggregate = set("count") || set("group_by");
    let window = set("during") || set("on");
    if window && !filters && !aggregate {
        "window listing"
    } else if set("list_predicates") {
        "predicates"
    } else if set("list_vocabulary") {
        "vocabulary"
    } else if set("group_by") {
        "group_by"
    } else if aggregate {
        "count"
    } else {
        "claim listing"
    }
}

/// The request as `particles-rs query` flags.
fn arguments(request: &Value) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "query".into(),
        "--json".into(),
        "--store".into(),
        request["store"].as_str().unwrap_or_default().into(),
        "--now".into(),
        request["now"].as_str().unwrap_or_default().into(),
        format!("--top-k={}", request["top_k"]),
        format!("--min-confidence={}", request["min_confidence"]),
    ];
    if let Some(subject) = request["subject_id"].as_str() {
        args.push(format!("--subject-id={subject}"));
    }
    for tag in request["tags"].as_array().into_iter().flatten() {
        args.push(format!("--tag={}", tag.as_str().unwrap_or_default()));
    }
    for flag in [
        "include_ancestors",
        "include_document_meta",
        "include_non_asserted",
        "count",
    ] {
        if request[flag].as_bool() == Some(true) {
            args.push(format!("--{}", flag.replace('_', "-")));
        }
    }
    if request["list_predicates"].as_bool() == Some(true) {
        args.push("--predicates".into());
    }
    if request["list_vocabulary"].as_bool() == Some(true) {
        args.push("--vocabulary".into());
    }
    for option in [
        "uncertainty_nature",
        "assertion_modality",
        "recency_window_days",
        "predicate",
        "object_eq",
        "object_gt",
        "object_lt",
        "object_contains",
        "as_of",
        "during",
        "on",
        "group_by",
        "min_effective_confidence",
        "observer_project",
    ] {
        match &request[option] {
            Value::Null => {}
            Value::String(s) => args.push(format!("--{}={s}", option.replace('_', "-"))),
            other => args.push(format!("--{}={other}", option.replace('_', "-"))),
        }
    }
    args
}

/// Every difference between two JSON values, by path: objects by key set and
/// value, arrays by length and element, numbers by kind (integer or float) and
/// bits, the rest by equality.
fn differences(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for key in b.keys() {
                if !a.contains_key(key) {
                    out.push(format!("{path}.{key}: missing (reference: {})", b[key]));
                }
            }
            for (key, value) in a {
                match b.get(key) {
                    None => out.push(format!("{path}.{key}: not in the reference ({value})")),
                    Some(expected) => differences(&format!("{path}.{key}"), value, expected, out),
                }
            }
            let a_keys: Vec<&String> = a.keys().filter(|k| b.contains_key(*k)).collect();
            let b_keys: Vec<&String> = b.keys().filter(|k| a.contains_key(*k)).collect();
            if a_keys != b_keys {
                out.push(format!(
                    "{path}: keys in another order than the reference's"
                ));
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!(
                    "{path}: {} elements, the reference has {}",
                    a.len(),
                    b.len()
                ));
            }
            for (at, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{at}]"), x, y, out);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let same_kind = a.is_f64() == b.is_f64();
            let same_value = match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => x.to_bits() == y.to_bits(),
                _ => a == b,
            };
            if !(same_kind && same_value) {
                out.push(format!("{path}: {a}, the reference has {b}"));
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: {a}, the reference has {b}")),
    }
}

/// Runs one case and returns a description of any difference.
fn compare(case: &Value) -> Option<String> {
    let request = &case["request"];
    let args = arguments(request);
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = particles_rs(&arg_refs);
    let code = output.status.code();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if let Some(message) = case.get("invalid") {
        let first = message
            .as_str()
            .and_then(|m| m.lines().nth(1))
            .unwrap_or_default();
        let first = first.split(" [type=").next().unwrap_or_default().trim();
        return (code != Some(2) || !output.stdout.is_empty() || !stderr.contains(first)).then(
            || {
                format!(
                    "request {request}: the reference refused it ({message}) but particles-rs exited {code:?}: {stderr}"
                )
            },
        );
    }
    if let Some(error) = case.get("error") {
        return (code != Some(1)).then(|| {
            format!(
                "request {request}: the reference raised {error} but particles-rs exited {code:?}"
            )
        });
    }
    if code != Some(0) {
        return Some(format!("request {request}: particles-rs failed: {stderr}"));
    }
    let ours: Value = match serde_json::from_slice(&output.stdout) {
        Ok(value) => value,
        Err(e) => return Some(format!("request {request}: stdout is not JSON: {e}")),
    };
    let mut found = Vec::new();
    differences("response", &ours, &case["expected"], &mut found);
    (!found.is_empty()).then(|| {
        let shown: Vec<&String> = found.iter().take(8).collect();
        format!(
            "request {request}: {} difference(s): {shown:#?}",
            found.len()
        )
    })
}

fn seeds() -> u64 {
    std::env::var("PARTICLES_STRUCTURAL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
}

#[test]
fn structural_modes_equal_the_references_responses() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut compared: BTreeMap<&'static str, (usize, usize)> = BTreeMap::new();
    for seed in 1..=seeds() {
        let cases = oracle_cases(&python, dir.path(), seed, 60);
        let store = PathBuf::from(cases[0]["request"]["store"].as_str().unwrap());
        let before = file_digest(&store);
        for case in &cases {
            let counts = compared.entry(mode(&case["request"])).or_default();
            counts.0 += 1;
            if let Some(failure) = compare(case) {
                counts.1 += 1;
                failures.push(format!("seed {seed}: {failure}"));
            }
        }
        assert_eq!(
            before,
            file_digest(&store),
            "particles-rs changed the store of seed {seed}"
        );
    }
    let total: usize = compared.values().map(|c| c.0).sum();
    eprintln!("structural requests compared with the reference, by mode (compared, differing): {compared:?}");
    for mode in [
        "claim listing",
        "count",
        "group_by",
        "predicates",
        "vocabulary",
        "window listing",
    ] {
        assert!(
            compared.get(mode).is_some_and(|c| c.0 >= 5),
            "too few {mode} requests compared: {compared:?}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {total} structural requests differ from the reference:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A fixture store copied into `dir` (so a write would show).
fn store_copy(dir: &Path) -> PathBuf {
    let path = dir.join("store.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-a.db"),
        &path,
    )
    .unwrap();
    path
}

/// Bad input the reference refuses: exit 2, its message on stderr, nothing on
/// stdout, the store unchanged.
#[test]
fn structural_bad_input_is_refused_with_the_references_message() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_copy(dir.path());
    let store_arg = store.display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &["a question", "--count"],
            "Value error, aggregate modes (count / group_by) are deterministic and reject a simultaneous question \u{2014} an LLM narrating a deterministic count adds nothing but risk",
        ),
        (
            &["a question", "--group-by", "subject"],
            "Value error, aggregate modes (count / group_by) are deterministic and reject a simultaneous question",
        ),
        (
            &["--group-by", "axis"],
            "Unknown --group-by axis 'axis'. Valid: subject, predicate, object.",
        ),
        (
            &["--during", "2020-01-01..2020-02-01", "--on", "2020-01-05"],
            "--during and --on are alternatives; pass one.",
        ),
        (
            &["--predicate", "weighs", "--min-effective-confidence", "0.5"],
            "Value error, min_effective_confidence applies only to the aggregate modes (count / group_by); other modes use min_confidence",
        ),
        (
            &["--predicates", "--predicate", "weighs"],
            "Value error, list_predicates is a standalone vocabulary listing; combine it with no question, filter, or aggregate",
        ),
        (
            &["--vocabulary", "--during", "2020-01-01.."],
            "Value error, a time window selects claims; it does not combine with the predicate or vocabulary listings",
        ),
        (
            &["--count", "--min-effective-confidence", "1.5"],
            "Input should be less than or equal to 1",
        ),
        (
            &["--predicates", "--format", "json"],
            "--format json applies to --vocabulary only.",
        ),
        (
            &["--vocabulary", "--format", "yaml"],
            "Unknown --format 'yaml'. Valid: table, json.",
        ),
    ];
    let before = file_digest(&store);
    for (extra, message) in cases {
        let mut args = vec![
            "query",
            "--store",
            store_arg.as_str(),
            "--now",
            "2026-06-01T00:00:00Z",
        ];
        args.extend_from_slice(extra);
        let output = particles_rs(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(
            stderr.contains(message),
            "{extra:?}: {message:?} not in {stderr}"
        );
        assert!(output.stdout.is_empty(), "{extra:?} printed to stdout");
    }
    assert_eq!(
        before,
        file_digest(&store),
        "a refused request wrote the store"
    );
}

/// The text and report renderings of the fixture store: every mode answers.
#[test]
fn every_structural_mode_answers_on_a_fixture_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_copy(dir.path());
    let store_arg = store.display().to_string();
    let modes: &[&[&str]] = &[
        &["--predicates"],
        &["--vocabulary"],
        &["--count"],
        &["--group-by", "Predicate"],
        &["--object-contains", "o"],
        &["--during", "2000-01-01.."],
    ];
    for extra in modes {
        let mut args = vec![
            "query",
            "--store",
            store_arg.as_str(),
            "--now",
            "2026-06-01T00:00:00Z",
        ];
        args.extend_from_slice(extra);
        let output = particles_rs(&args);
        assert!(
            output.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!output.stdout.is_empty(), "{extra:?} printed nothing");
    }
    let output = particles_rs(&[
        "query",
        "--store",
        &store_arg,
        "--vocabulary",
        "--format",
        "json",
    ]);
    assert!(output.status.success());
    let report: Value = serde_json::from_slice(&output.stdout).expect("the report is JSON");
    assert!(report["modelling_decisions"].is_object(), "{report}");
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("{\n  \""),
        "the report is indented"
    );
}
