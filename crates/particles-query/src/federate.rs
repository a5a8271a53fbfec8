//! The federated query: one request over several stores under the first store's
//! (the viewer's) policies, as the reference's `query_federated` does
//! (`operations/query/main.py`; spec: config-and-stores §5).
//!
//! 1. The viewer's schema guard and policy snapshot (extractor weights, trust,
//!    decay) apply to every store's candidates.
//! 2. Each store, in handle order, gathers and scores its candidates in its own
//!    snapshot (its loader, filters, source rows and premises).
//! 3. The scored lists are concatenated and sorted by score, stably (ties keep the
//!    earlier store first, then loader order), and cut at `top_k`.
//! 4. The cut is grouped by owner (an id belongs to the last store that scored
//!    it), groups in order of first appearance; each group collapses over its
//!    owner's co-evidential edges.
//! 5. The collapsed list is sorted again by score with the merged effective
//!    confidences (where it differs from a single-store query); freed slots are not
//!    refilled.
//!
//! A store prunes candidates whose score bound cannot reach its own k-th score (less
//! the prune margin); a store's k-th score is at most the merged one, so nothing
//! that could enter the merged cut, or that the truncation warning counts, is
//! lost. What pruning hides is whether a later store also scored an id of the cut
//! (it owns the id then): those few are scored on demand.

use std::collections::HashMap;

use particles_model::{response::WindowCoverage, Mode, Particle, Timestamp};
use particles_rank::{Policies, QueryVector};
use particles_store::{CandidateLoader, Loaded, Store};

use crate::{
    gather::{Gather, Gathered},
    mode_name,
    route::{Route, RouteNotes},
    ClaimCoverage, Error, Hit, QueryInput, QueryOutcome, Result, StageTimings, WorkCounters,
};

/// One store of a federation: its handle (ownership is keyed by it), the open
/// store and the loader its candidates come from.
pub struct FederationMember<'a> {
    /// The store's handle (a `storage.stores` key, or `default`).
    pub handle: String,
    /// The open store.
    pub store: &'a Store,
    /// Its candidate loader (uncached, or a cache of this store).
    pub loader: &'a mut dyn CandidateLoader,
}

/// What one store contributed, owned so it outlives the store's snapshot.
struct Gathering {
    loaded: Loaded,
    notes: RouteNotes,
    gathered: Gathered,
    /// Its scored ids, to the position in `gathered.scored`.
    scored_ids: HashMap<String, usize>,
    /// The particles of its first `top_k` scored candidates, read in its snapshot:
    /// the only ones that can become hits.
    particles: HashMap<String, Particle>,
    claim_coverage: Option<ClaimCoverage>,
    unknown_tags: Vec<String>,
}

impl Gathering {
    fn id(&self, scored: usize) -> &str {
        self.loaded
            .selection
            .set
            .id(self.gathered.scored[scored].ranked.row)
    }

    fn source_key(&self, scored: usize) -> &str {
        let set = &self.loaded.selection.set;
        set.string(
            set.traits(self.gathered.scored[scored].ranked.row)
                .source_key,
        )
    }
}

/// One entry of the merged list: which store, which of its scored candidates.
#[derive(Clone, Copy)]
struct Entry {
    member: usize,
    scored: usize,
}

/// Everything a federated query shares across stores.
struct Shared<'a> {
    input: &'a QueryInput<'a>,
    policies: Policies,
    query: Option<QueryVector>,
    now: Timestamp,
    harness_tags: Vec<String>,
}

