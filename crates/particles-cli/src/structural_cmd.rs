//! The deterministic modes of the `query` verb: `--count`, `--group-by`,
//! `--predicates`, `--vocabulary`, a claim filter or a window without a question.
//!
//! The flags and their checks are the reference CLI's (`api/cli/query.py`), with
//! its messages; as every usage error here, they exit 2 (the reference exits 1).
//! The answer is the reference's `QueryResponse`: printed whole with `--json`,
//! only the report (indented) with `--vocabulary --format json`, else as text.

use std::io::Write;

use anyhow::Result;
use clap::Args;
use particles_model::{response::QueryResponse, GroupBy, QueryRequest};

use crate::UsageError;

/// The flags of the deterministic modes.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct StructuralArgs {
    /// Deterministic aggregate: the number of matching claims with their
    /// effective-confidence distribution. No question, no model call.
    #[arg(long)]
    count: bool,

    /// Deterministic aggregate: bucket matching claims by `subject`, `predicate`
    /// or `object`, with per-bucket counts and confidence distribution.
    #[arg(long, value_name = "AXIS")]
    group_by: Option<String>,

    /// Explicit confidence floor for the aggregate modes; excluded rows are
    /// disclosed. There is no default floor.
    #[arg(long, value_name = "X")]
    min_effective_confidence: Option<f64>,

    /// List the distinct predicate terms with kind and claim count.
    #[arg(long)]
    predicates: bool,

    /// Report the store's vocabulary: each canonical predicate with its surface
    /// forms, claim count, object shapes, subject classes and alignment.
    #[arg(long)]
    vocabulary: bool,

    /// Output format for --vocabulary: `table` (default) or `json` (the report
    /// alone, indented).
    #[arg(long = "format", value_name = "FORMAT", default_value = "table")]
    format: String,
}

/// Checks the structural flags as the reference's CLI does, in its order
/// (`--format`, then `--during` with `--on`, then the `--group-by` axis), and
/// sets them on `request`.
///
/// # Errors
///
/// A [`UsageError`] with the reference's message.
pub(crate) fn prepare(
    args: &StructuralArgs,
    during_and_on: bool,
    request: &mut QueryRequest,
) -> Result<()> {
    if args.format != "table" && args.format != "json" {
        return Err(UsageError(format!(
            "Unknown --format {}. Valid: table, json.",
            particles_model::python_repr(&args.format)
        ))
        .into());
    }
    if args.format == "json" && !args.vocabulary {
        return Err(UsageError("--format json applies to --vocabulary only.".to_owned()).into());
    }
    if during_and_on {
        return Err(UsageError("--during and --on are alternatives; pass one.".to_owned()).into());
    }
    let group_by = match &args.group_by {
        None => None,
        Some(axis) => Some(parse_axis(axis)?),
    };
    request.count = args.count;
    request.group_by = group_by;
    request.min_effective_confidence = args.min_effective_confidence;
    request.list_predicates = args.predicates;
    request.list_vocabulary = args.vocabulary;
    Ok(())
}

/// `StructuralGroupBy(axis.strip().lower())`.
fn parse_axis(axis: &str) -> Result<GroupBy> {
    match particles_pytext::lower(particles_pytext::strip(axis)).as_str() {
        "subject" => Ok(GroupBy::Subject),
        "predicate" => Ok(GroupBy::Predicate),
        "object" => Ok(GroupBy::Object),
        _ => Err(UsageError(format!(
            "Unknown --group-by axis {}. Valid: subject, predicate, object.",
            particles_model::python_repr(axis)
        ))
        .into()),
    }
}

/// Prints a deterministic mode's response: the vocabulary report alone
/// (indented) with `--vocabulary --format json`, the whole response with
/// `--json`, else the text form.
///
/// # Errors
///
/// When stdout cannot be written.
pub(crate) fn print(
    out: &mut impl Write,
    response: &QueryResponse,
    json: bool,
    args: &StructuralArgs,
) -> Result<()> {
    if args.vocabulary && args.format == "json" {
        if let Some(report) = &response.vocabulary_report {
            serde_json::to_writer_pretty(&mut *out, report)?;
            writeln!(out)?;
        }
    } else if json {
        serde_json::to_writer(&mut *out, response)?;
        writeln!(out)?;
    } else {
        write_text(out, response)?;
    }
    Ok(())
}

/// The text form: the answer sentence, one line per particle (or bucket,
/// predicate term, canonical predicate), then the coverage footer.
fn write_text(out: &mut impl Write, response: &QueryResponse) -> std::io::Result<()> {
    writeln!(out, "{}", response.answer)?;
    for (particle, eff) in response
        .particles
        .iter()
        .zip(&response.effective_confidences)
    {
        let content: String = particle.content.chars().take(80).collect();
        writeln!(out, "{eff:>6.4}  {}  {content}", particle.id)?;
    }
    if let Some(aggregate) = &response.structural_aggregate {
        for bucket in &aggregate.buckets {
            let label = match &bucket.label {
                Some(label) => format!("{label}  [{}]", bucket.key),
                None => bucket.key.clone(),
            };
            writeln!(
                out,
                "{:>6}  {:>5.2}  {:>5.2}  {:>5.2}  {label}",
                bucket.claim_count,
                bucket.min_effective_confidence,
                bucket.median_effective_confidence,
                bucket.max_effective_confidence
            )?;
        }
    }
    for info in &response.predicate_vocabulary {
        writeln!(
            out,
            "{:>6}  {:<7}  {}",
            info.claim_count,
            info.kind.as_str(),
            info.value
        )?;
    }
    if let Some(report) = &response.vocabulary_report {
        for row in &report.predicates {
            writeln!(
                out,
                "{:>6}  {}  [{}]",
                row.claim_count, row.label, row.canonical
            )?;
        }
    }
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
    }
    Ok(())
}
