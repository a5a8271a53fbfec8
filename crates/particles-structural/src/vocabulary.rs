//! The predicate listing and the vocabulary report (the reference's
//! `_predicates_listing`, `_vocabulary_listing`, `core/claims.py:
//! predicate_vocabulary`, `core/vocabulary_report.py` and
//! `core/predicate_profile.py:normalise_predicate`; spec §7.4, §7.5).
//!
//! Both read the claim modes' candidates after the default filters, with no
//! claim matching and no effective-confidence step. Counts keep first-seen order
//! (Python's `Counter`), so every sort below is stable over the loader's order.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use particles_model::{
    response::{
        indexmap_like::OrderedMap, ClaimCoverage, LinkBands, NamespaceAlignment, ObjectKinds,
        ObjectShapes, PredicateInfo, QueryResponse, VocabularyClassCount, VocabularyPredicate,
        VocabularyReport, VocabularySurfaceForm,
    },
    BoundValue, ClaimTerm, Decimal, StructuredClaim, TermKind,
};
use particles_query::QueryInput;
use particles_store::{Store, SubjectHeader, VocabularyDocument};

use super::{gather::gather_claims, StructuralSettings};
use crate::Result;

/// The class label of a resolved subject without a class.
const UNCLASSED: &str = "(unclassed)";
/// The class label of a claim whose subject resolves to no Subject.
const NO_SUBJECT: &str = "(unresolved)";
/// The link confidence no content could score.
const UNSCORED_SENTINEL: f64 = 0.5;

/// The operator events that record a modelling decision, in the reference's
/// order (`MODELLING_DECISION_TYPES`); the report counts each, zeros included.
const MODELLING_DECISION_TYPES: [&str; 10] = [
    "DUPLICATES_MERGED",
    "DUPLICATES_UNMERGED",
    "INCONSISTENCY_CLOSED",
    "REVIEW_RESOLVED",
    "SUBJECTS_MERGED",
    "SUBJECTS_SPLIT",
    "SUBJECT_ALIASED",
    "SUBJECT_RECLASSIFIED",
    "SUBJECT_LINK_CONFIRMED",
    "SUBJECT_LINK_REMOVED",
];

/// Counts in first-seen order, as Python's `Counter` iterates.
struct Tally<K> {
    order: Vec<K>,
    counts: HashMap<K, u64>,
}

impl<K: Clone + Eq + Hash> Tally<K> {
    fn new() -> Tally<K> {
        Tally {
            order: Vec::new(),
            counts: HashMap::new(),
        }
    }

    fn add(&mut self, key: K, n: u64) {
        match self.counts.get_mut(&key) {
            Some(count) => *count += n,
            None => {
                self.order.push(key.clone());
                self.counts.insert(key, n);
            }
        }
    }

    fn get(&self, key: &K) -> u64 {
        self.counts.get(key).copied().unwrap_or(0)
    }

    fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// `(key, count)` in first-seen order.
    fn entries(&self) -> impl Iterator<Item = (&K, u64)> {
        self.order.iter().map(|k| (k, self.get(k)))
    }
}

/// The claims of the request's candidate set, in loader order.
fn candidate_claims(store: &Store, input: &QueryInput<'_>) -> Result<CandidateClaims> {
    let gathered = gather_claims(store, input)?;
    let claims = gathered
        .rows
        .iter()
        .filter_map(|&row| gathered.pool.particles[row].structured_claim.clone())
        .collect();
    let (active_total, with_claims) = particles_store::claim_coverage_counts(store)?;
    Ok(CandidateClaims {
        claims,
        active_total,
        with_claims,
        as_of_excluded_undatable: gathered.as_of_excluded_undatable,
        observer_scope: gathered.observer_scope,
    })
}

struct CandidateClaims {
    claims: Vec<StructuredClaim>,
    active_total: u64,
    with_claims: u64,
    as_of_excluded_undatable: u64,
    observer_scope: Option<particles_model::response::ObserverScopeNote>,
}

