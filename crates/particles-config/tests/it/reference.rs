//! The differential fuzz of the configuration against the reference: generated
//! config documents (seeded, grammar-aware, from `generate`), a corpus of tricky
//! YAML 1.1 scalars and documents, and the committed regressions
//! (`tests/fuzz-regressions/config.jsonl`), loaded by the reference's own
//! `validate_config()` in one Python process (`tests/reference/fuzz_oracle.py
//! config`, batched through `particles_testkit::fuzz`) and by `load_from_str`;
//! the verdicts, every error location and every effective value (floats
//! bit-equal) must agree. `cargo xtask fuzz` runs it with fresh seeds for as long
//! as it is given.

use std::path::Path;

use particles_config::{load_from_str, Environment, Error};
use particles_testkit::fuzz;
use proptest::prelude::*;

use crate::generate::{self, Case, Rng};

fn cases() -> impl Strategy<Value = Case> {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/schema.json")).expect("schema.json parses");
    // The generator draws from its own seeded stream; a seed does not shrink
    // into a smaller document, so disagreements are reported as generated.
    any::<u64>()
        .prop_map(move |seed| generate::case(&mut Rng::new(seed), &schema))
        .no_shrink()
}

/// The tricky scalars in a float, an int, a bool and a str field, and the
/// tricky documents.
fn corpus() -> Vec<Case> {
    let probes = [
        ("query", "similarity_weight"),
        ("query", "default_top_k"),
        ("query", "grounded_answers"),
        ("embeddings", "normalization"),
    ];
    let mut out = Vec::new();
    for scalar in generate::TRICKY_SCALARS {
        for (section, key) in probes {
            out.push(Case::new(format!("{section}:\n  {key}: {scalar}\n")));
        }
    }
    for yaml in generate::TRICKY_DOCUMENTS {
        out.push(Case::new((*yaml).to_owned()));
    }
    out
}

/// Python's tagged scalar against our JSON value.
fn same_scalar(python: &str, ours: &serde_json::Value) -> bool {
    let (tag, text) = python.split_at(2);
    match (tag, ours) {
        ("s:", serde_json::Value::String(s)) => s == text,
        ("i:", serde_json::Value::Number(n)) => n.to_string() == text,
        ("i:", serde_json::Value::String(s)) => s == text,
        ("f:", value) => {
            let Ok(expected) = text.parse::<f64>() else {
                return false;
            };
            let actual = match value {
                serde_json::Value::Number(n) if n.is_f64() => n.as_f64().unwrap_or(f64::NAN),
                serde_json::Value::String(s) => match s.as_str() {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "nan" => f64::NAN,
                    _ => return false,
                },
                _ => return false,
            };
            (expected.is_nan() && actual.is_nan()) || expected.to_bits() == actual.to_bits()
        }
        _ => false,
    }
}

fn same_value(python: &serde_json::Value, ours: &serde_json::Value) -> bool {
    match (python, ours) {
        (serde_json::Value::Null, serde_json::Value::Null) => true,
        (serde_json::Value::Bool(a), serde_json::Value::Bool(b)) => a == b,
        (serde_json::Value::String(tagged), value) => same_scalar(tagged, value),
        (serde_json::Value::Array(a), serde_json::Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
        }
        _ => false,
    }
}

fn float(value: f64) -> serde_json::Value {
    serde_json::Number::from_f64(value).map_or_else(
        || {
            let text = if value.is_nan() {
                "nan"
            } else if value > 0.0 {
                "inf"
            } else {
                "-inf"
            };
            serde_json::Value::String(text.to_owned())
        },
        serde_json::Value::Number,
    )
}

/// The typed view, key by key, to compare with the reference's dump: a field
/// read from the wrong key shows here even where two defaults coincide.
fn typed_values(config: &particles_config::Config) -> Vec<(&'static str, serde_json::Value)> {
    let mut values = query_values(config);
    values.extend(service_values(config));
    values.extend(policy_values(config));
    values
}

/// An optional string as JSON (`null` when absent).
fn optional(value: &Option<String>) -> serde_json::Value {
    value
        .as_ref()
        .map_or(serde_json::Value::Null, |v| serde_json::json!(v))
}

