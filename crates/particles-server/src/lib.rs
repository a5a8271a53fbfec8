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
//!   Ours beside them: [`EXPLAIN_PATH`] (`POST /particles-rs/explain`), a
//!   request's ranking with each hit's score factors. Every request is logged
//!   (`tracing`, one line, with the id echoed in [`REQUEST_ID_HEADER`]) and
//!   counted; `--metrics-listen` serves Prometheus metrics, liveness and
//!   readiness on an address of their own.
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
//!     metrics_listen: None,
//!     warm: true,
//! };
//! particles_server::run_http(backend, options, |server| {
//!     eprintln!("listening on {}", server.local_addr()?);
//!     Ok(())
//! })?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

mod auth;
mod error;
mod explain;
mod http;
mod mcp;
mod observe;
mod proxy;
mod pyjson;
mod pytext;
mod rate_limit;
mod resources;
mod server;
mod service;

pub use crate::{
    auth::{check_startup, is_loopback_host, ApiKey, DEV_KEY},
    error::{Error, Result},
    http::{KeySource, Limits, EXPLAIN_PATH, JOURNAL_SEQ_HEADER, REPLICA_AGE_HEADER},
    mcp::{run_mcp_stdio, McpOptions},
    observe::REQUEST_ID_HEADER,
    server::{run_http, shutdown_signal, HttpOptions, HttpServer, DEFAULT_LISTEN},
    service::{Backend, VERSION},
};
