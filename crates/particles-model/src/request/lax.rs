//! Pydantic v2's lax coercions for the JSON values of a request, with its error
//! types and messages, so a bad request is refused with the reference's verdict
//! (and, over HTTP, FastAPI's 422 body).
//!
//! Only what `QueryRequest`'s field types need is here: strings with length limits,
//! floats and ints with `le`/`ge` bounds, booleans, string enums, lists of strings
//! and datetimes (pydantic-core's `speedate` grammar, which is not Python's
//! `fromisoformat`).

use std::cmp::Ordering;

use serde::Serialize;
use serde_json::{json, Value};

use crate::Timestamp;

/// One step of an error's location: a field name or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Loc {
    /// A field of an object.
    Field(String),
    /// A position in a list.
    Index(usize),
}

/// One validation error, in pydantic's shape: `type`, `loc`, `msg`, `input` and,
/// for the error types that have one, `ctx`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldError {
    /// Pydantic's error type, e.g. `greater_than_equal`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Where the error is, from the request's root.
    pub loc: Vec<Loc>,
    /// The human message, pydantic's text.
    pub msg: String,
    /// The offending input value.
    pub input: Value,
    /// The error type's context (bounds, expected values), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctx: Option<Value>,
}

/// A coercion failure before it knows where it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    pub(crate) kind: &'static str,
    pub(crate) msg: String,
    pub(crate) ctx: Option<Value>,
}

impl Failure {
    fn new(kind: &'static str, msg: impl Into<String>) -> Failure {
        Failure {
            kind,
            msg: msg.into(),
            ctx: None,
        }
    }

    fn with_ctx(mut self, ctx: Value) -> Failure {
        self.ctx = Some(ctx);
        self
    }

    pub(crate) fn at(self, loc: Vec<Loc>, input: &Value) -> FieldError {
        FieldError {
            kind: self.kind,
            loc,
            msg: self.msg,
            input: input.clone(),
            ctx: self.ctx,
        }
    }
}

pub(crate) type Lax<T> = Result<T, Failure>;

/// `str`: only a JSON string (pydantic v2 does not turn numbers into text).
pub(crate) fn string(value: &Value) -> Lax<String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        _ => Err(Failure::new(
            "string_type",
            "Input should be a valid string",
        )),
    }
}

/// A string's length in characters (Python counts code points) within limits.
pub(crate) fn string_length(text: &str, min: Option<usize>, max: Option<usize>) -> Lax<()> {
    let length = text.chars().count();
    if let Some(min) = min.filter(|&min| length < min) {
        let unit = if min == 1 { "character" } else { "characters" };
        return Err(Failure::new(
            "string_too_short",
            format!("String should have at least {min} {unit}"),
        )
        .with_ctx(json!({ "min_length": min })));
    }
    if let Some(max) = max.filter(|&max| length > max) {
        let unit = if max == 1 { "character" } else { "characters" };
        return Err(Failure::new(
            "string_too_long",
            format!("String should have at most {max} {unit}"),
        )
        .with_ctx(json!({ "max_length": max })));
    }
    Ok(())
}

/// `float`, lax: numbers, booleans and numeric strings (with `inf` and `nan`).
pub(crate) fn float(value: &Value) -> Lax<f64> {
    match value {
        Value::Number(number) => number
            .as_f64()
            .ok_or_else(|| Failure::new("float_type", "Input should be a valid number")),
        Value::Bool(flag) => Ok(if *flag { 1.0 } else { 0.0 }),
        Value::String(text) => parse_float_text(text).ok_or_else(|| {
            Failure::new(
                "float_parsing",
                "Input should be a valid number, unable to parse string as a number",
            )
        }),
        _ => Err(Failure::new("float_type", "Input should be a valid number")),
    }
}

