//! `benchmark serve-load`: the driver around the load generator ([`crate::load`]).
//!
//! It starts the engine to load (`particles-rs serve --http` on a free loopback
//! port, its rate limit off) unless a URL is given, runs the steps or a soak,
//! and writes the results in the output directory: `results.{json,md}`; with
//! the reference, `reference-results.{json,md}`, `comparison.md` and
//! `latency-vs-rate.svg`; with a writer, `writer.{json,md}`; a soak,
//! `soak.{json,md}`. An engine it started logs to `engine.log` (JSON lines, one
//! per request) and leaves its Prometheus scrape, taken as it stops, in
//! `metrics.txt`. The reference's engine is started by
//! `reference_load`, the writer is `writer_load`. Each table
//! written also goes to the caller's `print`; progress goes to stderr.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use particles_engine::Encode;

pub use crate::replica_load::ReplicaOptions;
use crate::{
    error::{io_error, write_json},
    load::{self, LoadOptions, LoadReport, StepResult},
    plot::{log_log_svg, PlotLine},
    reference_load::{self, free_port},
    writer_load, Error, Result,
};

/// Questions when no file is given (the coin store's themes; any text works,
/// each is encoded by the server).
pub const DEFAULT_QUESTIONS: &[&str] = &[
    "how are old coins graded?",
    "what is a proof coin?",
    "which metals were used for Roman coins?",
    "how should coins be cleaned?",
    "what makes a coin rare?",
    "what is the melt value of a silver dollar?",
    "who designed the Morgan dollar?",
    "how are counterfeit coins detected?",
    "what does uncirculated mean?",
    "when did the euro coins enter circulation?",
    "what is a mint mark?",
    "how much does a gold sovereign weigh?",
];

/// How long an engine started for the run may take to listen.
const ENGINE_START_TIMEOUT: Duration = Duration::from_secs(300);

/// What `benchmark serve-load` runs; the CLI's flags, one field each.
#[derive(Debug, Clone)]
pub struct ServeLoadOptions {
    /// The `particles-rs` executable that serves the engines started for the
    /// run (`serve --http`).
    pub program: PathBuf,
    /// The configuration file given to every engine started for the run (ours
    /// as `--config`, the reference's as `PARTICLES_CONFIG`).
    pub config: Option<PathBuf>,
    /// The engine to load; without it, one is started on `stores`.
    pub url: Option<String>,
    /// The store(s) of the engine started for the run.
    pub stores: Vec<String>,
    /// Offered rates, requests per second (one step each, in order).
    pub rates: Vec<f64>,
    /// Seconds each step sends for.
    pub step_seconds: f64,
    /// The most requests one step sends.
    pub max_requests: usize,
    /// Seconds open requests may still take after a step's last send.
    pub drain_seconds: f64,
    /// A file of questions, one per line (default: [`DEFAULT_QUESTIONS`]).
    pub questions: Option<PathBuf>,
    /// `top_k` of each request.
    pub top_k: u32,
    /// A bearer token for the engine, when it wants one.
    pub token: Option<String>,
    /// The arrival-time seed.
    pub seed: u64,
    /// Requests sent one at a time first, not measured.
    pub warmup: usize,
    /// The target engine's process id, for its peak RSS (with `url`).
    pub pid: Option<u32>,
    /// `--max-inflight` of the engine started for the run.
    pub max_inflight: usize,
    /// Where the results are written.
    pub out: PathBuf,
    /// A soak instead of the steps: the first rate, at fixed intervals, for
    /// this many minutes.
    pub soak_minutes: Option<f64>,
    /// Seconds between the soak's RSS samples.
    pub sample_seconds: f64,
    /// The reference's `particles` executable: its engine is loaded too, on a
    /// copy of the one store file, at `reference_rates`.
    pub reference: Option<PathBuf>,
    /// The writer variant (with `reference`): writes per second through the
    /// reference's write route.
    pub writer_rate: Option<f64>,
    /// Offered rates for the reference's engine.
    pub reference_rates: Vec<f64>,
    /// The replica variant (with `writer_rate`): Litestream, the nodes and
    /// the interval.
    pub replica: Option<ReplicaOptions>,
}

