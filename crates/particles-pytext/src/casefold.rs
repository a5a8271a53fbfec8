//! `str.casefold()`.

use crate::tables::CASEFOLD;

/// Python's `str.casefold()`: each character's full case folding, with no
/// context (unlike `lower()`, which treats a final sigma apart).
pub fn casefold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_lowercase());
            continue;
        }
        match CASEFOLD.binary_search_by_key(&(c as u32), |&(code, _)| code) {
            Ok(at) => out.push_str(CASEFOLD[at].1),
            Err(_) => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_folding() {
        assert_eq!(casefold("Straße"), "strasse");
        assert_eq!(casefold("\u{130}"), "i\u{307}");
        assert_eq!(casefold("\u{390}"), "\u{3b9}\u{308}\u{301}");
        assert_eq!(casefold("ΣΑΣ"), "σασ");
        assert_eq!(casefold("\u{1E9E}"), "ss");
        // Cherokee folds to its uppercase.
        assert_eq!(casefold("\u{AB70}"), "\u{13A0}");
    }

    #[test]
    fn unicode_16_letters_stay() {
        // U+A7CC/U+A7CD became a case pair in Unicode 16; Python 3.11 (14.0)
        // has them unassigned and leaves them unchanged.
        assert_eq!(casefold("\u{A7CC}"), "\u{A7CC}");
        assert_eq!(casefold("\u{A7CD}"), "\u{A7CD}");
    }
}
