//! The reference's `particles query` text layout for a semantic answer
//! (`--show-particles`, `--show-source`, `--contestedness`): the hit table, the
//! contestedness spread, the ⚠ disclosures, the answer, the footers and the
//! source passages, line for line as its CLI prints them (spec:
//! config-and-stores §6.5). stdout carries the tables, the answer and the notes;
//! stderr the ⚠ lines, as there, so a script that reads either sees the same text.
//!
//! Python's `format(x, '.2f')` and Rust's `{:.2}` both round the exact binary
//! value correctly, so the numbers print alike without a port of Python's float
//! formatting. Widths and cuts count code points, as Python's do.

use std::io::{self, Write};

use particles_engine::SourcePassage;
use particles_model::{
    response::{AnswerFailureCause, AttributionKind, QueryResponse, WindowHit},
    Particle, ParticleType, Timestamp,
};
use serde::Serialize;

/// What the caller asked for beyond the answer itself.
pub(crate) struct Layout {
    /// `--show-particles`: the hit table before the answer.
    pub(crate) show_particles: bool,
    /// `--contestedness`: the spread block (or the note that it is unavailable).
    pub(crate) contestedness: bool,
    /// Whether `--as-of` was given (the retirement lines follow the badges).
    pub(crate) as_of: bool,
    /// The instant the AGE column counts from.
    pub(crate) now: Timestamp,
}

/// The first `n` code points of `text` (Python's `text[:n]`).
fn cut(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The wire value of a response enum (`"RETIRED"`, `"valid_until"`), which is
/// what the reference's f-strings print for its `.value`s and `Literal`s.
fn wire<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// `AGE`: whole days from the publication date to `now` (Python's
/// `timedelta.days`, which floors), or `—` without a date.
fn age(published: Option<Timestamp>, now: Timestamp) -> String {
    match published {
        Some(at) => {
            let days = (now.utc_micros() - at.utc_micros()).div_euclid(86_400_000_000);
            format!("{days}d")
        }
        None => "—".to_owned(),
    }
}

/// The advice line under a failed answer, keyed by its cause.
fn failure_advice(cause: AnswerFailureCause) -> &'static str {
    match cause {
        AnswerFailureCause::Budget => {
            "The model returned no text within its token budget — an extended-thinking model \
             spends thinking tokens from the same allowance. Raise query.answer_max_tokens (and \
             query.answer_retry_max_tokens, already tried once)."
        }
        AnswerFailureCause::Provider => {
            "The provider call itself failed (billing, network, or a refusal) — this is not a \
             token-budget problem."
        }
    }
}

/// Writes a semantic response as the reference's CLI does, every part that
/// applies, in its order. Returns after the coverage-gap line; the caller adds
/// the source passages (`--show-source`), which need the store.
pub(crate) fn write_semantic(
    out: &mut impl Write,
    err: &mut impl Write,
    response: &QueryResponse,
    layout: &Layout,
) -> io::Result<()> {
    if layout.show_particles || (response.answer_refused && !response.particles.is_empty()) {
        write_hit_table(out, response, layout.now)?;
    }
    if layout.contestedness {
        write_contestedness(out, err, response)?;
    }
    if let Some(degraded) = &response.ranking_degraded {
        writeln!(err, "⚠  {degraded}")?;
    }
    if let Some(error) = &response.answer_generation_error {
        writeln!(err, "⚠  Answer generation failed: {error}")?;
        if let Some(cause) = response.answer_generation_error_cause {
            writeln!(err, "   {}: {}", wire(&cause), failure_advice(cause))?;
        }
    }
    writeln!(out, "{}", response.answer)?;
    write_attribution(out, err, response)?;
    write_claim_coverage(out, err, response)?;
    write_contested_badges(out, response)?;
    if layout.as_of {
        write_as_of_notes(out, err, response)?;
    }
    write_window_notes(out, response)?;
    if let Some(warning) = &response.truncation_warning {
        writeln!(err, "\n⚠  {warning}")?;
    }
    if !response.coverage_gaps.is_empty() {
        writeln!(
            err,
            "\n⚠  Coverage gap: {} entries not yet extracted.",
            response.coverage_gaps.len()
        )?;
    }
    Ok(())
}

