//! The sidecar's on-disk layout, as types.
//!
//! ```text
//! 0     file kind "PRSCAR"
//! 6     format version, two ASCII digits: "05"
//! 8     byte-order marker: the u32 0x01020304 in the writer's byte order
//! 12    zero (u32)
//! 16    header length (u64)
//! 24    header XXH3-64 (u64)
//! 32    header: JSON [`Header`]: the journal head, the store's path, the column
//!       lengths and one XXH3-64 per section
//! 4096  the sections in `SectionKind::ALL` order: the vectors first and the
//!       half copy's values (page aligned), every other one 64-byte aligned,
//!       zeros between; the half copy's two sections are empty in a file
//!       written without one
//! ```
//!
//! Every number in the file, preamble and columns alike, is in the byte order of the
//! machine that wrote it, because the columns are viewed in place, never converted.
//! The marker is read before any other number, so a file copied from a machine of
//! the other byte order is refused by name ([`SidecarError::ByteOrder`]) instead of
//! misread.
//!
//! Where each section lies is not written down: [`SectionTable::new`] derives it
//! from the header's [`Lengths`] (element counts times element sizes, aligned), for
//! the writer and the reader alike. So the two cannot disagree, and no header can
//! point a section outside the file or onto another one.
//!
//! Format 1 began with "PRSCAR01" and had no marker; its "01" reads as version 1
//! here, so it is refused as older ([`SidecarError::Version`]) and rebuilt.

use std::{ops::Range, path::Path};

use particles_candidates::PackedTraits;
use particles_store::JournalHead;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::SidecarError;

/// The first six bytes of every sidecar.
const KIND: &[u8; 6] = b"PRSCAR";

/// The format this build writes and reads. Version 2 added the byte-order marker,
/// derives section offsets from the column lengths, and packs each row's
/// calibration source into its traits (bits 24-27); version 3 adds each row's
/// integrity check (the `checks` section), which every scan verifies as it reads
/// the vectors and norms; version 4 adds the half-precision copy and its radii
/// (`half.vectors`, `half.radius`), written when the writer's set has one, so a
/// long-lived process serves them from the map instead of a private copy; version
/// 5 adds each row's claim flag to its traits (bit 28), which the subject coverage
/// gap's count reads, so a version 4 file, whose bit 28 is always clear, is rebuilt.
pub(crate) const VERSION: u32 = 5;

/// Written in the writer's byte order; read back swapped on a machine of the other.
const BYTE_ORDER_MARKER: u32 = 0x0102_0304;

/// Kind, version, marker, padding, header length and checksum.
const PREAMBLE_LEN: usize = 32;

/// Room for the preamble and the header; the sections start here. One page, so the
/// vectors, which come first, are page aligned.
pub(crate) const HEADER_SPACE: usize = 4096;

/// The alignment of every section but the vectors: a cache line, and more than any
/// column's element needs.
const SECTION_ALIGN: usize = 64;

/// The byte order of this machine, for messages.
pub(crate) fn native_endian() -> &'static str {
    if cfg!(target_endian = "little") {
        "little"
    } else {
        "big"
    }
}

/// The sections, each a column (or the JSON of the premises and claims).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum SectionKind {
    Vectors,
    Norms,
    Checks,
    Offsets,
    IdBytes,
    IdEnds,
    Rowids,
    Confidence,
    ModelCurrent,
    Traits,
    StringBytes,
    StringEnds,
    ById,
    Premises,
    Claims,
    HalfVectors,
    HalfRadius,
}

/// When a section's checksum is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checked {
    /// On every open.
    OnOpen,
    /// When the set first reads it: the claims when a claim filter first reads
    /// them (`CandidateSet::claims_intact`; most queries have none), the half
    /// copy when a long-lived process first asks for it
    /// (`CandidateSet::prepare_half`; a one-shot query never reads it).
    OnFirstUse,
    /// Hashed only by `verify`: hashing 1.5 GB of vectors on every open would cost
    /// more than the query. Every scan checks the rows it reads against the
    /// `checks` section instead (which is hashed on open).
    ByVerify,
}

impl SectionKind {
    /// How many kinds there are.
    pub(crate) const COUNT: usize = 17;

    /// Every kind, in file order (which is also discriminant order).
    pub(crate) const ALL: [SectionKind; SectionKind::COUNT] = [
        SectionKind::Vectors,
        SectionKind::Norms,
        SectionKind::Checks,
        SectionKind::Offsets,
        SectionKind::IdBytes,
        SectionKind::IdEnds,
        SectionKind::Rowids,
        SectionKind::Confidence,
        SectionKind::ModelCurrent,
        SectionKind::Traits,
        SectionKind::StringBytes,
        SectionKind::StringEnds,
        SectionKind::ById,
        SectionKind::Premises,
        SectionKind::Claims,
        SectionKind::HalfVectors,
        SectionKind::HalfRadius,
    ];

