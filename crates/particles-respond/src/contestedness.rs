//! Contestedness (the reference's `operations/query/contestedness.py`): the spread
//! of each hit's effective confidence across the viewer's policy set, the local
//! policy and each adopted lens, each applied alone.

use std::collections::{BTreeSet, HashMap};

use particles_model::{
    policy::SourceFacts,
    response::{ContestednessReading, PolicyRendering},
    Particle, Status, Timestamp,
};
use particles_rank::{MemberPolicy, Policies, RankSettings};
use particles_store::Store;

use crate::{effective, Result};

/// The reading of each hit, or none at all (an empty list) when the viewer has
/// fewer than two policies: absence of measurement, never a spread of 0.
///
/// A hit's group is its co-evidential closure at `query.equivalence_threshold`,
/// ACTIVE members only (the hit alone when none is). Under each member policy every
/// group member's effective confidence is its capped stored value × the member's
/// extractor weight × the member's source trust × the plain content-age decay of
/// the configured source types at `now` (not the lens-composed decay, no
/// stale-support discount); the group's values merge by noisy-OR.
///
/// # Errors
///
/// [`crate::Error::Store`] / [`crate::Error::Rank`] as the ranking's reads and
/// scoring.
pub(crate) fn contestedness_readings(
    store: &Store,
    hits: &[Particle],
    members: &[MemberPolicy],
    policies: &Policies,
    now: Timestamp,
) -> Result<Vec<ContestednessReading>> {
    if members.len() < 2 || hits.is_empty() {
        return Ok(Vec::new());
    }
    let threshold = policies.settings.equivalence_threshold;
    let mut edges = |id: &str| particles_store::co_evidential_edges(store, id);
    let closures: Vec<BTreeSet<String>> = hits
        .iter()
        .map(|hit| {
            Ok(
                particles_rank::co_evidential_closure(&hit.id, threshold, &mut edges)?
                    .into_iter()
                    .collect(),
            )
        })
        .collect::<Result<_>>()?;
    // The hits stand for themselves; other members are read by id, any status.
    let mut cache: HashMap<&str, &Particle> = hits.iter().map(|p| (p.id.as_str(), p)).collect();
    let others: Vec<&str> = closures
        .iter()
        .flatten()
        .map(String::as_str)
        .filter(|id| !cache.contains_key(id))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let read = particles_store::particles_by_ids(store, &others)?;
    cache.extend(read.iter().map(|p| (p.id.as_str(), p)));
    let groups: Vec<Vec<&Particle>> = hits
        .iter()
        .zip(&closures)
        .map(|(hit, closure)| {
            let group: Vec<&Particle> = closure
                .iter()
                .filter_map(|id| cache.get(id.as_str()).copied())
                .filter(|p| p.status == Status::Active)
                .collect();
            if group.is_empty() {
                vec![hit]
            } else {
                group
            }
        })
        .collect();

    let mut participants: Vec<&Particle> = Vec::new();
    let mut seen = BTreeSet::new();
    for particle in groups.iter().flatten() {
        if seen.insert(particle.id.as_str()) {
            participants.push(particle);
        }
    }
    let facts = particles_store::source_facts(
        store,
        participants.iter().map(|p| effective::first_source(p)),
    )?;
    let facts: HashMap<&str, &SourceFacts> = participants
        .iter()
        .map(|p| p.id.as_str())
        .zip(&facts)
        .collect();

    groups
        .iter()
        .map(|group| {
            let mut renderings = Vec::with_capacity(members.len());
            for member in members {
                let entries = group
                    .iter()
                    .map(|p| {
                        let value = under_member(p, facts[p.id.as_str()], member, policies, now)?;
                        Ok((value, effective::source_key(p)))
                    })
                    .collect::<Result<Vec<(f64, &str)>>>()?;
                renderings.push(PolicyRendering {
                    policy: member.name.clone(),
                    effective_confidence: particles_rank::merge_co_evidential(&entries),
                });
            }
            let values = renderings.iter().map(|r| r.effective_confidence);
            let max = values
                .clone()
                .fold(f64::NEG_INFINITY, particles_rank::py_max);
            let min = values.fold(f64::INFINITY, particles_rank::py_min);
            Ok(ContestednessReading {
                spread: max - min,
                renderings,
            })
        })
        .collect()
}

/// One particle's effective confidence under one member policy alone.
fn under_member(
    particle: &Particle,
    source: &SourceFacts,
    member: &MemberPolicy,
    policies: &Policies,
    now: Timestamp,
) -> Result<f64> {
    let extractor = particle.extractor_ref.as_ref().map(|e| e.name.as_str());
    Ok(particles_rank::effective_confidence(
        policies.capped_confidence(
            particle.confidence.value,
            particle.confidence.calibration_source,
        ),
        member.extractor_weight(extractor),
        member.trust.evaluate(source)?.unwrap_or(1.0),
        plain_decay(source, &policies.settings, now)?,
        1.0,
    ))
}

/// `content_age_decay.sources` applied by source type alone (no lens rules), the
/// reference's process-global decay kernel.
fn plain_decay(source: &SourceFacts, settings: &RankSettings, now: Timestamp) -> Result<f64> {
    let rule = settings
        .decay_sources
        .iter()
        .rev()
        .find(|(source_type, _)| *source_type == source.source_type);
    Ok(match rule {
        None => 1.0,
        Some((_, rule)) => particles_rank::recency_factor(
            source.published_at,
            rule.half_life_days,
            rule.floor,
            now,
        )?,
    })
}
