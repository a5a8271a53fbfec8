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
/// isolated: no `PARTICLES_CONFIG`, no `DATABASE_URL`, an empty `HOME`.
pub fn particles_rs_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_particles-rs"));
    command
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

/// The reference venv's Python; call only after the test checked
/// `particles_testkit::reference_python()` (which skips or fails when absent).
pub fn reference_python() -> PathBuf {
    particles_testkit::reference_python()
        .expect("the test checked particles_testkit::reference_python() first")
}

/// The sha256 of a file, to prove a store was not written.
pub fn file_digest(path: &Path) -> String {
    use sha2::Digest;
    let bytes = std::fs::read(path).expect("the file is readable");
    format!("{:x}", sha2::Sha256::digest(bytes))
}
