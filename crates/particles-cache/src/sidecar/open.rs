//! Opening a sidecar: map the file, check what is cheap to check, and build a
//! [`CandidateSet`] whose columns are views of the map.

use std::{collections::HashMap, fs::File, path::Path, sync::Arc};

use particles_candidates::{
    column::{Column, ColumnError, SharedBytes, StrColumn},
    BytesCheck, CandidateColumns, CandidateSet, StoredHalf,
};
use particles_store::JournalHead;

use super::{
    format::{Checked, Checksum, Header, SectionKind, SectionTable},
    SidecarError,
};

/// A read-only memory map that columns borrow from.
struct MappedFile(memmap2::Mmap);

// SAFETY: a read-only mapping stays at one address with one length until dropped.
// Its contents change only if another process writes the file in place; sidecars
// are only ever replaced by rename, which leaves this mapping on the old inode.
unsafe impl SharedBytes for MappedFile {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Anonymous memory advised for transparent huge pages, filled once, then
/// read-only: the vectors of a long-lived process. A scan over it measured 19%
/// faster than over the same bytes in a file map or a `Vec` (100k rows: 10.0 vs
/// 12.4 ms), as 2 MiB pages spare the TLB.
struct HugePages(memmap2::Mmap);

// SAFETY: an anonymous mapping made read-only stays at one address, unchanged,
// until dropped.
unsafe impl SharedBytes for HugePages {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A column of `len` values in huge-page backed memory, filled by `fill`.
///
/// # Errors
///
/// The IO error of the anonymous mapping (or of `fill`).
pub(crate) fn huge_page_column<T: bytemuck::Pod>(
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<Column<T>> {
    let bytes = len * std::mem::size_of::<T>();
    if bytes == 0 {
        return Ok(Column::default());
    }
    let mut map = memmap2::MmapMut::map_anon(bytes)?;
    // Advice only: without transparent huge pages this is plain memory, as it is
    // on every system but Linux, where the advice does not exist.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    fill(&mut map)?;
    let keep: Arc<dyn SharedBytes> = Arc::new(HugePages(map.make_read_only()?));
    Column::shared(keep, 0..bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))
}

/// Where an opened sidecar's vectors live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VectorsIn {
    /// Viewed in the file map: nothing is copied (one-shot processes).
    Map,
    /// Read into huge-page backed memory (long-lived processes; the file map's
    /// vector pages are never touched, so they do not count twice).
    HugePages,
    /// In huge pages when they take fewer than this many bytes, else in the
    /// map: a long-lived process whose scans read a half-precision copy of
    /// vectors this large reads an `f32` row only where the copy's bound cannot
    /// decide (a few hundred rows a question), so a private copy would cost
    /// their whole size in anonymous memory (1.5 GB at 1M rows) for no speed.
    HugePagesBelow(usize),
}

impl VectorsIn {
    /// [`VectorsIn::Map`] or [`VectorsIn::HugePages`] for vectors of `bytes`.
    fn resolve(self, bytes: usize) -> VectorsIn {
        match self {
            VectorsIn::HugePagesBelow(least) if bytes >= least => VectorsIn::Map,
            VectorsIn::HugePagesBelow(_) => VectorsIn::HugePages,
            other => other,
        }
    }
}

/// A long-lived process (any [`VectorsIn`] but [`VectorsIn::Map`]) reads a
/// stored half copy of at most this many bytes into huge pages, where its
/// scans read it faster than in the file's 4 KiB pages: 100k rows (77 MB),
/// warm, on 2 cores of an AMD EPYC (Zen 4), the bare ranking's p50 5.8-7.1
/// ms against 6.2-8.2 ms in the map, four runs each, alternating
/// (`examples/band_cost.rs` in `particles-query`). Larger copies stay in the
/// map: at 1M rows the copy is 768 MB, which the 1 GiB of anonymous memory a
/// 1M server may take cannot also hold.
pub(crate) const HALF_IN_HUGE_PAGES_MAX: usize = 256 << 20;

/// What an opened sidecar holds.
pub(crate) struct Opened {
    pub(crate) head: JournalHead,
    pub(crate) set: CandidateSet,
    pub(crate) by_id: Column<u32>,
}

/// A sidecar file, mapped, its preamble and header checked and its sections
/// located; no section is hashed yet.
pub(super) struct Mapped<'p> {
    path: &'p Path,
    file: File,
    map: memmap2::Mmap,
    pub(super) header: Header,
    pub(super) table: SectionTable,
}

