//! `decode_embedding` against the reference's `decode_embedding`
//! (`np.array(json.loads(text), dtype=np.float32)`), through
//! `particles_testkit::fuzz`: the same verdict and bit-equal float32 values
//! (NaN payloads and the sign of zero included). A value numpy returns with
//! another rank than one (a bare number, nested lists) is not a vector: the
//! oracle reports it refused.
//!
//! Texts are grammar-aware: what the reference writes (`json.dumps` of float32
//! values widened to float64), JSON numbers at every edge (exponents, huge and
//! tiny magnitudes, subnormals, float32 rounding midpoints, integers past 2^53
//! and 2^1024, -0), Python's NaN and Infinity spellings, strings numpy converts,
//! literals, whitespace, nesting, wrong element types, near-miss punctuation and
//! very long arrays. Regressions: `tests/fuzz-regressions/embedding.jsonl`.

use particles_store::{decode_embedding, python_json_vector};
use particles_testkit::fuzz::{
    self,
    grammar::{concat, mutated, pick},
};
use proptest::{collection::vec, prelude::*};
use serde_json::Value;

/// 2^1024 - 2^970: the least integer Python's `float()` refuses (it rounds to
/// 2^1024), and its neighbours.
const OVERFLOW_EDGE: &str = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";
const F64_MAX: &str = "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368";

/// Decimal text of `x` with `digits` significant digits.
fn scientific(x: f64, digits: usize) -> String {
    format!("{x:.digits$e}")
}

fn number() -> BoxedStrategy<String> {
    let edge_ints = || {
        prop_oneof![
            Just(OVERFLOW_EDGE.to_owned()),
            Just(F64_MAX.to_owned()),
            (0u8..10).prop_map(|d| format!("{}{d}", &OVERFLOW_EDGE[..OVERFLOW_EDGE.len() - 1])),
            (0u8..10).prop_map(|d| format!("{}{d}", &F64_MAX[..F64_MAX.len() - 1])),
            "[1-9][0-9]{300,320}",
            Just("1152921573326323713".to_owned()),
            Just("-1152921573326323713".to_owned()),
            (any::<u64>(), 0u32..12).prop_map(|(n, shift)| (u128::from(n) << shift).to_string()),
        ]
    };
    prop_oneof![
        // What the reference writes: float32 values widened, in Python's repr.
        4 => any::<u32>().prop_map(|bits| {
            let text = python_json_vector(&[f32::from_bits(bits)]);
            text[1..text.len() - 1].to_owned()
        }),
        // A float32 rounding midpoint, exactly or nearly, written long.
        3 => (any::<u32>(), 17usize..40, -2i64..=2).prop_map(|(bits, digits, nudge)| {
            let low = f32::from_bits(bits & 0x7F7F_FFFF);
            let high = f32::from_bits(low.to_bits() + 1);
            let mid = (f64::from(low) + f64::from(high)) / 2.0;
            let mid = f64::from_bits((mid.to_bits() as i64 + nudge) as u64);
            let sign = if bits & 0x8000_0000 != 0 { "-" } else { "" };
            format!("{sign}{}", scientific(mid, digits))
        }),
        // The JSON number grammar.
        3 => "-?(0|[1-9][0-9]{0,25})(\\.[0-9]{1,30})?([eE][+-]?[0-9]{1,4})?",
        2 => pick(&[
            "0", "-0", "-0.0", "0e0", "-0e-0", "0.0e+0", "1E5", "1e05", "1e400", "-1e400",
            "1e-400", "4.9e-324", "5e-324", "2.4703282292062328e-324", "2.4703282292062327e-324",
            "1.401298464324817e-45", "1.4e-45", "7.006492321624085e-46", "7.006492321624086e-46",
            "1.1754942e-38", "1.1754943508222875e-38", "3.4028235e38", "3.4028235677973366e38",
            "3.4028235677973367e38", "3.402823669209385e38", "3.4028236e38", "1e39", "-1e39",
            "16777217", "9007199254740993", "1.0000000596046448", "1.00000005960464477539062501",
            "NaN", "Infinity", "-Infinity", "1" , "-1",
        ]),
        1 => edge_ints(),
        // Near misses of the grammar.
        1 => pick(&[
            "01", "-", "+1", ".5", "5.", "1e", "1e+", "0x10", "1_000", "--1", "1.2.3", "-NaN",
            "nan", "+Infinity", "infinity", "Inf", "inf", "- 1", "1 e5", "0.e1", "1.e5", "00",
            "-01", "1ee5", "1e5e5", "١", "１",
        ]),
    ]
    .boxed()
}

