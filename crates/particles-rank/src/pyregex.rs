//! Python `re` patterns on a Rust engine.
//!
//! Source-trust and decay rules are Python regexes applied with `re.search`. The
//! `regex` crate lacks look-around and back-references, so patterns compile with
//! `fancy-regex` after translating the two anchors whose meaning differs: Python's
//! `$` (end, or before a final newline) and `\Z` (end only).

use fancy_regex::Regex;

/// A compiled Python pattern.
#[derive(Debug, Clone)]
pub struct PyRegex {
    regex: Regex,
}

impl PyRegex {
    /// Compiles a Python pattern; `None` when it does not compile (the reference
    /// skips such a rule: an invalid regex never matches).
    pub fn compile(pattern: &str) -> Option<PyRegex> {
        Regex::new(&translate(pattern))
            .ok()
            .map(|regex| PyRegex { regex })
    }

    /// `re.search`: whether the pattern matches anywhere. A match that exceeds the
    /// engine's backtracking limit counts as no match.
    pub fn search(&self, text: &str) -> bool {
        self.regex.is_match(text).unwrap_or(false)
    }
}

fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => match chars.next() {
                Some('Z') if !in_class => out.push_str(r"\z"),
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => out.push('\\'),
            },
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // A `]` right after `[` or `[^` is a literal.
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push_str(r"\]");
                    chars.next();
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '$' if !in_class => out.push_str(r"(?=\n?\z)"),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_semantics() {
        let seeded =
            PyRegex::compile(r"en\.numista\.com/(?:catalogue/pieces\d+\.html|\d+/?$)").unwrap();
        assert!(seeded.search("https://en.numista.com/catalogue/pieces123.html"));
        assert!(seeded.search("https://en.numista.com/123/\n"));
        assert!(!seeded.search("https://en.numista.com/123/x"));
        let lookbehind = PyRegex::compile(r"(?<=wiki/)Special:").unwrap();
        assert!(lookbehind.search("https://en.wikipedia.org/wiki/Special:Foo"));
        assert!(PyRegex::compile(r"[$]").unwrap().search("a$b"));
        assert!(PyRegex::compile("(unbalanced").is_none());
    }
}
