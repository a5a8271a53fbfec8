//! The query request, as the reference defines it (`QueryRequest` in
//! `core/schema.py` of linkedparticles-core 1.214.1): the same 28 fields, names,
//! types, defaults and validation, so one JSON body means the same query to both
//! engines. CLI flags, `serve --stdio` lines and HTTP bodies all become this type,
//! plus an [`Envelope`] of the three things only our engine takes (a query vector,
//! no embedding, a frozen `now`).
//!
//! [`QueryRequest::from_json`] validates a JSON object the way pydantic does in lax
//! mode (coercions, bounds, the cross-field rules in the reference's order) and
//! returns every error in pydantic's shape ([`FieldError`]); [`QueryRequest::validate`]
//! checks a request built in code. Either gives a [`ValidRequest`], whose claim
//! bounds are already parsed ([`BoundValue`]): nothing is re-parsed per candidate.
//! Unknown fields are ignored, as the reference's model ignores them.

mod bound;
mod lax;
pub mod manifest;
mod recall;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use self::{
    bound::{parse_instant, BoundValue, Decimal},
    lax::{FieldError, Loc},
    recall::RecallOptions,
};
use crate::{AssertionModality, Timestamp, UncertaintyNature};

/// The largest `top_k` the reference accepts.
pub const MAX_TOP_K: u32 = 200;
/// The `top_k` of a request that does not say.
pub const DEFAULT_TOP_K: u32 = 40;
/// The longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 8192;

/// Who the answer is written for (`AudienceHint`); it shapes only the answer's
/// prompt, never the ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Audience {
    /// Numeric confidences and uncertainty classes.
    Expert,
    /// Hedged natural language (the default).
    #[default]
    General,
    /// Full provenance citations.
    Regulatory,
}

impl Audience {
    const VALUES: [(&'static str, Audience); 3] = [
        ("EXPERT", Audience::Expert),
        ("GENERAL", Audience::General),
        ("REGULATORY", Audience::Regulatory),
    ];

    /// The value's text, as the reference spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Audience::Expert => "EXPERT",
            Audience::General => "GENERAL",
            Audience::Regulatory => "REGULATORY",
        }
    }
}

/// The bucket axis of the `group_by` aggregate (`StructuralGroupBy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// The claim's subject (or the particle's subjects).
    Subject,
    /// The predicate as stored.
    Predicate,
    /// The object as stored.
    Object,
}

impl GroupBy {
    const VALUES: [(&'static str, GroupBy); 3] = [
        ("subject", GroupBy::Subject),
        ("predicate", GroupBy::Predicate),
        ("object", GroupBy::Object),
    ];

    /// The value's text, as the reference spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Subject => "subject",
            GroupBy::Predicate => "predicate",
            GroupBy::Object => "object",
        }
    }
}

/// A world-time window; either end may be open, both equal is a point (`--on`).
/// After validation both ends are aware (a naive end is read as UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeWindow {
    /// The first instant in the window.
    pub start: Option<Timestamp>,
    /// The last instant in the window.
    pub end: Option<Timestamp>,
}

impl TimeWindow {
    /// Whether both ends are set and name the same instant.
    pub fn is_point(&self) -> bool {
        matches!((self.start, self.end), (Some(s), Some(e)) if s.utc_micros() == e.utc_micros())
    }

    /// The window's own rules (the reference's `TimeWindow._check_bounds`): an end
    /// is needed, naive ends become UTC, and the start is not after the end.
    ///
    /// # Errors
    ///
    /// The reference's message for the first rule that fails.
    pub fn checked(self) -> Result<TimeWindow, String> {
        let aware =
            |t: Option<Timestamp>| t.map(|t| if t.is_aware() { t } else { t.with_utc_offset() });
        let window = TimeWindow {
            start: aware(self.start),
            end: aware(self.end),
        };
        match (window.start, window.end) {
            (None, None) => Err("a time window needs a start or an end".to_owned()),
            (Some(s), Some(e)) if s.utc_micros() > e.utc_micros() => {
                Err("a time window's start must not be after its end".to_owned())
            }
            _ => Ok(window),
        }
    }
}

