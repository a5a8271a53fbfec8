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

use particles_model::{policy::SourceFacts, Particle, QueryRequest, Timestamp};
use particles_rank::{Factors, NormKernel, Policies, QueryVector, Ranked};
use particles_store::{Candidates, Store};

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
    /// The instant decay is evaluated at.
    pub now: Timestamp,
    /// The BLAS kernel whose rounding the query norm reproduces.
    pub norm_kernel: NormKernel,
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
}

/// A query's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryOutcome {
    /// The hits in rank order (at most `top_k`).
    pub hits: Vec<Hit>,
    /// Counts that explain them.
    pub stats: QueryStats,
}

/// Runs a semantic query inside one read transaction of `store`.
///
/// # Errors
///
/// [`Error::Store`] when the store cannot be read or holds a row the reference
/// also refuses (bad schema stamp, malformed row or embedding); [`Error::Rank`] for
/// an invalid adopted lens, an unsplittable source URI or a vector dimension that
/// differs from the query's.
pub fn run_query(store: &Store, input: &QueryInput<'_>) -> Result<QueryOutcome> {
    store.read_snapshot(|store| Ok(run_in_snapshot(store, input)))?
}

fn run_in_snapshot(store: &Store, input: &QueryInput<'_>) -> Result<QueryOutcome> {
    let request: &QueryRequest = input.request;
    particles_store::check_schema_version(store)?;
    let policies = Policies::compile(&particles_store::load_policy_rows(store)?)?;
    let query = input
        .vector
        .map(|v| QueryVector::new(v.to_vec(), input.norm_kernel));
    let candidates =
        particles_store::load_active(store, request.min_confidence, request.subject_id.as_deref())?;
    rank_candidates(store, candidates, &policies, query.as_ref(), input)
}

fn rank_candidates(
    store: &Store,
    candidates: Candidates,
    policies: &Policies,
    query: Option<&QueryVector>,
    input: &QueryInput<'_>,
) -> Result<QueryOutcome> {
    let request: &QueryRequest = input.request;
    let mut stats = QueryStats {
        candidates: candidates.items.len(),
        skipped_other_model: candidates.skipped_other_model,
        ..QueryStats::default()
    };
    let mut survivors = Vec::with_capacity(candidates.items.len());
    for candidate in candidates.items {
        if particles_rank::passes_filters(&candidate.particle, request, input.now)? {
            survivors.push(candidate);
        } else {
            stats.filtered_out += 1;
        }
    }
    let sources = particles_store::source_facts(store, survivors.iter().map(|c| &c.particle))?;
    let premises = particles_store::premise_statuses(store, survivors.iter().map(|c| &c.particle))?;

    let mut scored = Vec::with_capacity(survivors.len());
    let mut all_factors = Vec::with_capacity(survivors.len());
    for (index, (candidate, source)) in survivors.iter().zip(&sources).enumerate() {
        let discount = particles_rank::stale_support_discount(&candidate.particle, &premises);
        let factors =
            particles_rank::factors(&candidate.particle, source, discount, policies, input.now)?;
        all_factors.push(factors);
        match particles_rank::score_candidate(
            index,
            &candidate.particle,
            &candidate.vector,
            &factors,
            query,
            request.min_confidence,
        )? {
            Some(ranked) => scored.push(ranked),
            None => stats.below_min_confidence += 1,
        }
    }
    particles_rank::sort_and_truncate(&mut scored, request.top_k as usize);
    let before_collapse = scored.len();
    let collapsed: Vec<Ranked> = particles_rank::collapse_co_evidential(
        scored,
        |r| survivors[r.index].particle.id.as_str(),
        |r| survivors[r.index].particle.source_key(),
        |id| particles_store::co_evidential_edges(store, id),
    )?;
    stats.collapsed = before_collapse - collapsed.len();

    let hits = collapsed
        .into_iter()
        .map(|ranked| Hit {
            particle: survivors[ranked.index].particle.clone(),
            rowid: survivors[ranked.index].rowid,
            similarity: ranked.similarity,
            effective_confidence: ranked.effective_confidence,
            score: ranked.score,
            factors: all_factors[ranked.index],
            source: sources[ranked.index].clone(),
        })
        .collect();
    Ok(QueryOutcome { hits, stats })
}
