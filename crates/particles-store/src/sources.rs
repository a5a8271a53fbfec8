//! Source facts, premise statuses and co-evidential edges: the lookups a query
//! makes after the candidates are chosen, each in chunks of [`crate::ID_CHUNK`] ids.

use std::{
    collections::{BTreeSet, HashMap, HashSet},
    sync::Arc,
};

use particles_model::{policy::SourceFacts, Status, Timestamp};

use crate::{
    chunked::{for_each_in_chunks, for_each_keyed, Keyed, SqlClock},
    error::{query_error, Error, Result},
    loader::particles_by_ids,
    policy::collect_with,
    Store,
};

/// The snapshot half of a source's facts: `content_published_at` and `author_id`.
pub type SnapshotFacts = (Option<Timestamp>, Option<String>);

/// The source facts of candidates' first `SOURCE` refs, given as `(entry id,
/// snapshot id)`, in the given order. A candidate without one (`None`) gets the
/// default (no date, `""` type, no entry, no URI).
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidValue`] on a malformed
/// `content_published_at`.
pub fn source_facts<'a>(
    store: &Store,
    refs: impl IntoIterator<Item = Option<(&'a str, Option<&'a str>)>>,
) -> Result<Vec<SourceFacts>> {
    let refs: Vec<Option<(&str, Option<&str>)>> = refs.into_iter().collect();
    let snapshot_ids: BTreeSet<&str> = refs
        .iter()
        .flatten()
        .filter_map(|(_, snapshot)| *snapshot)
        .filter(|s| !s.is_empty())
        .collect();
    let entry_ids: BTreeSet<&str> = refs
        .iter()
        .flatten()
        .map(|(entry, _)| *entry)
        .filter(|e| !e.is_empty())
        .collect();
    let snapshots = snapshot_source_facts(store, &snapshot_ids.into_iter().collect::<Vec<_>>())?;
    let entries = crate::entry_source_facts(store, &entry_ids.into_iter().collect::<Vec<_>>())?;
    Ok(refs
        .into_iter()
        .map(|source| {
            let Some((entry_id, snapshot_id)) = source else {
                return SourceFacts::default();
            };
            let snapshot = snapshot_id
                .filter(|s| !s.is_empty())
                .and_then(|s| snapshots.get(s));
            assemble_source_facts(entry_id, entries.get(entry_id), snapshot)
        })
        .collect())
}

/// The source facts of each `(entry id, snapshot id)` ref, as [`source_facts`]
/// gives them, shared: a read-only connection remembers them across queries
/// while the file is unchanged (see `memo.rs`), so a query whose scoring meets
/// tens of thousands of sources reads and assembles each once per file state.
///
/// # Errors
///
/// As [`source_facts`].
pub fn shared_source_facts(
    store: &Store,
    refs: &[(&str, Option<&str>)],
) -> Result<Vec<Arc<SourceFacts>>> {
    let Some(mut memo) = store.source_memo()? else {
        return Ok(source_facts(store, refs.iter().map(|&r| Some(r)))?
            .into_iter()
            .map(Arc::new)
            .collect());
    };
    let mut out: Vec<Option<Arc<SourceFacts>>> = refs
        .iter()
        .map(|&(entry, snapshot)| memo.source(entry, snapshot).cloned())
        .collect();
    let missing: Vec<usize> = (0..refs.len()).filter(|&at| out[at].is_none()).collect();
    if !missing.is_empty() {
        let unseen: Vec<(&str, Option<&str>)> = missing.iter().map(|&at| refs[at]).collect();
        let read = remembered_source_facts(store, &mut memo, &unseen)?;
        for (&at, facts) in missing.iter().zip(read) {
            let facts = Arc::new(facts);
            let (entry, snapshot) = refs[at];
            memo.remember_source(entry, snapshot, Arc::clone(&facts));
            out[at] = Some(facts);
        }
    }
    Ok(out.into_iter().map(Option::unwrap_or_default).collect())
}

/// [`source_facts`] of `refs` through a connection's memo: the snapshots and
/// entries it has not seen are read (one lookup a table) and remembered, the
/// absent ones as `None`, and each ref's facts assembled from what it holds.
/// The memo's rows are read in place, where [`snapshot_source_facts`] would
/// copy each into a map of its own (after another connection's commit, at 1M,
/// tens of thousands of strings copied and hashed twice over).
fn remembered_source_facts(
    store: &Store,
    memo: &mut crate::memo::SourceMemo,
    refs: &[(&str, Option<&str>)],
) -> Result<Vec<SourceFacts>> {
    let snapshot_ids = crate::memo::unseen(
        &memo.snapshots,
        refs.iter().filter_map(|r| r.1).filter(|s| !s.is_empty()),
    );
    if !snapshot_ids.is_empty() && store.has_table("snapshots")? {
        crate::memo::remember_read(&mut memo.snapshots, &snapshot_ids, |ids| {
            read_snapshot_facts(store, ids)
        })?;
    }
    let entry_ids = crate::memo::unseen(
        &memo.entries,
        refs.iter().map(|r| r.0).filter(|e| !e.is_empty()),
    );
    if !entry_ids.is_empty() && store.has_table("corpus_entries")? {
        crate::memo::remember_read(&mut memo.entries, &entry_ids, |ids| {
            crate::response::read_entry_facts(store, ids)
        })?;
    }
    Ok(refs
        .iter()
        .map(|&(entry_id, snapshot_id)| {
            let snapshot = snapshot_id
                .filter(|s| !s.is_empty())
                .and_then(|s| memo.snapshots.get(s)?.as_ref());
            let entry = memo.entries.get(entry_id).and_then(Option::as_ref);
            assemble_source_facts(entry_id, entry, snapshot)
        })
        .collect())
}

/// [`shared_source_facts`] for refs a caller numbers densely: `wanted` pairs each
/// ref with its slot in numbering `owner` (a candidate set's source index, whose
/// id names it; slots below `count`). The connection's memo also remembers the
/// facts by slot, so the next query over the same numbering reads them from an
/// array instead of hashing each ref's strings (at 1M rows, ~31k sources per
/// truncation band: 16-30 ms by hash, measured on an Intel Xeon, 2 cores). The
/// facts are those of the caller's snapshot, as [`shared_source_facts`]'s.
///
/// # Errors
///
/// As [`shared_source_facts`].
pub fn shared_source_facts_by_slot(
    store: &Store,
    owner: u64,
    count: usize,
    wanted: &[(u32, (&str, Option<&str>))],
) -> Result<Vec<Arc<SourceFacts>>> {
    let remembered: Option<Vec<Option<Arc<SourceFacts>>>> = store.source_memo()?.map(|mut memo| {
        let slots = memo.slots(owner, count);
        wanted
            .iter()
            .map(|&(slot, _)| slots.get(slot as usize).cloned().flatten())
            .collect()
    });
    let Some(mut out) = remembered else {
        let refs: Vec<(&str, Option<&str>)> = wanted.iter().map(|&(_, r)| r).collect();
        return shared_source_facts(store, &refs);
    };
    let missing: Vec<usize> = (0..wanted.len()).filter(|&at| out[at].is_none()).collect();
    if !missing.is_empty() {
        let refs: Vec<(&str, Option<&str>)> = missing.iter().map(|&at| wanted[at].1).collect();
        let read = shared_source_facts(store, &refs)?;
        if let Some(mut memo) = store.source_memo()? {
            let slots = memo.slots(owner, count);
            for (&at, facts) in missing.iter().zip(&read) {
                if let Some(slot) = slots.get_mut(wanted[at].0 as usize) {
                    *slot = Some(Arc::clone(facts));
                }
            }
        }
        for (&at, facts) in missing.iter().zip(read) {
            out[at] = Some(facts);
        }
    }
    Ok(out.into_iter().map(Option::unwrap_or_default).collect())
}

/// One candidate's source facts from its entry id and what the entry and snapshot
/// lookups found (`None`: no such row, or no snapshot named).
pub fn assemble_source_facts(
    entry_id: &str,
    entry: Option<&(String, Option<String>)>,
    snapshot: Option<&SnapshotFacts>,
) -> SourceFacts {
    let (published_at, author_id) = snapshot.cloned().unwrap_or_default();
    let (source_type, uri) = entry.cloned().unwrap_or_default();
    SourceFacts {
        published_at,
        source_type,
        entry_id: Some(entry_id.to_owned()),
        uri,
        author_id,
    }
}

/// `(content_published_at, author_id)` of each named snapshot that exists.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidValue`] on a malformed
/// `content_published_at`.
pub fn snapshot_source_facts(
    store: &Store,
    snapshot_ids: &[&str],
) -> Result<HashMap<String, SnapshotFacts>> {
    if snapshot_ids.is_empty() || !store.has_table("snapshots")? {
        return Ok(HashMap::new());
    }
    match store.source_memo()? {
        Some(mut memo) => crate::memo::read_through(&mut memo.snapshots, snapshot_ids, |ids| {
            read_snapshot_facts(store, ids)
        }),
        None => Ok(read_snapshot_facts(store, snapshot_ids)?
            .into_iter()
            .collect()),
    }
}

