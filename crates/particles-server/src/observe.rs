//! What an operator watches: one log line per request (with a request id
//! echoed in `x-request-id`), Prometheus metrics, and liveness and readiness,
//! on a listen address of their own (`--metrics-listen`) so that no route of
//! the reference's API changes meaning.
//!
//! Log lines never carry a header's value, a body or a query string: the API
//! key, a bearer token and a provider's key cannot reach the log.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use axum::{
    extract::{Request, State},
    http::{HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
    Router,
};
use particles_engine::Engine;
use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, EncodeMetric},
    metrics::{
        counter::{ConstCounter, Counter},
        family::Family,
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
        MetricType,
    },
    registry::Registry,
};
use serde_json::json;

use crate::http::{json_response, RawTarget, Shared};

/// The header a request id travels in, both ways.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Labels of a request series: the route it matched and its status.
type RequestLabels = Vec<(&'static str, String)>;

type HistogramFamily = Family<RequestLabels, Histogram, fn() -> Histogram>;

/// Every metric the HTTP engine keeps, and the registry that renders them.
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: HistogramFamily,
    rejected: Family<RequestLabels, Counter>,
    upstream_errors: Counter,
    inflight: Gauge,
    batch_size: Histogram,
    queue_wait: Histogram,
    encode: Histogram,
    journal_seq: Gauge,
}

fn latency_histogram() -> Histogram {
    // 0.1 ms to about 6.5 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 17))
}

impl Metrics {
    /// The metrics of a server over `engine` (whose cache routes are read at
    /// each scrape).
    pub(crate) fn new(engine: Arc<Engine>) -> Metrics {
        let mut registry = Registry::with_prefix("particles");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route (the router's pattern, or `forwarded`), method and status",
            requests.clone(),
        );
        let durations: HistogramFamily = Family::new_with_constructor(latency_histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its response's head, by route and status",
            durations.clone(),
        );
        let rejected = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_rejected",
            "Requests refused before the engine ran, by reason (auth, rate_limit, inflight_cap, body_cap)",
            rejected.clone(),
        );
        let upstream_errors = Counter::default();
        registry.register(
            "upstream_errors",
            "Forwarded requests the upstream engine did not answer (a 502 was sent)",
            upstream_errors.clone(),
        );
        let inflight = Gauge::default();
        registry.register(
            "queries_in_flight",
            "Queries the engine is answering now",
            inflight.clone(),
        );
        let batch_size = Histogram::new(exponential_buckets(1.0, 2.0, 8));
        registry.register(
            "query_batch_size",
            "Requests answered by the batch that answered each query (one shared pass over the vectors)",
            batch_size.clone(),
        );
        let queue_wait = latency_histogram();
        registry.register(
            "query_queue_wait_seconds",
            "Time a query waited for the passes ahead of its batch",
            queue_wait.clone(),
        );
        let encode = latency_histogram();
        registry.register(
            "encoder_seconds",
            "Time spent encoding a question (queries that brought a vector are not counted)",
            encode.clone(),
        );
        let journal_seq = Gauge::default();
        registry.register(
            "journal_seq_served",
            "The change-journal position the last answered query was exact at",
            journal_seq.clone(),
        );
        registry.register_collector(Box::new(CacheRoutes(engine)));
        Metrics {
            registry,
            requests,
            durations,
            rejected,
            upstream_errors,
            inflight,
            batch_size,
            queue_wait,
            encode,
            journal_seq,
        }
    }

    /// Counts a request refused for `reason`.
    pub(crate) fn reject(&self, reason: &'static str) {
        self.rejected
            .get_or_create(&vec![("reason", reason.to_owned())])
            .inc();
    }

    /// Records what the engine reported of one answered query.
    pub(crate) fn answered(&self, answered: &particles_engine::Answered) {
        if !answered.timings.encode.is_zero() {
            self.encode.observe(answered.timings.encode.as_secs_f64());
        }
        if let Some(batch) = &answered.timings.batch {
            self.batch_size.observe(batch.batch_size as f64);
            self.queue_wait.observe(batch.queued.as_secs_f64());
        }
        if let Some(seq) = answered.journal_seq {
            self.journal_seq.set(seq);
        }
    }

    /// A guard that counts one query in flight while it lives.
    pub(crate) fn in_flight(&self) -> InFlight {
        self.inflight.inc();
        InFlight(self.inflight.clone())
    }

    fn render(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// One query in flight (see [`Metrics::in_flight`]).
pub(crate) struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The engine's cache routes, read at each scrape.
struct CacheRoutes(Arc<Engine>);

impl std::fmt::Debug for CacheRoutes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheRoutes")
    }
}