/// §7.4: the distinct predicate terms as stored (value and kind), by count
/// descending then value (ties on value keep first-seen order).
pub(crate) fn predicate_listing(store: &Store, input: &QueryInput<'_>) -> Result<QueryResponse> {
    let request = input.request;
    let candidates = candidate_claims(store, input)?;
    let mut tally: Tally<(String, TermKind)> = Tally::new();
    for claim in &candidates.claims {
        tally.add((claim.predicate.value.clone(), claim.predicate.kind), 1);
    }
    let mut vocabulary: Vec<PredicateInfo> = tally
        .entries()
        .map(|((value, kind), n)| PredicateInfo {
            value: value.clone(),
            kind: *kind,
            claim_count: n,
        })
        .collect();
    vocabulary.sort_by(|a, b| {
        b.claim_count
            .cmp(&a.claim_count)
            .then_with(|| a.value.cmp(&b.value))
    });
    let mut response = QueryResponse::empty(format!(
        "{} distinct predicate term(s) across {} structured claims.",
        vocabulary.len(),
        candidates.claims.len()
    ));
    response.predicate_vocabulary = vocabulary;
    response.claim_coverage = Some(ClaimCoverage {
        active_total: candidates.active_total,
        with_claims: candidates.with_claims,
        matched: candidates.claims.len() as u64,
        not_normalizable_excluded: 0,
        below_min_effective_confidence: 0,
    });
    response.as_of = request.as_of;
    response.as_of_excluded_undatable = candidates.as_of_excluded_undatable;
    response.observer_scope = candidates.observer_scope;
    Ok(response)
}

/// §7.5: the vocabulary report over the predicate listing's candidate set.
pub(crate) fn vocabulary_listing(
    store: &Store,
    input: &QueryInput<'_>,
    settings: &StructuralSettings,
) -> Result<QueryResponse> {
    let request = input.request;
    let candidates = candidate_claims(store, input)?;
    // The class of the subject each claim is about: its own `subject_id`, never
    // a particle-level link.
    let classes = particles_store::subject_classes(
        store,
        candidates
            .claims
            .iter()
            .filter_map(|c| c.subject_id.as_deref()),
    )?;
    let classed: Vec<(&StructuredClaim, String)> = candidates
        .claims
        .iter()
        .map(|claim| {
            let label = match claim.subject_id.as_deref().and_then(|id| classes.get(id)) {
                None => NO_SUBJECT.to_owned(),
                Some(Some(class)) if !class.is_empty() => class.clone(),
                Some(_) => UNCLASSED.to_owned(),
            };
            (claim, label)
        })
        .collect();
    let subjects = particles_store::subject_headers(store, request.as_of)?;
    let events = particles_store::count_events_by_type(store, request.as_of)?;
    let (alignments, alignment_source) =
        alignments_from_documents(&particles_store::adopted_vocabularies(store)?);
    let mut report = build_report(
        &classed,
        &subjects,
        &events,
        &alignments,
        settings.link_suppress_threshold,
    );
    // Store-wide: the ACTIVE annotated claims now, whatever `as_of` says.
    report.structured_claims_total = candidates.with_claims;
    report.alignment_source = alignment_source;
    report.as_of = request.as_of;
    report.observer_scope = candidates.observer_scope.clone();
    let mut response = QueryResponse::empty(format!(
        "{} canonical predicate(s) from {} distinct term(s) across {} structured claims.",
        report.predicates_canonical, report.predicates_distinct, report.claims_in_view
    ));
    response.claim_coverage = Some(ClaimCoverage {
        active_total: candidates.active_total,
        with_claims: candidates.with_claims,
        matched: report.claims_in_view,
        not_normalizable_excluded: 0,
        below_min_effective_confidence: 0,
    });
    response.vocabulary_report = Some(report);
    response.as_of = request.as_of;
    response.as_of_excluded_undatable = candidates.as_of_excluded_undatable;
    response.observer_scope = candidates.observer_scope;
    Ok(response)
}

