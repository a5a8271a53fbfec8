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

use crate::{timestamp::civil_from_days, Timestamp};

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
    /// pydantic's `list_type`.
    pub(crate) fn list_type() -> Failure {
        Failure::new("list_type", "Input should be a valid list")
    }

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

/// pydantic-core's `str` to `float`: surrounding whitespace trimmed, underscores
/// removed unless one leads, one trails or two touch, then Rust's float grammar
/// (which takes `inf`, `infinity` and `nan` in any case, and `-nan`).
///
/// The trim is Rust's `str::trim` because pydantic-core is Rust and trims with
/// it (White_Space, unchanged since Unicode 6.3): `"\u{1c}1"` is refused there,
/// though Python's `str.strip()` would drop the U+001C.
fn parse_float_text(text: &str) -> Option<f64> {
    let trimmed = text.trim();
    if trimmed.starts_with('_') || trimmed.ends_with('_') || trimmed.contains("__") {
        return None;
    }
    trimmed.replace('_', "").parse().ok()
}

/// An integer as pydantic reads it: within `i64`, or a Python int past it (which
/// pydantic keeps, unbounded; only its sign matters to a bound check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Integer {
    Fits(i64),
    Big { negative: bool },
}

fn int_parsing_size() -> Failure {
    Failure::new(
        "int_parsing_size",
        "Unable to parse input string as an integer, exceeded maximum size",
    )
}

/// `int`, lax, where past `i64` is refused (`int_parsing_size`): integers,
/// floats without a fraction, booleans and integral strings (`"5"`, `" 5 "`,
/// `"5.0"`, `"1_0"`).
pub(crate) fn int(value: &Value) -> Lax<i64> {
    match integer(value)? {
        Integer::Fits(int) => Ok(int),
        Integer::Big { .. } => Err(int_parsing_size()),
    }
}

/// `int`, lax, as pydantic-core reads it, Python ints past `i64` included.
pub(crate) fn integer(value: &Value) -> Lax<Integer> {
    let from_float = |f: f64| -> Lax<Integer> {
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
            return Err(int_parsing_size());
        }
        Ok(Integer::Fits(f as i64))
    };
    match value {
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(i), _) => Ok(Integer::Fits(i)),
            (None, Some(_)) => Ok(Integer::Big { negative: false }),
            _ => from_float(number.as_f64().unwrap_or(f64::NAN)),
        },
        Value::Bool(flag) => Ok(Integer::Fits(i64::from(*flag))),
        Value::String(text) => {
            let parsing = || {
                Failure::new(
                    "int_parsing",
                    "Input should be a valid integer, unable to parse string as an integer",
                )
            };
            // pydantic-core's own `str::trim`, as for floats.
            let trimmed = text.trim();
            let negative = trimmed.starts_with('-');
            let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
            // A fraction of zeros (at least one) may follow.
            let whole = match digits.split_once('.') {
                Some((whole, fraction))
                    if !fraction.is_empty() && fraction.bytes().all(|b| b == b'0') =>
                {
                    whole
                }
                Some(_) => return Err(parsing()),
                None => digits,
            };
            let integral = !whole.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit() || b == b'_')
                && !whole.starts_with('_')
                && !whole.ends_with('_')
                && !whole.contains("__");
            if !integral {
                return Err(parsing());
            }
            let whole: String = whole.chars().filter(|&c| c != '_').collect();
            // Python's int() refuses more than 4300 digits.
            if whole.len() > 4300 {
                return Err(int_parsing_size());
            }
            let signed = if negative { format!("-{whole}") } else { whole };
            Ok(signed
                .parse()
                .map_or(Integer::Big { negative }, Integer::Fits))
        }
        _ => Err(Failure::new("int_type", "Input should be a valid integer")),
    }
}

