//! The orchestrator: plans the cells, builds or reuses the stores, runs each cell
//! in its own process under the reference's guards (time limit, swap growth, free
//! disk), resumes from the result files, and, side by side, runs the reference's
//! own harness on copies of the same store files, interleaved per size and
//! variant, after checking that both engines rank the first question alike.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use indicatif::{ProgressBar, ProgressStyle};
use particles_model::Timestamp;
use serde_json::{json, Value};

use crate::{
    cell::CellSpec,
    environment::Environment,
    error::{io_error, read_json, write_json, write_json_atomically, Error, Result},
    generator,
    probe::{self, Process},
    questions::{self, Questions},
};

/// The reference generator's version tag in its file names.
const REFERENCE_GENERATOR: &str = "g1";
const MIN_FREE_DISK: u64 = 4 << 30;

/// How the orchestrator starts one cell process: `program args... SPEC`, where
/// SPEC is the path of the cell's spec file. The process must call
/// [`crate::mark_process_start`] first and then [`crate::run_cell`] on SPEC;
/// `particles-rs` does so for `benchmark query-latency cell SPEC`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellCommand {
    /// The executable (for `particles-rs`, its own path).
    pub program: PathBuf,
    /// The arguments before the spec path.
    pub args: Vec<String>,
}

/// Which queries a group of cells asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// No filter: every ACTIVE row with an embedding is a candidate.
    Unfiltered,
    /// `subject_id` set (the first subject of seeded random particles).
    Subject,
}

impl Variant {
    /// The name in cell ids and specs (the reference's `Variant` values).
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::Unfiltered => "unfiltered",
            Variant::Subject => "subject",
        }
    }
}

/// A run: the reference harness's flags with its defaults (see
/// [`RunOptions::new`]), plus the side-by-side ones.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Where stores, cell specs, results and logs go.
    pub work_dir: PathBuf,
    /// Comma-separated store sizes (ACTIVE beliefs), with k and M suffixes.
    pub sizes: String,
    /// The store and question seed.
    pub seed: u64,
    /// Fresh-process repetitions per size and variant.
    pub cold_runs: usize,
    /// Timed questions in a warm cell (at least 1).
    pub warm_questions: usize,
    /// Seconds a warm cell may spend on its questions (0 = no budget).
    pub warm_budget: f64,
    /// Whether cells encode their questions (otherwise they use the fixed
    /// question vectors; side by side, they must).
    pub encoder: bool,
    /// The variants to run, in order.
    pub variants: Vec<Variant>,
    /// Seconds before a cell is killed.
    pub cell_timeout: f64,
    /// Kill a cell when system swap grows by more than this many GiB.
    pub swap_guard_gib: f64,
    /// Run again the cells whose result is a failure.
    pub retry_failed: bool,
    /// Also run the reference's own harness on copies of the same store files,
    /// interleaved per size and variant (stores from the reference generator).
    pub side_by_side: bool,
    /// The reference venv (`None`: `.reference/venv`).
    pub reference_venv: Option<PathBuf>,
    /// How to start a cell process.
    pub cell_command: CellCommand,
    /// The command line that started the run, recorded in the work directory's
    /// `run-commands.json` so the report can say how to reproduce it (the words
    /// after `run` are replayed as `cargo xtask bench` flags).
    pub command_line: Vec<String>,
}

impl RunOptions {
    /// The reference harness's defaults: sizes 10k, 56k, 100k, 300k and 1M, seed
    /// 20261017, 5 cold runs, 50 warm questions under a 2400 s budget, the
    /// encoder on, both variants, a 7200 s cell timeout and an 8 GiB swap guard.
    pub fn new(work_dir: PathBuf, cell_command: CellCommand) -> RunOptions {
        RunOptions {
            work_dir,
            sizes: "10k,56k,100k,300k,1M".into(),
            seed: 20261017,
            cold_runs: 5,
            warm_questions: 50,
            warm_budget: 2400.0,
            encoder: true,
            variants: vec![Variant::Unfiltered, Variant::Subject],
            cell_timeout: 7200.0,
            swap_guard_gib: 8.0,
            retry_failed: false,
            side_by_side: false,
            reference_venv: None,
            cell_command,
            command_line: Vec::new(),
        }
    }
}

/// Parses `10k,56k,1.5M,100_000` into sizes (each at least 10).
pub fn parse_sizes(text: &str) -> Result<Vec<u64>, String> {
    text.split(',')
        .map(|part| {
            let part = part.trim().replace('_', "");
            let (number, scale) = match part.chars().last() {
                Some('k' | 'K') => (&part[..part.len() - 1], 1e3),
                Some('m' | 'M') => (&part[..part.len() - 1], 1e6),
                _ => (part.as_str(), 1.0),
            };
            let value: f64 = number
                .parse()
                .map_err(|_| format!("{part:?} is not a size (e.g. 10k, 1.5M)"))?;
            let size = (value * scale).round() as u64;
            if size < 10 {
                return Err(format!("{part:?}: a store needs at least 10 beliefs"));
            }
            Ok(size)
        })
        .collect()
}

