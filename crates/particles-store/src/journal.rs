//! The change journal: `particle_changes`, filled by SQLite triggers on every write
//! to `particles` from any process, and read by caches to stay exact.
//!
//! The table, the four trigger names, the token rule and the retention are the
//! reference's (linkedparticles 1.214.1, migration 054), so a Python writer and a Rust
//! reader share one journal. Nothing here appends to the journal: only the triggers
//! do.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension};

use crate::{
    error::{query_error, Result},
    Store, Writer,
};

/// The four triggers whose presence means "the journal is installed".
pub const TRIGGER_NAMES: [&str; 4] = [
    "trg_particles_journal_insert",
    "trg_particles_journal_update",
    "trg_particles_journal_delete",
    "trg_particle_changes_prune",
];

/// How many entries the prune trigger keeps.
pub const JOURNAL_RETENTION: i64 = 100_000;

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS particle_changes (\
    seq INTEGER NOT NULL, particle_id VARCHAR NOT NULL, token BLOB NOT NULL, PRIMARY KEY (seq))";

/// The reference's trigger DDL, statement for statement.
const TRIGGERS: [&str; 4] = [
    "CREATE TRIGGER IF NOT EXISTS trg_particles_journal_insert \
     AFTER INSERT ON particles BEGIN \
     INSERT INTO particle_changes (particle_id, token) VALUES (NEW.id, randomblob(8)); \
     END",
    "CREATE TRIGGER IF NOT EXISTS trg_particles_journal_update \
     AFTER UPDATE ON particles BEGIN \
     INSERT INTO particle_changes (particle_id, token) \
     SELECT OLD.id, randomblob(8) WHERE OLD.id IS NOT NEW.id; \
     INSERT INTO particle_changes (particle_id, token) VALUES (NEW.id, randomblob(8)); \
     END",
    "CREATE TRIGGER IF NOT EXISTS trg_particles_journal_delete \
     AFTER DELETE ON particles BEGIN \
     INSERT INTO particle_changes (particle_id, token) VALUES (OLD.id, randomblob(8)); \
     END",
    "CREATE TRIGGER IF NOT EXISTS trg_particle_changes_prune \
     AFTER INSERT ON particle_changes BEGIN \
     DELETE FROM particle_changes WHERE seq <= NEW.seq - 100000; \
     END",
];

/// The install entry: a store unchanged since install still has a marker.
const FIRST_ENTRY: &str = "INSERT INTO particle_changes (particle_id, token) \
    SELECT '', randomblob(8) WHERE NOT EXISTS (SELECT 1 FROM particle_changes)";

const GUARD_INDEX: &str = "CREATE INDEX IF NOT EXISTS ix_particles_status_schema_version \
    ON particles (status, schema_version)";

/// A journal position: the newest entry's sequence number and random token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalHead {
    /// The entry's `seq` (its rowid).
    pub seq: i64,
    /// The entry's random token; a reused `seq` carries another one.
    pub token: Vec<u8>,
}

fn count_triggers(connection: &Connection) -> rusqlite::Result<usize> {
    connection.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?1, ?2, ?3, ?4)",
        TRIGGER_NAMES,
        |row| row.get::<_, i64>(0).map(|n| n.max(0) as usize),
    )
}

/// Whether all four journal triggers exist (names only, as the reference checks).
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn journal_installed(store: &Store) -> Result<bool> {
    Ok(
        count_triggers(store.connection()).map_err(query_error("journal triggers"))?
            == TRIGGER_NAMES.len(),
    )
}

/// The newest entry, or `None` when the journal is empty (or absent).
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn read_head(store: &Store) -> Result<Option<JournalHead>> {
    if !store.has_table("particle_changes")? {
        return Ok(None);
    }
    store
        .connection()
        .prepare_cached("SELECT seq, token FROM particle_changes ORDER BY seq DESC LIMIT 1")
        .and_then(|mut statement| {
            statement.query_row([], |row| {
                Ok(JournalHead {
                    seq: row.get(0)?,
                    token: row.get(1)?,
                })
            })
        })
        .optional()
        .map_err(query_error("journal head"))
}

