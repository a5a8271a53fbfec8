//! "Why this rank": the body of `POST /particles-rs/explain`, built from the
//! ranking the engine computed (the same numbers `/query` ranks by, not a
//! recomputation).

use particles_query::QueryOutcome;
use particles_rank::RankSettings;
use serde_json::{json, Value};

/// The explanation of `outcome`, ranked under `rank`'s weights.
pub(crate) fn explanation(
    outcome: &QueryOutcome,
    rank: &RankSettings,
    ranked_by_similarity: bool,
) -> Value {
    let hits: Vec<Value> = outcome
        .hits
        .iter()
        .map(|hit| {
            json!({
                "rank": hit.rank,
                "id": hit.id,
                "store": hit.store,
                "score": hit.score,
                "similarity": if ranked_by_similarity { json!(hit.similarity) } else { Value::Null },
                "effective_confidence": hit.effective_confidence,
                "confidence": hit.particle.confidence,
                "factors": hit.factors,
                "source": {
                    "entry_id": hit.source.entry_id,
                    "source_type": hit.source.source_type,
                    "uri": hit.source.uri,
                    "published_at": hit.source.published_at.map(|t| t.to_string()),
                },
            })
        })
        .collect();
    let stats = &outcome.stats;
    json!({
        "journal_seq": outcome.journal_seq,
        "formula": {
            "score": "similarity_weight * similarity + confidence_weight * effective_confidence, \
                      times narrative_rank_weight for a narrative particle",
            "effective_confidence": "min(1, max(0, confidence * extractor_weight * source_trust * decay)) \
                                     * stale_support_discount (a collapsed representative's is the \
                                     noisy-OR of its group's, so the product of its factors may differ)",
            "similarity": if ranked_by_similarity {
                "the cosine of the question's vector and the belief's embedding"
            } else {
                "no query vector: the effective confidence stands in for it"
            },
        },
        "weights": {
            "similarity_weight": rank.similarity_weight,
            "confidence_weight": rank.confidence_weight,
            "narrative_rank_weight": rank.narrative_rank_weight,
        },
        "hits": hits,
        "counts": {
            "candidates": stats.candidates,
            "skipped_other_model": stats.skipped_other_model,
            "filtered_out": stats.filtered_out,
            "below_min_confidence": stats.below_min_confidence,
            "collapsed": stats.collapsed,
            "pruned": stats.pruned,
        },
        "scan_stop": outcome.scan_stop,
        "scan_rule": "candidates are scored in descending order of an upper bound of their score \
                      that needs no source lookup; the walk stops at the first bound below the k-th \
                      score held less the margin, since no candidate after it can enter the top k \
                      (scan_stop; null when every candidate was scored). The truncation warning then \
                      scores the band just below the last hit the same way; counts.pruned is the \
                      candidates whose exact score neither step needed",
    })
}