impl<'p> Mapped<'p> {
    /// Maps the file at `path` and checks its header. `Ok(None)` when there is no
    /// file.
    pub(super) fn new(path: &'p Path) -> Result<Option<Mapped<'p>>, SidecarError> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None)
            }
            Err(source) => {
                return Err(SidecarError::Io {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        // SAFETY: see `MappedFile`: particles-rs replaces a sidecar only by rename,
        // never writes one in place; a user truncating it under a running query is
        // outside what this guards.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|source| SidecarError::Io {
            path: path.to_owned(),
            source,
        })?;
        let (header, table) = Header::decode(path, &map)?;
        Ok(Some(Mapped {
            path,
            file,
            map,
            header,
            table,
        }))
    }

    fn invalid(&self, reason: String) -> SidecarError {
        SidecarError::Invalid {
            path: self.path.to_owned(),
            reason,
        }
    }

    /// Hashes the sections `which` picks, in file order, against the header.
    ///
    /// # Errors
    ///
    /// [`SidecarError::Invalid`] naming the first section that fails.
    pub(super) fn check_sections(
        &self,
        which: impl Fn(SectionKind) -> bool,
    ) -> Result<(), SidecarError> {
        for (kind, range) in self.table.iter().filter(|(kind, _)| which(*kind)) {
            if Checksum::of(&self.map[range]) != self.header.checksums.get(kind) {
                return Err(self.invalid(format!("section {} fails its checksum", kind.name())));
            }
        }
        Ok(())
    }

    /// Asks the kernel to map, in one call, every page a one-shot scan touches
    /// before the claims, instead of faulting them in 64 KiB at a time. With the
    /// vectors read into huge pages their file pages stay unmapped (else they would
    /// count twice in the resident set); the claims are mapped when a claim filter
    /// reads them.
    #[cfg(target_os = "linux")]
    fn populate(&self, vectors_in: VectorsIn) {
        let first = match vectors_in {
            VectorsIn::Map => self.table.range(SectionKind::Vectors).start,
            VectorsIn::HugePages | VectorsIn::HugePagesBelow(_) => {
                self.table.range(SectionKind::Norms).start
            }
        };
        let claims = self.table.range(SectionKind::Claims).start;
        if claims > first {
            // Advice only: a refusal costs page faults, not correctness.
            let _ = self
                .map
                .advise_range(memmap2::Advice::PopulateRead, first, claims - first);
        }
    }

    /// Elsewhere there is no such advice: pages fault in as the scan reads them.
    #[cfg(not(target_os = "linux"))]
    fn populate(&self, _vectors_in: VectorsIn) {}

    /// The set over views of the map (its vectors in the map or read into huge
    /// pages; `vectors_in` as [`open`] resolved it), after checking that its columns agree with each other and with the
    /// header and that the id index is in range. The claims' checksum goes with the
    /// set, which checks it on first use.
    ///
    /// # Errors
    ///
    /// [`SidecarError::Invalid`] for inconsistent columns, [`SidecarError::Io`]
    /// when the vectors cannot be read into huge pages.
    pub(super) fn into_opened(
        self,
        vectors_in: VectorsIn,
        half_in_huge_pages: bool,
    ) -> Result<Opened, SidecarError> {
        let premises: HashMap<String, Vec<String>> =
            serde_json::from_slice(&self.map[self.table.range(SectionKind::Premises)])
                .map_err(|_| self.invalid("the premises section is not JSON".into()))?;
        let head = self
            .header
            .head
            .to_journal_head()
            .ok_or_else(|| self.invalid("the head token is not hex".into()))?;
        let Mapped {
            path,
            file,
            map,
            header,
            table,
        } = self;
        let invalid = |reason: String| SidecarError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let keep: Arc<dyn SharedBytes> = Arc::new(MappedFile(map));
        let column_error = |e: ColumnError| invalid(e.to_string());
        macro_rules! column {
            ($kind:expr) => {
                Column::shared(Arc::clone(&keep), table.range($kind)).map_err(column_error)?
            };
        }
        let claims_checksum = header.checksums.get(SectionKind::Claims);
        let half_checksum = header.checksums.get(SectionKind::HalfVectors);
        let columns = CandidateColumns {
            ids: StrColumn::shared(column!(SectionKind::IdBytes), column!(SectionKind::IdEnds))
                .map_err(column_error)?,
            rowids: column!(SectionKind::Rowids),
            confidence: column!(SectionKind::Confidence),
            model_current: column!(SectionKind::ModelCurrent),
            traits: column!(SectionKind::Traits),
            norms: column!(SectionKind::Norms),
            checks: column!(SectionKind::Checks),
            offsets: column!(SectionKind::Offsets),
            vectors: match vectors_in {
                VectorsIn::Map => column!(SectionKind::Vectors),
                VectorsIn::HugePages | VectorsIn::HugePagesBelow(_) => {
                    in_huge_pages(&file, path, table.range(SectionKind::Vectors))?
                }
            },
            strings: StrColumn::shared(
                column!(SectionKind::StringBytes),
                column!(SectionKind::StringEnds),
            )
            .map_err(column_error)?,
            premises,
            claims_json: column!(SectionKind::Claims),
            claims_check: Some(BytesCheck(Arc::new(move |bytes: &[u8]| {
                Checksum::of(bytes) == claims_checksum
            }))),
            // The values stay in the map whatever `vectors_in` says (serving
            // them from the file's pages is what storing them is for), unless
            // a long-lived process reads a small copy into huge pages.
            half: if header.lengths.half {
                Some(StoredHalf {
                    data: if half_in_huge_pages {
                        in_huge_pages(&file, path, table.range(SectionKind::HalfVectors))?
                    } else {
                        column!(SectionKind::HalfVectors)
                    },
                    radius: column!(SectionKind::HalfRadius),
                    check: Some(BytesCheck(Arc::new(move |bytes: &[u8]| {
                        Checksum::of(bytes) == half_checksum
                    }))),
                })
            } else {
                None
            },
        };
        let set = CandidateSet::from_columns(columns).map_err(|e| invalid(e.to_string()))?;
        let by_id: Column<u32> = column!(SectionKind::ById);
        // The section table derives every length from `rows`, so the columns
        // already have that many rows; this guards the derivation.
        if set.len() != header.lengths.rows || by_id.len() != set.len() {
            return Err(invalid("the row counts disagree".into()));
        }
        // In range on every open; sorted only in debug builds (and by `verify`):
        // the section's checksum already covers damage, and comparing a million
        // ids would cost a tenth of a one-shot query.
        if by_id.iter().any(|&row| row as usize >= set.len())
            || (cfg!(debug_assertions) && !ids_sorted(&set, &by_id))
        {
            return Err(invalid("the id index is not a sorted permutation".into()));
        }
        Ok(Opened { head, set, by_id })
    }
}

