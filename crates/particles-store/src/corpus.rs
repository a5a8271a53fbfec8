//! Corpus rows a particle's source passage is read from: the entry, the snapshot
//! its provenance pins, or the entry's latest snapshot when none is pinned.

use rusqlite::OptionalExtension;

use crate::{
    error::{query_error, Result},
    Store,
};

/// The columns of a `corpus_entries` row that a source passage reports (read
/// back; [`crate::CorpusEntryRow`] is the row a writer inserts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorpusEntryRecord {
    /// The entry id.
    pub entry_id: String,
    /// The entry's URI, when it has one.
    pub uri_r: Option<String>,
    /// The source type (`WEB_PAGE`, `CONVERSATION`, ...).
    pub source_type: String,
    /// `MUTABLE`, `APPEND_ONLY`, ...
    pub mutability: String,
}

/// The columns of a `snapshots` row that locate its stored content (read back;
/// [`crate::SnapshotRow`] is the row a writer inserts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotRecord {
    /// The snapshot id.
    pub snapshot_id: String,
    /// The entry it belongs to.
    pub entry_id: String,
    /// The SHA-256 of its stored bytes (the blob's name).
    pub content_hash: String,
}

/// How a snapshot selector resolved (the reference's `resolve_snapshot_for_blob`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotResolution {
    /// One snapshot.
    Found(SnapshotRecord),
    /// Nothing matches.
    Missing,
    /// The prefix matches several snapshots (`kind` = `"snapshot"`) or, in the
    /// fallback, several entries (`kind` = `"entry"`); the reference raises.
    Ambiguous {
        /// `"snapshot"` or `"entry"`.
        kind: &'static str,
        /// How many rows matched.
        count: usize,
    },
}

const SNAPSHOT_COLUMNS: &str = "snapshot_id, entry_id, content_hash";

fn snapshot_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SnapshotRecord> {
    Ok(SnapshotRecord {
        snapshot_id: row.get(0)?,
        entry_id: row.get(1)?,
        content_hash: row.get(2)?,
    })
}

/// The corpus entry with this exact id.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn corpus_entry(store: &Store, entry_id: &str) -> Result<Option<CorpusEntryRecord>> {
    store
        .connection()
        .query_row(
            "SELECT entry_id, uri_r, source_type, mutability FROM corpus_entries WHERE entry_id = ?1",
            [entry_id],
            |row| {
                Ok(CorpusEntryRecord {
                    entry_id: row.get(0)?,
                    uri_r: row.get(1)?,
                    source_type: row.get(2)?,
                    mutability: row.get(3)?,
                })
            },
        )
        .optional()
        .map_err(query_error("corpus entry by id"))
}

/// The snapshot with this exact id.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn snapshot_by_id(store: &Store, snapshot_id: &str) -> Result<Option<SnapshotRecord>> {
    store
        .connection()
        .query_row(
            &format!("SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE snapshot_id = ?1"),
            [snapshot_id],
            snapshot_row,
        )
        .optional()
        .map_err(query_error("snapshot by id"))
}

/// `value` escaped for `LIKE ... ESCAPE '\'` (the reference's `escape_like_pattern`).
fn escape_like(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// Resolves a selector as the reference's `corpus cat` does: an exact snapshot
/// id, else a unique snapshot-id prefix, else an exact entry id or a unique
/// entry-id prefix resolved to that entry's most recently captured snapshot.
/// Prefixes use SQLite's `LIKE` (ASCII case-insensitive), as the reference's do.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn resolve_snapshot(store: &Store, selector: &str) -> Result<SnapshotResolution> {
    if let Some(found) = snapshot_by_id(store, selector)? {
        return Ok(SnapshotResolution::Found(found));
    }
    let connection = store.connection();
    let pattern = format!("{}%", escape_like(selector));
    let mut statement = connection
        .prepare(&format!(
            "SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE snapshot_id LIKE ?1 ESCAPE '\\'"
        ))
        .map_err(query_error("snapshots by id prefix"))?;
    let mut by_prefix = statement
        .query_map([&pattern], snapshot_row)
        .map_err(query_error("snapshots by id prefix"))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(query_error("snapshots by id prefix"))?;
    match by_prefix.len() {
        1 => return Ok(SnapshotResolution::Found(by_prefix.remove(0))),
        0 => {}
        count => {
            return Ok(SnapshotResolution::Ambiguous {
                kind: "snapshot",
                count,
            })
        }
    }
    let entry_id = if corpus_entry(store, selector)?.is_some() {
        selector.to_owned()
    } else {
        let mut statement = connection
            .prepare("SELECT entry_id FROM corpus_entries WHERE entry_id LIKE ?1 ESCAPE '\\'")
            .map_err(query_error("corpus entries by id prefix"))?;
        let mut ids = statement
            .query_map([&pattern], |row| row.get::<_, String>(0))
            .map_err(query_error("corpus entries by id prefix"))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(query_error("corpus entries by id prefix"))?;
        match ids.len() {
            0 => return Ok(SnapshotResolution::Missing),
            1 => ids.remove(0),
            count => {
                return Ok(SnapshotResolution::Ambiguous {
                    kind: "entry",
                    count,
                })
            }
        }
    };
    let latest = connection
        .query_row(
            &format!(
                "SELECT {SNAPSHOT_COLUMNS} FROM snapshots WHERE entry_id = ?1 \
                 ORDER BY captured_at DESC LIMIT 1"
            ),
            [&entry_id],
            snapshot_row,
        )
        .optional()
        .map_err(query_error("latest snapshot of an entry"))?;
    Ok(latest.map_or(SnapshotResolution::Missing, SnapshotResolution::Found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_their_wildcards() {
        assert_eq!(escape_like(r"a_b%c\d"), r"a\_b\%c\\d");
    }
}