/// Python's `float(str)` for the forms pydantic accepts: surrounding whitespace,
/// a sign, digits with single underscores, a fraction, an exponent, `inf`,
/// `infinity` and `nan` in any case.
fn parse_float_text(text: &str) -> Option<f64> {
    let trimmed = text.trim();
    let unsigned = trimmed.trim_start_matches(['+', '-']);
    if trimmed.len() - unsigned.len() > 1 {
        return None;
    }
    let lower = unsigned.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "infinity" | "nan") {
        let negative = trimmed.starts_with('-');
        return Some(match (lower.as_str(), negative) {
            ("nan", _) => f64::NAN,
            (_, true) => f64::NEG_INFINITY,
            (_, false) => f64::INFINITY,
        });
    }
    if unsigned.is_empty()
        || unsigned.starts_with('_')
        || unsigned.ends_with('_')
        || unsigned.contains("__")
        || !unsigned
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'_' | b'+' | b'-'))
    {
        return None;
    }
    // Underscores only between digits, which the check above and Rust's parser
    // (which rejects misplaced signs and dots) together enforce.
    let cleaned: String = trimmed.chars().filter(|&c| c != '_').collect();
    cleaned.parse().ok()
}

/// `int`, lax: integers, floats without a fraction, booleans and integral strings
/// (`"5"`, `" 5 "`, `"5.0"`).
pub(crate) fn int(value: &Value) -> Lax<i64> {
    let from_float = |f: f64| -> Lax<i64> {
        if !f.is_finite() {
            return Err(Failure::new(
                "finite_number",
                "Input should be a finite number",
            ));
        }
        if f.fract() != 0.0 {
            return Err(Failure::new(
                "int_from_float",
                "Input should be a valid integer, got a number with a fractional part",
            ));
        }
        if f.abs() >= 9.223_372_036_854_776e18 {
            return Err(Failure::new(
                "int_parsing_size",
                "Unable to parse input string as an integer, exceeded maximum size",
            ));
        }
        Ok(f as i64)
    };
    match value {
        Value::Number(number) => match number.as_i64() {
            Some(i) => Ok(i),
            None => match number.as_u64() {
                Some(_) => Err(Failure::new(
                    "int_parsing_size",
                    "Unable to parse input string as an integer, exceeded maximum size",
                )),
                None => from_float(number.as_f64().unwrap_or(f64::NAN)),
            },
        },
        Value::Bool(flag) => Ok(i64::from(*flag)),
        Value::String(text) => {
            let parsing = || {
                Failure::new(
                    "int_parsing",
                    "Input should be a valid integer, unable to parse string as an integer",
                )
            };
            let trimmed = text.trim();
            let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
            let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
            let integral = !whole.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit() || b == b'_')
                && !whole.starts_with('_')
                && !whole.ends_with('_')
                && !whole.contains("__")
                && fraction.bytes().all(|b| b == b'0');
            if !integral {
                return Err(parsing());
            }
            let negative = trimmed.starts_with('-');
            let whole: String = whole.chars().filter(|&c| c != '_').collect();
            let magnitude: i64 = whole.parse().map_err(|_| {
                Failure::new(
                    "int_parsing_size",
                    "Unable to parse input string as an integer, exceeded maximum size",
                )
            })?;
            Ok(if negative { -magnitude } else { magnitude })
        }
        _ => Err(Failure::new("int_type", "Input should be a valid integer")),
    }
}

/// `bool`, lax: booleans, 0/1 as numbers and the strings pydantic knows.
pub(crate) fn boolean(value: &Value) -> Lax<bool> {
    let parsing = || {
        Failure::new(
            "bool_parsing",
            "Input should be a valid boolean, unable to interpret input",
        )
    };
    match value {
        Value::Bool(flag) => Ok(*flag),
        Value::Number(number) => match number.as_f64() {
            Some(0.0) => Ok(false),
            Some(1.0) => Ok(true),
            _ => Err(parsing()),
        },
        Value::String(text) => match text.to_ascii_lowercase().as_str() {
            "0" | "off" | "f" | "false" | "n" | "no" => Ok(false),
            "1" | "on" | "t" | "true" | "y" | "yes" => Ok(true),
            _ => Err(parsing()),
        },
        _ => Err(Failure::new("bool_type", "Input should be a valid boolean")),
    }
}