/// Runs `benchmark serve-load`: the steps (and the reference's, or the
/// writer's), or a soak, with the files of the module's doc written in
/// `options.out`; `print` gets each table as it is written.
///
/// # Errors
///
/// [`Error::Options`] for options that do not go together, [`Error::Load`]
/// when an engine does not start or answer, [`Error::Io`] when a file cannot be
/// read or written, and the errors of [`load::run`] and [`load::soak`].
pub fn run(options: &ServeLoadOptions, mut print: impl FnMut(&str)) -> Result<()> {
    let questions: Vec<String> = match &options.questions {
        Some(path) => std::fs::read_to_string(path)
            .map_err(io_error("read", path))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        None => DEFAULT_QUESTIONS.iter().map(|q| (*q).to_owned()).collect(),
    };
    match (options.writer_rate, &options.replica) {
        (Some(rate), Some(replica)) => {
            return run_replica_variant(options, questions, rate, replica, print)
        }
        (Some(rate), None) => return run_writer_variant(options, questions, rate, print),
        (None, Some(_)) => {
            return Err(Error::Options {
                reason: "the replica variant (--litestream) needs --writer-rate, --reference and \
                         one --store file: the reference's engine writes the primary"
                    .to_owned(),
            })
        }
        (None, None) => {}
    }
    let (child, url) = match &options.url {
        Some(url) => (None, url.clone()),
        None => {
            let (child, url) = start_engine(options, &options.stores, None, "engine")?;
            (Some(child), url)
        }
    };
    let load_options = load_options(
        options,
        url,
        questions,
        child.as_ref().map(|s| s.child.id()),
    );
    if let Some(minutes) = options.soak_minutes {
        let soak = load::SoakOptions {
            rate: options.rates.first().copied().unwrap_or(1.0),
            duration: Duration::from_secs_f64(minutes.max(0.0) * 60.0),
            sample: Duration::from_secs_f64(options.sample_seconds.max(0.1)),
            load: load_options,
        };
        let report = load::soak(&soak, |sample, sent| {
            eprintln!(
                "{:>6.0} s: {sent} sent, RSS {:.1} MiB",
                sample.seconds,
                sample.rss_bytes as f64 / 1_048_576.0
            );
        });
        stop_engine(child, &options.out);
        let report = report?;
        create_dir(&options.out)?;
        write_json(&options.out.join("soak.json"), &report)?;
        let table = load::soak_markdown(&report);
        write_text(&options.out.join("soak.md"), &table)?;
        print(&table);
        return Ok(());
    }
    let reference_store = match (&options.reference, options.stores.as_slice()) {
        (None, _) => None,
        (Some(_), [store]) if Path::new(store).is_file() => Some(PathBuf::from(store)),
        (Some(_), _) => {
            return Err(Error::Options {
                reason: "--reference needs exactly one --store naming a store file (the \
                         reference's engine serves a copy of it)"
                    .to_owned(),
            })
        }
    };
    let report = load::run(&load_options, print_step);
    stop_engine(child, &options.out);
    let report = report?;
    create_dir(&options.out)?;
    let table = write_report(&options.out, "results", &report)?;
    print(&table);
    if let (Some(particles), Some(store)) = (&options.reference, reference_store) {
        let encode = encoder("--reference")?;
        let work = options.out.join("reference");
        eprintln!(
            "starting the reference's engine on a copy of {}",
            store.display()
        );
        let engine = reference_load::start(
            particles,
            &store,
            &load_options.questions,
            &encode,
            options.config.as_deref(),
            &work,
        )?;
        let reference_options = LoadOptions {
            url: engine.url.clone(),
            rates: options.reference_rates.clone(),
            server_pid: Some(engine.pid()),
            ..load_options
        };
        let theirs = load::run(&reference_options, print_step);
        drop(engine);
        let theirs = theirs?;
        let table = write_report(&options.out, "reference-results", &theirs)?;
        print(&table);
        let comparison = load::comparison_markdown(&report, &theirs);
        write_text(&options.out.join("comparison.md"), &comparison)?;
        print(&comparison);
        write_text(
            &options.out.join("latency-vs-rate.svg"),
            &latency_vs_rate_svg(&report, &theirs),
        )?;
    }
    Ok(())
}

