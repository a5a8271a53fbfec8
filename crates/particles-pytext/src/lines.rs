//! `str.splitlines()`.

use crate::chars::is_line_boundary;

/// Python's `str.splitlines()` (no ends kept): a line ends at every character
/// [`is_line_boundary`] accepts, `\r\n` counting as one; there is no trailing
/// empty line.
pub fn splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !is_line_boundary(c) {
            continue;
        }
        lines.push(&text[start..at]);
        let mut end = at + c.len_utf8();
        if c == '\r' && chars.next_if(|&(_, next)| next == '\n').is_some() {
            end += 1;
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
    fn like_python() {
        assert_eq!(
            splitlines("a\r\nb\rc\n\nd\u{2028}e\u{85}"),
            ["a", "b", "c", "", "d", "e"]
        );
        assert_eq!(splitlines("a\u{b}b\u{1c}c\n"), ["a", "b", "c"]);
        assert!(splitlines("").is_empty());
        assert_eq!(splitlines("\n"), [""]);
        assert_eq!(splitlines("a\u{1f}b"), ["a\u{1f}b"]);
    }
}
