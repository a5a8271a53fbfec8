//! The long-lived engine: configured stores with their caches, the question
//! encoder, the answer step, and one entry point that turns a request into the
//! reference's whole `QueryResponse`.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use particles_cache::{
    CandidateCache, Route, SharedCache, SidecarConfig, SidecarWrite, WriteBehind,
};
use particles_model::{response::QueryResponse, Envelope, Mode, Timestamp, ValidRequest};
use particles_query::{QueryInput, QueryOutcome};
use particles_store::Store;

use crate::{
    batcher::{BatchTiming, Ranked},
    respond, Error, Result, Settings, StoreSelection, StoreTarget,
};

/// Turns a question into its query vector (the encoder, loaded once by the
/// caller). An error means no vector: the ranking then degrades, as the
/// reference's does without an encoder.
pub type Encode = Arc<dyn Fn(&str) -> std::result::Result<Vec<f32>, String> + Send + Sync>;

/// How much of an answer a front end wants: every front end asks through
/// [`Engine::ask`], and formats what comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// The ranking and the response around it, without the answer step (no
    /// provider call): the hit table, `query --json` and `serve --stdio`'s hit
    /// lines print [`Answered::outcome`].
    Ranking,
    /// The reference's whole response, the answer step included.
    Response,
}

/// A whole answer: the response (and, for a ranking, its outcome), the
/// journal position it is exact at, and where its time went.
#[derive(Debug)]
pub struct Answered {
    /// The reference's whole response (with [`Detail::Ranking`], its `answer`
    /// is left empty: no answer step ran).
    pub response: QueryResponse,
    /// The ranking the response was built from: hits with their similarity and
    /// effective confidence, the counts behind them. `None` for a
    /// deterministic mode, whose response is the whole answer.
    pub outcome: Option<QueryOutcome>,
    /// The instant decay and the recency window were evaluated at.
    pub now: Timestamp,
    /// Whether the ranking had a query vector (else it ranked by effective
    /// confidence alone).
    pub ranked_by_similarity: bool,
    /// `particle_changes.seq` in the snapshot the ranking read, when the one
    /// store has a journal.
    pub journal_seq: Option<i64>,
    /// Where the time went.
    pub timings: AnswerTimings,
}

/// Where one answer's time went, wall clock.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct AnswerTimings {
    /// Encoding the question (zero when the envelope brought the vector).
    pub encode: Duration,
    /// The ranking and the response around it, waiting included.
    pub rank: Duration,
    /// Within `rank`, on a single store: the wait for the batches ahead, and the
    /// batch that answered this request.
    pub batch: Option<BatchTiming>,
    /// The answer step (a provider call, or the fixed sentence).
    pub answer: Duration,
}

/// How the engine keeps its candidate caches.
#[derive(Debug, Clone, Default)]
pub struct CacheOptions {
    /// No sidecar: every cache starts cold.
    pub no_sidecar: bool,
    /// Where sidecars live (default: beside each store).
    pub sidecar_dir: Option<PathBuf>,
    /// When sidecars are written.
    pub write: Option<SidecarWrite>,
    /// Keep vectors in huge pages (long-lived processes).
    pub huge_pages: bool,
    /// Scan a half-precision copy of the vectors of every state whose `f32`
    /// vectors hold at least this many bytes, reading exact rows only where an
    /// interval cannot decide (long-lived processes; same answers, half the bytes
    /// per question, half the vectors' size again in memory). `None`: never.
    pub half_precision: Option<usize>,
    /// Keep the hydrated particles of every row of a store of at most this many
    /// rows (long-lived processes; `particles_cache::KEEP_PARTICLES_MAX_ROWS`),
    /// so a query's hits are read from memory. `None`: never.
    pub keep_particles: Option<usize>,
    /// Rank every query from the store itself, through the uncached loader:
    /// no cache state is kept or read. Slow on a large store; it is the oracle
    /// the cached path is checked against.
    pub uncached: bool,
    /// Reports a cache build's progress (a progress bar, in a terminal).
    pub build_progress: Option<ProgressFactory>,
}

/// Makes one cache build's progress callback, per store.
#[derive(Clone)]
pub struct ProgressFactory(pub Arc<dyn Fn() -> particles_cache::BuildProgress + Send + Sync>);

impl std::fmt::Debug for ProgressFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressFactory")
    }
}

/// How a store's cache served the last query that went through it.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct CacheReport {
    /// The route (`reuse`, `delta`, `rebuild`, `sidecar`, ...; see `Route::as_str`).
    pub route: Option<Route>,
    /// For a delta, the changed ids it re-read.
    pub changed: Option<usize>,
    /// Rows the cache holds.
    pub rows: Option<usize>,
    /// Heap bytes the cache holds.
    pub heap_bytes: usize,
}

/// What [`Engine::follow_writes`] started: each thread can be missing, when
/// no store can be followed or the thread cannot start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Following {
    /// A thread brings the caches to each commit's head and warms the band's
    /// sources before the next question.
    pub writes: bool,
    /// A thread writes each followed store's sidecar behind its cache; a
    /// front end without one writes it itself ([`Engine::persist`]).
    pub write_behind: bool,
}

