//! The listener: one hyper HTTP/1.1 connection per accepted socket (a header
//! read timeout against slow clients), the router behind it, and a graceful
//! stop on SIGTERM or Ctrl-C that lets in-flight requests finish.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Instant};

use axum::body::Body;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tower::ServiceExt;

use crate::{
    auth,
    http::{prepare, router, AppState, KeySource, Limits},
    proxy::Upstream,
    service::Backend,
    Error, Result,
};

/// How the HTTP engine listens and what it forwards.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The reference's engine, for every route not answered here.
    pub upstream: Option<String>,
    /// Our own limits.
    pub limits: Limits,
    /// Where `PARTICLES_API_KEY` is read.
    pub key: KeySource,
    /// Where `/metrics`, `/livez` and `/readyz` are served (`--metrics-listen`),
    /// apart from the reference's API; `None`: not served.
    pub metrics_listen: Option<SocketAddr>,
    /// Bring the candidate caches to their stores' heads as soon as the
    /// server listens (so the first query does not pay the build), and again
    /// soon after another process commits to a store, with the sources the
    /// truncation band reads (so the first query after a write does not pay
    /// the delta: [`particles_engine::Engine::follow_writes`]).
    pub warm: bool,
}

/// The default listening address: loopback, port 8931.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8931";

/// A bound HTTP engine, not yet serving.
pub struct HttpServer {
    warm: bool,
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    state: Arc<AppState>,
}

impl HttpServer {
    /// Checks the fail-closed rule and binds the listener.
    ///
    /// # Errors
    ///
    /// [`Error::Refused`] in dev mode on a non-loopback address,
    /// [`Error::Upstream`] for a bad `--upstream`, [`Error::Bind`] when the
    /// address cannot be bound.
    pub async fn bind(backend: Arc<Backend>, options: HttpOptions) -> Result<HttpServer> {
        auth::check_startup(
            &options.key.current(),
            &options.listen.ip().to_string(),
            "--listen",
        )
        .map_err(Error::Refused)?;
        let upstream = options
            .upstream
            .as_deref()
            .map(Upstream::parse)
            .transpose()?;
        let listener = TcpListener::bind(options.listen)
            .await
            .map_err(|source| Error::Bind {
                address: options.listen,
                source,
            })?;
        let metrics_listener = match options.metrics_listen {
            Some(address) => Some(
                TcpListener::bind(address)
                    .await
                    .map_err(|source| Error::Bind { address, source })?,
            ),
            None => None,
        };
        let metrics = crate::observe::Metrics::new(backend.engine.clone());
        let state = Arc::new(AppState {
            metrics,
            backend,
            upstream,
            inflight: Semaphore::new(options.limits.max_inflight_queries.max(1)),
            limits: options.limits,
            buckets: Default::default(),
            clock: Instant::now(),
            key: options.key,
        });
        Ok(HttpServer {
            warm: options.warm,
            listener,
            metrics_listener,
            state,
        })
    }

    /// The metrics address actually bound, when `--metrics-listen` was given.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|listener| listener.local_addr().ok())
    }

    /// The address actually bound (port 0 picks a free one).
    ///
    /// # Errors
    ///
    /// [`Error::Bind`] if the socket cannot say.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.listener.local_addr().map_err(|source| Error::Bind {
            address: SocketAddr::from(([0, 0, 0, 0], 0)),
            source,
        })
    }

    /// The upstream URL, when requests are forwarded.
    pub fn upstream(&self) -> Option<&str> {
        self.state.upstream.as_ref().map(Upstream::url)
    }

    /// Serves until `shutdown` completes, then stops accepting and waits for
    /// in-flight requests (at most the drain timeout).
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let HttpServer {
            warm,
            listener,
            metrics_listener,
            state,
        } = self;
        if let Some(metrics_listener) = metrics_listener {
            let operator = crate::observe::router(state.clone());
            tokio::spawn(async move {
                if let Err(error) = axum::serve(metrics_listener, operator).await {
                    tracing::error!(%error, "the metrics listener stopped");
                }
            });
        }
        if warm {
            crate::observe::warm_at_start(state.backend.engine.clone());
            let following = state.backend.engine.follow_writes();
            tracing::debug!(
                writes = following.writes,
                write_behind = following.write_behind,
                "the stores' writes are followed"
            );
        }
        crate::observe::watch_replicas(state.backend.engine.clone());
        let drain = state.limits.drain_timeout;
        let app = router(state.clone());
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(state.limits.header_timeout);
        let graceful = GracefulShutdown::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, peer)) = accepted else {
                        // Out of descriptors, or a connection reset before
                        // accept: wait a moment rather than spin.
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let app = app.clone();
                    let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
                        let request = prepare(request.map(Body::new), peer);
                        app.clone().oneshot(request)
                    });
                    let connection = builder.serve_connection(TokioIo::new(stream), service);
                    let connection = graceful.watch(connection);
                    tokio::spawn(async move {
                        let _ = connection.await;
                    });
                }
                () = &mut shutdown => break,
            }
        }
        drop(listener);
        tokio::select! {
            () = graceful.shutdown() => {}
            () = tokio::time::sleep(drain) => {}
        }
    }
}

/// Completes on SIGTERM or Ctrl-C (SIGINT).
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// Runs the HTTP engine on its own runtime until SIGTERM or Ctrl-C; `ready` is
/// called with the server, bound, once it listens.
///
/// # Errors
///
/// Whatever [`HttpServer::bind`] refuses.
pub fn run_http(
    backend: Arc<Backend>,
    options: HttpOptions,
    ready: impl FnOnce(&HttpServer) -> Result<()>,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("particles-http")
        .build()
        .map_err(|source| Error::Io {
            path: "tokio runtime".into(),
            source,
        })?;
    runtime.block_on(async move {
        let server = HttpServer::bind(backend, options).await?;
        ready(&server)?;
        server.run(shutdown_signal()).await;
        Ok(())
    })
}
