//! Reviewable rankings: the coins demo store answering real text questions
//! through the encoder, and the shape of `query --json`, as insta snapshots.
//! (Whether a ranking is right is the live oracle's job; these make a change in
//! what users see show up as a diff.)

use serde_json::Value;

use crate::support::{demo_store, particles_rs, workspace_root};

const NOW: &str = "2026-06-01T00:00:00Z";

/// One line per hit: rank, similarity and effective confidence (3 decimals: the
/// encoder's last bits may differ between CPUs), and the belief.
fn table(json: &Value) -> String {
    let mut out = String::new();
    for hit in json["hits"].as_array().unwrap() {
        let content: String = hit["particle"]["content"]
            .as_str()
            .unwrap()
            .chars()
            .take(70)
            .collect();
        out.push_str(&format!(
            "{:>2}  sim={:.3}  eff={:.3}  {}\n",
            hit["rank"],
            hit["similarity"].as_f64().unwrap(),
            hit["effective_confidence"].as_f64().unwrap(),
            content
        ));
    }
    out
}

#[test]
fn the_demo_answers_text_questions() {
    if !cfg!(feature = "encoder") || particles_testkit::model_files().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = demo_store(dir.path());
    for (name, question) in [
        ("grading", "how are old coins graded?"),
        ("counterfeits", "how can I tell a counterfeit coin?"),
        ("cleaning", "should I clean old silver coins?"),
        ("gold", "what is a gold sovereign worth?"),
    ] {
        let output = particles_rs(&[
            "query",
            question,
            "--store",
            store.to_str().unwrap(),
            "--top-k",
            "5",
            "--json",
            "--now",
            NOW,
            "--no-sidecar",
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let json: Value = serde_json::from_slice(&output.stdout).unwrap();
        insta::assert_snapshot!(name, format!("{question}\n{}", table(&json)));
    }
}

#[test]
fn the_json_answer_keeps_its_shape() {
    let fixtures = workspace_root().join("tests/fixtures/stores");
    let output = particles_rs(&[
        "query",
        "which coins are rare?",
        "--store",
        fixtures.join("coins-a.db").to_str().unwrap(),
        "--vector-file",
        fixtures.join("coins-a.centroid.json").to_str().unwrap(),
        "--top-k",
        "2",
        "--json",
        "--now",
        NOW,
        "--no-sidecar",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    insta::assert_snapshot!(serde_json::to_string_pretty(&json).unwrap());
}
