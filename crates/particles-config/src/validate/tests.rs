//! Validation against the schema: coercion, bounds, literals, dict
//! replacement, null sections, missing required fields, the ported validators,
//! and error collection in field order.

use super::*;
use crate::value::Value;

fn outcome(text: &str) -> Outcome {
    let node = yaml::safe_load(text)
        .expect("valid YAML")
        .unwrap_or_else(|| Node::new(NodeValue::Map(Vec::new()), Pos::File { line: 1, column: 1 }));
    validate(&node)
}

fn ok(text: &str) -> Value {
    let outcome = outcome(text);
    assert!(outcome.issues.is_empty(), "{text}: {:?}", outcome.issues);
    outcome.value.expect("valid")
}

fn issues(text: &str) -> Vec<(String, &'static str)> {
    outcome(text)
        .issues
        .into_iter()
        .map(|issue| (issue.loc.join("."), issue.kind))
        .collect()
}

fn float_at(value: &Value, key: &str) -> f64 {
    value.at(key).and_then(Value::as_f64).expect(key)
}

#[test]
fn numeric_strings_coerce_and_bounds_apply() {
    let value = ok("query:\n  similarity_weight: '0.7'\n  confidence_weight: 1e-3\n  truncation_near_count: '3.0'\n");
    assert_eq!(float_at(&value, "query.similarity_weight"), 0.7);
    // `1e-3` is a YAML string, which pydantic parses.
    assert_eq!(float_at(&value, "query.confidence_weight"), 0.001);
    assert_eq!(
        value.at("query.truncation_near_count"),
        Some(&Value::Int(Int::Small(3)))
    );
    assert_eq!(
        issues(
            "query:\n  similarity_weight: -1\n  narrative_rank_weight: 2\n  answer_max_tokens: 0\n"
        ),
        vec![
            ("query.similarity_weight".to_owned(), "greater_than_equal"),
            ("query.narrative_rank_weight".to_owned(), "less_than_equal"),
            ("query.answer_max_tokens".to_owned(), "greater_than"),
        ]
    );
    // NaN fails every bound (le is checked first); inf passes a bare `>= 0`.
    assert_eq!(
        issues("query:\n  relevance_floor: .nan\n"),
        vec![("query.relevance_floor".to_owned(), "less_than_equal")]
    );
    assert_eq!(
        float_at(
            &ok("query:\n  similarity_weight: .inf\n"),
            "query.similarity_weight"
        ),
        f64::INFINITY
    );
}

#[test]
fn bound_messages_read_as_pydantic_writes_them() {
    let outcome =
        outcome("query:\n  similarity_weight: -1\nsource_passage:\n  max_passage_chars: 100\n");
    let messages: Vec<&str> = outcome.issues.iter().map(|i| i.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "Input should be greater than or equal to 0",
            "Input should be greater than or equal to 200"
        ]
    );
    assert_eq!(
        outcome.issues[0].pos,
        Some(Pos::File {
            line: 2,
            column: 22
        })
    );
}

#[test]
fn ints_refuse_fractions_and_exponents() {
    assert_eq!(
        issues("query:\n  default_top_k: '1.5'\n  truncation_near_count: '1e1'\n  answer_max_tokens: 1.5\n"),
        vec![
            ("query.default_top_k".to_owned(), "int_parsing"),
            ("query.truncation_near_count".to_owned(), "int_parsing"),
            ("query.answer_max_tokens".to_owned(), "int_from_float"),
        ]
    );
}

#[test]
fn bools_in_odd_spellings() {
    let value = ok("query:\n  grounded_answers: 'Y'\n  candidate_cache: 0\ncontestedness:\n  badge_enabled: 'oFf'\n");
    assert_eq!(value.at("query.grounded_answers"), Some(&Value::Bool(true)));
    assert_eq!(value.at("query.candidate_cache"), Some(&Value::Bool(false)));
    assert_eq!(
        value.at("contestedness.badge_enabled"),
        Some(&Value::Bool(false))
    );
    assert_eq!(
        issues("query:\n  grounded_answers: 2\n  candidate_cache: 0.5\n"),
        vec![
            ("query.grounded_answers".to_owned(), "bool_parsing"),
            ("query.candidate_cache".to_owned(), "bool_type"),
        ]
    );
}

#[test]
fn strings_refuse_numbers_and_dates() {
    assert_eq!(
        issues("storage:\n  database_url: 12\nbuild:\n  date: 2024-01-01\n"),
        vec![
            ("storage.database_url".to_owned(), "string_type"),
            ("build.date".to_owned(), "string_type"),
        ]
    );
    assert_eq!(
        ok("build:\n  date: '  '\n").at("build.date"),
        Some(&Value::Null)
    );
}

