//! Helpers shared by the integration tests: the reference's Python and its scripts.

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
};

/// The reference venv's Python, or `None` (skip) when it is absent; see
/// `particles_testkit::reference_python`.
pub fn reference_python() -> Option<PathBuf> {
    particles_testkit::reference_python()
}

/// Runs `tests/reference/<script>` under the reference's Python with `input` on
/// stdin and returns its stdout parsed as JSON.
pub fn run_reference(
    python: &std::path::Path,
    script: &str,
    input: &serde_json::Value,
) -> serde_json::Value {
    let script_path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/reference")
        .join(script);
    let mut child = Command::new(python)
        .arg(&script_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the reference's python starts");
    let stdin = child.stdin.take().expect("stdin is piped");
    let payload = input.to_string();
    let writer = std::thread::spawn(move || {
        let mut stdin = stdin;
        stdin
            .write_all(payload.as_bytes())
            .expect("the script reads its input");
    });
    let output = child
        .wait_with_output()
        .expect("the reference's python runs");
    writer.join().expect("the input was written");
    assert!(
        output.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the script prints JSON")
}