/// `10k`, `56k`, `1M`, plain below 1,000.
pub(crate) fn size_label(size: u64) -> String {
    if size >= 1_000_000 && size.is_multiple_of(100_000) {
        format!("{}M", size as f64 / 1e6)
    } else if size >= 1000 && size.is_multiple_of(100) {
        format!("{}k", size as f64 / 1e3)
    } else {
        size.to_string()
    }
}

fn progress_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
        .expect("the template is valid")
        .progress_chars("=> ")
}

fn log(message: &str) {
    let now = Timestamp::now().to_string();
    eprintln!("[{}] {message}", now.get(11..19).unwrap_or(&now));
}

/// The one-shot kinds of ours that the reference's harness has no mode for. Their
/// results go to `cells-extra/`, not `cells/`: the reference's `report` reads
/// every `cells/*.json` and refuses a `spec.mode` other than `cold` or `warm`.
pub(crate) const EXTRA_MODES: [&str; 2] = ["first", "cold-evicted"];

/// The directory of a work directory's extra-kind results (see [`EXTRA_MODES`]).
pub(crate) const EXTRA_CELLS_DIR: &str = "cells-extra";

/// Where one engine's files go.
struct EngineDirs {
    root: PathBuf,
}

impl EngineDirs {
    fn new(root: PathBuf) -> Result<EngineDirs> {
        for sub in ["cells", EXTRA_CELLS_DIR, "specs", "logs", "stores"] {
            let dir = root.join(sub);
            std::fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        }
        Ok(EngineDirs { root })
    }

    /// The result file of a cell: `cells/` for the reference's modes, `cells-extra/`
    /// for ours alone.
    fn cell(&self, id: &str, mode: &str) -> PathBuf {
        let dir = if EXTRA_MODES.contains(&mode) {
            EXTRA_CELLS_DIR
        } else {
            "cells"
        };
        self.root.join(dir).join(format!("{id}.json"))
    }

    /// Moves results of our extra kinds that an older version of this runner left
    /// in `cells/` to `cells-extra/`, so the reference's `report` can read the
    /// directory and resuming finds them.
    fn move_extra_cells(&self) -> Result<()> {
        let cells = self.root.join("cells");
        let entries = std::fs::read_dir(&cells).map_err(io_error("list", &cells))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Ok(result) = read_json::<Value>(&path) else {
                continue;
            };
            let mode = result["spec"]["mode"].as_str().unwrap_or_default();
            if EXTRA_MODES.contains(&mode) {
                let to = self.root.join(EXTRA_CELLS_DIR).join(entry.file_name());
                std::fs::rename(&path, &to).map_err(io_error("move a result to", &to))?;
            }
        }
        Ok(())
    }
}

fn reference_python(options: &RunOptions) -> PathBuf {
    options
        .reference_venv
        .clone()
        .unwrap_or_else(|| PathBuf::from(".reference/venv"))
        .join("bin/python")
}

/// Builds the `(seed, size)` store with the reference's generator, through its venv.
fn build_reference_store(python: &Path, path: &Path, seed: u64, size: u64) -> Result<()> {
    let script = format!(
        "import asyncio\nfrom pathlib import Path\n\
         from particles.benchmark.query_latency.generator import build_store\n\
         asyncio.run(build_store(Path({path:?}), seed={seed}, size={size}))\n",
        path = path.display().to_string()
    );
    let status = Command::new(python)
        .args(["-c", &script])
        .stdout(Stdio::null())
        .status()
        .map_err(|source| Error::Spawn {
            program: python.to_owned(),
            source,
        })?;
    if !status.success() {
        return Err(Error::Reference {
            task: format!("the reference generator for {}", path.display()),
            detail: status.to_string(),
        });
    }
    Ok(())
}

fn copy_store(from: &Path, to: &Path) -> Result<()> {
    if to.exists() && generator::manifest_path(to).exists() {
        return Ok(());
    }
    std::fs::copy(from, to).map_err(io_error("copy the store to", to))?;
    let manifest = generator::manifest_path(to);
    std::fs::copy(generator::manifest_path(from), &manifest)
        .map_err(io_error("copy the manifest to", &manifest))?;
    Ok(())
}

/// A store is reused only when its manifest matches and its ids hash to the
/// manifest's fingerprint.
fn usable_store(path: &Path, seed: u64, size: u64) -> bool {
    let Ok(manifest) = read_json::<Value>(&generator::manifest_path(path)) else {
        return false;
    };
    manifest["seed"].as_u64() == Some(seed)
        && manifest["size"].as_u64() == Some(size)
        && generator::fingerprint(path).ok().as_deref() == manifest["fingerprint"].as_str()
}

