//! `repr(str)`.

use crate::chars::is_printable;

/// Python's `repr` of a string, as the reference's messages quote values: the
/// quote Python picks (single, unless the text holds a single quote and no
/// double one), backslash escapes for `\\`, the quote, `\n`, `\r`, `\t`, and
/// `\xhh`, `\uhhhh` or `\Uhhhhhhhh` for every character Python 3.11 does not
/// print (controls, format and private-use characters, separators other than
/// the space, and code points unassigned in its Unicode 14.0).
pub fn python_repr(text: &str) -> String {
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
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(python_repr("it's"), r#""it's""#);
        assert_eq!(python_repr("it's \"x\""), r#"'it\'s "x"'"#);
        assert_eq!(python_repr("a\\b\n\x07\u{85}"), r"'a\\b\n\x07\x85'");
        assert_eq!(
            python_repr("\u{200B}\u{E000}\u{10FFFF}"),
            r"'\u200b\ue000\U0010ffff'"
        );
        assert_eq!(python_repr("\u{A0}\u{3000} é"), r"'\xa0\u3000 é'");
        // Assigned only after Unicode 14.0: escaped, as Python 3.11 does.
        assert_eq!(python_repr("\u{A7CC}"), r"'\ua7cc'");
    }
}
