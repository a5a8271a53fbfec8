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

/// The encoder's model directory as the user's environment names it (the test
/// processes get an isolated `HOME`, so it is passed explicitly).
pub fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PARTICLES_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"))
        .join("particles-rs")
        .join("all-MiniLM-L6-v2")
}

/// An empty home directory, so a developer's own `~/.particles/config.yaml` can
/// never leak into a test.
pub fn isolated_home() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"))
        .path()
}

/// The binary, with sidecars kept in [`sidecar_dir`] and the configuration
/// isolated: no `PARTICLES_CONFIG`, no `DATABASE_URL`, an empty `HOME`.
pub fn particles_rs_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_particles-rs"));
    command
        .env("PARTICLES_MODEL_DIR", model_dir())
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

/// The reference venv's Python: `PARTICLES_REFERENCE_PYTHON`, else
/// `.reference/venv/bin/python` in the workspace; `None` when neither exists, after
/// printing what is missing and the command that installs it. With
/// `PARTICLES_REQUIRE_REFERENCE=1` (CI) a missing reference fails the test instead:
/// these comparisons are the point of the project and must not pass silently there.
pub fn reference_python() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PARTICLES_REFERENCE_PYTHON") {
        return Some(PathBuf::from(path));
    }
    let path = workspace_root().join(".reference/venv/bin/python");
    if path.exists() {
        return Some(path);
    }
    skip_or_fail(&format!(
        "the reference (linkedparticles 1.214.1) is not installed at {}; run `cargo xtask reference` \
         (or .ci/run) first, or set PARTICLES_REFERENCE_PYTHON",
        path.display()
    ));
    None
}

/// Reports a reference-using test that cannot run here: a panic when
/// `PARTICLES_REQUIRE_REFERENCE=1`, else a note on stderr (the test then returns).
pub fn skip_or_fail(reason: &str) {
    if std::env::var("PARTICLES_REQUIRE_REFERENCE").is_ok_and(|v| v == "1") {
        panic!("{reason} (PARTICLES_REQUIRE_REFERENCE=1)");
    }
    eprintln!("skipping: {reason}");
}

/// The sha256 of a file, to prove a store was not written.
pub fn file_digest(path: &Path) -> String {
    use sha2::Digest;
    let bytes = std::fs::read(path).expect("the file is readable");
    format!("{:x}", sha2::Sha256::digest(bytes))
}
