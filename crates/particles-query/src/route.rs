//! Which loader a request reads through, and what that loader adds to the answer.
//!
//! A window reads through the [`WindowLoader`] (with any `as_of` composed inside);
//! `as_of` alone through the [`AsOfLoader`]; anything else through the caller's
//! loader (uncached or a cache). The special loaders know things about their
//! candidates that ranking does not (as-of notes, window readings, coverage), and
//! attach them to the outcome after the one ranking pass.

use std::collections::HashMap;

use particles_model::{
    response::{AsOfNote, WindowCoverage, WindowHit},
    Timestamp, ValidRequest,
};
use particles_store::{CandidateLoader, Loaded, Store};

use crate::{as_of::AsOfLoader, window::WindowLoader, QueryOutcome};

pub(crate) enum Route<'a> {
    Caller(&'a mut dyn CandidateLoader),
    AsOf(AsOfLoader),
    Window(WindowLoader),
}

/// What a route's loader learned, owned, so it outlives the loader.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteNotes {
    pub(crate) as_of_notes: HashMap<String, AsOfNote>,
    pub(crate) window_hits: HashMap<String, WindowHit>,
    pub(crate) as_of_excluded_undatable: u64,
    pub(crate) window_coverage: Option<WindowCoverage>,
}

impl RouteNotes {
    /// Attaches the notes to the outcome's hits and counts.
    pub(crate) fn annotate(&self, outcome: &mut QueryOutcome) {
        outcome.as_of_excluded_undatable = self.as_of_excluded_undatable as usize;
        outcome.window_coverage = self.window_coverage;
        for hit in &mut outcome.hits {
            hit.as_of_note = self.as_of_notes.get(&hit.id).cloned();
            hit.window_hit = self.window_hits.get(&hit.id).cloned();
        }
    }
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

    /// What the loader learned while loading.
    pub(crate) fn into_notes(self) -> RouteNotes {
        match self {
            Route::Caller(_) => RouteNotes::default(),
            Route::AsOf(loader) => RouteNotes {
                as_of_excluded_undatable: loader.excluded_undatable() as u64,
                as_of_notes: loader.into_notes(),
                ..RouteNotes::default()
            },
            Route::Window(loader) => RouteNotes {
                as_of_excluded_undatable: loader.as_of_excluded_undatable() as u64,
                window_coverage: Some(loader.coverage()),
                as_of_notes: loader.as_of_notes().clone(),
                window_hits: loader.hits().clone(),
            },
        }
    }
}
