//! The semantic query path over a Particles store, step for step the reference's
//! `retrieve_ranked` (`linkedparticles` 1.214.1).
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
//!    statuses (chunked lookups), then their score, into a [`TopK`](collect)
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
//! Requests without a question (the claim listing, `count` / `group_by`, the
//! predicate listing, the vocabulary report, the window listing) are the
//! reference's deterministic modes: [`run_structural`] answers them with the
//! reference's whole `QueryResponse`, in one read transaction too, and
//! [`run_request`] dispatches any request to the right path.
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
mod collect;
mod outcome;
mod route;
mod scan;
mod structural;
mod window;

pub use crate::{
    as_of::AsOfLoader,
    outcome::{ClaimCoverage, Hit, QueryOutcome, QueryStats, StageTimings, WorkCounters},
    structural::{normalise_predicate, run_structural, run_structural_with, StructuralSettings},
    window::WindowLoader,
};

use std::{
    collections::{HashMap, HashSet},
    time::Instant,
};

use particles_candidates::{CandidateSet, Selection};
use particles_model::{Mode, Particle, Timestamp, ValidRequest};
use particles_rank::{
    ClaimFilters, ClaimMatch, NormKernel, Policies, QueryVector, RankSettings, Ranked,
};
use particles_store::{CandidateLoader, Store, UncachedLoader};

use crate::{
    collect::{BoundOrder, Scored, TopK},
    route::Route,
    scan::{scan_candidates, Scanned},
};

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
    /// [`run_structural`], which [`run_request`] dispatches to.
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
    /// [`run_structural`] was given a request with a question: it ranks
    /// semantically, through [`run_query_with`] (or [`run_request`]).
    #[error("a request with a question is answered by the semantic path, not a structural mode")]
    NotStructural,
    /// A subject bucket's key is an id prefix of several subjects, where the
    /// reference's subject lookup refuses to choose (its message, verbatim).
    #[error(
        "Ambiguous subject prefix {} matches {matches} subjects; use more characters.",
        particles_model::python_repr(prefix)
    )]
    AmbiguousSubject {
        /// The key, as the claim or particle stores it.
        prefix: String,
        /// How many subjects it prefixes.
        matches: usize,
    },
    /// A hit's row was not found when its particle was read: a loader returned a
    /// candidate the store does not hold (a stale cache). Retry the query.
    #[error("particle {id} was ranked but is no longer in the store")]
    HitVanished {
        /// The particle id.
        id: String,
    },
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
            after_ranking: None,
        }
    }
}

/// The request fields this engine accepts and validates but does not act on yet,
/// among those `request` sets. `audience` and `grounded` shape only the answer
/// text, which is not composed here.
pub fn not_applied(request: &ValidRequest) -> Vec<&'static str> {
    let mut fields = Vec::new();
    if request.audience != particles_model::Audience::General {
        fields.push("audience");
    }
    if request.include_agreement {
        fields.push("include_agreement");
    }
    if request.include_contestedness {
        fields.push("include_contestedness");
    }
    if request.observer_project.is_some() {
        fields.push("observer_project");
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

/// What a request produced: a semantic ranking, or a structural mode's whole
/// response.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestOutcome {
    /// A question, ranked ([`run_query_with`]).
    Semantic(Box<QueryOutcome>),
    /// A deterministic mode's response ([`run_structural`]).
    Structural(Box<particles_model::response::QueryResponse>),
}

/// Runs any request as the reference's `query` dispatches it: a structural mode
/// (window listing, predicate listing, vocabulary report, claim listing,
/// aggregate) through [`run_structural`] (the loader is not used: these modes
/// need no vectors), anything else through [`run_query_with`] and `loader`.
///
/// # Errors
///
/// As [`run_query_with`] or [`run_structural`].
pub fn run_request(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
) -> Result<RequestOutcome> {
    match input.request.mode() {
        Mode::Semantic => {
            run_query_with(store, loader, input).map(|o| RequestOutcome::Semantic(Box::new(o)))
        }
        _ => run_structural(store, input).map(|r| RequestOutcome::Structural(Box::new(r))),
    }
}

