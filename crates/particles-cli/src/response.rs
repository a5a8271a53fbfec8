//! The reference's `particles query` layout for a semantic answer: the
//! response formatted (`reference_text`), then, with `--show-source`, the
//! source passage behind each of the top hits. A formatter only: the answer
//! comes from the engine (`query::run`).

use std::{io::Write, path::Path};

use anyhow::Result;
use particles_engine::Engine;
use particles_model::response::QueryResponse;

use crate::{
    config_cmd::Configured,
    reference_text::{self, Layout},
};

/// Prints `response` in the reference's layout (notes on stderr), then, when
/// `sources` names the store, the passages of the top hits.
pub(crate) fn print_text(
    out: &mut impl Write,
    engine: &Engine,
    response: &QueryResponse,
    layout: &Layout,
    sources: Option<&Path>,
    config: &Configured,
) -> Result<()> {
    let stderr = std::io::stderr();
    let mut err = stderr.lock();
    reference_text::write_semantic(out, &mut err, response, layout)?;
    if let Some(store) = sources {
        let limit = usize::try_from(config.loaded.config().source_passage.query_show_limit)
            .unwrap_or(0)
            .min(response.particles.len());
        let hits = &response.particles[..limit];
        // Passages come from the store the hits were ranked in (a plain query:
        // --show-source refuses handles, as the reference refuses --store).
        let settings = particles_engine::PassageSettings::from_config(&config.loaded, store);
        let passages = hits
            .iter()
            .map(|hit| {
                engine
                    .source_passage(&hit.id, &settings)?
                    .for_display(&hit.id)
                    .map_err(anyhow::Error::msg)
            })
            .collect::<Result<Vec<_>>>()?;
        reference_text::write_sources(out, hits, response.particles.len(), &passages)?;
    }
    Ok(())
}
