//! Reading a store that Litestream keeps current (`litestream restore -f`,
//! follow mode), on a reader machine.
//!
//! Litestream's follower applies each transaction range it downloads by
//! writing the pages straight into the file, holding the same file locks a
//! rollback-journal writer holds (the PENDING byte and the whole SHARED range),
//! so a reader never sees half an apply. Two things it does not do, which a
//! long-lived reader needs, are done here:
//!
//! - **The journal mode in the header.** The first restore writes the primary's
//!   header, which says WAL; the follower rewrites it to rollback only when an
//!   apply carries page 1. A connection that opens the file while it says WAL
//!   holds a shared lock for as long as it is open, and the follower, which
//!   waits for the exclusive lock, never applies again (measured with
//!   Litestream 0.5.17: no apply for as long as one WAL-mode reader stayed
//!   open). [`prepare`] rewrites those two bytes, under the follower's own
//!   locks, before the first connection opens.
//! - **Invalidating other connections' page caches.** The follower changes the
//!   file change counter only when page 1 is in the apply, and page 1 is not
//!   in most of them (a WAL-mode primary does not bump it per commit). A
//!   rollback-mode connection that kept pages from an earlier transaction
//!   keeps them whenever the counter is unchanged: measured with 0.5.17, a
//!   connection kept answering from before five applies that fresh connections
//!   saw, and `PRAGMA data_version` never moved. So a replica's connection
//!   drops its page cache before each read transaction
//!   ([`crate::Store::read_snapshot`]), and its source memo, which
//!   `data_version` cannot key here, is kept by a `WriteWatch` instead:
//!   forgotten whenever the file was written since the memo last looked.
//!
//! A replica is recognised by the file Litestream's follower keeps beside it,
//! `<store>-txid` (the last transaction id it applied), so `serve --http
//! --store replica.db` needs no flag of its own.

use std::path::{Path, PathBuf};

/// The file Litestream's follow mode writes beside the database it keeps
/// current, holding the last transaction id it applied.
pub fn txid_file(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push("-txid");
    PathBuf::from(name)
}

/// Whether `store` is a copy Litestream's follow mode keeps current.
pub fn is_replica(store: &Path) -> bool {
    txid_file(store).is_file()
}

/// The transaction id Litestream last applied to `store`, as it wrote it (16
/// hex digits), or `None` when there is no such file or it is unreadable.
pub fn applied_txid(store: &Path) -> Option<String> {
    let text = std::fs::read_to_string(txid_file(store)).ok()?;
    let txid = text.trim();
    (!txid.is_empty() && txid.bytes().all(|b| b.is_ascii_hexdigit())).then(|| txid.to_owned())
}

/// What a replica's follower last did, as its `-txid` file says: the
/// transaction id it applied and when it wrote the file (the last apply that
/// moved the copy; an idle primary leaves it old, a stopped follower too).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowerState {
    /// The Litestream transaction id, 16 hex digits.
    pub txid: String,
    /// When the follower last wrote it.
    pub applied_at: std::time::SystemTime,
}

/// The follower's state for `store`, or `None` when it is not a replica (or
/// the file is unreadable).
pub fn follower_state(store: &Path) -> Option<FollowerState> {
    let txid = applied_txid(store)?;
    let applied_at = std::fs::metadata(txid_file(store)).ok()?.modified().ok()?;
    Some(FollowerState { txid, applied_at })
}

/// Which file a path named when a connection opened it. A node's follower
/// stopped, its copy deleted and restored anew puts another file at the same
/// path, while the connections already open keep reading the old one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyIdentity {
    device: u64,
    inode: u64,
}

impl CopyIdentity {
    fn of(metadata: &std::fs::Metadata) -> CopyIdentity {
        use std::os::unix::fs::MetadataExt;
        CopyIdentity {
            device: metadata.dev(),
            inode: metadata.ino(),
        }
    }
}

/// The file at `store` now, or `None` when there is none.
pub fn identity(store: &Path) -> Option<CopyIdentity> {
    std::fs::metadata(store).ok().map(|m| CopyIdentity::of(&m))
}

/// Whether the copy a connection opened as `opened` has been replaced by a
/// new follow-mode copy at the same path: another file is there, and its
/// follower's `-txid` beside it. A path with no file (the copy deleted, the
/// restore not done) or a new file still without `-txid` (the restore under
/// way) is not a replacement yet: the open connections keep serving the old
/// copy's last position meanwhile.
pub fn replaced(store: &Path, opened: CopyIdentity) -> bool {
    identity(store).is_some_and(|now| now != opened) && is_replica(store)
}

