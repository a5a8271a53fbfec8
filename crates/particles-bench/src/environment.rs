//! The reproduction tuple recorded with every result: versions, machine, load.

use serde::Serialize;

use crate::probe;

/// The reference's `Environment` keys (its Python-only ones say so), plus ours.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Environment {
    git_sha: Option<String>,
    package_version: String,
    python: String,
    numpy: String,
    sqlite: String,
    sqlalchemy: String,
    pydantic: String,
    platform: String,
    machine: String,
    cpu: String,
    cpu_count: Option<usize>,
    memory_bytes: Option<u64>,
    load_average_before: Option<[f64; 3]>,
    load_average_after: Option<[f64; 3]>,
    bench_lock: Option<String>,
    config: String,
    engine: String,
    rustc: Option<String>,
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
}

impl Environment {
    /// Reads the environment now (load average "before").
    pub(crate) fn read() -> Environment {
        let not_python = "n/a (particles-rs)".to_owned();
        let cpu = probe::cpu_model().unwrap_or_else(|| std::env::consts::ARCH.to_owned());
        let memory_bytes = probe::meminfo_bytes("MemTotal:");
        Environment {
            git_sha: command_output("git", &["rev-parse", "HEAD"]),
            package_version: env!("CARGO_PKG_VERSION").to_owned(),
            python: not_python.clone(),
            numpy: not_python.clone(),
            sqlite: particles_store::sqlite_version().to_owned(),
            sqlalchemy: not_python.clone(),
            pydantic: not_python,
            platform: format!("{}-{}", std::env::consts::OS, std::env::consts::FAMILY),
            machine: std::env::consts::ARCH.to_owned(),
            cpu,
            cpu_count: std::thread::available_parallelism().ok().map(usize::from),
            memory_bytes,
            load_average_before: probe::load_average(),
            load_average_after: None,
            bench_lock: std::env::var("PARTICLES_BENCH_LOCK").ok(),
            config: "(unset)".to_owned(),
            engine: "particles-rs".to_owned(),
            rustc: command_output("rustc", &["--version"]),
        }
    }

    /// Records the load average after the work.
    pub(crate) fn finish(&mut self) {
        self.load_average_after = probe::load_average();
    }
}
