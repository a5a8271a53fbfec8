//! The uncached ACTIVE loader and the id lookups.

use std::collections::HashMap;

use particles_candidates::{CandidateSet, Selection};
use particles_model::{Particle, EMBEDDING_MODEL_ID};
use rusqlite::params;

use crate::{
    chunked::{for_each_in_chunks, SqlClock},
    error::{query_error, Error, Result},
    fault::{first_fault_again, is_row_fault, FirstFault},
    row::{copy_row, Cell, ParticleRow, COLUMN_COUNT, MODEL_COLUMNS, PARTICLE_COLUMNS},
    Store,
};

/// A source of query candidates: the uncached loader, a cache, the as-of and
/// window loaders, or a loader of a downstream crate. Whatever it is, it must
/// return what the reference's loader for that route returns: the rows it would
/// read, with `confidence_value >= min_confidence`, of the current embedding model
/// (others skipped and counted), in the reference's statement order. For the
/// ACTIVE loaders (and any cache of them) that order is `(confidence_value,
/// rowid)`, also for a subject; the as-of and window loaders keep the reference's
/// subject-link order (`particle_subjects.rowid`) when a subject is given.
/// Equal scores keep this order, so it is the ranking's tie-break. A loader
/// that fills [`Selection::subject_claims`] counts for exactly the `subject_id`
/// it was given, in the same snapshot: `outside` holds exactly the linked ids
/// it did not count in `in_set`, each once.
pub trait CandidateLoader {
    /// Selects the candidates of one query.
    ///
    /// # Errors
    ///
    /// Whatever reading the store can fail with.
    fn select(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Selection>;

    /// Selects the candidates and reports what reading them cost.
    ///
    /// # Errors
    ///
    /// As [`select`](CandidateLoader::select).
    fn load(
        &mut self,
        store: &Store,
        min_confidence: f64,
        subject_id: Option<&str>,
    ) -> Result<Loaded> {
        crate::profile::take_load_counters();
        let started = std::time::Instant::now();
        let selection = self.select(store, min_confidence, subject_id)?;
        let seconds = started.elapsed().as_secs_f64();
        Ok(Loaded {
            selection,
            counters: crate::profile::take_load_counters(),
            seconds,
        })
    }
}

/// A load's candidates and what reading them cost.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The candidates.
    pub selection: Selection,
    /// SQLite and hydration time on this thread; the rows hydrated and the
    /// embedding text decoded, a full build's worker thread's included.
    pub counters: crate::LoadCounters,
    /// The load's wall time, in seconds.
    pub seconds: f64,
}

/// The reference's uncached loader: every query reads and decodes its candidates.
#[derive(Debug, Clone, Copy, Default)]
pub struct UncachedLoader;

