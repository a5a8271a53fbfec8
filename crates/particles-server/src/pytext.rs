//! Python's string semantics where a client reads the text we produce, and
//! headers decoded as Starlette decodes them (latin-1). `str.strip()` and
//! `str.lower()` (final sigma included) are `particles_pytext`'s, over tables
//! generated from Python 3.11 (Unicode 14.0); `splitlines` and `repr` are
//! `particles_model::{python_splitlines, python_repr}`.

pub(crate) use particles_pytext::{lower, strip};

/// A header value as Starlette reads it: bytes decoded as latin-1.
pub(crate) fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use particles_model::{python_repr as repr_latin1, python_splitlines as splitlines};

    #[test]
    fn strip_and_splitlines_follow_python() {
        assert_eq!(strip("\u{1c} a \u{a0}"), "a");
        assert_eq!(lower("ORIGIN İ ΟΣ"), "origin i\u{307} ος");
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
