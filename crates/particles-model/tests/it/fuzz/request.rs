//! `QueryRequest::from_json` against the reference's `QueryRequest.model_validate`
//! (what FastAPI runs on a request body): for a refused body every error's `type`,
//! `loc`, `msg`, `input` and `ctx` as the 422 detail carries them; for an accepted
//! one the `model_dump(mode="json")` against ours serialised, and each claim bound
//! as `parse_bound` reads it. Both engines judge a future `as_of` against the same
//! frozen `now`.
//!
//! Bodies are generated field by field: valid, boundary and wrong-typed values
//! (numeric and boolean spellings in strings, floats for ints, nulls, lists,
//! objects), dates in many forms, unicode and very long questions, unknown keys,
//! and any combination of the modes, so the cross-field rules meet each other.

use particles_model::{
    AssertionModality, BoundValue, Decimal, QueryRequest, Timestamp, UncertaintyNature,
};
use particles_testkit::fuzz::{
    self,
    grammar::{mutated, pick},
};
use proptest::{collection::vec, prelude::*, sample::select};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// A request body and the instant the reference's clock is frozen at.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    body: Value,
    now: String,
}

const NOWS: &[&str] = &[
    "2026-06-01T00:00:00+00:00",
    "2024-02-29T12:30:00.500000+00:00",
    "2000-01-01T00:00:00+00:00",
];

fn one_of_values(values: Vec<Value>) -> BoxedStrategy<Value> {
    select(values).boxed()
}

fn text(strategy: impl Strategy<Value = String> + 'static) -> BoxedStrategy<Value> {
    strategy.prop_map(Value::String).boxed()
}

/// Values of the wrong shape for most fields.
fn odd() -> BoxedStrategy<Value> {
    one_of_values(vec![
        Value::Null,
        json!([]),
        json!(["x"]),
        json!({}),
        json!({"a": 1}),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        json!(1.5),
        json!(""),
        json!("x"),
    ])
}

fn float_like() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => one_of_values(vec![
            json!(0), json!(1), json!(0.0), json!(1.0), json!(-0.0), json!(0.5), json!(2),
            json!(-1), json!(1.000_000_000_000_000_2), json!(0.999_999_999_999_999_9),
            json!(-1e-300), json!(1e-320), json!(1e300), json!(u64::MAX), json!(i64::MIN),
        ]),
        2 => (-0.5f64..1.5).prop_map(|x| json!(x)),
        3 => text(pick(&[
            "0.5", " 0.5 ", "0.5\n", "1", "1.0", "0", "-0", "+0.5", ".5", "5.", "1e-1", "1E0",
            "1_0", "0_.5", "0._5", "1__0", "nan", "NaN", "-nan", "inf", "-inf", "+inf",
            "infinity", "Infinity", "INF", "", " ", "abc", "0x1", "1/2", "\u{FF11}", "\u{0661}",
            "0.5\u{00A0}", "\u{2009}0.5", "1e", "e1", "--1", "1.5.5", "0,5", "true",
        ])),
        1 => any::<f64>().prop_filter_map("finite", |x| x.is_finite().then(|| json!(x))),
        1 => odd(),
    ]
    .boxed()
}

fn int_like() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => one_of_values(vec![
            json!(0), json!(1), json!(5), json!(40), json!(199), json!(200), json!(201), json!(-1),
            json!(i64::MAX), json!(i64::MIN), json!(u64::MAX), json!(9_223_372_036_854_775_808u64),
            json!(5.0), json!(5.5), json!(-0.0), json!(1e3), json!(1e19), json!(1e300),
            json!(9.223_372_036_854_776e18), json!(200.000_000_000_000_03),
        ]),
        2 => (-5i64..300).prop_map(|n| json!(n)),
        3 => text(pick(&[
            "5", " 5 ", "5\n", "+5", "-5", "05", "5.0", "5.00", "5.5", "5.", ".5", "1_0", "1__0",
            "_1", "1_", "5e0", "1e2", "0x10", "", " ", "five", "\u{0665}", "\u{FF15}", "200",
            "201", "0", "9223372036854775807", "9223372036854775808", "99999999999999999999",
            "-9223372036854775809", "5.0000000000000001", "true", "nan", "inf",
        ])),
        1 => any::<i64>().prop_map(|n| json!(n)),
        1 => odd(),
    ]
    .boxed()
}

