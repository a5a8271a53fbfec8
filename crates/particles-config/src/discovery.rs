//! Which file is read (the reference's `_find_config_file`, `config.py:4800`).
//!
//! An explicit path (`--config FILE`) wins; else `PARTICLES_CONFIG` when set and
//! non-empty, which is then the only candidate (a missing file means compiled
//! defaults, with a warning, never a fall-back to the user file); else
//! `$HOME/.particles/config.yaml`; else nothing. No `config.yaml` in the working
//! directory or its ancestors is ever read.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use crate::error::{Error, Result};

/// The process inputs configuration depends on, passed in so that loading is
/// hermetic: the environment variables, and the working directory relative
/// paths are read against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// Environment variables (`PARTICLES_CONFIG`, `HOME`, the overrides).
    pub vars: BTreeMap<String, String>,
    /// The working directory.
    pub cwd: PathBuf,
}

impl Environment {
    /// The current process's environment and working directory: the one place
    /// this crate reads them. Variables that are not Unicode are left out.
    ///
    /// # Errors
    ///
    /// When the working directory cannot be read.
    pub fn from_process() -> std::io::Result<Environment> {
        Ok(Environment {
            vars: std::env::vars_os()
                .filter_map(|(key, value)| {
                    Some((key.into_string().ok()?, value.into_string().ok()?))
                })
                .collect(),
            cwd: std::env::current_dir()?,
        })
    }

    /// An environment with the given variables and working directory.
    pub fn new(
        vars: impl IntoIterator<Item = (String, String)>,
        cwd: impl Into<PathBuf>,
    ) -> Environment {
        Environment {
            vars: vars.into_iter().collect(),
            cwd: cwd.into(),
        }
    }

    /// A variable, `None` when unset.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// `~/.particles/config.yaml`, with `~` from `HOME` as Python's
    /// `Path.home()` reads it on POSIX. `None` when `HOME` is unset.
    pub fn user_config_path(&self) -> Option<PathBuf> {
        let home = self.var("HOME")?;
        Some(self.cwd.join(home).join(".particles").join("config.yaml"))
    }

    fn absolute(&self, path: &Path) -> PathBuf {
        self.cwd.join(path)
    }
}

/// Why a file was (or was not) chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigOrigin {
    /// `--config FILE`.
    Explicit,
    /// `PARTICLES_CONFIG`.
    EnvVar,
    /// `~/.particles/config.yaml`.
    UserFile,
    /// No file: compiled defaults (plus environment overrides).
    None,
}

/// The outcome of discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// The file to read, absolute.
    pub path: Option<PathBuf>,
    /// Where the choice came from.
    pub origin: ConfigOrigin,
    /// One-line warnings with the reference's meaning (a missing or relative
    /// `PARTICLES_CONFIG`).
    pub warnings: Vec<String>,
}

fn check_not_directory(path: &Path) -> Result<()> {
    if path.is_dir() {
        return Err(Error::ConfigIsDirectory {
            path: path.to_owned(),
        });
    }
    Ok(())
}

/// Chooses the config file.
///
/// # Errors
///
/// [`Error::ConfigMissing`] when `explicit` names no file;
/// [`Error::ConfigIsDirectory`] when the chosen path is a directory (the
/// reference then crashes with `IsADirectoryError`).
pub fn discover(explicit: Option<&Path>, env: &Environment) -> Result<Discovery> {
    if let Some(path) = explicit {
        let path = env.absolute(path);
        if !path.exists() {
            return Err(Error::ConfigMissing { path });
        }
        check_not_directory(&path)?;
        return Ok(Discovery {
            path: Some(path),
            origin: ConfigOrigin::Explicit,
            warnings: Vec::new(),
        });
    }
    if let Some(named) = env
        .var("PARTICLES_CONFIG")
        .filter(|value| !value.is_empty())
    {
        let given = Path::new(named);
        let path = env.absolute(given);
        if !path.exists() {
            let hint = if named.starts_with('~') {
                " The shell does not expand `~` inside quotes; write $HOME/... instead."
            } else {
                ""
            };
            return Ok(Discovery {
                path: None,
                origin: ConfigOrigin::None,
                warnings: vec![format!(
                    "PARTICLES_CONFIG names {named}, which does not exist; running on compiled defaults.{hint}"
                )],
            });
        }
        check_not_directory(&path)?;
        let mut warnings = Vec::new();
        if !given.is_absolute() {
            warnings.push(format!(
                "PARTICLES_CONFIG names a relative path ({named}), so it is read against the working directory as {}; a cloned repository with a file at that path would configure this process. Set an absolute path.",
                path.display()
            ));
        }
        return Ok(Discovery {
            path: Some(path),
            origin: ConfigOrigin::EnvVar,
            warnings,
        });
    }
    if let Some(user) = env.user_config_path().filter(|path| path.exists()) {
        check_not_directory(&user)?;
        return Ok(Discovery {
            path: Some(user),
            origin: ConfigOrigin::UserFile,
            warnings: Vec::new(),
        });
    }
    Ok(Discovery {
        path: None,
        origin: ConfigOrigin::None,
        warnings: Vec::new(),
    })
}

