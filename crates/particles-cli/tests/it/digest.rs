//! The session digest against the reference's: `particles-rs digest --json` and
//! `build_digest_located` on the same store, configuration and frozen instant,
//! byte for byte (the Markdown, each line's belief, offset and contested bases);
//! where the reference fails, particles-rs must fail too.
//!
//! `tests/reference/digest_cases.py` builds each seed's store (the hand store,
//! enriched with observer scopes, contested records and stances, use events,
//! lens utility rules, recorded spend and declined sources) and asks the
//! reference for the digest under several configurations (belief caps, badges
//! off, utility off or strong, the owner lens, the refusal hold off or under
//! another model), each store-wide and through a project.

use std::{path::Path, process::Command};

use serde_json::Value;

use crate::support::{file_digest, particles_rs_command, reference_python, workspace_root};

fn digest_cases(python: &Path, dir: &Path, seed: u64) -> Vec<Value> {
    let output = Command::new(python)
        .arg(workspace_root().join("tests/reference/digest_cases.py"))
        .args(["--seed", &seed.to_string(), "--out"])
        .arg(dir)
        .output()
        .expect("the reference's python runs");
    assert!(
        output.status.success(),
        "digest_cases.py --seed {seed} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    serde_json::from_str(&std::fs::read_to_string(path).expect("the cases file")).expect("JSON")
}

/// Our digest of one case, as the reference's store handle `default`.
fn ours(case: &Value) -> Result<Value, String> {
    let request = &case["request"];
    let store = request["store"].as_str().expect("a store");
    let mut command = particles_rs_command();
    command
        .env("DATABASE_URL", format!("sqlite+aiosqlite:///{store}"))
        .args(["--config", request["config"].as_str().expect("a config")])
        .args(["digest", "--json", "--now", "2026-06-01T00:00:00Z"]);
    if let Some(project) = request["project"].as_str() {
        command.args(["--project", project]);
    }
    let output = command.output().expect("particles-rs runs");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&output.stdout).expect("--json prints JSON"))
}

fn first_difference(expected: &str, actual: &str) -> String {
    expected
        .lines()
        .zip(actual.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map_or_else(
            || "the texts differ in length or in their lines' data".to_owned(),
            |(n, (a, b))| format!("line {n}:\n  reference {a:?}\n  ours      {b:?}"),
        )
}

#[test]
fn digests_equal_the_references_on_rich_stores() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let (mut compared, mut refused_both) = (0, 0);
    for seed in 1..=4 {
        let cases = digest_cases(&python, dir.path(), seed);
        let store = cases[0]["request"]["store"].as_str().unwrap().to_owned();
        let before = file_digest(Path::new(&store));
        for case in &cases {
            compared += 1;
            let expected = &case["expected"];
            match (ours(case), expected.get("error")) {
                (Err(_), Some(_)) => refused_both += 1,
                (Ok(actual), None) if &actual == expected => {}
                (Ok(actual), None) => failures.push(format!(
                    "seed {seed}, {}: {}",
                    case["request"],
                    first_difference(
                        expected["markdown"].as_str().unwrap_or(""),
                        actual["markdown"].as_str().unwrap_or("")
                    )
                )),
                (Ok(_), Some(error)) => failures.push(format!(
                    "seed {seed}, {}: the reference failed ({error}), particles-rs answered",
                    case["request"]
                )),
                (Err(error), None) => failures.push(format!(
                    "seed {seed}, {}: particles-rs failed: {error}",
                    case["request"]
                )),
            }
        }
        assert_eq!(
            before,
            file_digest(Path::new(&store)),
            "the store of seed {seed} was written"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} digests differ from the reference's:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Every case but the malformed-tags ones (which both refuse) is a digest.
    assert!(
        compared - refused_both >= compared / 2,
        "too few digests compared"
    );
}
