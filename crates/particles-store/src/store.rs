//! Opening a store file.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use rusqlite::{Connection, OpenFlags};

use crate::error::{query_error, Error, Result};

/// How long a reader waits on a writer's lock before giving up (the reference's
/// `busy_timeout`).
/// The most of a store file SQLite maps (it maps at most the file size).
const MMAP_SIZE: i64 = 1 << 40;

const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An open Particles store.
///
/// [`Store::open_read_only`] never writes the file: SQLite is told the connection is
/// read-only, so not even a journal-mode change reaches the disk.
pub struct Store {
    connection: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens the store at `path` for reading and checks that it is a Particles
    /// store (a SQLite file with a `particles` table).
    ///
    /// # Errors
    ///
    /// [`Error::NotFound`] for a missing file, [`Error::Open`] for a file SQLite
    /// cannot read, [`Error::MissingTable`] when the `particles` table is absent.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        if !path.is_file() {
            return Err(Error::NotFound {
                path: path.to_owned(),
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open_error = |source| Error::Open {
            path: path.to_owned(),
            source,
        };
        let connection = Connection::open_with_flags(path, flags).map_err(open_error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        // Belt and braces: the read-only flag makes SQLite refuse every write on
        // this connection; `query_only` refuses them too, even through a statement
        // that would otherwise only need a read lock first (ATTACH, a pragma).
        connection
            .pragma_update(None, "query_only", true)
            .map_err(open_error)?;
        let store = Store {
            connection,
            path: path.to_owned(),
        };
        store.require_table("particles")?;
        Ok(store)
    }

    /// Wraps an already-open connection (tests, and writers that created the file).
    ///
    /// # Errors
    ///
    /// [`Error::MissingTable`] when the connection has no `particles` table.
    pub fn from_connection(connection: Connection, path: PathBuf) -> Result<Store> {
        let store = Store { connection, path };
        store.require_table("particles")?;
        Ok(store)
    }

    /// Runs `scan` with SQLite reading pages through a memory map instead of
    /// copying each into its page cache: a full scan of a large store spends much of
    /// its SQL time in those copies (measured at 100k rows: 2.5 s -> 1.8 s for a
    /// cache build). The map is dropped afterwards, so that a long-lived process
    /// does not keep the whole store file resident. Reads only; SQLite keeps WAL
    /// semantics with a map.
    ///
    /// # Errors
    ///
    /// [`Error::Query`] when SQLite refuses the pragma, or `scan`'s error.
    pub fn with_mapped_scan<T>(&self, scan: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let set = |size: i64| {
            self.connection
                .pragma_update(None, "mmap_size", size)
                .map_err(crate::error::query_error("mmap_size"))
        };
        set(MMAP_SIZE)?;
        let out = scan(self);
        set(0)?;
        out
    }

    /// The path the store was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The underlying connection. Crate-private: every statement on a store is
    /// this crate's, so other crates read through typed functions.
    pub(crate) fn connection(&self) -> &Connection {
        &self.connection
    }

    /// Gives the connection back (the inverse of [`Store::from_connection`]), e.g.
    /// to a test that shapes the file through its own SQL between queries.
    pub fn into_connection(self) -> Connection {
        self.connection
    }

    /// Whether a table exists.
    ///
    /// # Errors
    ///
    /// [`Error::Open`] when the file is not a database (SQLite reports that on the
    /// first read).
    pub fn has_table(&self, table: &str) -> Result<bool> {
        self.connection
            .query_row(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
                [table],
                |row| row.get(0),
            )
            .map_err(|source| Error::Open {
                path: self.path.clone(),
                source,
            })
    }

    fn require_table(&self, table: &'static str) -> Result<()> {
        if self.has_table(table)? {
            Ok(())
        } else {
            Err(Error::MissingTable {
                path: self.path.clone(),
                table,
            })
        }
    }

    /// Runs `f` inside one read transaction, so every statement sees the same
    /// committed snapshot of the file even while another process writes it.
    ///
    /// # Errors
    ///
    /// Whatever `f` returns, or [`Error::Query`] when the transaction cannot start.
    ///
    /// On a connection already inside a transaction (a writer reading its own
    /// writes, as the reference's sessions do) `f` runs in that transaction.
    pub fn read_snapshot<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        if !self.connection.is_autocommit() {
            return f(self);
        }
        self.connection
            .execute_batch("BEGIN DEFERRED")
            .map_err(query_error("begin read transaction"))?;
        let result = f(self);
        // A read transaction has nothing to keep; ending it cannot lose data.
        let ended = self.connection.execute_batch("COMMIT");
        let value = result?;
        ended.map_err(query_error("end read transaction"))?;
        Ok(value)
    }
}

/// The schema of a new store: every table and index of the reference's store
/// format.
const SCHEMA: &str = include_str!("schema.sql");

/// Creates a new, empty store at `path` in the reference's schema, with the change
/// journal installed, and returns it open for writing.
///
/// # Errors
///
/// [`Error::Open`] when the file exists already or cannot be created,
/// [`Error::Query`] when the schema cannot be written (the file is removed again).
pub fn create_store(path: &Path) -> Result<crate::Writer> {
    if path.exists() {
        return Err(Error::Open {
            path: path.to_owned(),
            source: rusqlite::Error::InvalidPath(path.to_owned()),
        });
    }
    let open_error = |source| Error::Open {
        path: path.to_owned(),
        source,
    };
    let mut connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open_error)?;
    let created = connection
        .execute_batch(&format!("BEGIN; {SCHEMA} COMMIT;"))
        .map_err(query_error("create schema"))
        .and_then(|()| crate::journal::install_journal_on(&mut connection).map(|_| ()));
    if let Err(error) = created {
        drop(connection);
        // Nothing of value is in a half-created file; leave no debris behind.
        let _ = std::fs::remove_file(path);
        return Err(error);
    }
    crate::Writer::from_connection(connection, path.to_owned())
}

#[cfg(test)]
mod read_only_tests {
    use super::*;

    #[test]
    fn a_read_path_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        drop(create_store(&path).unwrap());
        let before = std::fs::read(&path).unwrap();
        let store = Store::open_read_only(&path).unwrap();
        for statement in [
            "INSERT INTO particle_subjects (particle_id, subject_id) VALUES ('p', 's')",
            "CREATE TABLE intruder (x)",
            "PRAGMA user_version = 7",
            "DELETE FROM particles",
        ] {
            let refused = store.connection().execute_batch(statement);
            assert!(refused.is_err(), "{statement} was not refused");
        }
        drop(store);
        assert_eq!(std::fs::read(&path).unwrap(), before, "the file changed");
    }
}
