//! The crate's one error type.

/// Errors from starting or running the servers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The engine failed (a store that cannot be read, a failed query).
    #[error(transparent)]
    Engine(particles_engine::Error),
    /// The listening address cannot be bound (in use, or not an address of
    /// this host).
    #[error("cannot listen on {address}")]
    Bind {
        /// The address.
        address: std::net::SocketAddr,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Bearer auth is disabled and the bind is not loopback: the reference
    /// refuses to start, and so do we. Set PARTICLES_API_KEY or bind loopback.
    #[error("{0}")]
    Refused(String),
    /// The `--upstream` URL is not an `http://host:port` URL.
    #[error("--upstream {url:?} is not an http:// URL of the reference's engine ({reason})")]
    Upstream {
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Standard input or output failed (the MCP transport).
    #[error("the MCP transport failed: {0}")]
    Mcp(String),
    /// Reading or writing a file failed.
    #[error("{path}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
