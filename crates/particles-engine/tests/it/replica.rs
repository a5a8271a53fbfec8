//! A Litestream replica's answers never go back: when its copy falls behind
//! the position the engine already answered at (the primary restored from an
//! older backup, shipped as one more apply; or the copy restored from behind),
//! the engine refuses until the copy passes that position again.

use std::path::{Path, PathBuf};

use particles_engine::Error;
use particles_model::{Envelope, QueryRequest, Timestamp};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/stores/coins-b.db")
}

/// Lowers one particle's confidence on the primary: one journal entry.
fn commit(primary: &Path, step: u32) {
    crate::commit(primary, 0.5 - f64::from(step) / 100.0);
}

/// The follower's apply, played by writing the primary's bytes over the copy
/// in place (the copy's file stays the same file).
fn apply(primary: &Path, copy: &Path) {
    use std::io::Write;
    let bytes = std::fs::read(primary).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(copy)
        .unwrap();
    file.write_all(&bytes).unwrap();
}

#[test]
fn a_replica_refuses_to_answer_behind_where_it_answered_until_it_passes_it() {
    let dir = tempfile::tempdir().unwrap();
    let primary = dir.path().join("primary.db");
    std::fs::copy(fixture(), &primary).unwrap();
    {
        let mut writer = particles_store::Writer::open(&primary).unwrap();
        particles_store::install_journal(&mut writer).unwrap();
    }
    commit(&primary, 1);
    let backup = std::fs::read(&primary).unwrap();
    commit(&primary, 2);
    commit(&primary, 3);
    let copy = dir.path().join("replica.db");
    std::fs::copy(&primary, &copy).unwrap();
    std::fs::write(
        particles_store::replica::txid_file(&copy),
        "0000000000000009\n",
    )
    .unwrap();

    let engine = crate::engine_over(&copy);
    assert_eq!(engine.replica_stores(), vec![copy.as_path()]);
    let now = Timestamp::parse("2026-06-01T00:00:00Z").unwrap();
    let request = QueryRequest::question("q").validate(now).unwrap();
    let envelope = Envelope {
        vector: Some(vec![1.0 / (384f32).sqrt(); 384]),
        no_embedding: false,
        now: Some(now),
        ..Envelope::default()
    };
    let ask = || engine.query_with_position(&request, &envelope);
    let (_, answered_at) = ask().unwrap();
    let answered_at = answered_at.expect("a journal position");

    // The primary restored from the backup taken before the last two
    // commits: the follower ships it in place, and the journal's head falls.
    std::fs::write(&primary, &backup).unwrap();
    apply(&primary, &copy);
    match ask() {
        Err(Error::ReplicaBehind { seq, floor, .. }) => {
            assert!(seq < answered_at, "{seq} < {answered_at}");
            assert_eq!(floor, answered_at);
        }
        other => panic!("answered from behind: {:?}", other.map(|(_, seq)| seq)),
    }
    // The restored primary's new history passes the position: answers again.
    for step in 4..8 {
        commit(&primary, step);
    }
    apply(&primary, &copy);
    let (_, again) = ask().unwrap();
    assert!(again.expect("a position") > answered_at);
}
