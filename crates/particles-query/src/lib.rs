//! The ranking of a Particles semantic query, step for step the reference's
//! `retrieve_ranked` (`linkedparticles` 1.214.1): which candidates a question
//! selects, in which order. What the answer shows around the hits is
//! `particles-respond`'s; the deterministic modes are `particles-structural`'s.
//!
//! [`run_query`] runs one validated request ([`ValidRequest`]) in one read
//! transaction of the store:
//!
//! 1. the schema guard and the policy snapshot;
//! 2. the route's loader (window, as-of, or the caller's: uncached or a cache)
//!    selects the candidates in the reference's order;
//! 3. the filters (properties, tags, structured claims, the recency window), the
//!    cosine and a score bound per candidate, in one pass split across cores;
//! 4. candidates in bound order, batch by batch: their source facts and premise
//!    statuses (chunked lookups), then their score, into a top-k
//!    collector, until no remaining bound can reach the k-th score;
//! 5. the cut at `top_k` and the co-evidential collapse;
//! 6. the hits' particles, read by id, and what the route's loader knows of them
//!    (as-of notes, window readings), and every count the answer reports.
//!
//! Given the same store file, query vector and `now`, the hits equal the
//! reference's: same ids, same order, the same similarity and effective-confidence
//! bits on x86-64. This crate joins the store (IO) and the rank (pure scoring)
//! crates; neither knows the other.
//!
//! [`run_query_batch`] answers several requests in one read transaction, sharing
//! a pass over the vectors; [`run_semantic_batch_streaming`] hands each outcome
//! out as it is built, with the store inside that transaction, so that a caller
//! builds the response in the ranking's snapshot. [`run_federated`] ranks one
//! request over several stores.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("beliefs.db");
//! # particles_store::create_store(&path)?;
//! use particles_model::{QueryRequest, Timestamp};
//! use particles_query::{run_query, QueryInput};
//! use particles_store::Store;
//! let store = Store::open_read_only(&path)?;
//! let now = Timestamp::parse("2026-01-01T00:00:00Z")?;
//! let request = QueryRequest::question("how are old coins graded?").validate(now)?;
//! let outcome = run_query(&store, &QueryInput::new(&request, None, now))?;
//! for hit in &outcome.hits {
//!     println!("{} {}", hit.id, hit.effective_confidence);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
#![forbid(unsafe_code)]

mod as_of;
mod band;
mod batch;
mod collect;
mod cores;
mod federate;
mod gather;
mod lift;
mod memo;
mod observer;
mod outcome;
mod recall;
mod route;
mod scan;
mod truncation;
mod window;

pub use crate::{
    as_of::{evaluate as as_of_visibility, RetirementIndex, Visibility},
    batch::{run_query_batch, run_semantic_batch_streaming},
    federate::{run_federated, FederationMember},
    gather::FactLookups,
    lift::{owner_viewer, recall_lifts, LiftItem, OwnerViewer},
    observer::{default_harness_tags, entry_in_view, observer_filter, ObserverFilter},
    outcome::{
        BeyondCut, ClaimCoverage, Counted, Hit, QueryOutcome, QueryStats, ScanStop, StageTimings,
        WorkCounters,
    },
    truncation::{truncation_warning, TruncationSettings},
    window::{gather_window, WindowGathered},
};

use std::{collections::HashMap, time::Instant};

use particles_candidates::CandidateSet;
use particles_model::{Mode, Particle, RecallOptions, Timestamp, ValidRequest};
use particles_rank::{NormKernel, Policies, QueryVector, RankSettings};
use particles_store::{CandidateLoader, Store, UncachedLoader};

use crate::{collect::Scored, gather::Gather, route::Route};

