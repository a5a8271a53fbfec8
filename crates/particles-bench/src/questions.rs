//! The fixed question vectors and texts a run asks, by index.
//!
//! Side-by-side runs use the reference's own `query_vectors(seed, n)` and
//! `questions(seed, n)`, exported once through the reference venv into
//! `questions-s{seed}.json` in the work directory. Without the reference, seeded
//! unit vectors of our own stand in (labelled so in the file).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{
    error::{read_json, Error, Result},
    generator::Rng,
};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Questions {
    pub(crate) seed: u64,
    /// `reference` or `particles-rs`.
    pub(crate) source: String,
    pub(crate) vectors: Vec<Vec<f32>>,
    pub(crate) texts: Vec<String>,
}

impl Questions {
    /// Seeded stand-ins: unit vectors and plain texts.
    pub(crate) fn generated(seed: u64, count: usize) -> Questions {
        let mut rng = Rng::new(seed ^ 0x51);
        Questions {
            seed,
            source: "particles-rs".into(),
            vectors: (0..count).map(|_| rng.unit_vector()).collect(),
            texts: (0..count)
                .map(|i| format!("What do we know about question {i}?"))
                .collect(),
        }
    }

    /// Loads a questions file, or generates stand-ins when there is none. Fails
    /// when the file holds fewer than `count` questions.
    pub(crate) fn load(path: Option<&Path>, seed: u64, count: usize) -> Result<Questions> {
        let questions = match path {
            Some(path) => read_json::<Questions>(path)?,
            None => Questions::generated(seed, count),
        };
        if questions.vectors.len() < count {
            return Err(Error::TooFewQuestions {
                have: questions.vectors.len(),
                need: count,
            });
        }
        Ok(questions)
    }

    pub(crate) fn vector(&self, index: usize) -> &[f32] {
        &self.vectors[index]
    }

    pub(crate) fn text(&self, index: usize) -> &str {
        &self.texts[index]
    }
}

/// The questions file of a work directory.
pub(crate) fn questions_path(work_dir: &Path, seed: u64) -> PathBuf {
    work_dir.join(format!("questions-s{seed}.json"))
}

/// Exports the reference's question vectors and texts through its venv.
pub(crate) fn export_from_reference(
    python: &Path,
    path: &Path,
    seed: u64,
    count: usize,
) -> Result<()> {
    let script = format!(
        "import json\n\
         from particles.benchmark.query_latency.generator import query_vectors, questions\n\
         v = query_vectors({seed}, {count})\n\
         t = questions({seed}, {count})\n\
         json.dump({{'seed': {seed}, 'source': 'reference', 'vectors': [[float(x) for x in row] for row in v], 'texts': list(t)}}, open({path:?}, 'w'))\n",
        path = path.display().to_string()
    );
    let output = std::process::Command::new(python)
        .args(["-c", &script])
        .output()
        .map_err(|source| Error::Spawn {
            program: python.to_owned(),
            source,
        })?;
    if !output.status.success() {
        return Err(Error::Reference {
            task: "exporting the reference's questions".into(),
            detail: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(())
}
