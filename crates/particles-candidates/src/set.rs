//! The candidate set: every column of the scan, owned or viewed from shared bytes.

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, OnceLock},
};

use particles_model::{
    Particle, ParticleType, StructuredClaim, EMBEDDING_MODEL_ID, LEGACY_EMBEDDING_MODEL_ID,
};

use crate::{
    claims::{BytesCheck, Claims},
    column::{Column, StrColumn},
    filters::{document_meta_flag, has_stance_marker, non_asserted_flag},
    half::{HalfOrigin, HalfPart, HalfVectors, HalfView, StoredHalf},
    interner::Interner,
    traits::{PackedTraits, RowTraits},
};

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
    /// Each row's integrity check: the wrapping sum of its vector's and its norm's
    /// bits ([`row_check`]). The scan recomputes it from what it reads and refuses
    /// a row that differs: a damaged sidecar never ranks silently.
    checks: Column<u32>,
    /// Start of each row's vector in `vectors`; row `i` spans
    /// `offsets[i]..offsets[i + 1]`.
    offsets: Column<u64>,
    vectors: Column<f32>,
    premises: HashMap<String, Vec<String>>,
    claims: Claims,
    strings: Interner,
    /// Each row's first source as a dense index, built on first use
    /// ([`CandidateSet::source_index`]) and dropped when rows change.
    sources: OnceLock<SourceIndex>,
    /// A half-precision copy of the vectors with each row's radius, made when a
    /// long-lived process asks for it ([`CandidateSet::prepare_half`]), carried
    /// over by [`CandidateSet::replaced`], dropped when rows change otherwise.
    half: OnceLock<HalfVectors>,
    /// The half copy a sidecar stored, not yet checked: what
    /// [`CandidateSet::prepare_half`] takes, once it passes its check, instead
    /// of making one. Dropped when rows change.
    stored_half: Option<StoredHalf>,
    /// Every row's particle, hydrated, when a long-lived process keeps them
    /// ([`CandidateSet::keep_particles`]; small sets): a query's hits are then
    /// read from memory. Dropped when rows change.
    particles: OnceLock<Vec<Arc<Particle>>>,
    /// This part's rows' bound inputs ([`RowColumns::bound_input`]), made on
    /// first use and dropped when rows change.
    bound_inputs: OnceLock<Vec<f32>>,
    /// The set this one extends ([`CandidateSet::extended`]), whose rows are
    /// this set's rows `0..base_rows`, shared rather than copied; the columns
    /// above hold only the rows after them (`base_rows + i` is their row `i`).
    /// A base never extends another, so every row is one step away.
    base: Option<Arc<CandidateSet>>,
    base_rows: usize,
}

