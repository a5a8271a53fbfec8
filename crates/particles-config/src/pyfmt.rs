//! Python's `repr` of floats and strings, for messages that quote the
//! reference's wording (`got {factor}`, `{handle!r}`): `particles-pytext`'s.

/// `repr(float)` (Python's shortest round-trip digits, half-way cases as it
/// rounds them).
pub(crate) fn float_repr(value: f64) -> String {
    particles_pytext::float_repr(value)
}

/// `repr(str)`: Python's quoting and escapes, on its Unicode tables.
pub(crate) fn str_repr(text: &str) -> String {
    particles_pytext::python_repr(text)
}

/// `repr(list[str])`.
pub(crate) fn str_list_repr<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let parts: Vec<String> = items.into_iter().map(str_repr).collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.25, "0.25"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (123.456, "123.456"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (f64::INFINITY, "inf"),
            (f64::NAN, "nan"),
        ];
        for (value, expected) in cases {
            assert_eq!(float_repr(value), expected, "{value:e}");
        }
    }

    proptest::proptest! {
        /// The positional/scientific rewrite keeps Rust's shortest digits, so
        /// it must parse back to the same bits (Python's repr round-trips too).
        #[test]
        fn float_repr_round_trips(bits in proptest::num::u64::ANY) {
            let value = f64::from_bits(bits);
            proptest::prop_assume!(value.is_finite());
            let text = float_repr(value);
            proptest::prop_assert_eq!(text.parse::<f64>().map(f64::to_bits), Ok(bits), "{}", text);
            let positional = text.contains('.') && !text.contains('e');
            let exponent = format!("{value:e}").split_once('e').and_then(|(_, e)| e.parse::<i32>().ok());
            proptest::prop_assert_eq!(positional, exponent.is_some_and(|e| (-4..16).contains(&e)));
        }
    }

    #[test]
    fn strings_print_as_python_repr() {
        assert_eq!(str_repr("a"), "'a'");
        assert_eq!(str_repr("it's"), "\"it's\"");
        assert_eq!(str_repr("a\\b\n"), "'a\\\\b\\n'");
        assert_eq!(str_list_repr(["DERIVED", "X"]), "['DERIVED', 'X']");
    }
}