/// The nearest `config.yaml` from the working directory upward (stopping after
/// the directory holding `.git`) that names a Particles section and is not the
/// file loaded: the reference warns that it is ignored (`nearby_unused_config`).
pub fn nearby_unused_config(loaded: Option<&Path>, env: &Environment) -> Option<PathBuf> {
    let loaded = loaded.and_then(|path| path.canonicalize().ok());
    for directory in env.cwd.ancestors() {
        let candidate = directory.join("config.yaml");
        if candidate.is_file() {
            if loaded.is_some() && candidate.canonicalize().ok() == loaded {
                return None;
            }
            return names_a_particles_section(&candidate).then_some(candidate);
        }
        if directory.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Largest nearby file read to see whether it is a Particles config.
const NEARBY_CONFIG_MAX_BYTES: u64 = 1024 * 1024;

fn names_a_particles_section(path: &Path) -> bool {
    let small = std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.len() <= NEARBY_CONFIG_MAX_BYTES);
    if !small {
        return false;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(Some(node)) = crate::yaml::safe_load(&text) else {
        return false;
    };
    let root = crate::schema::Schema::get().root_model();
    node.as_map().is_some_and(|entries| {
        entries.iter().any(|entry| {
            matches!(&entry.key.value, crate::yaml::NodeValue::Str(key) if root.field(key).is_some())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_with(vars: &[(&str, &str)], cwd: &Path) -> Environment {
        Environment::new(
            vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
            cwd,
        )
    }

    #[test]
    fn explicit_path_wins_over_everything() -> Result<()> {
        let dir = tempfile::tempdir().expect("tempdir");
        let explicit = dir.path().join("explicit.yaml");
        let named = dir.path().join("named.yaml");
        std::fs::write(&explicit, "{}").expect("write");
        std::fs::write(&named, "{}").expect("write");
        let env = env_with(
            &[("PARTICLES_CONFIG", named.to_str().expect("utf8"))],
            dir.path(),
        );
        let found = discover(Some(&explicit), &env)?;
        assert_eq!(found.path.as_deref(), Some(explicit.as_path()));
        assert_eq!(found.origin, ConfigOrigin::Explicit);
        assert!(matches!(
            discover(Some(Path::new("absent.yaml")), &env),
            Err(Error::ConfigMissing { .. })
        ));
        Ok(())
    }

    #[test]
    fn particles_config_missing_means_defaults_not_the_user_file() -> Result<()> {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".particles")).expect("mkdir");
        std::fs::write(home.join(".particles/config.yaml"), "{}").expect("write");
        let env = env_with(
            &[
                ("PARTICLES_CONFIG", "~/nope.yaml"),
                ("HOME", home.to_str().expect("utf8")),
            ],
            dir.path(),
        );
        let found = discover(None, &env)?;
        assert_eq!(found.path, None);
        assert_eq!(found.origin, ConfigOrigin::None);
        assert_eq!(found.warnings.len(), 1);
        assert!(found.warnings[0].starts_with("PARTICLES_CONFIG names ~/nope.yaml, which does not exist; running on compiled defaults."));
        assert!(found.warnings[0].contains("does not expand `~`"));
        // Empty counts as unset: the user file is read.
        let env = env_with(
            &[
                ("PARTICLES_CONFIG", ""),
                ("HOME", home.to_str().expect("utf8")),
            ],
            dir.path(),
        );
        let found = discover(None, &env)?;
        assert_eq!(found.origin, ConfigOrigin::UserFile);
        Ok(())
    }

    #[test]
    fn relative_particles_config_reads_against_cwd_with_a_warning() -> Result<()> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("c.yaml"), "{}").expect("write");
        let env = env_with(&[("PARTICLES_CONFIG", "c.yaml")], dir.path());
        let found = discover(None, &env)?;
        assert_eq!(found.path, Some(dir.path().join("c.yaml")));
        assert_eq!(found.origin, ConfigOrigin::EnvVar);
        assert!(found.warnings[0].starts_with("PARTICLES_CONFIG names a relative path (c.yaml)"));
        Ok(())
    }

    #[test]
    fn a_directory_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = env_with(
            &[("PARTICLES_CONFIG", dir.path().to_str().expect("utf8"))],
            dir.path(),
        );
        let error = discover(None, &env).expect_err("a directory");
        assert!(error
            .to_string()
            .contains(&dir.path().display().to_string()));
    }

    #[test]
    fn no_file_anywhere_is_defaults() -> Result<()> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("config.yaml"), "query: {}").expect("write");
        let env = env_with(
            &[("HOME", dir.path().join("h").to_str().expect("utf8"))],
            dir.path(),
        );
        let found = discover(None, &env)?;
        assert_eq!(found.path, None);
        // The cwd file is never read, only reported.
        assert_eq!(
            nearby_unused_config(None, &env),
            Some(dir.path().join("config.yaml"))
        );
        Ok(())
    }
}
