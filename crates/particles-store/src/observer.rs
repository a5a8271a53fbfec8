//! The store half of the project observer (the reference's
//! `store/observer_scope_join.py`): the rescoping marker, operator widenings, the
//! co-evidential components, provenance refs read from the rows, and each corpus
//! entry's tags, mutability and current generation. The set algebra over them
//! lives in `particles-query`. Every `IN (...)` list is cut at [`ID_CHUNK`] ids.

use std::collections::{BTreeSet, HashMap, HashSet};

use particles_model::Timestamp;
use serde_json::Value;

use crate::{
    chunked::{placeholders, ID_CHUNK},
    error::{Error, Result},
    policy::collect_with,
    Store,
};

/// Whether the store was rescoped (an `OBSERVER_SCOPE_RESCOPED` operator event
/// exists): only then does a project observer filter anything.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn observer_scope_rescoped(store: &Store) -> Result<bool> {
    if !store.has_table("operator_events")? {
        return Ok(false);
    }
    let found: Vec<String> = collect_with(
        store,
        "rescope marker",
        "SELECT event_id FROM operator_events WHERE event_type = 'OBSERVER_SCOPE_RESCOPED' LIMIT 1",
        [],
        |row| row.get(0),
    )?;
    Ok(!found.is_empty())
}

/// What an operator widening targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WideningTarget {
    /// One particle.
    Particle,
    /// Every claim a corpus entry attests.
    CorpusEntry,
}

impl WideningTarget {
    fn as_str(self) -> &'static str {
        match self {
            WideningTarget::Particle => "particle",
            WideningTarget::CorpusEntry => "corpus_entry",
        }
    }
}

/// Whether the store holds any widening statement at all.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn any_widening(store: &Store) -> Result<bool> {
    if !store.has_table("observer_scope_statements")? {
        return Ok(false);
    }
    let found: Vec<String> = collect_with(
        store,
        "widenings",
        "SELECT target_id FROM observer_scope_statements LIMIT 1",
        [],
        |row| row.get(0),
    )?;
    Ok(!found.is_empty())
}

/// The ids among `ids` an operator widened to every project.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn widened_ids(store: &Store, target: WideningTarget, ids: &[&str]) -> Result<HashSet<String>> {
    let mut found = HashSet::new();
    if ids.is_empty() || !store.has_table("observer_scope_statements")? {
        return Ok(found);
    }
    for chunk in ids.chunks(ID_CHUNK) {
        let sql = format!(
            "SELECT target_id FROM observer_scope_statements WHERE target_kind = ? AND target_id IN ({})",
            placeholders(chunk.len())
        );
        let params = std::iter::once(target.as_str()).chain(chunk.iter().copied());
        let rows: Vec<String> = collect_with(
            store,
            "widened ids",
            &sql,
            rusqlite::params_from_iter(params),
            |row| row.get(0),
        )?;
        found.extend(rows);
    }
    Ok(found)
}

/// The CO_EVIDENTIAL neighbours of every particle reachable from `ids` over such
/// edges, whatever their confidence and the endpoints' status, found breadth first
/// a batch at a time. Ids without an edge are absent.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails.
pub fn co_evidential_neighbours(
    store: &Store,
    ids: &[&str],
) -> Result<HashMap<String, BTreeSet<String>>> {
    let mut neighbours: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut expanded: HashSet<String> = HashSet::new();
    let mut frontier: BTreeSet<String> = ids.iter().map(|id| (*id).to_owned()).collect();
    while !frontier.is_empty() {
        expanded.extend(frontier.iter().cloned());
        let batch: Vec<&str> = frontier.iter().map(String::as_str).collect();
        let mut found = BTreeSet::new();
        for chunk in batch.chunks(ID_CHUNK) {
            let marks = placeholders(chunk.len());
            let sql = format!(
                "SELECT particle_a, particle_b FROM particle_relations \
                 WHERE relation_type = 'CO_EVIDENTIAL' AND (particle_a IN ({marks}) OR particle_b IN ({marks}))"
            );
            let params = chunk.iter().chain(chunk.iter());
            let rows: Vec<(String, String)> = collect_with(
                store,
                "co-evidential components",
                &sql,
                rusqlite::params_from_iter(params),
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            for (a, b) in rows {
                neighbours.entry(a.clone()).or_default().insert(b.clone());
                neighbours.entry(b.clone()).or_default().insert(a.clone());
                found.insert(a);
                found.insert(b);
            }
        }
        frontier = found
            .into_iter()
            .filter(|id| !expanded.contains(id))
            .collect();
    }
    Ok(neighbours)
}

/// One provenance ref as stored in `provenance_json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRef {
    /// The ref's `type` (`SOURCE`, `PARTICLE`, `AGENT`, ...).
    pub ref_type: String,
    /// Its `corpus_entry_id` (a premise id for a `PARTICLE` ref); empty when absent.
    pub corpus_entry_id: String,
    /// Its `snapshot_id`.
    pub snapshot_id: Option<String>,
}

