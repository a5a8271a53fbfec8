//! An open-loop load generator for the HTTP engine (`benchmark serve-load`).
//!
//! Requests arrive as a Poisson process at each rate in turn, whatever the
//! server's pace: each request's send time is drawn in advance (exponential
//! gaps, a seeded RNG), and its latency runs from that scheduled time to the
//! last byte of the answer, so time spent queueing, in the client or the
//! server, counts. Every step is bounded in time and in requests; requests
//! still open when the step's drain time ends count as timed out. Per step the
//! report gives p50/p99/p99.9 ([`crate::stats::quantile`]), the errors by
//! kind, the achieved throughput and the server's peak RSS (the peak reset
//! before each step).

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::{
    probe::{self, Process},
    stats::quantile,
    Error, Result,
};

/// The response header in which an engine says where a query's time went
/// (`particles-rs serve --http` sends it; the reference's engine does not).
const SERVER_TIMING: &str = "server-timing";

/// The response header naming the journal position an answer is exact at
/// (`particles_server::JOURNAL_SEQ_HEADER`; this crate does not link the
/// server).
pub(crate) const JOURNAL_SEQ: &str = "x-particles-journal-seq";

/// Where a run records each 200's journal position and when its answer
/// arrived (the replica variant's lag is computed from them).
pub type Positions = std::sync::Arc<std::sync::Mutex<Vec<(Instant, i64)>>>;

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The engine's base URL (`http://127.0.0.1:8931`).
    pub url: String,
    /// Arrival rates, requests per second, one step each.
    pub rates: Vec<f64>,
    /// How long each step sends for.
    pub step: Duration,
    /// The most requests one step sends.
    pub max_requests: usize,
    /// After a step's last send, how long open requests may still take.
    pub drain: Duration,
    /// The questions, used in turn.
    pub questions: Vec<String>,
    /// `top_k` of each request.
    pub top_k: u32,
    /// A bearer token, when the engine wants one.
    pub token: Option<String>,
    /// The RNG seed of the arrival times.
    pub seed: u64,
    /// Requests sent one at a time before the first step, not measured (the
    /// engine's cache builds on the first).
    pub warmup: usize,
    /// The server's process id, for its peak RSS.
    pub server_pid: Option<u32>,
    /// When given, each 200's journal position and arrival are added here.
    pub positions: Option<Positions>,
}

/// One rate's results.
#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    /// The offered rate, requests per second.
    pub rate: f64,
    /// Requests sent.
    pub sent: usize,
    /// Answered 200.
    pub ok: usize,
    /// Answered with another status, by status.
    pub errors_by_status: BTreeMap<u16, usize>,
    /// No answer: refused or broken connections.
    pub transport_errors: usize,
    /// What the client said of the first request without an answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_transport_error: Option<String>,
    /// Still open when the step's drain time ended.
    pub timed_out: usize,
    /// Completed answers per second of the step's span.
    pub throughput: f64,
    /// Latency percentiles of the 200s, seconds from the scheduled send.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile.
    pub p999: Option<f64>,
    /// The slowest 200.
    pub max: Option<f64>,
    /// The server's peak resident set during the step, bytes.
    pub peak_rss_bytes: Option<u64>,
    /// The server's anonymous resident memory at the step's end (`RssAnon`:
    /// its resident set less file-backed pages such as a mapped sidecar),
    /// bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_rss_bytes: Option<u64>,
    /// The CPU time the server used over the step, its drain included, all
    /// its threads, seconds (`utime + stime`, 10 ms ticks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_seconds: Option<f64>,
    /// Wall time of the step, seconds.
    pub seconds: f64,
    /// Where the server says the 200s' time went (its `Server-Timing`
    /// header), one entry per metric; empty for an engine that sends none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_timing: Vec<StageStat>,
    /// The mean size of the batches that answered the 200s, as the server
    /// reports it (`batch;desc`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_batch_size: Option<f64>,
}

/// One `Server-Timing` metric over a step's answers, milliseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StageStat {
    /// The metric's name (`encode`, `queue`, `batch`, ...).
    pub name: String,
    /// Mean over the answers that carried it.
    pub mean_ms: f64,
    /// 50th percentile.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

/// One answer's `Server-Timing`: each metric's duration (ms), and the batch
/// size from `batch;desc`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerTiming {
    /// `(name, milliseconds)` in the header's order.
    pub metrics: Vec<(String, f64)>,
    /// `batch;desc="N"`.
    pub batch_size: Option<usize>,
}