/// Errors from running a query.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the store failed, or the store holds data the reference would also
    /// refuse.
    #[error(transparent)]
    Store(#[from] particles_store::Error),
    /// Scoring failed where the reference aborts too.
    #[error(transparent)]
    Rank(#[from] particles_rank::Error),
    /// A candidate's properties make a filter fail where the reference raises.
    #[error(transparent)]
    Filter(#[from] particles_candidates::Error),
    /// [`run_query_with`] was given a structural request (a question-less
    /// listing, an aggregate, a vocabulary report): those are answered by
    /// `particles-structural` (`run_structural_with`).
    #[error("the {mode} mode is not supported by this engine yet; ask a question instead")]
    UnsupportedMode {
        /// The mode's name.
        mode: &'static str,
    },
    /// The candidates' structured claims, read from a sidecar, fail their checksum
    /// or do not parse; only claim filters read them. Delete the sidecar
    /// (`particles-rs sidecar path` names it); the next query rebuilds it.
    #[error("the sidecar's structured claims are damaged: delete the sidecar (`particles-rs sidecar path --store ...`) and query again")]
    DamagedClaims,
    /// A hit's row was not found when its particle was read: a loader returned a
    /// candidate the store does not hold (a stale cache). Retry the query.
    #[error("particle {id} was ranked but is no longer in the store")]
    HitVanished {
        /// The particle id.
        id: String,
    },
    /// A batch ended without answering one of its requests: a defect in the
    /// batch's bookkeeping, reported rather than a panic. Retry the query.
    #[error(
        "the batch ended without answering this request (a particles-rs defect); retry the query"
    )]
    Unanswered,
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a query needs besides the store.
#[derive(Clone)]
pub struct QueryInput<'a> {
    /// The validated request.
    pub request: &'a ValidRequest,
    /// The query vector; `None` ranks by effective confidence (the reference's
    /// `use_embeddings=False`, or no encoder).
    pub vector: Option<&'a [f32]>,
    /// The instant decay is evaluated at (the request's `as_of` replaces it).
    pub now: Timestamp,
    /// The configuration keys that enter ranking.
    pub settings: &'a RankSettings,
    /// The BLAS kernel whose rounding the query norm reproduces.
    pub norm_kernel: NormKernel,
    /// Score every candidate instead of stopping at the bound (the oracle of the
    /// pruned path in tests).
    pub exhaustive: bool,
    /// Skip a candidate only when its score bound is below the k-th score less
    /// this margin. 0 for the bare ranking; the full response sets
    /// `max(truncation_near_margin, truncation_min_gap)`, so that every score the
    /// truncation warning reads is computed.
    pub prune_margin: f64,
    /// The truncation warning's `near_margin`, when the response will compute
    /// the warning ([`QueryInput::with_truncation`] sets it with
    /// `prune_margin`): after a half-precision scan the band then reads exactly
    /// only the rows whose interval straddles the warning's floor or could be the
    /// best score. `None` reads every band row that has only an interval.
    pub near_margin: Option<f64>,
    /// The recall callers' ranking options ([`QueryInput::with_recall`]):
    /// `None` (or inert options) ranks as the semantic query does.
    pub recall: Option<&'a RecallOptions>,
    /// Called once the ranking is done, before the counts the answer reports are
    /// read: a test's chance to commit a write from another connection and show
    /// that the answer still reads one snapshot.
    #[doc(hidden)]
    pub after_ranking: Option<&'a dyn Fn()>,
}

impl std::fmt::Debug for QueryInput<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryInput")
            .field("request", &self.request)
            .field("vector", &self.vector.map(<[f32]>::len))
            .field("now", &self.now)
            .field("norm_kernel", &self.norm_kernel)
            .field("exhaustive", &self.exhaustive)
            .finish_non_exhaustive()
    }
}

/// The reference's compiled defaults, for an install with no configuration.
static DEFAULT_SETTINGS: std::sync::LazyLock<RankSettings> =
    std::sync::LazyLock::new(RankSettings::default);

impl QueryInput<'_> {
    /// Whether the candidates the truncation warning reads are scored after the
    /// cut (`crate::band`) rather than by the ranking's walk: whenever a margin is
    /// asked for and the walk is not exhaustive anyway.
    pub(crate) fn scores_band_after_cut(&self) -> bool {
        self.prune_margin > 0.0 && !self.exhaustive
    }

    /// The margin the ranking's walk prunes with: none when the band is scored
    /// after the cut.
    pub(crate) fn walk_margin(&self) -> f64 {
        if self.scores_band_after_cut() {
            0.0
        } else {
            self.prune_margin
        }
    }
}

