//! Where Python's `json.loads` stops on a malformed document, and why: the
//! character offset and message FastAPI puts in its `json_invalid` 422
//! (`loc: ["body", offset]`, `ctx.error`). A port of the C scanner's checks in
//! CPython 3.11 (`Modules/_json.c`), reporting only the first error.

/// A decode error: the message and the character offset Python reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonError {
    pub(crate) pos: usize,
    pub(crate) msg: &'static str,
}

type Scan = Result<usize, Stop>;

/// Why a scan stopped: Python's `StopIteration(pos)` (no value starts here,
/// reported as "Expecting value") or a decode error.
enum Stop {
    NoValue(usize),
    Error(JsonError),
}

fn error(pos: usize, msg: &'static str) -> Stop {
    Stop::Error(JsonError { pos, msg })
}

/// How deep arrays and objects may nest before the scan stops. The scan
/// recurses once per level, so without a bound a body of nested brackets
/// overflows a server thread's stack (found by the HTTP fuzz). Python's own
/// scanner stops near its recursion limit (1000) with a RecursionError, a 500
/// in the reference; serde_json refuses past 128 first, so this bound only
/// changes what a body deeper than it gets: a 422 with this message, not a
/// crash.
const MAX_DEPTH: usize = 512;

struct Scanner {
    s: Vec<char>,
    depth: std::cell::Cell<usize>,
}

impl Scanner {
    fn skip_ws(&self, mut idx: usize) -> usize {
        while idx < self.s.len() && matches!(self.s[idx], ' ' | '\t' | '\n' | '\r') {
            idx += 1;
        }
        idx
    }

    fn starts_with(&self, idx: usize, word: &str) -> bool {
        let word: Vec<char> = word.chars().collect();
        self.s.get(idx..idx + word.len()) == Some(&word[..])
    }

    fn value(&self, idx: usize) -> Scan {
        let Some(&c) = self.s.get(idx) else {
            return Err(Stop::NoValue(idx));
        };
        match c {
            '"' => self.string(idx + 1),
            '{' | '[' => {
                let depth = self.depth.get() + 1;
                if depth > MAX_DEPTH {
                    return Err(error(idx, "Maximum nesting depth exceeded"));
                }
                self.depth.set(depth);
                let scanned = if c == '{' {
                    self.object(idx + 1)
                } else {
                    self.array(idx + 1)
                };
                self.depth.set(depth - 1);
                scanned
            }
            'n' if self.starts_with(idx, "null") => Ok(idx + 4),
            't' if self.starts_with(idx, "true") => Ok(idx + 4),
            'f' if self.starts_with(idx, "false") => Ok(idx + 5),
            'N' if self.starts_with(idx, "NaN") => Ok(idx + 3),
            'I' if self.starts_with(idx, "Infinity") => Ok(idx + 8),
            '-' if self.starts_with(idx, "-Infinity") => Ok(idx + 9),
            _ => self.number(idx),
        }
    }

    fn number(&self, start: usize) -> Scan {
        let s = &self.s;
        let mut idx = start;
        if s.get(idx) == Some(&'-') {
            idx += 1;
        }
        match s.get(idx) {
            Some('1'..='9') => {
                while s.get(idx).is_some_and(char::is_ascii_digit) {
                    idx += 1;
                }
            }
            Some('0') => idx += 1,
            _ => return Err(Stop::NoValue(start)),
        }
        if s.get(idx) == Some(&'.') && s.get(idx + 1).is_some_and(char::is_ascii_digit) {
            idx += 1;
            while s.get(idx).is_some_and(char::is_ascii_digit) {
                idx += 1;
            }
        }
        if matches!(s.get(idx), Some('e' | 'E')) {
            let e_start = idx;
            idx += 1;
            if matches!(s.get(idx), Some('-' | '+')) {
                idx += 1;
            }
            let digits = idx;
            while s.get(idx).is_some_and(char::is_ascii_digit) {
                idx += 1;
            }
            if idx == digits {
                idx = e_start;
            }
        }
        Ok(idx)
    }

    fn string(&self, mut end: usize) -> Scan {
        let s = &self.s;
        let len = s.len();
        let begin = end - 1;
        loop {
            let mut next = end;
            let mut c = '\0';
            while next < len {
                c = s[next];
                if c == '"' || c == '\\' {
                    break;
                }
                if (c as u32) <= 0x1f {
                    return Err(error(next, "Invalid control character at"));
                }
                next += 1;
            }
            if next >= len || (c != '"' && c != '\\') {
                return Err(error(begin, "Unterminated string starting at"));
            }
            next += 1;
            if c == '"' {
                return Ok(next);
            }
            if next == len {
                return Err(error(begin, "Unterminated string starting at"));
            }
            let escape = s[next];
            if escape != 'u' {
                end = next + 1;
                if !matches!(escape, '"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') {
                    return Err(error(end - 2, "Invalid \\escape"));
                }
                continue;
            }
            next += 1;
            end = next + 4;
            if end >= len {
                return Err(error(next - 1, "Invalid \\uXXXX escape"));
            }
            let mut unit = 0u32;
            for &digit in &s[next..end] {
                let Some(value) = digit.to_digit(16) else {
                    return Err(error(end - 5, "Invalid \\uXXXX escape"));
                };
                unit = unit * 16 + value;
            }
            next = end;
            if (0xd800..0xdc00).contains(&unit)
                && end + 6 < len
                && s[next] == '\\'
                && s[next + 1] == 'u'
            {
                next += 2;
                end += 6;
                for &digit in &s[next..end] {
                    if digit.to_digit(16).is_none() {
                        return Err(error(end - 5, "Invalid \\uXXXX escape"));
                    }
                }
            }
        }
    }

