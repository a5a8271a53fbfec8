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
    out.clear();
    let bytes = text.as_bytes();
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
        let (value, end) = element(text, pos)?;
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
fn element(text: &str, pos: usize) -> Result<(f32, usize), EmbeddingError> {
    let bytes = text.as_bytes();
    if let Some(end) = json_number_end(bytes, pos) {
        // The token is ASCII by construction.
        let token = &text[pos..end];
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
        if text[pos..].starts_with(literal) {
            return Ok((value, pos + literal.len()));
        }
    }
    if bytes.get(pos) == Some(&b'"') {
        let mut stream = serde_json::Deserializer::from_str(&text[pos..]).into_iter::<String>();
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

    #[test]
    fn rejects_what_is_not_an_array_of_numbers() {
        for bad in [
            "", "5", "{}", "[1,]", "[01]", "[.5]", "[\"x\"]", "[[1]]", "[1] x",
        ] {
            assert!(decode_embedding(bad).is_err(), "{bad:?}");
        }
    }
}