impl<'a> QueryInput<'a> {
    /// An input with the reference's default settings and the norm kernel detected
    /// for this machine.
    pub fn new(request: &'a ValidRequest, vector: Option<&'a [f32]>, now: Timestamp) -> Self {
        QueryInput {
            request,
            vector,
            now,
            settings: &DEFAULT_SETTINGS,
            norm_kernel: NormKernel::detect(),
            exhaustive: false,
            prune_margin: 0.0,
            near_margin: None,
            recall: None,
            after_ranking: None,
        }
    }

    /// This input ranked as the recall callers rank (`options`, when any is
    /// active): every candidate scored, lifted and filtered before the cut.
    pub fn with_recall(self, options: &'a RecallOptions) -> Self {
        if !options.is_active() {
            return self;
        }
        QueryInput {
            recall: Some(options),
            exhaustive: true,
            ..self
        }
    }

    /// This input with what the truncation warning reads computed: the walk's
    /// margin ([`TruncationSettings::prune_margin`]) and the warning's
    /// `near_margin`.
    pub fn with_truncation(self, settings: &TruncationSettings) -> Self {
        QueryInput {
            prune_margin: settings.prune_margin(),
            near_margin: Some(settings.near_margin),
            ..self
        }
    }
}

/// The request fields this engine accepts and validates but does not act on yet,
/// among those `request` sets. `audience` and `grounded` shape only the answer
/// text, which is not composed here. (`include_agreement` and
/// `include_contestedness` act in the response, `particles-respond`'s;
/// `observer_project` in the ranking.)
pub(crate) fn not_applied(request: &ValidRequest) -> Vec<&'static str> {
    let mut fields = Vec::new();
    if request.audience != particles_model::Audience::General {
        fields.push("audience");
    }
    if request.grounded.is_some() {
        fields.push("grounded");
    }
    fields
}

/// Runs a semantic query with the uncached loader, inside one read transaction of
/// `store`.
///
/// # Errors
///
/// [`Error::Store`] when the store cannot be read or holds a row the reference
/// also refuses (bad schema stamp, malformed row or embedding); [`Error::Rank`] for
/// an invalid adopted lens, an unsplittable source URI or a vector dimension that
/// differs from the query's; [`Error::UnsupportedMode`] for a structural request.
pub fn run_query(store: &Store, input: &QueryInput<'_>) -> Result<QueryOutcome> {
    run_query_with(store, &mut UncachedLoader, input)
}

/// Runs a semantic query with the given candidate loader (the uncached loader, a
/// cache, or a downstream crate's), inside one read transaction of `store`: the
/// ranking and every count the answer reports read the same snapshot.
///
/// A project observer (`observer_project`) reads entries with the reference's
/// default `observer_scope.harness_tags`; [`run_semantic_batch_streaming`] takes
/// them as an argument.
///
/// # Errors
///
/// As [`run_query`], plus whatever the loader fails with.
pub fn run_query_with(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
) -> Result<QueryOutcome> {
    check_semantic(input.request)?;
    let harness_tags = default_harness_tags();
    store.read_snapshot(|store| Ok(run_in_snapshot(store, loader, input, &harness_tags)))?
}

/// Runs a semantic query with the given candidate loader inside a read
/// transaction the caller already holds (`store` is its snapshot), so a caller
/// composing several rankings with other reads (the memory projection) reads
/// one store state throughout.
///
/// # Errors
///
/// As [`run_query_with`].
pub fn run_query_in_snapshot(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
    harness_tags: &[String],
) -> Result<QueryOutcome> {
    check_semantic(input.request)?;
    run_in_snapshot(store, loader, input, harness_tags)
}

