//! `query --response-json`: the reference's whole `QueryResponse` (the ranking,
//! every disclosure, and the answer from the configured provider) as one JSON
//! object on stdout, through the same engine `serve` uses.

use std::io::Write;

use anyhow::Result;
use particles_engine::{CacheOptions, Engine, StoreSelection};
use particles_model::{response::QueryResponse, Envelope, ValidRequest};

use crate::{
    config_cmd::Configured,
    query::SidecarArgs,
    reference_text::{self, Layout},
    UsageError,
};

/// Answers `request` on the selected stores through the engine `serve` uses.
fn respond(
    sidecar: &SidecarArgs,
    request: &ValidRequest,
    envelope: &Envelope,
    selection: &StoreSelection,
    config: &Configured,
) -> Result<(Engine, QueryResponse)> {
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
            half_precision: None,
            keep_particles: None,
            uncached: false,
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
    Ok((engine, response))
}

/// After the answer is printed: the sidecars are written back, and what could
/// not be is said.
fn persist(engine: &Engine) {
    for note in engine.persist() {
        eprintln!("note: {note}");
    }
}

/// Answers `request` on the selected stores and prints the response as one line
/// of JSON.
pub(crate) fn print_response(
    sidecar: &SidecarArgs,
    request: &ValidRequest,
    envelope: &Envelope,
    selection: &StoreSelection,
    config: &Configured,
) -> Result<()> {
    let (engine, response) = respond(sidecar, request, envelope, selection, config)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    serde_json::to_writer(&mut out, &response)?;
    writeln!(out)?;
    out.flush()?;
    drop(out);
    persist(&engine);
    Ok(())
}

/// Answers `request` and prints it in the reference's `particles query` layout,
/// then, with `show_source`, the source passage behind each of the top hits.
pub(crate) fn print_text(
    sidecar: &SidecarArgs,
    request: &ValidRequest,
    envelope: &Envelope,
    selection: &StoreSelection,
    config: &Configured,
    layout: &Layout,
    show_source: bool,
) -> Result<()> {
    let (engine, response) = respond(sidecar, request, envelope, selection, config)?;
    // Shared with the passage reader when --show-source needs one.
    let engine = std::sync::Arc::new(engine);
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    reference_text::write_semantic(&mut out, &mut err, &response, layout)?;
    if show_source {
        let limit = usize::try_from(config.loaded.config().source_passage.query_show_limit)
            .unwrap_or(0)
            .min(response.particles.len());
        let hits = &response.particles[..limit];
        // Passages come from the store the hits were ranked in (a plain query:
        // --show-source refuses handles, as the reference refuses --store).
        let backend = particles_server::Backend::new(
            engine.clone(),
            &config.loaded,
            &selection.targets[0].path,
        );
        let passages = hits
            .iter()
            .map(|hit| backend.passage_for_display(&hit.id))
            .collect::<Result<Vec<_>, _>>()?;
        reference_text::write_sources(&mut out, hits, response.particles.len(), &passages)?;
    }
    out.flush()?;
    drop((out, err));
    persist(&engine);
    Ok(())
}
