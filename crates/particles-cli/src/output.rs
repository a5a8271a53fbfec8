//! How query results are printed: a table for people, JSON for programs.

use std::io::Write;

use particles_engine::{Answered, CacheReport};
use particles_model::{TimeWindow, Timestamp, ValidRequest};
use particles_query::QueryOutcome;
use serde::Serialize;

/// The request as it was run, beside the answer.
#[derive(Serialize)]
struct QueryEcho<'a> {
    #[serde(flatten)]
    request: &'a ValidRequest,
    /// The instant decay was evaluated at.
    now: Timestamp,
    /// `similarity` with a query vector, else `effective_confidence`.
    ranked_by: &'static str,
}

/// The JSON object `query --json` prints and `serve --stdio` answers with: the
/// outcome's fields (`hits`, coverage, counts), the request's `as_of` and `window`,
/// the request as run (`query`) and how the cache served it. Floats print
/// shortest-round-trip, so they parse back to the same f64.
#[derive(Serialize)]
pub(crate) struct AnswerJson<'a> {
    #[serde(flatten)]
    outcome: &'a QueryOutcome,
    as_of: Option<Timestamp>,
    window: Option<TimeWindow>,
    query: QueryEcho<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<CacheReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    elapsed_seconds: Option<f64>,
}

impl<'a> AnswerJson<'a> {
    /// `None` for an answer without a ranking (a deterministic mode).
    pub(crate) fn new(
        answer: &'a Answered,
        request: &'a ValidRequest,
        cache: Option<CacheReport>,
    ) -> Option<AnswerJson<'a>> {
        Some(AnswerJson {
            outcome: answer.outcome.as_ref()?,
            as_of: request.as_of,
            window: request.window,
            query: QueryEcho {
                request,
                now: answer.now,
                ranked_by: if answer.ranked_by_similarity {
                    "similarity"
                } else {
                    "effective_confidence"
                },
            },
            cache,
            elapsed_seconds: None,
        })
    }

    pub(crate) fn with_elapsed(mut self, seconds: f64) -> AnswerJson<'a> {
        self.elapsed_seconds = Some(seconds);
        self
    }
}

/// Prints the answer as one JSON line.
pub(crate) fn write_json(
    out: &mut impl Write,
    answer: &Answered,
    request: &ValidRequest,
    cache: Option<CacheReport>,
) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, &AnswerJson::new(answer, request, cache))?;
    writeln!(out)
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