#[test]
fn dict_values_replace_their_defaults() {
    let value = ok("content_age_decay:\n  sources:\n    X: {half_life_days: '2'}\n");
    let Some(Value::Map(sources)) = value.at("content_age_decay.sources") else {
        panic!("a map")
    };
    assert_eq!(sources.len(), 1);
    assert_eq!(float_at(&sources[0].1, "floor"), 0.1);
    let value = ok("trust:\n  source_type_domains: {}\n");
    assert_eq!(
        value.at("trust.source_type_domains"),
        Some(&Value::Map(Vec::new()))
    );
    assert_eq!(
        issues("content_age_decay:\n  sources: {X: {}}\n"),
        vec![(
            "content_age_decay.sources.X.half_life_days".to_owned(),
            "missing"
        )]
    );
    assert_eq!(
        issues("storage:\n  stores: {1: 2, a: ~}\n"),
        vec![
            ("storage.stores.1.[key]".to_owned(), "string_type"),
            ("storage.stores.1".to_owned(), "string_type"),
            ("storage.stores.a".to_owned(), "string_type"),
        ]
    );
}

#[test]
fn merged_dicts_keep_the_shipped_entries() {
    let value = ok("llm:\n  cache_read_price_multiplier_by_model: {m: 0.5}\n");
    let Some(Value::Map(entries)) = value.at("llm.cache_read_price_multiplier_by_model") else {
        panic!("a map")
    };
    assert!(entries.len() > 1);
    assert_eq!(entries.last().map(|(k, _)| k.as_str()), Some("m"));
    assert_eq!(
        issues("llm:\n  cache_read_price_multiplier_by_model: {m: -1}\n"),
        vec![(
            "llm.cache_read_price_multiplier_by_model".to_owned(),
            "value_error"
        )]
    );
}

#[test]
fn a_null_section_is_an_error_and_unknown_keys_are_ignored() {
    assert_eq!(
        issues("storage:\n"),
        vec![("storage".to_owned(), "model_type")]
    );
    let outcome =
        outcome("Query: {similarity_weight: 5}\nquery: {Similarity_weight: 5, bogus: {x: 1}}\n");
    assert!(outcome.issues.is_empty());
    let unknown: Vec<&str> = outcome.unknown.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(unknown, ["query.Similarity_weight", "query.bogus", "Query"]);
}

#[test]
fn literals_are_exact() {
    assert_eq!(
        issues("network:\n  egress: OPEN\n"),
        vec![("network.egress".to_owned(), "literal_error")]
    );
    let outcome = outcome("network:\n  egress: OPEN\n");
    assert_eq!(
        outcome.issues[0].message,
        "Input should be 'open', 'none' or 'allowlist'"
    );
}

#[test]
fn errors_in_every_section_are_collected_in_field_order() {
    let found = issues("wiki:\n  layer_b_retry_enabled: maybe\nstorage:\n  max_page_size: 0\nquery:\n  similarity_weight: x\n");
    let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "storage.max_page_size",
            "query.similarity_weight",
            "wiki.layer_b_retry_enabled"
        ]
    );
}

#[test]
fn ported_validators() {
    assert_eq!(
        issues("network:\n  egress: none\n  allow: [{host: a}]\n"),
        vec![("network".to_owned(), "value_error")]
    );
    let value = ok("network:\n  egress: allowlist\n  allow: [{host: ' Ex.ORG '}]\napi:\n  allowed_hosts: [' A.b ']\n");
    assert_eq!(
        value.at("api.allowed_hosts"),
        Some(&Value::List(vec![Value::Str("a.b".to_owned())]))
    );
    assert_eq!(
        issues("confidence:\n  uncalibrated_cap:\n    sources: [DERIVED]\n"),
        vec![(
            "confidence.uncalibrated_cap.sources".to_owned(),
            "value_error"
        )]
    );
    assert_eq!(
        issues("subjects:\n  wikidata_link_suppress_threshold: 0.1\n"),
        vec![("subjects".to_owned(), "value_error")]
    );
    assert_eq!(
        issues("llm:\n  default: {provider: nope}\n"),
        vec![("llm".to_owned(), "value_error")]
    );
    assert_eq!(
        issues("mcp:\n  write: {enabled_stores: [a]}\nreconciliation:\n  per_store: {a: single}\n"),
        vec![(String::new(), "value_error")]
    );
    let value = ok("llm:\n  default: {provider: local}\n");
    let Some(Value::Map(providers)) = value.at("llm.providers") else {
        panic!("a map")
    };
    assert_eq!(providers[0].0, "local");
}
