//! `serve --http` and `mcp`: thin dispatch into particles-server (the `server`
//! feature). The engine is built as every verb builds it (`crate::engine`),
//! with the question encoder loaded once at start.

use std::{path::PathBuf, sync::Arc};

use anyhow::{Context, Result};
use clap::Args;
use particles_engine::Engine;

use crate::config_cmd::Configured;

/// The engine over `--store` (or the configured default store) and the file
/// of its first store.
fn build_engine(
    configured: &Configured,
    stores: &[String],
    sidecar: &crate::query::SidecarArgs,
    scan: &crate::query::ScanArgs,
    model_dir: Option<&std::path::Path>,
) -> Result<(Engine, PathBuf, bool)> {
    let selection = configured.stores(stores)?;
    // One store given as a file stands where the reference's `DATABASE_URL`
    // would: the `default` handle of the digest and the memory projection.
    let file_as_default = selection.targets.len() == 1 && selection.targets[0].handle.is_none();
    let first = selection
        .targets
        .first()
        .map(|t| t.path.clone())
        .context("no store to serve")?;
    crate::logging::started(configured, &selection, sidecar);
    let engine = crate::engine::build(
        configured,
        &selection,
        sidecar,
        model_dir,
        crate::engine::Lifetime::Server(scan),
    )?;
    Ok((engine, first, file_as_default))
}

/// The front ends' backend over `engine`, with `default` naming the served
/// file when it was given as one.
fn backend(
    engine: Engine,
    configured: &Configured,
    store: &std::path::Path,
    file_as_default: bool,
) -> particles_server::Backend {
    let backend = particles_server::Backend::new(Arc::new(engine), &configured.loaded, store);
    if file_as_default {
        backend.with_default_store(store)
    } else {
        backend
    }
}

#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// The address to listen on. Loopback by default; any other address needs
    /// PARTICLES_API_KEY set (bearer auth), as the reference's engine does.
    #[arg(long, value_name = "ADDR", default_value = particles_server::DEFAULT_LISTEN)]
    pub(crate) listen: std::net::SocketAddr,

    /// The reference's engine (`particles engine serve HOST:PORT`), e.g.
    /// http://127.0.0.1:8000: every route not answered here is forwarded to it.
    #[arg(long, value_name = "URL")]
    pub(crate) upstream: Option<String>,

    /// Queries answered at once; more get a 503 until one finishes.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub(crate) max_inflight: usize,

    /// Serve Prometheus metrics (GET /metrics), liveness (GET /livez) and
    /// readiness (GET /readyz: the stores open, the caches at their heads, the
    /// encoder loaded, the upstream answering) on this address, apart from the
    /// reference's API. Off by default.
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics_listen: Option<std::net::SocketAddr>,
}

pub(crate) fn run_http(
    args: &HttpArgs,
    stores: &[String],
    sidecar: &crate::query::SidecarArgs,
    scan: &crate::query::ScanArgs,
    model_dir: Option<&std::path::Path>,
    configured: &Configured,
) -> Result<()> {
    let (engine, store, file_as_default) =
        build_engine(configured, stores, sidecar, scan, model_dir)?;
    let backend = Arc::new(backend(engine, configured, &store, file_as_default));
    let options = particles_server::HttpOptions {
        listen: args.listen,
        upstream: args.upstream.clone(),
        limits: particles_server::Limits {
            max_inflight_queries: args.max_inflight,
            ..Default::default()
        },
        key: particles_server::KeySource::Environment,
        metrics_listen: args.metrics_listen,
        warm: true,
    };
    let key = particles_server::ApiKey::from_value(std::env::var("PARTICLES_API_KEY").ok());
    particles_server::run_http(backend.clone(), options, |server| {
        let address = server.local_addr()?;
        let upstream = server.upstream();
        let auth = match key {
            particles_server::ApiKey::Dev => "disabled (dev mode, loopback only)",
            particles_server::ApiKey::Real(_) => "PARTICLES_API_KEY",
        };
        eprintln!(
            "particles-rs engine on http://{address}  (bearer auth: {auth}; forwarding: {})",
            upstream.unwrap_or("off, other routes get 501")
        );
        eprintln!("Store: {}", store.display());
        if let Some(metrics) = server.metrics_addr() {
            eprintln!("Metrics: http://{metrics}/metrics  (liveness /livez, readiness /readyz)");
        }
        tracing::info!(
            listen = %address,
            metrics = server.metrics_addr().map(|a| a.to_string()),
            upstream,
            bearer_auth = auth,
            encoder = backend.engine().has_encoder(),
            "listening"
        );
        Ok(())
    })?;
    for note in backend.engine().persist() {
        eprintln!("note: {note}");
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The store, as `query --store` takes it (default: the configured store).
    #[arg(long = "store", value_name = "HANDLE|PATH")]
    stores: Vec<String>,

    /// Bind this server to the project of its working directory (the only value
    /// is `cwd`), as the reference's `mcp serve --project-observer cwd` does.
    #[arg(long, value_name = "cwd", value_parser = ["cwd"])]
    project_observer: Option<String>,

    #[command(flatten)]
    model: crate::encode::ModelDirArg,

    #[command(flatten)]
    sidecar: crate::query::SidecarArgs,

    #[command(flatten)]
    scan: crate::query::ScanArgs,

    #[command(flatten)]
    log: crate::logging::LogArgs,
}

pub(crate) fn run_mcp(args: &McpArgs, configured: &Configured) -> Result<()> {
    crate::logging::init(&args.log, "warn")?;
    let (engine, store, file_as_default) = build_engine(
        configured,
        &args.stores,
        &args.sidecar,
        &args.scan,
        args.model.model_dir.as_deref(),
    )?;
    let backend = Arc::new(backend(engine, configured, &store, file_as_default));
    // As `serve --http` does: after another process's commit (the reference's
    // own writes, most often) the cache is brought to the head and the band's
    // sources read before the agent's next question.
    let following = backend.engine().follow_writes();
    tracing::debug!(
        writes = following.writes,
        write_behind = following.write_behind,
        "the stores' writes are followed"
    );
    let options = particles_server::McpOptions {
        project_observer: args
            .project_observer
            .as_ref()
            .map(|_| configured.env.cwd.clone()),
    };
    particles_server::run_mcp_stdio(backend.clone(), options)?;
    for note in backend.engine().persist() {
        eprintln!("note: {note}");
    }
    Ok(())
}
