//! `unicodedata.normalize("NFC" | "NFKC", text)`, as UAX #15 defines them
//! (<https://www.unicode.org/reports/tr15/>): full decomposition, canonical
//! reordering, then canonical composition.

use crate::tables::{CANONICAL, COMBINING_CLASS, COMPATIBILITY, COMPOSITIONS};

// Hangul syllables decompose and compose by arithmetic (Unicode ch. 3.12).
const S_BASE: u32 = 0xAC00;
const L_BASE: u32 = 0x1100;
const V_BASE: u32 = 0x1161;
const T_BASE: u32 = 0x11A7;
const L_COUNT: u32 = 19;
const V_COUNT: u32 = 21;
const T_COUNT: u32 = 28;
const N_COUNT: u32 = V_COUNT * T_COUNT;
const S_COUNT: u32 = L_COUNT * N_COUNT;

/// Which decomposition a form starts from.
#[derive(Clone, Copy)]
enum Form {
    Canonical,
    Compatibility,
}

/// `unicodedata.normalize("NFC", text)`.
pub fn nfc(text: &str) -> String {
    normalize(text, Form::Canonical)
}

/// `unicodedata.normalize("NFKC", text)`.
pub fn nfkc(text: &str) -> String {
    normalize(text, Form::Compatibility)
}

fn normalize(text: &str, form: Form) -> String {
    // No ASCII character decomposes or composes with ASCII.
    if text.is_ascii() {
        return text.to_owned();
    }
    let mut chars = Vec::with_capacity(text.len());
    for c in text.chars() {
        decompose(c, form, &mut chars);
    }
    reorder(&mut chars);
    compose(&mut chars);
    chars.into_iter().collect()
}

fn scalar(code: u32) -> char {
    char::from_u32(code).expect("Hangul jamo and syllables are scalar values")
}

fn mapping(table: &'static [(u32, &'static str)], code: u32) -> Option<&'static str> {
    let at = table.binary_search_by_key(&code, |&(key, _)| key).ok()?;
    Some(table[at].1)
}

/// Appends the full decomposition of `c` (the tables hold each character's
/// complete one, so no recursion).
fn decompose(c: char, form: Form, out: &mut Vec<char>) {
    let code = c as u32;
    // Below U+00A0 nothing decomposes.
    if code < 0xA0 {
        out.push(c);
        return;
    }
    if let Some(index) = code.checked_sub(S_BASE).filter(|&index| index < S_COUNT) {
        out.push(scalar(L_BASE + index / N_COUNT));
        out.push(scalar(V_BASE + index % N_COUNT / T_COUNT));
        if index % T_COUNT != 0 {
            out.push(scalar(T_BASE + index % T_COUNT));
        }
        return;
    }
    let decomposition = match form {
        Form::Canonical => mapping(CANONICAL, code),
        Form::Compatibility => mapping(COMPATIBILITY, code).or_else(|| mapping(CANONICAL, code)),
    };
    match decomposition {
        Some(chars) => out.extend(chars.chars()),
        None => out.push(c),
    }
}

/// `unicodedata.combining`: the canonical combining class, 0 for starters.
fn combining_class(c: char) -> u8 {
    let code = c as u32;
    // The first non-zero class is U+0300's.
    if code < 0x300 {
        return 0;
    }
    let at = COMBINING_CLASS.partition_point(|&(_, last, _)| last < code);
    match COMBINING_CLASS.get(at) {
        Some(&(first, _, class)) if first <= code => class,
        _ => 0,
    }
}

