//! Parity with sentence-transformers on the reference vectors in
//! `shared/fixtures/minilm-reference.jsonl` (texts with non-ASCII, empty, very long
//! and code-like inputs): cosine at least 0.99999 for every text.
//!
//! Needs the model files (`cargo xtask fetch-model`, which `cargo xtask test` and
//! `.ci/run` run first); without them the test fails and says so.

use std::path::PathBuf;

fn fixtures() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::var_os("PARTICLES_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared"))
        .join("fixtures/minilm-reference.jsonl")
}

#[test]
fn vectors_match_sentence_transformers() {
    let dir = particles_embed::model_dir(None);
    let encoder = particles_embed::Encoder::load(&dir)
        .unwrap_or_else(|e| panic!("{e} (run `cargo xtask fetch-model` first)"));
    let text =
        std::fs::read_to_string(fixtures()).expect("the shared fixtures are beside the repository");
    let mut worst = (1.0f64, String::new());
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let input = row["text"].as_str().unwrap();
        let expected: Vec<f64> = row["vector"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let actual = encoder.encode(input);
        assert_eq!(actual.len(), expected.len());
        let dot: f64 = actual
            .iter()
            .zip(&expected)
            .map(|(a, b)| f64::from(*a) * b)
            .sum();
        let norm_a: f64 = actual
            .iter()
            .map(|a| f64::from(*a).powi(2))
            .sum::<f64>()
            .sqrt();
        let norm_b: f64 = expected.iter().map(|b| b * b).sum::<f64>().sqrt();
        let cosine = dot / (norm_a * norm_b);
        if cosine < worst.0 {
            worst = (cosine, input.chars().take(60).collect());
        }
        count += 1;
    }
    assert!(count >= 20, "only {count} fixture texts");
    assert!(
        worst.0 >= 0.99999,
        "lowest cosine {} for {:?}",
        worst.0,
        worst.1
    );
}