/// [`snapshot_source_facts`] read from the file: each found snapshot once (its
/// id is the table's key), in no particular order.
fn read_snapshot_facts(
    store: &Store,
    snapshot_ids: &[&str],
) -> Result<Vec<(String, SnapshotFacts)>> {
    let mut snapshots = Vec::new();
    let name = "snapshot source facts";
    for_each_keyed(
        store,
        name,
        Keyed {
            table: "snapshots",
            key: "snapshot_id",
            columns: "snapshot_id, content_published_at, author_id",
        },
        snapshot_ids,
        SqlClock::Untimed,
        |row| {
            let snapshot_id: String = row.get(0).map_err(query_error(name))?;
            let published: Option<String> = row.get(1).map_err(query_error(name))?;
            let author: Option<String> = row.get(2).map_err(query_error(name))?;
            let published = match published {
                None => None,
                Some(text) => Some(Timestamp::parse(&text).map_err(|e| Error::InvalidValue {
                    table: "snapshots",
                    key: snapshot_id.clone(),
                    column: "content_published_at",
                    reason: e.to_string(),
                })?),
            };
            snapshots.push((snapshot_id, (published, author)));
            Ok(())
        },
    )?;
    Ok(snapshots)
}

/// The status of each named premise particle (fetched by id, any status, fully
/// hydrated as the reference does). A premise absent from the map does not exist.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidRow`] on a malformed premise.
pub fn premise_statuses<'a>(
    store: &Store,
    premise_ids: impl IntoIterator<Item = &'a str>,
) -> Result<HashMap<String, Status>> {
    let premises: BTreeSet<&str> = premise_ids.into_iter().collect();
    if premises.is_empty() {
        return Ok(HashMap::new());
    }
    let ids: Vec<&str> = premises.into_iter().collect();
    Ok(particles_by_ids(store, &ids)?
        .into_iter()
        .map(|p| (p.id, p.status))
        .collect())
}

