//! An in-process server on a store, a raw HTTP/1.1 client, a fixture store,
//! the reference's Python with its server packages, the reference's own engine
//! as an upstream, and a fake OpenAI-compatible model.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use particles_model::{
    CalibrationSource, CanonicalForm, Confidence, ExtractorRef, Particle, ParticleType,
    ProvenanceRef, ProvenanceRefType, Status, Timestamp, UncertaintyNature,
};
use particles_server::{Backend, HttpOptions, HttpServer, KeySource, Limits};

pub use particles_testkit::workspace_root;

/// A deterministic unit vector for a text: what both engines rank a question
/// by in these tests (the reference through its encoder seam).
pub fn vector_for(text: &str) -> Vec<f32> {
    use sha2::Digest;
    let mut out = Vec::with_capacity(particles_model::EMBEDDING_DIM);
    let mut counter = 0u32;
    while out.len() < particles_model::EMBEDDING_DIM {
        let digest = sha2::Sha256::digest(format!("{text}\u{0}{counter}").as_bytes());
        for pair in digest.chunks(2) {
            let raw = u16::from_le_bytes([pair[0], pair[1]]);
            out.push(f32::from(raw) / 65535.0 - 0.5);
        }
        counter += 1;
    }
    out.truncate(particles_model::EMBEDDING_DIM);
    let norm = out
        .iter()
        .map(|v| f64::from(*v) * f64::from(*v))
        .sum::<f64>()
        .sqrt();
    out.iter().map(|v| (f64::from(*v) / norm) as f32).collect()
}

/// What a test server is started with.
pub struct ServerSetup<'a> {
    pub store: &'a Path,
    pub config_yaml: &'a str,
    pub key: Option<&'a str>,
    pub upstream: Option<String>,
    pub limits: Limits,
    pub encoder: Option<particles_engine::Encode>,
    pub frozen_now: Option<Timestamp>,
}

