//! The semantic query path over a Particles store, step for step the reference's
//! `retrieve_ranked` (`linkedparticles` 1.214.1).
//!
//! [`run_query`] checks the schema stamps, composes the policies, loads the ACTIVE
//! candidates (all of them, or a subject's), filters them, reads their source facts
//! and premise statuses in chunked lookups, scores each survivor, sorts stably by
//! score, keeps the top_k and collapses co-evidential groups. Given the same store
//! file, query vector and `now`, the hits equal the reference's: same ids, same
//! order, the same similarity and effective-confidence bits on x86-64.
//!
//! This crate joins the store (IO) and the rank (pure scoring) crates; neither knows
//! the other.
//!
//! ```no_run
//! use particles_model::{QueryRequest, Timestamp};
//! use particles_query::{run_query, QueryInput};
//! use particles_store::Store;
//! let store = Store::open_read_only("beliefs.db".as_ref())?;
//! let request = garde::Unvalidated::new(QueryRequest::default()).validate()?;
//! let now = Timestamp::parse("2026-01-01T00:00:00Z")?;
//! let outcome = run_query(&store, &QueryInput::new(&request, None, now))?;
//! for hit in &outcome.hits {
//!     println!("{} {}", hit.particle.id, hit.effective_confidence);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

mod as_of;
mod window;

pub use crate::{
    as_of::{AsOfLoader, AsOfNote, RetirementBasis, Successor},
    window::{CloseBasis, WindowCoverage, WindowHit, WindowLoader, WindowReading},
};

use std::{collections::HashMap, time::Instant};

use particles_model::{policy::SourceFacts, Particle, QueryRequest, Selection, Timestamp};
use particles_rank::{
    ClaimFilters, ClaimMatch, Factors, NormKernel, Policies, QueryVector, Ranked,
};
use particles_store::{CandidateLoader, Store, UncachedLoader};

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
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a query needs besides the store.
#[derive(Debug, Clone)]
pub struct QueryInput<'a> {
    /// The validated request.
    pub request: &'a garde::Valid<QueryRequest>,
    /// The query vector; `None` ranks by effective confidence (the reference's
    /// `use_embeddings=False`, or no encoder).
    pub vector: Option<&'a [f32]>,
    /// The instant decay is evaluated at (the request's `as_of` replaces it).
    pub now: Timestamp,
    /// The BLAS kernel whose rounding the query norm reproduces.
    pub norm_kernel: NormKernel,
    /// Score every candidate instead of stopping at the bound (the oracle of the
    /// pruned path in tests).
    pub exhaustive: bool,
}

impl<'a> QueryInput<'a> {
    /// An input with the norm kernel detected for this machine.
    pub fn new(
        request: &'a garde::Valid<QueryRequest>,
        vector: Option<&'a [f32]>,
        now: Timestamp,
    ) -> Self {
        QueryInput {
            request,
            vector,
            now,
            norm_kernel: NormKernel::detect(),
            exhaustive: false,
        }
    }
}

/// One ranked particle.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The particle, fully hydrated.
    pub particle: Particle,
    /// Its rowid in the store.
    pub rowid: i64,
    /// Cosine similarity (the effective confidence without a query vector).
    pub similarity: f64,
    /// Effective confidence (noisy-OR merged for a co-evidential representative).
    pub effective_confidence: f64,
    /// The rank score the sort used.
    pub score: f64,
    /// The factors of the effective confidence before any merge.
    pub factors: Factors,
    /// The first source's facts.
    pub source: SourceFacts,
    /// With `as_of`: why a hit retired now was believed at T.
    pub as_of_note: Option<AsOfNote>,
    /// With a window: how the hit sits in it.
    pub window_hit: Option<WindowHit>,
}

/// What the structured-claim filters did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClaimStats {
    /// Candidates whose claim matched.
    pub matched: usize,
    /// Candidates in the filtered slice whose object could not be compared with a
    /// gt/lt bound (disclosed, not silently dropped).
    pub not_comparable: usize,
}

