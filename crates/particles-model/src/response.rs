//! The query response, as the reference defines it (`QueryResponse` and its parts
//! in `core/schema.py` of linkedparticles-core 1.214.1). Fields are declared in the
//! reference's order, so the JSON of a response lists them as the reference's
//! `model_dump(mode="json")` does; `None` is `null`, never absent.
//!
//! Shapes only: the query crate fills them, the CLI and the HTTP engine print them.

use serde::{Deserialize, Serialize};

use crate::{GroupBy, Particle, Status, StatusReason, TermKind, TimeWindow, Timestamp, ValidKind};

/// The whole answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryResponse {
    /// The answer text (generated, a fixed sentence, or the fallback listing).
    pub answer: String,
    /// The hits in rank order, each the full particle.
    pub particles: Vec<Particle>,
    /// Parallel to `particles`: effective confidences (merged for a collapsed
    /// representative).
    pub effective_confidences: Vec<f64>,
    /// Parallel to `particles` on the semantic path: the publication date of each
    /// hit's first source's snapshot.
    pub content_published_ats: Vec<Option<Timestamp>>,
    /// Corpus entries not yet extracted (PENDING or FAILED), store-wide.
    pub coverage_gaps: Vec<String>,
    /// With a subject: what the store knows about it.
    pub subject_coverage_gaps: Vec<SubjectCoverageGap>,
    /// Set when the cut at `top_k` falls inside a run of near scores.
    pub truncation_warning: Option<String>,
    /// With `include_agreement`: each hit's stance positions.
    pub agreement_distributions: Vec<Vec<StancePosition>>,
    /// Set when any agreement distribution is non-empty.
    pub agreement_caveat: Option<String>,
    /// With `include_contestedness` and two or more policies: each hit's reading.
    pub contestedness: Vec<ContestednessReading>,
    /// Parallel to `particles` (when badges are on): each hit's contested badge.
    pub contested: Vec<Option<ContestedBadge>>,
    /// For NARRATIVE hits: their constituents in sequence order.
    pub narrative_constituents: indexmap_like::OrderedMap<Vec<Particle>>,
    /// Echo of the request's `as_of`.
    pub as_of: Option<Timestamp>,
    /// With `as_of`: parallel notes for hits retired since.
    pub as_of_notes: Vec<Option<AsOfNote>>,
    /// With `as_of`: retired candidates left out as undatable.
    pub as_of_excluded_undatable: u64,
    /// Echo of the request's window.
    pub window: Option<TimeWindow>,
    /// With a window: parallel readings.
    pub window_hits: Vec<Option<WindowHit>>,
    /// With a window: what it could and could not judge.
    pub window_coverage: Option<WindowCoverage>,
    /// With `observer_project`: what the observer did.
    pub observer_scope: Option<ObserverScopeNote>,
    /// With claim filters (and in every structural mode): the coverage footer.
    pub claim_coverage: Option<ClaimCoverage>,
    /// The aggregate modes' result.
    pub structural_aggregate: Option<StructuralAggregate>,
    /// The predicate listing's rows.
    pub predicate_vocabulary: Vec<PredicateInfo>,
    /// The vocabulary report.
    pub vocabulary_report: Option<VocabularyReport>,
    /// The relevance disclosure of a semantic query with a vector and hits.
    pub relevance: Option<RelevanceNote>,
    /// The fixed disclosure when ranking ran without a query vector.
    pub ranking_degraded: Option<String>,
    /// Why answer generation failed (the answer is then the fallback listing).
    pub answer_generation_error: Option<String>,
    /// `BUDGET` or `PROVIDER`, exactly when `answer_generation_error` is set.
    pub answer_generation_error_cause: Option<AnswerFailureCause>,
    /// The answer is a no-relevant-knowledge refusal.
    pub answer_refused: bool,
    /// A grounded answer's per-sentence attribution.
    pub answer_attribution: Option<AnswerAttribution>,
}