/// Runs a semantic query with the given candidate loader (the uncached loader, a
/// cache, or a downstream crate's), inside one read transaction of `store`: the
/// ranking and every count the answer reports read the same snapshot.
///
/// # Errors
///
/// As [`run_query`], plus whatever the loader fails with.
pub fn run_query_with(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
) -> Result<QueryOutcome> {
    let mode = input.request.mode();
    if mode != Mode::Semantic {
        return Err(Error::UnsupportedMode {
            mode: mode_name(mode),
        });
    }
    store.read_snapshot(|store| Ok(run_in_snapshot(store, loader, input)))?
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Semantic => "semantic",
        Mode::WindowListing => "window listing",
        Mode::ClaimListing => "claim listing",
        Mode::Aggregate => "aggregate",
        Mode::Predicates => "predicate listing",
        Mode::Vocabulary => "vocabulary report",
    }
}

fn run_in_snapshot(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
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
    let mut ranking = Ranking {
        store,
        request,
        selection: &loaded.selection,
        policies: &policies,
        query: query.as_ref(),
        now,
        exhaustive: input.exhaustive,
        timings: &mut timings,
        work: &mut work,
    };
    let ranked = ranking.rank()?;
    if let Some(hook) = input.after_ranking {
        hook();
    }
    let mut outcome = QueryOutcome {
        hits: materialise(store, &loaded.selection.set, &ranked.hits)?,
        as_of_excluded_undatable: 0,
        window_coverage: None,
        claim_coverage: ranked.claims.map(|counts| ClaimCoverage {
            matched: counts.matched,
            not_normalizable_excluded: counts.not_comparable,
            ..ClaimCoverage::default()
        }),
        unknown_tags: Vec::new(),
        subject_linked: None,
        not_applied: not_applied(request),
        stats: ranked.stats,
        timings,
        work,
    };
    route.annotate(&mut outcome);
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

/// What the ranking keeps of each hit until its particle is read.
struct RankedHit {
    ranked: Ranked,
    factors: particles_rank::Factors,
    source: particles_model::policy::SourceFacts,
}

/// What the claim filters did to the candidates.
#[derive(Debug, Clone, Copy)]
struct ClaimCounts {
    matched: usize,
    not_comparable: usize,
}

struct RankingResult {
    hits: Vec<RankedHit>,
    stats: QueryStats,
    /// With claim filters, their counts.
    claims: Option<ClaimCounts>,
}

/// One ranking pass over a selection.
struct Ranking<'a> {
    store: &'a Store,
    request: &'a ValidRequest,
    selection: &'a Selection,
    policies: &'a Policies,
    query: Option<&'a QueryVector>,
    now: Timestamp,
    exhaustive: bool,
    timings: &'a mut StageTimings,
    work: &'a mut WorkCounters,
}