/// This build's question encoder, which the runs beside the reference need:
/// both engines rank our encoder's vector for each question.
fn encoder(flag: &str) -> Result<Encode> {
    let needs = |detail: String| Error::Options {
        reason: format!(
            "{flag} needs this build's question encoder: both engines rank our encoder's \
             vector for each question ({detail})"
        ),
    };
    match crate::cell::load_encoder(true) {
        Ok((Some(encode), _)) => Ok(encode),
        Ok((None, _)) => Err(needs("none was loaded".to_owned())),
        Err(error) => Err(needs(error.to_string())),
    }
}

/// An engine this run started: the process, its URL, and its metrics
/// listener's URL.
struct Started {
    child: Child,
    metrics: String,
    /// Its log is `<out>/<name>.log`, its metrics `<out>/<name>-metrics.txt`
    /// (`metrics.txt` for the one engine of a plain run, `engine`).
    name: String,
}

/// Starts `particles-rs serve --http` on a free loopback port, its log (JSON
/// lines) in `<out>/<name>.log` and its metrics on another free port; returns
/// it and its URL once it accepts connections.
fn start_engine(
    options: &ServeLoadOptions,
    stores: &[String],
    upstream: Option<&str>,
    name: &str,
) -> Result<(Started, String)> {
    let port = free_port()?;
    let metrics_port = free_port()?;
    create_dir(&options.out)?;
    let log_path = options.out.join(format!("{name}.log"));
    let log = std::fs::File::create(&log_path).map_err(io_error("write", &log_path))?;
    let mut command = Command::new(&options.program);
    if let Some(config) = &options.config {
        command.arg("--config").arg(config);
    }
    command
        .args(["serve", "--http", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--max-inflight", &options.max_inflight.to_string()])
        .args(["--log-format", "json", "--metrics-listen"])
        .arg(format!("127.0.0.1:{metrics_port}"))
        .env("PARTICLES_API_RATE_LIMIT_PER_MINUTE", "0")
        .stdin(Stdio::null())
        .stderr(log);
    for store in stores {
        command.arg("--store").arg(store);
    }
    if let Some(upstream) = upstream {
        command.args(["--upstream", upstream]);
    }
    let spawn_error = |source| Error::Spawn {
        program: options.program.clone(),
        source,
    };
    let mut child = command.spawn().map_err(spawn_error)?;
    let deadline = Instant::now() + ENGINE_START_TIMEOUT;
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            let started = Started {
                child,
                metrics: format!("http://127.0.0.1:{metrics_port}/metrics"),
                name: name.to_owned(),
            };
            return Ok((started, format!("http://127.0.0.1:{port}")));
        }
        if let Some(status) = child.try_wait().map_err(spawn_error)? {
            return Err(Error::Load {
                reason: format!(
                    "the engine exited before it listened ({status}); its log is {}",
                    log_path.display()
                ),
            });
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err(Error::Load {
                reason: format!(
                    "the engine did not listen within {} s",
                    ENGINE_START_TIMEOUT.as_secs()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The load generator's options, aimed at `url`.
fn load_options(
    options: &ServeLoadOptions,
    url: String,
    questions: Vec<String>,
    started_pid: Option<u32>,
) -> LoadOptions {
    LoadOptions {
        url,
        rates: options.rates.clone(),
        step: Duration::from_secs_f64(options.step_seconds),
        max_requests: options.max_requests,
        drain: Duration::from_secs_f64(options.drain_seconds),
        questions,
        top_k: options.top_k,
        token: options.token.clone(),
        seed: options.seed,
        warmup: options.warmup,
        server_pid: options.pid.or(started_pid),
        positions: None,
    }
}

/// `--writer-rate`: the reference's engine on a copy of the store, the writer
/// alone against it, then our engine on the same copy (the reference's engine
/// as its upstream) loaded at `--rates` while the writer writes through it.
fn run_writer_variant(
    options: &ServeLoadOptions,
    questions: Vec<String>,
    rate: f64,
    mut print: impl FnMut(&str),
) -> Result<()> {
    let (upstream, mut ids) = start_primary(options, &questions, rate, 1 + options.rates.len())?;
    let copy = upstream.store.clone();
    let writer_panicked = |_| Error::Load {
        reason: "the writer thread panicked".to_owned(),
    };
    // The writer alone: straight to the reference's engine, ours not running.
    let stop = AtomicBool::new(false);
    let alone = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            writer_load::run(
                "alone, straight to the reference's engine",
                &upstream.url,
                &mut ids,
                rate,
                true,
                &stop,
            )
        });
        std::thread::sleep(Duration::from_secs_f64(options.step_seconds));
        stop.store(true, Ordering::Relaxed);
        writer.join()
    })
    .map_err(writer_panicked)?;
    eprintln!("{}", writer_load::markdown(std::slice::from_ref(&alone)));
    writes_accepted(&alone)?;

    let (child, url) = start_engine(
        options,
        &[copy.display().to_string()],
        Some(&upstream.url),
        "engine",
    )?;
    let load_options = load_options(options, url.clone(), questions, Some(child.child.id()));
    let stop = AtomicBool::new(false);
    let (report, through) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            writer_load::run(
                "through particles-rs (forwarded) during its steps",
                &url,
                &mut ids,
                rate,
                false,
                &stop,
            )
        });
        let report = load::run(&load_options, print_step);
        stop.store(true, Ordering::Relaxed);
        (report, writer.join())
    });
    stop_engine(Some(child), &options.out);
    drop(upstream);
    let through = through.map_err(writer_panicked)?;
    let report = report?;
    let table = write_report(&options.out, "results", &report)?;
    print(&table);
    let writers = [alone, through];
    write_json(&options.out.join("writer.json"), &writers)?;
    let writer_table = writer_load::markdown(&writers);
    write_text(&options.out.join("writer.md"), &writer_table)?;
    print(&writer_table);
    for writer in &writers {
        for error in &writer.errors {
            eprintln!("writer error ({}): {error}", writer.phase);
        }
    }
    Ok(())
}