/// One store's cache after [`Engine::warm`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct Warmed {
    /// The store's file.
    pub store: PathBuf,
    /// How its cache was brought to the head (`None`: the store is read
    /// uncached).
    pub route: Option<Route>,
    /// The journal head the cache is now at (`None`: the store has no
    /// journal, so every query reads it).
    pub journal_seq: Option<i64>,
    /// Rows the cache holds.
    pub rows: Option<usize>,
}

/// One store: a pool of read-only connections and one candidate cache.
struct StoreSlot {
    target: StoreTarget,
    connections: Mutex<Vec<Store>>,
    cache: SharedCache,
    uncached: bool,
    batcher: crate::batcher::Batcher,
    /// How the cache served the last batch on this store.
    last_route: Mutex<Option<Route>>,
    /// How many times the cache took each route (by `Route::as_str`).
    route_counts: Mutex<std::collections::BTreeMap<&'static str, u64>>,
    /// For a Litestream replica, what keeps its answers from going backwards
    /// when the copy is replaced.
    replica: Option<ReplicaGuard>,
}

/// A replica slot's positions, which never go back. A replica's copy can
/// move back: a node's copy restored anew from a replica that is behind, or
/// the primary itself restored from an older backup (Litestream ships that as
/// one more transaction, and the journal's head falls back). The slot then
/// refuses to answer below the highest position it already answered at, until
/// the copy passes it again.
///
/// Batches are compared in the order their read transactions began (a
/// ticket taken as each starts; one leader at a time, so tickets follow
/// snapshots), not in the order their answers finish: the last answers of one
/// batch may be built after the first of the next, at a lower position, and
/// that is not going back.
#[derive(Default)]
struct ReplicaGuard {
    /// Tickets handed to batches as they start.
    tickets: std::sync::atomic::AtomicU64,
    /// The latest batch (by ticket) that answered, and the highest position
    /// answered at.
    latest: Mutex<(u64, i64)>,
    /// The copy the slot last saw at the path, so one replacement is logged
    /// once.
    seen: Mutex<Option<particles_store::replica::CopyIdentity>>,
}

impl StoreSlot {
    fn open(target: &StoreTarget, options: &CacheOptions) -> Result<StoreSlot> {
        let first = Store::open_read_only(&target.path)?;
        let mut cache = if options.no_sidecar {
            CandidateCache::new()
        } else {
            CandidateCache::with_sidecar(SidecarConfig {
                path: particles_cache::sidecar_path(&target.path, options.sidecar_dir.as_deref()),
                write: options.write.unwrap_or(SidecarWrite::OnRebuild),
            })
        };
        cache.set_huge_pages(options.huge_pages);
        cache.set_half_precision(options.half_precision);
        cache.set_keep_particles(options.keep_particles);
        if let Some(progress) = &options.build_progress {
            cache.set_build_progress((progress.0)());
        }
        Ok(StoreSlot {
            target: target.clone(),
            cache: SharedCache::new(cache),
            uncached: options.uncached,
            batcher: crate::batcher::Batcher::default(),
            last_route: Mutex::new(None),
            route_counts: Mutex::default(),
            replica: first.is_replica().then(|| ReplicaGuard {
                seen: Mutex::new(particles_store::replica::identity(&target.path)),
                ..ReplicaGuard::default()
            }),
            connections: Mutex::new(vec![first]),
        })
    }

    /// Records the route the cache took for a batch (or a warm-up).
    fn record_route(&self, route: Option<Route>) {
        *self
            .last_route
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = route;
        if let Some(route) = route {
            *self
                .route_counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(route.as_str())
                .or_default() += 1;
        }
    }

    /// Brings the cache to the head of `snapshot` (what a query does first),
    /// records the route and returns it.
    fn to_head(&self, snapshot: &Store) -> particles_store::Result<Option<Route>> {
        let mut loader = self.cache.loader();
        // No row passes an infinite floor: the selection is empty, the
        // refresh is the work.
        particles_store::CandidateLoader::select(&mut loader, snapshot, f64::INFINITY, None)?;
        self.record_route(loader.route());
        Ok(loader.route())
    }

    /// A connection of the pool, or a new one. A replica's pooled connection
    /// whose copy was replaced is dropped with the rest of the pool.
    fn connection(&self) -> Result<Store> {
        let pooled = self
            .connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match pooled {
            Some(store) if store.copy_replaced() => {
                self.copy_replaced();
                self.open_connection()
            }
            Some(store) => Ok(store),
            None => self.open_connection(),
        }
    }