impl ServerTiming {
    /// Reads a `Server-Timing` value (`name;dur=1.5;desc="x", ...`); entries
    /// without a readable `dur` are skipped.
    pub fn parse(value: &str) -> ServerTiming {
        let mut timing = ServerTiming::default();
        for entry in value.split(',') {
            let mut parts = entry.split(';').map(str::trim);
            let Some(name) = parts.next().filter(|n| !n.is_empty()) else {
                continue;
            };
            let mut duration = None;
            let mut desc = None;
            for parameter in parts {
                match parameter.split_once('=') {
                    Some(("dur", v)) => duration = v.trim().parse::<f64>().ok(),
                    Some(("desc", v)) => desc = Some(v.trim().trim_matches('"')),
                    _ => {}
                }
            }
            if name == "batch" {
                timing.batch_size = desc.and_then(|d| d.parse().ok());
            }
            if let Some(ms) = duration.filter(|d| d.is_finite()) {
                timing.metrics.push((name.to_owned(), ms));
            }
        }
        timing
    }
}

/// Each metric's mean and percentiles over `timings`, in first-seen order.
fn stage_stats(timings: &[ServerTiming]) -> Vec<StageStat> {
    let mut by_name: Vec<(String, Vec<f64>)> = Vec::new();
    for timing in timings {
        for (name, ms) in &timing.metrics {
            match by_name.iter_mut().find(|(n, _)| n == name) {
                Some((_, values)) => values.push(*ms),
                None => by_name.push((name.clone(), vec![*ms])),
            }
        }
    }
    by_name
        .into_iter()
        .map(|(name, mut values)| {
            values.sort_by(f64::total_cmp);
            StageStat {
                mean_ms: values.iter().sum::<f64>() / values.len() as f64,
                p50_ms: quantile(&values, 0.50).unwrap_or(f64::NAN),
                p99_ms: quantile(&values, 0.99).unwrap_or(f64::NAN),
                name,
            }
        })
        .collect()
}

/// A whole run.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// The target.
    pub url: String,
    /// The CPU, as [`cpu_name`] gives it.
    pub cpu: String,
    /// Seconds per step, requests cap per step, drain seconds, seed.
    pub step_seconds: f64,
    /// The cap on requests per step.
    pub max_requests: usize,
    /// Drain seconds per step.
    pub drain_seconds: f64,
    /// The arrival seed.
    pub seed: u64,
    /// Distinct questions.
    pub questions: usize,
    /// One entry per rate.
    pub steps: Vec<StepResult>,
}

impl StepResult {
    /// Whether the engine kept up with this step's arrivals: every request
    /// answered 200 within the step and its drain, and completions arriving at
    /// least 90% as fast as requests were sent (answers per second of the whole
    /// step, last answer included, over requests per second of the sending span).
    pub fn sustained(&self, step_seconds: f64) -> bool {
        if self.sent == 0 || self.ok != self.sent {
            return false;
        }
        let offered = self.sent as f64 / step_seconds.max(f64::MIN_POSITIVE);
        self.throughput >= 0.9 * offered
    }

    /// The server's CPU time per 200 over the step, milliseconds: what one
    /// more answer costs the machine, which, unlike the latencies and the
    /// throughput, a shared host's drift moves little. The step's refusals and
    /// unfinished requests are charged to its answers.
    pub fn cpu_ms_per_answer(&self) -> Option<f64> {
        let cpu = self.server_cpu_seconds?;
        (self.ok > 0).then(|| cpu * 1e3 / self.ok as f64)
    }
}

impl LoadReport {
    /// The highest offered rate this run sustained ([`StepResult::sustained`]),
    /// when one was: the capacity the run shows (a floor; a rate between two
    /// steps may be sustained too).
    pub fn capacity(&self) -> Option<f64> {
        self.steps
            .iter()
            .filter(|step| step.sustained(self.step_seconds))
            .map(|step| step.rate)
            .max_by(f64::total_cmp)
    }
}

enum Outcome {
    Ok(f64, Option<ServerTiming>, Option<(Instant, i64)>),
    Status(u16),
    /// No answer, and why (the client's error and its causes).
    Transport(String),
    TimedOut,
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn request(options: &LoadOptions, question: &str) -> Result<http::Request<Full<Bytes>>> {
    let body = serde_json::json!({"question": question, "top_k": options.top_k});
    let mut builder = http::Request::post(format!("{}/query", options.url.trim_end_matches('/')))
        .header(http::header::CONTENT_TYPE, "application/json");
    if let Some(token) = &options.token {
        builder = builder.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    builder
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| Error::Load {
            reason: format!("cannot build a request to {}: {e}", options.url),
        })
}

/// What one answer said besides its body.
struct Answer {
    status: u16,
    timing: Option<ServerTiming>,
    /// The journal position it names, and when its body had arrived.
    position: Option<(Instant, i64)>,
}

/// Sends one request and reads its whole answer: its status, its
/// `Server-Timing` and its journal position, when it has them.
async fn send(
    client: &HttpClient,
    request: http::Request<Full<Bytes>>,
) -> std::result::Result<Answer, String> {
    let response = client.request(request).await.map_err(|e| error_chain(&e))?;
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let timing = header(SERVER_TIMING).map(|v| ServerTiming::parse(&v));
    let seq = header(JOURNAL_SEQ).and_then(|v| v.parse::<i64>().ok());
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("the answer broke off: {}", error_chain(&e)))?;
    Ok(Answer {
        status,
        timing,
        position: seq.map(|seq| (Instant::now(), seq)),
    })
}

