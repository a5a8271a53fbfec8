//! Helpers shared by the integration tests: the binary, the reference's Python.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the crate lives two levels below the workspace root")
        .to_owned()
}

/// A directory for the sidecars of this test process, so that queries on the
/// committed fixture stores write nothing beside them.
pub fn sidecar_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"))
        .path()
}

/// An empty home directory, so a developer's own `~/.particles/config.yaml` can
/// never leak into a test.
pub fn isolated_home() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"))
        .path()
}

/// The binary, with sidecars kept in [`sidecar_dir`] and the configuration
/// isolated: no `PARTICLES_CONFIG`, no `DATABASE_URL`, an empty `HOME`. Its
/// servers scan the half-precision copy even of the small fixtures
/// (`--half-precision on`), so every check of a served answer against the
/// reference checks that path too.
pub fn particles_rs_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_particles-rs"));
    command
        .env("PARTICLES_RS_HALF_PRECISION", "on")
        .env("PARTICLES_MODEL_DIR", particles_testkit::model_dir())
        .env("PARTICLES_SIDECAR_DIR", sidecar_dir())
        .env("HOME", isolated_home())
        .env_remove("PARTICLES_CONFIG")
        .env_remove("DATABASE_URL")
        .env_remove("PARTICLES_ENGINE_BASE_URL");
    command
}

/// Runs `particles-rs` with `args`.
pub fn particles_rs(args: &[&str]) -> Output {
    particles_rs_command()
        .args(args)
        .output()
        .expect("the particles-rs binary runs")
}

/// The reference venv's Python, or `None` after a note (a failure under
/// `PARTICLES_REQUIRE_REFERENCE=1`): the one lookup every oracle test shares.
pub use particles_testkit::{reference_python, skip_or_fail};

/// The sha256 of a file, to prove a store was not written.
pub fn file_digest(path: &Path) -> String {
    use sha2::Digest;
    let bytes = std::fs::read(path).expect("the file is readable");
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// Runs `tests/reference/SCRIPT` with `args` and `--out DIR` in the reference's
/// Python, with HOME isolated and no configuration or database URL inherited,
/// and reads the cases file whose path it prints.
pub fn reference_cases(
    python: &Path,
    script: &str,
    args: &[String],
    dir: &Path,
) -> Vec<serde_json::Value> {
    let output = std::process::Command::new(python)
        .arg(workspace_root().join("tests/reference").join(script))
        .args(args)
        .arg("--out")
        .arg(dir)
        .env("HOME", isolated_home())
        .env_remove("PARTICLES_CONFIG")
        .env_remove("DATABASE_URL")
        .output()
        .expect("the reference's python runs");
    assert!(
        output.status.success(),
        "{script} {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{script} wrote no cases file: {e}"));
    serde_json::from_str(&text).expect("cases are JSON")
}

/// The `PYTHONPATH` under which `python` (the reference's) imports its engine
/// server's packages: `PARTICLES_REFERENCE_SERVER_PATH` when set, else empty (the
/// venv's own, which `cargo xtask reference` fills). `None`, after saying what is
/// missing, when they do not import (a failure with PARTICLES_REQUIRE_REFERENCE=1).
pub fn reference_server_path(python: &Path) -> Option<String> {
    let server_path = std::env::var("PARTICLES_REFERENCE_SERVER_PATH").unwrap_or_default();
    let probe = Command::new(python)
        .env("PYTHONPATH", &server_path)
        .args(["-c", "import fastapi, uvicorn, starlette, multipart"])
        .output()
        .expect("the reference's python runs");
    if probe.status.success() {
        return Some(server_path);
    }
    skip_or_fail(&format!(
        "the reference's engine server needs fastapi, starlette, python-multipart and \
         uvicorn, which {} cannot import (run `cargo xtask reference`, or name a directory \
         holding them in PARTICLES_REFERENCE_SERVER_PATH): {}",
        python.display(),
        String::from_utf8_lossy(&probe.stderr).trim()
    ));
    None
}

/// A store made by the benchmark generator (the smallest size it takes).
pub fn generated_store(dir: &Path) -> PathBuf {
    let work = dir.join("bench");
    let output = particles_rs(&[
        "benchmark",
        "query-latency",
        "run",
        "--no-encoder",
        "--sizes",
        "2k",
        "--cold-runs",
        "1",
        "--warm-questions",
        "1",
        "--variant",
        "unfiltered",
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_dir(work.join("stores"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "db"))
        .expect("the generator wrote a store")
}
