//! The long-running verbs' logs (`serve`, `mcp`): `tracing` events written to
//! standard error, as text lines or JSON objects, filtered by `--log-level` or
//! `RUST_LOG`. One-shot verbs install no subscriber: their stderr is for the
//! user's messages alone.

use anyhow::Result;
use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

/// How logs are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line, its fields at the top level.
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct LogArgs {
    /// How log lines are written to standard error: `text` or `json` (one
    /// object per line, for a log shipper).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub(crate) log_format: LogFormat,

    /// Which log lines are written: a level (`error`, `warn`, `info`, `debug`,
    /// `trace`) or per-module directives as RUST_LOG takes them (default:
    /// RUST_LOG, else `info` for particles-rs itself and `warn` for the
    /// libraries under it; `warn` for `mcp` and `serve --stdio`).
    #[arg(long, value_name = "LEVEL")]
    pub(crate) log_level: Option<String>,
}

/// The filter when neither `--log-level` nor `RUST_LOG` says: particles-rs's
/// own events at `level`, the libraries' warnings.
fn default_directives(level: &str) -> String {
    format!("warn,particles_rs={level},particles_server={level},particles_engine={level}")
}

/// Installs the subscriber for a long-running verb whose own events are shown
/// from `default_level` unless the user says otherwise.
///
/// # Errors
///
/// A usage error naming `--log-level` or `RUST_LOG` when the filter does not
/// parse.
pub(crate) fn init(args: &LogArgs, default_level: &str) -> Result<()> {
    let filter = match (&args.log_level, std::env::var("RUST_LOG")) {
        (Some(level), _) => EnvFilter::try_new(level).map_err(|error| {
            crate::UsageError(format!(
                "--log-level {level:?} is not a level or a list of directives ({error}); \
                 try `info` or `particles_rs=debug,warn`"
            ))
        })?,
        (None, Ok(value)) if !value.trim().is_empty() => {
            EnvFilter::try_new(&value).map_err(|error| {
                crate::UsageError(format!(
                    "RUST_LOG={value:?} is not a level or a list of directives ({error}); \
                     unset it or try RUST_LOG=info"
                ))
            })?
        }
        _ => EnvFilter::new(default_directives(default_level)),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    // A subscriber already installed (a test harness's) is kept.
    let _ = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    Ok(())
}

/// Says at start what the process loaded and from where: the configuration
/// file and the stores with their sidecars. (The encoder says where its model
/// came from as it loads.) Never a value from the configuration: it may hold
/// a provider's key. (Only the servers say it: `serve --http` and `mcp`.)
#[cfg(feature = "server")]
pub(crate) fn started(
    configured: &crate::config_cmd::Configured,
    selection: &particles_engine::StoreSelection,
    sidecar: &crate::query::SidecarArgs,
) {
    let loaded = &configured.loaded;
    match loaded.path() {
        Some(path) => tracing::info!(
            file = %path.display(),
            chosen_by = ?loaded.source(),
            "configuration loaded"
        ),
        None => tracing::info!("no configuration file: the reference's defaults"),
    }
    for target in &selection.targets {
        let sidecar_path = (!sidecar.no_sidecar).then(|| {
            particles_cache::sidecar_path(&target.path, sidecar.sidecar_dir.as_deref())
                .display()
                .to_string()
        });
        tracing::info!(
            store = %target.path.display(),
            handle = target.handle.as_deref(),
            sidecar = sidecar_path.as_deref().unwrap_or("none (--no-sidecar)"),
            federated = selection.federated,
            "store opened read-only"
        );
    }
}
