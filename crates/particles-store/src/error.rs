//! The store crate's one error type.

use std::path::PathBuf;

/// Errors from opening or reading a particle store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bug in particles-rs, not in the store; please report it.
    #[error("internal error: {0}")]
    Internal(&'static str),
    /// The path names no file. Check the `--store` path.
    #[error("no store at {}: the file does not exist", path.display())]
    NotFound {
        /// The path that was given.
        path: PathBuf,
    },
    /// A Litestream replica could not be readied for reading (see
    /// `particles_store::replica`).
    #[error("cannot read the Litestream replica {}: {reason}", path.display())]
    Replica {
        /// The replica's path.
        path: PathBuf,
        /// What failed, and what to do.
        reason: String,
    },
    /// SQLite could not open the file, or the file is not a SQLite database.
    #[error("{} is not a readable SQLite database", path.display())]
    Open {
        /// The path that was given.
        path: PathBuf,
        /// SQLite's reason.
        #[source]
        source: rusqlite::Error,
    },
    /// A new store could not be put in place (its directory is not writable, or
    /// another process created a file at the path meanwhile).
    #[error("cannot create the store {}: {source}", path.display())]
    Create {
        /// The path that was given.
        path: PathBuf,
        /// The filesystem's reason.
        #[source]
        source: std::io::Error,
    },
    /// The database has no table the query path needs; it is not a Particles store
    /// (or not a migrated one).
    #[error("{} is not a Particles store: it has no `{table}` table", path.display())]
    MissingTable {
        /// The store path.
        path: PathBuf,
        /// The missing table.
        table: &'static str,
    },
    /// SQLite rejected a statement: IO, a locked database, or a column this version
    /// of the schema lacks. Retrying may help when the store was busy.
    #[error("store query `{query}` failed")]
    Query {
        /// A short name of the statement.
        query: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// A particle row does not hydrate into a valid particle; the reference aborts
    /// the query on such a row too. Repair or remove the row.
    #[error("particle {id} (rowid {rowid}) in the store is invalid: {field}: {reason}")]
    InvalidRow {
        /// The particle id.
        id: String,
        /// Its rowid.
        rowid: i64,
        /// The column or model field at fault.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A stored embedding is not a JSON array of numbers.
    #[error("particle {id}: embedding_json is not a JSON array of numbers: {reason}")]
    BadEmbedding {
        /// The particle id.
        id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value in a non-particle table does not parse (the reference aborts too).
    #[error("{table} row {key}: {column} is invalid: {reason}")]
    InvalidValue {
        /// The table.
        table: &'static str,
        /// The row's key.
        key: String,
        /// The column.
        column: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// ACTIVE particles carry a schema stamp this engine (and the reference) cannot
    /// read. Re-extract the store, or upgrade.
    #[error("{0}")]
    SchemaMismatch(crate::guard::SchemaMismatch),
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Wraps a rusqlite error with the statement's name.
pub(crate) fn query_error(query: &'static str) -> impl FnOnce(rusqlite::Error) -> Error {
    move |source| Error::Query { query, source }
}
