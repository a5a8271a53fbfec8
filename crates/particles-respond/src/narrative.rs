//! The constituents of NARRATIVE hits (the reference's
//! `operations/narrative.py` `get_narrative_sequence`): the particles `PART_OF` the
//! narrative, in `SEQUENCE_IN` order.

use std::collections::{BTreeSet, HashMap, HashSet};

use particles_model::{response::indexmap_like::OrderedMap, Particle, ParticleType};
use particles_store::Store;

use crate::Result;

/// Each NARRATIVE hit's constituents in sequence order, keyed by its id, in hit
/// order; narratives without a constituent are absent.
///
/// # Errors
///
/// [`crate::Error::Store`] when the store cannot be read or holds a malformed
/// constituent row.
pub(crate) fn narrative_constituents(
    store: &Store,
    hits: &[Particle],
) -> Result<OrderedMap<Vec<Particle>>> {
    let narratives: Vec<&str> = hits
        .iter()
        .filter(|p| p.particle_type == ParticleType::Narrative)
        .map(|p| p.id.as_str())
        .collect();
    let mut out = OrderedMap::default();
    if narratives.is_empty() {
        return Ok(out);
    }
    let parts = particles_store::incoming_relations(store, "PART_OF", &narratives)?;
    let constituents: Vec<&str> = parts.values().flatten().map(String::as_str).collect();
    let successors = particles_store::outgoing_relations(store, "SEQUENCE_IN", &constituents)?;
    let mut orders = Vec::new();
    for narrative in &narratives {
        let members = parts.get(*narrative).map(Vec::as_slice).unwrap_or_default();
        orders.push((*narrative, sequence(members, &successors)));
    }
    let wanted: Vec<&str> = orders
        .iter()
        .flat_map(|(_, ids)| ids.iter().map(String::as_str))
        .collect();
    // Constituents of any status; an id with no particle left is dropped.
    let found: HashMap<String, Particle> = particles_store::particles_by_ids(store, &wanted)?
        .into_iter()
        .map(|p| (p.id.clone(), p))
        .collect();
    for (narrative, ids) in orders {
        let particles: Vec<Particle> = ids.iter().filter_map(|id| found.get(id).cloned()).collect();
        if !particles.is_empty() {
            out.insert(narrative.to_owned(), particles);
        }
    }
    Ok(out)
}

/// The sequence order of one narrative's constituents (`members`, sorted):
/// every chain head (a member with an in-set successor and no in-set predecessor)
/// in id order, followed along its in-set successors; then every member not yet
/// visited, in id order. A member with several in-set successors follows the last
/// one in id order, as the reference's map keeps the last write.
fn sequence(members: &[String], successors: &HashMap<String, Vec<String>>) -> Vec<String> {
    let in_set: HashSet<&str> = members.iter().map(String::as_str).collect();
    let mut next: HashMap<&str, &str> = HashMap::new();
    let mut has_predecessor: HashSet<&str> = HashSet::new();
    for member in members {
        for successor in successors.get(member).into_iter().flatten() {
            if in_set.contains(successor.as_str()) {
                next.insert(member.as_str(), successor.as_str());
                has_predecessor.insert(successor.as_str());
            }
        }
    }
    let heads: BTreeSet<&str> = members
        .iter()
        .map(String::as_str)
        .filter(|m| !has_predecessor.contains(m) && next.contains_key(m))
        .collect();
    let mut ordered = Vec::new();
    let mut visited: HashSet<&str> = HashSet::new();
    for head in heads {
        let mut current = Some(head);
        while let Some(at) = current.filter(|at| !visited.contains(at)) {
            visited.insert(at);
            ordered.push(at.to_owned());
            current = next.get(at).copied();
        }
    }
    let mut rest: Vec<&str> = members
        .iter()
        .map(String::as_str)
        .filter(|m| !visited.contains(m))
        .collect();
    rest.sort_unstable();
    ordered.extend(rest.into_iter().map(str::to_owned));
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn chains_first_then_the_rest_by_id() {
        let members = ids(&["a", "b", "c", "d", "e"]);
        let successors: HashMap<String, Vec<String>> = [
            ("c".to_owned(), ids(&["a"])),
            ("a".to_owned(), ids(&["outside"])),
            ("d".to_owned(), ids(&["b"])),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            sequence(&members, &successors),
            ids(&["c", "a", "d", "b", "e"])
        );
    }

    #[test]
    fn a_cycle_is_broken_and_nothing_is_lost() {
        let members = ids(&["a", "b", "c"]);
        let successors: HashMap<String, Vec<String>> =
            [("a".to_owned(), ids(&["b"])), ("b".to_owned(), ids(&["a"]))]
                .into_iter()
                .collect();
        // No head: both have a predecessor; all land in id order.
        assert_eq!(sequence(&members, &successors), ids(&["a", "b", "c"]));
    }

    #[test]
    fn the_last_successor_in_id_order_wins() {
        let members = ids(&["a", "b", "c"]);
        let successors: HashMap<String, Vec<String>> =
            [("a".to_owned(), ids(&["b", "c"]))].into_iter().collect();
        assert_eq!(sequence(&members, &successors), ids(&["a", "c", "b"]));
    }
}
