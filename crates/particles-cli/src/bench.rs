//! `particles-rs benchmark query-latency run|report`: the flags of the
//! query-latency benchmark and a dispatch into `particles-bench`, which holds the
//! benchmark itself. Cells run as child processes of this binary, through the
//! hidden `cell` verb.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use particles_bench::{CellCommand, RunOptions, Variant};

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
    /// Open-loop load on the HTTP engine: Poisson arrivals at each rate, latency
    /// from the scheduled send, p50/p99/p99.9, errors and peak RSS per rate
    ServeLoad(crate::serve_load::LoadArgs),
    /// The session digest (GET /digest/{store}) on the generator's stores:
    /// ours and the reference's build_digest_located in one run, same file,
    /// same frozen instant, texts compared byte for byte
    Digest(DigestArgs),
}

/// `benchmark digest` flags.
#[derive(Debug, Args)]
struct DigestArgs {
    /// Where the stores and `digest.json` go (stores of query-latency's
    /// generator are reused when present).
    #[arg(long, default_value = "bench-work")]
    work_dir: PathBuf,
    /// Comma-separated store sizes (ACTIVE beliefs), with k and M suffixes.
    #[arg(long, default_value = "100k,1M")]
    sizes: String,
    /// The store seed.
    #[arg(long, default_value_t = 20261017)]
    seed: u64,
    /// Our digests per size.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The reference's digests per size (0: ours alone).
    #[arg(long, default_value_t = 1)]
    reference_runs: usize,
    /// The reference's virtual environment.
    #[arg(long, default_value = ".reference/venv")]
    reference_venv: PathBuf,
    /// Write the results table (Markdown) to this file too.
    #[arg(long, value_name = "FILE")]
    export: Option<PathBuf>,
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
struct RunArgs {
    /// Where stores, cell specs, results and logs go.
    #[arg(long, default_value = "bench-work")]
    work_dir: PathBuf,
    /// Comma-separated store sizes (ACTIVE beliefs), with k and M suffixes.
    #[arg(long, default_value = "10k,56k,100k,300k,1M")]
    sizes: String,
    /// The store and question seed.
    #[arg(long, default_value_t = 20261017)]
    seed: u64,
    /// Fresh-process repetitions per size and variant.
    #[arg(long, default_value_t = 5)]
    cold_runs: usize,
    /// Timed questions in a warm cell.
    #[arg(long, default_value_t = 50, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    warm_questions: usize,
    /// Seconds a warm cell may spend on its questions (0 = no budget).
    #[arg(long, default_value_t = 2400.0)]
    warm_budget: f64,
    /// Encode each question in the cell (the default; its load is reported apart).
    #[arg(long, overrides_with = "no_encoder")]
    encoder: bool,
    /// Use the fixed question vectors instead of encoding (required side by side).
    #[arg(long, overrides_with = "encoder")]
    no_encoder: bool,
    /// Which variants: unfiltered and/or subject (repeatable).
    #[arg(long, value_enum, default_values = ["unfiltered", "subject"])]
    variant: Vec<VariantArg>,
    /// Seconds before a cell is killed.
    #[arg(long, default_value_t = 7200.0)]
    cell_timeout: f64,
    /// Kill a cell when system swap grows by more than this many GiB.
    #[arg(long, default_value_t = 8.0)]
    swap_guard_gib: f64,
    /// Run again the cells whose result is a failure.
    #[arg(long)]
    retry_failed: bool,
    /// Also run the reference's own harness on copies of the same store files,
    /// interleaved per size and variant (stores from the reference generator).
    #[arg(long)]
    side_by_side: bool,
    /// The reference venv (default: .reference/venv).
    #[arg(long, value_name = "PATH")]
    reference_venv: Option<PathBuf>,
}

/// `--variant`'s values (the reference harness's names).
#[derive(Debug, Clone, Copy, ValueEnum)]
enum VariantArg {
    Unfiltered,
    Subject,
}

impl From<VariantArg> for Variant {
    fn from(variant: VariantArg) -> Variant {
        match variant {
            VariantArg::Unfiltered => Variant::Unfiltered,
            VariantArg::Subject => Variant::Subject,
        }
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

/// The words before the spec path that make this binary run one cell.
const CELL_VERB: [&str; 3] = ["benchmark", "query-latency", "cell"];

pub(crate) fn run(args: BenchmarkArgs, config: Option<&std::path::Path>) -> Result<()> {
    match args.command {
        BenchmarkCommand::ServeLoad(args) => crate::serve_load::run(&args, config),
        BenchmarkCommand::Digest(args) => {
            let options = particles_bench::DigestOptions {
                sizes: particles_bench::parse_sizes(&args.sizes)
                    .map_err(|reason| crate::UsageError(format!("--sizes: {reason}")))?,
                work_dir: args.work_dir,
                seed: args.seed,
                runs: args.runs,
                reference_runs: args.reference_runs,
                reference_venv: args.reference_venv,
                export: args.export,
            };
            let results = particles_bench::run_digest(&options)?;
            print!("{}", particles_bench::render_digest_page(&results));
            Ok(())
        }
        BenchmarkCommand::QueryLatency(args) => match args.command {
            QueryLatencyCommand::Run(args) => {
                let cell_command = CellCommand {
                    program: std::env::current_exe()
                        .context("cannot find this binary to start benchmark cells")?,
                    args: CELL_VERB.map(str::to_owned).to_vec(),
                };
                let options = RunOptions {
                    sizes: args.sizes,
                    seed: args.seed,
                    cold_runs: args.cold_runs,
                    warm_questions: args.warm_questions,
                    warm_budget: args.warm_budget,
                    encoder: !args.no_encoder,
                    variants: args.variant.into_iter().map(Variant::from).collect(),
                    cell_timeout: args.cell_timeout,
                    swap_guard_gib: args.swap_guard_gib,
                    retry_failed: args.retry_failed,
                    side_by_side: args.side_by_side,
                    reference_venv: args.reference_venv,
                    command_line: std::env::args().skip(1).collect(),
                    ..RunOptions::new(args.work_dir, cell_command)
                };
                Ok(particles_bench::run(&options)?)
            }
            QueryLatencyCommand::Report(args) => {
                let page = particles_bench::render_report(&args.work_dir, &args.export_dir)?;
                println!("{}", page.display());
                Ok(())
            }
            QueryLatencyCommand::Cell { spec } => Ok(particles_bench::run_cell(&spec)?),
        },
    }
}