/// Counts that explain a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryStats {
    /// Candidates the loader returned.
    pub candidates: usize,
    /// ACTIVE rows skipped because their vector is of another embedding model.
    pub skipped_other_model: usize,
    /// Candidates dropped by the filters (document-meta, polarity, stance, ...).
    pub filtered_out: usize,
    /// Candidates whose effective confidence was below `min_confidence`.
    pub below_min_confidence: usize,
    /// Hits dropped by the co-evidential collapse.
    pub collapsed: usize,
    /// Candidates never fully scored because their score bound could not reach the
    /// top k (their source facts were not even read).
    pub pruned: usize,
    /// The claim filters' counts, when the request has claim filters.
    pub claims: Option<ClaimStats>,
}

/// Where a query's time went, in seconds, named like the reference benchmark's
/// stages. `decode` is the loader's time outside SQLite and hydration (vector
/// parsing, the model check, a cache's selection). Time outside every stage (the
/// hits' particles read by id, call overhead) is the caller's residual.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StageTimings {
    /// Schema guard and policy snapshot.
    pub setup: f64,
    /// Preparing the query vector (its norm); encoding happens before the query.
    pub embed: f64,
    /// Inside SQLite for the loader's statements.
    pub sql_fetch: f64,
    /// The rest of the loader: vector parsing, model check, cache selection.
    pub decode: f64,
    /// Rows turned into particles by the loader.
    pub hydrate: f64,
    /// The candidate filters.
    pub filters: f64,
    /// Source facts (chunked lookups).
    pub source_rows: f64,
    /// Stale-support discounts.
    pub support_discounts: f64,
    /// Cosine and effective confidence.
    pub scoring: f64,
    /// Sort and top-k cut.
    pub sort: f64,
    /// Co-evidential collapse.
    pub collapse: f64,
}

/// What a query touched, for the benchmark's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkCounters {
    /// Candidates the loader returned.
    pub rows_read: usize,
    /// Bytes of embedding JSON the loader decoded.
    pub embedding_json_bytes: u64,
    /// Rows the loader hydrated into particles.
    pub models_hydrated: u64,
    /// Candidates scored (after the filters and the confidence floor).
    pub candidates_scored: usize,
    /// Distinct snapshot ids looked up for source facts.
    pub snapshot_ids_looked_up: usize,
    /// Distinct corpus-entry ids looked up for source facts.
    pub entry_ids_looked_up: usize,
}

/// A query's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryOutcome {
    /// The hits in rank order (at most `top_k`).
    pub hits: Vec<Hit>,
    /// Counts that explain them.
    pub stats: QueryStats,
    /// With `as_of`: retired candidates left out because no rung dated their
    /// retirement (the lens fails closed and says so).
    pub as_of_excluded_undatable: usize,
    /// With a window: what the window route saw.
    pub window_coverage: Option<WindowCoverage>,
    /// Where the time went.
    pub timings: StageTimings,
    /// What was touched.
    pub work: WorkCounters,
}

/// Runs a semantic query with the uncached loader, inside one read transaction of
/// `store`.
///
/// # Errors
///
/// [`Error::Store`] when the store cannot be read or holds a row the reference
/// also refuses (bad schema stamp, malformed row or embedding); [`Error::Rank`] for
/// an invalid adopted lens, an unsplittable source URI or a vector dimension that
/// differs from the query's.
pub fn run_query(store: &Store, input: &QueryInput<'_>) -> Result<QueryOutcome> {
    run_query_with(store, &mut UncachedLoader, input)
}

/// Runs a semantic query with the given candidate loader (the uncached loader, a
/// cache, or a downstream crate's), inside one read transaction of `store`.
///
/// # Errors
///
/// As [`run_query`], plus whatever the loader fails with.
pub fn run_query_with(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
) -> Result<QueryOutcome> {
    store.read_snapshot(|store| Ok(run_in_snapshot(store, loader, input)))?
}