/// A query, field for field the reference's `QueryRequest`; its JSON form
/// (`Serialize`) is the reference's `model_dump(mode="json")`: all 28 fields, in
/// declaration order, defaults included.
///
/// Build one with [`QueryRequest::default`] (or [`QueryRequest::question`]) and
/// set fields, then [`validate`](QueryRequest::validate) it; or read a JSON object
/// with [`QueryRequest::from_json`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryRequest {
    /// The question (1..=8192 characters); `None` selects a structural mode.
    pub question: Option<String>,
    /// Stored-value prefilter and effective-confidence floor (0..=1).
    pub min_confidence: f64,
    /// Keep only this uncertainty nature.
    pub uncertainty_nature: Option<UncertaintyNature>,
    /// Keep only this assertion modality.
    pub assertion_modality: Option<AssertionModality>,
    /// Keep only particles asserted in the last N days (0 or `None`: off).
    /// Within `i64`; see [`QueryRequest::from_json`] for what that refuses.
    pub recency_window_days: Option<i64>,
    /// Who the answer is for (the prompt only).
    pub audience: Audience,
    /// How many ranked particles to keep before the co-evidential collapse (1..=200).
    pub top_k: u32,
    /// Only particles linked to this exact subject id.
    pub subject_id: Option<String>,
    /// Keep particles tagged with any of these tags or their taxonomy subtrees.
    pub tags: Vec<String>,
    /// Also match a requested tag's ancestors.
    pub include_ancestors: bool,
    /// Keep DOCUMENT_META particles (excluded by default).
    pub include_document_meta: bool,
    /// Keep DECLINED and HYPOTHETICAL particles (excluded by default).
    pub include_non_asserted: bool,
    /// Attach each hit's agreement distribution.
    pub include_agreement: bool,
    /// Attach each hit's contestedness reading.
    pub include_contestedness: bool,
    /// Believed at this instant (aware after validation; not in the future).
    pub as_of: Option<Timestamp>,
    /// World-time window.
    pub window: Option<TimeWindow>,
    /// Read through this project's observer scope.
    pub observer_project: Option<String>,
    /// Grounded answer with citations; `None` defers to the configuration.
    pub grounded: Option<bool>,
    /// Structured claims with this predicate (case-folded, exact).
    pub predicate: Option<String>,
    /// Structured claims whose object equals this.
    pub object_eq: Option<String>,
    /// Structured claims whose object is greater than this number or date.
    pub object_gt: Option<String>,
    /// Structured claims whose object is less than this number or date.
    pub object_lt: Option<String>,
    /// Structured claims whose object contains this (case-folded).
    pub object_contains: Option<String>,
    /// The aggregate count mode.
    pub count: bool,
    /// The aggregate bucket mode.
    pub group_by: Option<GroupBy>,
    /// The aggregates' effective-confidence floor (0..=1).
    pub min_effective_confidence: Option<f64>,
    /// The predicate-vocabulary listing.
    pub list_predicates: bool,
    /// The vocabulary report.
    pub list_vocabulary: bool,
}

impl Default for QueryRequest {
    fn default() -> Self {
        QueryRequest {
            question: None,
            min_confidence: 0.0,
            uncertainty_nature: None,
            assertion_modality: None,
            recency_window_days: None,
            audience: Audience::General,
            top_k: DEFAULT_TOP_K,
            subject_id: None,
            tags: Vec::new(),
            include_ancestors: false,
            include_document_meta: false,
            include_non_asserted: false,
            include_agreement: false,
            include_contestedness: false,
            as_of: None,
            window: None,
            observer_project: None,
            grounded: None,
            predicate: None,
            object_eq: None,
            object_gt: None,
            object_lt: None,
            object_contains: None,
            count: false,
            group_by: None,
            min_effective_confidence: None,
            list_predicates: false,
            list_vocabulary: false,
        }
    }
}

