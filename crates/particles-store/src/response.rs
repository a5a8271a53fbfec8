//! What the semantic response reads besides the ranking: extraction gaps, subjects,
//! relations of the rendered hits, INCONSISTENCY records, operator modality pins and
//! corpus entries' source facts. Every `IN (...)` list is cut at [`ID_CHUNK`] ids.

use std::collections::{BTreeMap, HashMap, HashSet};

use particles_candidates::SubjectClaims;
use particles_model::Particle;

use crate::{
    chunked::{for_each_in_chunks, placeholders, SqlClock, ID_CHUNK},
    error::{query_error, Result},
    policy::collect_with,
    row::{ParticleRow, MODEL_COLUMNS},
    Store,
};

/// Runs `sql` (with `{ids}` standing for the placeholders) once per chunk of
/// `ids`, after `leading` bound parameters, and collects every row.
fn chunked<T>(
    store: &Store,
    name: &'static str,
    sql: &str,
    leading: &[&str],
    ids: &[&str],
    mut map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(ID_CHUNK) {
        let sql = sql.replace("{ids}", &placeholders(chunk.len()));
        let params = leading.iter().chain(chunk.iter());
        out.extend(collect_with(
            store,
            name,
            &sql,
            rusqlite::params_from_iter(params),
            &mut map,
        )?);
    }
    Ok(out)
}

/// The distinct corpus entries with a snapshot awaiting extraction or whose
/// extraction failed (the response's `coverage_gaps`), store-wide.
///
/// The reference selects them with `SELECT DISTINCT ... WHERE extraction_status IN
/// ('PENDING', 'FAILED')` and no `ORDER BY`; SQLite walks the extraction-status
/// index, so `FAILED` rows come before `PENDING` rows, each in rowid order, and an
/// entry keeps its first place. That order is spelled out here rather than left to
/// this SQLite's planner.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn coverage_gap_entries(store: &Store) -> Result<Vec<String>> {
    if !store.has_table("snapshots")? {
        return Ok(Vec::new());
    }
    let mut seen = HashSet::new();
    let mut entries = Vec::new();
    for status in ["FAILED", "PENDING"] {
        let rows: Vec<String> = collect_with(
            store,
            "coverage gaps",
            "SELECT entry_id FROM snapshots WHERE extraction_status = ?1 ORDER BY rowid",
            [status],
            |row| row.get(0),
        )?;
        entries.extend(rows.into_iter().filter(|entry| seen.insert(entry.clone())));
    }
    Ok(entries)
}

/// A subject as the response names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectRecord {
    /// The subject id.
    pub id: String,
    /// Its canonical name.
    pub canonical_name: String,
}

/// How a subject reference resolved (the reference's `get_subject`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubjectMatch {
    /// The exact id, or the one subject whose id starts with the reference.
    Found(SubjectRecord),
    /// No subject has that id or an id starting with it.
    NotFound,
    /// Several subjects' ids start with the reference (the reference raises).
    Ambiguous {
        /// How many ids matched.
        matches: usize,
    },
}

/// Resolves a subject reference as the reference's `get_subject` does: the exact
/// id, else the unique id with that prefix (SQLite `LIKE`, so ASCII letters match
/// case-insensitively; `%`, `_` and `\` in the reference are literal).
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn find_subject(store: &Store, reference: &str) -> Result<SubjectMatch> {
    if !store.has_table("subjects")? {
        return Ok(SubjectMatch::NotFound);
    }
    let record = |row: &rusqlite::Row<'_>| {
        Ok(SubjectRecord {
            id: row.get(0)?,
            canonical_name: row.get(1)?,
        })
    };
    let exact = collect_with(
        store,
        "subject by id",
        "SELECT id, canonical_name FROM subjects WHERE id = ?1",
        [reference],
        record,
    )?;
    if let Some(found) = exact.into_iter().next() {
        return Ok(SubjectMatch::Found(found));
    }
    let pattern = format!("{}%", crate::subjects::escape_like(reference));
    let mut prefixed = collect_with(
        store,
        "subject by prefix",
        "SELECT id, canonical_name FROM subjects WHERE id LIKE ?1 ESCAPE '\\'",
        [pattern.as_str()],
        record,
    )?;
    Ok(match prefixed.len() {
        0 => SubjectMatch::NotFound,
        1 => SubjectMatch::Found(prefixed.remove(0)),
        matches => SubjectMatch::Ambiguous { matches },
    })
}

