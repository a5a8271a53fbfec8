//! The query-latency benchmark of particles-rs, cell for cell the protocol of the
//! reference's harness (linkedparticles 1.214.1, `benchmark query-latency`), and
//! side by side with it.
//!
//! A run ([`run`]) plans cells per store size and variant (unfiltered,
//! subject-filtered): one-shot cells (a fresh process, one question) and a warm
//! cell (one process, an untimed warm-up, then timed questions under a budget).
//! Each cell runs in a child process started through a [`CellCommand`], the
//! `particles-rs` binary re-executing itself with a hidden verb that calls
//! [`run_cell`]; the parent samples the child's memory and kills it at the time
//! limit, on swap growth or on low disk. Stores come from the seeded generator
//! (the reference's schema and shape, written through the store's writer) or,
//! side by side, from the reference's generator, and then the reference's own
//! harness runs on copies of the same files after a check that both engines rank
//! the first question alike. [`render_report`] writes the Markdown page, the
//! ratio tables and the SVG plots.
//!
//! Results are in the reference's `CellResult` JSON schema, so the reference's
//! own `report` reads a work directory's `cells/` too. Our one-shot kinds that
//! the reference's harness has no mode for (`first`, `cold-evicted`) are written
//! to `cells-extra/` instead: the reference validates `spec.mode` as `cold` or
//! `warm` and reads only `cells/`, while [`render_report`] reads both.
//!
//! `benchmark serve-load` lives here too: [`load`] is the open-loop load
//! generator for an HTTP engine (Poisson arrivals, latency from the scheduled
//! send, the server's `Server-Timing` read back), and [`serve_load::run`] the
//! driver that starts the engines (ours, the reference's beside it, a writer
//! through the reference's write route) and writes the results.
//!
//! Every figure comes from one definition: percentiles from
//! [`stats::quantile`] (NumPy's default), process and machine readings from
//! one `/proc` module (`probe`), plots from one SVG writer (`plot`).
//!
//! This crate measures and prints progress to stderr (the tables it writes go
//! to the caller too); it reads stores only through `particles-store`,
//! `particles-cache` and `particles-query`.
//!
//! ```no_run
//! use particles_bench::{render_report, run, CellCommand, RunOptions};
//! let options = RunOptions::new(
//!     "bench-work".into(),
//!     CellCommand {
//!         program: std::env::current_exe()?,
//!         args: vec!["benchmark".into(), "query-latency".into(), "cell".into()],
//!     },
//! );
//! run(&options)?;
//! render_report("bench-work".as_ref(), "bench-work/report".as_ref())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
// One function advises the kernel about page-cache pages (`posix_fadvise`); it is
// the only place allowed an `unsafe` block.
#![deny(unsafe_code)]

mod cell;
mod digest;
mod environment;
mod error;
mod generator;
pub mod load;
mod plot;
mod probe;
mod questions;
mod reference_load;
mod replica_load;
mod report;
mod runner;
pub mod serve_load;
pub mod stats;
mod writer_load;

pub use crate::{
    cell::{mark_process_start, run_cell},
    digest::{render_page as render_digest_page, run_digest, DigestOptions, DigestResult},
    error::{Error, Result},
    plot::{log_log_svg, PlotLine},
    report::render_report,
    runner::{parse_sizes, run, CellCommand, RunOptions, Variant},
};