/// Warms what the first question after another connection's commit would
/// otherwise pay on its own time: in the read transaction `store` holds, the
/// truncation band's facts and statics of every source of `set` (the
/// candidate set the loader holds for that snapshot), under `settings`, and
/// what the band knows of each row from shortly before `now` on (its ceiling
/// and steady effective confidence, `band/rows.rs`). Nothing is ranked and nothing an answer holds changes: the connection's
/// memo keeps what it would have read, by its usual rule (forgotten when
/// another connection commits). Returns how many sources it now remembers, 0
/// when the connection does not remember (it can write, or no read
/// transaction is open).
///
/// # Errors
///
/// [`Error::Store`] when the store cannot be read, [`Error::Rank`] for a
/// policy the query would refuse too.
pub fn warm_band_sources(
    store: &Store,
    set: &CandidateSet,
    settings: &RankSettings,
    now: Timestamp,
) -> Result<usize> {
    let policies = Policies::compile(&particles_store::load_policy_rows(store)?, settings)?;
    band::warm_sources(store, set, &policies, now)
}

/// Refuses a request whose mode is not the semantic path.
pub(crate) fn check_semantic(request: &ValidRequest) -> Result<()> {
    let mode = request.mode();
    if mode != Mode::Semantic {
        return Err(Error::UnsupportedMode {
            mode: mode_name(mode),
        });
    }
    Ok(())
}

pub(crate) fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Semantic => "semantic",
        Mode::WindowListing => "window listing",
        Mode::ClaimListing => "claim listing",
        Mode::Aggregate => "aggregate",
        Mode::Predicates => "predicate listing",
        Mode::Vocabulary => "vocabulary report",
    }
}

pub(crate) fn run_in_snapshot(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
    harness_tags: &[String],
) -> Result<QueryOutcome> {
    let request = input.request;
    let started = Instant::now();
    particles_store::check_schema_version(store)?;
    let policies = Policies::compile(&particles_store::load_policy_rows(store)?, input.settings)?;
    let mut timings = StageTimings {
        setup: started.elapsed().as_secs_f64(),
        ..StageTimings::default()
    };
    let embed_started = Instant::now();
    let query = input
        .vector
        .map(|v| QueryVector::new(v.to_vec(), input.norm_kernel));
    timings.embed = embed_started.elapsed().as_secs_f64();

    let mut route = Route::for_request(request, loader);
    let loaded = route.load(store, request)?;
    timings.sql_fetch = loaded.counters.sql_seconds;
    timings.hydrate = loaded.counters.hydrate_seconds;
    timings.decode =
        (loaded.seconds - loaded.counters.sql_seconds - loaded.counters.hydrate_seconds).max(0.0);
    let mut work = WorkCounters {
        rows_read: loaded.selection.rows.len(),
        embedding_json_bytes: loaded.counters.embedding_json_bytes,
        models_hydrated: loaded.counters.models_hydrated,
        ..WorkCounters::default()
    };
    let now = Route::clock(request, input.now);
    let gathered = Gather {
        store,
        request,
        selection: &loaded.selection,
        policies: &policies,
        query: query.as_ref(),
        now,
        exhaustive: input.exhaustive,
        keep_all: input.recall.is_some(),
        prune_margin: input.walk_margin(),
        scores_only_beyond_cut: true,
        harness_tags,
        timings: &mut timings,
        work: &mut work,
    }
    .run()?;
    let journal_seq = particles_store::read_head(store)?.map(|head| head.seq);
    finish(
        store,
        &loaded.selection,
        &policies,
        input,
        gathered,
        timings,
        work,
        route.into_notes(),
        journal_seq,
    )
}

