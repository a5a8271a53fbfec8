//! The `serve` verb. `serve --http` is the HTTP engine (particles-server; see
//! `server_cmd`). `serve --stdio`: a long-running process that keeps the candidate cache
//! warm between requests. One JSON request per line in, one JSON answer per line
//! out. A request is the reference's `QueryRequest` JSON plus the envelope fields
//! `vector`, `no_embedding` and `now`; without a vector the question is encoded
//! (the encoder is loaded once, on the first question that needs it), and a
//! vector or `no_embedding` may stand in for the question. The answer is the hit
//! line `query --json` prints, or with `"response": true` (and always for a
//! deterministic mode) `{"response": QueryResponse, "journal_seq", "cache",
//! "elapsed_seconds"}`. Both go through the one engine. A bad request
//! gets `{"error": ..., "detail": [...]}` (the detail in pydantic's shape when the
//! request failed validation) and the process keeps serving; end of input ends it.

use std::io::{BufRead, Write};

use anyhow::{Context, Result};
use clap::Args;
use particles_engine::{Detail, Engine};
use particles_model::{Envelope, QueryRequest, Timestamp};
use serde_json::{json, Value};

use crate::output::AnswerJson;

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("transport").required(true).args(["stdio", "http"]))]
pub(crate) struct ServeArgs {
    /// Serve requests from standard input (one JSON object per line) to standard
    /// output (one JSON object per line).
    #[arg(long)]
    stdio: bool,

    /// Serve the reference's HTTP API (POST /query, GET /health, the particle
    /// reads); every other route is forwarded to --upstream. Point the reference's
    /// tools at it with PARTICLES_ENGINE_BASE_URL=http://ADDR.
    #[arg(long)]
    http: bool,

    #[cfg(feature = "server")]
    #[command(flatten)]
    http_args: crate::server_cmd::HttpArgs,

    /// The store, as `query --store` takes it: a handle of the configuration or a
    /// file; repeat it for a federated query on every line. Without it, the
    /// configured default store. Each store is opened read-only, once, with its
    /// own cache that follows its writes.
    #[arg(long = "store", value_name = "HANDLE|PATH")]
    stores: Vec<String>,

    #[command(flatten)]
    model: crate::encode::ModelDirArg,

    #[command(flatten)]
    sidecar: crate::query::SidecarArgs,

    #[command(flatten)]
    scan: crate::query::ScanArgs,

    #[command(flatten)]
    log: crate::logging::LogArgs,
}

pub(crate) fn run(args: &ServeArgs, config: &crate::config_cmd::Configured) -> Result<()> {
    crate::logging::init(&args.log, if args.http { "info" } else { "warn" })?;
    if args.http {
        #[cfg(feature = "server")]
        return crate::server_cmd::run_http(
            &args.http_args,
            &args.stores,
            &args.sidecar,
            &args.scan,
            args.model.model_dir.as_deref(),
            config,
        );
        #[cfg(not(feature = "server"))]
        return Err(crate::UsageError(
            "this build has no HTTP server (built without the `server` feature); \
             install with the default features for `serve --http` and `mcp`"
                .into(),
        )
        .into());
    }
    let selection = config.stores(&args.stores)?;
    // Start from the sidecars. The encoder is loaded on the first question
    // that needs it.
    let engine = std::sync::Arc::new(crate::engine::build(
        config,
        &selection,
        &args.sidecar,
        args.model.model_dir.as_deref(),
        crate::engine::Lifetime::Stdio(&args.scan),
    )?);
    // As `serve --http` and `mcp` do: a state this process built, compacted
    // or gave a half copy is written to the sidecar behind it, on a thread of
    // its own, then served from the file and the build's pages handed back;
    // and another process's commit is caught up with between lines. The
    // cache's notes are logged by that thread as it polls. Writing after each
    // line instead held the next line for the write (7 s at 1M beliefs) and
    // kept the built state's 2.9 GiB until the end of input.
    let following = engine.follow_writes();
    tracing::debug!(
        writes = following.writes,
        write_behind = following.write_behind,
        "the stores' writes are followed"
    );
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let line = line.context("cannot read standard input")?;
        if line.trim().is_empty() {
            continue;
        }
        let started = std::time::Instant::now();
        let response = answer(&engine, &selection, &line, started);
        serde_json::to_writer(&mut out, &response)?;
        writeln!(out)?;
        out.flush()?;
        if !following.write_behind {
            // No write-behind (every store a replica or read uncached, or its
            // thread could not start): a rebuilt state is written after its
            // line, as before.
            persist(&engine);
        }
    }
    // What the write-behind has not written yet (a state moved by the last
    // lines, a store it does not follow) is written now.
    persist(&engine);
    Ok(())
}

/// Writes the engine's unwritten states to their sidecars; each of the
/// cache's notes is a `note:` line on standard error.
fn persist(engine: &Engine) {
    for note in engine.persist() {
        eprintln!("note: {note}");
    }
}

/// Answers one request line; every failure becomes an error object.
fn answer(
    engine: &Engine,
    selection: &particles_engine::StoreSelection,
    line: &str,
    started: std::time::Instant,
) -> Value {
    let failure = |error: String, detail: Value| {
        json!({
            "error": error,
            "detail": detail,
            "elapsed_seconds": started.elapsed().as_secs_f64(),
        })
    };
    let body: Value = match serde_json::from_str(line) {
        Ok(body) => body,
        Err(e) => return failure(format!("the request is not valid JSON: {e}"), Value::Null),
    };
    let envelope = match Envelope::from_json(&body) {
        Ok(envelope) => envelope,
        Err(errors) => {
            return failure(
                format!("invalid envelope field: {errors}"),
                serde_json::to_value(&errors).unwrap_or(Value::Null),
            )
        }
    };
    let whole = match body.get("response") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(other) => {
            return failure(
                format!("`response` must be true or false, not {other}"),
                Value::Null,
            )
        }
    };
    let request = match QueryRequest::from_json_with(&body, Timestamp::now(), &envelope) {
        Ok(request) => request,
        Err(errors) => {
            return failure(
                format!("Invalid query request: {errors}"),
                serde_json::to_value(&errors).unwrap_or(Value::Null),
            )
        }
    };
    let detail = if whole {
        Detail::Response
    } else {
        Detail::Ranking
    };
    let answered = match engine.ask(&request, &envelope, detail) {
        Ok(answered) => answered,
        Err(error) => {
            let error = crate::query::engine_error(error, selection);
            return failure(crate::engine::format_error(&error), Value::Null);
        }
    };
    let cache = engine.cache_report();
    let elapsed = started.elapsed().as_secs_f64();
    match AnswerJson::new(&answered, &request, cache) {
        // The hit line, unless the whole response was asked for (a
        // deterministic mode has no hits: its response is its answer).
        Some(hits) if !whole => serde_json::to_value(hits.with_elapsed(elapsed))
            .unwrap_or_else(|e| json!({ "error": e.to_string() })),
        _ => json!({
            "response": answered.response,
            "journal_seq": answered.journal_seq,
            "cache": cache,
            "elapsed_seconds": elapsed,
        }),
    }
}
