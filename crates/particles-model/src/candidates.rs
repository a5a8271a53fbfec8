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

use std::collections::{HashMap, HashSet};

use crate::{
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

/// Interned strings.
#[derive(Debug, Clone, Default)]
struct Interner {
    index: HashMap<String, u32>,
    strings: Vec<String>,
}

impl Interner {
    fn intern(&mut self, text: &str) -> u32 {
        if let Some(&at) = self.index.get(text) {
            return at;
        }
        let at = u32::try_from(self.strings.len()).expect("fewer than 2^32 distinct strings");
        self.strings.push(text.to_owned());
        self.index.insert(text.to_owned(), at);
        at
    }
}

/// Candidates in columns. Row `i` of every column is the same particle.
#[derive(Debug, Clone, Default)]
pub struct CandidateSet {
    ids: Vec<String>,
    rowids: Vec<i64>,
    confidence: Vec<f64>,
    model_current: Vec<bool>,
    traits: Vec<RowTraits>,
    /// Each row's vector norm, `sqrt(einsum_dot(v, v))` in f32: query-independent,
    /// so computed once when the row is added.
    norms: Vec<f32>,
    /// Start of each row's vector in `vectors`; row `i` spans
    /// `offsets[i]..offsets[i + 1]`.
    offsets: Vec<usize>,
    vectors: Vec<f32>,
    premises: HashMap<String, Vec<String>>,
    claims: HashMap<String, StructuredClaim>,
    strings: Interner,
}

impl CandidateSet {
    /// An empty set.
    pub fn new() -> CandidateSet {
        CandidateSet {
            offsets: vec![0],
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
            self.claims.insert(particle.id.clone(), claim.clone());
        }
        if traits.derived {
            self.premises.insert(
                particle.id.clone(),
                particle.premise_ids().map(str::to_owned).collect(),
            );
        }
        self.ids.push(particle.id.clone());
        self.rowids.push(rowid);
        self.confidence.push(particle.confidence.value);
        self.model_current.push(model == EMBEDDING_MODEL_ID);
        self.traits.push(traits);
        self.norms.push(crate::einsum_dot(vector, vector).sqrt());
        self.vectors.extend_from_slice(vector);
        self.offsets.push(self.vectors.len());
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
        &self.ids[row]
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
        self.model_current[row]
    }

    /// The row's vector.
    pub fn vector(&self, row: usize) -> &[f32] {
        &self.vectors[self.offsets[row]..self.offsets[row + 1]]
    }

    /// The row's vector norm (einsum order, f32 square root).
    pub fn norm(&self, row: usize) -> f32 {
        self.norms[row]
    }

    /// The row's traits.
    pub fn traits(&self, row: usize) -> &RowTraits {
        &self.traits[row]
    }

    /// An interned string.
    pub fn string(&self, at: u32) -> &str {
        &self.strings.strings[at as usize]
    }

    /// The premise ids of a derived row, in provenance order.
    pub fn premises(&self, row: usize) -> &[String] {
        self.premises.get(&self.ids[row]).map_or(&[], Vec::as_slice)
    }

    /// The row's structured claim, if any.
    pub fn structured_claim(&self, row: usize) -> Option<&StructuredClaim> {
        self.claims.get(&self.ids[row])
    }

    /// The row of a particle id, by linear scan (for tests and small sets).
    pub fn position(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|x| x == id)
    }

    /// Heap bytes held, approximately: vectors, columns, ids and interned strings.
    pub fn heap_bytes(&self) -> usize {
        let strings: usize = self.ids.iter().map(|s| s.capacity() + 24).sum::<usize>()
            + self
                .strings
                .strings
                .iter()
                .map(|s| 2 * s.capacity() + 56)
                .sum::<usize>();
        let premises: usize = self
            .premises
            .iter()
            .map(|(k, v)| k.capacity() + v.iter().map(|p| p.capacity() + 24).sum::<usize>() + 48)
            .sum();
        self.vectors.capacity() * 4
            + self.offsets.capacity() * 8
            + self.rowids.capacity() * 8
            + self.confidence.capacity() * 8
            + self.model_current.capacity()
            + self.traits.capacity() * std::mem::size_of::<RowTraits>()
            + self.norms.capacity() * 4
            + strings
            + premises
    }

    /// Sorts rows by `(confidence, rowid)` ascending: the loader's order, which every
    /// tie in the ranking falls back on.
    pub fn sort_by_order_key(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| {
            self.confidence[a]
                .total_cmp(&self.confidence[b])
                .then(self.rowids[a].cmp(&self.rowids[b]))
        });
        if order.iter().enumerate().all(|(i, &row)| i == row) {
            return;
        }
        *self = self.select(&order);
    }

    /// A new set of the given rows, in the given order.
    pub fn select(&self, rows: &[usize]) -> CandidateSet {
        let mut out = CandidateSet::new();
        out.strings = self.strings.clone();
        for &row in rows {
            out.ids.push(self.ids[row].clone());
            out.rowids.push(self.rowids[row]);
            out.confidence.push(self.confidence[row]);
            out.model_current.push(self.model_current[row]);
            out.traits.push(self.traits[row]);
            out.norms.push(self.norms[row]);
            out.vectors.extend_from_slice(self.vector(row));
            out.offsets.push(out.vectors.len());
            if let Some(premises) = self.premises.get(&self.ids[row]) {
                out.premises.insert(self.ids[row].clone(), premises.clone());
            }
            if let Some(claim) = self.claims.get(&self.ids[row]) {
                out.claims.insert(self.ids[row].clone(), claim.clone());
            }
        }
        out
    }

    /// This set without the rows whose id is in `ids`, followed by the rows of
    /// `added` (re-interned), then sorted by the order key. The delta refresh of a
    /// cache.
    pub fn replaced(&self, ids: &HashSet<String>, added: &CandidateSet) -> CandidateSet {
        let keep: Vec<usize> = (0..self.len())
            .filter(|&row| !ids.contains(&self.ids[row]))
            .collect();
        let mut out = self.select(&keep);
        for row in 0..added.len() {
            let traits = *added.traits(row);
            let mut reintern = |at: u32| out.strings.intern(added.string(at));
            let traits = RowTraits {
                extractor: traits.extractor.map(&mut reintern),
                source: traits
                    .source
                    .map(|(e, s)| (reintern(e), s.map(&mut reintern))),
                source_key: reintern(traits.source_key),
                ..traits
            };
            out.ids.push(added.ids[row].clone());
            out.rowids.push(added.rowids[row]);
            out.confidence.push(added.confidence[row]);
            out.model_current.push(added.model_current[row]);
            out.traits.push(traits);
            out.norms.push(added.norms[row]);
            out.vectors.extend_from_slice(added.vector(row));
            out.offsets.push(out.vectors.len());
            if let Some(premises) = added.premises.get(&added.ids[row]) {
                out.premises
                    .insert(added.ids[row].clone(), premises.clone());
            }
        }
        out.sort_by_order_key();
        out
    }
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