/// The single-store finish: the cut at `top_k`, the collapse, the hits read by
/// id, what the route's loader knows of them, and every count the answer
/// reports, all in the ranking's snapshot. `journal_seq` is that snapshot's
/// journal head, read once by the caller (a batch's members share it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    store: &Store,
    selection: &particles_candidates::Selection,
    policies: &Policies,
    input: &QueryInput<'_>,
    gathered: gather::Gathered,
    mut timings: StageTimings,
    mut work: WorkCounters,
    notes: route::RouteNotes,
    journal_seq: Option<i64>,
) -> Result<QueryOutcome> {
    let request = input.request;
    let set = selection.set.as_ref();
    let mut gathered = gathered;
    if let Some(options) = input.recall {
        recall::rerank(
            store,
            set,
            policies,
            options,
            &mut gathered.scored,
            input.now,
        )?;
    }
    let top_k = request.top_k as usize;
    let cut = gathered.scored.len().min(top_k);
    let collapse_started = Instant::now();
    // The cut's own edges in two statements; a closure that reaches beyond the
    // cut asks for the rest one id at a time.
    let cut_ids: Vec<&str> = gathered.scored[..cut]
        .iter()
        .map(|s| set.id(s.ranked.row))
        .collect();
    let top_edges = particles_store::co_evidential_edges_of(store, &cut_ids)?;
    let kept = particles_rank::collapse_co_evidential(
        &gathered.scored[..cut],
        |s| set.id(s.ranked.row),
        |s| s.ranked.effective_confidence,
        |s| set.string(set.traits(s.ranked.row).source_key),
        policies.settings.equivalence_threshold,
        |id| match top_edges.get(id) {
            Some(edges) => Ok(edges.clone()),
            None => particles_store::co_evidential_edges(store, id),
        },
    )?;
    timings.collapse = collapse_started.elapsed().as_secs_f64();
    let mut stats = gathered.stats;
    stats.collapsed = cut - kept.len();
    // The last hit's score, as the warning computes it.
    let last_score =
        kept.last()
            .filter(|_| input.scores_band_after_cut())
            .map(|&(index, effective)| {
                let last = &gathered.scored[index];
                let narrative = set.traits(last.ranked.row).narrative;
                policies.rank_score(narrative, last.ranked.similarity, effective)
            });
    let beyond_cut: BeyondCut = match last_score {
        // The walk stopped at the cut: the band beyond it is scored now.
        Some(last) => {
            let query = input
                .vector
                .map(|v| particles_rank::QueryVector::new(v.to_vec(), input.norm_kernel));
            let in_cut: Vec<usize> = gathered.scored[..cut].iter().map(|s| s.position).collect();
            let band = band::score_band(
                &band::BandInput {
                    store,
                    set,
                    policies,
                    now: gathered.now,
                    min_confidence: request.min_confidence,
                    survivors: &gathered.survivors,
                    similarities: gathered.similarities.as_ref(),
                    query: query.as_ref(),
                    count_floor: input.near_margin.map(|margin| last - margin),
                    bounds: &gathered.bounds,
                    in_cut: &in_cut,
                    floor: last - input.prune_margin,
                },
                &mut timings,
            )?;
            stats.below_min_confidence += band.below_min_confidence;
            stats.pruned = gathered.survivors.len().saturating_sub(cut + band.scored);
            work.candidates_scored += band.scored;
            work.band_rows_read_exactly += band.read_exactly;
            band.beyond
        }
        None => gathered.scored[cut..]
            .iter()
            .map(|s| s.ranked.score)
            .chain(gathered.beyond.iter().copied())
            .collect::<Vec<f64>>()
            .into(),
    };
    let hits: Vec<RankedHit<'_>> = kept
        .into_iter()
        .map(|(index, effective_confidence)| RankedHit {
            scored: &gathered.scored[index],
            effective_confidence,
        })
        .collect();
    if let Some(hook) = input.after_ranking {
        hook();
    }
    let materialised = materialise(store, set, &hits)?;
    let mut outcome = QueryOutcome {
        hits: materialised,
        as_of_excluded_undatable: 0,
        window_coverage: None,
        claim_coverage: gathered.claims.map(|counts| ClaimCoverage {
            matched: counts.matched,
            not_normalizable_excluded: counts.not_comparable,
            ..ClaimCoverage::default()
        }),
        observer_scope: gathered.observer.clone(),
        unknown_tags: Vec::new(),
        subject_linked: None,
        subject_claims: selection.subject_claims.clone(),
        not_applied: not_applied(request),
        stats,
        journal_seq,
        beyond_cut,
        scan_stop: gathered.stop,
        timings,
        work,
    };
    notes.annotate(&mut outcome);
    // The counts the answer reports come from the ranking's snapshot.
    if let Some(coverage) = outcome.claim_coverage.as_mut() {
        let (active_total, with_claims) = particles_store::claim_coverage_counts(store)?;
        coverage.active_total = active_total;
        coverage.with_claims = with_claims;
    }
    for tag in &request.tags {
        if !particles_store::tag_is_known(store, tag)? {
            outcome.unknown_tags.push(tag.clone());
        }
    }
    if let Some(subject) = &request.subject_id {
        outcome.subject_linked = Some(particles_store::subject_is_known(store, subject)?);
    }
    Ok(outcome)
}

