//! The request's datetime fields against pydantic's datetime validation
//! (`TypeAdapter(datetime).validate_python`, what `QueryRequest`'s `as_of` and
//! `TimeWindow`'s ends run): the same verdict, the same errors (type, message,
//! context, input) and the same instant and offset. The value goes through
//! `QueryRequest::from_json` in one of the three places a datetime lives, with
//! the clock at the last representable instant so that only the parse decides
//! (a value past it is the one case where `as_of` must refuse a parsed instant).

use particles_model::{QueryRequest, Timestamp};
use particles_testkit::fuzz::{
    self,
    grammar::{concat, mutated, pick},
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One datetime value placed in one field.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    /// `as_of`, `start` or `end` (a window's).
    field: String,
    value: Value,
}

const EDITS: &[&str] = &[
    "0", "1", "9", "-", ":", ".", ",", "+", "Z", "z", "T", "t", " ", "_", "e", "\0", "é",
];

fn rfc3339() -> BoxedStrategy<String> {
    let two = || {
        prop_oneof![
            3 => pick(&["00", "01", "09", "10", "12", "13", "23", "24", "29", "30", "31", "59", "60", "99"]),
            2 => "[0-9]{2}",
            1 => "[0-9]{1,3}",
        ]
        .boxed()
    };
    let year = || {
        prop_oneof![
            3 => pick(&["0000", "0001", "1969", "1970", "2020", "2024", "9999"]),
            2 => "[0-9]{4}",
            1 => "[0-9]{3,6}",
        ]
        .boxed()
    };
    let date = move || {
        concat(vec![
            year(),
            pick(&["-", "-", "-", "/", ""]),
            two(),
            pick(&["-", "-", "-", ""]),
            two(),
        ])
    };
    let fraction = || {
        prop_oneof![
            3 => Just(String::new()),
            2 => concat(vec![pick(&[".", ","]), "[0-9]{1,6}".boxed()]),
            1 => concat(vec![pick(&[".", ","]), "[0-9]{7,14}".boxed()]),
            1 => pick(&[".", ","]),
        ]
        .boxed()
    };
    let time = move || {
        prop_oneof![
            1 => two(),
            3 => concat(vec![two(), pick(&[":", ":", ""]), two()]),
            4 => concat(vec![two(), pick(&[":", ":", ""]), two(), pick(&[":", ":", ""]), two(), fraction()]),
        ]
        .boxed()
    };
    let offset = move || {
        prop_oneof![
            3 => Just(String::new()),
            2 => pick(&["Z", "z", "+00:00", "-00:00", "+24:00", "-23:59", "+05:30", "-0800", "+01", "+1", "+", "UTC", " Z"]),
            2 => concat(vec![pick(&["+", "-"]), two(), pick(&[":", ""]), two()]),
            1 => concat(vec![pick(&["+", "-"]), two(), Just(":".to_owned()).boxed(), two(), Just(":".to_owned()).boxed(), two()]),
        ]
        .boxed()
    };
    let unix = || {
        prop_oneof![
            pick(&[
                "0",
                "-0",
                "1",
                "-1",
                "1.5",
                "20000000000",
                "20000000001",
                "-20000000001",
                "253402300799",
                "253402300800",
                "1e9",
                "1_000",
                "+5",
                " 5",
                "5 ",
                ".5",
                "5.",
                "00012",
                "0x10",
                "nan",
                "inf",
                "-",
                "."
            ]),
            "-?[0-9]{1,16}",
            "-?[0-9]{1,11}\\.[0-9]{1,9}",
        ]
        .boxed()
    };
    let well_formed = move || {
        prop_oneof![
            2 => date(),
            6 => concat(vec![date(), pick(&["T", "T", "t", " ", "_", "x", ""]), time(), offset()]),
            2 => unix(),
        ]
        .boxed()
    };
    prop_oneof![
        6 => well_formed(),
        3 => mutated(well_formed(), EDITS),
        2 => super::timestamp::texts(),
        1 => "\\PC{0,12}",
    ]
    .boxed()
}