/// The `query` section's typed values.
fn query_values(config: &particles_config::Config) -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    let q = &config.query;
    vec![
        ("query.default_top_k", json!(q.default_top_k)),
        (
            "query.default_min_confidence",
            float(q.default_min_confidence),
        ),
        (
            "query.equivalence_threshold",
            float(q.equivalence_threshold),
        ),
        ("query.similarity_weight", float(q.similarity_weight)),
        ("query.confidence_weight", float(q.confidence_weight)),
        (
            "query.narrative_rank_weight",
            float(q.narrative_rank_weight),
        ),
        ("query.truncation_min_gap", float(q.truncation_min_gap)),
        (
            "query.truncation_near_margin",
            float(q.truncation_near_margin),
        ),
        (
            "query.truncation_near_count",
            json!(q.truncation_near_count),
        ),
        ("query.relevance_floor", float(q.relevance_floor)),
        ("query.answer_max_tokens", json!(q.answer_max_tokens)),
        (
            "query.answer_retry_max_tokens",
            json!(q.answer_retry_max_tokens),
        ),
        ("query.grounded_answers", json!(q.grounded_answers)),
        ("query.candidate_cache", json!(q.candidate_cache)),
        (
            "query.candidate_cache_freeze_rows",
            json!(q.candidate_cache_freeze_rows),
        ),
    ]
}

/// The service sections' typed values: storage, contestedness, source passages,
/// the engine client, the API, MCP, the build, embeddings and the CLI.
fn service_values(config: &particles_config::Config) -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        ("storage.database_url", json!(config.storage.database_url)),
        ("storage.max_page_size", json!(config.storage.max_page_size)),
        (
            "storage.write_lock.enabled",
            json!(config.storage.write_lock_enabled),
        ),
        (
            "contestedness.callout_threshold",
            float(config.contestedness.callout_threshold),
        ),
        (
            "contestedness.badge_enabled",
            json!(config.contestedness.badge_enabled),
        ),
        (
            "source_passage.locate_min_overlap",
            float(config.source_passage.locate_min_overlap),
        ),
        (
            "source_passage.max_passage_chars",
            json!(config.source_passage.max_passage_chars),
        ),
        (
            "source_passage.query_show_limit",
            json!(config.source_passage.query_show_limit),
        ),
        ("engine.base_url", optional(&config.engine.base_url)),
        (
            "engine.timeout_seconds",
            float(config.engine.timeout_seconds),
        ),
        (
            "engine.allow_plaintext_token",
            json!(config.engine.allow_plaintext_token),
        ),
        (
            "api.max_request_body_bytes",
            json!(config.api.max_request_body_bytes),
        ),
        ("api.bind_host", json!(config.api.bind_host)),
        (
            "api.rate_limit_per_minute",
            json!(config.api.rate_limit_per_minute),
        ),
        (
            "api.require_auth_for_reads",
            json!(config.api.require_auth_for_reads),
        ),
        ("api.trusted_proxies", json!(config.api.trusted_proxies)),
        ("api.allowed_hosts", json!(config.api.allowed_hosts)),
        ("api.allowed_origins", json!(config.api.allowed_origins)),
        (
            "mcp.rate_limit_per_minute",
            json!(config.mcp.rate_limit_per_minute),
        ),
        ("build.date", optional(&config.build.date)),
        ("embeddings.dim", json!(config.embeddings.dim)),
        (
            "embeddings.normalization",
            json!(config.embeddings.normalization),
        ),
        (
            "embeddings.progress_bars",
            json!(config.embeddings.progress_bars),
        ),
        ("cli.heartbeat_seconds", float(config.cli.heartbeat_seconds)),
        (
            "cli.warn_unused_config",
            json!(config.cli.warn_unused_config),
        ),
    ]
}

