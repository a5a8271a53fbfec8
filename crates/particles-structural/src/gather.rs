//! The shared candidate gather of the deterministic modes (the reference's
//! `_candidate_claims` and the window listing's `_listing_store`): the route's
//! loader, the default filters in the reference's order, the observer hook, and
//! effective confidence through the semantic path's kernel.
//!
//! Candidates are held as a [`Pool`]: the hydrated particles beside a
//! [`CandidateSet`] of the same rows (with empty vectors), so the filters and
//! the scoring are the very functions the semantic path runs.

use std::collections::HashMap;

use particles_candidates::CandidateSet;
use particles_model::{
    response::{AsOfNote, ObserverScopeNote},
    Particle, Timestamp, ValidRequest,
};
use particles_query::{
    as_of_visibility, gather_window, FactLookups, QueryInput, RetirementIndex, StageTimings,
    Visibility, WindowGathered,
};
use particles_rank::Policies;
use particles_store::{ScopeRow, Store};

use crate::Result;

/// Candidates as the filters and the scoring read them: row `i` of `set` is
/// `particles[i]`.
#[derive(Default)]
pub(crate) struct Pool {
    pub(crate) set: CandidateSet,
    pub(crate) particles: Vec<Particle>,
}

impl Pool {
    fn push(&mut self, rowid: i64, particle: Particle) {
        // No vector: the structural modes never compute a similarity.
        self.set.push(rowid, &particle, &[], None);
        self.particles.push(particle);
    }

    fn from_rows(rows: impl IntoIterator<Item = ScopeRow>) -> Pool {
        let mut pool = Pool {
            set: CandidateSet::new(),
            particles: Vec::new(),
        };
        for row in rows {
            pool.push(row.rowid, row.particle);
        }
        pool
    }
}

/// One store's default-filtered candidates and what their route learned.
pub(crate) struct Gathered {
    pub(crate) pool: Pool,
    /// Rows of `pool` that passed every filter, in loader order.
    pub(crate) rows: Vec<usize>,
    /// With `as_of`: notes of candidates retired since T, by id.
    pub(crate) as_of_notes: HashMap<String, AsOfNote>,
    /// With `as_of`: retired candidates left out because no rung dated them.
    pub(crate) as_of_excluded_undatable: u64,
    /// With a window: the readings and the coverage.
    pub(crate) window: Option<WindowGathered>,
    /// With `observer_project`: what the observer did.
    pub(crate) observer_scope: Option<ObserverScopeNote>,
}

/// Which candidates a gather loads through the window route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WindowScope {
    /// Only rows carrying a structured claim (the claim modes).
    Claims,
    /// Every dated row (the window listing).
    Any,
}

/// The claim modes' gather (§7.1 steps 1 and 2): the window route requiring a
/// claim, else the ACTIVE claims, else the as-of claim loader cut by the as-of
/// view; then the default filters with the recency window (measured back from
/// `as_of`, else `now`).
pub(crate) fn gather_claims(store: &Store, input: &QueryInput<'_>) -> Result<Gathered> {
    let request = input.request;
    let mut gathered = match (request.window, request.as_of) {
        (Some(_), _) => gather_through_window(store, request, WindowScope::Claims)?,
        (None, None) => {
            let rows = particles_store::load_active_claims(
                store,
                request.min_confidence,
                request.subject_id.as_deref(),
            )?;
            unfiltered(Pool::from_rows(rows))
        }
        (None, Some(as_of)) => {
            let index = RetirementIndex::load(store)?;
            let loaded = particles_store::load_claims_as_of(
                store,
                as_of.utc_micros(),
                request.min_confidence,
                request.subject_id.as_deref(),
            )?;
            let mut notes = HashMap::new();
            let mut excluded = 0;
            let mut pool = Pool::default();
            for row in loaded {
                match as_of_visibility(&index, &row.particle, row.retired_at, as_of.utc_micros()) {
                    Visibility::Hidden => {}
                    Visibility::Undatable => excluded += 1,
                    Visibility::Visible(note) => {
                        if let Some(note) = note {
                            notes.insert(row.particle.id.clone(), note);
                        }
                        pool.push(row.rowid, row.particle);
                    }
                }
            }
            let mut gathered = unfiltered(pool);
            gathered.as_of_notes = notes;
            gathered.as_of_excluded_undatable = excluded;
            gathered
        }
    };
    let recency_from = request.as_of.unwrap_or(input.now);
    default_filters(store, input, &mut gathered, Some(recency_from))?;
    Ok(gathered)
}

/// The window listing's gather (§7.6): every dated row through the window route
/// (as-of composed inside), then the default filters **without** the recency
/// window, as the reference's listing does.
pub(crate) fn gather_window_listing(store: &Store, input: &QueryInput<'_>) -> Result<Gathered> {
    let request = input.request;
    let mut gathered = gather_through_window(store, request, WindowScope::Any)?;
    default_filters(store, input, &mut gathered, None)?;
    Ok(gathered)
}

