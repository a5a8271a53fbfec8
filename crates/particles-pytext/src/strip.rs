//! `str.strip()`, `str.lstrip()` and `str.rstrip()` with no argument.

use crate::chars::is_space;

/// Python's `str.strip()`: [`is_space`] characters dropped from both ends
/// (the information separators U+001C..U+001F among them, unlike Rust's `trim`).
pub fn strip(text: &str) -> &str {
    text.trim_matches(is_space)
}

/// Python's `str.lstrip()`: [`is_space`] characters dropped from the start.
pub fn lstrip(text: &str) -> &str {
    text.trim_start_matches(is_space)
}

/// Python's `str.rstrip()`: [`is_space`] characters dropped from the end.
pub fn rstrip(text: &str) -> &str {
    text.trim_end_matches(is_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_space() {
        assert_eq!(strip("\u{1c} a b\u{85}\u{3000}"), "a b");
        assert_eq!(lstrip("\u{1f}\t a "), "a ");
        assert_eq!(rstrip(" a\u{a0}\u{2028}"), " a");
        // Not `str.isspace()`: kept.
        assert_eq!(strip("\u{200b}a\u{feff}"), "\u{200b}a\u{feff}");
    }
}
