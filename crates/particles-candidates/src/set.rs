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
    half::{HalfOrigin, HalfVectors, HalfView, StoredHalf},
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
    #[inline]
    pub fn confidence(&self, row: usize) -> f64 {
        self.confidence[row]
    }

    /// Whether the row's vector is of the current embedding model.
    pub fn model_current(&self, row: usize) -> bool {
        self.model_current[row] != 0
    }

    /// The row's vector.
    #[inline]
    pub fn vector(&self, row: usize) -> &[f32] {
        &self.vectors[self.offsets[row] as usize..self.offsets[row + 1] as usize]
    }

    /// The row's vector norm (einsum order, f32 square root).
    #[inline]
    pub fn norm(&self, row: usize) -> f32 {
        self.norms[row]
    }

    /// The row's integrity check, as stored ([`row_check`] of its vector and norm
    /// when it was added).
    #[inline]
    pub fn check(&self, row: usize) -> u32 {
        self.checks[row]
    }

    /// The row's traits as stored (what [`crate::RowFilter`] tests).
    #[inline]
    pub(crate) fn packed_traits(&self, row: usize) -> PackedTraits {
        self.traits[row]
    }

    /// Whether the row is a narrative (its traits' flag, without unpacking
    /// them: the scan's score bound reads it for every row).
    #[inline]
    pub fn narrative(&self, row: usize) -> bool {
        self.traits[row].is_narrative()
    }

    /// Whether the row is derived (has premises), without unpacking its traits.
    #[inline]
    pub fn derived(&self, row: usize) -> bool {
        self.traits[row].is_derived()
    }

    /// The row's extractor id (interned), without unpacking its traits.
    pub fn extractor(&self, row: usize) -> Option<u32> {
        self.traits[row].extractor()
    }

    /// The row's calibration source, without unpacking its other traits.
    pub fn calibration_source(&self, row: usize) -> particles_model::CalibrationSource {
        self.traits[row].calibration_source()
    }

    /// The row's traits.
    #[inline]
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
        self.claims.map().get(self.id(row)).map(Arc::as_ref)
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
            + self.checks.heap_bytes()
            + self.strings.strings.heap_bytes()
            + self.half.get().map_or(0, HalfVectors::heap_bytes)
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
            checks: &self.checks,
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
        let mut origin = HalfOrigin::Present;
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
            } else {
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
        self.half.get().map(|copy| HalfView {
            offsets: &self.offsets,
            copy,
        })
    }

    fn build_half(&self) -> HalfVectors {
        let rows = self.len();
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
                            part.push(self.vector(row));
                            if row_check(self.vector(row), self.norm(row)) != self.check(row) {
                                part.forget_last_interval();
                            }
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
            let mut dense: HashMap<Option<(u32, Option<u32>)>, u32, foldhash::fast::RandomState> =
                HashMap::default();
            static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            let mut index = SourceIndex {
                of_row: Vec::with_capacity(self.len()),
                keys: Vec::new(),
                id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            };
            for row in 0..self.len() {
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
        self.vectors.to_mut().extend_from_slice(from.vector(row));
        self.push_row_meta(from, row, remap, self.vectors.len() as u64);
    }

    /// [`CandidateSet::push_columns_of`] but for the vector: every column else,
    /// the row's vector ending at `end` in a vector column filled apart.
    fn push_row_meta(&mut self, from: &CandidateSet, row: usize, remap: Option<&[u32]>, end: u64) {
        self.sources.take();
        self.half.take();
        self.stored_half = None;
        self.particles.take();
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
        self.checks.push(from.checks[row]);
        self.offsets.push(end);
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
        let key = |set: &CandidateSet, row: usize| (set.confidence[row], set.rowids[row]);
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
                let span = source.offsets[first] as usize..source.offsets[first + rows] as usize;
                let len = span.len();
                into[at..at + len].copy_from_slice(&source.vectors[span]);
                at += len;
            }
        });
        if let Some(old) = self.half.get() {
            set.half
                .get_or_init(|| self.carry_half(old, &set, &old_rows));
        }
        let ids: HashSet<&str> = removed
            .iter()
            .filter(|&&row| row < self.len())
            .map(|&row| self.id(row))
            .collect();
        let mut premises = self.premises.clone();
        let mut claims = self.claims.map().clone();
        for id in &ids {
            premises.remove(*id);
            claims.remove(*id);
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
    /// The half copy of `new` (this set `replaced`): kept rows copied from `old`,
    /// added rows converted, so a delta costs a copy, not a conversion.
    fn carry_half(&self, old: &HalfVectors, new: &CandidateSet, old_rows: &[u32]) -> HalfVectors {
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
                copy.push(new.vector(row));
                if row_check(new.vector(row), new.norm(row)) != new.check(row) {
                    copy.forget_last_interval();
                }
                row += 1;
                continue;
            }
            // A run of rows that were consecutive in the old set: one copy.
            let mut rows = 1;
            while from_old
                .get(row + rows)
                .is_some_and(|&next| next != u32::MAX && next == first + rows as u32)
            {
                rows += 1;
            }
            let first = first as usize;
            let span = self.offsets[first] as usize..self.offsets[first + rows] as usize;
            copy.push_run_from(old, span, first..first + rows);
            row += rows;
        }
        copy
    }
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
}
