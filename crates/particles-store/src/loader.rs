//! The uncached ACTIVE loader and the id lookups.

use particles_model::{CandidateSet, Particle, Selection};
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

/// A source of query candidates: the uncached loader, a cache, or a loader of a
/// downstream crate. Whatever it is, it must return what the reference's ACTIVE
/// loader returns: ACTIVE rows with an embedding, `confidence_value >=
/// min_confidence`, of the current embedding model (others skipped and counted), in
/// `(confidence_value, rowid)` order, and for a subject only the rows linked to it.
pub trait CandidateLoader {
    /// Loads the candidates of one query.
    ///
    /// # Errors
    ///
    /// Whatever reading the store can fail with.
    fn load(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Selection>;
}

/// The reference's uncached loader: every query reads and decodes its candidates.
#[derive(Debug, Clone, Copy, Default)]
pub struct UncachedLoader;

impl CandidateLoader for UncachedLoader {
    fn load(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Selection> {
        load_active(store, min_confidence, subject_id)
    }
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
) -> Result<Selection> {
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
    let mut set = CandidateSet::new();
    let skipped = match subject_id {
        None => store.with_mapped_scan(|store| {
            read_candidates(
                store,
                name,
                &sql,
                params![min_confidence],
                RowFilter::CurrentModelOnly,
                &mut set,
            )
        })?,
        Some(subject) => read_candidates(
            store,
            name,
            &sql,
            params![min_confidence, subject],
            RowFilter::CurrentModelOnly,
            &mut set,
        )?,
    };
    Ok(Selection::all(set, skipped))
}

/// Which rows [`read_candidates`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFilter {
    /// Skip (and count) rows of another embedding model before decoding them, as the
    /// uncached loader does.
    CurrentModelOnly,
    /// Keep every row with an embedding, whatever its model (a cache filters per
    /// call).
    AnyModel,
}

/// Runs a statement selecting `PARTICLE_COLUMNS` and appends its rows with an
/// embedding to `set`, in statement order: decoded, hydrated (so a malformed row
/// fails here, as it does in the reference) and reduced to columns. Returns how many
/// rows were skipped for their embedding model.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidRow`], [`Error::BadEmbedding`].
pub fn read_candidates<P: rusqlite::Params>(
    store: &Store,
    name: &'static str,
    sql: &str,
    params: P,
    filter: RowFilter,
    set: &mut CandidateSet,
) -> Result<usize> {
    let mut statement =
        crate::profile::sql(|| store.connection().prepare(sql)).map_err(query_error(name))?;
    let mut rows = crate::profile::sql(|| statement.query(params)).map_err(query_error(name))?;
    let mut skipped = 0;
    while let Some(row) = crate::profile::sql(|| rows.next()).map_err(query_error(name))? {
        let row = ParticleRow::new(row)?;
        if filter == RowFilter::CurrentModelOnly && !row.has_current_model()? {
            skipped += 1;
            continue;
        }
        let Some(text) = row.embedding_json()? else {
            continue;
        };
        crate::profile::decoded(text.len());
        let vector = decode_embedding(text).map_err(|e| Error::BadEmbedding {
            id: row.id().to_owned(),
            reason: e.0,
        })?;
        let particle = crate::profile::hydrate(|| row.to_particle())?;
        set.push(
            row.rowid(),
            &particle,
            &vector,
            Some(row.embedding_model_id()?),
        );
    }
    Ok(skipped)
}

/// Rows handed from the SQLite thread to a decoder: hydrated particles and their
/// embedding text, not yet decoded.
struct RawBatch {
    rowids: Vec<i64>,
    particles: Vec<Particle>,
    models: Vec<String>,
    texts: Vec<String>,
}

impl RawBatch {
    const ROWS: usize = 256;

    fn new() -> RawBatch {
        RawBatch {
            rowids: Vec::with_capacity(Self::ROWS),
            particles: Vec::with_capacity(Self::ROWS),
            models: Vec::with_capacity(Self::ROWS),
            texts: Vec::with_capacity(Self::ROWS),
        }
    }

    fn len(&self) -> usize {
        self.rowids.len()
    }

    /// Decodes the batch's embeddings into `set`.
    fn decode_into(self, set: &mut CandidateSet) -> Result<()> {
        for (((rowid, particle), model), text) in self
            .rowids
            .into_iter()
            .zip(&self.particles)
            .zip(&self.models)
            .zip(&self.texts)
        {
            let vector = decode_embedding(text).map_err(|e| Error::BadEmbedding {
                id: particle.id.clone(),
                reason: e.0,
            })?;
            set.push(rowid, particle, &vector, Some(model));
        }
        Ok(())
    }
}

/// [`read_candidates`] on two cores, for full builds: this thread steps SQLite and
/// hydrates rows, a second one decodes embedding JSON (the larger share of the
/// work), and this thread decodes a batch itself whenever the second is behind.
/// Every row with an embedding is kept whatever its model. The result is in
/// `(confidence_value, rowid)` order whatever the statement's order, so the
/// statement can walk the table in rowid order, which is several times faster than
/// the confidence index on a large store. `progress` gets the rows read so far.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidRow`], [`Error::BadEmbedding`].
pub fn read_candidates_parallel<P: rusqlite::Params>(
    store: &Store,
    name: &'static str,
    sql: &str,
    params: P,
    progress: &mut dyn FnMut(usize),
) -> Result<CandidateSet> {
    let (sender, receiver) = std::sync::mpsc::sync_channel::<RawBatch>(4);
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || -> Result<CandidateSet> {
            let mut set = CandidateSet::new();
            for batch in receiver {
                batch.decode_into(&mut set)?;
            }
            Ok(set)
        });
        let mut own = CandidateSet::new();
        let read = (|| -> Result<()> {
            let mut statement = crate::profile::sql(|| store.connection().prepare(sql))
                .map_err(query_error(name))?;
            let mut rows =
                crate::profile::sql(|| statement.query(params)).map_err(query_error(name))?;
            let mut batch = RawBatch::new();
            let mut seen = 0usize;
            let hand_off = |batch: RawBatch, own: &mut CandidateSet| -> Result<()> {
                match sender.try_send(batch) {
                    Ok(()) => Ok(()),
                    Err(std::sync::mpsc::TrySendError::Full(batch)) => batch.decode_into(own),
                    // The decoder stopped on an error, which its join reports.
                    Err(std::sync::mpsc::TrySendError::Disconnected(_)) => Ok(()),
                }
            };
            while let Some(row) = crate::profile::sql(|| rows.next()).map_err(query_error(name))? {
                let row = ParticleRow::new(row)?;
                seen += 1;
                let Some(text) = row.embedding_json()? else {
                    continue;
                };
                crate::profile::decoded(text.len());
                let particle = crate::profile::hydrate(|| row.to_particle())?;
                batch.rowids.push(row.rowid());
                batch.particles.push(particle);
                batch.models.push(row.embedding_model_id()?.to_owned());
                batch.texts.push(text.to_owned());
                if batch.len() == RawBatch::ROWS {
                    hand_off(std::mem::replace(&mut batch, RawBatch::new()), &mut own)?;
                    progress(seen);
                }
            }
            batch.decode_into(&mut own)?;
            progress(seen);
            Ok(())
        })();
        drop(sender);
        let theirs = worker
            .join()
            .map_err(|_| Error::Internal("the embedding decoder thread panicked"))?;
        read?;
        Ok(CandidateSet::merged_in_order(vec![own, theirs?]))
    })
}

/// The column list of a particle read, for [`read_candidates`] statements.
pub fn particle_columns() -> &'static str {
    PARTICLE_COLUMNS
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
