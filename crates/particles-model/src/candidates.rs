//! Query candidates in a columnar layout made for the scan.
//!
//! A [`CandidateSet`] holds what ranking needs of each candidate, and nothing it does
//! not: the id, rowid and confidence (the order key), the embedding-model check, the
//! vector (all vectors in one contiguous `f32` buffer), and [`RowTraits`], a small
//! fixed-size record of what the filters and the score read from the particle
//! (property flags, enums, the first source ref, the extractor, ...). Strings that
//! repeat across rows (extractor names, entry and snapshot ids) are interned.
//!
//! Loaders fill a set from hydrated particles; a query then touches no JSON and
//! allocates nothing per candidate. Hits are materialised as full particles only at
//! the end, by id.

use std::{
    collections::{HashMap, HashSet},
    sync::OnceLock,
};

use crate::{
    column::{Column, StrColumn},
    AssertionModality, Particle, ParticleType, StructuredClaim, UncertaintyNature,
    EMBEDDING_MODEL_ID,
};

/// The outcome of a filter test that the reference does as a set-membership test:
/// it can hold, not hold, or raise (`TypeError`) on a list or object value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterFlag {
    /// The filter does not exclude the particle.
    Keep,
    /// The filter excludes the particle.
    Exclude,
    /// The reference raises on this particle's property value (named by the key).
    Unhashable(&'static str),
}

/// The property keys the default filters read.
pub mod keys {
    /// `extraction:scope`.
    pub const SCOPE: &str = "extraction:scope";
    /// `extraction:scope_action`.
    pub const SCOPE_ACTION: &str = "extraction:scope_action";
    /// `extraction:polarity`.
    pub const POLARITY: &str = "extraction:polarity";
    /// `stance:holder`.
    pub const STANCE_HOLDER: &str = "stance:holder";
}

impl Particle {
    /// Whether the document-meta filter excludes this particle: non-empty properties
    /// with scope `DOCUMENT_META` and an action other than `observe` or
    /// `source_exempt`.
    pub fn document_meta_flag(&self) -> FilterFlag {
        use serde_json::Value;
        let Some(properties) = self.properties.as_ref().filter(|p| !p.is_empty()) else {
            return FilterFlag::Keep;
        };
        if properties.get(keys::SCOPE).and_then(Value::as_str) != Some("DOCUMENT_META") {
            return FilterFlag::Keep;
        }
        match properties.get(keys::SCOPE_ACTION) {
            Some(Value::Array(_) | Value::Object(_)) => FilterFlag::Unhashable(keys::SCOPE_ACTION),
            Some(Value::String(action)) if action == "observe" || action == "source_exempt" => {
                FilterFlag::Keep
            }
            _ => FilterFlag::Exclude,
        }
    }

    /// Whether the polarity filter excludes this particle: a `DECLINED` or
    /// `HYPOTHETICAL` polarity.
    pub fn non_asserted_flag(&self) -> FilterFlag {
        use serde_json::Value;
        let Some(properties) = self.properties.as_ref().filter(|p| !p.is_empty()) else {
            return FilterFlag::Keep;
        };
        match properties.get(keys::POLARITY) {
            Some(Value::Array(_) | Value::Object(_)) => FilterFlag::Unhashable(keys::POLARITY),
            Some(Value::String(polarity))
                if polarity == "DECLINED" || polarity == "HYPOTHETICAL" =>
            {
                FilterFlag::Exclude
            }
            _ => FilterFlag::Keep,
        }
    }

    /// Whether the particle carries a stance marker (a non-empty `stance:holder`
    /// string); stances never rank.
    pub fn has_stance_marker(&self) -> bool {
        self.properties
            .as_ref()
            .and_then(|p| p.get(keys::STANCE_HOLDER))
            .and_then(serde_json::Value::as_str)
            .is_some_and(|holder| !holder.is_empty())
    }
}

/// The fixed-size part of a candidate that filters and scoring read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowTraits {
    /// `particle_type == NARRATIVE` (its score is demoted).
    pub narrative: bool,
    /// The confidence is `DERIVED` from premises.
    pub derived: bool,
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
/// 8-15 the uncertainty nature and 16-23 the assertion modality (indexes into their
/// `ALL` lists). `NONE` marks an absent interned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct PackedTraits {
    asserted_at_micros: i64,
    flags: u32,
    extractor: u32,
    entry: u32,
    snapshot: u32,
    source_key: u32,
    reserved: u32,
}