fn bool_like() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => one_of_values(vec![json!(false), json!(true)]),
        3 => one_of_values(vec![
            json!(0), json!(1), json!(0.0), json!(1.0), json!(2), json!(-1), json!(0.5),
            json!(-0.0), json!(1e-300), Value::Null, json!([]), json!({}),
        ]),
        3 => text(pick(&[
            "true", "false", "True", "FALSE", "yes", "no", "YES", "on", "off", "On", "t", "f",
            "T", "y", "n", "1", "0", " true", "true ", "truee", "", "2", "1.0", "0.0", "nope",
            "\u{0131}", "tRuE", "Y", "N", "oN",
        ])),
    ]
    .boxed()
}

fn enum_like(values: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop_oneof![
        4 => text(pick(values)),
        2 => text(pick(values).prop_map(|v| v.to_lowercase())),
        1 => text(pick(values).prop_map(|v| format!(" {v}"))),
        1 => text(pick(&["", "x", "GENERAL ", "general", "Subject", "SUBJECT", "EPISTEMIC", "FALSIFIABLE", "EXPERT"])),
        1 => odd(),
    ]
    .boxed()
}

fn names(all: Vec<&'static str>) -> &'static [&'static str] {
    Box::leak(all.into_boxed_slice())
}

fn plain_text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => pick(&["q", "When did Alice move?", "x", "  ", " ", "\t", "é", "\u{1F600}", "a\u{0301}", "\0", "ünïcödé ✓", "ex:pred", "http://schema.org/name"]),
        2 => "\\PC{0,30}",
        1 => "[a-z ]{0,10}",
        1 => Just(String::new()),
    ]
    .boxed()
}

fn question() -> BoxedStrategy<Value> {
    prop_oneof![
        6 => text(plain_text()),
        1 => text(pick(&["a", "é", "\u{1F600}", "ab"]).prop_flat_map(|unit| {
            select(vec![8191usize, 8192, 8193, 9000]).prop_map(move |n| unit.repeat(n))
        })),
        1 => odd(),
    ]
    .boxed()
}

fn optional_text() -> BoxedStrategy<Value> {
    prop_oneof![
        5 => text(plain_text()),
        1 => Just(Value::Null).boxed(),
        1 => odd(),
    ]
    .boxed()
}

fn bound() -> BoxedStrategy<Value> {
    let number = || {
        prop_oneof![
            pick(&[
                "1",
                "-1.5",
                "0",
                "-0",
                "+5",
                "1e5",
                "1E-5",
                "1e+5",
                " 1 ",
                "\t2\n",
                "1_000",
                "1__0",
                "_1",
                "1_",
                "1_000.000_1",
                "NaN",
                "nan",
                "-NaN",
                "sNaN",
                "Infinity",
                "-inf",
                "Inf",
                ".5",
                "5.",
                ".",
                "-.5e-3",
                "\u{0661}\u{0662}",
                "\u{FF11}",
                "0x10",
                "1.2.3",
                "1e999999999999999999",
                "1e-999999999999999999",
                "1e9999999999999999999",
                "1e1000000000000000000",
                "1e999999999999999998",
                "1e-1000000000000000000",
                "123456789012345678901234567890.123456789",
                "0.000000000000000000000000000001",
                "1e",
                "e5",
                "1e5.5",
                "--1",
                "1 000",
                "1,5",
                "\u{00A0}1",
            ]),
            "-?[0-9]{1,30}(\\.[0-9]{0,30})?([eE][+-]?[0-9]{1,20})?",
        ]
        .boxed()
    };
    prop_oneof![
        3 => text(number()),
        3 => text(super::timestamp::texts()),
        1 => text(mutated(number(), &["_", ".", "e", "-", " ", "0"])),
        1 => text(plain_text()),
        1 => odd(),
    ]
    .boxed()
}

fn tags() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => vec(prop_oneof![4 => text(plain_text()), 1 => odd()], 0..4).prop_map(Value::Array),
        1 => odd(),
        1 => text(plain_text()),
    ]
    .boxed()
}

/// A datetime near `now`: equal, a microsecond either side, in other offsets.
fn near_now() -> BoxedStrategy<Value> {
    select(NOWS.to_vec())
        .prop_flat_map(|now| {
            let now = Timestamp::parse(now).expect("a valid instant");
            let micros = now.utc_micros();
            (
                prop_oneof![
                    Just(0i64),
                    Just(1),
                    Just(-1),
                    -5_000_000i64..5_000_000,
                    Just(3_600_000_000)
                ],
                select(vec![0i32, 3600, -3600, 19_800, -28_800]),
                0u8..4,
            )
                .prop_map(move |(delta, offset, form)| {
                    let instant = micros + delta;
                    let local = Timestamp::from_utc_micros(instant + i64::from(offset) * 1_000_000)
                        .expect("near a valid instant");
                    match form {
                        0 => json!(local.with_offset_seconds(offset).to_string()),
                        1 => json!(local.python_isoformat()),
                        2 => json!(instant as f64 / 1e6),
                        _ => json!(local.date_text()),
                    }
                })
        })
        .boxed()
}