/// Makes sure the store of one size exists: ours (our generator) or, side by side,
/// the reference generator's, which both engines then read from copies.
fn ensure_store(options: &RunOptions, work: &Path, size: u64) -> Result<PathBuf> {
    let stores = work.join("stores");
    std::fs::create_dir_all(&stores).map_err(io_error("create", &stores))?;
    if options.side_by_side {
        let name = format!("qlat-s{}-n{size}-{REFERENCE_GENERATOR}.db", options.seed);
        let path = stores.join(&name);
        if !usable_store(&path, options.seed, size) {
            log(&format!(
                "n={}: building the store with the reference generator …",
                size_label(size)
            ));
            let started = Instant::now();
            build_reference_store(&reference_python(options), &path, options.seed, size)?;
            log(&format!(
                "n={}: built in {:.1} s",
                size_label(size),
                started.elapsed().as_secs_f64()
            ));
        }
        return Ok(path);
    }
    generated_store(&stores, options.seed, size)
}

/// Our generator's `(seed, size)` store in `stores`, built (with a progress
/// bar) unless a usable one is there.
pub(crate) fn generated_store(stores: &Path, seed: u64, size: u64) -> Result<PathBuf> {
    let path = stores.join(generator::store_file_name(seed, size));
    if !usable_store(&path, seed, size) {
        let bar = ProgressBar::new(0)
            .with_style(progress_style())
            .with_prefix(format!("n={}", size_label(size)));
        bar.set_message("rows written");
        generator::build_store(&path, seed, size, |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })?;
        bar.finish_with_message("store built");
    }
    Ok(path)
}

#[derive(Clone)]
struct PlannedCell {
    id: String,
    size: u64,
    mode: &'static str,
    variant: Variant,
    question_offset: usize,
    questions: usize,
    budget_seconds: f64,
}

/// The modes the reference's harness has; the others are ours alone.
const REFERENCE_MODES: [&str; 2] = ["cold", "warm"];

fn plan(options: &RunOptions, sizes: &[u64]) -> Vec<PlannedCell> {
    let mut cells = Vec::new();
    for &size in sizes {
        for &variant in &options.variants {
            let name = variant.as_str();
            if variant == Variant::Unfiltered {
                // Ours only: the first query on a store never seen (no sidecar:
                // the runner deletes it), before the cold runs that start from it.
                cells.push(PlannedCell {
                    id: format!("n{size}-first-{name}"),
                    size,
                    mode: "first",
                    variant,
                    question_offset: 0,
                    questions: 1,
                    budget_seconds: 0.0,
                });
            }
            for r in 0..options.cold_runs {
                cells.push(PlannedCell {
                    id: format!("n{size}-cold-{name}-r{r}"),
                    size,
                    mode: "cold",
                    variant,
                    question_offset: r,
                    questions: 1,
                    budget_seconds: 0.0,
                });
            }
            cells.push(PlannedCell {
                id: format!("n{size}-warm-{name}"),
                size,
                mode: "warm",
                variant,
                question_offset: options.cold_runs,
                questions: options.warm_questions,
                budget_seconds: options.warm_budget,
            });
        }
        if options.variants.contains(&Variant::Unfiltered) {
            // Ours only: a one-shot process whose sidecar and store pages were
            // evicted from the page cache (posix_fadvise DONTNEED); last for its
            // size, so no other cell starts on a page cache emptied for it.
            for r in 0..options.cold_runs {
                cells.push(PlannedCell {
                    id: format!("n{size}-cold-evicted-unfiltered-r{r}"),
                    size,
                    mode: "cold-evicted",
                    variant: Variant::Unfiltered,
                    question_offset: r,
                    questions: 1,
                    budget_seconds: 0.0,
                });
            }
        }
    }
    cells
}

fn swap_used() -> Option<u64> {
    let total = probe::meminfo_bytes("SwapTotal:")?;
    Some(total.saturating_sub(probe::meminfo_bytes("SwapFree:")?))
}

