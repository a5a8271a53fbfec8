//! Chaos under load: the reference writes the store through its own API
//! (inserts, retracts, property updates, rolled-back transactions) and our
//! writer writes it too (inserts, updates, retracts, deletes, rollbacks), one
//! transaction after another, while clients query the HTTP engine (in-process,
//! as `serve --http` builds it, its cache shared by concurrent queries) and two
//! `serve --stdio` processes without pause.
//!
//! Every answer carries the journal position it was computed at (the
//! `x-particles-journal-seq` header, the stdio line's `journal_seq`). After
//! each commit, before the next write, the harness records the uncached answer
//! of every question at that state (an engine that reads the store itself, and
//! the uncached ranking). Afterwards each answer must equal the uncached answer
//! at its position, byte for byte: a position the harness never committed, an
//! error, or any difference fails the test.
//!
//! The writer's commit latency (a reference transaction, sent to acknowledged)
//! is measured first with no engine running, then under the chaos.
//!
//! `PARTICLES_CHAOS_SECONDS` (default 20) sets the chaos phase's length.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::Path,
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use particles_model::{Envelope, Particle, QueryRequest, Timestamp};
use serde_json::{json, Value};

use crate::support::{particles_rs_command, reference_python, workspace_root};

pub(crate) const NOW: &str = "2026-06-01T00:00:00Z";
pub(crate) const TOP_K: u64 = 8;

/// No answer provider (the answer is the deterministic listing) and no rate
/// limit: the clients here send as fast as they are answered.
pub(crate) const CONFIG: &str = "network: {egress: none}\napi: {rate_limit_per_minute: 0}\n";

pub(crate) const QUESTIONS: &[&str] = &[
    "how are old coins graded?",
    "what makes a coin rare?",
    "which metals were used for Roman coins?",
    "how are counterfeit coins detected?",
    "what is a mint mark?",
];

/// A deterministic unit vector for a text (what every engine here ranks by).
pub(crate) fn vector_for(text: &str) -> Vec<f32> {
    use sha2::Digest;
    let mut out = Vec::with_capacity(particles_model::EMBEDDING_DIM);
    let mut counter = 0u32;
    while out.len() < particles_model::EMBEDDING_DIM {
        let digest = sha2::Sha256::digest(format!("{text}\u{0}{counter}").as_bytes());
        for pair in digest.chunks(2) {
            out.push(f32::from(u16::from_le_bytes([pair[0], pair[1]])) / 65535.0 - 0.5);
        }
        counter += 1;
    }
    out.truncate(particles_model::EMBEDDING_DIM);
    normalised(&out)
}

fn normalised(v: &[f32]) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    v.iter().map(|x| (f64::from(*x) / norm) as f32).collect()
}

/// A small seeded generator (xorshift64*): a run repeats under its seed.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A vector near question `q`'s, so a write lands in its top k.
fn near(rng: &mut Rng, q: usize) -> Vec<f32> {
    let base = vector_for(QUESTIONS[q]);
    let noise = vector_for(&format!("noise {}", rng.next()));
    let mix: Vec<f32> = base.iter().zip(&noise).map(|(b, n)| b + 0.3 * n).collect();
    normalised(&mix)
}

pub(crate) fn request_body(q: usize) -> Value {
    json!({ "question": QUESTIONS[q], "top_k": TOP_K })
}

pub(crate) fn now() -> Timestamp {
    Timestamp::parse(NOW).expect("an instant")
}

/// The uncached answers at one store state, per question: the HTTP engine's
/// whole response body and the stdio line's hits.
pub(crate) struct Expected {
    pub(crate) http: Vec<String>,
    hits: Vec<Value>,
}

/// One answer a client got.
struct Observed {
    client: &'static str,
    question: usize,
    seq: Option<i64>,
    /// The HTTP body, or the stdio line's hits as JSON.
    answer: Result<Value, String>,
    http_body: Option<String>,
}

