//! Equivalence with the reference: `particles-rs query --json` against the
//! reference's `retrieve_ranked` on the same store file, query vector and frozen
//! clock. Same ids, same order, bit-equal similarity and effective confidence; where
//! the reference raises, `particles-rs` must fail too.
//!
//! Stores and requests are generated at random from seeds by
//! `tests/reference/make_cases.py` (hand-shaped stores covering every factor of the
//! score, and the reference benchmark generator's stores). Raise the number of seeds
//! with `PARTICLES_REFERENCE_SEEDS` (the xtask does).

use std::{path::Path, process::Command};

use serde_json::Value;

use crate::support::{file_digest, particles_rs, reference_python, workspace_root};

fn make_cases(python: &Path, dir: &Path, seed: u64, generator_size: Option<u64>) -> Vec<Value> {
    let script = workspace_root().join("tests/reference/make_cases.py");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args(["--seed", &seed.to_string(), "--out"])
        .arg(dir);
    if let Some(size) = generator_size {
        command.args(["--generator-size", &size.to_string()]);
    }
    let output = command.output().expect("the reference's python runs");
    assert!(
        output.status.success(),
        "make_cases.py --seed {seed} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let cases_path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let text = std::fs::read_to_string(&cases_path).expect("make_cases.py wrote its cases");
    serde_json::from_str(&text).expect("cases are JSON")
}

/// The flags of the recall callers' options in a request (recall_cases.py's).
fn recall_flags(request: &Value) -> Vec<String> {
    let mut args = Vec::new();
    for flag in ["apply_utility", "apply_owner"] {
        if request[flag].as_bool() == Some(true) {
            args.push(format!("--{}", flag.replace('_', "-")));
        }
    }
    for tag in request["exclude_source_tags"]
        .as_array()
        .into_iter()
        .flatten()
    {
        args.push(format!(
            "--exclude-source-tag={}",
            tag.as_str().unwrap_or_default()
        ));
    }
    if let Some(weight) = request["code_symbol_rank_weight"].as_f64() {
        args.push(format!("--code-symbol-rank-weight={weight}"));
    }
    args
}

/// The message the reference's `particles query` prints for a `--subject` that
/// matches nothing (it then exits 1).
const NO_SUBJECT: &str = "No subject matches 'no-such-subject' by ID, ID prefix, or name.";

/// Runs one case through the binary (with `--config FILE` when `config` is given)
/// and returns a description of any difference.
pub(crate) fn compare(dir: &Path, case: &Value, config: Option<&Path>) -> Option<String> {
    let request = &case["request"];
    let mut args: Vec<String> = Vec::new();
    if let Some(config) = config {
        args.extend(["--config".into(), config.display().to_string()]);
    }
    args.extend([
        "query".into(),
        "the question".into(),
        "--json".into(),
        "--store".into(),
        request["store"].as_str()?.into(),
        "--top-k".into(),
        request["top_k"].to_string(),
        "--min-confidence".into(),
        request["min_confidence"].to_string(),
        "--now".into(),
        request["now"].as_str()?.into(),
    ]);
    if request["vector"].is_null() {
        args.push("--no-embedding".into());
    } else {
        let path = dir.join("vector.json");
        std::fs::write(&path, request["vector"].to_string()).ok()?;
        args.extend(["--vector-file".into(), path.display().to_string()]);
    }
    if let Some(subject) = request["subject_id"].as_str() {
        args.extend(["--subject".into(), subject.into()]);
    }
    for flag in ["include_document_meta", "include_non_asserted"] {
        if request[flag].as_bool() == Some(true) {
            args.push(format!("--{}", flag.replace('_', "-")));
        }
    }
    if let Some(tags) = request["tags"].as_array() {
        for tag in tags {
            args.extend(["--tag".into(), tag.as_str()?.into()]);
        }
        if request["include_ancestors"].as_bool() == Some(true) {
            args.push("--include-ancestors".into());
        }
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
    ] {
        if !request[option].is_null() {
            let value = match &request[option] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            args.push(format!("--{}={value}", option.replace('_', "-")));
        }
    }
    args.extend(recall_flags(request));
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = particles_rs(&arg_refs);
    let mut shown = request.clone();
    shown["vector"] = Value::String("<elided>".into());
    let expected = &case["expected"];
    if request["subject_id"].as_str() == Some("no-such-subject") {
        // The reference's CLI resolves --subject before it ranks (`retrieve_ranked`
        // takes the id as given and finds nothing): no match is an error there.
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(1) && stderr.contains(NO_SUBJECT) {
            return None;
        }
        return Some(format!(
            "request {shown}: expected exit 1 and {NO_SUBJECT:?}, got {:?}: {stderr}",
            output.status.code()
        ));
    }
    if let Some(error) = expected.get("error") {
        if output.status.code() == Some(1) {
            return None;
        }
        return Some(format!(
            "request {shown}: the reference raised {error} but particles-rs exited {:?}",
            output.status.code()
        ));
    }
    if !output.status.success() {
        return Some(format!(
            "request {shown}: particles-rs failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let actual: Value = serde_json::from_slice(&output.stdout).ok()?;
    let ours: Vec<(String, u64, u64)> = actual["hits"]
        .as_array()?
        .iter()
        .map(|hit| {
            (
                hit["id"].as_str().unwrap_or_default().to_owned(),
                hit["similarity"].as_f64().unwrap_or(f64::NAN).to_bits(),
                hit["effective_confidence"]
                    .as_f64()
                    .unwrap_or(f64::NAN)
                    .to_bits(),
            )
        })
        .collect();
    let theirs: Vec<(String, u64, u64)> = expected["hits"]
        .as_array()?
        .iter()
        .map(|hit| {
            (
                hit["id"].as_str().unwrap_or_default().to_owned(),
                hit["sim"].as_f64().unwrap_or(f64::NAN).to_bits(),
                hit["eff"].as_f64().unwrap_or(f64::NAN).to_bits(),
            )
        })
        .collect();
    if ours == theirs {
        return compare_surfaces(&shown, expected, &actual);
    }
    let first = ours
        .iter()
        .zip(&theirs)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    let show = |hits: &[(String, u64, u64)]| {
        hits.get(first).map(|(id, sim, eff)| {
            format!(
                "{id} sim={} eff={}",
                f64::from_bits(*sim),
                f64::from_bits(*eff)
            )
        })
    };
    Some(format!(
        "request {shown}: {} hits vs the reference's {}; first difference at rank {}: ours {:?}, reference {:?}",
        ours.len(),
        theirs.len(),
        first + 1,
        show(&ours),
        show(&theirs)
    ))
}

/// An instant in a JSON string, as UTC microseconds (so `Z`, `+00:00` and naive
/// spellings of one instant compare equal).
fn instant(value: &Value) -> Option<i64> {
    value
        .as_str()
        .and_then(|t| particles_model::Timestamp::parse(t).ok())
        .map(|t| t.utc_micros())
}

/// The surfaces `retrieve_ranked` does not return, against the reference's
/// `_gather_scored` and window gather on the same request.
fn compare_surfaces(shown: &Value, expected: &Value, actual: &Value) -> Option<String> {
    let mut problems = Vec::new();
    if expected["as_of_excluded_undatable"] != actual["as_of_excluded_undatable"] {
        problems.push(format!(
            "as_of_excluded_undatable {} vs the reference's {}",
            actual["as_of_excluded_undatable"], expected["as_of_excluded_undatable"]
        ));
    }
    let claims = &actual["claim_coverage"];
    let ours_claims = (!claims.is_null()).then(|| {
        (
            claims["matched"].clone(),
            claims["not_normalizable_excluded"].clone(),
        )
    });
    let theirs_claims = expected["claim_stats"]
        .as_array()
        .map(|c| (c[0].clone(), c[1].clone()));
    if ours_claims != theirs_claims {
        problems.push(format!(
            "claim counts {ours_claims:?} vs the reference's {theirs_claims:?}"
        ));
    }
    if let Some(coverage) = expected.get("window_coverage") {
        if coverage != &actual["window_coverage"] {
            problems.push(format!(
                "window coverage {} vs the reference's {coverage}",
                actual["window_coverage"]
            ));
        }
    }
    for hit in actual["hits"].as_array().into_iter().flatten() {
        let id = hit["id"].as_str().unwrap_or_default();
        let note = &expected["as_of_notes"][id];
        let ours = &hit["as_of_note"];
        let same_note = if note.is_null() {
            ours.is_null()
        } else {
            instant(&ours["retired_at"]) == instant(&note["retired_at"])
                && ours["basis"] == note["basis"]
                && ours["status"] == note["status"]
                && ours["successor"]["id"].as_str() == note["successor"].as_str()
        };
        if !same_note {
            problems.push(format!(
                "hit {id}: as-of note {ours} vs the reference's {note}"
            ));
        }
        if let Some(window_hits) = expected.get("window_hits") {
            let theirs = &window_hits[id];
            let ours = &hit["window_hit"];
            let same = ours["reading"] == theirs["reading"]
                && instant(&ours["closed_at"]) == instant(&theirs["closed_at"])
                && ours["close_basis"] == theirs["close_basis"]
                && ours["restates"] == theirs["restates"];
            if !same {
                problems.push(format!(
                    "hit {id}: window reading {ours} vs the reference's {theirs}"
                ));
            }
        }
    }
    (!problems.is_empty()).then(|| format!("request {shown}: {}", problems.join("; ")))
}

fn seeds() -> u64 {
    std::env::var("PARTICLES_REFERENCE_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6)
}

#[test]
fn rankings_equal_the_references_on_random_stores() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut stores: Vec<(u64, Option<u64>)> = (1..=seeds()).map(|seed| (seed, None)).collect();
    stores.extend([(101, Some(1_000)), (102, Some(3_000))]);
    for (seed, generator_size) in stores {
        let cases = make_cases(&python, dir.path(), seed, generator_size);
        let store = cases[0]["request"]["store"].as_str().unwrap().to_owned();
        let before = file_digest(Path::new(&store));
        for case in &cases {
            compared += 1;
            if let Some(failure) = compare(dir.path(), case, None) {
                failures.push(format!("seed {seed}: {failure}"));
            }
        }
        assert_eq!(
            before,
            file_digest(Path::new(&store)),
            "particles-rs changed the store file of seed {seed}"
        );
    }
    assert!(compared >= 12, "too few cases compared: {compared}");
    assert!(
        failures.is_empty(),
        "{} of {compared} requests differ from the reference:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