/// What a request asks the engine to do; the reference dispatches in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Rank against the question (with any prefilters).
    Semantic,
    /// A window with no question, claim filter or aggregate: ordered by `valid_from`.
    WindowListing,
    /// Claim filters with no question: ordered by effective confidence.
    ClaimListing,
    /// `count` or `group_by`.
    Aggregate,
    /// `list_predicates`.
    Predicates,
    /// `list_vocabulary`.
    Vocabulary,
}

impl QueryRequest {
    /// A semantic request for `question` with every other field at its default.
    pub fn question(question: impl Into<String>) -> QueryRequest {
        QueryRequest {
            question: Some(question.into()),
            ..QueryRequest::default()
        }
    }

    /// Whether any claim filter (`predicate`, `object_*`) is set.
    pub fn has_claim_filters(&self) -> bool {
        self.predicate.is_some()
            || self.object_eq.is_some()
            || self.object_gt.is_some()
            || self.object_lt.is_some()
            || self.object_contains.is_some()
    }

    /// Whether an aggregate mode (`count`, `group_by`) is asked for.
    pub fn is_aggregate(&self) -> bool {
        self.count || self.group_by.is_some()
    }

    /// A window with no question, claim filter or aggregate.
    pub fn is_window_listing(&self) -> bool {
        self.window.is_some()
            && self.question.is_none()
            && !self.has_claim_filters()
            && !self.is_aggregate()
    }

    /// Whether the request ranks nothing semantically.
    pub fn is_structural_mode(&self) -> bool {
        self.list_predicates
            || self.list_vocabulary
            || self.is_aggregate()
            || (self.question.is_none() && self.has_claim_filters())
            || self.is_window_listing()
    }

    /// The mode the reference dispatches this request to.
    pub fn mode(&self) -> Mode {
        if self.is_window_listing() {
            Mode::WindowListing
        } else if self.list_predicates {
            Mode::Predicates
        } else if self.list_vocabulary {
            Mode::Vocabulary
        } else if self.is_aggregate() {
            Mode::Aggregate
        } else if self.question.is_none() && self.has_claim_filters() {
            Mode::ClaimListing
        } else {
            Mode::Semantic
        }
    }

    /// Reads and validates a JSON object as the reference's model does (lax
    /// coercions, unknown fields ignored), with `now` the instant a future `as_of`
    /// is judged against. The differential fuzz (`tests/it/fuzz/request.rs`)
    /// holds the verdict, every error's `type`, `loc`, `msg`, `input` and `ctx`,
    /// and the accepted request's dump to `QueryRequest.model_validate`'s.
    ///
    /// One difference is kept on purpose: `recency_window_days` past `i64` (a
    /// JSON integer above 2^63 - 1, or such an integer in text) is refused with
    /// `int_parsing_size`, where pydantic keeps a Python int of any size. The
    /// reference cannot answer such a request either: its query computes
    /// `timedelta(days=...)`, which raises `OverflowError` past 999 999 999 days,
    /// so the request fails there (HTTP 500) instead of here (HTTP 422).
    ///
    /// # Errors
    ///
    /// Every field error in declaration order; if there is none, the first failing
    /// cross-field rule. Locations are relative to the object (the HTTP layer
    /// prefixes `body`).
    pub fn from_json(value: &Value, now: Timestamp) -> Result<ValidRequest, RequestErrors> {
        QueryRequest::from_json_with(value, now, &Envelope::default())
    }

    /// [`from_json`](QueryRequest::from_json) for a request that comes with an
    /// envelope: when the envelope brings a vector or asks for `no_embedding`,
    /// that stands in for the question (see [`ValidRequest::stands_in`]), so a
    /// request with neither a question nor a structural field is a semantic
    /// query instead of the "needs a question" error.
    ///
    /// # Errors
    ///
    /// As [`from_json`](QueryRequest::from_json).
    pub fn from_json_with(
        value: &Value,
        now: Timestamp,
        envelope: &Envelope,
    ) -> Result<ValidRequest, RequestErrors> {
        let Value::Object(object) = value else {
            // What `QueryRequest.model_validate` (and FastAPI's body validation,
            // in Python mode) says of a JSON value that is not an object.
            return Err(RequestErrors(vec![FieldError {
                kind: "model_type",
                loc: Vec::new(),
                msg: "Input should be a valid dictionary or instance of QueryRequest".to_owned(),
                input: value.clone(),
                ctx: Some(serde_json::json!({ "class_name": "QueryRequest" })),
            }]));
        };
        let mut reader = FieldReader {
            object,
            errors: Vec::new(),
        };
        let request = reader.read();
        if !reader.errors.is_empty() {
            return Err(RequestErrors(reader.errors));
        }
        request
            .check_rules(now, envelope.stands_in())
            .map_err(|message| RequestErrors(vec![model_error(message, value.clone())]))
    }