/// Runs a semantic query across `members`; the first is the viewer. Each hit
/// names its store (`Hit::store`).
///
/// # Errors
///
/// As [`crate::run_query_with`], for any store; [`Error::UnsupportedMode`] for a
/// structural request.
pub fn run_federated(
    members: &mut [FederationMember<'_>],
    input: &QueryInput<'_>,
) -> Result<QueryOutcome> {
    let request = input.request;
    let mode = request.mode();
    if mode != Mode::Semantic {
        return Err(Error::UnsupportedMode {
            mode: mode_name(mode),
        });
    }
    let Some(viewer) = members.first() else {
        return Ok(QueryOutcome::empty(request));
    };
    // 1. The viewer's schema guard and policy snapshot.
    let shared = Shared::of_viewer(viewer.store, input)?;
    // 2. Each store gathers in its own snapshot.
    let mut timings = StageTimings::default();
    let mut work = WorkCounters::default();
    let mut gatherings = Vec::with_capacity(members.len());
    for member in members.iter_mut() {
        let loader = &mut *member.loader;
        let gathering = member
            .store
            .read_snapshot(|store| Ok(gather(store, loader, &shared, &mut timings, &mut work)))??;
        gatherings.push(gathering);
    }
    let members: &[FederationMember<'_>] = members;

    // 3. The merged list, cut at `top_k`.
    let merged = merged(&gatherings);
    let cut = merged.len().min(request.top_k as usize);
    // 4. Grouped by owner, each group collapsed over its owner's edges.
    let owner = owners(members, &gatherings, &merged[..cut], &shared)?;
    let mut collapsed = collapse_by_owner(members, &gatherings, &merged[..cut], &owner, &shared)?;
    // 5. Sorted again with the merged effective confidences.
    collapsed.sort_by(|a, b| {
        rescore(&gatherings, &shared, b)
            .partial_cmp(&rescore(&gatherings, &shared, a))
            .unwrap_or(std::cmp::Ordering::Equal)
    });

    let mut outcome = QueryOutcome::empty(request);
    outcome.hits = hits(members, &gatherings, &collapsed, &owner, &shared)?;
    outcome.beyond_cut = merged[cut..]
        .iter()
        .map(|entry| score(&gatherings, entry))
        .collect::<Vec<f64>>()
        .into();
    add_counts(&mut outcome, &gatherings);
    outcome.stats.collapsed = cut - collapsed.len();
    // A tag is unknown when no store knows it.
    outcome.unknown_tags = request
        .tags
        .iter()
        .filter(|tag| gatherings.iter().all(|g| g.unknown_tags.contains(tag)))
        .cloned()
        .collect();
    outcome.timings = timings;
    outcome.work = work;
    Ok(outcome)
}

impl<'a> Shared<'a> {
    /// The viewer's schema guard and policy snapshot (extractor weights,
    /// trust, decay), which apply to every store's candidates.
    fn of_viewer(viewer: &Store, input: &'a QueryInput<'a>) -> Result<Shared<'a>> {
        let rows = viewer.read_snapshot(|store| {
            particles_store::check_schema_version(store)?;
            particles_store::load_policy_rows(store)
        })?;
        Ok(Shared {
            input,
            policies: Policies::compile(&rows, input.settings)?,
            query: input
                .vector
                .map(|v| QueryVector::new(v.to_vec(), input.norm_kernel)),
            now: Route::clock(input.request, input.now),
            harness_tags: crate::default_harness_tags(),
        })
    }
}

/// An entry's score in its store.
fn score(gatherings: &[Gathering], entry: &Entry) -> f64 {
    gatherings[entry.member].gathered.scored[entry.scored]
        .ranked
        .score
}

/// An entry's score with its merged effective confidence `eff`.
fn rescore(gatherings: &[Gathering], shared: &Shared<'_>, (entry, eff): &(Entry, f64)) -> f64 {
    let gathering = &gatherings[entry.member];
    let ranked = &gathering.gathered.scored[entry.scored].ranked;
    let narrative = gathering.loaded.selection.set.traits(ranked.row).narrative;
    shared
        .policies
        .rank_score(narrative, ranked.similarity, *eff)
}

/// Every store's scored list, concatenated in store order and stably sorted by
/// score: ties keep concatenation order.
fn merged(gatherings: &[Gathering]) -> Vec<Entry> {
    let mut merged: Vec<Entry> = Vec::new();
    for (member, gathering) in gatherings.iter().enumerate() {
        merged.extend((0..gathering.gathered.scored.len()).map(|scored| Entry { member, scored }));
    }
    merged.sort_by(|a, b| {
        score(gatherings, b)
            .partial_cmp(&score(gatherings, a))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    merged
}

/// Owners: the last store that scored each id of the cut.
fn owners<'g>(
    members: &[FederationMember<'_>],
    gatherings: &'g [Gathering],
    cut: &[Entry],
    shared: &Shared<'_>,
) -> Result<HashMap<&'g str, usize>> {
    let mut owner: HashMap<&str, usize> = HashMap::new();
    for entry in cut {
        let id = gatherings[entry.member].id(entry.scored);
        if owner.contains_key(id) {
            continue;
        }
        let mut last = entry.member;
        for later in (entry.member + 1)..gatherings.len() {
            if scored_in(members[later].store, &gatherings[later], id, shared)? {
                last = later;
            }
        }
        owner.insert(id, last);
    }
    Ok(owner)
}

/// The cut grouped by owner, groups in order of first appearance, each
/// collapsed over its owner's co-evidential edges: the kept entries with their
/// merged effective confidences.
fn collapse_by_owner(
    members: &[FederationMember<'_>],
    gatherings: &[Gathering],
    cut: &[Entry],
    owner: &HashMap<&str, usize>,
    shared: &Shared<'_>,
) -> Result<Vec<(Entry, f64)>> {
    let mut group_order: Vec<usize> = Vec::new();
    let mut groups: HashMap<usize, Vec<Entry>> = HashMap::new();
    for entry in cut {
        let group = owner[gatherings[entry.member].id(entry.scored)];
        if !groups.contains_key(&group) {
            group_order.push(group);
        }
        groups.entry(group).or_default().push(*entry);
    }
    let mut collapsed: Vec<(Entry, f64)> = Vec::with_capacity(cut.len());
    for group in group_order {
        let items = &groups[&group];
        let kept = members[group].store.read_snapshot(|store| {
            Ok(particles_rank::collapse_co_evidential(
                items,
                |entry| gatherings[entry.member].id(entry.scored),
                |entry| {
                    gatherings[entry.member].gathered.scored[entry.scored]
                        .ranked
                        .effective_confidence
                },
                |entry| gatherings[entry.member].source_key(entry.scored),
                shared.policies.settings.equivalence_threshold,
                |id| particles_store::co_evidential_edges(store, id),
            ))
        })??;
        collapsed.extend(kept.into_iter().map(|(index, eff)| (items[index], eff)));
    }
    Ok(collapsed)
}

/// The hits, in `collapsed`'s order, each with the particle its store read.
fn hits(
    members: &[FederationMember<'_>],
    gatherings: &[Gathering],
    collapsed: &[(Entry, f64)],
    owner: &HashMap<&str, usize>,
    shared: &Shared<'_>,
) -> Result<Vec<Hit>> {
    let mut hits = Vec::new();
    for (rank, (entry, eff)) in collapsed.iter().enumerate() {
        let gathering = &gatherings[entry.member];
        let scored = &gathering.gathered.scored[entry.scored];
        let id = gathering.id(entry.scored);
        let particle = gathering
            .particles
            .get(id)
            .cloned()
            .ok_or_else(|| Error::HitVanished { id: id.to_owned() })?;
        // Dates and notes are keyed by id and the owner's win, as the reference's
        // dict updates do.
        let owner = &gatherings[owner[id]];
        let source = owner
            .scored_ids
            .get(id)
            .map_or(&scored.source, |&at| &owner.gathered.scored[at].source);
        hits.push(Hit {
            rank: rank + 1,
            id: id.to_owned(),
            store: Some(members[entry.member].handle.clone()),
            similarity: scored.ranked.similarity,
            effective_confidence: *eff,
            score: rescore(gatherings, shared, &(*entry, *eff)),
            rowid: gathering.loaded.selection.set.rowid(scored.ranked.row),
            factors: scored.factors,
            source: source.clone(),
            as_of_note: owner.notes.as_of_notes.get(id).cloned(),
            window_hit: owner.notes.window_hits.get(id).cloned(),
            particle: particle.into(),
        });
    }
    Ok(hits)
}

/// Every store's counts added to `outcome`'s.
fn add_counts(outcome: &mut QueryOutcome, gatherings: &[Gathering]) {
    for gathering in gatherings {
        let stats = &gathering.gathered.stats;
        outcome.stats.candidates += stats.candidates;
        outcome.stats.skipped_other_model += stats.skipped_other_model;
        outcome.stats.filtered_out += stats.filtered_out;
        outcome.stats.below_min_confidence += stats.below_min_confidence;
        outcome.stats.pruned += stats.pruned;
        outcome.as_of_excluded_undatable += gathering.notes.as_of_excluded_undatable as usize;
        if let Some(coverage) = gathering.notes.window_coverage {
            let total = outcome
                .window_coverage
                .get_or_insert_with(WindowCoverage::default);
            total.candidates += coverage.candidates;
            total.admitted += coverage.admitted;
            total.undated += coverage.undated;
            total.unkinded += coverage.unkinded;
            total.retired_admitted += coverage.retired_admitted;
            total.restated += coverage.restated;
        }
        if let Some(coverage) = gathering.claim_coverage {
            let total = outcome
                .claim_coverage
                .get_or_insert_with(ClaimCoverage::default);
            total.active_total += coverage.active_total;
            total.with_claims += coverage.with_claims;
            total.matched += coverage.matched;
            total.not_normalizable_excluded += coverage.not_normalizable_excluded;
        }
    }
}

/// Gathers one store in its snapshot: the route's load, the scan and scoring under
/// the viewer's policies, the particles of its first `top_k`, and its counts.
fn gather(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    shared: &Shared<'_>,
    timings: &mut StageTimings,
    work: &mut WorkCounters,
) -> Result<Gathering> {
    let input = shared.input;
    let request = input.request;
    particles_store::check_schema_version(store)?;
    let mut route = Route::for_request(request, loader);
    let loaded = route.load(store, request)?;
    work.rows_read += loaded.selection.rows.len();
    work.embedding_json_bytes += loaded.counters.embedding_json_bytes;
    work.models_hydrated += loaded.counters.models_hydrated;
    let gathered = Gather {
        store,
        request,
        selection: &loaded.selection,
        policies: &shared.policies,
        query: shared.query.as_ref(),
        now: shared.now,
        exhaustive: input.exhaustive,
        keep_all: false,
        prune_margin: input.prune_margin,
        scores_only_beyond_cut: false,
        harness_tags: &shared.harness_tags,
        timings,
        work,
    }
    .run()?;
    let set = &loaded.selection.set;
    let scored_ids: HashMap<String, usize> = gathered
        .scored
        .iter()
        .enumerate()
        .map(|(at, s)| (set.id(s.ranked.row).to_owned(), at))
        .collect();
    let top: Vec<&str> = gathered
        .scored
        .iter()
        .take(request.top_k as usize)
        .map(|s| set.id(s.ranked.row))
        .collect();
    let particles = particles_store::particles_by_ids(store, &top)?
        .into_iter()
        .map(|p| (p.id.clone(), p))
        .collect();
    let claim_coverage = match gathered.claims {
        None => None,
        Some(counts) => {
            let (active_total, with_claims) = particles_store::claim_coverage_counts(store)?;
            Some(ClaimCoverage {
                active_total,
                with_claims,
                matched: counts.matched,
                not_normalizable_excluded: counts.not_comparable,
            })
        }
    };
    let mut unknown_tags = Vec::new();
    for tag in &request.tags {
        if !particles_store::tag_is_known(store, tag)? {
            unknown_tags.push(tag.clone());
        }
    }
    Ok(Gathering {
        notes: route.into_notes(),
        loaded,
        gathered,
        scored_ids,
        particles,
        claim_coverage,
        unknown_tags,
    })
}

/// Whether `gathering`'s store scored `id` (it passed the filters and
/// `min_confidence` there): from its scored list, else, when it pruned the id, by
/// scoring it now.
fn scored_in(store: &Store, gathering: &Gathering, id: &str, shared: &Shared<'_>) -> Result<bool> {
    if gathering.scored_ids.contains_key(id) {
        return Ok(true);
    }
    let set = &gathering.loaded.selection.set;
    let gathered = &gathering.gathered;
    let Some(position) = gathered.survivors.iter().position(|&row| set.id(row) == id) else {
        return Ok(false);
    };
    let input = shared.input;
    if input.request.min_confidence <= 0.0 {
        // Effective confidence is never below 0: every survivor scores.
        return Ok(true);
    }
    let mut timings = StageTimings::default();
    let mut work = WorkCounters::default();
    let scored = store.read_snapshot(|store| {
        Ok(Gather {
            store,
            request: input.request,
            selection: &gathering.loaded.selection,
            policies: &shared.policies,
            query: shared.query.as_ref(),
            now: shared.now,
            exhaustive: input.exhaustive,
            keep_all: false,
            prune_margin: input.prune_margin,
            scores_only_beyond_cut: false,
            harness_tags: &shared.harness_tags,
            timings: &mut timings,
            work: &mut work,
        }
        .score_positions(gathered, &[position]))
    })??;
    Ok(scored.first().is_some_and(Option::is_some))
}