impl PackedTraits {
    const NONE: u32 = u32::MAX;

    fn pack(t: &RowTraits) -> PackedTraits {
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
            ) << 16;
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

    fn unpack(self) -> RowTraits {
        let verdict = |bits: u32, key: &'static str| match bits & 3 {
            0 => FilterFlag::Keep,
            1 => FilterFlag::Exclude,
            _ => FilterFlag::Unhashable(key),
        };
        let some = |at: u32| (at != Self::NONE).then_some(at);
        let nature = ((self.flags >> 8) & 0xff) as usize;
        let modality = ((self.flags >> 16) & 0xff) as usize;
        RowTraits {
            narrative: self.flags & 1 != 0,
            derived: self.flags & 2 != 0,
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
    fn is_valid(&self, strings: usize) -> bool {
        let index_ok = |at: u32| (at as usize) < strings;
        let optional_ok = |at: u32| at == Self::NONE || index_ok(at);
        let has_source = self.flags & 8 != 0;
        self.flags >> 24 == 0
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

/// Interned strings; the lookup index is built on first use, so a set read from a
/// sidecar pays for it only when it is extended.
#[derive(Debug, Clone, Default)]
struct Interner {
    strings: StrColumn,
    index: Option<HashMap<String, u32>>,
}

impl Interner {
    fn intern(&mut self, text: &str) -> u32 {
        let strings = &self.strings;
        let index = self.index.get_or_insert_with(|| {
            (0..strings.len())
                .map(|at| (strings.get(at).to_owned(), at as u32))
                .collect()
        });
        if let Some(&at) = index.get(text) {
            return at;
        }
        let at = u32::try_from(self.strings.len()).expect("fewer than 2^32 distinct strings");
        self.strings.push(text);
        index.insert(text.to_owned(), at);
        at
    }
}

/// A predicate over bytes.
pub type BytesPredicate = dyn Fn(&[u8]) -> bool + Send + Sync;

/// Checks bytes read back from a sidecar (its section checksum).
#[derive(Clone)]
pub struct BytesCheck(pub std::sync::Arc<BytesPredicate>);

impl std::fmt::Debug for BytesCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BytesCheck")
    }
}

/// Structured claims by particle id: parsed at build, or kept as JSON (from a
/// sidecar) and checked and parsed on first use, since only claim filters read
/// them (at a million rows they are 160 MB that a query without claim filters
/// need not hash).
#[derive(Debug, Clone, Default)]
struct Claims {
    parsed: OnceLock<(HashMap<String, StructuredClaim>, bool)>,
    json: Option<Column<u8>>,
    check: Option<BytesCheck>,
}

impl Claims {
    /// The claims, and whether they are intact (checksum and parse).
    fn load(&self) -> &(HashMap<String, StructuredClaim>, bool) {
        self.parsed.get_or_init(|| match &self.json {
            None => (HashMap::new(), true),
            Some(json) => {
                if self.check.as_ref().is_some_and(|check| !(check.0)(json)) {
                    return (HashMap::new(), false);
                }
                match serde_json::from_slice(json) {
                    Ok(map) => (map, true),
                    Err(_) => (HashMap::new(), false),
                }
            }
        })
    }

    fn map(&self) -> &HashMap<String, StructuredClaim> {
        &self.load().0
    }