/// The provenance refs of each named particle that exists, read from its row
/// (any status), in stored order.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails, [`crate::Error::InvalidValue`] when
/// `provenance_json` is not a JSON list of objects (the reference fails on it too).
pub fn stored_provenance(store: &Store, ids: &[&str]) -> Result<HashMap<String, Vec<StoredRef>>> {
    let mut out = HashMap::new();
    for chunk in ids.chunks(ID_CHUNK) {
        let sql = format!(
            "SELECT id, provenance_json FROM particles WHERE id IN ({})",
            placeholders(chunk.len())
        );
        let rows: Vec<(String, Option<String>)> = collect_with(
            store,
            "provenance refs",
            &sql,
            rusqlite::params_from_iter(chunk.iter()),
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        for (id, json) in rows {
            let refs = parse_refs(&id, json.as_deref().unwrap_or("[]"))?;
            out.insert(id, refs);
        }
    }
    Ok(out)
}

fn parse_refs(id: &str, json: &str) -> Result<Vec<StoredRef>> {
    let invalid = |reason: String| Error::InvalidValue {
        table: "particles",
        key: id.to_owned(),
        column: "provenance_json",
        reason,
    };
    let value: Value = serde_json::from_str(json).map_err(|e| invalid(e.to_string()))?;
    let Value::Array(items) = value else {
        return Err(invalid("not a JSON list".into()));
    };
    items
        .into_iter()
        .map(|item| {
            let Value::Object(fields) = item else {
                return Err(invalid("a ref is not a JSON object".into()));
            };
            let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_owned);
            Ok(StoredRef {
                ref_type: text("type").unwrap_or_default(),
                corpus_entry_id: text("corpus_entry_id").unwrap_or_default(),
                snapshot_id: text("snapshot_id"),
            })
        })
        .collect()
}

/// What the observer needs to know about one attesting corpus entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryCurrency {
    /// The entry's tags (`project:<key>` among them).
    pub tags: Vec<String>,
    /// Whether the entry is `MUTABLE` (only those have generations).
    pub mutable: bool,
    /// For a mutable entry: its current generation, the latest processed,
    /// uncollapsed `RESPONSE` or `ABSENT` record (captured at or before the as-of
    /// instant), if any.
    pub latest_snapshot_id: Option<String>,
    /// Whether that current generation is an `ABSENT` record.
    pub absent: bool,
}

