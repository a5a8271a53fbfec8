//! A row's fixed-size traits: what the filters and the score read of a particle,
//! and their packed, plain-data form for a column that can live in a memory map.

use particles_model::{AssertionModality, CalibrationSource, UncertaintyNature};

use crate::filters::{keys, FilterFlag};

/// The fixed-size part of a candidate that filters and scoring read (and the
/// subject coverage gap's count, the claim flag).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowTraits {
    /// `particle_type == NARRATIVE` (its score is demoted).
    pub narrative: bool,
    /// `particle_type == CLAIM` (a subject's coverage gap counts these).
    pub claim: bool,
    /// The confidence is `DERIVED` from premises.
    pub derived: bool,
    /// Where the confidence value came from (the uncalibrated cap reads it).
    pub calibration_source: CalibrationSource,
    /// The document-meta filter's verdict.
    pub document_meta: FilterFlag,
    /// The polarity filter's verdict.
    pub non_asserted: FilterFlag,
    /// A stance marker is present.
    pub stance: bool,
    /// The uncertainty nature.
    pub uncertainty_nature: UncertaintyNature,
    /// The assertion modality.
    pub assertion_modality: AssertionModality,
    /// `asserted_at` in microseconds since the epoch (naive read as UTC).
    pub asserted_at_micros: i64,
    /// The interned extractor name; `None` when the particle has no extractor ref.
    pub extractor: Option<u32>,
    /// The first `SOURCE` ref: interned entry id and snapshot id.
    pub source: Option<(u32, Option<u32>)>,
    /// The interned co-evidential source key.
    pub source_key: u32,
}

/// [`RowTraits`] packed as plain data, for a column that can live in a memory map.
///
/// Flag bits: 0 narrative, 1 derived, 2 stance, 3 has a source ref, 4-5 the
/// document-meta verdict, 6-7 the polarity verdict (0 keep, 1 exclude, 2 raises),
/// 8-15 the uncertainty nature, 16-23 the assertion modality and 24-27 the
/// calibration source (indexes into their `ALL` lists), 28 claim; 29-31 are zero. `NONE`
/// marks an absent interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct PackedTraits {
    pub(crate) asserted_at_micros: i64,
    pub(crate) flags: u32,
    pub(crate) extractor: u32,
    pub(crate) entry: u32,
    pub(crate) snapshot: u32,
    pub(crate) source_key: u32,
    pub(crate) reserved: u32,
}

impl PackedTraits {
    pub(crate) const NONE: u32 = u32::MAX;

    pub(crate) fn pack(t: &RowTraits) -> PackedTraits {
        let verdict = |flag: FilterFlag| match flag {
            FilterFlag::Keep => 0u32,
            FilterFlag::Exclude => 1,
            FilterFlag::Unhashable(_) => 2,
        };
        let index = |found: Option<usize>| found.unwrap_or(0) as u32;
        let flags = u32::from(t.narrative)
            | u32::from(t.derived) << 1
            | u32::from(t.stance) << 2
            | u32::from(t.source.is_some()) << 3
            | verdict(t.document_meta) << 4
            | verdict(t.non_asserted) << 6
            | index(
                UncertaintyNature::ALL
                    .iter()
                    .position(|&n| n == t.uncertainty_nature),
            ) << 8
            | index(
                AssertionModality::ALL
                    .iter()
                    .position(|&m| m == t.assertion_modality),
            ) << 16
            | index(
                CalibrationSource::ALL
                    .iter()
                    .position(|&c| c == t.calibration_source),
            ) << 24
            | u32::from(t.claim) << 28;
        let (entry, snapshot) = t.source.unwrap_or((Self::NONE, None));
        PackedTraits {
            asserted_at_micros: t.asserted_at_micros,
            flags,
            extractor: t.extractor.unwrap_or(Self::NONE),
            entry,
            snapshot: snapshot.unwrap_or(Self::NONE),
            source_key: t.source_key,
            reserved: 0,
        }
    }

    /// The narrative flag alone.
    pub(crate) fn is_narrative(self) -> bool {
        self.flags & 1 != 0
    }

    /// The claim flag alone.
    pub(crate) fn is_claim(self) -> bool {
        self.flags & (1 << 28) != 0
    }

    /// The derived flag alone.
    pub(crate) fn is_derived(self) -> bool {
        self.flags & 2 != 0
    }

    /// The extractor alone.
    pub(crate) fn extractor(self) -> Option<u32> {
        (self.extractor != Self::NONE).then_some(self.extractor)
    }

    /// The calibration source alone.
    pub(crate) fn calibration_source(self) -> CalibrationSource {
        let calibration = ((self.flags >> 24) & 0xf) as usize;
        CalibrationSource::ALL
            .get(calibration)
            .copied()
            .unwrap_or(CalibrationSource::ALL[0])
    }

    pub(crate) fn unpack(self) -> RowTraits {
        let verdict = |bits: u32, key: &'static str| match bits & 3 {
            0 => FilterFlag::Keep,
            1 => FilterFlag::Exclude,
            _ => FilterFlag::Unhashable(key),
        };
        let some = |at: u32| (at != Self::NONE).then_some(at);
        let nature = ((self.flags >> 8) & 0xff) as usize;
        let modality = ((self.flags >> 16) & 0xff) as usize;
        let calibration = ((self.flags >> 24) & 0xf) as usize;
        RowTraits {
            narrative: self.flags & 1 != 0,
            claim: self.is_claim(),
            derived: self.flags & 2 != 0,
            calibration_source: CalibrationSource::ALL
                .get(calibration)
                .copied()
                .unwrap_or(CalibrationSource::ALL[0]),
            stance: self.flags & 4 != 0,
            document_meta: verdict(self.flags >> 4, keys::SCOPE_ACTION),
            non_asserted: verdict(self.flags >> 6, keys::POLARITY),
            uncertainty_nature: UncertaintyNature::ALL
                .get(nature)
                .copied()
                .unwrap_or(UncertaintyNature::ALL[0]),
            assertion_modality: AssertionModality::ALL
                .get(modality)
                .copied()
                .unwrap_or(AssertionModality::ALL[0]),
            asserted_at_micros: self.asserted_at_micros,
            extractor: some(self.extractor),
            source: (self.flags & 8 != 0).then(|| (self.entry, some(self.snapshot))),
            source_key: self.source_key,
        }
    }

    /// Whether every field is one `pack` can produce, with string indexes below
    /// `strings`.
    pub(crate) fn is_valid(&self, strings: usize) -> bool {
        let index_ok = |at: u32| (at as usize) < strings;
        let optional_ok = |at: u32| at == Self::NONE || index_ok(at);
        let has_source = self.flags & 8 != 0;
        self.flags >> 29 == 0
            // A narrative is not a claim.
            && !(self.is_narrative() && self.is_claim())
            && ((self.flags >> 24) & 0xf) < CalibrationSource::ALL.len() as u32
            && (self.flags >> 4) & 3 != 3
            && (self.flags >> 6) & 3 != 3
            && ((self.flags >> 8) & 0xff) < UncertaintyNature::ALL.len() as u32
            && ((self.flags >> 16) & 0xff) < AssertionModality::ALL.len() as u32
            && optional_ok(self.extractor)
            && if has_source {
                index_ok(self.entry) && optional_ok(self.snapshot)
            } else {
                self.entry == Self::NONE && self.snapshot == Self::NONE
            }
            && index_ok(self.source_key)
            && self.reserved == 0
    }
}