    /// Validates a request built in code with the same rules as
    /// [`from_json`](QueryRequest::from_json).
    ///
    /// # Errors
    ///
    /// As [`from_json`](QueryRequest::from_json).
    pub fn validate(self, now: Timestamp) -> Result<ValidRequest, RequestErrors> {
        self.validate_with(now, &Envelope::default())
    }

    /// [`validate`](QueryRequest::validate) for a request that comes with an
    /// envelope, as [`from_json_with`](QueryRequest::from_json_with).
    ///
    /// # Errors
    ///
    /// As [`from_json`](QueryRequest::from_json).
    pub fn validate_with(
        self,
        now: Timestamp,
        envelope: &Envelope,
    ) -> Result<ValidRequest, RequestErrors> {
        let json = serde_json::to_value(&self).unwrap_or(Value::Null);
        let mut errors = Vec::new();
        let field = |errors: &mut Vec<FieldError>,
                     name: &str,
                     result: Result<(), lax::Failure>,
                     input: Value| {
            if let Err(failure) = result {
                errors.push(failure.at(vec![Loc::Field(name.to_owned())], &input));
            }
        };
        if let Some(question) = &self.question {
            field(
                &mut errors,
                "question",
                lax::string_length(question, Some(1), Some(MAX_QUESTION_CHARS)),
                Value::String(question.clone()),
            );
        }
        field(
            &mut errors,
            "min_confidence",
            lax::float_within(self.min_confidence, 0.0, 1.0),
            json["min_confidence"].clone(),
        );
        field(
            &mut errors,
            "top_k",
            lax::int_within(i64::from(self.top_k), 1, i64::from(MAX_TOP_K)),
            json["top_k"].clone(),
        );
        if let Some(window) = self.window {
            if let Err(message) = window.checked() {
                errors.push(value_error(
                    vec![Loc::Field("window".to_owned())],
                    &message,
                    json["window"].clone(),
                ));
            }
        }
        for name in [
            "observer_project",
            "predicate",
            "object_eq",
            "object_gt",
            "object_lt",
            "object_contains",
        ] {
            if let Value::String(text) = &json[name] {
                field(
                    &mut errors,
                    name,
                    lax::string_length(text, Some(1), None),
                    json[name].clone(),
                );
            }
        }
        if let Some(floor) = self.min_effective_confidence {
            field(
                &mut errors,
                "min_effective_confidence",
                lax::float_within(floor, 0.0, 1.0),
                json["min_effective_confidence"].clone(),
            );
        }
        if !errors.is_empty() {
            return Err(RequestErrors(errors));
        }
        let mut request = self;
        request.window = request.window.map(|w| w.checked().unwrap_or(w));
        request
            .check_rules(now, envelope.stands_in())
            .map_err(|message| RequestErrors(vec![model_error(message, json)]))
    }

