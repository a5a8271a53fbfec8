//! Python's string semantics where a client reads the text we produce: `strip`,
//! `isspace`, `splitlines`, `repr` of a header value, and headers decoded as
//! Starlette decodes them (latin-1).

/// Python's `str.isspace` for one character: Unicode White_Space plus the four
/// information separators U+001C..U+001F, which Python counts and Rust does not.
pub(crate) fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.strip()`.
pub(crate) fn strip(text: &str) -> &str {
    text.trim_matches(is_space)
}

/// Python's `str.splitlines()` (no ends kept): every line boundary Python knows.
pub(crate) fn splitlines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
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
        lines.push(&text[start..index]);
        let mut end = index + c.len_utf8();
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

/// A header value as Starlette reads it: bytes decoded as latin-1.
pub(crate) fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// Python's `repr()` of a string whose characters are all below U+0100 (a
/// latin-1 decoded header): quotes chosen as Python chooses them, escapes for
/// the characters Python does not print.
pub(crate) fn repr_latin1(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            // Python prints a character unless it is a control (Cc), a format
            // character (Cf: the soft hyphen) or a separator other than space.
            c if (c as u32) < 0x20 || (0x7f..=0xa0).contains(&(c as u32)) || c == '\u{ad}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_and_splitlines_follow_python() {
        assert_eq!(strip("\u{1c} a \u{a0}"), "a");
        assert_eq!(splitlines("a\r\nb\rc\u{2028}d\n"), vec!["a", "b", "c", "d"]);
        assert_eq!(splitlines(""), Vec::<&str>::new());
        assert_eq!(splitlines("a\n\nb"), vec!["a", "", "b"]);
    }

    #[test]
    fn repr_picks_quotes_and_escapes_as_python() {
        assert_eq!(repr_latin1("evil.example:80"), "'evil.example:80'");
        assert_eq!(repr_latin1("it's"), "\"it's\"");
        assert_eq!(repr_latin1("a'\"b"), "'a\\'\"b'");
        assert_eq!(repr_latin1("x\u{e9}\u{85}\t"), "'x\u{e9}\\x85\\t'");
    }
}