/// `bool`, lax: booleans, 0 and 1 as numbers, and the strings pydantic knows
/// (any case, no surrounding space).
pub(crate) fn boolean(value: &Value) -> Lax<bool> {
    let parsing = || {
        Failure::new(
            "bool_parsing",
            "Input should be a valid boolean, unable to interpret input",
        )
    };
    let not_a_bool = || Failure::new("bool_type", "Input should be a valid boolean");
    match value {
        Value::Bool(flag) => Ok(*flag),
        // An int within i64 is 0, 1 or unparsable; a float must be integral and
        // within i64 to be read as one; anything else is no boolean at all.
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(0), _, _) => Ok(false),
            (Some(1), _, _) => Ok(true),
            (Some(_), _, _) => Err(parsing()),
            (None, Some(_), _) => Err(not_a_bool()),
            (None, None, Some(0.0)) => Ok(false),
            (None, None, Some(1.0)) => Ok(true),
            (None, None, Some(float))
                if float.fract() == 0.0 && float.abs() < 9.223_372_036_854_776e18 =>
            {
                Err(parsing())
            }
            _ => Err(not_a_bool()),
        },
        Value::String(text) => match text.to_ascii_lowercase().as_str() {
            "0" | "off" | "f" | "false" | "n" | "no" => Ok(false),
            "1" | "on" | "t" | "true" | "y" | "yes" => Ok(true),
            _ => Err(parsing()),
        },
        _ => Err(not_a_bool()),
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

/// `datetime`, lax, as pydantic-core 2 (over speedate) validates it in Python
/// mode:
///
/// - a string is first an RFC 3339 datetime (`T`, `t`, `_` or a space between
///   date and time; `HH:MM[:SS[.f]]`, digits past the sixth dropped; `Z`, `z`,
///   or `+`, `-` or `U+2212` with `HH[:]MM` under a day), else a number in
///   text (an integer, or digits with a `.`) read as Unix time, else a bare date
///   (midnight, naive); when all fail, the error is the date parser's
///   (`datetime_from_date_parsing`);
/// - a number is Unix time: seconds, or milliseconds when its magnitude is
///   above 2e10 (aware UTC), with speedate's rounding of a float's fraction;
/// - an instant in year 0 parses but is refused (`year 0 is out of range`).
pub(crate) fn datetime(value: &Value) -> Lax<Timestamp> {
    let parsed = match value {
        Value::String(text) => return datetime_text(text.as_bytes()),
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(int), _, _) => from_timestamp(int, 0, Unit::Infer),
            (None, Some(_), _) => Err(Speedate::DateTooLarge),
            (None, None, Some(float)) => from_float(float),
            _ => Err(Speedate::DateTooLarge),
        },
        _ => {
            return Err(Failure::new(
                "datetime_type",
                "Input should be a valid datetime",
            ))
        }
    };
    parsed
        .map_err(|error| parsing_failure(error.text()))
        .and_then(finish)
}

/// speedate's parse errors that reach a request's datetime errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speedate {
    TooShort,
    ExtraCharacters,
    InvalidCharDateSep,
    InvalidCharYear,
    InvalidCharMonth,
    InvalidCharDay,
    OutOfRangeMonth,
    OutOfRangeDay,
    DateNotExact,
    DateTooSmall,
    DateTooLarge,
    /// Any error of the time part: only the date parser's errors are reported.
    Time,
}

impl Speedate {
    fn text(self) -> &'static str {
        match self {
            Speedate::TooShort => "input is too short",
            Speedate::ExtraCharacters | Speedate::Time => {
                "unexpected extra characters at the end of the input"
            }
            Speedate::InvalidCharDateSep => "invalid date separator, expected `-`",
            Speedate::InvalidCharYear => "invalid character in year",
            Speedate::InvalidCharMonth => "invalid character in month",
            Speedate::InvalidCharDay => "invalid character in day",
            Speedate::OutOfRangeMonth => "month value is outside expected range of 1-12",
            Speedate::OutOfRangeDay => "day value is outside expected range",
            Speedate::DateNotExact => "Timestamp is not an exact date",
            Speedate::DateTooSmall => "dates before 0000 are not supported as unix timestamps",
            Speedate::DateTooLarge => "dates after 9999 are not supported as unix timestamps",
        }
    }
}

/// A speedate datetime: the fields and the offset in seconds (`None`: naive).
#[derive(Debug, Clone, Copy)]
struct Parsed {
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    micro: u32,
    offset: Option<i32>,
}

fn parsing_failure(reason: &str) -> Failure {
    Failure::new(
        "datetime_parsing",
        format!("Input should be a valid datetime, {reason}"),
    )
    .with_ctx(json!({ "error": reason }))
}

