//! Claim-filter bounds, parsed once when a request is validated.
//!
//! A bound (`object_eq`, `object_gt`, `object_lt`) is read as the reference's
//! `core/claims.py` reads it: a finite Python `Decimal` literal, else a
//! `datetime.fromisoformat` value (naive read as UTC), else, for `object_eq` only,
//! plain text. Parsing here, at validation, means nothing is re-parsed per
//! candidate.

use std::cmp::Ordering;

use crate::Timestamp;

/// A bound's typed value: what a claim object is compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundValue {
    /// A finite decimal number.
    Number(Decimal),
    /// An instant, microseconds since the epoch (UTC).
    Instant(i64),
}

impl BoundValue {
    /// Parses `text` as the reference's `parse_bound`: a number first, then an ISO
    /// 8601 date or datetime; `None` for anything else.
    pub fn parse(text: &str) -> Option<BoundValue> {
        Decimal::parse(text)
            .map(BoundValue::Number)
            .or_else(|| parse_instant(text).map(BoundValue::Instant))
    }
}

/// `datetime.fromisoformat` then naive-as-UTC, as microseconds since the epoch.
pub fn parse_instant(text: &str) -> Option<i64> {
    Timestamp::parse(text).ok().map(|t| t.utc_micros())
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
