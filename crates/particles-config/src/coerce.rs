//! pydantic v2's lax coercions for the scalar types the configuration uses.
//!
//! Each function takes a constructed YAML value and returns the field's value or
//! the pydantic error type it would report. The string parsers follow
//! pydantic-core: floats are Rust's `f64` grammar after trimming (with `_`
//! allowed between characters as a fallback), integers allow surrounding
//! whitespace, `_` between digits and a `.000` tail, booleans take twelve words in
//! any case.

use crate::yaml::{Int, NodeValue};

/// A pydantic error type for a value of the wrong kind or form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    BoolType,
    BoolParsing,
    IntType,
    IntParsing,
    IntFromFloat,
    IntParsingSize,
    FiniteNumber,
    FloatType,
    FloatParsing,
    StringType,
    StringUnicode,
}

impl Refusal {
    /// pydantic's error type name.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Refusal::BoolType => "bool_type",
            Refusal::BoolParsing => "bool_parsing",
            Refusal::IntType => "int_type",
            Refusal::IntParsing => "int_parsing",
            Refusal::IntFromFloat => "int_from_float",
            Refusal::IntParsingSize => "int_parsing_size",
            Refusal::FiniteNumber => "finite_number",
            Refusal::FloatType => "float_type",
            Refusal::FloatParsing => "float_parsing",
            Refusal::StringType => "string_type",
            Refusal::StringUnicode => "string_unicode",
        }
    }

    /// pydantic's message.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Refusal::BoolType => "Input should be a valid boolean",
            Refusal::BoolParsing => "Input should be a valid boolean, unable to interpret input",
            Refusal::IntType => "Input should be a valid integer",
            Refusal::IntParsing => {
                "Input should be a valid integer, unable to parse string as an integer"
            }
            Refusal::IntFromFloat => {
                "Input should be a valid integer, got a number with a fractional part"
            }
            Refusal::IntParsingSize => {
                "Unable to parse input string as an integer, exceeded maximum size"
            }
            Refusal::FiniteNumber => "Input should be a finite number",
            Refusal::FloatType => "Input should be a valid number",
            Refusal::FloatParsing => {
                "Input should be a valid number, unable to parse string as a number"
            }
            Refusal::StringType => "Input should be a valid string",
            Refusal::StringUnicode => {
                "Input should be a valid string, unable to parse raw data as a unicode string"
            }
        }
    }
}

fn int_as_bool(value: &Int) -> Result<bool, Refusal> {
    match value {
        Int::Small(0) => Ok(false),
        Int::Small(1) => Ok(true),
        // pydantic-core reads an int as i64 first; a larger one is not an int to it.
        Int::Small(value) if i64::try_from(*value).is_ok() => Err(Refusal::BoolParsing),
        _ => Err(Refusal::BoolType),
    }
}

/// A `bool` field.
pub(crate) fn to_bool(value: &NodeValue) -> Result<bool, Refusal> {
    match value {
        NodeValue::Bool(value) => Ok(*value),
        NodeValue::Int(value) => int_as_bool(value),
        NodeValue::Float(value) => {
            if value.is_finite() && value.fract() == 0.0 && value.abs() < 9.2e18 {
                int_as_bool(&Int::Small(*value as i128))
            } else {
                Err(Refusal::BoolType)
            }
        }
        NodeValue::Str(text) => str_as_bool(text),
        NodeValue::Bytes(bytes) => {
            str_as_bool(std::str::from_utf8(bytes).map_err(|_| Refusal::BoolParsing)?)
        }
        _ => Err(Refusal::BoolType),
    }
}

pub(crate) fn str_as_bool(text: &str) -> Result<bool, Refusal> {
    let is = |word: &str| text.eq_ignore_ascii_case(word);
    if text == "0" || is("f") || is("n") || is("no") || is("off") || is("false") {
        Ok(false)
    } else if text == "1" || is("t") || is("y") || is("on") || is("yes") || is("true") {
        Ok(true)
    } else {
        Err(Refusal::BoolParsing)
    }
}

