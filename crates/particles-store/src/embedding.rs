//! Decoding `embedding_json` exactly as the reference does:
//! `np.array(json.loads(text), dtype=np.float32)`.
//!
//! Each JSON number becomes the correctly rounded f64 first and is then rounded to
//! f32 (never parsed straight to f32: the double rounding must match Python's). A
//! JSON integer is a Python int first: `-0` is +0.0, and one that rounds to 2^1024
//! or more is an `OverflowError`, not infinity. A hand-written scanner validates
//! JSON number syntax, accepts Python's `NaN` and `Infinity` literals, applies
//! numpy's conversions to strings, booleans and nulls, and allocates once: it runs
//! for every row a cache builds. The differential fuzz (`tests/it/fuzz.rs`) holds
//! it to the reference's decoder, bit for bit.

/// Why an embedding did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingError(pub String);

/// Decodes an embedding's JSON text to f32.
///
/// # Errors
///
/// When the text is not a JSON array of numbers (or of values numpy converts to
/// float32: numeric strings, booleans, `null` as NaN).
pub fn decode_embedding(text: &str) -> Result<Vec<f32>, EmbeddingError> {
    // 384 numbers of ~20 bytes each; the estimate only avoids regrowth.
    let mut out = Vec::with_capacity(text.len() / 20 + 1);
    decode_embedding_into(text, &mut out)?;
    Ok(out)
}

/// [`decode_embedding`] into a reused buffer (cleared first), for bulk decoding.
///
/// # Errors
///
/// As [`decode_embedding`]; `out` then holds a prefix.
pub(crate) fn decode_embedding_into(text: &str, out: &mut Vec<f32>) -> Result<(), EmbeddingError> {
    decode_embedding_bytes(text.as_bytes(), out)
}

/// [`decode_embedding_into`] from the column's bytes, not yet known to be
/// UTF-8: a build reads about 8 KB of embedding text a row, and checking it
/// first was a pass of its own (UTF-8 checks were 2.7% of a 1M build, perf,
/// most of them this text). It needs no check:
/// every byte of a text that decodes is JSON's punctuation, whitespace, an
/// ASCII number or literal, or inside a string that `serde_json` read from
/// the slice, which checks its UTF-8. So a text that decodes is UTF-8, and
/// on valid UTF-8 this reads exactly as from the `str`. Only a text that
/// fails can be invalid UTF-8: the caller checks then, to report what a
/// `str` read reports.
///
/// # Errors
///
/// As [`decode_embedding`]; `out` then holds a prefix.
pub(crate) fn decode_embedding_bytes(
    bytes: &[u8],
    out: &mut Vec<f32>,
) -> Result<(), EmbeddingError> {
    out.clear();
    let fail = |what: &str, pos: usize| EmbeddingError(format!("{what} at byte {pos}"));
    let mut pos = skip_ws(bytes, 0);
    if bytes.get(pos) != Some(&b'[') {
        return Err(fail("expected `[`", pos));
    }
    pos = skip_ws(bytes, pos + 1);
    if bytes.get(pos) == Some(&b']') {
        pos = skip_ws(bytes, pos + 1);
        return if pos == bytes.len() {
            Ok(())
        } else {
            Err(fail("trailing text", pos))
        };
    }
    loop {
        let (value, end) = element(bytes, pos)?;
        out.push(value);
        pos = skip_ws(bytes, end);
        match bytes.get(pos) {
            Some(b',') => pos = skip_ws(bytes, pos + 1),
            Some(b']') => {
                pos = skip_ws(bytes, pos + 1);
                return if pos == bytes.len() {
                    Ok(())
                } else {
                    Err(fail("trailing text", pos))
                };
            }
            _ => return Err(fail("expected `,` or `]`", pos)),
        }
    }
}