fn datetime_like() -> BoxedStrategy<Value> {
    prop_oneof![
        3 => super::datetime::values(),
        2 => near_now(),
        1 => Just(Value::Null).boxed(),
    ]
    .boxed()
}

fn window() -> BoxedStrategy<Value> {
    let end =
        || prop_oneof![3 => datetime_like(), 1 => Just(None::<Value>).prop_map(|_| Value::Null)];
    prop_oneof![
        2 => (end(), end()).prop_map(|(start, end)| json!({"start": start, "end": end})),
        2 => end().prop_map(|start| json!({"start": start})),
        2 => end().prop_map(|end| json!({"end": end})),
        1 => (end(), odd()).prop_map(|(start, extra)| json!({"start": start, "other": extra})),
        1 => one_of_values(vec![json!({}), Value::Null, json!("2020-01-01"), json!([]), json!(5), json!(["2020-01-01", "2020-02-01"])]),
    ]
    .boxed()
}

/// Each field with its generator and how often it is present (percent).
fn fields() -> Vec<(&'static str, u32, BoxedStrategy<Value>)> {
    let natures = names(UncertaintyNature::ALL.iter().map(|v| v.as_str()).collect());
    let modalities = names(AssertionModality::ALL.iter().map(|v| v.as_str()).collect());
    vec![
        ("question", 60, question()),
        ("min_confidence", 20, float_like()),
        ("uncertainty_nature", 10, enum_like(natures)),
        ("assertion_modality", 10, enum_like(modalities)),
        (
            "recency_window_days",
            10,
            prop_oneof![int_like(), Just(Value::Null)].boxed(),
        ),
        (
            "audience",
            10,
            enum_like(&["EXPERT", "GENERAL", "REGULATORY"]),
        ),
        ("top_k", 20, int_like()),
        ("subject_id", 10, optional_text()),
        ("tags", 10, tags()),
        ("include_ancestors", 8, bool_like()),
        ("include_document_meta", 8, bool_like()),
        ("include_non_asserted", 8, bool_like()),
        ("include_agreement", 5, bool_like()),
        ("include_contestedness", 5, bool_like()),
        ("as_of", 15, datetime_like()),
        ("window", 15, window()),
        ("observer_project", 8, optional_text()),
        (
            "grounded",
            8,
            prop_oneof![bool_like(), Just(Value::Null)].boxed(),
        ),
        ("predicate", 15, optional_text()),
        ("object_eq", 10, bound()),
        ("object_gt", 15, bound()),
        ("object_lt", 15, bound()),
        ("object_contains", 8, optional_text()),
        ("count", 12, bool_like()),
        (
            "group_by",
            10,
            prop_oneof![
                enum_like(&["subject", "predicate", "object"]),
                Just(Value::Null)
            ]
            .boxed(),
        ),
        (
            "min_effective_confidence",
            10,
            prop_oneof![float_like(), Just(Value::Null)].boxed(),
        ),
        ("list_predicates", 8, bool_like()),
        ("list_vocabulary", 8, bool_like()),
        ("unknown", 5, odd()),
        ("Question", 3, text(plain_text())),
        ("top-k", 3, int_like()),
        ("vector", 3, odd()),
        ("now", 3, datetime_like()),
    ]
}

