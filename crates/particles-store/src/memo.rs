//! Source facts remembered across the queries of one read-only connection, for
//! as long as the file is unchanged.
//!
//! A query's truncation band reads the sources of hundreds of thousands of
//! candidates: at 1M, ~31k snapshots and ~12k corpus entries, 200 ms of index
//! probes per query, the same rows every time. A read-only connection keeps what
//! it read, tagged with SQLite's `PRAGMA data_version`, which changes when another
//! connection commits anything to the file (and never for this connection's own
//! writes: a read-only connection has none). Each lookup first reads the version
//! inside the caller's read transaction, after that transaction has taken its
//! snapshot, so the remembered facts are the snapshot's, or forgotten. On a
//! Litestream replica, whose follower leaves `data_version` alone, a watch on
//! the file's writes ([`crate::replica::WriteWatch`]) forgets them too.

use std::{cell::RefCell, collections::HashMap, hash::BuildHasher, sync::Arc};

use particles_model::policy::SourceFacts;

use crate::{error::query_error, Result, SnapshotFacts, Store};

/// foldhash with a fixed seed: the memo's keys are hashed once per lookup, by us.
type Fixed = foldhash::fast::FixedState;

/// More remembered facts than this and the memo starts over: a bound on a
/// long-lived connection's memory (about 100 bytes each).
const MEMO_CAP: usize = 4_000_000;

/// Remembered facts from this many on are freed off the query's thread.
const FREE_ASIDE_MIN: usize = 4_096;

/// What one connection remembers, and of which file state.
#[derive(Default)]
pub(crate) struct SourceMemo {
    version: Option<i64>,
    /// The read transaction (`Store::read_snapshot`'s number) in which the
    /// version was last read: within it the file cannot change for this
    /// connection, so it is read once.
    checked_in: Option<u64>,
    /// Snapshot id → `(content_published_at, author_id)`, `None`: no such row.
    pub(crate) snapshots: HashMap<String, Option<SnapshotFacts>, Fixed>,
    /// Entry id → `(source_type, uri_r)`, `None`: no such row.
    pub(crate) entries: HashMap<String, Option<(String, Option<String>)>, Fixed>,
    /// Assembled facts by the hash of their `(entry id, snapshot id)` ref (a
    /// bucket, for the rare collision): what a query's scoring shares.
    sources: HashMap<u64, Vec<RememberedSource>, Fixed>,
    sources_len: usize,
    /// Assembled facts by a caller's dense numbering of its refs (a candidate
    /// set's source index, named by its `owner` id): an array read instead of a
    /// hash of the ref's strings. One numbering at a time.
    slots: Option<(u64, Vec<Option<Arc<SourceFacts>>>)>,
    /// What a caller derived from this file state ([`Store::with_remembered`]),
    /// of the type it asked for last.
    derived: Option<Box<dyn std::any::Any + Send>>,
}

/// One ref's assembled facts.
struct RememberedSource {
    entry: String,
    snapshot: Option<String>,
    facts: Arc<SourceFacts>,
}

fn ref_hash(entry: &str, snapshot: Option<&str>) -> u64 {
    Fixed::default().hash_one((entry, snapshot))
}

impl SourceMemo {
    /// Forgets everything. What it held is freed on a thread of its own when
    /// it is large: after another connection's commit the next query reads
    /// the facts again, and freeing tens of thousands of remembered strings
    /// first would add to its wait (17 ms of a 1M query's 285, measured on
    /// AMD EPYC).
    fn clear(&mut self) {
        let old = std::mem::take(self);
        if old.len() >= FREE_ASIDE_MIN {
            // A thread that cannot start drops its closure, and `old` with it,
            // here.
            let _ = std::thread::Builder::new()
                .name("particles-memo-free".into())
                .spawn(move || drop(old));
        }
    }

    fn len(&self) -> usize {
        self.snapshots.len() + self.entries.len() + self.sources_len
    }

    /// The remembered facts of a ref.
    pub(crate) fn source(&self, entry: &str, snapshot: Option<&str>) -> Option<&Arc<SourceFacts>> {
        self.sources
            .get(&ref_hash(entry, snapshot))?
            .iter()
            .find(|r| r.entry == entry && r.snapshot.as_deref() == snapshot)
            .map(|r| &r.facts)
    }

    /// The slots of numbering `owner` (with room for `count`), made empty when
    /// another numbering held them.
    pub(crate) fn slots(&mut self, owner: u64, count: usize) -> &mut Vec<Option<Arc<SourceFacts>>> {
        if self.slots.as_ref().is_none_or(|(held, _)| *held != owner) {
            self.slots = Some((owner, Vec::new()));
        }
        let (_, slots) = self.slots.get_or_insert_with(|| (owner, Vec::new()));
        if slots.len() < count {
            slots.resize(count, None);
        }
        slots
    }

