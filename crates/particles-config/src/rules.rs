//! The reference's field and model validators that a type cannot express,
//! ported by name (`rules` and `validators` in `schema.json`).
//!
//! A rule returns the reference's `ValueError` text; pydantic reports it as
//! `Value error, <text>` at the field (or model) location.

use crate::{net, pyfmt, schema::Schema, value::Value, yaml::Int};

const CALIBRATION_SOURCES: [&str; 4] = [
    "AGENT_ASSERTED",
    "CALIBRATED_BENCHMARK",
    "EXTRACTOR_DIRECT",
    "HUMAN_REVIEW",
];

fn number_text(value: &Value) -> String {
    match value {
        Value::Float(value) => pyfmt::float_repr(*value),
        Value::Int(value) => value.to_string(),
        Value::Bool(value) => if *value { "True" } else { "False" }.to_owned(),
        _ => "?".to_owned(),
    }
}

fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::List(items) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Runs an `after` field validator on a validated value; `key` is the field's
/// dotted path.
pub(crate) fn field_rule(rule: &str, key: &str, value: &mut Value) -> Result<(), String> {
    match rule {
        // `before` rules, already applied to the raw value.
        "blank_is_none" | "merge_over_default" => Ok(()),
        "values_ge_0" | "values_gt_0" => values_positive(key, value, rule == "values_gt_0"),
        "increasing_positive" => increasing_positive(value),
        "increasing_unit" => increasing_unit(value),
        "calibration_sources" => calibration_sources(value),
        "egress_host" => egress_host(value),
        "allowed_hosts" => allowed_hosts(value),
        "allowed_origins" => allowed_origins(value),
        "trusted_proxies" => trusted_proxies(value),
        other => unreachable!("schema.json names a field rule `{other}` this crate does not know"),
    }
}

/// `values_ge_0` / `values_gt_0` (`strict`): every value of a map is at least
/// (above) 0.
fn values_positive(key: &str, value: &Value, strict: bool) -> Result<(), String> {
    // The memory benchmark's messages name the key without its section.
    let shown = key.strip_prefix("benchmark_memory.").unwrap_or(key);
    let Value::Map(entries) = value else {
        return Ok(());
    };
    for (name, item) in entries.iter() {
        let number = item.as_f64().unwrap_or(f64::NAN);
        let bad = if strict { number <= 0.0 } else { number < 0.0 };
        if bad {
            let relation = if strict { ">" } else { ">=" };
            return Err(format!(
                "{shown}[{}] must be {relation} 0, got {}",
                pyfmt::str_repr(name),
                number_text(item)
            ));
        }
    }
    Ok(())
}

/// `increasing_positive`: checkpoints, non-empty, positive, strictly increasing.
fn increasing_positive(value: &Value) -> Result<(), String> {
    let Value::List(items) = value else {
        return Ok(());
    };
    let numbers: Vec<i128> = items
        .iter()
        .map(|item| match item {
            Value::Int(Int::Small(value)) => *value,
            _ => i128::MAX,
        })
        .collect();
    let ok = !numbers.is_empty()
        && numbers.iter().all(|n| *n > 0)
        && numbers.windows(2).all(|pair| pair[0] < pair[1]);
    if ok {
        Ok(())
    } else {
        Err("checkpoints must be non-empty, positive, strictly increasing".to_owned())
    }
}

/// `increasing_unit`: floors, non-empty, within [0, 1], strictly increasing.
fn increasing_unit(value: &Value) -> Result<(), String> {
    let Value::List(items) = value else {
        return Ok(());
    };
    let numbers: Vec<f64> = items
        .iter()
        .map(|item| item.as_f64().unwrap_or(f64::NAN))
        .collect();
    let ok = !numbers.is_empty()
        && numbers.iter().all(|f| (0.0..=1.0).contains(f))
        && numbers.windows(2).all(|pair| pair[0] < pair[1]);
    if ok {
        Ok(())
    } else {
        Err("floors must be non-empty, within [0, 1], strictly increasing".to_owned())
    }
}

/// `calibration_sources`: every name a calibration source.
fn calibration_sources(value: &Value) -> Result<(), String> {
    let unknown: Vec<&str> = strings(value)
        .into_iter()
        .filter(|source| !CALIBRATION_SOURCES.contains(source))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(format!(
        "confidence.uncalibrated_cap.sources contains unknown calibration source(s) {}; valid values are {}",
        pyfmt::str_list_repr(unknown),
        pyfmt::str_list_repr(CALIBRATION_SOURCES)
    ))
}

