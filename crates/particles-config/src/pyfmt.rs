//! Python's `repr` of floats and strings, for messages that quote the
//! reference's wording (`got {factor}`, `{handle!r}`).

/// `repr(float)`: the shortest round-trip digits, positional for exponents in
/// `-4..16`, else scientific with a signed two-digit exponent.
pub(crate) fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes a decimal exponent");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exponent) {
        let n_digits = i32::try_from(digits.len()).expect("at most 17 digits");
        if exponent < 0 {
            let zeros = "0".repeat(usize::try_from(-exponent - 1).expect("exponent is negative"));
            format!("{sign}0.{zeros}{digits}")
        } else if exponent + 1 >= n_digits {
            let zeros = "0".repeat(usize::try_from(exponent + 1 - n_digits).expect("non-negative"));
            format!("{sign}{digits}{zeros}.0")
        } else {
            let split = usize::try_from(exponent + 1).expect("non-negative");
            format!("{sign}{}.{}", &digits[..split], &digits[split..])
        }
    } else {
        let (head, tail) = digits.split_at(1);
        let mantissa = if tail.is_empty() {
            head.to_owned()
        } else {
            format!("{head}.{tail}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exponent_sign}{:02}", exponent.abs())
    }
}

/// `repr(str)`: single quotes unless the text holds one and no double quote.
pub(crate) fn str_repr(text: &str) -> String {
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
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
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
