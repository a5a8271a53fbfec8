//! A row's JSON columns read straight into their types, without a
//! `serde_json::Value` tree: the fast path of [`crate::row`]'s hydration.
//!
//! Hydration parses every row's provenance and extractor ref, and about a
//! third of the rows' structured claims, on every cache build. Through a
//! `Value` each object is a map of owned keys and values, built to be read
//! once and dropped: 7.5% of a first query's CPU at 100k (`perf`, stop 51).
//!
//! Each function here answers only where it is sure to answer as the `Value`
//! path does (`row.rs`), and returns `None` everywhere else: any syntax or
//! type error, a key given twice (a `Value` map keeps the last, so the slow
//! path may accept what a typed read refuses), an item that is not an object.
//! The caller then runs the `Value` path, which decides and words the error.
//! So no row reads differently, and no error message changes; the property
//! test below holds each fast read to its slow one.
//!
//! A value under a key nobody reads is still parsed into a `Value`, not
//! skipped: serde's `IgnoredAny` checks only the syntax, so it would pass a
//! lone surrogate escape or a number out of `f64`'s range that the `Value`
//! path refuses. For the same reason a claim's terms are read here, not by
//! `ClaimTerm`'s derived `Deserialize`, which skips unknown keys that way.

use particles_model::{ClaimTerm, ExtractorRef, ProvenanceRef, TermKind};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

/// The refs of `provenance_json`, or `None`: the slow path decides.
pub(crate) fn provenance(text: &str) -> Option<Vec<ProvenanceRef>> {
    let refs: Vec<Ref> = serde_json::from_str(text).ok()?;
    Some(refs.into_iter().map(|r| r.0).collect())
}

/// The ref of `extractor_ref_json` (which is `None` for any malformed ref, as
/// the slow path reads it), or `None`: the slow path decides.
pub(crate) fn extractor_ref(text: &str) -> Option<Option<ExtractorRef>> {
    let Extractor { name, version } = serde_json::from_str(text).ok()?;
    Some(match (name, version) {
        (Some(name), Some(version)) if !name.is_empty() && !version.is_empty() => {
            Some(ExtractorRef { name, version })
        }
        _ => None,
    })
}

/// The terms of a `structured_claim_json` payload, or `None`: the slow path
/// decides.
pub(crate) fn claim_terms(text: &str) -> Option<ClaimTerms> {
    serde_json::from_str(text).ok()
}

/// A structured claim's payload: its three terms and its subject's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimTerms {
    pub(crate) subject: ClaimTerm,
    pub(crate) predicate: ClaimTerm,
    pub(crate) object: ClaimTerm,
    pub(crate) subject_id: Option<String>,
}

/// The fast path's refusal. Nobody reads its words: the slow path then runs
/// and writes the error the user sees.
fn refused<E: de::Error>() -> E {
    E::custom("left to the Value path")
}

/// Fills `slot` once; a second value for the same key is refused.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T) -> Result<(), E> {
    if slot.is_some() {
        return Err(refused());
    }
    *slot = Some(value);
    Ok(())
}

