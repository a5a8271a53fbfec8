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
    Ok(store.read_snapshot(|store| {
        in_input_order(inputs.len(), |answered| {
            batch_in_snapshot(store, loader, inputs, &harness_tags, &mut || {}, answered);
            Ok(())
        })
    })?)
}

/// [`run_query_batch`], each outcome handed to `answered` (with its input's
/// index, and the store inside the batch's read transaction) as soon as it is
/// ranked, and `passes_done` called once every shared pass over the vectors is
/// over: from then on the batch is per-request work (the band, the cut, and
/// whatever `answered` builds), which a server can overlap with the next
/// batch's pass. `answered` runs inside the transaction: what it reads through
/// the store it is given (the response, `particles-respond`'s) is of the
/// ranking's snapshot. A project observer reads entries with `harness_tags`
/// (`observer_scope.harness_tags`). Every input is answered exactly once,
/// unless the outer error comes back (the transaction could not start).
///
/// # Errors
///
/// As [`run_query_batch`].
pub fn run_semantic_batch_streaming(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    inputs: &[QueryInput<'_>],
    harness_tags: &[String],
    passes_done: &mut dyn FnMut(),
    answered: &mut dyn FnMut(usize, &Store, Result<QueryOutcome>),
) -> Result<()> {
    Ok(store.read_snapshot(|store| {
        batch_in_snapshot(
            store,
            loader,
            inputs,
            harness_tags,
            passes_done,
            &mut |at, outcome| answered(at, store, outcome),
        );
        Ok(())
    })?)
}

/// The answers `run` hands out, in input order; an input it never answered
/// (it cannot happen: `batch_in_snapshot` answers each once) is reported, not
/// a panic.
fn in_input_order<T, E>(
    len: usize,
    run: impl FnOnce(&mut dyn FnMut(usize, Result<T>)) -> std::result::Result<(), E>,
) -> std::result::Result<Vec<Result<T>>, E> {
    let mut results: Vec<Option<Result<T>>> = (0..len).map(|_| None).collect();
    run(&mut |at, answer| {
        if let Some(slot) = results.get_mut(at) {
            *slot = Some(answer);
        }
    })?;
    Ok(results
        .into_iter()
        .map(|result| result.unwrap_or(Err(crate::Error::Unanswered)))
        .collect())
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

/// Answers every input once, through `answered`: the groups' passes first
/// (`passes_done` after the last), then each group member's collector and
/// finish, then the requests that cannot share a pass, each alone.
fn batch_in_snapshot(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    inputs: &[QueryInput<'_>],
    harness_tags: &[String],
    passes_done: &mut dyn FnMut(),
    answered: &mut dyn FnMut(usize, Result<QueryOutcome>),
) {
    // Groups of shareable requests with the same candidates.
    let mut groups: Vec<(u64, Option<&str>, Vec<usize>)> = Vec::new();
    let mut alone = Vec::new();
    for (at, input) in inputs.iter().enumerate() {
        if !shareable(input) {
            alone.push(at);
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
    // Every group's pass, then the per-request work: the passes are what a
    // batch shares, so they end as early as they can.
    let mut passed = Vec::with_capacity(groups.len());
    for (_, _, members) in groups {
        match scan_group(store, loader, inputs, &members) {
            Ok(scanned) => passed.push((members, Some(scanned))),
            // The shared part failed: each request runs alone and reports its
            // own error, typed.
            Err(_) => passed.push((members, None)),
        }
    }
    passes_done();
    for (members, scanned) in passed {
        match scanned {
            Some(scanned) => scanned.finish_each(store, inputs, &members, answered),
            None => {
                for at in members {
                    answered(
                        at,
                        run_in_snapshot(store, loader, &inputs[at], harness_tags),
                    );
                }
            }
        }
    }
    for at in alone {
        answered(
            at,
            run_in_snapshot(store, loader, &inputs[at], harness_tags),
        );
    }
}

/// A group after its shared pass: what each member's collector and finish
/// read.
struct GroupScan {
    loaded: particles_store::Loaded,
    policies: Vec<Policies>,
    queries: Vec<Option<QueryVector>>,
    scanned: Vec<Result<crate::scan::Scanned>>,
    setup: f64,
    scan_seconds: f64,
    notes: RouteNotes,
    journal_seq: Option<i64>,
}

/// One group's shared part: one schema check and load, one pass over the
/// vectors for every member.
fn scan_group(
    store: &Store,
    loader: &mut dyn CandidateLoader,
    inputs: &[QueryInput<'_>],
    members: &[usize],
) -> Result<GroupScan> {
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
            let columns = set.row_columns();
            Box::new(move |row: usize| -> Result<bool> {
                Ok(filter.passes_in(&columns, set, row, request, now)?)
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
    drop(lanes);
    drop(keeps);
    let notes: RouteNotes = route.into_notes();
    // One snapshot, one journal head for every member.
    let journal_seq = particles_store::read_head(store)?.map(|head| head.seq);
    Ok(GroupScan {
        loaded,
        policies,
        queries,
        scanned,
        setup,
        scan_seconds,
        notes,
        journal_seq,
    })
}

impl GroupScan {
    /// Each member's collector and finish, answered in member order.
    fn finish_each(
        self,
        store: &Store,
        inputs: &[QueryInput<'_>],
        members: &[usize],
        answered: &mut dyn FnMut(usize, Result<QueryOutcome>),
    ) {
        let selection = &self.loaded.selection;
        for ((member, &at), scanned) in members.iter().enumerate().zip(self.scanned) {
            let input = &inputs[at];
            let policies = &self.policies[member];
            let outcome = (|| -> Result<QueryOutcome> {
                let scanned = scanned?;
                let mut timings = StageTimings {
                    setup: self.setup,
                    sql_fetch: self.loaded.counters.sql_seconds,
                    hydrate: self.loaded.counters.hydrate_seconds,
                    decode: (self.loaded.seconds
                        - self.loaded.counters.sql_seconds
                        - self.loaded.counters.hydrate_seconds)
                        .max(0.0),
                    scoring: self.scan_seconds,
                    ..StageTimings::default()
                };
                let mut work = WorkCounters {
                    rows_read: selection.rows.len(),
                    embedding_json_bytes: self.loaded.counters.embedding_json_bytes,
                    models_hydrated: self.loaded.counters.models_hydrated,
                    ..WorkCounters::default()
                };
                let gathered = Gather {
                    store,
                    request: input.request,
                    selection,
                    policies,
                    query: self.queries[member].as_ref(),
                    now: Route::clock(input.request, input.now),
                    exhaustive: input.exhaustive,
                    keep_all: input.recall.is_some(),
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
                    self.notes.clone(),
                    self.journal_seq,
                )
            })();
            answered(at, outcome);
        }
    }
}
