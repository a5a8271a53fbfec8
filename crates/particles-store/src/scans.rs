//! Whole-store reads that answer no query: what tools around the engine (the
//! benchmark's generator and floors) need to know about a store file.

use crate::{
    error::{query_error, Result},
    Store,
};

/// Hands `visit` every ACTIVE particle's `embedding_json` text (rows without one
/// skipped), in table order (`NOT INDEXED`: a plain walk of the table, the cheapest
/// way to read them all). The text is borrowed from SQLite's row buffer, so
/// reading is all this costs besides `visit`; the benchmark's JSON-decode floor
/// times only its decoding inside `visit`.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails, or a value is not text.
pub fn embedding_texts(store: &Store, mut visit: impl FnMut(&str)) -> Result<()> {
    let name = "embedding texts";
    let mut statement = store
        .connection()
        .prepare(
            "SELECT embedding_json FROM particles NOT INDEXED \
             WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL",
        )
        .map_err(query_error(name))?;
    let mut rows = statement.query([]).map_err(query_error(name))?;
    while let Some(row) = rows.next().map_err(query_error(name))? {
        let text = row
            .get_ref(0)
            .and_then(|value| value.as_str().map_err(rusqlite::Error::from))
            .map_err(query_error(name))?;
        visit(text);
    }
    Ok(())
}

/// Hands `visit` every particle's id, of any status, in rowid order (insertion
/// order, for a store nobody deleted from): what a store's fingerprint hashes.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn particle_ids_in_rowid_order(store: &Store, mut visit: impl FnMut(&str)) -> Result<()> {
    let name = "particle ids";
    let mut statement = store
        .connection()
        .prepare("SELECT id FROM particles ORDER BY rowid")
        .map_err(query_error(name))?;
    let mut rows = statement.query([]).map_err(query_error(name))?;
    while let Some(row) = rows.next().map_err(query_error(name))? {
        let id = row
            .get_ref(0)
            .and_then(|value| value.as_str().map_err(rusqlite::Error::from))
            .map_err(query_error(name))?;
        visit(id);
    }
    Ok(())
}

/// The total length of the ACTIVE rows' `embedding_json` text (SQLite's
/// `length()`, in characters; the writers' JSON is ASCII, so also in bytes): the
/// `embedding_json_bytes` of the benchmark's store manifest.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn active_embedding_json_length(store: &Store) -> Result<u64> {
    let total: i64 = store
        .connection()
        .query_row(
            "SELECT coalesce(sum(length(embedding_json)), 0) FROM particles WHERE status = 'ACTIVE'",
            [],
            |row| row.get(0),
        )
        .map_err(query_error("embedding text length"))?;
    Ok(total.max(0) as u64)
}

/// The version of the SQLite library this crate reads stores with (bundled, so
/// the same on every machine): part of a benchmark's reproduction tuple.
pub fn sqlite_version() -> &'static str {
    rusqlite::version()
}