fn free_disk(path: &Path) -> Option<u64> {
    let output = Command::new("df")
        .args(["-B1", "--output=avail"])
        .arg(path)
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

fn failure_result(
    spec: &CellSpec,
    status: &str,
    started_at: &str,
    wall: f64,
    peak: Option<u64>,
    error: String,
    notes: Vec<String>,
) -> Value {
    json!({
        "spec": spec,
        "status": status,
        "started_at": started_at,
        "finished_at": Timestamp::now().to_string(),
        "wall_seconds": wall,
        "samples": [],
        "sampled_peak_rss_bytes": peak,
        "error": error,
        "notes": notes,
        "engine": "particles-rs",
    })
}

/// Runs one of our cells in a child process and records its outcome.
fn run_cell(options: &RunOptions, dirs: &EngineDirs, spec: &CellSpec) -> Result<String> {
    let spec_path = dirs
        .root
        .join("specs")
        .join(format!("{}.json", spec.cell_id));
    write_json(&spec_path, spec)?;
    let log_path = dirs.root.join("logs").join(format!("{}.log", spec.cell_id));
    let log_file = std::fs::File::create(&log_path).map_err(io_error("create", &log_path))?;
    let log_copy = log_file.try_clone().map_err(io_error("open", &log_path))?;
    let started_at = Timestamp::now().to_string();
    let started = Instant::now();
    let swap_before = swap_used();
    let program = &options.cell_command.program;
    let mut child = Command::new(program)
        .args(&options.cell_command.args)
        .arg(&spec_path)
        .stdout(log_copy)
        .stderr(log_file)
        .spawn()
        .map_err(|source| Error::Spawn {
            program: program.clone(),
            source,
        })?;
    let mut peak: Option<u64> = None;
    let mut last_sample = Instant::now();
    let failure = loop {
        let exited = child.try_wait().map_err(|source| Error::Spawn {
            program: program.clone(),
            source,
        })?;
        if let Some(status) = exited {
            break (!status.success())
                .then(|| ("failed", format!("the cell exited with {status}")));
        }
        std::thread::sleep(Duration::from_millis(50));
        if last_sample.elapsed() < Duration::from_secs(2) {
            continue;
        }
        last_sample = Instant::now();
        if let Some(rss) = probe::current_rss(Process::Id(child.id())) {
            peak = Some(peak.map_or(rss, |p| p.max(rss)));
        }
        let guard = if started.elapsed().as_secs_f64() > options.cell_timeout {
            Some((
                "timeout",
                format!("the cell ran longer than {} s", options.cell_timeout),
            ))
        } else if let (Some(before), Some(now)) = (swap_before, swap_used()) {
            (now.saturating_sub(before) as f64 > options.swap_guard_gib * (1u64 << 30) as f64).then(
                || {
                    (
                        "memory_guard",
                        format!("swap grew by more than {} GiB", options.swap_guard_gib),
                    )
                },
            )
        } else {
            None
        }
        .or_else(|| {
            free_disk(&dirs.root)
                .filter(|free| *free < MIN_FREE_DISK)
                .map(|free| ("memory_guard", format!("free disk fell to {free} bytes")))
        });
        if let Some(reason) = guard {
            let _ = child.kill();
            let _ = child.wait();
            break Some(reason);
        }
    };
    let result_path = &spec.result_path;
    match failure {
        None if result_path.exists() => {
            let mut result: Value = read_json(result_path)?;
            result["sampled_peak_rss_bytes"] = json!(peak);
            write_json_atomically(result_path, &result)?;
            Ok("ok".into())
        }
        failure => {
            let (status, reason) =
                failure.unwrap_or(("failed", "the cell exited without a result".into()));
            let log_text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: String = log_text
                .chars()
                .rev()
                .take(4000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            let result = failure_result(
                spec,
                status,
                &started_at,
                started.elapsed().as_secs_f64(),
                peak,
                format!("{reason}\n{tail}"),
                vec![],
            );
            write_json_atomically(result_path, &result)?;
            Ok(status.into())
        }
    }
}

/// Checks, before timing, that particles-rs ranks the group's first question like
/// the reference on the same store file. Returns the difference, if any.
fn check_ranking(
    options: &RunOptions,
    store: &Path,
    oracle: &Path,
    questions: &Questions,
    index: usize,
    subject: Option<&str>,
) -> Result<Option<String>> {
    use std::io::Write;
    let request = json!([{
        "store": store, "vector": questions.vector(index), "top_k": 40,
        "now": "2026-06-01T00:00:00Z", "subject_id": subject,
    }]);
    let python = reference_python(options);
    let spawn_error = |source| Error::Spawn {
        program: python.clone(),
        source,
    };
    let mut child = Command::new(&python)
        .arg(oracle)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(spawn_error)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(request.to_string().as_bytes())
            .map_err(spawn_error)?;
    }
    let output = child.wait_with_output().map_err(spawn_error)?;
    let oracle_failed = |detail: &str| Error::Reference {
        task: "the ranking check's oracle".into(),
        detail: detail.to_owned(),
    };
    let expected: Value = serde_json::from_slice(&output.stdout)
        .map_err(|_| oracle_failed("it printed no result"))?;
    let theirs: Vec<(String, u64, u64)> = expected[0]["hits"]
        .as_array()
        .ok_or_else(|| oracle_failed("it failed on this store"))?
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap_or_default().to_owned(),
                h["sim"].as_f64().unwrap_or(f64::NAN).to_bits(),
                h["eff"].as_f64().unwrap_or(f64::NAN).to_bits(),
            )
        })
        .collect();
    // Ours, on a copy of the same file (the reference opened this one).
    let ours_store = particles_store::Store::open_read_only(store)?;
    let now = Timestamp::parse("2026-06-01T00:00:00Z").expect("a fixed instant parses");
    let query = particles_model::QueryRequest {
        subject_id: subject.map(str::to_owned),
        ..particles_model::QueryRequest::question(questions.text(index))
    }
    .validate(now)?;
    let outcome = particles_query::run_query(
        &ours_store,
        &particles_query::QueryInput::new(&query, Some(questions.vector(index)), now),
    )?;
    let ours: Vec<(String, u64, u64)> = outcome
        .hits
        .iter()
        .map(|h| {
            (
                h.particle.id.clone(),
                h.similarity.to_bits(),
                h.effective_confidence.to_bits(),
            )
        })
        .collect();
    Ok((ours != theirs).then(|| {
        format!(
            "particles-rs ranks question {index} differently from the reference ({} vs {} hits)",
            ours.len(),
            theirs.len()
        )
    }))
}

