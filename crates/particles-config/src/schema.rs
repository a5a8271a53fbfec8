//! The reference's configuration model as data (`schema/schema.json`).
//!
//! `schema/generate.py` writes the file by walking the reference's pydantic
//! model; it is embedded here so a build needs no Python. Every field carries
//! its type, bounds, literal values and compiled default, and the names of the
//! field validators the Rust side ports (`rules`).

use std::{collections::BTreeMap, sync::OnceLock};

use serde::Deserialize;

const SCHEMA_JSON: &str = include_str!("../schema/schema.json");

/// The whole model.
#[derive(Debug, Deserialize)]
pub(crate) struct Schema {
    pub(crate) root: String,
    /// `(variable, section, field)`, in the reference's order.
    pub(crate) env_overrides: Vec<(String, String, String)>,
    pub(crate) models: BTreeMap<String, Model>,
}

/// One pydantic model.
#[derive(Debug, Deserialize)]
pub(crate) struct Model {
    pub(crate) fields: Vec<Field>,
    /// Model validators the Rust side ports, by rule name.
    #[serde(default)]
    pub(crate) validators: Vec<String>,
}

/// One field of a model.
#[derive(Debug, Deserialize)]
pub(crate) struct Field {
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) ty: Type,
    /// The compiled default as the reference dumps it (`null` for a `None`
    /// default, and for required fields, which have none).
    #[serde(default)]
    pub(crate) default: serde_json::Value,
    #[serde(default)]
    pub(crate) required: bool,
    /// Field validators the Rust side ports, by rule name.
    #[serde(default)]
    pub(crate) rules: Vec<String>,
}

/// The kinds of annotation the reference's model uses.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Bool,
    Int,
    Float,
    Str,
    Literal,
    Optional,
    List,
    Dict,
    Model,
}

/// A field's type with its constraints.
#[derive(Debug, Deserialize)]
pub(crate) struct Type {
    pub(crate) kind: Kind,
    pub(crate) model: Option<String>,
    pub(crate) values: Option<Vec<serde_json::Value>>,
    pub(crate) inner: Option<Box<Type>>,
    pub(crate) item: Option<Box<Type>>,
    pub(crate) value: Option<Box<Type>>,
    pub(crate) ge: Option<serde_json::Number>,
    pub(crate) gt: Option<serde_json::Number>,
    pub(crate) le: Option<serde_json::Number>,
    pub(crate) lt: Option<serde_json::Number>,
    pub(crate) min_length: Option<usize>,
}

impl Type {
    /// The type inside `Optional`, `list` or `dict` (the schema file guarantees it).
    pub(crate) fn child(&self) -> &Type {
        let child = match self.kind {
            Kind::Optional => self.inner.as_deref(),
            Kind::List => self.item.as_deref(),
            Kind::Dict => self.value.as_deref(),
            _ => None,
        };
        child.expect("schema.json gives optional, list and dict types their inner type")
    }

    /// The model name of a model type.
    pub(crate) fn model_name(&self) -> &str {
        self.model
            .as_deref()
            .expect("schema.json names the model of every model type")
    }
}

impl Schema {
    /// The embedded schema, parsed once.
    pub(crate) fn get() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            serde_json::from_str(SCHEMA_JSON).expect("the embedded schema.json is valid")
        })
    }

    pub(crate) fn model(&self, name: &str) -> &Model {
        self.models
            .get(name)
            .expect("schema.json defines every model it refers to")
    }

    pub(crate) fn root_model(&self) -> &Model {
        self.model(&self.root)
    }
}

impl Model {
    pub(crate) fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|field| field.name == name)
    }
}
