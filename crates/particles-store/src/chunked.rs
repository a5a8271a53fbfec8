//! Lookups by a list of keys: the one place that writes an `IN (...)` list.
//!
//! Every lookup by ids, tags or snapshot ids goes through [`for_each_in_chunks`],
//! which cuts the keys into lists of at most [`ID_CHUNK`], so no statement carries
//! more variables than any SQLite build allows, whatever the store size. Statements
//! are prepared through the connection's statement cache: a query makes the same
//! lookups with the same full-chunk length again and again, and preparing a
//! statement with 500 variables costs more than running it on a few rows.

use rusqlite::{Row, ToSql};

use crate::{
    error::{query_error, Result},
    Store,
};

/// The most ids one `IN (...)` list carries. Small enough for any SQLite build's
/// variable limit, whatever the store size.
pub const ID_CHUNK: usize = 500;

/// Whether a lookup's time inside SQLite counts as loader time
/// ([`crate::LoadCounters::sql_seconds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SqlClock {
    /// A loader's own read (a cache's delta): counted, as the loader's other
    /// statements are.
    Loader,
    /// A lookup around the load (source facts, premises, hits, tags): not counted,
    /// so a loader that makes one inside its load reports only its own reads.
    Untimed,
}

impl SqlClock {
    fn time<T>(self, f: impl FnOnce() -> T) -> T {
        match self {
            SqlClock::Loader => crate::profile::sql(f),
            SqlClock::Untimed => f(),
        }
    }
}

/// The length a last, shorter list is padded to: a power of two below
/// [`ID_CHUNK`], or the chunk itself.
pub(crate) fn padded_len(n: usize) -> usize {
    n.max(1).next_power_of_two().min(ID_CHUNK)
}

/// `?,?,...,?` with `n` placeholders.
pub(crate) fn placeholders(n: usize) -> String {
    let mut text = "?,".repeat(n);
    text.pop();
    text
}

/// Runs the statement `sql(placeholders)` once per chunk of `keys` (in order, each
/// chunk at most [`ID_CHUNK`] keys, bound in order to the placeholders; a
/// shorter last chunk padded to [`padded_len`] with its last key) and hands
/// every row to `row`, chunk after chunk in statement order. No keys, no
/// statement. `sql` is called at most twice: once for the full chunks' length and
/// once for the shorter last chunk, whose text is then built once too.
///
/// Callers deduplicate and order the keys as their contract says; a key with no
/// row simply yields nothing.
///
/// # Errors
///
/// [`crate::Error::Query`] (named `name`) when SQLite fails, or `row`'s error,
/// which stops the lookup.
pub(crate) fn for_each_in_chunks<K: ToSql>(
    store: &Store,
    name: &'static str,
    keys: &[K],
    sql: impl Fn(&str) -> String,
    clock: SqlClock,
    mut row: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    let mut full_chunk_sql: Option<String> = None;
    for chunk in keys.chunks(ID_CHUNK) {
        let last_chunk_sql;
        let padded = padded_len(chunk.len());
        let text: &str = if chunk.len() == ID_CHUNK {
            full_chunk_sql.get_or_insert_with(|| sql(&placeholders(ID_CHUNK)))
        } else {
            // Only the last chunk is shorter, so this runs at most once per call.
            last_chunk_sql = sql(&placeholders(padded));
            &last_chunk_sql
        };
        let mut statement = clock
            .time(|| store.connection().prepare_cached(text))
            .map_err(query_error(name))?;
        let last = chunk.len().saturating_sub(1);
        let keys = (0..padded).map(|at| &chunk[at.min(last)]);
        let mut rows = clock
            .time(|| statement.query(rusqlite::params_from_iter(keys)))
            .map_err(query_error(name))?;
        while let Some(found) = clock.time(|| rows.next()).map_err(query_error(name))? {
            row(found)?;
        }
    }
    Ok(())
}

/// Fewer keys than this are always looked up by lists: a scan reads the
/// whole table.
const SCAN_MIN_KEYS: usize = 1_024;

/// Keys for at least one row in this many of a table's: one pass over the
/// table costs less than the lists. A list's lookup walks the key's index,
/// then the table's tree for the row, and builds the list's own table first;
/// a scan reads each row once, in order. At 1M (the benchmark's store, every
/// one of its 31,250 snapshots and 12,195 corpus entries wanted, a cold page
/// cache as after another connection's commit) the lists took 190 ms and one
/// pass 79 ms through Python's `sqlite3` (measured on AMD EPYC, 2026-12-05).
const SCAN_FRACTION: usize = 3;

/// A table read by a text key: `SELECT {columns} FROM {table}`, the key the
/// first column.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keyed {
    pub(crate) table: &'static str,
    pub(crate) key: &'static str,
    pub(crate) columns: &'static str,
}