/// The embedded ranking oracle, written into the work directory for side-by-side
/// checks.
const ORACLE: &str = include_str!("../../../tests/reference/oracle.py");

/// Runs a benchmark: builds (or reuses) the stores, then runs every cell not
/// finished yet in the work directory, each in its own process (see the crate
/// docs). Resumable: a finished cell's result is kept; failed ones run again with
/// [`RunOptions::retry_failed`]. A cell that fails is recorded as failed and the
/// rest of its size and variant as skipped; the run itself goes on.
///
/// # Errors
///
/// [`Error::Options`] for options that do not go together, [`Error::Reference`]
/// or [`Error::Spawn`] when the reference's venv is needed and fails, and any
/// failure to build a store or to write the work directory.
pub fn run(options: &RunOptions) -> Result<()> {
    let sizes = checked_sizes(options)?;
    let work = options.work_dir.clone();
    record_run(options, &work)?;
    let python = reference_python(options);
    if options.side_by_side && !python.exists() {
        return Err(Error::Options {
            reason: format!(
                "--side-by-side needs the reference: {} does not exist (run `cargo xtask reference`, or give --reference-venv)",
                python.display()
            ),
        });
    }
    let (questions, questions_file) = ensure_questions(options, &work, &python)?;
    let ours = EngineDirs::new(if options.side_by_side {
        work.join("rust")
    } else {
        work.clone()
    })?;
    ours.move_extra_cells()?;
    let reference = if options.side_by_side {
        Some(EngineDirs::new(work.join("reference"))?)
    } else {
        None
    };
    let oracle = work.join("oracle.py");
    std::fs::write(&oracle, ORACLE).map_err(io_error("write", &oracle))?;

    let cells = plan(options, &sizes);
    let bar = ProgressBar::new(cells.len() as u64)
        .with_style(progress_style())
        .with_prefix("cells");
    let mut run = Run {
        options,
        work: &work,
        python: &python,
        questions: &questions,
        questions_file: &questions_file,
        ours: &ours,
        reference: reference.as_ref(),
        oracle: &oracle,
        bar: &bar,
        failed_groups: std::collections::HashSet::new(),
        ok: 0,
    };
    for group in groups(&cells) {
        run.group(&group)?;
    }
    bar.finish_with_message("done");
    log(&format!(
        "done: {} of {} cell(s) ok. Render with `report`.",
        run.ok,
        cells.len()
    ));
    Ok(())
}

/// The run's sizes, once the options are checked to go together.
fn checked_sizes(options: &RunOptions) -> Result<Vec<u64>> {
    if options.encoder && options.side_by_side {
        return Err(Error::Options {
            reason: "--side-by-side needs --no-encoder: the reference venv leaves out its encoder (torch), \
                     so both engines are timed on the same fixed question vectors"
                .into(),
        });
    }
    let sizes = parse_sizes(&options.sizes).map_err(|e| Error::Options {
        reason: format!("--sizes: {e}"),
    })?;
    if options.warm_questions == 0 {
        return Err(Error::Options {
            reason: "--warm-questions: a warm cell asks at least one question".into(),
        });
    }
    Ok(sizes)
}

/// The cells of one size and variant, in plan order (the evicted one-shots apart).
struct Group<'c> {
    size: u64,
    variant: Variant,
    /// The evicted one-shots' group: after the subject variant, no ranking
    /// check of its own, no reference counterpart.
    is_late: bool,
    cells: Vec<&'c PlannedCell>,
}

/// Whether a cell runs in the late group.
fn is_late(cell: &PlannedCell) -> bool {
    cell.mode == "cold-evicted"
}

