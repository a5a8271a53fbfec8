//! The particles-rs engine served over HTTP and MCP.
//!
//! - [`HttpServer`] / [`run_http`]: the reference's HTTP API as far as queries
//!   need it: `POST /query`, `GET /health`, `GET /particles/contested`,
//!   `GET /particles/{id}`, `GET /particles/{id}/source`. Every other path and
//!   method is forwarded to the reference's own engine (`--upstream URL`), or
//!   answered 501 naming the path. The reference's gates and limits apply in its
//!   order (spec engine-api §2): the host bound, the body cap, the bearer gate,
//!   the rate limit, then validation; plus ours: header and body timeouts and a
//!   cap on queries in flight. A `/query` answer carries the journal position it
//!   is exact at in [`JOURNAL_SEQ_HEADER`].
//! - [`run_mcp_stdio`]: the reference's MCP `query` tool on stdio (rmcp).
//!
//! Queries run on blocking threads (SQLite and the answer's provider call
//! block); the engine's candidate cache is shared, so one refresh serves every
//! query at the same journal head.
//!
//! ```no_run
//! # fn demo(engine: particles_engine::Engine, loaded: &particles_config::Loaded) -> particles_server::Result<()> {
//! use std::sync::Arc;
//! let backend = Arc::new(particles_server::Backend::new(Arc::new(engine), loaded, "beliefs.db".as_ref()));
//! let options = particles_server::HttpOptions {
//!     listen: particles_server::DEFAULT_LISTEN.parse().expect("an address"),
//!     upstream: None,
//!     limits: Default::default(),
//!     key: particles_server::KeySource::Environment,
//! };
//! particles_server::run_http(backend, options, |address, _| eprintln!("listening on {address}"))?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

mod auth;
mod error;
mod http;
mod mcp;
mod proxy;
mod pyjson;
mod pytext;
mod rate_limit;
mod server;
mod service;

pub use crate::{
    auth::{check_startup, is_loopback_host, ApiKey, DEV_KEY},
    error::{Error, Result},
    http::{KeySource, Limits, JOURNAL_SEQ_HEADER},
    mcp::{run_mcp_stdio, McpOptions},
    server::{run_http, shutdown_signal, HttpOptions, HttpServer, DEFAULT_LISTEN},
    service::{Backend, VERSION},
};