/// An error and its causes, `: `-separated (hyper's own says only "client
/// error (SendRequest)"; the cause says which connection broke and how).
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

/// The arrival offsets of one step: exponential gaps at `rate`, within
/// `span`, at most `max` of them.
fn arrivals(rate: f64, span: Duration, max: usize, rng: &mut rand::rngs::StdRng) -> Vec<Duration> {
    let mut at = 0.0f64;
    let mut out = Vec::new();
    while out.len() < max {
        let uniform: f64 = rng.random::<f64>();
        at += -(1.0 - uniform).ln() / rate;
        if at >= span.as_secs_f64() {
            break;
        }
        out.push(Duration::from_secs_f64(at));
    }
    out
}

/// A blocking HTTP client for a load generator's side thread (the writer of
/// `serve-load --writer-rate`): the same hyper client the arrivals use, on a
/// runtime of its own.
pub struct BlockingClient {
    runtime: tokio::runtime::Runtime,
    client: HttpClient,
}

impl BlockingClient {
    /// A client with its own single-threaded runtime.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when the runtime cannot start.
    pub fn new() -> Result<BlockingClient> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::Load {
                reason: format!("cannot start a client runtime: {e}"),
            })?;
        let client = Client::builder(TokioExecutor::new()).build_http();
        Ok(BlockingClient { runtime, client })
    }

    /// POSTs `body` as JSON to `url` and reads the whole answer: its status and
    /// body, or an error naming the url when there is no answer within `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Load`] when the request cannot be built or sent, or times out.
    pub fn post_json(&self, url: &str, body: String, timeout: Duration) -> Result<(u16, String)> {
        let request = http::Request::post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)));
        self.send(url, request, timeout)
    }

    /// GETs `url` and reads the whole answer, as [`BlockingClient::post_json`].
    ///
    /// # Errors
    ///
    /// As [`BlockingClient::post_json`].
    pub fn get(&self, url: &str, timeout: Duration) -> Result<(u16, String)> {
        self.send(
            url,
            http::Request::get(url).body(Full::new(Bytes::new())),
            timeout,
        )
    }

    fn send(
        &self,
        url: &str,
        request: http::Result<http::Request<Full<Bytes>>>,
        timeout: Duration,
    ) -> Result<(u16, String)> {
        let request = request.map_err(|e| Error::Load {
            reason: format!("cannot build a request to {url}: {e}"),
        })?;
        self.runtime.block_on(async {
            let answered = tokio::time::timeout(timeout, async {
                let response = self
                    .client
                    .request(request)
                    .await
                    .map_err(|e| Error::Load {
                        reason: format!("no answer from {url}: {e}"),
                    })?;
                let status = response.status().as_u16();
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| Error::Load {
                        reason: format!("the answer from {url} broke off: {e}"),
                    })?
                    .to_bytes();
                Ok((status, String::from_utf8_lossy(&body).into_owned()))
            })
            .await;
            answered.map_err(|_| Error::Load {
                reason: format!("no answer from {url} within {timeout:?}"),
            })?
        })
    }
}

/// The CPU's model name and this machine's core count.
pub fn cpu_name() -> String {
    let model = probe::cpu_model().unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    format!("{model} ({cores} cores)")
}

