//! Effective confidence of particles outside the ranking (the reference's
//! `operations/query/effective_confidence.py` `score_effective_confidence`): the
//! ranking's formula over full particles, for the stance particles the agreement
//! distribution cites.

use std::collections::HashMap;

use particles_model::{
    policy::SourceFacts, CalibrationSource, Particle, ProvenanceRefType, Status, Timestamp,
};
use particles_rank::Policies;
use particles_store::Store;

use crate::Result;

/// The first `SOURCE` ref of a particle as `(entry id, snapshot id)`: what its
/// source facts are read from.
pub(crate) fn first_source(particle: &Particle) -> Option<(&str, Option<&str>)> {
    particle
        .provenance
        .iter()
        .find(|r| r.ref_type == ProvenanceRefType::Source)
        .map(|r| (r.corpus_entry_id.as_str(), r.snapshot_id.as_deref()))
}

/// The corpus entry of a particle's first `SOURCE` ref that names one, else its
/// own id: the source key of the noisy-OR merge.
pub(crate) fn source_key(particle: &Particle) -> &str {
    particle
        .provenance
        .iter()
        .find(|r| r.ref_type == ProvenanceRefType::Source && !r.corpus_entry_id.is_empty())
        .map_or(particle.id.as_str(), |r| r.corpus_entry_id.as_str())
}

/// The premises a derived particle names (its `PARTICLE` refs).
fn premises(particle: &Particle) -> Vec<&str> {
    particle
        .provenance
        .iter()
        .filter(|r| r.ref_type == ProvenanceRefType::Particle)
        .map(|r| r.corpus_entry_id.as_str())
        .collect()
}

/// Each particle's effective confidence under the composed policies, with decay
/// at `now` and the stale-support discount of a derived particle whose premise is
/// missing or not ACTIVE.
///
/// # Errors
///
/// [`crate::Error::Store`] when the store cannot be read, [`crate::Error::Rank`]
/// where scoring fails as the reference's does (an unsplittable URI, a degenerate
/// half-life).
pub(crate) fn effective_confidences(
    store: &Store,
    particles: &[&Particle],
    policies: &Policies,
    now: Timestamp,
) -> Result<HashMap<String, f64>> {
    let (values, _) = effective_with_facts(store, particles, policies, now)?;
    Ok(particles
        .iter()
        .zip(values)
        .map(|(p, value)| (p.id.clone(), value))
        .collect())
}

/// [`effective_confidences`] parallel to `particles`, with each particle's
/// source facts (what the recall lifts resolve their rules by).
///
/// # Errors
///
/// As [`effective_confidences`].
pub(crate) fn effective_with_facts(
    store: &Store,
    particles: &[&Particle],
    policies: &Policies,
    now: Timestamp,
) -> Result<(Vec<f64>, Vec<SourceFacts>)> {
    let facts = particles_store::source_facts(store, particles.iter().map(|p| first_source(p)))?;
    let derived = |p: &Particle| p.confidence.calibration_source == CalibrationSource::Derived;
    let statuses = particles_store::premise_statuses(
        store,
        particles
            .iter()
            .filter(|p| derived(p))
            .flat_map(|p| premises(p)),
    )?;
    let mut out = Vec::with_capacity(particles.len());
    for (particle, source) in particles.iter().zip(&facts) {
        let stale = derived(particle)
            && premises(particle)
                .iter()
                .any(|id| statuses.get(*id) != Some(&Status::Active));
        let discount = if stale {
            policies.settings.stale_support_discount
        } else {
            1.0
        };
        let extractor = particle.extractor_ref.as_ref().map(|e| e.name.as_str());
        out.push(particles_rank::effective_confidence(
            policies.capped_confidence(
                particle.confidence.value,
                particle.confidence.calibration_source,
            ),
            policies.extractor_weight(extractor),
            policies.trust.evaluate(source)?.unwrap_or(1.0),
            policies.decay.factor(source, now)?,
            discount,
        ));
    }
    Ok((out, facts))
}