/// What may sit inside a JSON string that numpy then converts with `float()`.
fn string_content() -> BoxedStrategy<String> {
    let core = || {
        prop_oneof![
            number(),
            pick(&[
                "nan",
                "-nan",
                "+nan",
                "NAN",
                "inf",
                "-inf",
                "+inf",
                "infinity",
                "-Infinity",
                "iNfInItY",
                "1_000",
                "1__0",
                "_1",
                "1_",
                "1_0.5",
                "1.5_0",
                "1e1_0",
                "0x10",
                "",
                "abc",
                "1,5",
                "\u{0661}\u{0662}",
                "\u{FF11}\u{FF12}",
                "\u{0967}.\u{0965}",
                "1\u{0301}",
                "true",
                "null",
                "١e٢",
            ]),
        ]
    };
    let space = || {
        pick(&[
            "", "", "", " ", "\t", "\n", "\r", "\u{000B}", "\u{000C}", "\u{001C}", "\u{001F}",
            "\u{0085}", "\u{00A0}", "\u{2009}", "\u{3000}", "\u{200B}", "\u{FEFF}",
        ])
    };
    concat(vec![space(), core().boxed(), space()])
}

/// A JSON string literal: raw, or with its characters written as escapes.
fn string_literal() -> BoxedStrategy<String> {
    (string_content(), any::<bool>())
        .prop_map(|(content, escaped)| {
            if escaped {
                let mut out = String::from("\"");
                for unit in content.encode_utf16() {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
                out.push('"');
                out
            } else {
                serde_json::to_string(&content).expect("a string serialises")
            }
        })
        .boxed()
}

fn element() -> BoxedStrategy<String> {
    prop_oneof![
        14 => number(),
        2 => pick(&["true", "false", "null", "True", "None", "nul", "NULL", "[]", "{}", "[1]", "[1, 2]", "[[]]", "{\"a\": 1}", "\"\"", "'1'", "x"]),
        3 => string_literal(),
    ]
    .boxed()
}

fn whitespace() -> BoxedStrategy<String> {
    pick(&[
        "", "", "", "", "", " ", "  ", "\n", "\t", "\r\n", " \n\t ", "\u{00A0}", "\u{000B}",
        "\u{000C}", "\u{FEFF}",
    ])
}

fn array_of(elements: impl Strategy<Value = Vec<String>> + 'static) -> BoxedStrategy<String> {
    (elements, whitespace(), whitespace(), whitespace())
        .prop_map(|(items, before, around, after)| {
            let separator = format!("{around},{around}");
            format!(
                "{before}[{around}{}{around}]{after}",
                items.join(&separator)
            )
        })
        .boxed()
}

fn texts() -> BoxedStrategy<String> {
    let array = || {
        prop_oneof![
            8 => array_of(vec(element(), 0..8)),
            2 => array_of(vec(number(), 0..8)),
            1 => array_of(vec(number(), 380..390)),
            1 => (number(), 1000usize..3000).prop_map(|(n, count)| format!("[{}]", vec![n; count].join(","))),
            1 => vec(any::<u32>(), 384).prop_map(|bits| {
                let vector: Vec<f32> = bits.into_iter().map(f32::from_bits).collect();
                python_json_vector(&vector)
            }),
        ]
        .boxed()
    };
    prop_oneof![
        10 => array(),
        4 => mutated(array(), &[",", ",,", "[", "]", " ", "\u{FEFF}", "-", "e", ".", "\"", "x", "0", "\\", "}", "{"]),
        1 => element(),
        1 => concat(vec![array(), pick(&["", " x", "]", ",", "[]", "\0"])]),
        1 => "\\PC{0,10}",
    ]
    .boxed()
}

fn check(text: &String, verdict: &Value) -> Result<(), String> {
    let ours = decode_embedding(text);
    match (verdict["ok"].as_bool(), &ours) {
        (Some(true), Ok(vector)) => {
            let theirs: Vec<u64> = verdict["bits"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .collect();
            let mine: Vec<u64> = vector.iter().map(|x| u64::from(x.to_bits())).collect();
            if theirs == mine {
                return Ok(());
            }
            let at = theirs
                .iter()
                .zip(&mine)
                .position(|(a, b)| a != b)
                .unwrap_or(theirs.len().min(mine.len()));
            Err(format!(
                "{text:?}: values differ at {at} of {} (reference {:?}, ours {:?}; lengths {} and {})",
                theirs.len(),
                theirs.get(at).map(|&b| f32::from_bits(b as u32)),
                mine.get(at).map(|&b| f32::from_bits(b as u32)),
                theirs.len(),
                mine.len()
            ))
        }
        (Some(false), Err(_)) => Ok(()),
        _ => Err(format!(
            "{text:?}: reference {}, ours {}",
            if verdict["ok"] == true {
                "accepts".to_owned()
            } else {
                format!("refuses ({})", verdict["error"])
            },
            match &ours {
                Ok(vector) => format!("accepts ({} values)", vector.len()),
                Err(e) => format!("refuses ({})", e.0),
            }
        )),
    }
}

#[test]
fn differential() {
    fuzz::run(fuzz::Target {
        decoder: "embedding",
        strategy: texts(),
        corpus: [
            "[-0.040891144424676895, 0.06318512558937073, 0.0, 1e-05, -1.5E+2]",
            "[NaN, Infinity, -Infinity, \"0.5\", true, null]",
            " [ ] ",
            "[1.00000005960464477539062499]",
            "[\"-nan\", \" 1.5 \", \"1_0\"]",
            "[-0]",
            "[[1]]",
            "5",
        ]
        .map(str::to_owned)
        .to_vec(),
        regressions: include_str!("../fuzz-regressions/embedding.jsonl"),
        check,
    });
}