/// The token of entry `seq`, or `None` when that entry is gone.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn token_at(store: &Store, seq: i64) -> Result<Option<Vec<u8>>> {
    store
        .connection()
        .prepare_cached("SELECT token FROM particle_changes WHERE seq = ?1")
        .and_then(|mut statement| statement.query_row([seq], |row| row.get(0)))
        .optional()
        .map_err(query_error("journal token"))
}

/// The distinct particle ids changed after entry `seq` (the install entry's empty id
/// excluded), or `None` when there are more than `limit`: catching up would then
/// cost more than starting over.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn changed_since(store: &Store, seq: i64, limit: usize) -> Result<Option<HashSet<String>>> {
    let fetch = i64::try_from(limit).unwrap_or(i64::MAX - 1) + 1;
    let mut statement = store
        .connection()
        .prepare("SELECT DISTINCT particle_id FROM particle_changes WHERE seq > ?1 AND particle_id != '' LIMIT ?2")
        .map_err(query_error("journal changes"))?;
    let ids = statement
        .query_map([seq, fetch], |row| row.get::<_, String>(0))
        .map_err(query_error("journal changes"))?
        .collect::<rusqlite::Result<HashSet<String>>>()
        .map_err(query_error("journal changes"))?;
    Ok((ids.len() <= limit).then_some(ids))
}

/// What [`install_journal`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InstallReport {
    /// The `particle_changes` table was created.
    pub created_table: bool,
    /// How many of the four triggers were created (the rest existed).
    pub created_triggers: usize,
    /// The install entry was written (the journal was empty).
    pub wrote_first_entry: bool,
    /// The schema-guard index was created.
    pub created_index: bool,
}

impl InstallReport {
    /// Whether the call changed nothing.
    pub fn is_noop(&self) -> bool {
        *self == InstallReport::default()
    }
}

/// Installs the change journal on a store that lacks it (or part of it), in one
/// transaction, with the reference's migration 054 semantics: the table, the four
/// triggers, the install entry when the journal is empty, and the schema-guard
/// index. Idempotent.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails; the transaction is rolled back.
pub fn install_journal(writer: &mut Writer) -> Result<InstallReport> {
    install_journal_on(writer.connection_mut())
}

/// [`install_journal`] on a bare connection (a store being created).
pub(crate) fn install_journal_on(connection: &mut Connection) -> Result<InstallReport> {
    let transaction = connection
        .transaction()
        .map_err(query_error("begin journal install"))?;
    let exists = |name: &str, kind: &str| -> Result<bool> {
        transaction
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = ?1 AND name = ?2)",
                [kind, name],
                |row| row.get(0),
            )
            .map_err(query_error("journal install probe"))
    };
    let mut report = InstallReport {
        created_table: !exists("particle_changes", "table")?,
        created_index: !exists("ix_particles_status_schema_version", "index")?,
        ..InstallReport::default()
    };
    let triggers_before = count_triggers(&transaction).map_err(query_error("journal triggers"))?;
    transaction
        .execute_batch(CREATE_TABLE)
        .map_err(query_error("create particle_changes"))?;
    for ddl in TRIGGERS {
        transaction
            .execute_batch(ddl)
            .map_err(query_error("create journal trigger"))?;
    }
    report.created_triggers =
        count_triggers(&transaction).map_err(query_error("journal triggers"))? - triggers_before;
    report.wrote_first_entry = transaction
        .execute(FIRST_ENTRY, [])
        .map_err(query_error("journal install entry"))?
        > 0;
    transaction
        .execute_batch(GUARD_INDEX)
        .map_err(query_error("create schema guard index"))?;
    transaction
        .commit()
        .map_err(query_error("commit journal install"))?;
    Ok(report)
}