    /// The reference's model validators, in order: `_check_structural`, then
    /// `_check_as_of` (naive becomes UTC; a future instant is refused).
    /// `stands_in`: the envelope brings a vector or `no_embedding`, which
    /// answers the first rule as a question would.
    fn check_rules(mut self, now: Timestamp, stands_in: bool) -> Result<ValidRequest, String> {
        if self.question.is_none() && !stands_in && !self.is_structural_mode() {
            return Err("a query needs a question, a structural claim filter (predicate / object_*), an aggregate (count / group_by), a time window, list_predicates, or list_vocabulary ".to_owned());
        }
        if self.window.is_some() && (self.list_predicates || self.list_vocabulary) {
            return Err("a time window selects claims; it does not combine with the predicate or vocabulary listings".to_owned());
        }
        if self.is_aggregate() && self.question.is_some() {
            return Err("aggregate modes (count / group_by) are deterministic and reject a simultaneous question \u{2014} an LLM narrating a deterministic count adds nothing but risk".to_owned());
        }
        if self.list_predicates
            && (self.question.is_some() || self.has_claim_filters() || self.is_aggregate())
        {
            return Err("list_predicates is a standalone vocabulary listing; combine it with no question, filter, or aggregate".to_owned());
        }
        if self.list_vocabulary
            && (self.question.is_some()
                || self.has_claim_filters()
                || self.is_aggregate()
                || self.list_predicates)
        {
            return Err("list_vocabulary is a standalone report; combine it with no question, filter, aggregate, or list_predicates".to_owned());
        }
        if self.min_effective_confidence.is_some() && !self.is_aggregate() {
            return Err("min_effective_confidence applies only to the aggregate modes (count / group_by); other modes use min_confidence".to_owned());
        }
        let mut bounds = [None, None];
        for (slot, raw) in bounds.iter_mut().zip([&self.object_gt, &self.object_lt]) {
            let Some(raw) = raw else { continue };
            match BoundValue::parse(raw) {
                Some(value) => *slot = Some(value),
                None => {
                    return Err(format!(
                    "object comparison bound {} is neither a number nor an ISO-8601 date/datetime",
                    python_repr(raw)
                ))
                }
            }
        }
        if let Some(as_of) = self.as_of {
            let as_of = if as_of.is_aware() {
                as_of
            } else {
                as_of.with_utc_offset()
            };
            self.as_of = Some(as_of);
            if as_of.utc_micros() > now.utc_micros() {
                return Err(format!(
                    "as_of must not be in the future: the as-of lens answers what the store believed at a past instant (got {}).",
                    as_of.python_isoformat()
                ));
            }
        }
        let eq_bound = self.object_eq.as_deref().and_then(BoundValue::parse);
        let [gt_bound, lt_bound] = bounds;
        Ok(ValidRequest {
            request: self,
            eq_bound,
            gt_bound,
            lt_bound,
            stands_in,
        })
    }
}

/// Python's `repr` of a string, as the reference's messages quote values (moved
/// to `particles_pytext`, with the rest of Python's string operations).
pub use particles_pytext::python_repr;

fn value_error(loc: Vec<Loc>, message: &str, input: Value) -> FieldError {
    FieldError {
        kind: "value_error",
        loc,
        msg: format!("Value error, {message}"),
        input,
        ctx: Some(serde_json::json!({ "error": {} })),
    }
}

fn model_error(message: String, input: Value) -> FieldError {
    value_error(Vec::new(), &message, input)
}

/// Every error of a refused request, in pydantic's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct RequestErrors(pub Vec<FieldError>);

impl RequestErrors {
    /// The errors with `prefix` before every location (FastAPI puts `body` there).
    pub fn located_under(&self, prefix: &str) -> Vec<FieldError> {
        self.0
            .iter()
            .map(|error| {
                let mut error = error.clone();
                error.loc.insert(0, Loc::Field(prefix.to_owned()));
                error
            })
            .collect()
    }
}

impl std::fmt::Display for RequestErrors {
    /// Pydantic's text form: a count line, then each location and message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "{n} validation error{} for QueryRequest",
            if n == 1 { "" } else { "s" }
        )?;
        for error in &self.0 {
            let loc: Vec<String> = error
                .loc
                .iter()
                .map(|part| match part {
                    Loc::Field(name) => name.clone(),
                    Loc::Index(at) => at.to_string(),
                })
                .collect();
            if !loc.is_empty() {
                write!(f, "\n{}", loc.join("."))?;
            }
            write!(f, "\n  {}", error.msg)?;
        }
        Ok(())
    }
}

impl std::error::Error for RequestErrors {}

