//! YAML 1.1 as PyYAML 6.0.4 reads it: each expectation below was checked with
//! `yaml.safe_load` in the reference's venv (the differential test re-checks
//! them against the live reference).

use super::*;

fn scalar(text: &str) -> NodeValue {
    let document = format!("a: {text}\n");
    let node = safe_load(&document)
        .unwrap_or_else(|e| panic!("{text:?}: {e:?}"))
        .expect("one document");
    let entries = node.as_map().expect("a mapping").clone();
    entries[0].value.value.clone()
}

fn load_error(text: &str) -> YamlError {
    safe_load(text).expect_err(text)
}

#[test]
fn booleans_are_the_yaml_1_1_words_in_three_cases_and_not_y_or_n() {
    for text in [
        "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE",
    ] {
        assert!(matches!(scalar(text), NodeValue::Bool(true)), "{text}");
    }
    for text in [
        "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE",
    ] {
        assert!(matches!(scalar(text), NodeValue::Bool(false)), "{text}");
    }
    for text in ["y", "Y", "n", "N", "yEs", "oN", "tRUE"] {
        assert!(matches!(scalar(text), NodeValue::Str(_)), "{text}");
    }
}

#[test]
fn nulls() {
    for text in ["~", "null", "Null", "NULL", ""] {
        assert!(matches!(scalar(text), NodeValue::Null), "{text:?}");
    }
    assert!(matches!(scalar("nULL"), NodeValue::Str(_)));
}

fn int(text: &str) -> i128 {
    match scalar(text) {
        NodeValue::Int(Int::Small(value)) => value,
        other => panic!("{text}: {other:?}"),
    }
}