/// Cells run in groups of one size and variant, in plan order. The evicted
/// one-shots form a late group of their own (after the subject variant), since
/// evicting the store would leave the subject cells a cold page cache; it reuses
/// its variant's ranking check and has no reference counterpart to run.
fn groups(cells: &[PlannedCell]) -> Vec<Group<'_>> {
    let mut keys: Vec<(u64, Variant, bool)> = Vec::new();
    for cell in cells {
        let key = (cell.size, cell.variant, is_late(cell));
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .map(|(size, variant, late)| Group {
            size,
            variant,
            is_late: late,
            cells: cells
                .iter()
                .filter(|c| c.size == size && c.variant == variant && is_late(c) == late)
                .collect(),
        })
        .collect()
}

/// A run under way: what its groups share, and the tally of their cells.
struct Run<'r> {
    options: &'r RunOptions,
    work: &'r Path,
    python: &'r Path,
    questions: &'r Questions,
    questions_file: &'r Path,
    ours: &'r EngineDirs,
    /// The reference's directories, side by side.
    reference: Option<&'r EngineDirs>,
    oracle: &'r Path,
    bar: &'r ProgressBar,
    /// The sizes and variants where a cell failed: their later cells are skipped.
    failed_groups: std::collections::HashSet<(u64, Variant)>,
    /// Cells whose result is ok.
    ok: usize,
}

impl Run<'_> {
    /// One group: nothing when all its cells (and the reference's) are done;
    /// otherwise its store, the ranking check and the reference's harness side by
    /// side, then each of its cells.
    fn group(&mut self, group: &Group<'_>) -> Result<()> {
        let ours = self.ours;
        let pending = group.cells.iter().any(|c| {
            let path = ours.cell(&c.id, c.mode);
            !path.exists() || (self.options.retry_failed && !cell_ok(&path))
        });
        let reference_pending = self.reference.is_some_and(|r| {
            group
                .cells
                .iter()
                .filter(|c| REFERENCE_MODES.contains(&c.mode))
                .any(|c| !cell_ok(&r.cell(&c.id, c.mode)))
        });
        if !pending && !reference_pending {
            self.bar.inc(group.cells.len() as u64);
            self.ok += group
                .cells
                .iter()
                .filter(|c| cell_ok(&ours.cell(&c.id, c.mode)))
                .count();
            return Ok(());
        }
        let source = ensure_store(self.options, self.work, group.size)?;
        let file_name = source.file_name().ok_or_else(|| Error::Options {
            reason: format!("{} names no store file", source.display()),
        })?;
        let store = if self.options.side_by_side {
            let copy = ours.root.join("stores").join(file_name);
            copy_store(&source, &copy)?;
            copy
        } else {
            source.clone()
        };
        let mut mismatch = None;
        if let Some(reference) = self.reference.filter(|_| !group.is_late) {
            let reference_store = reference.root.join("stores").join(file_name);
            copy_store(&source, &reference_store)?;
            mismatch = self.ranking_mismatch(group, &store, file_name)?;
            if reference_pending {
                self.run_reference(group, reference)?;
            }
        }
        for cell in &group.cells {
            self.cell(group, cell, &store, mismatch.as_deref())?;
        }
        Ok(())
    }

    /// Whether both engines rank the group's first question alike on `store`
    /// (a reason when they do not).
    fn ranking_mismatch(
        &self,
        group: &Group<'_>,
        store: &Path,
        file_name: &std::ffi::OsStr,
    ) -> Result<Option<String>> {
        let manifest: Value = read_json(&generator::manifest_path(store))?;
        let first = group.cells[0].question_offset;
        let subject = (group.variant == Variant::Subject)
            .then(|| {
                manifest["query_subjects"]
                    .as_array()
                    .and_then(|a| a.get(first % a.len().max(1)))
                    .and_then(|p| p[0].as_str().map(str::to_owned))
            })
            .flatten();
        // The oracle opens its own copy: it switches the file to WAL.
        let check_copy = self.work.join("stores").join(format!(
            "check-{}",
            file_name.to_str().unwrap_or("store.db")
        ));
        let _ = std::fs::remove_file(&check_copy);
        std::fs::copy(store, &check_copy).map_err(io_error("copy the store to", &check_copy))?;
        let mismatch = check_ranking(
            self.options,
            &check_copy,
            self.oracle,
            self.questions,
            first,
            subject.as_deref(),
        )?;
        let _ = std::fs::remove_file(&check_copy);
        Ok(mismatch)
    }

    /// The reference's own harness over the group's size and variant.
    fn run_reference(&self, group: &Group<'_>, reference: &EngineDirs) -> Result<()> {
        let label = format!("n={} {}", size_label(group.size), group.variant.as_str());
        self.bar
            .suspend(|| log(&format!("{label}: the reference's harness …")));
        let status = run_reference_harness(
            self.options,
            self.python,
            &reference.root,
            group.size,
            group.variant,
        )?;
        if !status.success() {
            self.bar.suspend(|| {
                log(&format!(
                    "{label}: the reference's harness exited with {status}"
                ))
            });
        }
        Ok(())
    }

    /// One cell: kept when it has a result (an ok one, or any without
    /// `retry_failed`); otherwise recorded as failed on a ranking mismatch,
    /// skipped after an earlier failure in its group, or run.
    fn cell(
        &mut self,
        group: &Group<'_>,
        cell: &PlannedCell,
        store: &Path,
        mismatch: Option<&str>,
    ) -> Result<()> {
        let (size, variant) = (group.size, group.variant);
        self.bar.set_message(cell.id.clone());
        let path = self.ours.cell(&cell.id, cell.mode);
        if path.exists() && (cell_ok(&path) || !self.options.retry_failed) {
            if cell_ok(&path) {
                self.ok += 1;
            } else {
                self.failed_groups.insert((size, variant));
            }
            self.bar.inc(1);
            return Ok(());
        }
        let spec = self.cell_spec(group, cell, store, &path)?;
        prepare_page_cache(cell.mode, &spec);
        let status = if let Some(reason) = mismatch {
            write_json_atomically(
                &path,
                &failure_result(&spec, "failed", "", 0.0, None, reason.to_owned(), vec![]),
            )?;
            "failed".to_owned()
        } else if self.failed_groups.contains(&(size, variant)) {
            let note = format!(
                "not run: an earlier cell failed at n={size} {}",
                variant.as_str()
            );
            write_json_atomically(
                &path,
                &failure_result(&spec, "skipped", "", 0.0, None, String::new(), vec![note]),
            )?;
            "skipped".to_owned()
        } else {
            run_cell(self.options, self.ours, &spec)?
        };
        if status == "ok" {
            self.ok += 1;
        } else {
            self.failed_groups.insert((size, variant));
        }
        self.bar.suspend(|| log(&format!("{}: {status}", cell.id)));
        self.bar.inc(1);
        Ok(())
    }

    /// What the cell process is handed: the cell, with absolute paths.
    fn cell_spec(
        &self,
        group: &Group<'_>,
        cell: &PlannedCell,
        store: &Path,
        path: &Path,
    ) -> Result<CellSpec> {
        let absolute = |path: &Path| std::path::absolute(path).map_err(io_error("resolve", path));
        Ok(CellSpec {
            cell_id: cell.id.clone(),
            size: group.size,
            seed: self.options.seed,
            mode: cell.mode.to_owned(),
            variant: group.variant.as_str().to_owned(),
            store_path: std::fs::canonicalize(store).map_err(io_error("resolve", store))?,
            result_path: absolute(path)?,
            encoder: self.options.encoder,
            question_offset: cell.question_offset,
            questions: cell.questions,
            budget_seconds: cell.budget_seconds,
            min_questions: 5,
            top_k: 40,
            questions_path: Some(absolute(self.questions_file)?),
            half_precision: true,
        })
    }
}

