//! Claim-filter bounds, parsed once when a request is validated.
//!
//! A bound (`object_eq`, `object_gt`, `object_lt`) is read as the reference's
//! `core/claims.py` reads it: a finite Python `Decimal` literal, else a
//! `datetime.fromisoformat` value (naive read as UTC), else, for `object_eq` only,
//! plain text. Parsing here, at validation, means nothing is re-parsed per
//! candidate.

use std::cmp::Ordering;

use crate::{
    pytext::{decimal_digit, is_python_space},
    Timestamp,
};

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
    /// Parses text as Python's `Decimal(str)` does (CPython's `_decimal` over
    /// libmpdec): surrounding Python whitespace stripped, every underscore
    /// dropped wherever it stands, any Unicode decimal digit read as its ASCII
    /// digit; then a sign, digits with an optional `.`, an optional exponent;
    /// within libmpdec's limits (the exponent of the last digit at least
    /// -1999999999999999997, that of the first at most 999999999999999999).
    /// Infinities and NaNs parse in Python but are not comparable quantities:
    /// `None` here, as for anything Python refuses.
    pub fn parse(text: &str) -> Option<Decimal> {
        const MAX_EMAX: i64 = 999_999_999_999_999_999;
        const MIN_ETINY: i64 = -1_999_999_999_999_999_997;
        // `numeric_as_ascii(text, strip_ws=1, ignore_underscores=1)`.
        let trimmed = text.trim_matches(is_python_space);
        let mut ascii = Vec::with_capacity(trimmed.len());
        for c in trimmed.chars() {
            match c {
                '_' => {}
                '\u{1}'..='\u{7F}' => ascii.push(c as u8),
                c if is_python_space(c) => ascii.push(b' '),
                c => ascii.push(b'0' + decimal_digit(c)?),
            }
        }
        let (negative, rest) = match ascii.first()? {
            b'-' => (true, &ascii[1..]),
            b'+' => (false, &ascii[1..]),
            _ => (false, &ascii[..]),
        };
        let (mantissa, exponent) = match rest.iter().position(|b| matches!(b, b'e' | b'E')) {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        let (whole, fraction) = match mantissa.iter().position(|&b| b == b'.') {
            Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
            None => (mantissa, &[][..]),
        };
        let all_digits = |part: &[u8]| part.iter().all(u8::is_ascii_digit);
        if !all_digits(whole) || !all_digits(fraction) || whole.len() + fraction.len() == 0 {
            return None;
        }
        let exponent: i64 = match exponent {
            None => 0,
            Some(e) => {
                let (sign, digits) = match e.first()? {
                    b'-' => (-1, &e[1..]),
                    b'+' => (1, &e[1..]),
                    _ => (1, e),
                };
                if digits.is_empty() || !all_digits(digits) {
                    return None;
                }
                let significant = &digits[digits.iter().take_while(|&&d| d == b'0').count()..];
                // Past i64 is past every limit below.
                if significant.len() > 19 {
                    return None;
                }
                let magnitude: i64 = if significant.is_empty() {
                    0
                } else {
                    std::str::from_utf8(significant).ok()?.parse().ok()?
                };
                sign * magnitude
            }
        };
        let mut digits: Vec<u8> = whole.iter().chain(fraction).map(|b| b - b'0').collect();
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        let mut exponent_value = exponent.checked_sub(i64::try_from(fraction.len()).ok()?)?;
        // libmpdec's limits on the exact value (zero counts one digit).
        let n_digits = i64::try_from(digits.len().max(1)).ok()?;
        if exponent_value < MIN_ETINY || exponent_value + n_digits - 1 > MAX_EMAX {
            return None;
        }
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
        assert_eq!(d("_1_"), d("1"));
        assert_eq!(d("1__0"), d("10"));
        assert_eq!(d("\u{0661}e\u{0662}"), d("100"));
        assert_eq!(d("\u{2009}1\u{1c}"), d("1"));
        assert!(Decimal::parse("1e999999999999999999").is_some());
        assert!(Decimal::parse("1e-1999999999999999997").is_some());
        assert_eq!(d(".5"), d("0.5"));
        assert_eq!(d("5."), d("5"));
        for bad in [
            "",
            "abc",
            "Infinity",
            "NaN",
            "1e",
            "--1",
            "1.2.3",
            "1 2",
            "1\0",
            "12e999999999999999999",
            "1e-1999999999999999998",
            "0.1e-1999999999999999997",
        ] {
            assert!(Decimal::parse(bad).is_none(), "{bad}");
        }
    }
}
