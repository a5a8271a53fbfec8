//! Which loader a request reads through, and what that loader adds to the answer.
//!
//! A window reads through the [`WindowLoader`] (with any `as_of` composed inside);
//! `as_of` alone through the [`AsOfLoader`]; anything else through the caller's
//! loader (uncached or a cache). The special loaders know things about their
//! candidates that ranking does not (as-of notes, window readings, coverage), and
//! attach them to the outcome after the one ranking pass.

use particles_model::{Timestamp, ValidRequest};
use particles_store::{CandidateLoader, Loaded, Store};

use crate::{AsOfLoader, QueryOutcome, WindowLoader};

pub(crate) enum Route<'a> {
    Caller(&'a mut dyn CandidateLoader),
    AsOf(AsOfLoader),
    Window(WindowLoader),
}

impl<'a> Route<'a> {
    pub(crate) fn for_request(
        request: &ValidRequest,
        caller: &'a mut dyn CandidateLoader,
    ) -> Route<'a> {
        match (request.window, request.as_of) {
            // World time selects across statuses; believed-at-T filters within it.
            (Some(window), as_of) => Route::Window(WindowLoader::new(window, as_of)),
            (None, Some(as_of)) => Route::AsOf(AsOfLoader::new(as_of)),
            (None, None) => Route::Caller(caller),
        }
    }

    /// The instant decay and the recency window are evaluated at: `as_of` when the
    /// request is believed-at-T, else the caller's `now`.
    pub(crate) fn clock(request: &ValidRequest, now: Timestamp) -> Timestamp {
        request.as_of.unwrap_or(now)
    }

    pub(crate) fn load(
        &mut self,
        store: &Store,
        request: &ValidRequest,
    ) -> particles_store::Result<Loaded> {
        let loader: &mut dyn CandidateLoader = match self {
            Route::Caller(loader) => *loader,
            Route::AsOf(loader) => loader,
            Route::Window(loader) => loader,
        };
        loader.load(store, request.min_confidence, request.subject_id.as_deref())
    }

    /// Attaches what the loader learned to the outcome's hits and counts.
    pub(crate) fn annotate(&self, outcome: &mut QueryOutcome) {
        match self {
            Route::Caller(_) => {}
            Route::AsOf(loader) => {
                outcome.as_of_excluded_undatable = loader.excluded_undatable();
                for hit in &mut outcome.hits {
                    hit.as_of_note = loader.notes().get(&hit.id).cloned();
                }
            }
            Route::Window(loader) => {
                outcome.as_of_excluded_undatable = loader.as_of_excluded_undatable();
                outcome.window_coverage = Some(loader.coverage());
                for hit in &mut outcome.hits {
                    hit.as_of_note = loader.as_of_notes().get(&hit.id).cloned();
                    hit.window_hit = loader.hits().get(&hit.id).cloned();
                }
            }
        }
    }
}