impl QueryResponse {
    /// A response with nothing in it but `answer`: every list empty, every
    /// optional field null (the reference's defaults).
    pub fn empty(answer: impl Into<String>) -> QueryResponse {
        QueryResponse {
            answer: answer.into(),
            particles: Vec::new(),
            effective_confidences: Vec::new(),
            content_published_ats: Vec::new(),
            coverage_gaps: Vec::new(),
            subject_coverage_gaps: Vec::new(),
            truncation_warning: None,
            agreement_distributions: Vec::new(),
            agreement_caveat: None,
            contestedness: Vec::new(),
            contested: Vec::new(),
            narrative_constituents: indexmap_like::OrderedMap::default(),
            as_of: None,
            as_of_notes: Vec::new(),
            as_of_excluded_undatable: 0,
            window: None,
            window_hits: Vec::new(),
            window_coverage: None,
            observer_scope: None,
            claim_coverage: None,
            structural_aggregate: None,
            predicate_vocabulary: Vec::new(),
            vocabulary_report: None,
            relevance: None,
            ranking_degraded: None,
            answer_generation_error: None,
            answer_generation_error_cause: None,
            answer_refused: false,
            answer_attribution: None,
        }
    }
}

/// A JSON object with string keys that keeps insertion order (the reference's
/// `dict`), without pulling a map crate into the model.
pub mod indexmap_like {
    use serde::{de::MapAccess, ser::SerializeMap, Deserialize, Deserializer, Serialize};

    /// String keys to values, in insertion order.
    #[derive(Debug, Clone, PartialEq)]
    pub struct OrderedMap<V>(pub Vec<(String, V)>);

    impl<V> Default for OrderedMap<V> {
        fn default() -> Self {
            OrderedMap(Vec::new())
        }
    }

    impl<V> OrderedMap<V> {
        /// Whether the map is empty.
        pub fn is_empty(&self) -> bool {
            self.0.is_empty()
        }

        /// The value under `key`.
        pub fn get(&self, key: &str) -> Option<&V> {
            self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
        }

        /// Sets `key`, replacing a value in place or appending.
        pub fn insert(&mut self, key: String, value: V) {
            match self.0.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => self.0.push((key, value)),
            }
        }
    }

    impl<V: Serialize> Serialize for OrderedMap<V> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(self.0.len()))?;
            for (key, value) in &self.0 {
                map.serialize_entry(key, value)?;
            }
            map.end()
        }
    }

    impl<'de, V: Deserialize<'de>> Deserialize<'de> for OrderedMap<V> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            struct Visitor<V>(std::marker::PhantomData<V>);
            impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Visitor<V> {
                type Value = OrderedMap<V>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: MapAccess<'de>>(
                    self,
                    mut access: A,
                ) -> Result<Self::Value, A::Error> {
                    let mut entries = Vec::new();
                    while let Some((key, value)) = access.next_entry()? {
                        entries.push((key, value));
                    }
                    Ok(OrderedMap(entries))
                }
            }
            deserializer.deserialize_map(Visitor(std::marker::PhantomData))
        }
    }
}

/// What kind of subject coverage gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CoverageGapKind {
    /// The query named a subject the registry does not hold.
    NoSubjectMatch,
    /// The subject exists but no ACTIVE CLAIM particle is about it.
    SubjectHasNoParticles,
    /// The subject has particles, but few (or none ranked).
    SubjectHasLowCoverage,
}

/// One subject coverage gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubjectCoverageGap {
    /// The subject's id (`None` for no match).
    pub subject_id: Option<String>,
    /// Its canonical name, when known.
    pub subject_name: Option<String>,
    /// The gap's kind.
    pub kind: CoverageGapKind,
    /// ACTIVE CLAIM particles about the subject.
    pub particle_count: u64,
    /// The reference's fixed sentence.
    pub detail: String,
}

