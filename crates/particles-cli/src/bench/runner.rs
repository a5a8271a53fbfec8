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

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};

use super::{
    cell::{write_atomically, CellSpec},
    generator,
    questions::{self, Questions},
    RunArgs,
};

/// The reference generator's version tag in its file names.
const REFERENCE_GENERATOR: &str = "g1";
const MIN_FREE_DISK: u64 = 4 << 30;

/// Parses `10k,56k,1.5M,100_000` into sizes (each at least 10).
pub(crate) fn parse_sizes(text: &str) -> Result<Vec<u64>, String> {
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
    if size >= 1_000_000 && size % 100_000 == 0 {
        format!("{}M", size as f64 / 1e6)
    } else if size >= 1000 && size % 100 == 0 {
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
    let now = Ok::<_, anyhow::Error>(particles_model::Timestamp::now())
        .map(|t| t.to_string())
        .unwrap_or_default();
    eprintln!("[{}] {message}", now.get(11..19).unwrap_or(&now));
}

/// Where one engine's files go.
struct EngineDirs {
    root: PathBuf,
}

impl EngineDirs {
    fn new(root: PathBuf) -> Result<EngineDirs> {
        for sub in ["cells", "specs", "logs", "stores"] {
            std::fs::create_dir_all(root.join(sub))
                .with_context(|| format!("cannot create {}", root.join(sub).display()))?;
        }
        Ok(EngineDirs { root })
    }
    fn cell(&self, id: &str) -> PathBuf {
        self.root.join("cells").join(format!("{id}.json"))
    }
}

fn reference_python(args: &RunArgs) -> PathBuf {
    args.reference_venv
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
        .context("cannot run the reference's python")?;
    if !status.success() {
        bail!(
            "the reference generator failed for {} ({status})",
            path.display()
        );
    }
    Ok(())
}

fn copy_store(from: &Path, to: &Path) -> Result<()> {
    if to.exists() && generator::manifest_path(to).exists() {
        return Ok(());
    }
    std::fs::copy(from, to)
        .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
    std::fs::copy(generator::manifest_path(from), generator::manifest_path(to))?;
    Ok(())
}

/// A store is reused only when its manifest matches and its ids hash to the
/// manifest's fingerprint.
fn usable_store(path: &Path, seed: u64, size: u64) -> bool {
    let Ok(text) = std::fs::read_to_string(generator::manifest_path(path)) else {
        return false;
    };
    let Ok(manifest) = serde_json::from_str::<Value>(&text) else {
        return false;
    };
    manifest["seed"].as_u64() == Some(seed)
        && manifest["size"].as_u64() == Some(size)
        && generator::fingerprint(path).ok().as_deref() == manifest["fingerprint"].as_str()
}

/// Makes sure the store of one size exists: ours (our generator) or, side by side,
/// the reference generator's, which both engines then read from copies.
fn ensure_store(args: &RunArgs, work: &Path, size: u64) -> Result<PathBuf> {
    let stores = work.join("stores");
    std::fs::create_dir_all(&stores)?;
    if args.side_by_side {
        let name = format!("qlat-s{}-n{size}-{REFERENCE_GENERATOR}.db", args.seed);
        let path = stores.join(&name);
        if !usable_store(&path, args.seed, size) {
            log(&format!(
                "n={}: building the store with the reference generator …",
                size_label(size)
            ));
            let started = Instant::now();
            build_reference_store(&reference_python(args), &path, args.seed, size)?;
            log(&format!(
                "n={}: built in {:.1} s",
                size_label(size),
                started.elapsed().as_secs_f64()
            ));
        }
        return Ok(path);
    }
    let path = stores.join(generator::store_file_name(args.seed, size));
    if !usable_store(&path, args.seed, size) {
        let bar = ProgressBar::new(0)
            .with_style(progress_style())
            .with_prefix(format!("n={}", size_label(size)));
        bar.set_message("rows written");
        generator::build_store(&path, args.seed, size, |done, total| {
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
    variant: String,
    question_offset: usize,
    questions: usize,
    budget_seconds: f64,
}

/// The modes the reference's harness has; the others are ours alone.
const REFERENCE_MODES: [&str; 2] = ["cold", "warm"];

fn plan(args: &RunArgs, sizes: &[u64]) -> Vec<PlannedCell> {
    let mut cells = Vec::new();
    for &size in sizes {
        for variant in &args.variant {
            if variant == "unfiltered" {
                // Ours only: the first query on a store never seen (no sidecar:
                // the runner deletes it), before the cold runs that start from it.
                cells.push(PlannedCell {
                    id: format!("n{size}-first-{variant}"),
                    size,
                    mode: "first",
                    variant: variant.clone(),
                    question_offset: 0,
                    questions: 1,
                    budget_seconds: 0.0,
                });
            }
            for r in 0..args.cold_runs {
                cells.push(PlannedCell {
                    id: format!("n{size}-cold-{variant}-r{r}"),
                    size,
                    mode: "cold",
                    variant: variant.clone(),
                    question_offset: r,
                    questions: 1,
                    budget_seconds: 0.0,
                });
            }
            cells.push(PlannedCell {
                id: format!("n{size}-warm-{variant}"),
                size,
                mode: "warm",
                variant: variant.clone(),
                question_offset: args.cold_runs,
                questions: args.warm_questions,
                budget_seconds: args.warm_budget,
            });
        }
        if args.variant.iter().any(|v| v == "unfiltered") {
            // Ours only: a one-shot process whose sidecar and store pages were
            // evicted from the page cache (posix_fadvise DONTNEED); last for its
            // size, so no other cell starts on a page cache emptied for it.
            for r in 0..args.cold_runs {
                cells.push(PlannedCell {
                    id: format!("n{size}-cold-evicted-unfiltered-r{r}"),
                    size,
                    mode: "cold-evicted",
                    variant: "unfiltered".to_owned(),
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
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("SwapTotal:")? - field("SwapFree:")?) * 1024)
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

fn rss_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
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
        "finished_at": Ok::<_, anyhow::Error>(particles_model::Timestamp::now()).map(|t| t.to_string()).unwrap_or_default(),
        "wall_seconds": wall,
        "samples": [],
        "sampled_peak_rss_bytes": peak,
        "error": error,
        "notes": notes,
        "engine": "particles-rs",
    })
}

/// Runs one of our cells in a child process and records its outcome.
fn run_cell(args: &RunArgs, dirs: &EngineDirs, spec: &CellSpec) -> Result<String> {
    let spec_path = dirs
        .root
        .join("specs")
        .join(format!("{}.json", spec.cell_id));
    std::fs::write(&spec_path, serde_json::to_string_pretty(spec)?)?;
    let log_path = dirs.root.join("logs").join(format!("{}.log", spec.cell_id));
    let log_file = std::fs::File::create(&log_path)?;
    let started_at = Ok::<_, anyhow::Error>(particles_model::Timestamp::now())
        .map(|t| t.to_string())
        .unwrap_or_default();
    let started = Instant::now();
    let swap_before = swap_used();
    let mut child = Command::new(std::env::current_exe()?)
        .args(["benchmark", "query-latency", "cell"])
        .arg(&spec_path)
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()
        .context("cannot start a cell process")?;
    let mut peak: Option<u64> = None;
    let mut last_sample = Instant::now();
    let failure = loop {
        if let Some(status) = child.try_wait()? {
            break (!status.success())
                .then(|| ("failed", format!("the cell exited with {status}")));
        }
        std::thread::sleep(Duration::from_millis(50));
        if last_sample.elapsed() < Duration::from_secs(2) {
            continue;
        }
        last_sample = Instant::now();
        if let Some(rss) = rss_of(child.id()) {
            peak = Some(peak.map_or(rss, |p| p.max(rss)));
        }
        let guard = if started.elapsed().as_secs_f64() > args.cell_timeout {
            Some((
                "timeout",
                format!("the cell ran longer than {} s", args.cell_timeout),
            ))
        } else if let (Some(before), Some(now)) = (swap_before, swap_used()) {
            (now.saturating_sub(before) as f64 > args.swap_guard_gib * (1u64 << 30) as f64).then(
                || {
                    (
                        "memory_guard",
                        format!("swap grew by more than {} GiB", args.swap_guard_gib),
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
            let mut result: Value = serde_json::from_str(&std::fs::read_to_string(result_path)?)?;
            result["sampled_peak_rss_bytes"] = json!(peak);
            write_atomically(result_path, &result)?;
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
            write_atomically(result_path, &result)?;
            Ok(status.into())
        }
    }
}

/// Checks, before timing, that particles-rs ranks the group's first question like
/// the reference on the same store file. Returns the difference, if any.
fn check_ranking(
    args: &RunArgs,
    store: &Path,
    oracle: &Path,
    questions: &Questions,
    index: usize,
    subject: Option<&str>,
) -> Result<Option<String>> {
    let request = json!([{
        "store": store, "vector": questions.vector(index), "top_k": 40,
        "now": "2026-06-01T00:00:00Z", "subject_id": subject,
    }]);
    let mut child = Command::new(reference_python(args))
        .arg(oracle)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    use std::io::Write;
    child
        .stdin
        .take()
        .context("no stdin")?
        .write_all(request.to_string().as_bytes())?;
    let output = child.wait_with_output()?;
    let expected: Value =
        serde_json::from_slice(&output.stdout).context("the reference oracle printed no result")?;
    let theirs: Vec<(String, u64, u64)> = expected[0]["hits"]
        .as_array()
        .context("the reference oracle failed on this store")?
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
    let now = particles_model::Timestamp::parse("2026-06-01T00:00:00Z").expect("fixed instant");
    let query = particles_model::QueryRequest {
        subject_id: subject.map(str::to_owned),
        ..particles_model::QueryRequest::question(questions.text(index))
    }
    .validate(now)
    .map_err(|e| anyhow::anyhow!("check request: {e}"))?;
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
const ORACLE: &str = include_str!("../../../../tests/reference/oracle.py");

pub(crate) fn run(args: &RunArgs) -> Result<()> {
    if args.encoder() && args.side_by_side {
        bail!(
            "--side-by-side needs --no-encoder: the reference venv leaves out its encoder (torch), \
             so both engines are timed on the same fixed question vectors"
        );
    }
    let sizes = parse_sizes(&args.sizes).map_err(|e| anyhow::anyhow!("--sizes: {e}"))?;
    let work = args.work_dir.clone();
    std::fs::create_dir_all(&work).with_context(|| format!("cannot create {}", work.display()))?;
    std::fs::write(
        work.join("run.json"),
        serde_json::to_string_pretty(&super::environment::Environment::read())?,
    )?;
    // Every distinct command line run in this work directory, so the report can say
    // how to reproduce its cells.
    let command: Vec<String> = std::env::args().skip(1).collect();
    let commands_path = work.join("run-commands.json");
    let mut commands: Vec<Vec<String>> = std::fs::read_to_string(&commands_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    if !commands.contains(&command) {
        commands.push(command);
    }
    std::fs::write(&commands_path, serde_json::to_string(&commands)?)?;
    let python = reference_python(args);
    if args.side_by_side && !python.exists() {
        bail!("--side-by-side needs the reference: {} does not exist (run `cargo xtask reference`, or give --reference-venv)", python.display());
    }
    let needed = args.cold_runs + args.warm_questions + 1;
    let questions_file = questions::questions_path(&work, args.seed);
    let has_questions = std::fs::read_to_string(&questions_file)
        .ok()
        .and_then(|t| serde_json::from_str::<Questions>(&t).ok())
        .is_some_and(|q| q.vectors.len() >= needed);
    if !has_questions {
        if python.exists() {
            questions::export_from_reference(&python, &questions_file, args.seed, needed.max(64))?;
        } else {
            std::fs::write(
                &questions_file,
                serde_json::to_string(&Questions::generated(args.seed, needed.max(64)))?,
            )?;
            log("no reference venv: using seeded stand-in question vectors (not the reference's)");
        }
    }
    let questions = Questions::load(Some(&questions_file), args.seed, needed)?;
    let ours = EngineDirs::new(if args.side_by_side {
        work.join("rust")
    } else {
        work.clone()
    })?;
    let reference = if args.side_by_side {
        Some(EngineDirs::new(work.join("reference"))?)
    } else {
        None
    };
    let oracle = work.join("oracle.py");
    std::fs::write(&oracle, ORACLE)?;

    let cells = plan(args, &sizes);
    let bar = ProgressBar::new(cells.len() as u64)
        .with_style(progress_style())
        .with_prefix("cells");
    let mut failed_groups: std::collections::HashSet<(u64, String)> =
        std::collections::HashSet::new();
    let mut ok = 0;
    // Cells run in groups of one size and variant, in plan order. The evicted
    // one-shots form a late group of their own (after the subject variant), since
    // evicting the store would leave the subject cells a cold page cache; it reuses
    // its variant's ranking check and has no reference counterpart to run.
    let late = |c: &PlannedCell| c.mode == "cold-evicted";
    let mut groups: Vec<(u64, String, bool)> = Vec::new();
    for cell in &cells {
        let key = (cell.size, cell.variant.clone(), late(cell));
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    for (size, variant, is_late) in groups {
        let group: Vec<&PlannedCell> = cells
            .iter()
            .filter(|c| c.size == size && c.variant == variant && late(c) == is_late)
            .collect();
        let pending = group.iter().any(|c| {
            let path = ours.cell(&c.id);
            !path.exists() || (args.retry_failed && !cell_ok(&path))
        });
        let reference_pending = reference.as_ref().is_some_and(|r| {
            group
                .iter()
                .filter(|c| REFERENCE_MODES.contains(&c.mode))
                .any(|c| !cell_ok(&r.cell(&c.id)))
        });
        if !pending && !reference_pending {
            bar.inc(group.len() as u64);
            ok += group.iter().filter(|c| cell_ok(&ours.cell(&c.id))).count();
            continue;
        }
        let source = ensure_store(args, &work, size)?;
        let store = ours
            .root
            .join("stores")
            .join(source.file_name().context("store name")?);
        if args.side_by_side {
            copy_store(&source, &store)?;
        }
        let store = if args.side_by_side {
            store
        } else {
            source.clone()
        };
        let mut mismatch = None;
        if let Some(reference) = reference.as_ref().filter(|_| !is_late) {
            let reference_store = reference
                .root
                .join("stores")
                .join(source.file_name().context("store name")?);
            copy_store(&source, &reference_store)?;
            let manifest: Value =
                serde_json::from_str(&std::fs::read_to_string(generator::manifest_path(&store))?)?;
            let first = group[0].question_offset;
            let subject = (variant == "subject")
                .then(|| {
                    manifest["query_subjects"]
                        .as_array()
                        .and_then(|a| a.get(first % a.len().max(1)))
                        .and_then(|p| p[0].as_str().map(str::to_owned))
                })
                .flatten();
            // The oracle opens its own copy: it switches the file to WAL.
            let check_copy = work.join("stores").join(format!(
                "check-{}",
                source
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("store.db")
            ));
            let _ = std::fs::remove_file(&check_copy);
            std::fs::copy(&store, &check_copy)?;
            mismatch = check_ranking(
                args,
                &check_copy,
                &oracle,
                &questions,
                first,
                subject.as_deref(),
            )?;
            let _ = std::fs::remove_file(&check_copy);
            if reference_pending {
                bar.suspend(|| {
                    log(&format!(
                        "n={} {variant}: the reference's harness …",
                        size_label(size)
                    ))
                });
                let status = Command::new(python.with_file_name("particles"))
                    .args([
                        "benchmark",
                        "query-latency",
                        "run",
                        "--no-encoder",
                        "--work-dir",
                    ])
                    .arg(&reference.root)
                    .args([
                        "--sizes",
                        &size.to_string(),
                        "--variant",
                        &variant,
                        "--seed",
                        &args.seed.to_string(),
                    ])
                    .args([
                        "--cold-runs",
                        &args.cold_runs.to_string(),
                        "--warm-questions",
                        &args.warm_questions.to_string(),
                    ])
                    .args([
                        "--warm-budget",
                        &args.warm_budget.to_string(),
                        "--cell-timeout",
                        &args.cell_timeout.to_string(),
                    ])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()?;
                if !status.success() {
                    bar.suspend(|| {
                        log(&format!(
                            "n={} {variant}: the reference's harness exited with {status}",
                            size_label(size)
                        ))
                    });
                }
            }
        }
        for cell in group {
            bar.set_message(cell.id.clone());
            let path = ours.cell(&cell.id);
            if path.exists() && (cell_ok(&path) || !args.retry_failed) {
                if cell_ok(&path) {
                    ok += 1;
                } else {
                    failed_groups.insert((size, variant.clone()));
                }
                bar.inc(1);
                continue;
            }
            let spec = CellSpec {
                cell_id: cell.id.clone(),
                size,
                seed: args.seed,
                mode: cell.mode.to_owned(),
                variant: variant.clone(),
                store_path: std::fs::canonicalize(&store)?,
                result_path: std::path::absolute(&path)?,
                encoder: args.encoder(),
                question_offset: cell.question_offset,
                questions: cell.questions,
                budget_seconds: cell.budget_seconds,
                min_questions: 5,
                top_k: 40,
                questions_path: Some(std::path::absolute(&questions_file)?),
            };
            let sidecar = particles_cache::sidecar_path(&spec.store_path, None);
            match cell.mode {
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
            let status = if let Some(reason) = &mismatch {
                write_atomically(
                    &path,
                    &failure_result(&spec, "failed", "", 0.0, None, reason.clone(), vec![]),
                )?;
                "failed".to_owned()
            } else if failed_groups.contains(&(size, variant.clone())) {
                let note = format!("not run: an earlier cell failed at n={size} {variant}");
                write_atomically(
                    &path,
                    &failure_result(&spec, "skipped", "", 0.0, None, String::new(), vec![note]),
                )?;
                "skipped".to_owned()
            } else {
                run_cell(args, &ours, &spec)?
            };
            if status == "ok" {
                ok += 1;
            } else {
                failed_groups.insert((size, variant.clone()));
            }
            bar.suspend(|| log(&format!("{}: {status}", cell.id)));
            bar.inc(1);
        }
    }
    bar.finish_with_message("done");
    log(&format!(
        "done: {ok} of {} cell(s) ok. Render with `report`.",
        cells.len()
    ));
    Ok(())
}

/// Reads a file once, untimed, so its pages are in the page cache.
fn read_through(path: &Path) {
    if let Ok(mut file) = std::fs::File::open(path) {
        let _ = std::io::copy(&mut file, &mut std::io::sink());
    }
}

/// Drops a file's clean pages from the page cache (no privileges needed, unlike
/// `drop_caches`), so the next reader pays the disk.
fn evict_from_page_cache(path: &Path) {
    #[cfg(target_os = "linux")]
    if let Ok(file) = std::fs::File::open(path) {
        use std::os::fd::AsRawFd;
        // SAFETY: a valid open descriptor; the call only advises the kernel.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}

fn cell_ok(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|v| v["status"] == "ok")
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
}
