//! Configuration for particles-rs, read exactly as the reference
//! (linkedparticles 1.214.1) reads its own: the same file, the same YAML, the
//! same environment overrides, the same verdict on every value.
//!
//! [`load`] runs the reference's `_load_config`: [`discover`] the file (an
//! explicit path, else `PARTICLES_CONFIG`, else `~/.particles/config.yaml`, else
//! compiled defaults), parse it as PyYAML's `safe_load` does (YAML 1.1: `on` is
//! true, `010` is 8, `1:30` is 90), migrate legacy keys, apply environment
//! overrides (present even if empty), and validate the **whole** model with
//! pydantic's lax rules. The model is not typed by hand: `schema/generate.py`
//! walks the reference's pydantic classes into `schema/schema.json`, which is
//! embedded here, so a bad value in any of the 79 sections fails the load as it
//! fails every reference command, with every bad leaf named by file line (or
//! variable) and dotted key.
//!
//! The result, [`Loaded`], gives the typed [`Config`] for the keys particles-rs
//! acts on, the provenance of every effective value ([`Loaded::entries`]), the
//! keys the reference ignores, and [`resolve_store`] turns a store handle into a
//! SQLite file.
//!
//! Nothing here reads the process environment except
//! [`Environment::from_process`]; everything else takes an [`Environment`].
//!
//! ```
//! use particles_config::{load_from_str, Environment};
//! let env = Environment::new([("DATABASE_URL".to_owned(), "sqlite+aiosqlite:////s/p.db".to_owned())], "/");
//! let loaded = load_from_str("query:\n  similarity_weight: '0.7'\n  grounded_answers: on\n", "/c.yaml", &env)?;
//! assert_eq!(loaded.config().query.similarity_weight, 0.7);
//! assert!(loaded.config().query.grounded_answers);
//! assert_eq!(loaded.config().storage.database_url, "sqlite+aiosqlite:////s/p.db");
//! # Ok::<(), particles_config::Error>(())
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used)]

mod coerce;
mod config;
mod discovery;
mod error;
mod net;
mod pyfmt;
mod raw;
mod rules;
mod schema;
mod show;
mod store;
mod validate;
mod value;
mod yaml;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

pub use crate::{
    config::{
        ApiConfig, BuildConfig, CliConfig, Config, ConformanceTrustCap, ContestednessConfig,
        DocumentPrecedence, Egress, EgressAllow, EmbeddingsConfig, EngineConfig, LlmConfig,
        MaxTokensParam, McpConfig, NetworkConfig, OwnerLens, ProviderConfig, ProviderSelection,
        QueryConfig, SourceDecay, SourcePassageConfig, StorageConfig, StructuredOutput,
        UncalibratedCap,
    },
    discovery::{discover, nearby_unused_config, ConfigOrigin, Discovery, Environment},
    error::{Error, Invalid, InvalidList, Place, Result},
    show::{Entry, IgnoredKey, Origin, ShowJson},
    store::{resolve_store, store_url, StoreLocation, DEFAULT_STORE},
    yaml::yaml_to_json,
};
use crate::{
    value::Value,
    yaml::{Node, NodeValue, Pos},
};

/// A validated configuration with its provenance.
#[derive(Debug, Clone)]
pub struct Loaded {
    config: Config,
    path: Option<PathBuf>,
    source: ConfigOrigin,
    tree: Value,
    origins: HashMap<String, Pos>,
    ignored: Vec<IgnoredKey>,
    warnings: Vec<String>,
}

impl Loaded {
    /// The typed keys.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The file read, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// How the file was chosen.
    pub fn source(&self) -> ConfigOrigin {
        self.source
    }

    /// Every effective leaf value of the reference's model (not only the typed
    /// ones), in the model's field order, with where it came from.
    pub fn entries(&self) -> Vec<Entry> {
        show::leaves(&self.tree, |key| match self.origins.get(key) {
            Some(pos) => Origin::from_pos(pos, self.path.as_deref()),
            None => Origin::Default,
        })
    }

    /// The effective value of one dotted key of the model, as JSON.
    pub fn value(&self, key: &str) -> Option<serde_json::Value> {
        self.tree.at(key).map(Value::to_json)
    }

    /// Keys in the file that the reference ignores (unknown at their depth).
    pub fn ignored_keys(&self) -> &[IgnoredKey] {
        &self.ignored
    }

    /// Warnings the reference would log: a missing or relative
    /// `PARTICLES_CONFIG`, deprecated keys migrated, a nearby `config.yaml` it
    /// does not read.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The `config show --json` document.
    pub fn to_show_json(&self) -> ShowJson {
        ShowJson {
            path: self.path.clone(),
            source: self.source,
            entries: self.entries(),
            ignored_keys: self.ignored.clone(),
            warnings: self.warnings.clone(),
        }
    }

    /// The human `config show` table: key, value, origin, then the ignored keys.
    pub fn render_table(&self) -> String {
        show::render_table(&self.to_show_json())
    }
}