/// The CO_EVIDENTIAL edges touching `id`, as `(other endpoint, confidence)`, in
/// either direction and whatever the endpoints' status.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn co_evidential_edges(store: &Store, id: &str) -> Result<Vec<(String, f64)>> {
    collect_with(
        store,
        "co-evidential edges",
        "SELECT particle_a, particle_b, confidence FROM particle_relations \
         WHERE (particle_a = ?1 OR particle_b = ?1) AND relation_type = 'CO_EVIDENTIAL'",
        [id],
        |row| {
            let a: String = row.get(0)?;
            let b: String = row.get(1)?;
            let other = if a == id { b } else { a };
            Ok((other, row.get(2)?))
        },
    )
}

/// [`co_evidential_edges`] of each of `ids` at once (every id has an entry, empty
/// without edges): two chunked statements instead of one per id, for the
/// collapse of a whole top k. An edge between two of `ids` is listed under both,
/// each time with the other end; the closure the collapse takes is a set, so the
/// order within a list does not matter.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn co_evidential_edges_of(
    store: &Store,
    ids: &[&str],
) -> Result<HashMap<String, Vec<(String, f64)>>> {
    let mut edges: HashMap<String, Vec<(String, f64)>> =
        ids.iter().map(|&id| (id.to_owned(), Vec::new())).collect();
    let unique: Vec<&str> = ids
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    for (this, other) in [("particle_a", "particle_b"), ("particle_b", "particle_a")] {
        let name = "co-evidential edges";
        for_each_in_chunks(
            store,
            name,
            &unique,
            |list| {
                format!(
                    "SELECT {this}, {other}, confidence FROM particle_relations \
                     WHERE {this} IN ({list}) AND relation_type = 'CO_EVIDENTIAL'"
                )
            },
            SqlClock::Untimed,
            |row| {
                let end: String = row.get(0).map_err(query_error(name))?;
                let far: String = row.get(1).map_err(query_error(name))?;
                let confidence: f64 = row.get(2).map_err(query_error(name))?;
                // A self-loop is met by both statements: list it once.
                if this == "particle_b" && end == far {
                    return Ok(());
                }
                if let Some(list) = edges.get_mut(&end) {
                    list.push((far, confidence));
                }
                Ok(())
            },
        )?;
    }
    Ok(edges)
}