fn date_failure(reason: &str) -> Failure {
    Failure::new(
        "datetime_from_date_parsing",
        format!("Input should be a valid datetime or date, {reason}"),
    )
    .with_ctx(json!({ "error": reason }))
}

/// The validator's last step: year 0 parses in speedate but is no Python date.
fn finish(parsed: Parsed) -> Lax<Timestamp> {
    if parsed.year == 0 {
        return Err(parsing_failure("year 0 is out of range"));
    }
    let naive = Timestamp::from_fields(
        parsed.year,
        parsed.month,
        parsed.day,
        parsed.hour,
        parsed.minute,
        parsed.second,
        parsed.micro,
    )
    .expect("speedate's fields are a valid date and time in years 1..=9999");
    Ok(match parsed.offset {
        Some(offset) => naive.with_offset_seconds(offset),
        None => naive,
    })
}

/// A string: the datetime parser, then the date parser for the error (pydantic's
/// `datetime_from_date`).
fn datetime_text(bytes: &[u8]) -> Lax<Timestamp> {
    if let Ok(parsed) = datetime_bytes(bytes) {
        return finish(parsed);
    }
    let date = date_rfc3339(bytes).and_then(|(year, month, day)| {
        if bytes.len() > 10 {
            Err(Speedate::ExtraCharacters)
        } else {
            Ok((year, month, day))
        }
    });
    let date = match date {
        Ok(date) => Ok(date),
        Err(error) => match number_text(bytes) {
            NumberText::Int(int) => date_from_timestamp(int),
            _ => Err(error),
        },
    };
    match date {
        Ok((year, month, day)) => finish(Parsed {
            year,
            month,
            day,
            hour: 0,
            minute: 0,
            second: 0,
            micro: 0,
            offset: None,
        }),
        Err(error) => Err(date_failure(error.text())),
    }
}

/// `DateTime::parse_bytes_with_config`: RFC 3339, else Unix time in text.
fn datetime_bytes(bytes: &[u8]) -> Result<Parsed, Speedate> {
    let rfc3339 = match rfc3339(bytes) {
        Ok(parsed) => return Ok(parsed),
        Err(error) => error,
    };
    match number_text(bytes) {
        NumberText::Int(int) => from_timestamp(int, 0, Unit::Infer),
        NumberText::Float(float) => from_float(float),
        NumberText::Neither => Err(rfc3339),
    }
}

/// `Date::parse_bytes_partial`: `YYYY-MM-DD` at the start, a valid date.
fn date_rfc3339(bytes: &[u8]) -> Result<(u16, u8, u8), Speedate> {
    if bytes.len() < 10 {
        return Err(Speedate::TooShort);
    }
    let digit = |at: usize, error: Speedate| match bytes[at] {
        byte @ b'0'..=b'9' => Ok(byte - b'0'),
        _ => Err(error),
    };
    let mut year = 0u16;
    for at in 0..4 {
        year = year * 10 + u16::from(digit(at, Speedate::InvalidCharYear)?);
    }
    if bytes[4] != b'-' {
        return Err(Speedate::InvalidCharDateSep);
    }
    let month = digit(5, Speedate::InvalidCharMonth)? * 10 + digit(6, Speedate::InvalidCharMonth)?;
    if bytes[7] != b'-' {
        return Err(Speedate::InvalidCharDateSep);
    }
    let day = digit(8, Speedate::InvalidCharDay)? * 10 + digit(9, Speedate::InvalidCharDay)?;
    let leap = if year.is_multiple_of(100) {
        year.is_multiple_of(400)
    } else {
        year.is_multiple_of(4)
    };
    let max_day = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(Speedate::OutOfRangeMonth),
    };
    if day < 1 || day > max_day {
        return Err(Speedate::OutOfRangeDay);
    }
    Ok((year, month, day))
}

