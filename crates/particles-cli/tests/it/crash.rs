//! Crash safety: `kill -9` at random instants during the verbs that write (a
//! sidecar build, `store install-journal`, `import`) and during a `serve` refresh.
//! Afterwards the store passes `PRAGMA integrity_check`, every committed belief is
//! whole (the store answers a full listing without an error), the journal is
//! either installed completely or not at all, and the next query equals the
//! uncached answer. Runs per verb: `PARTICLES_CRASH_RUNS` (default 5; `cargo
//! xtask crash` raises it).

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::Value;

use crate::support::{particles_rs_command, workspace_root};

fn runs() -> u32 {
    std::env::var("PARTICLES_CRASH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// A deterministic sequence of delays, spread over `span`.
fn delays(seed: u64, span: Duration) -> impl Iterator<Item = Duration> {
    let mut state = seed | 1;
    std::iter::from_fn(move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        Some(Duration::from_micros(state % (span.as_micros() as u64 + 1)))
    })
}

/// coins-b grown to a few thousand rows (copies of its ACTIVE rows under new
/// ids), so that the writes take long enough to be interrupted in the middle.
fn grown_store(dir: &Path) -> PathBuf {
    let path = dir.join("grown.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-b.db"),
        &path,
    )
    .unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    let columns: Vec<String> = connection
        .prepare("SELECT name FROM pragma_table_info('particles')")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let rest: Vec<&str> = columns
        .iter()
        .map(String::as_str)
        .filter(|c| *c != "id")
        .collect();
    for copy in 0..40 {
        connection
            .execute_batch(&format!(
                "INSERT INTO particles (id, {cols}) SELECT id || '-copy{copy}', {cols} FROM particles \
                 WHERE status = 'ACTIVE' AND id NOT LIKE '%-copy%'",
                cols = rest.join(", ")
            ))
            .unwrap();
    }
    drop(connection);
    path
}

fn integrity(path: &Path) {
    let connection = rusqlite::Connection::open(path).unwrap();
    let verdict: String = connection
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(verdict, "ok", "{}", path.display());
}

/// The query's hits, through the sidecar (default) or uncached.
fn hits(store: &Path, extra: &[&str]) -> (Value, String) {
    let vector = workspace_root().join("tests/fixtures/stores/coins-b.question.json");
    let output = particles_rs_command()
        .env_remove("PARTICLES_SIDECAR_DIR")
        .args([
            "query",
            "q",
            "--json",
            "--top-k",
            "30",
            "--now",
            "2026-06-01T00:00:00Z",
        ])
        .arg("--store")
        .arg(store)
        .arg("--vector-file")
        .arg(&vector)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "query failed: {stderr}");
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    (json["hits"].clone(), stderr)
}

#[test]
fn killed_sidecar_builds_leave_the_store_and_the_answers_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = grown_store(dir.path());
    let (expected, _) = hits(&store, &["--no-sidecar"]);
    let sidecar = dir.path().join("grown.db.particles-rs.sidecar");
    for delay in delays(7, Duration::from_millis(400)).take(runs() as usize) {
        let _ = std::fs::remove_file(&sidecar);
        let mut child = particles_rs_command()
            .env_remove("PARTICLES_SIDECAR_DIR")
            .args(["sidecar", "build", "--store"])
            .arg(&store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        integrity(&store);
        // No half-written sidecar is ever used: the answer is the store's.
        let (got, _) = hits(&store, &[]);
        assert_eq!(got, expected, "after a kill at {delay:?}");
        // The killed build's temporary file is removed by the query's write
        // (writers lock theirs before the first byte): none with bytes in it
        // is left. An empty one (a kill before the write's first flush) stays
        // until it is old enough to be taken for abandoned.
        let leftovers: Vec<u64> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".particles-rs-sidecar-")
            })
            .map(|e| e.metadata().unwrap().len())
            .collect();
        assert!(
            leftovers.iter().all(|&len| len == 0),
            "temporary files after a kill at {delay:?}: {leftovers:?} bytes"
        );
    }
}

#[test]
fn killed_journal_installs_are_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = grown_store(dir.path());
    {
        let connection = rusqlite::Connection::open(&pristine).unwrap();
        connection
            .execute_batch(
                "DROP TRIGGER IF EXISTS trg_particles_journal_insert; \
                 DROP TRIGGER IF EXISTS trg_particles_journal_update; \
                 DROP TRIGGER IF EXISTS trg_particles_journal_delete; \
                 DROP TRIGGER IF EXISTS trg_particle_changes_prune; \
                 DROP TABLE IF EXISTS particle_changes;",
            )
            .unwrap();
    }
    let (expected, _) = hits(&pristine, &["--no-sidecar"]);
    let store = dir.path().join("journal.db");
    for delay in delays(11, Duration::from_millis(60)).take(runs() as usize) {
        std::fs::copy(&pristine, &store).unwrap();
        let mut child = particles_rs_command()
            .args(["store", "install-journal", "--store"])
            .arg(&store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        integrity(&store);
        let connection = rusqlite::Connection::open(&store).unwrap();
        let triggers: i64 = connection
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN \
                 ('trg_particles_journal_insert', 'trg_particles_journal_update', \
                  'trg_particles_journal_delete', 'trg_particle_changes_prune')",
                [],
                |row| row.get(0),
            )
            .unwrap();
        let table: i64 = connection
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'particle_changes'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        drop(connection);
        assert!(
            (table, triggers) == (0, 0) || (table == 1 && triggers == 4),
            "a half-installed journal after a kill at {delay:?}: table {table}, {triggers} triggers"
        );
        let (got, _) = hits(&store, &["--no-sidecar"]);
        assert_eq!(got, expected);
        let (got, _) = hits(&store, &[]);
        assert_eq!(got, expected);
    }
}