/// Whether any particle (of any status) links to the subject, or the `subjects` table
/// names it. The reference answers an unknown subject with no hits and no error; the
/// CLI uses this to warn.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn subject_is_known(store: &Store, subject_id: &str) -> Result<bool> {
    let linked: Vec<bool> = collect_with(
        store,
        "subject links",
        "SELECT EXISTS(SELECT 1 FROM particle_subjects WHERE subject_id = ?1)",
        [subject_id],
        |row| row.get(0),
    )?;
    if linked.first().copied().unwrap_or(false) {
        return Ok(true);
    }
    if !store.has_table("subjects")? {
        return Ok(false);
    }
    let named: Vec<bool> = collect_with(
        store,
        "subjects",
        "SELECT EXISTS(SELECT 1 FROM subjects WHERE id = ?1)",
        [subject_id],
        |row| row.get(0),
    )?;
    Ok(named.first().copied().unwrap_or(false))
}

/// The ids of the particles (any status) linked to a subject, in id order.
/// A loader's statement (a cache's subject selection): its time counts as the
/// loader's SQL time ([`crate::LoadCounters::sql_seconds`]), not as decoding.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn subject_particle_ids(store: &Store, subject_id: &str) -> Result<Vec<String>> {
    crate::profile::sql(|| {
        collect_with(
            store,
            "subject links",
            "SELECT particle_id FROM particle_subjects WHERE subject_id = ?1 ORDER BY particle_id",
            [subject_id],
            |row| row.get(0),
        )
    })
}

/// The reference's tag expansion: each requested tag with its whole subtree across
/// every taxonomy (children found through `tag_nodes.parent`, level by level) and,
/// with `include_ancestors`, the bare parent chain of each requested tag.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn expand_tags(
    store: &Store,
    requested: &[String],
    include_ancestors: bool,
) -> Result<BTreeSet<String>> {
    let mut expanded: BTreeSet<String> = requested.iter().cloned().collect();
    if !store.has_table("tag_nodes")? {
        return Ok(expanded);
    }
    let mut frontier: Vec<String> = expanded.iter().cloned().collect();
    while !frontier.is_empty() {
        let mut next = Vec::new();
        let name = "tag children";
        for_each_in_chunks(
            store,
            name,
            &frontier,
            |list| format!("SELECT tag FROM tag_nodes WHERE parent IN ({list})"),
            SqlClock::Untimed,
            |row| {
                let tag: String = row.get(0).map_err(query_error(name))?;
                if expanded.insert(tag.clone()) {
                    next.push(tag);
                }
                Ok(())
            },
        )?;
        frontier = next;
    }
    if include_ancestors {
        let mut frontier: Vec<String> = requested.to_vec();
        while !frontier.is_empty() {
            let mut next = Vec::new();
            let name = "tag parents";
            for_each_in_chunks(
                store,
                name,
                &frontier,
                |list| {
                    format!(
                        "SELECT parent FROM tag_nodes WHERE tag IN ({list}) AND parent IS NOT NULL"
                    )
                },
                SqlClock::Untimed,
                |row| {
                    let parent: String = row.get(0).map_err(query_error(name))?;
                    if !parent.is_empty() && expanded.insert(parent.clone()) {
                        next.push(parent);
                    }
                    Ok(())
                },
            )?;
            frontier = next;
        }
    }
    Ok(expanded)
}

