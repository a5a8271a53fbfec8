//! Which stores a query reads, named as the reference names them.

use std::path::{Path, PathBuf};

use particles_config::{Config, DEFAULT_STORE};

use crate::{Error, Result};

/// A store to open: its handle (when the configuration named it) and its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreTarget {
    /// The configuration's handle, or `None` for a store given as a file.
    pub handle: Option<String>,
    /// The SQLite file.
    pub path: PathBuf,
}

impl StoreTarget {
    /// The name a federation keys ownership by: the handle, else the path.
    pub fn name(&self) -> String {
        self.handle
            .clone()
            .unwrap_or_else(|| self.path.display().to_string())
    }
}

/// The stores of one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSelection {
    /// The stores, in the order given (duplicates kept, as the reference keeps
    /// them).
    pub targets: Vec<StoreTarget>,
    /// Whether the reference would run `query_federated`: several stores, or any
    /// handle (a lone handle federates too, and re-sorts after its collapse).
    pub federated: bool,
}

/// Resolves `--store` arguments: `default` and keys of `storage.stores` are
/// handles; anything else must be an existing file (our extension: the reference
/// takes handles only). With no argument, the configured default store
/// (`storage.database_url`, or `DATABASE_URL`), as a plain query. Relative paths
/// in URLs are taken against `cwd`, as the reference's driver takes them.
///
/// # Errors
///
/// [`Error::Config`] for a URL that is not a file of an SQLite store;
/// [`Error::NoSuchStore`] for an argument that is neither a handle nor a file;
/// [`Error::MissingStoreFile`] when a handle's file does not exist (the reference
/// would create an empty database there; we never write a store).
pub fn resolve_stores(config: &Config, args: &[String], cwd: &Path) -> Result<StoreSelection> {
    if args.is_empty() {
        let target = handle_target(config, DEFAULT_STORE, cwd)?;
        return Ok(StoreSelection {
            targets: vec![target],
            federated: false,
        });
    }
    let mut targets = Vec::with_capacity(args.len());
    let mut any_handle = false;
    for arg in args {
        let is_handle = arg == DEFAULT_STORE || config.storage.stores.contains_key(arg);
        if is_handle {
            any_handle = true;
            targets.push(handle_target(config, arg, cwd)?);
            continue;
        }
        let path = cwd.join(arg);
        if !path.is_file() {
            let mut known: Vec<&str> = vec![DEFAULT_STORE];
            known.extend(
                config
                    .storage
                    .stores
                    .keys()
                    .map(String::as_str)
                    .filter(|k| *k != DEFAULT_STORE),
            );
            return Err(Error::NoSuchStore {
                name: arg.clone(),
                known: known.join(", "),
            });
        }
        targets.push(StoreTarget {
            handle: None,
            path: if Path::new(arg).is_absolute() {
                PathBuf::from(arg)
            } else {
                path
            },
        });
    }
    Ok(StoreSelection {
        federated: targets.len() > 1 || any_handle,
        targets,
    })
}

fn handle_target(config: &Config, handle: &str, cwd: &Path) -> Result<StoreTarget> {
    let location = particles_config::resolve_store(config, handle, cwd)?;
    if !location.path.is_file() {
        return Err(Error::MissingStoreFile {
            handle: handle.to_owned(),
            path: location.path,
        });
    }
    Ok(StoreTarget {
        handle: Some(handle.to_owned()),
        path: location.path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_with(dir: &Path) -> Config {
        let mut config = Config::default();
        config.storage.database_url = format!("sqlite+aiosqlite:///{}", "main.db");
        config.storage.stores.insert(
            "b".to_owned(),
            format!("sqlite+aiosqlite:///{}", dir.join("b.db").display()),
        );
        config
    }

    #[test]
    fn handles_paths_and_the_default() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["main.db", "b.db", "c.db"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let config = config_with(dir.path());
        let none = resolve_stores(&config, &[], dir.path()).unwrap();
        assert!(!none.federated);
        assert_eq!(none.targets[0].path, dir.path().join("main.db"));
        let file = resolve_stores(&config, &["c.db".to_owned()], dir.path()).unwrap();
        assert!(!file.federated);
        assert_eq!(file.targets[0].handle, None);
        let handle = resolve_stores(&config, &["b".to_owned()], dir.path()).unwrap();
        assert!(handle.federated, "a lone handle federates");
        let two =
            resolve_stores(&config, &["c.db".to_owned(), "c.db".to_owned()], dir.path()).unwrap();
        assert!(two.federated);
        let error = resolve_stores(&config, &["nope".to_owned()], dir.path()).unwrap_err();
        assert!(error.to_string().contains("known: default, b"), "{error}");
    }

    #[test]
    fn a_missing_default_store_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let config = config_with(dir.path());
        let error = resolve_stores(&config, &[], dir.path()).unwrap_err();
        assert!(matches!(error, Error::MissingStoreFile { .. }), "{error}");
    }
}
