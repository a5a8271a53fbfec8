//! Opening a store file.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use rusqlite::{Connection, OpenFlags};

use crate::error::{query_error, Error, Result};

/// The most of a store file SQLite maps (it maps at most the file size, and at
/// most its compile-time limit, 2 GiB in the bundled build: a larger file's
/// pages past that are read with `pread`).
const MMAP_SIZE: i64 = 1 << 40;

/// How long a reader waits on a writer's lock before giving up (the reference's
/// `busy_timeout`).
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Prepared statements a read-only connection keeps (rusqlite's default is 16).
const STATEMENT_CACHE: usize = 128;

/// An open Particles store.
///
/// [`Store::open_read_only`] never writes the file: SQLite is told the connection is
/// read-only, so not even a journal-mode change reaches the disk.
pub struct Store {
    connection: Connection,
    path: PathBuf,
    /// Source facts remembered across read transactions (read-only connections).
    memo: crate::memo::MemoCell,
    /// The read transaction [`Store::read_snapshot`] holds open, numbered (a new
    /// number per transaction), or `None` outside one: the memo checks the
    /// file's version once per transaction it knows.
    snapshot: std::cell::Cell<Option<u64>>,
    snapshots_begun: std::cell::Cell<u64>,
    /// A replica's watch on its file's writes, which keeps its memo; `None`
    /// on a primary (`data_version` keeps it) and on a replica without one
    /// (no memo).
    write_watch: Option<crate::replica::WriteWatch>,
    /// A Litestream follow-mode copy ([`crate::replica`]), and which file it
    /// was when this connection opened it: each read transaction starts on an
    /// empty page cache.
    replica: Option<crate::replica::CopyIdentity>,
    /// SQLite's `mmap_size` outside a full scan: [`MMAP_SIZE`] on a read-only
    /// primary, 0 on a replica and on a connection given to [`Store::from_connection`].
    resting_map_size: i64,
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
        // A Litestream replica says rollback journal before SQLite first opens
        // it, so no connection of ours holds a lock the follower waits on.
        let replica = crate::replica::prepare(path)?;
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
        // Pages are read through a memory map (but page 1, WAL frames and
        // pages past the map's limit), not copied by `pread` into the
        // connection's 2 MB page cache: a subject-filtered question walks its
        // subject's links through several B-trees, pages that mostly miss that
        // cache (measured at 100k: 81,342 `pread`s for 60 questions; 15 with
        // the map). Not on a replica: its follower rewrites pages under a
        // change counter SQLite does not see move, and its connection drops
        // every page it holds before each read transaction.
        let resting_map_size = if replica.is_some() { 0 } else { MMAP_SIZE };
        connection
            .pragma_update(None, "mmap_size", resting_map_size)
            .map_err(open_error)?;
        // A query runs a few dozen distinct statements (schema guard, journal
        // head, policy rows, source and premise lookups, hits by id); each is
        // prepared once per connection and reused, not parsed again per query.
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // The memo is keyed by `data_version`, which a replica's follower
        // does not move for most applies: a replica's memo is kept by a watch
        // on the file's writes instead, or not at all.
        let write_watch = replica.and_then(|_| crate::replica::WriteWatch::new(path));
        let store = Store {
            connection,
            path: path.to_owned(),
            memo: (replica.is_none() || write_watch.is_some()).then(Default::default),
            write_watch,
            snapshot: Default::default(),
            snapshots_begun: Default::default(),
            replica,
            resting_map_size,
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
        // The connection may write, and its own commits do not move
        // `data_version`: nothing is remembered.
        let store = Store {
            connection,
            path,
            memo: None,
            write_watch: None,
            snapshot: Default::default(),
            snapshots_begun: Default::default(),
            replica: None,
            resting_map_size: 0,
        };
        store.require_table("particles")?;
        Ok(store)
    }

    /// Runs `scan` with SQLite reading pages through a memory map instead of
    /// copying each into its page cache: a full scan of a large store spends much of
    /// its SQL time in those copies (measured at 100k rows: 2.5 s -> 1.8 s for a
    /// cache build). The map is dropped afterwards (and a read-only primary's
    /// armed again, mapped anew by its next read), so that a long-lived
    /// process does not keep the scan's pages mapped. Reads only; SQLite keeps
    /// WAL semantics with a map.
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
        // A new size unmaps the file; the same size would keep every page the
        // scan touched mapped. Restored whatever the scan returned; the scan's
        // error comes first.
        let restored = set(0).and_then(|()| match self.resting_map_size {
            0 => Ok(()),
            size => set(size),
        });
        let value = out?;
        restored?;
        Ok(value)
    }

    /// Whether this is a Litestream follow-mode copy ([`crate::replica`]).
    pub fn is_replica(&self) -> bool {
        self.replica.is_some()
    }

    /// Whether this connection's replica copy has been replaced by a new
    /// follow-mode copy at its path ([`crate::replica::replaced`]): it still
    /// reads the old file, frozen at its last position. Always `false` for a
    /// store that is not a replica.
    pub fn copy_replaced(&self) -> bool {
        self.replica
            .is_some_and(|opened| crate::replica::replaced(&self.path, opened))
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

    /// The number of the read transaction [`Store::read_snapshot`] holds open.
    pub(crate) fn snapshot_number(&self) -> Option<u64> {
        self.snapshot.get()
    }

    /// The source memo's cell, on a read-only connection.
    pub(crate) fn memo_cell(&self) -> Option<&std::cell::RefCell<crate::memo::SourceMemo>> {
        self.memo.as_ref()
    }

    /// On a replica, whether its file was written since the last call
    /// ([`crate::replica::WriteWatch`]); always `false` on a primary, whose
    /// memo `data_version` keeps.
    pub(crate) fn replica_written_since(&self) -> bool {
        self.write_watch
            .as_ref()
            .is_some_and(crate::replica::WriteWatch::written_since)
    }

    /// Gives the connection back (the inverse of [`Store::from_connection`]), e.g.
    /// to a test that shapes the file through its own SQL between queries.
    pub fn into_connection(self) -> Connection {
        self.connection
    }

    /// SQLite's `PRAGMA data_version` on this connection: it changes when
    /// another connection commits to the file (never for this connection's own
    /// writes). Only its changes mean anything, and only on this connection.
    /// A Litestream replica's follower does not move it.
    ///
    /// # Errors
    ///
    /// [`Error::Query`] when SQLite fails.
    pub fn data_version(&self) -> Result<i64> {
        self.connection
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(crate::error::query_error("data version"))
    }

    /// Whether a table exists.
    ///
    /// # Errors
    ///
    /// [`Error::Open`] when the file is not a database (SQLite reports that on the
    /// first read).
    pub fn has_table(&self, table: &str) -> Result<bool> {
        self.connection
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            )
            .and_then(|mut statement| statement.query_row([table], |row| row.get(0)))
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
        if self.replica.is_some() {
            // Litestream's follower rewrites pages without moving the change
            // counter SQLite checks before trusting its cache: pages kept from
            // an earlier transaction could be from before an apply. None are
            // pinned outside a transaction, so this drops them all.
            self.connection
                .release_memory()
                .map_err(query_error("drop the replica's page cache"))?;
        }
        self.connection
            .execute_batch("BEGIN DEFERRED")
            .map_err(query_error("begin read transaction"))?;
        let number = self.snapshots_begun.get().wrapping_add(1);
        self.snapshots_begun.set(number);
        self.snapshot.set(Some(number));
        let result = f(self);
        self.snapshot.set(None);
        // A read transaction has nothing to keep; ending it cannot lose data.
        let ended = self.connection.execute_batch("COMMIT");
        let value = result?;
        ended.map_err(query_error("end read transaction"))?;
        Ok(value)
    }
}

