//! `particles-rs digest`: the session digest of a store, as the reference's
//! `GET /digest/{store}` renders it (its Markdown, or with `--json` the body
//! that route answers with), through the one engine.

use std::io::Write;

use anyhow::{Context, Result};
use clap::Args;
use particles_model::Timestamp;

use crate::{config_cmd::Configured, engine, query::SidecarArgs};

/// `digest` arguments.
#[derive(Debug, Args)]
pub(crate) struct DigestArgs {
    /// The store: a handle of the configuration (`default`, a key of
    /// `storage.stores`) or a file. Without it, the configured default store.
    #[arg(long, value_name = "HANDLE|PATH")]
    store: Option<String>,

    /// Read the store through this project's observer: global beliefs plus those
    /// observed in the project (as `GET /digest/{store}?project=`).
    #[arg(long, value_name = "P")]
    project: Option<String>,

    /// Print the JSON `GET /digest/{store}` answers with (`markdown`, and the
    /// belief and character offset of each line) instead of the Markdown.
    #[arg(long)]
    json: bool,

    /// The instant decay and use events are aged at (RFC 3339; default: now).
    #[arg(long, value_name = "RFC3339", value_parser = parse_instant)]
    now: Option<Timestamp>,
}

/// `--now`'s parser (the recall verbs' frozen clock).
pub(crate) fn parse_instant(text: &str) -> Result<Timestamp, String> {
    Timestamp::parse(text)
        .map_err(|_| format!("{text:?} is not an instant; use RFC 3339, e.g. 2026-01-31T12:00:00Z"))
}

/// Prints the digest.
pub(crate) fn run(args: &DigestArgs, configured: &Configured) -> Result<()> {
    if args.project.as_deref() == Some("") {
        return Err(crate::UsageError(
            "--project: give a project name (at least one character)".to_owned(),
        )
        .into());
    }
    let (engine, target) = one_store_engine(configured, args.store.as_deref())?;
    let target = &target;
    let name = args
        .store
        .clone()
        .unwrap_or_else(|| particles_config::DEFAULT_STORE.to_owned());
    let now = args.now.unwrap_or_else(Timestamp::now);
    let rendered = engine
        .digest(target, &name, args.project.as_deref(), now)
        .with_context(|| format!("the digest of {name} failed"))?;
    print(args.json, &rendered, &rendered.markdown)
}

/// A one-shot engine over the store `--store` names (a handle or a file; the
/// configured default without it), no sidecar: the recall verbs read the store
/// once.
pub(crate) fn one_store_engine(
    configured: &Configured,
    store: Option<&str>,
) -> Result<(particles_engine::Engine, particles_engine::StoreTarget)> {
    let named: Vec<String> = store.into_iter().map(str::to_owned).collect();
    let selection = configured.stores(&named)?;
    let target = selection.targets[0].clone();
    let sidecar = SidecarArgs {
        sidecar_dir: None,
        no_sidecar: true,
    };
    let engine = engine::build(
        configured,
        &selection,
        &sidecar,
        None,
        engine::Lifetime::OneShot,
    )?;
    Ok((engine, target))
}

/// Prints `value` as one JSON line with `json`, else `text` as it is.
pub(crate) fn print(json: bool, value: &impl serde::Serialize, text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, value)?;
        out.write_all(b"\n")?;
    } else {
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}