/// A set's per-row columns that the scan and the score bounds read for every
/// row, as slices of its two parts (its base's and its own; the base's empty
/// for a flat set): a row read is a comparison and a load from slices held in
/// registers, where [`CandidateSet`]'s accessors resolve the part and the
/// column on each call. Same values as those accessors.
#[derive(Debug, Clone, Copy)]
pub struct RowColumns<'a> {
    base_rows: usize,
    confidence: [&'a [f64]; 2],
    traits: [&'a [PackedTraits]; 2],
    norms: [&'a [f32]; 2],
    bound_inputs: [&'a [f32]; 2],
}

impl RowColumns<'_> {
    #[inline(always)]
    fn pick<T: Copy>(&self, parts: [&[T]; 2], row: usize) -> T {
        if row < self.base_rows {
            parts[0][row]
        } else {
            parts[1][row - self.base_rows]
        }
    }

    /// [`CandidateSet::confidence`].
    #[inline(always)]
    pub fn confidence(&self, row: usize) -> f64 {
        self.pick(self.confidence, row)
    }

    /// [`CandidateSet::narrative`].
    #[inline(always)]
    pub fn narrative(&self, row: usize) -> bool {
        self.pick(self.traits, row).is_narrative()
    }

    /// [`CandidateSet::norm`].
    #[inline(always)]
    pub fn norm(&self, row: usize) -> f32 {
        self.pick(self.norms, row)
    }

    /// All a score bound reads of a row: its confidence clamped to `0..=1`
    /// and rounded up to an `f32` (NaN stays NaN), and whether it is a
    /// narrative (kept in the sign bit). Four bytes, where its confidence and
    /// traits are forty: the scan reads this for every row of every question.
    #[inline(always)]
    pub fn bound_input(&self, row: usize) -> (f64, bool) {
        let value = self.pick(self.bound_inputs, row);
        (f64::from(value.abs()), value.is_sign_negative())
    }

    /// [`CandidateSet::packed_traits`].
    #[inline(always)]
    pub(crate) fn packed_traits(&self, row: usize) -> PackedTraits {
        self.pick(self.traits, row)
    }

    /// Calls `f(j, bound confidence, narrative)` for each `rows[j]`, in order
    /// ([`RowColumns::bound_input`]): a flat set's loop reads its slice
    /// directly (the check of the part made once, not per row).
    #[inline(always)]
    pub fn for_each_bound_input(&self, rows: &[usize], mut f: impl FnMut(usize, f64, bool)) {
        if self.base_rows == 0 {
            let inputs = self.bound_inputs[1];
            for (j, &row) in rows.iter().enumerate() {
                let value = inputs[row];
                f(j, f64::from(value.abs()), value.is_sign_negative());
            }
        } else {
            for (j, &row) in rows.iter().enumerate() {
                let (confidence, narrative) = self.bound_input(row);
                f(j, confidence, narrative);
            }
        }
    }
}

/// A row's bound input: `confidence` clamped to `0..=1`, rounded up to an
/// `f32` (so it never bounds less than the exact clamp), its sign bit set
/// for a narrative. A clamped confidence is never negative, so the sign is
/// free; NaN stays NaN (with the sign for a narrative).
fn bound_input(confidence: f64, narrative: bool) -> f32 {
    let up = crate::round_up_f32(confidence.clamp(0.0, 1.0));
    if narrative {
        -up.abs()
    } else {
        up.abs()
    }
}

/// Each row's first source ([`RowTraits::source`]) as a dense index into the set's
/// distinct sources. Scoring that meets most rows (the truncation band: hundreds of
/// thousands at 1M, naming ~31k sources) maps a row to its source by one array
/// read instead of a hash of its key.
#[derive(Debug, Clone, Default)]
pub struct SourceIndex {
    /// Row → index into `keys`.
    pub of_row: Vec<u32>,
    /// The distinct sources as `(entry, snapshot)` interned ids (`None`: no
    /// `SOURCE` ref), in the order of their first row.
    pub keys: Vec<Option<(u32, Option<u32>)>>,
    /// This index's id, unique in the process: what a cache of facts by index
    /// slot is keyed by (a set's rows, and so its slots, change only with a new
    /// index).
    pub id: u64,
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
    /// Row checks ([`row_check`]).
    pub checks: Column<u32>,
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
    /// A stored half copy of the vectors, checked on first use.
    pub half: Option<StoredHalf>,
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
    /// Row checks.
    pub checks: &'a [u32],
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
        self.sources.take();
        self.half.take();
        self.stored_half = None;
        self.particles.take();
        self.bound_inputs.take();
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let model = model_id
            .filter(|m| !m.is_empty())
            .unwrap_or(LEGACY_EMBEDDING_MODEL_ID);
        let source = particle.first_source_ref().map(|r| {
            let entry = self.strings.intern(&r.corpus_entry_id);
            let snapshot = r.snapshot_id.as_deref().map(|s| self.strings.intern(s));
            (entry, snapshot)
        });
        let traits = RowTraits {
            narrative: particle.particle_type == ParticleType::Narrative,
            claim: particle.particle_type == ParticleType::Claim,
            derived: particle.is_derived(),
            calibration_source: particle.confidence.calibration_source,
            document_meta: document_meta_flag(particle),
            non_asserted: non_asserted_flag(particle),
            stance: has_stance_marker(particle),
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
                .insert(particle.id.clone(), Arc::new(claim.clone()));
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
        let norm = crate::einsum::einsum_dot(vector, vector).sqrt();
        self.norms.push(norm);
        self.checks.push(row_check(vector, norm));
        self.vectors.to_mut().extend_from_slice(vector);
        self.offsets.push(self.vectors.len() as u64);
    }

    /// The number of candidates (a base's rows included).
    pub fn len(&self) -> usize {
        self.base_rows + self.ids.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The set holding row `row` in its own columns, and the row there: the
    /// base for rows below `base_rows`, else this set. One comparison, so the
    /// scan's accessors stay as cheap on an extended set as on a flat one.
    ///
    /// The flat case is its own arm: the common set pays one test of a field
    /// that does not change. The scan's per-row loops read [`RowColumns`] and
    /// the [`HalfView`] instead, whose slices are resolved once (measured: the
    /// 1M pass in batches of about four was 7% slower through this accessor
    /// alone, 2.5% with them).
    #[inline(always)]
    fn at(&self, row: usize) -> (&CandidateSet, usize) {
        match &self.base {
            None => (self, row),
            Some(base) if row < self.base_rows => (base, row),
            Some(_) => (self, row - self.base_rows),
        }
    }

    /// Row `row`'s vector in this set's own columns (`row` counted from its
    /// first own row).
    #[inline(always)]
    fn own_vector(&self, row: usize) -> &[f32] {
        &self.vectors[self.offsets[row] as usize..self.offsets[row + 1] as usize]
    }

    /// The particle id of row `row`.
    pub fn id(&self, row: usize) -> &str {
        let (set, row) = self.at(row);
        set.ids.get(row)
    }

    /// The row's rowid.
    pub fn rowid(&self, row: usize) -> i64 {
        let (set, row) = self.at(row);
        set.rowids[row]
    }

    /// The row's stored confidence value.
    #[inline]
    pub fn confidence(&self, row: usize) -> f64 {
        let (set, row) = self.at(row);
        set.confidence[row]
    }

    /// Whether the row's vector is of the current embedding model.
    pub fn model_current(&self, row: usize) -> bool {
        let (set, row) = self.at(row);
        set.model_current[row] != 0
    }

    /// The row's vector.
    #[inline]
    pub fn vector(&self, row: usize) -> &[f32] {
        let (set, row) = self.at(row);
        set.own_vector(row)
    }

    /// The row's vector norm (einsum order, f32 square root).
    #[inline]
    pub fn norm(&self, row: usize) -> f32 {
        let (set, row) = self.at(row);
        set.norms[row]
    }

    /// The row's integrity check, as stored ([`row_check`] of its vector and norm
    /// when it was added).
    #[inline]
    pub fn check(&self, row: usize) -> u32 {
        let (set, row) = self.at(row);
        set.checks[row]
    }

    /// The row's traits as stored (what [`crate::RowFilter`] tests).
    #[inline]
    pub(crate) fn packed_traits(&self, row: usize) -> PackedTraits {
        let (set, row) = self.at(row);
        set.traits[row]
    }

    /// Whether the row is a narrative (its traits' flag, without unpacking
    /// them: the scan's score bound reads it for every row).
    #[inline]
    pub fn narrative(&self, row: usize) -> bool {
        self.packed_traits(row).is_narrative()
    }

    /// Whether the row is a CLAIM particle (the subject coverage gap's count
    /// reads it for each linked row).
    #[inline]
    pub fn claim(&self, row: usize) -> bool {
        self.packed_traits(row).is_claim()
    }

    /// Whether the row is derived (has premises), without unpacking its traits.
    #[inline]
    pub fn derived(&self, row: usize) -> bool {
        self.packed_traits(row).is_derived()
    }

    /// The row's extractor id (interned), without unpacking its traits.
    pub fn extractor(&self, row: usize) -> Option<u32> {
        self.packed_traits(row).extractor()
    }

    /// The row's calibration source, without unpacking its other traits.
    pub fn calibration_source(&self, row: usize) -> particles_model::CalibrationSource {
        self.packed_traits(row).calibration_source()
    }

    /// The row's traits.
    #[inline]
    pub fn traits(&self, row: usize) -> RowTraits {
        self.packed_traits(row).unpack()
    }

    /// An interned string. An extended set's strings are its base's and then
    /// its own rows' new ones, so a base row's ids hold here too.
    pub fn string(&self, at: u32) -> &str {
        self.strings.strings.get(at as usize)
    }

    /// The premise ids of a derived row, in provenance order.
    pub fn premises(&self, row: usize) -> &[String] {
        // Each part's map is keyed by its own rows' ids: a row a delta replaced
        // keeps its old entry in the base, under the same id as its new row.
        let (set, local) = self.at(row);
        set.premises
            .get(set.ids.get(local))
            .map_or(&[], Vec::as_slice)
    }

    /// Whether the structured claims are intact: always for a built set; for one
    /// read from a sidecar, whether its claims section passes its check and
    /// parses (checked on first use).
    pub fn claims_intact(&self) -> bool {
        self.claims.load().1 && self.base.as_ref().is_none_or(|base| base.claims_intact())
    }

    /// The row's structured claim, if any.
    pub fn structured_claim(&self, row: usize) -> Option<&StructuredClaim> {
        let (set, local) = self.at(row);
        set.claims.map().get(set.ids.get(local)).map(Arc::as_ref)
    }

    /// The last row with a particle id, by linear scan (for tests and small
    /// sets; an extended set may still hold rows a delta replaced, which its
    /// owner no longer ranks, and the newest row of an id is the last).
    pub fn position(&self, id: &str) -> Option<usize> {
        (0..self.len()).rev().find(|&row| self.id(row) == id)
    }

    /// The columns a loop over many rows reads ([`RowColumns`]), their slices
    /// resolved once.
    pub fn row_columns(&self) -> RowColumns<'_> {
        fn part(set: &CandidateSet) -> (&[f64], &[PackedTraits], &[f32], &[f32]) {
            (
                &set.confidence,
                &set.traits,
                &set.norms,
                set.own_bound_inputs(),
            )
        }
        let own = part(self);
        let base = self
            .base
            .as_deref()
            .map_or((&[][..], &[][..], &[][..], &[][..]), part);
        RowColumns {
            base_rows: self.base_rows,
            confidence: [base.0, own.0],
            traits: [base.1, own.1],
            norms: [base.2, own.2],
            bound_inputs: [base.3, own.3],
        }
    }

    /// This part's own rows' bound inputs, made on first use (a few ms at 1M
    /// rows, once per set).
    fn own_bound_inputs(&self) -> &[f32] {
        self.bound_inputs.get_or_init(|| {
            self.confidence
                .iter()
                .zip(self.traits.iter())
                .map(|(&confidence, traits)| bound_input(confidence, traits.is_narrative()))
                .collect()
        })
    }

    /// How many of the rows are a base's, shared ([`CandidateSet::extended`]);
    /// 0 for a set that extends none.
    pub fn base_rows(&self) -> usize {
        self.base_rows
    }

    /// The vector values of every row, base rows included.
    pub fn vector_floats(&self) -> usize {
        self.vectors.len() + self.base.as_ref().map_or(0, |base| base.vectors.len())
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
            + self.checks.heap_bytes()
            + self.strings.strings.heap_bytes()
            + self.half.get().map_or(0, HalfVectors::heap_bytes)
            + self.strings.index.as_ref().map_or(0, |i| i.len() * 64)
            + premises
            + claims
            + self.base.as_ref().map_or(0, |base| base.heap_bytes())
    }

    /// Borrowed views of every column, for writing the set out: of this set's
    /// own rows, so of every row only when it extends none
    /// ([`CandidateSet::base_rows`] is 0; compact an extended set first).
    pub fn column_slices(&self) -> ColumnSlices<'_> {
        ColumnSlices {
            ids: self.ids.parts(),
            rowids: &self.rowids,
            confidence: &self.confidence,
            model_current: &self.model_current,
            traits: &self.traits,
            norms: &self.norms,
            checks: &self.checks,
            offsets: &self.offsets,
            vectors: &self.vectors,
            strings: self.strings.strings.parts(),
            premises: &self.premises,
        }
    }

    /// The structured claims as one JSON object by particle id, or `None` when
    /// they would not read back equal (a sidecar must not lose a claim), or
    /// when the set extends another (its claims are in two parts).
    pub fn claims_json(&self) -> Option<Vec<u8>> {
        if self.base.is_some() {
            return None;
        }
        let claims = self.claims.map();
        let json = serde_json::to_vec(claims).ok()?;
        let back: HashMap<String, Arc<StructuredClaim>> = serde_json::from_slice(&json).ok()?;
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
            columns.checks.len(),
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
        if columns.half.as_ref().is_some_and(|half| {
            half.data.len() != columns.vectors.len() || half.radius.len() != rows
        }) {
            return Err(ColumnsError(
                "the half copy's lengths do not match the vectors and rows",
            ));
        }
        Ok(CandidateSet {
            ids: columns.ids,
            rowids: columns.rowids,
            confidence: columns.confidence,
            model_current: columns.model_current,
            traits: columns.traits,
            norms: columns.norms,
            checks: columns.checks,
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
            sources: OnceLock::new(),
            half: OnceLock::new(),
            stored_half: columns.half,
            particles: OnceLock::new(),
            bound_inputs: OnceLock::new(),
            base: None,
            base_rows: 0,
        })
    }

    /// The vectors back to back (row `i` at `offsets[i]..offsets[i + 1]`): this
    /// set's own rows', so every row's only when it extends none.
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

    /// Makes the half-precision copy of the vectors ([`crate::HalfView`]) if
    /// there is none, on every core: one pass over the vectors, and half their
    /// size again in memory. For a process that scans this set many times (a
    /// server, a warm cache): the scan then reads half the bytes. A row whose
    /// integrity check fails gets no interval, so the scan reads it exactly and
    /// reports it.
    ///
    /// A set read from a sidecar that stored its half copy takes that copy (a
    /// view of the file's pages) once its bytes pass their check; one that
    /// fails is made anew, and [`HalfOrigin::StoredDamaged`] says so.
    pub fn prepare_half(&self) -> HalfOrigin {
        // An extended set's base makes (or takes) its own copy; the rows after it
        // are few, so this set converts them.
        let mut origin = self
            .base
            .as_ref()
            .map_or(HalfOrigin::Present, |base| base.prepare_half());
        self.half.get_or_init(|| {
            if let Some(stored) = &self.stored_half {
                let intact = stored
                    .check
                    .as_ref()
                    .is_none_or(|check| (check.0)(bytemuck::cast_slice(&stored.data)));
                if intact {
                    origin = HalfOrigin::Stored;
                    return HalfVectors {
                        data: stored.data.clone(),
                        radius: stored.radius.clone(),
                    };
                }
                origin = HalfOrigin::StoredDamaged;
            } else if self.base.is_none() {
                // An extended set's own rows are converted whatever its base
                // did; the base's origin is the one that says something.
                origin = HalfOrigin::Made;
            }
            self.build_half()
        });
        origin
    }

    /// Whether the stored half copy (from a sidecar) is, bit for bit, the one
    /// [`CandidateSet::prepare_half`] would make from the vectors; `None` when
    /// there is none. A full pass over the vectors: for `sidecar verify`, which
    /// vouches for what a checksum cannot (that the writer wrote the right copy).
    pub fn stored_half_matches(&self) -> Option<bool> {
        let stored = self.stored_half.as_ref()?;
        let made = self.build_half();
        // Bit for bit: the bytes, so a NaN radius equals the same NaN.
        fn bytes<T: bytemuck::Pod>(values: &[T]) -> &[u8] {
            bytemuck::cast_slice(values)
        }
        Some(
            bytes(&made.data) == bytes(&stored.data)
                && bytes(&made.radius) == bytes(&stored.radius),
        )
    }

    /// The half-precision copy, when [`CandidateSet::prepare_half`] made one.
    pub fn half(&self) -> Option<HalfView<'_>> {
        let base = match &self.base {
            Some(base) => Some(HalfPart::new(&base.offsets, base.half.get()?)),
            None => None,
        };
        Some(HalfView {
            base,
            base_rows: self.base_rows,
            own: HalfPart::new(&self.offsets, self.half.get()?),
        })
    }

    /// The half copy of this set's own rows (all of them unless it extends
    /// another).
    fn build_half(&self) -> HalfVectors {
        let rows = self.ids.len();
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, 8);
        let threads = if rows < 16_384 { 1 } else { threads };
        let per = rows.div_ceil(threads.max(1)).max(1);
        let parts: Vec<HalfVectors> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..rows)
                .step_by(per)
                .map(|start| {
                    let end = (start + per).min(rows);
                    scope.spawn(move || {
                        let values = (self.offsets[end] - self.offsets[start]) as usize;
                        let mut part = HalfVectors::with_capacity(values, end - start);
                        for row in start..end {
                            part.push_row(self.own_vector(row), self.norms[row], self.checks[row]);
                        }
                        part
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        });
        if parts.len() == 1 {
            if let Some(part) = parts.into_iter().next() {
                return part;
            }
            return HalfVectors::default();
        }
        let mut whole = HalfVectors::with_capacity(self.vectors.len(), rows);
        for part in parts {
            whole.append(&part);
        }
        whole
    }

    /// Keeps every row's hydrated particle (`particles[row]`), once: a
    /// long-lived process over a small set reads its hits from here. Refused
    /// (`false`) when a particle is not its row's (length or id), or particles
    /// are kept already.
    pub fn keep_particles(&self, particles: Vec<Arc<Particle>>) -> bool {
        if particles.len() != self.len()
            || particles
                .iter()
                .enumerate()
                .any(|(row, particle)| particle.id != self.id(row))
        {
            return false;
        }
        self.particles.set(particles).is_ok()
    }

    /// Row `row`'s particle, when the set keeps them.
    pub fn particle(&self, row: usize) -> Option<&Arc<Particle>> {
        self.particles.get()?.get(row)
    }

    /// Whether the set keeps its rows' particles.
    pub fn keeps_particles(&self) -> bool {
        self.particles.get().is_some()
    }

    /// Each row's first source as a dense index ([`SourceIndex`]), built on the
    /// first call (one pass over the rows) and kept until the rows change.
    pub fn source_index(&self) -> &SourceIndex {
        self.sources.get_or_init(|| {
            static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            let mut index = SourceIndex {
                of_row: Vec::with_capacity(self.len()),
                keys: Vec::new(),
                id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            };
            // An extended set starts from its base's index (built once, kept by
            // the base): its rows keep their slots, and only the own rows are
            // looked up. A delta then costs a copy of four bytes a row here,
            // not a hash of every row's key.
            if let Some(base) = &self.base {
                let from = base.source_index();
                index.of_row.extend_from_slice(&from.of_row);
                index.keys.clone_from(&from.keys);
            }
            let mut dense: HashMap<Option<(u32, Option<u32>)>, u32, foldhash::fast::RandomState> =
                index
                    .keys
                    .iter()
                    .enumerate()
                    .map(|(at, &key)| (key, at as u32))
                    .collect();
            for row in index.of_row.len()..self.len() {
                let key = self.traits(row).source;
                let next = index.keys.len() as u32;
                let at = *dense.entry(key).or_insert_with(|| {
                    index.keys.push(key);
                    next
                });
                index.of_row.push(at);
            }
            index
        })
    }

    /// Sorts rows by `(confidence, rowid)` ascending: the loader's order, which every
    /// tie in the ranking falls back on.
    pub fn sort_by_order_key(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| self.cmp_order_key(a, b));
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
        order.sort_unstable_by(|&a, &b| self.cmp_order_key(a as usize, b as usize));
        order
    }

    /// Compares two rows by the loader's order key.
    pub fn cmp_order_key(&self, a: usize, b: usize) -> std::cmp::Ordering {
        order_key_cmp(
            (self.confidence(a), self.rowid(a)),
            (self.confidence(b), self.rowid(b)),
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
        self.vectors.to_mut().extend_from_slice(from.vector(row));
        self.push_row_meta(from, row, remap, self.vectors.len() as u64);
    }

    /// [`CandidateSet::push_columns_of`] but for the vector: every column else,
    /// the row's vector ending at `end` in a vector column filled apart.
    fn push_row_meta(&mut self, from: &CandidateSet, row: usize, remap: Option<&[u32]>, end: u64) {
        // `remap` maps `from`'s strings, which are its base's too.
        let (from, row) = from.at(row);
        self.sources.take();
        self.half.take();
        self.stored_half = None;
        self.particles.take();
        self.bound_inputs.take();
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
        // Raw columns from here: `from` is a part and `row` its own row (an
        // accessor would map the row again).
        self.ids.push(from.ids.get(row));
        self.rowids.push(from.rowids[row]);
        self.confidence.push(from.confidence[row]);
        self.model_current.push(from.model_current[row]);
        self.traits.push(traits);
        self.norms.push(from.norms[row]);
        self.checks.push(from.checks[row]);
        self.offsets.push(end);
    }

    /// Appends row `row` of `from` with its premises and claim.
    fn push_row_of(&mut self, from: &CandidateSet, row: usize, remap: Option<&[u32]>) {
        self.push_columns_of(from, row, remap);
        let (from, row) = from.at(row);
        let id = from.ids.get(row);
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

    /// [`CandidateSet::replaced_in`] with the vectors in plain heap memory.
    pub fn replaced(&self, removed: &[usize], added: &CandidateSet) -> Replaced {
        self.replaced_in(removed, added, |len, fill| {
            let mut vectors = vec![0.0; len];
            fill(&mut vectors);
            Column::from(vectors)
        })
    }

    /// This set without the rows `removed`, plus the rows of `added`
    /// (re-interned), in the order key's order: the delta refresh of a cache.
    /// The new set's vector column is made by `vectors`: given its length in
    /// floats and what fills it, it returns the column (a long-lived cache gives huge pages, so the scans after a delta
    /// keep them and the delta faults in 2 MiB pages, not 4 KiB ones).
    ///
    /// One pass, one copy: the kept rows (already in order when this set is, as a
    /// long-lived cache's is) are merged with the added rows sorted by key. Keys
    /// are unique (a rowid is one row; a changed row is among `removed`, so its
    /// old version is not kept), so the merge gives the one order a full sort
    /// would. The vectors are copied a run of consecutive kept rows at a time:
    /// a delta of a few rows is a few `memcpy`s of the whole buffer, not a push
    /// per row.
    ///
    /// The caller finds `removed` through its id index, so no kept row's id is
    /// hashed here; premises and claims are cloned map to map (no rehash) and
    /// only the changed ids are removed and inserted.
    pub fn replaced_in(
        &self,
        removed: &[usize],
        added: &CandidateSet,
        vectors: impl FnOnce(usize, &mut dyn FnMut(&mut [f32])) -> Column<f32>,
    ) -> Replaced {
        let key = |set: &CandidateSet, row: usize| (set.confidence(row), set.rowid(row));
        let mut gone = vec![false; self.len()];
        for &row in removed {
            if let Some(flag) = gone.get_mut(row) {
                *flag = true;
            }
        }
        let mut keep: Vec<usize> = (0..self.len()).filter(|&row| !gone[row]).collect();
        let in_order = keep
            .windows(2)
            .all(|w| order_key_cmp(key(self, w[0]), key(self, w[1])).is_le());
        if !in_order {
            keep.sort_by(|&a, &b| order_key_cmp(key(self, a), key(self, b)));
        }
        let mut fresh: Vec<usize> = (0..added.len()).collect();
        fresh.sort_by(|&a, &b| order_key_cmp(key(added, a), key(added, b)));

        let mut set = CandidateSet::new();
        set.strings = self.strings.clone();
        let remap: Vec<u32> = (0..added.strings.strings.len())
            .map(|at| set.strings.intern(added.strings.strings.get(at)))
            .collect();
        let mut old_rows = vec![u32::MAX; self.len()];
        let mut added_rows = vec![u32::MAX; added.len()];
        // The merged order as runs of source rows, each `(from the old set,
        // first row, rows)`; consecutive kept rows extend one run.
        let mut runs: Vec<(bool, usize, usize)> = Vec::new();
        let mut end = 0u64;
        let (mut i, mut j) = (0, 0);
        while i < keep.len() || j < fresh.len() {
            let from_kept = j == fresh.len()
                || (i < keep.len()
                    && order_key_cmp(key(self, keep[i]), key(added, fresh[j])).is_le());
            let at = set.len() as u32;
            let (source, row) = if from_kept {
                old_rows[keep[i]] = at;
                i += 1;
                (self, keep[i - 1])
            } else {
                added_rows[fresh[j]] = at;
                j += 1;
                (added, fresh[j - 1])
            };
            end += source.vector(row).len() as u64;
            set.push_row_meta(source, row, (!from_kept).then_some(&remap[..]), end);
            match runs.last_mut() {
                Some((true, first, rows)) if from_kept && *first + *rows == row => *rows += 1,
                _ => runs.push((from_kept, row, 1)),
            }
        }
        let total = usize::try_from(end).unwrap_or(usize::MAX);
        set.vectors = vectors(total, &mut |into: &mut [f32]| {
            let mut at = 0;
            for &(from_kept, first, rows) in &runs {
                let source = if from_kept { self } else { added };
                for (part, span) in source.parts(first..first + rows) {
                    let span = part.offsets[span.start] as usize..part.offsets[span.end] as usize;
                    let len = span.len();
                    into[at..at + len].copy_from_slice(&part.vectors[span]);
                    at += len;
                }
            }
        });
        if self.half().is_some() {
            set.half.get_or_init(|| self.carry_half(&set, &old_rows));
        }
        // Each part's maps hold its own rows' entries, so a removed row's id
        // leaves its own part's maps only: a replaced base row's id may name
        // the new row after the base.
        let mut premises: HashMap<String, Vec<String>> = HashMap::new();
        let mut claims: HashMap<String, Arc<StructuredClaim>> = HashMap::new();
        let base = self.base.as_deref().map(|base| (base, 0));
        for (part, first) in base.into_iter().chain([(self, self.base_rows)]) {
            let own = first..first + part.ids.len();
            let ids: HashSet<&str> = removed
                .iter()
                .filter(|&row| own.contains(row))
                .map(|&row| part.ids.get(row - first))
                .collect();
            let mut part_premises = part.premises.clone();
            let mut part_claims = part.claims.map().clone();
            for id in &ids {
                part_premises.remove(*id);
                part_claims.remove(*id);
            }
            if premises.is_empty() {
                premises = part_premises;
            } else {
                premises.extend(part_premises);
            }
            if claims.is_empty() {
                claims = part_claims;
            } else {
                claims.extend(part_claims);
            }
        }
        premises.extend(
            added
                .premises
                .iter()
                .map(|(id, premises)| (id.clone(), premises.clone())),
        );
        claims.extend(
            added
                .claims
                .map()
                .iter()
                .map(|(id, claim)| (id.clone(), claim.clone())),
        );
        set.premises = premises;
        if !claims.is_empty() {
            *set.claims.map_mut() = claims;
        }
        Replaced {
            set,
            old_rows,
            added_rows,
        }
    }
}

impl CandidateSet {
    /// The half copy of `new` (this set `replaced`): kept rows copied from this
    /// set's copy (its base's and its own), added rows converted, so a delta
    /// costs a copy, not a conversion.
    fn carry_half(&self, new: &CandidateSet, old_rows: &[u32]) -> HalfVectors {
        let mut from_old = vec![u32::MAX; new.len()];
        for (old_row, &new_row) in old_rows.iter().enumerate() {
            if let Some(slot) = from_old.get_mut(new_row as usize) {
                *slot = old_row as u32;
            }
        }
        let mut copy = HalfVectors::with_capacity(new.vectors.len(), new.len());
        let mut row = 0;
        while row < from_old.len() {
            let first = from_old[row];
            if first == u32::MAX {
                copy.push_row(new.vector(row), new.norm(row), new.check(row));
                row += 1;
                continue;
            }
            // A run of rows that were consecutive in the old set: one copy per
            // part it lies in.
            let mut rows = 1;
            while from_old
                .get(row + rows)
                .is_some_and(|&next| next != u32::MAX && next == first + rows as u32)
            {
                rows += 1;
            }
            let first = first as usize;
            for (part, span) in self.parts(first..first + rows) {
                match part.half.get() {
                    Some(old) => {
                        let values =
                            part.offsets[span.start] as usize..part.offsets[span.end] as usize;
                        copy.push_run_from(old, values, span);
                    }
                    // Not reached: `half()` holds only when every part has
                    // its copy. Converting is right anyway.
                    None => {
                        for local in span {
                            copy.push_row(
                                part.own_vector(local),
                                part.norms[local],
                                part.checks[local],
                            );
                        }
                    }
                }
            }
            row += rows;
        }
        copy
    }

    /// Rows `rows` of this set as runs of its parts' own rows: the base's
    /// (rows below `base_rows`) and this set's own, each with its own row
    /// numbers; empty runs left out.
    fn parts(
        &self,
        rows: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (&CandidateSet, std::ops::Range<usize>)> {
        let split = self.base_rows.clamp(rows.start, rows.end.max(rows.start));
        let base = self
            .base
            .as_deref()
            .filter(|_| rows.start < split)
            .map(|base| (base, rows.start..split));
        let own =
            (split < rows.end).then(|| (self, split - self.base_rows..rows.end - self.base_rows));
        base.into_iter().chain(own)
    }

    /// This set with the rows `removed` left out of its own rows and `added`'s
    /// rows (re-interned) after them, every base row shared: the delta of a
    /// large cache, whose cost is the rows it changes and this set's own rows,
    /// not the base's.
    ///
    /// A flat set becomes the new set's base whole; an extended set's base
    /// stays its base. So the base keeps the rows a delta removed (the
    /// caller no longer ranks them: its order and id index leave them out)
    /// and the new set's own rows hold only live ones, with unique ids. The
    /// new rows are not in loader order: the caller ranks through its own
    /// permutation, and compacts ([`CandidateSet::replaced_in`]) when the
    /// dead and own rows grow.
    pub fn extended(self: &Arc<Self>, removed: &[usize], added: &CandidateSet) -> Extended {
        let (base, base_rows) = match &self.base {
            Some(base) => (Arc::clone(base), self.base_rows),
            None => (Arc::clone(self), self.len()),
        };
        let mut set = CandidateSet::new();
        set.strings = self.strings.clone();
        set.base = Some(base);
        set.base_rows = base_rows;
        let own_before = self.len() - base_rows;
        let mut gone = vec![false; own_before];
        for &row in removed {
            if let Some(flag) = row.checked_sub(base_rows).and_then(|at| gone.get_mut(at)) {
                *flag = true;
            }
        }
        let mut moved = vec![u32::MAX; own_before];
        for (at, slot) in moved.iter_mut().enumerate() {
            if !gone[at] {
                *slot = set.len() as u32;
                set.push_row_of(self, base_rows + at, None);
            }
        }
        let remap: Vec<u32> = (0..added.strings.strings.len())
            .map(|at| set.strings.intern(added.strings.strings.get(at)))
            .collect();
        let mut added_rows = Vec::with_capacity(added.len());
        for row in 0..added.len() {
            added_rows.push(set.len() as u32);
            set.push_row_of(added, row, Some(&remap));
        }
        if self.half().is_some() {
            set.prepare_half();
        }
        Extended {
            set,
            moved,
            added_rows,
        }
    }
}

/// [`CandidateSet::extended`]'s result: the new set, and where the old set's
/// own rows and the added rows went (base rows keep their numbers).
#[derive(Debug)]
pub struct Extended {
    /// The base's rows, then the kept own rows, then the added ones.
    pub set: CandidateSet,
    /// For each of the old set's own rows (row `base_rows + i` at `i`), its row
    /// in `set` (`u32::MAX`: removed). Empty when the old set extended none.
    pub moved: Vec<u32>,
    /// For each row of `added`, its row in `set`.
    pub added_rows: Vec<u32>,
}

/// [`CandidateSet::replaced`]'s result: the new set, and where each row went.
#[derive(Debug)]
pub struct Replaced {
    /// The rows kept and added, in the order key's order.
    pub set: CandidateSet,
    /// For each row of the old set, its row in `set` (`u32::MAX`: removed).
    pub old_rows: Vec<u32>,
    /// For each row of `added`, its row in `set`.
    pub added_rows: Vec<u32>,
}

/// SQLite's `ORDER BY confidence_value, rowid`: floats compare by value (so `-0.0`
/// equals `0.0`; NaN cannot be stored), then rowids.
fn order_key_cmp(a: (f64, i64), b: (f64, i64)) -> std::cmp::Ordering {
    a.0.partial_cmp(&b.0)
        .unwrap_or_else(|| a.0.total_cmp(&b.0))
        .then(a.1.cmp(&b.1))
}

/// A row's integrity check: the wrapping sum of its vector's words and its norm's
/// bits. The scan's kernel computes the vector part from the same loads as the dot
/// product (`einsum_dot_checked`), so checking costs one add per four floats.
pub fn row_check(vector: &[f32], norm: f32) -> u32 {
    crate::einsum::fold_bits(vector).wrapping_add(norm.to_bits())
}

#[cfg(test)]
mod tests {
    use particles_model::parse_particle_json;

    use super::*;

    fn with_source(set: &mut CandidateSet, row: usize, source: Option<(&str, Option<&str>)>) {
        let provenance = match source {
            None => String::new(),
            Some((entry, snapshot)) => format!(
                r#", "provenance": [{{"type": "SOURCE", "corpus_entry_id": "{entry}"{}}}]"#,
                snapshot.map_or(String::new(), |s| format!(r#", "snapshot_id": "{s}""#))
            ),
        };
        let json = format!(
            r#"{{"id": "p{row}", "content": "belief", "confidence": {{"value": 0.5}},
                "uncertainty_nature": "EPISTEMIC", "asserted_by": "test",
                "asserted_at": "2025-01-01T00:00:00"{provenance}}}"#
        );
        let particle = parse_particle_json(&json).unwrap().into_inner();
        set.push(row as i64 + 1, &particle, &[1.0, 0.0], None);
    }

    /// The index names each row's own source, each distinct source once, and a
    /// row added afterwards is indexed too.
    #[test]
    fn the_source_index_maps_each_row_to_its_source() {
        let sources = [
            Some(("e1", Some("s1"))),
            None,
            Some(("e1", Some("s1"))),
            Some(("e1", None)),
            Some(("e2", Some("s1"))),
            None,
        ];
        let mut set = CandidateSet::new();
        for (row, source) in sources.iter().enumerate() {
            with_source(&mut set, row, *source);
        }
        let check = |set: &CandidateSet| {
            let index = set.source_index();
            assert_eq!(index.of_row.len(), set.len());
            for row in 0..set.len() {
                assert_eq!(
                    index.keys[index.of_row[row] as usize],
                    set.traits(row).source
                );
            }
            let distinct: HashSet<_> = index.keys.iter().collect();
            assert_eq!(distinct.len(), index.keys.len(), "each source once");
            index.keys.len()
        };
        assert_eq!(check(&set), 4);
        with_source(&mut set, sources.len(), Some(("e3", Some("s3"))));
        assert_eq!(check(&set), 5, "rebuilt after the rows changed");
        assert_eq!(check(&set.select(&[0, 1])), 2);
    }

    fn push_vector(set: &mut CandidateSet, row: usize, vector: &[f32]) {
        let json = format!(
            r#"{{"id": "p{row}", "content": "belief", "confidence": {{"value": {}}},
                "uncertainty_nature": "EPISTEMIC", "asserted_by": "test",
                "asserted_at": "2025-01-01T00:00:00"}}"#,
            (row % 10) as f64 / 10.0
        );
        let particle = parse_particle_json(&json).unwrap().into_inner();
        set.push(row as i64 + 1, &particle, vector, None);
    }

    /// A delta keeps the half copy: the kept rows' halves copied, the added
    /// rows' converted, the same as a copy made afresh; a row pushed afterwards
    /// drops it.
    #[test]
    fn a_delta_carries_the_half_copy_over() {
        let vector = |row: usize| -> Vec<f32> {
            (0..8)
                .map(|i| ((row * 8 + i) as f32 * 0.37).sin())
                .collect()
        };
        let mut old = CandidateSet::new();
        for row in 0..12 {
            push_vector(&mut old, row, &vector(row));
        }
        old.sort_by_order_key();
        old.prepare_half();
        let mut added = CandidateSet::new();
        for row in 12..15 {
            push_vector(&mut added, row, &vector(row));
        }
        let mut replaced = old.replaced(&[1, 4, 7], &added).set;
        let carried = replaced.half().map(|h| {
            (0..replaced.len())
                .map(|row| (h.vector(row).to_vec(), h.radius(row).to_bits()))
                .collect::<Vec<_>>()
        });
        let mut fresh = replaced.clone();
        fresh.half.take();
        fresh.prepare_half();
        let h = fresh.half().unwrap();
        let expected: Vec<_> = (0..fresh.len())
            .map(|row| (h.vector(row).to_vec(), h.radius(row).to_bits()))
            .collect();
        assert_eq!(carried, Some(expected));
        push_vector(&mut replaced, 20, &vector(20));
        assert!(replaced.half().is_none());
    }

    /// A stored half copy is taken when its check passes, made anew when it
    /// fails (and said so), and `stored_half_matches` tells a copy that passes
    /// its check but is not the vectors' from the right one.
    #[test]
    fn a_stored_half_copy_is_taken_only_when_it_checks() {
        use crate::{claims::BytesCheck, half::HalfOrigin};
        let mut set = CandidateSet::new();
        for row in 0..6 {
            let vector: Vec<f32> = (0..8)
                .map(|i| ((row * 8 + i) as f32 * 0.61).cos())
                .collect();
            push_vector(&mut set, row, &vector);
        }
        let made = set.clone();
        assert_eq!(made.prepare_half(), HalfOrigin::Made);
        assert_eq!(made.prepare_half(), HalfOrigin::Present);
        assert_eq!(made.stored_half_matches(), None);
        let copy = made.half.get().unwrap().clone();
        let with_stored = |data: Vec<half::f16>, passes: bool| {
            let mut with = set.clone();
            with.stored_half = Some(StoredHalf {
                data: Column::from(data),
                radius: copy.radius.clone(),
                check: Some(BytesCheck(std::sync::Arc::new(move |_: &[u8]| passes))),
            });
            with
        };
        let bits = |set: &CandidateSet| {
            let h = set.half().unwrap();
            (
                h.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                h.radii().iter().map(|r| r.to_bits()).collect::<Vec<_>>(),
            )
        };

        let stored = with_stored(copy.data.to_vec(), true);
        assert_eq!(stored.stored_half_matches(), Some(true));
        assert_eq!(stored.prepare_half(), HalfOrigin::Stored);
        assert_eq!(bits(&stored), bits(&made));

        let mut wrong = copy.data.to_vec();
        wrong[3] = half::f16::from_f32(7.0);
        let failing = with_stored(wrong.clone(), false);
        assert_eq!(failing.prepare_half(), HalfOrigin::StoredDamaged);
        assert_eq!(bits(&failing), bits(&made), "made anew from the vectors");

        let passing_but_wrong = with_stored(wrong, true);
        assert_eq!(passing_but_wrong.stored_half_matches(), Some(false));

        // A row pushed drops the stored copy with the rest.
        let mut grown = with_stored(copy.data.to_vec(), true);
        push_vector(&mut grown, 6, &[0.5; 8]);
        assert_eq!(grown.prepare_half(), HalfOrigin::Made);
    }

    /// A belief for the delta oracle: `row` names its id and rowid; its
    /// confidence is one of a few values (ties are ordered by rowid), its source
    /// one of a few entries, and some rows are derived (premises) or carry a
    /// structured claim, so every column and map moves.
    fn delta_row(set: &mut CandidateSet, row: usize, confidence: u8, extra: u8, vector: &[f32]) {
        let derived = extra.is_multiple_of(3);
        let provenance = if derived {
            format!(
                r#"[{{"type": "PARTICLE", "corpus_entry_id": "p{}"}}, {{"type": "PARTICLE", "corpus_entry_id": "q{row}"}}]"#,
                row / 2
            )
        } else {
            format!(
                r#"[{{"type": "SOURCE", "corpus_entry_id": "e{}"}}]"#,
                extra % 4
            )
        };
        let json = format!(
            r#"{{"id": "p{row}", "content": "belief", "confidence": {{"value": {}, "calibration_source": "{}"}},
                "uncertainty_nature": "EPISTEMIC", "asserted_by": "test",
                "asserted_at": "2025-01-01T00:00:00", "provenance": {provenance}}}"#,
            f64::from(confidence % 4) / 4.0,
            if derived {
                "DERIVED"
            } else {
                "EXTRACTOR_DIRECT"
            },
        );
        let mut particle = parse_particle_json(&json).unwrap().into_inner();
        if extra % 5 == 1 {
            let term = |value: &str| particles_model::ClaimTerm {
                kind: particles_model::TermKind::Token,
                value: value.to_owned(),
                datatype: None,
                language: None,
            };
            particle.structured_claim = Some(StructuredClaim {
                subject: term("s"),
                predicate: term("p"),
                object: term(&format!("o{row}")),
                subject_id: None,
                structurizer_id: "test".to_owned(),
                structurizer_version: "1".to_owned(),
                generated_at: particle.asserted_at,
            });
        }
        set.push(row as i64 + 1, &particle, vector, None);
    }

    /// Every column of `set`, row by row, strings resolved: what two sets must
    /// agree on to be the same set.
    #[allow(clippy::type_complexity)]
    fn columns(
        set: &CandidateSet,
    ) -> Vec<(
        String,
        i64,
        u64,
        bool,
        Vec<u32>,
        u32,
        u32,
        String,
        Vec<String>,
        Option<String>,
        Option<(Vec<u16>, u32)>,
    )> {
        (0..set.len())
            .map(|row| {
                let traits = set.traits(row);
                let strings = format!(
                    "{:?} {:?} {}",
                    traits.extractor.map(|at| set.string(at)),
                    traits
                        .source
                        .map(|(e, s)| (set.string(e), s.map(|s| set.string(s)))),
                    set.string(traits.source_key),
                );
                (
                    set.id(row).to_owned(),
                    set.rowids[row],
                    set.confidence[row].to_bits(),
                    set.model_current[row] != 0,
                    set.vector(row).iter().map(|v| v.to_bits()).collect(),
                    set.norm(row).to_bits(),
                    set.check(row),
                    strings,
                    set.premises(row).to_vec(),
                    set.structured_claim(row).map(|c| c.object.value.clone()),
                    set.half().map(|h| {
                        (
                            h.vector(row).iter().map(|v| v.to_bits()).collect(),
                            h.radius(row).to_bits(),
                        )
                    }),
                )
            })
            .collect()
    }

    proptest::proptest! {
        /// A row's bound input never bounds less than its clamped confidence
        /// (NaN stays NaN), and keeps whether it is a narrative.
        #[test]
        fn a_bound_input_bounds_the_clamped_confidence(
            confidence in proptest::prop_oneof![
                proptest::num::f64::ANY,
                -0.5f64..1.5,
                proptest::strategy::Just(f64::NAN),
                proptest::strategy::Just(-0.0),
            ],
            narrative in proptest::bool::ANY,
        ) {
            let value = bound_input(confidence, narrative);
            let (read, is_narrative) = (f64::from(value.abs()), value.is_sign_negative());
            proptest::prop_assert_eq!(is_narrative, narrative);
            let clamped = confidence.clamp(0.0, 1.0);
            if clamped.is_nan() {
                proptest::prop_assert!(read.is_nan());
            } else {
                proptest::prop_assert!(read >= clamped && read <= 1.0, "{read} for {clamped}");
                proptest::prop_assert!(read - clamped <= f64::from(f32::EPSILON));
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// The delta (run copies, cloned maps, the vectors made by the
        /// caller's allocator) equals the set built afresh from the same rows
        /// in the order key's order, row by row, with its half copy made anew;
        /// and each old and added row is found where the delta says it went.
        #[test]
        fn a_delta_equals_the_set_built_afresh(
            old_rows in proptest::collection::vec((0u8..8, 0u8..30), 0..40),
            gone in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..8),
            added_rows in proptest::collection::vec((0u8..8, 0u8..30, proptest::prelude::any::<bool>()), 0..6),
            half in proptest::prelude::any::<bool>(),
        ) {
            let vector = |row: usize| -> Vec<f32> {
                (0..8).map(|i| ((row * 8 + i) as f32 * 0.37).sin()).collect()
            };
            let mut old = CandidateSet::new();
            for (row, &(confidence, extra)) in old_rows.iter().enumerate() {
                delta_row(&mut old, row, confidence, extra, &vector(row));
            }
            old.sort_by_order_key();
            if half {
                old.prepare_half();
            }
            let mut removed: Vec<usize> = if old.is_empty() {
                Vec::new()
            } else {
                gone.iter().map(|at| at.index(old.len())).collect()
            };
            removed.sort_unstable();
            removed.dedup();
            // An added row either changes a removed one (its id and rowid) or
            // is new (ids past the old set's).
            let mut added = CandidateSet::new();
            for (at, &(confidence, extra, changes)) in added_rows.iter().enumerate() {
                let row = match removed.get(at) {
                    Some(&gone_row) if changes => old.rowids[gone_row] as usize - 1,
                    _ => 100 + at,
                };
                delta_row(&mut added, row, confidence, extra, &vector(row + 1000));
            }

            let mut made = 0;
            let delta = old.replaced_in(&removed, &added, |len, fill| {
                made += 1;
                let mut vectors = vec![f32::NAN; len];
                fill(&mut vectors);
                Column::from(vectors)
            });
            proptest::prop_assert_eq!(made, 1);

            let mut order: Vec<(bool, usize)> = (0..old.len())
                .filter(|row| !removed.contains(row))
                .map(|row| (true, row))
                .chain((0..added.len()).map(|row| (false, row)))
                .collect();
            let key = |&(from_old, row): &(bool, usize)| {
                let set = if from_old { &old } else { &added };
                (set.confidence[row], set.rowids[row])
            };
            order.sort_by(|a, b| order_key_cmp(key(a), key(b)));
            let mut fresh = CandidateSet::new();
            for &(from_old, row) in &order {
                let from = if from_old { &old } else { &added };
                let mut one = from.select(&[row]);
                one.half.take();
                fresh.append(&one);
            }
            if half {
                fresh.prepare_half();
            }
            proptest::prop_assert_eq!(columns(&delta.set), columns(&fresh));
            for (row, &to) in delta.old_rows.iter().enumerate() {
                if removed.contains(&row) {
                    proptest::prop_assert_eq!(to, u32::MAX);
                } else {
                    proptest::prop_assert_eq!(delta.set.id(to as usize), old.id(row));
                }
            }
            for (row, &to) in delta.added_rows.iter().enumerate() {
                proptest::prop_assert_eq!(delta.set.id(to as usize), added.id(row));
            }
        }
    }

    /// One version of a particle for [`extended_sets_rank_as_copies_do`]: its
    /// rowid, confidence step, vector seed, source entry and premises.
    #[derive(Debug, Clone)]
    struct Version {
        rowid: i64,
        confidence: u8,
        seed: u32,
        source: u8,
        premises: u8,
    }

    fn push_version(set: &mut CandidateSet, id: &str, v: &Version) {
        let premises: String = (0..v.premises)
            .map(|p| format!(r#", {{"type": "PARTICLE", "corpus_entry_id": "q{p}"}}"#))
            .collect();
        let calibration = if v.premises > 0 {
            r#", "calibration_source": "DERIVED""#
        } else {
            ""
        };
        let json = format!(
            r#"{{"id": "{id}", "content": "belief", "confidence": {{"value": {}{calibration}}},
                "uncertainty_nature": "EPISTEMIC", "asserted_by": "test",
                "asserted_at": "2025-01-01T00:00:00",
                "provenance": [{{"type": "SOURCE", "corpus_entry_id": "e{}"}}{premises}]}}"#,
            f64::from(v.confidence) / 4.0,
            v.source,
        );
        let particle = parse_particle_json(&json).unwrap().into_inner();
        let vector: Vec<f32> = (0..6)
            .map(|i| ((v.seed as usize * 6 + i) as f32 * 0.53).sin())
            .collect();
        set.push(v.rowid, &particle, &vector, None);
    }

    /// What ranking reads of a row, strings resolved.
    fn row_view(set: &CandidateSet, row: usize) -> impl PartialEq + std::fmt::Debug {
        let traits = set.traits(row);
        let half = set
            .half()
            .map(|h| (h.vector(row).to_vec(), h.radius(row).to_bits()));
        (
            set.id(row).to_owned(),
            set.rowid(row),
            set.confidence(row).to_bits(),
            set.vector(row).to_vec(),
            set.norm(row).to_bits(),
            set.check(row),
            traits.source.map(|(entry, _)| set.string(entry).to_owned()),
            set.string(traits.source_key).to_owned(),
            set.premises(row).to_vec(),
            half,
        )
    }

    proptest::proptest! {
        /// The shared-rows delta is the copying delta in another layout: after
        /// any run of deltas (changes, deletions, additions, new strings), the
        /// extended set's live rows in key order read exactly as the copied
        /// set's rows, half copy included, and compacting it gives the copy.
        #[test]
        fn extended_sets_rank_as_copies_do(
            start in proptest::collection::vec((0u8..5, 0u32..1000, 0u8..6, 0u8..3), 1..24),
            deltas in proptest::collection::vec(
                proptest::collection::vec((0usize..40, 0u8..3, 0u8..5, 0u32..1000, 0u8..12, 0u8..3), 0..6),
                1..6,
            ),
            half in proptest::bool::ANY,
        ) {
            use std::collections::BTreeMap;
            let mut live: BTreeMap<String, Version> = BTreeMap::new();
            let mut next_rowid = 1;
            let mut flat = CandidateSet::new();
            for (at, &(confidence, seed, source, premises)) in start.iter().enumerate() {
                let v = Version { rowid: next_rowid, confidence, seed, source, premises };
                next_rowid += 1;
                push_version(&mut flat, &format!("p{at}"), &v);
                live.insert(format!("p{at}"), v);
            }
            flat.sort_by_order_key();
            if half {
                flat.prepare_half();
            }
            let mut shared = Arc::new(flat.clone());
            // The extended set's rows by id (live ones only) and its dead rows.
            let mut rows: HashMap<String, usize> =
                (0..shared.len()).map(|row| (shared.id(row).to_owned(), row)).collect();
            let mut dead: Vec<usize> = Vec::new();
            for delta in deltas {
                let mut added = CandidateSet::new();
                let mut changed: Vec<String> = Vec::new();
                for (pick, action, confidence, seed, source, premises) in delta {
                    let id = format!("p{pick}");
                    if changed.contains(&id) {
                        continue;
                    }
                    changed.push(id.clone());
                    if action == 0 {
                        live.remove(&id);
                        continue;
                    }
                    // A change keeps the rowid; a new id takes a new one.
                    let rowid = live.get(&id).map_or_else(
                        || { next_rowid += 1; next_rowid },
                        |v| v.rowid,
                    );
                    let v = Version { rowid, confidence, seed, source, premises };
                    push_version(&mut added, &id, &v);
                    live.insert(id, v);
                }
                let flat_removed: Vec<usize> = changed
                    .iter()
                    .filter_map(|id| flat.position(id))
                    .collect();
                flat = flat.replaced(&flat_removed, &added).set;
                let removed: Vec<usize> =
                    changed.iter().filter_map(|id| rows.remove(id)).collect();
                let extended = shared.extended(&removed, &added);
                let base_rows = extended.set.base_rows();
                for &row in &removed {
                    if row < base_rows {
                        dead.push(row);
                    }
                }
                for row in rows.values_mut() {
                    if let Some(own) = row.checked_sub(base_rows) {
                        *row = extended.moved[own] as usize;
                        proptest::prop_assert!(*row != u32::MAX as usize);
                    }
                }
                for (at, &row) in extended.added_rows.iter().enumerate() {
                    rows.insert(added.id(at).to_owned(), row as usize);
                }
                shared = Arc::new(extended.set);
                proptest::prop_assert_eq!(shared.half().is_some(), half);

                let mut order: Vec<usize> = rows.values().copied().collect();
                order.sort_by(|&a, &b| shared.cmp_order_key(a, b));
                proptest::prop_assert_eq!(order.len(), flat.len());
                for (at, &row) in order.iter().enumerate() {
                    proptest::prop_assert_eq!(row_view(&shared, row), row_view(&flat, at));
                }
                // The resolved columns read as the accessors do.
                let columns = shared.row_columns();
                for row in 0..shared.len() {
                    proptest::prop_assert_eq!(
                        columns.confidence(row).to_bits(),
                        shared.confidence(row).to_bits()
                    );
                    proptest::prop_assert_eq!(columns.narrative(row), shared.narrative(row));
                    proptest::prop_assert_eq!(columns.norm(row).to_bits(), shared.norm(row).to_bits());
                }
                // The source index, carried from the base's: every row's slot
                // names its own source, each source once.
                let index = shared.source_index();
                proptest::prop_assert_eq!(index.of_row.len(), shared.len());
                for row in 0..shared.len() {
                    proptest::prop_assert_eq!(
                        index.keys[index.of_row[row] as usize],
                        shared.traits(row).source
                    );
                }
                let distinct: HashSet<_> = index.keys.iter().collect();
                proptest::prop_assert_eq!(distinct.len(), index.keys.len());
            }
            let compact = shared.replaced(&dead, &CandidateSet::new()).set;
            proptest::prop_assert_eq!(compact.base_rows(), 0);
            proptest::prop_assert_eq!(compact.len(), flat.len());
            for row in 0..flat.len() {
                proptest::prop_assert_eq!(row_view(&compact, row), row_view(&flat, row));
            }
        }
    }
}