/// The reference's engine on a copy of the one `--store` file (the primary
/// the writer writes), and ids for the writer to retract over `phases`
/// phases of `--step-seconds` and `--drain-seconds` at `rate`.
fn start_primary(
    options: &ServeLoadOptions,
    questions: &[String],
    rate: f64,
    phases: usize,
) -> Result<(reference_load::ReferenceEngine, Vec<String>)> {
    let refuse = |reason: String| Err(Error::Options { reason });
    let (Some(particles), [store]) = (&options.reference, options.stores.as_slice()) else {
        return refuse(
            "--writer-rate needs --reference and exactly one --store naming a store file"
                .to_owned(),
        );
    };
    if !Path::new(store).is_file() {
        return refuse(format!(
            "--writer-rate needs --store to name a store file (the reference's engine \
             serves a copy of it); {store} is not a file"
        ));
    }
    if !(rate.is_finite() && rate > 0.0) {
        return refuse(format!(
            "--writer-rate must be a positive number of writes per second, not {rate}"
        ));
    }
    let encode = encoder("--writer-rate")?;
    create_dir(&options.out)?;
    let work = options.out.join("reference");
    eprintln!("starting the reference's engine on a copy of {store}");
    let upstream = reference_load::start(
        particles,
        Path::new(store),
        questions,
        &encode,
        options.config.as_deref(),
        &work,
    )?;
    let budget = rate * (options.step_seconds + options.drain_seconds) * phases as f64;
    let ids = writer_load::retractable_ids(&upstream.store, budget.ceil() as usize + 16)?;
    Ok((upstream, ids))
}

