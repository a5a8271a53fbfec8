//! The co-evidential collapse of the top-k and its noisy-OR merge.

use std::collections::{HashSet, VecDeque};

use crate::{py_max, py_min, Ranked};

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

/// Collapses co-evidential groups within `top` (already sorted and cut to top_k).
///
/// Walking `top` in order, each not-yet-represented entry's closure over CO_EVIDENTIAL
/// edges (through any particle, traversing edges whose confidence reaches
/// `threshold`, the configured `query.equivalence_threshold` compared after the
/// identity equivalence lens) is intersected with `top`; a group of two or more keeps
/// its first member with the merged confidence and drops the rest. The survivors
/// keep their pre-collapse positions: the list is not re-sorted.
///
/// `id_of` and `source_key_of` describe a ranked entry; `edges(id)` lists the edges
/// touching `id` as `(other endpoint, confidence)`.
///
/// # Errors
///
/// Whatever `edges` returns.
pub fn collapse_co_evidential<'a, E>(
    top: Vec<Ranked>,
    id_of: impl Fn(&Ranked) -> &'a str,
    source_key_of: impl Fn(&Ranked) -> &'a str,
    threshold: f64,
    mut edges: impl FnMut(&str) -> Result<Vec<(String, f64)>, E>,
) -> Result<Vec<Ranked>, E> {
    let ids: Vec<&str> = top.iter().map(&id_of).collect();
    let mut represented = vec![false; top.len()];
    let mut out = Vec::with_capacity(top.len());
    for (position, entry) in top.iter().enumerate() {
        if represented[position] {
            continue;
        }
        let closure = co_evidential_closure(ids[position], threshold, &mut edges)?;
        let members: Vec<usize> = (0..top.len())
            .filter(|&i| closure.contains(ids[i]))
            .collect();
        if members.len() <= 1 {
            represented[position] = true;
            out.push(*entry);
            continue;
        }
        let inputs: Vec<(f64, &str)> = members
            .iter()
            .map(|&i| (top[i].effective_confidence, source_key_of(&top[i])))
            .collect();
        for &i in &members {
            represented[i] = true;
        }
        out.push(Ranked {
            effective_confidence: merge_co_evidential(&inputs),
            ..*entry
        });
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
