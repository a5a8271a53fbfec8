//! `serve --http`, `mcp` and `benchmark serve-load`: thin dispatch into
//! particles-server. The engine is built here as the other verbs build their
//! stores (configuration, `--store`, the sidecar), with the question encoder
//! loaded once at start.

use std::{path::PathBuf, sync::Arc};

use anyhow::{Context, Result};
use clap::Args;
use particles_engine::Engine;

use crate::config_cmd::Configured;

/// The engine over `--store` (or the configured default store) and the file
/// of its first store.
fn build_engine(
    configured: &Configured,
    stores: &[String],
    sidecar: &crate::query::SidecarArgs,
    scan: &crate::query::ScanArgs,
    model_dir: Option<&std::path::Path>,
) -> Result<(Engine, PathBuf)> {
    let selection = configured.stores(stores)?;
    let first = selection
        .targets
        .first()
        .map(|t| t.path.clone())
        .context("no store to serve")?;
    let engine = crate::engine::build(
        configured,
        &selection,
        sidecar,
        model_dir,
        crate::engine::Lifetime::Server(scan),
    )?;
    Ok((engine, first))
}

#[derive(Debug, Args)]
pub(crate) struct HttpArgs {
    /// The address to listen on. Loopback by default; any other address needs
    /// PARTICLES_API_KEY set (bearer auth), as the reference's engine does.
    #[arg(long, value_name = "ADDR", default_value = particles_server::DEFAULT_LISTEN)]
    pub(crate) listen: std::net::SocketAddr,

    /// The reference's engine (`particles engine serve HOST:PORT`), e.g.
    /// http://127.0.0.1:8000: every route not answered here is forwarded to it.
    #[arg(long, value_name = "URL")]
    pub(crate) upstream: Option<String>,

    /// Queries answered at once; more get a 503 until one finishes.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub(crate) max_inflight: usize,
}

pub(crate) fn run_http(
    args: &HttpArgs,
    stores: &[String],
    sidecar: &crate::query::SidecarArgs,
    scan: &crate::query::ScanArgs,
    model_dir: Option<&std::path::Path>,
    configured: &Configured,
) -> Result<()> {
    let (engine, store) = build_engine(configured, stores, sidecar, scan, model_dir)?;
    let backend = Arc::new(particles_server::Backend::new(
        Arc::new(engine),
        &configured.loaded,
        &store,
    ));
    let options = particles_server::HttpOptions {
        listen: args.listen,
        upstream: args.upstream.clone(),
        limits: particles_server::Limits {
            max_inflight_queries: args.max_inflight,
            ..Default::default()
        },
        key: particles_server::KeySource::Environment,
    };
    let key = particles_server::ApiKey::from_value(std::env::var("PARTICLES_API_KEY").ok());
    particles_server::run_http(backend.clone(), options, |address, upstream| {
        let auth = match key {
            particles_server::ApiKey::Dev => "disabled (dev mode, loopback only)",
            particles_server::ApiKey::Real(_) => "PARTICLES_API_KEY",
        };
        eprintln!(
            "particles-rs engine on http://{address}  (bearer auth: {auth}; forwarding: {})",
            upstream.unwrap_or("off, other routes get 501")
        );
        eprintln!("Store: {}", store.display());
    })?;
    for note in backend.engine().persist() {
        eprintln!("note: {note}");
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// The store, as `query --store` takes it (default: the configured store).
    #[arg(long = "store", value_name = "HANDLE|PATH")]
    stores: Vec<String>,

    /// Bind this server to the project of its working directory (the only value
    /// is `cwd`), as the reference's `mcp serve --project-observer cwd` does.
    #[arg(long, value_name = "cwd", value_parser = ["cwd"])]
    project_observer: Option<String>,

    /// The encoder's model directory (default: PARTICLES_MODEL_DIR, else the
    /// user cache).
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,

    #[command(flatten)]
    sidecar: crate::query::SidecarArgs,

    #[command(flatten)]
    scan: crate::query::ScanArgs,
}

pub(crate) fn run_mcp(args: &McpArgs, configured: &Configured) -> Result<()> {
    let (engine, store) = build_engine(
        configured,
        &args.stores,
        &args.sidecar,
        &args.scan,
        args.model_dir.as_deref(),
    )?;
    let backend = Arc::new(particles_server::Backend::new(
        Arc::new(engine),
        &configured.loaded,
        &store,
    ));
    let options = particles_server::McpOptions {
        project_observer: args
            .project_observer
            .as_ref()
            .map(|_| configured.env.cwd.clone()),
    };
    particles_server::run_mcp_stdio(backend.clone(), options)?;
    for note in backend.engine().persist() {
        eprintln!("note: {note}");
    }
    Ok(())
}

/// Questions for `benchmark serve-load` when no file is given (the coin
/// store's themes; any text works, each is encoded by the server).
const DEFAULT_QUESTIONS: &[&str] = &[
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

    /// Offered rates for the reference's engine (with --reference).
    #[arg(
        long,
        value_name = "R,R,...",
        value_delimiter = ',',
        default_value = "0.1,0.2,0.3,0.4"
    )]
    reference_rates: Vec<f64>,
}

