//! A Litestream follow-mode copy read by a long-lived `Store`: the follower
//! writes pages in place and, when page 1 is not among them, leaves the change
//! counter alone; the store must still read each transaction from the file.
//! The follower's apply is played here by copying every page that differs
//! (page 1 excepted, as in an apply of a WAL primary's commit).

use std::path::Path;

use particles_store::{particles_by_ids, replica, Store};

const ID: &str = "ebb296ca-ce10-42d4-8c91-8bbe5985708b";
const PAGE: usize = 4096;

fn header(path: &Path) -> [u8; 28] {
    let bytes = std::fs::read(path).expect("reads");
    bytes[..28].try_into().expect("a header")
}

fn confidence(store: &Store) -> f64 {
    store
        .read_snapshot(|store| particles_by_ids(store, &[ID]))
        .expect("reads")
        .remove(0)
        .confidence
        .value
}

/// Copies every page of `from` that differs from `to`'s, but page 1.
fn apply_without_page_one(from: &Path, to: &Path) -> usize {
    let new = std::fs::read(from).expect("reads");
    let mut old = std::fs::read(to).expect("reads");
    assert_eq!(new.len() % PAGE, 0, "whole pages");
    old.resize(new.len(), 0);
    let mut changed = 0;
    for (page, (a, b)) in new.chunks(PAGE).zip(old.chunks_mut(PAGE)).enumerate() {
        if page > 0 && a != b {
            b.copy_from_slice(a);
            changed += 1;
        }
    }
    let mut header = std::fs::read(to).expect("reads");
    header.truncate(PAGE);
    old[..PAGE].copy_from_slice(&header);
    std::fs::write(to, old).expect("writes");
    changed
}

#[test]
fn a_replica_reads_each_transaction_from_the_file_not_from_pages_it_kept() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let primary = dir.path().join("primary.db");
    let copy = dir.path().join("replica.db");
    let fixture = particles_testkit::workspace_root().join("tests/fixtures/stores/coins-b.db");
    std::fs::copy(&fixture, &primary).expect("copies");
    {
        let c = rusqlite::Connection::open(&primary).expect("opens");
        c.pragma_update(None, "journal_mode", "DELETE")
            .expect("rollback mode");
    }
    std::fs::copy(&primary, &copy).expect("copies");
    // As Litestream's first restore leaves it: the primary's header, which
    // says WAL, and the follower's txid file beside it.
    let mut bytes = std::fs::read(&copy).expect("reads");
    bytes[18] = 2;
    bytes[19] = 2;
    std::fs::write(&copy, bytes).expect("writes");
    std::fs::write(replica::txid_file(&copy), "0000000000000001\n").expect("writes");
    assert!(replica::is_replica(&copy));
    assert!(!replica::is_replica(&primary));
    assert_eq!(
        replica::applied_txid(&copy).as_deref(),
        Some("0000000000000001")
    );
    let follower = replica::follower_state(&copy).expect("a follower state");
    assert_eq!(follower.txid, "0000000000000001");
    assert!(follower.applied_at <= std::time::SystemTime::now());
    assert_eq!(replica::follower_state(&primary), None);

    let store = Store::open_read_only(&copy).expect("the replica opens");
    assert!(store.is_replica());
    let readied = header(&copy);
    assert_eq!((readied[18], readied[19]), (1, 1), "rollback mode now");
    assert_eq!(confidence(&store), 0.7);
    // A plain connection that read the row before the apply: the control.
    let plain =
        rusqlite::Connection::open_with_flags(&copy, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("opens");
    let read = |c: &rusqlite::Connection| -> f64 {
        c.query_row(
            "SELECT confidence_value FROM particles WHERE id = ?1",
            [ID],
            |row| row.get(0),
        )
        .expect("reads")
    };
    assert_eq!(read(&plain), 0.7);

    {
        let c = rusqlite::Connection::open(&primary).expect("opens");
        c.execute(
            "UPDATE particles SET confidence_value = 0.25 WHERE id = ?1",
            [ID],
        )
        .expect("updates");
    }
    let counter_before = header(&copy)[24..28].to_vec();
    assert!(apply_without_page_one(&primary, &copy) > 0);
    assert_eq!(
        header(&copy)[24..28],
        counter_before[..],
        "page 1 untouched"
    );

    assert_eq!(
        read(&plain),
        0.7,
        "a connection that keeps its pages reads from before the apply (the hazard)"
    );
    assert_eq!(
        confidence(&store),
        0.25,
        "the replica store reads the apply"
    );
    assert!(
        !Store::open_read_only(&primary).expect("opens").is_replica(),
        "a primary is not a replica"
    );
}