impl Ranking<'_> {
    fn rank(&mut self) -> Result<RankingResult> {
        let set = self.selection.set.as_ref();
        let mut stats = QueryStats {
            candidates: self.selection.rows.len(),
            skipped_other_model: self.selection.skipped_other_model,
            ..QueryStats::default()
        };
        let (scanned, claims) = self.scan(&mut stats)?;
        let scored = self.collect(&scanned, &mut stats)?;
        let sort_started = Instant::now();
        let mut top: Vec<Ranked> = Vec::with_capacity(scored.len());
        let mut details = HashMap::with_capacity(scored.len());
        for entry in scored.into_iter().take(self.request.top_k as usize) {
            details.insert(entry.ranked.row, (entry.factors, entry.source));
            top.push(entry.ranked);
        }
        self.timings.sort = sort_started.elapsed().as_secs_f64();
        let collapse_started = Instant::now();
        let before_collapse = top.len();
        let collapsed = particles_rank::collapse_co_evidential(
            top,
            |r| set.id(r.row),
            |r| set.string(set.traits(r.row).source_key),
            self.policies.settings.equivalence_threshold,
            |id| particles_store::co_evidential_edges(self.store, id),
        )?;
        stats.collapsed = before_collapse - collapsed.len();
        self.timings.collapse = collapse_started.elapsed().as_secs_f64();
        let hits = collapsed
            .into_iter()
            .map(|ranked| {
                let (factors, source) = details.remove(&ranked.row).unwrap_or((
                    particles_rank::Factors {
                        extractor_weight: 1.0,
                        source_trust: 1.0,
                        decay: 1.0,
                        discount: 1.0,
                    },
                    particles_model::policy::SourceFacts::default(),
                ));
                RankedHit {
                    ranked,
                    factors,
                    source,
                }
            })
            .collect();
        Ok(RankingResult {
            hits,
            stats,
            claims,
        })
    }

    /// Filters, cosine and bounds in one pass. Without tag or claim filters (which
    /// read the store) the per-row filters run inside the parallel scan; their
    /// time is then reported under `scoring`.
    fn scan(&mut self, stats: &mut QueryStats) -> Result<(Scanned, Option<ClaimCounts>)> {
        let set = self.selection.set.as_ref();
        let rows = &self.selection.rows;
        let request = self.request;
        let now = self.now;
        let at_most_one = self.policies.factors_at_most_one();
        let started = Instant::now();
        let store_filters = !request.tags.is_empty() || request.has_claim_filters();
        if store_filters {
            let (survivors, claims) = self.filter_in_store(set, rows)?;
            stats.filtered_out = rows.len() - survivors.len();
            self.timings.filters = started.elapsed().as_secs_f64();
            let started = Instant::now();
            let scanned = scan_candidates(
                set,
                &survivors,
                self.query,
                at_most_one,
                self.policies,
                None,
            )?;
            self.timings.scoring += started.elapsed().as_secs_f64();
            Ok((scanned, claims))
        } else {
            let keep = |row: usize| -> Result<bool> {
                Ok(particles_candidates::passes_filters(set, row, request)?
                    && particles_candidates::within_recency_window(set, row, request, now))
            };
            let scanned = scan_candidates(
                set,
                rows,
                self.query,
                at_most_one,
                self.policies,
                Some(&keep),
            )?;
            stats.filtered_out = rows.len() - scanned.survivors.len();
            self.timings.scoring += started.elapsed().as_secs_f64();
            Ok((scanned, None))
        }
    }

    /// The filters in the reference's order when some read the store: properties,
    /// tags, structured claims, the recency window. Returns the survivors and, with
    /// claim filters, their counts.
    fn filter_in_store(
        &self,
        set: &CandidateSet,
        rows: &[usize],
    ) -> Result<(Vec<usize>, Option<ClaimCounts>)> {
        let request = self.request;
        let mut survivors = Vec::with_capacity(rows.len());
        for &row in rows {
            if particles_candidates::passes_filters(set, row, request)? {
                survivors.push(row);
            }
        }
        if !request.tags.is_empty() {
            let expanded =
                particles_store::expand_tags(self.store, &request.tags, request.include_ancestors)?;
            let tagged = particles_store::particle_ids_for_tags(self.store, &expanded)?;
            survivors.retain(|&row| tagged.contains(set.id(row)));
        }
        let mut claims = None;
        let filters = ClaimFilters::new(request);
        if filters.is_active() {
            if !set.claims_intact() {
                return Err(Error::DamagedClaims);
            }
            let mut not_comparable = 0;
            survivors.retain(|&row| match set.structured_claim(row) {
                None => false,
                Some(claim) => match particles_rank::match_claim(claim, &filters) {
                    ClaimMatch::Matched => true,
                    ClaimMatch::Unmatched => false,
                    ClaimMatch::NotComparable => {
                        not_comparable += 1;
                        false
                    }
                },
            });
            claims = Some(ClaimCounts {
                matched: survivors.len(),
                not_comparable,
            });
        }
        survivors.retain(|&row| {
            particles_candidates::within_recency_window(set, row, request, self.now)
        });
        Ok((survivors, claims))
    }

    /// Scores candidates in bound order, batch by batch, into the collector, until
    /// no remaining bound can reach the k-th score. Returns every scored candidate
    /// in final order.
    fn collect(&mut self, scanned: &Scanned, stats: &mut QueryStats) -> Result<Vec<Scored>> {
        let set = self.selection.set.as_ref();
        let top_k = self.request.top_k as usize;
        let mut order = BoundOrder::new(&scanned.bounds, (top_k * 4).max(256));
        let mut top = TopK::new(top_k);
        let batch = top_k.max(64);
        let mut lookups = FactLookups::default();
        let mut scoring = 0.0;
        let mut next = 0;
        while next < order.len() {
            let sort_started = Instant::now();
            let bound = order.bound_at(next);
            scoring += sort_started.elapsed().as_secs_f64();
            if !self.exhaustive && bound.is_some_and(|bound| top.can_skip(bound, 0.0)) {
                break;
            }
            let chunk = order.batch(next, batch).to_vec();
            next += chunk.len();
            let rows: Vec<usize> = chunk.iter().map(|&p| scanned.survivors[p]).collect();
            let facts = lookups.read(self.store, set, &rows, self.policies, self.timings)?;
            let scoring_started = Instant::now();
            for ((&position, &row), (source, discount)) in chunk.iter().zip(&rows).zip(facts) {
                let factors =
                    particles_rank::factors(set, row, &source, discount, self.policies, self.now)?;
                let similarity = scanned.similarities.as_ref().map(|s| s[position]);
                self.work.candidates_scored += 1;
                match particles_rank::score_with_similarity(
                    set,
                    row,
                    &factors,
                    similarity,
                    self.request.min_confidence,
                    self.policies,
                ) {
                    Some(ranked) => top.push(Scored {
                        position,
                        ranked,
                        factors,
                        source,
                    }),
                    None => stats.below_min_confidence += 1,
                }
            }
            scoring += scoring_started.elapsed().as_secs_f64();
        }
        stats.pruned = order.len() - next;
        self.work.snapshot_ids_looked_up = lookups.snapshots.len();
        self.work.entry_ids_looked_up = lookups.entries.len();
        self.timings.scoring += scoring;
        Ok(top.into_ranked())
    }
}