pub(crate) fn engine(
    store: &Path,
    uncached: bool,
) -> (particles_engine::Engine, particles_config::Loaded) {
    let dir = store.parent().expect("the store's directory");
    let env = particles_config::Environment::new(Vec::new(), dir);
    let loaded = particles_config::load_from_str(CONFIG, dir.join("chaos.yaml"), &env)
        .expect("the configuration loads");
    let config = loaded.config();
    let selection = particles_engine::resolve_stores(config, &[store.display().to_string()], dir)
        .expect("the store resolves");
    let engine = particles_engine::Engine::new(
        particles_engine::Settings::from_config(config),
        particles_engine::answer_settings(config, &HashMap::new()),
        &selection,
        &particles_engine::CacheOptions {
            no_sidecar: true,
            uncached,
            half_precision: Some(0),
            keep_particles: Some(particles_cache::KEEP_PARTICLES_MAX_ROWS),
            ..Default::default()
        },
        Some(Arc::new(|text: &str| Ok(vector_for(text)))),
    )
    .expect("the engine opens the store");
    (engine, loaded)
}

/// The in-process HTTP engine, stopped (drained) on drop.
struct Http {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Http {
    fn start(store: &Path) -> Http {
        let (engine, loaded) = engine(store, false);
        let backend = Arc::new(
            particles_server::Backend::new(Arc::new(engine), &loaded, store)
                .with_frozen_clock(now()),
        );
        let options = particles_server::HttpOptions {
            listen: "127.0.0.1:0".parse().expect("an address"),
            upstream: None,
            limits: particles_server::Limits::default(),
            key: particles_server::KeySource::Fixed(None),
            metrics_listen: None,
            warm: false,
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let server = particles_server::HttpServer::bind(backend, options)
                    .await
                    .expect("binds");
                ready_tx
                    .send(server.local_addr().expect("an address"))
                    .expect("the test waits");
                server
                    .run(async {
                        let _ = stop_rx.await;
                    })
                    .await;
            });
        });
        Http {
            addr: ready_rx.recv().expect("the server starts"),
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// POST /query; the status, the journal header and the body.
    fn query(&self, body: &Value) -> Result<(Option<i64>, String), String> {
        let body = body.to_string();
        let mut stream = TcpStream::connect(self.addr).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?;
        write!(
            stream,
            "POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .map_err(|e| e.to_string())?;
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
        let (head, body) = text.split_once("\r\n\r\n").ok_or("no response head")?;
        let status = head.lines().next().unwrap_or_default();
        if !status.contains(" 200 ") {
            return Err(format!("{status}: {body}"));
        }
        let seq = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case(particles_server::JOURNAL_SEQ_HEADER)
                .then(|| value.trim().parse().ok())?
        });
        Ok((seq, body.to_owned()))
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A `serve --stdio` process.
struct StdioClient {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl StdioClient {
    fn start(store: &Path) -> StdioClient {
        let mut child = particles_rs_command()
            .args(["serve", "--stdio", "--store"])
            .arg(store)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve --stdio starts");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        StdioClient {
            child,
            input,
            output,
        }
    }

    fn query(&mut self, q: usize) -> Result<(Option<i64>, Value), String> {
        let mut line = request_body(q);
        line["vector"] = json!(vector_for(QUESTIONS[q]));
        line["now"] = json!(NOW);
        writeln!(self.input, "{line}").map_err(|e| e.to_string())?;
        let mut answer = String::new();
        self.output
            .read_line(&mut answer)
            .map_err(|e| e.to_string())?;
        let answer: Value = serde_json::from_str(&answer).map_err(|e| format!("{e}: {answer}"))?;
        if answer.get("error").is_some() {
            return Err(answer.to_string());
        }
        Ok((answer["journal_seq"].as_i64(), answer["hits"].clone()))
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The reference's writer: `write_ops.py --lines`, one transaction per line.
pub(crate) struct ReferenceWriter {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl ReferenceWriter {
    pub(crate) fn start(python: &Path, store: &Path) -> ReferenceWriter {
        let mut child = Command::new(python)
            .arg(workspace_root().join("tests/reference/write_ops.py"))
            .arg(store)
            .arg("--lines")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the reference's python runs");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        ReferenceWriter {
            child,
            input,
            output,
        }
    }

    /// One transaction: how long it took to be acknowledged, and how long the
    /// writer's session took inside Python (first statement to commit: where a
    /// lock held by a reader would show).
    pub(crate) fn transact(&mut self, ops: &Value, rollback: bool) -> (Duration, Duration) {
        let started = Instant::now();
        writeln!(
            self.input,
            "{}",
            json!({ "ops": ops, "rollback": rollback })
        )
        .expect("the writer reads");
        let mut reply = String::new();
        self.output
            .read_line(&mut reply)
            .expect("the writer answers");
        let elapsed = started.elapsed();
        let reply: Value = serde_json::from_str(&reply).expect("a JSON reply");
        assert_eq!(reply["ok"], true, "the reference's write failed: {reply}");
        let inside = Duration::from_secs_f64(reply["seconds"].as_f64().unwrap_or(0.0));
        (elapsed, inside)
    }
}

impl Drop for ReferenceWriter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Ids of ACTIVE particles with embeddings, read now.
pub(crate) fn active_ids(store: &Path) -> Vec<String> {
    let connection =
        rusqlite::Connection::open_with_flags(store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("opens");
    let mut statement = connection
        .prepare("SELECT id FROM particles WHERE status = 'ACTIVE' AND embedding_json IS NOT NULL")
        .expect("prepares");
    let ids = statement
        .query_map([], |row| row.get::<_, String>(0))
        .expect("reads")
        .collect::<Result<Vec<_>, _>>()
        .expect("ids");
    ids
}

/// A reference transaction: one to three operations, seeded.
pub(crate) fn reference_ops(rng: &mut Rng, ids: &[String], serial: &mut usize) -> Value {
    let mut ops = Vec::new();
    let mut retracted = std::collections::HashSet::new();
    for _ in 0..=rng.below(3) {
        match rng.below(3) {
            0 => {
                *serial += 1;
                let q = rng.below(QUESTIONS.len());
                let vector = near(rng, q);
                ops.push(json!({
                    "op": "insert",
                    "id": format!("chaos-ref-{serial}"),
                    "content": format!("Chaos belief {serial} near question {q}."),
                    "confidence": 0.5 + 0.5 * rng.unit(),
                    "vector": vector,
                }));
            }
            1 if !ids.is_empty() => {
                // Retracting twice in one transaction is refused (an invalid
                // status transition): once per id.
                let id = &ids[rng.below(ids.len())];
                if retracted.insert(id.clone()) {
                    ops.push(json!({ "op": "retract", "id": id }));
                }
            }
            _ if !ids.is_empty() => ops.push(json!({
                "op": "property",
                "id": ids[rng.below(ids.len())],
                "key": "chaos",
                "value": rng.below(1000).to_string(),
            })),
            _ => {}
        }
    }
    Value::Array(ops)
}

/// Our writer's transaction: insert a copy of a particle near a question,
/// update one, retract one or delete one; committed, or rolled back.
fn rust_write(
    writer: &mut particles_store::Writer,
    rng: &mut Rng,
    ids: &[String],
    serial: &mut usize,
    rollback: bool,
) {
    if ids.is_empty() {
        return;
    }
    let target = ids[rng.below(ids.len())].clone();
    let mut particle: Particle = {
        let store = particles_store::Store::open_read_only(writer.path()).expect("opens");
        particles_store::particles_by_ids(&store, &[target.as_str()])
            .expect("reads")
            .remove(0)
    };
    let q = rng.below(QUESTIONS.len());
    let vector = near(rng, q);
    let valid = |particle: Particle| {
        garde::Unvalidated::new(particle)
            .validate()
            .expect("a valid particle")
    };
    let action = rng.below(4);
    let confidence = 0.2 + 0.8 * rng.unit();
    let tx = writer.transaction().expect("a transaction");
    match action {
        0 => {
            // A copy of the particle under a new id, near a question.
            *serial += 1;
            particle.id = format!("chaos-rs-{serial}");
            particle.content = format!("Our writer's belief {serial}.");
            particle.confidence.value = confidence;
            tx.insert(&valid(particle), Some(&vector)).expect("inserts");
        }
        1 => {
            particle.confidence.value = confidence;
            tx.update(&valid(particle), Some(&vector)).expect("updates");
        }
        2 => {
            tx.retract(&target, now()).expect("retracts");
        }
        _ => {
            tx.delete(&target).expect("deletes");
        }
    }
    if rollback {
        tx.rollback().expect("rolls back");
    } else {
        tx.commit().expect("commits");
    }
}

/// The uncached answers at the store's current state, keyed by its journal
/// position (the harness is the only writer, so nothing moves meanwhile).
pub(crate) fn record(
    oracle: &particles_engine::Engine,
    store: &Path,
    expected: &Mutex<HashMap<i64, Expected>>,
) {
    let mut http = Vec::new();
    let mut hits = Vec::new();
    let mut position = None;
    let snapshot = particles_store::Store::open_read_only(store).expect("opens");
    for (q, question) in QUESTIONS.iter().enumerate() {
        let request = QueryRequest::from_json(&request_body(q), now()).expect("a valid request");
        let envelope = Envelope {
            now: Some(now()),
            ..Envelope::default()
        };
        let (response, seq) = oracle
            .query_with_position(&request, &envelope)
            .expect("the uncached engine answers");
        http.push(serde_json::to_string(&response).expect("serialises"));
        let vector = vector_for(question);
        let outcome = particles_query::run_query(
            &snapshot,
            &particles_query::QueryInput::new(&request, Some(&vector), now()),
        )
        .expect("the uncached ranking");
        assert_eq!(outcome.journal_seq, seq, "one state for both oracles");
        hits.push(serde_json::to_value(&outcome.hits).expect("serialises"));
        assert!(
            position.is_none() || position == seq,
            "the store moved while the harness held the only writer"
        );
        position = seq;
    }
    let seq = position.expect("the store has a journal");
    expected
        .lock()
        .expect("not poisoned")
        .entry(seq)
        .or_insert(Expected { http, hits });
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at]
}

fn summary(name: &str, latencies: &[(Duration, Duration)]) -> String {
    let figures = |mut all: Vec<Duration>| {
        all.sort();
        format!(
            "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile(&all, 0.5).as_secs_f64() * 1e3,
            percentile(&all, 0.99).as_secs_f64() * 1e3,
            all.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        )
    };
    format!(
        "{name}: {} commits; sent to acknowledged {}; inside the session {}",
        latencies.len(),
        figures(latencies.iter().map(|l| l.0).collect()),
        figures(latencies.iter().map(|l| l.1).collect()),
    )
}

/// Our writer and the reference's, and the seeded draws both write with.
struct Writers<'w> {
    reference: &'w mut ReferenceWriter,
    ours: &'w mut particles_store::Writer,
    rng: &'w mut Rng,
    serial: &'w mut usize,
}

/// What the chaos phase's writers did.
struct Writes {
    /// The reference's commit latencies.
    loaded: Vec<(Duration, Duration)>,
    reference_commits: usize,
    rust_commits: usize,
    rollbacks: usize,
}

/// The writer alone: its commit latency with no engine running (after one
/// untimed transaction: the first pays for Python's imports).
fn write_alone(writers: &mut Writers<'_>, store: &Path) -> Vec<(Duration, Duration)> {
    let ids = active_ids(store);
    let ops = reference_ops(writers.rng, &ids, writers.serial);
    writers.reference.transact(&ops, false);
    let mut alone = Vec::new();
    for _ in 0..30 {
        let ids = active_ids(store);
        let ops = reference_ops(writers.rng, &ids, writers.serial);
        alone.push(writers.reference.transact(&ops, false));
    }
    alone
}

/// Until `deadline`, one transaction after another by either writer (a sixth
/// of them rolled back), recording the uncached answers after each.
fn write_until(
    writers: &mut Writers<'_>,
    deadline: Instant,
    oracle: &particles_engine::Engine,
    store: &Path,
    expected: &Mutex<HashMap<i64, Expected>>,
) -> Writes {
    let rng = &mut *writers.rng;
    let mut writes = Writes {
        loaded: Vec::new(),
        reference_commits: 0,
        rust_commits: 0,
        rollbacks: 0,
    };
    while Instant::now() < deadline {
        let ids = active_ids(store);
        let rollback = rng.below(6) == 0;
        if rng.below(2) == 0 {
            let ops = reference_ops(rng, &ids, writers.serial);
            let took = writers.reference.transact(&ops, rollback);
            if !rollback {
                writes.loaded.push(took);
                writes.reference_commits += 1;
            }
        } else {
            rust_write(writers.ours, rng, &ids, writers.serial, rollback);
            if !rollback {
                writes.rust_commits += 1;
            }
        }
        writes.rollbacks += usize::from(rollback);
        record(oracle, store, expected);
    }
    writes
}

/// Clients querying the HTTP engine without pause until `stop`.
fn http_clients(
    http: &Arc<Http>,
    stop: &Arc<AtomicBool>,
    observed: &Arc<Mutex<Vec<Observed>>>,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut clients = Vec::new();
    for client in 0..2u64 {
        let (http, stop, observed) = (http.clone(), stop.clone(), observed.clone());
        clients.push(std::thread::spawn(move || {
            let mut rng = Rng(0xC11E_0000 + client);
            while !stop.load(Ordering::Relaxed) {
                let q = rng.below(QUESTIONS.len());
                let result = http.query(&request_body(q));
                let (seq, answer, http_body) = match result {
                    Ok((seq, body)) => (seq, Ok(Value::Null), Some(body)),
                    Err(e) => (None, Err(e), None),
                };
                observed.lock().expect("not poisoned").push(Observed {
                    client: "http",
                    question: q,
                    seq,
                    answer,
                    http_body,
                });
            }
        }));
    }
    clients
}

/// `serve --stdio` processes, each queried without pause until `stop`.
fn stdio_clients(
    store: &Path,
    stop: &Arc<AtomicBool>,
    observed: &Arc<Mutex<Vec<Observed>>>,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut clients = Vec::new();
    for client in 0..2u64 {
        let (stop, observed) = (stop.clone(), observed.clone());
        let mut stdio = StdioClient::start(store);
        clients.push(std::thread::spawn(move || {
            let mut rng = Rng(0x57D1_0000 + client);
            while !stop.load(Ordering::Relaxed) {
                let q = rng.below(QUESTIONS.len());
                let (seq, answer) = match stdio.query(q) {
                    Ok((seq, hits)) => (seq, Ok(hits)),
                    Err(e) => (None, Err(e)),
                };
                observed.lock().expect("not poisoned").push(Observed {
                    client: "stdio",
                    question: q,
                    seq,
                    answer,
                    http_body: None,
                });
            }
        }));
    }
    clients
}

/// The answers checked against the uncached answers at their positions.
struct Checked {
    /// Answers checked, by client.
    checked: HashMap<&'static str, usize>,
    /// The journal positions the answers were computed at.
    states: std::collections::BTreeSet<i64>,
    wrong: Vec<String>,
}

/// Every answer against the uncached answer at its position.
fn check(expected: &HashMap<i64, Expected>, observed: &[Observed]) -> Checked {
    let mut checked: HashMap<&str, usize> = HashMap::new();
    let mut states = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    for answer in observed {
        let at = match (&answer.answer, answer.seq) {
            (Err(e), _) => {
                wrong.push(format!("{} failed: {e}", answer.client));
                continue;
            }
            (Ok(_), None) => {
                wrong.push(format!(
                    "{} answered without a journal position",
                    answer.client
                ));
                continue;
            }
            (Ok(_), Some(seq)) => seq,
        };
        let Some(state) = expected.get(&at) else {
            wrong.push(format!(
                "{} answered at journal seq {at}, a state the harness never committed",
                answer.client
            ));
            continue;
        };
        let same = match &answer.http_body {
            Some(body) => *body == state.http[answer.question],
            None => answer.answer.as_ref().ok() == Some(&state.hits[answer.question]),
        };
        if !same {
            wrong.push(format!(
                "{} question {} at seq {at} differs from the uncached answer",
                answer.client, answer.question
            ));
        }
        states.insert(at);
        *checked.entry(answer.client).or_default() += 1;
    }
    Checked {
        checked,
        states,
        wrong,
    }
}

#[test]
fn every_answer_under_concurrent_writers_is_exact_at_a_state_the_store_had() {
    let Some(python) = reference_python() else {
        return;
    };
    let seconds: u64 = std::env::var("PARTICLES_CHAOS_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = dir.path().join("chaos.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-b.db"),
        &store,
    )
    .expect("copies the fixture");
    let mut rng = Rng(0x5EED_C4A0_5EED_C4A0 ^ seconds);
    let mut serial = 0usize;
    let mut reference = ReferenceWriter::start(&python, &store);
    let mut writer = particles_store::Writer::open(&store).expect("our writer opens");
    let (oracle, _) = engine(&store, true);
    let expected: Mutex<HashMap<i64, Expected>> = Mutex::new(HashMap::new());
    let mut writers = Writers {
        reference: &mut reference,
        ours: &mut writer,
        rng: &mut rng,
        serial: &mut serial,
    };

    let alone = write_alone(&mut writers, &store);
    record(&oracle, &store, &expected);

    // The chaos: engines up, clients querying, both writers writing.
    let http = Arc::new(Http::start(&store));
    let stop = Arc::new(AtomicBool::new(false));
    let observed: Arc<Mutex<Vec<Observed>>> = Arc::new(Mutex::new(Vec::new()));
    let mut clients = http_clients(&http, &stop, &observed);
    clients.extend(stdio_clients(&store, &stop, &observed));

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let Writes {
        loaded,
        reference_commits,
        rust_commits,
        rollbacks,
    } = write_until(&mut writers, deadline, &oracle, &store, &expected);
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.join().expect("a client thread");
    }

    let expected = expected.into_inner().expect("not poisoned");
    let observed = std::mem::take(&mut *observed.lock().expect("not poisoned"));
    let Checked {
        checked,
        states,
        wrong,
    } = check(&expected, &observed);
    eprintln!(
        "chaos: {seconds} s, {} answers checked (http {}, stdio {}) across {} store states; \
         writes: {reference_commits} reference and {rust_commits} ours committed, {rollbacks} \
         rolled back; {} wrong",
        observed.len(),
        checked.get("http").copied().unwrap_or(0),
        checked.get("stdio").copied().unwrap_or(0),
        states.len(),
        wrong.len(),
    );
    eprintln!("chaos: {}", summary("reference writer alone", &alone));
    eprintln!(
        "chaos: {}",
        summary("reference writer under the chaos", &loaded)
    );
    // The check has teeth only if the writes changed the answers.
    let changed = (0..QUESTIONS.len())
        .filter(|&q| {
            let answers: std::collections::BTreeSet<&String> =
                states.iter().map(|seq| &expected[seq].http[q]).collect();
            answers.len() > 1
        })
        .count();
    eprintln!(
        "chaos: {changed} of {} questions answered differently across the states seen",
        QUESTIONS.len()
    );
    assert!(
        wrong.is_empty(),
        "{} wrong answers: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
    assert!(
        checked.get("http").copied().unwrap_or(0) > 0,
        "no HTTP answer checked"
    );
    assert!(
        checked.get("stdio").copied().unwrap_or(0) > 0,
        "no stdio answer checked"
    );
    assert!(
        states.len() > 1,
        "the answers saw one store state: the writes did not interleave with the queries"
    );
    assert!(
        changed > 0,
        "no write changed any answer: the check proved nothing"
    );
    let integrity = rusqlite::Connection::open(&store).expect("opens");
    let verdict: String = integrity
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("checks");
    assert_eq!(verdict, "ok", "the store after the chaos");
}