/// Starts `particles-rs serve --http` on a free loopback port; returns the
/// child and its URL once it accepts connections.
fn start_engine(
    args: &LoadArgs,
    config: Option<&std::path::Path>,
    stores: &[String],
    upstream: Option<&str>,
) -> Result<(std::process::Child, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let mut command = std::process::Command::new(exe);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    command
        .args(["serve", "--http", "--listen"])
        .arg(format!("127.0.0.1:{port}"))
        .args(["--max-inflight", &args.max_inflight.to_string()])
        .env("PARTICLES_API_RATE_LIMIT_PER_MINUTE", "0")
        .stdin(std::process::Stdio::null());
    for store in stores {
        command.arg("--store").arg(store);
    }
    if let Some(upstream) = upstream {
        command.args(["--upstream", upstream]);
    }
    let mut child = command.spawn().context("cannot start the engine")?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((child, format!("http://127.0.0.1:{port}")));
        }
        if let Some(status) = child.try_wait()? {
            anyhow::bail!("the engine exited before it listened ({status})");
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            anyhow::bail!("the engine did not listen within 300 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

pub(crate) fn run_serve_load(args: &LoadArgs, config: Option<&std::path::Path>) -> Result<()> {
    let questions: Vec<String> = match &args.questions {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect(),
        None => DEFAULT_QUESTIONS.iter().map(|q| (*q).to_owned()).collect(),
    };
    if let Some(rate) = args.writer_rate {
        return run_writer_variant(args, config, questions, rate);
    }
    let (child, url) = match &args.url {
        Some(url) => (None, url.clone()),
        None => {
            let (child, url) = start_engine(args, config, &args.stores, None)?;
            (Some(child), url)
        }
    };
    let options = load_options(
        args,
        url,
        questions,
        child.as_ref().map(std::process::Child::id),
    );
    if let Some(minutes) = args.soak_minutes {
        let soak = particles_server::load::SoakOptions {
            rate: args.rates.first().copied().unwrap_or(1.0),
            duration: std::time::Duration::from_secs_f64(minutes.max(0.0) * 60.0),
            sample: std::time::Duration::from_secs_f64(args.sample_seconds.max(0.1)),
            load: options,
        };
        let report = particles_server::load::soak(&soak, |sample, sent| {
            eprintln!(
                "{:>6.0} s: {sent} sent, RSS {:.1} MiB",
                sample.seconds,
                sample.rss_bytes as f64 / 1_048_576.0
            );
        });
        stop_engine(child);
        let report = report?;
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("cannot create {}", args.out.display()))?;
        let json_path = args.out.join("soak.json");
        std::fs::write(&json_path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("cannot write {}", json_path.display()))?;
        let table = particles_server::load::soak_markdown(&report);
        std::fs::write(args.out.join("soak.md"), &table)?;
        println!("{table}");
        return Ok(());
    }
    let reference_store = match (&args.reference, args.stores.as_slice()) {
        (None, _) => None,
        (Some(_), [store]) if std::path::Path::new(store).is_file() => Some(PathBuf::from(store)),
        (Some(_), _) => anyhow::bail!(
            "--reference needs exactly one --store naming a store file (the reference's \
             engine serves a copy of it)"
        ),
    };
    let report = particles_server::load::run(&options, print_step);
    stop_engine(child);
    let report = report?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let table = write_report(&args.out, "results", &report)?;
    println!("{table}");
    if let (Some(particles), Some(store)) = (&args.reference, reference_store) {
        let encode = crate::engine::load_encoder(None).context(
            "--reference needs this build's question encoder: both engines rank our \
             encoder's vector for each question",
        )?;
        let work = args.out.join("reference");
        eprintln!(
            "starting the reference's engine on a copy of {}",
            store.display()
        );
        let engine = crate::reference_load::start(
            particles,
            &store,
            &options.questions,
            &encode,
            config,
            &work,
        )?;
        let reference_options = particles_server::load::LoadOptions {
            url: engine.url.clone(),
            rates: args.reference_rates.clone(),
            server_pid: Some(engine.pid()),
            ..options
        };
        let theirs = particles_server::load::run(&reference_options, print_step);
        drop(engine);
        let theirs = theirs?;
        let table = write_report(&args.out, "reference-results", &theirs)?;
        println!("{table}");
        let comparison = particles_server::load::comparison_markdown(&report, &theirs);
        std::fs::write(args.out.join("comparison.md"), &comparison)?;
        println!("{comparison}");
        std::fs::write(
            args.out.join("latency-vs-rate.svg"),
            latency_vs_rate_svg(&report, &theirs),
        )?;
    }
    Ok(())
}

/// The load generator's options from the flags, aimed at `url`.
fn load_options(
    args: &LoadArgs,
    url: String,
    questions: Vec<String>,
    started_pid: Option<u32>,
) -> particles_server::load::LoadOptions {
    particles_server::load::LoadOptions {
        url,
        rates: args.rates.clone(),
        step: std::time::Duration::from_secs_f64(args.step_seconds),
        max_requests: args.max_requests,
        drain: std::time::Duration::from_secs_f64(args.drain_seconds),
        questions,
        top_k: args.top_k,
        token: std::env::var("PARTICLES_ENGINE_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
        seed: args.seed,
        warmup: args.warmup,
        server_pid: args.pid.or(started_pid),
    }
}

/// `--writer-rate`: the reference's engine on a copy of the store, the writer
/// alone against it, then our engine on the same copy (the reference's engine
/// as its upstream) loaded at `--rates` while the writer writes through it.
fn run_writer_variant(
    args: &LoadArgs,
    config: Option<&std::path::Path>,
    questions: Vec<String>,
    rate: f64,
) -> Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (Some(particles), [store]) = (&args.reference, args.stores.as_slice()) else {
        anyhow::bail!(
            "--writer-rate needs --reference and exactly one --store naming a store file"
        );
    };
    if !std::path::Path::new(store).is_file() {
        anyhow::bail!(
            "--writer-rate needs --store to name a store file (the reference's engine \
             serves a copy of it); {store} is not a file"
        );
    }
    if !(rate.is_finite() && rate > 0.0) {
        anyhow::bail!("--writer-rate must be a positive number of writes per second, not {rate}");
    }
    let encode = crate::engine::load_encoder(None).context(
        "--writer-rate needs this build's question encoder: both engines rank our \
         encoder's vector for each question",
    )?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let work = args.out.join("reference");
    eprintln!("starting the reference's engine on a copy of {store}");
    let upstream = crate::reference_load::start(
        particles,
        std::path::Path::new(store),
        &questions,
        &encode,
        config,
        &work,
    )?;
    let copy = upstream.store.clone();
    let phases = 1 + args.rates.len();
    let budget = rate * (args.step_seconds + args.drain_seconds) * phases as f64;
    let mut ids = crate::writer_load::retractable_ids(&copy, budget.ceil() as usize + 16)?;

    // The writer alone: straight to the reference's engine, ours not running.
    let stop = AtomicBool::new(false);
    let alone = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            crate::writer_load::run(
                "alone, straight to the reference's engine",
                &upstream.url,
                &mut ids,
                rate,
                true,
                &stop,
            )
        });
        std::thread::sleep(std::time::Duration::from_secs_f64(args.step_seconds));
        stop.store(true, Ordering::Relaxed);
        writer.join()
    })
    .map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    eprintln!(
        "{}",
        crate::writer_load::markdown(std::slice::from_ref(&alone))
    );
    if alone.ok == 0 {
        anyhow::bail!(
            "the reference's engine refused every write ({}); the writer variant needs its \
             belief writes on: `mcp: {{write: {{enabled_stores: [default], asserter_identity: \
             IDENTITY}}}}` in --config, IDENTITY the stores' `asserted_by` (retraction is \
             own-beliefs-only)",
            alone
                .errors
                .first()
                .map_or("no write was sent", String::as_str)
        );
    }

    let (child, url) = start_engine(
        args,
        config,
        &[copy.display().to_string()],
        Some(&upstream.url),
    )?;
    let options = load_options(args, url.clone(), questions, Some(child.id()));
    let stop = AtomicBool::new(false);
    let (report, through) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            crate::writer_load::run(
                "through particles-rs (forwarded) during its steps",
                &url,
                &mut ids,
                rate,
                false,
                &stop,
            )
        });
        let report = particles_server::load::run(&options, print_step);
        stop.store(true, Ordering::Relaxed);
        (report, writer.join())
    });
    stop_engine(Some(child));
    drop(upstream);
    let through = through.map_err(|_| anyhow::anyhow!("the writer thread panicked"))?;
    let report = report?;
    let table = write_report(&args.out, "results", &report)?;
    println!("{table}");
    let writers = [alone, through];
    std::fs::write(
        args.out.join("writer.json"),
        serde_json::to_vec_pretty(&writers)?,
    )?;
    let writer_table = crate::writer_load::markdown(&writers);
    std::fs::write(args.out.join("writer.md"), &writer_table)?;
    println!("{writer_table}");
    for writer in &writers {
        for error in &writer.errors {
            eprintln!("writer error ({}): {error}", writer.phase);
        }
    }
    Ok(())
}