/// `CROSS JOIN` walks the subject's links first and looks each particle up by
/// id. Without statistics SQLite otherwise drives from `ix_particles_status`
/// and probes every ACTIVE row's links: 300 ms a question at 100k against
/// 3 ms, the whole of a subject-filtered query's time (each pair is unique, so
/// the count is the same either way).
const ACTIVE_CLAIM_COUNT: &str = "SELECT count(particles.id) FROM particle_subjects \
     CROSS JOIN particles ON particle_subjects.particle_id = particles.id \
     WHERE particle_subjects.subject_id = ?1 AND particles.status = 'ACTIVE' \
     AND particles.particle_type = 'CLAIM'";

/// The ACTIVE CLAIM particles linked to a subject.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn active_claim_count(store: &Store, subject_id: &str) -> Result<u64> {
    let counts: Vec<i64> = collect_with(
        store,
        "subject claim count",
        ACTIVE_CLAIM_COUNT,
        [subject_id],
        |row| row.get(0),
    )?;
    Ok(counts.first().copied().unwrap_or(0).max(0) as u64)
}

/// The `+` keeps `status` and `particle_type` from choosing an index: without
/// statistics, SQLite otherwise drives a list of a few hundred ids from
/// `ix_particles_status` and reads every ACTIVE row (77 ms a question at 100k
/// against 2 ms, measured).
const ACTIVE_CLAIMS_AMONG: &str = "SELECT id FROM particles WHERE id IN ({ids}) \
     AND +status = 'ACTIVE' AND +particle_type = 'CLAIM'";

/// A subject's [`active_claim_count`] from a loader's half count: the claims
/// it counted among its own rows, and how many of the linked ids it left
/// outside are ACTIVE CLAIM particles in `store`'s snapshot (which must be the
/// one the loader read).
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn settle_subject_claims(store: &Store, counted: &SubjectClaims) -> Result<u64> {
    let outside: Vec<&str> = counted.outside.iter().map(String::as_str).collect();
    Ok(counted.in_set + active_claims_among(store, &outside)?)
}

/// How many of `ids` (distinct) are ACTIVE CLAIM particles.
fn active_claims_among(store: &Store, ids: &[&str]) -> Result<u64> {
    // Padded lists (a few statement texts, each prepared once), so the ids
    // come back and are counted once each rather than trusting `count(*)`
    // over a list that repeats its last id.
    let mut found: Vec<String> = Vec::new();
    let name = "subject claim count";
    for_each_in_chunks(
        store,
        name,
        ids,
        |list| ACTIVE_CLAIMS_AMONG.replace("{ids}", list),
        SqlClock::Untimed,
        |row| {
            found.push(row.get(0).map_err(query_error(name))?);
            Ok(())
        },
    )?;
    found.sort_unstable();
    found.dedup();
    Ok(found.len() as u64)
}

/// Every particle in the `INCONSISTENCY` status (the open conflict records), in
/// rowid order, fully hydrated.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails, [`crate::Error::InvalidRow`] on a
/// malformed record (the reference fails on it too).
pub fn inconsistency_records(store: &Store) -> Result<Vec<Particle>> {
    let sql = format!(
        "SELECT {MODEL_COLUMNS} FROM particles WHERE status = 'INCONSISTENCY' ORDER BY rowid"
    );
    let mut statement = store
        .connection()
        .prepare_cached(&sql)
        .map_err(query_error("inconsistency records"))?;
    let mut rows = statement
        .query([])
        .map_err(query_error("inconsistency records"))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(query_error("inconsistency records"))? {
        out.push(ParticleRow::new(row)?.to_particle()?);
    }
    Ok(out)
}

/// For each of `targets`, the ids of the particles with a `relation_type` edge
/// pointing at it (`particle_a` of rows whose `particle_b` is the target), sorted
/// by code point. Targets without one are absent.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn incoming_relations(
    store: &Store,
    relation_type: &str,
    targets: &[&str],
) -> Result<HashMap<String, Vec<String>>> {
    relation_ends(store, relation_type, targets, Direction::Incoming)
}

/// For each of `sources`, the ids its `relation_type` edges point at
/// (`particle_b` of rows whose `particle_a` is the source), sorted by code point.
/// Sources without one are absent.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn outgoing_relations(
    store: &Store,
    relation_type: &str,
    sources: &[&str],
) -> Result<HashMap<String, Vec<String>>> {
    relation_ends(store, relation_type, sources, Direction::Outgoing)
}

enum Direction {
    Incoming,
    Outgoing,
}