/// One holder's position in a claim's agreement distribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StancePosition {
    /// `ENDORSES` or `DISPUTES`.
    pub kind: String,
    /// The `stance:holder` key.
    pub holder: String,
    /// The stance particle (the citation).
    pub stance_particle_id: String,
    /// The stance particle's own effective confidence.
    pub effective_confidence: f64,
    /// `stance:magnitude`, when numeric.
    pub magnitude: Option<f64>,
}

/// One policy's rendering of a claim's effective confidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRendering {
    /// `local` or the adopted lens's name.
    pub policy: String,
    /// The value under that policy alone.
    pub effective_confidence: f64,
}

/// A claim's lens divergence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContestednessReading {
    /// Max minus min across the policies.
    pub spread: f64,
    /// Per policy, local first.
    pub renderings: Vec<PolicyRendering>,
}

/// The contested badge: which bases fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContestedBadge {
    /// Non-empty, in the order stance, divergence, inconsistency.
    pub bases: Vec<String>,
    /// The open inconsistency record that references the hit.
    pub inconsistency_id: Option<String>,
    /// The agreement caveat, when the stance basis fired.
    pub caveat: Option<String>,
}

/// Which rung of the ladder dated a retirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetirementBasis {
    /// The stored `retired_at` column.
    Stored,
    /// The earliest particle that supersedes it.
    Successor,
    /// The latest retiring operator event naming it.
    Event,
    /// Its `valid_until`, for a `VALIDITY_EXPIRED` retirement.
    ValidUntil,
}

impl RetirementBasis {
    /// The reference's name for the rung.
    pub fn as_str(self) -> &'static str {
        match self {
            RetirementBasis::Stored => "stored",
            RetirementBasis::Successor => "successor",
            RetirementBasis::Event => "event",
            RetirementBasis::ValidUntil => "valid_until",
        }
    }
}

/// The belief that replaced a retired as-of hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Successor {
    /// Its id.
    pub id: String,
    /// Its content.
    pub content: String,
    /// When it was asserted (its stored offset; UTC when naive).
    pub asserted_at: Timestamp,
}

/// Why a hit that is retired now was still believed at T.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AsOfNote {
    /// Its current status.
    pub status: Status,
    /// Its current status reason.
    pub status_reason: Option<StatusReason>,
    /// When it was retired (after T), in its stored offset (UTC when naive).
    pub retired_at: Timestamp,
    /// The rung that dated it.
    pub basis: RetirementBasis,
    /// Its successor, when a particle supersedes it.
    pub successor: Option<Successor>,
}

/// How a claim sits in a world-time window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WindowReading {
    /// It began in the window.
    Began,
    /// A state that began before the window and held in it.
    InForce,
    /// Held at the window, known from an "as of" statement.
    HeldAt,
    /// A coarse anchor (somewhere in a month or year) that meets the window.
    Within,
}

impl WindowReading {
    /// The reference's name.
    pub fn as_str(self) -> &'static str {
        match self {
            WindowReading::Began => "BEGAN",
            WindowReading::InForce => "IN_FORCE",
            WindowReading::HeldAt => "HELD_AT",
            WindowReading::Within => "WITHIN",
        }
    }
}

/// Why a retired state closed when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseBasis {
    /// Its own `valid_until`.
    ValidUntil,
    /// Its successor's start.
    Successor,
    /// Its retirement instant.
    RetiredAt,
}

impl CloseBasis {
    /// The reference's name.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseBasis::ValidUntil => "valid_until",
            CloseBasis::Successor => "successor",
            CloseBasis::RetiredAt => "retired_at",
        }
    }
}

/// An admitted claim's reading of the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowHit {
    /// How it sits in the window.
    pub reading: WindowReading,
    /// Its start (UTC when naive).
    pub valid_from: Timestamp,
    /// Event or state (or unkinded).
    pub valid_kind: Option<ValidKind>,
    /// A retired state's close.
    pub closed_at: Option<Timestamp>,
    /// What closed it.
    pub close_basis: Option<CloseBasis>,
    /// For a claim retired now: its retirement.
    pub retired: Option<AsOfNote>,
    /// The retired original this restatement stands in for.
    pub restates: Option<String>,
}