    /// The name in the header and in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SectionKind::Vectors => "vectors",
            SectionKind::Norms => "norms",
            SectionKind::Checks => "checks",
            SectionKind::Offsets => "offsets",
            SectionKind::IdBytes => "ids.bytes",
            SectionKind::IdEnds => "ids.ends",
            SectionKind::Rowids => "rowids",
            SectionKind::Confidence => "confidence",
            SectionKind::ModelCurrent => "model_current",
            SectionKind::Traits => "traits",
            SectionKind::StringBytes => "strings.bytes",
            SectionKind::StringEnds => "strings.ends",
            SectionKind::ById => "by_id",
            SectionKind::Premises => "premises",
            SectionKind::Claims => "claims",
            SectionKind::HalfVectors => "half.vectors",
            SectionKind::HalfRadius => "half.radius",
        }
    }

    pub(crate) fn checked(self) -> Checked {
        match self {
            SectionKind::Vectors | SectionKind::Norms => Checked::ByVerify,
            SectionKind::Claims | SectionKind::HalfVectors => Checked::OnFirstUse,
            _ => Checked::OnOpen,
        }
    }

    fn align(self) -> usize {
        match self {
            // Page aligned: the vectors and their half copy are the bulk of the
            // file, and a scan over them (or a read into huge pages) starts on a
            // page boundary.
            SectionKind::Vectors | SectionKind::HalfVectors => HEADER_SPACE,
            _ => SECTION_ALIGN,
        }
    }

    /// The section's byte length for these column lengths; `None` on overflow.
    fn byte_len(self, lengths: &Lengths) -> Option<usize> {
        use std::mem::size_of;
        let (size, count) = match self {
            SectionKind::Vectors => (size_of::<f32>(), lengths.vector_floats),
            SectionKind::Norms => (size_of::<f32>(), lengths.rows),
            SectionKind::Checks => (size_of::<u32>(), lengths.rows),
            SectionKind::Offsets => (size_of::<u64>(), lengths.rows.checked_add(1)?),
            SectionKind::IdBytes => (1, lengths.id_bytes),
            SectionKind::IdEnds => (size_of::<u64>(), lengths.rows),
            SectionKind::Rowids => (size_of::<i64>(), lengths.rows),
            SectionKind::Confidence => (size_of::<f64>(), lengths.rows),
            SectionKind::ModelCurrent => (1, lengths.rows),
            SectionKind::Traits => (size_of::<PackedTraits>(), lengths.rows),
            SectionKind::StringBytes => (1, lengths.string_bytes),
            SectionKind::StringEnds => (size_of::<u64>(), lengths.strings),
            SectionKind::ById => (size_of::<u32>(), lengths.rows),
            SectionKind::Premises => (1, lengths.premises_bytes),
            SectionKind::Claims => (1, lengths.claims_bytes),
            SectionKind::HalfVectors => (
                2,
                if lengths.half {
                    lengths.vector_floats
                } else {
                    0
                },
            ),
            SectionKind::HalfRadius => (
                size_of::<f32>(),
                if lengths.half { lengths.rows } else { 0 },
            ),
        };
        size.checked_mul(count)
    }
}

impl Serialize for SectionKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for SectionKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        SectionKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown section {name:?}")))
    }
}

/// The element counts of the columns: everything the section table derives from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Lengths {
    /// Rows (candidates).
    pub(crate) rows: usize,
    /// Floats in all vectors together.
    pub(crate) vector_floats: usize,
    /// Bytes of all ids together.
    pub(crate) id_bytes: usize,
    /// Interned strings.
    pub(crate) strings: usize,
    /// Bytes of all interned strings together.
    pub(crate) string_bytes: usize,
    /// Bytes of the premises' JSON.
    pub(crate) premises_bytes: usize,
    /// Bytes of the structured claims' JSON.
    pub(crate) claims_bytes: usize,
    /// Whether the file holds the half copy of the vectors (binary16 values,
    /// at the vectors' offsets) and each row's radius.
    pub(crate) half: bool,
}

/// Where every section lies, derived from [`Lengths`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SectionTable {
    ranges: [Range<usize>; SectionKind::COUNT],
}