async fn run_step(
    client: &HttpClient,
    options: &LoadOptions,
    rate: f64,
    rng: &mut rand::rngs::StdRng,
    question_offset: &mut usize,
) -> Result<StepResult> {
    let schedule = arrivals(rate, options.step, options.max_requests, rng);
    if let Some(pid) = options.server_pid {
        probe::reset_peak_rss(Process::Id(pid));
    }
    let cpu_before = options
        .server_pid
        .and_then(|pid| probe::cpu_seconds(Process::Id(pid)));
    let start = tokio::time::Instant::now();
    let wall = Instant::now();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let mut tasks = Vec::with_capacity(schedule.len());
    for offset in &schedule {
        let question = &options.questions[*question_offset % options.questions.len()];
        *question_offset += 1;
        let request = request(options, question)?;
        let client = client.clone();
        let sender = sender.clone();
        let scheduled = start + *offset;
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(scheduled).await;
            let outcome = match send(&client, request).await {
                Ok(Answer {
                    status: 200,
                    timing,
                    position,
                }) => Outcome::Ok(scheduled.elapsed().as_secs_f64(), timing, position),
                Ok(answer) => Outcome::Status(answer.status),
                Err(why) => Outcome::Transport(why),
            };
            let _ = sender.send(outcome);
        }));
    }
    drop(sender);
    let deadline = start + options.step + options.drain;
    let mut outcomes = Vec::with_capacity(schedule.len());
    loop {
        tokio::select! {
            next = receiver.recv() => match next {
                Some(outcome) => outcomes.push(outcome),
                None => break,
            },
            () = tokio::time::sleep_until(deadline) => break,
        }
    }
    for task in tasks {
        task.abort();
    }
    while outcomes.len() < schedule.len() {
        outcomes.push(Outcome::TimedOut);
    }
    let seconds = wall.elapsed().as_secs_f64();
    let mut latencies = Vec::new();
    let mut result = StepResult {
        rate,
        sent: schedule.len(),
        ok: 0,
        errors_by_status: BTreeMap::new(),
        transport_errors: 0,
        first_transport_error: None,
        timed_out: 0,
        throughput: 0.0,
        p50: None,
        p99: None,
        p999: None,
        max: None,
        peak_rss_bytes: options
            .server_pid
            .and_then(|pid| probe::peak_rss(Process::Id(pid))),
        anon_rss_bytes: options
            .server_pid
            .and_then(|pid| probe::anon_rss(Process::Id(pid))),
        server_cpu_seconds: options
            .server_pid
            .and_then(|pid| probe::cpu_seconds(Process::Id(pid)))
            .zip(cpu_before)
            .map(|(after, before)| (after - before).max(0.0)),
        seconds,
        server_timing: Vec::new(),
        mean_batch_size: None,
    };
    let mut timings = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Ok(latency, timing, position) => {
                result.ok += 1;
                latencies.push(latency);
                timings.extend(timing);
                if let (Some(sink), Some(position)) = (&options.positions, position) {
                    sink.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(position);
                }
            }
            Outcome::Status(status) => *result.errors_by_status.entry(status).or_insert(0) += 1,
            Outcome::Transport(why) => {
                result.transport_errors += 1;
                result.first_transport_error.get_or_insert(why);
            }
            Outcome::TimedOut => result.timed_out += 1,
        }
    }
    latencies.sort_by(f64::total_cmp);
    result.p50 = quantile(&latencies, 0.50);
    result.p99 = quantile(&latencies, 0.99);
    result.p999 = quantile(&latencies, 0.999);
    result.max = latencies.last().copied();
    result.server_timing = stage_stats(&timings);
    let sizes: Vec<usize> = timings.iter().filter_map(|t| t.batch_size).collect();
    if !sizes.is_empty() {
        result.mean_batch_size = Some(sizes.iter().sum::<usize>() as f64 / sizes.len() as f64);
    }
    result.throughput = result.ok as f64 / seconds.max(f64::MIN_POSITIVE);
    Ok(result)
}

/// The generator's runtime: one worker, so the load it offers is not itself
/// competing with the engine for more than one core.
fn load_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| Error::Load {
            reason: format!("cannot start the load runtime: {e}"),
        })
}

/// The generator's HTTP client, keeping connections open between requests.
fn load_client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .build(HttpConnector::new())
}

/// Runs every step on its own runtime; `progress` hears about each step.
///
/// # Errors
///
/// [`Error::Load`] when there are no questions or rates, or a warm-up request
/// fails.
pub fn run(options: &LoadOptions, mut progress: impl FnMut(&StepResult)) -> Result<LoadReport> {
    if options.questions.is_empty()
        || options.rates.iter().any(|r| r.is_nan() || *r <= 0.0)
        || options.rates.is_empty()
    {
        return Err(Error::Load {
            reason: "serve-load needs at least one question and positive rates".to_owned(),
        });
    }
    let runtime = load_runtime()?;
    runtime.block_on(async {
        let client = load_client();
        for i in 0..options.warmup {
            let question = &options.questions[i % options.questions.len()];
            match send(&client, request(options, question)?).await {
                Ok(Answer { status: 200, .. }) => {}
                Ok(Answer { status, .. }) => {
                    return Err(Error::Load {
                        reason: format!("warm-up request to {} answered {status}", options.url),
                    })
                }
                Err(why) => {
                    return Err(Error::Load {
                        reason: format!("warm-up request to {} got no answer: {why}", options.url),
                    })
                }
            }
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(options.seed);
        let mut offset = 0;
        let mut steps = Vec::new();
        for &rate in &options.rates {
            let step = run_step(&client, options, rate, &mut rng, &mut offset).await?;
            progress(&step);
            steps.push(step);
        }
        Ok(LoadReport {
            url: options.url.clone(),
            cpu: cpu_name(),
            step_seconds: options.step.as_secs_f64(),
            max_requests: options.max_requests,
            drain_seconds: options.drain.as_secs_f64(),
            seed: options.seed,
            questions: options.questions.len(),
            steps,
        })
    })
}

/// What a soak runs: one steady rate for a long time, the server's RSS sampled.
#[derive(Debug, Clone)]
pub struct SoakOptions {
    /// The requests, the server and the warm-up (`rates` and `step` unused).
    pub load: LoadOptions,
    /// Requests per second, sent at fixed intervals (not Poisson: a steady
    /// rate makes a memory slope comparable between runs).
    pub rate: f64,
    /// How long to send for.
    pub duration: Duration,
    /// How often the server's RSS is read.
    pub sample: Duration,
}

/// One RSS reading.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RssSample {
    /// Seconds since the soak started.
    pub seconds: f64,
    /// `VmRSS`, bytes.
    pub rss_bytes: u64,
}

