//! One-shot `query` processes and the sidecar: the first writes it beside the store,
//! the next start from it, a Python write in between is seen, a damaged file is
//! rebuilt with a note, and the answers equal `--no-sidecar` every time.

use std::{io::Write, path::Path, process::Stdio};

use serde_json::Value;

use crate::support::{file_digest, particles_rs_command, reference_python, workspace_root};

/// Runs a query on `store` with `extra` flags; the sidecar goes beside the store
/// unless `extra` says otherwise. Returns (hits, route, stderr).
fn query(store: &Path, extra: &[&str]) -> (Value, Value, String) {
    let vector = workspace_root().join("tests/fixtures/stores/coins-a.question.json");
    let output = particles_rs_command()
        .env_remove("PARTICLES_SIDECAR_DIR")
        .args([
            "query",
            "which coins are rare?",
            "--json",
            "--top-k",
            "20",
            "--now",
            "2026-06-01T00:00:00Z",
        ])
        .arg("--store")
        .arg(store)
        .arg("--vector-file")
        .arg(&vector)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "query failed: {stderr}");
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    (json["hits"].clone(), json["cache"]["route"].clone(), stderr)
}

/// Inserts a belief through the reference; `false` when it is not installed (the
/// test then stops there).
fn python_insert(store: &Path) -> bool {
    let Some(python) = reference_python() else {
        return false;
    };
    let vector: Value = serde_json::from_str(
        &std::fs::read_to_string(
            workspace_root().join("tests/fixtures/stores/coins-a.question.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let ops = serde_json::json!([{
        "op": "insert", "id": "python-written", "content": "Written by the reference.",
        "confidence": 0.99, "vector": vector, "subject_ids": []
    }]);
    let mut child = std::process::Command::new(python)
        .arg(workspace_root().join("tests/reference/write_ops.py"))
        .arg(store)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(ops.to_string().as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    true
}

#[test]
fn one_shot_queries_share_a_sidecar_and_stay_exact() {
    if particles_testkit::reference_python().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("coins-a.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-a.db"),
        &store,
    )
    .unwrap();
    let sidecar = dir.path().join("coins-a.db.particles-rs.sidecar");

    let (expected, route, _) = query(&store, &["--no-sidecar"]);
    assert_eq!(route, Value::Null, "--no-sidecar reads uncached");
    assert!(!sidecar.exists(), "--no-sidecar writes nothing");
    let digest = file_digest(&store);

    let (hits, route, stderr) = query(&store, &[]);
    assert_eq!((hits, route.as_str()), (expected.clone(), Some("rebuild")));
    assert!(!stderr.contains("note:"), "{stderr}");
    assert!(sidecar.exists());
    let (hits, route, _) = query(&store, &[]);
    assert_eq!((hits, route.as_str()), (expected.clone(), Some("sidecar")));
    assert_eq!(file_digest(&store), digest, "the store is never written");

    // The reference writes while no Rust process runs.
    if !python_insert(&store) {
        return;
    }
    let (fresh, _, _) = query(&store, &["--no-sidecar"]);
    assert_ne!(fresh, expected);
    assert_eq!(fresh[0]["id"], "python-written");
    let (hits, route, _) = query(&store, &[]);
    assert_eq!((&hits, route.as_str()), (&fresh, Some("delta")));
    let (hits, route, _) = query(&store, &[]);
    assert_eq!((&hits, route.as_str()), (&fresh, Some("sidecar")));

    // A damaged sidecar is named, rebuilt, and the answer does not change.
    let mut bytes = std::fs::read(&sidecar).unwrap();
    bytes[30] ^= 0xff;
    std::fs::write(&sidecar, bytes).unwrap();
    let (hits, route, stderr) = query(&store, &[]);
    assert_eq!((&hits, route.as_str()), (&fresh, Some("rebuild")));
    assert!(
        stderr.contains("is unusable") && stderr.contains(&*sidecar.to_string_lossy()),
        "{stderr}"
    );

    // --sidecar-dir puts it elsewhere.
    let elsewhere = tempfile::tempdir().unwrap();
    let (hits, _, _) = query(
        &store,
        &["--sidecar-dir", elsewhere.path().to_str().unwrap()],
    );
    assert_eq!(hits, fresh);
    assert!(elsewhere
        .path()
        .join("coins-a.db.particles-rs.sidecar")
        .exists());
}