#[test]
fn a_file_without_the_followers_txid_file_is_never_written() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = dir.path().join("store.db");
    std::fs::copy(
        particles_testkit::workspace_root().join("tests/fixtures/stores/coins-b.db"),
        &store,
    )
    .expect("copies");
    let before = std::fs::read(&store).expect("reads");
    assert_eq!(replica::prepare(&store).expect("nothing to do"), None);
    let opened = Store::open_read_only(&store).expect("opens");
    assert!(!opened.is_replica());
    drop(opened);
    assert_eq!(std::fs::read(&store).expect("reads"), before);
}

#[test]
fn a_copy_restored_anew_at_the_same_path_is_seen_as_replaced_once_its_follower_writes_txid() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let copy = dir.path().join("replica.db");
    let fixture = particles_testkit::workspace_root().join("tests/fixtures/stores/coins-b.db");
    std::fs::copy(&fixture, &copy).expect("copies");
    std::fs::write(replica::txid_file(&copy), "0000000000000001\n").expect("writes");
    let store = Store::open_read_only(&copy).expect("the replica opens");
    assert!(!store.copy_replaced(), "the copy it opened");

    // The node's restart: copy and txid deleted, then restored anew.
    std::fs::remove_file(&copy).expect("deletes");
    std::fs::remove_file(replica::txid_file(&copy)).expect("deletes");
    assert!(
        !store.copy_replaced(),
        "no file there: keep serving the old copy"
    );
    assert_eq!(confidence(&store), 0.7, "the old copy still reads");
    std::fs::copy(&fixture, &copy).expect("restores");
    assert!(
        !store.copy_replaced(),
        "a new file without the follower's txid is a restore under way"
    );
    std::fs::write(replica::txid_file(&copy), "0000000000000009\n").expect("writes");
    assert!(store.copy_replaced(), "a new follow-mode copy");
    let fresh = Store::open_read_only(&copy).expect("the new copy opens");
    assert!(!fresh.copy_replaced());
    assert!(
        !Store::open_read_only(&fixture)
            .expect("opens")
            .copy_replaced(),
        "a primary is never replaced"
    );
}

/// Whether another holder could take SQLite's write lock on `file` now (the
/// SHARED range, for writing, as Litestream's follower takes it before an
/// apply). An open-file-description lock conflicts with this process's own
/// POSIX locks, so it sees the locks of the connections in this test.
fn follower_could_write(file: &std::fs::File) -> bool {
    use nix::{fcntl::FcntlArg, libc};
    let lock = |kind: i32| libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0x4000_0002,
        l_len: 510,
        l_pid: 0,
    };
    match nix::fcntl::fcntl(file, FcntlArg::F_OFD_SETLK(&lock(libc::F_WRLCK))) {
        Ok(_) => {
            let _ = nix::fcntl::fcntl(file, FcntlArg::F_OFD_SETLK(&lock(libc::F_UNLCK)));
            true
        }
        Err(_) => false,
    }
}

#[test]
fn opening_a_replica_again_keeps_the_read_locks_of_the_connections_already_reading() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let copy = dir.path().join("replica.db");
    let fixture = particles_testkit::workspace_root().join("tests/fixtures/stores/coins-b.db");
    std::fs::copy(&fixture, &copy).expect("copies");
    std::fs::write(replica::txid_file(&copy), "0000000000000001\n").expect("writes");
    let reading = Store::open_read_only(&copy).expect("the replica opens");
    // Kept open to the end: closing it would drop this process's locks too.
    let probe = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&copy)
        .expect("opens");
    assert!(follower_could_write(&probe), "nobody reads yet");
    let held = reading
        .read_snapshot(|snapshot| {
            particles_by_ids(snapshot, &[ID])?;
            assert!(
                !follower_could_write(&probe),
                "a read transaction holds SQLite's shared lock"
            );
            // Another connection of the same process opens the copy (a
            // server's pool growing under load), and closes it again.
            drop(Store::open_read_only(&copy)?);
            Ok(!follower_could_write(&probe))
        })
        .expect("reads");
    assert!(
        held,
        "opening the copy again dropped the shared lock of a read under way: \
         the follower could write pages under it"
    );
    assert!(follower_could_write(&probe), "the read is over");
    drop(probe);
}
