//! The structured-claim filters (`--predicate`, `--object-eq/-gt/-lt/-contains`):
//! typed comparison of a claim's object as the reference's `core/claims.py` does.
//!
//! A numeric XSD datatype (`decimal`, `integer`, `float`, `double`, as CURIE or IRI)
//! compares as an exact decimal, `date`/`dateTime` as an instant (naive read as UTC);
//! anything else, or a lexical form that does not parse, is a string compared only
//! by equality and containment, case-folded.

use std::cmp::Ordering;

use particles_model::{
    parse_instant, BoundValue, ClaimTerm, Decimal, StructuredClaim, ValidRequest,
};

/// The claim conditions of a request, compiled once per query: the predicate and
/// the containment needle case-folded, the bounds already parsed at validation.
/// All conditions intersect.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimFilters {
    predicate: Option<String>,
    contains: Option<String>,
    /// `object_eq`: its folded text, and its typed value when it is a number or an
    /// instant.
    eq: Option<(String, Option<BoundValue>)>,
    gt: Option<BoundValue>,
    lt: Option<BoundValue>,
}

impl ClaimFilters {
    /// The filters of a validated request (none when it has no claim filter).
    pub fn new(request: &ValidRequest) -> ClaimFilters {
        ClaimFilters {
            predicate: request.predicate.as_deref().map(fold),
            contains: request.object_contains.as_deref().map(fold),
            eq: request
                .object_eq
                .as_deref()
                .map(|raw| (fold(raw), request.eq_bound().cloned())),
            gt: request.gt_bound().cloned(),
            lt: request.lt_bound().cloned(),
        }
    }

    /// Whether any condition is set.
    pub fn is_active(&self) -> bool {
        self.predicate.is_some()
            || self.contains.is_some()
            || self.eq.is_some()
            || self.gt.is_some()
            || self.lt.is_some()
    }
}

/// How one claim fared against the filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimMatch {
    /// Every condition holds.
    Matched,
    /// A condition fails.
    Unmatched,
    /// In the filtered slice, but the object cannot be compared with a gt/lt bound:
    /// counted and disclosed, never silently dropped.
    NotComparable,
}

/// A normalized claim object or bound.
#[derive(Debug, Clone, PartialEq)]
enum Normalized {
    Number(Decimal),
    /// Microseconds since the epoch, UTC.
    Instant(i64),
    Text,
}

fn xsd_local_name(datatype: Option<&str>) -> Option<&str> {
    let datatype = datatype?;
    datatype
        .strip_prefix("http://www.w3.org/2001/XMLSchema#")
        .or_else(|| datatype.strip_prefix("xsd:"))
}

fn normalize_term(term: &ClaimTerm) -> Normalized {
    match xsd_local_name(term.datatype.as_deref()) {
        Some("decimal" | "integer" | "float" | "double") => {
            Decimal::parse(&term.value).map_or(Normalized::Text, Normalized::Number)
        }
        Some("date" | "dateTime") => {
            parse_instant(&term.value).map_or(Normalized::Text, Normalized::Instant)
        }
        _ => Normalized::Text,
    }
}

/// Python's `str.casefold`, with Python 3.11's Unicode (14.0).
fn fold(text: &str) -> String {
    particles_pytext::casefold(text)
}

fn eq_matches(term: &ClaimTerm, folded: &str, typed: Option<&BoundValue>) -> bool {
    match (normalize_term(term), typed) {
        (Normalized::Number(a), Some(BoundValue::Number(b))) => a == *b,
        (Normalized::Instant(a), Some(BoundValue::Instant(b))) => a == *b,
        _ => fold(&term.value) == folded,
    }
}

/// Applies the filters to one claim: the string conditions first (a claim outside
/// the slice is unmatched), then the typed bounds.
pub fn match_claim(claim: &StructuredClaim, filters: &ClaimFilters) -> ClaimMatch {
    if let Some(predicate) = &filters.predicate {
        if fold(&claim.predicate.value) != *predicate {
            return ClaimMatch::Unmatched;
        }
    }
    if let Some(needle) = &filters.contains {
        if !fold(&claim.object.value).contains(needle.as_str()) {
            return ClaimMatch::Unmatched;
        }
    }
    if let Some((folded, typed)) = &filters.eq {
        if !eq_matches(&claim.object, folded, typed.as_ref()) {
            return ClaimMatch::Unmatched;
        }
    }
    for (bound, greater) in [(&filters.gt, true), (&filters.lt, false)] {
        let Some(bound) = bound else { continue };
        let ordering = match (normalize_term(&claim.object), bound) {
            (Normalized::Number(a), BoundValue::Number(b)) => a.cmp(b),
            (Normalized::Instant(a), BoundValue::Instant(b)) => a.cmp(b),
            _ => return ClaimMatch::NotComparable,
        };
        let holds = if greater {
            ordering == Ordering::Greater
        } else {
            ordering == Ordering::Less
        };
        if !holds {
            return ClaimMatch::Unmatched;
        }
    }
    ClaimMatch::Matched
}