fn relation_ends(
    store: &Store,
    relation_type: &str,
    ids: &[&str],
    direction: Direction,
) -> Result<HashMap<String, Vec<String>>> {
    let unique: Vec<&str> = {
        let mut seen = HashSet::new();
        ids.iter().copied().filter(|id| seen.insert(*id)).collect()
    };
    let (key, other) = match direction {
        Direction::Incoming => ("particle_b", "particle_a"),
        Direction::Outgoing => ("particle_a", "particle_b"),
    };
    let sql = format!(
        "SELECT {key}, {other} FROM particle_relations WHERE relation_type = ? AND {key} IN ({{ids}})"
    );
    let rows: Vec<(String, String)> =
        chunked(store, "relations", &sql, &[relation_type], &unique, |row| {
            Ok((row.get(0)?, row.get(1)?))
        })?;
    let mut ends: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, end) in rows {
        ends.entry(id).or_default().push(end);
    }
    Ok(ends
        .into_iter()
        .map(|(id, mut found)| {
            // Python's `sorted` over str: code-point order, which is Rust's
            // byte order for UTF-8.
            found.sort();
            (id, found)
        })
        .collect())
}

/// The ids among `ids` whose modality an operator pinned
/// (`modality_classifier = 'operator'`), any status.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn operator_pinned_ids(store: &Store, ids: &[&str]) -> Result<HashSet<String>> {
    let found: Vec<String> = chunked(
        store,
        "modality pins",
        "SELECT id FROM particles WHERE modality_classifier = 'operator' AND id IN ({ids})",
        &[],
        ids,
        |row| row.get(0),
    )?;
    Ok(found.into_iter().collect())
}

/// `(source_type, uri_r)` of each named corpus entry that exists.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn entry_source_facts(
    store: &Store,
    entry_ids: &[&str],
) -> Result<HashMap<String, (String, Option<String>)>> {
    if entry_ids.is_empty() || !store.has_table("corpus_entries")? {
        return Ok(HashMap::new());
    }
    match store.source_memo()? {
        Some(mut memo) => crate::memo::read_through(&mut memo.entries, entry_ids, |ids| {
            read_entry_facts(store, ids)
        }),
        None => Ok(read_entry_facts(store, entry_ids)?.into_iter().collect()),
    }
}

/// A corpus entry's half of a source's facts: `source_type` and `uri_r`.
pub(crate) type EntryFacts = (String, Option<String>);

/// [`entry_source_facts`] read from the file: each found entry once (its id is
/// the table's key), in no particular order.
pub(crate) fn read_entry_facts(
    store: &Store,
    entry_ids: &[&str],
) -> Result<Vec<(String, EntryFacts)>> {
    let name = "entry source facts";
    let mut entries = Vec::new();
    crate::chunked::for_each_keyed(
        store,
        name,
        crate::chunked::Keyed {
            table: "corpus_entries",
            key: "entry_id",
            columns: "entry_id, source_type, uri_r",
        },
        entry_ids,
        crate::chunked::SqlClock::Untimed,
        |row| {
            let read = || -> rusqlite::Result<_> { Ok((row.get(0)?, (row.get(1)?, row.get(2)?))) };
            let (entry, facts) = read().map_err(query_error(name))?;
            entries.push((entry, facts));
            Ok(())
        },
    )?;
    Ok(entries)
}