fn print_step(step: &particles_server::load::StepResult) {
    eprintln!(
        "rate {}/s: {} sent, {} ok, p50 {:?} s, p99 {:?} s",
        step.rate, step.sent, step.ok, step.p50, step.p99
    );
}

/// Writes `<name>.json` and `<name>.md` in `out`; returns the table.
fn write_report(
    out: &std::path::Path,
    name: &str,
    report: &particles_server::load::LoadReport,
) -> Result<String> {
    let json_path = out.join(format!("{name}.json"));
    std::fs::write(&json_path, serde_json::to_vec_pretty(report)?)
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    let table = particles_server::load::markdown(report);
    let md_path = out.join(format!("{name}.md"));
    std::fs::write(&md_path, &table)
        .with_context(|| format!("cannot write {}", md_path.display()))?;
    Ok(table)
}

/// p50 and p99 against the offered rate, both engines, log-log; the reference's
/// lines dashed. Steps that did not answer every request are still drawn (their
/// latencies are of what was answered), which is where the lines turn up.
fn latency_vs_rate_svg(
    ours: &particles_server::load::LoadReport,
    theirs: &particles_server::load::LoadReport,
) -> String {
    let line = |name: &str,
                color: usize,
                dashed: bool,
                report: &particles_server::load::LoadReport,
                pick: fn(&particles_server::load::StepResult) -> Option<f64>| {
        particles_bench::PlotLine {
            name: name.to_owned(),
            color,
            dashed,
            points: report
                .steps
                .iter()
                .filter_map(|step| pick(step).map(|y| (step.rate, y)))
                .collect(),
        }
    };
    particles_bench::log_log_svg(
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

/// Stops the engine started for the run, if any.
fn stop_engine(child: Option<std::process::Child>) {
    if let Some(mut child) = child {
        // SIGTERM, not Child::kill's SIGKILL: the engine drains and writes its
        // sidecar. kill(1) sends it without unsafe code (this crate forbids it);
        // if kill(1) cannot run, SIGKILL still ends the child rather than
        // leaving it behind.
        let terminated = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .is_ok_and(|status| status.success());
        if !terminated {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
}
