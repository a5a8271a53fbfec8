//! Validation of the whole model against `schema.json`, as pydantic v2 does it
//! in lax mode: unknown keys ignored at every depth, coercions, bounds, literal
//! values, dict-valued keys replacing their defaults, and one error per bad
//! leaf, collected in field order.
//!
//! Every field and model validator of the reference is ported (the `rules` and
//! `validators` of `schema.json`; `schema/generate.py` fails on one it does not
//! know): the egress allow-list host, the network posture, `api.allowed_hosts` /
//! `allowed_origins` / `trusted_proxies`, `build.date` (blank is unset), the `llm`
//! price and cache-read merges and the provider wiring (`local` inserted,
//! `anthropic` reserved, dangling provider names refused), the calibration sources
//! of the uncalibrated cap, `subjects` (abstain <= suppress), the audit and memory
//! benchmark per-model merges and sign checks, the rot benchmark checkpoints, the
//! relevance-floor benchmark floors, and the write-stores-reconcile-in-multi check
//! on the root.
//!
//! Approximations, not checked to the letter: the network rules parse addresses
//! with a port of the parts of Python's `ipaddress` and `urlsplit` they use (the
//! reason text of an unparseable `trusted_proxies` entry, IPv6 scope ids and the
//! NFKC check of a non-ASCII netloc may differ). Stripping and lower-casing are
//! Python's (`particles_pytext::{strip, lower}`, Python 3.11's Unicode).

use std::collections::HashMap;

use crate::{
    coerce::{self, Refusal},
    pyfmt, rules,
    schema::{Field, Kind, Schema, Type},
    value::Value,
    yaml::{self, Int, Node, NodeValue, Pos},
};

/// One validation error, as pydantic reports it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Issue {
    /// pydantic's `loc`, each item as text.
    pub(crate) loc: Vec<String>,
    /// pydantic's error type (`greater_than_equal`, `value_error`, ...).
    pub(crate) kind: &'static str,
    pub(crate) message: String,
    /// Where the offending value stands; `None` for a check over defaults.
    pub(crate) pos: Option<Pos>,
}

/// The result of validating a raw document.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) value: Option<Value>,
    /// Dotted field path -> where its value came from (absent: the default).
    pub(crate) origins: HashMap<String, Pos>,
    /// Keys the model does not know, with where they stand.
    pub(crate) unknown: Vec<(String, Pos)>,
    pub(crate) issues: Vec<Issue>,
    pub(crate) warnings: Vec<String>,
}

struct Validator<'s> {
    schema: &'s Schema,
    out: Outcome,
}

fn dotted(loc: &[String]) -> String {
    loc.join(".")
}