/// The names of the adopted trust lenses in adoption (rowid) order, the order the
/// reference lists a viewer's lenses in.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn adopted_lens_names(store: &Store) -> Result<Vec<String>> {
    if !store.has_table("trust_lens_adoptions")? {
        return Ok(Vec::new());
    }
    // Selecting the name alone would walk the primary-key index (name order).
    collect_with(
        store,
        "lens adoption order",
        "SELECT lens_name FROM trust_lens_adoptions ORDER BY rowid",
        [],
        |row| row.get(0),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A new store with `sql` applied, opened read-only.
    pub(crate) fn store_with(dir: &std::path::Path, sql: &str) -> Store {
        let path = dir.join("store.db");
        let mut writer = crate::create_store(&path).unwrap();
        writer.connection_mut().execute_batch(sql).unwrap();
        drop(writer);
        Store::open_read_only(&path).unwrap()
    }

    /// SQLite's plan for `sql` (`EXPLAIN QUERY PLAN`), one step a line.
    pub(crate) fn plan(store: &Store, sql: &str) -> Vec<String> {
        let mut statement = store
            .connection()
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let nulls = vec![rusqlite::types::Null; statement.parameter_count()];
        statement
            .query_map(rusqlite::params_from_iter(nulls), |row| {
                row.get::<_, String>(3)
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn a_subjects_claims_are_counted_from_its_links() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), "");
        let plan = plan(&store, ACTIVE_CLAIM_COUNT);
        assert_eq!(
            plan,
            [
                "SEARCH particle_subjects USING INDEX ix_particle_subjects_subject_id (subject_id=?)",
                "SEARCH particles USING INDEX sqlite_autoindex_particles_1 (id=?)"
            ]
        );
    }

    #[test]
    fn claims_among_ids_are_looked_up_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), "");
        for n in [1, ID_CHUNK] {
            let sql = ACTIVE_CLAIMS_AMONG.replace("{ids}", &placeholders(n));
            assert_eq!(
                plan(&store, &sql),
                ["SEARCH particles USING INDEX sqlite_autoindex_particles_1 (id=?)"],
                "{n} ids"
            );
        }
    }

    fn snapshot(id: &str, entry: &str, status: &str) -> String {
        format!(
            "INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, \
             warc_record_type, extraction_status, extraction_attempts, resume_whole) \
             VALUES ('{id}', '{entry}', '2024-01-01 00:00:00.000000', 'h', 'RESPONSE', '{status}', 0, 0);"
        )
    }

    #[test]
    fn gaps_list_failed_entries_first_then_pending_each_once() {
        let dir = tempfile::tempdir().unwrap();
        let sql = [
            snapshot("s1", "e-pending", "PENDING"),
            snapshot("s2", "e-both", "PENDING"),
            snapshot("s3", "e-done", "COMPLETE"),
            snapshot("s4", "e-failed", "FAILED"),
            snapshot("s5", "e-both", "FAILED"),
            snapshot("s6", "e-failed", "FAILED"),
        ]
        .concat();
        let store = store_with(dir.path(), &sql);
        assert_eq!(
            coverage_gap_entries(&store).unwrap(),
            ["e-failed", "e-both", "e-pending"]
        );
    }

    #[test]
    fn subjects_resolve_by_id_then_by_unique_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let subject = |id: &str, name: &str| {
            format!(
                "INSERT INTO subjects (id, canonical_name, aliases_json, external_ids_json, \
                 created_at, asserted_by) VALUES ('{id}', '{name}', '[]', '{{}}', \
                 '2024-01-01 00:00:00.000000', 'x');"
            )
        };
        let sql = [
            subject("abc-1", "One"),
            subject("abc-2", "Two"),
            subject("abc", "Exact"),
            subject("x_y", "Underscore"),
        ]
        .concat();
        let store = store_with(dir.path(), &sql);
        let found = |reference| match find_subject(&store, reference).unwrap() {
            SubjectMatch::Found(subject) => Some(subject.canonical_name),
            _ => None,
        };
        assert_eq!(found("abc").as_deref(), Some("Exact"));
        assert_eq!(found("ABC-1").as_deref(), Some("One"));
        assert_eq!(
            find_subject(&store, "abc-").unwrap(),
            SubjectMatch::Ambiguous { matches: 2 }
        );
        // `_` and `%` are literal in the reference's pattern.
        assert_eq!(found("x_").as_deref(), Some("Underscore"));
        assert_eq!(find_subject(&store, "x%").unwrap(), SubjectMatch::NotFound);
        assert_eq!(find_subject(&store, "a_c").unwrap(), SubjectMatch::NotFound);
    }

    #[test]
    fn relation_ends_are_sorted_per_particle() {
        let dir = tempfile::tempdir().unwrap();
        let edge = |a: &str, b: &str, kind: &str| {
            format!(
                "INSERT INTO particle_relations VALUES ('{a}', '{b}', '{kind}', 'x', \
                 '2024-01-01 00:00:00.000000', 1.0);"
            )
        };
        let sql = [
            edge("c", "n", "PART_OF"),
            edge("a", "n", "PART_OF"),
            edge("b", "m", "PART_OF"),
            edge("a", "n", "DISPUTES"),
            edge("a", "c", "SEQUENCE_IN"),
            edge("a", "b", "SEQUENCE_IN"),
        ]
        .concat();
        let store = store_with(dir.path(), &sql);
        let parts = incoming_relations(&store, "PART_OF", &["n", "m", "z"]).unwrap();
        assert_eq!(parts["n"], ["a", "c"]);
        assert_eq!(parts["m"], ["b"]);
        assert!(!parts.contains_key("z"));
        let next = outgoing_relations(&store, "SEQUENCE_IN", &["a"]).unwrap();
        assert_eq!(next["a"], ["b", "c"]);
    }

    #[test]
    fn lenses_come_in_adoption_order() {
        let dir = tempfile::tempdir().unwrap();
        let sql = "INSERT INTO trust_lens_adoptions VALUES ('zeta', '2024-01-01', 'op');\
                   INSERT INTO trust_lens_adoptions VALUES ('alpha', '2024-01-02', 'op');";
        let store = store_with(dir.path(), sql);
        assert_eq!(adopted_lens_names(&store).unwrap(), ["zeta", "alpha"]);
    }
}