/// The ranking policy's typed values (subjects, consolidation, confidence and
/// conformance caps, document precedence, the owner lens), then the LLM default
/// and the network's egress.
fn policy_values(config: &particles_config::Config) -> Vec<(&'static str, serde_json::Value)> {
    use serde_json::json;
    vec![
        (
            "subjects.wikidata_link_suppress_threshold",
            float(config.wikidata_link_suppress_threshold),
        ),
        (
            "consolidation.abstraction.stale_support_discount",
            float(config.stale_support_discount),
        ),
        (
            "confidence.uncalibrated_cap.enabled",
            json!(config.uncalibrated_cap.enabled),
        ),
        (
            "confidence.uncalibrated_cap.cap_value",
            float(config.uncalibrated_cap.cap_value),
        ),
        (
            "confidence.uncalibrated_cap.sources",
            json!(config.uncalibrated_cap.sources),
        ),
        (
            "conformance.trust_cap.enabled",
            json!(config.conformance_trust_cap.enabled),
        ),
        (
            "conformance.trust_cap.cap_value",
            float(config.conformance_trust_cap.cap_value),
        ),
        (
            "conformance.trust_cap.exempt",
            json!(config.conformance_trust_cap.exempt),
        ),
        (
            "document_precedence.rank_penalty",
            float(config.document_precedence.rank_penalty),
        ),
        ("owner_lens.rank_lift", float(config.owner_lens.rank_lift)),
        ("llm.default.provider", json!(config.llm.default.provider)),
        ("llm.default.model", json!(config.llm.default.model)),
        (
            "network.egress",
            json!(match config.network.egress {
                particles_config::Egress::Open => "open",
                particles_config::Egress::None => "none",
                particles_config::Egress::Allowlist => "allowlist",
            }),
        ),
    ]
}

fn check(case: &Case, verdict: &serde_json::Value) -> Result<(), String> {
    let home = Path::new("/nonexistent-home");
    let mut vars = case.env.clone();
    vars.insert("HOME".to_owned(), home.display().to_string());
    let env = Environment::new(vars, home);
    let ours = load_from_str(&case.yaml, "config.yaml", &env);
    let expected = verdict["verdict"].as_str().unwrap_or_default();
    match (expected, &ours) {
        ("ok", Ok(loaded)) => {
            let dump = &verdict["dump"];
            for entry in loaded.entries() {
                let python = entry
                    .key
                    .split('.')
                    .try_fold(dump, |value, key| value.get(key))
                    .ok_or_else(|| format!("{} is missing from the reference's dump", entry.key))?;
                if !same_value(python, &entry.value) {
                    return Err(format!(
                        "{}: reference {python}, ours {}",
                        entry.key, entry.value
                    ));
                }
            }
            for (key, ours) in typed_values(loaded.config()) {
                let python = key
                    .split('.')
                    .try_fold(dump, |value, key| value.get(key))
                    .ok_or_else(|| format!("typed {key} is missing from the reference's dump"))?;
                // Typed integers are i64 and saturate; Python's are unbounded.
                let saturated = python
                    .as_str()
                    .and_then(|t| t.strip_prefix("i:"))
                    .is_some_and(|t| {
                        t.parse::<i64>().is_err()
                            && ours
                                == serde_json::json!(if t.starts_with('-') {
                                    i64::MIN
                                } else {
                                    i64::MAX
                                })
                    });
                if !saturated && !same_value(python, &ours) {
                    return Err(format!("typed {key}: reference {python}, ours {ours}"));
                }
            }
            Ok(())
        }
        ("invalid", Err(Error::Invalid { errors, .. })) => {
            let theirs: Vec<(String, String)> = verdict["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|pair| {
                    (
                        pair[0].as_str().unwrap_or_default().to_owned(),
                        pair[1].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let mine: Vec<(String, String)> = errors
                .0
                .iter()
                .map(|e| (e.key.clone(), e.kind.clone()))
                .collect();
            if theirs == mine {
                Ok(())
            } else {
                Err(format!(
                    "errors differ:\n  reference {theirs:?}\n  ours      {mine:?}"
                ))
            }
        }
        ("yaml", Err(Error::Yaml { line, .. })) => {
            // The line PyYAML's mark names, when it has one, is the line we name.
            match verdict["line"].as_u64() {
                Some(theirs) if usize::try_from(theirs).ok() != Some(*line) => Err(format!(
                    "YAML error at line {line}, the reference says line {theirs}"
                )),
                _ => Ok(()),
            }
        }
        ("env", Err(Error::EnvIntoNonMapping { .. })) => Ok(()),
        _ => Err(format!(
            "verdicts differ: reference {} {}, ours {}",
            expected,
            verdict
                .get("errors")
                .map(ToString::to_string)
                .unwrap_or_default(),
            match &ours {
                Ok(_) => "ok".to_owned(),
                Err(error) => error.to_string(),
            }
        )),
    }
}

#[test]
fn differential() {
    fuzz::run(fuzz::Target {
        decoder: "config",
        strategy: cases(),
        corpus: corpus(),
        regressions: include_str!("../fuzz-regressions/config.jsonl"),
        check,
    });
}
