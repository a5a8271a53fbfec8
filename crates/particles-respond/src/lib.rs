//! The semantic response of a Particles query (the reference's
//! `operations/query/main.py` `query` after the ranking, and `_build_response`
//! without the answer text): what the ranked hits are shown with, read in the
//! ranking's snapshot.
//!
//! [`semantic_response`] fills every field of a [`QueryResponse`] but the answer:
//! the hits and their parallel lists, the coverage gaps, the narratives'
//! constituents, the opt-in agreement and contestedness, the contested badges, the
//! relevance disclosure, the truncation warning and the as-of, window, observer
//! and claim-filter echoes. The answer text, its refusal flag and its disclosure
//! fields stay empty for the caller (`particles-answer`).
//!
//! The ranking (`particles-query`) knows nothing of the response: it hands each
//! outcome to its caller together with the store inside its read transaction
//! (`particles_query::run_semantic_batch_streaming`), and the caller builds the
//! response there, so that the ranking and everything the response reports read
//! one snapshot. Its parts follow the reference's modules: `gaps`, `narrative`,
//! `stance`, `contestedness`, `modality` and `contested`; their store reads live
//! in `particles_store::response`.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("beliefs.db");
//! # particles_store::create_store(&path)?;
//! use particles_model::{QueryRequest, Timestamp};
//! use particles_query::{run_semantic_batch_streaming, QueryInput};
//! use particles_respond::{semantic_response, ResponseSettings};
//! use particles_store::{Store, UncachedLoader};
//! let store = Store::open_read_only(&path)?;
//! let now = Timestamp::parse("2026-01-01T00:00:00Z")?;
//! let request = QueryRequest::question("how are old coins graded?").validate(now)?;
//! let inputs = [QueryInput::new(&request, None, now)];
//! let settings = ResponseSettings::default();
//! run_semantic_batch_streaming(
//!     &store,
//!     &mut UncachedLoader,
//!     &inputs,
//!     &settings.observer_harness_tags,
//!     &mut || {},
//!     // `snapshot` is the store inside the ranking's read transaction.
//!     &mut |at, snapshot, outcome| {
//!         let outcome = outcome.expect("an empty store ranks nothing");
//!         let response = semantic_response(snapshot, &outcome, &inputs[at], &settings)
//!             .expect("an empty store has nothing to show");
//!         assert!(response.particles.is_empty() && response.answer.is_empty());
//!     },
//! )?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
#![forbid(unsafe_code)]

mod contested;
mod contestedness;
mod digest;
mod effective;
mod error;
mod gaps;
mod modality;
mod narrative;
mod projection;
mod stance;

use particles_model::{
    policy::PolicyRows,
    response::{self, QueryResponse, RelevanceNote},
};
use particles_query::{
    default_harness_tags, truncation_warning, QueryInput, QueryOutcome, TruncationSettings,
};
use particles_rank::Policies;
use particles_store::Store;

use crate::stance::AGREEMENT_CAVEAT;
pub use crate::{
    digest::{
        render_digest, session_digest, DigestEntry, DigestLine, DigestSettings, RenderedDigest,
    },
    error::{Error, Result},
    projection::{memory_region, FoldVerdict, MemoryRegion, RegionRequest, RegionSettings},
};

/// The reference's disclosure when ranking ran without a query vector (its
/// `RANKING_DEGRADED_NO_ENCODER`).
const RANKING_DEGRADED_NO_ENCODER: &str = "Semantic ranking unavailable: no embedding model \
could be loaded. These beliefs are the store's most confident ones, NOT necessarily ones about \
your question, and the relevance floor that would normally refuse an off-topic answer is \
inactive. Install the embedding model (sentence-transformers) and re-run to get a real answer.";

/// The configuration keys the response reads, with the reference's compiled
/// defaults. (`query.equivalence_threshold` and the decay table come with the
/// ranking's `RankSettings`.)
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseSettings {
    /// `query.relevance_floor` (0.25): below it the answer is refused.
    pub relevance_floor: f64,
    /// `contestedness.badge_enabled` (true): compute the contested badges.
    pub badge_enabled: bool,
    /// `contestedness.callout_threshold` (0.2): the spread that fires the
    /// divergence basis.
    pub callout_threshold: f64,
    /// `query.truncation_min_gap` (0.05), for the truncation warning.
    pub truncation_min_gap: f64,
    /// `query.truncation_near_margin` (0.15), for the truncation warning.
    pub truncation_near_margin: f64,
    /// `query.truncation_near_count` (5), for the truncation warning.
    pub truncation_near_count: u64,
    /// `observer_scope.harness_tags` (`[claude-code]`): keyless entries carrying one
    /// are unattributed rather than global.
    pub observer_harness_tags: Vec<String>,
}

impl Default for ResponseSettings {
    fn default() -> Self {
        ResponseSettings {
            relevance_floor: 0.25,
            badge_enabled: true,
            callout_threshold: 0.2,
            truncation_min_gap: 0.05,
            truncation_near_margin: 0.15,
            truncation_near_count: 5,
            observer_harness_tags: default_harness_tags(),
        }
    }
}