fn numbers() -> BoxedStrategy<Value> {
    prop_oneof![
        json_select(&[
            json!(0),
            json!(-1),
            json!(1_600_000_000),
            json!(20_000_000_000i64),
            json!(20_000_000_001i64),
            json!(-20_000_000_001i64),
            json!(253_402_300_799i64),
            json!(253_402_300_800i64),
            json!(-62_135_596_800i64),
            json!(-62_135_596_801i64),
            json!(253_402_300_799_999i64),
            json!(253_402_300_800_000i64),
            json!(i64::MAX),
            json!(i64::MIN),
            json!(u64::MAX),
            json!(0.0),
            json!(-0.0),
            json!(0.5),
            json!(-0.5),
            json!(1e20),
            json!(-1e20),
            json!(1.000_000_5),
            json!(1e-7),
            json!(1_600_000_000.999_999_9),
            json!(2e10),
            json!(2.000_000_000_1e10),
            json!(1.7976931348623157e308),
        ]),
        any::<i64>().prop_map(|n| json!(n)),
        (-3e11f64..3e11).prop_map(|x| json!(x)),
        (-1e14f64..1e14).prop_map(|x| json!(x)),
        (-30_000_000_000i64..30_000_000_000).prop_map(|n| json!(n)),
        any::<f64>().prop_filter_map("finite", |x| x.is_finite().then(|| json!(x))),
    ]
    .boxed()
}

fn json_select(values: &[Value]) -> BoxedStrategy<Value> {
    proptest::sample::select(values.to_vec()).boxed()
}

pub(super) fn values() -> BoxedStrategy<Value> {
    prop_oneof![
        8 => rfc3339().prop_map(Value::String),
        3 => numbers(),
        1 => json_select(&[json!(true), json!(false), json!([]), json!(["2020-01-01"]), json!({}), json!({"year": 2020})]),
    ]
    .boxed()
}

fn cases() -> impl Strategy<Value = Case> {
    (pick(&["as_of", "start", "end"]), values()).prop_map(|(field, value)| Case { field, value })
}

/// The last instant pydantic can represent: nothing parsed is after it, except
/// an instant whose offset puts it past the end of year 9999 in UTC.
fn end_of_time() -> Timestamp {
    Timestamp::parse("9999-12-31T23:59:59.999999+00:00").expect("a valid instant")
}

fn check(case: &Case, verdict: &Value) -> Result<(), String> {
    let (body, prefix): (Value, Vec<Value>) = match case.field.as_str() {
        "as_of" => (
            json!({"question": "q", "as_of": case.value}),
            vec![json!("as_of")],
        ),
        end => (
            json!({"question": "q", "window": {end: case.value}}),
            vec![json!("window"), json!(end)],
        ),
    };
    let ours = QueryRequest::from_json(&body, end_of_time());
    let mismatch = |ours: String| Err(format!("{case:?}: reference {verdict}, ours {ours}"));
    match (verdict["ok"].as_bool(), ours) {
        (Some(true), Ok(request)) => {
            let value = match case.field.as_str() {
                "as_of" => request.as_of,
                "start" => request.window.and_then(|w| w.start),
                _ => request.window.and_then(|w| w.end),
            };
            let iso = value.map(|t| t.python_isoformat());
            if iso.as_deref() == verdict["iso"].as_str() && verdict["future"] == json!(false) {
                Ok(())
            } else {
                mismatch(format!("{iso:?}"))
            }
        }
        (Some(true), Err(errors)) => {
            // Only `as_of` refuses a parsed value, and only past the clock.
            let future_refusal = case.field == "as_of"
                && verdict["future"] == json!(true)
                && errors.0.len() == 1
                && errors.0[0].kind == "value_error"
                && errors.0[0].loc.is_empty();
            if future_refusal {
                Ok(())
            } else {
                mismatch(serde_json::to_string(&errors).unwrap_or_default())
            }
        }
        (Some(false), Err(errors)) => {
            let mut ours = serde_json::to_value(&errors).map_err(|e| e.to_string())?;
            for error in ours.as_array_mut().into_iter().flatten() {
                let loc = error["loc"].as_array().cloned().unwrap_or_default();
                if !loc.starts_with(&prefix) {
                    return mismatch(format!("an error at {loc:?}: {error}"));
                }
                error["loc"] = Value::Array(loc[prefix.len()..].to_vec());
            }
            if ours == verdict["errors"] {
                Ok(())
            } else {
                mismatch(ours.to_string())
            }
        }
        (_, ours) => mismatch(format!("{ours:?}")),
    }
}

#[test]
fn differential() {
    fuzz::run(fuzz::Target {
        decoder: "datetime",
        strategy: cases(),
        corpus: [
            json!("2020-01-01"),
            json!("2020-01-01T10:00:00.123456789+02:00"),
            json!(1_600_000_000),
            json!("1600000000.5"),
            json!(20_000_000_001i64),
            json!("now"),
            json!(true),
        ]
        .into_iter()
        .flat_map(|value| {
            ["as_of", "start", "end"].map(|field| Case {
                field: field.to_owned(),
                value: value.clone(),
            })
        })
        .collect(),
        regressions: include_str!("../../fuzz-regressions/datetime.jsonl"),
        check,
    });
}