#[test]
fn sidecar_verify_reports_and_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("coins-b.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-b.db"),
        &store,
    )
    .unwrap();
    query(&store, &[]);
    let sidecar = dir.path().join("coins-b.db.particles-rs.sidecar");
    let output = particles_rs_command()
        .args(["sidecar", "verify", "--store"])
        .arg(&store)
        .env_remove("PARTICLES_SIDECAR_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(
        stdout.contains("vectors") && stdout.contains("ok"),
        "{stdout}"
    );

    // A flipped bit in a vector: opening does not hash vectors, verify does.
    let mut bytes = std::fs::read(&sidecar).unwrap();
    bytes[4096 + 5] ^= 0x40;
    std::fs::write(&sidecar, bytes).unwrap();
    let output = particles_rs_command()
        .args(["sidecar", "verify", "--store"])
        .arg(&store)
        .env_remove("PARTICLES_SIDECAR_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("section vectors fails its checksum"),
        "{stderr}"
    );
}

/// The byte range `sidecar verify` reports for `section` of `store`'s sidecar.
fn section_range(store: &Path, section: &str) -> std::ops::Range<usize> {
    let output = particles_rs_command()
        .args(["sidecar", "verify", "--store"])
        .arg(store)
        .env_remove("PARTICLES_SIDECAR_DIR")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    // Lines read `  <name> <length> bytes at <start>  ok`.
    let line = stdout
        .lines()
        .find(|line| line.split_whitespace().next() == Some(section))
        .unwrap_or_else(|| panic!("no {section} section in {stdout}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (len, start): (usize, usize) = (words[1].parse().unwrap(), words[4].parse().unwrap());
    start..start + len
}

/// Flips bits inside one section of a good sidecar (as a bad disk might, leaving
/// the header and every section opening hashes intact), then queries: the answer
/// must be the store's, with a note naming the file and saying it was rebuilt, and
/// the file written back must be whole again.
fn damaged_section_is_caught_and_rebuilt(section: &str, offsets: &[usize], mask: u8) {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("coins-b.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-b.db"),
        &store,
    )
    .unwrap();
    let (expected, _, _) = query(&store, &["--no-sidecar"]);
    let (_, route, _) = query(&store, &[]);
    assert_eq!(route.as_str(), Some("rebuild"));
    let sidecar = dir.path().join("coins-b.db.particles-rs.sidecar");
    let range = section_range(&store, section);
    let mut bytes = std::fs::read(&sidecar).unwrap();
    for &offset in offsets {
        assert!(
            offset < range.len(),
            "{offset} is outside {section} ({range:?})"
        );
        bytes[range.start + offset] ^= mask;
    }
    std::fs::write(&sidecar, bytes).unwrap();

    let (hits, route, stderr) = query(&store, &[]);
    assert_eq!(
        hits, expected,
        "{section}: the answer is the store's, not the damaged file's"
    );
    assert_eq!(route.as_str(), Some("rebuild"), "{section}: {stderr}");
    assert!(
        stderr.contains(&*sidecar.to_string_lossy())
            && stderr.contains("failed its integrity check")
            && stderr.contains("rebuilt"),
        "{section}: {stderr}"
    );
    // The same process wrote a whole sidecar back: it verifies and the next process
    // answers from it, the same answer.
    section_range(&store, section);
    let (hits, route, stderr) = query(&store, &[]);
    assert_eq!((&hits, route.as_str()), (&expected, Some("sidecar")));
    assert!(!stderr.contains("note:"), "{stderr}");
}

#[test]
fn a_damaged_vector_is_caught_by_the_scan_and_the_answer_stays_exact() {
    // A few flipped bits across rows (row 0's second float, row 1's, row 5's).
    damaged_section_is_caught_and_rebuilt("vectors", &[5, 1537 * 4 + 2, 9001], 0x10);
}

#[test]
fn a_damaged_norm_is_caught_by_the_scan_and_the_answer_stays_exact() {
    // An exponent bit of the first three rows' norms: each norm is multiplied or
    // divided by four, which moves those rows' cosines.
    damaged_section_is_caught_and_rebuilt("norms", &[3, 7, 11], 0x01);
}
