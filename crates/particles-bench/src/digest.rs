//! `benchmark digest`: the session digest (`GET /digest/{store}`) on the
//! generator's stores, ours and the reference's `build_digest_located` in one
//! run, on the same file at the same frozen instant, with their texts compared
//! byte for byte.
//!
//! Ours is timed in this process: one engine over the store, `runs` digests in
//! a row (the first reads the file from the page cache the generator left; the
//! digest keeps nothing between calls, as the reference renders it fresh). The
//! reference is timed inside its own Python process around
//! `build_digest_located` alone, which is what `GET /digest/{store}` runs.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Instant,
};

use particles_model::Timestamp;
use serde::Serialize;
use serde_json::Value;

use crate::{
    error::io_error,
    runner::{generated_store, size_label},
    Error, Result,
};

/// What one run measures.
#[derive(Debug, Clone)]
pub struct DigestOptions {
    /// Store sizes (ACTIVE beliefs).
    pub sizes: Vec<u64>,
    /// Where the stores and results go.
    pub work_dir: PathBuf,
    /// The generator's seed.
    pub seed: u64,
    /// Our digests per size.
    pub runs: usize,
    /// The reference's digests per size (0: not measured).
    pub reference_runs: usize,
    /// The reference's virtual environment.
    pub reference_venv: PathBuf,
    /// Where the Markdown page goes, when given.
    pub export: Option<PathBuf>,
}

/// One size's figures.
#[derive(Debug, Clone, Serialize)]
pub struct DigestResult {
    /// ACTIVE beliefs.
    pub size: u64,
    /// Our digests' seconds, in order.
    pub ours_seconds: Vec<f64>,
    /// The reference's digests' seconds, in order.
    pub reference_seconds: Vec<f64>,
    /// The digest's length in characters.
    pub characters: usize,
    /// Whether the reference's text equals ours byte for byte (`None`: not run).
    pub equal: Option<bool>,
    /// This process's peak resident set after our digests, in bytes.
    pub ours_peak_rss: u64,
    /// The reference process's peak resident set, in bytes (0: not run).
    pub reference_peak_rss: u64,
}

/// The instant both engines age decay and use events at.
const NOW: &str = "2026-06-01T00:00:00Z";

/// The reference's digest, timed around `build_digest_located` (its clocks
/// frozen at `argv[2]`), of the store `argv[1]`, `argv[3]` times; prints
/// `{"seconds": [...], "markdown": ...}`.
const REFERENCE_DIGEST: &str = r#"
import asyncio, json, os, sys, time
from datetime import datetime, timezone
import particles.core.scoring.decay as decay
import particles.core.scoring.utility as utility
import particles.corpus.refusals as refusals

class Frozen(datetime):
    @classmethod
    def now(cls, tz=None):
        value = datetime.fromisoformat(sys.argv[2].replace("Z", "+00:00"))
        return value if tz is None else value.astimezone(tz)

for module in (decay, utility, refusals):
    module.datetime = Frozen
os.environ["DATABASE_URL"] = "sqlite+aiosqlite:///" + sys.argv[1]

async def main():
    from particles.operations.digest import build_digest_located
    seconds, markdown = [], None
    for _ in range(int(sys.argv[3])):
        started = time.perf_counter()
        rendered = await build_digest_located("default", None)
        seconds.append(time.perf_counter() - started)
        markdown = rendered.markdown
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "markdown": markdown, "peak_rss": peak}))

asyncio.run(main())
"#;

/// Runs the benchmark and writes `digest.json` (and the page) to the work
/// directory.
///
/// # Errors
///
/// A store that cannot be built, an engine that cannot open it, a reference
/// that fails.
pub fn run_digest(options: &DigestOptions) -> Result<Vec<DigestResult>> {
    let stores = options.work_dir.join("stores");
    std::fs::create_dir_all(&stores).map_err(io_error("create", &stores))?;
    let now = Timestamp::parse(NOW).map_err(|e| Error::Engine(e.to_string()))?;
    let mut results = Vec::new();
    for &size in &options.sizes {
        let path = generated_store(&stores, options.seed, size)?;
        let (ours_seconds, markdown) = ours(&path, options.runs.max(1), now)?;
        let ours_peak_rss = crate::probe::peak_rss(crate::probe::Process::Current).unwrap_or(0);
        eprintln!(
            "n={}: ours {:?} s",
            size_label(size),
            ours_seconds
                .iter()
                .map(|s| (s * 1000.0).round() / 1000.0)
                .collect::<Vec<_>>()
        );
        let (reference_seconds, equal, reference_peak_rss) = if options.reference_runs > 0 {
            eprintln!("n={}: the reference's digest …", size_label(size));
            let (seconds, theirs, peak) = reference(options, &path, options.reference_runs)?;
            eprintln!("n={}: reference {seconds:?} s", size_label(size));
            (seconds, Some(theirs == markdown), peak)
        } else {
            (Vec::new(), None, 0)
        };
        results.push(DigestResult {
            size,
            ours_seconds,
            reference_seconds,
            characters: markdown.chars().count(),
            equal,
            ours_peak_rss,
            reference_peak_rss,
        });
    }
    let json = options.work_dir.join("digest.json");
    let text = serde_json::to_string_pretty(&results).map_err(|e| Error::Engine(e.to_string()))?;
    std::fs::write(&json, text).map_err(io_error("write", &json))?;
    if let Some(page) = &options.export {
        let text = render_page(&results);
        std::fs::write(page, text).map_err(io_error("write", page))?;
    }
    Ok(results)
}