/// A soak's figures.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    /// The engine's base URL.
    pub url: String,
    /// The CPU, as [`cpu_name`] gives it.
    pub cpu: String,
    /// The offered rate, requests per second.
    pub rate: f64,
    /// How long requests were sent, seconds.
    pub seconds: f64,
    /// Requests sent.
    pub sent: usize,
    /// Answered 200.
    pub ok: usize,
    /// Answered with another status, by status.
    pub errors_by_status: BTreeMap<u16, usize>,
    /// No answer: refused or broken connections.
    pub transport_errors: usize,
    /// What the client said of the first request without an answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_transport_error: Option<String>,
    /// Still open at the end (after the drain time).
    pub timed_out: usize,
    /// Every RSS reading, in order.
    pub samples: Vec<RssSample>,
    /// The least-squares slope of RSS over time, MiB per minute.
    pub slope_mib_per_minute: Option<f64>,
}

/// The least-squares slope of `(seconds, bytes)` readings, MiB per minute;
/// `None` under two readings or with no spread in time.
pub fn rss_slope(samples: &[RssSample]) -> Option<f64> {
    if samples.len() < 2 {
        return None;
    }
    let n = samples.len() as f64;
    let mean_t = samples.iter().map(|s| s.seconds).sum::<f64>() / n;
    let mean_m = samples
        .iter()
        .map(|s| s.rss_bytes as f64 / 1_048_576.0)
        .sum::<f64>()
        / n;
    let (mut covariance, mut variance) = (0.0, 0.0);
    for sample in samples {
        let dt = sample.seconds - mean_t;
        covariance += dt * (sample.rss_bytes as f64 / 1_048_576.0 - mean_m);
        variance += dt * dt;
    }
    (variance > 0.0).then(|| covariance / variance * 60.0)
}

