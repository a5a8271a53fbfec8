//! What the reference does to the loaded mapping before validation: legacy key
//! migrations (`_migrate_legacy_keys`), then environment overrides
//! (`_ENV_OVERRIDES`, present-even-if-empty applies).

use std::collections::BTreeMap;

use crate::{
    schema::Schema,
    yaml::{self, keys_equal, Entry, Int, Node, NodeValue, Pos},
};

fn empty_map(pos: Pos) -> Node {
    Node::new(NodeValue::Map(Vec::new()), pos)
}

/// `raw.setdefault(key, {})`, returning the value (which may not be a mapping).
fn setdefault<'a>(entries: &'a mut Vec<Entry>, key: &str, pos: &Pos) -> &'a mut Node {
    if yaml::get(entries, key).is_none() {
        yaml::set(entries, key, empty_map(pos.clone()));
    }
    &mut yaml::get_mut(entries, key)
        .expect("the key was just inserted")
        .value
}

fn is_null(node: &Node) -> bool {
    matches!(node.value, NodeValue::Null)
}

/// The six migrations of `_migrate_legacy_keys`, in the reference's order. Each
/// moves a legacy key only when its new home is unset, and leaves a warning.
pub(crate) fn migrate_legacy_keys(raw: &mut Vec<Entry>, warnings: &mut Vec<String>) {
    migrate_co_evidential_threshold(raw, warnings);
    migrate_llm_model_keys(raw, warnings);
    migrate_query_answer_max_tokens(raw, warnings);
    migrate_shared_estimate_keys(raw, warnings);
    migrate_audit_output_keys(raw, warnings);
    drop_retired_agent_extraction_keys(raw, warnings);
}

fn migrate_co_evidential_threshold(raw: &mut Vec<Entry>, warnings: &mut Vec<String>) {
    let Some(lint) = yaml::get_mut(raw, "lint").and_then(|entry| entry.value.as_map_mut()) else {
        return;
    };
    let Some(legacy) = yaml::pop(lint, "co_evidential_candidate_threshold") else {
        return;
    };
    if is_null(&legacy) {
        return;
    }
    let pos = legacy.pos.clone();
    let links = setdefault(raw, "links_suggest", &pos);
    if let Some(links) = links.as_map_mut() {
        if yaml::get(links, "candidate_threshold").is_none() {
            yaml::set(links, "candidate_threshold", legacy);
        }
    }
    warnings.push("config: 'lint.co_evidential_candidate_threshold' is deprecated  and will be removed in a future release. Use 'links_suggest.candidate_threshold' instead.".to_owned());
}

fn migrate_llm_model_keys(raw: &mut Vec<Entry>, warnings: &mut Vec<String>) {
    for (section, purpose) in [("extraction", "default"), ("wiki", "synthesis")] {
        let Some(entries) = yaml::get_mut(raw, section).and_then(|entry| entry.value.as_map_mut())
        else {
            continue;
        };
        let Some(legacy) = yaml::pop(entries, "model") else {
            continue;
        };
        if is_null(&legacy) {
            continue;
        }
        let pos = legacy.pos.clone();
        let Some(llm) = setdefault(raw, "llm", &pos).as_map_mut() else {
            continue;
        };
        if let Some(target) = setdefault(llm, purpose, &pos).as_map_mut() {
            if yaml::get(target, "model").is_none() {
                yaml::set(target, "model", legacy);
            }
        }
        warnings.push(format!(
            "config: '{section}.model' is deprecated and will be removed in a future release. Use 'llm.{purpose}.model' instead."
        ));
    }
}