impl Collector for CacheRoutes {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "cache_routes",
            "Times a store's candidate cache was brought to the store's head, by route (reuse, delta, rebuild, sidecar, ...)",
            None,
            MetricType::Counter,
        )?;
        for (route, count) in self.0.cache_route_counts() {
            let labels = [("route", route)];
            ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// What the query handler tells the access log about its answer (a response
/// extension).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueryTrace {
    pub(crate) journal_seq: Option<i64>,
    pub(crate) batch_size: Option<usize>,
}

/// A forwarded request's upstream status (`None`: the upstream did not
/// answer), as a response extension.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Forwarded(pub(crate) Option<u16>);

/// The route label of a request path: the router's pattern for our routes,
/// `other` for the rest (which are forwarded or refused).
fn route_label(path: &str) -> &'static str {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["query"] => "/query",
        ["health"] => "/health",
        ["particles", "contested"] => "/particles/contested",
        ["particles", "search"] => "/particles/search",
        ["particles", _] => "/particles/{id}",
        ["particles", _, "source"] => "/particles/{id}/source",
        ["particles-rs", "explain"] => crate::http::EXPLAIN_PATH,
        ["digest", _] => "/digest/{store}",
        _ => "other",
    }
}

/// A request id: the caller's, when it sent a usable one (1 to 128 visible
/// ASCII characters), else a new one unique to this process.
fn request_id(request: &Request) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let given = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()));
    match given {
        Some(id) => id.to_owned(),
        None => {
            let process = *PROCESS_TAG;
            format!("{process:08x}-{:08x}", NEXT.fetch_add(1, Ordering::Relaxed))
        }
    }
}

/// A per-process tag, so ids from two servers (or two runs) differ.
static PROCESS_TAG: std::sync::LazyLock<u32> = std::sync::LazyLock::new(|| {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish() as u32
});

/// The outermost layer: gives the request its id, times it, logs one line
/// when its response head is ready, and counts it.
pub(crate) async fn access(
    State(state): State<Shared>,
    mut request: Request,
    next: axum::middleware::Next,
) -> Response {
    let started = Instant::now();
    let id = request_id(&request);
    if let Ok(value) = HeaderValue::from_str(&id) {
        // Forwarded requests carry it to the upstream too.
        request.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    let method = request.method().clone();
    // The path as received, without its query string (which may carry
    // anything a caller put there).
    let path = request
        .extensions()
        .get::<RawTarget>()
        .map(|t| t.0.split('?').next().unwrap_or_default().to_owned())
        .unwrap_or_else(|| request.uri().path().to_owned());
    let route = route_label(request.uri().path());
    let mut response = next.run(request).await;
    let latency = started.elapsed();
    let status = response.status().as_u16();
    let forwarded = response.extensions().get::<Forwarded>().copied();
    let trace = response.extensions().get::<QueryTrace>().copied();
    let route = if forwarded.is_some() {
        "forwarded"
    } else {
        route
    };
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    let metrics = &state.metrics;
    let labels = vec![
        ("route", route.to_owned()),
        ("method", method.as_str().to_owned()),
        ("status", status.to_string()),
    ];
    metrics.requests.get_or_create(&labels).inc();
    metrics
        .durations
        .get_or_create(&vec![
            ("route", route.to_owned()),
            ("status", status.to_string()),
        ])
        .observe(latency.as_secs_f64());
    if let Some(Forwarded(None)) = forwarded {
        metrics.upstream_errors.inc();
    }
    tracing::info!(
        target: "particles_rs::access",
        request_id = %id,
        method = %method,
        path = %path,
        route,
        status,
        latency_ms = latency.as_secs_f64() * 1000.0,
        journal_seq = trace.and_then(|t| t.journal_seq),
        batch_size = trace.and_then(|t| t.batch_size),
        upstream_status = forwarded.and_then(|f| f.0),
        upstream_unreachable = matches!(forwarded, Some(Forwarded(None))),
        "request"
    );
    response
}

/// The operator's listener: `/metrics`, `/livez`, `/readyz`.
pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .with_state(state)
}

