//! The deterministic (structural) modes of a Particles query: requests
//! answered without a question vector or a model call, exactly as the
//! reference's `operations/query/structural.py` and `window.py` answer them
//! (spec engine-api §7).
//!
//! [`run_structural_with`] dispatches on [`Mode`] in the reference's order
//! (window listing, then the predicate listing, the vocabulary report, and the
//! claim listing or aggregate) and runs the whole answer in one read
//! transaction:
//!
//! * `gather` is the shared candidate gather (§7.1): the route's loader (window,
//!   as-of, or the ACTIVE claims; no embedding required), the default filters in
//!   the reference's order, the observer hook, and effective confidence through
//!   the semantic path's scoring kernel (`particles_rank::factors` and
//!   `score_with_similarity` without a similarity); the window and as-of views
//!   and the source-fact lookups are `particles-query`'s own;
//! * `listing` assembles the claim listing and the aggregates (§7.2, §7.3) and
//!   the window listing (§7.6);
//! * `vocabulary` is the predicate listing and the vocabulary report (§7.4,
//!   §7.5), with the reference's predicate normaliser.
//!
//! Answer sentences, orders and tie-breaks are the reference's, byte for byte:
//! every sort is stable over the loader's order, and every float is computed in
//! the reference's operation order.
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("beliefs.db");
//! # particles_store::create_store(&path)?;
//! use particles_model::{QueryRequest, Timestamp};
//! use particles_query::QueryInput;
//! use particles_store::Store;
//! use particles_structural::{run_structural_with, StructuralSettings};
//! let store = Store::open_read_only(&path)?;
//! let now = Timestamp::parse("2026-01-01T00:00:00Z")?;
//! let request = QueryRequest { count: true, ..QueryRequest::default() }.validate(now)?;
//! let input = QueryInput::new(&request, None, now);
//! let response = run_structural_with(&store, &input, &StructuralSettings::default())?;
//! println!("{}", response.answer);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
#![forbid(unsafe_code)]

mod error;
mod gather;
mod listing;
mod vocabulary;

use particles_model::{response::QueryResponse, Mode};
use particles_query::QueryInput;
use particles_store::Store;

pub use crate::error::{Error, Result};

/// The configuration keys the structural modes read that do not enter ranking
/// (ranking keys travel in [`QueryInput::settings`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StructuralSettings {
    /// `subjects.wikidata_link_suppress_threshold`: external links below it are
    /// counted in the `suppressed` band of the vocabulary report (default 0.25).
    pub link_suppress_threshold: f64,
}

impl Default for StructuralSettings {
    fn default() -> Self {
        StructuralSettings {
            link_suppress_threshold: 0.25,
        }
    }
}

/// Runs a structural request (any [`Mode`] but `Semantic`) with `settings`, in
/// one read transaction of `store`, and returns the reference's
/// `QueryResponse` for that mode.
///
/// Decay is evaluated at the request's `as_of`, else at `input.now` (never the
/// wall clock); `input.vector` is not read.
///
/// # Errors
///
/// [`Error::NotStructural`] for a semantic request; [`Error::Store`] (or
/// [`Error::Query`], from the shared gather) when the store cannot be read or
/// holds a row the reference also refuses; [`Error::Rank`] and
/// [`Error::Filter`] where the reference's scoring or filters raise;
/// [`Error::AmbiguousSubject`] when a subject bucket's key is an id prefix of
/// several subjects.
pub fn run_structural_with(
    store: &Store,
    input: &QueryInput<'_>,
    settings: &StructuralSettings,
) -> Result<QueryResponse> {
    let mode = input.request.mode();
    if mode == Mode::Semantic {
        return Err(Error::NotStructural);
    }
    store.read_snapshot(|store| Ok(run_in_snapshot(store, input, settings, mode)))?
}

fn run_in_snapshot(
    store: &Store,
    input: &QueryInput<'_>,
    settings: &StructuralSettings,
    mode: Mode,
) -> Result<QueryResponse> {
    particles_store::check_schema_version(store)?;
    match mode {
        Mode::WindowListing => listing::window_listing(store, input),
        Mode::Predicates => vocabulary::predicate_listing(store, input),
        Mode::Vocabulary => vocabulary::vocabulary_listing(store, input, settings),
        Mode::ClaimListing | Mode::Aggregate => listing::claim_listing_or_aggregate(store, input),
        Mode::Semantic => Err(Error::NotStructural),
    }
}