/// `egress_host`: a network.allow host, an IP literal, a CIDR block or an exact
/// host name; stored normalised.
fn egress_host(value: &mut Value) -> Result<(), String> {
    let Value::Str(host) = value else {
        return Ok(());
    };
    let normalized = particles_pytext::lower(particles_pytext::strip(host));
    if normalized.is_empty() {
        return Err("network.allow entry needs a host".to_owned());
    }
    if normalized.contains('/') {
        if net::ip_network(&normalized).is_none() {
            return Err(format!(
                "network.allow host {} is not a CIDR block",
                pyfmt::str_repr(&normalized)
            ));
        }
    } else if normalized.contains(['*', '?', ' ', ':', '@'])
        && net::ip_address(normalized.trim_matches(['[', ']'])).is_none()
    {
        return Err(format!(
            "network.allow host {} is not an IP literal, a CIDR block or an exact host name (wildcards are not supported; put the port in 'port')",
            pyfmt::str_repr(&normalized)
        ));
    }
    *host = normalized;
    Ok(())
}

/// `allowed_hosts`: bare host names (or `*.` suffixes); stored normalised.
fn allowed_hosts(value: &mut Value) -> Result<(), String> {
    let Value::List(items) = value else {
        return Ok(());
    };
    for item in items.iter_mut() {
        let Value::Str(entry) = item else { continue };
        let host = particles_pytext::lower(particles_pytext::strip(entry));
        let bare = host.strip_prefix("*.").unwrap_or(&host);
        let forbidden: &[char] = if bare.starts_with('[') && bare.ends_with(']') {
            &['/', '@', ' ']
        } else {
            &['/', ':', '@', ' ']
        };
        if bare.is_empty() || bare.contains('*') || bare.contains(forbidden) {
            return Err(format!(
                "api.allowed_hosts entry {} is not a host name; give a bare name with no scheme or port, e.g. engine.example.org or *.tailnet.example",
                pyfmt::str_repr(entry)
            ));
        }
        *entry = host;
    }
    Ok(())
}

/// `allowed_origins`: each entry `scheme://host[:port]`.
fn allowed_origins(value: &Value) -> Result<(), String> {
    for entry in strings(value) {
        let parts = net::urlsplit(particles_pytext::strip(entry))?;
        let bad = parts.scheme.is_empty()
            || parts.netloc.is_empty()
            || entry.contains('*')
            || !matches!(parts.path.as_str(), "" | "/")
            || !parts.query.is_empty()
            || !parts.fragment.is_empty();
        if bad {
            return Err(format!(
                "api.allowed_origins entry {} is not an origin; give scheme://host[:port], e.g. https://notes.example.org",
                pyfmt::str_repr(entry)
            ));
        }
    }
    Ok(())
}

/// `trusted_proxies`: IPs or CIDR blocks, neither everything nor loopback.
fn trusted_proxies(value: &Value) -> Result<(), String> {
    for entry in strings(value) {
        let trimmed = particles_pytext::strip(entry);
        let Some(network) = net::ip_network(trimmed) else {
            return Err(format!(
                "api.trusted_proxies entry {} is not a valid IP or CIDR: {}",
                pyfmt::str_repr(entry),
                net::network_error(trimmed)
            ));
        };
        if network.prefix == 0 {
            return Err(format!(
                "api.trusted_proxies entry {} is the everything-range (prefix /0); a reverse proxy is never the entire internet — trusting it re-enables X-Forwarded-For spoofing. List the specific proxy IPs / CIDRs instead.",
                pyfmt::str_repr(entry)
            ));
        }
        if network.is_loopback() {
            return Err(format!(
                "api.trusted_proxies entry {} is a loopback range; a reverse proxy is never loopback, and trusting it re-enables X-Forwarded-For spoofing. List the specific proxy IPs / CIDRs.",
                pyfmt::str_repr(entry)
            ));
        }
    }
    Ok(())
}