fn run_in_snapshot(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    input: &QueryInput<'_>,
) -> Result<QueryOutcome> {
    let request: &QueryRequest = input.request;
    let started = Instant::now();
    particles_store::check_schema_version(store)?;
    let policies = Policies::compile(&particles_store::load_policy_rows(store)?)?;
    let setup = started.elapsed().as_secs_f64();
    let embed_started = Instant::now();
    let query = input
        .vector
        .map(|v| QueryVector::new(v.to_vec(), input.norm_kernel));
    let mut timings = StageTimings {
        setup,
        embed: embed_started.elapsed().as_secs_f64(),
        ..StageTimings::default()
    };
    let timings = &mut timings;
    if let Some(window) = request.window {
        // World time selects across statuses; believed-at-T filters within it.
        let mut window_loader = WindowLoader::new(window, request.as_of);
        let selection = timed_load(&mut window_loader, store, request, timings)?;
        let now = request.as_of.unwrap_or(input.now);
        let mut outcome = rank_selection(
            store,
            &selection,
            &policies,
            query.as_ref(),
            input,
            now,
            *timings,
        )?;
        outcome.as_of_excluded_undatable = window_loader.as_of_excluded_undatable();
        outcome.window_coverage = Some(window_loader.coverage());
        for hit in &mut outcome.hits {
            hit.as_of_note = window_loader.as_of_notes().get(&hit.particle.id).cloned();
            hit.window_hit = window_loader.hits().get(&hit.particle.id).cloned();
        }
        return Ok(outcome);
    }
    match request.as_of {
        None => {
            let selection = timed_load(loader, store, request, timings)?;
            rank_selection(
                store,
                &selection,
                &policies,
                query.as_ref(),
                input,
                input.now,
                *timings,
            )
        }
        Some(as_of) => {
            // Believed at T: its own loader, and decay and the recency window move to T.
            let mut as_of_loader = AsOfLoader::new(as_of);
            let selection = timed_load(&mut as_of_loader, store, request, timings)?;
            let mut outcome = rank_selection(
                store,
                &selection,
                &policies,
                query.as_ref(),
                input,
                as_of,
                *timings,
            )?;
            outcome.as_of_excluded_undatable = as_of_loader.excluded_undatable();
            for hit in &mut outcome.hits {
                hit.as_of_note = as_of_loader.notes().get(&hit.particle.id).cloned();
            }
            Ok(outcome)
        }
    }
}

/// The candidate filters, in the reference's order: properties (document-meta,
/// polarity, stance, uncertainty nature, modality), tags, structured claims, the
/// recency window.
fn filter_candidates(
    store: &Store,
    set: &particles_model::CandidateSet,
    rows: &[usize],
    request: &QueryRequest,
    now: Timestamp,
    stats: &mut QueryStats,
) -> Result<Vec<usize>> {
    let mut survivors = Vec::with_capacity(rows.len());
    for &row in rows {
        if particles_rank::passes_filters(set, row, request)? {
            survivors.push(row);
        }
    }
    if !request.tags.is_empty() {
        let expanded =
            particles_store::expand_tags(store, &request.tags, request.include_ancestors)?;
        let tagged = particles_store::particle_ids_for_tags(store, &expanded)?;
        survivors.retain(|&row| tagged.contains(set.id(row)));
    }
    let claim_filters = ClaimFilters {
        predicate: request.predicate.clone(),
        object_eq: request.object_eq.clone(),
        object_gt: request.object_gt.clone(),
        object_lt: request.object_lt.clone(),
        object_contains: request.object_contains.clone(),
    };
    if claim_filters.is_active() {
        if !set.claims_intact() {
            return Err(Error::DamagedClaims);
        }
        let mut not_comparable = 0;
        survivors.retain(|&row| match set.structured_claim(row) {
            None => false,
            Some(claim) => match particles_rank::match_claim(claim, &claim_filters) {
                ClaimMatch::Matched => true,
                ClaimMatch::Unmatched => false,
                ClaimMatch::NotComparable => {
                    not_comparable += 1;
                    false
                }
            },
        });
        stats.claims = Some(ClaimStats {
            matched: survivors.len(),
            not_comparable,
        });
    }
    survivors.retain(|&row| particles_rank::within_recency_window(set, row, request, now));
    stats.filtered_out = rows.len() - survivors.len();
    Ok(survivors)
}

/// Below this many candidates the scan runs on one thread: spawning costs more
/// than it saves.
const PARALLEL_SCAN_MIN: usize = 16_384;

/// What the scan keeps of each surviving candidate, in loader order.
struct Scanned {
    survivors: Vec<usize>,
    similarities: Option<Vec<f64>>,
    bounds: Vec<f64>,
}

