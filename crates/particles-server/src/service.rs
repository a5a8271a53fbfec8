//! What the HTTP and MCP front ends share: the engine, the configuration they
//! read per request, and the reads they answer besides `/query`.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use particles_engine::Engine;
use particles_model::Particle;

use crate::{
    auth,
    passage::{self, Hydrated, PassageSettings, SourcePassage},
    Error, Result,
};

/// Our `/health` version: clearly ours, so `particles --version` against this
/// engine says which engine answered.
pub const VERSION: &str = concat!("particles-rs ", env!("CARGO_PKG_VERSION"));

/// The engine and the configuration the front ends read.
pub struct Backend {
    pub(crate) engine: Arc<Engine>,
    pub(crate) policy: auth::Policy,
    pub(crate) rate_limit_per_minute: i64,
    pub(crate) mcp_rate_limit_per_minute: i64,
    pub(crate) max_request_body_bytes: i64,
    pub(crate) build_date: Option<String>,
    pub(crate) passage: PassageSettings,
    pub(crate) frozen_now: Option<particles_model::Timestamp>,
}

impl Backend {
    /// The front ends' view of `engine`, configured by `loaded`; `store` is the
    /// store the engine serves (its blob directory is resolved beside it, as the
    /// reference resolves `storage.blob_dir` beside its default store).
    pub fn new(engine: Arc<Engine>, loaded: &particles_config::Loaded, store: &Path) -> Backend {
        let config = loaded.config();
        let int_key = |key: &str, default: usize| {
            loaded
                .value(key)
                .and_then(|v| v.as_u64())
                .and_then(|v| usize::try_from(v).ok())
                .unwrap_or(default)
        };
        let tool_turn_source_types = loaded
            .value("extraction.tool_turn_source_types")
            .and_then(|v| {
                v.as_array().map(|items| {
                    items
                        .iter()
                        .filter_map(|item| item.as_str().map(str::to_owned))
                        .collect()
                })
            })
            .unwrap_or_else(|| vec!["CONVERSATION".to_owned(), "JOURNAL".to_owned()]);
        Backend {
            engine,
            policy: auth::Policy::from_config(&config.api),
            rate_limit_per_minute: config.api.rate_limit_per_minute,
            mcp_rate_limit_per_minute: config.mcp.rate_limit_per_minute,
            max_request_body_bytes: config.api.max_request_body_bytes,
            build_date: config.build.date.clone(),
            passage: PassageSettings {
                locate_min_overlap: config.source_passage.locate_min_overlap,
                max_passage_chars: usize::try_from(config.source_passage.max_passage_chars)
                    .unwrap_or(6000),
                html_chunk_size: int_key("extraction.html_chunk_size", 15_000),
                tool_turn_source_types,
                blob_dir: blob_dir(&config.storage.blob_dir, store, loaded.path()),
            },
            frozen_now: None,
        }
    }

    /// Evaluates decay and the recency window at `now` instead of the wall
    /// clock (for comparisons with a reference whose clock is frozen too).
    #[must_use]
    pub fn with_frozen_clock(mut self, now: particles_model::Timestamp) -> Backend {
        self.frozen_now = Some(now);
        self
    }

    /// The envelope of a request body: its `vector`, `no_embedding` and `now`
    /// (ours, beside the reference's fields, which ignore them), the frozen
    /// clock when the body gives no `now`.
    ///
    /// # Errors
    ///
    /// A pydantic-shaped error for an envelope field of the wrong type, or both
    /// a vector and `no_embedding`.
    pub(crate) fn envelope_from(
        &self,
        body: &serde_json::Value,
    ) -> std::result::Result<particles_model::Envelope, particles_model::RequestErrors> {
        let mut envelope = particles_model::Envelope::from_json(body)?;
        envelope.now = envelope.now.or(self.frozen_now);
        Ok(envelope)
    }

    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The contested backref map (`GET /particles/contested`): belief id ->
    /// the INCONSISTENCY record naming it, first record wins, in the order the
    /// store returns the records.
    ///
    /// # Errors
    ///
    /// [`Error::Engine`] when the store cannot be read.
    pub fn contested(&self) -> Result<Vec<(String, String)>> {
        Ok(self
            .engine
            .with_store(|store| Ok(particles_store::inconsistency_backrefs(store)?))?)
    }

    /// One particle by its exact id.
    ///
    /// # Errors
    ///
    /// [`Error::Engine`] when the store cannot be read.
    pub fn particle(&self, id: &str) -> Result<Option<Particle>> {
        Ok(self.engine.with_store(|store| {
            Ok(particles_store::particles_by_ids(store, &[id])?
                .into_iter()
                .next())
        })?)
    }

    /// The source passage behind a particle, as `particles query --show-source`
    /// prints it: `None` when no particle has this id. An HTML or PDF source,
    /// which only the reference renders, comes back with its metadata and a note
    /// saying so.
    ///
    /// # Errors
    ///
    /// [`Error::Engine`] when the store cannot be read; [`Error::Refused`] where
    /// the reference raises (an ambiguous snapshot prefix, a malformed hash).
    pub fn passage_for_display(&self, id: &str) -> Result<Option<SourcePassage>> {
        match self.source_passage(id)? {
            Hydrated::Missing => Ok(None),
            Hydrated::Passage(passage) => Ok(Some(passage)),
            Hydrated::Unrendered(mut passage) => {
                passage.note = Some(format!(
                    "This source is HTML or PDF, which particles-rs does not render; \
                     `particles particle source {id}` shows it."
                ));
                Ok(Some(passage))
            }
            Hydrated::Raised(message) => Err(Error::Refused(message)),
        }
    }

    pub(crate) fn source_passage(&self, id: &str) -> Result<Hydrated> {
        Ok(self
            .engine
            .with_store(|store| Ok(passage::hydrate(store, id, &self.passage)?))?)
    }
}

/// `storage.blob_dir` as the reference resolves it: `~` expanded, an absolute
/// path as is, a relative one beside the store (our store is always a file),
/// else beside the configuration file.
fn blob_dir(value: &str, store: &Path, config_file: Option<&Path>) -> PathBuf {
    let expanded = match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map(|home| PathBuf::from(home).join(rest))
            .unwrap_or_else(|| PathBuf::from(value)),
        None => PathBuf::from(value),
    };
    if expanded.is_absolute() {
        return expanded;
    }
    if let Some(parent) = store.parent().filter(|_| store.is_absolute()) {
        return parent.join(expanded);
    }
    match config_file.and_then(Path::parent) {
        Some(dir) => dir.join(expanded),
        None => expanded,
    }
}

impl From<particles_engine::Error> for Error {
    fn from(error: particles_engine::Error) -> Error {
        Error::Engine(error)
    }
}
