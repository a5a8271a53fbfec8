//! The sidecar: a cache state written to a file, so that a fresh process starts warm.
//!
//! A sidecar is derived and deletable. It holds one [`CandidateSet`] (every column,
//! vectors decoded), the id index and the journal head the set is exact at. It is
//! memory-mapped on open, so a one-shot query reads vectors straight from the page
//! cache instead of decoding the store's JSON.
//!
//! What must stay true:
//!
//! - **Tied to one store's history.** The cache uses a sidecar only if the store's
//!   journal still holds the header's random token at the header's sequence number;
//!   then it brings it to the head like any cache state.
//! - **Replaced, never rewritten.** A file is written to a temporary name in the
//!   same directory, synced and renamed over the old one (`write`), so a reader sees
//!   a whole old file or a whole new one, and a map already open keeps the old
//!   inode and never changes under a query.
//! - **Rows in loader order.** The writer puts rows in `(confidence, rowid)` order,
//!   so readers scan front to back.
//! - **Never trusted blindly, never fatal.** Opening (`open`) checks the preamble
//!   (kind, format version, byte-order marker), the header's checksum, that the
//!   file is as long as the section table derived from the header says, every
//!   section's checksum except the vectors', norms' and claims', and the columns'
//!   consistency (`CandidateSet::from_columns`). The vectors and norms are checked
//!   row by row instead: each row's check (the wrapping sum of its vector's and
//!   norm's bit patterns, in the `checks` section, which opening hashes) is
//!   recomputed by the scan's dot kernel from the loads it makes anyway, and a
//!   mismatch is `DamagedVector`, on which the caller discards the state (and the
//!   file), rebuilds from the store and answers again: hashing 1.5 GB of vectors on
//!   every open would cost more than the query. The claims' checksum is checked
//!   when a claim filter first reads them (`CandidateSet::claims_intact`).
//!   [`verify()`] (`particles-rs sidecar verify`) hashes everything. A file that
//!   fails is named in a note and rebuilt from the store.
//! - **Same machine kind.** Numbers are stored in the writer's byte order and
//!   viewed in place; a file from a machine of the other byte order, or of another
//!   format version, is refused ([`SidecarError::ByteOrder`],
//!   [`SidecarError::Version`]) and rebuilt.
//!
//! The rooms: `format` (the layout as types: preamble, header, section kinds, the
//! derived section table, checksums), `write` (the atomic writer), `open` (map,
//! check, view), `verify` (everything, vectors included).

mod format;
mod open;
mod verify;
mod write;

use std::path::{Path, PathBuf};

#[cfg(doc)]
use particles_candidates::CandidateSet;

pub(crate) use open::{huge_page_column, open, Opened, VectorsIn};
pub use verify::{verify, VerifiedSection, VerifyReport};
pub(crate) use write::{write, Pace};

/// The file name suffix of a sidecar: `<store file name>.particles-rs.sidecar`.
pub const SIDECAR_SUFFIX: &str = ".particles-rs.sidecar";

/// Why a sidecar was not used or not written. Never fatal to a query: the cache
/// rebuilds from the store and says so in a note.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    /// Reading or writing the file failed. A write failure leaves the previous
    /// sidecar as it was; `--sidecar-dir` names a writable place.
    #[error("sidecar {}: {source}", path.display())]
    Io {
        /// The sidecar path.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// The file is a sidecar of another format version (an older or newer
    /// particles-rs wrote it). The cache rebuilds it in this build's format.
    #[error(
        "sidecar {} is unusable: it is in format version {found}, this build reads version {}",
        path.display(),
        format::VERSION
    )]
    Version {
        /// The sidecar path.
        path: PathBuf,
        /// The version the file declares.
        found: u32,
    },
    /// The file was written on a machine of the other byte order (copied across),
    /// so its numbers would be misread. The cache rebuilds it on this machine.
    #[error(
        "sidecar {} is unusable: it was written on a machine of the other byte order (this one is {}-endian)",
        path.display(),
        format::native_endian()
    )]
    ByteOrder {
        /// The sidecar path.
        path: PathBuf,
    },
    /// The file is not a sidecar, or it is damaged or truncated. The cache rebuilds
    /// it; `sidecar verify` names the damage.
    #[error("sidecar {} is unusable: {reason}", path.display())]
    Invalid {
        /// The sidecar path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Where a store's sidecar lives: `dir` (or the store's own directory) joined with
/// the store's file name and [`SIDECAR_SUFFIX`].
pub fn sidecar_path(store: &Path, dir: Option<&Path>) -> PathBuf {
    let name = store
        .file_name()
        .map_or_else(|| "store".into(), |n| n.to_string_lossy().into_owned());
    let dir = dir
        .map(Path::to_path_buf)
        .or_else(|| store.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    dir.join(format!("{name}{SIDECAR_SUFFIX}"))
}
