//! The question encoder as the CLI uses it (behind the `encoder` feature), and the
//! `embed` verb.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

/// Encodes `text` with the model in `model_dir` (or the default location).
#[cfg(feature = "encoder")]
pub(crate) fn encode_question(text: &str, model_dir: Option<&Path>) -> Result<Vec<f32>> {
    let encoder = particles_embed::Encoder::load(&particles_embed::model_dir(model_dir))?;
    Ok(encoder.encode(text))
}

/// Without the encoder feature there is nothing to encode with.
#[cfg(not(feature = "encoder"))]
pub(crate) fn encode_question(_text: &str, _model_dir: Option<&Path>) -> Result<Vec<f32>> {
    Err(crate::UsageError(
        "this build has no question encoder (built without the `encoder` feature).\n  \
         Pass --vector-file FILE (a JSON array of 384 floats) or --no-embedding."
            .into(),
    )
    .into())
}

/// An encoder loaded on first use and kept: a long-lived process pays for the
/// model once, and only if some request needs it.
pub(crate) struct LazyEncoder {
    model_dir: Option<PathBuf>,
    #[cfg(feature = "encoder")]
    loaded: Option<particles_embed::Encoder>,
}

impl LazyEncoder {
    pub(crate) fn new(model_dir: Option<PathBuf>) -> LazyEncoder {
        LazyEncoder {
            model_dir,
            #[cfg(feature = "encoder")]
            loaded: None,
        }
    }

    /// The question's vector.
    pub(crate) fn encode(&mut self, text: &str) -> Result<Vec<f32>> {
        #[cfg(feature = "encoder")]
        {
            if self.loaded.is_none() {
                let dir = particles_embed::model_dir(self.model_dir.as_deref());
                self.loaded = Some(particles_embed::Encoder::load(&dir)?);
            }
            match &self.loaded {
                Some(encoder) => Ok(encoder.encode(text)),
                None => unreachable!("loaded just above"),
            }
        }
        #[cfg(not(feature = "encoder"))]
        {
            encode_question(text, self.model_dir.as_deref())
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct EmbedArgs {
    /// The texts to embed; each gets one output line.
    #[arg(required = true, value_name = "TEXT")]
    texts: Vec<String>,
    /// The encoder's model directory (default: PARTICLES_MODEL_DIR, else the user
    /// cache); `particles-rs model fetch` fills it.
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
}

/// Prints, for each text, its vector as a JSON array of floats on one line.
pub(crate) fn run(args: &EmbedArgs) -> Result<()> {
    use std::io::Write;
    let vectors = encode_texts(&args.texts, args.model_dir.as_deref())?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for vector in vectors {
        let values: Vec<f64> = vector.iter().map(|v| f64::from(*v)).collect();
        serde_json::to_writer(&mut out, &values)?;
        writeln!(out)?;
    }
    Ok(())
}

/// Every text's vector, in order: one batch, on every core (a single text stays on
/// this thread).
#[cfg(feature = "encoder")]
fn encode_texts(texts: &[String], model_dir: Option<&Path>) -> Result<Vec<Vec<f32>>> {
    let encoder = particles_embed::Encoder::load(&particles_embed::model_dir(model_dir))?;
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    Ok(encoder.encode_batch(&texts))
}

#[cfg(not(feature = "encoder"))]
fn encode_texts(texts: &[String], model_dir: Option<&Path>) -> Result<Vec<Vec<f32>>> {
    texts
        .iter()
        .map(|text| encode_question(text, model_dir))
        .collect()
}