/// One pass over the candidates, split across the available cores for large sets:
/// `keep` (the per-row filters, when they can run here), then the cosine with the
/// query and the score bound of each survivor. Every value is computed
/// independently and the parts are joined in row order, so the split changes no
/// bit; an error is the one of the first failing row, as in a sequential pass.
fn scan_candidates(
    set: &particles_model::CandidateSet,
    rows: &[usize],
    query: Option<&QueryVector>,
    at_most_one: bool,
    keep: Option<&(dyn Fn(usize) -> Result<bool> + Sync)>,
) -> Result<Scanned> {
    /// One chunk's results, with its first filter error and first similarity
    /// error kept apart: the reference filters every candidate before it computes
    /// any similarity, so a filter error anywhere wins over a similarity error.
    struct Part {
        scanned: Scanned,
        filter_error: Option<Error>,
        similarity_error: Option<Error>,
    }
    let scan = |rows: &[usize]| -> Part {
        let mut part = Part {
            scanned: Scanned {
                survivors: Vec::with_capacity(rows.len()),
                similarities: query.map(|_| Vec::with_capacity(rows.len())),
                bounds: Vec::with_capacity(rows.len()),
            },
            filter_error: None,
            similarity_error: None,
        };
        for &row in rows {
            if let Some(keep) = keep {
                match keep(row) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        part.filter_error = Some(e);
                        break;
                    }
                }
            }
            if part.similarity_error.is_some() {
                // Only the filters still matter: they may fail further on.
                continue;
            }
            let similarity = match query.map(|query| particles_rank::similarity(set, row, query)) {
                None => None,
                Some(Ok(value)) => Some(value),
                Some(Err(e)) => {
                    part.similarity_error = Some(e.into());
                    continue;
                }
            };
            let out = &mut part.scanned;
            out.survivors.push(row);
            if let (Some(all), Some(value)) = (out.similarities.as_mut(), similarity) {
                all.push(value);
            }
            out.bounds.push(particles_rank::score_bound(
                set,
                row,
                similarity,
                at_most_one,
            ));
        }
        part
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(8);
    let parts: Vec<Part> = if threads < 2 || rows.len() < PARALLEL_SCAN_MIN {
        vec![scan(rows)]
    } else {
        let chunk = rows.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = rows
                .chunks(chunk)
                .map(|part| scope.spawn(move || scan(part)))
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    };
    let mut parts = parts;
    if let Some(at) = parts.iter().position(|p| p.filter_error.is_some()) {
        if let Some(error) = parts.swap_remove(at).filter_error {
            return Err(error);
        }
    }
    if let Some(at) = parts.iter().position(|p| p.similarity_error.is_some()) {
        if let Some(error) = parts.swap_remove(at).similarity_error {
            return Err(error);
        }
    }
    if parts.len() == 1 {
        if let Some(part) = parts.pop() {
            return Ok(part.scanned);
        }
    }
    let mut out = Scanned {
        survivors: Vec::with_capacity(rows.len()),
        similarities: query.map(|_| Vec::with_capacity(rows.len())),
        bounds: Vec::with_capacity(rows.len()),
    };
    for part in parts {
        let part = part.scanned;
        out.survivors.extend(part.survivors);
        if let (Some(all), Some(values)) = (out.similarities.as_mut(), part.similarities) {
            all.extend(values);
        }
        out.bounds.extend(part.bounds);
    }
    Ok(out)
}

fn request_has_claim_filters(request: &QueryRequest) -> bool {
    request.predicate.is_some()
        || request.object_eq.is_some()
        || request.object_gt.is_some()
        || request.object_lt.is_some()
        || request.object_contains.is_some()
}

fn top_k_of(request: &QueryRequest) -> usize {
    request.top_k as usize
}

/// Runs a loader, splitting its time into SQL, hydration and the rest.
fn timed_load(
    loader: &mut dyn CandidateLoader,
    store: &Store,
    request: &QueryRequest,
    timings: &mut StageTimings,
) -> Result<Selection> {
    particles_store::take_load_counters();
    let started = Instant::now();
    let selection = loader.load(store, request.min_confidence, request.subject_id.as_deref())?;
    let total = started.elapsed().as_secs_f64();
    let counters = particles_store::take_load_counters();
    timings.sql_fetch = counters.sql_seconds;
    timings.hydrate = counters.hydrate_seconds;
    timings.decode = (total - counters.sql_seconds - counters.hydrate_seconds).max(0.0);
    LAST_LOAD.with(|c| c.set(counters));
    Ok(selection)
}

thread_local! {
    /// The counters of the last load, read back by `rank_selection` on this thread.
    static LAST_LOAD: std::cell::Cell<particles_store::LoadCounters> =
        std::cell::Cell::new(particles_store::LoadCounters::default());
}