impl<'a> ServerSetup<'a> {
    pub fn new(store: &'a Path) -> ServerSetup<'a> {
        ServerSetup {
            store,
            config_yaml: "network: {egress: none}\n",
            key: None,
            upstream: None,
            limits: Limits::default(),
            encoder: Some(Arc::new(|text: &str| Ok(vector_for(text)))),
            frozen_now: None,
        }
    }
}

/// An encoder answering from `vectors` (the table the reference's stubbed
/// encoder reads), else [`vector_for`]: both engines rank the same vector for
/// each question text.
pub fn table_encoder(
    vectors: std::collections::HashMap<String, Vec<f32>>,
) -> particles_engine::Encode {
    Arc::new(move |text: &str| {
        Ok(vectors
            .get(text)
            .cloned()
            .unwrap_or_else(|| vector_for(text)))
    })
}

/// An in-process HTTP engine; stopped (drained) on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    pub fn start(setup: ServerSetup<'_>) -> TestServer {
        let dir = setup.store.parent().expect("the store's directory");
        let env = particles_config::Environment::new(Vec::new(), dir);
        let loaded =
            particles_config::load_from_str(setup.config_yaml, dir.join("test.yaml"), &env)
                .expect("the test configuration loads");
        let config = loaded.config();
        let selection =
            particles_engine::resolve_stores(config, &[setup.store.display().to_string()], dir)
                .expect("the store resolves");
        let engine = particles_engine::Engine::new(
            particles_engine::Settings::from_config(config),
            particles_engine::answer_settings(config, &std::collections::HashMap::new()),
            &selection,
            // The half-precision scan even on small fixtures, as `serve
            // --half-precision on` runs it: every served answer checked
            // against the reference checks that path too.
            &particles_engine::CacheOptions {
                no_sidecar: true,
                half_precision: Some(0),
                keep_particles: Some(particles_engine::KEEP_PARTICLES_MAX_ROWS),
                ..Default::default()
            },
            setup.encoder,
        )
        .expect("the engine opens the store");
        let mut backend = Backend::new(Arc::new(engine), &loaded, setup.store);
        if let Some(now) = setup.frozen_now {
            backend = backend.with_frozen_clock(now);
        }
        let options = HttpOptions {
            listen: "127.0.0.1:0".parse().expect("an address"),
            upstream: setup.upstream,
            limits: setup.limits,
            key: KeySource::Fixed(setup.key.map(str::to_owned)),
            metrics_listen: None,
            warm: false,
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let backend = Arc::new(backend);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async move {
                let server = HttpServer::bind(backend, options).await.expect("binds");
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
        let addr = ready_rx.recv().expect("the server starts");
        TestServer {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A response as read off the wire.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn detail(&self) -> String {
        self.json()["detail"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// Sends raw bytes (the request must ask `Connection: close`) and reads the
/// whole response.
pub fn raw(addr: SocketAddr, request: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("a timeout");
    stream.write_all(request).expect("writes");
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    parse_reply(&bytes)
}

pub fn parse_reply(bytes: &[u8]) -> Reply {
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(bytes)));
    let head = String::from_utf8_lossy(&bytes[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = bytes[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        body = dechunk(&body);
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&body[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[end + 2 + size + 2..];
    }
}

/// A request with headers and an optional JSON body.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Reply {
    request_bytes(addr, method, path, headers, body.map(str::as_bytes))
}

/// [`request`] with a body of any bytes.
pub fn request_bytes(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Reply {
    let mut text = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    let mut has_host = false;
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("host") {
            has_host = true;
        }
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if has_host {
        text = text.replacen(&format!("Host: {addr}\r\n"), "", 1);
    }
    let mut bytes = text.into_bytes();
    match body {
        Some(body) => {
            bytes.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            bytes.extend_from_slice(body);
        }
        None => bytes.extend_from_slice(b"\r\n"),
    }
    raw(addr, &bytes)
}

pub fn post_query(addr: SocketAddr, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    request(addr, "POST", "/query", &all, Some(body))
}

fn particle(id: &str, content: &str, status: Status, provenance: Vec<ProvenanceRef>) -> Particle {
    Particle {
        id: id.to_owned(),
        content: content.to_owned(),
        confidence: Confidence {
            value: 0.8,
            variance: None,
            calibration_source: CalibrationSource::Imported,
            calibration_method: None,
            calibration_ref: None,
        },
        uncertainty_nature: UncertaintyNature::Epistemic,
        provenance,
        asserted_by: "test".into(),
        asserted_at: Timestamp::parse("2024-01-01T00:00:00").expect("a timestamp"),
        status,
        status_reason: None,
        schema_version: particles_model::SCHEMA_VERSION.into(),
        particle_type: ParticleType::Claim,
        assertion_modality: particles_model::AssertionModality::Falsifiable,
        uncertainty_kind: None,
        valid_until: None,
        valid_from: None,
        valid_kind: None,
        supersedes: None,
        basis: None,
        extractor_ref: Some(ExtractorRef {
            name: "general-extractor".into(),
            version: "1.0.0".into(),
        }),
        extraction_provider_model: None,
        sequence_context: None,
        subject_ids: Vec::new(),
        tags: None,
        context_fingerprint: None,
        properties: Default::default(),
        contributors: None,
        structured_claim: None,
        canonical_form: CanonicalForm::Prose,
        contested: None,
    }
}

fn source_ref(entry: &str, snapshot: Option<&str>, chunk_hash: Option<&str>) -> ProvenanceRef {
    ProvenanceRef {
        ref_type: ProvenanceRefType::Source,
        corpus_entry_id: entry.into(),
        snapshot_id: snapshot.map(str::to_owned),
        location: None,
        chunk_hash: chunk_hash.map(str::to_owned),
    }
}

pub const BLOB_TEXT: &str = "Intro line about nothing.\n\nSilver coins were struck in Rome from \
the third century BC.\nThey carried the denarius mark.\n\nGold coins came later.\n";

/// A store of five particles (one an INCONSISTENCY record naming two of them),
/// one corpus entry with a snapshot whose blob is on disk.
pub fn fixture_store(dir: &Path) -> PathBuf {
    use sha2::Digest;
    let path = dir.join("fixture.db");
    let mut writer = particles_store::create_store(&path).expect("a new store");
    let hash = format!("{:x}", sha2::Sha256::digest(BLOB_TEXT.as_bytes()));
    let blob_dir = dir.join("corpus_blobs").join(&hash[..2]);
    std::fs::create_dir_all(&blob_dir).expect("the blob directory");
    std::fs::write(blob_dir.join(&hash), BLOB_TEXT).expect("the blob");
    let transaction = writer.transaction().expect("a transaction");
    let created = Timestamp::parse("2024-01-01T00:00:00").expect("a timestamp");
    transaction
        .insert_corpus_entry(
            &particles_store::CorpusEntryRow {
                entry_id: "entry-1",
                uri_r: Some("https://example.org/coins"),
                source_type: "WEB_PAGE",
                mutability: "MUTABLE",
                fetch_policy: "NEVER",
                created_at: created,
                deposited_by: "test",
                tags_json: "[]",
            },
            particles_store::OnConflict::Abort,
        )
        .expect("an entry");
    transaction
        .insert_snapshot(
            &particles_store::SnapshotRow {
                snapshot_id: "snap-1",
                entry_id: "entry-1",
                captured_at: created,
                content_hash: &hash,
                warc_record_type: "RESPONSE",
                extraction_status: "COMPLETE",
                content_published_at: None,
                author_id: None,
                extraction_attempts: 0,
                resume_whole: false,
            },
            particles_store::OnConflict::Abort,
        )
        .expect("a snapshot");
    let particles = [
        particle(
            "11111111-1111-4111-8111-111111111111",
            "Silver coins were struck in Rome from the third century BC.",
            Status::Active,
            vec![source_ref("entry-1", Some("snap-1"), None)],
        ),
        particle(
            "22222222-2222-4222-8222-222222222222",
            "Gold coins came later.",
            Status::Active,
            vec![source_ref("entry-1", None, None)],
        ),
        particle(
            "33333333-3333-4333-8333-333333333333",
            "Copper coins are worth little.",
            Status::Active,
            Vec::new(),
        ),
        particle(
            "44444444-4444-4444-8444-444444444444",
            "Whether gold came later is disputed.",
            Status::Inconsistency,
            vec![
                ProvenanceRef {
                    ref_type: ProvenanceRefType::Particle,
                    corpus_entry_id: "22222222-2222-4222-8222-222222222222".into(),
                    snapshot_id: None,
                    location: None,
                    chunk_hash: None,
                },
                ProvenanceRef {
                    ref_type: ProvenanceRefType::Particle,
                    corpus_entry_id: "33333333-3333-4333-8333-333333333333".into(),
                    snapshot_id: None,
                    location: None,
                    chunk_hash: None,
                },
            ],
        ),
        particle(
            "55555555-5555-4555-8555-555555555555",
            "A second record about gold.",
            Status::Inconsistency,
            vec![ProvenanceRef {
                ref_type: ProvenanceRefType::Particle,
                corpus_entry_id: "22222222-2222-4222-8222-222222222222".into(),
                snapshot_id: None,
                location: None,
                chunk_hash: None,
            }],
        ),
    ];
    for particle in particles {
        let vector = vector_for(&particle.content);
        let valid = garde::Unvalidated::new(particle)
            .validate()
            .expect("a valid particle");
        transaction.insert(&valid, Some(&vector)).expect("inserted");
    }
    transaction.commit().expect("committed");
    path
}

/// The reference's Python with its server packages, and the PYTHONPATH that
/// holds them and our `sitecustomize.py`; `None` (after saying what is missing)
/// when absent, unless PARTICLES_REQUIRE_REFERENCE=1.
pub struct Reference {
    pub python: PathBuf,
    pub particles: PathBuf,
    pub pythonpath: String,
}

pub fn reference(needs: &[&str]) -> Option<Reference> {
    let root = workspace_root();
    let mut paths = vec![root.join("tests/reference/server").display().to_string()];
    if let Ok(extra) = std::env::var("PARTICLES_REFERENCE_EXTRA_PATH") {
        paths.extend(
            extra
                .split(':')
                .filter(|p| !p.is_empty())
                .map(str::to_owned),
        );
    }
    let pythonpath = paths.join(":");
    let python = particles_testkit::reference_python_with(needs, &pythonpath)?;
    let particles = python.with_file_name("particles");
    Some(Reference {
        python,
        particles,
        pythonpath,
    })
}

/// A store the reference wrote (`make_cases.py`, seed `seed`: its hand-shaped
/// store, or with `generator_size` its benchmark generator's store of that
/// many beliefs), copied to `served.db` and stamped with the reference's
/// migration head, so that its engine serves it (it migrates what it opens
/// and refuses an unstamped file).
pub fn reference_store_to_serve(
    reference: &Reference,
    dir: &Path,
    seed: u64,
    generator_size: Option<usize>,
) -> PathBuf {
    let mut command = Command::new(&reference.python);
    command
        .arg(workspace_root().join("tests/reference/make_cases.py"))
        .args(["--seed", &seed.to_string(), "--requests", "1", "--out"])
        .arg(dir);
    if let Some(size) = generator_size {
        command.args(["--generator-size", &size.to_string()]);
    }
    let output = command.output().expect("make_cases.py runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let made = match generator_size {
        Some(size) => format!("generator-{seed}-{size}.db"),
        None => format!("store-{seed}.db"),
    };
    stamped_copy(reference, &dir.join(made), &dir.join("served.db"))
}

/// A copy of `store` at `to`, stamped with the reference's migration head (its
/// engine migrates what it opens and refuses an unstamped file).
pub fn stamped_copy(reference: &Reference, store: &Path, to: &Path) -> PathBuf {
    std::fs::copy(store, to).expect("a copy");
    let stamped = Command::new(&reference.python)
        .arg(workspace_root().join("tests/reference/server/stamp_store.py"))
        .arg(to)
        .output()
        .expect("stamp_store.py runs");
    assert!(
        stamped.status.success(),
        "{}",
        String::from_utf8_lossy(&stamped.stderr)
    );
    to.to_owned()
}

/// The reference's own engine (`particles engine serve`) on loopback, killed
/// on drop.
pub struct Upstream {
    child: std::process::Child,
    pub addr: SocketAddr,
}

impl Upstream {
    /// Starts the engine with `env` (its `PARTICLES_CONFIG`, `HOME`, seams) and
    /// waits until `/health` answers.
    pub fn start(reference: &Reference, env: &[(String, String)]) -> Upstream {
        let addr = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let mut command = Command::new(&reference.particles);
        command
            .args(["engine", "serve", &addr.to_string()])
            .env_remove("DATABASE_URL")
            .env_remove("PARTICLES_ENGINE_BASE_URL")
            .env("PYTHONPATH", &reference.pythonpath)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (name, value) in env {
            command.env(name, value);
        }
        let upstream = Upstream {
            child: command.spawn().expect("the reference's engine starts"),
            addr,
        };
        let deadline = Instant::now() + Duration::from_secs(180);
        while TcpStream::connect(addr).is_err()
            || request(addr, "GET", "/health", &[], None).status != 200
        {
            assert!(
                Instant::now() < deadline,
                "the reference's engine did not start"
            );
            std::thread::sleep(Duration::from_millis(300));
        }
        upstream
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the fake model answers every chat completion with.
pub const FAKE_REPLY: &str = "The fake model's fixed answer.";

/// A fake OpenAI-compatible endpoint answering every chat completion with
/// [`FAKE_REPLY`], so answers are deterministic and nothing leaves the
/// machine; returns its port.
pub fn fake_llm() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 8192];
                loop {
                    let Ok(n) = stream.read(&mut chunk) else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if buffer.len() >= end + 4 + length {
                        break;
                    }
                }
                let body = serde_json::json!({
                    "id": "fake", "object": "chat.completion", "model": "fake-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": FAKE_REPLY}}],
                })
                .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}