/// Hands `row` every row of `keyed.table` whose key is one of `keys`, in no
/// particular order: through `IN (...)` lists ([`for_each_in_chunks`]), or,
/// when the keys name a good part of the table, in one pass over it that
/// keeps the rows whose key is one of them. Both read the caller's snapshot
/// and find the same rows: the lists compare a text key byte for byte (the
/// column's default `BINARY` collation, as the reference's schema declares
/// its keys), and the pass keeps a row whose key is text with those bytes.
/// A row whose key is not wanted is never handed over, so a malformed value
/// in it fails neither path.
///
/// # Errors
///
/// [`crate::Error::Query`] (named `name`) when SQLite fails, or `row`'s error.
pub(crate) fn for_each_keyed(
    store: &Store,
    name: &'static str,
    keyed: Keyed,
    keys: &[&str],
    clock: SqlClock,
    mut row: impl FnMut(&Row<'_>) -> Result<()>,
) -> Result<()> {
    if !scans(store, keyed.table, keys.len()) {
        return for_each_in_chunks(
            store,
            name,
            keys,
            |list| {
                format!(
                    "SELECT {} FROM {} WHERE {} IN ({list})",
                    keyed.columns, keyed.table, keyed.key
                )
            },
            clock,
            row,
        );
    }
    let wanted: std::collections::HashSet<&[u8], foldhash::fast::RandomState> =
        keys.iter().map(|key| key.as_bytes()).collect();
    let sql = format!("SELECT {} FROM {}", keyed.columns, keyed.table);
    let mut statement = clock
        .time(|| store.connection().prepare_cached(&sql))
        .map_err(query_error(name))?;
    let mut rows = clock
        .time(|| statement.query([]))
        .map_err(query_error(name))?;
    while let Some(found) = clock.time(|| rows.next()).map_err(query_error(name))? {
        let key = found.get_ref(0).map_err(query_error(name))?;
        if let rusqlite::types::ValueRef::Text(bytes) = key {
            if wanted.contains(bytes) {
                row(found)?;
            }
        }
    }
    Ok(())
}

/// Whether `wanted` keys are worth one pass over `table`: at least
/// [`SCAN_MIN_KEYS`], and at least one in [`SCAN_FRACTION`] of its rows,
/// counted from above by its largest rowid (one step down its tree). A table
/// without rowids, or with none above zero, is looked up by lists.
fn scans(store: &Store, table: &str, wanted: usize) -> bool {
    if wanted < SCAN_MIN_KEYS {
        return false;
    }
    let largest: Option<i64> = store
        .connection()
        .prepare_cached(&format!("SELECT max(rowid) FROM {table}"))
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .ok()
        .flatten();
    largest.is_some_and(|largest| {
        usize::try_from(largest)
            .is_ok_and(|rows| rows > 0 && rows <= wanted.saturating_mul(SCAN_FRACTION))
    })
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use rusqlite::Connection;

    use super::*;

    /// A store whose `particles` table holds the ids `p0000` .. `p1199`.
    fn store_with_ids() -> Store {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch("CREATE TABLE particles (id TEXT PRIMARY KEY)")
            .unwrap();
        for i in 0..1200 {
            connection
                .execute(
                    "INSERT INTO particles (id) VALUES (?1)",
                    [format!("p{i:04}")],
                )
                .unwrap();
        }
        Store::from_connection(connection, "memory".into()).unwrap()
    }

    /// Looks `keys` up; returns each found id with the length of the `IN (...)`
    /// list that found it, and how many statement texts were built.
    fn lookup(store: &Store, keys: &[String]) -> (Vec<(String, usize)>, usize) {
        let built = Cell::new(0);
        let mut found = Vec::new();
        for_each_in_chunks(
            store,
            "test lookup",
            keys,
            |list| {
                built.set(built.get() + 1);
                // Each row reports the length of the list that found it.
                let length = list.matches('?').count();
                format!("SELECT id, {length} FROM particles WHERE id IN ({list}) ORDER BY id")
            },
            SqlClock::Untimed,
            |row| {
                found.push((row.get(0).unwrap(), row.get::<_, i64>(1).unwrap() as usize));
                Ok(())
            },
        )
        .unwrap();
        (found, built.get())
    }

    #[test]
    fn lists_never_pass_the_chunk_and_every_row_comes_back() {
        let store = store_with_ids();
        for n in [0, 1, 499, 500, 501, 1001] {
            let keys: Vec<String> = (0..n).map(|i| format!("p{i:04}")).collect();
            let (found, built) = lookup(&store, &keys);
            let ids: Vec<&String> = found.iter().map(|(id, _)| id).collect();
            assert_eq!(ids, keys.iter().collect::<Vec<_>>(), "n = {n}");
            assert!(found.iter().all(|(_, list)| *list <= ID_CHUNK), "n = {n}");
            let full = n / ID_CHUNK;
            let rest = n % ID_CHUNK;
            // One text for the full chunks (if any), one for the shorter last one.
            assert_eq!(
                built,
                usize::from(full > 0) + usize::from(rest > 0),
                "n = {n}"
            );
            let lists: std::collections::BTreeSet<usize> =
                found.iter().map(|(_, list)| *list).collect();
            let expected: std::collections::BTreeSet<usize> = [
                (full > 0).then_some(ID_CHUNK),
                (rest > 0).then_some(padded_len(rest)),
            ]
            .into_iter()
            .flatten()
            .collect();
            assert_eq!(lists, expected, "n = {n}");
        }
    }

    /// A table `t` of text keys `k0000` .. `k2999` (value: the number), with
    /// rows the lists do not find by a text key: a blob key with a wanted
    /// key's bytes, a key differing only in case, and an integer.
    fn keyed_table() -> Store {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE particles (id TEXT PRIMARY KEY); \
                 CREATE TABLE t (k VARCHAR NOT NULL, v INTEGER, PRIMARY KEY (k))",
            )
            .unwrap();
        for i in 0..3000 {
            connection
                .execute(
                    "INSERT INTO t (k, v) VALUES (?1, ?2)",
                    (format!("k{i:04}"), i),
                )
                .unwrap();
        }
        connection
            .execute_batch(
                "INSERT INTO t (k, v) VALUES (CAST('k0001' AS BLOB), -1), ('K0002', -2), (7, -3)",
            )
            .unwrap();
        Store::from_connection(connection, "memory".into()).unwrap()
    }

    fn keyed_rows(store: &Store, keys: &[&str]) -> Vec<(String, i64)> {
        let keyed = Keyed {
            table: "t",
            key: "k",
            columns: "k, v",
        };
        let mut found = Vec::new();
        for_each_keyed(store, "test", keyed, keys, SqlClock::Untimed, |row| {
            found.push((row.get(0).unwrap(), row.get(1).unwrap()));
            Ok(())
        })
        .unwrap();
        found.sort_unstable();
        found
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// The pass over the table finds what the lists find, for any set of
        /// keys: present, absent, and those matching only as another type or
        /// case.
        #[test]
        fn one_pass_finds_what_the_lists_find(
            picked in proptest::collection::btree_set(0usize..3400, 0..3400),
            odd in proptest::collection::vec(0usize..4, 0..4),
        ) {
            let store = keyed_table();
            let mut keys: Vec<String> = picked.iter().map(|i| format!("k{i:04}")).collect();
            keys.extend(odd.iter().map(|&i| ["K0002", "7", "k0001", ""][i].to_owned()));
            keys.sort();
            keys.dedup();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let mut listed = Vec::new();
            for_each_in_chunks(
                &store,
                "test",
                &keys,
                |list| format!("SELECT k, v FROM t WHERE k IN ({list})"),
                SqlClock::Untimed,
                |row| {
                    listed.push((row.get(0).unwrap(), row.get(1).unwrap()));
                    Ok(())
                },
            )
            .unwrap();
            listed.sort_unstable();
            proptest::prop_assert_eq!(keyed_rows(&store, &keys), listed);
        }
    }

    #[test]
    fn a_pass_is_taken_only_for_a_good_part_of_a_table() {
        let store = keyed_table();
        // 3003 rows: a pass from 1001 keys on.
        assert!(!scans(&store, "t", SCAN_MIN_KEYS - 1));
        assert!(scans(&store, "t", SCAN_MIN_KEYS));
        assert!(!scans(&store, "t", 0));
        store
            .connection()
            .execute_batch(
                "CREATE TABLE w (k TEXT PRIMARY KEY) WITHOUT ROWID; CREATE TABLE e (k TEXT)",
            )
            .unwrap();
        assert!(!scans(&store, "w", 100_000), "no rowid: lists");
        assert!(!scans(&store, "e", 100_000), "empty: lists");
        assert!(!scans(&store, "missing", 100_000), "no table: lists");
        // Every key of the table, by the pass.
        let keys: Vec<String> = (0..1500).map(|i| format!("k{i:04}")).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        assert!(scans(&store, "t", keys.len()));
        let found = keyed_rows(&store, &keys);
        assert_eq!(found.len(), 1500);
        assert!(found.iter().all(|(_, v)| *v >= 0));
    }

    #[test]
    fn short_lists_pad_to_a_few_lengths() {
        assert_eq!(padded_len(0), 1);
        assert_eq!(padded_len(1), 1);
        assert_eq!(padded_len(3), 4);
        assert_eq!(padded_len(40), 64);
        assert_eq!(padded_len(300), ID_CHUNK);
        assert_eq!(padded_len(ID_CHUNK), ID_CHUNK);
        // Padding repeats a key: every row still comes back once.
        let store = store_with_ids();
        let keys: Vec<String> = (0..5).map(|i| format!("p{i:04}")).collect();
        let (found, _) = lookup(&store, &keys);
        assert_eq!(found.len(), 5);
        assert!(found.iter().all(|(_, list)| *list == 8));
    }

    #[test]
    fn missing_keys_yield_nothing_and_a_repeated_call_agrees() {
        let store = store_with_ids();
        let keys: Vec<String> = ["p0003", "absent", "p0001"].map(str::to_owned).to_vec();
        let (found, _) = lookup(&store, &keys);
        let ids: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["p0001", "p0003"]);
        // The same lookup again runs the cached statements; nothing carries over.
        assert_eq!(lookup(&store, &keys).0, found);
    }
}
