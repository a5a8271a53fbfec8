//! Every store particles-rs creates opens in every entry point of the reference:
//! its schema equals the one `particles db init` creates at the reference's
//! migration head (sqlite_master, statement for statement, and the version stamp);
//! `particles db init` (which runs `alembic upgrade head`) and `particles query`
//! accept it; and `particles engine serve` (which migrates the store it opens on
//! start) serves a copy of it over HTTP.
//!
//! Stores come from `particles-rs import` and from the benchmark generator. The
//! engine needs the server packages (fastapi, uvicorn, ...), which `cargo xtask
//! reference` installs; `PARTICLES_REFERENCE_SERVER_PATH` may name a directory
//! holding them instead (added to `PYTHONPATH`). Without them the engine part is
//! skipped with the reason printed, unless `PARTICLES_REQUIRE_REFERENCE=1`.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::support::{generated_store, particles_rs, reference_python, reference_server_path};

/// A few beliefs, one of them about a subject, for a small imported store.
const BELIEFS: &str = concat!(
    "{\"content\": \"Gold coins do not tarnish.\", \"confidence\": 0.9, \"subjects\": [\"gold\"]}\n",
    "{\"content\": \"Silver coins tone over decades.\", \"confidence\": 0.7, \"source_type\": \"PDF\", \"published\": \"2020-01-01T00:00:00Z\"}\n",
    "{\"content\": \"Coin grading uses the Sheldon scale.\", \"confidence\": 0.8, \"source_url\": \"https://en.wikipedia.org/wiki/Coin_grading\"}\n",
    "{\"content\": \"Bronze coins develop a patina.\", \"confidence\": 0.6}\n",
);

/// `particles` beside the reference's python.
fn reference_cli(python: &Path) -> PathBuf {
    python.with_file_name("particles")
}

/// A reference command with nothing of the developer's configuration: an empty
/// `HOME`, no override variables, only what `vars` sets.
fn reference_command(program: &Path, home: &Path, vars: &[(&str, &str)]) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for (name, value) in vars {
        command.env(name, value);
    }
    command
}

fn sqlite_url(path: &Path) -> String {
    format!("sqlite+aiosqlite:///{}", path.display())
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A store made by `particles-rs import`.
fn imported_store(dir: &Path) -> PathBuf {
    let beliefs = dir.join("beliefs.jsonl");
    std::fs::write(&beliefs, BELIEFS).unwrap();
    let store = dir.join("imported.db");
    let output = particles_rs(&[
        "import",
        "--store",
        store.to_str().unwrap(),
        beliefs.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output));
    store
}

/// `(type, name, table, sql)` of every schema object, sorted.
fn schema(path: &Path) -> Vec<(String, String, String, Option<String>)> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut statement = connection
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
        .unwrap();
    statement
        .query_map([], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn stamps(path: &Path) -> Vec<String> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut statement = connection
        .prepare("SELECT version_num FROM alembic_version")
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn a_new_store_has_the_references_schema_at_its_head() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let reference = dir.path().join("reference.db");
    let url = sqlite_url(&reference);
    let init = reference_command(
        &reference_cli(&python),
        home.path(),
        &[("DATABASE_URL", &url)],
    )
    .args(["db", "init"])
    .output()
    .unwrap();
    assert!(init.status.success(), "particles db init: {}", text(&init));
    // Both of our writers create stores the same way; the importer needs the
    // encoder, so a build without it checks the generator's store.
    let ours = if cfg!(feature = "encoder") {
        imported_store(dir.path())
    } else {
        generated_store(dir.path())
    };
    assert_eq!(stamps(&ours), stamps(&reference));
    assert_eq!(stamps(&ours), [particles_store::ALEMBIC_HEAD]);
    let (ours, theirs) = (schema(&ours), schema(&reference));
    let only_ours: Vec<_> = ours.iter().filter(|o| !theirs.contains(o)).collect();
    let only_theirs: Vec<_> = theirs.iter().filter(|t| !ours.contains(t)).collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty(),
        "the schemas differ\nonly in ours: {only_ours:#?}\nonly in the reference's: {only_theirs:#?}"
    );
}

