//! Python's string predicates and trims, where the reference's behaviour hangs on them.
//!
//! The reference parses replies with `str.strip()`, `str.split()`, `re`'s `\s`, `\d`
//! and `[^\W_]`. Each of those has a Unicode definition that Rust's `char` methods
//! do not share: `\s` adds the four information separators U+001C..U+001F to
//! `White_Space`, and `isalnum` is a general-category test (letters and numbers),
//! not the `Alphabetic` property, which also holds combining vowel signs and circled
//! letters. A sentence boundary decided on the wrong definition changes an
//! attribution, so the parser uses these instead.
//!
//! The predicates, trims, case mappings and `repr`s are `particles_pytext`'s, over
//! tables generated from Python 3.11's Unicode (14.0), not the newer version
//! Rust's `char` follows.

use particles_pytext::{float_repr, python_repr as str_repr};
// `str.isspace()` (and `re`'s `\s` for `str` patterns), `str.isalnum()` (letters
// and numbers, not the `Alphabetic` property) and `str.isdecimal()` (and `re`'s
// `\d`); `str.strip()`, `lstrip()` and `rstrip()` with no argument;
// `str.lower()` (final sigma included) and `str.upper()`.
pub(crate) use particles_pytext::{
    is_alnum, is_decimal, is_space, lower, lstrip, rstrip, strip, upper,
};
use serde_json::Value;

/// `" ".join(text.split())`: runs of whitespace become one space, ends trimmed.
pub(crate) fn collapse_spaces(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(is_space).filter(|word| !word.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// `text[:n]` for a count of code points, as Python slices.
pub(crate) fn take_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((byte, _)) => &text[..byte],
        None => text,
    }
}

/// The byte offset of the first non-space character at or after `at`.
pub(crate) fn skip_spaces(text: &str, at: usize) -> usize {
    at + text[at..]
        .find(|ch: char| !is_space(ch))
        .unwrap_or(text.len() - at)
}

/// An ASCII word matched at `at` as Python's `re.IGNORECASE` matches it: ASCII
/// case, plus the non-ASCII characters `re` pairs with an ASCII letter (U+0130 and
/// U+0131 with `i`, the Kelvin sign with `k`, U+017F with `s`;
/// `particles_pytext::match_ignorecase`). Returns the end of the match.
pub(crate) fn literal_ci(text: &str, at: usize, word: &str) -> Option<usize> {
    particles_pytext::match_ignorecase(&text[at..], word).map(|len| at + len)
}

/// Python's `str()` of a value `json.loads` produced: a string is itself, anything
/// else its `repr`.
pub(crate) fn py_str(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => py_repr(other),
    }
}

/// Python's `repr()` of a value `json.loads` produced (`{'a': [1, 2.0, None]}`).
pub(crate) fn py_repr(value: &Value) -> String {
    let mut out = String::new();
    write_repr(value, &mut out);
    out
}

fn write_repr(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(number) => match (number.as_i64(), number.as_u64(), number.as_f64()) {
            (Some(int), _, _) => out.push_str(&int.to_string()),
            (_, Some(int), _) => out.push_str(&int.to_string()),
            (_, _, Some(float)) => out.push_str(&float_repr(float)),
            _ => out.push_str(&number.to_string()),
        },
        Value::String(text) => out.push_str(&str_repr(text)),
        Value::Array(items) => {
            out.push('[');
            for (idx, item) in items.iter().enumerate() {
                if idx > 0 {
                    out.push_str(", ");
                }
                write_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(members) => {
            out.push('{');
            for (idx, (key, item)) in members.iter().enumerate() {
                if idx > 0 {
                    out.push_str(", ");
                }
                out.push_str(&str_repr(key));
                out.push_str(": ");
                write_repr(item, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_is_pythons() {
        for ch in [
            '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{1c}', '\u{1f}', ' ', '\u{85}',
        ] {
            assert!(is_space(ch), "{ch:?}");
        }
        for ch in [
            '\u{a0}', '\u{1680}', '\u{2000}', '\u{200a}', '\u{2028}', '\u{3000}',
        ] {
            assert!(is_space(ch), "{ch:?}");
        }
        for ch in ['\u{200b}', '\u{feff}', 'a', '\u{180e}'] {
            assert!(!is_space(ch), "{ch:?}");
        }
    }

    #[test]
    fn alnum_is_a_category_test() {
        assert!(is_alnum('a') && is_alnum('\u{e9}') && is_alnum('\u{2160}') && is_alnum('\u{b2}'));
        // Other_Alphabetic but neither a letter nor a number: Python says no.
        assert!(!is_alnum('\u{24b6}') && !is_alnum('\u{93e}') && !is_alnum('_'));
        assert!(is_decimal('\u{661}') && !is_decimal('\u{b2}'));
    }

    #[test]
    fn reprs_are_pythons() {
        let value: Value = serde_json::from_str(
            r#"{"type": "error", "error": {"message": "it's \"bad\"\n\u0007", "n": [1, 2.5, 1e16, 1e-5, 100.0, null, true]}}"#,
        )
        .unwrap();
        assert_eq!(
            py_repr(&value),
            r#"{'type': 'error', 'error': {'message': 'it\'s "bad"\n\x07', 'n': [1, 2.5, 1e+16, 1e-05, 100.0, None, True]}}"#
        );
        assert_eq!(str_repr("it's"), r#""it's""#);
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(123456789012345680.0), "1.2345678901234568e+17");
        assert_eq!(float_repr(-1.5), "-1.5");
    }

    #[test]
    fn trims_and_splits() {
        assert_eq!(strip("\u{1c} a b \u{85}"), "a b");
        assert_eq!(collapse_spaces("  a \n\t b  "), "a b");
        assert_eq!(take_chars("\u{e9}t\u{e9}", 2), "\u{e9}t");
        assert_eq!(take_chars("ab", 5), "ab");
    }
}
