//! What the as-of route reads: candidates of every status with their stored
//! retirement instant, and the rows that date retirements (successor pointers,
//! operator events, born-retired marks).

use std::collections::HashSet;

use particles_model::{Particle, Timestamp};
use rusqlite::params;

use crate::{
    embedding::decode_embedding,
    error::{query_error, Error, Result},
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
    let mut statement = store
        .connection()
        .prepare(&sql)
        .map_err(query_error("as-of loader"))?;
    let mut rows = match subject_id {
        None => statement.query(params![min_confidence]),
        Some(subject) => statement.query(params![min_confidence, subject]),
    }
    .map_err(query_error("as-of loader"))?;
    let mut out = Vec::new();
    let mut skipped = 0;
    while let Some(row) = rows.next().map_err(query_error("as-of loader"))? {
        let row = ParticleRow::new(row)?;
        // The reference hydrates the model only for rows it keeps; the asserted
        // instant comes first.
        let particle = row.to_particle()?;
        if particle.asserted_at.utc_micros() > as_of_micros {
            continue;
        }
        if !row.has_current_model()? {
            skipped += 1;
            continue;
        }
        let Some(text) = row.embedding_json()? else {
            continue;
        };
        let vector = decode_embedding(text).map_err(|e| Error::BadEmbedding {
            id: row.id().to_owned(),
            reason: e.0,
        })?;
        out.push(HistoricalRow {
            rowid: row.rowid(),
            retired_at: row.retired_at()?,
            particle,
            vector,
        });
    }
    Ok((out, skipped))
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
