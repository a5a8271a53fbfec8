//! Writing a sidecar: atomically (temp file, fsync, rename, fsync of the
//! directory), rows in loader order, the header last into the space kept for it.

use std::{
    fs::File,
    io::{BufWriter, Seek, SeekFrom, Write},
    path::Path,
    time::Duration,
};

use particles_candidates::{column::StrColumn, CandidateSet, ColumnSlices, HalfView, PackedTraits};
use particles_store::JournalHead;

use super::{
    format::{Checksum, Checksums, Head, Header, Lengths, SectionKind, SectionTable},
    SidecarError,
};

/// One section's bytes: a slice, or the vectors of a set (or their half copy)
/// row by row in a given order (so an unordered set is written in order without
/// copying it first).
enum Body<'a> {
    Bytes(&'a [u8]),
    Rows(&'a CandidateSet, &'a [u32]),
    HalfRows(HalfView<'a>, &'a [u32]),
}

impl Body<'_> {
    /// Writes the body, returning its length and checksum.
    fn write_to(&self, out: &mut impl Write) -> std::io::Result<(usize, Checksum)> {
        match self {
            Body::Bytes(bytes) => {
                out.write_all(bytes)?;
                Ok((bytes.len(), Checksum::of(bytes)))
            }
            Body::Rows(set, order) => {
                write_rows(out, order, |row| bytemuck::cast_slice(set.vector(row)))
            }
            Body::HalfRows(half, order) => {
                write_rows(out, order, |row| bytemuck::cast_slice(half.vector(row)))
            }
        }
    }
}

/// Writes each row's bytes in `order`, returning their length and checksum.
fn write_rows<'a>(
    out: &mut impl Write,
    order: &[u32],
    bytes_of: impl Fn(usize) -> &'a [u8],
) -> std::io::Result<(usize, Checksum)> {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut len = 0;
    for &row in order {
        let bytes = bytes_of(row as usize);
        hasher.update(bytes);
        out.write_all(bytes)?;
        len += bytes.len();
    }
    Ok((len, Checksum(hasher.digest())))
}

/// The per-row columns of `set` in `order`, owned (the vectors stay where they are).
struct Permuted {
    norms: Vec<f32>,
    checks: Vec<u32>,
    offsets: Vec<u64>,
    ids: StrColumn,
    rowids: Vec<i64>,
    confidence: Vec<f64>,
    model_current: Vec<u8>,
    traits: Vec<PackedTraits>,
    by_id: Vec<u32>,
    half_radius: Vec<f32>,
}

impl Permuted {
    fn new(set: &CandidateSet, order: &[u32], by_id: &[u32]) -> Permuted {
        let c = set.column_slices();
        let pick = |row: &u32| *row as usize;
        let mut offsets = Vec::with_capacity(order.len() + 1);
        offsets.push(0u64);
        let mut ids = StrColumn::default();
        for &row in order {
            let row = row as usize;
            let last = offsets.last().copied().unwrap_or(0);
            offsets.push(last + (c.offsets[row + 1] - c.offsets[row]));
            ids.push(set.id(row));
        }
        // The id index names rows; in the file they move to their place in `order`.
        let mut rank = vec![0u32; order.len()];
        for (at, &row) in order.iter().enumerate() {
            rank[row as usize] = at as u32;
        }
        Permuted {
            norms: order.iter().map(|r| c.norms[pick(r)]).collect(),
            checks: order.iter().map(|r| c.checks[pick(r)]).collect(),
            offsets,
            ids,
            rowids: order.iter().map(|r| c.rowids[pick(r)]).collect(),
            confidence: order.iter().map(|r| c.confidence[pick(r)]).collect(),
            model_current: order.iter().map(|r| c.model_current[pick(r)]).collect(),
            traits: order.iter().map(|r| c.traits[pick(r)]).collect(),
            by_id: by_id.iter().map(|&row| rank[row as usize]).collect(),
            half_radius: set
                .half()
                .map(|half| order.iter().map(|&row| half.radius(row as usize)).collect())
                .unwrap_or_default(),
        }
    }
}

/// The premises' JSON and the claims', or why they cannot be written.
type MadeJson = Result<(Vec<u8>, Vec<u8>), SidecarError>;