/// The section of `file` (at `path`) at `range`, read into huge-page backed
/// memory instead of viewed in the map.
///
/// # Errors
///
/// [`SidecarError::Io`] when the memory cannot be had or the read fails.
fn in_huge_pages<T: bytemuck::Pod>(
    file: &File,
    path: &Path,
    range: std::ops::Range<usize>,
) -> Result<Column<T>, SidecarError> {
    huge_page_column(range.len() / std::mem::size_of::<T>(), |into| {
        read_exact_at(file, into, range.start as u64)
    })
    .map_err(|source| SidecarError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Reads `into.len()` bytes of `file` at `offset`.
fn read_exact_at(file: &File, into: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(into, offset)
    }
    // No positioned read everywhere: seek the handle, which nothing else reads.
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(into)
    }
}

/// Whether `by_id` lists the rows of `set` by strictly rising id.
pub(super) fn ids_sorted(set: &CandidateSet, by_id: &[u32]) -> bool {
    by_id
        .windows(2)
        .all(|w| set.id(w[0] as usize) < set.id(w[1] as usize))
}

/// Opens and checks a sidecar: the header, every section's checksum but those of
/// the vectors, norms and claims, and the columns' consistency. `Ok(None)` when
/// there is no file.
///
/// # Errors
///
/// [`SidecarError`] when the file exists but cannot be used (the caller rebuilds).
pub(crate) fn open(path: &Path, vectors_in: VectorsIn) -> Result<Option<Opened>, SidecarError> {
    let Some(mapped) = Mapped::new(path)? else {
        return Ok(None);
    };
    let half_in_huge_pages = vectors_in != VectorsIn::Map
        && mapped.table.range(SectionKind::HalfVectors).len() <= HALF_IN_HUGE_PAGES_MAX;
    let vectors_in = vectors_in.resolve(mapped.table.range(SectionKind::Vectors).len());
    mapped.populate(vectors_in);
    mapped.check_sections(|kind| kind.checked() == Checked::OnOpen)?;
    mapped.into_opened(vectors_in, half_in_huge_pages).map(Some)
}
