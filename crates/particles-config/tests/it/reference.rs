//! The differential test against the reference: generated config files (and
//! the committed regressions) loaded by the reference's own `validate_config()`
//! in one Python process, and by `particles_config::load`, with the verdicts,
//! every error location and every effective value compared (floats bit-equal).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use particles_config::{load, Environment, Error};

use crate::generate::{self, Rng};

/// Generated documents per run; `PARTICLES_CONFIG_DIFF_CASES` raises it, and
/// `PARTICLES_CONFIG_DIFF_SEED` moves the seed, for longer hunts.
const N_GENERATED: usize = 600;
const SEED: u64 = 0x5EED_C0F1_6000_0001;

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The reference's interpreter, or `None` (skip) when it is not installed; see
/// `particles_testkit::reference_python`.
pub fn reference_python() -> Option<PathBuf> {
    particles_testkit::reference_python()
}

struct Case {
    label: String,
    yaml: String,
    env: BTreeMap<String, String>,
}

fn cases() -> Vec<Case> {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/schema.json")).expect("schema.json parses");
    let mut rng = Rng::new(knob("PARTICLES_CONFIG_DIFF_SEED", SEED));
    let n_generated = usize::try_from(knob("PARTICLES_CONFIG_DIFF_CASES", N_GENERATED as u64))
        .unwrap_or(N_GENERATED);
    let mut out: Vec<Case> = (0..n_generated)
        .map(|index| {
            let case = generate::case(&mut rng, &schema);
            Case {
                label: format!("generated #{index}"),
                yaml: case.yaml,
                env: case.env,
            }
        })
        .collect();
    let probes = [
        ("query", "similarity_weight"),
        ("query", "default_top_k"),
        ("query", "grounded_answers"),
        ("embeddings", "normalization"),
    ];
    for scalar in generate::TRICKY_SCALARS {
        for (section, key) in probes {
            out.push(Case {
                label: format!("scalar {scalar:?} in {section}.{key}"),
                yaml: format!("{section}:\n  {key}: {scalar}\n"),
                env: BTreeMap::new(),
            });
        }
    }
    for (index, yaml) in generate::TRICKY_DOCUMENTS.iter().enumerate() {
        out.push(Case {
            label: format!("document #{index}"),
            yaml: (*yaml).to_owned(),
            env: BTreeMap::new(),
        });
    }
    let regressions: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("regressions.json")).expect("regressions.json parses");
    for (index, regression) in regressions.iter().enumerate() {
        out.push(Case {
            label: format!(
                "regression #{index} ({})",
                regression["note"].as_str().unwrap_or_default()
            ),
            yaml: regression["yaml"].as_str().unwrap_or_default().to_owned(),
            env: regression["env"]
                .as_object()
                .map(|map| {
                    map.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
        });
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
    use serde_json::json;
    let q = &config.query;
    let opt = |value: &Option<String>| value.as_ref().map_or(serde_json::Value::Null, |v| json!(v));
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
        ("engine.base_url", opt(&config.engine.base_url)),
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
        ("build.date", opt(&config.build.date)),
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

fn compare(
    case: &Case,
    file: &Path,
    verdict: &serde_json::Value,
    home: &Path,
) -> Result<(), String> {
    let mut vars = case.env.clone();
    vars.insert("HOME".to_owned(), home.display().to_string());
    vars.insert("PARTICLES_CONFIG".to_owned(), file.display().to_string());
    let env = Environment::new(vars, home);
    let ours = load(None, &env);
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
fn config_verdicts_match_the_reference() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let cases = cases();
    let mut manifest = Vec::new();
    let mut files = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let file = dir.path().join(format!("case-{index}.yaml"));
        std::fs::write(&file, &case.yaml).expect("write case");
        manifest.push(serde_json::json!({"file": file, "env": case.env}));
        files.push(file);
    }
    let manifest_path = dir.path().join("manifest.json");
    let out_path = dir.path().join("verdicts.json");
    std::fs::write(
        &manifest_path,
        serde_json::to_string(&manifest).expect("json"),
    )
    .expect("write");
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/oracle.py");
    let status = Command::new(&python)
        .arg(&oracle)
        .arg(&manifest_path)
        .arg(&out_path)
        .status()
        .expect("run the reference");
    assert!(status.success(), "the oracle failed");
    let verdicts: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&out_path).expect("verdicts")).expect("json");
    assert_eq!(verdicts.len(), cases.len());
    let mut failures = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for ((case, file), verdict) in cases.iter().zip(&files).zip(&verdicts) {
        *counts
            .entry(verdict["verdict"].as_str().unwrap_or("?").to_owned())
            .or_default() += 1;
        if let Err(why) = compare(case, file, verdict, &home) {
            failures.push(format!(
                "{}: {why}\n--- env {:?}\n{}---",
                case.label, case.env, case.yaml
            ));
        }
    }
    eprintln!(
        "compared {} documents with the reference: {counts:?}",
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} documents disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