fn rank_selection(
    store: &Store,
    selection: &Selection,
    policies: &Policies,
    query: Option<&QueryVector>,
    input: &QueryInput<'_>,
    now: Timestamp,
    mut timings: StageTimings,
) -> Result<QueryOutcome> {
    let request: &QueryRequest = input.request;
    let set = selection.set.as_ref();
    let load = LAST_LOAD.with(std::cell::Cell::take);
    let mut work = WorkCounters {
        rows_read: selection.rows.len(),
        embedding_json_bytes: load.embedding_json_bytes,
        models_hydrated: load.models_hydrated,
        ..WorkCounters::default()
    };
    let mut clock = Instant::now();
    let mut lap = || {
        let elapsed = clock.elapsed().as_secs_f64();
        clock = Instant::now();
        elapsed
    };
    let mut stats = QueryStats {
        candidates: selection.rows.len(),
        skipped_other_model: selection.skipped_other_model,
        ..QueryStats::default()
    };
    // Score fully only what can reach the top k. Similarities and a bound that
    // needs no source lookup come from one scan; the bound orders the candidates;
    // they are scored in that order, in batches, until the next bound is below the
    // k-th score found. The survivors' loader positions break ties exactly as
    // before. Without tag or claim filters (which read the store), the per-row
    // filters run inside the scan too, so one parallel pass does all per-row work
    // (their time is then reported under `scoring`).
    let at_most_one = policies.factors_at_most_one();
    let store_filters = !request.tags.is_empty() || request_has_claim_filters(request);
    let scanned = if store_filters {
        let survivors = filter_candidates(store, set, &selection.rows, request, now, &mut stats)?;
        timings.filters = lap();
        scan_candidates(set, &survivors, query, at_most_one, None)?
    } else {
        let keep = |row: usize| -> Result<bool> {
            Ok(particles_rank::passes_filters(set, row, request)?
                && particles_rank::within_recency_window(set, row, request, now))
        };
        let scanned = scan_candidates(set, &selection.rows, query, at_most_one, Some(&keep))?;
        stats.filtered_out = selection.rows.len() - scanned.survivors.len();
        timings.filters = 0.0;
        scanned
    };
    let Scanned {
        survivors,
        similarities,
        bounds,
    } = scanned;
    let mut order: Vec<usize> = (0..survivors.len()).collect();
    // NaN bounds first: they must always be scored.
    let by_bound = |a: &usize, b: &usize| match (bounds[*a].is_nan(), bounds[*b].is_nan()) {
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => bounds[*b]
            .partial_cmp(&bounds[*a])
            .unwrap_or(std::cmp::Ordering::Equal),
    };
    // Only the front of the bound order is ever visited before the stopping rule
    // holds, so it is sorted a window at a time (a linear selection, then a sort of
    // the window) instead of sorting every candidate: 8 ms of 25 at 100k.
    let mut sorted_upto = 0;
    let mut window = (top_k_of(request) * 4).max(256);
    let mut sort_window = |order: &mut Vec<usize>, upto: usize| {
        while sorted_upto < upto.min(order.len()) {
            let end = (sorted_upto + window).min(order.len());
            let rest = &mut order[sorted_upto..];
            if end - sorted_upto < rest.len() {
                rest.select_nth_unstable_by(end - sorted_upto - 1, by_bound);
            }
            rest[..end - sorted_upto].sort_unstable_by(by_bound);
            sorted_upto = end;
            window *= 2;
        }
    };
    let mut scoring = lap();
    let top_k = request.top_k as usize;
    let batch = top_k.max(64);
    // (survivor position, ranked, factors, source)
    let mut scored: Vec<(usize, Ranked, Factors, SourceFacts)> = Vec::new();
    let mut best: Vec<f64> = Vec::with_capacity(top_k + 1);
    let mut snapshots = std::collections::HashSet::new();
    let mut entries = std::collections::HashSet::new();
    let mut next = 0;
    while next < order.len() {
        let sort_started = Instant::now();
        sort_window(&mut order, next + batch);
        scoring += sort_started.elapsed().as_secs_f64();
        if !input.exhaustive && best.len() == top_k {
            let kth = best[top_k - 1];
            if bounds[order[next]] < kth {
                break;
            }
        }
        let chunk = &order[next..(next + batch).min(order.len())];
        next += chunk.len();
        let lookup = Instant::now();
        for &position in chunk {
            if let Some((entry, snapshot)) = set.traits(survivors[position]).source {
                if !set.string(entry).is_empty() {
                    entries.insert(entry);
                }
                if let Some(snapshot) = snapshot.filter(|s| !set.string(*s).is_empty()) {
                    snapshots.insert(snapshot);
                }
            }
        }
        let sources = particles_store::source_facts(
            store,
            chunk.iter().map(|&position| {
                set.traits(survivors[position])
                    .source
                    .map(|(entry, snapshot)| (set.string(entry), snapshot.map(|s| set.string(s))))
            }),
        )?;
        timings.source_rows += lookup.elapsed().as_secs_f64();
        let lookup = Instant::now();
        let premises = particles_store::premise_statuses(
            store,
            chunk
                .iter()
                .flat_map(|&position| set.premises(survivors[position]).iter().map(String::as_str)),
        )?;
        timings.support_discounts += lookup.elapsed().as_secs_f64();
        let scoring_started = Instant::now();
        for (&position, source) in chunk.iter().zip(sources) {
            let row = survivors[position];
            let discount = particles_rank::stale_support_discount(set, row, &premises);
            let factors = particles_rank::factors(set, row, &source, discount, policies, now)?;
            let similarity = similarities.as_ref().map(|s| s[position]);
            work.candidates_scored += 1;
            match particles_rank::score_with_similarity(
                set,
                row,
                &factors,
                similarity,
                request.min_confidence,
            ) {
                Some(ranked) => {
                    // Keep the k best scores, descending, for the stopping rule.
                    let at = best.partition_point(|s| *s >= ranked.score);
                    if at < top_k {
                        best.insert(at, ranked.score);
                        best.truncate(top_k);
                    }
                    scored.push((position, ranked, factors, source));
                }
                None => stats.below_min_confidence += 1,
            }
        }
        scoring += scoring_started.elapsed().as_secs_f64();
    }
    stats.pruned = order.len() - next;
    work.snapshot_ids_looked_up = snapshots.len();
    work.entry_ids_looked_up = entries.len();
    // Back to loader order, so the stable sort breaks ties as the reference does.
    scored.sort_by_key(|(position, ..)| *position);
    let mut factors_of = HashMap::with_capacity(scored.len());
    let mut source_of = HashMap::with_capacity(scored.len());
    let mut scored: Vec<Ranked> = scored
        .into_iter()
        .map(|(_, ranked, factors, source)| {
            factors_of.insert(ranked.row, factors);
            source_of.insert(ranked.row, source);
            ranked
        })
        .collect();
    timings.scoring = scoring;
    lap();
    particles_rank::sort_and_truncate(&mut scored, request.top_k as usize);
    timings.sort = lap();
    let before_collapse = scored.len();
    let collapsed: Vec<Ranked> = particles_rank::collapse_co_evidential(
        scored,
        |r| set.id(r.row),
        |r| set.string(set.traits(r.row).source_key),
        |id| particles_store::co_evidential_edges(store, id),
    )?;
    stats.collapsed = before_collapse - collapsed.len();
    timings.collapse = lap();

    // Only the hits become full particles, read by id in the same transaction.
    let ids: Vec<&str> = collapsed.iter().map(|r| set.id(r.row)).collect();
    let mut particles: HashMap<String, Particle> = particles_store::particles_by_ids(store, &ids)?
        .into_iter()
        .map(|p| (p.id.clone(), p))
        .collect();
    let mut hits = Vec::with_capacity(collapsed.len());
    for ranked in collapsed {
        let id = set.id(ranked.row);
        let particle = particles
            .remove(id)
            .ok_or_else(|| Error::HitVanished { id: id.to_owned() })?;
        hits.push(Hit {
            particle,
            rowid: set.rowid(ranked.row),
            similarity: ranked.similarity,
            effective_confidence: ranked.effective_confidence,
            score: ranked.score,
            factors: factors_of.remove(&ranked.row).unwrap_or(Factors {
                extractor_weight: 1.0,
                source_trust: 1.0,
                decay: 1.0,
                discount: 1.0,
            }),
            source: source_of.remove(&ranked.row).unwrap_or_default(),
            as_of_note: None,
            window_hit: None,
        });
    }
    Ok(QueryOutcome {
        hits,
        stats,
        as_of_excluded_undatable: 0,
        window_coverage: None,
        timings,
        work,
    })
}
