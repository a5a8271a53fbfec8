//! `import`: the demo beliefs into a new store that the reference itself opens and
//! ranks the same way; bad lines reported by line number and field, skipped or (with
//! `--strict`) refused with nothing written.
//!
//! Needs the encoder's model (`particles-rs model fetch`) and the reference venv.

use std::{path::Path, process::Command};

use serde_json::Value;

use crate::support::{file_digest, particles_rs, reference_python, workspace_root};

fn ranking(json: &Value, ids: &str, sim: &str, eff: &str) -> Vec<(String, u64, u64)> {
    json[ids]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap().to_owned(),
                h[sim].as_f64().unwrap().to_bits(),
                h[eff].as_f64().unwrap().to_bits(),
            )
        })
        .collect()
}

#[test]
fn imported_store_ranks_alike_in_the_reference() {
    if !cfg!(feature = "encoder") {
        eprintln!("skipping: this build has no encoder (the `encoder` feature is off)");
        return;
    }
    if particles_testkit::reference_python().is_none() {
        return;
    }
    if particles_testkit::model_files().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("coins.db");
    let demo = workspace_root().join("examples/coins.jsonl");
    let output = particles_rs(&[
        "import",
        "--store",
        store.to_str().unwrap(),
        demo.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("imported 212 belief(s)"));

    let question = "how are old coins graded?";
    let embedded = particles_rs(&["embed", question]);
    assert!(
        embedded.status.success(),
        "{}",
        String::from_utf8_lossy(&embedded.stderr)
    );
    let vector_path = dir.path().join("question.json");
    std::fs::write(&vector_path, &embedded.stdout).unwrap();

    // Ours, by vector and by text: the same.
    let by_vector = particles_rs(&[
        "query",
        question,
        "--store",
        store.to_str().unwrap(),
        "--vector-file",
        vector_path.to_str().unwrap(),
        "--now",
        "2026-06-01T00:00:00Z",
        "--json",
    ]);
    assert!(
        by_vector.status.success(),
        "{}",
        String::from_utf8_lossy(&by_vector.stderr)
    );
    let by_text = particles_rs(&[
        "query",
        "--store",
        store.to_str().unwrap(),
        question,
        "--now",
        "2026-06-01T00:00:00Z",
        "--json",
    ]);
    let ours: Value = serde_json::from_slice(&by_vector.stdout).unwrap();
    let ours_text: Value = serde_json::from_slice(&by_text.stdout).unwrap();
    assert_eq!(
        ranking(&ours, "hits", "similarity", "effective_confidence"),
        ranking(&ours_text, "hits", "similarity", "effective_confidence")
    );
    assert!(ours["stats"]["collapsed"].as_u64().unwrap() <= 4);

    // The reference on a copy of the same file (it switches the file to WAL).
    let copy = dir.path().join("copy.db");
    std::fs::copy(&store, &copy).unwrap();
    let vector: Value = serde_json::from_slice(&embedded.stdout).unwrap();
    let request = serde_json::json!([{"store": copy, "vector": vector, "top_k": 40, "now": "2026-06-01T00:00:00Z"}]);
    let mut child = Command::new(reference_python())
        .arg(workspace_root().join("tests/reference/oracle.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let oracle = child.wait_with_output().unwrap();
    assert!(
        oracle.status.success(),
        "{}",
        String::from_utf8_lossy(&oracle.stderr)
    );
    let theirs: Value = serde_json::from_slice(&oracle.stdout).unwrap();
    assert_eq!(
        ranking(&ours, "hits", "similarity", "effective_confidence"),
        ranking(&theirs[0], "hits", "sim", "eff")
    );
}

#[test]
fn bad_lines_are_named_and_skipped_or_refused() {
    if !cfg!(feature = "encoder") {
        eprintln!("skipping: this build has no encoder (the `encoder` feature is off)");
        return;
    }
    if particles_testkit::model_files().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("beliefs.jsonl");
    std::fs::write(
        &file,
        concat!(
            "{\"content\": \"Gold does not rust.\", \"confidence\": 0.9}\n",
            "{\"content\": \"Too sure.\", \"confidence\": 1.5}\n",
            "not json\n",
            "{\"content\": \"\", \"confidence\": 0.5}\n",
            "{\"content\": \"Dated oddly.\", \"confidence\": 0.5, \"published\": \"last week\"}\n",
            "{\"content\": \"Silver tarnishes.\", \"confidence\": 0.8, \"colour\": \"grey\"}\n",
        ),
    )
    .unwrap();
    let store = dir.path().join("store.db");
    let strict = particles_rs(&[
        "import",
        "--strict",
        "--store",
        store.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(strict.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&strict.stderr);
    for needle in [
        ":2: ",
        "confidence",
        ":3: ",
        ":4: ",
        "content",
        ":5: ",
        "published",
        ":6: ",
        "colour",
        "nothing was written",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    assert!(
        !Path::new(&store).exists(),
        "--strict must not create the store"
    );

    let lenient = particles_rs(&[
        "import",
        "--store",
        store.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(
        lenient.status.success(),
        "{}",
        String::from_utf8_lossy(&lenient.stderr)
    );
    assert!(
        String::from_utf8_lossy(&lenient.stdout).contains("imported 1 belief(s)")
            && String::from_utf8_lossy(&lenient.stdout).contains("skipped 5 bad line(s)")
    );
    let before = file_digest(&store);
    let again = particles_rs(&[
        "import",
        "--strict",
        "--store",
        store.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(1));
    assert_eq!(
        before,
        file_digest(&store),
        "a refused import leaves the store as it was"
    );
}
