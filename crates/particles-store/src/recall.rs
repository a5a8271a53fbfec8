//! The reads of the recall surfaces (the session digest and the recall lifts):
//! every ACTIVE particle, the use events, the owner lens's subjects, the
//! recorded LLM spend and the sources the extraction model declined.
//!
//! A store written by an engine older than one of these tables reads as having
//! none of its rows (the reference would fail the whole digest there).

use std::collections::{HashMap, HashSet};

use particles_model::{Particle, Timestamp};

use crate::{
    error::{query_error, Error, Result},
    policy::collect_with,
    row::{ParticleRow, MODEL_COLUMNS},
    Store,
};

/// Every particle with `status`, hydrated but for its embedding, in rowid order
/// (the reference's `get_particles_by_status`).
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidRow`] on a row that does
/// not hydrate (the reference fails on it too).
pub fn particles_with_status(store: &Store, status: &str) -> Result<Vec<Particle>> {
    particles_where(store, "status = ?1", &[status])
}

/// One use event of a belief: when it was observed and its channel (`mined`,
/// `explicit`, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct UseEvent {
    /// `observed_at` (a naive value is UTC).
    pub observed_at: Timestamp,
    /// `source`.
    pub source: String,
}

/// The use events of the particles in `ids`, each particle's in rowid order
/// (the order SQLite hands the reference's unordered select back in, through
/// either of the table's particle indexes).
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidValue`] for an
/// `observed_at` Python's `fromisoformat` would refuse.
pub fn use_events(store: &Store, ids: &HashSet<&str>) -> Result<HashMap<String, Vec<UseEvent>>> {
    let mut out: HashMap<String, Vec<UseEvent>> = HashMap::new();
    if ids.is_empty() || !store.has_table("utility_events")? {
        return Ok(out);
    }
    let rows: Vec<(String, String, String)> = collect_with(
        store,
        "utility events",
        "SELECT particle_id, CAST(observed_at AS TEXT), source FROM utility_events ORDER BY rowid",
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?;
    for (particle_id, observed_at, source) in rows {
        if !ids.contains(particle_id.as_str()) {
            continue;
        }
        let observed_at = Timestamp::parse(&observed_at).map_err(|e| Error::InvalidValue {
            table: "utility_events",
            key: particle_id.clone(),
            column: "observed_at",
            reason: e.to_string(),
        })?;
        out.entry(particle_id).or_default().push(UseEvent {
            observed_at,
            source,
        });
    }
    Ok(out)
}

/// Every subject's canonical name by id.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn subject_names(store: &Store) -> Result<HashMap<String, String>> {
    if !store.has_table("subjects")? {
        return Ok(HashMap::new());
    }
    let rows: Vec<(String, String)> = collect_with(
        store,
        "subject names",
        "SELECT id, canonical_name FROM subjects",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    Ok(rows.into_iter().collect())
}

/// The subject a name names, as the reference's `find_by_name`: the earliest
/// created subject whose canonical name, lowered by SQLite (ASCII only), equals
/// `lowered` (the name lowered by Python), else the earliest with that alias key.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn subject_by_name(store: &Store, lowered: &str) -> Result<Option<String>> {
    if !store.has_table("subjects")? {
        return Ok(None);
    }
    let by_name: Vec<String> = collect_with(
        store,
        "subject by name",
        "SELECT id FROM subjects WHERE lower(canonical_name) = ?1 ORDER BY created_at, id LIMIT 1",
        [lowered],
        |row| row.get(0),
    )?;
    if let Some(id) = by_name.into_iter().next() {
        return Ok(Some(id));
    }
    if !store.has_table("subject_aliases")? {
        return Ok(None);
    }
    let by_alias: Vec<String> = collect_with(
        store,
        "subject by alias",
        "SELECT subjects.id FROM subjects JOIN subject_aliases \
         ON subject_aliases.subject_id = subjects.id WHERE subject_aliases.alias_key = ?1 \
         ORDER BY subjects.created_at, subjects.id LIMIT 1",
        [lowered],
        |row| row.get(0),
    )?;
    Ok(by_alias.into_iter().next())
}

/// One consolidation or extraction run's operator event: when it occurred and
/// its JSON payload (the LLM usage it recorded).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    /// `occurred_at`, as stored.
    pub occurred_at: String,
    /// `payload`, as stored.
    pub payload: Option<String>,
}

/// The `CONSOLIDATION_RUN` and `EXTRACT_RUN` operator events, in rowid order.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn run_events(store: &Store) -> Result<Vec<RunEvent>> {
    if !store.has_table("operator_events")? {
        return Ok(Vec::new());
    }
    collect_with(
        store,
        "run events",
        "SELECT CAST(occurred_at AS TEXT), CAST(payload AS TEXT) FROM operator_events \
         WHERE event_type IN ('CONSOLIDATION_RUN', 'EXTRACT_RUN') ORDER BY rowid",
        [],
        |row| {
            Ok(RunEvent {
                occurred_at: row.get(0)?,
                payload: row.get(1)?,
            })
        },
    )
}

