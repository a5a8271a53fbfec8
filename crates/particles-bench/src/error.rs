//! The benchmark crate's one error type, and the file helpers that produce it.

use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Serialize};

/// Errors from running, or reporting on, a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The engine could not be built or could not answer a cell's question
    /// (its message names the store or the request).
    #[error("{0}")]
    Engine(String),
    /// The run's options do not go together, or one is out of range. Change them.
    #[error("{reason}")]
    Options {
        /// What is wrong, naming the flag.
        reason: String,
    },
    /// A file or directory of the work directory (or a store file) could not be
    /// read, written, created, copied or moved. Check the path and free disk.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done: `read`, `write`, `create`, ...
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON file (a cell spec, a result, a manifest, the questions) does not
    /// parse as what the benchmark wrote, or a value could not be encoded. Delete
    /// the file to have the run write it again.
    #[error("{} is not the JSON the benchmark expects", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A program (a cell process, the reference's Python) could not be started.
    #[error("cannot run {}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A step run through the reference's venv (its generator, its questions, its
    /// ranking oracle) failed. Its message says how; reinstall the venv with
    /// `cargo xtask reference` if it is broken.
    #[error("{task} failed: {detail}")]
    Reference {
        /// The step.
        task: String,
        /// Its exit status or output.
        detail: String,
    },
    /// The questions file of the work directory holds fewer questions than the run
    /// asks. Delete it to have the run export enough.
    #[error("the questions file has {have} questions; this run needs {need}")]
    TooFewQuestions {
        /// Questions in the file.
        have: usize,
        /// Questions the run asks.
        need: usize,
    },
    /// The load generator (`benchmark serve-load`) could not run: no questions
    /// or rates, an engine that did not start or answer its warm-up, a client
    /// that could not be built. Its message names the engine's URL or the flag.
    #[error("{reason}")]
    Load {
        /// What went wrong.
        reason: String,
    },
    /// No free loopback port could be found for an engine started for a run.
    #[error("cannot find a free loopback port")]
    Port(#[source] std::io::Error),
    /// Reading or writing a store failed.
    #[error(transparent)]
    Store(#[from] particles_store::Error),
    /// A query failed.
    #[error(transparent)]
    Query(#[from] particles_query::Error),
    /// A generated particle failed the model's validation: a bug in the generator.
    #[error(transparent)]
    Model(#[from] particles_model::Error),
    /// The benchmark's own query request was refused: a bug in the benchmark.
    #[error("the benchmark's request was refused")]
    Request(#[from] particles_model::RequestErrors),
    /// A stored embedding did not decode while measuring the JSON floor.
    #[error("an embedding is not a JSON array of numbers: {reason}")]
    BadEmbedding {
        /// What is wrong with it.
        reason: String,
    },
    /// The encoder's files could not be loaded (`cargo xtask fetch-model` fetches
    /// them).
    #[cfg(feature = "encoder")]
    #[error(transparent)]
    Encoder(#[from] particles_embed::EmbedError),
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Wraps an IO error with what was being done to which path.
pub(crate) fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_owned();
    move |source| Error::Io {
        action,
        path,
        source,
    }
}

/// Reads and parses a JSON file.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(io_error("read", path))?;
    serde_json::from_str(&text).map_err(|source| Error::Json {
        path: path.to_owned(),
        source,
    })
}

/// Writes a value as pretty JSON (in place).
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|source| Error::Json {
        path: path.to_owned(),
        source,
    })?;
    std::fs::write(path, text).map_err(io_error("write", path))
}

/// Writes a value as pretty JSON to a temporary file and renames it into place,
/// so a reader never sees half a result.
pub(crate) fn write_json_atomically(path: &Path, value: &impl Serialize) -> Result<()> {
    let tmp = path.with_extension("json.tmp");
    write_json(&tmp, value)?;
    std::fs::rename(&tmp, path).map_err(io_error("move a result into", path))
}