    /// Remembers a ref's facts.
    pub(crate) fn remember_source(
        &mut self,
        entry: &str,
        snapshot: Option<&str>,
        facts: Arc<SourceFacts>,
    ) {
        if self.source(entry, snapshot).is_some() {
            return;
        }
        self.sources
            .entry(ref_hash(entry, snapshot))
            .or_default()
            .push(RememberedSource {
                entry: entry.to_owned(),
                snapshot: snapshot.map(str::to_owned),
                facts,
            });
        self.sources_len += 1;
    }
}

/// `read` of `ids` through a map of remembered answers: the ids not remembered
/// yet are read (in one call) and remembered, absent ones as `None`; the result
/// holds each id found, as `read` gives it.
///
/// # Errors
///
/// Whatever `read` returns.
pub(crate) fn read_through<V: Clone, S: BuildHasher>(
    remembered: &mut HashMap<String, Option<V>, S>,
    ids: &[&str],
    read: impl FnOnce(&[&str]) -> Result<Vec<(String, V)>>,
) -> Result<HashMap<String, V>> {
    let missing = unseen(remembered, ids.iter().copied());
    remember_read(remembered, &missing, read)?;
    Ok(ids
        .iter()
        .filter_map(|&id| {
            let value = remembered.get(id)?.as_ref()?;
            Some((id.to_owned(), value.clone()))
        })
        .collect())
}

/// The distinct ids among `ids` that `remembered` holds no answer
/// for yet, sorted (what [`remember_read`] reads).
pub(crate) fn unseen<'a, V, S: BuildHasher>(
    remembered: &HashMap<String, Option<V>, S>,
    ids: impl Iterator<Item = &'a str>,
) -> Vec<&'a str> {
    let mut unseen: Vec<&str> = ids.filter(|id| !remembered.contains_key(*id)).collect();
    unseen.sort_unstable();
    unseen.dedup();
    unseen
}

/// Reads `missing` (ids not remembered yet) with `read` and remembers what it
/// found, moved in, and the rest as `None`.
///
/// # Errors
///
/// Whatever `read` returns.
pub(crate) fn remember_read<V, S: BuildHasher>(
    remembered: &mut HashMap<String, Option<V>, S>,
    missing: &[&str],
    read: impl FnOnce(&[&str]) -> Result<Vec<(String, V)>>,
) -> Result<()> {
    if missing.is_empty() {
        return Ok(());
    }
    for (id, value) in read(missing)? {
        remembered.insert(id, Some(value));
    }
    for &id in missing {
        if !remembered.contains_key(id) {
            remembered.insert(id.to_owned(), None);
        }
    }
    Ok(())
}

/// A connection's memo cell: present on read-only connections only.
pub(crate) type MemoCell = Option<RefCell<SourceMemo>>;

impl Store {
    /// The memo, valid for the caller's read snapshot, or `None` when this
    /// connection does not remember (it can write, or no transaction is open, so
    /// each statement would read its own snapshot).
    pub(crate) fn source_memo(&self) -> Result<Option<std::cell::RefMut<'_, SourceMemo>>> {
        let Some(cell) = self.memo_cell() else {
            return Ok(None);
        };
        let connection = self.connection();
        if connection.is_autocommit() {
            return Ok(None);
        }
        let Ok(mut memo) = cell.try_borrow_mut() else {
            return Ok(None);
        };
        let snapshot = self.snapshot_number();
        if snapshot.is_some() && memo.checked_in == snapshot && memo.len() <= MEMO_CAP {
            return Ok(Some(memo));
        }
        // A read first, so the transaction has taken its snapshot (a deferred
        // transaction takes it at its first read) before the version is asked.
        connection
            .prepare_cached("SELECT count(*) FROM sqlite_master")
            .and_then(|mut statement| statement.query_row([], |_| Ok(())))
            .map_err(query_error("source memo"))?;
        let version: i64 = connection
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
            .map_err(query_error("source memo"))?;
        // A replica's follower does not move `data_version`; its writes are
        // seen by the connection's watch, drained here, inside the
        // transaction, after its snapshot was taken.
        let written = self.replica_written_since();
        if written || memo.version != Some(version) || memo.len() > MEMO_CAP {
            memo.clear();
            memo.version = Some(version);
        }
        memo.checked_in = snapshot;
        Ok(Some(memo))
    }
}