#[test]
fn a_killed_serve_refresh_leaves_the_next_query_exact() {
    let dir = tempfile::tempdir().unwrap();
    let store = grown_store(dir.path());
    let vector = std::fs::read_to_string(
        workspace_root().join("tests/fixtures/stores/coins-b.question.json"),
    )
    .unwrap();
    let line = format!(
        r#"{{"question": "q", "vector": {}, "top_k": 30, "now": "2026-06-01T00:00:00Z"}}"#,
        vector.trim()
    );
    for (round, delay) in delays(13, Duration::from_millis(300))
        .take(runs() as usize)
        .enumerate()
    {
        // A write, so the serve process must refresh (a delta, or a rebuild after
        // many changes) on its next request.
        {
            let connection = rusqlite::Connection::open(&store).unwrap();
            connection
                .execute(
                    "UPDATE particles SET confidence_value = confidence_value * 0.99 \
                     WHERE rowid % 7 = ?1 AND status = 'ACTIVE'",
                    [round as i64 % 7],
                )
                .unwrap();
        }
        let mut child = particles_rs_command()
            .env_remove("PARTICLES_SIDECAR_DIR")
            .args(["serve", "--stdio", "--store"])
            .arg(&store)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let _ = writeln!(stdin, "{line}");
        let _ = stdin.flush();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        integrity(&store);
        let (expected, _) = hits(&store, &["--no-sidecar"]);
        let (got, _) = hits(&store, &[]);
        assert_eq!(got, expected, "after a kill at {delay:?}");
    }
}

/// The particle ids in a store, sorted.
fn particle_ids(path: &Path) -> Vec<String> {
    let connection = rusqlite::Connection::open(path).unwrap();
    let mut statement = connection
        .prepare("SELECT id FROM particles ORDER BY id")
        .unwrap();
    statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// `import` killed at random instants: the store stays whole, the beliefs in it
/// are whole batches (a transaction per batch), and running the same import
/// again completes it to exactly the beliefs of an uninterrupted import.
#[test]
fn killed_imports_lose_no_committed_belief_and_resume() {
    if !cfg!(feature = "encoder") || particles_testkit::model_files().is_none() {
        eprintln!("skipping: import needs the encoder and its model files");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("beliefs.jsonl");
    let lines: String = (0..48)
        .map(|i| {
            format!(
                "{{\"content\": \"Coin {i} is struck in metal {}.\", \"confidence\": 0.{}}}\n",
                i % 7,
                1 + i % 9
            )
        })
        .collect();
    std::fs::write(&file, lines).unwrap();
    let import = |store: &Path| {
        let mut command = particles_rs_command();
        command
            .args(["import", "--batch-size", "4", "--store"])
            .arg(store)
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command
    };
    let whole = dir.path().join("whole.db");
    let output = import(&whole).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = particle_ids(&whole);
    assert_eq!(expected.len(), 48);
    let mut interrupted = 0;
    for (run, delay) in delays(11, Duration::from_millis(3000))
        .take(runs() as usize)
        .enumerate()
    {
        let store = dir.path().join(format!("killed-{run}.db"));
        let mut child = import(&store).spawn().unwrap();
        std::thread::sleep(delay);
        let finished = child.try_wait().unwrap().is_some();
        let _ = child.kill();
        let _ = child.wait();
        if !store.exists() {
            continue; // killed before the store was created: nothing to check
        }
        integrity(&store);
        let ids = particle_ids(&store);
        if !finished && ids.len() < 48 {
            interrupted += 1;
        }
        assert_eq!(
            ids.len() % 4,
            0,
            "run {run}: a batch was half-written: {} beliefs",
            ids.len()
        );
        assert!(
            ids.iter().all(|id| expected.contains(id)),
            "run {run}: a belief no import writes"
        );
        let resumed = import(&store).output().unwrap();
        assert!(
            resumed.status.success(),
            "run {run}: {}",
            String::from_utf8_lossy(&resumed.stderr)
        );
        integrity(&store);
        assert_eq!(
            particle_ids(&store),
            expected,
            "run {run}: the resumed import differs"
        );
        // The next query is exact (rowids and import instants differ from the
        // uninterrupted store's, so it is compared with its own uncached answer).
        let (cached, _) = hits(&store, &[]);
        let (uncached, _) = hits(&store, &["--no-sidecar"]);
        assert_eq!(cached, uncached, "run {run}: the next query is not exact");
    }
    eprintln!("{interrupted} of {} imports were killed mid-way", runs());
}
