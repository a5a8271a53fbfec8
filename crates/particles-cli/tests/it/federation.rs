//! Federated queries against the reference's `query_federated`: two, three and
//! repeated store handles defined in the test's YAML (`storage.stores`), over
//! hand-shaped stores with overlapping ids and subjects, co-evidential groups inside
//! and across stores, ties across stores, a byte copy of one store under a second
//! handle, viewer policies that differ per store, cuts from 1 to 200, and the lone
//! handle (`--store default`, which federates and re-sorts). The ranking keys are at
//! their defaults or random (half each).
//!
//! Compared: ids, order and effective-confidence bits from the reference's response,
//! and the similarity bits of the list it was built from (the response carries no
//! raw similarity). Requests come from seeds (`tests/reference/federation.py`);
//! `PARTICLES_REFERENCE_FEDERATED` raises their count (`cargo xtask equivalence`
//! does).

use std::path::Path;

use serde_json::Value;

use crate::support::{file_digest, particles_rs, reference_cases, reference_python};

fn requests() -> u64 {
    std::env::var("PARTICLES_REFERENCE_FEDERATED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(24)
}

fn federation_cases(python: &Path, dir: &Path, seed: u64, requests: u64) -> Vec<Value> {
    let args = [
        "--seed".to_owned(),
        seed.to_string(),
        "--requests".to_owned(),
        requests.to_string(),
    ];
    reference_cases(python, "federation.py", &args, dir)
}

/// `(id, effective confidence bits, similarity bits)` per hit; the similarity is
/// `None` where the reference's side did not record it.
type Ranking = Vec<(String, u64, Option<u64>)>;

fn ours(actual: &Value) -> Ranking {
    actual["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|hit| {
            (
                hit["id"].as_str().unwrap_or_default().to_owned(),
                hit["effective_confidence"]
                    .as_f64()
                    .unwrap_or(f64::NAN)
                    .to_bits(),
                hit["similarity"].as_f64().map(f64::to_bits),
            )
        })
        .collect()
}

fn theirs(expected: &Value) -> Ranking {
    expected["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|hit| {
            (
                hit["id"].as_str().unwrap_or_default().to_owned(),
                hit["eff"].as_f64().unwrap_or(f64::NAN).to_bits(),
                hit["sim"].as_f64().map(f64::to_bits),
            )
        })
        .collect()
}

/// Runs one case through the binary and describes any difference.
fn compare(dir: &Path, case: &Value) -> Option<String> {
    let request = &case["request"];
    let mut args: Vec<String> = vec![
        "--config".into(),
        case["config"].as_str()?.into(),
        "query".into(),
        "the question".into(),
        "--json".into(),
        "--top-k".into(),
        request["top_k"].to_string(),
        "--min-confidence".into(),
        request["min_confidence"].to_string(),
        "--now".into(),
        request["now"].as_str()?.into(),
    ];
    for handle in case["handles"].as_array()? {
        args.extend(["--store".into(), handle.as_str()?.into()]);
    }
    if request["vector"].is_null() {
        args.push("--no-embedding".into());
    } else {
        let path = dir.join("federated-vector.json");
        std::fs::write(&path, request["vector"].to_string()).ok()?;
        args.extend(["--vector-file".into(), path.display().to_string()]);
    }
    if let Some(subject) = request["subject_id"].as_str() {
        args.extend(["--subject".into(), subject.into()]);
    }
    let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = particles_rs(&arg_refs);
    let label = format!(
        "handles {} top_k {} min_confidence {} vector {} subject {} ({})",
        case["handles"],
        request["top_k"],
        request["min_confidence"],
        if request["vector"].is_null() {
            "none"
        } else {
            "given"
        },
        request["subject_id"],
        case["config"].as_str()?
    );
    let expected = &case["expected"];
    if let Some(error) = expected.get("error") {
        return (output.status.code() != Some(1)).then(|| {
            format!(
                "{label}: the reference raised {error} but particles-rs exited {:?}",
                output.status.code()
            )
        });
    }
    if !output.status.success() {
        return Some(format!(
            "{label}: particles-rs failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let actual: Value = serde_json::from_slice(&output.stdout).ok()?;
    let (ours, theirs) = (ours(&actual), theirs(expected));
    let same = ours.len() == theirs.len()
        && ours
            .iter()
            .zip(&theirs)
            .all(|(a, b)| a.0 == b.0 && a.1 == b.1 && b.2.is_none_or(|sim| a.2 == Some(sim)));
    if same {
        return None;
    }
    let show = |ranking: &Ranking| {
        ranking
            .iter()
            .map(|(id, eff, sim)| {
                format!(
                    "{id} eff={} sim={:?}",
                    f64::from_bits(*eff),
                    sim.map(f64::from_bits)
                )
            })
            .collect::<Vec<_>>()
            .join("\n    ")
    };
    Some(format!(
        "{label}:\n  ours:\n    {}\n  reference:\n    {}",
        show(&ours),
        show(&theirs)
    ))
}

/// Requests per seeded set of stores, at most (a raised count seeds more sets).
const PER_SEED: u64 = 24;

#[test]
fn federated_rankings_equal_the_references() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let total = requests().max(1);
    let seeds = total.div_ceil(PER_SEED);
    let mut failures = Vec::new();
    let (mut compared, mut hits) = (0, 0);
    for index in 0..seeds {
        let seed = 301 + index;
        let share = total / seeds + u64::from(index < total % seeds);
        let cases = federation_cases(&python, dir.path(), seed, share);
        let stores: Vec<_> = ["a", "b", "c", "d"]
            .iter()
            .map(|name| dir.path().join(format!("fed-{seed}-{name}.db")))
            .collect();
        let before: Vec<String> = stores.iter().map(|s| file_digest(s)).collect();
        for case in &cases {
            compared += 1;
            hits += case["expected"]["hits"].as_array().map_or(0, Vec::len);
            if let Some(failure) = compare(dir.path(), case) {
                failures.push(format!("seed {seed}: {failure}"));
            }
        }
        let after: Vec<String> = stores.iter().map(|s| file_digest(s)).collect();
        assert_eq!(
            before, after,
            "particles-rs changed a store file of seed {seed}"
        );
    }
    eprintln!("compared {compared} federated requests ({hits} hits)");
    assert!(
        hits > compared,
        "the federated requests returned too few hits: {hits}"
    );
    assert!(
        failures.is_empty(),
        "{} of {compared} federated requests differ from the reference:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
