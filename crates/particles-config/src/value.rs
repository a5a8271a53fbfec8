//! Effective configuration values, after validation.

use crate::{pyfmt, yaml::Int};

/// A validated value: what pydantic's `model_dump()` holds for a key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(Int),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    /// Models and `dict[str, ...]` fields, in the reference's key order.
    Map(Vec<(String, Value)>),
}

impl Value {
    /// A compiled default from `schema.json`.
    pub(crate) fn from_json(json: &serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(value) => Value::Bool(*value),
            serde_json::Value::Number(number) => match number.as_i64() {
                Some(value) => Value::Int(Int::Small(i128::from(value))),
                None => match number.as_u64() {
                    Some(value) => Value::Int(Int::Small(i128::from(value))),
                    None => Value::Float(number.as_f64().unwrap_or(f64::NAN)),
                },
            },
            serde_json::Value::String(text) => Value::Str(text.clone()),
            serde_json::Value::Array(items) => {
                Value::List(items.iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(map) => Value::Map(
                map.iter()
                    .map(|(key, value)| (key.clone(), Value::from_json(value)))
                    .collect(),
            ),
        }
    }

    /// JSON for `config show --json`. Floats JSON cannot carry (`inf`, `nan`)
    /// and integers past 64 bits are written as strings.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(value) => serde_json::Value::Bool(*value),
            Value::Int(Int::Small(value)) => {
                if let Ok(small) = i64::try_from(*value) {
                    serde_json::Value::from(small)
                } else if let Ok(small) = u64::try_from(*value) {
                    serde_json::Value::from(small)
                } else {
                    serde_json::Value::String(value.to_string())
                }
            }
            Value::Int(Int::Big(text)) => serde_json::Value::String(text.clone()),
            Value::Float(value) => match serde_json::Number::from_f64(*value) {
                Some(number) => serde_json::Value::Number(number),
                None => serde_json::Value::String(pyfmt::float_repr(*value)),
            },
            Value::Str(text) => serde_json::Value::String(text.clone()),
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json).collect())
            }
            Value::Map(entries) => serde_json::Value::Object(
                entries
                    .iter()
                    .map(|(key, value)| (key.clone(), value.to_json()))
                    .collect(),
            ),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries.iter().find(|(name, _)| name == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        match self {
            Value::Map(entries) => entries
                .iter_mut()
                .find(|(name, _)| name == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at a dotted path of model fields.
    pub(crate) fn at(&self, dotted: &str) -> Option<&Value> {
        dotted
            .split('.')
            .try_fold(self, |value, key| value.get(key))
    }

    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(value) => Some(*value),
            Value::Int(value) => value.to_f64(),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }
}