fn float(text: &str) -> f64 {
    match scalar(text) {
        NodeValue::Float(value) => value,
        other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn integers_in_yaml_1_1_spellings() {
    assert_eq!(int("1_000"), 1000);
    assert_eq!(int("010"), 8);
    assert_eq!(int("017"), 15);
    assert_eq!(int("0_7"), 7);
    assert_eq!(int("00"), 0);
    assert_eq!(int("-0"), 0);
    assert_eq!(int("0b1_0"), 2);
    assert_eq!(int("-0x1F"), -31);
    assert_eq!(int("1:30"), 90);
    assert_eq!(int("-1:30"), -90);
    assert_eq!(int("100:59"), 6059);
    assert_eq!(int("1__0"), 10);
    assert!(matches!(
        scalar("123456789012345678901234567890123456789012"),
        NodeValue::Int(Int::Big(_))
    ));
    // Not integers: strings.
    for text in ["0o17", "09", "1e3", "0:0", "1:60", "1_2:3_0", "12e3"] {
        assert!(matches!(scalar(text), NodeValue::Str(_)), "{text}");
    }
    // The resolver accepts them, then Python's int() refuses: a load error.
    assert!(!load_error("a: 0b_").syntax);
    assert!(!load_error("a: 0x_").syntax);
}

#[test]
fn explicit_ints_and_floats_go_through_pythons_int_and_float() {
    assert_eq!(int("!!int ' 12 '"), 12);
    assert_eq!(int("!!int '0o17'"), 15);
    assert_eq!(int("!!int '0x_1F'"), 31);
    assert_eq!(int("!!int '1_:30'"), 90);
    // ARABIC-INDIC DIGIT THREE: int() reads Unicode decimal digits.
    assert_eq!(int("!!int '\u{0663}'"), 3);
    // PyYAML's sign times int() of the rest, which may hold a sign of its own.
    assert_eq!(int("!!int '--5'"), 5);
    assert_eq!(int("!!int -0x-1"), 1);
    assert_eq!(
        int("!!int '-+170141183460469231731687303715884105728'"),
        i128::MIN
    );
    match scalar("!!int '--170141183460469231731687303715884105728'") {
        NodeValue::Int(Int::Big(digits)) => {
            assert_eq!(digits, "170141183460469231731687303715884105728");
        }
        other => panic!("2^127: {other:?}"),
    }
    assert_eq!(float("!!float '\u{0663}.5'"), 3.5);
    assert_eq!(float("!!float '--1'"), 1.0);
    assert!(!load_error("a: !!int '1__0x'").syntax);
}

#[test]
fn a_block_scalar_indicator_cannot_start_a_plain_scalar_in_a_flow_collection() {
    for text in ["a: [|x]\n", "a: {k: >x}\n"] {
        let error = load_error(text);
        assert!(error.syntax, "{text:?}");
        assert!(error.message.contains("cannot start any token"), "{text:?}");
    }
}

#[test]
fn floats_need_a_dot_and_a_signed_exponent() {
    assert_eq!(float("1.0e+3"), 1000.0);
    assert_eq!(float(".5"), 0.5);
    assert_eq!(float("1."), 1.0);
    assert_eq!(float("1._"), 1.0);
    assert_eq!(float("0."), 0.0);
    assert_eq!(float("1:30.5"), 90.5);
    assert_eq!(float("190:20:30.15"), 685_230.15);
    assert_eq!(float(".inf"), f64::INFINITY);
    assert_eq!(float("-.Inf"), f64::NEG_INFINITY);
    assert!(float(".NaN").is_nan());
    for text in [
        "1e3", "1.0e3", "-.5", "+.5", "+.nan", "._1", "1e-3", "0.1e1",
    ] {
        assert!(matches!(scalar(text), NodeValue::Str(_)), "{text}");
    }
}

#[test]
fn timestamps_are_their_own_kind_and_checked() {
    for text in [
        "2024-01-01",
        "2024-1-1 1:00:00",
        "2024-01-01T10:00:00Z",
        "2024-02-29",
    ] {
        assert!(matches!(scalar(text), NodeValue::Timestamp(_)), "{text}");
    }
    assert!(!load_error("a: 2024-02-30").syntax);
    assert!(!load_error("a: 2023-02-29").syntax);
    assert!(matches!(scalar("2024-1-1"), NodeValue::Str(_)));
}

#[test]
fn quoted_and_tagged_scalars() {
    assert!(matches!(scalar("'1'"), NodeValue::Str(s) if s == "1"));
    assert!(matches!(scalar("\"yes\""), NodeValue::Str(s) if s == "yes"));
    assert!(matches!(scalar("!!str 1"), NodeValue::Str(s) if s == "1"));
    assert!(matches!(
        scalar("!!int '12'"),
        NodeValue::Int(Int::Small(12))
    ));
    assert!(matches!(scalar("!!float '1'"), NodeValue::Float(f) if f == 1.0));
    for bad in [
        "a: !!python/tuple [1]",
        "a: !foo x",
        "a: !!bool 'y'",
        "a: !!int 1.5",
        "a: =",
        "a: <<",
    ] {
        let error = load_error(bad);
        assert!(!error.syntax, "{bad}");
    }
}

fn map_of(text: &str) -> Vec<(String, String)> {
    let node = safe_load(text).expect("loads").expect("a document");
    let entries = node.as_map().expect("a mapping");
    entries
        .iter()
        .map(|e| (e.key.key_text(), format!("{:?}", e.value.value)))
        .collect()
}

#[test]
fn repeated_keys_keep_the_first_position_and_the_last_value() {
    let entries = map_of("a: 1\nb: 2\na: 3\n");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].0, "a");
    assert!(entries[0].1.contains('3'));
    // 1, 1.0 and true are one Python key; the first key object stays.
    let entries = map_of("{1: a, true: b, 1.0: c}");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].0, "1");
    assert!(entries[0].1.contains("\"c\""));
}

