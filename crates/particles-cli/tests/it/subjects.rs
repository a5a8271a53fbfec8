//! `query --subject REF` resolved as the reference's `particles query` resolves it
//! (config-and-stores §6.3): an exact id, a unique id prefix (SQLite `LIKE`, ASCII
//! case-insensitive, `\` escapes), a name (SQLite `lower()` against Python
//! `lower()`), an alias when no name matched; the reference's messages for no match
//! and ambiguity (exit 1). Compared with the reference's own `lookup_subject` on a
//! seeded store (`tests/reference/subjects.py`); resolved in the default store when
//! handles are queried, in the file for a plain `--store FILE`.

use std::{path::Path, process::Command};

use serde_json::Value;

use crate::support::{isolated_home, particles_rs, reference_python, workspace_root};

const NOW: &str = "2026-06-01T00:00:00Z";

struct Run {
    code: Option<i32>,
    json: Value,
    stderr: String,
}

fn query(config: Option<&Path>, stores: &[&str], subject: &str) -> Run {
    let mut args: Vec<&str> = Vec::new();
    let config_text;
    if let Some(config) = config {
        config_text = config.display().to_string();
        args.extend(["--config", &config_text]);
    }
    args.extend(["query", "q", "--no-embedding", "--json", "--now", NOW]);
    for store in stores {
        args.extend(["--store", store]);
    }
    args.extend(["--subject", subject]);
    let output = particles_rs(&args);
    Run {
        code: output.status.code(),
        json: serde_json::from_slice(&output.stdout).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// What our run shows, in the shape of the reference's result.
fn outcome(run: &Run) -> Value {
    match run.code {
        Some(0) => serde_json::json!({"id": run.json["query"]["subject_id"]}),
        Some(1) => {
            let message = run
                .stderr
                .lines()
                .next()
                .unwrap_or_default()
                .trim_start_matches("error: ");
            serde_json::json!({"message": message})
        }
        code => serde_json::json!({"exit": code, "stderr": run.stderr}),
    }
}

#[test]
fn subjects_resolve_as_the_reference_resolves_them() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(python)
        .arg(workspace_root().join("tests/reference/subjects.py"))
        .arg("--out")
        .arg(dir.path())
        .env("HOME", isolated_home())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "subjects.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let oracle: Value = serde_json::from_slice(&output.stdout).unwrap();
    let store = oracle["store"].as_str().unwrap();
    let mut failures = Vec::new();
    let results = oracle["results"].as_array().unwrap();
    for expected in results {
        let reference = expected["ref"].as_str().unwrap();
        let ours = outcome(&query(None, &[store], reference));
        let mut theirs = expected.clone();
        theirs.as_object_mut().unwrap().remove("ref");
        if ours != theirs {
            failures.push(format!(
                "--subject {reference:?}: ours {ours}, the reference's {theirs}"
            ));
        }
    }
    assert!(results.len() > 40, "too few references: {}", results.len());
    assert!(
        failures.is_empty(),
        "{} of {} references resolve differently:\n{}",
        failures.len(),
        results.len(),
        failures.join("\n")
    );

    // Handles: resolved in the default store, whichever stores are queried.
    let other = dir.path().join("other.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-a.db"),
        &other,
    )
    .unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "storage:\n  database_url: sqlite+aiosqlite:///{store}\n  stores:\n    other: sqlite+aiosqlite:///{}\n",
            other.display()
        ),
    )
    .unwrap();
    let gold = "23bafd6c-aaaa-4aaa-8aaa-000000000001";
    let by_handle = query(Some(&config), &["other"], "aurum");
    assert_eq!(
        outcome(&by_handle),
        serde_json::json!({"id": gold}),
        "{}",
        by_handle.stderr
    );
    // A plain store file: resolved in that file, where no subject is called so.
    let by_file = query(Some(&config), &[other.to_str().unwrap()], "aurum");
    assert_eq!(
        outcome(&by_file),
        serde_json::json!({"message": "No subject matches 'aurum' by ID, ID prefix, or name."})
    );
}
