//! Stances on the rendered hits (the reference's `operations/query/stance.py` and
//! the stance basis of `contested.py`): the ENDORSES / DISPUTES edges into each
//! hit's co-evidential group (every edge, threshold 0.0), kept when the stance
//! particle exists, is ACTIVE and names a holder.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use particles_model::{response::StancePosition, Particle, Status, Timestamp};
use particles_rank::Policies;
use particles_store::Store;
use serde_json::Value;

use crate::{effective, Result};

/// The caveat every non-empty agreement distribution (and every stance badge)
/// carries.
pub const AGREEMENT_CAVEAT: &str = "Holders are grouped by raw stance:holder key (unverified): \
two keys may be one agent and a key's owner is not verified. This is a count of keys, not of \
verified agents.";

/// The `properties` key naming a stance's holder.
const HOLDER_KEY: &str = "stance:holder";
/// The `properties` key of a stance's optional strength.
const MAGNITUDE_KEY: &str = "stance:magnitude";

/// A stance edge's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Disputes,
    Endorses,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Disputes => "DISPUTES",
            Kind::Endorses => "ENDORSES",
        }
    }
}

/// A stance particle's holder: a non-empty string `stance:holder`.
pub(crate) fn holder(particle: &Particle) -> Option<&str> {
    match particle.properties.as_ref()?.get(HOLDER_KEY)? {
        Value::String(holder) if !holder.is_empty() => Some(holder),
        _ => None,
    }
}

/// A numeric `stance:magnitude` as a float (a JSON boolean is not a number here).
fn magnitude(particle: &Particle) -> Option<f64> {
    match particle.properties.as_ref()?.get(MAGNITUDE_KEY)? {
        Value::Number(number) => number.as_f64(),
        _ => None,
    }
}

/// The co-evidential group of every hit (edges of any confidence at or above
/// 0.0), sorted, in hit order.
fn groups(store: &Store, hits: &[Particle]) -> Result<Vec<BTreeSet<String>>> {
    let mut edges = |id: &str| particles_store::co_evidential_edges(store, id);
    hits.iter()
        .map(|hit| {
            Ok(
                particles_rank::co_evidential_closure(&hit.id, 0.0, &mut edges)?
                    .into_iter()
                    .collect(),
            )
        })
        .collect()
}

/// The stance ids with an edge of `kind` into each group member.
fn incoming(
    store: &Store,
    kind: Kind,
    groups: &[BTreeSet<String>],
) -> Result<HashMap<String, Vec<String>>> {
    let members: BTreeSet<&str> = groups.iter().flatten().map(String::as_str).collect();
    let members: Vec<&str> = members.into_iter().collect();
    Ok(particles_store::incoming_relations(
        store,
        kind.as_str(),
        &members,
    )?)
}

/// The agreement distribution of each hit and whether any is non-empty.
///
/// A stance id reaching a group through edges of both kinds keeps the kind read
/// last: members in id order, ENDORSES before DISPUTES within a member. (The
/// reference visits members in Python set order, which varies between processes;
/// within one member it agrees.) Each position carries the stance particle's own
/// effective confidence, decayed at `now`.
///
/// # Errors
///
/// [`crate::Error::Store`] / [`crate::Error::Rank`] as the ranking's reads and
/// scoring.
pub(crate) fn agreement_distributions(
    store: &Store,
    hits: &[Particle],
    policies: &Policies,
    now: Timestamp,
) -> Result<(Vec<Vec<StancePosition>>, bool)> {
    let groups = groups(store, hits)?;
    let endorses = incoming(store, Kind::Endorses, &groups)?;
    let disputes = incoming(store, Kind::Disputes, &groups)?;
    let per_hit: Vec<BTreeMap<&str, Kind>> = groups
        .iter()
        .map(|group| {
            let mut by_id = BTreeMap::new();
            for member in group {
                for (kind, edges) in [(Kind::Endorses, &endorses), (Kind::Disputes, &disputes)] {
                    for stance in edges.get(member).into_iter().flatten() {
                        by_id.insert(stance.as_str(), kind);
                    }
                }
            }
            by_id
        })
        .collect();
    let all: BTreeSet<&str> = per_hit.iter().flat_map(|m| m.keys().copied()).collect();
    if all.is_empty() {
        return Ok((vec![Vec::new(); hits.len()], false));
    }
    let ids: Vec<&str> = all.into_iter().collect();
    let stances: HashMap<String, Particle> = particles_store::particles_by_ids(store, &ids)?
        .into_iter()
        .filter(|p| p.status == Status::Active)
        .map(|p| (p.id.clone(), p))
        .collect();
    let active: Vec<&Particle> = stances.values().collect();
    let effective = effective::effective_confidences(store, &active, policies, now)?;
    let mut any = false;
    let distributions = per_hit
        .iter()
        .map(|by_id| {
            let mut positions: Vec<StancePosition> = by_id
                .iter()
                .filter_map(|(id, kind)| {
                    let stance = stances.get(*id)?;
                    let holder = holder(stance)?;
                    Some(StancePosition {
                        kind: kind.as_str().to_owned(),
                        holder: holder.to_owned(),
                        stance_particle_id: (*id).to_owned(),
                        effective_confidence: effective
                            .get(*id)
                            .copied()
                            .unwrap_or(stance.confidence.value),
                        magnitude: magnitude(stance),
                    })
                })
                .collect();
            positions.sort_by(|a, b| {
                (&a.kind, &a.holder, &a.stance_particle_id).cmp(&(
                    &b.kind,
                    &b.holder,
                    &b.stance_particle_id,
                ))
            });
            any |= !positions.is_empty();
            positions
        })
        .collect();
    Ok((distributions, any))
}

/// Whether each hit's group has a DISPUTES edge from an ACTIVE stance particle
/// that names a holder (the contested badge's stance basis).
///
/// # Errors
///
/// [`crate::Error::Store`] when the store cannot be read.
pub(crate) fn dispute_presence(store: &Store, hits: &[Particle]) -> Result<Vec<bool>> {
    let groups = groups(store, hits)?;
    let disputes = incoming(store, Kind::Disputes, &groups)?;
    let per_hit: Vec<BTreeSet<&str>> = groups
        .iter()
        .map(|group| {
            group
                .iter()
                .flat_map(|member| disputes.get(member).into_iter().flatten())
                .map(String::as_str)
                .collect()
        })
        .collect();
    let ids: Vec<&str> = per_hit
        .iter()
        .flatten()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let live: BTreeSet<String> = particles_store::particles_by_ids(store, &ids)?
        .into_iter()
        .filter(|p| p.status == Status::Active && holder(p).is_some())
        .map(|p| p.id)
        .collect();
    Ok(per_hit
        .iter()
        .map(|ids| ids.iter().any(|id| live.contains(*id)))
        .collect())
}