/// A kept entry of the cut: the scored candidate and its effective confidence
/// after the collapse (merged for a representative).
pub(crate) struct RankedHit<'a> {
    pub(crate) scored: &'a Scored,
    pub(crate) effective_confidence: f64,
}

/// The hits as full particles: kept by the set (a long-lived process over a
/// small store keeps every row's), or as this connection read them before while
/// the file is unchanged ([`memo::QueryMemo`]), else read by rowid in the
/// ranking's transaction.
fn materialise(store: &Store, set: &CandidateSet, ranked: &[RankedHit<'_>]) -> Result<Vec<Hit>> {
    let wanted: Vec<(i64, &str)> = ranked
        .iter()
        .map(|r| (set.rowid(r.scored.ranked.row), set.id(r.scored.ranked.row)))
        .collect();
    // A set that keeps its particles (a long-lived process, a small store)
    // holds every hit's.
    let kept: Option<HashMap<String, std::sync::Arc<Particle>>> = ranked
        .iter()
        .map(|r| {
            let row = r.scored.ranked.row;
            set.particle(row)
                .filter(|p| p.id == set.id(row))
                .map(|p| (p.id.clone(), std::sync::Arc::clone(p)))
        })
        .collect();
    let mut particles: HashMap<String, std::sync::Arc<Particle>> = match kept {
        Some(kept) => kept,
        None => store
            .with_remembered(|memo: &mut memo::QueryMemo| {
                wanted
                    .iter()
                    .filter_map(|&(rowid, id)| memo.hit(rowid, id).cloned())
                    .map(|p| (p.id.clone(), p))
                    .collect::<HashMap<_, _>>()
            })?
            .unwrap_or_default(),
    };
    let missing: Vec<(i64, &str)> = wanted
        .iter()
        .copied()
        .filter(|(_, id)| !particles.contains_key(*id))
        .collect();
    if !missing.is_empty() {
        // By rowid, as the set knows it (one walk down the table's tree, where
        // an id walks its index first); by id only for a row whose id has
        // moved (a store rewritten under the set), which the memo then skips.
        let read: Vec<(i64, std::sync::Arc<Particle>)> =
            particles_store::particles_at_rowids(store, &missing)?
                .into_iter()
                .map(|(rowid, particle)| (rowid, std::sync::Arc::new(particle)))
                .collect();
        store.with_remembered(|memo: &mut memo::QueryMemo| {
            for (rowid, particle) in &read {
                memo.remember_hit(*rowid, particle);
            }
        })?;
        particles.extend(read.into_iter().map(|(_, p)| (p.id.clone(), p)));
        let moved: Vec<&str> = missing
            .iter()
            .map(|&(_, id)| id)
            .filter(|id| !particles.contains_key(*id))
            .collect();
        if !moved.is_empty() {
            particles.extend(
                particles_store::particles_by_ids(store, &moved)?
                    .into_iter()
                    .map(|p| (p.id.clone(), std::sync::Arc::new(p))),
            );
        }
    }
    ranked
        .iter()
        .enumerate()
        .map(|(at, hit)| {
            let scored = hit.scored;
            let id = set.id(scored.ranked.row);
            let particle = particles
                .remove(id)
                .ok_or_else(|| Error::HitVanished { id: id.to_owned() })?;
            Ok(Hit {
                rank: at + 1,
                id: id.to_owned(),
                store: None,
                similarity: scored.ranked.similarity,
                effective_confidence: hit.effective_confidence,
                score: scored.ranked.score,
                rowid: set.rowid(scored.ranked.row),
                factors: scored.factors,
                source: scored.source.clone(),
                as_of_note: None,
                window_hit: None,
                particle,
            })
        })
        .collect()
}