/// One array element at `pos`: its f32 value (as numpy converts it) and its end.
fn element(bytes: &[u8], pos: usize) -> Result<(f32, usize), EmbeddingError> {
    if let Some(fast) = short_decimal(bytes, pos) {
        return Ok(fast);
    }
    if let Some(end) = json_number_end(bytes, pos) {
        // The token is ASCII by construction, so the check cannot fail.
        let token = std::str::from_utf8(&bytes[pos..end])
            .map_err(|_| EmbeddingError(format!("bad number at byte {pos}")))?;
        let value: f64 = match token {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            _ => token
                .parse()
                .map_err(|_| EmbeddingError(format!("{token:?} is not a number")))?,
        };
        if !token.contains(['.', 'e', 'E']) && token.bytes().any(|b| b.is_ascii_digit()) {
            // `json.loads` makes an integer a Python int, which numpy turns into a
            // float through `PyLong_AsDouble`: `-0` is the int 0 (so +0.0), and an
            // int that rounds to 2^1024 or more raises OverflowError.
            if value.is_infinite() {
                return Err(EmbeddingError(format!(
                    "integer at byte {pos} is too large to convert to float"
                )));
            }
            if value == 0.0 {
                return Ok((0.0, end));
            }
        }
        return Ok((value as f32, end));
    }
    for (literal, value) in [("true", 1.0f32), ("false", 0.0), ("null", f32::NAN)] {
        if bytes[pos..].starts_with(literal.as_bytes()) {
            return Ok((value, pos + literal.len()));
        }
    }
    if bytes.get(pos) == Some(&b'"') {
        // From the slice: it checks the string's UTF-8 (see
        // `decode_embedding_bytes`).
        let mut stream = serde_json::Deserializer::from_slice(&bytes[pos..]).into_iter::<String>();
        let string = match stream.next() {
            Some(Ok(string)) => string,
            _ => return Err(EmbeddingError(format!("bad string at byte {pos}"))),
        };
        let end = pos + stream.byte_offset();
        let value = particles_model::python_float(&string).ok_or_else(|| {
            EmbeddingError(format!("could not convert string to float: {string:?}"))
        })?;
        return Ok((value as f32, end));
    }
    Err(EmbeddingError(format!(
        "element at byte {pos} is not a number (an array, an object or invalid JSON)"
    )))
}

/// The powers of ten an `f64` holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The common element in one pass, or `None` to take the general path: a JSON
/// number with a fraction or an exponent (an integer is a Python int first), at
/// most 19 significant digits, and a decimal exponent within 22, such as the
/// reference writes (Python's `repr` of an `f32` widened to `f64`: 14 to 17
/// digits, about 10^-2 after the point).
///
/// Why not `str::parse`: this runs for every number of every row a build
/// decodes, and scanning each token twice (once for JSON's grammar, once in
/// the parser) was about half of a first query's time (perf, 100k rows).
///
/// Exactness: the value must be the correctly rounded `f64`, then rounded to
/// `f32`. With the digits `m` and the exponent `e`, `m as f64` and one product
/// or quotient by the exact `10^|e|` each round once. When `m <= 2^53` the
/// conversion is exact and the one rounding is the correct one (Clinger's fast
/// path). Otherwise the result is within 2.5 `f64` ulps of the correct `f64`,
/// and rounding to `f32` is monotone: when the points 8 ulps either side round
/// to the same `f32`, so does the correct `f64`. When they do not (the value
/// lies within 8 ulps of a midpoint between two `f32`s), the general path
/// decides. The tests compare this path with `str::parse` on values that lie
/// on, beside and between such midpoints.
fn short_decimal(bytes: &[u8], start: usize) -> Option<(f32, usize)> {
    let mut pos = start;
    let negative = bytes.get(pos) == Some(&b'-');
    pos += usize::from(negative);
    let mut digits: u64 = 0;
    // Significant digits in `digits` (leading zeros are not).
    let mut significant = 0u32;
    match bytes.get(pos) {
        Some(b'0') => pos += 1,
        Some(b'1'..=b'9') => pos = append_digits(bytes, pos, &mut digits, &mut significant),
        _ => return None,
    }
    let mut exponent: i32 = 0;
    let mut integer = true;
    if bytes.get(pos) == Some(&b'.') {
        integer = false;
        pos += 1;
        let first = pos;
        if digits == 0 {
            // Leading zeros place the point, they are not digits of the value.
            while bytes.get(pos) == Some(&b'0') {
                pos += 1;
            }
        }
        while significant + 8 <= 19 {
            let Some(eight) = eight_digits(bytes, pos) else {
                break;
            };
            digits = digits * 100_000_000 + eight;
            significant += 8;
            pos += 8;
        }
        pos = append_digits(bytes, pos, &mut digits, &mut significant);
        if pos == first {
            return None;
        }
        exponent = -i32::try_from(pos - first).ok()?;
    }
    if matches!(bytes.get(pos), Some(b'e' | b'E')) {
        integer = false;
        pos += 1;
        let sign = match bytes.get(pos) {
            Some(b'-') => {
                pos += 1;
                -1
            }
            Some(b'+') => {
                pos += 1;
                1
            }
            _ => 1,
        };
        let first = pos;
        let mut written: i32 = 0;
        while let Some(&digit @ b'0'..=b'9') = bytes.get(pos) {
            if pos - first >= 4 {
                return None;
            }
            written = written * 10 + i32::from(digit - b'0');
            pos += 1;
        }
        if pos == first {
            return None;
        }
        exponent += sign * written;
    }
    if integer || significant > 19 || !(-22..=22).contains(&exponent) {
        return None;
    }
    let power = EXACT_POWERS_OF_TEN[exponent.unsigned_abs() as usize];
    #[allow(clippy::cast_precision_loss)] // the rounding is what is reasoned about
    let approximate = if exponent < 0 {
        digits as f64 / power
    } else {
        digits as f64 * power
    };
    let magnitude = if digits <= 1 << 53 {
        approximate as f32
    } else {
        let bits = approximate.to_bits();
        let (below, above) = (f64::from_bits(bits - 8), f64::from_bits(bits + 8));
        if below as f32 != above as f32 {
            return None;
        }
        approximate as f32
    };
    Some((if negative { -magnitude } else { magnitude }, pos))
}