/// Tags, mutability and current generation of each named entry that exists (the
/// reference's `get_entry_currency`).
///
/// With `as_of`, only records captured at or before it count. The bound compares
/// the stored text with the instant's wall-clock fields, offset dropped, because
/// that is how the reference's SQLAlchemy binds a datetime for SQLite.
///
/// # Errors
///
/// [`crate::Error::Query`] when SQLite fails, [`crate::Error::InvalidValue`] for
/// tags that are not a JSON list of strings or a capture instant that does not
/// parse.
pub fn entry_currency(
    store: &Store,
    entry_ids: &[&str],
    as_of: Option<Timestamp>,
) -> Result<HashMap<String, EntryCurrency>> {
    let mut base: Vec<(String, Vec<String>, bool)> = Vec::new();
    if entry_ids.is_empty() || !store.has_table("corpus_entries")? {
        return Ok(HashMap::new());
    }
    for chunk in entry_ids.chunks(ID_CHUNK) {
        let sql = format!(
            "SELECT entry_id, tags_json, mutability FROM corpus_entries WHERE entry_id IN ({})",
            placeholders(chunk.len())
        );
        let rows: Vec<(String, Option<String>, Option<String>)> = collect_with(
            store,
            "entry currency",
            &sql,
            rusqlite::params_from_iter(chunk.iter()),
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )?;
        for (entry_id, tags, mutability) in rows {
            let tags: Vec<String> =
                serde_json::from_str(tags.as_deref().unwrap_or("[]")).map_err(|e| {
                    Error::InvalidValue {
                        table: "corpus_entries",
                        key: entry_id.clone(),
                        column: "tags_json",
                        reason: e.to_string(),
                    }
                })?;
            base.push((entry_id, tags, mutability.as_deref() == Some("MUTABLE")));
        }
    }
    let mutable: Vec<&str> = base
        .iter()
        .filter(|(_, _, mutable)| *mutable)
        .map(|(entry, _, _)| entry.as_str())
        .collect();
    let bound = as_of.map(|at| at.to_store_text());
    let mut latest: HashMap<String, (Timestamp, String, bool)> = HashMap::new();
    for chunk in mutable.chunks(ID_CHUNK) {
        let mut sql = format!(
            "SELECT entry_id, snapshot_id, captured_at, warc_record_type FROM snapshots \
             WHERE entry_id IN ({}) AND extraction_status = 'COMPLETE' \
             AND warc_record_type IN ('RESPONSE', 'ABSENT') AND superseded_by_snapshot_id IS NULL",
            placeholders(chunk.len())
        );
        if bound.is_some() {
            sql.push_str(" AND captured_at <= ?");
        }
        // The reference walks the (entry_id, extraction_status) index: entries in
        // order, each entry's rows in rowid order; among equal capture instants the
        // first row stays.
        sql.push_str(" ORDER BY entry_id, rowid");
        let params = chunk.iter().copied().chain(bound.as_deref());
        let rows: Vec<(String, String, String, String)> = collect_with(
            store,
            "entry generations",
            &sql,
            rusqlite::params_from_iter(params),
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )?;
        for (entry_id, snapshot_id, captured_at, record_type) in rows {
            let captured = Timestamp::parse(&captured_at).map_err(|e| Error::InvalidValue {
                table: "snapshots",
                key: snapshot_id.clone(),
                column: "captured_at",
                reason: e.to_string(),
            })?;
            let newer = latest
                .get(&entry_id)
                .is_none_or(|(held, _, _)| captured.utc_micros() > held.utc_micros());
            if newer {
                latest.insert(entry_id, (captured, snapshot_id, record_type == "ABSENT"));
            }
        }
    }
    Ok(base
        .into_iter()
        .map(|(entry_id, tags, mutable)| {
            let (latest_snapshot_id, absent) = match latest.remove(&entry_id) {
                Some((_, snapshot, absent)) => (Some(snapshot), absent),
                None => (None, false),
            };
            let currency = EntryCurrency {
                tags,
                mutable,
                latest_snapshot_id,
                absent,
            };
            (entry_id, currency)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::store_with;

    fn entry(id: &str, tags: &str, mutability: &str) -> String {
        format!(
            "INSERT INTO corpus_entries (entry_id, source_type, mutability, fetch_policy, \
             created_at, deposited_by, tags_json) VALUES ('{id}', 'WEB_PAGE', '{mutability}', \
             'NEVER', '2024-01-01 00:00:00.000000', 'x', '{tags}');"
        )
    }

    fn snapshot(id: &str, entry: &str, at: &str, kind: &str, extra: &str) -> String {
        format!(
            "INSERT INTO snapshots (snapshot_id, entry_id, captured_at, content_hash, \
             warc_record_type, extraction_status, extraction_attempts, resume_whole, \
             superseded_by_snapshot_id) VALUES ('{id}', '{entry}', '{at}', 'h', '{kind}', \
             'COMPLETE', 1, 0, {extra});"
        )
    }

    #[test]
    fn the_current_generation_is_the_latest_uncollapsed_record_at_the_instant() {
        let dir = tempfile::tempdir().unwrap();
        let sql = [
            entry("m", r#"["project:a"]"#, "MUTABLE"),
            entry("s", "[]", "STABLE"),
            entry("gone", "[]", "MUTABLE"),
            snapshot("m1", "m", "2024-01-01 00:00:00.000000", "RESPONSE", "NULL"),
            snapshot("m2", "m", "2024-06-01 00:00:00.000000", "RESPONSE", "NULL"),
            snapshot("m3", "m", "2024-09-01 00:00:00.000000", "RESPONSE", "'m9'"),
            snapshot("s1", "s", "2025-01-01 00:00:00.000000", "RESPONSE", "NULL"),
            snapshot(
                "g1",
                "gone",
                "2024-01-01 00:00:00.000000",
                "RESPONSE",
                "NULL",
            ),
            snapshot("g2", "gone", "2024-02-01 00:00:00.000000", "ABSENT", "NULL"),
        ]
        .concat();
        let store = store_with(dir.path(), &sql);
        let now = entry_currency(&store, &["m", "s", "gone", "missing"], None).unwrap();
        assert_eq!(now.len(), 3);
        assert_eq!(now["m"].latest_snapshot_id.as_deref(), Some("m2"));
        assert_eq!(now["m"].tags, ["project:a"]);
        assert!(now["m"].mutable && !now["s"].mutable);
        assert_eq!(now["s"].latest_snapshot_id, None);
        assert!(now["gone"].absent);
        // The bound reads the instant's wall clock, as SQLAlchemy binds it.
        let at = Timestamp::parse("2024-03-01T00:00:00+05:00").unwrap();
        let then = entry_currency(&store, &["m", "gone"], Some(at)).unwrap();
        assert_eq!(then["m"].latest_snapshot_id.as_deref(), Some("m1"));
        assert!(then["gone"].absent);
    }

    #[test]
    fn components_widenings_and_the_rescope_marker() {
        let dir = tempfile::tempdir().unwrap();
        let edge = |a: &str, b: &str, kind: &str| {
            format!(
                "INSERT INTO particle_relations VALUES ('{a}', '{b}', '{kind}', 'x', \
                 '2024-01-01 00:00:00.000000', -1.0);"
            )
        };
        let sql = [
            edge("a", "b", "CO_EVIDENTIAL"),
            edge("c", "b", "CO_EVIDENTIAL"),
            edge("c", "d", "PART_OF"),
            "INSERT INTO observer_scope_statements VALUES ('particle', 'a', '2024-01-01', 'op');"
                .to_owned(),
        ]
        .concat();
        let store = store_with(dir.path(), &sql);
        let neighbours = co_evidential_neighbours(&store, &["a"]).unwrap();
        let reach: BTreeSet<&str> = neighbours.keys().map(String::as_str).collect();
        assert_eq!(reach, BTreeSet::from(["a", "b", "c"]));
        assert!(any_widening(&store).unwrap());
        assert_eq!(
            widened_ids(&store, WideningTarget::Particle, &["a", "b"]).unwrap(),
            HashSet::from(["a".to_owned()])
        );
        assert!(widened_ids(&store, WideningTarget::CorpusEntry, &["a"])
            .unwrap()
            .is_empty());
        assert!(!observer_scope_rescoped(&store).unwrap());
    }

    #[test]
    fn provenance_is_read_from_the_row() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with(dir.path(), "");
        assert!(stored_provenance(&store, &["nothing"]).unwrap().is_empty());
        let refs = parse_refs(
            "p",
            r#"[{"type": "SOURCE", "corpus_entry_id": "e", "snapshot_id": "s"},
                {"type": "PARTICLE", "corpus_entry_id": "q"}]"#,
        )
        .unwrap();
        assert_eq!(refs[0].snapshot_id.as_deref(), Some("s"));
        assert_eq!(refs[1].ref_type, "PARTICLE");
        assert!(parse_refs("p", "{}").is_err());
    }
}