async fn metrics(State(state): State<Shared>) -> Response {
    match state.metrics.render() {
        Ok(text) => (
            StatusCode::OK,
            [(
                axum::http::header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            )],
            text,
        )
            .into_response(),
        Err(_) => crate::http::internal_error(),
    }
}

/// Liveness: the process answers.
async fn livez() -> Response {
    json_response(StatusCode::OK, &json!({"status": "alive"}))
}

/// How long readiness waits for the caches to reach the head before it says
/// they are still being built.
const READY_REFRESH_WAIT: Duration = Duration::from_secs(5);
/// How long readiness waits for the upstream's `/health`.
const READY_UPSTREAM_WAIT: Duration = Duration::from_secs(2);

/// Readiness: 200 only when every store opens, every cache is at its store's
/// head (the check brings it there, as the next query would), the encoder is
/// loaded and the upstream, when one is configured, answers `/health`; else
/// 503. The body says which check failed, and why.
async fn readyz(State(state): State<Shared>) -> Response {
    let engine = state.backend.engine.clone();
    let warm = tokio::time::timeout(
        READY_REFRESH_WAIT,
        tokio::task::spawn_blocking(move || engine.warm()),
    )
    .await;
    let (stores, stores_ok) = match warm {
        Ok(Ok(Ok(warmed))) => {
            let stores: Vec<_> = warmed
                .iter()
                .map(|w| {
                    let mut store = json!({
                        "store": w.store.display().to_string(),
                        "open": true,
                        "cache": w.route.map_or("uncached", |r| r.as_str()),
                        "rows": w.rows,
                        "journal_seq": w.journal_seq,
                    });
                    if let Some(follower) = particles_store::replica::follower_state(&w.store) {
                        store["replica"] = replica_json(&follower);
                    }
                    store
                })
                .collect();
            (json!(stores), true)
        }
        Ok(Ok(Err(error))) => (json!({"error": error.to_string()}), false),
        Ok(Err(_)) => (json!({"error": "the readiness check panicked"}), false),
        Err(_) => (
            json!({"error": format!(
                "the candidate caches are still being brought to the store's head (over {} s)",
                READY_REFRESH_WAIT.as_secs()
            )}),
            false,
        ),
    };
    let encoder_ok = state.backend.engine.has_encoder();
    let (upstream, upstream_ok) = match &state.upstream {
        None => (json!(null), true),
        Some(upstream) => match upstream.health(READY_UPSTREAM_WAIT).await {
            Ok(200) => (json!({"url": upstream.url(), "status": 200}), true),
            Ok(status) => (json!({"url": upstream.url(), "status": status}), false),
            Err(error) => (json!({"url": upstream.url(), "error": error}), false),
        },
    };
    let ready = stores_ok && encoder_ok && upstream_ok;
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(
        status,
        &json!({
            "ready": ready,
            "stores": stores,
            "encoder": if encoder_ok { "loaded" } else { "missing: questions without a vector rank degraded" },
            "upstream": upstream,
        }),
    )
}

/// A Litestream replica's readiness entry: the transaction id its follower
/// last applied and how long ago the copy last moved. Not a failure by
/// itself: an idle primary leaves the copy still, and the answers stay exact
/// at the position they name whatever its age.
fn replica_json(follower: &particles_store::replica::FollowerState) -> serde_json::Value {
    let age = std::time::SystemTime::now()
        .duration_since(follower.applied_at)
        .unwrap_or_default();
    json!({
        "litestream_txid": follower.txid,
        "seconds_since_copy_moved": (age.as_secs_f64() * 1000.0).round() / 1000.0,
    })
}

/// How long ago the oldest of the engine's replica copies last moved, or
/// `None` when it serves no replica (or no follower state can be read).
pub(crate) fn replica_age(engine: &Engine) -> Option<Duration> {
    let now = std::time::SystemTime::now();
    engine
        .replica_stores()
        .into_iter()
        .filter_map(particles_store::replica::follower_state)
        .map(|follower| now.duration_since(follower.applied_at).unwrap_or_default())
        .max()
}

/// How long a replica copy may stand still before the log says so.
const REPLICA_STILL: Duration = Duration::from_secs(60);

/// How often the replica watcher looks at the followers' state.
const REPLICA_WATCH_EVERY: Duration = Duration::from_secs(1);

/// What the watcher last knew of one replica.
#[derive(Default)]
struct Watched {
    txid: Option<String>,
    /// Whether the log has said the copy stands still (said once a stillness).
    said_still: bool,
    /// Whether the log has said the follower's file is gone.
    said_gone: bool,
}