/// What a window read could and could not judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WindowCoverage {
    /// Dated candidates loaded.
    pub candidates: u64,
    /// Admitted to the window.
    pub admitted: u64,
    /// ACTIVE beliefs without a start, store-wide.
    pub undated: u64,
    /// Dated but unkinded candidates (admitted only as `BEGAN`).
    pub unkinded: u64,
    /// Admitted claims that are retired now.
    pub retired_admitted: u64,
    /// Retired originals dropped for an admitted restatement.
    pub restated: u64,
}

/// What reading through a project observer did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObserverScopeNote {
    /// The project asked for.
    pub project: String,
    /// Whether the store was rescoped, so the observer filtered anything.
    pub engaged: bool,
    /// Candidates before the observer.
    pub total: u64,
    /// Candidates in view.
    pub in_scope: u64,
    /// Candidates harvested without a project key.
    pub unattributed: u64,
    /// Candidates whose every source stopped stating them.
    pub lapsed: u64,
    /// On an as-of read: which attribution the projects come from.
    pub attribution: Option<String>,
}

/// The claim filters' coverage footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClaimCoverage {
    /// ACTIVE particles, store-wide.
    pub active_total: u64,
    /// ACTIVE particles with a structured claim, store-wide.
    pub with_claims: u64,
    /// Candidates that matched.
    pub matched: u64,
    /// Candidates whose object could not be compared with a gt/lt bound.
    pub not_normalizable_excluded: u64,
    /// Aggregate rows dropped by `min_effective_confidence`.
    pub below_min_effective_confidence: u64,
}

/// One `group_by` bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateBucket {
    /// The bucket key.
    pub key: String,
    /// The subject's canonical name for a resolved subject bucket.
    pub label: Option<String>,
    /// Claims in the bucket.
    pub claim_count: u64,
    /// Least effective confidence.
    pub min_effective_confidence: f64,
    /// Median effective confidence (Python `statistics.median`).
    pub median_effective_confidence: f64,
    /// Greatest effective confidence.
    pub max_effective_confidence: f64,
}

/// The aggregate modes' result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuralAggregate {
    /// Claims counted.
    pub claim_count: u64,
    /// Least effective confidence (`None` with no claim).
    pub min_effective_confidence: Option<f64>,
    /// Median effective confidence.
    pub median_effective_confidence: Option<f64>,
    /// Greatest effective confidence.
    pub max_effective_confidence: Option<f64>,
    /// The bucket axis.
    pub group_by: Option<GroupBy>,
    /// The buckets, by count descending then key.
    pub buckets: Vec<AggregateBucket>,
}

/// One row of the predicate listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredicateInfo {
    /// The predicate term as stored.
    pub value: String,
    /// Its term kind.
    pub kind: TermKind,
    /// Claims using it.
    pub claim_count: u64,
}

/// Counts by object shape, every shape present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ObjectShapes {
    /// Text literals.
    pub text: u64,
    /// Numbers.
    pub numeric: u64,
    /// Dates.
    pub dated: u64,
    /// URIs.
    pub uri: u64,
    /// Tokens.
    pub token: u64,
}

/// Counts by object term kind, every kind present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[allow(non_snake_case)]
pub struct ObjectKinds {
    /// URI objects.
    pub URI: u64,
    /// TOKEN objects.
    pub TOKEN: u64,
    /// LITERAL objects.
    pub LITERAL: u64,
}

/// Subjects aligned to one namespace, by link band.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LinkBands {
    /// Confidence 1.0.
    pub asserted: u64,
    /// Any other value at or above the suppress threshold.
    pub scored: u64,
    /// The 0.5 sentinel.
    pub unscored: u64,
    /// Below the suppress threshold.
    pub suppressed: u64,
}

/// One predicate term as stored, under its canonical form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VocabularySurfaceForm {
    /// The term.
    pub value: String,
    /// Its kind.
    pub kind: TermKind,
    /// Claims using it.
    pub claim_count: u64,
}