fn bodies() -> BoxedStrategy<Value> {
    let present: Vec<BoxedStrategy<(&'static str, Option<Value>)>> = fields()
        .into_iter()
        .map(|(name, percent, values)| {
            // Shrinking lowers the roll, which drops the field.
            (0u32..100, values)
                .prop_map(move |(roll, value)| (name, (roll >= 100 - percent).then_some(value)))
                .boxed()
        })
        .collect();
    let object = (present, any::<proptest::sample::Index>()).prop_map(|(entries, rotation)| {
        // The fields in declaration order, rotated: pydantic reports in
        // declaration order whatever the body's order.
        let mut entries: Vec<(&str, Value)> = entries
            .into_iter()
            .filter_map(|(name, value)| value.map(|v| (name, v)))
            .collect();
        if !entries.is_empty() {
            let by = rotation.index(entries.len());
            entries.rotate_left(by);
        }
        Value::Object(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect::<Map<_, _>>(),
        )
    });
    prop_oneof![
        30 => object,
        1 => one_of_values(vec![json!([]), json!("q"), json!(5), json!(null), json!([{"question": "q"}])]),
    ]
    .boxed()
}

fn cases() -> impl Strategy<Value = Case> {
    (bodies(), select(NOWS.to_vec())).prop_map(|(body, now)| Case {
        body,
        now: now.to_owned(),
    })
}

fn same_bound(ours: Option<&BoundValue>, theirs: &Value) -> bool {
    match (ours, theirs) {
        (None, Value::Null) => true,
        (Some(BoundValue::Instant(micros)), theirs) => theirs["instant"].as_i64() == Some(*micros),
        (Some(BoundValue::Number(number)), theirs) => theirs["number"]
            .as_str()
            .and_then(Decimal::parse)
            .is_some_and(|expected| &expected == number),
        _ => false,
    }
}

/// `recency_window_days` as an integer past `i64`: pydantic keeps any Python
/// int, `QueryRequest` refuses it (documented on `QueryRequest::from_json`).
fn big_days(body: &Value) -> bool {
    match &body["recency_window_days"] {
        Value::Number(n) => n.as_i64().is_none() && n.as_u64().is_some(),
        Value::String(text) => {
            let trimmed = text.trim();
            let digits = trimmed.strip_prefix(['+', '-']).unwrap_or(trimmed);
            let whole = digits.split_once('.').map_or(digits, |(whole, _)| whole);
            !whole.is_empty()
                && whole.bytes().all(|b| b.is_ascii_digit() || b == b'_')
                && whole.replace('_', "").trim_start_matches('0').len() >= 19
                && QueryRequest::from_json(
                    &json!({"question": "q", "recency_window_days": text}),
                    Timestamp::now(),
                )
                .is_err_and(|e| e.0.iter().any(|e| e.kind == "int_parsing_size"))
        }
        _ => false,
    }
}

fn check(case: &Case, verdict: &Value) -> Result<(), String> {
    let now = Timestamp::parse(&case.now).map_err(|e| e.to_string())?;
    let ours = QueryRequest::from_json(&case.body, now);
    let mismatch = |ours: String| {
        Err(format!(
            "body {}: reference {verdict}, ours {ours}",
            case.body
        ))
    };
    match (verdict["ok"].as_bool(), ours) {
        (Some(true), Ok(request)) => {
            let dump = serde_json::to_value(&request).map_err(|e| e.to_string())?;
            if dump != verdict["dump"] {
                return mismatch(dump.to_string());
            }
            for (name, ours) in [
                ("object_eq", request.eq_bound()),
                ("object_gt", request.gt_bound()),
                ("object_lt", request.lt_bound()),
            ] {
                let theirs = &verdict["bounds"][name];
                let present = verdict["bounds"].get(name).is_some();
                if present && !same_bound(ours, theirs) {
                    return mismatch(format!("{name} bound {ours:?}"));
                }
            }
            Ok(())
        }
        (Some(false), Err(errors))
            if serde_json::to_value(&errors).map_err(|e| e.to_string())? == verdict["errors"] =>
        {
            Ok(())
        }
        (_, Ok(request)) => mismatch(serde_json::to_string(&request).unwrap_or_default()),
        (_, Err(errors)) => {
            let reference_took_the_days = !verdict["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| e["loc"] == json!(["recency_window_days"]));
            if big_days(&case.body) && reference_took_the_days {
                return Err(format!(
                    "{}recency_window_days {} past i64 (body {})",
                    fuzz::DOCUMENTED,
                    case.body["recency_window_days"],
                    case.body
                ));
            }
            mismatch(serde_json::to_string(&errors).unwrap_or_default())
        }
    }
}

#[test]
fn differential() {
    let corpus = [
        json!({"question": "q"}),
        json!({"question": "q", "top_k": "5", "min_confidence": " 0.5 "}),
        json!({"count": true, "group_by": "subject", "min_effective_confidence": 0.5}),
        json!({"window": {"start": "2020-01-02", "end": "2020-01-01"}}),
        json!({"question": "q", "as_of": "2099-01-01"}),
        json!({"question": "q", "object_gt": "1e999999999999999999"}),
        json!({"list_predicates": true, "list_vocabulary": true}),
        json!([]),
    ];
    fuzz::run(fuzz::Target {
        decoder: "request",
        strategy: cases(),
        corpus: corpus
            .into_iter()
            .map(|body| Case {
                body,
                now: NOWS[0].to_owned(),
            })
            .collect(),
        regressions: include_str!("../../fuzz-regressions/request.jsonl"),
        check,
    });
}