/// `DateTime::parse_bytes_rfc3339_with_config`: a date, a separator, a time
/// (`Time::parse_bytes_offset` from byte 11).
fn rfc3339(bytes: &[u8]) -> Result<Parsed, Speedate> {
    let (year, month, day) = date_rfc3339(bytes)?;
    if !matches!(bytes.get(10), Some(b'T' | b't' | b' ' | b'_')) {
        return Err(Speedate::Time);
    }
    let at = |i: usize| bytes.get(i).copied();
    let digit = |i: usize| match at(i) {
        Some(byte @ b'0'..=b'9') => Ok(byte - b'0'),
        _ => Err(Speedate::Time),
    };
    if bytes.len() - 11 < 5 {
        return Err(Speedate::Time);
    }
    let hour = digit(11)? * 10 + digit(12)?;
    if at(13) != Some(b':') {
        return Err(Speedate::Time);
    }
    let minute = digit(14)? * 10 + digit(15)?;
    if hour > 23 || minute > 59 {
        return Err(Speedate::Time);
    }
    let mut position = 16;
    let (mut second, mut micro) = (0, 0);
    if at(16) == Some(b':') {
        second = digit(17)? * 10 + digit(18)?;
        if second > 59 {
            return Err(Speedate::Time);
        }
        position = 19;
        if matches!(at(19), Some(b'.' | b',')) {
            position = 20;
            let mut count = 0usize;
            while let Some(byte @ b'0'..=b'9') = at(position + count) {
                // Digits past the sixth are dropped (pydantic truncates).
                if count < 6 {
                    micro = micro * 10 + u32::from(byte - b'0');
                }
                count += 1;
            }
            if count == 0 {
                return Err(Speedate::Time);
            }
            for _ in count..6 {
                micro *= 10;
            }
            position += count;
        }
    }
    let mut offset = None;
    if let Some(next) = at(position) {
        position += 1;
        if matches!(next, b'Z' | b'z') {
            offset = Some(0);
        } else {
            let sign = match next {
                b'+' => 1,
                b'-' => -1,
                // U+2212 MINUS SIGN, which ISO 8601 allows for negative offsets.
                0xE2 if at(position) == Some(0x88) && at(position + 1) == Some(0x92) => {
                    position += 2;
                    -1
                }
                _ => return Err(Speedate::Time),
            };
            let hours = i32::from(digit(position)?) * 10 + i32::from(digit(position + 1)?);
            let minutes_high = match at(position + 2) {
                Some(b':') => {
                    position += 3;
                    digit(position)?
                }
                Some(byte @ b'0'..=b'9') => {
                    position += 2;
                    byte - b'0'
                }
                _ => return Err(Speedate::Time),
            };
            let minutes = i32::from(minutes_high) * 10 + i32::from(digit(position + 1)?);
            if minutes >= 60 {
                return Err(Speedate::Time);
            }
            let seconds = sign * (hours * 3600 + minutes * 60);
            if seconds.abs() >= 86_400 {
                return Err(Speedate::Time);
            }
            offset = Some(seconds);
            position += 2;
        }
    }
    if bytes.len() > position {
        return Err(Speedate::Time);
    }
    Ok(Parsed {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micro,
        offset,
    })
}

/// Magnitudes above this are milliseconds (speedate's `MS_WATERSHED`).
const MS_WATERSHED: i64 = 20_000_000_000;
/// 0000-01-01T00:00:00 and 9999-12-31T23:59:59 in Unix time.
const UNIX_0000: i64 = -62_167_219_200;
const UNIX_9999: i64 = 253_402_300_799;

/// How speedate reads an integer timestamp.
#[derive(Clone, Copy)]
enum Unit {
    /// Seconds up to 2e10 in magnitude, milliseconds above.
    Infer,
    Millisecond,
}

/// `DateTime::from_timestamp_with_config` (aware UTC).
fn from_timestamp(timestamp: i64, micro: u32, unit: Unit) -> Result<Parsed, Speedate> {
    let milliseconds = match unit {
        Unit::Millisecond => true,
        Unit::Infer => {
            let magnitude = timestamp.checked_abs().ok_or(Speedate::DateTooSmall)?;
            magnitude > MS_WATERSHED
        }
    };
    let (mut seconds, extra) = if milliseconds {
        let mut seconds = timestamp / 1000;
        let mut micros = (timestamp % 1000) * 1000;
        if micros < 0 {
            seconds -= 1;
            micros += 1_000_000;
        }
        (seconds, micros as u32)
    } else {
        (timestamp, 0)
    };
    let mut micro = micro.checked_add(extra).ok_or(Speedate::DateTooLarge)?;
    if micro >= 1_000_000 {
        seconds = seconds
            .checked_add(i64::from(micro / 1_000_000))
            .ok_or(Speedate::DateTooLarge)?;
        micro %= 1_000_000;
    }
    let (year, month, day, in_day) = from_timestamp_calc(seconds)?;
    Ok(Parsed {
        year,
        month,
        day,
        hour: (in_day / 3600) as u8,
        minute: (in_day % 3600 / 60) as u8,
        second: (in_day % 60) as u8,
        micro,
        offset: Some(0),
    })
}