impl CandidateLoader for UncachedLoader {
    fn select(
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
pub(crate) enum RowFilter {
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
pub(crate) fn read_candidates<P: rusqlite::Params + Copy>(
    store: &Store,
    name: &'static str,
    sql: &str,
    params: P,
    filter: RowFilter,
    set: &mut CandidateSet,
) -> Result<usize> {
    let mut statement = crate::profile::sql(|| store.connection().prepare_cached(sql))
        .map_err(query_error(name))?;
    let mut rows = crate::profile::sql(|| statement.query(params)).map_err(query_error(name))?;
    let mut skipped = 0;
    while let Some(row) = crate::profile::sql(|| rows.next()).map_err(query_error(name))? {
        match ParticleRow::new(row).and_then(|row| push_candidate(&row, filter, set)) {
            Ok(Pushed::SkippedForModel) => skipped += 1,
            Ok(Pushed::Added | Pushed::NoEmbedding) => {}
            Err(found) if is_row_fault(&found) => {
                // The reference fetches the whole result before it reads a
                // row's embedding: the fault it meets first may be a later
                // row's.
                drop(rows);
                let check = |row: &ParticleRow<'_, '_>, scratch: &mut Vec<f32>| {
                    hydration_fault(row, filter, scratch)
                };
                return Err(first_fault_again(&mut statement, params, check).unwrap_or(found));
            }
            Err(other) => return Err(other),
        }
    }
    Ok(skipped)
}

/// Reads a row as a loader does, for its fault alone.
fn hydration_fault(
    row: &ParticleRow<'_, '_>,
    filter: RowFilter,
    scratch: &mut Vec<f32>,
) -> Result<()> {
    if filter == RowFilter::CurrentModelOnly && !row.has_current_model()? {
        return Ok(());
    }
    let Some(text) = row.embedding_bytes()? else {
        return Ok(());
    };
    row.decode_embedding(text, scratch)?;
    row.to_particle().map(drop)
}

/// What [`push_candidate`] did with a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pushed {
    /// Decoded, hydrated and appended.
    Added,
    /// Of another embedding model (with [`RowFilter::CurrentModelOnly`]): counted
    /// by the caller, never decoded.
    SkippedForModel,
    /// No embedding: not a candidate.
    NoEmbedding,
}

/// Appends one row of `PARTICLE_COLUMNS` to `set`: decoded, hydrated (so a
/// malformed row fails here, as it does in the reference) and reduced to columns.
fn push_candidate(
    row: &ParticleRow<'_, '_>,
    filter: RowFilter,
    set: &mut CandidateSet,
) -> Result<Pushed> {
    if filter == RowFilter::CurrentModelOnly && !row.has_current_model()? {
        // Skipped unread, but fetched by the reference first: a fault it
        // meets then fails the query.
        if let Some(fault) = row.fetch_fault() {
            return Err(fault);
        }
        return Ok(Pushed::SkippedForModel);
    }
    let Some(text) = row.embedding_bytes()? else {
        return Ok(Pushed::NoEmbedding);
    };
    crate::profile::decoded(text.len());
    // 384 numbers of about 20 bytes; the estimate only avoids regrowth.
    let mut vector = Vec::with_capacity(text.len() / 20 + 1);
    row.decode_embedding(text, &mut vector)?;
    let particle = crate::profile::hydrate(|| row.to_particle())?;
    set.push(
        row.rowid(),
        &particle,
        &vector,
        Some(row.embedding_model_id()?),
    );
    Ok(Pushed::Added)
}

/// Rows handed from the SQLite thread to a worker and back: copies of the rows
/// as read, then their hydrated particles and decoded vectors. Batches are
/// recycled, so their buffers are allocated once (a fresh `String` per row of a
/// million cost more in the allocator and in page faults than the copy itself).
struct RawBatch {
    /// [`COLUMN_COUNT`] cells a row, their text in `arena`.
    cells: Vec<Cell>,
    arena: Vec<u8>,
    rowids: Vec<i64>,
    particles: Vec<Particle>,
    /// Each row's embedding model: `None` for the current one, the common
    /// case, which then costs no copy of the id.
    models: Vec<Option<String>>,
    /// Decoded vectors back to back, and each one's end.
    vectors: Vec<f32>,
    vector_ends: Vec<usize>,
    /// What the worker's hydration of the batch did, for the reading thread's
    /// counters (a batch it hydrates itself counts there directly).
    hydrated: u64,
    decoded_bytes: u64,
}

impl RawBatch {
    const ROWS: usize = 256;

    fn new() -> RawBatch {
        RawBatch {
            cells: Vec::with_capacity(Self::ROWS * COLUMN_COUNT),
            arena: Vec::with_capacity(Self::ROWS * 12_000),
            rowids: Vec::with_capacity(Self::ROWS),
            particles: Vec::with_capacity(Self::ROWS),
            models: Vec::with_capacity(Self::ROWS),
            vectors: Vec::with_capacity(Self::ROWS * 384),
            vector_ends: Vec::with_capacity(Self::ROWS),
            hydrated: 0,
            decoded_bytes: 0,
        }
    }

    /// Rows copied and not yet pushed.
    fn len(&self) -> usize {
        self.cells.len() / COLUMN_COUNT
    }

    /// Hydrates and decodes every copied row, in row order: the first failing
    /// row's error is the one returned.
    fn hydrate(&mut self, scratch: &mut Vec<f32>) -> Result<()> {
        self.rowids.clear();
        self.particles.clear();
        self.models.clear();
        self.vectors.clear();
        self.vector_ends.clear();
        for cells in self.cells.chunks_exact(COLUMN_COUNT) {
            let row = ParticleRow::copied(cells, &self.arena)?;
            let Some(text) = row.embedding_bytes()? else {
                continue;
            };
            // The uncached loader's order within a row (which error a bad
            // build names is `first_bad_row`'s to say).
            row.decode_embedding(text, scratch)?;
            let particle = crate::profile::hydrate(|| row.to_particle())?;
            crate::profile::decoded(text.len());
            self.rowids.push(row.rowid());
            self.particles.push(particle);
            let model = row.embedding_model_id()?;
            self.models
                .push((model != EMBEDDING_MODEL_ID).then(|| model.to_owned()));
            self.vectors.extend_from_slice(scratch);
            self.vector_ends.push(self.vectors.len());
        }
        Ok(())
    }

    /// Appends the hydrated rows to `set`, counts them on this thread, and
    /// empties the batch for reuse. The particles are dropped by the next
    /// [`RawBatch::hydrate`], most often on the worker: freeing a row's
    /// strings costs about what hydrating them did.
    fn push_into(&mut self, set: &mut CandidateSet) {
        let mut start = 0;
        for (i, &end) in self.vector_ends.iter().enumerate() {
            set.push(
                self.rowids[i],
                &self.particles[i],
                &self.vectors[start..end],
                Some(self.models[i].as_deref().unwrap_or(EMBEDDING_MODEL_ID)),
            );
            start = end;
        }
        crate::profile::add_counts(self.hydrated, self.decoded_bytes);
        self.hydrated = 0;
        self.decoded_bytes = 0;
        self.cells.clear();
        self.arena.clear();
        self.rowids.clear();
        self.vectors.clear();
        self.vector_ends.clear();
    }
}

/// [`read_candidates`] on two cores, for full builds: this thread steps SQLite,
/// copies each row and fills the set; a second thread hydrates the copies and
/// decodes their embedding JSON (the larger share of the work) and hands them
/// back; this thread does a batch itself whenever the second is behind.
/// Hydration is the worker's because this thread bounds a build: stepping
/// SQLite through each row's embedding text is already about a quarter of a
/// build's work (measured at 1M). Every row with an embedding is
/// kept whatever its model. Rows land in the set in no particular order (the
/// statement can then walk the table in rowid order, several times faster than
/// the confidence index on a large store); the returned permutation lists them in
/// `(confidence_value, rowid)` order. `progress` gets the rows read so far.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidRow`], [`Error::BadEmbedding`].
pub(crate) fn read_candidates_parallel<P: rusqlite::Params>(
    store: &Store,
    name: &'static str,
    sql: &str,
    params: P,
    progress: &mut dyn FnMut(usize),
) -> Result<(CandidateSet, Vec<u32>)> {
    use std::sync::mpsc::{sync_channel, TrySendError};
    let (to_worker, to_decode) = sync_channel::<RawBatch>(4);
    let (to_reader, decoded) = sync_channel::<Result<RawBatch>>(8);
    let mut set = CandidateSet::new();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut scratch = Vec::new();
            for mut batch in to_decode {
                let done = batch.hydrate(&mut scratch).map(|()| {
                    let worked = crate::profile::take_load_counters();
                    batch.hydrated = worked.models_hydrated;
                    batch.decoded_bytes = worked.embedding_json_bytes;
                    batch
                });
                let failed = done.is_err();
                if to_reader.send(done).is_err() || failed {
                    break;
                }
            }
        });
        let mut in_flight = 0usize;
        // Set when the error came back from the worker (then it is the earliest).
        let worker_failed = std::cell::Cell::new(false);
        let read = (|| -> Result<()> {
            let mut statement = crate::profile::sql(|| store.connection().prepare(sql))
                .map_err(query_error(name))?;
            let mut rows =
                crate::profile::sql(|| statement.query(params)).map_err(query_error(name))?;
            let mut scratch = Vec::new();
            let mut spare: Vec<RawBatch> = Vec::new();
            let mut batch = RawBatch::new();
            let mut seen = 0usize;
            // Fills the set with what the worker returned, keeping the buffers.
            let collect = |set: &mut CandidateSet,
                           spare: &mut Vec<RawBatch>,
                           in_flight: &mut usize,
                           wait: bool|
             -> Result<()> {
                loop {
                    let next = if wait && *in_flight > 0 {
                        decoded
                            .recv()
                            .map_err(|_| Error::Internal("the cache build's worker stopped"))?
                    } else {
                        match decoded.try_recv() {
                            Ok(next) => next,
                            Err(_) => return Ok(()),
                        }
                    };
                    *in_flight -= 1;
                    let mut done = next.inspect_err(|_| worker_failed.set(true))?;
                    done.push_into(set);
                    spare.push(done);
                    if wait && *in_flight == 0 {
                        return Ok(());
                    }
                }
            };
            while let Some(row) = crate::profile::sql(|| rows.next()).map_err(query_error(name))? {
                seen += 1;
                copy_row(row, &mut batch.cells, &mut batch.arena)?;
                if batch.len() == RawBatch::ROWS {
                    collect(&mut set, &mut spare, &mut in_flight, false)?;
                    let next = spare.pop().unwrap_or_else(RawBatch::new);
                    match to_worker.try_send(std::mem::replace(&mut batch, next)) {
                        Ok(()) => in_flight += 1,
                        // The worker is behind: hydrate this one here.
                        Err(TrySendError::Full(mut behind)) => {
                            behind.hydrate(&mut scratch)?;
                            behind.push_into(&mut set);
                            spare.push(behind);
                        }
                        // The worker stopped on an error: the drain below finds it.
                        Err(TrySendError::Disconnected(_)) => {
                            return Err(Error::Internal("the cache build's worker stopped"))
                        }
                    }
                    progress(seen);
                }
            }
            collect(&mut set, &mut spare, &mut in_flight, true)?;
            batch.hydrate(&mut scratch)?;
            batch.push_into(&mut set);
            progress(seen);
            Ok(())
        })();
        drop(to_worker);
        // On an error, batches still with the worker hold earlier rows: the
        // first in rowid order is returned (so a failing build names one row
        // whichever thread finished first, and never the worker's stop; which
        // row the reference names is `first_bad_row`'s to find).
        if let Err(error) = read {
            if worker_failed.get() {
                return Err(error);
            }
            while in_flight > 0 {
                match decoded.recv() {
                    Ok(Err(earlier)) => return Err(earlier),
                    Ok(Ok(_)) => in_flight -= 1,
                    Err(_) => break,
                }
            }
            return Err(error);
        }
        Ok(())
    })?;
    let order = set.order_by_key();
    Ok((set, order))
}