/// An `int` field.
pub(crate) fn to_int(value: &NodeValue) -> Result<Int, Refusal> {
    match value {
        NodeValue::Bool(value) => Ok(Int::Small(i128::from(*value))),
        NodeValue::Int(value) => Ok(value.clone()),
        NodeValue::Float(value) => float_as_int(*value),
        NodeValue::Str(text) => str_as_int(text),
        NodeValue::Bytes(bytes) => {
            str_as_int(std::str::from_utf8(bytes).map_err(|_| Refusal::IntParsing)?)
        }
        _ => Err(Refusal::IntType),
    }
}

pub(crate) fn float_as_int(value: f64) -> Result<Int, Refusal> {
    if !value.is_finite() {
        Err(Refusal::FiniteNumber)
    } else if value % 1.0 != 0.0 {
        Err(Refusal::IntFromFloat)
    } else if (i64::MIN as f64) < value && value < (i64::MAX as f64) {
        Ok(Int::Small(value as i128))
    } else {
        Err(Refusal::IntParsingSize)
    }
}

/// `[+-]?digits` with Python's `_` between digits.
fn parse_integer(text: &str, allow_underscores: bool) -> Option<Int> {
    let (negative, digits) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let bytes = digits.as_bytes();
    for (index, byte) in bytes.iter().enumerate() {
        let ok = byte.is_ascii_digit()
            || (allow_underscores
                && *byte == b'_'
                && index > 0
                && bytes[index - 1].is_ascii_digit()
                && bytes.get(index + 1).is_some_and(u8::is_ascii_digit));
        if !ok {
            return None;
        }
    }
    Int::from_decimal(negative, &digits.replace('_', ""))
}

/// pydantic-core's string-to-int: trimmed, then plain digits, then an integral
/// `.000` tail, with `_` allowed between digits.
pub(crate) fn str_as_int(text: &str) -> Result<Int, Refusal> {
    let text = text.trim();
    if text.len() > 4300 {
        return Err(Refusal::IntParsingSize);
    }
    if let Some(value) = parse_integer(text, false) {
        return Ok(value);
    }
    let whole = match text.split_once('.') {
        Some((whole, fraction)) => {
            if fraction.is_empty() || !fraction.bytes().all(|b| b == b'0') {
                return Err(Refusal::IntParsing);
            }
            whole
        }
        None => text,
    };
    parse_integer(whole, true).ok_or(Refusal::IntParsing)
}

/// A `float` field.
pub(crate) fn to_float(value: &NodeValue) -> Result<f64, Refusal> {
    match value {
        NodeValue::Bool(value) => Ok(if *value { 1.0 } else { 0.0 }),
        NodeValue::Int(value) => value.to_f64().ok_or(Refusal::FloatType),
        NodeValue::Float(value) => Ok(*value),
        NodeValue::Str(text) => str_as_float(text),
        NodeValue::Bytes(bytes) => {
            str_as_float(std::str::from_utf8(bytes).map_err(|_| Refusal::FloatParsing)?)
        }
        _ => Err(Refusal::FloatType),
    }
}

/// pydantic-core's string-to-float: Rust's `f64` grammar on the trimmed text,
/// else on the untrimmed text with `_` removed when no `_` leads, trails or
/// doubles.
pub(crate) fn str_as_float(text: &str) -> Result<f64, Refusal> {
    if let Ok(value) = text.trim().parse::<f64>() {
        return Ok(value);
    }
    if text.starts_with('_') || text.ends_with('_') || !text.contains('_') || text.contains("__") {
        return Err(Refusal::FloatParsing);
    }
    text.replace('_', "")
        .parse::<f64>()
        .map_err(|_| Refusal::FloatParsing)
}