    fn map_mut(&mut self) -> &mut HashMap<String, StructuredClaim> {
        self.map();
        self.json = None;
        &mut self.parsed.get_mut().expect("initialised by map() above").0
    }
}

/// Candidates in columns. Row `i` of every column is the same particle.
///
/// Columns are owned when a loader fills the set, or views of a memory-mapped
/// sidecar ([`CandidateSet::from_columns`]); either way the scan reads slices.
#[derive(Debug, Clone, Default)]
pub struct CandidateSet {
    ids: StrColumn,
    rowids: Column<i64>,
    confidence: Column<f64>,
    model_current: Column<u8>,
    traits: Column<PackedTraits>,
    /// Each row's vector norm, `sqrt(einsum_dot(v, v))` in f32: query-independent,
    /// so computed once when the row is added.
    norms: Column<f32>,
    /// Start of each row's vector in `vectors`; row `i` spans
    /// `offsets[i]..offsets[i + 1]`.
    offsets: Column<u64>,
    vectors: Column<f32>,
    premises: HashMap<String, Vec<String>>,
    claims: Claims,
    strings: Interner,
}

/// Every column of a set, owned or viewed, for building one from a sidecar read
/// back ([`CandidateSet::from_columns`]).
#[derive(Debug, Clone, Default)]
pub struct CandidateColumns {
    /// Particle ids.
    pub ids: StrColumn,
    /// Rowids.
    pub rowids: Column<i64>,
    /// Confidence values.
    pub confidence: Column<f64>,
    /// 1 when the vector is of the current model, else 0.
    pub model_current: Column<u8>,
    /// Packed traits.
    pub traits: Column<PackedTraits>,
    /// Vector norms.
    pub norms: Column<f32>,
    /// Vector start offsets, one more than rows.
    pub offsets: Column<u64>,
    /// The vectors back to back.
    pub vectors: Column<f32>,
    /// Interned strings.
    pub strings: StrColumn,
    /// Premise ids of derived rows, by particle id.
    pub premises: HashMap<String, Vec<String>>,
    /// Structured claims, a JSON object by particle id.
    pub claims_json: Column<u8>,
    /// Checks the claims' bytes before their first parse.
    pub claims_check: Option<BytesCheck>,
}

/// Borrowed views of every column of a set ([`CandidateSet::column_slices`]).
#[derive(Debug, Clone, Copy)]
pub struct ColumnSlices<'a> {
    /// Particle ids: bytes and end offsets.
    pub ids: (&'a [u8], &'a [u64]),
    /// Rowids.
    pub rowids: &'a [i64],
    /// Confidence values.
    pub confidence: &'a [f64],
    /// 1 when the vector is of the current model, else 0.
    pub model_current: &'a [u8],
    /// Packed traits.
    pub traits: &'a [PackedTraits],
    /// Vector norms.
    pub norms: &'a [f32],
    /// Vector start offsets, one more than rows.
    pub offsets: &'a [u64],
    /// The vectors back to back.
    pub vectors: &'a [f32],
    /// Interned strings: bytes and end offsets.
    pub strings: (&'a [u8], &'a [u64]),
    /// Premise ids of derived rows, by particle id.
    pub premises: &'a HashMap<String, Vec<String>>,
}

