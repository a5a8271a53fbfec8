//! What the vocabulary report and the subject buckets read beside the claims:
//! subject classes and external links, subject names, the operator log's counts
//! by event type, and the adopted vocabulary documents.
//!
//! Each read is the statement the reference's store layer runs
//! (`store/subject_store.py`, `store/event_store.py`,
//! `store/vocabulary_store.py`), with its quirks kept: instants are compared as
//! the text SQLAlchemy binds (the wall-clock fields, the offset dropped), and a
//! subject id is matched exactly, then as a case-insensitive `LIKE` prefix.

use std::collections::{BTreeSet, HashMap};

use particles_model::Timestamp;
use serde_json::Value;

use crate::{
    error::{Error, Result},
    policy::collect_with,
    Store, ID_CHUNK,
};

/// One external link of a subject, as the vocabulary header folds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalLink {
    /// The namespace (`wikidata`, `numista`, ...).
    pub namespace: String,
    /// How confident the link is (1.0 when the stored ref says nothing).
    pub confidence: f64,
}

/// One subject's class and links (ids and names are not read: the header counts).
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectHeader {
    /// `subject_class`, as stored (possibly empty).
    pub subject_class: Option<String>,
    /// Its external links, in stored order.
    pub links: Vec<ExternalLink>,
}

/// Every subject's class and external links (`list_subject_classes_and_links`),
/// keeping with `created_by` only those created at or before it (a naive stored
/// `created_at` read as UTC).
///
/// # Errors
///
/// [`Error::Query`]; [`Error::InvalidValue`] for a `created_at` or an
/// `external_ids_json` the reference cannot read either (it raises too).
pub fn subject_headers(store: &Store, created_by: Option<Timestamp>) -> Result<Vec<SubjectHeader>> {
    let rows: Vec<(String, Option<String>, Option<String>, String)> = collect_with(
        store,
        "subject classes and links",
        "SELECT id, subject_class, external_ids_json, created_at FROM subjects",
        [],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for (id, subject_class, external_ids, created_at) in rows {
        // Parsed whatever `created_by` is: the reference loads the column either way.
        let created = Timestamp::parse(&created_at).map_err(|e| Error::InvalidValue {
            table: "subjects",
            key: id.clone(),
            column: "created_at",
            reason: e.to_string(),
        })?;
        if created_by.is_some_and(|limit| created.utc_micros() > limit.utc_micros()) {
            continue;
        }
        let links =
            external_links(external_ids.as_deref()).map_err(|reason| Error::InvalidValue {
                table: "subjects",
                key: id,
                column: "external_ids_json",
                reason,
            })?;
        out.push(SubjectHeader {
            subject_class,
            links,
        });
    }
    Ok(out)
}

/// `[ExternalRef(...) for r in json.loads(text or "[]")]`: each element an object
/// with string `namespace` and `id`, an optional string `uri`, and an optional
/// `confidence` read by Python's `float()`.
fn external_links(text: Option<&str>) -> std::result::Result<Vec<ExternalLink>, String> {
    let text = text.filter(|t| !t.is_empty()).unwrap_or("[]");
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let elements: Vec<Value> = match value {
        Value::Array(elements) => elements,
        // Iterating an empty object or string yields nothing in Python.
        Value::Object(map) if map.is_empty() => Vec::new(),
        Value::String(s) if s.is_empty() => Vec::new(),
        other => return Err(format!("not a list of external refs: {other}")),
    };
    elements
        .into_iter()
        .map(|element| {
            let Value::Object(map) = element else {
                return Err(format!("an external ref is not an object: {element}"));
            };
            let namespace = match map.get("namespace") {
                Some(Value::String(s)) => s.clone(),
                other => return Err(format!("external ref namespace is not a string: {other:?}")),
            };
            if !matches!(map.get("id"), Some(Value::String(_))) {
                return Err(format!(
                    "external ref id is not a string: {:?}",
                    map.get("id")
                ));
            }
            if !matches!(map.get("uri"), None | Some(Value::Null | Value::String(_))) {
                return Err(format!(
                    "external ref uri is not a string: {:?}",
                    map.get("uri")
                ));
            }
            let confidence = match map.get("confidence") {
                None => 1.0,
                Some(value) => python_float(value)?,
            };
            Ok(ExternalLink {
                namespace,
                confidence,
            })
        })
        .collect()
}

/// Python's `float(x)` for a JSON value: numbers and booleans, and strings in
/// Python's float grammar; anything else raises in the reference.
fn python_float(value: &Value) -> std::result::Result<f64, String> {
    match value {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| format!("confidence {n} is not a float")),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        // `float(str)`: Python's spaces and decimal digits, underscores between
        // digits, `inf`/`infinity`/`nan` with one optional sign.
        Value::String(s) => particles_pytext::python_float(s)
            .ok_or_else(|| format!("could not convert string to float: {s:?}")),
        other => Err(format!("confidence {other} is not a number")),
    }
}

