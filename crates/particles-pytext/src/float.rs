//! `float(str)` and `repr(float)`.

use crate::chars::{decimal_value, is_space};

/// Python 3.11's `float(str)` (which numpy's conversion of a string calls):
/// Unicode decimal digits read as ASCII digits and Unicode spaces as spaces,
/// ASCII whitespace trimmed, an underscore only between two digits, then a
/// decimal float or `inf`, `infinity`, `nan` in any case with an optional sign
/// (`-nan` keeps its sign). `None` where Python raises `ValueError`.
pub fn python_float(text: &str) -> Option<f64> {
    // `_PyUnicode_TransformDecimalAndSpaceToASCII`.
    let mut ascii = String::with_capacity(text.len());
    for c in text.chars() {
        if (c as u32) < 127 {
            ascii.push(c);
        } else if is_space(c) {
            ascii.push(' ');
        } else {
            ascii.push(decimal_value(c).map_or('?', |d| char::from(b'0' + d)));
        }
    }
    // `_Py_string_to_number_with_underscores`: each underscore between digits.
    if ascii.contains('_') {
        let bytes = ascii.as_bytes();
        let between_digits = |at: usize| {
            at > 0
                && bytes[at - 1].is_ascii_digit()
                && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)
        };
        if !(0..bytes.len()).all(|at| bytes[at] != b'_' || between_digits(at)) {
            return None;
        }
        ascii.retain(|c| c != '_');
    }
    // `float_from_string_inner`: ASCII whitespace trimmed (`Py_ISSPACE`).
    let trimmed = ascii.trim_matches([' ', '\t', '\n', '\u{B}', '\u{C}', '\r']);
    let unsigned = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
    let special = ["inf", "infinity", "nan"]
        .iter()
        .any(|word| unsigned.eq_ignore_ascii_case(word));
    let grammar = special || {
        let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
            Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
            None => (unsigned, None),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
        digits(whole)
            && digits(fraction)
            && whole.len() + fraction.len() > 0
            && exponent.is_none_or(|e| {
                let e = e.strip_prefix(['+', '-']).unwrap_or(e);
                !e.is_empty() && digits(e)
            })
    };
    if !grammar {
        return None;
    }
    trimmed.parse().ok()
}

/// Python's `repr(float)`: the shortest digits that read back to the same
/// value, positional for decimal exponents -4..16, else `d.ddde±XX`; `nan`,
/// `inf`, `-inf`.
pub fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `LowerExp` writes the shortest round-tripping digits, as Python
    // does, but where the value lies exactly halfway between two such strings
    // Python (David Gay's dtoa) takes the even last digit and Rust need not
    // (944626808401744.25 is `...744.2` in Python). The value correctly rounded
    // to that many digits, half to even, is Python's whenever it reads back.
    let shortest = format!("{value:e}");
    let n_digits = shortest.split_once('e').map_or(1, |(mantissa, _)| {
        mantissa.bytes().filter(u8::is_ascii_digit).count()
    });
    // Two candidates both read back only when a step of the last digit is
    // within an ulp (2^-52 relative), so below 15 digits there is no tie.
    let rounded = (n_digits >= 15)
        .then(|| format!("{value:.*e}", n_digits - 1))
        .filter(|rounded| rounded.parse::<f64>() == Ok(value));
    let scientific = rounded.unwrap_or(shortest);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("LowerExp always writes an exponent");
    let exponent: i32 = exponent
        .parse()
        .expect("LowerExp writes a decimal exponent");
    let (sign, mantissa) = mantissa
        .strip_prefix('-')
        .map_or(("", mantissa), |rest| ("-", rest));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exponent) {
        let point = exponent + 1;
        let text = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{text}")
    } else {
        let (head, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{sign}{head}{fraction}e{exp_sign}{:02}",
            exponent.unsigned_abs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_python_reads_them() {
        let bits = |text: &str| python_float(text).map(|x| (x as f32).to_bits());
        assert_eq!(python_float("\u{0661}\u{0662}"), Some(12.0));
        assert_eq!(python_float("\u{FF11}.\u{FF15}"), Some(1.5));
        assert_eq!(python_float("\u{85}1\u{3000}"), Some(1.0));
        assert_eq!(python_float("1_0.5"), Some(10.5));
        assert_eq!(python_float("1e1_0"), Some(1e10));
        assert_eq!(bits("-nan"), Some(0xFFC0_0000));
        assert_eq!(python_float("iNfInItY"), Some(f64::INFINITY));
        for bad in [
            "\u{1C}1",
            "_1",
            "1__0",
            "1_",
            "1_.5",
            "Infinity_",
            "\u{200B}1",
            "1\u{301}",
            "",
            " ",
            "1 2",
            "1\0",
            "0x10",
            "1,5",
        ] {
            assert_eq!(python_float(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn reprs_as_python_writes_them() {
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(0.00001), "1e-05");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(1e15), "1000000000000000.0");
        assert_eq!(float_repr(123456789012345680.0), "1.2345678901234568e+17");
        assert_eq!(float_repr(-1.5), "-1.5");
        assert_eq!(float_repr(-0.0), "-0.0");
        assert_eq!(float_repr(f64::NAN), "nan");
        // Exactly halfway between two shortest strings: the even digit.
        // 944626808401744.25 exactly.
        assert_eq!(
            float_repr(f64::from_bits(0x430A_D910_8AE1_7A82)),
            "944626808401744.2"
        );
    }
}