    fn object(&self, idx: usize) -> Scan {
        let s = &self.s;
        let mut idx = self.skip_ws(idx);
        if s.get(idx) == Some(&'}') {
            return Ok(idx + 1);
        }
        loop {
            if s.get(idx) != Some(&'"') {
                return Err(error(
                    idx,
                    "Expecting property name enclosed in double quotes",
                ));
            }
            idx = self.skip_ws(self.string(idx + 1)?);
            if s.get(idx) != Some(&':') {
                return Err(error(idx, "Expecting ':' delimiter"));
            }
            idx = self.skip_ws(idx + 1);
            idx = self.skip_ws(self.value(idx)?);
            match s.get(idx) {
                Some('}') => return Ok(idx + 1),
                Some(',') => idx = self.skip_ws(idx + 1),
                _ => return Err(error(idx, "Expecting ',' delimiter")),
            }
        }
    }

    fn array(&self, idx: usize) -> Scan {
        let s = &self.s;
        let mut idx = self.skip_ws(idx);
        if s.get(idx) == Some(&']') {
            return Ok(idx + 1);
        }
        loop {
            idx = self.skip_ws(self.value(idx)?);
            match s.get(idx) {
                Some(']') => return Ok(idx + 1),
                Some(',') => idx = self.skip_ws(idx + 1),
                _ => return Err(error(idx, "Expecting ',' delimiter")),
            }
        }
    }
}

/// The error Python's `json.loads(text)` raises, or `None` when it parses.
pub(crate) fn decode_error(text: &str) -> Option<JsonError> {
    let scanner = Scanner {
        s: text.chars().collect(),
        depth: std::cell::Cell::new(0),
    };
    let start = scanner.skip_ws(0);
    match scanner.value(start) {
        Ok(end) => {
            let end = scanner.skip_ws(end);
            (end != scanner.s.len()).then_some(JsonError {
                pos: end,
                msg: "Extra data",
            })
        }
        Err(Stop::NoValue(pos)) => Some(JsonError {
            pos,
            msg: "Expecting value",
        }),
        Err(Stop::Error(error)) => Some(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Option<(usize, &'static str)> {
        decode_error(text).map(|e| (e.pos, e.msg))
    }

    #[test]
    fn deep_nesting_stops_the_scan_instead_of_the_stack() {
        let deep = format!("{}1{}", "[".repeat(200_000), "]".repeat(200_000));
        let error = decode_error(&deep).expect("refused");
        assert_eq!(error.msg, "Maximum nesting depth exceeded");
        assert_eq!(error.pos, MAX_DEPTH);
        let shallow = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(decode_error(&shallow), None);
    }

    #[test]
    fn errors_land_where_python_puts_them() {
        // Each expectation was read off CPython 3.11's json.loads.
        assert_eq!(
            at("{\"a\": 1,}"),
            Some((8, "Expecting property name enclosed in double quotes"))
        );
        assert_eq!(at("{\"top_k\": }"), Some((10, "Expecting value")));
        assert_eq!(at("{\"a\" 1}"), Some((5, "Expecting ':' delimiter")));
        assert_eq!(
            at("{\"a\": 1 \"b\": 2}"),
            Some((8, "Expecting ',' delimiter"))
        );
        assert_eq!(at("[1, 2"), Some((5, "Expecting ',' delimiter")));
        assert_eq!(at("{} x"), Some((3, "Extra data")));
        assert_eq!(at("   "), Some((3, "Expecting value")));
        assert_eq!(at("{\"a"), Some((1, "Unterminated string starting at")));
        assert_eq!(at("\"a\\x\""), Some((2, "Invalid \\escape")));
        assert_eq!(at("\"a\u{1}\""), Some((2, "Invalid control character at")));
        assert_eq!(at("{\"é\": tru}"), Some((6, "Expecting value")));
        assert_eq!(at("-"), Some((0, "Expecting value")));
        assert_eq!(at("01"), Some((1, "Extra data")));
        assert_eq!(at("[1,]"), Some((3, "Expecting value")));
        assert_eq!(
            at("{"),
            Some((1, "Expecting property name enclosed in double quotes"))
        );
        assert_eq!(at("["), Some((1, "Expecting value")));
        assert_eq!(at("\"\\u12\""), Some((2, "Invalid \\uXXXX escape")));
        assert_eq!(at("\"\\u12g4\""), Some((2, "Invalid \\uXXXX escape")));
        assert_eq!(at("{\"a\": NaN, \"b\": -Infinity}"), None);
        assert_eq!(at("{\"q\": \"\\ud83d\\ude00\"}"), None);
    }
}
