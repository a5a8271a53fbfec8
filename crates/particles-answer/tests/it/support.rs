//! Helpers shared by the integration tests: the reference's Python and its scripts.

use std::{
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
};

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The reference venv's Python: `PARTICLES_REFERENCE_PYTHON`, else
/// `.reference/venv/bin/python` in the workspace. `None` (with a note on stderr)
/// when it is absent, unless `PARTICLES_REQUIRE_REFERENCE=1`, which makes that a
/// failure.
pub fn reference_python() -> Option<PathBuf> {
    let path = std::env::var_os("PARTICLES_REFERENCE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".reference/venv/bin/python"));
    if path.exists() {
        return Some(path);
    }
    let note = format!(
        "the reference (linkedparticles 1.214.1) is not installed: {} is missing; run \
         `cargo xtask reference` to install it",
        path.display()
    );
    if std::env::var("PARTICLES_REQUIRE_REFERENCE").as_deref() == Ok("1") {
        panic!("{note} (PARTICLES_REQUIRE_REFERENCE=1)");
    }
    eprintln!("skipping the comparison with the reference: {note}");
    None
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
