//! Python 3.11's reading of text where the reference's values pass through it:
//! `str.isspace()`, `str.isprintable()` (what `repr()` escapes), Unicode decimal
//! digits, and `float(str)`. The Unicode data is the reference interpreter's
//! (`unicode_tables`, generated from it), not the version a Rust crate ships.

use crate::unicode_tables::{DECIMAL_ZEROS, UNPRINTABLE};

/// `str.isspace()` for one character (`Py_UNICODE_ISSPACE`).
pub(crate) fn is_python_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1C}'..='\u{20}'
            | '\u{85}'
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

/// `str.isprintable()` for one character.
pub(crate) fn is_printable(c: char) -> bool {
    let code = c as u32;
    let at = UNPRINTABLE.partition_point(|&(_, last)| last < code);
    UNPRINTABLE.get(at).is_none_or(|&(first, _)| first > code)
}

/// The value of a Unicode decimal digit (category Nd), as Python reads one.
pub(crate) fn decimal_digit(c: char) -> Option<u8> {
    let code = c as u32;
    let at = DECIMAL_ZEROS.partition_point(|&zero| zero <= code);
    let zero = *DECIMAL_ZEROS.get(at.checked_sub(1)?)?;
    (code - zero < 10).then(|| (code - zero) as u8)
}

/// Python 3.11's `float(str)` (which numpy's conversion of a string calls):
/// Unicode decimal digits read as ASCII digits and Unicode spaces as spaces,
/// ASCII whitespace trimmed, an underscore only between two digits, then a
/// decimal float or `inf`, `infinity`, `nan` in any case with an optional sign
/// (`-nan` keeps its sign). `None` where Python raises `ValueError`.
pub fn python_float(text: &str) -> Option<f64> {
    // `_PyUnicode_TransformDecimalAndSpaceToASCII`.
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        if (c as u32) < 127 {
            ascii.push(c);
        } else if is_python_space(c) {
            ascii.push(' ');
        } else {
            ascii.push(decimal_digit(c).map_or('?', |d| char::from(b'0' + d)));
        }
    }
    // `_Py_string_to_number_with_underscores`: each underscore between digits.
    if ascii.contains('_') {
        let bytes = ascii.as_bytes();
        let between_digits = |at: usize| {
            at > 0
                && bytes[at - 1].is_ascii_digit()
                && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)
        };
        if !(0..bytes.len()).all(|at| bytes[at] != b'_' || between_digits(at)) {
            return None;
        }
        ascii.retain(|c| c != '_');
    }
    // `float_from_string_inner`: ASCII whitespace trimmed (`Py_ISSPACE`).
    let trimmed = ascii.trim_matches([' ', '\t', '\n', '\u{B}', '\u{C}', '\r']);
    let unsigned = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    let special = ["inf", "infinity", "nan"]
        .iter()
        .any(|word| unsigned.eq_ignore_ascii_case(word));
    let grammar = special || {
        let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
            Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
            None => (unsigned, None),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
        digits(whole)
            && digits(fraction)
            && whole.len() + fraction.len() > 0
            && exponent.is_none_or(|e| {
                let e = e.strip_prefix(['+', '-']).unwrap_or(e);
                !e.is_empty() && digits(e)
            })
    };
    if !grammar {
        return None;
    }
    trimmed.parse().ok()
}

/// Python's `str.splitlines()` (no ends kept): every line boundary Python knows
/// (`\n`, `\r`, `\r\n`, `\v`, `\f`, U+001C..U+001E, U+0085, U+2028, U+2029), and no
/// trailing empty line.
pub fn python_splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let boundary = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !boundary {
            continue;
        }
        lines.push(&text[start..at]);
        let mut end = at + c.len_utf8();
        if c == '\r' {
            if let Some((_, '\n')) = chars.peek() {
                chars.next();
                end += 1;
            }
        }
        start = end;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_python_reads_them() {
        let bits = |text: &str| python_float(text).map(|x| (x as f32).to_bits());
        assert_eq!(python_float("\u{0661}\u{0662}"), Some(12.0));
        assert_eq!(python_float("\u{FF11}.\u{FF15}"), Some(1.5));
        assert_eq!(python_float("\u{85}1\u{3000}"), Some(1.0));
        assert_eq!(python_float("1_0.5"), Some(10.5));
        assert_eq!(python_float("1e1_0"), Some(1e10));
        assert_eq!(bits("-nan"), Some(0xFFC0_0000));
        assert_eq!(python_float("iNfInItY"), Some(f64::INFINITY));
        for bad in [
            "\u{1C}1",
            "_1",
            "1__0",
            "1_",
            "1_.5",
            "Infinity_",
            "\u{200B}1",
            "1\u{301}",
            "",
            " ",
            "1 2",
            "1\0",
            "0x10",
            "1,5",
        ] {
            assert_eq!(python_float(bad), None, "{bad:?}");
        }
    }
}