/// A string enum: exactly one of `values`.
pub(crate) fn one_of<T: Copy>(value: &Value, values: &[(&'static str, T)]) -> Lax<T> {
    if let Value::String(text) = value {
        if let Some((_, variant)) = values.iter().find(|(name, _)| name == text) {
            return Ok(*variant);
        }
    }
    let expected = expected_list(values.iter().map(|(name, _)| *name));
    Err(Failure::new("enum", format!("Input should be {expected}"))
        .with_ctx(json!({ "expected": expected })))
}

/// `'A', 'B' or 'C'`, as pydantic lists an enum's values.
fn expected_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = names.map(|name| format!("'{name}'")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// A float bound check, in pydantic-core's order (`le` before `ge`, so NaN fails
/// `le`). The context keeps the bound as given; the message prints it as Python
/// would print an int when it is integral.
pub(crate) fn float_within(value: f64, ge: f64, le: f64) -> Lax<()> {
    // NaN fails both: `partial_cmp` is `None`.
    if !matches!(
        value.partial_cmp(&le),
        Some(Ordering::Less | Ordering::Equal)
    ) {
        return Err(Failure::new(
            "less_than_equal",
            format!("Input should be less than or equal to {}", bound_text(le)),
        )
        .with_ctx(json!({ "le": le })));
    }
    if !matches!(
        value.partial_cmp(&ge),
        Some(Ordering::Greater | Ordering::Equal)
    ) {
        return Err(Failure::new(
            "greater_than_equal",
            format!(
                "Input should be greater than or equal to {}",
                bound_text(ge)
            ),
        )
        .with_ctx(json!({ "ge": ge })));
    }
    Ok(())
}

/// An int bound check (`le` before `ge`).
pub(crate) fn int_within(value: i64, ge: i64, le: i64) -> Lax<()> {
    if value > le {
        return Err(Failure::new(
            "less_than_equal",
            format!("Input should be less than or equal to {le}"),
        )
        .with_ctx(json!({ "le": le })));
    }
    if value < ge {
        return Err(Failure::new(
            "greater_than_equal",
            format!("Input should be greater than or equal to {ge}"),
        )
        .with_ctx(json!({ "ge": ge })));
    }
    Ok(())
}

fn bound_text(bound: f64) -> String {
    if bound.fract() == 0.0 && bound.abs() < 1e15 {
        format!("{}", bound as i64)
    } else {
        format!("{bound}")
    }
}

/// `datetime`, lax, as pydantic-core parses it: an RFC 3339-like text (`T`, `t`,
/// `_` or a space between date and time; `HH:MM[:SS[.f]]`; `Z` or `±HH[:]MM`), a
/// bare date (midnight, naive), or Unix time as a number or numeric text (seconds,
/// or milliseconds above 2e10; aware UTC).
pub(crate) fn datetime(value: &Value) -> Lax<Timestamp> {
    match value {
        Value::String(text) => parse_datetime_text(text),
        Value::Number(number) => match number.as_f64() {
            Some(seconds) => from_unix(seconds),
            None => Err(Failure::new(
                "datetime_type",
                "Input should be a valid datetime",
            )),
        },
        _ => Err(Failure::new(
            "datetime_type",
            "Input should be a valid datetime",
        )),
    }
}

fn date_failure(reason: &str) -> Failure {
    Failure::new(
        "datetime_from_date_parsing",
        format!("Input should be a valid datetime or date, {reason}"),
    )
    .with_ctx(json!({ "error": reason }))
}

fn from_unix(seconds: f64) -> Lax<Timestamp> {
    if seconds.is_nan() {
        return Err(Failure::new(
            "datetime_parsing",
            "Input should be a valid datetime, NaN values not permitted",
        )
        .with_ctx(json!({ "error": "NaN values not permitted" })));
    }
    // speedate reads values above 2e10 as milliseconds.
    let seconds = if seconds.abs() > 2e10 {
        seconds / 1000.0
    } else {
        seconds
    };
    let too_far = || {
        Failure::new(
            "datetime_parsing",
            "Input should be a valid datetime, dates after 9999 are not supported as unix timestamps",
        )
        .with_ctx(json!({ "error": "dates after 9999 are not supported as unix timestamps" }))
    };
    if !seconds.is_finite() || seconds.abs() > 3e11 {
        return Err(too_far());
    }
    let whole = seconds.floor();
    let micros = ((seconds - whole) * 1e6).round() as i64;
    let total = (whole as i64)
        .checked_mul(1_000_000)
        .and_then(|m| m.checked_add(micros))
        .ok_or_else(too_far)?;
    Timestamp::from_utc_micros(total)
        .map(Timestamp::with_utc_offset)
        .ok_or_else(too_far)
}

fn parse_datetime_text(text: &str) -> Lax<Timestamp> {
    let bytes = text.as_bytes();
    // A number in text is Unix time.
    if !bytes.is_empty()
        && bytes
            .iter()
            .enumerate()
            .all(|(at, b)| b.is_ascii_digit() || (*b == b'.') || (at == 0 && *b == b'-'))
        && bytes.iter().filter(|b| **b == b'.').count() <= 1
        && bytes.iter().any(u8::is_ascii_digit)
        && !(bytes.len() >= 5 && bytes[4] == b'-')
    {
        if let Ok(seconds) = text.parse::<f64>() {
            return from_unix(seconds);
        }
    }
    if bytes.len() < 10 {
        return Err(date_failure("input is too short"));
    }
    let digit = |at: usize| -> Option<u32> {
        bytes
            .get(at)
            .filter(|b| b.is_ascii_digit())
            .map(|b| u32::from(b - b'0'))
    };
    let number = |from: usize, count: usize| -> Option<u32> {
        (from..from + count).try_fold(0u32, |acc, at| Some(acc * 10 + digit(at)?))
    };
    let year = number(0, 4).ok_or_else(|| date_failure("invalid character in year"))?;
    if bytes[4] != b'-' {
        return Err(date_failure("invalid date separator, expected `-`"));
    }
    let month = number(5, 2).ok_or_else(|| date_failure("invalid character in month"))?;
    if bytes[7] != b'-' {
        return Err(date_failure("invalid date separator, expected `-`"));
    }
    let day = number(8, 2).ok_or_else(|| date_failure("invalid character in day"))?;
    if !(1..=12).contains(&month) {
        return Err(date_failure(
            "month value is outside expected range of 1-12",
        ));
    }
    if year == 0 {
        return Err(Failure::new(
            "datetime_parsing",
            "Input should be a valid datetime, year 0 is out of range",
        )
        .with_ctx(json!({ "error": "year 0 is out of range" })));
    }
    let midnight = Timestamp::from_fields(year as u16, month as u8, day as u8, 0, 0, 0, 0)
        .ok_or_else(|| date_failure("day value is outside expected range"))?;
    if bytes.len() == 10 {
        return Ok(midnight);
    }
    let extra = || date_failure("unexpected extra characters at the end of the input");
    if !matches!(bytes[10], b'T' | b't' | b' ' | b'_') {
        return Err(extra());
    }
    let mut at = 11;
    let hour = number(at, 2).ok_or_else(extra)?;
    at += 2;
    if bytes.get(at) != Some(&b':') {
        return Err(extra());
    }
    let minute = number(at + 1, 2).ok_or_else(extra)?;
    at += 3;
    let mut second = 0;
    let mut micro = 0;
    if bytes.get(at) == Some(&b':') {
        second = number(at + 1, 2).ok_or_else(extra)?;
        at += 3;
        if matches!(bytes.get(at), Some(b'.' | b',')) {
            let start = at + 1;
            let mut end = start;
            while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                end += 1;
            }
            if end == start {
                return Err(extra());
            }
            // Digits past the sixth are dropped, not rounded.
            for position in 0..6 {
                micro = micro * 10
                    + if start + position < end {
                        digit(start + position).unwrap_or(0)
                    } else {
                        0
                    };
            }
            at = end;
        }
    }
    if hour > 23 || minute > 59 || second > 59 {
        return Err(extra());
    }
    let naive = midnight.with_time_of_day(hour as u8, minute as u8, second as u8);
    let naive = Timestamp::from_fields(
        year as u16,
        month as u8,
        day as u8,
        hour as u8,
        minute as u8,
        second as u8,
        micro,
    )
    .unwrap_or(naive);
    let offset = match bytes.get(at) {
        None => return Ok(naive),
        Some(b'Z' | b'z') => {
            at += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            let hours = number(at + 1, 2).ok_or_else(extra)?;
            at += 3;
            if bytes.get(at) == Some(&b':') {
                at += 1;
            }
            let minutes = number(at, 2).ok_or_else(extra)?;
            at += 2;
            if hours > 23 || minutes > 59 {
                return Err(extra());
            }
            let seconds = (hours * 3600 + minutes * 60) as i32;
            if *sign == b'-' {
                -seconds
            } else {
                seconds
            }
        }
        Some(_) => return Err(extra()),
    };
    if at != bytes.len() {
        return Err(extra());
    }
    Ok(naive.with_offset_seconds(offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(value: Value) -> String {
        datetime(&value).map(|t| t.to_string()).unwrap()
    }

    fn err(value: Value) -> &'static str {
        datetime(&value).unwrap_err().kind
    }

    #[test]
    fn datetimes_as_pydantic_reads_them() {
        assert_eq!(ok(json!("2020-01-01")), "2020-01-01T00:00:00");
        assert_eq!(ok(json!("2020-01-01t10:00")), "2020-01-01T10:00:00");
        assert_eq!(ok(json!("2020-01-01_10:00:00z")), "2020-01-01T10:00:00Z");
        assert_eq!(
            ok(json!("2020-01-01T10:00:00+0200")),
            "2020-01-01T10:00:00+02:00"
        );
        assert_eq!(
            ok(json!("2020-01-01T10:00:00,5")),
            "2020-01-01T10:00:00.500000"
        );
        assert_eq!(
            ok(json!("2020-01-01T10:00:59.999999999")),
            "2020-01-01T10:00:59.999999"
        );
        assert_eq!(
            ok(json!("2020-01-01T10:00:00-00:00")),
            "2020-01-01T10:00:00Z"
        );
        assert_eq!(ok(json!(1_600_000_000)), "2020-09-13T12:26:40Z");
        assert_eq!(ok(json!("1600000000.5")), "2020-09-13T12:26:40.500000Z");
        assert_eq!(ok(json!(1_600_000_000_000i64)), "2020-09-13T12:26:40Z");
        assert_eq!(ok(json!(-5)), "1969-12-31T23:59:55Z");
        assert_eq!(ok(json!("20200101")), "1970-08-22T19:08:21Z");
        for bad in [
            "2020-01-01T10",
            "2020-01-01T10:00:00+02",
            "2020-01-01T24:00:00",
            "2020-02-30",
            "2020-1-1",
            " 2020-01-01",
            "2020-01-01 ",
            "1e9",
            "2020-01-01T10:00:00 Z",
            "10000-01-01",
            "2020-01-01T10:00:00.Z",
            "2020-01-01T1:00",
            "",
            "now",
            "2020-01-01T10:00:00+24:00",
        ] {
            assert_eq!(err(json!(bad)), "datetime_from_date_parsing", "{bad}");
        }
        assert_eq!(err(json!("0000-01-01")), "datetime_parsing");
        assert_eq!(err(json!(1e20)), "datetime_parsing");
        assert_eq!(err(json!(true)), "datetime_type");
        assert_eq!(err(Value::Null), "datetime_type");
    }

    #[test]
    fn numbers_and_flags_as_pydantic_coerces_them() {
        assert_eq!(int(&json!("5")), Ok(5));
        assert_eq!(int(&json!(5.0)), Ok(5));
        assert_eq!(int(&json!(" 5.0 ")), Ok(5));
        assert_eq!(int(&json!(true)), Ok(1));
        assert_eq!(int(&json!(5.5)).unwrap_err().kind, "int_from_float");
        assert_eq!(int(&json!("5.5")).unwrap_err().kind, "int_parsing");
        assert_eq!(int(&Value::Null).unwrap_err().kind, "int_type");
        assert_eq!(float(&json!("0.5")), Ok(0.5));
        assert_eq!(float(&json!(true)), Ok(1.0));
        assert!(float(&json!("nan")).unwrap().is_nan());
        assert_eq!(
            float_within(f64::NAN, 0.0, 1.0).unwrap_err().kind,
            "less_than_equal"
        );
        assert_eq!(
            float_within(2.0, 0.0, 1.0).unwrap_err().msg,
            "Input should be less than or equal to 1"
        );
        assert_eq!(boolean(&json!("YES")), Ok(true));
        assert_eq!(boolean(&json!(1.0)), Ok(true));
        assert_eq!(boolean(&json!(2)).unwrap_err().kind, "bool_parsing");
        assert_eq!(
            one_of(&json!("x"), &[("A", 1), ("B", 2), ("C", 3)])
                .unwrap_err()
                .msg,
            "Input should be 'A', 'B' or 'C'"
        );
    }
}