fn migrate_query_answer_max_tokens(raw: &mut Vec<Entry>, warnings: &mut Vec<String>) {
    let Some(extraction) =
        yaml::get_mut(raw, "extraction").and_then(|entry| entry.value.as_map_mut())
    else {
        return;
    };
    let Some(legacy) = yaml::pop(extraction, "query_max_tokens") else {
        return;
    };
    if is_null(&legacy) {
        return;
    }
    let pos = legacy.pos.clone();
    if let Some(query) = setdefault(raw, "query", &pos).as_map_mut() {
        if yaml::get(query, "answer_max_tokens").is_none() {
            yaml::set(query, "answer_max_tokens", legacy);
        }
    }
    warnings.push("config: 'extraction.query_max_tokens' is deprecated and will be removed in a future release. Use 'query.answer_max_tokens' instead — note the default rose from 1024 to 4096, because an extended-thinking model spends its thinking tokens from this same budget and 1024 left it with none for the answer.".to_owned());
}

fn migrate_shared_estimate_keys(raw: &mut Vec<Entry>, warnings: &mut Vec<String>) {
    let moves = [
        (
            "benchmark_memory",
            "price_per_mtok",
            "llm",
            "price_per_mtok",
        ),
        (
            "benchmark_memory",
            "batch_discount",
            "llm",
            "batch_discount",
        ),
        (
            "benchmark_rot",
            "estimate_extraction_prompt_overhead_tokens",
            "extraction",
            "estimate_prompt_overhead_tokens",
        ),
    ];
    for (old_section, old_key, new_section, new_key) in moves {
        let Some(section) =
            yaml::get_mut(raw, old_section).and_then(|entry| entry.value.as_map_mut())
        else {
            continue;
        };
        let Some(legacy) = yaml::pop(section, old_key) else {
            continue;
        };
        let pos = legacy.pos.clone();
        if let Some(target) = setdefault(raw, new_section, &pos).as_map_mut() {
            let current = yaml::get(target, new_key).map(|entry| entry.value.clone());
            match (&legacy.value, current.as_ref().map(|node| &node.value)) {
                (NodeValue::Map(old), Some(NodeValue::Map(new))) => {
                    // `{**legacy, **current}`: legacy order, current values win.
                    let mut merged = old.clone();
                    for entry in new {
                        match merged
                            .iter_mut()
                            .find(|e| keys_equal(&e.key.value, &entry.key.value))
                        {
                            Some(slot) => slot.value = entry.value.clone(),
                            None => merged.push(entry.clone()),
                        }
                    }
                    let node = Node::new(NodeValue::Map(merged), pos.clone());
                    yaml::set(target, new_key, node);
                }
                (_, None | Some(NodeValue::Null)) => yaml::set(target, new_key, legacy),
                _ => {}
            }
        }
        warnings.push(format!(
            "config: '{old_section}.{old_key}' is deprecated and will be removed in a future release. Use '{new_section}.{new_key}' instead."
        ));
    }
}

/// The flat per-call output figure the per-model entries were relative to.
const LEGACY_AUDIT_OUTPUT_PER_CALL: f64 = 7000.0;