/// The hit table (`--show-particles`, or the nearest beliefs under a refused
/// answer): confidence, effective confidence, age, extractor and content.
fn write_hit_table(
    out: &mut impl Write,
    response: &QueryResponse,
    now: Timestamp,
) -> io::Result<()> {
    if response.answer_refused {
        writeln!(out, "Nearest beliefs — likely unrelated:")?;
    }
    writeln!(
        out,
        "{:>5}  {:>5}  {:>6}  {:<28}  CONTENT",
        "CONF", "EFF", "AGE", "EXTRACTOR"
    )?;
    writeln!(out, "{}", "-".repeat(100))?;
    for (position, (particle, eff)) in response
        .particles
        .iter()
        .zip(&response.effective_confidences)
        .enumerate()
    {
        let published = response
            .content_published_ats
            .get(position)
            .copied()
            .flatten();
        let extractor = particle
            .extractor_ref
            .as_ref()
            .map_or("unknown", |r| r.name.as_str());
        writeln!(
            out,
            "{:>5.2}  {:>5.2}  {:>6}  {:<28}  {}",
            particle.confidence.value,
            eff,
            age(published, now),
            extractor,
            cut(&particle.content, 60)
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// `--contestedness`: each hit's spread of effective confidence across the
/// policy set, or (on stderr) why there is none.
fn write_contestedness(
    out: &mut impl Write,
    err: &mut impl Write,
    response: &QueryResponse,
) -> io::Result<()> {
    if !response.contestedness.is_empty() {
        writeln!(
            out,
            "Contestedness (spread of effective confidence across your policy set):"
        )?;
        for (particle, reading) in response.particles.iter().zip(&response.contestedness) {
            let mut renderings: Vec<_> = reading.renderings.iter().collect();
            renderings.sort_by(|a, b| {
                b.effective_confidence
                    .total_cmp(&a.effective_confidence)
                    .then_with(|| a.policy.cmp(&b.policy))
            });
            let attributed: Vec<String> = renderings
                .iter()
                .map(|r| format!("{}:{:.2}", r.policy, r.effective_confidence))
                .collect();
            writeln!(
                out,
                "  {:>5.2}  {:<50}  [{}]",
                reading.spread,
                cut(&particle.content, 50),
                attributed.join(", ")
            )?;
        }
        writeln!(out)?;
    } else {
        writeln!(
            err,
            "Contestedness unavailable: fewer than two policies configured (adopt a lens with \
             `particles trust lens adopt`).\n"
        )?;
    }
    Ok(())
}

/// The claim-coverage line of a claim-matched answer, and (on stderr) the
/// claims its comparison excluded.
fn write_claim_coverage(
    out: &mut impl Write,
    err: &mut impl Write,
    response: &QueryResponse,
) -> io::Result<()> {
    if let Some(coverage) = &response.claim_coverage {
        let pct = if coverage.active_total > 0 {
            100.0 * coverage.with_claims as f64 / coverage.active_total as f64
        } else {
            0.0
        };
        writeln!(
            out,
            "Matched against the {} of {} ACTIVE particles carrying a structured claim (store coverage {pct:.0}%).",
            coverage.with_claims, coverage.active_total
        )?;
        if coverage.not_normalizable_excluded > 0 {
            writeln!(
                err,
                "⚠  {} claim(s) excluded from the object comparison because their object would \
                 not normalize to a comparable value.",
                coverage.not_normalizable_excluded
            )?;
        }
        if coverage.below_min_effective_confidence > 0 {
            writeln!(
                err,
                "⚠  {} claim(s) excluded by min_effective_confidence.",
                coverage.below_min_effective_confidence
            )?;
        }
    }
    Ok(())
}

/// A line per contested hit, then the last caveat any badge carries.
fn write_contested_badges(out: &mut impl Write, response: &QueryResponse) -> io::Result<()> {
    let mut caveat = None;
    for (particle, badge) in response.particles.iter().zip(&response.contested) {
        let Some(badge) = badge else { continue };
        let versus = badge
            .inconsistency_id
            .as_deref()
            .map(|id| format!(" (vs. p-{})", cut(id, 8)))
            .unwrap_or_default();
        writeln!(
            out,
            "⚠ contested ({}) — {}{versus}",
            badge.bases.join(", "),
            cut(&particle.content, 60)
        )?;
        if badge.caveat.is_some() {
            caveat = badge.caveat.as_deref();
        }
    }
    if let Some(caveat) = caveat {
        writeln!(out, "  note: {caveat}")?;
    }
    Ok(())
}

/// `--as-of`: a retirement line under each hit retired since, and (on stderr)
/// how many retired particles could not be dated.
fn write_as_of_notes(
    out: &mut impl Write,
    err: &mut impl Write,
    response: &QueryResponse,
) -> io::Result<()> {
    for (particle, note) in response.particles.iter().zip(&response.as_of_notes) {
        let Some(note) = note else { continue };
        let reason = note
            .status_reason
            .map(|r| format!(" ({})", wire(&r)))
            .unwrap_or_default();
        let mut line = format!(
            "↳ {} — now {}{reason}, retired {} [basis: {}]",
            cut(&particle.content, 60),
            wire(&note.status),
            note.retired_at.python_isoformat(),
            wire(&note.basis)
        );
        if let Some(successor) = &note.successor {
            line.push_str(&format!(
                "; superseded by {}: {}",
                cut(&successor.id, 8),
                cut(&successor.content, 60)
            ));
        }
        writeln!(out, "{line}")?;
    }
    if response.as_of_excluded_undatable > 0 {
        writeln!(
            err,
            "\n⚠  {} retired particle(s) whose retirement time is not reconstructible were \
             excluded from this as-of view.",
            response.as_of_excluded_undatable
        )?;
    }
    Ok(())
}

/// The grounded answer's footer: the count of each kind, then every cited
/// particle once under the handle the answer cites it by; invalid citations are
/// a warning on stderr.
fn write_attribution(
    out: &mut impl Write,
    err: &mut impl Write,
    response: &QueryResponse,
) -> io::Result<()> {
    let Some(attribution) = &response.answer_attribution else {
        return Ok(());
    };
    // Every particle the composer was shown: each hit and, under a NARRATIVE
    // hit, its constituents, first occurrence kept.
    let mut shown: Vec<&Particle> = Vec::new();
    for hit in &response.particles {
        let mut group = vec![hit];
        if hit.particle_type == ParticleType::Narrative {
            if let Some(members) = response.narrative_constituents.get(&hit.id) {
                group.extend(members);
            }
        }
        for particle in group {
            if !shown.iter().any(|seen| seen.id == particle.id) {
                shown.push(particle);
            }
        }
    }
    let handles = particles_answer::Handles::from_ids(shown.iter().map(|p| p.id.as_str()));
    let counts: Vec<String> = [
        AttributionKind::Cited,
        AttributionKind::Inference,
        AttributionKind::Background,
        AttributionKind::Unattributed,
    ]
    .into_iter()
    .map(|kind| {
        let n = attribution
            .sentences
            .iter()
            .filter(|s| s.kind == kind)
            .count();
        format!("{n} {}", wire(&kind))
    })
    .collect();
    writeln!(out, "\nAttribution: {}", counts.join(" · "))?;
    let mut cited: Vec<&str> = Vec::new();
    for id in attribution.sentences.iter().flat_map(|s| &s.cited_ids) {
        if !cited.contains(&id.as_str()) {
            cited.push(id);
        }
    }
    for id in cited {
        if let (Some(particle), Some(handle)) = (shown.iter().find(|p| p.id == id), handles.get(id))
        {
            writeln!(out, "  [{handle}] {}", cut(&particle.content, 80))?;
        }
    }
    let invalid: usize = attribution
        .sentences
        .iter()
        .map(|s| s.invalid_citations.len())
        .sum();
    if invalid > 0 {
        writeln!(
            err,
            "⚠  {invalid} citation(s) named a particle that was not retrieved for this answer. \
             A sentence left with no valid citation is labelled [unattributed]."
        )?;
    }
    Ok(())
}

/// `reading: 2020-03-15 → 2021-01-01 [valid_until]`, as the window notes print
/// a hit's place in the window.
fn window_label(hit: &WindowHit) -> String {
    let reading = particles_pytext::lower(&wire(&hit.reading)).replace('_', " ");
    let mut span = hit.valid_from.date_text();
    if let Some(closed) = hit.closed_at {
        let basis = hit.close_basis.as_ref().map(wire).unwrap_or_default();
        span.push_str(&format!(" → {} [{basis}]", closed.date_text()));
    } else if hit.valid_kind.as_ref().map(wire).as_deref() == Some("STATE") {
        span.push_str(" → open");
    }
    format!("{reading}: {span}")
}

/// The per-hit window readings on a question path and the window's coverage line.
fn write_window_notes(out: &mut impl Write, response: &QueryResponse) -> io::Result<()> {
    if response.window.is_none() {
        return Ok(());
    }
    if !response.window_hits.is_empty()
        && !response.particles.is_empty()
        && !response.answer.is_empty()
    {
        for (particle, hit) in response.particles.iter().zip(&response.window_hits) {
            let Some(hit) = hit else { continue };
            let mut line = format!("↳ {} — {}", cut(&particle.content, 60), window_label(hit));
            if let Some(retired) = &hit.retired {
                line.push_str(&format!("; retired {}", wire(&retired.status)));
                if let Some(reason) = retired.status_reason {
                    line.push_str(&format!(" ({})", wire(&reason)));
                }
                if let Some(successor) = &retired.successor {
                    line.push_str(&format!(", superseded by {}", cut(&successor.id, 8)));
                }
            }
            if let Some(restates) = &hit.restates {
                line.push_str(&format!("; restates p-{}", cut(restates, 8)));
            }
            writeln!(out, "{line}")?;
        }
    }
    if let Some(coverage) = &response.window_coverage {
        writeln!(
            out,
            "Window: {} of {} dated claims admitted; {} ACTIVE claims undated, {} unkinded, {} \
             retired admitted, {} restated.",
            coverage.admitted,
            coverage.candidates,
            coverage.undated,
            coverage.unkinded,
            coverage.retired_admitted,
            coverage.restated
        )?;
    }
    Ok(())
}

/// How the passage was found, spelled out as the reference's CLI spells it.
fn match_label(passage: &SourcePassage) -> String {
    match passage.match_kind {
        "EXACT" => "exact: the chunk the extractor saw, verified by its recorded hash".to_owned(),
        "LOCATED" => format!(
            "located: best term overlap with the belief ({:.0}%); not hash-verified",
            passage.locate_overlap.unwrap_or(0.0) * 100.0
        ),
        "WHOLE" => "whole source: no single passage stood out".to_owned(),
        _ => "unavailable".to_owned(),
    }
}

/// The passage's identifying lines (Source, Entry, Match, the cut, the note).
fn header_lines(passage: &SourcePassage) -> Vec<String> {
    let mut lines = Vec::new();
    let present = |value: &Option<String>| value.as_deref().is_some_and(|v| !v.is_empty());
    if present(&passage.uri_r) || present(&passage.source_type) {
        let kind = passage
            .source_type
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(|t| format!("  ({t})"))
            .unwrap_or_default();
        let uri = passage
            .uri_r
            .as_deref()
            .filter(|u| !u.is_empty())
            .unwrap_or("(no URI)");
        lines.push(format!("Source:    {uri}{kind}"));
    }
    if let Some(entry) = passage.corpus_entry_id.as_deref().filter(|e| !e.is_empty()) {
        let snapshot = passage
            .snapshot_id
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| format!("  snapshot {}…", cut(s, 8)))
            .unwrap_or_default();
        lines.push(format!("Entry:     {}…{snapshot}", cut(entry, 8)));
    }
    lines.push(format!("Match:     {}", match_label(passage)));
    if passage.truncated {
        lines.push(format!(
            "           (passage cut to {} characters; `particles corpus cat {}` shows the full text)",
            passage.text.chars().count(),
            cut(passage.snapshot_id.as_deref().unwrap_or(""), 8)
        ));
    }
    if let Some(note) = passage.note.as_deref().filter(|n| !n.is_empty()) {
        lines.push(format!("Note:      {note}"));
    }
    lines
}

/// `--show-source`: the passage behind each of `hits` (the top of the `total`
/// hits), or `Match: unavailable` where there is none.
pub(crate) fn write_sources(
    out: &mut impl Write,
    hits: &[Particle],
    total: usize,
    passages: &[Option<SourcePassage>],
) -> io::Result<()> {
    if hits.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "\nSources behind the top {} of {total} hit(s):",
        hits.len()
    )?;
    for (particle, passage) in hits.iter().zip(passages) {
        writeln!(
            out,
            "\n▸ p-{}  {}",
            cut(&particle.id, 8),
            cut(&particle.content, 80)
        )?;
        let Some(passage) = passage else {
            writeln!(out, "  Match:     unavailable")?;
            continue;
        };
        for line in header_lines(passage) {
            writeln!(out, "  {line}")?;
        }
        for line in particles_model::python_splitlines(&passage.text) {
            writeln!(out, "  │ {line}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use particles_model::python_splitlines as splitlines;

    #[test]
    fn splitlines_is_pythons() {
        assert_eq!(
            splitlines("a\r\nb\rc\n\nd\u{2028}e\n"),
            ["a", "b", "c", "", "d", "e"]
        );
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("x\u{85}y\u{c}"), ["x", "y"]);
    }

    #[test]
    fn cuts_count_code_points() {
        assert_eq!(cut("héllo wörld", 4), "héll");
        assert_eq!(cut("short", 60), "short");
    }

    #[test]
    fn age_floors_whole_days_like_timedelta() {
        let now = Timestamp::parse("2026-01-10T12:00:00+00:00").unwrap();
        let day_ago = Timestamp::parse("2026-01-09T12:00:01+00:00").unwrap();
        assert_eq!(age(Some(day_ago), now), "0d");
        let future = Timestamp::parse("2026-01-10T13:00:00+00:00").unwrap();
        assert_eq!(age(Some(future), now), "-1d");
        assert_eq!(age(None, now), "—");
    }

    #[test]
    fn two_decimals_round_the_binary_value_as_python_does() {
        // 0.125 is exact: the tie goes to even, 0.12, in Python and here; 0.675 is
        // 0.67500000000000004 in binary, so both print 0.68 (Python's
        // format(x, '.2f') gives these, checked against the reference's 3.11).
        assert_eq!(format!("{:>5.2}", 0.125_f64), " 0.12");
        assert_eq!(format!("{:>5.2}", 0.675_f64), " 0.68");
        assert_eq!(format!("{:>5.2}", 0.015_f64), " 0.01");
        assert_eq!(format!("{:>5.2}", 1.0_f64), " 1.00");
    }
}
