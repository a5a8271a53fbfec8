//! Several requests answered together, in one read transaction of one store.
//!
//! Requests that read the same candidates (the caller's loader, the same
//! `min_confidence` and subject, filters that all run in the scan: no tag, claim,
//! window or as-of) share one load and one pass over the vectors
//! ([`crate::scan::scan_lanes`]); everything after the scan (the collector, the
//! cut, the collapse, the hits) runs per request. The rest run one by one in the
//! same transaction. Each answer equals what [`crate::run_query_with`] returns for
//! its request alone on that snapshot.

use std::time::Instant;

use particles_model::Mode;
use particles_rank::{Policies, QueryVector};
use particles_store::{CandidateLoader, Store};

use crate::{
    finish,
    gather::Gather,
    route::{Route, RouteNotes},
    run_in_snapshot,
    scan::{scan_lanes, Keep, Lane},
    QueryInput, QueryOutcome, Result, StageTimings, WorkCounters,
};

/// Answers `inputs` on `store` in one read transaction, sharing a pass over the
/// vectors among the requests that read the same candidates. Results come back
/// in input order.
///
/// # Errors
///
/// The outer error only when the read transaction cannot start or end; each
/// request's own failure is its entry's.
pub fn run_query_batch(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    inputs: &[QueryInput<'_>],
) -> Result<Vec<Result<QueryOutcome>>> {
    let harness_tags = crate::default_harness_tags();
    Ok(store.read_snapshot(|store| Ok(batch_in_snapshot(store, loader, inputs, &harness_tags)))?)
}

/// [`run_query_batch`] with each request's whole response built in the same
/// transaction ([`crate::semantic_response`]): what a server answers concurrent
/// queries with.
///
/// # Errors
///
/// As [`run_query_batch`].
pub fn run_semantic_batch(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    inputs: &[QueryInput<'_>],
    settings: &crate::ResponseSettings,
) -> Result<Vec<Result<(QueryOutcome, particles_model::response::QueryResponse)>>> {
    Ok(store.read_snapshot(|store| {
        let outcomes = batch_in_snapshot(store, loader, inputs, &settings.observer_harness_tags);
        Ok(outcomes
            .into_iter()
            .zip(inputs)
            .map(|(outcome, input)| {
                let outcome = outcome?;
                let response = crate::semantic_response(store, &outcome, input, settings)?;
                Ok((outcome, response))
            })
            .collect())
    })?)
}

/// Whether a request can share a pass: it reads through the caller's loader and
/// every filter of it runs in the scan.
fn shareable(input: &QueryInput<'_>) -> bool {
    let request = input.request;
    request.mode() == Mode::Semantic
        && request.window.is_none()
        && request.as_of.is_none()
        && request.tags.is_empty()
        && !request.has_claim_filters()
        && request.observer_project.is_none()
}

fn batch_in_snapshot(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    inputs: &[QueryInput<'_>],
    harness_tags: &[String],
) -> Vec<Result<QueryOutcome>> {
    let mut results: Vec<Option<Result<QueryOutcome>>> = inputs.iter().map(|_| None).collect();
    // Groups of shareable requests with the same candidates.
    let mut groups: Vec<(u64, Option<&str>, Vec<usize>)> = Vec::new();
    for (at, input) in inputs.iter().enumerate() {
        if !shareable(input) {
            results[at] = Some(run_in_snapshot(store, loader, input, harness_tags));
            continue;
        }
        let key = (
            input.request.min_confidence.to_bits(),
            input.request.subject_id.as_deref(),
        );
        match groups.iter_mut().find(|(m, s, _)| (*m, *s) == key) {
            Some((_, _, members)) => members.push(at),
            None => groups.push((key.0, key.1, vec![at])),
        }
    }
    for (_, _, members) in groups {
        match run_group(store, loader, inputs, &members) {
            Ok(outcomes) => {
                for (at, outcome) in members.iter().zip(outcomes) {
                    results[*at] = Some(outcome);
                }
            }
            // The shared part failed: each request runs alone and reports its
            // own error, typed.
            Err(_) => {
                for &at in &members {
                    results[at] = Some(run_in_snapshot(store, loader, &inputs[at], harness_tags));
                }
            }
        }
    }
    results
        .into_iter()
        .zip(inputs)
        .map(|(result, input)| {
            result.unwrap_or_else(|| run_in_snapshot(store, loader, input, harness_tags))
        })
        .collect()
}

/// One group: one schema check and load, one pass, then each request's collector
/// and finish.
fn run_group(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    inputs: &[QueryInput<'_>],
    members: &[usize],
) -> Result<Vec<Result<QueryOutcome>>> {
    let first = &inputs[members[0]];
    let started = Instant::now();
    particles_store::check_schema_version(store)?;
    let rows = particles_store::load_policy_rows(store)?;
    let setup = started.elapsed().as_secs_f64();
    // A request whose policies do not compile fails alone (outside the group).
    let policies: Vec<Policies> = members
        .iter()
        .map(|&at| Policies::compile(&rows, inputs[at].settings))
        .collect::<std::result::Result<_, _>>()?;
    let queries: Vec<Option<QueryVector>> = members
        .iter()
        .map(|&at| {
            inputs[at]
                .vector
                .map(|v| QueryVector::new(v.to_vec(), inputs[at].norm_kernel))
        })
        .collect();
    let mut route = Route::for_request(first.request, loader);
    let loaded = route.load(store, first.request)?;
    let selection = &loaded.selection;
    let set = selection.set.as_ref();
    // Each request's per-row filters, run inside the shared pass. Requests
    // whose compiled filters are equal keep the same rows (the mask, the wanted
    // bits and the recency cutoff decide both the mask test and the functions
    // behind it), so they form one filter group: filtered once per row.
    let filters: Vec<particles_candidates::RowFilter> = members
        .iter()
        .map(|&at| {
            let request = inputs[at].request;
            particles_candidates::RowFilter::new(request, Route::clock(request, inputs[at].now))
        })
        .collect();
    let keeps: Vec<Box<dyn Fn(usize) -> Result<bool> + Sync + '_>> = members
        .iter()
        .zip(&filters)
        .map(|(&at, &filter)| {
            let request = inputs[at].request;
            let now = Route::clock(request, inputs[at].now);
            Box::new(move |row: usize| -> Result<bool> {
                Ok(filter.passes(set, row, request, now)?)
            }) as Box<dyn Fn(usize) -> Result<bool> + Sync + '_>
        })
        .collect();
    let lanes: Vec<Lane<'_>> = policies
        .iter()
        .enumerate()
        .map(|(member, policies)| Lane {
            query: queries[member].as_ref(),
            at_most_one: policies.factors_at_most_one(),
            policies,
            keep: Some(&*keeps[member] as Keep<'_>),
            filter_group: filters
                .iter()
                .position(|f| *f == filters[member])
                .unwrap_or(member),
        })
        .collect();
    let scan_started = Instant::now();
    let scanned = scan_lanes(set, &selection.rows, &lanes);
    let scan_seconds = scan_started.elapsed().as_secs_f64();
    let notes: RouteNotes = route.into_notes();
    // One snapshot, one journal head for every member.
    let journal_seq = particles_store::read_head(store)?.map(|head| head.seq);
    let mut outcomes = Vec::with_capacity(members.len());
    for ((member, &at), scanned) in members.iter().enumerate().zip(scanned) {
        let input = &inputs[at];
        let policies = &policies[member];
        let outcome = (|| -> Result<QueryOutcome> {
            let scanned = scanned?;
            let mut timings = StageTimings {
                setup,
                sql_fetch: loaded.counters.sql_seconds,
                hydrate: loaded.counters.hydrate_seconds,
                decode: (loaded.seconds
                    - loaded.counters.sql_seconds
                    - loaded.counters.hydrate_seconds)
                    .max(0.0),
                scoring: scan_seconds,
                ..StageTimings::default()
            };
            let mut work = WorkCounters {
                rows_read: selection.rows.len(),
                embedding_json_bytes: loaded.counters.embedding_json_bytes,
                models_hydrated: loaded.counters.models_hydrated,
                ..WorkCounters::default()
            };
            let gathered = Gather {
                store,
                request: input.request,
                selection,
                policies,
                query: queries[member].as_ref(),
                now: Route::clock(input.request, input.now),
                exhaustive: input.exhaustive,
                prune_margin: input.walk_margin(),
                scores_only_beyond_cut: true,
                harness_tags: &[],
                timings: &mut timings,
                work: &mut work,
            }
            .collect_scanned(scanned)?;
            finish(
                store,
                selection,
                policies,
                input,
                gathered,
                timings,
                work,
                notes.clone(),
                journal_seq,
            )
        })();
        outcomes.push(outcome);
    }
    Ok(outcomes)
}