/// An error unless the reference's engine accepted at least one of the
/// writer's writes: the variants need its belief writes on.
fn writes_accepted(writer: &writer_load::WriterReport) -> Result<()> {
    if writer.ok > 0 {
        return Ok(());
    }
    Err(Error::Options {
        reason: format!(
            "the reference's engine refused every write ({}); the writer variant needs its \
             belief writes on: `mcp: {{write: {{enabled_stores: [default], asserter_identity: \
             IDENTITY}}}}` in --config, IDENTITY the stores' `asserted_by` (retraction is \
             own-beliefs-only)",
            writer
                .errors
                .first()
                .map_or("no write was sent", String::as_str)
        ),
    })
}

/// `--litestream`: the writer at `rate` on the primary (the reference's
/// engine on a copy of the store) in both phases. First our engine over the
/// primary's own file, loaded at `--rates`; then Litestream replicating the
/// primary to a file replica, `--replica-nodes` nodes each over its
/// follow-mode copy, all loaded at `--rates` at once. See
/// [`crate::replica_load`].
fn run_replica_variant(
    options: &ServeLoadOptions,
    questions: Vec<String>,
    rate: f64,
    replica: &ReplicaOptions,
    mut print: impl FnMut(&str),
) -> Result<()> {
    use crate::replica_load;
    if replica.nodes == 0 {
        return Err(Error::Options {
            reason: "--replica-nodes must be at least 1".to_owned(),
        });
    }
    let (upstream, mut ids) = start_primary(options, &questions, rate, 2 * options.rates.len())?;
    let primary = upstream.store.clone();

    // The baseline: our engine over the primary's file, the writer writing.
    eprintln!("phase 1: our engine over the primary's own file");
    let (local, url) = start_engine(options, &[primary.display().to_string()], None, "local")?;
    let sink = replica_load::positions();
    let local_load = LoadOptions {
        positions: Some(sink.clone()),
        ..load_options(options, url, questions.clone(), Some(local.child.id()))
    };
    let (report, local_writer, commits) = replica_load::with_writer(
        &primary,
        &upstream.url,
        "local phase, straight to the reference's engine",
        &mut ids,
        rate,
        || load::run(&local_load, print_step),
    )?;
    stop_engine(Some(local), &options.out);
    writes_accepted(&local_writer)?;
    let local = replica_load::node_result("local", report?, &commits, &sink);

    // Litestream, the nodes, and all of them loaded at once.
    eprintln!(
        "phase 2: Litestream and {} node(s), each over its follow-mode copy",
        replica.nodes
    );
    let work = options.out.join("replica");
    let (replicate, config) = replica_load::start_replication(replica, &primary, &work)?;
    let mut followers = Vec::new();
    let mut engines = Vec::new();
    for i in 0..replica.nodes {
        let name = format!("node-{}", i + 1);
        let (follower, store) =
            replica_load::start_follower(replica, &config, &primary, &work.join(&name))?;
        followers.push(follower);
        let (engine, url) = start_engine(options, &[store.display().to_string()], None, &name)?;
        engines.push((name, engine, url));
    }
    let sinks: Vec<_> = engines.iter().map(|_| replica_load::positions()).collect();
    let loads: Vec<LoadOptions> = engines
        .iter()
        .zip(&sinks)
        .enumerate()
        .map(|(i, ((_, engine, url), sink))| LoadOptions {
            positions: Some(sink.clone()),
            seed: options.seed.wrapping_add(i as u64 + 1),
            ..load_options(
                options,
                url.clone(),
                questions.clone(),
                Some(engine.child.id()),
            )
        })
        .collect();
    let (reports, replica_writer, commits) = replica_load::with_writer(
        &primary,
        &upstream.url,
        "replica phase, straight to the reference's engine",
        &mut ids,
        rate,
        || {
            std::thread::scope(|scope| {
                let runs: Vec<_> = loads
                    .iter()
                    .map(|load| scope.spawn(move || load::run(load, |_| {})))
                    .collect();
                runs.into_iter()
                    .map(|run| {
                        run.join().unwrap_or_else(|_| {
                            Err(Error::Load {
                                reason: "a node's load thread panicked".to_owned(),
                            })
                        })
                    })
                    .collect::<Vec<_>>()
            })
        },
    )?;
    let mut replicas = Vec::new();
    for (((name, engine, _), report), sink) in engines.into_iter().zip(reports).zip(&sinks) {
        stop_engine(Some(engine), &options.out);
        let report = report?;
        for step in &report.steps {
            eprint!("{name}: ");
            print_step(step);
        }
        replicas.push(replica_load::node_result(&name, report, &commits, sink));
    }
    drop(followers);
    drop(replicate);
    drop(upstream);
    let report = replica_load::ReplicaReport {
        cpu: load::cpu_name(),
        nodes: replica.nodes,
        interval_seconds: replica.interval.as_secs_f64(),
        writer_rate: rate,
        local,
        replica_lag: replica_load::replica_lag(&commits, &sinks),
        replicas,
        writers: vec![local_writer, replica_writer],
    };
    let table = replica_load::write(&options.out, &report)?;
    print(&table);
    Ok(())
}