/// The report's fold (`build_vocabulary_report`) over `(claim, class label)`
/// pairs; the caller fills the fields read elsewhere (total, source, `as_of`).
fn build_report(
    claims: &[(&StructuredClaim, String)],
    subjects: &[SubjectHeader],
    events: &HashMap<String, u64>,
    alignments: &HashMap<String, Vec<String>>,
    suppress_threshold: f64,
) -> VocabularyReport {
    let predicates = predicate_rows(claims, alignments);
    let header = subject_alignment(subjects, suppress_threshold);
    let mut class_namespaces: Tally<String> = Tally::new();
    for (name, n) in header.class_counts.entries() {
        class_namespaces.add(class_namespace(name), n);
    }
    let mut kinds = ObjectKinds::default();
    let mut shapes = ObjectShapes::default();
    let mut distinct = HashSet::new();
    for (claim, _) in claims {
        match claim.object.kind {
            TermKind::Uri => kinds.URI += 1,
            TermKind::Token => kinds.TOKEN += 1,
            TermKind::Literal => kinds.LITERAL += 1,
        }
        count_shape(&mut shapes, object_shape(&claim.object));
        distinct.insert((claim.predicate.value.as_str(), claim.predicate.kind));
    }
    VocabularyReport {
        subjects_total: header.total,
        subjects_aligned: header.aligned,
        aligned_by_namespace: header.by_namespace,
        link_suppress_threshold: suppress_threshold,
        subjects_classed: header.class_counts.total(),
        classed_by_class: ranked(&header.class_counts),
        classed_by_namespace: ranked(&class_namespaces),
        structured_claims_total: 0,
        claims_in_view: claims.len() as u64,
        object_kinds: kinds,
        object_shapes: shapes,
        predicates_distinct: distinct.len() as u64,
        predicates_canonical: predicates.len() as u64,
        modelling_decisions: OrderedMap(
            MODELLING_DECISION_TYPES
                .iter()
                .map(|t| ((*t).to_owned(), events.get(*t).copied().unwrap_or(0)))
                .collect(),
        ),
        alignment_source: None,
        as_of: None,
        predicates,
        observer_scope: None,
    }
}

/// Class counts by count descending, then name.
fn ranked(counts: &Tally<String>) -> Vec<VocabularyClassCount> {
    let mut rows: Vec<VocabularyClassCount> = counts
        .entries()
        .map(|(name, n)| VocabularyClassCount {
            subject_class: name.clone(),
            count: n,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.subject_class.cmp(&b.subject_class))
    });
    rows
}

/// The form of one object term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Shape {
    Text,
    Numeric,
    Dated,
    Uri,
    Token,
}

fn count_shape(shapes: &mut ObjectShapes, shape: Shape) {
    match shape {
        Shape::Text => shapes.text += 1,
        Shape::Numeric => shapes.numeric += 1,
        Shape::Dated => shapes.dated += 1,
        Shape::Uri => shapes.uri += 1,
        Shape::Token => shapes.token += 1,
    }
}

/// `object_shape`: a typed literal by its normalised type (a numeric or date XSD
/// datatype whose lexical form parses), an untyped literal without a language by
/// its lexical form read as a bound, anything else text.
fn object_shape(term: &ClaimTerm) -> Shape {
    match term.kind {
        TermKind::Uri => Shape::Uri,
        TermKind::Token => Shape::Token,
        TermKind::Literal => match (&term.datatype, &term.language) {
            (Some(datatype), _) => {
                let local = datatype
                    .strip_prefix("http://www.w3.org/2001/XMLSchema#")
                    .or_else(|| datatype.strip_prefix("xsd:"));
                match local {
                    Some("decimal" | "integer" | "float" | "double")
                        if Decimal::parse(&term.value).is_some() =>
                    {
                        Shape::Numeric
                    }
                    Some("date" | "dateTime")
                        if particles_model::parse_instant(&term.value).is_some() =>
                    {
                        Shape::Dated
                    }
                    _ => Shape::Text,
                }
            }
            (None, None) => match BoundValue::parse(particles_pytext::strip(&term.value)) {
                Some(BoundValue::Number(_)) => Shape::Numeric,
                Some(BoundValue::Instant(_)) => Shape::Dated,
                None => Shape::Text,
            },
            (None, Some(_)) => Shape::Text,
        },
    }
}

