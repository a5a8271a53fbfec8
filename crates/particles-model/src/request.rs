//! The query request: what a caller may ask for, with the reference's defaults and
//! limits.

use garde::Validate;
use serde::{Deserialize, Serialize};

use crate::{AssertionModality, Timestamp, UncertaintyNature};

/// The largest `top_k` the reference accepts.
pub const MAX_TOP_K: u32 = 200;
/// The `top_k` of a request that does not say.
pub const DEFAULT_TOP_K: u32 = 40;
/// The longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 8192;

/// A semantic query over the ACTIVE particles of a store.
///
/// Build one with [`QueryRequest::default`] and set fields, then validate it through
/// `garde` before running it; every limit below is the reference's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct QueryRequest {
    /// The question text (1..=8192 characters). `None` ranks by effective confidence.
    #[garde(inner(length(chars, min = 1, max = MAX_QUESTION_CHARS)))]
    pub question: Option<String>,
    /// Drop candidates whose effective confidence is below this (0..=1).
    #[garde(custom(crate::particle::unit_interval))]
    pub min_confidence: f64,
    /// Keep only this uncertainty nature.
    #[garde(skip)]
    pub uncertainty_nature: Option<UncertaintyNature>,
    /// Keep only this assertion modality.
    #[garde(skip)]
    pub assertion_modality: Option<AssertionModality>,
    /// Keep only particles asserted in the last N days (0 or `None`: no window).
    #[garde(skip)]
    pub recency_window_days: Option<i64>,
    /// How many ranked particles to return before co-evidential collapse (1..=200).
    #[garde(range(min = 1, max = MAX_TOP_K))]
    pub top_k: u32,
    /// Start from this subject's particles.
    #[garde(skip)]
    pub subject_id: Option<String>,
    /// Keep DOCUMENT_META particles (excluded by default).
    #[garde(skip)]
    pub include_document_meta: bool,
    /// Keep DECLINED and HYPOTHETICAL particles (excluded by default).
    #[garde(skip)]
    pub include_non_asserted: bool,
    /// Keep particles tagged with any of these tags or their taxonomy subtrees.
    #[garde(inner(length(min = 1)))]
    pub tags: Vec<String>,
    /// Also match particles tagged only with an ancestor of a requested tag.
    #[garde(skip)]
    pub include_ancestors: bool,
    /// Keep structured claims with this predicate (case-folded, exact).
    #[garde(inner(length(min = 1)))]
    pub predicate: Option<String>,
    /// Keep structured claims whose object equals this.
    #[garde(inner(length(min = 1)))]
    pub object_eq: Option<String>,
    /// Keep structured claims whose object is greater than this number or date.
    #[garde(inner(length(min = 1)))]
    pub object_gt: Option<String>,
    /// Keep structured claims whose object is less than this number or date.
    #[garde(inner(length(min = 1)))]
    pub object_lt: Option<String>,
    /// Keep structured claims whose object contains this text (case-folded).
    #[garde(inner(length(min = 1)))]
    pub object_contains: Option<String>,
    /// World-time window: keep beliefs that held (or began) within it, of any
    /// status (the window route).
    #[garde(dive)]
    pub window: Option<TimeWindow>,
    /// Believed at this instant (naive read as UTC): the as-of route. Decay and
    /// the recency window are evaluated at it. Callers reject a future instant.
    #[garde(skip)]
    pub as_of: Option<Timestamp>,
}

impl Default for QueryRequest {
    fn default() -> Self {
        QueryRequest {
            question: None,
            min_confidence: 0.0,
            uncertainty_nature: None,
            assertion_modality: None,
            recency_window_days: None,
            top_k: DEFAULT_TOP_K,
            subject_id: None,
            include_document_meta: false,
            include_non_asserted: false,
            tags: Vec::new(),
            include_ancestors: false,
            predicate: None,
            object_eq: None,
            object_gt: None,
            object_lt: None,
            object_contains: None,
            as_of: None,
            window: None,
        }
    }
}

/// A world-time window; either end may be open, both equal is a point (`--on`).
/// Naive ends are read as UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Validate)]
pub struct TimeWindow {
    /// The first instant in the window.
    #[garde(custom(window_bounds(&self.end)))]
    pub start: Option<Timestamp>,
    /// The last instant in the window.
    #[garde(skip)]
    pub end: Option<Timestamp>,
}

fn window_bounds(
    end: &Option<Timestamp>,
) -> impl FnOnce(&Option<Timestamp>, &()) -> garde::Result + '_ {
    move |start, _| match (start, end) {
        (None, None) => Err(garde::Error::new("a time window needs a start or an end")),
        (Some(s), Some(e)) if s.utc_micros() > e.utc_micros() => Err(garde::Error::new(format!(
            "the window's start {s} is after its end {e}"
        ))),
        _ => Ok(()),
    }
}

impl TimeWindow {
    /// Whether both ends are set and name the same instant.
    pub fn is_point(&self) -> bool {
        matches!((self.start, self.end), (Some(s), Some(e)) if s.utc_micros() == e.utc_micros())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_the_references() {
        let ok = QueryRequest::default();
        assert!(ok.validate().is_ok());
        for top_k in [0, 201] {
            let bad = QueryRequest {
                top_k,
                ..QueryRequest::default()
            };
            let report = bad.validate().unwrap_err().to_string();
            assert!(report.contains("top_k"), "{report}");
        }
        let bad = QueryRequest {
            min_confidence: f64::NAN,
            ..QueryRequest::default()
        };
        assert!(bad.validate().is_err());
        let bad = QueryRequest {
            question: Some(String::new()),
            ..QueryRequest::default()
        };
        assert!(bad.validate().is_err());
    }

    #[test]
    fn json_defaults_and_unknown_fields() {
        let request: QueryRequest = serde_json::from_str(r#"{"question": "q"}"#).unwrap();
        assert_eq!(request.top_k, 40);
        assert!(serde_json::from_str::<QueryRequest>(r#"{"topk": 3}"#).is_err());
    }
}