/// Notices writes to a replica's file, for the source memo of one connection.
///
/// An inotify watch on the file: the kernel queues a modify event inside each
/// `write(2)` (and truncate), before the call returns. The follower writes only
/// under its exclusive lock, so once a read transaction holds its shared lock,
/// every write of every apply before it has its event queued, and no apply
/// can write until the transaction ends. Draining the queue inside the
/// transaction therefore says whether the file changed since the last drain:
/// the memo's facts are kept only when nothing was written, exactly as
/// `data_version` keeps them on a primary. Measured on a 100k store, the
/// memo is the whole difference between a replica's per-request cost and a
/// local file's.
pub(crate) struct WriteWatch {
    inotify: nix::sys::inotify::Inotify,
}

impl WriteWatch {
    /// A watch on `store`, or `None` when inotify cannot give one (the
    /// per-user instance limit): the connection then remembers nothing.
    pub(crate) fn new(store: &Path) -> Option<WriteWatch> {
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        // Modify covers write and truncate; the rest say the file was
        // replaced or removed (its connection is dropped then anyway).
        let mask = AddWatchFlags::IN_MODIFY
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_MOVE_SELF;
        inotify.add_watch(store, mask).ok()?;
        Some(WriteWatch { inotify })
    }

    /// Drains the queued events: whether any write (or anything the watch
    /// cannot rule out, such as a full queue or a failed read) happened since
    /// the last call.
    pub(crate) fn written_since(&self) -> bool {
        let mut written = false;
        loop {
            match self.inotify.read_events() {
                Ok(events) if events.is_empty() => return written,
                Ok(_) => written = true,
                Err(nix::errno::Errno::EAGAIN) => return written,
                Err(_) => return true,
            }
        }
    }
}

/// Offsets in the SQLite header: the write and read format versions (1:
/// rollback journal, 2: WAL) and the file change counter.
const WRITE_VERSION: usize = 18;
const READ_VERSION: usize = 19;
const CHANGE_COUNTER: std::ops::Range<usize> = 24..28;

/// SQLite's lock bytes (os_unix.c): a rollback-mode writer holds the PENDING
/// byte and the whole SHARED range for writing while it writes the file.
const PENDING_BYTE: i64 = 0x4000_0000;
const SHARED_FIRST: i64 = PENDING_BYTE + 2;
const SHARED_SIZE: i64 = 510;

/// How long [`prepare`] waits for readers to let go before it gives up.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Readies a Litestream replica for long-lived readers: when its header says
/// WAL, rewrites it to say rollback journal (and moves the change counter so
/// any cached page is dropped), under the locks Litestream's follower takes for
/// its own applies. Returns the identity of the copy it readied when `store`
/// is a replica, `None` when it is not (and then does nothing).
///
/// This is a write to the replica (two header bytes and the counter), never to
/// a primary: a file without the follower's `-txid` file is left alone.
///
/// # Errors
///
/// [`crate::Error::Replica`] when the file cannot be read or locked in time
/// (another process has it open in WAL mode, which also stops the follower).
pub fn prepare(store: &Path) -> crate::Result<Option<CopyIdentity>> {
    if !is_replica(store) {
        return Ok(None);
    }
    let error = |what: &str, source: std::io::Error| crate::Error::Replica {
        path: store.to_owned(),
        reason: format!("{what}: {source}"),
    };
    // The file is opened once per copy and kept open, never closed while the
    // copy is at its path: closing any descriptor of a file drops every POSIX
    // lock this process holds on it, and SQLite's connections read under such
    // locks. A descriptor opened and closed here for each new connection
    // dropped the shared locks of the connections already reading, so the
    // follower wrote pages under their open transactions (measured: "database
    // disk image is malformed" on a reader whose connections were opening
    // while a VACUUM was applied). The descriptor of a copy that was replaced
    // is closed when the new one is opened: the follower never writes the old
    // file again, so the locks on it no longer matter. The map's lock also
    // makes one rewrite at a time in this process (the locks below are per
    // open file, so two threads would not exclude each other otherwise).
    static OPEN: std::sync::Mutex<Vec<(std::path::PathBuf, std::fs::File)>> =
        std::sync::Mutex::new(Vec::new());
    let mut open = OPEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = std::fs::metadata(store).map_err(|e| error("cannot read its metadata", e))?;
    let at = open.iter().position(|(path, _)| path == store);
    let kept = at.and_then(|at| {
        let file = &open[at].1;
        file.metadata()
            .ok()
            .filter(|kept| CopyIdentity::of(kept) == CopyIdentity::of(&now))
            .map(|_| at)
    });
    let at = match kept {
        Some(at) => at,
        None => {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(store)
                .map_err(|e| error("cannot open it for its header", e))?;
            match at {
                // The replaced copy's descriptor is closed here.
                Some(at) => {
                    open[at].1 = file;
                    at
                }
                None => {
                    open.push((store.to_owned(), file));
                    open.len() - 1
                }
            }
        }
    };
    let file: &std::fs::File = &open[at].1;
    let copy = CopyIdentity::of(
        &file
            .metadata()
            .map_err(|e| error("cannot read its metadata", e))?,
    );
    if !says_wal(file).map_err(|e| error("cannot read its header", e))? {
        return Ok(Some(copy));
    }
    let _locked = locks::Exclusive::take(file, LOCK_WAIT).map_err(|e| {
        error(
            "cannot take the write lock (is it open in WAL mode by another process? \
             close that process: it also stops Litestream's follower)",
            e,
        )
    })?;
    // Read again under the lock: the follower may have rewritten it meanwhile.
    let mut header = [0u8; 28];
    read_at(file, &mut header, 0).map_err(|e| error("cannot read its header", e))?;
    if header[WRITE_VERSION] != 2 && header[READ_VERSION] != 2 {
        return Ok(Some(copy));
    }
    header[WRITE_VERSION] = 1;
    header[READ_VERSION] = 1;
    let mut counter = [0u8; 4];
    counter.copy_from_slice(&header[CHANGE_COUNTER]);
    let counter = u32::from_be_bytes(counter);
    header[CHANGE_COUNTER].copy_from_slice(&counter.wrapping_add(1).to_be_bytes());
    write_at(file, &header[WRITE_VERSION..], WRITE_VERSION as u64)
        .and_then(|()| file.sync_data())
        .map_err(|e| error("cannot rewrite its header", e))?;
    Ok(Some(copy))
}