/// Sends `rate` requests a second at fixed intervals for the duration (open
/// loop: a slow answer does not delay the next send), reading the server's
/// RSS every `sample`; `progress` hears each reading with the requests sent
/// so far.
///
/// # Errors
///
/// [`Error::Load`] without questions, a positive rate, a server pid, or when a
/// warm-up request fails.
pub fn soak(
    options: &SoakOptions,
    mut progress: impl FnMut(&RssSample, usize),
) -> Result<SoakReport> {
    let load = &options.load;
    let Some(pid) = load.server_pid else {
        return Err(Error::Load {
            reason: "a soak samples the server's RSS: it needs the server's pid".to_owned(),
        });
    };
    if load.questions.is_empty() || options.rate.is_nan() || options.rate <= 0.0 {
        return Err(Error::Load {
            reason: "a soak needs at least one question and a positive rate".to_owned(),
        });
    }
    let runtime = load_runtime()?;
    runtime.block_on(async {
        let client = load_client();
        for i in 0..load.warmup.max(1) {
            let question = &load.questions[i % load.questions.len()];
            if !matches!(
                send(&client, request(load, question)?).await,
                Ok(Answer { status: 200, .. })
            ) {
                return Err(Error::Load {
 reason: format!(
                    "warm-up request to {} did not answer 200",
                    load.url
                )
});
            }
        }
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let start = tokio::time::Instant::now();
        let gap = Duration::from_secs_f64(1.0 / options.rate);
        let mut ticks = tokio::time::interval(gap);
        // A late tick sends at once and the rest keep their schedule: the
        // rate stays the offered one on a busy machine.
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut sampler = tokio::time::interval(options.sample);
        let mut samples = Vec::new();
        let mut sent = 0usize;
        let mut outcomes = Vec::new();
        loop {
            tokio::select! {
                _ = ticks.tick() => {
                    if start.elapsed() >= options.duration {
                        break;
                    }
                    let question = &load.questions[sent % load.questions.len()];
                    sent += 1;
                    let request = request(load, question)?;
                    let client = client.clone();
                    let sender = sender.clone();
                    tokio::spawn(async move {
                        let outcome = match send(&client, request).await {
                            Ok(Answer { status: 200, .. }) => Outcome::Ok(0.0, None, None),
                            Ok(answer) => Outcome::Status(answer.status),
                            Err(why) => Outcome::Transport(why),
                        };
                        let _ = sender.send(outcome);
                    });
                }
                _ = sampler.tick() => {
                    if let Some(rss_bytes) = probe::current_rss(Process::Id(pid)) {
                        let sample = RssSample { seconds: start.elapsed().as_secs_f64(), rss_bytes };
                        progress(&sample, sent);
                        samples.push(sample);
                    }
                }
                Some(outcome) = receiver.recv() => outcomes.push(outcome),
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        drop(sender);
        let deadline = tokio::time::Instant::now() + load.drain;
        while outcomes.len() < sent {
            tokio::select! {
                next = receiver.recv() => match next {
                    Some(outcome) => outcomes.push(outcome),
                    None => break,
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        // The reading after the last answer: what the server keeps once idle.
        if let Some(rss_bytes) = probe::current_rss(Process::Id(pid)) {
            samples.push(RssSample {
                seconds: start.elapsed().as_secs_f64(),
                rss_bytes,
            });
        }
        let mut report = SoakReport {
            url: load.url.clone(),
            cpu: cpu_name(),
            rate: options.rate,
            seconds,
            sent,
            ok: 0,
            errors_by_status: BTreeMap::new(),
            transport_errors: 0,
            first_transport_error: None,
            timed_out: sent.saturating_sub(outcomes.len()),
            slope_mib_per_minute: rss_slope(&samples),
            samples,
        };
        for outcome in outcomes {
            match outcome {
                Outcome::Ok(..) => report.ok += 1,
                Outcome::Status(status) => {
                    *report.errors_by_status.entry(status).or_insert(0) += 1;
                }
                Outcome::Transport(why) => {
                    report.transport_errors += 1;
                    report.first_transport_error.get_or_insert(why);
                }
                Outcome::TimedOut => report.timed_out += 1,
            }
        }
        Ok(report)
    })
}

/// A soak's figures as Markdown.
pub fn soak_markdown(report: &SoakReport) -> String {
    let mib = |b: u64| b as f64 / 1_048_576.0;
    let first = report.samples.first().map(|s| mib(s.rss_bytes));
    let last = report.samples.last().map(|s| mib(s.rss_bytes));
    let peak = report.samples.iter().map(|s| s.rss_bytes).max().map(mib);
    let shown = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| format!("{v:.1}"));
    let mut errors: Vec<String> = report
        .errors_by_status
        .iter()
        .map(|(status, n)| format!("{n}×{status}"))
        .collect();
    if report.transport_errors > 0 {
        errors.push(format!("{}×no answer", report.transport_errors));
    }
    format!(
        "Soak of {} on {}: {} requests/s for {:.0} s, {} RSS samples.\n\n\
         | sent | ok | errors | timed out | RSS start MiB | RSS end MiB | RSS peak MiB | slope MiB/min |\n\
         |---:|---:|---|---:|---:|---:|---:|---:|\n\
         | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        report.url,
        report.cpu,
        report.rate,
        report.seconds,
        report.samples.len(),
        report.sent,
        report.ok,
        if errors.is_empty() { "0".to_owned() } else { errors.join(", ") },
        report.timed_out,
        shown(first),
        shown(last),
        shown(peak),
        report
            .slope_mib_per_minute
            .map_or_else(|| "—".to_owned(), |v| format!("{v:+.3}")),
    )
}

fn mebibytes(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "—".to_owned(),
        |b| format!("{:.0}", b as f64 / 1_048_576.0),
    )
}

fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |v| format!("{:.3}", v))
}

/// The report as a Markdown table.
pub fn markdown(report: &LoadReport) -> String {
    let mut out = format!(
        "Target {} on {}; {} s per step (at most {} requests, {} s drain), seed {}, {} questions.\n\n\
         | rate/s | sent | ok | errors | timed out | throughput/s | sustained | p50 s | p99 s | p99.9 s | max s | peak RSS MiB | anon MiB | CPU ms/answer |\n\
         |---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
        report.url,
        report.cpu,
        report.step_seconds,
        report.max_requests,
        report.drain_seconds,
        report.seed,
        report.questions
    );
    for step in &report.steps {
        let mut errors: Vec<String> = step
            .errors_by_status
            .iter()
            .map(|(status, n)| format!("{n}×{status}"))
            .collect();
        if step.transport_errors > 0 {
            errors.push(format!("{}×no answer", step.transport_errors));
        }
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            step.rate,
            step.sent,
            step.ok,
            if errors.is_empty() {
                "0".to_owned()
            } else {
                errors.join(", ")
            },
            step.timed_out,
            step.throughput,
            if step.sustained(report.step_seconds) {
                "yes"
            } else {
                "no"
            },
            seconds(step.p50),
            seconds(step.p99),
            seconds(step.p999),
            seconds(step.max),
            mebibytes(step.peak_rss_bytes),
            mebibytes(step.anon_rss_bytes),
            step.cpu_ms_per_answer()
                .map_or_else(|| "—".to_owned(), |ms| format!("{ms:.1}")),
        ));
    }
    for step in &report.steps {
        if let Some(why) = &step.first_transport_error {
            out.push_str(&format!(
                "\nAt {}/s the first request without an answer: {why}.\n",
                step.rate
            ));
        }
    }
    out.push_str(&stage_markdown(report));
    out
}