impl SectionTable {
    /// The sections laid out after the header space in file order, each at its
    /// alignment. `None` when the lengths overflow the address space.
    pub(crate) fn new(lengths: &Lengths) -> Option<SectionTable> {
        let mut ranges: [Range<usize>; SectionKind::COUNT] = Default::default();
        let mut end = HEADER_SPACE;
        for (range, kind) in ranges.iter_mut().zip(SectionKind::ALL) {
            let start = end.checked_next_multiple_of(kind.align())?;
            end = start.checked_add(kind.byte_len(lengths)?)?;
            *range = start..end;
        }
        Some(SectionTable { ranges })
    }

    /// The byte range of one section.
    pub(crate) fn range(&self, kind: SectionKind) -> Range<usize> {
        self.ranges[kind as usize].clone()
    }

    /// Every section with its range, in file order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (SectionKind, Range<usize>)> + '_ {
        SectionKind::ALL
            .into_iter()
            .zip(self.ranges.iter().cloned())
    }

    /// The file's length: the end of the last section (an empty last section
    /// ends where it starts, which is aligned: the file's zeros run up to it).
    pub(crate) fn file_len(&self) -> usize {
        self.ranges[SectionKind::COUNT - 1].end
    }
}

/// An XXH3-64 checksum, written as 16 hex digits (a JSON number would lose bits in
/// readers that parse numbers as doubles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Checksum(pub(crate) u64);

impl Checksum {
    pub(crate) fn of(bytes: &[u8]) -> Checksum {
        Checksum(xxh3_64(bytes))
    }
}

impl Serialize for Checksum {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{:016x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Checksum {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        u64::from_str_radix(&text, 16)
            .map(Checksum)
            .map_err(|_| serde::de::Error::custom(format!("checksum {text:?} is not hex")))
    }
}

/// One checksum per section, written as an object by section name; reading one
/// without every section fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Checksums([Checksum; SectionKind::COUNT]);

impl Checksums {
    pub(crate) fn get(&self, kind: SectionKind) -> Checksum {
        self.0[kind as usize]
    }

    pub(crate) fn set(&mut self, kind: SectionKind, checksum: Checksum) {
        self.0[kind as usize] = checksum;
    }
}

impl Serialize for Checksums {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            SectionKind::ALL
                .into_iter()
                .map(|kind| (kind, self.get(kind))),
        )
    }
}

impl<'de> Deserialize<'de> for Checksums {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let by_kind =
            std::collections::BTreeMap::<SectionKind, Checksum>::deserialize(deserializer)?;
        let mut checksums = Checksums::default();
        for kind in SectionKind::ALL {
            let Some(&checksum) = by_kind.get(&kind) else {
                return Err(serde::de::Error::custom(format!(
                    "no checksum for section {}",
                    kind.name()
                )));
            };
            checksums.set(kind, checksum);
        }
        Ok(checksums)
    }
}

/// The journal head, its token as hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Head {
    seq: i64,
    token: String,
}

impl Head {
    pub(crate) fn new(head: &JournalHead) -> Head {
        Head {
            seq: head.seq,
            token: head.token.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }

    /// The journal head, or `None` when the token is not hex.
    pub(crate) fn to_journal_head(&self) -> Option<JournalHead> {
        let text = &self.token;
        if !text.len().is_multiple_of(2) {
            return None;
        }
        let token = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        Some(JournalHead {
            seq: self.seq,
            token,
        })
    }
}

/// The header: what the file holds and how to check it. Offsets are not in it;
/// [`SectionTable::new`] derives them from `lengths`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Header {
    /// The journal position the set is exact at.
    pub(crate) head: Head,
    /// The store the set was read from, for people reading the header; the head,
    /// not this path, ties the file to a store.
    pub(crate) store: String,
    /// The column lengths.
    pub(crate) lengths: Lengths,
    /// Every section's checksum.
    pub(crate) checksums: Checksums,
}

impl Header {
    /// The preamble and the header's JSON, to be written at the start of the file.
    ///
    /// # Errors
    ///
    /// [`SidecarError::Invalid`] when the header does not fit its space (a store
    /// path of some 3,000 bytes).
    pub(crate) fn encode(&self, path: &Path) -> Result<Vec<u8>, SidecarError> {
        let invalid = |reason: String| SidecarError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let json = serde_json::to_vec(self)
            .map_err(|e| invalid(format!("the header does not serialize: {e}")))?;
        if PREAMBLE_LEN + json.len() > HEADER_SPACE {
            return Err(invalid(
                "the header does not fit its space; not written".into(),
            ));
        }
        let mut out = Vec::with_capacity(PREAMBLE_LEN + json.len());
        out.extend_from_slice(KIND);
        out.extend_from_slice(format!("{VERSION:02}").as_bytes());
        out.extend_from_slice(&BYTE_ORDER_MARKER.to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes());
        out.extend_from_slice(&(json.len() as u64).to_ne_bytes());
        out.extend_from_slice(&xxh3_64(&json).to_ne_bytes());
        out.extend_from_slice(&json);
        Ok(out)
    }