/// Appends the ASCII digits from `pos` to `digits`, counting them in
/// `significant`, and returns where they end. Past 19 digits `digits` wraps:
/// the caller then gives up on it.
fn append_digits(bytes: &[u8], mut pos: usize, digits: &mut u64, significant: &mut u32) -> usize {
    while let Some(&digit @ b'0'..=b'9') = bytes.get(pos) {
        *digits = digits
            .wrapping_mul(10)
            .wrapping_add(u64::from(digit - b'0'));
        *significant += 1;
        pos += 1;
    }
    pos
}

/// The eight ASCII digits at `pos` as a number, or `None` when the next eight
/// bytes are not all digits: one load and a few multiplies instead of eight
/// rounds of the digit loop (the reference's numbers have 16 or 17 digits).
fn eight_digits(bytes: &[u8], pos: usize) -> Option<u64> {
    let chunk: [u8; 8] = bytes.get(pos..pos + 8)?.try_into().ok()?;
    // The first digit in the lowest byte.
    let word = u64::from_le_bytes(chunk);
    const LANES: u64 = 0x0101_0101_0101_0101;
    // A digit is 0x30..=0x39: its high nibble is 3, and still 3 after adding 6.
    let high = word & (0xf0 * LANES);
    let past_nine = (word.wrapping_add(0x06 * LANES) & (0xf0 * LANES)) >> 4;
    if high | past_nine != 0x33 * LANES {
        return None;
    }
    // Pairs, then fours, then all eight, each step in the lanes at once.
    let values = word - 0x30 * LANES;
    let pairs = (values * 10 + (values >> 8)) & 0x00ff_00ff_00ff_00ff;
    let fours = (pairs * 100 + (pairs >> 16)) & 0x0000_ffff_0000_ffff;
    Some((fours * 10_000 + (fours >> 32)) & 0xffff_ffff)
}

fn skip_ws(bytes: &[u8], mut pos: usize) -> usize {
    while matches!(bytes.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        pos += 1;
    }
    pos
}