/// Our digests of `path`, timed, and the last text.
fn ours(path: &Path, runs: usize, now: Timestamp) -> Result<(Vec<f64>, String)> {
    let config = particles_config::Config::default();
    let target = particles_engine::StoreTarget {
        handle: Some("default".to_owned()),
        path: path.to_owned(),
    };
    let selection = particles_engine::StoreSelection {
        targets: vec![target.clone()],
        federated: false,
    };
    let engine = particles_engine::Engine::new(
        particles_engine::Settings::from_config(&config),
        particles_engine::answer_settings(&config, &std::collections::HashMap::new()),
        &selection,
        &particles_engine::CacheOptions {
            no_sidecar: true,
            uncached: true,
            ..particles_engine::CacheOptions::default()
        },
        None,
    )
    .map_err(|e| Error::Engine(e.to_string()))?;
    let mut seconds = Vec::with_capacity(runs);
    let mut markdown = String::new();
    for _ in 0..runs {
        let started = Instant::now();
        let rendered = engine
            .digest(&target, "default", None, now)
            .map_err(|e| Error::Engine(e.to_string()))?;
        seconds.push(started.elapsed().as_secs_f64());
        markdown = rendered.markdown;
    }
    Ok((seconds, markdown))
}

/// The reference's digests of `path`, timed in its process, and its text.
fn reference(options: &DigestOptions, path: &Path, runs: usize) -> Result<(Vec<f64>, String, u64)> {
    let python = options.reference_venv.join("bin/python");
    let home = options.work_dir.join("reference-home");
    std::fs::create_dir_all(&home).map_err(io_error("create", &home))?;
    let config = home.join("config.yaml");
    std::fs::write(&config, "network:\n  egress: none\n").map_err(io_error("write", &config))?;
    let output = Command::new(&python)
        .args(["-c", REFERENCE_DIGEST])
        .arg(path)
        .arg(NOW)
        .arg(runs.to_string())
        .env("HOME", &home)
        .env("PARTICLES_CONFIG", &config)
        .env_remove("DATABASE_URL")
        .output()
        .map_err(|source| Error::Spawn {
            program: python.clone(),
            source,
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(Error::Reference {
            task: format!("the reference's digest of {}", path.display()),
            detail: stderr.lines().last().unwrap_or("").to_owned(),
        });
    }
    let value: Value = serde_json::from_slice(&output.stdout).map_err(|_| Error::Reference {
        task: "the reference's digest".to_owned(),
        detail: "its output is not JSON".to_owned(),
    })?;
    let seconds = value["seconds"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    let markdown = value["markdown"].as_str().unwrap_or_default().to_owned();
    Ok((seconds, markdown, value["peak_rss"].as_u64().unwrap_or(0)))
}

/// The results as a Markdown table: medians, the ratio, equality.
pub fn render_page(results: &[DigestResult]) -> String {
    let mut page = String::from(
        "| beliefs | particles-rs median (runs) | reference (runs) | ratio | characters | \
         equal | peak RSS, particles-rs / reference |\n|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        let ours = crate::stats::quantile(&r.ours_seconds, 0.5).unwrap_or(f64::NAN);
        let theirs = (!r.reference_seconds.is_empty())
            .then_some(())
            .and_then(|()| crate::stats::quantile(&r.reference_seconds, 0.5));
        page.push_str(&format!(
            "| {} | {:.3} s ({}) | {} | {} | {} | {} | {:.0} / {:.0} MiB |\n",
            size_label(r.size),
            ours,
            r.ours_seconds.len(),
            theirs.map_or("not run".to_owned(), |t| format!(
                "{t:.1} s ({})",
                r.reference_seconds.len()
            )),
            theirs.map_or("-".to_owned(), |t| format!("{:.0}x", t / ours)),
            r.characters,
            r.equal
                .map_or("-".to_owned(), |e| if e { "yes" } else { "NO" }.to_owned()),
            r.ours_peak_rss as f64 / (1024.0 * 1024.0),
            r.reference_peak_rss as f64 / (1024.0 * 1024.0),
        ));
    }
    page
}