/// One row per canonical predicate (`predicate_rows`), by claim count descending
/// then canonical form.
fn predicate_rows(
    claims: &[(&StructuredClaim, String)],
    alignments: &HashMap<String, Vec<String>>,
) -> Vec<VocabularyPredicate> {
    struct Row {
        forms: Tally<(String, TermKind)>,
        shapes: ObjectShapes,
        classes: Tally<String>,
    }
    let mut keys: Vec<String> = Vec::new();
    let mut rows: HashMap<String, Row> = HashMap::new();
    for (claim, class_label) in claims {
        let key = canonical_form(&claim.predicate);
        let row = rows.entry(key.clone()).or_insert_with(|| {
            keys.push(key.clone());
            Row {
                forms: Tally::new(),
                shapes: ObjectShapes::default(),
                classes: Tally::new(),
            }
        });
        row.forms
            .add((claim.predicate.value.clone(), claim.predicate.kind), 1);
        count_shape(&mut row.shapes, object_shape(&claim.object));
        row.classes.add(class_label.clone(), 1);
    }
    let mut out: Vec<VocabularyPredicate> = Vec::with_capacity(keys.len());
    for key in keys {
        let Some(row) = rows.remove(&key) else {
            continue;
        };
        let mut surface: Vec<VocabularySurfaceForm> = row
            .forms
            .entries()
            .map(|((value, kind), n)| VocabularySurfaceForm {
                value: value.clone(),
                kind: *kind,
                claim_count: n,
            })
            .collect();
        surface.sort_by(|a, b| {
            b.claim_count
                .cmp(&a.claim_count)
                .then_with(|| a.value.cmp(&b.value))
        });
        let label = surface.first().map(|f| f.value.clone()).unwrap_or_default();
        out.push(VocabularyPredicate {
            alignments: alignments.get(&key).cloned().unwrap_or_default(),
            canonical: key,
            label,
            claim_count: row.forms.total(),
            surface_forms: surface,
            object_shapes: row.shapes,
            subject_classes: ranked(&row.classes),
        });
    }
    out.sort_by(|a, b| {
        b.claim_count
            .cmp(&a.claim_count)
            .then_with(|| a.canonical.cmp(&b.canonical))
    });
    out
}

/// The canonical form a predicate groups under: a URI as spelled, anything else
/// normalised.
fn canonical_form(predicate: &ClaimTerm) -> String {
    if predicate.kind == TermKind::Uri {
        predicate.value.clone()
    } else {
        normalise_predicate(&predicate.value)
    }
}

/// The subject header: totals, the namespaces by link band, the class counts.
struct SubjectAlignment {
    total: u64,
    aligned: u64,
    by_namespace: Vec<NamespaceAlignment>,
    class_counts: Tally<String>,
}

fn subject_alignment(subjects: &[SubjectHeader], suppress_threshold: f64) -> SubjectAlignment {
    let mut header = SubjectAlignment {
        total: 0,
        aligned: 0,
        by_namespace: Vec::new(),
        class_counts: Tally::new(),
    };
    let mut namespaces: Vec<String> = Vec::new();
    let mut bands: HashMap<String, LinkBands> = HashMap::new();
    for subject in subjects {
        header.total += 1;
        if let Some(class) = subject.subject_class.as_ref().filter(|c| !c.is_empty()) {
            header.class_counts.add(class.clone(), 1);
        }
        if !subject.links.is_empty() {
            header.aligned += 1;
        }
        // A subject counts once per namespace, in the band of its best link there.
        let mut best: Vec<(&str, f64)> = Vec::new();
        for link in &subject.links {
            match best.iter_mut().find(|(ns, _)| *ns == link.namespace) {
                Some(slot) => slot.1 = particles_rank::py_max(slot.1, link.confidence),
                None => best.push((
                    link.namespace.as_str(),
                    particles_rank::py_max(0.0, link.confidence),
                )),
            }
        }
        for (namespace, confidence) in best {
            let counts = bands.entry(namespace.to_owned()).or_insert_with(|| {
                namespaces.push(namespace.to_owned());
                LinkBands::default()
            });
            match link_band(confidence, suppress_threshold) {
                Band::Asserted => counts.asserted += 1,
                Band::Scored => counts.scored += 1,
                Band::Unscored => counts.unscored += 1,
                Band::Suppressed => counts.suppressed += 1,
            }
        }
    }
    header.by_namespace = namespaces
        .into_iter()
        .map(|namespace| {
            let counts = bands.get(&namespace).copied().unwrap_or_default();
            NamespaceAlignment {
                subjects: counts.asserted + counts.scored + counts.unscored + counts.suppressed,
                namespace,
                bands: counts,
            }
        })
        .collect();
    header.by_namespace.sort_by(|a, b| {
        b.subjects
            .cmp(&a.subjects)
            .then_with(|| a.namespace.cmp(&b.namespace))
    });
    header
}

/// A link confidence's band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Band {
    Asserted,
    Scored,
    Unscored,
    Suppressed,
}

fn link_band(confidence: f64, suppress_threshold: f64) -> Band {
    if confidence >= 1.0 {
        Band::Asserted
    } else if confidence == UNSCORED_SENTINEL {
        Band::Unscored
    } else if confidence < suppress_threshold {
        Band::Suppressed
    } else {
        Band::Scored
    }
}