/// A request that passed validation: its rules hold, `as_of` and the window are
/// aware, and its claim bounds are parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRequest {
    request: QueryRequest,
    eq_bound: Option<BoundValue>,
    gt_bound: Option<BoundValue>,
    lt_bound: Option<BoundValue>,
    stands_in: bool,
}

impl ValidRequest {
    /// Whether the request's envelope brought a vector or asked for
    /// `no_embedding`, standing in for a question: such a request without a
    /// question ranks as a semantic query (the claim filters, if any, select
    /// its candidates as they would a question's) instead of listing claims.
    pub fn stands_in(&self) -> bool {
        self.stands_in
    }

    /// The mode this engine answers the request in: the reference's dispatch
    /// ([`QueryRequest::mode`]), except that a vector or `no_embedding` with
    /// claim filters and no question ranks them (a question's place taken).
    pub fn mode(&self) -> Mode {
        match self.request.mode() {
            Mode::ClaimListing if self.stands_in => Mode::Semantic,
            mode => mode,
        }
    }

    /// `object_eq` read as a number or an instant, when it is one (else the
    /// comparison is textual).
    pub fn eq_bound(&self) -> Option<&BoundValue> {
        self.eq_bound.as_ref()
    }

    /// The parsed `object_gt` bound.
    pub fn gt_bound(&self) -> Option<&BoundValue> {
        self.gt_bound.as_ref()
    }

    /// The parsed `object_lt` bound.
    pub fn lt_bound(&self) -> Option<&BoundValue> {
        self.lt_bound.as_ref()
    }

    /// The request.
    pub fn into_inner(self) -> QueryRequest {
        self.request
    }
}

impl std::ops::Deref for ValidRequest {
    type Target = QueryRequest;

    fn deref(&self) -> &QueryRequest {
        &self.request
    }
}

impl Serialize for ValidRequest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.request.serialize(serializer)
    }
}

/// What only our engine takes beside the reference's request: the query vector
/// (instead of encoding the question), ranking without one, and the instant decay
/// is evaluated at. In a JSON line these are fields beside the request's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Envelope {
    /// The query vector (the store's embedding dimension, 384 for MiniLM); `None` encodes the question.
    pub vector: Option<Vec<f32>>,
    /// Rank by effective confidence, without a query vector.
    pub no_embedding: bool,
    /// The instant decay and the recency window are evaluated at (default: now).
    pub now: Option<Timestamp>,
    /// The recall callers' ranking options (`apply_utility`, `apply_owner`,
    /// `exclude_source_tags`, `code_symbol_rank_weight`, `conflict_pairs`).
    pub recall: RecallOptions,
}

impl Envelope {
    /// Whether the envelope stands in for a question: it brings the vector, or
    /// asks for a ranking without one.
    pub fn stands_in(&self) -> bool {
        self.vector.is_some() || self.no_embedding
    }

    /// Reads the envelope's fields from a request object (other fields ignored).
    ///
    /// # Errors
    ///
    /// A pydantic-shaped error for a field of the wrong type.
    pub fn from_json(value: &Value) -> Result<Envelope, RequestErrors> {
        let mut errors = Vec::new();
        let mut envelope = Envelope::default();
        let Value::Object(object) = value else {
            return Ok(envelope);
        };
        match object.get("vector") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                let mut vector = Vec::with_capacity(items.len());
                for (at, item) in items.iter().enumerate() {
                    match item.as_f64() {
                        Some(number) => vector.push(number as f32),
                        None => errors.push(FieldError {
                            kind: "float_type",
                            loc: vec![Loc::Field("vector".to_owned()), Loc::Index(at)],
                            msg: "Input should be a valid number".to_owned(),
                            input: item.clone(),
                            ctx: None,
                        }),
                    }
                }
                envelope.vector = Some(vector);
            }
            Some(other) => errors.push(FieldError {
                kind: "list_type",
                loc: vec![Loc::Field("vector".to_owned())],
                msg: "Input should be a valid list".to_owned(),
                input: other.clone(),
                ctx: None,
            }),
        }
        if let Some(flag) = object.get("no_embedding") {
            match lax::boolean(flag) {
                Ok(flag) => envelope.no_embedding = flag,
                Err(failure) => {
                    errors.push(failure.at(vec![Loc::Field("no_embedding".to_owned())], flag))
                }
            }
        }
        match object.get("now") {
            None | Some(Value::Null) => {}
            Some(now) => match lax::datetime(now) {
                Ok(t) => envelope.now = Some(if t.is_aware() { t } else { t.with_utc_offset() }),
                Err(failure) => errors.push(failure.at(vec![Loc::Field("now".to_owned())], now)),
            },
        }
        envelope.recall = RecallOptions::read(object, &mut errors);
        if envelope.vector.is_some() && envelope.no_embedding {
            errors.push(value_error(
                vec![Loc::Field("no_embedding".to_owned())],
                "give either `vector` or `no_embedding`, not both",
                object.get("no_embedding").cloned().unwrap_or_default(),
            ));
        }
        if errors.is_empty() {
            Ok(envelope)
        } else {
            Err(RequestErrors(errors))
        }
    }
}