/// Runs an `after` model validator on a validated model.
pub(crate) fn model_rule(
    rule: &str,
    model: &mut Value,
    schema: &Schema,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    match rule {
        "network_posture" => {
            let none = model.get("egress").and_then(Value::as_str) == Some("none");
            let allows =
                matches!(model.get("allow"), Some(Value::List(items)) if !items.is_empty());
            if none && allows {
                return Err("network.egress is 'none' but network.allow lists destinations; use egress: allowlist to permit them, or empty the list".to_owned());
            }
            Ok(())
        }
        "abstain_at_most_suppress" => {
            let abstain = model.get("external_link_abstain_threshold");
            let suppress = model.get("wikidata_link_suppress_threshold");
            let (Some(abstain), Some(suppress)) = (abstain, suppress) else {
                return Ok(());
            };
            let greater = match (abstain.as_f64(), suppress.as_f64()) {
                (Some(a), Some(s)) => a > s,
                _ => false,
            };
            if greater {
                return Err(format!(
                    "external_link_abstain_threshold must be <= wikidata_link_suppress_threshold (abstain <= suppress): {} > {}",
                    number_text(abstain),
                    number_text(suppress)
                ));
            }
            Ok(())
        }
        "llm_provider_wiring" => llm_provider_wiring(model, schema, warnings),
        "write_stores_multi" => {
            let enabled: Vec<String> = model
                .at("mcp.write.enabled_stores")
                .map(|value| strings(value).into_iter().map(str::to_owned).collect())
                .unwrap_or_default();
            for handle in enabled {
                let mode = model
                    .at("reconciliation.per_store")
                    .and_then(|per_store| per_store.get(&handle))
                    .and_then(Value::as_str);
                if mode == Some("single") {
                    let shown = pyfmt::str_repr(&handle);
                    return Err(format!(
                        "MCP write-enabled store {shown} resolves to reconciliation store_mode 'single'; write stores must reconcile in 'multi' . Remove the reconciliation.per_store override or set reconciliation.per_store[{shown}] = 'multi'."
                    ));
                }
            }
            Ok(())
        }
        other => unreachable!("schema.json names a model rule `{other}` this crate does not know"),
    }
}

/// `LLMConfig._validate_provider_wiring`: fold the deprecated `llm.local` into
/// `providers`, make sure a `local` entry exists, reserve `anthropic`, and refuse
/// a selection naming a provider that is not there.
fn llm_provider_wiring(
    model: &mut Value,
    schema: &Schema,
    warnings: &mut Vec<String>,
) -> Result<(), String> {
    let local = model.get("local").cloned().unwrap_or(Value::Null);
    let compiled_local = Value::Map(
        schema
            .model("OpenAICompatProviderConfig")
            .fields
            .iter()
            .map(|field| (field.name.clone(), Value::from_json(&field.default)))
            .collect(),
    );
    if local != Value::Null {
        warnings.push(
            "config: 'llm.local' is deprecated and will be removed in a future release. Move the block to 'llm.providers.local'.".to_owned(),
        );
    }
    if let Some(Value::Map(providers)) = model.get_mut("providers") {
        if !providers.iter().any(|(name, _)| name == "local") {
            let entry = if local == Value::Null {
                compiled_local
            } else {
                local
            };
            providers.push(("local".to_owned(), entry));
        }
        if providers.iter().any(|(name, _)| name == "anthropic") {
            return Err("'anthropic' is a reserved provider name (the native SDK adapter) and cannot appear in llm.providers; pick another name for an OpenAI-compatible endpoint".to_owned());
        }
    }
    let provider_names: Vec<String> = match model.get("providers") {
        Some(Value::Map(providers)) => providers.iter().map(|(name, _)| name.clone()).collect(),
        _ => Vec::new(),
    };
    let selection_fields: Vec<&str> = schema
        .model("LLMConfig")
        .fields
        .iter()
        .filter(|field| {
            let ty = &field.ty;
            let inner = if ty.kind == crate::schema::Kind::Optional {
                ty.child()
            } else {
                ty
            };
            inner.model.as_deref() == Some("ProviderSelection")
        })
        .map(|field| field.name.as_str())
        .collect();
    for field in selection_fields {
        let Some(selection) = model.get(field) else {
            continue;
        };
        let Some(provider) = selection.get("provider").and_then(Value::as_str) else {
            continue;
        };
        if provider != "anthropic" && !provider_names.iter().any(|name| name == provider) {
            return Err(format!(
                "llm.{field}.provider {} is neither 'anthropic' nor a key of llm.providers",
                pyfmt::str_repr(provider)
            ));
        }
    }
    Ok(())
}
