//! The memory projection against the reference's: `particles-rs memory-region
//! --json` and `render_memory_region` on the same store, configuration,
//! manifest and frozen instant, byte for byte (the body, its hash and the fold
//! verdicts in order); where the reference fails (a stale pin, a file section
//! without a base directory, a URI several entries share), particles-rs fails
//! too.
//!
//! `tests/reference/projection_cases.py` builds each seed's rich store (the
//! digest's, with hostile belief text and the provenance index the fold reads)
//! and asks the reference for the region of several manifests: the memory
//! manifest `init claude-code` writes, several sections (bullets and the prose
//! listing), tags, subjects, floors, pins, a tight budget, a mechanical block,
//! observers, excluded source tags and fold targets.

use std::path::Path;

use serde_json::Value;

use crate::support::{
    file_digest, first_difference, particles_rs_command, reference_cases, reference_python,
    workspace_root,
};

/// Our region of one case, with the verdicts' order beside them as the oracle
/// writes it.
fn ours(case: &Value, manifest: &Path) -> Result<Value, String> {
    let request = &case["request"];
    std::fs::write(manifest, request["manifest"].to_string()).expect("the manifest is written");
    let mut command = particles_rs_command();
    command
        .args(["--config", request["config"].as_str().expect("a config")])
        .args(["memory-region", "--json", "--now", "2026-06-01T00:00:00Z"])
        .args(["--store", request["store"].as_str().expect("a store")])
        .arg("--manifest")
        .arg(manifest);
    match request["base_dir"].as_str() {
        Some(dir) => command.args(["--base-dir", dir]),
        None => command.arg("--remote"),
    };
    if let Some(project) = request["observer_project"].as_str() {
        command.args(["--observer-project", project]);
    }
    for tag in request["exclude_source_tags"]
        .as_array()
        .into_iter()
        .flatten()
    {
        command.arg(format!("--exclude-source-tag={}", tag.as_str().unwrap()));
    }
    for uri in request["fold_targets"].as_array().into_iter().flatten() {
        command.arg(format!("--fold-target={}", uri.as_str().unwrap()));
    }
    let output = command.output().expect("particles-rs runs");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let mut region: Value = serde_json::from_slice(&output.stdout).expect("--json prints JSON");
    let order: Vec<Value> = region["fold_verdicts"]
        .as_object()
        .map(|verdicts| verdicts.keys().map(|k| Value::from(k.as_str())).collect())
        .unwrap_or_default();
    region["fold_order"] = Value::Array(order);
    Ok(region)
}