/// The premises' and claims' JSON: being made on another thread, or made.
enum Json<'scope> {
    Making(std::thread::ScopedJoinHandle<'scope, MadeJson>),
    Made((Vec<u8>, Vec<u8>)),
}

/// What the sections are written from: the set's columns as they are, or in
/// the loader's order (`permuted`).
#[derive(Clone, Copy)]
struct Sections<'a> {
    set: &'a CandidateSet,
    c: &'a ColumnSlices<'a>,
    half: Option<HalfView<'a>>,
    permuted: Option<(&'a Permuted, &'a [u32])>,
    by_id: &'a [u32],
    premises: &'a [u8],
    claims: &'a [u8],
}

impl<'a> Sections<'a> {
    fn body(&self, kind: SectionKind) -> Body<'a> {
        let bytes = |b| Body::Bytes(b);
        let (c, half) = (self.c, self.half);
        match self.permuted {
            Some((p, order)) => match kind {
                SectionKind::Vectors => Body::Rows(self.set, order),
                SectionKind::Norms => bytes(bytemuck::cast_slice(&p.norms)),
                SectionKind::Checks => bytes(bytemuck::cast_slice(&p.checks)),
                SectionKind::Offsets => bytes(bytemuck::cast_slice(&p.offsets)),
                SectionKind::IdBytes => bytes(p.ids.parts().0),
                SectionKind::IdEnds => bytes(bytemuck::cast_slice(p.ids.parts().1)),
                SectionKind::Rowids => bytes(bytemuck::cast_slice(&p.rowids)),
                SectionKind::Confidence => bytes(bytemuck::cast_slice(&p.confidence)),
                SectionKind::ModelCurrent => bytes(&p.model_current),
                SectionKind::Traits => bytes(bytemuck::cast_slice(&p.traits)),
                SectionKind::StringBytes => bytes(c.strings.0),
                SectionKind::StringEnds => bytes(bytemuck::cast_slice(c.strings.1)),
                SectionKind::ById => bytes(bytemuck::cast_slice(&p.by_id)),
                SectionKind::Premises => bytes(self.premises),
                SectionKind::Claims => bytes(self.claims),
                SectionKind::HalfVectors => match half {
                    Some(half) => Body::HalfRows(half, order),
                    None => bytes(&[]),
                },
                SectionKind::HalfRadius => bytes(bytemuck::cast_slice(&p.half_radius)),
            },
            None => match kind {
                SectionKind::Vectors => bytes(bytemuck::cast_slice(c.vectors)),
                SectionKind::Norms => bytes(bytemuck::cast_slice(c.norms)),
                SectionKind::Checks => bytes(bytemuck::cast_slice(c.checks)),
                SectionKind::Offsets => bytes(bytemuck::cast_slice(c.offsets)),
                SectionKind::IdBytes => bytes(c.ids.0),
                SectionKind::IdEnds => bytes(bytemuck::cast_slice(c.ids.1)),
                SectionKind::Rowids => bytes(bytemuck::cast_slice(c.rowids)),
                SectionKind::Confidence => bytes(bytemuck::cast_slice(c.confidence)),
                SectionKind::ModelCurrent => bytes(c.model_current),
                SectionKind::Traits => bytes(bytemuck::cast_slice(c.traits)),
                SectionKind::StringBytes => bytes(c.strings.0),
                SectionKind::StringEnds => bytes(bytemuck::cast_slice(c.strings.1)),
                SectionKind::ById => bytes(bytemuck::cast_slice(self.by_id)),
                SectionKind::Premises => bytes(self.premises),
                SectionKind::Claims => bytes(self.claims),
                SectionKind::HalfVectors => {
                    bytes(half.map_or(&[][..], |half| bytemuck::cast_slice(half.values())))
                }
                SectionKind::HalfRadius => {
                    bytes(half.map_or(&[][..], |half| bytemuck::cast_slice(half.radii())))
                }
            },
        }
    }
}