/// Why columns do not form a candidate set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("inconsistent candidate columns: {0}")]
pub struct ColumnsError(pub &'static str);

impl CandidateSet {
    /// An empty set.
    pub fn new() -> CandidateSet {
        CandidateSet {
            offsets: vec![0].into(),
            ..CandidateSet::default()
        }
    }

    /// Appends a candidate: its rowid, the hydrated particle, its decoded vector and
    /// its stored embedding model id (`None` or empty means the legacy id).
    pub fn push(
        &mut self,
        rowid: i64,
        particle: &Particle,
        vector: &[f32],
        model_id: Option<&str>,
    ) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let model = model_id
            .filter(|m| !m.is_empty())
            .unwrap_or(crate::LEGACY_EMBEDDING_MODEL_ID);
        let source = particle.first_source_ref().map(|r| {
            let entry = self.strings.intern(&r.corpus_entry_id);
            let snapshot = r.snapshot_id.as_deref().map(|s| self.strings.intern(s));
            (entry, snapshot)
        });
        let traits = RowTraits {
            narrative: particle.particle_type == ParticleType::Narrative,
            derived: particle.is_derived(),
            document_meta: particle.document_meta_flag(),
            non_asserted: particle.non_asserted_flag(),
            stance: particle.has_stance_marker(),
            uncertainty_nature: particle.uncertainty_nature,
            assertion_modality: particle.assertion_modality,
            asserted_at_micros: particle.asserted_at.utc_micros(),
            extractor: particle
                .extractor_ref
                .as_ref()
                .map(|r| self.strings.intern(&r.name)),
            source,
            source_key: self.strings.intern(particle.source_key()),
        };
        if let Some(claim) = &particle.structured_claim {
            self.claims
                .map_mut()
                .insert(particle.id.clone(), claim.clone());
        }
        if traits.derived {
            self.premises.insert(
                particle.id.clone(),
                particle.premise_ids().map(str::to_owned).collect(),
            );
        }
        self.ids.push(&particle.id);
        self.rowids.push(rowid);
        self.confidence.push(particle.confidence.value);
        self.model_current
            .push(u8::from(model == EMBEDDING_MODEL_ID));
        self.traits.push(PackedTraits::pack(&traits));
        self.norms.push(crate::einsum_dot(vector, vector).sqrt());
        self.vectors.to_mut().extend_from_slice(vector);
        self.offsets.push(self.vectors.len() as u64);
    }

    /// The number of candidates.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The particle id of row `row`.
    pub fn id(&self, row: usize) -> &str {
        self.ids.get(row)
    }

    /// The row's rowid.
    pub fn rowid(&self, row: usize) -> i64 {
        self.rowids[row]
    }

    /// The row's stored confidence value.
    pub fn confidence(&self, row: usize) -> f64 {
        self.confidence[row]
    }

    /// Whether the row's vector is of the current embedding model.
    pub fn model_current(&self, row: usize) -> bool {
        self.model_current[row] != 0
    }

    /// The row's vector.
    pub fn vector(&self, row: usize) -> &[f32] {
        &self.vectors[self.offsets[row] as usize..self.offsets[row + 1] as usize]
    }

    /// The row's vector norm (einsum order, f32 square root).
    pub fn norm(&self, row: usize) -> f32 {
        self.norms[row]
    }

    /// The row's traits.
    pub fn traits(&self, row: usize) -> RowTraits {
        self.traits[row].unpack()
    }

    /// An interned string.
    pub fn string(&self, at: u32) -> &str {
        self.strings.strings.get(at as usize)
    }

    /// The premise ids of a derived row, in provenance order.
    pub fn premises(&self, row: usize) -> &[String] {
        self.premises.get(self.id(row)).map_or(&[], Vec::as_slice)
    }

    /// Whether the structured claims are intact: always for a built set; for one
    /// read from a sidecar, whether its claims section passes its check and
    /// parses (checked on first use).
    pub fn claims_intact(&self) -> bool {
        self.claims.load().1
    }

    /// The row's structured claim, if any.
    pub fn structured_claim(&self, row: usize) -> Option<&StructuredClaim> {
        self.claims.map().get(self.id(row))
    }

    /// The row of a particle id, by linear scan (for tests and small sets).
    pub fn position(&self, id: &str) -> Option<usize> {
        (0..self.len()).find(|&row| self.id(row) == id)
    }

    /// Heap bytes held, approximately: owned columns, premises and claims. Columns
    /// viewed from a memory map count nothing (the page cache holds them).
    pub fn heap_bytes(&self) -> usize {
        let premises: usize = self
            .premises
            .iter()
            .map(|(k, v)| k.capacity() + v.iter().map(|p| p.capacity() + 24).sum::<usize>() + 48)
            .sum();
        let claims = self.claims.parsed.get().map_or(0, |m| m.0.len() * 512)
            + self.claims.json.as_ref().map_or(0, |j| j.heap_bytes());
        self.ids.heap_bytes()
            + self.vectors.heap_bytes()
            + self.offsets.heap_bytes()
            + self.rowids.heap_bytes()
            + self.confidence.heap_bytes()
            + self.model_current.heap_bytes()
            + self.traits.heap_bytes()
            + self.norms.heap_bytes()
            + self.strings.strings.heap_bytes()
            + self.strings.index.as_ref().map_or(0, |i| i.len() * 64)
            + premises
            + claims
    }

    /// Borrowed views of every column, for writing the set out.
    pub fn column_slices(&self) -> ColumnSlices<'_> {
        ColumnSlices {
            ids: self.ids.parts(),
            rowids: &self.rowids,
            confidence: &self.confidence,
            model_current: &self.model_current,
            traits: &self.traits,
            norms: &self.norms,
            offsets: &self.offsets,
            vectors: &self.vectors,
            strings: self.strings.strings.parts(),
            premises: &self.premises,
        }
    }

    /// The structured claims as one JSON object by particle id, or `None` when
    /// they would not read back equal (a sidecar must not lose a claim).
    pub fn claims_json(&self) -> Option<Vec<u8>> {
        let claims = self.claims.map();
        let json = serde_json::to_vec(claims).ok()?;
        let back: HashMap<String, StructuredClaim> = serde_json::from_slice(&json).ok()?;
        (&back == claims).then_some(json)
    }

    /// A set of the given columns, after checking that they agree: equal lengths,
    /// rising offsets that end at the vector count, packed traits that decode and
    /// point at existing strings.
    ///
    /// # Errors
    ///
    /// [`ColumnsError`] naming the first inconsistency.
    pub fn from_columns(columns: CandidateColumns) -> Result<CandidateSet, ColumnsError> {
        let rows = columns.ids.len();
        if [
            columns.rowids.len(),
            columns.confidence.len(),
            columns.model_current.len(),
            columns.traits.len(),
            columns.norms.len(),
        ]
        .iter()
        .any(|&n| n != rows)
        {
            return Err(ColumnsError("the per-row columns differ in length"));
        }
        if columns.offsets.len() != rows + 1 || columns.offsets.first() != Some(&0) {
            return Err(ColumnsError("the vector offsets do not match the rows"));
        }
        if columns.offsets.windows(2).any(|w| w[0] > w[1])
            || columns.offsets.last().copied() != Some(columns.vectors.len() as u64)
        {
            return Err(ColumnsError(
                "the vector offsets do not rise to the vector count",
            ));
        }
        let strings = columns.strings.len();
        if !columns.traits.iter().all(|t| t.is_valid(strings)) {
            return Err(ColumnsError("a packed trait is out of range"));
        }
        if columns.model_current.iter().any(|&m| m > 1) {
            return Err(ColumnsError("a model flag is neither 0 nor 1"));
        }
        Ok(CandidateSet {
            ids: columns.ids,
            rowids: columns.rowids,
            confidence: columns.confidence,
            model_current: columns.model_current,
            traits: columns.traits,
            norms: columns.norms,
            offsets: columns.offsets,
            vectors: columns.vectors,
            premises: columns.premises,
            claims: Claims {
                parsed: OnceLock::new(),
                json: Some(columns.claims_json),
                check: columns.claims_check,
            },
            strings: Interner {
                strings: columns.strings,
                index: None,
            },
        })
    }

    /// The vectors back to back (row `i` at `offsets[i]..offsets[i + 1]`).
    pub fn vector_data(&self) -> &[f32] {
        &self.vectors
    }

    /// Replaces the vector column with another holding the same values elsewhere
    /// (huge-page backed memory, say).
    ///
    /// # Errors
    ///
    /// [`ColumnsError`] when the lengths differ; the set is unchanged.
    pub fn replace_vectors(&mut self, vectors: Column<f32>) -> Result<(), ColumnsError> {
        if vectors.len() != self.vectors.len() {
            return Err(ColumnsError("the replacement vectors differ in length"));
        }
        self.vectors = vectors;
        Ok(())
    }

    /// Sorts rows by `(confidence, rowid)` ascending: the loader's order, which every
    /// tie in the ranking falls back on.
    pub fn sort_by_order_key(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| {
            order_key_cmp(
                (self.confidence[a], self.rowids[a]),
                (self.confidence[b], self.rowids[b]),
            )
        });
        if order.iter().enumerate().all(|(i, &row)| i == row) {
            return;
        }
        *self = self.select(&order);
    }

    /// The rows in `(confidence, rowid)` order (the loader's order), without moving
    /// them: a set filled in another order is ranked through this permutation, and
    /// written in it, instead of being copied into order.
    pub fn order_by_key(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            order_key_cmp(
                (self.confidence[a], self.rowids[a]),
                (self.confidence[b], self.rowids[b]),
            )
        });
        order
    }

    /// Compares two rows by the loader's order key.
    pub fn cmp_order_key(&self, a: usize, b: usize) -> std::cmp::Ordering {
        order_key_cmp(
            (self.confidence[a], self.rowids[a]),
            (self.confidence[b], self.rowids[b]),
        )
    }

    /// Appends every row of `from` (strings re-interned once), premises and claims
    /// included.
    pub fn append(&mut self, from: &CandidateSet) {
        let remap: Vec<u32> = (0..from.strings.strings.len())
            .map(|at| self.strings.intern(from.strings.strings.get(at)))
            .collect();
        for row in 0..from.len() {
            self.push_row_of(from, row, Some(&remap));
        }
    }

    /// Appends row `row` of `from` without its premises and claims; `remap` maps
    /// `from`'s interned strings to this set's (`None`: they are the same).
    fn push_columns_of(&mut self, from: &CandidateSet, row: usize, remap: Option<&[u32]>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let mut traits = from.traits[row];
        if let Some(remap) = remap {
            let mapped = |at: u32| {
                if at == PackedTraits::NONE {
                    at
                } else {
                    remap[at as usize]
                }
            };
            traits.extractor = mapped(traits.extractor);
            traits.entry = mapped(traits.entry);
            traits.snapshot = mapped(traits.snapshot);
            traits.source_key = mapped(traits.source_key);
        }
        self.ids.push(from.id(row));
        self.rowids.push(from.rowids[row]);
        self.confidence.push(from.confidence[row]);
        self.model_current.push(from.model_current[row]);
        self.traits.push(traits);
        self.norms.push(from.norms[row]);
        self.vectors.to_mut().extend_from_slice(from.vector(row));
        self.offsets.push(self.vectors.len() as u64);
    }

    /// Appends row `row` of `from` with its premises and claim.
    fn push_row_of(&mut self, from: &CandidateSet, row: usize, remap: Option<&[u32]>) {
        self.push_columns_of(from, row, remap);
        let id = from.id(row);
        if let Some(premises) = from.premises.get(id) {
            self.premises.insert(id.to_owned(), premises.clone());
        }
        if let Some(claim) = from.claims.map().get(id) {
            self.claims.map_mut().insert(id.to_owned(), claim.clone());
        }
    }

    /// A new set of the given rows, in the given order.
    pub fn select(&self, rows: &[usize]) -> CandidateSet {
        let mut out = CandidateSet::new();
        out.strings = self.strings.clone();
        let dims = rows.first().map_or(0, |&r| self.vector(r).len());
        out.vectors.to_mut().reserve(rows.len() * dims);
        for &row in rows {
            out.push_row_of(self, row, None);
        }
        out
    }

    /// This set without the rows whose id is in `ids`, followed by the rows of
    /// `added` (re-interned), then sorted by the order key. The delta refresh of a
    /// cache.
    pub fn replaced(&self, ids: &HashSet<String>, added: &CandidateSet) -> CandidateSet {
        let keep: Vec<usize> = (0..self.len())
            .filter(|&row| !ids.contains(self.id(row)))
            .collect();
        let mut out = self.select(&keep);
        let remap: Vec<u32> = (0..added.strings.strings.len())
            .map(|at| out.strings.intern(added.strings.strings.get(at)))
            .collect();
        for row in 0..added.len() {
            out.push_row_of(added, row, Some(&remap));
        }
        out.sort_by_order_key();
        out
    }
}

/// SQLite's `ORDER BY confidence_value, rowid`: floats compare by value (so `-0.0`
/// equals `0.0`; NaN cannot be stored), then rowids.
fn order_key_cmp(a: (f64, i64), b: (f64, i64)) -> std::cmp::Ordering {
    a.0.partial_cmp(&b.0)
        .unwrap_or_else(|| a.0.total_cmp(&b.0))
        .then(a.1.cmp(&b.1))
}

/// What a loader hands the ranking: a candidate set and the rows of it to rank, in
/// `(confidence, rowid)` order.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The candidates (possibly shared with a cache).
    pub set: std::sync::Arc<CandidateSet>,
    /// The rows to rank, in loader order.
    pub rows: Vec<usize>,
    /// ACTIVE rows left out because their vector is of another embedding model.
    pub skipped_other_model: usize,
}

impl Selection {
    /// Every row of `set`, in its order.
    pub fn all(set: CandidateSet, skipped_other_model: usize) -> Selection {
        let rows = (0..set.len()).collect();
        Selection {
            set: std::sync::Arc::new(set),
            rows,
            skipped_other_model,
        }
    }
}