/// The per-batch store reads scoring needs: each candidate's first-source facts
/// and, for derived candidates, their premises' statuses (chunked lookups).
#[derive(Default)]
pub(crate) struct FactLookups {
    snapshots: HashSet<u32>,
    entries: HashSet<u32>,
}

impl FactLookups {
    /// Facts and stale-support discount of each of `rows`, in order.
    pub(crate) fn read(
        &mut self,
        store: &Store,
        set: &CandidateSet,
        rows: &[usize],
        policies: &Policies,
        timings: &mut StageTimings,
    ) -> Result<Vec<(particles_model::policy::SourceFacts, f64)>> {
        let started = Instant::now();
        for &row in rows {
            if let Some((entry, snapshot)) = set.traits(row).source {
                if !set.string(entry).is_empty() {
                    self.entries.insert(entry);
                }
                if let Some(snapshot) = snapshot.filter(|s| !set.string(*s).is_empty()) {
                    self.snapshots.insert(snapshot);
                }
            }
        }
        let sources = particles_store::source_facts(
            store,
            rows.iter().map(|&row| {
                set.traits(row)
                    .source
                    .map(|(entry, snapshot)| (set.string(entry), snapshot.map(|s| set.string(s))))
            }),
        )?;
        timings.source_rows += started.elapsed().as_secs_f64();
        let started = Instant::now();
        let premises = particles_store::premise_statuses(
            store,
            rows.iter()
                .flat_map(|&row| set.premises(row).iter().map(String::as_str)),
        )?;
        timings.support_discounts += started.elapsed().as_secs_f64();
        Ok(sources
            .into_iter()
            .zip(rows)
            .map(|(source, &row)| {
                let discount =
                    particles_rank::stale_support_discount(set, row, &premises, policies);
                (source, discount)
            })
            .collect())
    }
}

/// The hits as full particles, read by id in the ranking's transaction.
fn materialise(store: &Store, set: &CandidateSet, ranked: &[RankedHit]) -> Result<Vec<Hit>> {
    let ids: Vec<&str> = ranked.iter().map(|r| set.id(r.ranked.row)).collect();
    let mut particles: HashMap<String, Particle> = particles_store::particles_by_ids(store, &ids)?
        .into_iter()
        .map(|p| (p.id.clone(), p))
        .collect();
    ranked
        .iter()
        .enumerate()
        .map(|(at, hit)| {
            let id = set.id(hit.ranked.row);
            let particle = particles
                .remove(id)
                .ok_or_else(|| Error::HitVanished { id: id.to_owned() })?;
            Ok(Hit {
                rank: at + 1,
                id: id.to_owned(),
                similarity: hit.ranked.similarity,
                effective_confidence: hit.ranked.effective_confidence,
                score: hit.ranked.score,
                rowid: set.rowid(hit.ranked.row),
                factors: hit.factors,
                source: hit.source.clone(),
                as_of_note: None,
                window_hit: None,
                particle,
            })
        })
        .collect()
}