/// Reads the request's fields from a JSON object, collecting errors.
struct FieldReader<'a> {
    object: &'a Map<String, Value>,
    errors: Vec<FieldError>,
}

impl FieldReader<'_> {
    /// One field: absent gives `default`; present is coerced by `read`, and an
    /// error is recorded (with the default kept) when it fails.
    fn field<T>(&mut self, name: &str, default: T, read: impl FnOnce(&Value) -> lax::Lax<T>) -> T {
        match self.object.get(name) {
            None => default,
            Some(value) => match read(value) {
                Ok(parsed) => parsed,
                Err(failure) => {
                    self.errors
                        .push(failure.at(vec![Loc::Field(name.to_owned())], value));
                    default
                }
            },
        }
    }

    fn optional<T>(&mut self, name: &str, read: impl FnOnce(&Value) -> lax::Lax<T>) -> Option<T> {
        self.field(name, None, |value| match value {
            Value::Null => Ok(None),
            value => read(value).map(Some),
        })
    }

    fn optional_text(&mut self, name: &str, min: usize, max: Option<usize>) -> Option<String> {
        self.optional(name, |value| {
            let text = lax::string(value)?;
            lax::string_length(&text, Some(min), max)?;
            Ok(text)
        })
    }

    fn flag(&mut self, name: &str) -> bool {
        self.field(name, false, lax::boolean)
    }

    fn read(&mut self) -> QueryRequest {
        let defaults = QueryRequest::default();
        let question = self.optional_text("question", 1, Some(MAX_QUESTION_CHARS));
        let min_confidence = self.field("min_confidence", defaults.min_confidence, |v| {
            let x = lax::float(v)?;
            lax::float_within(x, 0.0, 1.0)?;
            Ok(x)
        });
        let uncertainty_nature = self.optional("uncertainty_nature", |v| {
            lax::one_of(
                v,
                &enum_values(UncertaintyNature::ALL, UncertaintyNature::as_str),
            )
        });
        let assertion_modality = self.optional("assertion_modality", |v| {
            lax::one_of(
                v,
                &enum_values(AssertionModality::ALL, AssertionModality::as_str),
            )
        });
        let recency_window_days = self.optional("recency_window_days", lax::int);
        let audience = self.field("audience", defaults.audience, |v| {
            lax::one_of(v, &Audience::VALUES)
        });
        let top_k = self.field("top_k", defaults.top_k, |v| {
            // A Python int past i64 is kept by pydantic, then fails a bound.
            let k = match lax::integer(v)? {
                lax::Integer::Fits(k) => k,
                lax::Integer::Big { negative } => {
                    if negative {
                        i64::MIN
                    } else {
                        i64::MAX
                    }
                }
            };
            lax::int_within(k, 1, i64::from(MAX_TOP_K))?;
            Ok(k as u32)
        });
        let subject_id = self.optional("subject_id", lax::string);
        let tags = self.read_tags();
        let include_ancestors = self.flag("include_ancestors");
        let include_document_meta = self.flag("include_document_meta");
        let include_non_asserted = self.flag("include_non_asserted");
        let include_agreement = self.flag("include_agreement");
        let include_contestedness = self.flag("include_contestedness");
        let as_of = self.optional("as_of", lax::datetime);
        let window = self.read_window();
        let observer_project = self.optional_text("observer_project", 1, None);
        let grounded = self.optional("grounded", lax::boolean);
        let predicate = self.optional_text("predicate", 1, None);
        let object_eq = self.optional_text("object_eq", 1, None);
        let object_gt = self.optional_text("object_gt", 1, None);
        let object_lt = self.optional_text("object_lt", 1, None);
        let object_contains = self.optional_text("object_contains", 1, None);
        let count = self.flag("count");
        let group_by = self.optional("group_by", |v| lax::one_of(v, &GroupBy::VALUES));
        let min_effective_confidence = self.optional("min_effective_confidence", |v| {
            let x = lax::float(v)?;
            lax::float_within(x, 0.0, 1.0)?;
            Ok(x)
        });
        let list_predicates = self.flag("list_predicates");
        let list_vocabulary = self.flag("list_vocabulary");
        QueryRequest {
            question,
            min_confidence,
            uncertainty_nature,
            assertion_modality,
            recency_window_days,
            audience,
            top_k,
            subject_id,
            tags,
            include_ancestors,
            include_document_meta,
            include_non_asserted,
            include_agreement,
            include_contestedness,
            as_of,
            window,
            observer_project,
            grounded,
            predicate,
            object_eq,
            object_gt,
            object_lt,
            object_contains,
            count,
            group_by,
            min_effective_confidence,
            list_predicates,
            list_vocabulary,
        }
    }

    fn read_tags(&mut self) -> Vec<String> {
        let Some(value) = self.object.get("tags") else {
            return Vec::new();
        };
        let Value::Array(items) = value else {
            self.errors.push(FieldError {
                kind: "list_type",
                loc: vec![Loc::Field("tags".to_owned())],
                msg: "Input should be a valid list".to_owned(),
                input: value.clone(),
                ctx: None,
            });
            return Vec::new();
        };
        let mut tags = Vec::with_capacity(items.len());
        for (at, item) in items.iter().enumerate() {
            match lax::string(item) {
                Ok(tag) => tags.push(tag),
                Err(failure) => self
                    .errors
                    .push(failure.at(vec![Loc::Field("tags".to_owned()), Loc::Index(at)], item)),
            }
        }
        tags
    }

    fn read_window(&mut self) -> Option<TimeWindow> {
        let value = self.object.get("window")?;
        let object = match value {
            Value::Null => return None,
            Value::Object(object) => object,
            other => {
                self.errors.push(FieldError {
                    kind: "model_type",
                    loc: vec![Loc::Field("window".to_owned())],
                    msg: "Input should be a valid dictionary or instance of TimeWindow".to_owned(),
                    input: other.clone(),
                    ctx: Some(serde_json::json!({ "class_name": "TimeWindow" })),
                });
                return None;
            }
        };
        let before = self.errors.len();
        let end_of = |name: &str, errors: &mut Vec<FieldError>| match object.get(name) {
            None | Some(Value::Null) => None,
            Some(end) => match lax::datetime(end) {
                Ok(t) => Some(t),
                Err(failure) => {
                    errors.push(failure.at(
                        vec![Loc::Field("window".to_owned()), Loc::Field(name.to_owned())],
                        end,
                    ));
                    None
                }
            },
        };
        let start = end_of("start", &mut self.errors);
        let end = end_of("end", &mut self.errors);
        if self.errors.len() > before {
            return None;
        }
        match (TimeWindow { start, end }).checked() {
            Ok(window) => Some(window),
            Err(message) => {
                self.errors.push(value_error(
                    vec![Loc::Field("window".to_owned())],
                    &message,
                    value.clone(),
                ));
                None
            }
        }
    }
}

fn enum_values<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> Vec<(&'static str, T)> {
    all.iter().map(|&v| (name(v), v)).collect()
}

#[cfg(test)]
mod tests;