/// Builds the response to a ranked semantic query, reading what it needs from
/// `store`. Call it inside the ranking's read transaction (with the store
/// `particles_query::run_semantic_batch_streaming` hands out with each outcome)
/// so that everything the response reports comes from one snapshot.
///
/// The answer is left empty, `answer_refused` false and the answer's disclosure
/// fields null (the answer step fills them, and drops the truncation warning
/// under a refusal). Stance effective
/// confidences and the contestedness decay are evaluated at `input.now` (the
/// reference reads the wall clock there), never at `as_of`.
///
/// # Errors
///
/// [`Error::AmbiguousSubject`] when `subject_id` is a prefix of several
/// subject ids; [`Error::Store`] / [`Error::Rank`] when the store
/// cannot be read or holds data the reference also fails on.
pub fn semantic_response(
    store: &Store,
    outcome: &QueryOutcome,
    input: &QueryInput<'_>,
    settings: &ResponseSettings,
) -> Result<QueryResponse> {
    let request = input.request;
    let rows = adopted_in_order(store, particles_store::load_policy_rows(store)?)?;
    let policies = Policies::compile(&rows, input.settings)?;
    let hits: Vec<particles_model::Particle> = outcome
        .hits
        .iter()
        .map(|hit| particles_model::Particle::clone(&hit.particle))
        .collect();

    let mut out = QueryResponse::empty(String::new());
    out.effective_confidences = outcome
        .hits
        .iter()
        .map(|hit| hit.effective_confidence)
        .collect();
    out.content_published_ats = outcome
        .hits
        .iter()
        .map(|hit| hit.source.published_at)
        .collect();
    out.coverage_gaps = particles_store::coverage_gap_entries(store)?;
    out.subject_coverage_gaps = gaps::subject_coverage_gaps(
        store,
        request.subject_id.as_deref(),
        outcome.subject_claims.as_deref(),
        hits.len(),
    )?;
    out.narrative_constituents = narrative::narrative_constituents(store, &hits)?;
    if request.include_agreement {
        let (distributions, any) =
            stance::agreement_distributions(store, &hits, &policies, input.now)?;
        out.agreement_distributions = distributions;
        out.agreement_caveat = any.then(|| AGREEMENT_CAVEAT.to_owned());
    }
    // The badges reuse the readings; without `include_contestedness` they are
    // computed for the divergence basis alone.
    if request.include_contestedness || settings.badge_enabled {
        let members = particles_rank::member_policies(&rows, input.settings)?;
        let readings =
            contestedness::contestedness_readings(store, &hits, &members, &policies, input.now)?;
        if request.include_contestedness {
            out.contestedness = readings.clone();
        }
        if settings.badge_enabled {
            let lens = modality::ModalityLens::from_lenses(&rows.lenses);
            out.contested = contested::contested_badges(
                store,
                &hits,
                &readings,
                &lens,
                settings.callout_threshold,
            )?;
        }
    }
    out.relevance = match (input.vector, outcome.hits.is_empty()) {
        (Some(_), false) => {
            let max_similarity = outcome
                .hits
                .iter()
                .map(|hit| hit.similarity)
                .fold(f64::NEG_INFINITY, particles_rank::py_max);
            Some(RelevanceNote {
                max_similarity,
                floor: settings.relevance_floor,
                below_floor: max_similarity < settings.relevance_floor,
            })
        }
        _ => None,
    };
    out.ranking_degraded = input
        .vector
        .is_none()
        .then(|| RANKING_DEGRADED_NO_ENCODER.to_owned());
    out.truncation_warning = truncation_warning(
        outcome,
        request.top_k,
        input.settings,
        &settings.truncation(),
    );
    out.as_of = request.as_of;
    if request.as_of.is_some() {
        out.as_of_notes = outcome.hits.iter().map(|h| h.as_of_note.clone()).collect();
    }
    out.as_of_excluded_undatable = outcome.as_of_excluded_undatable as u64;
    out.window = request.window;
    if request.window.is_some() {
        out.window_hits = outcome.hits.iter().map(|h| h.window_hit.clone()).collect();
    }
    out.window_coverage = outcome.window_coverage;
    out.observer_scope = outcome.observer_scope.clone();
    out.claim_coverage = outcome.claim_coverage.map(|c| response::ClaimCoverage {
        active_total: c.active_total,
        with_claims: c.with_claims,
        matched: c.matched as u64,
        not_normalizable_excluded: c.not_normalizable_excluded as u64,
        below_min_effective_confidence: 0,
    });
    out.particles = hits;
    Ok(out)
}

/// The policy rows with the adopted lenses in adoption order (the order the
/// contestedness renderings list them in), whatever order the policy reader
/// returned them in.
fn adopted_in_order(store: &Store, mut rows: PolicyRows) -> Result<PolicyRows> {
    let order = particles_store::adopted_lens_names(store)?;
    rows.lenses
        .sort_by_key(|lens| order.iter().position(|name| *name == lens.name));
    Ok(rows)
}

impl ResponseSettings {
    /// The truncation keys, as the warning takes them.
    fn truncation(&self) -> TruncationSettings {
        TruncationSettings {
            min_gap: self.truncation_min_gap,
            near_margin: self.truncation_near_margin,
            near_count: i64::try_from(self.truncation_near_count).unwrap_or(i64::MAX),
        }
    }
}