/// Sets the page cache up as the cell's mode asks.
fn prepare_page_cache(mode: &str, spec: &CellSpec) {
    let sidecar = particles_cache::sidecar_path(&spec.store_path, None);
    match mode {
        "first" => {
            // No sidecar, but the store in the page cache: the first query
            // is compared with the JSON-parse floor, which excludes reading
            // (the ranking check's copy may have pushed the store out).
            let _ = std::fs::remove_file(&sidecar);
            read_through(&spec.store_path);
        }
        "cold-evicted" => {
            for file in [&sidecar, &spec.store_path] {
                evict_from_page_cache(file);
            }
        }
        _ => {}
    }
}

/// Writes the reproduction tuple (`run.json`) and adds the run's command line to
/// the work directory's `run-commands.json` (every distinct one, so the report
/// can say how to reproduce its cells).
fn record_run(options: &RunOptions, work: &Path) -> Result<()> {
    std::fs::create_dir_all(work).map_err(io_error("create", work))?;
    write_json(&work.join("run.json"), &Environment::read())?;
    let commands_path = work.join("run-commands.json");
    let mut commands: Vec<Vec<String>> = read_json(&commands_path).unwrap_or_default();
    if !commands.contains(&options.command_line) {
        commands.push(options.command_line.clone());
    }
    let text = serde_json::to_string(&commands).map_err(|source| Error::Json {
        path: commands_path.clone(),
        source,
    })?;
    std::fs::write(&commands_path, text).map_err(io_error("write", &commands_path))
}