fn migrate_audit_output_keys(raw: &mut [Entry], warnings: &mut Vec<String>) {
    let Some(section) = yaml::get_mut(raw, "audit").and_then(|entry| entry.value.as_map_mut())
    else {
        return;
    };
    let by_model = yaml::pop(
        section,
        "estimate_output_tokens_per_extraction_call_by_model",
    );
    if let Some(Node {
        value: NodeValue::Map(by_model),
        pos,
    }) = by_model
    {
        if !by_model.is_empty() {
            let scales = setdefault(section, "estimate_output_scale_by_model", &pos);
            if let Some(scales) = scales.as_map_mut() {
                for entry in by_model {
                    if scales
                        .iter()
                        .any(|e| keys_equal(&e.key.value, &entry.key.value))
                    {
                        continue;
                    }
                    let tokens = match &entry.value.value {
                        NodeValue::Bool(value) => Some(f64::from(u8::from(*value))),
                        NodeValue::Int(value) => value.to_f64(),
                        NodeValue::Float(value) => Some(*value),
                        _ => None,
                    };
                    if let Some(tokens) = tokens {
                        let scale = Node::new(
                            NodeValue::Float(tokens / LEGACY_AUDIT_OUTPUT_PER_CALL),
                            entry.value.pos.clone(),
                        );
                        scales.push(Entry {
                            key: entry.key.clone(),
                            value: scale,
                            key_pos: entry.key_pos.clone(),
                        });
                    }
                }
            }
            warnings.push("config: 'audit.estimate_output_tokens_per_extraction_call_by_model' is deprecated and will be removed in a future release. Its entries were carried over as 'audit.estimate_output_scale_by_model' ratios against 7000; set that key instead.".to_owned());
        }
    }
    for old_key in [
        "estimate_output_tokens_per_extraction_call",
        "estimate_seconds_per_extraction_call",
    ] {
        match yaml::pop(section, old_key) {
            None => continue,
            Some(node) if is_null(&node) => continue,
            Some(_) => warnings.push(format!(
                "config: 'audit.{old_key}' is no longer read. The audit estimate now scales output with the source: see 'audit.estimate_output_tokens_per_call_base', 'audit.estimate_output_tokens_per_source_char' and 'audit.estimate_extraction_output_tokens_per_second'."
            )),
        }
    }
}

fn drop_retired_agent_extraction_keys(raw: &mut [Entry], warnings: &mut Vec<String>) {
    let mut dropped = Vec::new();
    for (section, key) in [
        ("claude_code", "agent_extraction"),
        ("extraction", "agent_expected_claims_per_kchar"),
    ] {
        if let Some(entries) =
            yaml::get_mut(raw, section).and_then(|entry| entry.value.as_map_mut())
        {
            if yaml::pop(entries, key).is_some_and(|node| !is_null(&node)) {
                dropped.push(format!("'{section}.{key}'"));
            }
        }
    }
    if !dropped.is_empty() {
        warnings.push(format!(
            "config: {} configured agent-side extraction, which was removed; the setting has no effect and can be deleted.",
            dropped.join(" and ")
        ));
    }
}

/// An override could not be applied: the section is not a mapping.
pub(crate) struct EnvConflict {
    pub(crate) var: String,
    pub(crate) key: String,
    pub(crate) section: String,
    pub(crate) found: &'static str,
    pub(crate) pos: Pos,
}

/// `_ENV_OVERRIDES`: each variable present in `env` (even empty) sets its key
/// to the variable's text; a dotted field nests one level.
pub(crate) fn apply_env_overrides(
    raw: &mut Vec<Entry>,
    env: &BTreeMap<String, String>,
) -> Result<(), EnvConflict> {
    for (var, section, field) in &Schema::get().env_overrides {
        let Some(text) = env.get(var) else { continue };
        let pos = Pos::Env { var: var.clone() };
        let value = Node::new(NodeValue::Str(text.clone()), pos.clone());
        let key = format!("{section}.{field}");
        let conflict = |node: &Node, section: String| EnvConflict {
            var: var.clone(),
            key: key.clone(),
            section,
            found: node.value.kind(),
            pos: node.pos.clone(),
        };
        let section_node = setdefault(raw, section, &pos);
        let snapshot = section_node.clone();
        let Some(entries) = section_node.as_map_mut() else {
            return Err(conflict(&snapshot, section.clone()));
        };
        match field.split_once('.') {
            Some((outer, inner)) => {
                let outer_node = setdefault(entries, outer, &pos);
                let snapshot = outer_node.clone();
                let Some(nested) = outer_node.as_map_mut() else {
                    return Err(conflict(&snapshot, format!("{section}.{outer}")));
                };
                yaml::set(nested, inner, value);
            }
            None => yaml::set(entries, field, value),
        }
    }
    Ok(())
}

/// `Int` is used by callers that build raw values by hand (tests).
#[allow(dead_code)]
pub(crate) fn int(value: i128) -> NodeValue {
    NodeValue::Int(Int::Small(value))
}
