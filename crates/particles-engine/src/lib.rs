//! The engine as the front ends use it (the `particles-rs` CLI, `serve`): the
//! user's configuration turned into the settings the query crates take, and stores
//! named as the reference names them.
//!
//! - [`Settings::from_config`]: every configuration key that changes what a query
//!   returns, as `particles_rank::RankSettings` and the response's settings.
//! - [`resolve_stores`]: `--store` arguments (handles of `storage.stores`,
//!   `default`, or store files) or, with none, the configured default store; and
//!   whether the query federates (several stores, or any handle: the reference's
//!   CLI sends a handle to `query_federated` even alone).
//!
//! ```
//! let loaded = particles_config::load_defaults(&particles_config::Environment::new(
//!     Vec::new(),
//!     "/tmp",
//! ))?;
//! let settings = particles_engine::Settings::from_config(loaded.config());
//! assert_eq!(settings.rank.similarity_weight, 0.6);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]
#![forbid(unsafe_code)]

mod batcher;
mod engine;
mod follow;
mod passage;
mod respond;
mod settings;
mod stores;
mod writeback;

pub use crate::{
    batcher::BatchTiming,
    engine::{
        answer_settings, check_vector, AnswerTimings, Answered, CacheOptions, CacheReport, Detail,
        Encode, Engine, Following, ProgressFactory, Warmed,
    },
    passage::{Hydrated, PassageSettings, SourcePassage},
    settings::Settings,
    stores::{resolve_stores, StoreSelection, StoreTarget},
};
/// The most rows of a store whose particles a long-lived engine keeps
/// hydrated ([`CacheOptions::keep_particles`]).
pub use particles_cache::KEEP_PARTICLES_MAX_ROWS;
/// The session digest [`Engine::digest`] renders, and its lines.
pub use particles_respond::{DigestLine, FoldVerdict, MemoryRegion, RegionRequest, RenderedDigest};

/// Errors from applying the configuration or naming stores.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration names a store the engine cannot open (unknown handle,
    /// a non-SQLite URL, an in-memory database).
    #[error(transparent)]
    Config(#[from] particles_config::Error),
    /// A `--store` is neither a handle of the configuration nor an existing file.
    #[error("--store {name:?}: no store handle of the configuration has this name (known: {known}), and as a path it does not exist")]
    NoSuchStore {
        /// The argument.
        name: String,
        /// The configured handles.
        known: String,
    },
    /// The configured store's file does not exist; the reference would create an
    /// empty database there and then fail. Point `storage.database_url` (or
    /// `DATABASE_URL`) at an existing store, or pass `--store PATH`.
    #[error("the store {handle:?} names {path}, which does not exist; set storage.database_url (or DATABASE_URL) to an existing store, or pass --store PATH")]
    MissingStoreFile {
        /// The handle.
        handle: String,
        /// The file.
        path: std::path::PathBuf,
    },
    /// A store could not be opened or read.
    #[error(transparent)]
    Store(#[from] particles_store::Error),
    /// The ranking failed where the reference's fails too.
    #[error(transparent)]
    Query(#[from] particles_query::Error),
    /// The response around the ranking failed where the reference's fails too
    /// (an ambiguous subject prefix, a store it cannot read).
    #[error(transparent)]
    Respond(#[from] particles_respond::Error),
    /// A deterministic mode failed where the reference's fails too.
    #[error(transparent)]
    Structural(#[from] particles_structural::Error),
    /// The shared transaction of a batch of concurrent queries failed (the store
    /// could not be read); the message is the store's.
    #[error("{0}")]
    Batch(String),
    /// The request's envelope carries a vector of the wrong shape.
    #[error("{0}")]
    Encode(String),
    /// A Litestream replica's copy is behind the position this engine already
    /// answered at (restored anew from behind, or the primary restored from
    /// an older backup): answering from it would take the client back. The
    /// copy catches up as its follower applies.
    #[error("the replica {} is at journal position {seq}, behind position {floor} already answered at (its copy was restored anew, or the primary restored from an older backup); it answers again once its follower passes {floor} (retry shortly)", store.display())]
    ReplicaBehind {
        /// The replica's file.
        store: std::path::PathBuf,
        /// The new copy's position.
        seq: i64,
        /// The position it must reach.
        floor: i64,
    },
    /// A Litestream replica's copy is being restored anew (deleted, or its
    /// new copy not yet marked by its follower's `-txid` file) and no
    /// connection on the old copy is free to answer from.
    #[error("the replica {} is being restored anew (the copy or its follower's -txid file is not there yet); it answers again once its follower has restored it (retry shortly)", store.display())]
    ReplicaRestoring {
        /// The replica's file.
        store: std::path::PathBuf,
    },
}

impl Error {
    /// The store's own failure inside this error, when that is what it is (a
    /// file that cannot be opened or read): what an operator can act on and,
    /// unlike other errors' messages, never carrying the request's content.
    pub fn store_failure(&self) -> Option<&particles_store::Error> {
        match self {
            Error::Store(error)
            | Error::Query(particles_query::Error::Store(error))
            | Error::Respond(particles_respond::Error::Store(error)) => Some(error),
            _ => None,
        }
    }

    /// Whether the request itself is what the reference refuses with a 422
    /// (a memory manifest with a file section), rather than the store or the
    /// engine failing.
    pub fn is_refused_request(&self) -> bool {
        matches!(
            self,
            Error::Respond(particles_respond::Error::ClientFileSection)
        )
    }
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
