//! The recall callers' ranking (the reference's `retrieve_ranked` with
//! `apply_utility`, `apply_owner`, `exclude_source_tags` and
//! `code_symbol_rank_weight`): after every candidate is scored (the walk is
//! exhaustive under these options, so no bound prunes a candidate a lift could
//! raise), the lifts are added to each candidate's effective confidence, the
//! candidates only excluded sources state are dropped, and the rank scores
//! are recomputed and sorted again, all before the cut and the collapse.

use std::collections::{HashMap, HashSet};

use particles_model::{RecallOptions, Timestamp};
use particles_rank::Policies;
use particles_store::Store;

use crate::{
    collect::Scored,
    lift::{owner_viewer, recall_lifts, LiftItem},
    observer::{attestation_graph, AttestationGraph, MAX_DERIVATION_DEPTH},
    Result,
};

/// The extractors whose particles are code symbols (the reference's
/// `CODE_SYMBOL_EXTRACTOR_IDS`).
const CODE_SYMBOL_EXTRACTORS: &[&str] = &["docstring-extractor"];

/// Re-ranks `scored` (every scored candidate, in the ranking's order) under
/// `options`; use events are aged at `now`, the wall clock of the request
/// (never its `as_of`, as the reference's lift reads the clock).
pub(crate) fn rerank(
    store: &Store,
    set: &particles_candidates::CandidateSet,
    policies: &Policies,
    options: &RecallOptions,
    scored: &mut Vec<Scored>,
    now: Timestamp,
) -> Result<()> {
    let utility = policies.utility.as_ref().filter(|_| options.apply_utility);
    let owner = if options.apply_owner {
        owner_viewer(store, &policies.settings.owner_lens)?
    } else {
        None
    };
    if utility.is_some() || owner.is_some() {
        let ids: Vec<&str> = scored.iter().map(|s| set.id(s.ranked.row)).collect();
        // Only the subject ids: hydrating every candidate would read and decode
        // its embedding too.
        let subjects: HashMap<String, Vec<String>> = if owner.is_some() {
            particles_store::subject_ids_of(store, &ids)?
        } else {
            HashMap::new()
        };
        let items: Vec<LiftItem<'_>> = scored
            .iter()
            .zip(&ids)
            .map(|(s, id)| LiftItem {
                id,
                source_type: &s.source.source_type,
                uri: s.source.uri.as_deref(),
                subject_ids: subjects.get(*id).map_or(&[][..], Vec::as_slice),
            })
            .collect();
        let base: Vec<f64> = scored
            .iter()
            .map(|s| s.ranked.effective_confidence)
            .collect();
        let lifted = recall_lifts(store, &items, &base, utility, owner.as_ref(), now)?;
        for (s, value) in scored.iter_mut().zip(lifted) {
            s.ranked.effective_confidence = value;
        }
    }
    if !options.exclude_source_tags.is_empty() && !scored.is_empty() {
        let ids: Vec<&str> = scored.iter().map(|s| set.id(s.ranked.row)).collect();
        let graph = attestation_graph(store, &ids, None)?;
        let dropped = excluded_ids(&graph, &ids, &options.exclude_source_tags);
        if !dropped.is_empty() {
            scored.retain(|s| !dropped.contains(set.id(s.ranked.row)));
        }
    }
    for s in scored.iter_mut() {
        let row = s.ranked.row;
        let mut score = policies.rank_score(
            set.traits(row).narrative,
            s.ranked.similarity,
            s.ranked.effective_confidence,
        );
        if options.code_symbol_rank_weight != 1.0 {
            let extractor = set.extractor(row).map(|at| set.string(at));
            if extractor.is_some_and(|name| CODE_SYMBOL_EXTRACTORS.contains(&name)) {
                score *= options.code_symbol_rank_weight;
            }
        }
        s.ranked.score = score;
    }
    // Python's stable sort of the candidate-ordered list, descending.
    scored.sort_by(|a, b| {
        b.ranked
            .score
            .partial_cmp(&a.ranked.score)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.position.cmp(&b.position))
    });
    Ok(())
}

/// The ids, of `ids`, that only sources tagged with one of `tags` state (the
/// reference's `source_tags.excluded_ids`): a sourced belief when every entry
/// stating it now (else every entry that ever did) carries one; a derived
/// belief when all its premises are excluded. No entry at all, a cycle, a chain
/// deeper than the join follows or an unknown premise keeps the belief.
pub(crate) fn excluded_ids<'a>(
    graph: &AttestationGraph,
    ids: &[&'a str],
    tags: &[String],
) -> HashSet<&'a str> {
    let excluded: HashSet<&str> = tags.iter().map(String::as_str).collect();
    let mut memo: HashMap<String, bool> = HashMap::new();
    ids.iter()
        .copied()
        .filter(|id| is_excluded(graph, id, &mut Vec::new(), &excluded, &mut memo))
        .collect()
}

fn is_excluded(
    graph: &AttestationGraph,
    id: &str,
    trail: &mut Vec<String>,
    tags: &HashSet<&str>,
    memo: &mut HashMap<String, bool>,
) -> bool {
    if let Some(&known) = memo.get(id) {
        return known;
    }
    let result = if let Some(attestation) = graph.sourced.get(id) {
        let entries = if attestation.now.is_empty() {
            &attestation.ever
        } else {
            &attestation.now
        };
        !entries.is_empty()
            && entries.iter().all(|entry| {
                attestation
                    .tags
                    .get(entry)
                    .is_some_and(|t| t.iter().any(|tag| tags.contains(tag.as_str())))
            })
    } else {
        let premises = graph
            .premises
            .get(id)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if premises.is_empty()
            || trail.iter().any(|t| t == id)
            || trail.len() >= MAX_DERIVATION_DEPTH
        {
            return false;
        }
        trail.push(id.to_owned());
        let all = premises
            .iter()
            .all(|premise| is_excluded(graph, premise, trail, tags, memo));
        trail.pop();
        all
    };
    memo.insert(id.to_owned(), result);
    result
}
