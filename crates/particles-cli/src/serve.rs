//! The `serve --stdio` verb: a long-running process that keeps the candidate cache
//! warm between requests. One JSON request per line in, one JSON response per line
//! out; a bad request gets `{"error": ...}` and the process keeps serving; end of
//! input ends it.

use std::{
    io::{BufRead, Write},
    path::PathBuf,
};

use anyhow::{Context, Result};
use clap::Args;
use particles_cache::CandidateCache;
use particles_model::{AssertionModality, Timestamp, UncertaintyNature};
use particles_store::Store;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::query::{execute, QueryParams, VectorSource};

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve requests from standard input (one JSON object per line) to standard
    /// output (one JSON object per line).
    #[arg(long, required = true)]
    stdio: bool,

    /// The store file. Opened read-only, once; the cache follows its writes.
    #[arg(long, value_name = "PATH")]
    store: PathBuf,

    #[command(flatten)]
    sidecar: crate::query::SidecarArgs,
}

/// One request line: the `query` options as fields.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    question: Option<String>,
    vector: Option<Vec<f64>>,
    #[serde(default)]
    no_embedding: bool,
    top_k: Option<u32>,
    subject_id: Option<String>,
    min_confidence: Option<f64>,
    now: Option<String>,
    uncertainty_nature: Option<UncertaintyNature>,
    assertion_modality: Option<AssertionModality>,
    recency_window_days: Option<i64>,
    #[serde(default)]
    include_document_meta: bool,
    #[serde(default)]
    include_non_asserted: bool,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    include_ancestors: bool,
    predicate: Option<String>,
    object_eq: Option<String>,
    object_gt: Option<String>,
    object_lt: Option<String>,
    object_contains: Option<String>,
    as_of: Option<String>,
    /// `START..END`, as `--during`.
    during: Option<String>,
    /// `DATE`, as `--on`.
    on: Option<String>,
}

pub(crate) fn run(args: &ServeArgs) -> Result<()> {
    debug_assert!(args.stdio);
    let store = Store::open_read_only(&args.store)?;
    // Start from the sidecar; write it after a rebuild (deltas stay in memory).
    let mut cache = args
        .sidecar
        .cache(&args.store, particles_cache::SidecarWrite::OnRebuild);
    cache.set_huge_pages(true);
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let line = line.context("cannot read standard input")?;
        if line.trim().is_empty() {
            continue;
        }
        let started = std::time::Instant::now();
        let mut response = match answer(&store, &mut cache, &line) {
            Ok(value) => value,
            Err(error) => json!({ "error": format_error(&error) }),
        };
        response["elapsed_seconds"] = json!(started.elapsed().as_secs_f64());
        serde_json::to_writer(&mut out, &response)?;
        writeln!(out)?;
        out.flush()?;
        cache.persist(&args.store);
        for note in cache.take_notes() {
            eprintln!("note: {note}");
        }
    }
    Ok(())
}

fn format_error(error: &anyhow::Error) -> String {
    error
        .chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

fn answer(store: &Store, cache: &mut CandidateCache, line: &str) -> Result<Value> {
    let request: Request =
        serde_json::from_str(line).context("the request is not a valid JSON request object")?;
    let vector = match (request.vector, request.no_embedding) {
        (Some(_), true) => anyhow::bail!("give either `vector` or `no_embedding`, not both"),
        (Some(values), false) => VectorSource::Given(values.into_iter().map(|v| v as f32).collect()),
        (None, true) => VectorSource::None,
        (None, false) => anyhow::bail!(
            "no query vector: give `vector` (384 floats) or set `no_embedding` to rank by effective confidence"
        ),
    };
    let now = match request.now {
        Some(text) => Some(Timestamp::parse(&text).map_err(|_| {
            anyhow::anyhow!(
                "`now` {text:?} is not an instant; use RFC 3339, e.g. 2026-01-31T12:00:00Z"
            )
        })?),
        None => None,
    };
    let as_of = match request.as_of {
        Some(text) => Some(Timestamp::parse(&text).map_err(|_| {
            anyhow::anyhow!(
                "`as_of` {text:?} is not an instant; use RFC 3339, e.g. 2024-01-31T12:00:00Z"
            )
        })?),
        None => None,
    };
    let window = match (request.during, request.on) {
        (Some(_), Some(_)) => anyhow::bail!("give either `during` or `on`, not both"),
        (Some(during), None) => Some(
            crate::query::parse_during(&during).map_err(|e| anyhow::anyhow!("`during`: {e}"))?,
        ),
        (None, Some(on)) => {
            Some(crate::query::parse_on(&on).map_err(|e| anyhow::anyhow!("`on`: {e}"))?)
        }
        (None, None) => None,
    };
    let params = QueryParams {
        question: request.question,
        vector,
        top_k: request.top_k.unwrap_or(particles_model::DEFAULT_TOP_K),
        subject_id: request.subject_id,
        min_confidence: request.min_confidence.unwrap_or(0.0),
        uncertainty_nature: request.uncertainty_nature,
        assertion_modality: request.assertion_modality,
        recency_window_days: request.recency_window_days,
        include_document_meta: request.include_document_meta,
        include_non_asserted: request.include_non_asserted,
        tags: request.tags,
        include_ancestors: request.include_ancestors,
        claims: particles_rank::ClaimFilters {
            predicate: request.predicate,
            object_eq: request.object_eq,
            object_gt: request.object_gt,
            object_lt: request.object_lt,
            object_contains: request.object_contains,
        },
        as_of,
        window,
        now,
    };
    let answer = execute(store, cache, params)?;
    let mut value = answer.json;
    value["cache"] = json!({
        "route": cache.last_route().map(|r| format!("{r:?}")),
        "rows": cache.cached_rows(),
        "heap_bytes": cache.heap_bytes(),
    });
    Ok(value)
}