fn unfiltered(pool: Pool) -> Gathered {
    Gathered {
        rows: (0..pool.particles.len()).collect(),
        pool,
        as_of_notes: HashMap::new(),
        as_of_excluded_undatable: 0,
        window: None,
        observer_scope: None,
    }
}

fn gather_through_window(
    store: &Store,
    request: &ValidRequest,
    scope: WindowScope,
) -> Result<Gathered> {
    let Some(window) = request.window else {
        return Err(crate::Error::NotStructural);
    };
    let loaded = particles_store::load_window_scope(
        store,
        request.min_confidence,
        request.subject_id.as_deref(),
        scope == WindowScope::Claims,
    )?;
    let mut window_gathered = gather_window(
        store,
        window,
        request.as_of,
        loaded.iter().map(|row| (&row.particle, row.retired_at)),
    )?;
    let mut slots: Vec<Option<ScopeRow>> = loaded.into_iter().map(Some).collect();
    let admitted = std::mem::take(&mut window_gathered.admitted);
    let pool = Pool::from_rows(
        admitted
            .into_iter()
            .filter_map(|position| slots.get_mut(position).and_then(Option::take)),
    );
    let mut gathered = unfiltered(pool);
    gathered.as_of_notes = std::mem::take(&mut window_gathered.as_of_notes);
    gathered.as_of_excluded_undatable = window_gathered.as_of_excluded_undatable as u64;
    gathered.window = Some(window_gathered);
    Ok(gathered)
}

/// The default filters in the reference's order: DOCUMENT_META scope,
/// non-asserted polarity, stance markers, uncertainty nature, assertion modality
/// (`passes_filters`), tags, the recency window when `recency_from` is given,
/// then the observer.
fn default_filters(
    store: &Store,
    input: &QueryInput<'_>,
    gathered: &mut Gathered,
    recency_from: Option<Timestamp>,
) -> Result<()> {
    let request = input.request;
    let set = &gathered.pool.set;
    let mut kept = Vec::with_capacity(gathered.rows.len());
    for &row in &gathered.rows {
        if particles_candidates::passes_filters(set, row, request)? {
            kept.push(row);
        }
    }
    if !request.tags.is_empty() {
        let expanded =
            particles_store::expand_tags(store, &request.tags, request.include_ancestors)?;
        let tagged = particles_store::particle_ids_for_tags(store, &expanded)?;
        kept.retain(|&row| tagged.contains(set.id(row)));
    }
    if let Some(now) = recency_from {
        kept.retain(|&row| particles_candidates::within_recency_window(set, row, request, now));
    }
    gathered.observer_scope = observer_scope(store, input, &gathered.pool, &mut kept)?;
    gathered.rows = kept;
    Ok(())
}

/// The project observer (`observer_project`): after every other candidate
/// filter, before anything is matched, scored, counted or listed, as the
/// reference filters; its note becomes the response's `observer_scope` (copied
/// into a vocabulary report), the note of a store never rescoped included.
fn observer_scope(
    store: &Store,
    input: &QueryInput<'_>,
    pool: &Pool,
    rows: &mut Vec<usize>,
) -> Result<Option<ObserverScopeNote>> {
    let request = input.request;
    let Some(project) = request.observer_project.as_deref() else {
        return Ok(None);
    };
    let ids: Vec<&str> = rows.iter().map(|&row| pool.set.id(row)).collect();
    let filter = particles_query::observer_filter(
        store,
        project,
        request.as_of,
        &ids,
        &input.settings.harness_tags,
    )?;
    rows.retain(|&row| filter.visible.contains(pool.set.id(row)));
    Ok(Some(filter.note))
}

/// Effective confidence of each of `rows` (the reference's
/// `score_effective_confidence`): capped stored value × extractor weight ×
/// source trust × decay at `as_of` (else `now`), clamped, × the stale-support
/// discount; rows below `min_confidence` dropped. Returns `(row, effective)` in
/// the order of `rows`. The policies are compiled only when there is a row to
/// score, as the reference loads them only then.
pub(crate) fn effective_confidences(
    store: &Store,
    pool: &Pool,
    rows: &[usize],
    input: &QueryInput<'_>,
) -> Result<Vec<(usize, f64)>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let request = input.request;
    let policies = Policies::compile(&particles_store::load_policy_rows(store)?, input.settings)?;
    let now = request.as_of.unwrap_or(input.now);
    let facts = FactLookups::default().read(
        store,
        &pool.set,
        rows,
        &policies,
        &mut StageTimings::default(),
    )?;
    let mut scored = Vec::with_capacity(rows.len());
    for (&row, (source, discount)) in rows.iter().zip(facts) {
        let factors = particles_rank::factors(&pool.set, row, &source, discount, &policies, now)?;
        if let Some(ranked) = particles_rank::score_with_similarity(
            &pool.set,
            row,
            &factors,
            None,
            request.min_confidence,
            &policies,
        ) {
            scored.push((row, ranked.effective_confidence));
        }
    }
    Ok(scored)
}