impl Store {
    /// Runs `f` with what this connection remembers under type `T` for the
    /// caller's read snapshot: a `T::default()` the first time, and again
    /// whenever another connection committed to the file since (the memo's
    /// `data_version` rule), so `T` may hold anything derived from the
    /// snapshot's rows. One type at a time: asking for another replaces it.
    /// `None` when this connection does not remember (it can write, or no read
    /// transaction is open). `f` must not read the store itself.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Query`] when SQLite fails reading the version.
    pub fn with_remembered<T: Default + Send + 'static, R>(
        &self,
        f: impl FnOnce(&mut T) -> R,
    ) -> Result<Option<R>> {
        let Some(mut memo) = self.source_memo()? else {
            return Ok(None);
        };
        if !memo.derived.as_ref().is_some_and(|d| d.is::<T>()) {
            memo.derived = Some(Box::<T>::default());
        }
        Ok(memo
            .derived
            .as_mut()
            .and_then(|derived| derived.downcast_mut::<T>())
            .map(f))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rusqlite::Connection;

    use crate::{entry_source_facts, snapshot_source_facts, Store};

    fn copy_of(fixture: &str, wal: bool) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        std::fs::copy(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/stores")
                .join(fixture),
            &path,
        )
        .unwrap();
        if wal {
            let connection = Connection::open(&path).unwrap();
            connection
                .query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
                .unwrap();
        }
        (dir, path)
    }

    /// Another connection's commit is seen by the next read transaction, never
    /// inside the one already open; unchanged, the facts come from the memo.
    #[test]
    fn a_commit_elsewhere_is_seen_by_the_next_snapshot_only() {
        for wal in [false, true] {
            let (_dir, path) = copy_of("coins-a.db", wal);
            let writer = Connection::open(&path).unwrap();
            let (snapshot, entry): (String, String) = writer
                .query_row(
                    "SELECT snapshot_id, entry_id FROM snapshots ORDER BY snapshot_id LIMIT 1",
                    [],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .unwrap();
            let store = Store::open_read_only(&path).unwrap();
            let read = |store: &Store| {
                store
                    .read_snapshot(|s| {
                        let snapshots = snapshot_source_facts(s, &[snapshot.as_str()])?;
                        let entries = entry_source_facts(s, &[entry.as_str()])?;
                        Ok((
                            snapshots.get(&snapshot).and_then(|f| f.1.clone()),
                            entries.get(&entry).map(|e| e.0.clone()),
                        ))
                    })
                    .unwrap()
            };
            let before = read(&store);
            assert_eq!(read(&store), before, "unchanged, from the memo");
            assert_eq!(
                store.memo_cell().unwrap().borrow().snapshots.len(),
                1,
                "remembered"
            );
            let commit = || {
                writer
                    .execute(
                        "UPDATE snapshots SET author_id = 'someone-else' WHERE snapshot_id = ?1",
                        [&snapshot],
                    )
                    .unwrap();
                writer
                    .execute(
                        "UPDATE corpus_entries SET source_type = 'other' WHERE entry_id = ?1",
                        [&entry],
                    )
                    .unwrap();
            };
            // Inside one read transaction (WAL lets the writer commit beside it),
            // the snapshot's facts hold.
            if wal {
                let inside = store
                    .read_snapshot(|s| {
                        let first = snapshot_source_facts(s, &[snapshot.as_str()])?;
                        commit();
                        let again = snapshot_source_facts(s, &[snapshot.as_str()])?;
                        Ok((first, again))
                    })
                    .unwrap();
                assert_eq!(inside.0, inside.1, "one snapshot, one answer");
            } else {
                commit();
            }
            let after = read(&store);
            assert_eq!(
                after,
                (Some("someone-else".to_owned()), Some("other".to_owned())),
                "wal={wal}: the commit is seen"
            );
            assert_ne!(after, before);
        }
    }

    /// Facts remembered by slot are those of the caller's snapshot: the same as
    /// by ref while the file is unchanged, and read again after another
    /// connection's commit; another numbering does not see them.
    #[test]
    fn facts_by_slot_follow_the_file_like_facts_by_ref() {
        let (_dir, path) = copy_of("coins-a.db", true);
        let writer = Connection::open(&path).unwrap();
        let (snapshot, entry): (String, String) = writer
            .query_row(
                "SELECT snapshot_id, entry_id FROM snapshots ORDER BY snapshot_id LIMIT 1",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        let store = Store::open_read_only(&path).unwrap();
        let wanted = [(3u32, (entry.as_str(), Some(snapshot.as_str())))];
        let by_slot = |owner: u64| {
            store
                .read_snapshot(|s| crate::shared_source_facts_by_slot(s, owner, 8, &wanted))
                .unwrap()
        };
        let by_ref = || {
            store
                .read_snapshot(|s| crate::shared_source_facts(s, &[wanted[0].1]))
                .unwrap()
        };
        let first = by_slot(7);
        assert_eq!(first, by_ref());
        assert_eq!(by_slot(7), first, "from the slots");
        writer
            .execute(
                "UPDATE snapshots SET author_id = 'someone-else' WHERE snapshot_id = ?1",
                [&snapshot],
            )
            .unwrap();
        let after = by_slot(7);
        assert_ne!(after, first, "the commit is seen");
        assert_eq!(after[0].author_id.as_deref(), Some("someone-else"));
        assert_eq!(by_slot(9), after, "another numbering reads its own");
    }

    /// What a caller derives is kept across read transactions while the file
    /// is unchanged, forgotten after another connection's commit, replaced when
    /// another type is asked for, and not offered outside a transaction.
    #[test]
    fn a_derived_value_lives_as_long_as_the_file_state() {
        let (_dir, path) = copy_of("coins-a.db", true);
        let writer = Connection::open(&path).unwrap();
        let store = Store::open_read_only(&path).unwrap();
        let bump = |store: &Store| {
            store
                .read_snapshot(|s| {
                    s.with_remembered(|count: &mut u32| {
                        *count += 1;
                        *count
                    })
                })
                .unwrap()
        };
        assert_eq!(bump(&store), Some(1));
        assert_eq!(bump(&store), Some(2), "kept across transactions");
        writer
            .execute("UPDATE snapshots SET author_id = 'x' WHERE rowid = 1", [])
            .unwrap();
        assert_eq!(bump(&store), Some(1), "forgotten after a commit elsewhere");
        let other = store
            .read_snapshot(|s| s.with_remembered(|text: &mut String| text.len()))
            .unwrap();
        assert_eq!(other, Some(0), "another type starts fresh");
        assert_eq!(bump(&store), Some(1), "and replaced the first");
        assert_eq!(
            store.with_remembered(|count: &mut u32| *count).unwrap(),
            None
        );
    }

    /// A Litestream replica's memo: its follower rewrites pages in place
    /// without moving `data_version` (page 1 left alone, as in most applies of
    /// a WAL primary's commits), and the facts remembered before are
    /// forgotten all the same; with no write, they come from the memo.
    #[test]
    fn a_replicas_memo_forgets_what_its_follower_rewrote() {
        const PAGE: usize = 4096;
        let (_dir, primary) = copy_of("coins-a.db", false);
        let copy = primary.with_file_name("replica.db");
        std::fs::copy(&primary, &copy).unwrap();
        std::fs::write(crate::replica::txid_file(&copy), "0000000000000001\n").unwrap();
        let writer = Connection::open(&primary).unwrap();
        let snapshot: String = writer
            .query_row(
                "SELECT snapshot_id FROM snapshots ORDER BY snapshot_id LIMIT 1",
                [],
                |row| row.get(0),
            )
            .unwrap();
        let store = Store::open_read_only(&copy).unwrap();
        assert!(store.is_replica());
        let read = |store: &Store| {
            store
                .read_snapshot(|s| {
                    let facts = snapshot_source_facts(s, &[snapshot.as_str()])?;
                    Ok(facts.get(&snapshot).and_then(|f| f.1.clone()))
                })
                .unwrap()
        };
        let before = read(&store);
        assert_eq!(read(&store), before);
        assert_eq!(
            store
                .memo_cell()
                .expect("a replica remembers")
                .borrow()
                .snapshots
                .len(),
            1,
            "unchanged, from the memo"
        );
        writer
            .execute(
                "UPDATE snapshots SET author_id = 'someone-else' WHERE snapshot_id = ?1",
                [&snapshot],
            )
            .unwrap();
        // The follower's apply: every changed page but page 1, written in place.
        let new = std::fs::read(&primary).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&copy).unwrap();
        let old = std::fs::read(&copy).unwrap();
        let mut written = 0;
        for (page, chunk) in new.chunks(PAGE).enumerate().skip(1) {
            if old.get(page * PAGE..(page + 1) * PAGE) != Some(chunk) {
                std::os::unix::fs::FileExt::write_all_at(&file, chunk, (page * PAGE) as u64)
                    .unwrap();
                written += 1;
            }
        }
        assert!(written > 0);
        assert_eq!(
            std::fs::read(&copy).unwrap()[24..28],
            old[24..28],
            "the change counter is unchanged"
        );
        assert_eq!(
            read(&store),
            Some("someone-else".to_owned()),
            "the rewritten facts are read, not remembered"
        );
    }
}
