//! The crate's one error type.

use std::{fmt, path::PathBuf};

/// Where a value under validation came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A line of the config file.
    File {
        /// The config file.
        path: PathBuf,
        /// 1-based.
        line: usize,
    },
    /// An environment override.
    Env {
        /// The variable.
        var: String,
    },
    /// No single place: a check over a whole section that came from defaults.
    Unplaced,
}

/// One value the reference's model refuses: one per bad leaf, as pydantic
/// collects them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// pydantic's location as a dotted key (`query.similarity_weight`,
    /// `network.allow.0.host`, `storage.stores.1.[key]`); empty for the root.
    pub key: String,
    /// pydantic's error type (`greater_than_equal`, `float_parsing`, ...).
    pub kind: String,
    /// pydantic's message (`Input should be greater than or equal to 0`).
    pub message: String,
    /// Where the value came from.
    pub place: Place,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = if self.key.is_empty() {
            "(config)"
        } else {
            &self.key
        };
        match &self.place {
            Place::File { path, line } => {
                write!(f, "{}:{line}: {key}: {}", path.display(), self.message)
            }
            Place::Env { var } => write!(f, "environment {var}: {key}: {}", self.message),
            Place::Unplaced => write!(f, "{key}: {}", self.message),
        }
    }
}

/// A list of [`Invalid`] values, one per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidList(pub Vec<Invalid>);

impl fmt::Display for InvalidList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, invalid) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "  {invalid}")?;
        }
        Ok(())
    }
}

/// Errors from finding, reading, validating the configuration or resolving a
/// store handle.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The config path names a directory. The reference crashes with
    /// `IsADirectoryError`; point `--config` / `PARTICLES_CONFIG` at a file.
    #[error("config path {path} is a directory, not a YAML file")]
    ConfigIsDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// `--config FILE` names a file that does not exist. (The reference has no
    /// such flag; an explicit path that is missing is a mistake, not a default.)
    #[error("config file {path} does not exist")]
    ConfigMissing {
        /// The missing file.
        path: PathBuf,
    },
    /// The file could not be read.
    #[error("cannot read config file {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not UTF-8 text (the reference fails to decode it too).
    #[error("config file {path} is not UTF-8 text")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// The YAML does not parse, or holds something PyYAML's `safe_load`
    /// refuses (a Python or unknown tag, several documents, an unhashable key,
    /// a bad merge, an impossible date). Fix the file at that place.
    #[error("{path}:{line}:{column}: invalid YAML: {message}")]
    Yaml {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// 1-based.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// An environment override targets a section (or `storage.write_lock`)
    /// that the file gives as something other than a mapping; the reference
    /// dies with a `TypeError`. Give the section as a mapping or unset the variable.
    #[error("environment {var} overrides {key}, but {path}:{line} gives `{section}` as {found}, not a mapping")]
    EnvIntoNonMapping {
        /// The variable.
        var: String,
        /// The key it overrides.
        key: String,
        /// The section that is not a mapping.
        section: String,
        /// What the file gives instead (`null`, `a list`, ...).
        found: &'static str,
        /// The file.
        path: PathBuf,
        /// Where the section stands.
        line: usize,
    },
    /// The configuration does not validate against the reference's model. Every
    /// bad value is listed, with its file line or variable.
    #[error("configuration is invalid ({} error{}):\n{}", .errors.0.len(), if .errors.0.len() == 1 { "" } else { "s" }, .errors)]
    Invalid {
        /// The config file read, if any.
        path: Option<PathBuf>,
        /// One entry per bad value.
        errors: InvalidList,
    },
    /// A store handle that is neither `default` nor a key of `storage.stores`.
    #[error("Unknown store '{handle}' (known: {})", if .known.is_empty() { "default; add others under storage.stores".to_owned() } else { format!("default, {}", .known.join(", ")) })]
    UnknownStore {
        /// The handle asked for.
        handle: String,
        /// The keys of `storage.stores`, sorted.
        known: Vec<String>,
    },
    /// The store's URL is empty (`DATABASE_URL=` sets it so).
    #[error("store '{handle}' has an empty database URL")]
    EmptyStoreUrl {
        /// The handle.
        handle: String,
    },
    /// The URL names an in-memory SQLite database, which has no tables to query.
    #[error("store '{handle}' is an in-memory SQLite database ({url}): it has no tables to query; give a file path")]
    InMemoryStore {
        /// The handle.
        handle: String,
        /// The URL.
        url: String,
    },
    /// `sqlite:///...`: the reference refuses the synchronous driver.
    #[error("store '{handle}' uses the synchronous SQLite driver ({url}), which the reference refuses; write sqlite+aiosqlite:///...")]
    SyncDriver {
        /// The handle.
        handle: String,
        /// The URL.
        url: String,
    },
    /// A database other than SQLite, or a URL that is not a database URL.
    #[error(
        "store '{handle}' is {url}: only SQLite stores (sqlite+aiosqlite:///path) are supported"
    )]
    UnsupportedStore {
        /// The handle.
        handle: String,
        /// The URL.
        url: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
