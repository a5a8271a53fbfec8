//! The uncached ACTIVE loader and the id lookups.

use particles_model::Particle;
use rusqlite::params;

use crate::{
    embedding::decode_embedding,
    error::{query_error, Error, Result},
    row::{ParticleRow, PARTICLE_COLUMNS},
    Store,
};

/// The most ids one `IN (...)` list carries. Small enough for any SQLite build's
/// variable limit, whatever the store size.
pub const ID_CHUNK: usize = 500;

/// One query candidate: a hydrated particle and its decoded vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The row's current rowid, the final tie-breaker of the ranking.
    pub rowid: i64,
    /// The particle.
    pub particle: Particle,
    /// Its embedding, decoded to f32.
    pub vector: Vec<f32>,
}

/// What a loader returns.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Candidates {
    /// Candidates in `(confidence_value, rowid)` ascending order.
    pub items: Vec<Candidate>,
    /// ACTIVE rows left out because their vector belongs to another embedding model
    /// (the reference logs a warning with this count).
    pub skipped_other_model: usize,
}

/// Loads the ACTIVE candidates as the reference's uncached
/// `get_active_particles_with_embeddings` does: ACTIVE rows with an embedding and
/// `confidence_value >= min_confidence`, ordered by `(confidence_value, rowid)`; rows
/// of another embedding model are skipped and counted, the rest decoded and hydrated.
///
/// With `subject_id`, starts from the subject's links in `particle_subjects` (the same
/// predicates; an unknown subject yields no candidates).
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidRow`] or
/// [`Error::BadEmbedding`] on a row the reference would also fail on.
pub fn load_active(
    store: &Store,
    min_confidence: f64,
    subject_id: Option<&str>,
) -> Result<Candidates> {
    let connection = store.connection();
    let (name, sql) = match subject_id {
        None => (
            "active loader",
            format!(
                "SELECT {PARTICLE_COLUMNS} FROM particles \
                 WHERE status = 'ACTIVE' AND confidence_value >= ?1 AND embedding_json IS NOT NULL \
                 ORDER BY confidence_value ASC, particles.rowid ASC"
            ),
        ),
        // `|| ''` and `+ 0` keep SQLite off the status/confidence index so the plan
        // walks the subject's links; the predicates are unchanged.
        Some(_) => (
            "subject loader",
            format!(
                "SELECT {PARTICLE_COLUMNS} FROM particles \
                 JOIN particle_subjects ON particle_subjects.particle_id = particles.id \
                 WHERE particle_subjects.subject_id = ?2 \
                   AND (particles.status || '') = 'ACTIVE' \
                   AND particles.confidence_value + 0 >= ?1 \
                   AND particles.embedding_json IS NOT NULL \
                 ORDER BY particles.confidence_value ASC, particles.rowid ASC"
            ),
        ),
    };
    let mut statement = connection.prepare(&sql).map_err(query_error(name))?;
    let mut rows = match subject_id {
        None => statement.query(params![min_confidence]),
        Some(subject) => statement.query(params![min_confidence, subject]),
    }
    .map_err(query_error(name))?;
    let mut out = Candidates::default();
    while let Some(row) = rows.next().map_err(query_error(name))? {
        let row = ParticleRow::new(row)?;
        if !row.has_current_model()? {
            out.skipped_other_model += 1;
            continue;
        }
        let Some(text) = row.embedding_json()? else {
            continue;
        };
        let vector = decode_embedding(text).map_err(|e| Error::BadEmbedding {
            id: row.id().to_owned(),
            reason: e.0,
        })?;
        let particle = row.to_particle()?;
        out.items.push(Candidate {
            rowid: row.rowid(),
            particle,
            vector,
        });
    }
    Ok(out)
}

/// Fetches particles by id, any status, fully hydrated, in chunks of
/// [`ID_CHUNK`]. Ids are deduplicated keeping first-seen order; missing ids are
/// absent from the result.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidRow`] on a malformed row.
pub fn particles_by_ids(store: &Store, ids: &[&str]) -> Result<Vec<Particle>> {
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&str> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
    let mut out = Vec::with_capacity(unique.len());
    for chunk in unique.chunks(ID_CHUNK) {
        let sql = format!(
            "SELECT {PARTICLE_COLUMNS} FROM particles WHERE id IN ({})",
            placeholders(chunk.len())
        );
        let mut statement = store
            .connection()
            .prepare(&sql)
            .map_err(query_error("particles by id"))?;
        let mut rows = statement
            .query(rusqlite::params_from_iter(chunk.iter()))
            .map_err(query_error("particles by id"))?;
        while let Some(row) = rows.next().map_err(query_error("particles by id"))? {
            out.push(ParticleRow::new(row)?.to_particle()?);
        }
    }
    Ok(out)
}

/// `?,?,...,?` with `n` placeholders.
pub(crate) fn placeholders(n: usize) -> String {
    let mut text = "?,".repeat(n);
    text.pop();
    text
}
