//! `particles-rs benchmark query-latency run|report`: the query-latency benchmark,
//! cell for cell the reference harness's protocol, and side by side with it.

mod cell;
mod environment;
pub(crate) mod generator;
mod questions;
mod report;
mod runner;

use std::{path::PathBuf, sync::OnceLock, time::Instant};

use anyhow::Result;
use clap::{Args, Subcommand};

static PROCESS_START: OnceLock<Instant> = OnceLock::new();

/// Marks the process start, so a cell reports start-up apart from its queries.
pub(crate) fn mark_process_start() {
    PROCESS_START.get_or_init(Instant::now);
}

/// Seconds from process start to now (the cell's `import_seconds`: for a Rust
/// binary, loading and argument parsing).
fn process_start_seconds() -> f64 {
    PROCESS_START
        .get()
        .map_or(0.0, |t| t.elapsed().as_secs_f64())
}

#[derive(Debug, Args)]
pub(crate) struct BenchmarkArgs {
    #[command(subcommand)]
    command: BenchmarkCommand,
}

#[derive(Debug, Subcommand)]
enum BenchmarkCommand {
    /// Query latency over seeded synthetic stores, cold and warm, unfiltered and
    /// subject-filtered.
    QueryLatency(QueryLatencyArgs),
}

#[derive(Debug, Args)]
struct QueryLatencyArgs {
    #[command(subcommand)]
    command: QueryLatencyCommand,
}

#[derive(Debug, Subcommand)]
enum QueryLatencyCommand {
    /// Build (or reuse) the stores and run every cell, each in its own process.
    /// Resumable: finished cells are kept.
    Run(RunArgs),
    /// Render the Markdown page and the plots of a work directory.
    Report(ReportArgs),
    /// Run one cell (the orchestrator starts this; not for direct use).
    #[command(hide = true)]
    Cell { spec: PathBuf },
}

/// The reference harness's flags, with its defaults, plus the side-by-side ones.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Where stores, cell specs, results and logs go.
    #[arg(long, default_value = "bench-work")]
    pub(crate) work_dir: PathBuf,
    /// Comma-separated store sizes (ACTIVE beliefs), with k and M suffixes.
    #[arg(long, default_value = "10k,56k,100k,300k,1M")]
    pub(crate) sizes: String,
    /// The store and question seed.
    #[arg(long, default_value_t = 20261017)]
    pub(crate) seed: u64,
    /// Fresh-process repetitions per size and variant.
    #[arg(long, default_value_t = 5)]
    pub(crate) cold_runs: usize,
    /// Timed questions in a warm cell.
    #[arg(long, default_value_t = 50, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) warm_questions: usize,
    /// Seconds a warm cell may spend on its questions (0 = no budget).
    #[arg(long, default_value_t = 2400.0)]
    pub(crate) warm_budget: f64,
    /// Encode each question in the cell (the default; its load is reported apart).
    #[arg(long, overrides_with = "no_encoder")]
    pub(crate) encoder: bool,
    /// Use the fixed question vectors instead of encoding (required side by side).
    #[arg(long, overrides_with = "encoder")]
    pub(crate) no_encoder: bool,
    /// Which variants: unfiltered and/or subject (repeatable).
    #[arg(long, default_values = ["unfiltered", "subject"], value_parser = ["unfiltered", "subject"])]
    pub(crate) variant: Vec<String>,
    /// Seconds before a cell is killed.
    #[arg(long, default_value_t = 7200.0)]
    pub(crate) cell_timeout: f64,
    /// Kill a cell when system swap grows by more than this many GiB.
    #[arg(long, default_value_t = 8.0)]
    pub(crate) swap_guard_gib: f64,
    /// Run again the cells whose result is a failure.
    #[arg(long)]
    pub(crate) retry_failed: bool,
    /// Also run the reference's own harness on copies of the same store files,
    /// interleaved per size and variant (stores from the reference generator).
    #[arg(long)]
    pub(crate) side_by_side: bool,
    /// The reference venv (default: .reference/venv).
    #[arg(long, value_name = "PATH")]
    pub(crate) reference_venv: Option<PathBuf>,
}

impl RunArgs {
    /// Whether cells encode their questions (the reference's default).
    pub(crate) fn encoder(&self) -> bool {
        !self.no_encoder
    }
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// The work directory of a run.
    #[arg(long, default_value = "bench-work")]
    work_dir: PathBuf,
    /// Where the Markdown page, the plots and the per-size cell files go.
    #[arg(long, default_value = "bench-work/report")]
    export_dir: PathBuf,
}

pub(crate) fn run(args: BenchmarkArgs) -> Result<()> {
    match args.command {
        BenchmarkCommand::QueryLatency(args) => match args.command {
            QueryLatencyCommand::Run(args) => runner::run(&args),
            QueryLatencyCommand::Report(args) => {
                let page = report::run(&args.work_dir, &args.export_dir)?;
                println!("{}", page.display());
                Ok(())
            }
            QueryLatencyCommand::Cell { spec } => cell::run(&spec),
        },
    }
}
