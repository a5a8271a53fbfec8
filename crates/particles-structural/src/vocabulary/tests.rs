//! The vocabulary pieces against values the reference computed
//! (`normalise_predicate`, `class_namespace`, `object_shape`, `link_band`).

use super::*;

#[test]
fn predicates_normalise_as_the_reference_normalises_them() {
    // Each pair printed by the reference's `normalise_predicate`.
    let cases = [
        ("moved to", "mov to"),
        ("Moves to", "mov to"),
        ("moving to", "mov to"),
        ("has been implemented", "implement"),
        ("has status", "hav status"),
        ("does not support", "not support"),
        ("supports", "support"),
        ("The capital of", "capital of"),
        ("was born in", "born in"),
        ("is a", "be"),
        ("weighs", "weigh"),
        ("minted", "mint"),
        ("diameter", "diameter"),
        ("stopped", "stop"),
        ("passed", "pass"),
        ("calls", "call"),
        ("studies", "studi"),
        ("watches", "watch"),
        ("boxes", "box"),
        ("buses", "bus"),
        ("used by", "us by"),
        ("ran", "run"),
        ("hopping", "hop"),
        ("tried", "tri"),
        ("  !! ", "!!"),
        ("\u{130}stanbul", "i stanbul"),
        ("a the", "a the"),
        ("an", "an"),
        ("WROTE", "writ"),
        ("has", "hav"),
        ("was written by", "writ by"),
        ("goes to", "go to"),
        ("flies", "fli"),
        ("played", "plai"),
        ("KM#8", "km 8"),
        ("1987", "1987"),
        ("x-ray", "x-rai"),
        ("rock_n_roll", "rock_n_roll"),
        ("it's", "it'"),
        ("said", "sai"),
        ("seeing", "se"),
        ("making", "mak"),
        ("skies", "ski"),
        ("bias", "bia"),
        ("focus", "focus"),
        ("ages", "ag"),
        ("agreed", "agr"),
        ("free", "fr"),
    ];
    for (value, expected) in cases {
        assert_eq!(normalise_predicate(value), expected, "{value:?}");
    }
}

#[test]
fn class_namespaces_are_curie_prefixes_or_iri_bases() {
    let cases = [
        ("artifact:file", "artifact"),
        ("http://ex.org/onto#Coin", "http://ex.org/onto#"),
        ("http://ex.org/Coin", "http://ex.org/"),
        ("Coin", "(none)"),
        ("a:b", "a"),
        ("1abc:x", "(none)"),
        ("http://x", "(none)"),
        ("urn:isbn:1", "urn"),
        ("ab-c.d_e:f", "ab-c.d_e"),
        ("\u{dc}n\u{ef}code:x", "(none)"),
        ("q:/x", "q"),
        ("q://x", "(none)"),
        ("http://a/b#c/d", "http://a/b#"),
    ];
    for (class, expected) in cases {
        assert_eq!(class_namespace(class), expected, "{class:?}");
    }
}

fn literal(value: &str, datatype: Option<&str>, language: Option<&str>) -> ClaimTerm {
    ClaimTerm {
        kind: TermKind::Literal,
        value: value.to_owned(),
        datatype: datatype.map(str::to_owned),
        language: language.map(str::to_owned),
    }
}

#[test]
fn object_shapes_read_types_then_lexical_forms() {
    assert_eq!(
        object_shape(&literal("5", Some("xsd:decimal"), None)),
        Shape::Numeric
    );
    assert_eq!(
        object_shape(&literal("abc", Some("xsd:decimal"), None)),
        Shape::Text
    );
    assert_eq!(
        object_shape(&literal(
            "2021-06-01T12:00:00+02:00",
            Some("http://www.w3.org/2001/XMLSchema#dateTime"),
            None
        )),
        Shape::Dated
    );
    assert_eq!(
        object_shape(&literal("5", Some("ex:weight"), None)),
        Shape::Text
    );
    assert_eq!(object_shape(&literal(" 1987 ", None, None)), Shape::Numeric);
    assert_eq!(
        object_shape(&literal("2026-10-01", None, None)),
        Shape::Dated
    );
    assert_eq!(
        object_shape(&literal("1987", None, Some("en"))),
        Shape::Text
    );
    assert_eq!(object_shape(&literal("Gold Coin", None, None)), Shape::Text);
}

#[test]
fn link_bands_follow_the_thresholds() {
    assert_eq!(link_band(1.0, 0.25), Band::Asserted);
    assert_eq!(link_band(0.5, 0.25), Band::Unscored);
    assert_eq!(link_band(0.1, 0.25), Band::Suppressed);
    assert_eq!(link_band(0.25, 0.25), Band::Scored);
    assert_eq!(link_band(f64::NAN, 0.25), Band::Scored);
}
