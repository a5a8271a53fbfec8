//! The ranking core: visit candidates in score-bound order and keep the best.
//!
//! Every candidate has a score bound that needs no store read (see
//! `particles_rank::score_bound`). [`BoundOrder`] hands out candidate positions
//! highest bound first, sorting only as far as the walk gets. [`TopK`] collects
//! the scored ones and says when the walk may stop: once it holds `k` scores, a
//! candidate whose bound is below the k-th score (minus the caller's margin) cannot
//! change the answer.

use std::cmp::Ordering;

use particles_model::policy::SourceFacts;
use particles_rank::{Factors, Ranked};

/// One fully scored candidate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scored {
    /// Its position among the scanned survivors, which are in loader order: the
    /// tie-break.
    pub(crate) position: usize,
    /// Row, similarity, effective confidence and score.
    pub(crate) ranked: Ranked,
    /// The factors of its effective confidence.
    pub(crate) factors: Factors,
    /// Its first source's facts.
    pub(crate) source: SourceFacts,
}

/// Positions in descending bound order; NaN bounds come first, since they must
/// always be scored. Only the front is ever visited before the stopping rule
/// holds, so it is ordered a window at a time (a linear selection, then a sort of
/// the window) rather than all at once: 8 ms of 25 at 100k. The first window is
/// picked in one pass that keeps only positions better than the best-so-far's
/// cut, without listing every position: at 1M the list alone is 8 MB per query.
/// The rest is listed only if the walk goes past the first window.
pub(crate) struct BoundOrder<'a> {
    bounds: &'a [f64],
    order: Vec<usize>,
    sorted_upto: usize,
    window: usize,
    /// Whether `order` lists every position (else only the first window).
    complete: bool,
}

impl<'a> BoundOrder<'a> {
    pub(crate) fn new(bounds: &'a [f64], first_window: usize) -> BoundOrder<'a> {
        let window = first_window.max(1);
        let n = bounds.len();
        if n <= window * 2 {
            return BoundOrder {
                bounds,
                order: (0..n).collect(),
                sorted_upto: 0,
                window,
                complete: true,
            };
        }
        // The best `window` positions: candidates gather in a buffer; whenever it
        // holds two windows, the best window is kept and its worst becomes the
        // cut. A position no better than the cut is not among the best window
        // (everything kept is at least as good), so it is passed over.
        let mut front: Vec<usize> = Vec::with_capacity(window * 2 + 1);
        let mut cut: Option<usize> = None;
        // Last position first: loader order ascends by confidence, and so, on
        // the whole, do the bounds, so the cut rises at once and most positions
        // are passed over (at 10k rows, 0.13 ms in position order).
        for position in (0..n).rev() {
            if cut.is_some_and(|c| Self::compare(bounds, position, c) != Ordering::Less) {
                continue;
            }
            front.push(position);
            if front.len() == window * 2 {
                front.select_nth_unstable_by(window - 1, |&a, &b| Self::compare(bounds, a, b));
                front.truncate(window);
                cut = Some(front[window - 1]);
            }
        }
        if front.len() > window {
            front.select_nth_unstable_by(window - 1, |&a, &b| Self::compare(bounds, a, b));
            front.truncate(window);
        }
        front.sort_unstable_by(|&a, &b| Self::compare(bounds, a, b));
        BoundOrder {
            bounds,
            sorted_upto: front.len(),
            order: front,
            window: window * 2,
            complete: false,
        }
    }

    fn compare(bounds: &[f64], a: usize, b: usize) -> Ordering {
        match (bounds[a].is_nan(), bounds[b].is_nan()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => bounds[b].partial_cmp(&bounds[a]).unwrap_or(Ordering::Equal),
        }
    }

    /// Lists the positions past the first window after it, in position order.
    fn complete(&mut self) {
        if self.complete {
            return;
        }
        let mut listed = vec![false; self.bounds.len()];
        for &position in &self.order {
            listed[position] = true;
        }
        self.order
            .extend((0..self.bounds.len()).filter(|&position| !listed[position]));
        self.complete = true;
    }

    /// The positions `start..start + n` of the order (fewer at the end).
    pub(crate) fn batch(&mut self, start: usize, n: usize) -> &[usize] {
        let end = (start + n).min(self.bounds.len());
        if end > self.sorted_upto {
            self.complete();
        }
        while self.sorted_upto < end {
            let upto = (self.sorted_upto + self.window).min(self.order.len());
            let bounds = self.bounds;
            let rest = &mut self.order[self.sorted_upto..];
            let take = upto - self.sorted_upto;
            if take < rest.len() {
                rest.select_nth_unstable_by(take - 1, |&a, &b| Self::compare(bounds, a, b));
            }
            rest[..take].sort_unstable_by(|&a, &b| Self::compare(bounds, a, b));
            self.sorted_upto = upto;
            self.window *= 2;
        }
        &self.order[start.min(end)..end]
    }

    /// The bound of the candidate at `at` in the order, once that far is sorted.
    pub(crate) fn bound_at(&mut self, at: usize) -> Option<f64> {
        let position = *self.batch(at, 1).first()?;
        Some(self.bounds[position])
    }

    pub(crate) fn len(&self) -> usize {
        self.bounds.len()
    }
}

/// The `k` best of the scored candidates, in the order a stable sort by score,
/// descending, over loader order gives them.
///
/// **Tie-break:** equal scores (compared with `partial_cmp`, so `-0.0 == 0.0`, as in
/// Python) keep loader order, the earlier position first: exactly the reference's
/// `sorted(..., key=score, reverse=True)` on a list in loader order. Candidates may
/// arrive in any order. NaN scores (only a degenerate configuration, such as an
/// infinite weight, makes one) sort before every number; the reference's order for
/// them follows CPython's timsort internals and is not reproduced.
///
/// Besides the best `k`, it keeps every other scored candidate, so the caller can
/// see what lies just beyond the cut (the truncation warning reads it).
#[derive(Debug)]
pub(crate) struct TopK {
    k: usize,
    /// The best scores seen, at most `k`, descending: the stopping rule's input.
    best: Vec<f64>,
    scored: Vec<Scored>,
    /// With [`TopK::keeping_only_scores_beyond`]: the scores of candidates already
    /// below the k-th best when they arrived, unordered.
    beyond: Option<Vec<f64>>,
}

impl TopK {
    pub(crate) fn new(k: usize) -> TopK {
        TopK {
            k,
            best: Vec::with_capacity(k + 1),
            scored: Vec::new(),
            beyond: None,
        }
    }

