//! Named cases through the public API: what a reader checks first when a
//! comparison with the reference goes wrong.

use particles_pytext::{
    casefold, decimal_value, is_alnum, is_decimal, is_printable, is_space, is_word, lower,
    match_ignorecase, nfc, nfkc, python_repr, splitlines, strip, upper, UNICODE_VERSION,
};

#[test]
fn tables_are_python_311s() {
    assert_eq!(UNICODE_VERSION, "14.0.0");
}

#[test]
fn unicode_16_case_pair_is_not_folded() {
    // U+A7CC/U+A7CD (LATIN CAPITAL/SMALL LETTER S WITH DIAGONAL STROKE) got a
    // case pair in Unicode 16; Python 3.11's casefold leaves both unchanged.
    assert_eq!(casefold("\u{A7CC}"), "\u{A7CC}");
    assert_eq!(casefold("\u{A7CD}"), "\u{A7CD}");
    assert_ne!(casefold("\u{A7CC}"), casefold("\u{A7CD}"));
    // Unassigned in 14.0: neither letters nor printable.
    assert!(!is_alnum('\u{A7CC}') && !is_printable('\u{A7CD}'));
    // Nor cased: `lower()` and `upper()` leave them too.
    assert_eq!(lower("\u{A7CC}"), "\u{A7CC}");
    assert_eq!(upper("\u{A7CD}"), "\u{A7CD}");
}

#[test]
fn lower_is_full_with_a_final_sigma() {
    assert_eq!(lower("İstanbul"), "i\u{307}stanbul");
    assert_eq!(lower("ΟΔΥΣΣΕΥΣ"), "οδυσσευς");
    // The sigma is final when a cased letter precedes it and none follows,
    // looking through case-ignorable characters (the apostrophe here).
    assert_eq!(lower("ΑΣ' ΑΣ'Α Σ"), "ας' ασ'α σ");
    assert_eq!(upper("ﬁß"), "FISS");
}

#[test]
fn strip_and_ignorecase() {
    assert_eq!(strip("\u{1c}\u{1f} x \u{85}"), "x");
    assert!(is_word('_') && is_word('\u{B2}') && !is_word('-'));
    assert_eq!(match_ignorecase("[EDİT]", "[edit]"), Some("[EDİT]".len()));
    assert_eq!(match_ignorecase("ſ", "S"), Some(2));
    assert_eq!(match_ignorecase("\u{212A}", "k"), Some(3));
    assert_eq!(match_ignorecase("ß", "ss"), None);
}

#[test]
fn full_case_folding() {
    assert_eq!(casefold("ß"), "ss");
    assert_eq!(casefold("Maße"), casefold("MASSE"));
    assert_eq!(casefold("İ"), "i\u{307}");
    assert_eq!(casefold("ΐ"), "\u{3B9}\u{308}\u{301}");
}

#[test]
fn nfkc_decomposes_compatibility_characters() {
    assert_eq!(nfkc("ﬁ"), "fi");
    assert_eq!(nfkc("Ｈｅｌｌｏ"), "Hello");
    assert_eq!(nfkc("½²"), "1\u{2044}22");
    assert_eq!(nfc("ﬁ"), "ﬁ");
}

#[test]
fn hangul_l_v_t_composes() {
    // ᄒ + ᅡ + ᆫ: the syllable 한.
    assert_eq!(nfkc("\u{1112}\u{1161}\u{11AB}"), "한");
    assert_eq!(nfc("\u{1112}\u{1161}\u{11AB}"), "한");
    assert_eq!(nfkc("한"), "한");
}

#[test]
fn predicates() {
    assert!(is_space('\u{1C}') && is_space('\u{85}') && !is_space('\u{200B}'));
    assert!(is_alnum('\u{B2}') && !is_alnum('\u{24B6}') && !is_alnum('_'));
    assert!(is_decimal('\u{661}') && !is_decimal('\u{B2}'));
    assert_eq!(decimal_value('\u{FF17}'), Some(7));
    assert_eq!(decimal_value('7'), Some(7));
    assert_eq!(decimal_value('x'), None);
    assert_eq!(splitlines("a\r\nb\u{2029}c"), ["a", "b", "c"]);
    assert_eq!(python_repr("a\u{A0}'"), "\"a\\xa0'\"");
}
