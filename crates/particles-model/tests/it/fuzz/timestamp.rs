//! `Timestamp::parse` against Python 3.11's `datetime.fromisoformat`: the same
//! verdict, and for an accepted text the same fields and offset (compared as
//! Python's `isoformat()`, which prints every field, the offset's seconds and
//! microseconds included).

use particles_model::Timestamp;
use particles_testkit::fuzz::{
    self,
    grammar::{concat, mutated, pick},
};
use proptest::prelude::*;
use serde_json::Value;

/// Characters that move a text across the grammar's edges.
const EDITS: &[&str] = &[
    "0", "1", "5", "9", "-", ":", ".", ",", "+", "Z", "z", "T", "W", " ", "\0", "é", "\u{0661}",
    "\u{FF11}", "\u{2212}", "_", "\n",
];

fn two_digits() -> BoxedStrategy<String> {
    prop_oneof![
        3 => pick(&["00", "01", "09", "10", "12", "13", "23", "24", "28", "29", "30", "31", "32", "52", "53", "59", "60", "99"]),
        2 => "[0-9]{2}",
        1 => "[0-9]{1,3}",
    ]
    .boxed()
}

fn year() -> BoxedStrategy<String> {
    prop_oneof![
        3 => pick(&["0000", "0001", "1969", "1970", "2000", "2004", "2020", "2024", "2026", "2100", "9999"]),
        2 => "[0-9]{4}",
        1 => "[0-9]{3,5}",
    ]
    .boxed()
}

fn date() -> BoxedStrategy<String> {
    let week = || prop_oneof![two_digits(), pick(&["01", "52", "53", "54"])];
    let weekday = || pick(&["0", "1", "3", "5", "7", "8"]);
    prop_oneof![
        4 => concat(vec![year(), Just("-".to_owned()).boxed(), two_digits(), Just("-".to_owned()).boxed(), two_digits()]),
        2 => concat(vec![year(), two_digits(), two_digits()]),
        1 => concat(vec![year(), pick(&["-W", "W"]), week().boxed(), pick(&["-", ""]), weekday()]),
        1 => concat(vec![year(), pick(&["-W", "W"]), week().boxed()]),
        1 => concat(vec![year(), pick(&["-", ""]), "[0-9]{3}".boxed()]),
    ]
    .boxed()
}

fn clock() -> BoxedStrategy<String> {
    let fraction = || {
        concat(vec![
            pick(&[".", ",", ":"]),
            prop_oneof!["[0-9]{1,3}", "[0-9]{6}", "[0-9]{7,12}", Just(String::new())].boxed(),
        ])
    };
    prop_oneof![
        1 => two_digits(),
        3 => concat(vec![two_digits(), pick(&[":", ""]), two_digits()]),
        4 => concat(vec![two_digits(), pick(&[":", ""]), two_digits(), pick(&[":", ""]), two_digits()]),
        3 => concat(vec![two_digits(), Just(":".to_owned()).boxed(), two_digits(), Just(":".to_owned()).boxed(), two_digits(), fraction()]),
        1 => concat(vec![two_digits(), pick(&[":", ""]), two_digits(), fraction()]),
        1 => concat(vec![two_digits(), fraction()]),
    ]
    .boxed()
}

fn offset() -> BoxedStrategy<String> {
    prop_oneof![
        3 => Just(String::new()),
        2 => pick(&["Z", "z", "+00:00", "-00:00", "+24:00", "-23:59", "+23:59:59.999999", "+05:30", "-0800", "+01", "Z\0junk", "Z ", "+"]),
        3 => concat(vec![pick(&["+", "-"]), clock()]),
    ]
    .boxed()
}

fn separator() -> BoxedStrategy<String> {
    pick(&[
        "T",
        "T",
        "T",
        " ",
        "t",
        "_",
        "x",
        "0",
        "1",
        "-",
        "W",
        "Z",
        "+",
        ":",
        "\0",
        "é",
        "\u{2028}",
        "\u{1F600}",
        "TT",
        "",
    ])
}

fn well_formed() -> BoxedStrategy<String> {
    prop_oneof![
        1 => date(),
        4 => concat(vec![date(), separator(), clock(), offset()]),
        1 => concat(vec![date(), separator(), offset()]),
    ]
    .boxed()
}

pub(super) fn texts() -> BoxedStrategy<String> {
    prop_oneof![
        6 => well_formed(),
        3 => mutated(well_formed(), EDITS),
        1 => "[0-9T:+Z.,W -]{0,24}",
        1 => "\\PC{0,12}",
    ]
    .boxed()
}

fn check(text: &String, verdict: &Value) -> Result<(), String> {
    let ours = Timestamp::parse(text).map(|t| t.python_isoformat());
    match (verdict["ok"].as_bool(), &ours) {
        (Some(true), Ok(iso)) if verdict["iso"].as_str() == Some(iso) => Ok(()),
        (Some(false), Err(_)) => Ok(()),
        _ => Err(format!(
            "{text:?}: reference {verdict}, ours {}",
            ours.unwrap_or_else(|e| e.to_string())
        )),
    }
}

#[test]
fn differential() {
    fuzz::run(fuzz::Target {
        decoder: "timestamp",
        strategy: texts(),
        corpus: [
            "2024-09-21 01:49:04.286310",
            "2024-01-01T00:00:00+01:30:00.5",
            "2024-01-01T10:00:00.+01:00",
            "2024-01-01T10:00:00:5",
            "2024-01-01T10:00Z\0abc",
            "0000-W52-7",
            "9999-W52-6",
            "2024-01-01é10:00",
            "20240101T10",
        ]
        .map(str::to_owned)
        .to_vec(),
        regressions: include_str!("../../fuzz-regressions/timestamp.jsonl"),
        check,
    });
}