/// `subject_class` by subject id for the given ids (empty ids skipped), one query
/// per [`ID_CHUNK`] ids; an unknown id is absent (`get_subject_classes`).
///
/// # Errors
///
/// [`Error::Query`].
pub fn subject_classes<'a>(
    store: &Store,
    ids: impl IntoIterator<Item = &'a str>,
) -> Result<HashMap<String, Option<String>>> {
    let ids: BTreeSet<&str> = ids.into_iter().filter(|id| !id.is_empty()).collect();
    let ids: Vec<&str> = ids.into_iter().collect();
    let mut out = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(ID_CHUNK) {
        let sql = format!(
            "SELECT id, subject_class FROM subjects WHERE id IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        let rows: Vec<(String, Option<String>)> = collect_with(
            store,
            "subject classes",
            &sql,
            rusqlite::params_from_iter(chunk.iter()),
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        out.extend(rows);
    }
    Ok(out)
}

/// How many operator events the log holds of each type (`count_events_by_type`),
/// with `until` only those that occurred at or before it. The reference binds
/// `until` as SQLAlchemy writes a DATETIME (wall-clock fields, offset dropped)
/// and SQLite compares that text with the stored text; so does this.
///
/// # Errors
///
/// [`Error::Query`].
pub fn count_events_by_type(
    store: &Store,
    until: Option<Timestamp>,
) -> Result<HashMap<String, u64>> {
    let rows: Vec<(String, i64)> = match until {
        None => collect_with(
            store,
            "events by type",
            "SELECT event_type, count(*) FROM operator_events GROUP BY event_type",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?,
        Some(until) => collect_with(
            store,
            "events by type",
            "SELECT event_type, count(*) FROM operator_events WHERE occurred_at <= ?1 \
             GROUP BY event_type",
            [until.to_store_text()],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?,
    };
    Ok(rows
        .into_iter()
        .map(|(event_type, n)| (event_type, n.max(0) as u64))
        .collect())
}

/// One term of an adopted vocabulary document, reduced to what the report's
/// alignments read.
#[derive(Debug, Clone, PartialEq)]
pub struct VocabularyTerm {
    /// The term's local name (its IRI is the namespace plus this).
    pub local_name: String,
    /// The subject class it is minted on.
    pub subject_class: String,
    /// Its canonical form and every confirmed alias, sorted.
    pub forms: BTreeSet<String>,
    /// Its outward alignments: `(target, match strength)`.
    pub alignments: Vec<(String, String)>,
}

/// The current version of one adopted vocabulary document.
#[derive(Debug, Clone, PartialEq)]
pub struct VocabularyDocument {
    /// The document's name.
    pub name: String,
    /// Its version.
    pub version: i64,
    /// Its CURIE prefix.
    pub prefix: String,
    /// Its terms, in document order.
    pub terms: Vec<VocabularyTerm>,
}

/// The documents in force (`get_adopted_documents`): every name adopted
/// store-wide (empty `lens_name`) or with a lens the store currently adopts, in
/// name order, each at its highest materialised version. An adoption without a
/// materialised version is skipped (the reference logs a warning).
///
/// # Errors
///
/// [`Error::Query`]; [`Error::InvalidValue`] when a document's JSON-LD is not a
/// vocabulary document (the reference raises then too).
pub fn adopted_vocabularies(store: &Store) -> Result<Vec<VocabularyDocument>> {
    let adoptions: Vec<(String, String)> = collect_with(
        store,
        "vocabulary adoptions",
        "SELECT vocabulary_name, lens_name FROM vocabulary_adoptions",
        [],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    if adoptions.is_empty() {
        return Ok(Vec::new());
    }
    let lenses: BTreeSet<String> = collect_with(
        store,
        "lens adoptions",
        "SELECT lens_name FROM trust_lens_adoptions",
        [],
        |row| row.get(0),
    )?
    .into_iter()
    .collect();
    let names: BTreeSet<String> = adoptions
        .into_iter()
        .filter(|(_, lens)| lens.is_empty() || lenses.contains(lens))
        .map(|(name, _)| name)
        .collect();
    let mut documents = Vec::new();
    for name in names {
        let latest: Vec<(String, String)> = collect_with(
            store,
            "vocabulary version",
            "SELECT id, document_json FROM vocabulary_versions WHERE name = ?1 \
             ORDER BY version DESC LIMIT 1",
            [&name],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        if let Some((id, text)) = latest.into_iter().next() {
            let document = parse_document(&text).map_err(|reason| Error::InvalidValue {
                table: "vocabulary_versions",
                key: id,
                column: "document_json",
                reason,
            })?;
            documents.push(document);
        }
    }
    Ok(documents)
}

fn string_field(
    object: &serde_json::Map<String, Value>,
    key: &str,
) -> std::result::Result<String, String> {
    match object.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        other => Err(format!("{key} is missing or not a string: {other:?}")),
    }
}

/// The fields of a JSON-LD vocabulary document the report reads. Not the
/// reference's full validation (rulings, profiles and name rules are not
/// checked): documents are materialised by the reference, which validated them.
fn parse_document(text: &str) -> std::result::Result<VocabularyDocument, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(object) = value else {
        return Err("not a JSON object".to_owned());
    };
    let declared = match object.get("@type") {
        Some(Value::String(t)) => t == "ppx:VocabularyDocument",
        Some(Value::Array(types)) => types
            .iter()
            .any(|t| t.as_str() == Some("ppx:VocabularyDocument")),
        _ => false,
    };
    if !declared {
        return Err("not a vocabulary document (no @type 'ppx:VocabularyDocument')".to_owned());
    }
    let prefix = string_field(&object, "ppx:prefix")?;
    let version = object
        .get("owl:versionInfo")
        .and_then(Value::as_i64)
        .ok_or("owl:versionInfo is missing or not an integer")?;
    let head = format!("{prefix}:");
    let mut terms = Vec::new();
    let raw_terms = match object.get("ppx:terms") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(terms)) => terms.clone(),
        Some(other) => return Err(format!("ppx:terms is not a list: {other}")),
    };
    for raw in raw_terms {
        let Value::Object(term) = raw else {
            return Err("a term is not an object".to_owned());
        };
        let id = string_field(&term, "@id")?;
        let local_name = id
            .strip_prefix(&head)
            .ok_or_else(|| format!("term id {id:?} is not minted under prefix {prefix:?}"))?
            .to_owned();
        let mut forms = BTreeSet::from([string_field(&term, "skos:prefLabel")?]);
        if let Some(Value::Array(aliases)) = term.get("skos:altLabel") {
            for alias in aliases {
                forms.insert(alias.as_str().ok_or("an alias is not a string")?.to_owned());
            }
        }
        let mut alignments = Vec::new();
        if let Some(Value::Array(raw_alignments)) = term.get("ppx:alignments") {
            for alignment in raw_alignments {
                let Value::Object(alignment) = alignment else {
                    return Err("an alignment is not an object".to_owned());
                };
                alignments.push((
                    string_field(alignment, "ppx:target")?,
                    string_field(alignment, "ppx:match")?,
                ));
            }
        }
        terms.push(VocabularyTerm {
            local_name,
            subject_class: string_field(&term, "ppx:subjectClass")?,
            forms,
            alignments,
        });
    }
    Ok(VocabularyDocument {
        name: string_field(&object, "ppx:name")?,
        version,
        prefix,
        terms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_links_read_as_the_reference_reads_them() {
        assert_eq!(external_links(None), Ok(Vec::new()));
        assert_eq!(external_links(Some("{}")), Ok(Vec::new()));
        let links = external_links(Some(
            r#"[{"namespace": "wikidata", "id": "Q1"}, {"namespace": "numista", "id": "N1", "confidence": "0.25"}]"#,
        ))
        .expect("readable links");
        assert_eq!(links[0].confidence, 1.0);
        assert_eq!(links[1].confidence, 0.25);
        assert!(external_links(Some(r#"[{"id": "Q1"}]"#)).is_err());
        assert!(external_links(Some(r#"{"a": 1}"#)).is_err());
    }

    #[test]
    fn python_float_accepts_what_float_accepts() {
        assert_eq!(python_float(&Value::Bool(true)), Ok(1.0));
        assert_eq!(
            python_float(&Value::String(" -Inf ".into())),
            Ok(f64::NEG_INFINITY)
        );
        assert!(python_float(&Value::String("abc".into())).is_err());
        assert!(python_float(&Value::Null).is_err());
        // What `float()` reads beyond Rust's grammar: underscores between digits,
        // Unicode digits and spaces; U+001C is not one of them.
        assert_eq!(python_float(&Value::String("1_0".into())), Ok(10.0));
        assert_eq!(
            python_float(&Value::String("\u{3000}\u{661}.5".into())),
            Ok(1.5)
        );
        assert!(python_float(&Value::String("\u{1c}1".into())).is_err());
    }

    #[test]
    fn a_document_yields_its_forms_and_alignments() {
        let text = r#"{"@type": ["ppx:VocabularyDocument"], "ppx:name": "coins", "ppx:prefix": "cn",
            "owl:versionInfo": 2, "ppx:terms": [{"@id": "cn:weighs", "skos:prefLabel": "weigh",
            "skos:altLabel": ["mass"], "ppx:subjectClass": "Coin",
            "ppx:alignments": [{"ppx:target": "wdt:P2067", "ppx:match": "exact"}]}]}"#;
        let document = parse_document(text).expect("a document");
        assert_eq!(document.name, "coins");
        assert_eq!(document.terms[0].local_name, "weighs");
        assert_eq!(
            document.terms[0].forms.iter().collect::<Vec<_>>(),
            ["mass", "weigh"]
        );
        assert_eq!(
            document.terms[0].alignments,
            [("wdt:P2067".to_owned(), "exact".to_owned())]
        );
        assert!(parse_document(r#"{"@type": "other"}"#).is_err());
    }
}
