//! The reproduction tuple recorded with every result: versions, machine, load.

use serde::Serialize;

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

fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut parts = text.split_whitespace().map(|p| p.parse::<f64>().ok());
    Some([parts.next()??, parts.next()??, parts.next()??])
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
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_owned());
        let memory_bytes = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
                .map(|kib| kib * 1024)
        });
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
            load_average_before: load_average(),
            load_average_after: None,
            bench_lock: std::env::var("PARTICLES_BENCH_LOCK").ok(),
            config: "(unset)".to_owned(),
            engine: "particles-rs".to_owned(),
            rustc: command_output("rustc", &["--version"]),
        }
    }

    /// Records the load average after the work.
    pub(crate) fn finish(&mut self) {
        self.load_average_after = load_average();
    }
}