/// The ids of particles (any status) carrying at least one of `tags`.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn particle_ids_for_tags(store: &Store, tags: &BTreeSet<String>) -> Result<HashSet<String>> {
    let mut ids = HashSet::new();
    if !store.has_table("particle_tag_edges")? {
        return Ok(ids);
    }
    let tags: Vec<&String> = tags.iter().collect();
    let name = "tagged particles";
    for_each_in_chunks(
        store,
        name,
        &tags,
        |list| format!("SELECT particle_id FROM particle_tag_edges WHERE tag IN ({list})"),
        SqlClock::Untimed,
        |row| {
            ids.insert(row.get(0).map_err(query_error(name))?);
            Ok(())
        },
    )?;
    Ok(ids)
}

/// Whether a tag is defined in any taxonomy or carried by any particle.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn tag_is_known(store: &Store, tag: &str) -> Result<bool> {
    for (table, sql) in [
        (
            "tag_nodes",
            "SELECT EXISTS(SELECT 1 FROM tag_nodes WHERE tag = ?1)",
        ),
        (
            "particle_tag_edges",
            "SELECT EXISTS(SELECT 1 FROM particle_tag_edges WHERE tag = ?1)",
        ),
    ] {
        if store.has_table(table)? {
            let found: Vec<bool> = collect_with(store, "tag probe", sql, [tag], |row| row.get(0))?;
            if found.first().copied().unwrap_or(false) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// `(ACTIVE particles, ACTIVE particles with a structured claim)`, store-wide: the
/// denominators of the claim-coverage report.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn claim_coverage_counts(store: &Store) -> Result<(u64, u64)> {
    let counts: Vec<(i64, i64)> = collect_with(
        store,
        "claim coverage",
        "SELECT count(*), count(structured_claim_json) FROM particles WHERE status = 'ACTIVE'",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    let (active, annotated) = counts.first().copied().unwrap_or((0, 0));
    Ok((active.max(0) as u64, annotated.max(0) as u64))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::Store;

    /// The batched edges are the per-id edges, as sets, for ids with edges,
    /// ids without, a repeated id and one that is no particle; a self-loop is
    /// listed once.
    #[test]
    fn edges_of_many_ids_equal_the_edges_of_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        std::fs::copy(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/stores/coins-a.db"),
            &path,
        )
        .unwrap();
        let mut ids: Vec<String> = {
            let connection = rusqlite::Connection::open(&path).unwrap();
            connection
                .execute(
                    "INSERT INTO particle_relations \
                     (particle_a, particle_b, relation_type, created_by, created_at, confidence) \
                     SELECT particle_a, particle_a, 'CO_EVIDENTIAL', 'test', created_at, 1.0 \
                     FROM particle_relations WHERE relation_type = 'CO_EVIDENTIAL' LIMIT 1",
                    [],
                )
                .unwrap();
            let mut statement = connection
                .prepare("SELECT id FROM particles ORDER BY rowid")
                .unwrap();
            let ids = statement
                .query_map([], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            ids
        };
        ids.push(ids[0].clone());
        ids.push("no-such-particle".to_owned());
        let store = Store::open_read_only(&path).unwrap();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let many = super::co_evidential_edges_of(&store, &ids).unwrap();
        let bits = |edges: &[(String, f64)]| -> Vec<(String, u64)> {
            let mut out: Vec<(String, u64)> = edges
                .iter()
                .map(|(other, confidence)| (other.clone(), confidence.to_bits()))
                .collect();
            out.sort();
            out
        };
        let mut with_edges = 0;
        let mut self_loops = 0;
        for &id in &ids {
            let one = super::co_evidential_edges(&store, id).unwrap();
            with_edges += usize::from(!one.is_empty());
            self_loops += one.iter().filter(|(other, _)| other == id).count();
            assert_eq!(bits(&many[id]), bits(&one), "{id}");
        }
        assert!(with_edges >= 4, "the fixture has co-evidential particles");
        assert!(self_loops >= 1, "the self-loop was met");
    }
}
