//! How query results are printed: a table for people, JSON for programs.

use std::io::Write;

use particles_model::{QueryRequest, Timestamp};
use particles_query::{Hit, QueryOutcome};
use serde_json::{json, Value};

/// The JSON form of a query's answer: `hits` in rank order, each with `id`,
/// `similarity`, `effective_confidence`, `score` and the full `particle`. Floats are
/// printed shortest-round-trip, so they parse back to the same f64.
pub(crate) fn outcome_json(
    outcome: &QueryOutcome,
    request: &QueryRequest,
    now: Timestamp,
    with_vector: bool,
    claim_counts: Option<(u64, u64)>,
) -> Value {
    let hits: Vec<Value> = outcome
        .hits
        .iter()
        .enumerate()
        .map(|(position, hit)| hit_json(position + 1, hit))
        .collect();
    let claim_coverage = match (outcome.stats.claims, claim_counts) {
        (Some(claims), Some((active_total, with_claims))) => json!({
            "active_total": active_total,
            "with_claims": with_claims,
            "matched": claims.matched,
            "not_normalizable_excluded": claims.not_comparable,
        }),
        _ => Value::Null,
    };
    json!({
        "hits": hits,
        "as_of": request.as_of.map(|t| t.to_string()),
        "as_of_excluded_undatable": outcome.as_of_excluded_undatable,
        "window": request.window.map(|w| json!({
            "start": w.start.map(|t| t.to_string()),
            "end": w.end.map(|t| t.to_string()),
        })),
        "window_coverage": outcome.window_coverage.map(|c| json!({
            "candidates": c.candidates,
            "admitted": c.admitted,
            "undated": c.undated,
            "unkinded": c.unkinded,
            "retired_admitted": c.retired_admitted,
            "restated": c.restated,
        })),
        "claim_coverage": claim_coverage,
        "query": {
            "question": request.question,
            "top_k": request.top_k,
            "subject_id": request.subject_id,
            "min_confidence": request.min_confidence,
            "tags": request.tags,
            "now": now.to_string(),
            "ranked_by": if with_vector { "similarity" } else { "effective_confidence" },
        },
        "stats": {
            "candidates": outcome.stats.candidates,
            "skipped_other_model": outcome.stats.skipped_other_model,
            "filtered_out": outcome.stats.filtered_out,
            "below_min_confidence": outcome.stats.below_min_confidence,
            "collapsed": outcome.stats.collapsed,
            "pruned": outcome.stats.pruned,
        },
    })
}

fn hit_json(rank: usize, hit: &Hit) -> Value {
    json!({
        "rank": rank,
        "id": hit.particle.id,
        "similarity": hit.similarity,
        "effective_confidence": hit.effective_confidence,
        "score": hit.score,
        "rowid": hit.rowid,
        "factors": {
            "extractor_weight": hit.factors.extractor_weight,
            "source_trust": hit.factors.source_trust,
            "decay": hit.factors.decay,
            "stale_support_discount": hit.factors.discount,
        },
        "source": {
            "entry_id": hit.source.entry_id,
            "source_type": hit.source.source_type,
            "uri": hit.source.uri,
            "published_at": hit.source.published_at.map(|t| t.to_string()),
            "author_id": hit.source.author_id,
        },
        "as_of_note": hit.as_of_note.as_ref().map(|note| json!({
            "status": note.status.as_str(),
            "status_reason": note.status_reason.map(|r| r.as_str()),
            "retired_at": note.retired_at.to_string(),
            "basis": note.basis.as_str(),
            "successor": note.successor.as_ref().map(|s| json!({
                "id": s.id,
                "content": s.content,
                "asserted_at": s.asserted_at.to_string(),
            })),
        })),
        "window_hit": hit.window_hit.as_ref().map(|w| json!({
            "reading": w.reading.as_str(),
            "valid_from": w.valid_from.to_string(),
            "valid_kind": w.valid_kind.map(|k| k.as_str()),
            "closed_at": w.closed_at.map(|t| t.to_string()),
            "close_basis": w.close_basis.map(|b| b.as_str()),
            "restates": w.restates,
        })),
        "particle": serde_json::to_value(&hit.particle).unwrap_or(Value::Null),
    })
}

/// A readable table: rank, id, similarity, effective confidence, age, extractor and
/// content (cut to the terminal-friendly width).
pub(crate) fn write_table(
    out: &mut impl Write,
    outcome: &QueryOutcome,
    now: Timestamp,
) -> std::io::Result<()> {
    if outcome.hits.is_empty() {
        writeln!(
            out,
            "No beliefs matched ({} candidates).",
            outcome.stats.candidates
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{:>4}  {:<36}  {:>6}  {:>6}  {:>5}  {:<20}  content",
        "rank", "id", "sim", "eff", "age", "extractor"
    )?;
    for (position, hit) in outcome.hits.iter().enumerate() {
        let extractor = hit
            .particle
            .extractor_ref
            .as_ref()
            .map_or("-", |r| r.name.as_str());
        writeln!(
            out,
            "{:>4}  {:<36}  {:>6.4}  {:>6.4}  {:>5}  {:<20}  {}",
            position + 1,
            hit.particle.id,
            hit.similarity,
            hit.effective_confidence,
            age(hit.particle.asserted_at, now),
            truncate(extractor, 20),
            truncate(&hit.particle.content.replace('\n', " "), 80),
        )?;
    }
    let stats = outcome.stats;
    writeln!(
        out,
        "{} hit(s) from {} candidate(s); {} filtered out, {} below min confidence, {} merged as co-evidential.",
        outcome.hits.len(),
        stats.candidates,
        stats.filtered_out,
        stats.below_min_confidence,
        stats.collapsed
    )
}

/// How long before `now` a belief was asserted, in the largest whole unit.
fn age(asserted_at: Timestamp, now: Timestamp) -> String {
    let seconds = (now.utc_micros() - asserted_at.utc_micros()) / 1_000_000;
    if seconds < 0 {
        return "future".into();
    }
    let days = seconds / 86_400;
    match days {
        0 if seconds < 3600 => format!("{}m", seconds / 60),
        0 => format!("{}h", seconds / 3600),
        1..=59 => format!("{days}d"),
        60..=729 => format!("{}mo", days / 30),
        _ => format!("{}y", days / 365),
    }
}

fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(width - 1).collect();
        cut.push('…');
        cut
    }
}
