//! What the as-of route reads: candidates of every status with their stored
//! retirement instant, and the rows that date retirements (successor pointers,
//! operator events, born-retired marks).

use std::collections::{HashMap, HashSet};

use particles_model::{Particle, Timestamp};

use crate::{
    chunked::{for_each_in_chunks, SqlClock},
    embedding::decode_embedding,
    error::{query_error, Error, Result},
    fault::read_judged,
    policy::collect_with,
    row::{ParticleRow, PARTICLE_COLUMNS},
    Store,
};

/// A candidate of the as-of route: the particle, its vector and its stored
/// `retired_at` (not a particle field).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoricalRow {
    /// The row's rowid.
    pub rowid: i64,
    /// The particle, of any status.
    pub particle: Particle,
    /// Its vector.
    pub vector: Vec<f32>,
    /// The `retired_at` column.
    pub retired_at: Option<Timestamp>,
}

/// The reference's as-of loader: rows of **every** status with an embedding and
/// `confidence_value >= min_confidence` (optionally linked to a subject), minus rows
/// asserted after `as_of` (naive read as UTC), minus rows of another embedding
/// model (counted). The order is the one SQLite gives the reference's unordered
/// statement: `(confidence_value, rowid)` unfiltered, link order with a subject.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidRow`], [`Error::BadEmbedding`].
pub fn load_as_of(
    store: &Store,
    as_of_micros: i64,
    min_confidence: f64,
    subject_id: Option<&str>,
) -> Result<(Vec<HistoricalRow>, usize)> {
    let sql = match subject_id {
        None => format!(
            "SELECT {PARTICLE_COLUMNS} FROM particles \
             WHERE confidence_value >= ?1 AND embedding_json IS NOT NULL \
             ORDER BY confidence_value ASC, particles.rowid ASC"
        ),
        Some(_) => format!(
            "SELECT {PARTICLE_COLUMNS} FROM particles \
             JOIN particle_subjects ON particle_subjects.particle_id = particles.id \
             WHERE particles.confidence_value >= ?1 AND particles.embedding_json IS NOT NULL \
               AND particle_subjects.subject_id = ?2 \
             ORDER BY particle_subjects.rowid ASC"
        ),
    };
    read_historical(
        store,
        "as-of loader",
        &sql,
        min_confidence,
        subject_id,
        Some(as_of_micros),
    )
}

/// The reference's window loader (semantic path): dated rows (`valid_from` set) of
/// **every** status with an embedding and `confidence_value >= min_confidence`
/// (optionally linked to a subject), minus rows of another embedding model
/// (counted), in the order SQLite gives the reference's unordered statement.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidRow`], [`Error::BadEmbedding`].
pub fn load_window(
    store: &Store,
    min_confidence: f64,
    subject_id: Option<&str>,
) -> Result<(Vec<HistoricalRow>, usize)> {
    let sql = match subject_id {
        None => format!(
            "SELECT {PARTICLE_COLUMNS} FROM particles \
             WHERE confidence_value >= ?1 AND valid_from IS NOT NULL AND embedding_json IS NOT NULL \
             ORDER BY confidence_value ASC, particles.rowid ASC"
        ),
        Some(_) => format!(
            "SELECT {PARTICLE_COLUMNS} FROM particles \
             JOIN particle_subjects ON particle_subjects.particle_id = particles.id \
             WHERE particles.confidence_value >= ?1 AND particles.valid_from IS NOT NULL \
               AND particles.embedding_json IS NOT NULL AND particle_subjects.subject_id = ?2 \
             ORDER BY particle_subjects.rowid ASC"
        ),
    };
    read_historical(
        store,
        "window loader",
        &sql,
        min_confidence,
        subject_id,
        None,
    )
}

fn read_historical(
    store: &Store,
    name: &'static str,
    sql: &str,
    min_confidence: f64,
    subject_id: Option<&str>,
    asserted_by: Option<i64>,
) -> Result<(Vec<HistoricalRow>, usize)> {
    let mut skipped = 0;
    let rows = read_judged(store, name, sql, min_confidence, subject_id, |row| {
        historical(row, asserted_by, &mut skipped)
    })?;
    Ok((rows, skipped))
}

/// One row as the reference's as-of and window loaders read it: `None` for a
/// row asserted after `asserted_by` or of another model (counted in
/// `skipped`).
fn historical(
    row: &ParticleRow<'_, '_>,
    asserted_by: Option<i64>,
    skipped: &mut usize,
) -> Result<Option<HistoricalRow>> {
    // As the reference: the assertion instant and the model are checked first,
    // and only rows that pass are hydrated (a row asserted after T may even be
    // invalid without failing the query, unless it fails as it is fetched).
    if let Some(limit) = asserted_by {
        if row.asserted_at_micros()? > limit {
            return row.fetch_fault().map_or(Ok(None), Err);
        }
    }
    if !row.has_current_model()? {
        *skipped += 1;
        return row.fetch_fault().map_or(Ok(None), Err);
    }
    let Some(text) = row.embedding_json()? else {
        return Ok(None);
    };
    let vector = decode_embedding(text).map_err(|e| Error::BadEmbedding {
        id: row.id().to_owned(),
        reason: e.0,
    })?;
    Ok(Some(HistoricalRow {
        rowid: row.rowid(),
        retired_at: row.retired_at()?,
        particle: crate::profile::hydrate(|| row.to_particle())?,
        vector,
    }))
}

