//! What the HTTP and MCP front ends share: the engine, the configuration they
//! read per request, and the reads they answer besides `/query`.

use std::{path::Path, sync::Arc};

use particles_engine::{Engine, Hydrated, PassageSettings, SourcePassage};
use particles_model::Particle;

use crate::{auth, Error, Result};

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
    /// The configuration and working directory the digest resolves store
    /// handles with (`default`, the keys of `storage.stores`).
    pub(crate) stores: (particles_config::Config, std::path::PathBuf),
    /// The stores the MCP server lists a digest resource for.
    pub(crate) digest_listed: Vec<String>,
}

/// How a read of a store named by handle went (the digest, the memory
/// projection).
pub(crate) enum StoreRead<T> {
    /// What was read.
    Rendered(T),
    /// The handle names no configured store.
    UnknownStore,
    /// The request is one the reference refuses with a 422, with its sentence.
    Refused(String),
    /// The store could not be read (the reference's 500), with why.
    Failed(String),
}

/// How a digest request went.
pub(crate) type DigestOutcome = StoreRead<particles_engine::RenderedDigest>;

impl Backend {
    /// The front ends' view of `engine`, configured by `loaded`; `store` is the
    /// store the engine serves (its blob directory is resolved beside it, as the
    /// reference resolves `storage.blob_dir` beside its default store).
    pub fn new(engine: Arc<Engine>, loaded: &particles_config::Loaded, store: &Path) -> Backend {
        let config = loaded.config();
        Backend {
            engine,
            policy: auth::Policy::from_config(&config.api),
            rate_limit_per_minute: config.api.rate_limit_per_minute,
            mcp_rate_limit_per_minute: config.mcp.rate_limit_per_minute,
            max_request_body_bytes: config.api.max_request_body_bytes,
            build_date: config.build.date.clone(),
            passage: PassageSettings::from_config(loaded, store),
            frozen_now: None,
            digest_listed: config.mcp.digest_listed_stores.clone(),
            stores: (config.clone(), std::env::current_dir().unwrap_or_default()),
        }
    }

    /// Names `store` as the `default` handle of the digest and the memory
    /// projection, as the reference's `DATABASE_URL` names its default store
    /// (for a server given its store as a file rather than a handle).
    #[must_use]
    pub fn with_default_store(mut self, store: &Path) -> Backend {
        self.stores.0.storage.database_url = format!("sqlite+aiosqlite:///{}", store.display());
        self
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
        self.source_passage(id)?
            .for_display(id)
            .map_err(Error::Refused)
    }

    /// The session digest of the store `handle` names (`GET /digest/{store}`,
    /// the MCP digest resource), through the observer `project` when given.
    /// Only configured handles are served, as the reference serves them.
    pub(crate) fn digest(&self, handle: &str, project: Option<&str>) -> DigestOutcome {
        let now = self.now();
        self.read_store(handle, |target| {
            self.engine.digest(target, handle, project, now)
        })
    }

    /// The memory projection's region body over the store `handle` names
    /// (`POST /memory/projection/{store}`): a remote render, so a manifest
    /// with a file section is refused.
    pub(crate) fn memory_region(
        &self,
        handle: &str,
        body: &particles_model::projection::MemoryProjectionRequest,
    ) -> StoreRead<particles_engine::MemoryRegion> {
        let now = self.now();
        let request = particles_engine::RegionRequest {
            base_dir: None,
            observer_project: body.observer_project.as_deref(),
            exclude_source_tags: &body.exclude_source_tags,
            fold_targets: &body.fold_targets,
        };
        self.read_store(handle, |target| {
            self.engine
                .memory_region(target, &body.manifest, request, now)
        })
    }

    fn now(&self) -> particles_model::Timestamp {
        self.frozen_now
            .unwrap_or_else(particles_model::Timestamp::now)
    }

    /// `read` over the store `handle` names, its failures sorted as the
    /// reference's routes sort them.
    fn read_store<T>(
        &self,
        handle: &str,
        read: impl FnOnce(&particles_engine::StoreTarget) -> particles_engine::Result<T>,
    ) -> StoreRead<T> {
        let (config, cwd) = &self.stores;
        let location = match particles_config::resolve_store(config, handle, cwd) {
            Ok(location) => location,
            Err(particles_config::Error::UnknownStore { .. }) => return StoreRead::UnknownStore,
            Err(error) => return StoreRead::Failed(error.to_string()),
        };
        if !location.path.is_file() {
            return StoreRead::Failed(format!(
                "the store {handle:?} names {}, which does not exist",
                location.path.display()
            ));
        }
        let target = particles_engine::StoreTarget {
            handle: Some(handle.to_owned()),
            path: location.path,
        };
        match read(&target) {
            Ok(output) => StoreRead::Rendered(output),
            Err(error) if error.is_refused_request() => StoreRead::Refused(error.to_string()),
            Err(error) => StoreRead::Failed(error.to_string()),
        }
    }

    pub(crate) fn source_passage(&self, id: &str) -> Result<Hydrated> {
        Ok(self.engine.source_passage(id, &self.passage)?)
    }
}

impl From<particles_engine::Error> for Error {
    fn from(error: particles_engine::Error) -> Error {
        Error::Engine(error)
    }
}
