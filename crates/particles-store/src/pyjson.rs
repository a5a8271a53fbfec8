//! JSON text as Python's `json.dumps` writes it with default settings: `", "` and
//! `": "` separators, non-ASCII escaped (`ensure_ascii`), floats as `repr` writes
//! them. The reference writes every JSON column this way; writing the same bytes
//! keeps a store that both engines write consistent down to its text.

use serde_json::Value;

/// `json.dumps(value)`.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// `json.dumps` of a list of f32 widened to f64: the stored embedding format.
pub fn dumps_vector(vector: &[f32]) -> String {
    let mut out = String::with_capacity(vector.len() * 22 + 2);
    out.push('[');
    for (i, value) in vector.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_float(&mut out, f64::from(*value));
    }
    out.push(']');
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => {
            if let Some(int) = number.as_i64() {
                out.push_str(&int.to_string());
            } else if let Some(int) = number.as_u64() {
                out.push_str(&int.to_string());
            } else {
                push_float(out, number.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(text) => push_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                push_string(out, key);
                out.push_str(": ");
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

fn push_string(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            ' '..='~' => out.push(ch),
            _ => {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)` (`particles_pytext::float_repr`: the shortest digits
/// that round-trip, in fixed notation when the decimal exponent is in `-4..16`,
/// else scientific with a signed, two-digit-minimum exponent), and `json.dumps`'s
/// `NaN`, `Infinity` and `-Infinity`.
pub fn push_float(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
        return;
    }
    if value.is_infinite() {
        out.push_str(if value > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    out.push_str(&particles_pytext::float_repr(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(value: f64) -> String {
        let mut out = String::new();
        push_float(&mut out, value);
        out
    }

    #[test]
    fn floats_like_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (123.456, "123.456"),
            (-0.040891144424676895, "-0.040891144424676895"),
            (1.5e300, "1.5e+300"),
            (f64::from(0.1f32), "0.10000000149011612"),
            (5e-324, "5e-324"),
        ];
        for (value, expected) in cases {
            assert_eq!(repr(value), expected);
        }
    }

    #[test]
    fn objects_like_json_dumps() {
        let value = serde_json::json!({"type": "SOURCE", "id": "é", "n": [1, 2.5, null, true]});
        assert_eq!(
            dumps(&value),
            r#"{"type": "SOURCE", "id": "\u00e9", "n": [1, 2.5, null, true]}"#
        );
    }
}