/// Up to `limit` ids of ACTIVE particles with an embedding, spread over the store
/// (rowids divisible by `spread`), in rowid order: the targets of a benchmark's
/// writer.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn active_ids_spread(store: &Store, spread: usize, limit: usize) -> Result<Vec<String>> {
    let spread = i64::try_from(spread.max(1)).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut statement = store
        .connection()
        .prepare(
            "SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
             AND rowid % ?1 = 0 ORDER BY rowid LIMIT ?2",
        )
        .map_err(query_error("active ids"))?;
    let ids = statement
        .query_map([spread, limit], |row| row.get(0))
        .map_err(query_error("active ids"))?
        .collect::<rusqlite::Result<Vec<String>>>()
        .map_err(query_error("active ids"));
    ids
}

/// The number of ACTIVE rows (with or without an embedding): the progress total
/// of a full cache build.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails.
pub fn count_active(store: &Store) -> Result<usize> {
    let count: i64 = store
        .connection()
        .query_row(
            "SELECT count(*) FROM particles WHERE status = 'ACTIVE'",
            [],
            |row| row.get(0),
        )
        .map_err(query_error("count of ACTIVE rows"))?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// Every cacheable row (ACTIVE, with an embedding, of any model: a cache filters
/// per call), read on two cores in rowid order (`NOT INDEXED`: walking the
/// confidence index is several times slower on a large store) through SQLite's
/// memory map. Returns the set and the permutation that lists it in `(confidence,
/// rowid)` order; `progress` gets the rows read so far.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidRow`], [`Error::BadEmbedding`].
pub fn load_cacheable(
    store: &Store,
    progress: &mut dyn FnMut(usize),
) -> Result<(CandidateSet, Vec<u32>)> {
    store.with_mapped_scan(|store| {
        read_candidates_parallel(
            store,
            "cache build",
            &format!(
                "SELECT {PARTICLE_COLUMNS} FROM particles NOT INDEXED \
                 WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL"
            ),
            [],
            progress,
        )
        .map_err(|found| first_bad_row(store, found))
    })
}

/// The error a build meets, as the reference's build would name it. The
/// reference walks `(confidence_value, rowid)` order in partitions of
/// [`BUILD_PARTITION`] rows, each fetched whole before its rows are read
/// ([`FirstFault`] says what it meets first in one); the parallel build
/// walks the table in rowid order, so the row it stops on may not be that
/// one. A store with a bad row fails every build, so finding the
/// reference's costs a second, sequential read only on the way to an error.
/// `found` is returned when the row is not the cause (SQLite failed) or the
/// second read meets no fault.
fn first_bad_row(store: &Store, found: Error) -> Error {
    if !is_row_fault(&found) {
        return found;
    }
    let sql = format!(
        "SELECT {PARTICLE_COLUMNS} FROM particles \
         WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL \
         ORDER BY confidence_value ASC, particles.rowid ASC"
    );
    let reread = (|| -> rusqlite::Result<Option<Error>> {
        let mut statement = store.connection().prepare(&sql)?;
        let mut rows = statement.query([])?;
        let (mut cells, mut arena) = (Vec::new(), Vec::new());
        loop {
            cells.clear();
            arena.clear();
            let mut fetched = 0;
            while fetched < BUILD_PARTITION {
                let Some(row) = rows.next()? else { break };
                if copy_row(row, &mut cells, &mut arena).is_err() {
                    return Ok(None);
                }
                fetched += 1;
            }
            let mut fault = FirstFault::new(|row: &ParticleRow<'_, '_>, scratch: &mut Vec<f32>| {
                hydration_fault(row, RowFilter::AnyModel, scratch)
            });
            for row in cells.chunks_exact(COLUMN_COUNT) {
                if !fault.see(ParticleRow::copied(row, &arena)) {
                    break;
                }
            }
            if let Some(fault) = fault.first() {
                return Ok(Some(fault));
            }
            if fetched < BUILD_PARTITION {
                return Ok(None);
            }
        }
    })();
    match reread {
        Ok(Some(fault)) => fault,
        _ => found,
    }
}

/// The rows the reference's build fetches at a time (`_BUILD_PARTITION`).
const BUILD_PARTITION: usize = 2_000;

/// The rows among `ids` that are cacheable now (ACTIVE with an embedding, any
/// model), in id order, in chunks of [`crate::ID_CHUNK`]: a cache's delta.
///
/// # Errors
///
/// [`Error::Query`], [`Error::InvalidRow`], [`Error::BadEmbedding`].
pub fn load_cacheable_by_ids<'a>(
    store: &Store,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<CandidateSet> {
    let mut sorted: Vec<&str> = ids.into_iter().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut set = CandidateSet::new();
    // A chunk at a time, as the reference fetches them: the fault it names
    // is the one it meets first in a chunk.
    for chunk in sorted.chunks(crate::ID_CHUNK) {
        let read = for_each_in_chunks(
            store,
            "cache delta",
            chunk,
            delta_sql,
            SqlClock::Loader,
            |row| {
                let row = ParticleRow::new(row)?;
                if row.is_cacheable()? {
                    push_candidate(&row, RowFilter::AnyModel, &mut set).map(drop)
                } else {
                    // Not cached, but fetched and loaded by the reference
                    // all the same: what fails then fails the delta.
                    row.fetch_fault().map_or(Ok(()), Err)
                }
            },
        );
        match read {
            Err(found) if is_row_fault(&found) => {
                return Err(delta_fault(store, chunk).unwrap_or(found))
            }
            other => other?,
        }
    }
    Ok(set)
}

/// [`FirstFault`] over one chunk of a delta, read again; `None` when SQLite
/// fails or no row faults. The reference validates only the rows it caches,
/// in id order.
fn delta_fault(store: &Store, chunk: &[&str]) -> Option<Error> {
    let mut fault = FirstFault::new(|row: &ParticleRow<'_, '_>, scratch: &mut Vec<f32>| {
        if row.is_cacheable()? {
            hydration_fault(row, RowFilter::AnyModel, scratch)
        } else {
            Ok(())
        }
    });
    let mut settled = false;
    let read = for_each_in_chunks(
        store,
        "cache delta",
        chunk,
        delta_sql,
        SqlClock::Untimed,
        |row| {
            settled = !fault.see(ParticleRow::new(row));
            // Stops the read: no later row changes the answer.
            if settled {
                Err(Error::Internal("the delta's fault is settled"))
            } else {
                Ok(())
            }
        },
    );
    if read.is_err() && !settled {
        return None;
    }
    fault.first()
}

/// The delta's statement for one list of ids: every row among them, of any
/// status, as the reference fetches a chunk (it then keeps the ACTIVE rows
/// with an embedding, and a fault in the others' columns fails it too), in
/// id order, the order it reads them in. The id's index gives that order
/// without a sort.
fn delta_sql(list: &str) -> String {
    format!("SELECT {PARTICLE_COLUMNS} FROM particles WHERE id IN ({list}) ORDER BY particles.id")
}

/// Fetches particles by id, any status, fully hydrated, in chunks of
/// [`crate::ID_CHUNK`]. Ids are deduplicated keeping first-seen order; missing
/// ids are absent from the result.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidRow`] on a malformed row.
pub fn particles_by_ids(store: &Store, ids: &[&str]) -> Result<Vec<Particle>> {
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&str> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
    let mut out = Vec::with_capacity(unique.len());
    for_each_in_chunks(
        store,
        "particles by id",
        &unique,
        |list| format!("SELECT {MODEL_COLUMNS} FROM particles WHERE id IN ({list})"),
        SqlClock::Untimed,
        |row| {
            out.push(ParticleRow::new(row)?.to_particle()?);
            Ok(())
        },
    )?;
    Ok(out)
}

/// The particles at the given rows, each `(rowid, id)` as a candidate set
/// knows it, fully hydrated: a row whose id is not the one given (a store
/// rewritten since the set read it) is left out, so the caller reads what is
/// missing by id ([`particles_by_ids`]). In rowid order, each rowid once.
///
/// A rowid goes straight down the table's tree; an id goes down the id index
/// first, one more walk and one more page per row.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidRow`] on a malformed row.
pub fn particles_at_rowids(store: &Store, rows: &[(i64, &str)]) -> Result<Vec<(i64, Particle)>> {
    let wanted: HashMap<i64, &str> = rows.iter().copied().collect();
    let mut rowids: Vec<i64> = wanted.keys().copied().collect();
    rowids.sort_unstable();
    let mut out = Vec::with_capacity(rowids.len());
    for_each_in_chunks(
        store,
        "particles by rowid",
        &rowids,
        |list| format!("SELECT {MODEL_COLUMNS} FROM particles WHERE rowid IN ({list})"),
        SqlClock::Untimed,
        |row| {
            let row = ParticleRow::new(row)?;
            if wanted.get(&row.rowid()) == Some(&row.id()) {
                out.push((row.rowid(), row.to_particle()?));
            }
            Ok(())
        },
    )?;
    Ok(out)
}

/// Each of `ids`' subject ids (`subject_ids_json`), without hydrating the
/// particle: the owner lens reads only these, for every scored candidate.
///
/// # Errors
///
/// [`Error::Query`] when SQLite fails, [`Error::InvalidRow`] for a list that is
/// not a JSON list of strings (hydration refuses it too).
pub fn subject_ids_of(store: &Store, ids: &[&str]) -> Result<HashMap<String, Vec<String>>> {
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&str> = ids.iter().copied().filter(|id| seen.insert(*id)).collect();
    let mut out = HashMap::with_capacity(unique.len());
    for_each_in_chunks(
        store,
        "subject ids by particle",
        &unique,
        |list| format!("SELECT id, rowid, subject_ids_json FROM particles WHERE id IN ({list})"),
        SqlClock::Untimed,
        |row| {
            let id: String = row.get(0).map_err(query_error("subject ids by particle"))?;
            let rowid: i64 = row.get(1).map_err(query_error("subject ids by particle"))?;
            let text: String = row.get(2).map_err(query_error("subject ids by particle"))?;
            let subjects: Vec<String> =
                serde_json::from_str(&text).map_err(|e| Error::InvalidRow {
                    id: id.clone(),
                    rowid,
                    field: "subject_ids_json".to_owned(),
                    reason: e.to_string(),
                })?;
            out.insert(id, subjects);
            Ok(())
        },
    )?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every list length the lookups send (padded to powers of two, then the
    /// full chunk) finds its rows through the id index, not by walking the
    /// status index, on the reference's schema and its indexes, and in id
    /// order without a sort (a sort would be a second line of the plan).
    #[test]
    fn a_delta_reads_its_rows_by_id_whatever_the_list_length() {
        let fixture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/stores/coins-a.db");
        let store = Store::open_read_only(&fixture).unwrap();
        let mut length = 1;
        loop {
            let sql = delta_sql(&crate::chunked::placeholders(length));
            let mut statement = store
                .connection()
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .unwrap();
            let plan: Vec<String> = statement
                .query_map(rusqlite::params_from_iter(vec!["x"; length]), |row| {
                    row.get(3)
                })
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert_eq!(plan.len(), 1, "{length}: {plan:?}");
            assert!(
                plan[0].starts_with(
                    "SEARCH particles USING INDEX sqlite_autoindex_particles_1 (id=?)"
                ),
                "{length}: {plan:?}"
            );
            if length == crate::ID_CHUNK {
                break;
            }
            length = crate::chunked::padded_len(length + 1);
        }
    }

    /// A row read by rowid is the row read by id, hydrated the same; a rowid
    /// whose row has another id, or no row, is left out for the caller's
    /// lookup by id; and the list goes down the table's tree, not an index.
    #[test]
    fn rows_read_by_rowid_are_the_rows_read_by_id_and_a_moved_id_is_left_out() {
        let fixture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/stores/coins-a.db");
        let store = Store::open_read_only(&fixture).unwrap();
        let rows: Vec<(i64, String)> = store
            .connection()
            .prepare("SELECT rowid, id FROM particles ORDER BY id DESC")
            .unwrap()
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(rows.len() >= 3, "the fixture has rows");
        let mut wanted: Vec<(i64, &str)> = rows.iter().map(|(r, id)| (*r, id.as_str())).collect();
        let ids: Vec<&str> = wanted.iter().map(|&(_, id)| id).collect();
        let by_id = particles_by_ids(&store, &ids).unwrap();
        let by_rowid = particles_at_rowids(&store, &wanted).unwrap();
        assert_eq!(by_rowid.len(), rows.len());
        assert!(
            by_rowid.windows(2).all(|w| w[0].0 < w[1].0),
            "in rowid order"
        );
        for (rowid, particle) in &by_rowid {
            let expected = by_id.iter().find(|p| p.id == particle.id).unwrap();
            assert_eq!(particle, expected);
            assert!(wanted.contains(&(*rowid, particle.id.as_str())));
        }
        // The first row's id moved to the second's rowid; a rowid past the end.
        let moved = (wanted[1].0, wanted[0].1);
        let past_end = (rows.iter().map(|(r, _)| *r).max().unwrap() + 1, "nowhere");
        wanted = vec![moved, past_end, wanted[2]];
        let read = particles_at_rowids(&store, &wanted).unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!((read[0].0, read[0].1.id.as_str()), wanted[2]);

        let sql = format!(
            "EXPLAIN QUERY PLAN SELECT {MODEL_COLUMNS} FROM particles WHERE rowid IN ({})",
            crate::chunked::placeholders(4)
        );
        let plan: Vec<String> = store
            .connection()
            .prepare(&sql)
            .unwrap()
            .query_map(rusqlite::params_from_iter([1, 2, 3, 4]), |row| row.get(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("USING INTEGER PRIMARY KEY (rowid=?)")),
            "{plan:?}"
        );
    }
}