/// Refuses a set that extends another: its columns are two parts and may hold
/// rows a delta replaced. The cache compacts before it writes.
fn refuse_extended(path: &Path, set: &CandidateSet) -> Result<(), SidecarError> {
    if set.base_rows() == 0 {
        return Ok(());
    }
    Err(SidecarError::Invalid {
        path: path.to_owned(),
        reason: "the candidate set extends another and must be compacted first; not written".into(),
    })
}

/// How a write shares the disk with the process's reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// At full speed, flushed once at the end: a one-shot process, whose user
    /// waits for it.
    Eager,
    /// Flushed every [`PACE_STEP`] bytes, resting after each flush as long as
    /// it took: a server writing behind itself, whose questions share the
    /// machine with the write. Eagerly, a 1M sidecar's 2.5 GB go to the disk
    /// in one flush at the end. Measured in a 10/s step at 1M, two alternating
    /// rounds (AMD EPYC, 2 cores, 24 GiB, a 12 GB store): p99 0.33-0.34 s
    /// paced against 0.41-0.57 s eager, the write 14-16 s either way.
    Paced,
}

/// The bytes a paced write puts in the page cache between two flushes.
const PACE_STEP: usize = 32 << 20;

/// The file under a sidecar's writer, flushed to the disk as `pace` says,
/// every `step` bytes.
struct Paced<'f> {
    file: &'f mut File,
    pace: Pace,
    step: usize,
    since_flush: usize,
}

impl Write for Paced<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        // A section's slice comes through whole (gigabytes): a paced write
        // takes it a step at a time.
        let bytes = match self.pace {
            Pace::Eager => bytes,
            Pace::Paced => &bytes[..bytes.len().min(self.step - self.since_flush)],
        };
        let written = self.file.write(bytes)?;
        self.since_flush += written;
        if self.pace == Pace::Paced && self.since_flush >= self.step {
            let started = std::time::Instant::now();
            self.file.sync_data()?;
            std::thread::sleep(started.elapsed());
            self.since_flush = 0;
        }
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// How the temporary files of sidecar writes are named: this build's, locked
/// while they are written, and those of builds before it (unlocked, the same
/// prefix less `locked-`; tempfile's random suffix has no `-`, so neither
/// name can be taken for the other).
const TEMP_PREFIX: &str = ".particles-rs-sidecar-locked-";
const UNLOCKED_TEMP_PREFIX: &str = ".particles-rs-sidecar-";

/// An empty temporary file no process holds is left this long: its writer
/// may have created it and not yet locked it.
const EMPTY_TEMP_KEPT: Duration = Duration::from_secs(10);

/// A temporary file whose lock cannot be tested (one an earlier build wrote,
/// or on a filesystem whose locks the test cannot take, such as NFS through a
/// read-only descriptor) is taken for abandoned once it has not changed for
/// this long: a writer changes its file every few seconds, paced or not.
const UNTESTED_TEMP_KEPT: Duration = Duration::from_secs(3600);

/// A temporary file in `dir`, for the sidecar to be renamed into place, locked
/// (`flock`) until this process closes it, before a byte is written: an
/// unlocked one with bytes in it was left by a process that ended in the
/// middle of its write (killed, or interrupted by Ctrl-C while a one-shot
/// query wrote after its answer), and the next write removes it
/// ([`remove_abandoned`]).
fn temp_file_in(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    for _ in 0..3 {
        let temp = temp_builder().tempfile_in(dir)?;
        match temp.as_file().try_lock() {
            Ok(()) => return Ok(temp),
            // Another process's sweep holds it (it took the new, empty file
            // for an old one, its clock ahead of the file's) and removes it:
            // take another name.
            Err(std::fs::TryLockError::WouldBlock) => continue,
            // No locks here: written unlocked, left alone by sweeps until it
            // is old (`UNTESTED_TEMP_KEPT`).
            Err(std::fs::TryLockError::Error(_)) => return Ok(temp),
        }
    }
    Err(std::io::Error::other(
        "another process kept taking this sidecar's temporary file for an abandoned one",
    ))
}

fn temp_builder() -> tempfile::Builder<'static, 'static> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX);
    // Readable by whoever can read the store beside it (tempfile's default is
    // owner-only, which would make other users rebuild it). Elsewhere the new file
    // takes the directory's access rules.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    builder
}