fn print_step(step: &StepResult) {
    let seconds = |value: Option<f64>| value.map_or("-".to_owned(), |v| format!("{v:.4} s"));
    eprintln!(
        "rate {}/s: {} sent, {} ok, p50 {}, p99 {}",
        step.rate,
        step.sent,
        step.ok,
        seconds(step.p50),
        seconds(step.p99)
    );
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io_error("create", dir))
}

fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(io_error("write", path))
}

/// Writes `<name>.json` and `<name>.md` in `out`; returns the table.
fn write_report(out: &Path, name: &str, report: &LoadReport) -> Result<String> {
    write_json(&out.join(format!("{name}.json")), report)?;
    let table = load::markdown(report);
    write_text(&out.join(format!("{name}.md")), &table)?;
    Ok(table)
}

/// p50 and p99 against the offered rate, both engines, log-log; the reference's
/// lines dashed. Steps that did not answer every request are still drawn (their
/// latencies are of what was answered), which is where the lines turn up.
fn latency_vs_rate_svg(ours: &LoadReport, theirs: &LoadReport) -> String {
    let line = |name: &str,
                color: usize,
                dashed: bool,
                report: &LoadReport,
                pick: fn(&StepResult) -> Option<f64>| PlotLine {
        name: name.to_owned(),
        color,
        dashed,
        points: report
            .steps
            .iter()
            .filter_map(|step| pick(step).map(|y| (step.rate, y)))
            .collect(),
    };
    log_log_svg(
        &[
            line("particles-rs p50", 0, false, ours, |s| s.p50),
            line("particles-rs p99", 1, false, ours, |s| s.p99),
            line("reference p50", 0, true, theirs, |s| s.p50),
            line("reference p99", 1, true, theirs, |s| s.p99),
        ],
        "offered rate, requests per second (log)",
        "latency from scheduled send (log)",
        |x| format!("{x}"),
    )
}

/// Stops the engine started for the run, if any, first saving its metrics in
/// `<out>/metrics.txt` (a scrape that fails is said, not fatal).
fn stop_engine(started: Option<Started>, out: &Path) {
    if let Some(Started {
        mut child,
        metrics,
        name,
    }) = started
    {
        let scraped = load::BlockingClient::new()
            .and_then(|client| client.get(&metrics, Duration::from_secs(10)));
        match scraped {
            Ok((200, text)) => {
                let path = out.join(if name == "engine" {
                    "metrics.txt".to_owned()
                } else {
                    format!("{name}-metrics.txt")
                });
                if let Err(error) = write_text(&path, &text) {
                    eprintln!("warning: the engine's metrics were not saved: {error}");
                }
            }
            Ok((status, _)) => eprintln!("warning: {metrics} answered {status}; no metrics saved"),
            Err(error) => eprintln!("warning: the engine's metrics were not scraped: {error}"),
        }
        // SIGTERM, not Child::kill's SIGKILL: the engine drains and writes its
        // sidecar. kill(1) sends it without an `unsafe` block (this crate
        // allows one, for `posix_fadvise`); if kill(1) cannot run, SIGKILL
        // still ends the child rather than leaving it behind.
        let terminated = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .is_ok_and(|status| status.success());
        if !terminated {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
}
