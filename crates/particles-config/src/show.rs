//! Provenance of every effective value, for `config show`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::{
    schema::{Kind, Schema},
    value::Value,
    yaml::Pos,
};

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// The reference's compiled default.
    Default,
    /// A line of the config file (for a migrated legacy key, the legacy key's line).
    File {
        /// The config file.
        path: PathBuf,
        /// 1-based.
        line: usize,
    },
    /// An environment override.
    Env {
        /// The variable.
        var: String,
    },
}

impl Origin {
    pub(crate) fn from_pos(pos: &Pos, path: Option<&Path>) -> Origin {
        match (pos, path) {
            (Pos::File { line, .. }, Some(path)) => Origin::File {
                path: path.to_owned(),
                line: *line,
            },
            (Pos::Env { var }, _) => Origin::Env { var: var.clone() },
            (Pos::File { .. }, None) => Origin::Default,
        }
    }

    fn short(&self) -> String {
        match self {
            Origin::Default => "default".to_owned(),
            Origin::File { line, .. } => format!("file:{line}"),
            Origin::Env { var } => format!("env {var}"),
        }
    }
}

/// One effective leaf value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The dotted key (`query.similarity_weight`). Lists and `dict`-valued keys
    /// are one entry each (a dict replaces its default as a whole).
    pub key: String,
    /// The value as JSON; `inf`/`nan` and integers past 64 bits as strings.
    pub value: serde_json::Value,
    /// Where it came from.
    pub origin: Origin,
}

/// A key the file holds that the reference ignores (unknown at its depth).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IgnoredKey {
    /// The dotted key as written.
    pub key: String,
    /// Where it stands.
    pub origin: Origin,
}

/// The `config show --json` document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShowJson {
    /// The file read, if any.
    pub path: Option<PathBuf>,
    /// How it was chosen.
    pub source: crate::discovery::ConfigOrigin,
    /// Every effective value, in the model's order.
    pub entries: Vec<Entry>,
    /// Keys in the file the reference ignores.
    pub ignored_keys: Vec<IgnoredKey>,
    /// Warnings the reference would log (discovery, deprecated keys).
    pub warnings: Vec<String>,
}

/// Every leaf of the schema with its value, in field order.
pub(crate) fn leaves(tree: &Value, mut origin_of: impl FnMut(&str) -> Origin) -> Vec<Entry> {
    let schema = Schema::get();
    let mut out = Vec::new();
    walk(schema, &schema.root, tree, "", &mut origin_of, &mut out);
    out
}

fn walk(
    schema: &Schema,
    model: &str,
    value: &Value,
    prefix: &str,
    origin_of: &mut impl FnMut(&str) -> Origin,
    out: &mut Vec<Entry>,
) {
    for field in &schema.model(model).fields {
        let key = format!("{prefix}{}", field.name);
        let field_value = value.get(&field.name).unwrap_or(&Value::Null);
        let nested = match field.ty.kind {
            Kind::Model => Some(field.ty.model_name()),
            Kind::Optional
                if field.ty.child().kind == Kind::Model && matches!(field_value, Value::Map(_)) =>
            {
                Some(field.ty.child().model_name())
            }
            _ => None,
        };
        match nested {
            Some(model) => walk(
                schema,
                model,
                field_value,
                &format!("{key}."),
                origin_of,
                out,
            ),
            None => out.push(Entry {
                origin: origin_of(&key),
                key,
                value: field_value.to_json(),
            }),
        }
    }
}

/// The human `config show` table.
pub(crate) fn render_table(show: &ShowJson) -> String {
    let mut out = String::new();
    match &show.path {
        Some(path) => out.push_str(&format!("config file: {}\n", path.display())),
        None => out.push_str("config file: none (compiled defaults and environment overrides)\n"),
    }
    for warning in &show.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    let rows: Vec<(String, String, String)> = show
        .entries
        .iter()
        .map(|entry| {
            (
                entry.key.clone(),
                entry.value.to_string(),
                entry.origin.short(),
            )
        })
        .collect();
    let key_width = rows
        .iter()
        .map(|r| r.0.chars().count())
        .max()
        .unwrap_or(3)
        .max(3);
    let value_width = rows
        .iter()
        .map(|r| r.1.chars().count().min(60))
        .max()
        .unwrap_or(5)
        .max(5);
    out.push_str(&format!(
        "{:<key_width$}  {:<value_width$}  ORIGIN\n",
        "KEY", "VALUE"
    ));
    for (key, value, origin) in rows {
        out.push_str(&format!(
            "{key:<key_width$}  {value:<value_width$}  {origin}\n"
        ));
    }
    if !show.ignored_keys.is_empty() {
        out.push_str("\nignored by the reference (unknown keys):\n");
        for ignored in &show.ignored_keys {
            out.push_str(&format!(
                "  {}  ({})\n",
                ignored.key,
                ignored.origin.short()
            ));
        }
    }
    out
}