/// One provenance ref, read from a JSON object only (a derived `Deserialize`
/// would also take an array, which the slow path refuses).
struct Ref(ProvenanceRef);

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum RefKey {
    Type,
    CorpusEntryId,
    SnapshotId,
    Location,
    ChunkHash,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Ref {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Ref, D::Error> {
        struct RefVisitor;
        impl<'de> Visitor<'de> for RefVisitor {
            type Value = Ref;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a provenance ref object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ref, A::Error> {
                let (mut kind, mut entry) = (None, None);
                let (mut snapshot, mut location, mut chunk) = (None, None, None);
                while let Some(key) = map.next_key::<RefKey>()? {
                    match key {
                        RefKey::Type => once(&mut kind, map.next_value::<String>()?)?,
                        RefKey::CorpusEntryId => once(&mut entry, map.next_value::<String>()?)?,
                        RefKey::SnapshotId => once(&mut snapshot, map.next_value()?)?,
                        RefKey::Location => once(&mut location, map.next_value()?)?,
                        RefKey::ChunkHash => once(&mut chunk, map.next_value()?)?,
                        RefKey::Other => {
                            map.next_value::<serde_json::Value>()?;
                        }
                    }
                }
                let ref_type = kind.ok_or_else(refused)?.parse().map_err(|_| refused())?;
                Ok(Ref(ProvenanceRef {
                    ref_type,
                    corpus_entry_id: entry.ok_or_else(refused)?,
                    snapshot_id: snapshot.flatten(),
                    location: location.flatten(),
                    chunk_hash: chunk.flatten(),
                }))
            }
        }
        deserializer.deserialize_map(RefVisitor)
    }
}

/// An extractor ref's two strings; a value of another type reads as absent,
/// as the slow path's `Value` match does.
struct Extractor {
    name: Option<String>,
    version: Option<String>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ExtractorKey {
    Name,
    Version,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Extractor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Extractor, D::Error> {
        struct ExtractorVisitor;
        impl<'de> Visitor<'de> for ExtractorVisitor {
            type Value = Extractor;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an extractor ref object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Extractor, A::Error> {
                let (mut name, mut version) = (None, None);
                let string = |value: serde_json::Value| match value {
                    serde_json::Value::String(s) => Some(s),
                    _ => None,
                };
                while let Some(key) = map.next_key::<ExtractorKey>()? {
                    match key {
                        ExtractorKey::Name => once(&mut name, string(map.next_value()?))?,
                        ExtractorKey::Version => once(&mut version, string(map.next_value()?))?,
                        ExtractorKey::Other => {
                            map.next_value::<serde_json::Value>()?;
                        }
                    }
                }
                Ok(Extractor {
                    name: name.flatten(),
                    version: version.flatten(),
                })
            }
        }
        deserializer.deserialize_map(ExtractorVisitor)
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ClaimKey {
    Subject,
    Predicate,
    Object,
    SubjectId,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for ClaimTerms {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ClaimTerms, D::Error> {
        struct ClaimVisitor;
        impl<'de> Visitor<'de> for ClaimVisitor {
            type Value = ClaimTerms;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a structured claim object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ClaimTerms, A::Error> {
                let (mut subject, mut predicate, mut object, mut subject_id) =
                    (None, None, None, None);
                while let Some(key) = map.next_key::<ClaimKey>()? {
                    match key {
                        ClaimKey::Subject => once(&mut subject, map.next_value::<Term>()?.0)?,
                        ClaimKey::Predicate => {
                            once(&mut predicate, map.next_value::<Term>()?.0)?;
                        }
                        ClaimKey::Object => once(&mut object, map.next_value::<Term>()?.0)?,
                        ClaimKey::SubjectId => {
                            once(&mut subject_id, map.next_value::<Option<String>>()?)?;
                        }
                        ClaimKey::Other => {
                            map.next_value::<serde_json::Value>()?;
                        }
                    }
                }
                Ok(ClaimTerms {
                    subject: subject.ok_or_else(refused)?,
                    predicate: predicate.ok_or_else(refused)?,
                    object: object.ok_or_else(refused)?,
                    subject_id: subject_id.flatten(),
                })
            }
        }
        deserializer.deserialize_map(ClaimVisitor)
    }
}

/// One term of a claim, read from a JSON object only (the derived
/// `ClaimTerm` would also take an array; the slow path then decides).
struct Term(ClaimTerm);

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum TermKey {
    Kind,
    Value,
    Datatype,
    Language,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Term {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Term, D::Error> {
        struct TermVisitor;
        impl<'de> Visitor<'de> for TermVisitor {
            type Value = Term;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a claim term object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Term, A::Error> {
                let (mut kind, mut value, mut datatype, mut language) = (None, None, None, None);
                while let Some(key) = map.next_key::<TermKey>()? {
                    match key {
                        TermKey::Kind => once(&mut kind, map.next_value::<TermKind>()?)?,
                        TermKey::Value => once(&mut value, map.next_value::<String>()?)?,
                        TermKey::Datatype => once(&mut datatype, map.next_value()?)?,
                        TermKey::Language => once(&mut language, map.next_value()?)?,
                        TermKey::Other => {
                            map.next_value::<serde_json::Value>()?;
                        }
                    }
                }
                Ok(Term(ClaimTerm {
                    kind: kind.ok_or_else(refused)?,
                    value: value.ok_or_else(refused)?,
                    datatype: datatype.flatten(),
                    language: language.flatten(),
                }))
            }
        }
        deserializer.deserialize_map(TermVisitor)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::row::{claim_terms_from_value, extractor_ref_from_value, provenance_from_value};

    /// Keys of every object the three columns hold, a few escaped or foreign.
    fn key() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "type",
            "corpus_entry_id",
            "snapshot_id",
            "location",
            "chunk_hash",
            "name",
            "version",
            "subject",
            "predicate",
            "object",
            "subject_id",
            "kind",
            "value",
            "datatype",
            "language",
            "typ\\u0065",
            "n\\u0061me",
            "other",
        ])
        .prop_map(str::to_owned)
    }

    /// Values of every JSON type, the enums' names among the strings.
    fn scalar() -> BoxedStrategy<String> {
        prop_oneof![
            prop::sample::select(vec![
                "null", "true", "0", "-1.5e3", "1e400", "[]", "{}", "[1,[2]]",
            ])
            .prop_map(str::to_owned),
            prop::sample::select(vec![
                "SOURCE",
                "PARTICLE",
                "AGENT",
                "source",
                "TOKEN",
                "URI",
                "LITERAL",
                "xsd:string",
                "en",
                "",
                "general-extractor",
                "0.13.0",
                "caf\\u00e9",
                "\\ud800",
                "é",
            ])
            .prop_map(|s| format!("\"{s}\"")),
        ]
        .boxed()
    }

    /// A string value.
    fn string() -> BoxedStrategy<String> {
        prop::sample::select(vec!["e", "", "caf\\u00e9", "é", "xsd:string", "en"])
            .prop_map(|s| format!("\"{s}\""))
            .boxed()
    }

    /// A value `key` may well hold in a store (mostly), or any value.
    fn good(key: &str) -> BoxedStrategy<String> {
        let quoted = |names: &[&'static str]| {
            prop::sample::select(names.to_vec())
                .prop_map(|s| format!("\"{s}\""))
                .boxed()
        };
        let usual = match key {
            "type" => quoted(&["SOURCE", "PARTICLE", "AGENT"]),
            "kind" => quoted(&["TOKEN", "URI", "LITERAL"]),
            "subject" | "predicate" | "object" => term(),
            "snapshot_id" | "location" | "chunk_hash" | "datatype" | "language" | "subject_id" => {
                prop_oneof![string(), Just("null".to_owned())].boxed()
            }
            _ => string(),
        };
        prop_oneof![12 => usual, 1 => scalar()].boxed()
    }

    /// An object holding most of `wanted` (each most often with a value it may
    /// hold) and sometimes another pair, in any order: keys may repeat.
    fn object(wanted: &'static [&'static str]) -> BoxedStrategy<String> {
        let mine = wanted
            .iter()
            .map(|k| (prop::bool::weighted(0.95), good(k)).prop_map(move |(on, v)| (on, k, v)))
            .collect::<Vec<_>>();
        let others = prop::collection::vec((key(), scalar()), 0..3);
        (mine, prop_oneof![2 => Just(Vec::new()), 1 => others])
            .prop_flat_map(|(mine, others)| {
                let mut pairs: Vec<String> = mine
                    .into_iter()
                    .filter(|(on, _, _)| *on)
                    .map(|(_, k, v)| format!("\"{k}\": {v}"))
                    .collect();
                pairs.extend(others.into_iter().map(|(k, v)| format!("\"{k}\":{v}")));
                Just(pairs).prop_shuffle()
            })
            .prop_map(|pairs| format!("{{{}}}", pairs.join(", ")))
            .boxed()
    }

    fn term() -> BoxedStrategy<String> {
        prop_oneof![
            16 => object(&["kind", "value", "datatype", "language"]),
            1 => scalar(),
            1 => Just(r#"["TOKEN", "x"]"#.to_owned()),
        ]
        .boxed()
    }

    /// A column's text: an object (or a list of them) of the column's shape,
    /// or anything else; sometimes with text after it.
    /// `lists` weighs a list of shapes against one shape (4 to 4: even).
    fn text(shape: BoxedStrategy<String>, lists: u32) -> impl Strategy<Value = String> {
        let list = prop::collection::vec(
            prop_oneof![8 => shape.clone(), 1 => scalar(), 1 => Just(r#"["SOURCE", "e"]"#.to_owned())],
            0..3,
        )
        .prop_map(|items| format!("[{}]", items.join(",")));
        let tail = prop_oneof![
            8 => prop::sample::select(vec!["", " ", "\n"]),
            1 => prop::sample::select(vec![" x", ",", "]"]),
        ];
        (prop_oneof![4 => shape, lists => list, 1 => scalar()], tail)
            .prop_map(|(body, tail)| format!("{body}{tail}"))
    }

    fn reference() -> BoxedStrategy<String> {
        object(&[
            "type",
            "corpus_entry_id",
            "snapshot_id",
            "location",
            "chunk_hash",
        ])
    }

    fn claim() -> BoxedStrategy<String> {
        object(&["subject", "predicate", "object", "subject_id"])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16000))]

        /// Wherever the typed read answers, the `Value` read answers the same.
        #[test]
        fn the_typed_reads_answer_as_the_value_reads(
            refs in text(reference(), 8),
            extractor in text(object(&["name", "version"]), 1),
            payload in text(claim(), 1),
        ) {
            if let Some(fast) = provenance(&refs) {
                prop_assert_eq!(Ok(fast), provenance_from_value(&refs), "{}", refs);
            }
            if let Some(fast) = extractor_ref(&extractor) {
                prop_assert_eq!(fast, extractor_ref_from_value(&extractor), "{}", extractor);
            }
            if let Some(fast) = claim_terms(&payload) {
                prop_assert_eq!(Ok(fast), claim_terms_from_value(&payload), "{}", payload);
            }
        }
    }

    /// The shapes a store holds are read by the typed path (else it would
    /// save nothing), and the shapes it must leave are left.
    #[test]
    fn stored_shapes_take_the_typed_path_and_doubtful_ones_do_not() {
        let refs = r#"[{"type": "SOURCE", "corpus_entry_id": "e", "snapshot_id": "s", "location": null, "chunk_hash": null}]"#;
        assert_eq!(provenance(refs), provenance_from_value(refs).ok());
        assert!(provenance(refs).is_some());
        let extractor = r#"{"name": "general-extractor", "version": "0.13.0"}"#;
        assert!(matches!(extractor_ref(extractor), Some(Some(_))));
        let payload = r#"{"subject": {"kind": "TOKEN", "value": "a"}, "predicate": {"kind": "TOKEN", "value": "b"}, "object": {"kind": "LITERAL", "value": "c", "language": "en"}, "subject_id": "x"}"#;
        assert_eq!(claim_terms(payload), claim_terms_from_value(payload).ok());
        assert!(claim_terms(payload).is_some());

        for doubtful in [
            r#"[["SOURCE", "e"]]"#,
            r#"[{"type": "SOURCE", "corpus_entry_id": "e", "type": "AGENT"}]"#,
            r#"[{"type": "source", "corpus_entry_id": "e"}]"#,
            r#"[{"type": "SOURCE", "corpus_entry_id": 1}]"#,
        ] {
            assert_eq!(provenance(doubtful), None, "{doubtful}");
        }
        // The `Value` path keeps the last of a repeated key: the typed one
        // leaves it the text.
        let twice = r#"{"name": "a", "version": "1", "name": "b"}"#;
        assert_eq!(extractor_ref(twice), None);
        assert_eq!(
            extractor_ref_from_value(twice).map(|r| r.name),
            Some("b".into())
        );
        assert_eq!(claim_terms(r#"[{"kind": "TOKEN", "value": "a"}]"#), None);
        // Values under keys nobody reads that only a full parse refuses: a
        // lone surrogate and a number beyond `f64`. The `Value` path fails
        // on them, so the typed one must not answer.
        for unread in [r#""\ud800""#, "1e400"] {
            let refs = format!(r#"[{{"type": "SOURCE", "corpus_entry_id": "e", "x": {unread}}}]"#);
            assert!(provenance_from_value(&refs).is_err());
            assert_eq!(provenance(&refs), None, "{refs}");
            let extractor = format!(r#"{{"name": "n", "version": "1", "x": {unread}}}"#);
            assert_eq!(extractor_ref(&extractor), None, "{extractor}");
            let term = format!(r#"{{"kind": "TOKEN", "value": "a", "x": {unread}}}"#);
            let payload =
                format!(r#"{{"subject": {term}, "predicate": {term}, "object": {term}}}"#);
            assert!(claim_terms_from_value(&payload).is_err());
            assert_eq!(claim_terms(&payload), None, "{payload}");
        }
    }
}