/// The namespace a class is minted in: a CURIE prefix
/// (`^[A-Za-z][\w.-]*:` not followed by `//`), else an IRI's base up to its last
/// `#` or `/`, else `(none)`.
fn class_namespace(subject_class: &str) -> String {
    let mut chars = subject_class.char_indices();
    if let Some((_, first)) = chars.next().filter(|(_, c)| c.is_ascii_alphabetic()) {
        let mut end = first.len_utf8();
        for (at, c) in chars {
            if particles_pytext::is_word(c) || c == '.' || c == '-' {
                end = at + c.len_utf8();
            } else {
                break;
            }
        }
        let rest = &subject_class[end..];
        if rest.starts_with(':') && !rest[1..].starts_with("//") {
            return subject_class[..end].to_owned();
        }
    }
    if let Some((_, after_scheme)) = subject_class.split_once("://") {
        for separator in ['#', '/'] {
            if after_scheme.contains(separator) {
                if let Some(at) = subject_class.rfind(separator) {
                    return subject_class[..=at].to_owned();
                }
            }
        }
    }
    "(none)".to_owned()
}

/// What the adopted documents say each canonical form is
/// (`alignments_from_documents`), and which documents said it.
fn alignments_from_documents(
    documents: &[VocabularyDocument],
) -> (HashMap<String, Vec<String>>, Option<String>) {
    if documents.is_empty() {
        return (HashMap::new(), None);
    }
    let mut entries: HashMap<String, Vec<String>> = HashMap::new();
    for document in documents {
        for term in &document.terms {
            let class = &term.subject_class;
            let mut found = vec![format!(
                "{}:{} on {class}",
                document.prefix, term.local_name
            )];
            found.extend(
                term.alignments
                    .iter()
                    .map(|(target, strength)| format!("{target} ({strength}) on {class}")),
            );
            for form in &term.forms {
                let entry = entries.entry(form.clone()).or_default();
                for item in &found {
                    if !entry.contains(item) {
                        entry.push(item.clone());
                    }
                }
            }
        }
    }
    let source = documents
        .iter()
        .map(|d| format!("{} v{}", d.name, d.version))
        .collect::<Vec<_>>()
        .join(", ");
    (entries, Some(source))
}

const ARTICLES: [&str; 3] = ["a", "an", "the"];
const BE: [&str; 8] = ["is", "are", "was", "were", "be", "been", "being", "am"];
const DO: [&str; 3] = ["does", "do", "did"];
const MODALS: [&str; 9] = [
    "can", "could", "will", "would", "shall", "should", "may", "might", "must",
];
const HAVE: [&str; 4] = ["has", "have", "had", "having"];

