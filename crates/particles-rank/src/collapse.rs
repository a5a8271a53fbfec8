//! The co-evidential collapse of the top-k and its noisy-OR merge.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::{py_max, py_min};

/// Noisy-OR of co-evidential members' effective confidences, `(eff, source key)`.
///
/// Members sort by eff descending, then source key (code-point order); the k-th member
/// of a source counts with weight `1/k`, so repeats of one source cannot add up to
/// certainty.
pub fn merge_co_evidential(entries: &[(f64, &str)]) -> f64 {
    match entries {
        [] => return 0.0,
        [(eff, _)] => return py_min(1.0, py_max(0.0, *eff)),
        _ => {}
    }
    let mut sorted: Vec<(f64, &str)> = entries.to_vec();
    sorted.sort_by(|a, b| {
        (-a.0)
            .partial_cmp(&-b.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.1.cmp(b.1))
    });
    let mut seen: Vec<(&str, u32)> = Vec::new();
    let mut product = 1.0f64;
    for (eff, key) in sorted {
        let count = match seen.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => {
                slot.1 += 1;
                slot.1
            }
            None => {
                seen.push((key, 1));
                1
            }
        };
        let weight = 1.0 / f64::from(count);
        let bounded = py_min(1.0, py_max(0.0, eff)) * weight;
        product *= 1.0 - bounded;
    }
    py_min(1.0, py_max(0.0, 1.0 - product))
}

/// Collapses co-evidential groups within `top` (already sorted and cut to top_k),
/// as the reference's `_collapse_co_evidential_top_k` does, and returns the kept
/// entries as `(index into top, effective confidence)`: the merged value for a
/// group's representative.
///
/// Walking `top` in order, an entry whose id is already represented is skipped;
/// otherwise its closure over CO_EVIDENTIAL edges (through any particle,
/// traversing edges whose confidence reaches `threshold`, the configured
/// `query.equivalence_threshold`, compared after the identity equivalence lens) is
/// intersected with the ids in `top`. A group of two or more distinct ids keeps
/// this entry with the noisy-OR merge of the members, each member's values taken
/// from its last occurrence in `top` (the reference indexes `top` by id, so with a
/// repeated id, as federation over one store twice makes, the later copy speaks).
/// Survivors keep their order: the list is not re-sorted.
///
/// `id_of`, `eff_of` and `source_key_of` describe an entry; `edges(id)` lists the
/// edges touching `id` as `(other endpoint, confidence)`.
///
/// # Errors
///
/// Whatever `edges` returns.
pub fn collapse_co_evidential<'a, T, E>(
    top: &'a [T],
    id_of: impl Fn(&'a T) -> &'a str,
    eff_of: impl Fn(&T) -> f64,
    source_key_of: impl Fn(&'a T) -> &'a str,
    threshold: f64,
    mut edges: impl FnMut(&str) -> Result<Vec<(String, f64)>, E>,
) -> Result<Vec<(usize, f64)>, E> {
    let mut last_index: HashMap<&str, usize> = HashMap::with_capacity(top.len());
    for (index, entry) in top.iter().enumerate() {
        last_index.insert(id_of(entry), index);
    }
    let mut represented: HashSet<&str> = HashSet::with_capacity(top.len());
    let mut clusters_seen: HashSet<Vec<usize>> = HashSet::new();
    let mut out = Vec::with_capacity(top.len());
    for (position, entry) in top.iter().enumerate() {
        let id = id_of(entry);
        if represented.contains(id) {
            continue;
        }
        let closure = co_evidential_closure(id, threshold, &mut edges)?;
        // The members, as last-occurrence indexes in rank order.
        let mut members: Vec<usize> = closure
            .iter()
            .filter_map(|member| last_index.get(member.as_str()).copied())
            .collect();
        members.sort_unstable();
        for &member in &members {
            represented.insert(id_of(&top[member]));
        }
        if members.len() <= 1 {
            out.push((position, eff_of(entry)));
            continue;
        }
        if !clusters_seen.insert(members.clone()) {
            continue;
        }
        let inputs: Vec<(f64, &str)> = members
            .iter()
            .map(|&member| (eff_of(&top[member]), source_key_of(&top[member])))
            .collect();
        out.push((position, merge_co_evidential(&inputs)));
    }
    Ok(out)
}

/// The ids reachable from `start` over co-evidential edges whose confidence is at
/// least `threshold` (breadth first, `start` included); `edges(id)` lists an id's
/// neighbours with each edge's confidence.
///
/// # Errors
///
/// Whatever `edges` fails with.
pub fn co_evidential_closure<E>(
    start: &str,
    threshold: f64,
    edges: &mut impl FnMut(&str) -> Result<Vec<(String, f64)>, E>,
) -> Result<HashSet<String>, E> {
    let mut seen: HashSet<String> = HashSet::from([start.to_owned()]);
    let mut queue: VecDeque<String> = VecDeque::from([start.to_owned()]);
    while let Some(node) = queue.pop_front() {
        for (other, confidence) in edges(&node)? {
            if confidence >= threshold && seen.insert(other.clone()) {
                queue.push_back(other);
            }
        }
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformance_noisy_or() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(merge_co_evidential(&[(0.6, "A"), (0.5, "B")]), 0.80));
        assert!(close(
            merge_co_evidential(&[(0.6, "A"), (0.6, "A"), (0.6, "A")]),
            0.776
        ));
        assert!(close(
            merge_co_evidential(&[(0.7, "A"), (0.5, "A"), (0.6, "B")]),
            0.91
        ));
        assert_eq!(merge_co_evidential(&[(0.8, "A")]), 0.8);
        assert_eq!(merge_co_evidential(&[]), 0.0);
        assert!(close(
            merge_co_evidential(&[(0.63, "E1"), (0.56, "E1"), (0.49, "E2")]),
            0.864136
        ));
    }

    #[test]
    fn merge_is_insertion_order_independent() {
        let a = merge_co_evidential(&[(0.3, "B"), (0.9, "A"), (0.3, "A")]);
        let b = merge_co_evidential(&[(0.9, "A"), (0.3, "A"), (0.3, "B")]);
        assert_eq!(a, b);
    }
}
