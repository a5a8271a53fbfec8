//! The contested badge of each hit (the reference's
//! `operations/query/contested.py`): which of three bases fired. `stance`: an
//! ACTIVE stance with a holder disputes the hit's co-evidential group.
//! `divergence`: the hit's contestedness spread reaches
//! `contestedness.callout_threshold` (absent, not "false", below two policies).
//! `inconsistency`: an open INCONSISTENCY record names the hit and the pair reads
//! adjudicable under the viewer's modality lens.

use std::collections::{BTreeSet, HashMap};

use particles_model::{
    response::{ContestedBadge, ContestednessReading},
    Particle, ProvenanceRefType,
};
use particles_store::Store;

use crate::{modality::ModalityLens, stance, Result};

/// Each hit's badge (`None` when no available basis fired), parallel to `hits`.
/// `readings` are the hits' contestedness readings, empty when the viewer has
/// fewer than two policies.
///
/// # Errors
///
/// [`crate::Error::Store`] when the store cannot be read or an INCONSISTENCY
/// record is malformed (the reference fails on it too).
pub(crate) fn contested_badges(
    store: &Store,
    hits: &[Particle],
    readings: &[ContestednessReading],
    lens: &ModalityLens,
    callout_threshold: f64,
) -> Result<Vec<Option<ContestedBadge>>> {
    if hits.is_empty() {
        return Ok(Vec::new());
    }
    let backrefs = adjudicable_backrefs(store, hits, inconsistency_backrefs(store)?, lens)?;
    let disputes = stance::dispute_presence(store, hits)?;
    let readings: Vec<Option<&ContestednessReading>> = if readings.len() == hits.len() {
        readings.iter().map(Some).collect()
    } else {
        vec![None; hits.len()]
    };
    Ok(hits
        .iter()
        .zip(disputes)
        .zip(readings)
        .map(|((hit, disputed), reading)| {
            let mut bases = Vec::new();
            if disputed {
                bases.push("stance".to_owned());
            }
            if reading.is_some_and(|r| r.spread >= callout_threshold) {
                bases.push("divergence".to_owned());
            }
            let inconsistency_id = backrefs.get(&hit.id).cloned();
            if inconsistency_id.is_some() {
                bases.push("inconsistency".to_owned());
            }
            (!bases.is_empty()).then(|| ContestedBadge {
                bases,
                inconsistency_id,
                caveat: disputed.then(|| stance::AGREEMENT_CAVEAT.to_owned()),
            })
        })
        .collect())
}

/// Each particle an open INCONSISTENCY record names (a `PARTICLE` ref) mapped to
/// the first such record, records in rowid order.
pub(crate) fn inconsistency_backrefs(store: &Store) -> Result<HashMap<String, String>> {
    let mut backrefs = HashMap::new();
    for record in particles_store::inconsistency_records(store)? {
        for member in members(&record) {
            backrefs
                .entry(member.to_owned())
                .or_insert_with(|| record.id.clone());
        }
    }
    Ok(backrefs)
}

/// The ids a record names, in provenance order.
fn members(record: &Particle) -> impl Iterator<Item = &str> {
    record
        .provenance
        .iter()
        .filter(|r| r.ref_type == ProvenanceRefType::Particle)
        .map(|r| r.corpus_entry_id.as_str())
}

/// Drops the backrefs of hits that read as not adjudicable, or whose record names
/// other existing members none of which reads adjudicable.
fn adjudicable_backrefs(
    store: &Store,
    hits: &[Particle],
    mut backrefs: HashMap<String, String>,
    lens: &ModalityLens,
) -> Result<HashMap<String, String>> {
    let records: BTreeSet<&str> = hits
        .iter()
        .filter_map(|hit| backrefs.get(&hit.id).map(String::as_str))
        .collect();
    if records.is_empty() {
        return Ok(backrefs);
    }
    let records: Vec<&str> = records.into_iter().collect();
    let records = particles_store::particles_by_ids(store, &records)?;
    let members_of: HashMap<&str, Vec<&str>> = records
        .iter()
        .map(|record| (record.id.as_str(), members(record).collect()))
        .collect();
    let member_ids: Vec<&str> = members_of
        .values()
        .flatten()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let member_particles = particles_store::particles_by_ids(store, &member_ids)?;
    let readable: Vec<&Particle> = member_particles.iter().chain(hits).collect();
    let adjudicable = lens.adjudicable(store, &readable)?;
    for hit in hits {
        let Some(record) = backrefs.get(&hit.id) else {
            continue;
        };
        let others: Vec<&str> = members_of
            .get(record.as_str())
            .into_iter()
            .flatten()
            .copied()
            .filter(|m| *m != hit.id && adjudicable.contains_key(*m))
            .collect();
        let keep = adjudicable.get(&hit.id).copied().unwrap_or(false)
            && (others.is_empty() || others.iter().any(|m| adjudicable[*m]));
        if !keep {
            backrefs.remove(&hit.id);
        }
    }
    Ok(backrefs)
}