    /// A new connection on the slot's path. A replica's copy is opened only
    /// while it is whole: a copy deleted for a restore, or a new one whose
    /// follower has not yet written its `-txid` file (the restore under way),
    /// is refused as [`Error::ReplicaRestoring`]. Opened then, it would fail
    /// on the missing file, or read a copy the follower is still writing as
    /// if it were a primary (its header saying WAL, its memo keyed by a
    /// `data_version` the follower does not move) and stay in the pool.
    fn open_connection(&self) -> Result<Store> {
        let restoring = || Error::ReplicaRestoring {
            store: self.target.path.clone(),
        };
        if self.replica.is_some() && !particles_store::replica::is_replica(&self.target.path) {
            return Err(restoring());
        }
        match Store::open_read_only(&self.target.path) {
            Ok(store) if self.replica.is_some() && !store.is_replica() => Err(restoring()),
            Ok(store) => Ok(store),
            Err(particles_store::Error::NotFound { .. }) if self.replica.is_some() => {
                Err(restoring())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// A replaced copy's connection is put back too: the next checkout
    /// ([`StoreSlot::connection`]) finds it replaced and drops the pool.
    fn give_back(&self, store: Store) {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(store);
    }

    /// A replica's copy was replaced: the pooled connections (on the old
    /// file) are dropped; the new copy answers only from the highest position
    /// answered so far ([`ReplicaGuard`]). Said once per new copy.
    fn copy_replaced(&self) {
        let Some(guard) = &self.replica else { return };
        drop(std::mem::take(
            &mut *self
                .connections
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        ));
        let now = particles_store::replica::identity(&self.target.path);
        let mut seen = guard.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if *seen != now {
            *seen = now;
            let highest = guard
                .latest
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .1;
            tracing::warn!(
                store = %self.target.path.display(),
                answered_up_to = highest,
                litestream_txid = particles_store::replica::applied_txid(&self.target.path),
                "the replica copy was replaced (restored anew): reading the new copy, which \
                 answers once it reaches the position already answered at"
            );
        }
    }

    /// A ticket for a batch starting on this slot (replicas only).
    fn ticket(&self) -> Option<u64> {
        self.replica.as_ref().map(|guard| {
            guard
                .tickets
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                + 1
        })
    }

    /// Checks an answer's position on a replica, for the batch holding
    /// `ticket`: a batch that began after the latest one answered may not
    /// answer below the highest position answered ([`ReplicaGuard`]).
    fn check_position(&self, ticket: Option<u64>, seq: Option<i64>) -> Result<()> {
        let (Some(guard), Some(ticket), Some(seq)) = (&self.replica, ticket, seq) else {
            return Ok(());
        };
        let mut latest = guard.latest.lock().unwrap_or_else(PoisonError::into_inner);
        let (latest_ticket, highest) = *latest;
        if ticket < latest_ticket {
            // An earlier snapshot's answer, finishing after a later one's.
            return Ok(());
        }
        if seq < highest {
            drop(latest);
            tracing::warn!(
                store = %self.target.path.display(),
                journal_seq = seq,
                answered_up_to = highest,
                "the replica's copy is behind the position already answered at (restored \
                 from behind, or the primary restored from an older backup): refusing to \
                 answer from it until it passes that position"
            );
            return Err(Error::ReplicaBehind {
                store: self.target.path.clone(),
                seq,
                floor: highest,
            });
        }
        *latest = (ticket, seq);
        Ok(())
    }
}

/// The engine: configuration, stores, caches, encoder and answer step.
pub struct Engine {
    settings: Settings,
    answer: particles_answer::AnswerSettings,
    federated: bool,
    slots: Vec<StoreSlot>,
    encoder: Option<Encode>,
    strict_encoder: bool,
}

impl Engine {
    /// An engine over the selected stores, configured by `settings` (and the
    /// answer step by `answer`), encoding questions with `encoder` when given.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when a store cannot be opened.
    pub fn new(
        settings: Settings,
        answer: particles_answer::AnswerSettings,
        stores: &StoreSelection,
        options: &CacheOptions,
        encoder: Option<Encode>,
    ) -> Result<Engine> {
        let slots = stores
            .targets
            .iter()
            .map(|target| StoreSlot::open(target, options))
            .collect::<Result<Vec<_>>>()?;
        Ok(Engine {
            settings,
            answer,
            federated: stores.federated,
            slots,
            encoder,
            strict_encoder: false,
        })
    }

    /// An engine whose question encoder must work: a question without a vector
    /// that cannot be encoded (no encoder, or its model missing) is
    /// [`Error::Encode`] instead of a degraded ranking. The one-shot CLI and
    /// `serve --stdio` refuse so; the HTTP engine and MCP degrade, as the
    /// reference's engine does without an encoder.
    #[must_use]
    pub fn with_strict_encoder(mut self) -> Engine {
        self.strict_encoder = true;
        self
    }

    /// Whether the engine federates its stores.
    pub fn federated(&self) -> bool {
        self.federated
    }

    /// How the first store's cache served the last query (a plain query's; a
    /// federation reports none), with the rows and bytes it holds.
    pub fn cache_report(&self) -> Option<CacheReport> {
        let slot = self.slots.first().filter(|_| !self.federated)?;
        if slot.uncached {
            return None;
        }
        let route = *slot
            .last_route
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (rows, heap_bytes) = slot
            .cache
            .with_cache(|cache| (cache.cached_rows(), cache.heap_bytes()));
        Some(CacheReport {
            route,
            changed: route.and_then(Route::changed),
            rows,
            heap_bytes,
        })
    }

    /// Brings every store's cache to its store's head now (what the next
    /// query would otherwise do first): a server warms its caches at start,
    /// and its readiness check asks for this, so "ready" means a query will
    /// not wait for a build. Each store is read in one snapshot.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when a store cannot be opened or read.
    pub fn warm(&self) -> Result<Vec<Warmed>> {
        self.slots
            .iter()
            .map(|slot| {
                let store = slot.connection()?;
                let warmed = store.read_snapshot(|snapshot| {
                    let journal_seq = particles_store::read_head(snapshot)?.map(|head| head.seq);
                    if slot.uncached {
                        return Ok((None, journal_seq));
                    }
                    Ok((slot.to_head(snapshot)?, journal_seq))
                });
                slot.give_back(store);
                let (route, journal_seq) = warmed?;
                Ok(Warmed {
                    store: slot.target.path.clone(),
                    route,
                    journal_seq,
                    rows: slot.cache.with_cache(|cache| cache.cached_rows()),
                })
            })
            .collect()
    }

    /// Follows the stores' writes on a thread of its own: soon after another
    /// process commits to a store, its cache is brought to the head and the
    /// truncation band's sources are read again, so the next question does
    /// not wait for either (see `follow.rs`). A second thread writes each
    /// followed store's sidecar behind its cache when the file would then
    /// serve a state that holds memory of its own (see `writeback.rs`).
    /// Stores read uncached and Litestream replicas are not followed. The
    /// threads end when the engine is dropped. Returns which of the two run.
    pub fn follow_writes(self: &std::sync::Arc<Engine>) -> Following {
        let stores: Vec<(usize, std::path::PathBuf)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| !slot.uncached && slot.replica.is_none())
            .map(|(at, slot)| (at, slot.target.path.clone()))
            .collect();
        Following {
            write_behind: crate::writeback::spawn(std::sync::Arc::downgrade(self), stores.clone()),
            writes: crate::follow::spawn(std::sync::Arc::downgrade(self), stores).is_some(),
        }
    }

    /// Writes store `at`'s sidecar behind its cache when the file would then
    /// serve the state from its map (`SharedCache::write_behind`), and warms
    /// the band's sources of the state swapped in, as after a write. With the
    /// cache's notes.
    pub(crate) fn write_behind(&self, at: usize) -> (Option<WriteBehind>, Vec<String>) {
        let slot = &self.slots[at];
        let outcome = slot.cache.write_behind(&slot.target.path);
        let notes = slot.cache.with_cache(|cache| cache.take_notes());
        if matches!(outcome, Some(WriteBehind::Served { .. })) {
            let started = Instant::now();
            match self.warm_after_write(at) {
                Ok((_, sources)) => tracing::debug!(
                    sources,
                    elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
                    "the band's sources of the state from the file are warm"
                ),
                Err(error) => {
                    tracing::debug!(%error, "the band's sources were left for the next question");
                }
            }
        }
        (outcome, notes)
    }

    /// What the first question after a write would do first, on store `at`:
    /// its cache brought to the head (recorded as a route) and, in the same
    /// snapshot, the band's sources of the cache's set read into a pooled
    /// connection's memo; the connection goes back on top of the pool.
    /// Returns the cache's route and how many sources the memo holds.
    pub(crate) fn warm_after_write(&self, at: usize) -> Result<(Option<Route>, usize)> {
        let slot = &self.slots[at];
        let store = slot.connection()?;
        let warmed = store.read_snapshot(|snapshot| {
            let route = slot.to_head(snapshot)?;
            let set = slot.cache.with_cache(|cache| cache.candidates());
            Ok((
                route,
                set.map(|set| {
                    particles_query::warm_band_sources(
                        snapshot,
                        &set,
                        &self.settings.rank,
                        Timestamp::now(),
                    )
                }),
            ))
        });
        slot.give_back(store);
        let (route, sources) = warmed?;
        Ok((route, sources.transpose()?.unwrap_or(0)))
    }

    /// How many times each store's cache took each route (`reuse`, `delta`,
    /// `rebuild`, `sidecar`, ...), summed over the stores, since the engine
    /// was built.
    pub fn cache_route_counts(&self) -> Vec<(&'static str, u64)> {
        let mut total = std::collections::BTreeMap::new();
        for slot in &self.slots {
            for (route, count) in slot
                .route_counts
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
            {
                *total.entry(*route).or_insert(0) += count;
            }
        }
        total.into_iter().collect()
    }

    /// The stores this engine serves that are Litestream replicas
    /// (follow-mode copies), as their files.
    pub fn replica_stores(&self) -> Vec<&std::path::Path> {
        self.slots
            .iter()
            .filter(|slot| slot.replica.is_some())
            .map(|slot| slot.target.path.as_path())
            .collect()
    }

    /// Whether questions can be encoded (an encoder was given). A lazy
    /// encoder counts as present until a question fails to load it.
    pub fn has_encoder(&self) -> bool {
        self.encoder.is_some()
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Answers a validated request with the reference's whole response: the
    /// ranking, its disclosures and the answer. The envelope may bring the query
    /// vector (else the question is encoded), ask for no vector, or freeze `now`.
    ///
    /// Blocking: it reads SQLite and may call the answer's provider.
    ///
    /// # Errors
    ///
    /// [`Error::Query`], [`Error::Respond`] or [`Error::Structural`] when the
    /// query fails where the reference fails too (a bad store, a degenerate
    /// configuration, an unsupported mode, an ambiguous subject prefix);
    /// [`Error::Encode`] for an envelope vector of the wrong shape.
    pub fn query(&self, request: &ValidRequest, envelope: &Envelope) -> Result<QueryResponse> {
        self.query_with_position(request, envelope)
            .map(|(response, _)| response)
    }

    /// [`Engine::query`], with the journal position the answer is exact at
    /// (`particle_changes.seq` in the snapshot the ranking read), when the one
    /// store has a journal: the HTTP engine sends it as a response header so a
    /// client can tell which store state it was answered from.
    ///
    /// # Errors
    ///
    /// As [`Engine::query`].
    pub fn query_with_position(
        &self,
        request: &ValidRequest,
        envelope: &Envelope,
    ) -> Result<(QueryResponse, Option<i64>)> {
        self.query_timed(request, envelope)
            .map(|answered| (answered.response, answered.journal_seq))
    }

    /// [`Engine::query_with_position`], with where the time went: the HTTP
    /// engine sends it as a `Server-Timing` header, and the load benchmark reads
    /// it to tell queueing from work.
    ///
    /// # Errors
    ///
    /// As [`Engine::query`].
    pub fn query_timed(&self, request: &ValidRequest, envelope: &Envelope) -> Result<Answered> {
        self.ask(request, envelope, Detail::Response)
    }

    /// The one way from a request to an answer, for every front end: a
    /// deterministic mode's response, or the ranking (batched with concurrent
    /// questions on one store, federated over several) with the response
    /// around it and, with [`Detail::Response`], the answer step.
    ///
    /// # Errors
    ///
    /// As [`Engine::query`].
    pub fn ask(
        &self,
        request: &ValidRequest,
        envelope: &Envelope,
        detail: Detail,
    ) -> Result<Answered> {
        let now = envelope.now.unwrap_or_else(Timestamp::now);
        let started = Instant::now();
        if request.mode() != Mode::Semantic {
            let response = self.structural(request, now)?;
            return Ok(Answered {
                response,
                outcome: None,
                now,
                ranked_by_similarity: false,
                journal_seq: None,
                timings: AnswerTimings {
                    rank: started.elapsed(),
                    ..AnswerTimings::default()
                },
            });
        }
        let vector = self.vector(request, envelope)?;
        let encoded = started.elapsed();
        let ((outcome, mut response), batch) =
            self.rank(request, vector.as_deref(), now, &envelope.recall)?;
        let ranked = started.elapsed();
        // Without question text (a vector or no_embedding stood in for it)
        // there is nothing to ask a provider: the answer step runs only where
        // it calls none (no hits, or hits below the relevance floor: its fixed
        // sentences), else the answer stays empty.
        let fixed_sentence = outcome.hits.is_empty()
            || response.relevance.is_some_and(|r| {
                particles_answer::Relevance::new(r.max_similarity, r.floor).below_floor
            });
        if detail == Detail::Response && (request.question.is_some() || fixed_sentence) {
            respond::answer(
                &mut response,
                &outcome,
                request,
                &self.settings,
                &self.answer,
                vector.is_some(),
            );
        }
        Ok(Answered {
            response,
            journal_seq: outcome.journal_seq,
            outcome: Some(outcome),
            now,
            ranked_by_similarity: vector.is_some(),
            timings: AnswerTimings {
                encode: encoded,
                rank: ranked.saturating_sub(encoded),
                batch,
                answer: started.elapsed().saturating_sub(ranked),
            },
        })
    }

    /// A deterministic mode (listings, aggregates, the vocabulary report, the
    /// window listing): no vector, no cache and no answer call, its sentence is
    /// the answer. One store only: the reference's federated structural path
    /// is not ported, so a federated engine refuses it as an unsupported mode
    /// (the HTTP engine forwards those to its upstream).
    fn structural(&self, request: &ValidRequest, now: Timestamp) -> Result<QueryResponse> {
        if self.federated {
            return Err(Error::Query(particles_query::Error::UnsupportedMode {
                mode: "federated structural",
            }));
        }
        let input = QueryInput {
            settings: &self.settings.rank,
            ..QueryInput::new(request, None, now)
        };
        self.with_store(|store| {
            Ok(particles_structural::run_structural_with(
                store,
                &input,
                &self.settings.structural,
            )?)
        })
    }

    /// The query vector: the envelope's, none, or the question encoded (no
    /// encoder, or an encoder that fails, means none).
    fn vector(&self, request: &ValidRequest, envelope: &Envelope) -> Result<Option<Vec<f32>>> {
        if let Some(vector) = &envelope.vector {
            check_vector(vector)?;
            return Ok(Some(vector.clone()));
        }
        if envelope.no_embedding || request.mode() != Mode::Semantic {
            return Ok(None);
        }
        let Some(question) = &request.question else {
            return Ok(None);
        };
        match (&self.encoder, self.strict_encoder) {
            (Some(encoder), true) => encoder(question).map(Some).map_err(Error::Encode),
            (Some(encoder), false) => Ok(encoder(question).ok()),
            (None, true) => Err(Error::Encode(
                "this engine has no question encoder; send a vector or no_embedding".to_owned(),
            )),
            (None, false) => Ok(None),
        }
    }

    /// The ranking; when a cached state's bytes fail their check (a damaged
    /// sidecar), the caches are discarded and the query answered again from the
    /// stores.
    fn rank(
        &self,
        request: &ValidRequest,
        vector: Option<&[f32]>,
        now: Timestamp,
        recall: &particles_model::RecallOptions,
    ) -> Result<(Ranked, Option<BatchTiming>)> {
        match self.rank_once(request, vector, now, recall) {
            Err(Error::Query(particles_query::Error::Rank(
                particles_rank::Error::DamagedVector { .. },
            ))) => {
                for slot in &self.slots {
                    slot.cache.discard();
                }
                self.rank_once(request, vector, now, recall)
            }
            other => other,
        }
    }

    /// The ranking: one store (its queries batched with concurrent ones), or a
    /// federation over every store.
    fn rank_once(
        &self,
        request: &ValidRequest,
        vector: Option<&[f32]>,
        now: Timestamp,
        recall: &particles_model::RecallOptions,
    ) -> Result<(Ranked, Option<BatchTiming>)> {
        let response_settings = self.settings.response();
        if self.federated && recall.is_active() {
            // The reference's federation (`query_federated`) takes none of them.
            return Err(Error::Encode(
                "apply_utility, apply_owner, exclude_source_tags and code_symbol_rank_weight \
                 rank one store: ask one store (not a federation)"
                    .to_owned(),
            ));
        }
        if !self.federated {
            let slot = &self.slots[0];
            let (ranked, timing) = slot.batcher.query(
                request,
                vector,
                now,
                recall,
                &self.settings.rank,
                &self.settings.truncation,
                &|inputs, events| {
                    let ticket = slot.ticket();
                    let store = slot.connection()?;
                    // Each response is built in its ranking's read transaction
                    // (`snapshot`), as soon as the ranking hands its outcome out.
                    let answered = &mut |at: usize,
                                         snapshot: &Store,
                                         outcome: particles_query::Result<QueryOutcome>| {
                        let answer = outcome.map_err(Error::from).and_then(|outcome| {
                            slot.check_position(ticket, outcome.journal_seq)?;
                            let response = particles_respond::semantic_response(
                                snapshot,
                                &outcome,
                                &inputs[at],
                                &response_settings,
                            )?;
                            Ok((outcome, response))
                        });
                        (events.answered)(at, answer);
                    };
                    let harness_tags = &response_settings.observer_harness_tags;
                    let result = if slot.uncached {
                        particles_query::run_semantic_batch_streaming(
                            &store,
                            &mut particles_store::UncachedLoader,
                            inputs,
                            harness_tags,
                            events.passes_done,
                            answered,
                        )
                    } else {
                        let mut loader = slot.cache.loader();
                        let result = particles_query::run_semantic_batch_streaming(
                            &store,
                            &mut loader,
                            inputs,
                            harness_tags,
                            events.passes_done,
                            answered,
                        );
                        slot.record_route(loader.route());
                        result
                    };
                    slot.give_back(store);
                    Ok(result?)
                },
            );
            return ranked.map(|ranked| (ranked, Some(timing)));
        }
        let input = QueryInput {
            settings: &self.settings.rank,
            ..QueryInput::new(request, vector, now)
        }
        .with_truncation(&self.settings.truncation);
        let stores = self
            .slots
            .iter()
            .map(StoreSlot::connection)
            .collect::<Result<Vec<_>>>()?;
        let result = if self.federated {
            let mut loaders: Vec<particles_cache::SharedLoader<'_>> =
                self.slots.iter().map(|slot| slot.cache.loader()).collect();
            let mut uncached: Vec<particles_store::UncachedLoader> = self
                .slots
                .iter()
                .map(|_| particles_store::UncachedLoader)
                .collect();
            let mut members: Vec<particles_query::FederationMember<'_>> = self
                .slots
                .iter()
                .zip(&stores)
                .zip(loaders.iter_mut().zip(uncached.iter_mut()))
                .map(|((slot, store), (cached, uncached))| {
                    let loader: &mut dyn particles_store::CandidateLoader =
                        if slot.uncached { uncached } else { cached };
                    particles_query::FederationMember {
                        handle: slot.target.name(),
                        store,
                        loader,
                    }
                })
                .collect();
            particles_query::run_federated(&mut members, &input)
                .map_err(Error::from)
                .and_then(|outcome| {
                    // The federated response: the ranking's fields, and every
                    // store's unextracted entries, concatenated (no subject gaps,
                    // narratives, agreement, contestedness or badges).
                    let mut response = respond::ranking_response(
                        &outcome,
                        request,
                        &self.settings,
                        vector.is_some(),
                    );
                    for store in &stores {
                        response
                            .coverage_gaps
                            .extend(particles_store::coverage_gap_entries(store)?);
                    }
                    Ok((outcome, response))
                })
        } else {
            unreachable!("a single store is answered through its batcher above")
        };
        for (slot, store) in self.slots.iter().zip(stores) {
            slot.give_back(store);
        }
        result.map(|ranked| (ranked, None))
    }

    /// Writes each cache's sidecar when its policy asks; returns the notes.
    pub fn persist(&self) -> Vec<String> {
        self.persist_counted().1
    }

    /// [`Engine::persist`], with how many sidecars were written.
    pub fn persist_counted(&self) -> (usize, Vec<String>) {
        let mut notes = Vec::new();
        let mut written = 0;
        for slot in &self.slots {
            written += usize::from(slot.cache.persist(&slot.target.path));
            notes.extend(slot.cache.with_cache(|cache| cache.take_notes()));
        }
        (written, notes)
    }

    /// The first store's cached candidates, when its cache holds a state (for
    /// the benchmark's scan floor, measured over the very vectors the engine
    /// scans).
    pub fn candidates(&self) -> Option<Arc<particles_candidates::CandidateSet>> {
        self.slots
            .first()?
            .cache
            .with_cache(|cache| cache.candidates())
    }

    /// The source passage behind the particle `id` in the first store,
    /// rebuilt from the store and its blob files as the reference does
    /// (`GET /particles/{id}/source`, `query --show-source`).
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the store cannot be read.
    pub fn source_passage(
        &self,
        id: &str,
        settings: &crate::PassageSettings,
    ) -> Result<crate::Hydrated> {
        self.with_store(|store| Ok(crate::passage::hydrate(store, id, settings)?))
    }

    /// Runs `f` with a pooled connection to the first (the default) store.
    ///
    /// # Errors
    ///
    /// Whatever `f` or opening a connection fails with.
    pub fn with_store<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let slot = &self.slots[0];
        let store = slot.connection()?;
        let result = f(&store);
        slot.give_back(store);
        result
    }

    /// The session digest of `target` (shown under `name`, the handle the caller
    /// asked for), through the observer `project` when given, at `now`: read in
    /// one snapshot, through the engine's own connection when it serves that
    /// store, else a read-only connection opened for the call. Never cached: it
    /// reads the store as it is (the reference renders it fresh every time).
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the store cannot be opened or read,
    /// [`Error::Respond`] when it holds data the reference also fails on.
    pub fn digest(
        &self,
        target: &crate::StoreTarget,
        name: &str,
        project: Option<&str>,
        now: Timestamp,
    ) -> Result<particles_respond::RenderedDigest> {
        self.read_target(target, |snapshot, _| {
            particles_respond::session_digest(
                snapshot,
                name,
                project,
                &self.settings.rank,
                &self.settings.digest,
                now,
            )
        })
    }

    /// The memory projection's region body of `manifest` over `target` at
    /// `now`: every section's ranking (without a query vector, with the recall
    /// lifts) and every other read in one snapshot. Never cached, like the digest.
    ///
    /// # Errors
    ///
    /// [`Error::Store`] when the store cannot be opened or read,
    /// [`Error::Respond`] for a manifest the reference refuses too (a file
    /// section, a stale pin) or data it fails on.
    pub fn memory_region(
        &self,
        target: &crate::StoreTarget,
        manifest: &particles_model::projection::DocManifest,
        request: particles_respond::RegionRequest<'_>,
        now: Timestamp,
    ) -> Result<particles_respond::MemoryRegion> {
        let settings = particles_respond::RegionSettings {
            digest: self.settings.digest.clone(),
            suppress_premises: self.settings.suppress_premises,
        };
        self.read_target(target, |snapshot, loader| {
            particles_respond::memory_region(
                snapshot,
                loader,
                manifest,
                request,
                &self.settings.rank,
                &settings,
                now,
            )
        })
    }

    /// `read` over one snapshot of `target`: through the engine's own
    /// connection and candidate cache when it serves that store, else a
    /// read-only connection opened for the call and the uncached loader.
    fn read_target<T>(
        &self,
        target: &crate::StoreTarget,
        read: impl FnOnce(
            &Store,
            &mut dyn particles_store::CandidateLoader,
        ) -> particles_respond::Result<T>,
    ) -> Result<T> {
        let slot = self
            .slots
            .iter()
            .find(|slot| slot.target.path == target.path);
        let store = match slot {
            Some(slot) => slot.connection()?,
            None => Store::open_read_only(&target.path)?,
        };
        let mut output = None;
        let outcome = store.read_snapshot(|snapshot| {
            output = Some(match slot {
                Some(slot) => read(snapshot, &mut slot.cache.loader()),
                None => read(snapshot, &mut particles_store::UncachedLoader),
            });
            Ok(())
        });
        if let Some(slot) = slot {
            slot.give_back(store);
        }
        outcome?;
        match output {
            Some(output) => Ok(output?),
            None => Err(Error::Batch("the read transaction did not run".to_owned())),
        }
    }
}

/// A query vector the ranking can take: at least one number, every one finite.
///
/// Its length is not checked here: the reference ranks whatever dimension the
/// store's embeddings have, and a row of another length than the question fails
/// the query where the ranking reads it (`particles_rank::Error::DimensionMismatch`),
/// as numpy's product fails the reference's.
///
/// # Errors
///
/// [`Error::Encode`] naming the empty vector or the element at fault.
pub fn check_vector(vector: &[f32]) -> Result<()> {
    if vector.is_empty() {
        return Err(Error::Encode(
            "the query vector is empty; give the numbers of one embedding".to_owned(),
        ));
    }
    if let Some(position) = vector.iter().position(|v| !v.is_finite()) {
        return Err(Error::Encode(format!(
            "element {position} of the query vector is not a finite number"
        )));
    }
    Ok(())
}

/// The answer step's settings from the configuration and the environment: the
/// provider `llm.query_response` (else `llm.default`) selects, its key from the
/// reference's variable, the token caps and the egress posture.
pub fn answer_settings(
    config: &particles_config::Config,
    env: &HashMap<String, String>,
) -> particles_answer::AnswerSettings {
    use particles_answer::{
        AllowEntry, AnthropicSettings, EgressPosture, MaxTokensParam, OpenAiCompatibleSettings,
        ProviderSettings,
    };
    let selection = config.llm.for_query_response();
    let provider = if selection.provider == "anthropic" {
        ProviderSettings::Anthropic(AnthropicSettings::from_env(selection.model.clone(), env))
    } else {
        match config.llm.providers.get(&selection.provider) {
            Some(entry) => {
                let mut settings = OpenAiCompatibleSettings::new(
                    selection.provider.clone(),
                    entry.base_url.clone(),
                    selection.model.clone(),
                )
                .with_key_from_env(env);
                settings.max_tokens_param = match entry.max_tokens_param {
                    particles_config::MaxTokensParam::MaxTokens => MaxTokensParam::MaxTokens,
                    particles_config::MaxTokensParam::MaxCompletionTokens => {
                        MaxTokensParam::MaxCompletionTokens
                    }
                };
                settings.reasoning_effort = entry.reasoning_effort.clone();
                settings.max_retries = u32::try_from(entry.max_retries.max(0)).unwrap_or(u32::MAX);
                settings.retry_backoff =
                    std::time::Duration::from_secs_f64(entry.retry_backoff_seconds.max(0.0));
                settings.timeout =
                    std::time::Duration::from_secs_f64(entry.timeout_seconds.max(0.0));
                settings.allow_plaintext_key = entry.allow_plaintext_key;
                ProviderSettings::OpenAiCompatible(settings)
            }
            // Validation refuses an unknown provider name; fall back to the
            // compiled default rather than panic.
            None => ProviderSettings::Anthropic(AnthropicSettings::from_env(
                selection.model.clone(),
                env,
            )),
        }
    };
    let egress = match config.network.egress {
        particles_config::Egress::Open => EgressPosture::Open,
        particles_config::Egress::None => EgressPosture::None,
        particles_config::Egress::Allowlist => EgressPosture::Allowlist(
            config
                .network
                .allow
                .iter()
                .map(|entry| AllowEntry {
                    host: entry.host.clone(),
                    port: entry.port,
                })
                .collect(),
        ),
    };
    particles_answer::AnswerSettings {
        provider,
        answer_max_tokens: u32::try_from(config.query.answer_max_tokens.max(0)).unwrap_or(u32::MAX),
        answer_retry_max_tokens: u32::try_from(config.query.answer_retry_max_tokens.max(0))
            .unwrap_or(u32::MAX),
        egress,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replica slot whose pool is empty never opens a copy that is not
    /// whole: not the missing file of a restore, not a new file its follower
    /// has not marked yet. Both are refused as retryable; the whole copy
    /// opens again as a replica.
    #[test]
    fn a_replica_slot_opens_only_a_whole_copy() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("replica.db");
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/stores/coins-b.db");
        std::fs::copy(&fixture, &copy).unwrap();
        let txid = particles_store::replica::txid_file(&copy);
        std::fs::write(&txid, "0000000000000009\n").unwrap();
        let target = StoreTarget {
            handle: None,
            path: copy.clone(),
        };
        let options = CacheOptions {
            no_sidecar: true,
            ..CacheOptions::default()
        };
        let slot = StoreSlot::open(&target, &options).unwrap();
        // The pool's one connection checked out: the next one is new.
        let held = slot.connection().unwrap();
        assert!(held.is_replica());
        let restoring = |what: &str, result: Result<Store>| match result {
            Err(Error::ReplicaRestoring { store }) => assert_eq!(store, copy, "{what}"),
            Err(other) => panic!("{what}: {other}"),
            Ok(_) => panic!("{what}: opened a copy that is not whole"),
        };

        // The copy deleted for a restore.
        std::fs::remove_file(&copy).unwrap();
        std::fs::remove_file(&txid).unwrap();
        restoring("the copy deleted", slot.connection());
        // The new copy there, its follower's file not yet.
        std::fs::copy(&fixture, &copy).unwrap();
        restoring("the copy without -txid", slot.connection());
        // The follower marks it: a whole replica again.
        std::fs::write(&txid, "000000000000000a\n").unwrap();
        assert!(slot.connection().unwrap().is_replica());
        // The connection held all along still reads the old copy.
        slot.give_back(held);
    }
}
