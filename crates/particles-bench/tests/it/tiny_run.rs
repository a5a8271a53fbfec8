//! A tiny benchmark end to end: a 2k-belief store from our generator, two cells of
//! every one-shot kind, a warm cell per variant, each cell in its own process.
//! Every cell must succeed, our report must render every kind, and the reference's
//! own `particles benchmark query-latency report` must accept the work directory
//! (it validates each `cells/*.json` as its `CellResult`, whose `spec.mode` is
//! `cold` or `warm` only).
//!
//! The reference's half needs its venv (`cargo xtask reference`, or the venv of
//! `PARTICLES_REFERENCE_PYTHON`). Without it that half is skipped with a printed
//! reason, unless `PARTICLES_REQUIRE_REFERENCE=1`, which makes its absence a
//! failure.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use particles_bench::{render_report, run, CellCommand, RunOptions};
use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate lives two levels below the workspace root")
        .to_owned()
}

/// The reference venv (the one of `PARTICLES_REFERENCE_PYTHON` when set, as in
/// the other crates' tests, else `.reference/venv`), or why the reference's half
/// is skipped.
fn reference_venv() -> Result<PathBuf, String> {
    let venv = std::env::var_os("PARTICLES_REFERENCE_PYTHON")
        .and_then(|python| Some(Path::new(&python).parent()?.parent()?.to_owned()))
        .unwrap_or_else(|| workspace_root().join(".reference/venv"));
    if venv.join("bin/particles").exists() {
        return Ok(venv);
    }
    let reason = format!(
        "the reference venv is not at {} (install it with `cargo xtask reference`)",
        venv.display()
    );
    assert!(
        std::env::var("PARTICLES_REQUIRE_REFERENCE").as_deref() != Ok("1"),
        "PARTICLES_REQUIRE_REFERENCE=1 but {reason}"
    );
    Err(reason)
}

/// Every result file in `dir`, parsed.
fn results(dir: &Path) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            (name, value)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The distinct `spec.mode`s of `results`, sorted.
fn modes(results: &[(String, Value)]) -> Vec<String> {
    let modes: std::collections::BTreeSet<String> = results
        .iter()
        .map(|(_, r)| r["spec"]["mode"].as_str().unwrap().to_owned())
        .collect();
    modes.into_iter().collect()
}

#[test]
fn a_tiny_run_reads_in_our_report_and_the_reference_s() {
    let venv = reference_venv();
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let options = RunOptions {
        sizes: "2k".into(),
        cold_runs: 2,
        warm_questions: 3,
        encoder: false,
        // With the venv, the run asks the reference's own question vectors.
        reference_venv: Some(venv.clone().unwrap_or_else(|_| dir.path().join("no-venv"))),
        command_line: [
            "benchmark",
            "query-latency",
            "run",
            "--sizes",
            "2k",
            "--no-encoder",
        ]
        .map(str::to_owned)
        .to_vec(),
        ..RunOptions::new(
            work.clone(),
            CellCommand {
                program: env!("CARGO_BIN_EXE_particles-bench-cell").into(),
                args: vec![],
            },
        )
    };
    run(&options).unwrap();

    // The reference's modes in `cells/`, ours alone in `cells-extra/`; all ok.
    let cells = results(&work.join("cells"));
    let extra = results(&work.join("cells-extra"));
    for (name, result) in cells.iter().chain(&extra) {
        assert_eq!(result["status"], "ok", "{name}: {}", result["error"]);
    }
    assert_eq!(
        cells.len(),
        2 + 1 + 2 + 1,
        "{:?}",
        cells.iter().map(|c| &c.0).collect::<Vec<_>>()
    );
    assert_eq!(modes(&cells), ["cold", "warm"]);
    assert_eq!(extra.len(), 1 + 2);
    assert_eq!(modes(&extra), ["cold-evicted", "first"]);

    // The floors the page compares with: the JSON decode of every embedding (the
    // first cell) and the f32 scan (the warm unfiltered cell).
    let floor = |results: &[(String, Value)], cell: &str, floor: &str| {
        let (_, result) = results.iter().find(|(name, _)| name == cell).unwrap();
        result["floors"][floor].as_f64().unwrap()
    };
    assert!(
        floor(
            &extra,
            "n2000-first-unfiltered.json",
            "json_parse_single_core_seconds"
        ) > 0.0
    );
    assert!(
        floor(
            &cells,
            "n2000-warm-unfiltered.json",
            "f32_scan_single_thread_seconds"
        ) > 0.0
    );

    // Our report renders every kind.
    let page = render_report(&work, &work.join("report")).unwrap();
    let text = std::fs::read_to_string(page).unwrap();
    for kind in [
        "#### first, unfiltered",
        "#### cold, unfiltered",
        "#### cold-evicted, unfiltered",
        "#### cold, subject",
        "#### warm, unfiltered",
        "#### warm, subject",
    ] {
        assert!(text.contains(kind), "our report lacks {kind:?}:\n{text}");
    }
    let exported: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(work.join("report/query-latency-2k.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(exported.len(), cells.len() + extra.len());

    // The reference's report over the same work directory.
    let venv = match venv {
        Ok(venv) => venv,
        Err(reason) => {
            eprintln!("skipped the reference's report: {reason}");
            return;
        }
    };
    let output = Command::new(venv.join("bin/particles"))
        .args(["benchmark", "query-latency", "report", "--work-dir"])
        .arg(&work)
        .output()
        .expect("the reference's `particles` runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the reference's report failed:\n{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    for kind in [
        "#### cold, unfiltered",
        "#### cold, subject",
        "#### warm, unfiltered",
        "#### warm, subject",
    ] {
        assert!(
            stdout.contains(kind),
            "the reference's report lacks {kind:?}:\n{stdout}"
        );
    }
}
