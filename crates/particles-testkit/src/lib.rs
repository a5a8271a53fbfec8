//! Test support shared by the particles-rs crates (a dev-dependency only).
//!
//! Tests that compare with the reference need its venv, and tests of the encoder
//! need its model files. A plain `cargo test` on a fresh checkout has neither: such
//! a test then says what is missing and which command provides it, and skips. The
//! project's own runs (`cargo xtask test`, `cargo xtask ci`, CI) set
//! `PARTICLES_REQUIRE_REFERENCE=1` and `PARTICLES_REQUIRE_MODEL=1`, which turn the
//! absence into a failure, so a green CI run never hides a skipped oracle.
//!
//! [`fuzz`] runs a decoder against its Python counterpart in batches (the
//! differential fuzz).
//!
//! ```no_run
//! let Some(python) = particles_testkit::reference_python() else { return };
//! # let _ = python;
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod fuzz;

use std::path::{Path, PathBuf};

/// The environment variable that makes a missing reference venv a failure.
pub const REQUIRE_REFERENCE: &str = "PARTICLES_REQUIRE_REFERENCE";
/// The environment variable that makes missing model files a failure.
pub const REQUIRE_MODEL: &str = "PARTICLES_REQUIRE_MODEL";

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("this crate lives at crates/particles-testkit")
        .to_owned()
}

/// The reference venv's Python: `PARTICLES_REFERENCE_PYTHON`, else
/// `.reference/venv/bin/python` in the workspace. `None` after a note on stderr
/// when it is absent.
///
/// # Panics
///
/// When it is absent and `PARTICLES_REQUIRE_REFERENCE=1`.
pub fn reference_python() -> Option<PathBuf> {
    let path = std::env::var_os("PARTICLES_REFERENCE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".reference/venv/bin/python"));
    if path.exists() {
        return Some(path);
    }
    missing(
        REQUIRE_REFERENCE,
        &format!(
            "the reference (linkedparticles 1.214.1) is not installed: {} is missing; \
             `cargo xtask reference` installs it",
            path.display()
        ),
    );
    None
}

/// The reference venv's Python when it also imports `modules` (with
/// `pythonpath` as its PYTHONPATH): the server tests need the reference's HTTP
/// engine and MCP packages, which `cargo xtask reference` installs beside it.
/// `None` after a note on stderr when the venv or a module is absent.
///
/// # Panics
///
/// When either is absent and `PARTICLES_REQUIRE_REFERENCE=1`.
pub fn reference_python_with(modules: &[&str], pythonpath: &str) -> Option<PathBuf> {
    let python = reference_python()?;
    let imports = std::iter::once("particles")
        .chain(modules.iter().copied())
        .collect::<Vec<_>>()
        .join(", ");
    let imported = std::process::Command::new(&python)
        .args(["-c", &format!("import {imports}")])
        .env("PYTHONPATH", pythonpath)
        .output()
        .is_ok_and(|output| output.status.success());
    if imported {
        return Some(python);
    }
    missing(
        REQUIRE_REFERENCE,
        &format!(
            "{} cannot import {imports}; `cargo xtask reference` installs the reference with \
             its server and MCP packages",
            python.display()
        ),
    );
    None
}

/// The encoder's model directory as the engine finds it (`PARTICLES_MODEL_DIR`,
/// else the user cache), whether or not the files are there.
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

/// The model directory when its three files are there; `None` after a note on
/// stderr otherwise.
///
/// # Panics
///
/// When they are missing and `PARTICLES_REQUIRE_MODEL=1`.
pub fn model_files() -> Option<PathBuf> {
    let dir = model_dir();
    let absent: Vec<&str> = ["model.safetensors", "tokenizer.json", "config.json"]
        .into_iter()
        .filter(|file| !dir.join(file).is_file())
        .collect();
    if absent.is_empty() {
        return Some(dir);
    }
    missing(
        REQUIRE_MODEL,
        &format!(
            "the encoder's model is not in {} (missing: {}); `cargo xtask fetch-model` fetches it",
            dir.display(),
            absent.join(", ")
        ),
    );
    None
}

/// Reports a reference-using test that cannot run here: a panic under
/// `PARTICLES_REQUIRE_REFERENCE=1`, else a note on stderr (the test then returns).
pub fn skip_or_fail(note: &str) {
    missing(REQUIRE_REFERENCE, note);
}

fn missing(variable: &str, note: &str) {
    if std::env::var(variable).as_deref() == Ok("1") {
        panic!("{note} ({variable}=1)");
    }
    eprintln!("skipping: {note}");
}