impl Validator<'_> {
    fn issue(&mut self, loc: &[String], kind: &'static str, message: String, pos: Option<&Pos>) {
        self.out.issues.push(Issue {
            loc: loc.to_vec(),
            kind,
            message,
            pos: pos.cloned(),
        });
    }

    fn refuse(&mut self, loc: &[String], refusal: Refusal, pos: &Pos) {
        self.issue(loc, refusal.kind(), refusal.message().to_owned(), Some(pos));
    }

    fn model(&mut self, name: &str, node: &Node, loc: &mut Vec<String>) -> Option<Value> {
        let schema = self.schema;
        let model = schema.model(name);
        let Some(entries) = node.as_map() else {
            self.issue(
                loc,
                "model_type",
                format!("Input should be a valid dictionary or instance of {name}"),
                Some(&node.pos),
            );
            return None;
        };
        let errors_before = self.out.issues.len();
        let mut fields = Vec::with_capacity(model.fields.len());
        for field in &model.fields {
            loc.push(field.name.clone());
            match yaml::get(entries, &field.name) {
                Some(entry) => {
                    self.out.origins.insert(dotted(loc), entry.key_pos.clone());
                    if let Some(value) = self.field(field, &entry.value, loc) {
                        fields.push((field.name.clone(), value));
                    }
                }
                None if field.required => {
                    self.issue(loc, "missing", "Field required".to_owned(), Some(&node.pos));
                }
                None => fields.push((field.name.clone(), Value::from_json(&field.default))),
            }
            loc.pop();
        }
        for entry in entries {
            let known =
                matches!(&entry.key.value, NodeValue::Str(key) if model.field(key).is_some());
            if !known {
                loc.push(entry.key.key_text());
                self.out.unknown.push((dotted(loc), entry.key_pos.clone()));
                loc.pop();
            }
        }
        if self.out.issues.len() > errors_before {
            return None;
        }
        let mut value = Value::Map(fields);
        for rule in &model.validators {
            let checked = rules::model_rule(rule, &mut value, schema, &mut self.out.warnings);
            if let Err(message) = checked {
                self.issue(
                    loc,
                    "value_error",
                    format!("Value error, {message}"),
                    Some(&node.pos),
                );
                return None;
            }
        }
        Some(value)
    }

    fn field(&mut self, field: &Field, node: &Node, loc: &mut Vec<String>) -> Option<Value> {
        let has = |rule: &str| field.rules.iter().any(|r| r == rule);
        // `mode="before"` validators see the raw value.
        if has("blank_is_none") {
            if let NodeValue::Str(text) = &node.value {
                if particles_pytext::strip(text).is_empty() {
                    return Some(Value::Null);
                }
            }
        }
        let merge_base = (has("merge_over_default") && node.as_map().is_some())
            .then(|| Value::from_json(&field.default));
        let mut value = self.ty(&field.ty, node, loc)?;
        if let (Some(Value::Map(mut base)), Value::Map(given)) = (merge_base, &value) {
            for (key, item) in given {
                match base.iter_mut().find(|(name, _)| name == key) {
                    Some(slot) => slot.1 = item.clone(),
                    None => base.push((key.clone(), item.clone())),
                }
            }
            value = Value::Map(base);
        }
        for rule in &field.rules {
            if let Err(message) = rules::field_rule(rule, &loc.join("."), &mut value) {
                self.issue(
                    loc,
                    "value_error",
                    format!("Value error, {message}"),
                    Some(&node.pos),
                );
                return None;
            }
        }
        Some(value)
    }

    fn ty(&mut self, ty: &Type, node: &Node, loc: &mut Vec<String>) -> Option<Value> {
        match ty.kind {
            Kind::Bool => match coerce::to_bool(&node.value) {
                Ok(value) => Some(Value::Bool(value)),
                Err(refusal) => {
                    self.refuse(loc, refusal, &node.pos);
                    None
                }
            },
            Kind::Int => match coerce::to_int(&node.value) {
                Ok(value) => {
                    let ok = self.bounds(ty, &Number::Int(&value), loc, &node.pos);
                    ok.then_some(Value::Int(value))
                }
                Err(refusal) => {
                    self.refuse(loc, refusal, &node.pos);
                    None
                }
            },
            Kind::Float => match coerce::to_float(&node.value) {
                Ok(value) => self
                    .bounds(ty, &Number::Float(value), loc, &node.pos)
                    .then_some(Value::Float(value)),
                Err(refusal) => {
                    self.refuse(loc, refusal, &node.pos);
                    None
                }
            },
            Kind::Str => match coerce::to_str(&node.value) {
                Ok(text) => {
                    if let Some(min) = ty.min_length {
                        if text.chars().count() < min {
                            let unit = if min == 1 { "character" } else { "characters" };
                            self.issue(
                                loc,
                                "string_too_short",
                                format!("String should have at least {min} {unit}"),
                                Some(&node.pos),
                            );
                            return None;
                        }
                    }
                    Some(Value::Str(text.to_owned()))
                }
                Err(refusal) => {
                    self.refuse(loc, refusal, &node.pos);
                    None
                }
            },
            Kind::Literal => self.literal(ty, node, loc),
            Kind::Optional => match node.value {
                NodeValue::Null => Some(Value::Null),
                _ => self.ty(ty.child(), node, loc),
            },
            Kind::List => {
                let NodeValue::Seq(items) = &node.value else {
                    self.issue(
                        loc,
                        "list_type",
                        "Input should be a valid list".to_owned(),
                        Some(&node.pos),
                    );
                    return None;
                };
                let mut out = Vec::with_capacity(items.len());
                let mut failed = false;
                for (index, item) in items.iter().enumerate() {
                    loc.push(index.to_string());
                    match self.ty(ty.child(), item, loc) {
                        Some(value) => out.push(value),
                        None => failed = true,
                    }
                    loc.pop();
                }
                (!failed).then_some(Value::List(out))
            }
            Kind::Dict => {
                let Some(entries) = node.as_map() else {
                    self.issue(
                        loc,
                        "dict_type",
                        "Input should be a valid dictionary".to_owned(),
                        Some(&node.pos),
                    );
                    return None;
                };
                let mut out = Vec::with_capacity(entries.len());
                let mut failed = false;
                for entry in entries {
                    loc.push(entry.key.key_text());
                    let key = match &entry.key.value {
                        NodeValue::Str(key) => Some(key.clone()),
                        NodeValue::Bytes(bytes) => match std::str::from_utf8(bytes) {
                            Ok(key) => Some(key.to_owned()),
                            Err(_) => {
                                loc.push("[key]".to_owned());
                                self.refuse(loc, Refusal::StringUnicode, &entry.key.pos);
                                loc.pop();
                                None
                            }
                        },
                        _ => {
                            loc.push("[key]".to_owned());
                            self.refuse(loc, Refusal::StringType, &entry.key.pos);
                            loc.pop();
                            None
                        }
                    };
                    let value = self.ty(ty.child(), &entry.value, loc);
                    loc.pop();
                    match (key, value) {
                        (Some(key), Some(value)) => out.push((key, value)),
                        _ => failed = true,
                    }
                }
                (!failed).then_some(Value::Map(out))
            }
            Kind::Model => self.model(ty.model_name(), node, loc),
        }
    }

    fn literal(&mut self, ty: &Type, node: &Node, loc: &[String]) -> Option<Value> {
        let values = ty.values.as_deref().unwrap_or_default();
        for literal in values {
            let matched = match (literal, &node.value) {
                (serde_json::Value::String(expected), NodeValue::Str(text)) => expected == text,
                (serde_json::Value::Number(expected), input) => {
                    let expected = expected.as_i64().map(i128::from);
                    let input = match input {
                        NodeValue::Int(Int::Small(value)) => Some(*value),
                        NodeValue::Bool(value) => Some(i128::from(*value)),
                        NodeValue::Float(value) if value.fract() == 0.0 && value.abs() < 1e18 => {
                            Some(*value as i128)
                        }
                        _ => None,
                    };
                    expected.is_some() && expected == input
                }
                _ => false,
            };
            if matched {
                return Some(Value::from_json(literal));
            }
        }
        let shown: Vec<String> = values
            .iter()
            .map(|value| match value {
                serde_json::Value::String(text) => pyfmt::str_repr(text),
                other => other.to_string(),
            })
            .collect();
        let expected = match shown.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        self.issue(
            loc,
            "literal_error",
            format!("Input should be {expected}"),
            Some(&node.pos),
        );
        None
    }

    /// pydantic-core checks `le`, `lt`, `ge`, `gt` in that order and reports the
    /// first that fails; NaN fails every one.
    fn bounds(&mut self, ty: &Type, value: &Number<'_>, loc: &[String], pos: &Pos) -> bool {
        let checks: [Check<'_>; 4] = [
            (&ty.le, "less_than_equal", "less than or equal to", |o| {
                o.is_le()
            }),
            (&ty.lt, "less_than", "less than", |o| o.is_lt()),
            (
                &ty.ge,
                "greater_than_equal",
                "greater than or equal to",
                |o| o.is_ge(),
            ),
            (&ty.gt, "greater_than", "greater than", |o| o.is_gt()),
        ];
        for (bound, kind, words, holds) in checks {
            let Some(bound) = bound else { continue };
            let passes = value.compare(bound).is_some_and(holds);
            if !passes {
                let shown = match bound.as_f64() {
                    Some(float) if bound.is_f64() && float.fract() == 0.0 => format!("{float:.0}"),
                    Some(float) if bound.is_f64() => pyfmt::float_repr(float),
                    _ => bound.to_string(),
                };
                self.issue(
                    loc,
                    kind,
                    format!("Input should be {words} {shown}"),
                    Some(pos),
                );
                return false;
            }
        }
        true
    }
}