/// The end of a JSON number token (or of Python's `NaN`, `Infinity`, `-Infinity`)
/// starting at `pos`.
fn json_number_end(bytes: &[u8], mut pos: usize) -> Option<usize> {
    for literal in [&b"NaN"[..], b"Infinity", b"-Infinity"] {
        if bytes
            .get(pos..)
            .is_some_and(|rest| rest.starts_with(literal))
        {
            return Some(pos + literal.len());
        }
    }
    let digits = |bytes: &[u8], mut pos: usize| {
        let start = pos;
        while bytes.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        (pos > start).then_some(pos)
    };
    if bytes.get(pos) == Some(&b'-') {
        pos += 1;
    }
    match bytes.get(pos) {
        Some(b'0') => pos += 1,
        Some(b'1'..=b'9') => pos = digits(bytes, pos)?,
        _ => return None,
    }
    if bytes.get(pos) == Some(&b'.') {
        pos = digits(bytes, pos + 1)?;
    }
    if matches!(bytes.get(pos), Some(b'e' | b'E')) {
        pos += 1;
        if matches!(bytes.get(pos), Some(b'+' | b'-')) {
            pos += 1;
        }
        pos = digits(bytes, pos)?;
    }
    Some(pos)
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Strategy;

    use super::*;

    #[test]
    fn reference_written_vectors_round_trip() {
        // Python repr of f32 values widened to f64.
        let text = "[-0.040891144424676895, 0.06318512558937073, 0.0, 1e-05, -1.5E+2]";
        let vector = decode_embedding(text).unwrap();
        assert_eq!(
            vector,
            vec![
                -0.040891144424676895f64 as f32,
                0.06318512558937073f64 as f32,
                0.0,
                1e-05f64 as f32,
                -150.0
            ]
        );
    }

    #[test]
    fn python_literals_and_numpy_conversions() {
        let vector = decode_embedding("[NaN, Infinity, -Infinity, \"0.5\", true, null]").unwrap();
        assert!(vector[0].is_nan());
        assert_eq!(vector[1], f32::INFINITY);
        assert_eq!(vector[2], f32::NEG_INFINITY);
        assert_eq!(&vector[3..5], &[0.5, 1.0]);
        assert!(vector[5].is_nan());
        assert_eq!(decode_embedding(" [ ] ").unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn double_rounding_goes_through_f64() {
        // A decimal that rounds differently straight to f32 than through f64.
        let text = "1.00000005960464477539062499";
        let via_f64 = text.parse::<f64>().unwrap() as f32;
        assert_eq!(
            decode_embedding(&format!("[{text}]")).unwrap(),
            vec![via_f64]
        );
    }

    #[test]
    fn integers_are_python_ints_first() {
        assert_eq!(decode_embedding("[-0]").unwrap()[0].to_bits(), 0);
        assert_eq!(
            decode_embedding("[-0.0]").unwrap()[0].to_bits(),
            0x8000_0000
        );
        let huge = format!("[1{}]", "0".repeat(400));
        assert!(decode_embedding(&huge).is_err());
        assert_eq!(decode_embedding("[1e400]").unwrap()[0], f32::INFINITY);
        let past_f32 = format!("[1{}]", "0".repeat(40));
        assert_eq!(decode_embedding(&past_f32).unwrap()[0], f32::INFINITY);
    }

    /// What the general path (`str::parse`, then to `f32`) makes of `token`.
    fn parsed(token: &str) -> f32 {
        token.parse::<f64>().unwrap() as f32
    }

    fn assert_short_path_exact(token: &str) {
        let decoded = decode_embedding(&format!("[{token}]")).unwrap()[0];
        assert_eq!(decoded.to_bits(), parsed(token).to_bits(), "{token}");
    }

    #[test]
    fn the_short_path_rounds_as_the_general_one() {
        for token in [
            "0.08798161894083023",
            "-0.04778677225112915",
            "0.0015663726953789592",
            "-0.0",
            "0.0",
            "1.5e-05",
            "9007199254740993.0",
            "3.4028235677973366e38",
            "3.4028235677973362e38",
            "1.00000005960464477539062499",
            "1.0000000596046448",
            "1.000000059604644775390625",
            "9999999999999999999.5",
            "123456789012345678.9e-30",
        ] {
            assert_short_path_exact(token);
        }
        // Which path each takes: the reference's usual value is short; a value
        // within ulps of an f32 midpoint, an integer, 20 digits and an exponent
        // past 22 are left to the general path.
        assert!(short_decimal(b"0.08798161894083023", 0).is_some());
        assert!(short_decimal(b"-1.5e-05", 0).is_some());
        for general in [
            &b"1.0000000596046448"[..],
            b"15",
            b"0.12345678901234567890",
            b"1.5e-30",
            b"1.",
        ] {
            assert!(short_decimal(general, 0).is_none(), "{general:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        /// The eight-digit step against the digit loop, on digits and on
        /// bytes that are not (one of them anywhere in the eight).
        #[test]
        fn eight_digits_reads_as_the_digit_loop(text in "[0-9]{8}", at in 0usize..8, other in 0u8..=255) {
            let mut bytes = text.into_bytes();
            proptest::prop_assert_eq!(
                eight_digits(&bytes, 0),
                Some(bytes.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
            );
            bytes[at] = other;
            proptest::prop_assert_eq!(eight_digits(&bytes, 0).is_some(), other.is_ascii_digit());
        }

        /// Python's `repr` of an `f32` widened to `f64` (what the reference
        /// writes), in both of Rust's shortest forms.
        #[test]
        fn reference_written_values_take_the_short_path_exactly(bits in proptest::prelude::any::<u32>()) {
            let value = f32::from_bits(bits);
            proptest::prop_assume!(value.is_finite());
            let wide = f64::from(value);
            assert_short_path_exact(&format!("{wide:?}"));
            assert_short_path_exact(&format!("{wide:e}"));
        }

        /// Only UTF-8 decodes from the bytes (so the UTF-8 check can wait for
        /// a failure: `decode_embedding_bytes`). Pieces of arrays with any byte
        /// anywhere, non-ASCII inside strings among them. (On UTF-8 the `str`
        /// reads through the bytes, and `tests/it/fuzz.rs` holds that to the
        /// reference.)
        #[test]
        fn only_utf8_decodes_from_the_bytes(
            elements in proptest::collection::vec(
                proptest::sample::select(vec![
                    "0.5", "-1e-3", "NaN", "-Infinity", "true", "null", "1", "-0",
                    "0.040891144424676895", "\"1.5\"", "\" 2\"", "\"\u{661}\"",
                    "\"\u{2003}3\"", "\"\\u0661\"", "\"\u{e9}\"", "\"\\ud800\"",
                ]),
                0..6,
            ),
            inserted in proptest::collection::vec(
                (
                    proptest::prelude::any::<proptest::sample::Index>(),
                    proptest::prop_oneof![
                        proptest::sample::select(vec![
                            vec![0xc3u8], vec![0xc3, 0xa9], vec![0xe2, 0x82], vec![0xff],
                            vec![0x80], vec![0xd9], vec![0xa1], vec![b' '],
                        ]),
                        proptest::prelude::any::<u8>().prop_map(|byte| vec![byte]),
                    ],
                ),
                0..3,
            ),
        ) {
            let mut bytes = format!("[{}]", elements.join(", ")).into_bytes();
            for (at, piece) in inserted {
                let at = at.index(bytes.len() + 1);
                bytes.splice(at..at, piece);
            }
            let mut out = Vec::new();
            if decode_embedding_bytes(&bytes, &mut out).is_ok() {
                proptest::prop_assert!(std::str::from_utf8(&bytes).is_ok(), "{:?}", bytes);
            }
        }

        /// Decimals on, beside and between two `f32`s' midpoint, written to
        /// 15-20 significant digits: where rounding twice can go wrong.
        #[test]
        fn decimals_near_f32_midpoints_round_as_the_general_path(
            bits in 0x0080_0000u32..0x7f00_0000,
            digits in 15usize..21,
            nudge in -3i64..4,
        ) {
            let low = f64::from(f32::from_bits(bits));
            let high = f64::from(f32::from_bits(bits + 1));
            // Exact in f64: an f32's midpoint needs 25 bits.
            let midpoint = f64::from_bits(((low + high) / 2.0).to_bits().wrapping_add_signed(nudge));
            let token = format!("{midpoint:.*e}", digits - 1);
            assert_short_path_exact(&token);
            assert_short_path_exact(&format!("-{token}"));
        }
    }

    #[test]
    fn rejects_what_is_not_an_array_of_numbers() {
        for bad in [
            "", "5", "{}", "[1,]", "[01]", "[.5]", "[\"x\"]", "[[1]]", "[1] x",
        ] {
            assert!(decode_embedding(bad).is_err(), "{bad:?}");
        }
    }
}