/// Where the server says the time went, per step (mean / p99 of each
/// `Server-Timing` metric, ms); empty when no step has any.
fn stage_markdown(report: &LoadReport) -> String {
    let mut names: Vec<&str> = Vec::new();
    for step in &report.steps {
        for stat in &step.server_timing {
            if !names.contains(&stat.name.as_str()) {
                names.push(&stat.name);
            }
        }
    }
    if names.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nWhere the time went, as the server reports it (`Server-Timing`, ms, mean / p99 \
         over the 200s; `queue` is the wait for the passes ahead, `pass` the batch's shared \
         pass, `batch` from the batch's start to the request's own answer):\n\n| rate/s | mean batch | {} |\n|---:|---:|{}\n",
        names.join(" | "),
        "---:|".repeat(names.len())
    );
    for step in &report.steps {
        let cells: Vec<String> = names
            .iter()
            .map(|name| {
                step.server_timing
                    .iter()
                    .find(|s| s.name == *name)
                    .map_or_else(
                        || "—".to_owned(),
                        |s| format!("{:.1} / {:.1}", s.mean_ms, s.p99_ms),
                    )
            })
            .collect();
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            step.rate,
            step.mean_batch_size
                .map_or_else(|| "—".to_owned(), |b| format!("{b:.1}")),
            cells.join(" | ")
        ));
    }
    out
}