/// A subject class and its count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VocabularyClassCount {
    /// The class (`(unclassed)`, `(unresolved)` for the two gaps).
    pub subject_class: String,
    /// The count.
    pub count: u64,
}

/// One canonical predicate of the vocabulary report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VocabularyPredicate {
    /// The normalised form.
    pub canonical: String,
    /// The first surface form, for reading.
    pub label: String,
    /// Claims under it.
    pub claim_count: u64,
    /// Its surface forms.
    pub surface_forms: Vec<VocabularySurfaceForm>,
    /// Its objects' shapes.
    pub object_shapes: ObjectShapes,
    /// Its subjects' classes.
    pub subject_classes: Vec<VocabularyClassCount>,
    /// What adopted vocabulary documents say of it.
    pub alignments: Vec<String>,
}

/// Subjects aligned to one external namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamespaceAlignment {
    /// The namespace.
    pub namespace: String,
    /// Subjects with a link there.
    pub subjects: u64,
    /// By their best link's band.
    pub bands: LinkBands,
}

/// The read-time vocabulary report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VocabularyReport {
    /// Subjects in the store.
    pub subjects_total: u64,
    /// Subjects with an external link.
    pub subjects_aligned: u64,
    /// By namespace.
    pub aligned_by_namespace: Vec<NamespaceAlignment>,
    /// `subjects.wikidata_link_suppress_threshold`.
    pub link_suppress_threshold: f64,
    /// Subjects with a class.
    pub subjects_classed: u64,
    /// By class.
    pub classed_by_class: Vec<VocabularyClassCount>,
    /// By the class's namespace.
    pub classed_by_namespace: Vec<VocabularyClassCount>,
    /// ACTIVE structured claims, store-wide.
    pub structured_claims_total: u64,
    /// Claims in the request's view.
    pub claims_in_view: u64,
    /// Objects by term kind.
    pub object_kinds: ObjectKinds,
    /// Objects by shape.
    pub object_shapes: ObjectShapes,
    /// Distinct predicate terms (value and kind).
    pub predicates_distinct: u64,
    /// Canonical predicate rows.
    pub predicates_canonical: u64,
    /// Operator events that record a modelling decision, by type.
    pub modelling_decisions: indexmap_like::OrderedMap<u64>,
    /// Adopted vocabulary documents.
    pub alignment_source: Option<String>,
    /// Echo of `as_of`.
    pub as_of: Option<Timestamp>,
    /// The canonical predicate rows.
    pub predicates: Vec<VocabularyPredicate>,
    /// The observer note, copied in.
    pub observer_scope: Option<ObserverScopeNote>,
}

/// The relevance disclosure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RelevanceNote {
    /// The greatest raw cosine over the returned hits.
    pub max_similarity: f64,
    /// `query.relevance_floor`.
    pub floor: f64,
    /// `max_similarity < floor`.
    pub below_floor: bool,
}

/// Why answer generation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AnswerFailureCause {
    /// The model spent its whole budget without an answer (after the retry).
    #[serde(rename = "BUDGET")]
    Budget,
    /// Anything else: billing, network, timeout, refusal, a malformed reply.
    #[serde(rename = "PROVIDER")]
    Provider,
}

/// Where one sentence of a grounded answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttributionKind {
    /// It cites retrieved particles.
    Cited,
    /// The composer's inference over cited claims.
    Inference,
    /// The composer's own background.
    Background,
    /// Neither cited nor declared.
    Unattributed,
}

/// One attributed unit of a grounded answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributedSentence {
    /// The unit without its tag.
    pub text: String,
    /// Its kind.
    pub kind: AttributionKind,
    /// Full ids of the particles it cites.
    pub cited_ids: Vec<String>,
    /// Citations that named no retrieved particle, as written.
    pub invalid_citations: Vec<String>,
}

/// A grounded answer's attribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerAttribution {
    /// Every unit, in order.
    pub sentences: Vec<AttributedSentence>,
}