/// The canonical ordering algorithm: each run of non-starters sorted by class,
/// stably.
fn reorder(chars: &mut [char]) {
    let mut at = 0;
    while at < chars.len() {
        if combining_class(chars[at]) == 0 {
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len() && combining_class(chars[at]) != 0 {
            at += 1;
        }
        if at - start > 1 {
            chars[start..at].sort_by_key(|&c| combining_class(c));
        }
    }
}

/// The canonical composition algorithm, in place: each character joins the
/// last starter when nothing between them blocks it (a starter, or a
/// character of the same or a higher class) and the pair has a primary
/// composite.
fn compose(chars: &mut Vec<char>) {
    let mut starter: Option<usize> = None;
    // The class of the last character kept since the starter; `None` when the
    // starter is the last one kept.
    let mut last_class: Option<u8> = None;
    let mut kept = 0;
    for read in 0..chars.len() {
        let c = chars[read];
        let class = combining_class(c);
        if let Some(at) = starter {
            let blocked = last_class.is_some_and(|last| last == 0 || last >= class);
            if !blocked {
                if let Some(composite) = composite(chars[at], c) {
                    chars[at] = composite;
                    continue;
                }
            }
        }
        if class == 0 {
            starter = Some(kept);
            last_class = None;
        } else {
            last_class = Some(class);
        }
        chars[kept] = c;
        kept += 1;
    }
    chars.truncate(kept);
}

/// The primary composite of `first` followed by `second`, if there is one.
fn composite(first: char, second: char) -> Option<char> {
    let (first, second) = (first as u32, second as u32);
    if (L_BASE..L_BASE + L_COUNT).contains(&first) && (V_BASE..V_BASE + V_COUNT).contains(&second) {
        let index = (first - L_BASE) * N_COUNT + (second - V_BASE) * T_COUNT;
        return Some(scalar(S_BASE + index));
    }
    let lv_syllable = first
        .checked_sub(S_BASE)
        .is_some_and(|index| index < S_COUNT && index % T_COUNT == 0);
    if lv_syllable && (T_BASE + 1..T_BASE + T_COUNT).contains(&second) {
        return Some(scalar(first + (second - T_BASE)));
    }
    let at = COMPOSITIONS
        .binary_search_by(|&(a, b, _)| (a, b).cmp(&(first, second)))
        .ok()?;
    char::from_u32(COMPOSITIONS[at].2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatibility_and_canonical() {
        assert_eq!(nfkc("\u{FB01}"), "fi");
        assert_eq!(nfc("\u{FB01}"), "\u{FB01}");
        assert_eq!(nfkc("\u{2460}"), "1");
        assert_eq!(nfc("A\u{30A}"), "\u{C5}");
        // The Angstrom sign is a singleton: it decomposes, never recomposes.
        assert_eq!(nfc("\u{212B}"), "\u{C5}");
        // ẛ̣: canonically ſ, compatibly s.
        assert_eq!(nfc("\u{1E9B}\u{323}"), "\u{1E9B}\u{323}");
        assert_eq!(nfkc("\u{1E9B}\u{323}"), "\u{1E69}");
    }

    #[test]
    fn hangul() {
        // L + V + T composes to one syllable.
        assert_eq!(nfkc("\u{1100}\u{1161}\u{11A8}"), "\u{AC01}");
        assert_eq!(nfc("\u{1100}\u{1161}"), "\u{AC00}");
        // A syllable decomposes and composes again, with a following T.
        assert_eq!(nfc("\u{AC00}\u{11A8}"), "\u{AC01}");
        // U+11A7 is not a trailing consonant for composition.
        assert_eq!(nfc("\u{1100}\u{1161}\u{11A7}"), "\u{AC00}\u{11A7}");
        // Halfwidth jamo are compatibility characters.
        assert_eq!(nfkc("\u{FFA1}\u{FFC2}"), "\u{AC00}");
    }

    #[test]
    fn blocking_and_order() {
        // Marks reorder by class, then the first unblocked one composes.
        assert_eq!(nfc("A\u{301}\u{316}"), "\u{C1}\u{316}");
        assert_eq!(nfc("A\u{316}\u{301}"), "\u{C1}\u{316}");
        // Two marks of one class: the second is blocked by the first.
        assert_eq!(nfc("A\u{300}\u{301}"), "\u{C0}\u{301}");
        // A starter between blocks.
        assert_eq!(nfc("\u{B47}\u{300}\u{B3E}"), "\u{B47}\u{300}\u{B3E}");
        assert_eq!(nfc("\u{B47}\u{B3E}"), "\u{B4B}");
    }
}
