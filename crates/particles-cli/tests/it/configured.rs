//! The configuration dimension of the live oracle: random configurations of every
//! key that enters ranking (config-and-stores §2), each written as YAML and read by
//! both engines. The reference's `retrieve_ranked` runs with `PARTICLES_CONFIG`
//! naming the file and `HOME` an empty directory (`reset_config()` between
//! configurations, its clock frozen, its encoder stubbed to the case's float32
//! vector); `particles-rs --config FILE query --now T --vector-file F` runs on the same
//! store. Same ids, same order, bit-equal similarity and effective confidence.
//!
//! Configurations come from seeds (`tests/reference/configured.py`, on stores of
//! `make_cases.py`'s hand shape with every key made to bite). The default count is
//! modest; `PARTICLES_REFERENCE_CONFIGS` raises it (`cargo xtask equivalence` does).

use std::path::Path;

use serde_json::Value;

use crate::{
    reference::compare,
    support::{file_digest, particles_rs, reference_cases, reference_python},
};

/// How many configurations in all (spread over the seeded stores).
fn configurations() -> u64 {
    std::env::var("PARTICLES_REFERENCE_CONFIGS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(16)
}

/// Requests per configuration.
const REQUESTS: u64 = 3;

/// Configurations per seeded store, at most (a raised count seeds more stores).
const PER_STORE: u64 = 12;

fn configured_cases(python: &Path, dir: &Path, seed: u64, configs: u64) -> Vec<Value> {
    let args = [
        "--seed".to_owned(),
        seed.to_string(),
        "--configs".to_owned(),
        configs.to_string(),
        "--requests".to_owned(),
        REQUESTS.to_string(),
    ];
    reference_cases(python, "configured.py", &args, dir)
}

#[test]
fn rankings_equal_the_references_under_random_configurations() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let total = configurations().max(2);
    let stores = total.div_ceil(PER_STORE).max(2);
    let mut failures = Vec::new();
    let (mut compared, mut configs, mut degenerate, mut hits) = (0, 0, 0, 0);
    let mut aborted_by_decay = 0;
    for store_index in 0..stores {
        let seed = 201 + store_index;
        let share = total / stores + u64::from(store_index < total % stores);
        let cases = configured_cases(&python, dir.path(), seed, share);
        let store = cases[0]["request"]["store"].as_str().unwrap().to_owned();
        let before = file_digest(Path::new(&store));
        let mut seen = std::collections::HashSet::new();
        for case in &cases {
            let config = Path::new(case["config"].as_str().unwrap());
            if seen.insert(config.to_owned()) {
                configs += 1;
            }
            compared += 1;
            hits += case["expected"]["hits"].as_array().map_or(0, Vec::len);
            if case["request"]["degenerate"] == Value::Bool(true) {
                degenerate += 1;
                let (by_decay, failure) = degenerate_aborts(case, config);
                aborted_by_decay += u64::from(by_decay);
                if let Some(failure) = failure {
                    failures.push(format!("seed {seed}: {failure}"));
                }
                continue;
            }
            if let Some(failure) = compare(dir.path(), case, Some(config)) {
                let yaml = std::fs::read_to_string(config).unwrap_or_default();
                failures.push(format!(
                    "seed {seed}, {}: {failure}\n{yaml}",
                    config.display()
                ));
            }
        }
        assert_eq!(
            before,
            file_digest(Path::new(&store)),
            "particles-rs changed the store file of seed {seed}"
        );
    }
    eprintln!(
        "compared {compared} requests ({hits} hits) under {configs} configurations ({degenerate} degenerate)"
    );
    assert_eq!(
        degenerate, stores,
        "every store has its degenerate configuration"
    );
    assert!(
        hits > compared,
        "the configured requests returned too few hits: {hits}"
    );
    assert!(
        aborted_by_decay > 0,
        "no degenerate configuration reached the decay"
    );
    assert!(
        failures.is_empty(),
        "{} of {compared} requests differ from the reference:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A half-life of 0 divides by zero in the reference (`ZeroDivisionError`); ours
/// must abort too, naming the key to fix. Returns whether the reference aborted
/// on the decay (it may refuse the store first, on a row that does not hydrate;
/// then ours must only fail too), and any difference.
fn degenerate_aborts(case: &Value, config: &Path) -> (bool, Option<String>) {
    let error = case["expected"]["error"].as_str().unwrap_or_default();
    let by_decay = error.starts_with("ZeroDivisionError");
    if error.is_empty() {
        return (
            false,
            Some(format!(
                "the reference did not abort on a half-life of 0: {}",
                case["expected"]
            )),
        );
    }
    let request = &case["request"];
    let config = config.display().to_string();
    let output = particles_rs(&[
        "--config",
        &config,
        "query",
        "the question",
        "--store",
        request["store"].as_str().unwrap_or_default(),
        "--no-embedding",
        "--now",
        request["now"].as_str().unwrap_or_default(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(1) && (!by_decay || stderr.contains("content_age_decay")) {
        return (by_decay, None);
    }
    (
        by_decay,
        Some(format!(
            "a half-life of 0 (the reference: {error}): expected exit 1{}, got {:?}: {stderr}",
            if by_decay {
                " naming content_age_decay"
            } else {
                ""
            },
            output.status.code()
        )),
    )
}