/// Removes the temporary files of sidecar writes that never finished from
/// `dir`. One of this build's goes when no process holds it locked and it
/// has bytes in it or is older than [`EMPTY_TEMP_KEPT`]; one whose lock
/// cannot be tested when it has not changed for [`UNTESTED_TEMP_KEPT`]; one
/// a process holds, never. At 1M beliefs such a file is up to 1.8 GB, and
/// each interrupted write would leave another. Returns how many went; a file
/// that cannot be opened or removed (another user's) is left as it is.
pub(crate) fn remove_abandoned(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.as_encoded_bytes();
        // Only a regular file is opened: a device's open can act (a tape
        // rewinds), and elsewhere than Unix an open follows a link.
        if !name.starts_with(UNLOCKED_TEMP_PREFIX.as_bytes())
            || !entry.file_type().is_ok_and(|kind| kind.is_file())
        {
            continue;
        }
        let path = entry.path();
        // The entry may be replaced between the directory read and the open:
        // the open neither waits nor follows, and what it opened is checked
        // again. (The removal below takes whatever the name holds by then,
        // as it always has.)
        let Ok(file) = open_swept(&path) else {
            continue;
        };
        let Ok(meta) = file.metadata() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let unchanged_for = |kept: Duration| {
            meta.modified()
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age >= kept)
        };
        let abandoned = match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock) => false,
            Ok(()) if name.starts_with(TEMP_PREFIX.as_bytes()) => {
                meta.len() > 0 || unchanged_for(EMPTY_TEMP_KEPT)
            }
            Ok(()) | Err(std::fs::TryLockError::Error(_)) => unchanged_for(UNTESTED_TEMP_KEPT),
        };
        if abandoned && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Opens a file the sweep may remove, to test its lock, without following a
/// link and without waiting: an open of a FIFO for reading waits for a
/// writer, so a FIFO under a temporary file's name (or put in one's place
/// after the directory was read) would hang the write that sweeps, the
/// server's write-behind or a one-shot query's exit. The caller checks that
/// what it opened is a regular file.
fn open_swept(path: &Path) -> std::io::Result<File> {
    let mut options = File::options();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        &mut options,
        libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY,
    );
    options.open(path)
}

/// Writes `set` (exact at `head`) and its id index to `path`, atomically. With
/// `order`, rows are written in that order (the file is always in loader order).
/// The set's half copy goes with it when it has one (a long-lived process made
/// or kept it), so the next such process serves it from the map.
///
/// # Errors
///
/// [`SidecarError::Io`] when the directory is not writable or the disk is full,
/// [`SidecarError::Invalid`] when the set cannot be written faithfully; the
/// previous sidecar, if any, is then left as it was.
pub(crate) fn write(
    path: &Path,
    store: &Path,
    head: &JournalHead,
    set: &CandidateSet,
    by_id: &[u32],
    order: Option<&[u32]>,
    pace: Pace,
) -> Result<(), SidecarError> {
    let io = |source| SidecarError::Io {
        path: path.to_owned(),
        source,
    };
    refuse_extended(path, set)?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // What an interrupted write left goes first: its space may be needed.
    remove_abandoned(dir);
    let mut temp = temp_file_in(dir).map_err(io)?;
    let (lengths, checksums) = write_sections(path, set, by_id, order, pace, temp.as_file_mut())?;
    let header = Header {
        head: Head::new(head),
        store: store.display().to_string(),
        lengths,
        checksums,
    }
    .encode(path)?;
    {
        let file = temp.as_file_mut();
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&header).map_err(io)?;
    }
    temp.as_file().sync_all().map_err(io)?;
    temp.persist(path).map_err(|e| io(e.error))?;
    // Make the rename durable too; a failure here loses nothing but the file.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Writes every section of `set` to `file` after the header's space, and
