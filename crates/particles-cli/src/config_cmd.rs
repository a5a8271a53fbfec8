//! The user's configuration, read as the reference reads it, and the `config
//! show` verb.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use particles_config::{Environment, Loaded, Origin};
use particles_engine::{Settings, StoreSelection};

/// The loaded configuration and what the engine takes from it.
pub(crate) struct Configured {
    pub(crate) loaded: Loaded,
    pub(crate) env: Environment,
    pub(crate) settings: Settings,
}

impl Configured {
    /// Reads the configuration: `--config FILE`, else `PARTICLES_CONFIG`, else
    /// `~/.particles/config.yaml`, else the compiled defaults; environment
    /// overrides on top. Discovery warnings go to stderr, once.
    pub(crate) fn load(explicit: Option<&Path>) -> Result<Configured> {
        let env = Environment::from_process().context("cannot read the working directory")?;
        let loaded = particles_config::load(explicit, &env)?;
        for warning in loaded.warnings() {
            eprintln!("warning: {warning}");
        }
        let settings = Settings::from_config(loaded.config());
        Ok(Configured {
            loaded,
            env,
            settings,
        })
    }

    /// The stores `--store` names (handles or files), or the configured default.
    /// A store the configuration names wrongly is reported with where it names it.
    pub(crate) fn stores(&self, args: &[String]) -> Result<StoreSelection> {
        particles_engine::resolve_stores(self.loaded.config(), args, &self.env.cwd)
            .map_err(|error| self.placed(error))
    }

    /// `error` followed by the place of the key that names the store at fault:
    /// `storage.database_url` for `default`, `storage.stores` for the others.
    fn placed(&self, error: particles_engine::Error) -> anyhow::Error {
        use particles_config::Error as ConfigError;
        use particles_engine::Error as EngineError;
        let handle = match &error {
            EngineError::Config(
                ConfigError::UnknownStore { handle, .. }
                | ConfigError::EmptyStoreUrl { handle }
                | ConfigError::InMemoryStore { handle, .. }
                | ConfigError::SyncDriver { handle, .. }
                | ConfigError::UnsupportedStore { handle, .. },
            )
            | EngineError::MissingStoreFile { handle, .. } => handle.as_str(),
            EngineError::NoSuchStore { name, .. } => name.as_str(),
            _ => return error.into(),
        };
        let key = if handle == particles_config::DEFAULT_STORE {
            "storage.database_url"
        } else {
            "storage.stores"
        };
        let origin = self
            .loaded
            .entries()
            .into_iter()
            .find(|entry| entry.key == key)
            .map(|entry| entry.origin);
        let place = match (origin, self.loaded.path()) {
            (Some(Origin::File { path, line }), _) => format!("{}:{line}: {key}", path.display()),
            (Some(Origin::Env { var }), _) => format!("environment {var}: {key}"),
            (_, Some(path)) => format!("{key}: not set in {}", path.display()),
            (_, None) => format!("{key}: no configuration file is read"),
        };
        anyhow::anyhow!("{error} ({place})")
    }
}

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Every effective configuration value and where it came from: the compiled
    /// default, a line of the file, or an environment variable. Keys the file sets
    /// that the reference ignores are listed too.
    Show {
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print which configuration file is read (or that none is).
    Path,
}

pub(crate) fn run(args: &ConfigArgs, explicit: Option<&PathBuf>) -> Result<()> {
    use std::io::Write;
    let configured = Configured::load(explicit.map(PathBuf::as_path))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match &args.command {
        ConfigCommand::Show { json: true } => {
            serde_json::to_writer_pretty(&mut out, &configured.loaded.to_show_json())?;
            writeln!(out)?;
        }
        ConfigCommand::Show { json: false } => {
            write!(out, "{}", configured.loaded.render_table())?;
        }
        ConfigCommand::Path => match configured.loaded.path() {
            Some(path) => writeln!(out, "{}", path.display())?,
            None => writeln!(out, "(none: compiled defaults and environment overrides)")?,
        },
    }
    Ok(())
}
