//! `query --response-json`: the reference's whole `QueryResponse` (the ranking,
//! every disclosure, and the answer from the configured provider) as one JSON
//! object on stdout, through the same engine `serve` uses.

use std::io::Write;

use anyhow::Result;
use particles_engine::{CacheOptions, Engine, StoreSelection};
use particles_model::{Envelope, ValidRequest};

use crate::{config_cmd::Configured, query::SidecarArgs, UsageError};

/// Answers `request` on the selected stores and prints the response as one line
/// of JSON.
pub(crate) fn print_response(
    sidecar: &SidecarArgs,
    request: &ValidRequest,
    envelope: &Envelope,
    selection: &StoreSelection,
    config: &Configured,
) -> Result<()> {
    let env: std::collections::HashMap<String, String> = config
        .env
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let engine = Engine::new(
        config.settings.clone(),
        particles_engine::answer_settings(config.loaded.config(), &env),
        selection,
        &CacheOptions {
            no_sidecar: sidecar.no_sidecar,
            sidecar_dir: sidecar.sidecar_dir.clone(),
            write: Some(particles_cache::SidecarWrite::OnChange),
            huge_pages: false,
        },
        None,
    )?;
    let response = engine
        .query(request, envelope)
        .map_err(|error| match error {
            particles_engine::Error::Query(particles_query::Error::UnsupportedMode { .. }) => {
                anyhow::Error::new(UsageError(error.to_string()))
            }
            error => anyhow::Error::new(error),
        })?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    serde_json::to_writer(&mut out, &response)?;
    writeln!(out)?;
    out.flush()?;
    drop(out);
    for note in engine.persist() {
        eprintln!("note: {note}");
    }
    Ok(())
}