    /// Reads and checks the preamble and header of `file` (the whole file's bytes),
    /// and derives the section table, which must end where the file does.
    ///
    /// # Errors
    ///
    /// [`SidecarError::Version`] for another format version,
    /// [`SidecarError::ByteOrder`] for a file written on a machine of the other
    /// byte order, [`SidecarError::Invalid`] for anything else amiss.
    pub(crate) fn decode(path: &Path, file: &[u8]) -> Result<(Header, SectionTable), SidecarError> {
        let invalid = |reason: String| SidecarError::Invalid {
            path: path.to_owned(),
            reason,
        };
        let (Some(kind), Some(version)) = (file.get(..6), file.get(6..8)) else {
            return Err(invalid("not a particles-rs sidecar (magic)".into()));
        };
        if kind != KIND || !version.iter().all(u8::is_ascii_digit) {
            return Err(invalid("not a particles-rs sidecar (magic)".into()));
        }
        let version = u32::from(version[0] - b'0') * 10 + u32::from(version[1] - b'0');
        if version != VERSION {
            return Err(SidecarError::Version {
                path: path.to_owned(),
                found: version,
            });
        }
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_ne_bytes(file.get(at..at + 8)?.try_into().ok()?))
        };
        let marker = file
            .get(8..12)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_ne_bytes);
        match marker {
            Some(BYTE_ORDER_MARKER) => {}
            Some(m) if m == BYTE_ORDER_MARKER.swap_bytes() => {
                return Err(SidecarError::ByteOrder {
                    path: path.to_owned(),
                })
            }
            _ => return Err(invalid("the byte-order marker is damaged".into())),
        }
        let (Some(len), Some(sum)) = (word(16), word(24)) else {
            return Err(invalid("the file ends inside its preamble".into()));
        };
        let json = usize::try_from(len)
            .ok()
            .filter(|&len| len <= HEADER_SPACE - PREAMBLE_LEN)
            .and_then(|len| file.get(PREAMBLE_LEN..PREAMBLE_LEN + len))
            .ok_or_else(|| invalid("the header length runs past its space or the file".into()))?;
        if xxh3_64(json) != sum {
            return Err(invalid("the header checksum does not match".into()));
        }
        let header: Header = serde_json::from_slice(json)
            .map_err(|e| invalid(format!("the header does not parse: {e}")))?;
        let table = SectionTable::new(&header.lengths)
            .ok_or_else(|| invalid("the column lengths overflow".into()))?;
        if file.len() != table.file_len() {
            return Err(invalid(format!(
                "the file has {} bytes where its header describes {} (truncated?)",
                file.len(),
                table.file_len()
            )));
        }
        Ok((header, table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header(lengths: Lengths) -> Header {
        let mut checksums = Checksums::default();
        for (at, kind) in SectionKind::ALL.into_iter().enumerate() {
            checksums.set(kind, Checksum(u64::MAX - at as u64));
        }
        Header {
            head: Head::new(&JournalHead {
                seq: 42,
                token: vec![0, 1, 0xab, 0xff],
            }),
            store: "/stores/beliefs.db".into(),
            lengths,
            checksums,
        }
    }

    /// A file of `header`'s length: its encoded header, then zeros.
    fn file_of(header: &Header) -> Vec<u8> {
        let table = SectionTable::new(&header.lengths).expect("small lengths");
        let mut file = header.encode(Path::new("x.sidecar")).expect("fits");
        file.resize(table.file_len(), 0);
        file
    }

    fn small_lengths() -> impl Strategy<Value = Lengths> {
        (
            (0usize..300, 0usize..5000, 0usize..3000),
            (
                0usize..50,
                0usize..800,
                0usize..900,
                0usize..900,
                any::<bool>(),
            ),
        )
            .prop_map(
                |((rows, vector_floats, id_bytes), (strings, string_bytes, p, c, half))| Lengths {
                    rows,
                    vector_floats,
                    id_bytes,
                    strings,
                    string_bytes,
                    premises_bytes: p,
                    claims_bytes: c,
                    half,
                },
            )
    }

    #[test]
    fn kinds_are_listed_in_discriminant_order() {
        for (at, kind) in SectionKind::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, at, "{}", kind.name());
        }
    }

    proptest! {
        #[test]
        fn the_derived_section_table_round_trips(lengths in small_lengths()) {
            let written = header(lengths);
            let table = SectionTable::new(&lengths).expect("small lengths");
            let (read, read_table) =
                Header::decode(Path::new("x.sidecar"), &file_of(&written)).expect("valid");
            prop_assert_eq!(&read, &written);
            prop_assert_eq!(&read_table, &table);
            prop_assert_eq!(read.head.to_journal_head().expect("hex").token, vec![0, 1, 0xab, 0xff]);

            // The table itself: after the header space, in order, aligned,
            // disjoint, each as long as its column.
            let mut end = HEADER_SPACE;
            for (kind, range) in table.iter() {
                prop_assert!(range.start >= end, "{} overlaps", kind.name());
                prop_assert_eq!(range.start % kind.align(), 0);
                prop_assert!(range.start - end < kind.align(), "{} leaves a gap", kind.name());
                prop_assert_eq!(Some(range.len()), kind.byte_len(&lengths));
                end = range.end;
            }
            prop_assert_eq!(table.range(SectionKind::Vectors).start, HEADER_SPACE);
            prop_assert_eq!(table.file_len(), end);
        }
    }

    #[test]
    fn the_traits_column_keeps_its_size() {
        // `PackedTraits` is written as it lies in memory: a change to it changes
        // the file's layout and must bump `VERSION` (then update this size).
        assert_eq!(std::mem::size_of::<PackedTraits>(), 32);
        assert_eq!(VERSION, 5);
    }

    #[test]
    fn overflowing_lengths_derive_no_table() {
        let lengths = Lengths {
            rows: usize::MAX / 2,
            ..Lengths::default()
        };
        assert_eq!(SectionTable::new(&lengths), None);
    }

    #[test]
    fn a_file_from_a_machine_of_the_other_byte_order_is_refused_by_name() {
        let mut file = file_of(&header(Lengths::default()));
        file[8..12].reverse();
        let error = Header::decode(Path::new("/data/other.sidecar"), &file).unwrap_err();
        assert!(
            matches!(&error, SidecarError::ByteOrder { path } if path == Path::new("/data/other.sidecar")),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains("/data/other.sidecar"), "{message}");
        assert!(message.contains("byte order"), "{message}");

        // Damage that is no swap is damage, not a byte order.
        let mut file = file_of(&header(Lengths::default()));
        file[9] ^= 0x40;
        let error = Header::decode(Path::new("x.sidecar"), &file).unwrap_err();
        assert!(
            error.to_string().contains("byte-order marker is damaged"),
            "{error}"
        );
    }

    #[test]
    fn an_older_format_is_refused_with_its_version() {
        // Format 1: magic "PRSCAR01", the header length and checksum, a JSON
        // header with offsets, no byte-order marker.
        let json = br#"{"format":"particles-rs sidecar","version":1,"rows":0,"sections":[]}"#;
        let mut file = Vec::new();
        file.extend_from_slice(b"PRSCAR01");
        file.extend_from_slice(&(json.len() as u64).to_le_bytes());
        file.extend_from_slice(&xxh3_64(json).to_le_bytes());
        file.extend_from_slice(json);
        file.resize(HEADER_SPACE, 0);
        let error = Header::decode(Path::new("old.sidecar"), &file).unwrap_err();
        assert!(
            matches!(error, SidecarError::Version { found: 1, .. }),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(
            message.contains("old.sidecar") && message.contains("format version 1"),
            "{message}"
        );
    }

    #[test]
    fn truncation_and_foreign_files_are_refused() {
        let lengths = Lengths {
            rows: 3,
            vector_floats: 12,
            ..Lengths::default()
        };
        let file = file_of(&header(lengths));
        let decode = |bytes: &[u8]| Header::decode(Path::new("x.sidecar"), bytes).map(|_| ());
        assert!(decode(&file).is_ok());
        let error = decode(&file[..file.len() - 1]).unwrap_err();
        assert!(error.to_string().contains("truncated"), "{error}");
        for foreign in [&b""[..], b"PRSCAR", b"PRSCARxx", b"SQLite format 3\0"] {
            let error = decode(foreign).unwrap_err();
            assert!(error.to_string().contains("magic"), "{error}");
        }
        let mut flipped = file.clone();
        flipped[PREAMBLE_LEN + 3] ^= 0x01;
        let error = decode(&flipped).unwrap_err();
        assert!(error.to_string().contains("header checksum"), "{error}");
    }
}
