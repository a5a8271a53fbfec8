//! One-character predicates, each a lookup in a generated table.

use crate::tables::{ALNUM, DECIMAL_ZEROS, LINE_BOUNDARY, PRINTABLE, SPACE};

/// Whether `code` lies in one of `ranges` (sorted, disjoint, inclusive).
pub(crate) fn in_ranges(ranges: &[(u32, u32)], code: u32) -> bool {
    let at = ranges.partition_point(|&(_, last)| last < code);
    ranges.get(at).is_some_and(|&(first, _)| first <= code)
}

/// `str.isspace()` for one character (`Py_UNICODE_ISSPACE`), which is also
/// `re`'s `\s` for str patterns and what `str.split()` and `str.strip()` drop.
pub fn is_space(c: char) -> bool {
    in_ranges(SPACE, c as u32)
}

/// `str.isprintable()` for one character: what `repr()` leaves unescaped.
pub fn is_printable(c: char) -> bool {
    in_ranges(PRINTABLE, c as u32)
}

/// `str.isalnum()` for one character: `isalpha()`, `isdecimal()`, `isdigit()`
/// or `isnumeric()`.
pub fn is_alnum(c: char) -> bool {
    in_ranges(ALNUM, c as u32)
}

/// `re`'s `\w` for str patterns: [`is_alnum`] or the underscore.
pub fn is_word(c: char) -> bool {
    c == '_' || is_alnum(c)
}

/// `str.isdecimal()` for one character (also `re`'s `\d` for str patterns).
pub fn is_decimal(c: char) -> bool {
    decimal_value(c).is_some()
}

/// The value of a decimal digit (`unicodedata.decimal`), as `int()`, `float()`
/// and `Decimal()` read one; `None` for any other character.
pub fn decimal_value(c: char) -> Option<u8> {
    let code = c as u32;
    let at = DECIMAL_ZEROS.partition_point(|&zero| zero <= code);
    let zero = *DECIMAL_ZEROS.get(at.checked_sub(1)?)?;
    // Each zero starts a run of exactly ten digits (the generator checks).
    u8::try_from(code - zero).ok().filter(|&digit| digit < 10)
}

/// Whether `str.splitlines()` ends a line at this character.
pub fn is_line_boundary(c: char) -> bool {
    in_ranges(LINE_BOUNDARY, c as u32)
}