#[test]
fn regions_equal_the_references_on_rich_stores() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("manifest.json");
    let mut failures = Vec::new();
    let (mut compared, mut failed_both, mut verdicts) = (0, 0, 0);
    for seed in 1..=4 {
        let cases = reference_cases(
            &python,
            "projection_cases.py",
            &crate::digest::seed_args(seed),
            dir.path(),
        );
        let store = cases[0]["request"]["store"].as_str().unwrap().to_owned();
        let before = file_digest(Path::new(&store));
        for case in &cases {
            compared += 1;
            let expected = &case["expected"];
            let what = format!(
                "seed {seed}, manifest {}, observer {}",
                case["request"]["manifest"]["name"], case["request"]["observer_project"]
            );
            match (ours(case, &manifest), expected.get("error")) {
                (Err(_), Some(_)) => failed_both += 1,
                (Ok(actual), None) if &actual == expected => {
                    verdicts += expected["fold_order"].as_array().map_or(0, Vec::len);
                }
                (Ok(actual), None) => failures.push(format!(
                    "{what}: {}",
                    first_difference(
                        expected["body"].as_str().unwrap_or(""),
                        actual["body"].as_str().unwrap_or("")
                    )
                )),
                (Ok(_), Some(error)) => failures.push(format!(
                    "{what}: the reference failed ({error}), particles-rs answered"
                )),
                (Err(error), None) => {
                    failures.push(format!("{what}: particles-rs failed: {error}"))
                }
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
        "{} of {compared} regions differ from the reference's:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        compared - failed_both >= compared * 2 / 3,
        "too few regions compared"
    );
    assert!(
        verdicts >= 20,
        "too few fold verdicts compared ({verdicts})"
    );
}

/// The README's synopsis as written, without the reference: a YAML manifest
/// with a block beside it (read from the manifest's directory), the store by
/// handle, the body printed as is and equal to the `--json` body, whose hash
/// is its SHA-256; `--remote` refuses the block with the reference's sentence;
/// a stale pin and a manifest pydantic refuses fail with a clear message and
/// exit code 2 or 1, writing nothing.
#[test]
fn the_synopsis_runs_as_written() {
    use sha2::Digest;

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-a.db"),
        &store,
    )
    .expect("the fixture store");
    let before = file_digest(&store);
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "network: {{egress: none}}\nstorage:\n  database_url: \"sqlite+aiosqlite:///{}\"\n",
            store.display()
        ),
    )
    .unwrap();
    let manifests = dir.path().join("memory");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("intro.md"), "\n# Remember\n\n").unwrap();
    let manifest = manifests.join("memory.yaml");
    std::fs::write(
        &manifest,
        "name: memory-index\nsections:\n  - block: intro.md\n  - title: \"Memory index\"\n    \
         top_k: 5\n    render: bullets   # ranked bullets\nmax_lines: 40\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut command = particles_rs_command();
        command
            .arg("--config")
            .arg(&config)
            .args(["memory-region", "--store", "default", "--manifest"])
            .arg(&manifest)
            .args(["--now", "2026-06-01T00:00:00Z"])
            .args(extra);
        command.output().expect("particles-rs runs")
    };
    let plain = run(&[]);
    assert!(
        plain.status.success(),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
    let body = String::from_utf8(plain.stdout).unwrap();
    assert!(
        body.starts_with("# Remember\n## Memory index\n\n- "),
        "{body}"
    );
    assert!(body.contains("<!-- sources: p-"), "{body}");
    let json = run(&["--json", "--fold-target", "file:///nowhere.md"]);
    assert!(json.status.success());
    let region: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(region["body"], body.as_str());
    assert_eq!(
        region["content_hash"],
        format!("{:x}", sha2::Sha256::digest(body.as_bytes())).as_str()
    );
    assert_eq!(
        region["fold_verdicts"],
        serde_json::json!({"file:///nowhere.md": "not-extracted"})
    );
    let remote = run(&["--remote"]);
    assert_eq!(remote.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&remote.stderr).contains(
        "the memory manifest includes a file section, which a remote engine cannot read"
    ));

    std::fs::write(
        &manifest,
        "name: m\nsections:\n  - title: S\n    render: bullets\n    select: {allow: [p-zzzz]}\n",
    )
    .unwrap();
    let stale = run(&[]);
    assert_eq!(stale.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&stale.stderr)
        .contains("section 'S' select.allow id 'p-zzzz' resolves to no ACTIVE particle"));
    std::fs::write(&manifest, "name: m\nsections:\n  - title: t\n").unwrap();
    let invalid = run(&[]);
    assert_eq!(invalid.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&invalid.stderr);
    assert!(
        stderr.contains("needs at least one of tags / subjects / query"),
        "{stderr}"
    );
    assert_eq!(before, file_digest(&store), "the store was written");
}

/// `serve --http --store FILE` serves the file as the `default` handle of the
/// digest and the memory projection (where the reference's `DATABASE_URL`
/// would name it), whatever the configuration's default store is: the route's
/// region equals `memory-region --json` over the same file.
#[test]
fn a_store_served_as_a_file_is_the_default_handle() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("served.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-a.db"),
        &store,
    )
    .unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "network: {egress: none}\n").unwrap();
    let manifest = dir.path().join("m.json");
    let manifest_json = r#"{"name": "memory-index", "sections": [{"title": "M", "render": "bullets", "top_k": 4}]}"#;
    std::fs::write(&manifest, manifest_json).unwrap();
    let cli = particles_rs_command()
        .arg("--config")
        .arg(&config)
        .args(["memory-region", "--json", "--remote", "--manifest"])
        .arg(&manifest)
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    let expected: Value = serde_json::from_slice(&cli.stdout).unwrap();
    let mut server = crate::support::Running::start(
        particles_rs_command()
            .arg("--config")
            .arg(&config)
            .args([
                "serve",
                "--http",
                "--listen",
                "127.0.0.1:0",
                "--no-sidecar",
                "--store",
            ])
            .arg(&store)
            .current_dir(dir.path()),
    );
    let api = server.api_addr();
    let body = format!(r#"{{"manifest": {manifest_json}}}"#);
    let (status, _, text) =
        crate::support::http_exchange(&api, "POST", "/memory/projection/default", &[], Some(&body));
    assert_eq!(status, 200, "{text}");
    let region: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(region["body"], expected["body"]);
    let (status, _, text) =
        crate::support::http_exchange(&api, "GET", "/digest/default", &[], None);
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("Memory digest"), "{text}");
    server.terminate();
}