/// A bound, its error type, its wording, and whether an ordering satisfies it.
type Check<'t> = (
    &'t Option<serde_json::Number>,
    &'static str,
    &'static str,
    fn(std::cmp::Ordering) -> bool,
);

/// A number under a bound check.
enum Number<'a> {
    Int(&'a Int),
    Float(f64),
}

impl Number<'_> {
    fn compare(&self, bound: &serde_json::Number) -> Option<std::cmp::Ordering> {
        match self {
            Number::Float(value) => value.partial_cmp(&bound.as_f64()?),
            Number::Int(Int::Small(value)) if bound.as_i64().is_some() => {
                Some(value.cmp(&i128::from(bound.as_i64()?)))
            }
            Number::Int(Int::Small(value)) => (*value as f64).partial_cmp(&bound.as_f64()?),
            // Bounds are small; an integer past i128 lies beyond any of them.
            Number::Int(big) => Some(if big.is_negative() {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            }),
        }
    }
}

/// Validates a raw document (a mapping, after migrations and environment
/// overrides) against the reference's root model.
pub(crate) fn validate(root: &Node) -> Outcome {
    let schema = Schema::get();
    let mut validator = Validator {
        schema,
        out: Outcome::default(),
    };
    let mut loc = Vec::new();
    let value = validator.model(&schema.root, root, &mut loc);
    validator.out.value = value;
    validator.out
}

#[cfg(test)]
mod tests;