    /// A collector that keeps only the score of a candidate that arrives strictly
    /// below the k-th best held: the k-th best only rises, so such a candidate can
    /// never be in the top `k`, and all a caller reads of it is its score (the
    /// truncation warning's count). The response's pruning margin makes most
    /// candidates scored such ones; not keeping their facts and factors saves
    /// the memory traffic of carrying and sorting them.
    pub(crate) fn keeping_only_scores_beyond(k: usize) -> TopK {
        TopK {
            beyond: Some(Vec::new()),
            ..TopK::new(k)
        }
    }

    #[cfg(test)]
    pub(crate) fn push(&mut self, scored: Scored) {
        self.push_with(scored.ranked.score, || scored);
    }

    /// Takes a scored candidate with this score, built by `make` only when it is
    /// kept whole.
    pub(crate) fn push_with(&mut self, score: f64, make: impl FnOnce() -> Scored) {
        if let Some(beyond) = self.beyond.as_mut() {
            // NaN compares false: it is kept whole, and sorted as the rest are.
            if self.k > 0 && self.best.len() == self.k && score < self.best[self.k - 1] {
                beyond.push(score);
                return;
            }
        }
        let scored = make();
        let at = self.best.partition_point(|s| *s >= score);
        if at < self.k {
            self.best.insert(at, score);
            self.best.truncate(self.k);
        }
        self.scored.push(scored);
    }

    /// Whether a candidate whose score is at most `bound` can be skipped: `k`
    /// scores are held and `bound` is below the k-th of them minus `margin`.
    pub(crate) fn can_skip(&self, bound: f64, margin: f64) -> bool {
        self.kth_score().is_some_and(|kth| bound < kth - margin)
    }

    /// The k-th best score, once `k` are held.
    pub(crate) fn kth_score(&self) -> Option<f64> {
        (self.k > 0 && self.best.len() == self.k).then(|| self.best[self.k - 1])
    }

    /// Every scored candidate kept whole, in final order (the top `k` first, then
    /// the rest), and the scores kept alone (unordered; empty unless
    /// [`TopK::keeping_only_scores_beyond`]).
    pub(crate) fn into_ranked(mut self) -> (Vec<Scored>, Vec<f64>) {
        self.scored.sort_by(by_score_then_position);
        (self.scored, self.beyond.unwrap_or_default())
    }
}

fn by_score_then_position(a: &Scored, b: &Scored) -> Ordering {
    let (x, y) = (a.ranked.score, b.ranked.score);
    let by_score = match (x.is_nan(), y.is_nan()) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        _ => y.partial_cmp(&x).unwrap_or(Ordering::Equal),
    };
    by_score.then(a.position.cmp(&b.position))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn scored(position: usize, score: f64) -> Scored {
        Scored {
            position,
            ranked: Ranked {
                row: position,
                similarity: score,
                effective_confidence: score,
                score,
            },
            factors: Factors {
                extractor_weight: 1.0,
                source_trust: 1.0,
                decay: 1.0,
                discount: 1.0,
            },
            source: SourceFacts::default(),
        }
    }

