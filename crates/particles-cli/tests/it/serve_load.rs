//! `benchmark serve-load --reference`: our engine and the reference's own
//! (`particles engine serve`, its encoder seamed to our vectors, on a copy of
//! the store) loaded by the same generator, with short steps on a small
//! generated store. Both engines answer every request, and the comparison, the
//! plot and both runs' results are written.

use serde_json::Value;

use crate::support::{
    generated_store, particles_rs_command, reference_python, reference_server_path,
};

fn steps(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let report: Value = serde_json::from_str(&text).expect("a JSON report");
    report["steps"].as_array().expect("steps").clone()
}

/// The reference's Python and its server's path, when this build has the
/// encoder and the model and the reference is installed: both engines rank our
/// encoder's vectors, so without them there is nothing to compare
/// (`model_files` says what is missing, or fails under
/// PARTICLES_REQUIRE_MODEL=1).
fn oracles() -> Option<(std::path::PathBuf, String)> {
    if !cfg!(feature = "encoder") {
        eprintln!("skipping: this build has no encoder (the `encoder` feature is off)");
        return None;
    }
    particles_testkit::model_files()?;
    let python = reference_python()?;
    let server_path = reference_server_path(&python)?;
    Some((python, server_path))
}

#[test]
fn both_engines_are_loaded_side_by_side() {
    let Some((python, server_path)) = oracles() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = generated_store(dir.path());
    let before = std::fs::read(&store).unwrap();
    let config = dir.path().join("load.yaml");
    // No LLM in the loop: the answer step fails fast on both sides.
    std::fs::write(&config, "network: {egress: none}\n").unwrap();
    let out = dir.path().join("out");
    let run = particles_rs_command()
        .env("PYTHONPATH", &server_path)
        .arg("--config")
        .arg(&config)
        .args(["benchmark", "serve-load", "--store"])
        .arg(&store)
        .args([
            "--rates",
            "4",
            "--step-seconds",
            "3",
            "--drain-seconds",
            "60",
            "--warmup",
            "1",
            "--reference",
        ])
        .arg(python.with_file_name("particles"))
        .args(["--reference-rates", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "serve-load failed\nstdout:\n{}\nstderr:\n{}\nthe reference's log:\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
        std::fs::read_to_string(out.join("reference/engine.log")).unwrap_or_default()
    );
    for name in ["results.json", "reference-results.json"] {
        let steps = steps(&out.join(name));
        assert_eq!(steps.len(), 1, "{name}");
        let step = &steps[0];
        assert!(step["sent"].as_u64().unwrap() > 0, "{name}: {step}");
        assert_eq!(step["ok"], step["sent"], "{name}: every request answered");
        assert!(step["p50"].as_f64().unwrap() > 0.0, "{name}: {step}");
    }
    let comparison = std::fs::read_to_string(out.join("comparison.md")).unwrap();
    assert!(
        comparison.contains("| particles-rs |") && comparison.contains("| reference |"),
        "{comparison}"
    );
    let svg = std::fs::read_to_string(out.join("latency-vs-rate.svg")).unwrap();
    assert!(
        svg.matches("<polyline").count() == 4 && svg.contains("reference p99"),
        "{svg}"
    );
    // The reference served a copy; the store itself is untouched.
    assert_eq!(std::fs::read(&store).unwrap(), before);
}

#[test]
fn the_replica_variant_loads_nodes_over_litestream_copies_beside_the_local_file() {
    let Some((python, server_path)) = oracles() else {
        return;
    };
    let litestream =
        crate::support::workspace_root().join(".reference/replica-venv/bin/litestream");
    if !litestream.is_file() {
        crate::support::skip_or_fail(
            "Litestream is not installed in .reference/replica-venv (`cargo xtask reference` \
             installs it)",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = generated_store(dir.path());
    let before = std::fs::read(&store).unwrap();
    let config = dir.path().join("replica.yaml");
    // Retraction is own-beliefs-only and default-deny: the configuration names
    // the store and the generator's asserter, as docs/replicas.md says.
    std::fs::write(
        &config,
        "network: {egress: none}\nmcp: {write: {enabled_stores: [default], asserter_identity: \
         general-extractor}}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = particles_rs_command()
        .env("PYTHONPATH", &server_path)
        .arg("--config")
        .arg(&config)
        .args(["benchmark", "serve-load", "--store"])
        .arg(&store)
        .arg("--reference")
        .arg(python.with_file_name("particles"))
        .args(["--writer-rate", "4", "--litestream"])
        .arg(&litestream)
        .args([
            "--replica-nodes",
            "2",
            "--replica-interval-ms",
            "200",
            "--rates",
            "4",
            "--step-seconds",
            "4",
            "--drain-seconds",
            "60",
            "--warmup",
            "1",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "serve-load failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    let text = std::fs::read_to_string(out.join("replica.json")).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    let nodes: Vec<&Value> = std::iter::once(&report["local"])
        .chain(report["replicas"].as_array().unwrap())
        .collect();
    assert_eq!(nodes.len(), 3, "the local file and two nodes: {report}");
    for node in nodes {
        let steps = node["report"]["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 1, "{node}");
        assert!(steps[0]["sent"].as_u64().unwrap() > 0, "{node}");
        assert_eq!(
            steps[0]["ok"], steps[0]["sent"],
            "every request answered: {node}"
        );
        assert!(out
            .join(format!("{}.json", node["name"].as_str().unwrap()))
            .is_file());
    }
    // The writer committed in both phases, and the nodes caught up with it:
    // the lag is measured from real commits to real answers.
    for writer in report["writers"].as_array().unwrap() {
        assert!(writer["ok"].as_u64().unwrap() > 0, "{writer}");
    }
    let lag = &report["replica_lag"];
    assert!(lag["commits"].as_u64().unwrap() > 0, "{lag}");
    assert!(lag["measured"].as_u64().unwrap() > 0, "{lag}");
    assert!(lag["p50"].as_f64().unwrap() > 0.0, "{lag}");
    assert!(
        lag["max"].as_f64().unwrap() >= lag["p50"].as_f64().unwrap(),
        "{lag}"
    );
    let table = std::fs::read_to_string(out.join("replica.md")).unwrap();
    assert!(table.contains("| every replica node |"), "{table}");
    eprintln!("{table}");
    let svg = std::fs::read_to_string(out.join("replica-latency.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), 3, "{svg}");
    // The nodes' servers said they serve a replica.
    let log = std::fs::read_to_string(out.join("node-1.log")).unwrap();
    assert!(log.contains("serving a Litestream replica"), "{log}");
    // The reference wrote a copy; the store itself is untouched.
    assert_eq!(std::fs::read(&store).unwrap(), before);
}