/// The run's questions (the reference's, exported through its venv when there is
/// one, else seeded stand-ins) and their file in the work directory.
fn ensure_questions(
    options: &RunOptions,
    work: &Path,
    python: &Path,
) -> Result<(Questions, PathBuf)> {
    let needed = options.cold_runs + options.warm_questions + 1;
    let questions_file = questions::questions_path(work, options.seed);
    let has_questions =
        read_json::<Questions>(&questions_file).is_ok_and(|q| q.vectors.len() >= needed);
    if !has_questions {
        if python.exists() {
            questions::export_from_reference(
                python,
                &questions_file,
                options.seed,
                needed.max(64),
            )?;
        } else {
            let generated = Questions::generated(options.seed, needed.max(64));
            let text = serde_json::to_string(&generated).map_err(|source| Error::Json {
                path: questions_file.clone(),
                source,
            })?;
            std::fs::write(&questions_file, text).map_err(io_error("write", &questions_file))?;
            log("no reference venv: using seeded stand-in question vectors (not the reference's)");
        }
    }
    let questions = Questions::load(Some(&questions_file), options.seed, needed)?;
    Ok((questions, questions_file))
}

/// Runs the reference's own harness (`particles benchmark query-latency run`) for
/// one size and variant in its work directory, with our run's protocol flags.
fn run_reference_harness(
    options: &RunOptions,
    python: &Path,
    work: &Path,
    size: u64,
    variant: Variant,
) -> Result<std::process::ExitStatus> {
    let program = python.with_file_name("particles");
    Command::new(&program)
        .args([
            "benchmark",
            "query-latency",
            "run",
            "--no-encoder",
            "--work-dir",
        ])
        .arg(work)
        .args([
            "--sizes",
            &size.to_string(),
            "--variant",
            variant.as_str(),
            "--seed",
            &options.seed.to_string(),
        ])
        .args([
            "--cold-runs",
            &options.cold_runs.to_string(),
            "--warm-questions",
            &options.warm_questions.to_string(),
        ])
        .args([
            "--warm-budget",
            &options.warm_budget.to_string(),
            "--cell-timeout",
            &options.cell_timeout.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|source| Error::Spawn { program, source })
}

/// Reads a file once, untimed, so its pages are in the page cache.
fn read_through(path: &Path) {
    if let Ok(mut file) = std::fs::File::open(path) {
        let _ = std::io::copy(&mut file, &mut std::io::sink());
    }
}

/// Drops a file's clean pages from the page cache (no privileges needed, unlike
/// `drop_caches`), so the next reader pays the disk.
#[allow(unsafe_code)]
fn evict_from_page_cache(path: &Path) {
    #[cfg(target_os = "linux")]
    if let Ok(file) = std::fs::File::open(path) {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor for the whole call; the call only
        // advises the kernel and touches no memory of ours.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}

fn cell_ok(path: &Path) -> bool {
    read_json::<Value>(path).is_ok_and(|v| v["status"] == "ok")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_like_the_reference() {
        assert_eq!(
            parse_sizes("10k,56k,1.5k,1M,100_000").unwrap(),
            vec![10_000, 56_000, 1_500, 1_000_000, 100_000]
        );
        assert!(parse_sizes("5").is_err());
        assert!(parse_sizes("ten").is_err());
        assert_eq!(size_label(56_000), "56k");
        assert_eq!(size_label(1_000_000), "1M");
        assert_eq!(size_label(600), "600");
    }

    #[test]
    fn our_extra_kinds_live_apart_from_the_reference_s() {
        let dir = tempfile::tempdir().unwrap();
        let dirs = EngineDirs::new(dir.path().to_owned()).unwrap();
        let options = RunOptions {
            sizes: "2k".into(),
            cold_runs: 1,
            ..RunOptions::new(
                dir.path().to_owned(),
                CellCommand {
                    program: "particles-rs".into(),
                    args: vec![],
                },
            )
        };
        for cell in plan(&options, &[2000]) {
            let path = dirs.cell(&cell.id, cell.mode);
            let expected = if REFERENCE_MODES.contains(&cell.mode) {
                "cells"
            } else {
                EXTRA_CELLS_DIR
            };
            assert!(path.starts_with(dir.path().join(expected)), "{}", cell.id);
        }
        // A result of ours an older runner left in `cells/` moves; the reference's
        // modes stay.
        let write = |name: &str, mode: &str| {
            write_json(
                &dir.path().join("cells").join(name),
                &json!({"spec": {"mode": mode}}),
            )
            .unwrap();
        };
        write("n1-first-unfiltered.json", "first");
        write("n1-cold-unfiltered-r0.json", "cold");
        dirs.move_extra_cells().unwrap();
        assert!(dir
            .path()
            .join(EXTRA_CELLS_DIR)
            .join("n1-first-unfiltered.json")
            .exists());
        assert!(!dir.path().join("cells/n1-first-unfiltered.json").exists());
        assert!(dir.path().join("cells/n1-cold-unfiltered-r0.json").exists());
    }
}