    /// A handful of distinct values, so ties are common; `-0.0` and `0.0` both.
    fn score() -> impl Strategy<Value = f64> {
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(0.25),
            Just(0.5),
            Just(1.0),
            0.0f64..1.0
        ]
    }

    proptest! {
        /// The order hands out every position once, best bound first (NaN
        /// first), however far the walk goes and whatever the batch sizes.
        #[test]
        fn the_bound_order_is_every_position_once_best_first(
            bounds in prop::collection::vec(
                prop_oneof![8 => -1.0f64..2.0, 1 => Just(f64::NAN), 1 => Just(0.5)],
                0..300,
            ),
            window in 1usize..40,
            step in 1usize..50,
        ) {
            let mut order = BoundOrder::new(&bounds, window);
            let mut seen = Vec::new();
            let mut next = 0;
            while next < order.len() {
                let batch = order.batch(next, step).to_vec();
                prop_assert!(!batch.is_empty());
                next += batch.len();
                seen.extend(batch);
            }
            let mut sorted = seen.clone();
            sorted.sort_unstable();
            prop_assert_eq!(sorted, (0..bounds.len()).collect::<Vec<_>>());
            for pair in seen.windows(2) {
                prop_assert!(
                    BoundOrder::compare(&bounds, pair[0], pair[1]) != Ordering::Greater,
                    "{:?} before {:?}", bounds[pair[0]], bounds[pair[1]]
                );
            }
        }
    }

    proptest! {
        /// Fed in any order and pruned by exact bounds, the collector's first k are
        /// the first k of a stable sort of every candidate in loader order.
        #[test]
        fn top_k_is_a_stable_sort_then_a_cut(
            scores in prop::collection::vec(score(), 0..200),
            slack in prop::collection::vec(0.0f64..0.5, 200),
            k in 1usize..30,
            seed in any::<u64>(),
            scores_only in any::<bool>(),
        ) {
            // The oracle: Python's sorted(reverse=True) over loader order.
            let mut oracle: Vec<(usize, f64)> = scores.iter().copied().enumerate().collect();
            oracle.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(Ordering::Equal));
            oracle.truncate(k);

            // Bounds at or above the score, visited in bound order.
            let bounds: Vec<f64> = scores.iter().zip(&slack).map(|(s, d)| s + d).collect();
            let mut order = BoundOrder::new(&bounds, 1 + (seed % 7) as usize);
            let mut top = if scores_only {
                TopK::keeping_only_scores_beyond(k)
            } else {
                TopK::new(k)
            };
            let mut whole = TopK::new(k);
            let mut next = 0;
            while next < order.len() {
                let bound = order.bound_at(next).unwrap();
                if top.can_skip(bound, 0.0) {
                    break;
                }
                let batch = order.batch(next, 3).to_vec();
                next += batch.len();
                for position in batch {
                    top.push(scored(position, scores[position]));
                    whole.push(scored(position, scores[position]));
                }
            }
            let (kept, beyond) = top.into_ranked();
            // Whatever was kept as a score alone, every score is there.
            let bits = |mut scores: Vec<f64>| {
                scores.sort_by(f64::total_cmp);
                scores.iter().map(|s| s.to_bits()).collect::<Vec<_>>()
            };
            let all: Vec<f64> = kept.iter().map(|s| s.ranked.score).chain(beyond).collect();
            let whole: Vec<f64> = whole.into_ranked().0.iter().map(|s| s.ranked.score).collect();
            prop_assert_eq!(bits(all), bits(whole));
            let got: Vec<(usize, f64)> = kept
                .into_iter()
                .take(k)
                .map(|s| (s.position, s.ranked.score))
                .collect();
            prop_assert_eq!(got.len(), oracle.len());
            for (g, o) in got.iter().zip(&oracle) {
                prop_assert_eq!(g.0, o.0);
                prop_assert_eq!(g.1.to_bits(), o.1.to_bits());
            }
        }
    }

    #[test]
    fn equal_scores_keep_loader_order_whatever_the_arrival() {
        let mut top = TopK::new(2);
        for (position, score) in [(3, 0.5), (1, 0.5), (2, -0.0), (0, 0.0)] {
            top.push(scored(position, score));
        }
        let order: Vec<usize> = top.into_ranked().0.iter().map(|s| s.position).collect();
        assert_eq!(order, [1, 3, 0, 2]);
    }
}
