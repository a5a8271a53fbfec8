//! `benchmark serve-load --reference`: the reference's own engine (`particles
//! engine serve`) started beside ours and loaded by the same generator, so the two
//! engines' tables come from one run on one machine.
//!
//! Without torch the reference has no question encoder; its own seam
//! (`particles.embeddings.set_embedding_model`) is set from a `sitecustomize.py`
//! on its `PYTHONPATH` to return, for each question text, the vector our encoder
//! gives it. Both engines then rank the same vectors, and the reference's time is
//! its query, not an encoder we took away. The reference migrates the store it
//! opens, so it serves a copy.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use particles_engine::Encode;

use crate::{error::io_error, Error, Result};

/// The seam: the reference's question encoder replaced by a table lookup. Only
/// the benchmark's questions are asked, so a missing text is a bug (KeyError).
const SEAM: &str = r#"# Written by `particles-rs benchmark serve-load --reference`: the reference's
# question encoder, replaced through its own seam with a table of the vectors
# particles-rs computes for the same texts.
import json
import os

if os.environ.get("PARTICLES_RS_LOAD_QVECS"):
    import numpy as np

    from particles import embeddings

    with open(os.environ["PARTICLES_RS_LOAD_QVECS"]) as handle:
        _TABLE = {q: np.asarray(v, dtype=np.float32) for q, v in json.load(handle).items()}

    class _TableEncoder:
        def encode(self, texts, convert_to_numpy=True, normalize_embeddings=True, **kw):
            return np.stack([_TABLE[t] for t in texts])

    embeddings.set_embedding_model(_TableEncoder())
"#;

/// How long the reference may take to answer `/health` after start (it opens and
/// migrates the store first).
const START_TIMEOUT: Duration = Duration::from_secs(900);

/// A running reference engine; stopped (SIGTERM, then waited for) when dropped.
pub(crate) struct ReferenceEngine {
    child: Child,
    pub(crate) url: String,
    pub(crate) log: PathBuf,
    /// The copy of the store it serves.
    pub(crate) store: PathBuf,
}

impl ReferenceEngine {
    /// The engine's process id, for its peak RSS.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ReferenceEngine {
    fn drop(&mut self) {
        let terminated = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !terminated {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Starts `particles engine serve` (the reference's executable `particles`) on a
/// copy of `store` in `work`, its encoder seamed to our vectors of `questions`,
/// its rate limit off, with the user's configuration file when one was named.
/// Returns once `/health` answers 200.
pub(crate) fn start(
    particles: &Path,
    store: &Path,
    questions: &[String],
    encode: &Encode,
    config: Option<&Path>,
    work: &Path,
) -> Result<ReferenceEngine> {
    let seam = work.join("seam");
    std::fs::create_dir_all(&seam).map_err(io_error("create", &seam))?;
    let seam_file = seam.join("sitecustomize.py");
    std::fs::write(&seam_file, SEAM).map_err(io_error("write the encoder seam", &seam_file))?;

    let mut table = serde_json::Map::new();
    for question in questions {
        let vector = encode(question)
            .map_err(|error| Error::Engine(format!("cannot encode {question:?}: {error}")))?;
        table.insert(question.clone(), serde_json::json!(vector));
    }
    let qvecs = work.join("qvecs.json");
    std::fs::write(&qvecs, serde_json::Value::Object(table).to_string())
        .map_err(io_error("write", &qvecs))?;

    let copy = copy_store(store, &work.join("reference-store.db"))?;
    let port = free_port()?;
    let log = work.join("engine.log");
    let log_file = std::fs::File::create(&log).map_err(io_error("create", &log))?;
    let pythonpath = match std::env::var_os("PYTHONPATH") {
        Some(existing) if !existing.is_empty() => {
            let mut joined = seam.clone().into_os_string();
            joined.push(":");
            joined.push(existing);
            joined
        }
        _ => seam.clone().into_os_string(),
    };
    let mut command = Command::new(particles);
    command
        .args(["engine", "serve", &format!("127.0.0.1:{port}")])
        .env("PYTHONPATH", pythonpath)
        .env("PARTICLES_RS_LOAD_QVECS", &qvecs)
        .env(
            "DATABASE_URL",
            format!("sqlite+aiosqlite:///{}", copy.display()),
        )
        .env("PARTICLES_API_RATE_LIMIT_PER_MINUTE", "0")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().map_err(io_error("open", &log))?)
        .stderr(log_file);
    if let Some(config) = config {
        command.env("PARTICLES_CONFIG", config);
    }
    let child = command.spawn().map_err(|source| Error::Spawn {
        program: particles.to_owned(),
        source,
    })?;
    let mut engine = ReferenceEngine {
        child,
        url: format!("http://127.0.0.1:{port}"),
        log,
        store: copy,
    };
    let deadline = Instant::now() + START_TIMEOUT;
    while !healthy(port) {
        let exited = engine.child.try_wait().map_err(|source| Error::Spawn {
            program: particles.to_owned(),
            source,
        })?;
        if let Some(status) = exited {
            return Err(Error::Reference {
                task: "`particles engine serve`".to_owned(),
                detail: format!(
                    "it exited before it answered /health ({status}); its log: {}",
                    engine.log.display()
                ),
            });
        }
        if Instant::now() > deadline {
            return Err(Error::Reference {
                task: "`particles engine serve`".to_owned(),
                detail: format!(
                    "it did not answer /health within {} s; its log: {}",
                    START_TIMEOUT.as_secs(),
                    engine.log.display()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    Ok(engine)
}

/// Copies the store file (and its WAL, whose committed pages SQLite replays on
/// open) to `to`; returns `to` made absolute.
fn copy_store(store: &Path, to: &Path) -> Result<PathBuf> {
    std::fs::copy(store, to).map_err(io_error("copy the store to", to))?;
    let wal = PathBuf::from(format!("{}-wal", store.display()));
    let copied_wal = PathBuf::from(format!("{}-wal", to.display()));
    if wal.exists() {
        std::fs::copy(&wal, &copied_wal).map_err(io_error("copy", &wal))?;
    } else {
        let _ = std::fs::remove_file(&copied_wal);
    }
    std::path::absolute(to).map_err(io_error("resolve", to))
}

/// A free port on the loopback interface (free when asked: the engine binds it
/// a moment later).
pub(crate) fn free_port() -> Result<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(Error::Port)
}

/// Whether `GET /health` on the loopback port answers 200.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}