#[test]
fn stores_we_create_open_in_the_references_entry_points() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut stores = vec![("generated", generated_store(dir.path()))];
    // The importer embeds every belief: only a build with the encoder has it.
    if cfg!(feature = "encoder") {
        stores.push(("imported", imported_store(dir.path())));
    }
    for (label, store) in &stores {
        let home = tempfile::tempdir().unwrap();
        // `db init` migrates to head (a no-op at the stamp) and registers the
        // built-in extractors: it writes, so it gets a copy.
        let copy = dir.path().join(format!("{label}-init.db"));
        std::fs::copy(store, &copy).unwrap();
        let url = sqlite_url(&copy);
        let init = reference_command(
            &reference_cli(&python),
            home.path(),
            &[("DATABASE_URL", &url)],
        )
        .args(["db", "init"])
        .output()
        .unwrap();
        assert!(
            init.status.success(),
            "{label}: particles db init: {}",
            text(&init)
        );
        assert_eq!(stamps(&copy), [particles_store::ALEMBIC_HEAD], "{label}");

        // `particles query` (no encoder here: it ranks by effective confidence; no
        // egress: the answer step fails fast and lists the hits).
        let config = home.path().join("config.yaml");
        std::fs::write(
            &config,
            format!("storage:\n  database_url: {url}\nnetwork:\n  egress: none\n"),
        )
        .unwrap();
        let query = reference_command(
            &reference_cli(&python),
            home.path(),
            &[("PARTICLES_CONFIG", config.to_str().unwrap())],
        )
        .args([
            "query",
            "how are coins graded?",
            "--show-particles",
            "--top-k",
            "3",
        ])
        .output()
        .unwrap();
        assert!(
            query.status.success(),
            "{label}: particles query: {}",
            text(&query)
        );
        assert!(
            String::from_utf8_lossy(&query.stdout).contains("EXTRACTOR"),
            "{label}: particles query printed no hit table: {}",
            text(&query)
        );
    }
    engine_serves(&python, dir.path(), &stores);
}

/// `particles engine serve` on copies of our stores, one engine each, all
/// started before any is waited on (start-up takes seconds).
fn engine_serves(python: &Path, dir: &Path, stores: &[(&str, PathBuf)]) {
    let Some(server_path) = reference_server_path(python) else {
        return;
    };
    let mut engines = Vec::new();
    for (label, store) in stores {
        let copy = dir.join(format!("{label}-served.db"));
        std::fs::copy(store, &copy).unwrap();
        engines.push((
            label,
            Engine::start(python, dir, label, &copy, &server_path),
        ));
    }
    for (label, engine) in &mut engines {
        engine.wait_healthy();
        let (status, body) = engine.request(
            "POST",
            "/query",
            r#"{"question": "how are coins graded?", "top_k": 3}"#,
        );
        assert_eq!(
            status,
            200,
            "{label}: POST /query: {body}\n{}",
            engine.log()
        );
        let response: Value = serde_json::from_str(&body).unwrap();
        let hits = response["particles"].as_array().map_or(0, Vec::len);
        assert!(hits > 0, "{label}: the engine answered no particle: {body}");
        assert_eq!(stamps(&engine.store), [particles_store::ALEMBIC_HEAD]);
    }
}

/// A running `particles engine serve`, killed when dropped.
struct Engine {
    child: Child,
    port: u16,
    log: PathBuf,
    store: PathBuf,
}

impl Engine {
    fn start(python: &Path, dir: &Path, label: &str, store: &Path, server_path: &str) -> Engine {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let home = dir.join(format!("{label}-home"));
        std::fs::create_dir_all(&home).unwrap();
        let config = home.join("config.yaml");
        std::fs::write(
            &config,
            format!(
                "storage:\n  database_url: {}\nnetwork:\n  egress: none\n",
                sqlite_url(store)
            ),
        )
        .unwrap();
        let log = dir.join(format!("{label}-engine.log"));
        let child = reference_command(
            &reference_cli(python),
            &home,
            &[
                ("PARTICLES_CONFIG", config.to_str().unwrap()),
                ("PARTICLES_API_RATE_LIMIT_PER_MINUTE", "0"),
                ("PYTHONPATH", server_path),
            ],
        )
        .args(["engine", "serve", &format!("127.0.0.1:{port}")])
        .current_dir(&home)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join(format!("{label}-engine.err"))).unwrap())
        .spawn()
        .unwrap();
        Engine {
            child,
            port,
            log,
            store: store.to_owned(),
        }
    }

    fn log(&self) -> String {
        let err = self.log.with_extension("err");
        format!(
            "{}{}",
            std::fs::read_to_string(&self.log).unwrap_or_default(),
            std::fs::read_to_string(err).unwrap_or_default()
        )
    }

    /// Polls `/health` until it answers 200; fails when the engine exits or takes
    /// more than three minutes (a loaded two-core machine starts it in ~30 s).
    fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "the engine exited ({status}) before answering:\n{}",
                    self.log()
                );
            }
            if let Some((200, _)) = self.try_request("GET", "/health", "") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the engine did not answer /health within 180 s:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        self.try_request(method, path, body)
            .unwrap_or_else(|| panic!("{method} {path}: no answer\n{}", self.log()))
    }

    /// One HTTP/1.1 exchange on loopback (`Connection: close`, so the body ends
    /// with the stream).
    fn try_request(&self, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .ok()?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.port,
            body.len()
        )
        .ok()?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).ok()?;
        let response = String::from_utf8_lossy(&response);
        let (head, rest) = response.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            crate::support::dechunk(rest)
        } else {
            rest.to_owned()
        };
        Some((status, body))
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Only this test's own child, by its handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_schema_file_names_the_head_the_reference_ships() {
    let Some(python) = reference_python() else {
        return;
    };
    let output = Command::new(&python)
        .args([
            "-c",
            "from alembic.script import ScriptDirectory; from particles.db import alembic_paths; \
             print(ScriptDirectory(str(alembic_paths()[1])).get_current_head())",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        particles_store::ALEMBIC_HEAD
    );
}