/// returns the lengths and checksums the header then records.
fn write_sections(
    path: &Path,
    set: &CandidateSet,
    by_id: &[u32],
    order: Option<&[u32]>,
    pace: Pace,
    file: &mut File,
) -> Result<(Lengths, Checksums), SidecarError> {
    let io = |source| SidecarError::Io {
        path: path.to_owned(),
        source,
    };
    let invalid = |reason: String| SidecarError::Invalid {
        path: path.to_owned(),
        reason,
    };
    let c = set.column_slices();
    // The premises' and claims' JSON (with the claims' round trip, about 3 s
    // of one core at 1M rows) do not move the sections before them in the
    // file: when the user waits for the write (`Pace::Eager`), the second core
    // makes them while this one writes those sections. A server's paced write
    // leaves that core to its questions and makes them first.
    let make_json = || -> MadeJson {
        let premises = serde_json::to_vec(c.premises).map_err(|e| io(e.into()))?;
        let Some(claims) = set.claims_json() else {
            return Err(invalid(
                "a structured claim does not survive its JSON round trip; not written".into(),
            ));
        };
        Ok((premises, claims))
    };
    let lengths_with = |premises_bytes: usize, claims_bytes: usize| Lengths {
        rows: set.len(),
        vector_floats: c.vectors.len(),
        id_bytes: c.ids.0.len(),
        strings: c.strings.1.len(),
        string_bytes: c.strings.0.len(),
        premises_bytes,
        claims_bytes,
        half: set.half().is_some(),
    };
    let table_of = |lengths: &Lengths| {
        SectionTable::new(lengths)
            .ok_or_else(|| invalid("the column lengths overflow; not written".into()))
    };
    // The sections up to the premises, laid out before their lengths are known.
    let early = table_of(&lengths_with(0, 0))?;
    let permuted = order.map(|order| Permuted::new(set, order, by_id));
    let sections = Sections {
        set,
        c: &c,
        half: set.half(),
        permuted: permuted.as_ref().zip(order),
        by_id,
        premises: &[],
        claims: &[],
    };
    // Sections first (their checksums are known once written), then the header
    // into the space reserved for it.
    let mut checksums = Checksums::default();
    let lengths = std::thread::scope(|scope| -> Result<_, SidecarError> {
        let json = match pace {
            Pace::Eager => Json::Making(scope.spawn(make_json)),
            Pace::Paced => Json::Made(make_json()?),
        };
        let paced = Paced {
            file,
            pace,
            step: PACE_STEP,
            since_flush: 0,
        };
        let mut out = BufWriter::with_capacity(1 << 20, paced);
        let mut written = 0;
        let mut write_section =
            |kind: SectionKind, range: std::ops::Range<usize>, sections: &Sections<'_>| {
                out.write_all(&vec![0u8; range.start - written])
                    .map_err(io)?;
                let (len, checksum) = sections.body(kind).write_to(&mut out).map_err(io)?;
                // The table came from the lengths of these very columns; a
                // mismatch is a bug here, and the file would be refused on
                // open anyway.
                if len != range.len() {
                    return Err(invalid(format!(
                        "section {} came out {len} bytes where its table says {}; not written",
                        kind.name(),
                        range.len()
                    )));
                }
                checksums.set(kind, checksum);
                written = range.end;
                Ok(())
            };
        // The sections before the JSON's (the first one's padding is the
        // header's space: every section starts past it). The JSON's thread
        // is joined whatever happened here, so that an error is returned as
        // one (a scope would turn the thread's panic into ours).
        let wrote_early = (|| -> Result<(), SidecarError> {
            for (kind, range) in early
                .iter()
                .take_while(|(kind, _)| *kind < SectionKind::Premises)
            {
                write_section(kind, range, &sections)?;
            }
            Ok(())
        })();
        let made = match json {
            Json::Making(making) => making.join().unwrap_or_else(|_| {
                Err(invalid(
                    "making the claims' JSON failed; not written".into(),
                ))
            }),
            Json::Made(made) => Ok(made),
        };
        wrote_early?;
        let (premises, claims) = made?;
        let lengths = lengths_with(premises.len(), claims.len());
        let table = table_of(&lengths)?;
        let sections = Sections {
            premises: &premises,
            claims: &claims,
            ..sections
        };
        for (kind, range) in table.iter() {
            if kind < SectionKind::Premises {
                // Written above, where the full table puts it too (a section's
                // place depends only on the sections before it).
                if range != early.range(kind) {
                    return Err(invalid(format!(
                        "section {} moved when the JSON's lengths were known; not written",
                        kind.name()
                    )));
                }
                continue;
            }
            write_section(kind, range, &sections)?;
        }
        out.flush().map_err(io)?;
        Ok(lengths)
    })?;
    Ok((lengths, checksums))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, SeekFrom, Write};

    use particles_store::{JournalHead, Store};

    use super::{Pace, Paced};

    /// The premises' and claims' JSON is made on another thread during an
    /// eager write and before a paced one: both write the same bytes, in the
    /// loader's order through a permutation or from a set in that order, and
    /// the file opens as the set written (its claims those of the set; a
    /// map's JSON lists them in the map's own order, so the two states'
    /// files are compared by their claims' values).
    #[test]
    fn eager_and_paced_writes_make_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let store_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/stores/coins-b.db");
        let store = Store::open_read_only(&store_path).unwrap();
        let head = JournalHead {
            seq: 7,
            token: vec![1, 2, 3],
        };
        let state = || {
            let (set, order) = particles_store::load_cacheable(&store, &mut |_| {}).unwrap();
            crate::CacheState {
                order: Some(order),
                ..crate::CacheState::new(head.clone(), set)
            }
        };
        let (unordered, ordered) = (state(), state().in_order());
        assert!(ordered.order.is_none());
        let claims = |json: Option<Vec<u8>>| -> serde_json::Value {
            serde_json::from_slice(&json.expect("claims that survive their round trip")).unwrap()
        };
        let written = claims(ordered.set.claims_json());
        assert!(
            written.as_object().is_some_and(|claims| claims.len() > 2),
            "claims to write"
        );
        for (name, state) in [("permuted", &unordered), ("ordered", &ordered)] {
            let mut files = Vec::new();
            for pace in [Pace::Eager, Pace::Paced] {
                let path = dir.path().join(format!("{name}-{pace:?}"));
                state.write_to(&path, &store_path, pace).unwrap();
                let opened = super::super::open(&path, super::super::VectorsIn::Map)
                    .unwrap()
                    .expect("the file opens");
                assert_eq!(opened.head, head);
                assert_eq!(opened.set.len(), ordered.set.len());
                let rowids = |set: &particles_candidates::CandidateSet| {
                    (0..set.len()).map(|row| set.rowid(row)).collect::<Vec<_>>()
                };
                assert_eq!(rowids(&opened.set), rowids(&ordered.set), "{name}");
                assert!(
                    claims(opened.set.claims_json()) == written,
                    "{name} {pace:?}"
                );
                files.push(std::fs::read(&path).unwrap());
            }
            assert!(
                files[0] == files[1],
                "{name}: the eager and paced files differ"
            );
        }
    }

    /// Only what an ended write left is removed: a temporary file with bytes
    /// and no lock, or an empty one past [`super::EMPTY_TEMP_KEPT`], or an
    /// earlier build's (never locked) untouched for
    /// [`super::UNTESTED_TEMP_KEPT`]; never a file a writer holds (the lock
    /// `temp_file_in` takes included), a fresh empty one, a fresh one of an
    /// earlier build, the sidecar itself or a directory.
    #[test]
    fn only_abandoned_temporary_files_are_removed() {
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        let make = |bytes: &[u8]| {
            let (mut file, path) = super::temp_builder()
                .tempfile_in(dir.path())
                .unwrap()
                .keep()
                .unwrap();
            file.write_all(bytes).unwrap();
            (file, path)
        };
        // Back from the file's own time (the wall clock is read where `now`
        // is owned).
        let aged = |file: &std::fs::File, age: Duration| {
            let modified = file.metadata().unwrap().modified().unwrap();
            file.set_modified(modified - age).unwrap();
        };
        let (_, abandoned) = make(b"half a sidecar");
        let (held, written) = make(b"a sidecar being written");
        held.try_lock().unwrap();
        let mut writing = super::temp_file_in(dir.path()).unwrap();
        writing.write_all(b"a sidecar being written here").unwrap();
        let (_, fresh_empty) = make(b"");
        let (old_empty_file, old_empty) = make(b"");
        aged(&old_empty_file, Duration::from_secs(60));
        let earlier = |name: &str, age: Duration| {
            let path = dir
                .path()
                .join(format!("{}{name}", super::UNLOCKED_TEMP_PREFIX));
            std::fs::write(&path, b"an earlier build's sidecar").unwrap();
            aged(
                &std::fs::File::options().write(true).open(&path).unwrap(),
                age,
            );
            path
        };
        let earlier_fresh = earlier("aB3dE9", Duration::from_secs(60));
        let earlier_old = earlier("xY7zQ2", Duration::from_secs(7200));
        let sidecar = dir.path().join("store.db.particles-rs.sidecar");
        std::fs::write(&sidecar, b"a sidecar").unwrap();
        let folder = dir.path().join(format!("{}folder", super::TEMP_PREFIX));
        std::fs::create_dir(&folder).unwrap();

        assert_eq!(super::remove_abandoned(dir.path()), 3);
        for gone in [&abandoned, &old_empty, &earlier_old] {
            assert!(!gone.exists(), "{} was kept", gone.display());
        }
        for kept in [
            &written,
            writing.path(),
            &fresh_empty,
            &earlier_fresh,
            &sidecar,
            &folder,
        ] {
            assert!(kept.exists(), "{} was removed", kept.display());
        }
        // Once its writer ends (here: closes it), its file is abandoned too.
        drop(held);
        assert_eq!(super::remove_abandoned(dir.path()), 1);
        assert!(!written.exists());
        let writing = writing.into_temp_path().keep().unwrap();
        assert_eq!(super::remove_abandoned(dir.path()), 1);
        assert!(!writing.exists());
        assert_eq!(super::remove_abandoned(dir.path()), 0);
    }

    /// A FIFO or a link under a temporary file's name is left alone, and the
    /// sweep does not wait on the FIFO (opened for reading, it would wait for
    /// a writer) before it removes the abandoned file beside them. The sweep
    /// passes both over before it opens anything; a FIFO or link that takes a
    /// file's place after that check is met by the open's flags, which the
    /// test checks on the open itself (the race cannot be staged).
    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_link_named_as_a_temporary_file_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let named = |name: &str| dir.path().join(format!("{}{name}", super::TEMP_PREFIX));
        let fifo = named("fifo");
        // coreutils' `mkfifo`, rather than an `unsafe` call in this file.
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let target = dir.path().join("not a temporary file");
        std::fs::write(&target, b"a user's file").unwrap();
        let link = named("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let abandoned = named("abandoned");
        std::fs::write(&abandoned, b"half a sidecar").unwrap();

        let (done, opened) = std::sync::mpsc::channel();
        let fifo_opened = fifo.clone();
        std::thread::spawn(move || {
            done.send(
                super::open_swept(&fifo_opened).map(|file| file.metadata().unwrap().is_file()),
            )
        });
        let opened = opened
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("the open waited on the FIFO");
        assert!(matches!(opened, Ok(false)), "{opened:?}");
        assert!(
            super::open_swept(&link).is_err(),
            "the open followed the link"
        );

        assert_eq!(super::remove_abandoned(dir.path()), 1);
        assert!(!abandoned.exists());
        for kept in [&fifo, &link, &target] {
            assert!(
                std::fs::symlink_metadata(kept).is_ok(),
                "{} was removed",
                kept.display()
            );
        }
    }

    /// A paced file takes a slice a step at a time, flushing between steps,
    /// and ends up with the bytes an eager one does.
    #[test]
    fn a_paced_write_writes_every_byte_in_steps() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for pace in [Pace::Eager, Pace::Paced] {
            let mut file = tempfile::tempfile().unwrap();
            let mut paced = Paced {
                file: &mut file,
                pace,
                step: 999,
                since_flush: 0,
            };
            let first = paced.write(&bytes).unwrap();
            match pace {
                Pace::Eager => assert_eq!(first, bytes.len()),
                Pace::Paced => assert_eq!(first, 999, "one step"),
            }
            paced.write_all(&bytes[first..]).unwrap();
            paced.flush().unwrap();
            assert!(paced.since_flush < 999 || pace == Pace::Eager);
            let mut back = Vec::new();
            file.seek(SeekFrom::Start(0)).unwrap();
            file.read_to_end(&mut back).unwrap();
            assert_eq!(back, bytes, "{pace:?}");
        }
    }
}