/// A `str` field: only strings (pydantic does not turn numbers into text).
pub(crate) fn to_str(value: &NodeValue) -> Result<&str, Refusal> {
    match value {
        NodeValue::Str(text) => Ok(text),
        // pydantic decodes bytes (`!!binary`) as UTF-8.
        NodeValue::Bytes(bytes) => std::str::from_utf8(bytes).map_err(|_| Refusal::StringUnicode),
        _ => Err(Refusal::StringType),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(value: i128) -> Int {
        Int::Small(value)
    }

    #[test]
    fn integers_from_strings() {
        for (text, expected) in [
            ("1", 1),
            ("1.0", 1),
            (" 2 ", 2),
            ("+3", 3),
            ("-0.00", 0),
            ("1_000", 1000),
            ("1_0.0", 10),
            ("08", 8),
            ("0_1", 1),
            ("\u{a0}1", 1),
        ] {
            assert_eq!(str_as_int(text), Ok(small(expected)), "{text:?}");
        }
        for text in [
            "1.5", "1e1", "0x10", "1.", ".0", "", "+_1", "1__0", "1_", "1.0_0", "- 1", "\u{663}",
        ] {
            assert_eq!(str_as_int(text), Err(Refusal::IntParsing), "{text:?}");
        }
        assert_eq!(str_as_int(&"9".repeat(4301)), Err(Refusal::IntParsingSize));
        assert!(matches!(str_as_int(&"9".repeat(40)), Ok(Int::Big(_))));
    }

    proptest::proptest! {
        /// The string-to-int fast path against the obvious reading: strip the
        /// spaces, the `_` between digits and an all-zero fraction, then parse.
        #[test]
        fn str_as_int_is_the_obvious_parse(
            value in proptest::num::i64::ANY,
            underscores in proptest::collection::vec(proptest::bool::ANY, 0..20),
            zeros in 0usize..3,
            spaces in 0usize..3,
        ) {
            let digits = value.unsigned_abs().to_string();
            let mut text = String::new();
            if value < 0 { text.push('-'); }
            for (index, digit) in digits.chars().enumerate() {
                if index > 0 && underscores.get(index).copied().unwrap_or(false) { text.push('_'); }
                text.push(digit);
            }
            if zeros > 0 { text.push('.'); text.push_str(&"0".repeat(zeros)); }
            let padded = format!("{}{text}{}", " ".repeat(spaces), " ".repeat(spaces));
            proptest::prop_assert_eq!(str_as_int(&padded), Ok(Int::Small(i128::from(value))));
        }
    }

    #[test]
    fn floats_from_strings() {
        for (text, expected) in [
            ("0.7", 0.7),
            (" 0.7 ", 0.7),
            ("1e-3", 0.001),
            ("1_000.5", 1000.5),
            ("-_1", -1.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("1e400", f64::INFINITY),
            ("Infinity", f64::INFINITY),
            ("in_f", f64::INFINITY),
        ] {
            assert_eq!(str_as_float(text), Ok(expected), "{text:?}");
        }
        assert!(str_as_float("-nan").is_ok_and(f64::is_nan));
        for text in [
            "0x10", "", "1e", " 1_0 ", "1__0", "_1", "1_", "nan_", ".", "\u{ff11}",
        ] {
            assert_eq!(str_as_float(text), Err(Refusal::FloatParsing), "{text:?}");
        }
    }

    #[test]
    fn floats_into_int_fields() {
        assert_eq!(float_as_int(1.0), Ok(small(1)));
        assert_eq!(float_as_int(1.5), Err(Refusal::IntFromFloat));
        assert_eq!(float_as_int(f64::NAN), Err(Refusal::FiniteNumber));
        assert_eq!(float_as_int(9.2e18), Ok(small(9_200_000_000_000_000_000)));
        assert_eq!(float_as_int(9.3e18), Err(Refusal::IntParsingSize));
    }

    #[test]
    fn booleans() {
        for text in ["1", "t", "Y", "on", "YES", "tRuE"] {
            assert_eq!(str_as_bool(text), Ok(true), "{text:?}");
        }
        for text in ["0", "F", "n", "Off", "no", "FALSE"] {
            assert_eq!(str_as_bool(text), Ok(false), "{text:?}");
        }
        for text in ["ON ", " yes", "2", ""] {
            assert_eq!(str_as_bool(text), Err(Refusal::BoolParsing), "{text:?}");
        }
        assert_eq!(to_bool(&NodeValue::Float(2.0)), Err(Refusal::BoolParsing));
        assert_eq!(to_bool(&NodeValue::Float(0.5)), Err(Refusal::BoolType));
        assert_eq!(to_bool(&NodeValue::Float(-0.0)), Ok(false));
        assert_eq!(
            to_bool(&NodeValue::Int(small(2))),
            Err(Refusal::BoolParsing)
        );
        assert_eq!(
            to_bool(&NodeValue::Int(small(1 << 70))),
            Err(Refusal::BoolType)
        );
    }
}
