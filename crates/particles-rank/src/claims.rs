//! The structured-claim filters (`--predicate`, `--object-eq/-gt/-lt/-contains`):
//! typed comparison of a claim's object as the reference's `core/claims.py` does.
//!
//! A numeric XSD datatype (`decimal`, `integer`, `float`, `double`, as CURIE or IRI)
//! compares as an exact decimal, `date`/`dateTime` as an instant (naive read as UTC);
//! anything else, or a lexical form that does not parse, is a string compared only
//! by equality and containment, case-folded.

use std::cmp::Ordering;

use particles_model::{ClaimTerm, StructuredClaim, Timestamp};

/// The claim conditions of a request; all intersect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimFilters {
    /// The predicate, compared case-folded and exactly.
    pub predicate: Option<String>,
    /// The object equals this (typed when both sides parse to one type).
    pub object_eq: Option<String>,
    /// The object is greater than this number or date.
    pub object_gt: Option<String>,
    /// The object is less than this number or date.
    pub object_lt: Option<String>,
    /// The object's text contains this, case-folded.
    pub object_contains: Option<String>,
}

impl ClaimFilters {
    /// Whether any condition is set.
    pub fn is_active(&self) -> bool {
        self.predicate.is_some()
            || self.object_eq.is_some()
            || self.object_gt.is_some()
            || self.object_lt.is_some()
            || self.object_contains.is_some()
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

/// An exact decimal: `coefficient × 10^exponent`, Python `Decimal` semantics for
/// comparison (so `1.0 == 1` and `-0 == 0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decimal {
    negative: bool,
    /// Digits without leading or trailing zeros; empty for zero.
    digits: Vec<u8>,
    exponent: i64,
}

impl Decimal {
    /// Parses Python's `Decimal(str)` grammar (surrounding whitespace, sign, digits
    /// with single underscores between them, a fraction, an exponent). Infinities and
    /// NaNs parse in Python but are not comparable quantities: `None` here.
    pub fn parse(text: &str) -> Option<Decimal> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        let (whole, fraction) = match mantissa.split_once('.') {
            Some((whole, fraction)) => (whole, Some(fraction)),
            None => (mantissa, None),
        };
        let whole = digit_run(whole)?;
        let fraction = match fraction {
            Some(f) => digit_run(f)?,
            None => String::new(),
        };
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        let mut exponent_value: i64 = match exponent {
            None => 0,
            Some(e) => {
                let (sign, digits) = match e.as_bytes().first()? {
                    b'-' => (-1, &e[1..]),
                    b'+' => (1, &e[1..]),
                    _ => (1, e),
                };
                let digits = digit_run(digits)?;
                if digits.is_empty() {
                    return None;
                }
                sign * digits.parse::<i64>().unwrap_or(i64::MAX / 4)
            }
        };
        exponent_value -= fraction.len() as i64;
        let mut digits: Vec<u8> = whole
            .bytes()
            .chain(fraction.bytes())
            .map(|b| b - b'0')
            .collect();
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        while digits.last() == Some(&0) {
            digits.pop();
            exponent_value += 1;
        }
        if digits.is_empty() {
            // Every zero is the same number.
            exponent_value = 0;
        }
        Some(Decimal {
            negative: negative && !digits.is_empty(),
            digits,
            exponent: exponent_value,
        })
    }

    fn compare_magnitude(&self, other: &Decimal) -> Ordering {
        match (self.digits.is_empty(), other.digits.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        let adjusted = |d: &Decimal| d.exponent + d.digits.len() as i64;
        adjusted(self)
            .cmp(&adjusted(other))
            .then_with(|| self.digits.cmp(&other.digits))
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.compare_magnitude(other),
            (true, true) => other.compare_magnitude(self),
        }
    }
}

/// ASCII digits with single underscores between digits (Python accepts them), as
/// a plain digit string; `None` when malformed. An empty run is `Some("")`.
fn digit_run(text: &str) -> Option<String> {
    if text.starts_with('_') || text.ends_with('_') || text.contains("__") {
        return None;
    }
    text.chars()
        .filter(|&c| c != '_')
        .map(|c| c.is_ascii_digit().then_some(c))
        .collect()
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

fn parse_instant(text: &str) -> Option<i64> {
    Timestamp::parse(text).ok().map(|t| t.utc_micros())
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

fn parse_bound(value: &str) -> Option<Normalized> {
    Decimal::parse(value)
        .map(Normalized::Number)
        .or_else(|| parse_instant(value).map(Normalized::Instant))
}

/// Whether a gt/lt bound is comparable at all (a number or an ISO date/datetime);
/// a request with any other bound is refused before it runs.
pub fn is_comparable_bound(value: &str) -> bool {
    parse_bound(value).is_some()
}

/// Python's `str.casefold`.
fn fold(text: &str) -> String {
    caseless::default_case_fold_str(text)
}

fn eq_matches(term: &ClaimTerm, raw: &str) -> bool {
    match (normalize_term(term), parse_bound(raw)) {
        (Normalized::Number(a), Some(Normalized::Number(b))) => a == b,
        (Normalized::Instant(a), Some(Normalized::Instant(b))) => a == b,
        _ => fold(&term.value) == fold(raw),
    }
}

/// Applies the filters to one claim: the string conditions first (a claim outside
/// the slice is unmatched), then the typed bounds.
pub fn match_claim(claim: &StructuredClaim, filters: &ClaimFilters) -> ClaimMatch {
    if let Some(predicate) = &filters.predicate {
        if fold(&claim.predicate.value) != fold(predicate) {
            return ClaimMatch::Unmatched;
        }
    }
    if let Some(needle) = &filters.object_contains {
        if !fold(&claim.object.value).contains(&fold(needle)) {
            return ClaimMatch::Unmatched;
        }
    }
    if let Some(raw) = &filters.object_eq {
        if !eq_matches(&claim.object, raw) {
            return ClaimMatch::Unmatched;
        }
    }
    for (raw, greater) in [(&filters.object_gt, true), (&filters.object_lt, false)] {
        let Some(raw) = raw else { continue };
        let Some(bound) = parse_bound(raw) else {
            // Requests are validated before they run; an unparsable bound matches
            // nothing rather than panicking.
            return ClaimMatch::Unmatched;
        };
        let ordering = match (normalize_term(&claim.object), bound) {
            (Normalized::Number(a), Normalized::Number(b)) => a.cmp(&b),
            (Normalized::Instant(a), Normalized::Instant(b)) => a.cmp(&b),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_compare_exactly() {
        let d = |s: &str| Decimal::parse(s).unwrap();
        assert_eq!(d("1.0"), d("1"));
        assert_eq!(d("-0"), d("0.000"));
        assert!(d("0.1") < d("0.10000000000000001"));
        assert!(d("-2") < d("-1.5"));
        assert!(d("1e3") > d("999.999"));
        assert_eq!(d(" 1_000 "), d("1000"));
        assert_eq!(d(".5"), d("0.5"));
        assert_eq!(d("5."), d("5"));
        for bad in [
            "", "abc", "1__0", "_1", "Infinity", "NaN", "1e", "--1", "1.2.3",
        ] {
            assert!(Decimal::parse(bad).is_none(), "{bad}");
        }
    }
}