/// The schema of a new store: every table and index of the reference's store
/// format at its migration head, as the reference's migrations leave them.
const SCHEMA: &str = include_str!("schema.sql");

/// The reference's migration head (the newest revision under its `_alembic/versions`,
/// `059_rule_source_roots`). A new store carries it in `alembic_version`: the
/// reference's engine runs `alembic upgrade head` on every store it opens, and a
/// store without the stamp is migrated from the first revision, which fails on the
/// tables that already exist (`table corpus_entries already exists`).
pub const ALEMBIC_HEAD: &str = "059";

/// Creates a new, empty store at `path` in the reference's schema at its migration
/// head, stamped with that head ([`ALEMBIC_HEAD`]) and with the change journal
/// installed, and returns it open for writing.
///
/// The store is built under a temporary name beside `path` and linked into place
/// once whole: a process killed while it writes the schema leaves no file at
/// `path` (a store that exists is a whole store, so the same command run again
/// starts over), only the temporary file, which the next creation of the same
/// path from the same process id replaces.
///
/// # Errors
///
/// [`Error::Open`] when the file exists already or cannot be created,
/// [`Error::Query`] when the schema cannot be written (the temporary file is
/// removed), [`Error::Create`] when the finished store cannot be put in place.
pub fn create_store(path: &Path) -> Result<crate::Writer> {
    if path.exists() {
        return Err(Error::Open {
            path: path.to_owned(),
            source: rusqlite::Error::InvalidPath(path.to_owned()),
        });
    }
    let name = path.file_name().map_or_else(
        || "store".into(),
        |name| name.to_string_lossy().into_owned(),
    );
    let building = path.with_file_name(format!(".{name}.creating-{}", std::process::id()));
    let _ = std::fs::remove_file(&building);
    let open_error = |source| Error::Open {
        path: path.to_owned(),
        source,
    };
    let mut connection = Connection::open_with_flags(
        &building,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(open_error)?;
    let created = connection
        .execute_batch(&format!(
            "BEGIN; {SCHEMA} INSERT INTO alembic_version (version_num) VALUES ('{ALEMBIC_HEAD}'); COMMIT;"
        ))
        .map_err(query_error("create schema"))
        .and_then(|()| crate::journal::install_journal_on(&mut connection).map(|_| ()));
    // Closed before it moves: SQLite names a database's side files after the
    // path it was opened by.
    drop(connection);
    let placed = created.and_then(|()| {
        // A link, not a rename: it never replaces a file another process put at
        // `path` meanwhile.
        std::fs::hard_link(&building, path)
            .or_else(|error| match error.kind() {
                std::io::ErrorKind::AlreadyExists => Err(error),
                _ if !path.exists() => std::fs::rename(&building, path),
                _ => Err(error),
            })
            .map_err(|source| Error::Create {
                path: path.to_owned(),
                source,
            })
    });
    let _ = std::fs::remove_file(&building);
    placed?;
    crate::Writer::open(path)
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_new_store_is_stamped_with_the_migration_head() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        drop(create_store(&path).unwrap());
        let store = Store::open_read_only(&path).unwrap();
        let stamps: Vec<String> = store
            .connection()
            .prepare("SELECT version_num FROM alembic_version")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(stamps, [ALEMBIC_HEAD]);
        for table in [
            "subjects",
            "subject_aliases",
            "particle_changes",
            "utility_events",
        ] {
            assert!(store.has_table(table).unwrap(), "{table}");
        }
        assert!(crate::journal_installed(&store).unwrap());
    }

    #[test]
    fn a_new_store_appears_whole_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        drop(create_store(&path).unwrap());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["new.db"]);
        // A second creation of the same path is refused; the store is untouched.
        let before = std::fs::read(&path).unwrap();
        assert!(matches!(create_store(&path), Err(Error::Open { .. })));
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    /// Asserts whether this process maps `path`, where `/proc/self/maps` says
    /// (Linux; elsewhere nothing is checked, as in the cache's map tests).
    fn assert_mapped(path: &Path, expected: bool, what: &str) {
        if cfg!(target_os = "linux") {
            let path = path.canonicalize().unwrap();
            let path = path.to_string_lossy();
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
            let mapped = maps.lines().any(|line| line.ends_with(&*path));
            assert_eq!(mapped, expected, "{what}");
        }
    }

    fn map_size(store: &Store) -> i64 {
        store
            .connection()
            .query_row("PRAGMA mmap_size", [], |row| row.get(0))
            .unwrap()
    }

    /// A read-only connection reads through a memory map between scans too.
    /// Another connection's writes, a file grown past the map and a file
    /// shrunk under it (VACUUM) are each read whole by its next transaction,
    /// in both journal modes the reference's stores use.
    #[test]
    fn a_mapped_reader_reads_each_write_and_a_shrunk_file() {
        for journal in ["DELETE", "WAL"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("store.db");
            drop(create_store(&path).unwrap());
            let writer = Connection::open(&path).unwrap();
            writer
                .execute_batch(&format!(
                    "PRAGMA journal_mode = {journal}; CREATE TABLE filler (x BLOB)"
                ))
                .unwrap();
            let store = Store::open_read_only(&path).unwrap();
            assert!(map_size(&store) > 0, "{journal}: not mapped");
            let read = |store: &Store| {
                store
                    .read_snapshot(|store| {
                        store
                            .connection()
                            .query_row(
                                "SELECT count(*), coalesce(sum(length(x)), 0) FROM filler",
                                [],
                                |row| Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?)),
                            )
                            .map_err(query_error("filler"))
                    })
                    .unwrap()
            };
            assert_eq!(read(&store), (0, 0));
            let grow = |rows: i64| {
                writer
                    .execute(
                        "INSERT INTO filler SELECT zeroblob(20000) FROM \
                         (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
                         WHERE i < ?1) SELECT i FROM n)",
                        [rows],
                    )
                    .unwrap();
            };
            grow(50);
            assert_eq!(read(&store), (50, 50 * 20000), "{journal}: a write");
            grow(200);
            assert_eq!(read(&store), (250, 250 * 20000), "{journal}: a grown file");
            assert_mapped(&path, true, &format!("{journal}: read without a map"));
            // Checkpointed, so a WAL store's file shrinks too.
            writer
                .execute_batch(
                    "DELETE FROM filler WHERE rowid > 10; VACUUM; PRAGMA wal_checkpoint(TRUNCATE)",
                )
                .unwrap();
            assert!(
                std::fs::metadata(&path).unwrap().len() < 1 << 20,
                "{journal}: VACUUM shrank nothing"
            );
            assert_eq!(read(&store), (10, 10 * 20000), "{journal}: a shrunk file");
            // A full scan maps the file for itself, unmaps it, and leaves the
            // resting map armed: mapped again by the next read.
            let resting = map_size(&store);
            store.with_mapped_scan(|store| Ok(read(store))).unwrap();
            assert_eq!(map_size(&store), resting, "{journal}: after a scan");
            assert_mapped(&path, false, &format!("{journal}: the scan's map was kept"));
            read(&store);
            assert_mapped(&path, true, &format!("{journal}: not mapped again"));
        }
    }

    /// A replica's follower rewrites pages in place, and may replace the file:
    /// its connection keeps no map outside a scan.
    #[test]
    fn a_replica_reads_without_a_map() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replica.db");
        drop(create_store(&path).unwrap());
        std::fs::write(crate::replica::txid_file(&path), "0000000000000001\n").unwrap();
        let store = Store::open_read_only(&path).unwrap();
        assert!(store.is_replica());
        assert_eq!(map_size(&store), 0);
        store.with_mapped_scan(|_| Ok(())).unwrap();
        assert_eq!(map_size(&store), 0, "after a scan");
        store.read_snapshot(|store| store.data_version()).unwrap();
        assert_mapped(&path, false, "a replica's read mapped its file");
    }
}