/// Says in the log what happens to the engine's Litestream replicas, looking
/// once a second: the follower's `-txid` file gone (the copy deleted for a
/// restore, or the follower removed) and back; the copy standing still for a
/// minute (the follower stopped, the object store unreachable, or an idle
/// primary) and moving again; and the transaction id going back (a copy
/// restored from an older replica). A replaced copy is said by the engine,
/// which switches to it. Nothing here changes what is answered.
pub(crate) fn watch_replicas(engine: Arc<Engine>) {
    let stores: Vec<std::path::PathBuf> = engine
        .replica_stores()
        .into_iter()
        .map(std::path::Path::to_owned)
        .collect();
    if stores.is_empty() {
        return;
    }
    tokio::spawn(async move {
        let mut watched: Vec<Watched> = stores.iter().map(|_| Watched::default()).collect();
        for (store, w) in stores.iter().zip(&mut watched) {
            let state = particles_store::replica::follower_state(store);
            tracing::info!(
                store = %store.display(),
                litestream_txid = state.as_ref().map(|s| s.txid.as_str()),
                "serving a Litestream replica (a follow-mode copy)"
            );
            w.txid = state.map(|s| s.txid);
        }
        let mut tick = tokio::time::interval(REPLICA_WATCH_EVERY);
        loop {
            tick.tick().await;
            for (store, w) in stores.iter().zip(&mut watched) {
                watch_one(store, w);
            }
        }
    });
}

fn watch_one(store: &std::path::Path, w: &mut Watched) {
    let shown = store.display();
    let Some(state) = particles_store::replica::follower_state(store) else {
        if !w.said_gone {
            w.said_gone = true;
            tracing::warn!(
                store = %shown,
                "the replica's follower file {shown}-txid is gone (the copy deleted for a \
                 restore, or its follower removed): answering from the copy already open, at \
                 its last position"
            );
        }
        return;
    };
    if std::mem::take(&mut w.said_gone) {
        tracing::info!(
            store = %shown,
            litestream_txid = %state.txid,
            "the replica's follower file is back"
        );
    }
    // Litestream writes its ids as 16 hex digits: text order is number order.
    if let Some(before) = &w.txid {
        if state.txid < *before {
            tracing::warn!(
                store = %shown,
                litestream_txid = %state.txid,
                before = %before,
                "the replica's Litestream transaction id went back: the copy was restored \
                 from a replica behind it; answers below the position already answered at \
                 are refused until it catches up"
            );
        }
    }
    let still = std::time::SystemTime::now()
        .duration_since(state.applied_at)
        .unwrap_or_default();
    if still >= REPLICA_STILL && !w.said_still {
        w.said_still = true;
        tracing::warn!(
            store = %shown,
            litestream_txid = %state.txid,
            seconds_still = still.as_secs(),
            "the replica copy has not moved for {} s (its follower stopped, the object store \
             unreachable, or the primary idle): answers stay exact at the position they name",
            still.as_secs()
        );
    } else if still < REPLICA_STILL && w.said_still {
        w.said_still = false;
        tracing::info!(
            store = %shown,
            litestream_txid = %state.txid,
            "the replica copy moves again"
        );
    }
    w.txid = Some(state.txid);
}

/// Brings the caches to their stores' heads once the server listens, so the
/// first query does not pay the build, and says how it went.
pub(crate) fn warm_at_start(engine: Arc<Engine>) {
    tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        match engine.warm() {
            Ok(warmed) => {
                for w in warmed {
                    tracing::info!(
                        store = %w.store.display(),
                        route = w.route.map_or("uncached", |r| r.as_str()),
                        rows = w.rows,
                        journal_seq = w.journal_seq,
                        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
                        "candidate cache at the store's head"
                    );
                }
            }
            Err(error) => {
                tracing::warn!(%error, "the candidate caches could not be built at start")
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_labelled_by_their_pattern() {
        assert_eq!(route_label("/query"), "/query");
        assert_eq!(route_label("/particles/abc"), "/particles/{id}");
        assert_eq!(
            route_label("/particles/abc/source"),
            "/particles/{id}/source"
        );
        assert_eq!(route_label("/particles/contested"), "/particles/contested");
        assert_eq!(route_label("/digest/main"), "/digest/{store}");
        assert_eq!(route_label("/events"), "other");
    }
}
