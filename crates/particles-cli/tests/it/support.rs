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

/// An HTTP response: the status, the headers (names lowercased) and the body.
pub type Exchanged = (u16, Vec<(String, String)>, String);

/// One HTTP/1.1 exchange on loopback (`Connection: close`): the status, the
/// headers (names lowercased) and the body.
pub fn http_exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Exchanged {
    try_http_exchange(addr, method, path, headers, body)
        .unwrap_or_else(|error| panic!("the exchange with {addr} failed: {error}"))
}

/// [`http_exchange`], where a server that refuses the connection (one being
/// restarted) is an error to count, not a panic.
pub fn try_http_exchange(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> std::io::Result<Exchanged> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(120)))?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body.unwrap_or_default());
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Ok((status, headers, body))
}

/// A chunked body joined.
pub fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || tail.len() < size {
            break;
        }
        body.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    body
}

/// A long-running `particles-rs` (a server), its stderr collected line by
/// line as it comes; killed on drop.
pub struct Running {
    pub child: std::process::Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Running {
    /// Starts `command` with its stderr piped and read on a thread.
    pub fn start(command: &mut Command) -> Running {
        use std::io::BufRead;
        let mut child = command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("particles-rs starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
            }
        });
        Running { child, lines }
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (at most two minutes) for a stderr line starting with `prefix`
    /// and returns the rest of it.
    pub fn wait_for_line(&mut self, prefix: &str) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            if let Some(line) = self.stderr().iter().find_map(|l| l.strip_prefix(prefix)) {
                return line.to_owned();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                std::thread::sleep(std::time::Duration::from_millis(200));
                panic!(
                    "particles-rs exited ({status}) before printing {prefix:?}:\n{}",
                    self.stderr().join("\n")
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no line {prefix:?} in:\n{}",
                self.stderr().join("\n")
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// The listening address a server printed (`particles-rs engine on http://ADDR`).
    pub fn api_addr(&mut self) -> String {
        let rest = self.wait_for_line("particles-rs engine on http://");
        rest.split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    /// The metrics address a server printed (`Metrics: http://ADDR/metrics`).
    pub fn metrics_addr(&mut self) -> String {
        let rest = self.wait_for_line("Metrics: http://");
        rest.split('/').next().unwrap_or_default().to_owned()
    }

    /// Sends SIGTERM (through kill(1): the crate forbids unsafe code) and
    /// waits for the exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let status = self.child.wait().expect("particles-rs exits");
        // The reader thread drains what was left.
        std::thread::sleep(std::time::Duration::from_millis(200));
        status
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The demo's store (`examples/coins.jsonl`, embedded by the encoder), imported
/// into `dir`.
pub fn demo_store(dir: &Path) -> PathBuf {
    let store = dir.join("coins.db");
    let examples = workspace_root().join("examples/coins.jsonl");
    let output = particles_rs(&[
        "import",
        "--store",
        store.to_str().unwrap(),
        examples.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    store
}

/// The first line where two texts differ, both sides quoted; for texts equal
/// line by line, a note that they differ in length or beside their text.
pub fn first_difference(expected: &str, actual: &str) -> String {
    expected
        .lines()
        .zip(actual.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map_or_else(
            || "equal line by line: they differ in length or beside the text".to_owned(),
            |(n, (a, b))| format!("line {n}:\n  reference {a:?}\n  ours      {b:?}"),
        )
}
