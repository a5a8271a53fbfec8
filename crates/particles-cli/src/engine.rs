//! The one engine every verb queries through (`query` in all its layouts,
//! `serve --stdio`, `serve --http`, `mcp`): built here, once per process, from
//! the configuration, the selected stores, the sidecar flags and the encoder.
//! What differs between verbs is only how long the process lives and how it
//! treats a question it cannot encode.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
};

use anyhow::Result;
use particles_cache::SidecarWrite;
use particles_engine::{CacheOptions, Encode, Engine, ProgressFactory, StoreSelection};

use crate::{
    config_cmd::Configured,
    query::{ScanArgs, SidecarArgs},
};

/// How long the process lives, which decides how its caches are kept.
pub(crate) enum Lifetime<'a> {
    /// One question, then exit (`query`): the sidecar is written back after
    /// the answer whenever the state moved; `--no-sidecar` reads the store
    /// itself (no cache at all).
    OneShot,
    /// Many questions (`serve --stdio`): huge pages, the half-precision scan as
    /// `--half-precision` says, a small store's particles kept; the sidecar
    /// written after a rebuild (behind the cache, by the thread
    /// `Engine::follow_writes` starts; deltas stay in memory); `--no-sidecar`
    /// reads the store itself.
    Stdio(&'a ScanArgs),
    /// A server (`serve --http`, `mcp`): as `Stdio`, but `--no-sidecar` keeps
    /// an in-memory cache, and the encoder is loaded at start.
    #[cfg(feature = "server")]
    Server(&'a ScanArgs),
}

/// The engine over `selection`, configured by `configured`.
pub(crate) fn build(
    configured: &Configured,
    selection: &StoreSelection,
    sidecar: &SidecarArgs,
    model_dir: Option<&Path>,
    lifetime: Lifetime<'_>,
) -> Result<Engine> {
    let env: std::collections::HashMap<String, String> = configured
        .env
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let answer = particles_engine::answer_settings(configured.loaded.config(), &env);
    let mut options = CacheOptions {
        no_sidecar: sidecar.no_sidecar,
        sidecar_dir: sidecar.sidecar_dir.clone(),
        build_progress: Some(ProgressFactory(Arc::new(build_progress_bar))),
        ..CacheOptions::default()
    };
    let scan = match lifetime {
        Lifetime::OneShot => {
            options.write = Some(SidecarWrite::OnChange);
            options.uncached = sidecar.no_sidecar;
            None
        }
        Lifetime::Stdio(scan) => {
            options.uncached = sidecar.no_sidecar;
            Some(scan)
        }
        #[cfg(feature = "server")]
        Lifetime::Server(scan) => Some(scan),
    };
    if let Some(scan) = scan {
        options.write = Some(SidecarWrite::OnRebuild);
        options.huge_pages = true;
        options.half_precision = scan.half_precision_from();
        options.keep_particles = Some(particles_engine::KEEP_PARTICLES_MAX_ROWS);
    }
    let engine = match lifetime {
        #[cfg(feature = "server")]
        Lifetime::Server(_) => Engine::new(
            configured.settings.clone(),
            answer,
            selection,
            &options,
            load_encoder(model_dir),
        )?,
        Lifetime::OneShot | Lifetime::Stdio(_) => Engine::new(
            configured.settings.clone(),
            answer,
            selection,
            &options,
            Some(lazy_encoder(model_dir.map(Path::to_path_buf))),
        )?
        .with_strict_encoder(),
    };
    Ok(engine)
}

/// The encoder, loaded on the first question that needs it and kept: a
/// process that is given vectors never reads the model. A failure to load is
/// the question's error (and tried again on the next one).
fn lazy_encoder(model_dir: Option<PathBuf>) -> Encode {
    let loaded: Mutex<Option<Arc<crate::encode::Loaded>>> = Mutex::new(None);
    Arc::new(move |text: &str| {
        let encoder = {
            let mut slot = loaded.lock().unwrap_or_else(PoisonError::into_inner);
            match &*slot {
                Some(encoder) => Arc::clone(encoder),
                None => {
                    let encoder = Arc::new(
                        crate::encode::Loaded::load(model_dir.as_deref())
                            .map_err(|e| format_error(&e))?,
                    );
                    *slot = Some(Arc::clone(&encoder));
                    encoder
                }
            }
        };
        Ok(encoder.encode(text))
    })
}

#[cfg(feature = "server")]
/// The encoder, loaded once at start, as a server's seam; `None` (with a
/// warning) when this build has none or its model files are missing: queries
/// then rank degraded, as the reference's do without an encoder.
pub(crate) fn load_encoder(model_dir: Option<&Path>) -> Option<Encode> {
    match crate::encode::Loaded::load(model_dir) {
        Ok(encoder) => {
            let encoder = Arc::new(encoder);
            let encode: Encode = Arc::new(move |text: &str| Ok(encoder.encode(text)));
            Some(encode)
        }
        Err(error) => {
            eprintln!(
                "warning: no question encoder ({}); questions will rank degraded. \
                 `particles-rs model fetch` fetches the model.",
                format_error(&error)
            );
            None
        }
    }
}

/// An error and its causes on one line.
pub(crate) fn format_error(error: &anyhow::Error) -> String {
    error
        .chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// A progress bar for a cache build, drawn once the store is large enough for the
/// build to take a noticeable time (and only on a terminal).
pub(crate) fn build_progress_bar() -> particles_cache::BuildProgress {
    let mut bar: Option<indicatif::ProgressBar> = None;
    Box::new(move |seen, total| {
        if total < 20_000 {
            return;
        }
        let bar = bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix} {wide_bar} {pos}/{len} rows ({per_sec}, {eta} left)",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            bar.set_prefix("building the sidecar:");
            bar
        });
        bar.set_position(seen as u64);
        if seen >= total {
            bar.finish_and_clear();
        }
    })
}