fn says_wal(file: &std::fs::File) -> std::io::Result<bool> {
    let mut header = [0u8; 20];
    read_at(file, &mut header, 0)?;
    Ok(header[WRITE_VERSION] == 2 || header[READ_VERSION] == 2)
}

fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

fn write_at(file: &std::fs::File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

/// Open-file-description locks (Linux): they conflict with SQLite's and
/// Litestream's POSIX record locks, in other processes and in this one alike
/// (a POSIX lock taken here would merge with this process's own, SQLite's
/// included, and unlocking it would drop theirs). Closing the file would
/// still drop every POSIX lock this process holds on it, whatever kind this
/// file took: [`prepare`] keeps it open.
mod locks {
    use std::time::Duration;

    use nix::{errno::Errno, fcntl::FcntlArg, libc};

    pub(super) struct Exclusive<'f> {
        file: &'f std::fs::File,
    }

    impl<'f> Exclusive<'f> {
        /// PENDING then the SHARED range, for writing, as Litestream's
        /// follower takes them; retried until `wait` has passed.
        pub(super) fn take(file: &'f std::fs::File, wait: Duration) -> std::io::Result<Self> {
            let started = std::time::Instant::now();
            loop {
                let taken = set(file, libc::F_WRLCK, super::PENDING_BYTE, 1).and_then(|()| {
                    set(file, libc::F_WRLCK, super::SHARED_FIRST, super::SHARED_SIZE).inspect_err(
                        |_| {
                            let _ = set(file, libc::F_UNLCK, super::PENDING_BYTE, 1);
                        },
                    )
                });
                match taken {
                    Ok(()) => return Ok(Exclusive { file }),
                    Err(Errno::EAGAIN | Errno::EACCES) if started.elapsed() < wait => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }

    impl Drop for Exclusive<'_> {
        fn drop(&mut self) {
            let _ = set(
                self.file,
                libc::F_UNLCK,
                super::SHARED_FIRST,
                super::SHARED_SIZE,
            );
            let _ = set(self.file, libc::F_UNLCK, super::PENDING_BYTE, 1);
        }
    }

    fn set(file: &std::fs::File, kind: i32, start: i64, len: i64) -> nix::Result<()> {
        let lock = libc::flock {
            l_type: kind as libc::c_short,
            l_whence: libc::SEEK_SET as libc::c_short,
            l_start: start,
            l_len: len,
            l_pid: 0,
        };
        nix::fcntl::fcntl(file, FcntlArg::F_OFD_SETLK(&lock)).map(drop)
    }
}