/// A particle's `valid_from` and the basis it was set on.
pub type ValidFrom = (Option<Timestamp>, Option<String>);

/// `valid_from` and its `extraction:valid_from_basis` property for each id, in
/// chunks of [`crate::ID_CHUNK`]; missing ids are absent.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidValue`] on a malformed `valid_from`.
pub fn valid_from_by_ids<'a>(
    store: &Store,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<HashMap<String, ValidFrom>> {
    let ids: Vec<&str> = ids.into_iter().collect();
    let mut out = HashMap::new();
    for_each_in_chunks(
        store,
        "successor starts",
        &ids,
        |list| {
            format!("SELECT id, valid_from, properties_json FROM particles WHERE id IN ({list})")
        },
        SqlClock::Untimed,
        |row| {
            let id: String = row.get(0).map_err(query_error("successor starts"))?;
            let valid_from: Option<String> = row.get(1).map_err(query_error("successor starts"))?;
            let properties: Option<String> = row.get(2).map_err(query_error("successor starts"))?;
            let valid_from = match valid_from {
                None => None,
                Some(text) => Some(Timestamp::parse(&text).map_err(|e| Error::InvalidValue {
                    table: "particles",
                    key: id.clone(),
                    column: "valid_from",
                    reason: e.to_string(),
                })?),
            };
            // Unreadable properties mean no basis, as in the reference.
            let basis = properties
                .filter(|p| !p.is_empty())
                .and_then(|p| serde_json::from_str::<serde_json::Value>(&p).ok())
                .and_then(|p| p.get("extraction:valid_from_basis").cloned())
                .and_then(|b| match b {
                    serde_json::Value::Null => None,
                    serde_json::Value::String(s) => Some(s),
                    other => Some(other.to_string()),
                });
            out.insert(id, (valid_from, basis));
            Ok(())
        },
    )?;
    Ok(out)
}

/// ACTIVE particles without a `valid_from`, store-wide (the window coverage's
/// `undated`).
///
/// # Errors
///
/// [`Error::Query`].
pub fn count_active_undated(store: &Store) -> Result<u64> {
    let counts: Vec<i64> = collect_with(
        store,
        "undated count",
        "SELECT count(*) FROM particles WHERE status = 'ACTIVE' AND valid_from IS NULL",
        [],
        |row| row.get(0),
    )?;
    Ok(counts.first().copied().unwrap_or(0).max(0) as u64)
}

/// A `supersedes` pointer: the successor's id, content and assertion instant, and the
/// id it supersedes.
#[derive(Debug, Clone, PartialEq)]
pub struct SuccessorRow {
    /// The successor's id.
    pub id: String,
    /// Its content.
    pub content: String,
    /// The id it supersedes.
    pub supersedes: String,
    /// When it was asserted.
    pub asserted_at: Timestamp,
}

/// Every particle (any status) that supersedes another, in rowid order.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidValue`] on a malformed `asserted_at`.
pub fn successor_rows(store: &Store) -> Result<Vec<SuccessorRow>> {
    let rows: Vec<(String, String, String, String)> = collect_with(
        store,
        "successor pointers",
        "SELECT id, content, supersedes, asserted_at FROM particles WHERE supersedes IS NOT NULL ORDER BY rowid",
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
    )?;
    rows.into_iter()
        .map(|(id, content, supersedes, asserted_at)| {
            let asserted_at = Timestamp::parse(&asserted_at).map_err(|e| Error::InvalidValue {
                table: "particles",
                key: id.clone(),
                column: "asserted_at",
                reason: e.to_string(),
            })?;
            Ok(SuccessorRow {
                id,
                content,
                supersedes,
                asserted_at,
            })
        })
        .collect()
}

/// The operator events that date a particle's retirement, as `(particle id,
/// occurred_at)`: `PARTICLE_SUPERSEDED`, `PARTICLE_RETRACTED`, `SOURCE_RETRACTED`,
/// `REVIEW_RESOLVED` events with a particle ref.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidValue`] on a malformed `occurred_at`.
pub fn retirement_events(store: &Store) -> Result<Vec<(String, Timestamp)>> {
    if !store.has_table("operator_events")? || !store.has_table("operator_event_refs")? {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, String, String)> = collect_with(
        store,
        "retirement events",
        "SELECT operator_event_refs.ref_id, operator_events.occurred_at, operator_events.event_id \
         FROM operator_event_refs JOIN operator_events ON operator_events.event_id = operator_event_refs.event_id \
         WHERE operator_event_refs.ref_kind = 'particle' AND operator_events.event_type IN \
         ('PARTICLE_SUPERSEDED', 'PARTICLE_RETRACTED', 'SOURCE_RETRACTED', 'REVIEW_RESOLVED')",
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?;
    rows.into_iter()
        .map(|(ref_id, occurred_at, event_id)| {
            let occurred_at = Timestamp::parse(&occurred_at).map_err(|e| Error::InvalidValue {
                table: "operator_events",
                key: event_id,
                column: "occurred_at",
                reason: e.to_string(),
            })?;
            Ok((ref_id, occurred_at))
        })
        .collect()
}

/// The ids stored `born_retired`: never believed, never dated.
///
/// # Errors
///
/// [`Error::Query`].
pub fn born_retired_ids(store: &Store) -> Result<HashSet<String>> {
    let ids: Vec<String> = collect_with(
        store,
        "born retired",
        "SELECT id FROM particles WHERE born_retired = 1",
        [],
        |row| row.get(0),
    )?;
    Ok(ids.into_iter().collect())
}
