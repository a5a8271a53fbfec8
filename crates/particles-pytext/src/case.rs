//! `str.lower()`, `str.upper()`, and the case-insensitive match of `re`'s
//! `IGNORECASE` for ASCII literals.

use crate::{
    chars::in_ranges,
    tables::{CASED, CASE_IGNORABLE, IGNORECASE_EXTRA, LOWER, UPPER},
};

const CAPITAL_SIGMA: char = '\u{3A3}';

/// One character through a sorted `(code, mapping)` table, onto `out`.
fn push_mapped(out: &mut String, table: &[(u32, &str)], c: char) {
    match table.binary_search_by_key(&(c as u32), |&(code, _)| code) {
        Ok(at) => out.push_str(table[at].1),
        Err(_) => out.push(c),
    }
}

fn is_cased(c: char) -> bool {
    in_ranges(CASED, c as u32)
}

fn is_case_ignorable(c: char) -> bool {
    in_ranges(CASE_IGNORABLE, c as u32)
}

/// CPython's `handle_capital_sigma`: the sigma at byte `at` is word-final when
/// the nearest character before it that is not case-ignorable is cased, and
/// the nearest one after it is not cased (or there is none).
fn is_final_sigma(text: &str, at: usize) -> bool {
    let before = text[..at].chars().rev().find(|&c| !is_case_ignorable(c));
    if !before.is_some_and(is_cased) {
        return false;
    }
    let after = text[at + CAPITAL_SIGMA.len_utf8()..]
        .chars()
        .find(|&c| !is_case_ignorable(c));
    !after.is_some_and(is_cased)
}

/// Python's `str.lower()`: each character's full lowercase mapping (`İ` becomes
/// `i̇`, two characters), except that `Σ` becomes `ς` at the end of a word
/// (CPython's Final_Sigma rule) and `σ` elsewhere.
pub fn lower(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
        } else if c == CAPITAL_SIGMA {
            out.push(if is_final_sigma(text, at) {
                '\u{3C2}'
            } else {
                '\u{3C3}'
            });
        } else {
            push_mapped(&mut out, LOWER, c);
        }
    }
    out
}

/// Python's `str.upper()`: each character's full uppercase mapping, with no
/// context (`ß` becomes `SS`, `ŉ` becomes `ʼN`).
pub fn upper(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_uppercase());
        } else {
            push_mapped(&mut out, UPPER, c);
        }
    }
    out
}

/// Whether `c` matches the ASCII character `literal` in a str pattern compiled
/// with `re.IGNORECASE`: ASCII case, plus the few non-ASCII characters `re`
/// pairs with an ASCII letter (`İ` and `ı` with `i`, the Kelvin sign with `k`,
/// `ſ` with `s`). A non-ASCII `literal` matches only itself.
pub fn ignorecase_eq(c: char, literal: char) -> bool {
    if c == literal {
        return true;
    }
    if !literal.is_ascii_alphabetic() {
        return false;
    }
    let letter = literal.to_ascii_lowercase();
    if c.is_ascii() {
        return c.to_ascii_lowercase() == letter;
    }
    let pair = (letter as u32, c as u32);
    IGNORECASE_EXTRA.binary_search(&pair).is_ok()
}

/// `re.match(re.escape(literal), text, re.IGNORECASE)` for an ASCII `literal`
/// (each character through [`ignorecase_eq`]): the byte length of the match
/// at the start of `text`, or `None`.
pub fn match_ignorecase(text: &str, literal: &str) -> Option<usize> {
    let mut chars = text.char_indices();
    for expected in literal.chars() {
        let (_, c) = chars.next()?;
        if !ignorecase_eq(c, expected) {
            return None;
        }
    }
    Some(chars.next().map_or(text.len(), |(at, _)| at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_and_upper() {
        assert_eq!(lower("Straße İ"), "straße i\u{307}");
        assert_eq!(upper("straße ŉ ﬃ"), "STRASSE \u{2BC}N FFI");
        // Unicode 16 pair: unassigned in Python 3.11.
        assert_eq!(lower("\u{A7CC}"), "\u{A7CC}");
        assert_eq!(upper("\u{A7CD}"), "\u{A7CD}");
    }

    #[test]
    fn final_sigma() {
        assert_eq!(lower("ΟΔΟΣ ΣΑΣ Σ"), "οδος σας σ");
        // Case-ignorable characters (apostrophe, combining marks) are looked
        // through on both sides.
        assert_eq!(lower("AΣ'"), "aς'");
        assert_eq!(lower("AΣ'B"), "aσ'b");
        assert_eq!(lower("A\u{301}Σ\u{301}"), "a\u{301}ς\u{301}");
        assert_eq!(lower("'Σ"), "'σ");
        assert_eq!(lower("ΣΣ"), "σς");
    }

    #[test]
    fn ignorecase() {
        assert!(ignorecase_eq('\u{130}', 'i') && ignorecase_eq('\u{131}', 'I'));
        assert!(ignorecase_eq('\u{17F}', 's') && ignorecase_eq('\u{212A}', 'K'));
        assert!(!ignorecase_eq('\u{17F}', 't') && !ignorecase_eq('_', '-'));
        assert_eq!(match_ignorecase("TOOL_REſULT: x", "tool_result"), Some(12));
        assert_eq!(match_ignorecase("tool", "tool_result"), None);
    }
}