/// Finds, reads and validates the configuration, as the reference's
/// `get_config()` does on its first call.
///
/// `explicit` is `--config FILE`, which overrides discovery.
///
/// # Errors
///
/// Discovery errors ([`Error::ConfigMissing`], [`Error::ConfigIsDirectory`]),
/// [`Error::Read`], [`Error::NotUtf8`], [`Error::Yaml`],
/// [`Error::EnvIntoNonMapping`] and [`Error::Invalid`] (every bad value).
pub fn load(explicit: Option<&Path>, env: &Environment) -> Result<Loaded> {
    let discovery = discover(explicit, env)?;
    let text = match &discovery.path {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|source| Error::Read {
                path: path.clone(),
                source,
            })?;
            Some(String::from_utf8(bytes).map_err(|_| Error::NotUtf8 { path: path.clone() })?)
        }
        None => None,
    };
    let mut loaded = load_text(
        text.as_deref(),
        discovery.path.clone(),
        discovery.origin,
        env,
    )?;
    let mut warnings = discovery.warnings;
    warnings.append(&mut loaded.warnings);
    // The reference reports a nearby unread config.yaml only when nothing pinned
    // the file.
    let pinned = matches!(discovery.origin, ConfigOrigin::Explicit)
        || env
            .var("PARTICLES_CONFIG")
            .is_some_and(|value| !value.is_empty());
    if !pinned && loaded.config.cli.warn_unused_config {
        if let Some(nearby) = nearby_unused_config(loaded.path.as_deref(), env) {
            let user = env.user_config_path().map_or_else(
                || "~/.particles/config.yaml".to_owned(),
                |p| p.display().to_string(),
            );
            warnings.push(format!(
                "Ignoring {}: Particles no longer reads config.yaml from the working directory. To use it, set PARTICLES_CONFIG={}, or move it to {user}.",
                nearby.display(),
                nearby.display()
            ));
        }
    }
    loaded.warnings = warnings;
    Ok(loaded)
}

/// Validates YAML text as if it were the config file at `path` (no discovery).
///
/// # Errors
///
/// As [`load`], without the discovery and read errors.
pub fn load_from_str(text: &str, path: impl Into<PathBuf>, env: &Environment) -> Result<Loaded> {
    load_text(Some(text), Some(path.into()), ConfigOrigin::Explicit, env)
}

/// The compiled defaults plus `env`'s overrides, as when no file is found.
///
/// # Errors
///
/// [`Error::Invalid`] when an override's value does not validate.
pub fn load_defaults(env: &Environment) -> Result<Loaded> {
    load_text(None, None, ConfigOrigin::None, env)
}

fn load_text(
    text: Option<&str>,
    path: Option<PathBuf>,
    source: ConfigOrigin,
    env: &Environment,
) -> Result<Loaded> {
    let file_path = || path.clone().unwrap_or_default();
    let document = match text {
        Some(text) => yaml::safe_load(text).map_err(|error| Error::Yaml {
            path: file_path(),
            line: error.line,
            column: error.column,
            message: error.message,
        })?,
        None => None,
    };
    // A document that is not a mapping counts as `{}`, silently.
    let root_pos = Pos::File { line: 1, column: 1 };
    let mut entries = match document {
        Some(Node {
            value: NodeValue::Map(entries),
            ..
        }) => entries,
        _ => Vec::new(),
    };
    let mut warnings = Vec::new();
    raw::migrate_legacy_keys(&mut entries, &mut warnings);
    raw::apply_env_overrides(&mut entries, &env.vars).map_err(|conflict| {
        Error::EnvIntoNonMapping {
            var: conflict.var,
            key: conflict.key,
            section: conflict.section,
            found: conflict.found,
            path: file_path(),
            line: match conflict.pos {
                Pos::File { line, .. } => line,
                Pos::Env { .. } => 0,
            },
        }
    })?;
    let root = Node::new(NodeValue::Map(entries), root_pos);
    let outcome = validate::validate(&root);
    let ignored = outcome
        .unknown
        .iter()
        .map(|(key, pos)| IgnoredKey {
            key: key.clone(),
            origin: Origin::from_pos(pos, path.as_deref()),
        })
        .collect();
    warnings.extend(outcome.warnings);
    let Some(tree) = outcome.value else {
        let errors = outcome
            .issues
            .into_iter()
            .map(|issue| Invalid {
                key: issue.loc.join("."),
                kind: issue.kind.to_owned(),
                message: issue.message,
                place: match (&issue.pos, &path) {
                    (Some(Pos::File { line, .. }), Some(path)) => Place::File {
                        path: path.clone(),
                        line: *line,
                    },
                    (Some(Pos::Env { var }), _) => Place::Env { var: var.clone() },
                    _ => Place::Unplaced,
                },
            })
            .collect();
        return Err(Error::Invalid {
            path,
            errors: InvalidList(errors),
        });
    };
    Ok(Loaded {
        config: Config::from_value(&tree),
        path,
        source,
        tree,
        origins: outcome.origins,
        ignored,
        warnings,
    })
}

/// Every environment variable that overrides a config key (the reference's
/// `config.env_override_names()`), sorted.
pub fn env_override_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = schema::Schema::get()
        .env_overrides
        .iter()
        .map(|(var, _, _)| var.as_str())
        .collect();
    names.sort_unstable();
    names
}

/// Every environment override: `(variable, dotted key)`, in the reference's order.
pub fn env_overrides() -> Vec<(&'static str, String)> {
    schema::Schema::get()
        .env_overrides
        .iter()
        .map(|(var, section, field)| (var.as_str(), format!("{section}.{field}")))
        .collect()
}