/// Irregular forms and their base verb, applied before stemming.
const IRREGULAR: &[(&str, &str)] = &[
    ("ran", "run"),
    ("written", "write"),
    ("wrote", "write"),
    ("made", "make"),
    ("built", "build"),
    ("began", "begin"),
    ("begun", "begin"),
    ("brought", "bring"),
    ("bought", "buy"),
    ("caught", "catch"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("came", "come"),
    ("did", "do"),
    ("done", "do"),
    ("drew", "draw"),
    ("drawn", "draw"),
    ("drove", "drive"),
    ("driven", "drive"),
    ("found", "find"),
    ("gave", "give"),
    ("given", "give"),
    ("went", "go"),
    ("gone", "go"),
    ("goes", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("held", "hold"),
    ("kept", "keep"),
    ("knew", "know"),
    ("known", "know"),
    ("led", "lead"),
    ("left", "leave"),
    ("lost", "lose"),
    ("meant", "mean"),
    ("met", "meet"),
    ("paid", "pay"),
    ("said", "say"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("shown", "show"),
    ("sold", "sell"),
    ("spent", "spend"),
    ("stood", "stand"),
    ("taken", "take"),
    ("took", "take"),
    ("taught", "teach"),
    ("told", "tell"),
    ("thought", "think"),
    ("understood", "understand"),
    ("won", "win"),
    ("wore", "wear"),
    ("worn", "wear"),
    ("fell", "fall"),
    ("fallen", "fall"),
    ("felt", "feel"),
    ("fed", "feed"),
    ("fought", "fight"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("rode", "ride"),
    ("ridden", "ride"),
    ("rose", "rise"),
    ("risen", "rise"),
    ("shot", "shoot"),
    ("slept", "sleep"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("struck", "strike"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("woke", "wake"),
    ("woken", "wake"),
    ("broke", "break"),
    ("broken", "break"),
    ("has", "have"),
    ("had", "have"),
    ("having", "have"),
    ("is", "be"),
    ("are", "be"),
    ("was", "be"),
    ("were", "be"),
    ("been", "be"),
    ("am", "be"),
    ("being", "be"),
    ("does", "do"),
    ("doing", "do"),
    ("uses", "use"),
    ("used", "use"),
    ("using", "use"),
    ("run", "run"),
    ("put", "put"),
    ("read", "read"),
    ("set", "set"),
    ("split", "split"),
    ("cut", "cut"),
    ("hit", "hit"),
    ("let", "let"),
];

fn irregular_base(word: &str) -> Option<&'static str> {
    IRREGULAR
        .iter()
        .find(|(form, _)| *form == word)
        .map(|(_, base)| *base)
}

/// The tokens `[a-z0-9][a-z0-9'_./-]*` of an already lower-cased text, in order.
fn tokens(text: &str) -> Vec<&str> {
    let starts = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let continues = |c: char| starts(c) || "'_./-".contains(c);
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (at, c) in text.char_indices() {
        match start {
            Some(_) if continues(c) => {}
            Some(begin) => {
                out.push(&text[begin..at]);
                start = starts(c).then_some(at);
            }
            None => start = starts(c).then_some(at),
        }
    }
    if let Some(begin) = start {
        out.push(&text[begin..]);
    }
    out
}

/// Drops articles anywhere, and auxiliaries and modals at the front (`has` /
/// `have` / `had` only before a participle or another auxiliary).
fn strip_front(tokens: Vec<&str>) -> Vec<&str> {
    let mut toks: Vec<&str> = tokens
        .into_iter()
        .filter(|t| !ARTICLES.contains(t))
        .collect();
    while toks.len() > 1 {
        let (head, next) = (toks[0], toks[1]);
        let auxiliary = BE.contains(&head) || DO.contains(&head) || MODALS.contains(&head);
        let perfect = HAVE.contains(&head)
            && (BE.contains(&next)
                || next.ends_with("ed")
                || next.ends_with("en")
                || irregular_base(next).is_some());
        if !(auxiliary || perfect) {
            break;
        }
        toks.remove(0);
    }
    toks
}

/// `stopp` -> `stop`, but not `pass`, `call` or a stem left under three letters.
fn undouble(stem: &str) -> String {
    let bytes = stem.as_bytes();
    let n = bytes.len();
    if n > 3 && bytes[n - 1] == bytes[n - 2] && !b"lsz".contains(&bytes[n - 1]) {
        stem[..n - 1].to_owned()
    } else {
        stem.to_owned()
    }
}

/// An inflectional stem: every inflection of one verb maps to one string
/// (`moved`, `moves`, `moving`, `move` all give `mov`). Tokens are ASCII.
fn stem(word: &str) -> String {
    let mut word = irregular_base(word).unwrap_or(word).to_owned();
    let n = word.len();
    if word.ends_with("ies") && n > 4 {
        word = format!("{}y", &word[..n - 3]);
    } else if ["sses", "ches", "shes", "xes", "zes"]
        .iter()
        .any(|s| word.ends_with(s))
        || (word.ends_with("ses") && n > 4)
    {
        word.truncate(n - 2);
    } else if word.ends_with("ied") && n > 4 {
        word = format!("{}y", &word[..n - 3]);
    } else if word.ends_with("ed") && n > 3 {
        word = undouble(&word[..n - 2]);
    } else if word.ends_with("ing") && n > 4 {
        word = undouble(&word[..n - 3]);
    } else if word.ends_with('s') && n > 3 && !["ss", "us", "is"].iter().any(|s| word.ends_with(s))
    {
        word.truncate(n - 1);
    }
    if word.ends_with('y') && word.len() > 2 {
        word.pop();
        word.push('i');
    }
    while word.ends_with('e') && word.len() > 2 {
        word.pop();
    }
    word
}

/// The reference's `normalise_predicate`: lower-cased, articles dropped, leading
/// auxiliaries and modals dropped, the head verb reduced to its inflectional stem;
/// negation and prepositions kept (`moved to` -> `mov to`). A value with no token
/// is only stripped and lower-cased.
pub(crate) fn normalise_predicate(value: &str) -> String {
    let lowered = particles_pytext::lower(value);
    let toks = strip_front(tokens(&lowered));
    let Some((head, rest)) = toks.split_first() else {
        return particles_pytext::lower(particles_pytext::strip(value));
    };
    let mut out = stem(head);
    for token in rest {
        out.push(' ');
        out.push_str(token);
    }
    out
}

#[cfg(test)]
mod tests;