/// `Date::from_timestamp_calc`: the date and the seconds into it, years 0..=9999.
fn from_timestamp_calc(seconds: i64) -> Result<(u16, u8, u8, u32), Speedate> {
    if seconds < UNIX_0000 {
        return Err(Speedate::DateTooSmall);
    }
    if seconds > UNIX_9999 {
        return Err(Speedate::DateTooLarge);
    }
    let days = seconds.div_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    Ok((year as u16, month, day, seconds.rem_euclid(86_400) as u32))
}

/// `Date::from_timestamp(int, require_exact = true)`.
fn date_from_timestamp(timestamp: i64) -> Result<(u16, u8, u8), Speedate> {
    let parsed = from_timestamp(timestamp, 0, Unit::Infer)?;
    if parsed.hour != 0 || parsed.minute != 0 || parsed.second != 0 || parsed.micro != 0 {
        return Err(Speedate::DateNotExact);
    }
    Ok((parsed.year, parsed.month, parsed.day))
}

/// `DateTime::from_float_with_config` as pydantic-core calls it for a float:
/// seconds up to 2e10 in magnitude, else milliseconds; the floor, and the
/// fraction above it rounded to the unit's microseconds.
fn from_float(float: f64) -> Result<Parsed, Speedate> {
    let floor = float.floor();
    if float.abs() <= MS_WATERSHED as f64 {
        let micro = ((float - floor) * 1e6).round() as u32;
        from_timestamp(floor as i64, micro, Unit::Infer)
    } else {
        let micro = ((float - floor) * 1e3).round() as u32;
        from_timestamp(floor as i64, micro, Unit::Millisecond)
    }
}

/// A number in text, as the Unix-time branch of pydantic's datetime parser reads
/// one.
enum NumberText {
    /// An optional sign and ASCII digits, within `i64` (`i64::from_str`).
    Int(i64),
    /// Digits up to a `.` that the float grammar then accepts.
    Float(f64),
    Neither,
}

fn number_text(bytes: &[u8]) -> NumberText {
    let unsigned = match bytes {
        [b'+' | b'-', rest @ ..] => rest,
        _ => bytes,
    };
    match unsigned.iter().position(|b| !b.is_ascii_digit()) {
        None if !unsigned.is_empty() => std::str::from_utf8(bytes)
            .ok()
            .and_then(|text| text.parse().ok())
            .map_or(NumberText::Neither, NumberText::Int),
        Some(at) if unsigned[at] == b'.' => {
            float_text(bytes).map_or(NumberText::Neither, NumberText::Float)
        }
        _ => NumberText::Neither,
    }
}

/// The float grammar speedate hands to `lexical` (its `STANDARD` format):
/// an optional sign, digits with an optional fraction (at least one digit in
/// all), an optional exponent.
fn float_text(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?;
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || whole.len() + fraction.len() == 0 {
        return None;
    }
    if let Some(exponent) = exponent {
        let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if exponent.is_empty() || !digits(exponent) {
            return None;
        }
    }
    text.parse().ok()
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
        assert_eq!(
            ok(json!("2020-01-01T10:00:00\u{2212}05:00")),
            "2020-01-01T10:00:00-05:00"
        );
        assert_eq!(ok(json!(-1.25)), "1969-12-31T23:59:58.750000Z");
        assert_eq!(
            ok(json!(68_621_311_797_527.76)),
            "4144-07-10T03:29:57.527758Z"
        );
        assert_eq!(
            ok(json!(253_402_300_799_999i64)),
            "9999-12-31T23:59:59.999000Z"
        );
        assert_eq!(err(json!(-62_167_219_200_000i64)), "datetime_parsing");
        assert_eq!(
            err(json!("37000000000000000000")),
            "datetime_from_date_parsing"
        );
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
