//! Parity with sentence-transformers on the reference vectors in
//! `tests/fixtures/minilm-reference.jsonl` (texts with non-ASCII, empty, very long
//! and code-like inputs): cosine at least 0.99999 for every text, one at a time and
//! in one batch.
//!
//! Needs the model files (`particles-rs model fetch`, or `cargo xtask fetch-model`,
//! which `cargo xtask test` and `.ci/run` run first). Without them the test says
//! what is missing and how to fetch it, and passes without checking anything,
//! unless `PARTICLES_REQUIRE_MODEL=1`, when it fails.

use std::path::PathBuf;

pub(crate) struct Case {
    pub(crate) text: String,
    vector: Vec<f64>,
}

pub(crate) fn cases() -> Vec<Case> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilm-reference.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            Case {
                text: row["text"].as_str().unwrap().to_owned(),
                vector: row["vector"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect(),
            }
        })
        .collect()
}

/// The encoder, or `None` (after saying why) when the model files are absent and
/// the model is not required.
pub(crate) fn encoder() -> Option<particles_embed::Encoder> {
    let dir = particles_embed::model_dir(None);
    match particles_embed::Encoder::load(&dir) {
        Ok(encoder) => Some(encoder),
        Err(error @ particles_embed::EmbedError::Missing { .. })
            if std::env::var_os("PARTICLES_REQUIRE_MODEL").is_none_or(|v| v != "1") =>
        {
            eprintln!(
                "skipped: {error}\n  fetch it with `{}` (PARTICLES_REQUIRE_MODEL=1 makes this a failure)",
                particles_embed::FETCH_COMMAND
            );
            None
        }
        Err(error) => panic!("{error}"),
    }
}

fn cosine(actual: &[f32], expected: &[f64]) -> f64 {
    assert_eq!(actual.len(), expected.len());
    let dot: f64 = actual
        .iter()
        .zip(expected)
        .map(|(a, b)| f64::from(*a) * b)
        .sum();
    let norm_a = actual
        .iter()
        .map(|a| f64::from(*a).powi(2))
        .sum::<f64>()
        .sqrt();
    let norm_b = expected.iter().map(|b| b * b).sum::<f64>().sqrt();
    dot / (norm_a * norm_b)
}

/// The lowest cosine and its text (cut at 60 characters).
fn worst(cases: &[Case], vectors: &[Vec<f32>]) -> (f64, String) {
    assert_eq!(cases.len(), vectors.len());
    cases
        .iter()
        .zip(vectors)
        .map(|(case, vector)| {
            (
                cosine(vector, &case.vector),
                case.text.chars().take(60).collect(),
            )
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap()
}

#[test]
fn vectors_match_sentence_transformers() {
    let Some(encoder) = encoder() else { return };
    let cases = cases();
    assert!(cases.len() >= 20, "only {} fixture texts", cases.len());
    let vectors: Vec<Vec<f32>> = cases
        .iter()
        .map(|case| encoder.encode(&case.text))
        .collect();
    let (lowest, text) = worst(&cases, &vectors);
    eprintln!(
        "worst cosine one at a time: {lowest:.13} ({text:?}, {} texts)",
        cases.len()
    );
    assert!(lowest >= 0.99999, "lowest cosine {lowest} for {text:?}");
}

#[test]
fn batched_vectors_match_sentence_transformers() {
    let Some(encoder) = encoder() else { return };
    let cases = cases();
    let texts: Vec<&str> = cases.iter().map(|case| case.text.as_str()).collect();
    let vectors = encoder.encode_batch(&texts);
    let (lowest, text) = worst(&cases, &vectors);
    eprintln!(
        "worst cosine in one batch: {lowest:.13} ({text:?}, {} texts)",
        cases.len()
    );
    assert!(lowest >= 0.99999, "lowest cosine {lowest} for {text:?}");
}