/// The corpus tags (`tags_json`, as stored) of each snapshot held back from
/// extraction: a `PENDING` snapshot of an entry that is not append-only, whose
/// content the extraction model (`provider_model`, `provider:model`) declined
/// at or after `cutoff` (the stored text form). One per snapshot, in the order
/// of the refusals.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn held_snapshot_tags(
    store: &Store,
    provider_model: &str,
    cutoff: &str,
) -> Result<Vec<Option<String>>> {
    for table in ["snapshots", "corpus_entries", "extraction_refusals"] {
        if !store.has_table(table)? {
            return Ok(Vec::new());
        }
    }
    let rows: Vec<(String, Option<String>)> = collect_with(
        store,
        "held snapshots",
        "SELECT snapshots.snapshot_id, corpus_entries.tags_json FROM snapshots \
         JOIN corpus_entries ON corpus_entries.entry_id = snapshots.entry_id \
         JOIN extraction_refusals ON extraction_refusals.content_hash = snapshots.content_hash \
         WHERE snapshots.extraction_status = 'PENDING' \
         AND corpus_entries.mutability != 'APPEND_ONLY' \
         AND extraction_refusals.last_refused_at >= ?1 \
         AND extraction_refusals.purpose = 'extraction' \
         AND extraction_refusals.provider_model = ?2 \
         ORDER BY extraction_refusals.last_refused_at, snapshots.snapshot_id",
        [cutoff, provider_model],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    let mut seen = HashSet::new();
    Ok(rows
        .into_iter()
        .filter(|(snapshot, _)| seen.insert(snapshot.clone()))
        .map(|(_, tags)| tags)
        .collect())
}

/// The particles `clause` selects, hydrated but for their embedding, in rowid
/// order.
fn particles_where(store: &Store, clause: &str, params: &[&str]) -> Result<Vec<Particle>> {
    let sql = format!("SELECT {MODEL_COLUMNS} FROM particles WHERE {clause} ORDER BY rowid");
    let mut statement = store
        .connection()
        .prepare_cached(&sql)
        .map_err(query_error("particles"))?;
    let mut rows = statement
        .query(rusqlite::params_from_iter(params))
        .map_err(query_error("particles"))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(query_error("particles"))? {
        out.push(ParticleRow::new(row)?.to_particle()?);
    }
    Ok(out)
}

/// The ACTIVE derived particles (calibrated from premises): the projection
/// leaves their premises out (the reference's `get_active_derived_particles`).
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidRow`] on a row that does
/// not hydrate.
pub fn active_derived_particles(store: &Store) -> Result<Vec<Particle>> {
    particles_where(
        store,
        "status = 'ACTIVE' AND confidence_calibration_source = 'DERIVED'",
        &[],
    )
}

/// The ACTIVE particle `pin` names, as a projection pin resolves it: the exact
/// id, else the one ACTIVE id starting with it (by SQLite's `LIKE`, as the
/// reference's `startswith` compiles: ASCII case-insensitive, `_` and `%` wild),
/// else none (no match, or more than one).
///
/// # Errors
///
/// As [`active_derived_particles`].
pub fn active_particle_by_id_or_prefix(store: &Store, pin: &str) -> Result<Option<Particle>> {
    let exact = particles_where(store, "id = ?1 AND status = 'ACTIVE'", &[pin])?;
    if let Some(particle) = exact.into_iter().next() {
        return Ok(Some(particle));
    }
    let mut prefixed = particles_where(store, "status = 'ACTIVE' AND id LIKE ?1 || '%'", &[pin])?;
    Ok(if prefixed.len() == 1 {
        prefixed.pop()
    } else {
        None
    })
}

/// What a fold target's verdict reads: the corpus entry with URI `uri`, its
/// newest live `RESPONSE` snapshot with that snapshot's extraction status, and
/// the ACTIVE particles whose provenance edge to the entry names the snapshot.
/// `None` when the entry or such a snapshot does not exist.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidValue`] when several
/// entries have the URI.
pub fn newest_snapshot_beliefs(store: &Store, uri: &str) -> Result<Option<(String, Vec<String>)>> {
    if !store.has_table("corpus_entries")? || !store.has_table("snapshots")? {
        return Ok(None);
    }
    let entries: Vec<String> = collect_with(
        store,
        "entry by uri",
        "SELECT entry_id FROM corpus_entries WHERE uri_r = ?1",
        [uri],
        |row| row.get(0),
    )?;
    // The reference's lookup takes exactly one row and raises on several (its
    // route's 500): so does this, naming them.
    if entries.len() > 1 {
        return Err(Error::InvalidValue {
            table: "corpus_entries",
            key: entries.join(", "),
            column: "uri_r",
            reason: format!(
                "{} entries share the URI {uri:?}, where one is expected",
                entries.len()
            ),
        });
    }
    let Some(entry) = entries.into_iter().next() else {
        return Ok(None);
    };
    let newest: Vec<(String, String)> = collect_with(
        store,
        "newest response snapshot",
        "SELECT snapshot_id, extraction_status FROM snapshots WHERE entry_id = ?1 \
         AND warc_record_type = 'RESPONSE' AND superseded_by_snapshot_id IS NULL \
         ORDER BY captured_at DESC LIMIT 1",
        [&entry],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    let Some((snapshot, status)) = newest.into_iter().next() else {
        return Ok(None);
    };
    if !store.has_table("particle_provenance_edges")? {
        return Ok(Some((status, Vec::new())));
    }
    let ids = collect_with(
        store,
        "particles of a snapshot",
        "SELECT DISTINCT particles.id FROM particles JOIN particle_provenance_edges \
         ON particle_provenance_edges.particle_id = particles.id \
         WHERE particle_provenance_edges.corpus_entry_id = ?1 \
         AND particle_provenance_edges.snapshot_id = ?2 AND particles.status = 'ACTIVE'",
        [&entry, &snapshot],
        |row| row.get(0),
    )?;
    Ok(Some((status, ids)))
}