/// Two runs side by side (ours, then the reference's engine): each one's
/// capacity, the ratio, and each engine's latency at the rates both were offered.
pub fn comparison_markdown(ours: &LoadReport, theirs: &LoadReport) -> String {
    let rate = |r: Option<f64>| r.map_or_else(|| "none sustained".to_owned(), |r| format!("{r}/s"));
    let mut out = format!(
        "Capacity (the highest offered rate sustained for {} s: every request answered, \
         answers keeping up with arrivals), {}:\n\n\
         | engine | capacity |\n|---|---:|\n| particles-rs | {} |\n| reference | {} |\n",
        ours.step_seconds,
        ours.cpu,
        rate(ours.capacity()),
        rate(theirs.capacity()),
    );
    if let (Some(a), Some(b)) = (ours.capacity(), theirs.capacity()) {
        out.push_str(&format!(
            "\nRatio: {:.0}x (a floor: both are the highest step offered that was sustained).\n",
            a / b
        ));
    }
    let shared: Vec<&StepResult> = ours
        .steps
        .iter()
        .filter(|s| theirs.steps.iter().any(|t| t.rate == s.rate))
        .collect();
    if !shared.is_empty() {
        out.push_str(
            "\nAt the rates both were offered:\n\n\
             | rate/s | particles-rs p50 s | p99 s | reference p50 s | p99 s |\n\
             |---:|---:|---:|---:|---:|\n",
        );
        for step in shared {
            if let Some(other) = theirs.steps.iter().find(|t| t.rate == step.rate) {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    step.rate,
                    seconds(step.p50),
                    seconds(step.p99),
                    seconds(other.p50),
                    seconds(other.p99)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_are_bounded_and_seeded() {
        let mut a = rand::rngs::StdRng::seed_from_u64(7);
        let mut b = rand::rngs::StdRng::seed_from_u64(7);
        let first = arrivals(50.0, Duration::from_secs(10), 10_000, &mut a);
        assert_eq!(
            first,
            arrivals(50.0, Duration::from_secs(10), 10_000, &mut b)
        );
        assert!(first.windows(2).all(|w| w[0] <= w[1]));
        assert!(first.iter().all(|t| *t < Duration::from_secs(10)));
        // About 500 arrivals; a Poisson count is within 5 sigma of it.
        assert!((388..=612).contains(&first.len()), "{}", first.len());
        let capped = arrivals(50.0, Duration::from_secs(10), 20, &mut a);
        assert_eq!(capped.len(), 20);
    }

    #[test]
    fn the_rss_slope_is_a_least_squares_fit() {
        // 1 MiB per 30 s is 2 MiB/min, whatever the noise's sign.
        let samples: Vec<RssSample> = (0..10)
            .map(|i| RssSample {
                seconds: f64::from(i) * 30.0,
                rss_bytes: (100 + i as u64) * 1_048_576 + if i % 2 == 0 { 4096 } else { 0 },
            })
            .collect();
        let slope = rss_slope(&samples).expect("a slope");
        assert!((slope - 2.0).abs() < 0.01, "{slope}");
        let flat: Vec<RssSample> = (0..5)
            .map(|i| RssSample {
                seconds: f64::from(i),
                rss_bytes: 7,
            })
            .collect();
        assert_eq!(rss_slope(&flat), Some(0.0));
        assert_eq!(rss_slope(&samples[..1]), None);
    }

    fn step(rate: f64, sent: usize, ok: usize, throughput: f64) -> StepResult {
        StepResult {
            rate,
            sent,
            ok,
            errors_by_status: BTreeMap::new(),
            transport_errors: 0,
            first_transport_error: None,
            timed_out: sent - ok,
            throughput,
            p50: None,
            p99: None,
            p999: None,
            max: None,
            peak_rss_bytes: None,
            anon_rss_bytes: None,
            server_cpu_seconds: None,
            seconds: 60.0,
            server_timing: Vec::new(),
            mean_batch_size: None,
        }
    }

    #[test]
    fn server_timing_is_read_metric_by_metric() {
        let timing = ServerTiming::parse(
            "thread;dur=0.012, encode;dur=5.5, queue;dur=0.000, batch;dur=12.25;desc=\"3\", \
             cache;desc=\"hit\", total;dur=x, answer;dur=0.1",
        );
        assert_eq!(timing.batch_size, Some(3));
        assert_eq!(
            timing.metrics,
            vec![
                ("thread".to_owned(), 0.012),
                ("encode".to_owned(), 5.5),
                ("queue".to_owned(), 0.0),
                ("batch".to_owned(), 12.25),
                ("answer".to_owned(), 0.1),
            ]
        );
        let other = ServerTiming::parse("encode;dur=7.5");
        let stats = stage_stats(&[timing, other]);
        assert_eq!(stats[1].name, "encode");
        assert!((stats[1].mean_ms - 6.5).abs() < 1e-12);
        // NumPy's p99 of [5.5, 7.5] (`stats::quantile`).
        assert_eq!(stats[1].p99_ms, 7.48);
        assert_eq!(stats.len(), 5);
        assert_eq!(ServerTiming::parse(""), ServerTiming::default());
    }

    /// A connection the server closes without answering is counted with the
    /// client's reason, causes included, and the step's Markdown says it.
    #[test]
    fn a_request_without_an_answer_says_why() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/query", listener.local_addr().unwrap());
        let closer = std::thread::spawn(move || drop(listener.accept()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let request = http::Request::post(&url)
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let why = runtime
            .block_on(send(&load_client(), request))
            .err()
            .expect("a closed connection is no answer");
        closer.join().unwrap();
        assert!(
            why.contains(": "),
            "the cause is given, not only hyper's summary: {why}"
        );
        let mut lost = step(8.0, 10, 9, 8.0);
        lost.timed_out = 0;
        lost.transport_errors = 1;
        lost.first_transport_error = Some(why.clone());
        let report = LoadReport {
            url,
            ..report(vec![lost])
        };
        let text = markdown(&report);
        assert!(text.contains("1×no answer"), "{text}");
        assert!(
            text.contains(&format!(
                "At 8/s the first request without an answer: {why}."
            )),
            "{text}"
        );
    }

    /// A report of 60 s steps, as the tests read them.
    fn report(steps: Vec<StepResult>) -> LoadReport {
        LoadReport {
            url: String::new(),
            cpu: String::new(),
            step_seconds: 60.0,
            max_requests: 1000,
            drain_seconds: 30.0,
            seed: 1,
            questions: 12,
            steps,
        }
    }

    #[test]
    fn capacity_is_the_highest_step_that_kept_up() {
        let report = report(vec![
            // Kept up: 60 sent over 60 s, answered at 0.98/s.
            step(1.0, 60, 60, 0.98),
            // Answered everything, but the last answers came long after.
            step(2.0, 120, 120, 1.5),
            // Fast enough, but one request was never answered.
            step(4.0, 240, 239, 3.9),
        ]);
        assert!(report.steps[0].sustained(60.0));
        assert!(!report.steps[1].sustained(60.0));
        assert!(!report.steps[2].sustained(60.0));
        assert_eq!(report.capacity(), Some(1.0));
        assert_eq!(
            LoadReport {
                steps: vec![step(1.0, 0, 0, 0.0)],
                ..report
            }
            .capacity(),
            None
        );
    }

    #[test]
    fn the_cpu_per_answer_is_the_steps_cpu_over_its_answers() {
        let mut measured = step(50.0, 1500, 1200, 40.0);
        assert_eq!(measured.cpu_ms_per_answer(), None);
        measured.server_cpu_seconds = Some(3.0);
        assert_eq!(measured.cpu_ms_per_answer(), Some(2.5));
        let none_answered = StepResult {
            ok: 0,
            ..measured.clone()
        };
        assert_eq!(none_answered.cpu_ms_per_answer(), None);
        let table = markdown(&report(vec![measured]));
        assert!(table.contains("| anon MiB | CPU ms/answer |"), "{table}");
        assert!(
            table.lines().any(|line| line.ends_with("| — | 2.5 |")),
            "{table}"
        );
    }
}