#[test]
fn merge_keys_as_pyyaml_6_0_4() {
    // The mapping's own keys beat merged ones, wherever `<<` stands.
    let entries = map_of("x: &A {k: 1}\ny:\n  <<: *A\n  k: 2\n");
    assert!(entries[1].1.contains("Small(2)"));
    let entries = map_of("x: &A {k: 1}\ny:\n  k: 2\n  <<: *A\n");
    assert!(entries[1].1.contains("Small(2)"));
    // Distinct key nodes: the later merged mapping wins...
    let entries = map_of("a: &A {key: 1}\nb: &B {key: 2}\nc:\n  <<: [*A, *B]\n");
    assert!(entries[2].1.contains("Small(2)"));
    // ...but one-character keys are one string object, so the first stays.
    let entries = map_of("a: &A {k: 1}\nb: &B {k: 2}\nc:\n  <<: [*A, *B]\n");
    assert!(entries[2].1.contains("Small(1)"));
    assert!(!load_error("a:\n  <<: 5\n").syntax);
    assert!(!load_error("a:\n  <<: [5]\n").syntax);
}

#[test]
fn documents_that_are_not_one_mapping() {
    assert!(safe_load("").expect("empty").is_none());
    assert!(safe_load("# only\n").expect("comment").is_none());
    assert!(matches!(
        safe_load("[1, 2]").expect("list"),
        Some(Node {
            value: NodeValue::Seq(_),
            ..
        })
    ));
    let error = load_error("---\na: 1\n---\nb: 2\n");
    assert!(error.message.contains("single document"));
    assert!(!load_error("? [a]\n: 1\n").syntax);
    // PyYAML: "found undefined alias" (the parser already refuses it here).
    load_error("a: *nope\n");
}

#[test]
fn syntax_errors_have_a_line_and_column() {
    let error = load_error("a: 1\nb: [1, 2\n");
    assert!(error.syntax);
    assert!(error.line >= 2, "{error:?}");
    assert!(error.column >= 1);
}

#[test]
fn positions_are_one_based() {
    let node = safe_load("a: 1\nsection:\n  key: 2\n")
        .expect("loads")
        .expect("doc");
    let entries = node.as_map().expect("map");
    assert_eq!(entries[1].key_pos, Pos::File { line: 2, column: 1 });
    let inner = entries[1].value.as_map().expect("map");
    assert_eq!(inner[0].key_pos, Pos::File { line: 3, column: 3 });
    assert_eq!(inner[0].value.pos, Pos::File { line: 3, column: 8 });
}

#[test]
fn binary_sets_anchors_and_nel() {
    assert!(matches!(scalar("!!binary aGk="), NodeValue::Bytes(b) if b == b"hi"));
    assert!(load_error("a: !!binary aGk\n").message.contains("padding"));
    assert!(matches!(scalar("!!set {x, y}"), NodeValue::Seq(items) if items.len() == 2));
    let error = load_error("a: &x 1\nb: &x 2\n");
    assert!(error.message.contains("duplicate anchor 'x'"), "{error:?}");
    // The same name may come back in the next document only; one document is fine.
    assert!(safe_load("a: &x 1\nb: *x\n").is_ok());
    assert!(matches!(scalar("\u{85}"), NodeValue::Null));
}

#[test]
fn of_two_construction_errors_the_shallower_is_reported_as_pyyaml_does() {
    // The bad !!bool (line 3) comes first in the text, the bad merge (line 5)
    // is one level shallower: PyYAML's breadth-first constructor meets it first.
    let error = load_error("a:\n  b:\n    c: !!bool 1\nq:\n  <<: x\n");
    assert!(!error.syntax);
    assert_eq!(error.line, 5);
    // At one depth, document order decides.
    let error = load_error("a:\n  c: !!bool 1\nq:\n  <<: x\n");
    assert_eq!(error.line, 2);
    // A merge of an aliased scalar names the anchored node's line.
    let error = load_error("x: &a 0.5\nq:\n  r:\n    c: !!bool 1\n  <<: [*a]\n");
    assert_eq!(error.line, 1);
}
