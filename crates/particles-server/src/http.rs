//! The HTTP engine: the reference's routes that particles-rs answers, the
//! reference's gates and limits in its order, everything else forwarded.
//!
//! Order of checks on every request (the reference's middleware, outermost
//! first): the host bound (503/403), then the body cap (413 on a declared
//! `Content-Length`). On `POST /query`, as FastAPI does it: the body is read
//! (413 past the cap, 408 past the body timeout), a JSON body is decoded (422
//! `json_invalid`), then AuthDep (401/403/503), the rate limit (429, spends a
//! token), validation (422), and our in-flight cap (503) before the engine runs
//! on a blocking thread.
//!
//! Routing follows Starlette's: on the percent-decoded path, so an encoded `/`
//! in an id makes a different path (and no route of ours).

use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{
    body::Body,
    extract::{Path, RawQuery, Request, State},
    http::{header, HeaderMap, HeaderValue, Method, StatusCode},
    response::{IntoResponse, Response},
    routing::{any, get, post},
    Router,
};
use bytes::Bytes;
use http_body_util::BodyExt;
use particles_engine::Hydrated;
use particles_model::{QueryRequest, Timestamp};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::{
    auth::{self, ApiKey, Caller, Refusal},
    proxy::Upstream,
    pyjson,
    rate_limit::{self, Buckets},
    service::{Backend, DigestOutcome, StoreRead, VERSION},
};

/// Limits of our own, beyond the reference's.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Queries answered at once; past it `/query` gets a 503.
    pub max_inflight_queries: usize,
    /// Time a client has to send its request line and headers (slowloris).
    pub header_timeout: Duration,
    /// Time a client has to send a body we read (slowloris).
    pub body_timeout: Duration,
    /// On shutdown, how long in-flight requests may take to finish.
    pub drain_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_inflight_queries: 32,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(120),
        }
    }
}

/// The peer of a connection, put on every request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) Option<IpAddr>);

/// The request target as received, before the path was decoded for routing:
/// what a forwarded request carries upstream.
#[derive(Debug, Clone)]
pub(crate) struct RawTarget(pub(crate) String);

/// Everything a handler needs.
pub(crate) struct AppState {
    pub(crate) backend: Arc<Backend>,
    pub(crate) upstream: Option<Upstream>,
    pub(crate) limits: Limits,
    pub(crate) buckets: Buckets,
    pub(crate) clock: Instant,
    pub(crate) inflight: Semaphore,
    /// Where `PARTICLES_API_KEY` comes from: the process environment per
    /// request (as the reference reads it), or a fixed value in tests.
    pub(crate) key: KeySource,
    /// What `--metrics-listen` serves.
    pub(crate) metrics: crate::observe::Metrics,
}

/// Where the API key is read.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// `PARTICLES_API_KEY` from the process environment, on every request.
    Environment,
    /// A fixed value (`None` = unset).
    Fixed(Option<String>),
}

impl KeySource {
    pub(crate) fn current(&self) -> ApiKey {
        match self {
            KeySource::Environment => ApiKey::from_value(std::env::var("PARTICLES_API_KEY").ok()),
            KeySource::Fixed(value) => ApiKey::from_value(value.clone()),
        }
    }
}

pub(crate) type Shared = Arc<AppState>;

/// The `Server-Timing` header of a `/query` answer (W3C Server Timing), in
/// milliseconds: `thread` (waiting for a blocking thread), `encode` (with its
/// wait for a pass of the shared encoder), `queue` (the passes ahead of this
/// request's batch), `pass` (its batch's shared passes), `batch` (from its
/// batch's start to its own answer; `desc` is how many requests the batch
/// answered), `rank` (the ranking and response, queue and batch included),
/// `answer` (the answer step) and `total` (all of it, from the handler's
/// hand-off to the engine). Read by `benchmark serve-load`.
pub(crate) const SERVER_TIMING: &str = "server-timing";

fn server_timing(
    waited: Duration,
    timings: &particles_engine::AnswerTimings,
    total: Duration,
) -> String {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut text = format!(
        "thread;dur={:.3}, encode;dur={:.3}",
        ms(waited),
        ms(timings.encode)
    );
    if let Some(batch) = &timings.batch {
        text.push_str(&format!(
            ", queue;dur={:.3}, pass;dur={:.3}, batch;dur={:.3};desc=\"{}\"",
            ms(batch.queued),
            ms(batch.pass),
            ms(batch.batch),
            batch.batch_size
        ));
    }
    text.push_str(&format!(
        ", rank;dur={:.3}, answer;dur={:.3}, total;dur={:.3}",
        ms(timings.rank),
        ms(timings.answer),
        ms(total)
    ));
    text
}

/// A JSON response with `{"detail": ...}`.
pub(crate) fn detail(status: StatusCode, text: impl Into<String>) -> Response {
    json_response(status, &json!({ "detail": text.into() }))
}

/// The response header that names the journal position a `/query` answer was
/// computed at (`particle_changes.seq`), when the store has a journal.
pub const JOURNAL_SEQ_HEADER: &str = "x-particles-journal-seq";

/// On an answer read from a Litestream replica: seconds since its follower
/// last moved the copy (the oldest, over several replicas). The answer is
/// exact at the position [`JOURNAL_SEQ_HEADER`] names; this says how long the
/// copy has stood there. An idle primary makes it grow too.
pub const REPLICA_AGE_HEADER: &str = "x-particles-replica-age";

pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            bytes,
        )
            .into_response(),
        Err(_) => internal_error(),
    }
}

/// Starlette's answer to an unhandled exception.
pub(crate) fn internal_error() -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        "Internal Server Error",
    )
        .into_response()
}

fn refusal_response(refusal: Refusal) -> Response {
    match refusal {
        Refusal::Detail(status, text) => detail(status, text),
    }
}

/// Our own route, outside the reference's paths: a `QueryRequest`'s ranking
/// with each hit's score and its factors.
pub const EXPLAIN_PATH: &str = "/particles-rs/explain";

/// The router: our routes, each with every other method forwarded, and the
/// forwarder for every other path.
pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/query", post(query).fallback(forward))
        .route("/health", get(health).fallback(forward))
        .route("/particles/contested", get(contested).fallback(forward))
        // The reference registers `GET /particles/search` (a fingerprint
        // search, the upstream's) before `/particles/{id}`, so Starlette never
        // reads "search" as an id; a static route here wins over `{id}` too.
        .route("/particles/search", any(forward))
        .route("/particles/{id}", get(particle).fallback(forward))
        .route("/particles/{id}/source", get(source).fallback(forward))
        .route(EXPLAIN_PATH, post(explain).fallback(forward))
        .route("/digest/{store}", get(digest).fallback(forward))
        .route(
            "/memory/projection/{store}",
            post(memory_projection).fallback(forward),
        )
        .fallback(forward)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            outer_bounds,
        ))
        // Outermost: every request is logged and counted, refused ones too.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::observe::access,
        ))
        .with_state(state)
}

/// The reference's two outer middlewares, on every path: the host bound, then
/// a declared body over the cap.
async fn outer_bounds(
    State(state): State<Shared>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let peer = request.extensions().get::<Peer>().and_then(|p| p.0);
    let key = state.key.current();
    let caller = Caller {
        peer,
        headers: request.headers(),
    };
    if let Err(refusal) = auth::request_bound(&caller, &key, &state.backend.policy) {
        state.metrics.reject("auth");
        return refusal_response(refusal);
    }
    let cap = state.backend.max_request_body_bytes;
    if cap > 0 {
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > cap as u64) {
            state.metrics.reject("body_cap");
            return too_large();
        }
    }
    next.run(request).await
}

pub(crate) fn too_large() -> Response {
    detail(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
}

/// Why a body could not be read.
enum BodyFailure {
    TooLarge,
    TimedOut,
    Broken,
}

/// Reads a whole body under the cap and the body timeout.
async fn read_body(body: Body, cap: i64, timeout: Duration) -> Result<Bytes, BodyFailure> {
    let collect = async {
        let mut body = body;
        let mut buffer = bytes::BytesMut::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|_| BodyFailure::Broken)?;
            if let Ok(data) = frame.into_data() {
                buffer.extend_from_slice(&data);
                if cap > 0 && buffer.len() as u64 > cap as u64 {
                    return Err(BodyFailure::TooLarge);
                }
            }
        }
        Ok(buffer.freeze())
    };
    tokio::time::timeout(timeout, collect)
        .await
        .unwrap_or(Err(BodyFailure::TimedOut))
}

fn body_failure_response(failure: BodyFailure) -> Response {
    match failure {
        // A streamed body past the cap: the reference's middleware raises inside
        // FastAPI's body read, which turns it into this 400 (observed).
        BodyFailure::TooLarge => detail(
            StatusCode::BAD_REQUEST,
            "There was an error parsing the body",
        ),
        BodyFailure::TimedOut => detail(
            StatusCode::REQUEST_TIMEOUT,
            "The request body did not arrive in time (particles-rs body timeout)",
        ),
        BodyFailure::Broken => detail(
            StatusCode::BAD_REQUEST,
            "There was an error parsing the body",
        ),
    }
}

/// The body as FastAPI hands it to validation.
enum Parsed {
    /// No body at all.
    Missing,
    /// A JSON body, decoded.
    Json(Value),
    /// A body without a JSON content type: validated as bytes.
    Raw(Bytes),
}

/// `application/json` or `application/*+json`, read as Python's email parser
/// reads a content type (parameters dropped, case folded, one `/`).
fn is_json_content_type(value: &str) -> bool {
    let main = crate::pytext::lower(crate::pytext::strip(
        value.split(';').next().unwrap_or_default(),
    ));
    let mut parts = main.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("application"), Some(subtype), None) => {
            subtype == "json" || subtype.ends_with("+json")
        }
        _ => false,
    }
}

/// The text Python's `json.loads` decodes from bytes: the encoding detected
/// from a BOM or the pattern of zero bytes (UTF-8, UTF-16, UTF-32), `None`
/// where Python's decoder raises.
fn decode_json_bytes(bytes: &[u8]) -> Option<String> {
    let utf16 = |body: &[u8], big: bool| -> Option<String> {
        if !body.len().is_multiple_of(2) {
            return None;
        }
        let units: Vec<u16> = body
            .chunks(2)
            .map(|p| {
                if big {
                    u16::from_be_bytes([p[0], p[1]])
                } else {
                    u16::from_le_bytes([p[0], p[1]])
                }
            })
            .collect();
        String::from_utf16(&units).ok()
    };
    let utf32 = |body: &[u8], big: bool| -> Option<String> {
        if !body.len().is_multiple_of(4) {
            return None;
        }
        body.chunks(4)
            .map(|q| {
                let q = [q[0], q[1], q[2], q[3]];
                char::from_u32(if big {
                    u32::from_be_bytes(q)
                } else {
                    u32::from_le_bytes(q)
                })
            })
            .collect()
    };
    if let Some(rest) = bytes.strip_prefix(b"\x00\x00\xfe\xff") {
        return utf32(rest, true);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xff\xfe\x00\x00") {
        return utf32(rest, false);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xfe\xff") {
        return utf16(rest, true);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xff\xfe") {
        return utf16(rest, false);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xef\xbb\xbf") {
        return std::str::from_utf8(rest).ok().map(str::to_owned);
    }
    if bytes.len() >= 4 {
        if bytes[0] == 0 {
            return if bytes[1] != 0 {
                utf16(bytes, true)
            } else {
                utf32(bytes, true)
            };
        }
        if bytes[1] == 0 {
            return if bytes[2] != 0 || bytes[3] != 0 {
                utf16(bytes, false)
            } else {
                utf32(bytes, false)
            };
        }
    } else if bytes.len() == 2 {
        if bytes[0] == 0 {
            return utf16(bytes, true);
        }
        if bytes[1] == 0 {
            return utf16(bytes, false);
        }
    }
    std::str::from_utf8(bytes).ok().map(str::to_owned)
}

/// FastAPI's body step: an empty body is missing; a JSON content type is
/// decoded (a malformed document is a 422 `json_invalid` with Python's offset
/// and message, undecodable bytes a 400); anything else stays bytes.
fn parse_body(headers: &HeaderMap, bytes: Bytes) -> Result<Parsed, Box<Response>> {
    if bytes.is_empty() {
        return Ok(Parsed::Missing);
    }
    let json_type = headers
        .get(header::CONTENT_TYPE)
        .map(|v| crate::pytext::latin1(v.as_bytes()))
        .is_some_and(|v| !v.is_empty() && is_json_content_type(&v));
    if !json_type {
        return Ok(Parsed::Raw(bytes));
    }
    let Some(decoded) = decode_json_bytes(&bytes) else {
        return Err(Box::new(detail(
            StatusCode::BAD_REQUEST,
            "There was an error parsing the body",
        )));
    };
    let text = decoded.as_str();
    match serde_json::from_str::<Value>(text) {
        Ok(value) => Ok(Parsed::Json(value)),
        Err(serde_error) => {
            let (pos, msg) = match pyjson::decode_error(text) {
                Some(error) => (error.pos, error.msg.to_owned()),
                // Python accepts what serde_json refuses here (NaN, a lone
                // surrogate): say so rather than invent an offset.
                None => (0, serde_error.to_string()),
            };
            Err(Box::new(json_response(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({"detail": [{
                    "type": "json_invalid",
                    "loc": ["body", pos],
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": msg},
                }]}),
            )))
        }
    }
}

fn validation_error(errors: Value) -> Response {
    json_response(
        StatusCode::UNPROCESSABLE_ENTITY,
        &json!({ "detail": errors }),
    )
}

/// The rate limit (per real client host, when one is set): a 429 once the
/// caller's bucket is empty; a request that passes spends a token.
fn rate_limited(state: &AppState, caller: &Caller<'_>) -> Option<Response> {
    let rate = state.backend.rate_limit_per_minute;
    if rate > 0 {
        if let Some(host) = auth::real_client_host(caller, &state.backend.policy) {
            let now = state.clock.elapsed().as_secs_f64();
            if !state
                .buckets
                .allow(&rate_limit::bucket_key(&host), rate, now)
            {
                state.metrics.reject("rate_limit");
                let mut response = detail(StatusCode::TOO_MANY_REQUESTS, rate_limit::RATE_LIMITED);
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
                return Some(response);
            }
        }
    }
    None
}

/// A body FastAPI validates as a model: a JSON object, else its 422 (a
/// missing body, bytes without a JSON content type, JSON of another kind).
fn body_object(parsed: Parsed) -> Result<Value, Box<Response>> {
    let value = match parsed {
        Parsed::Missing => {
            return Err(Box::new(validation_error(json!([{
                "type": "missing", "loc": ["body"], "msg": "Field required", "input": null,
            }]))))
        }
        Parsed::Raw(bytes) => {
            // FastAPI's encoder decodes the bytes for the error's input, and
            // raises on bytes that are not UTF-8 (an unhandled 500 there). The
            // input is echoed decoded lossily instead: the 422 it means to give
            // (a documented difference, docs/reliability.md).
            let text = String::from_utf8_lossy(&bytes);
            return Err(Box::new(validation_error(json!([{
                "type": "model_attributes_type",
                "loc": ["body"],
                "msg": "Input should be a valid dictionary or object to extract fields from",
                "input": text,
            }]))));
        }
        Parsed::Json(value) => value,
    };
    // FastAPI validates the body from attributes, not as `model_validate` does:
    // JSON that is not an object is its `model_attributes_type`, input echoed.
    if !value.is_object() {
        return Err(Box::new(validation_error(json!([{
            "type": "model_attributes_type",
            "loc": ["body"],
            "msg": "Input should be a valid dictionary or object to extract fields from",
            "input": value,
        }]))));
    }
    Ok(value)
}

/// The validation step: the body must be a JSON object, then our envelope and
/// the request must validate (each failure a 422 with pydantic's errors).
fn query_request(
    backend: &Backend,
    parsed: Parsed,
) -> Result<(particles_model::ValidRequest, particles_model::Envelope), Box<Response>> {
    let value = body_object(parsed)?;
    // Ours beside the reference's body: `vector`, `no_embedding` and `now`
    // (the reference's model ignores unknown fields); a vector or
    // no_embedding stands in for the question.
    let envelope = match backend.envelope_from(&value) {
        Ok(envelope) => envelope,
        Err(errors) => {
            return Err(Box::new(validation_error(
                serde_json::to_value(errors.located_under("body")).unwrap_or(Value::Null),
            )))
        }
    };
    let request = match QueryRequest::from_json_with(&value, Timestamp::now(), &envelope) {
        Ok(request) => request,
        Err(errors) => {
            return Err(Box::new(validation_error(
                serde_json::to_value(errors.located_under("body")).unwrap_or(Value::Null),
            )))
        }
    };
    Ok((request, envelope))
}

/// A `/query`-shaped request past every gate, in the reference's order: its
/// body read and decoded, the caller authorised and within the rate limit,
/// the request valid, and (ours) a place among the queries in flight.
struct Admitted<'a> {
    parts: http::request::Parts,
    /// The body as received, for a request forwarded after all.
    original: Bytes,
    request: particles_model::ValidRequest,
    envelope: particles_model::Envelope,
    _permit: tokio::sync::SemaphorePermit<'a>,
}

async fn admit(
    state: &AppState,
    peer: Option<IpAddr>,
    request: Request,
) -> Result<Admitted<'_>, Response> {
    let (parts, body) = request.into_parts();
    let bytes = read_body(
        body,
        state.backend.max_request_body_bytes,
        state.limits.body_timeout,
    )
    .await
    .map_err(body_failure_response)?;
    let original = bytes.clone();
    let parsed = parse_body(&parts.headers, bytes).map_err(|response| *response)?;
    let key = state.key.current();
    let caller = Caller {
        peer,
        headers: &parts.headers,
    };
    if let Err(refusal) = auth::verify_key(&caller, &key, &state.backend.policy) {
        state.metrics.reject("auth");
        return Err(refusal_response(refusal));
    }
    if let Some(response) = rate_limited(state, &caller) {
        return Err(response);
    }
    let (request, envelope) =
        query_request(&state.backend, parsed).map_err(|response| *response)?;
    let Ok(permit) = state.inflight.try_acquire() else {
        state.metrics.reject("inflight_cap");
        return Err(detail(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "particles-rs is already answering {} queries, its in-flight limit \
                 (--max-inflight); retry shortly",
                state.limits.max_inflight_queries
            ),
        ));
    };
    Ok(Admitted {
        parts,
        original,
        request,
        envelope,
        _permit: permit,
    })
}

/// Runs an admitted request through the engine on a blocking thread; the
/// wait for the thread comes back with the answer.
async fn ask(
    state: &AppState,
    admitted: &Admitted<'_>,
    detail: particles_engine::Detail,
) -> Result<
    (
        Duration,
        particles_engine::Result<particles_engine::Answered>,
    ),
    Response,
> {
    let _flight = state.metrics.in_flight();
    let engine = state.backend.engine.clone();
    let (request, envelope) = (admitted.request.clone(), admitted.envelope.clone());
    let handed = Instant::now();
    let answered = tokio::task::spawn_blocking(move || {
        let waited = handed.elapsed();
        (waited, engine.ask(&request, &envelope, detail))
    })
    .await
    .map_err(|_| internal_error())?;
    if let (_, Ok(answered)) = &answered {
        state.metrics.answered(answered);
    }
    Ok(answered)
}

async fn query(
    State(state): State<Shared>,
    peer: Option<axum::Extension<Peer>>,
    request: Request,
) -> Response {
    let admitted = match admit(&state, peer.and_then(|p| p.0 .0), request).await {
        Ok(admitted) => admitted,
        Err(response) => return response,
    };
    let asked = Instant::now();
    let (waited, answered) = match ask(&state, &admitted, particles_engine::Detail::Response).await
    {
        Ok(answered) => answered,
        Err(response) => return response,
    };
    match answered {
        Ok(answered) => {
            let mut reply = json_response(StatusCode::OK, &answered.response);
            mark_answered(&state, &mut reply, &answered);
            if let Ok(value) =
                HeaderValue::from_str(&server_timing(waited, &answered.timings, asked.elapsed()))
            {
                reply.headers_mut().insert(SERVER_TIMING, value);
            }
            reply
        }
        Err(error) => engine_failure(&state, &admitted, error).await,
    }
}

/// The response to a request the engine did not answer.
async fn engine_failure(
    state: &AppState,
    admitted: &Admitted<'_>,
    error: particles_engine::Error,
) -> Response {
    match error {
        particles_engine::Error::Query(particles_query::Error::UnsupportedMode { mode }) => {
            match &state.upstream {
                // A mode the engine cannot run yet goes to the reference's engine.
                Some(upstream) => {
                    upstream
                        .forward_buffered(Method::POST, &admitted.parts, admitted.original.clone())
                        .await
                }
                None => detail(
                    StatusCode::NOT_IMPLEMENTED,
                    format!(
                        "the {mode} mode is not served by particles-rs yet; start it with \
                         --upstream URL (the reference's engine) to forward it"
                    ),
                ),
            }
        }
        // Our envelope's vector of the wrong shape: the caller's to fix.
        particles_engine::Error::Encode(message) => {
            detail(StatusCode::UNPROCESSABLE_ENTITY, message)
        }
        // A vector of another length than the store's rows: the reference's
        // numpy fails there (a 500); ours says which lengths, as the caller's
        // to fix.
        error @ particles_engine::Error::Query(particles_query::Error::Rank(
            particles_rank::Error::DimensionMismatch { .. },
        )) => detail(StatusCode::UNPROCESSABLE_ENTITY, error.to_string()),
        // A replica restored anew, not yet where this server answered before:
        // no answer rather than one from the past; its follower catches up.
        error @ (particles_engine::Error::ReplicaBehind { .. }
        | particles_engine::Error::ReplicaRestoring { .. }) => {
            let mut reply = detail(StatusCode::SERVICE_UNAVAILABLE, error.to_string());
            reply
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            reply
        }
        // The reference's client sees Starlette's bare 500; the operator sees
        // why when the store failed (its message and SQLite's), and otherwise
        // only that it happened: other messages can quote the request, which
        // no log line carries.
        error => {
            match error.store_failure() {
                Some(store) => {
                    let mut why = store.to_string();
                    let mut source = std::error::Error::source(store);
                    while let Some(cause) = source {
                        why.push_str(": ");
                        why.push_str(&cause.to_string());
                        source = cause.source();
                    }
                    tracing::error!(error = %why, "a query failed: the store could not be read");
                }
                // A batch's shared transaction: the message is the store's.
                None if matches!(error, particles_engine::Error::Batch(_)) => {
                    tracing::error!(error = %error, "a query failed: the store could not be read");
                }
                None => tracing::error!(
                    "a query failed inside the engine, where the reference's fails too"
                ),
            }
            internal_error()
        }
    }
}

/// `POST /particles-rs/explain`: the ranking of a `QueryRequest` (with our
/// envelope), each hit with its score and the factors it is the product of,
/// and where the bound-ordered scoring stopped. No answer step runs. The
/// gates are `/query`'s.
async fn explain(
    State(state): State<Shared>,
    peer: Option<axum::Extension<Peer>>,
    request: Request,
) -> Response {
    let admitted = match admit(&state, peer.and_then(|p| p.0 .0), request).await {
        Ok(admitted) => admitted,
        Err(response) => return response,
    };
    let answered = match ask(&state, &admitted, particles_engine::Detail::Ranking).await {
        Ok((_, Ok(answered))) => answered,
        Ok((_, Err(error))) => return engine_failure(&state, &admitted, error).await,
        Err(response) => return response,
    };
    let Some(outcome) = &answered.outcome else {
        return detail(
            StatusCode::UNPROCESSABLE_ENTITY,
            "this request is a structural lookup (claim filters without a question or a \
             vector), which lists matches without scoring them: there is no rank to explain",
        );
    };
    let rank = &state.backend.engine.settings().rank;
    let mut reply = json_response(
        StatusCode::OK,
        &crate::explain::explanation(outcome, rank, answered.ranked_by_similarity),
    );
    mark_answered(&state, &mut reply, &answered);
    reply
}

/// Names the store state an answer is exact at (the change journal's head in
/// the snapshot it read) in a header, so the body stays the reference's; on a
/// Litestream replica, how long ago its copy last moved; and tells the access
/// log about the answer.
fn mark_answered(state: &AppState, reply: &mut Response, answered: &particles_engine::Answered) {
    if let Some(seq) = answered.journal_seq {
        reply
            .headers_mut()
            .insert(JOURNAL_SEQ_HEADER, HeaderValue::from(seq));
    }
    if let Some(age) = crate::observe::replica_age(&state.backend.engine) {
        if let Ok(value) = HeaderValue::from_str(&format!("{:.3}", age.as_secs_f64())) {
            reply.headers_mut().insert(REPLICA_AGE_HEADER, value);
        }
    }
    reply.extensions_mut().insert(crate::observe::QueryTrace {
        journal_seq: answered.journal_seq,
        batch_size: answered.timings.batch.as_ref().map(|b| b.batch_size),
    });
}

async fn health(State(state): State<Shared>) -> Response {
    json_response(
        StatusCode::OK,
        &json!({
            "status": "ok",
            "version": VERSION,
            "built_at": state.backend.build_date,
            "daemon": null,
        }),
    )
}

/// The read gate, from the request's parts.
fn read_gate(
    state: &AppState,
    peer: Option<IpAddr>,
    headers: &HeaderMap,
) -> Result<(), Box<Response>> {
    let caller = Caller { peer, headers };
    auth::verify_read_key(&caller, &state.key.current(), &state.backend.policy).map_err(|refusal| {
        state.metrics.reject("auth");
        Box::new(refusal_response(refusal))
    })
}

/// Runs a store read on a blocking thread.
async fn blocking<T: Send + 'static>(
    state: &Shared,
    read: impl FnOnce(&Backend) -> crate::Result<T> + Send + 'static,
) -> Result<T, Response> {
    let backend = state.backend.clone();
    match tokio::task::spawn_blocking(move || read(&backend)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(_)) | Err(_) => Err(internal_error()),
    }
}

/// `GET /digest/{store}`: the session digest, always behind the bearer gate
/// (it rolls up the whole store), `?project=` reading through that project's
/// observer.
async fn digest(
    State(state): State<Shared>,
    peer: Option<axum::Extension<Peer>>,
    Path(store): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let caller = Caller {
        peer: peer.and_then(|p| p.0 .0),
        headers: &headers,
    };
    if let Err(refusal) = auth::verify_key(&caller, &state.key.current(), &state.backend.policy) {
        state.metrics.reject("auth");
        return refusal_response(refusal);
    }
    // Starlette decodes the path before routing: a `/` inside the segment is
    // two segments, which no route of the reference matches.
    if store.contains('/') {
        return detail(StatusCode::NOT_FOUND, "Not Found");
    }
    let project = query_parameter(query.as_deref().unwrap_or(""), "project");
    if project.as_deref() == Some("") {
        return validation_error(json!([{
            "type": "string_too_short",
            "loc": ["query", "project"],
            "msg": "String should have at least 1 character",
            "input": "",
            "ctx": {"min_length": 1},
        }]));
    }
    let backend = state.backend.clone();
    let handle = store.clone();
    let outcome =
        tokio::task::spawn_blocking(move || backend.digest(&handle, project.as_deref())).await;
    match outcome {
        Ok(DigestOutcome::Rendered(rendered)) => json_response(StatusCode::OK, &rendered),
        Ok(DigestOutcome::UnknownStore) => detail(
            StatusCode::NOT_FOUND,
            format!("Unknown store {}", particles_model::python_repr(&store)),
        ),
        Ok(DigestOutcome::Failed(why) | DigestOutcome::Refused(why)) => {
            tracing::error!(store = %store, error = %why, "the digest failed");
            internal_error()
        }
        Err(_) => internal_error(),
    }
}

/// `POST /memory/projection/{store}`: the `MEMORY.md` region body of the
/// client's manifest, with its hash and the fold verdicts asked. Bearer-gated
/// whatever `api.require_auth_for_reads` says, like the digest; writes nothing.
/// A manifest with a file section is the reference's 422.
async fn memory_projection(
    State(state): State<Shared>,
    peer: Option<axum::Extension<Peer>>,
    Path(store): Path<String>,
    request: Request,
) -> Response {
    // Starlette decodes the path before routing: a `/` inside the segment is
    // two segments, which no route of the reference matches.
    if store.contains('/') {
        return detail(StatusCode::NOT_FOUND, "Not Found");
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_body(
        body,
        state.backend.max_request_body_bytes,
        state.limits.body_timeout,
    )
    .await
    {
        Ok(bytes) => bytes,
        Err(failure) => return body_failure_response(failure),
    };
    let parsed = match parse_body(&parts.headers, bytes) {
        Ok(parsed) => parsed,
        Err(response) => return *response,
    };
    let caller = Caller {
        peer: peer.and_then(|p| p.0 .0),
        headers: &parts.headers,
    };
    if let Err(refusal) = auth::verify_key(&caller, &state.key.current(), &state.backend.policy) {
        state.metrics.reject("auth");
        return refusal_response(refusal);
    }
    let value = match body_object(parsed) {
        Ok(value) => value,
        Err(response) => return *response,
    };
    let body = match particles_model::projection::MemoryProjectionRequest::from_json(&value) {
        Ok(body) => body,
        Err(errors) => {
            return validation_error(
                serde_json::to_value(errors.located_under("body")).unwrap_or_default(),
            )
        }
    };
    let backend = state.backend.clone();
    let handle = store.clone();
    let outcome = tokio::task::spawn_blocking(move || backend.memory_region(&handle, &body)).await;
    match outcome {
        Ok(StoreRead::Rendered(region)) => json_response(StatusCode::OK, &region),
        Ok(StoreRead::UnknownStore) => detail(
            StatusCode::NOT_FOUND,
            format!("Unknown store {}", particles_model::python_repr(&store)),
        ),
        Ok(StoreRead::Refused(why)) => detail(StatusCode::UNPROCESSABLE_ENTITY, why),
        Ok(StoreRead::Failed(why)) => {
            tracing::error!(store = %store, error = %why, "the memory projection failed");
            internal_error()
        }
        Err(_) => internal_error(),
    }
}

/// The last value of `name` in a query string, decoded as Starlette's
/// `parse_qsl(keep_blank_values=True)` decodes it (`+` is a space, bad UTF-8
/// replaced).
fn query_parameter(query: &str, name: &str) -> Option<String> {
    let decode = |text: &str| -> String {
        let bytes = text.as_bytes();
        let hex = |b: u8| char::from(b).to_digit(16);
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(high), Some(low)) => {
                        out.push((high * 16 + low) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                },
                byte => out.push(byte),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    query
        .split('&')
        .rev()
        .filter(|pair| !pair.is_empty())
        .find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key) == name).then(|| decode(value))
        })
}

async fn contested(
    State(state): State<Shared>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = read_gate(&state, peer.and_then(|p| p.0 .0), &headers) {
        return *response;
    }
    match blocking(&state, Backend::contested).await {
        Ok(pairs) => {
            let map: serde_json::Map<String, Value> = pairs
                .into_iter()
                .map(|(belief, record)| (belief, Value::String(record)))
                .collect();
            json_response(StatusCode::OK, &map)
        }
        Err(response) => response,
    }
}

async fn particle(
    State(state): State<Shared>,
    peer: Option<axum::Extension<Peer>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Err(response) = read_gate(&state, peer.and_then(|p| p.0 .0), &headers) {
        return *response;
    }
    match blocking(&state, move |backend| backend.particle(&id)).await {
        Ok(Some(particle)) => json_response(StatusCode::OK, &particle),
        Ok(None) => detail(StatusCode::NOT_FOUND, "Particle not found"),
        Err(response) => response,
    }
}

async fn source(
    State(state): State<Shared>,
    peer: Option<axum::Extension<Peer>>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let (parts, _) = request.into_parts();
    if let Err(response) = read_gate(&state, peer.and_then(|p| p.0 .0), &parts.headers) {
        return *response;
    }
    match blocking(&state, move |backend| backend.source_passage(&id)).await {
        Ok(Hydrated::Missing) => detail(StatusCode::NOT_FOUND, "Particle not found"),
        Ok(Hydrated::Passage(passage)) => json_response(StatusCode::OK, &passage),
        Ok(Hydrated::Unrendered(mut passage)) => match &state.upstream {
            Some(upstream) => {
                upstream
                    .forward_buffered(Method::GET, &parts, Bytes::new())
                    .await
            }
            None => {
                passage.note = Some(
                    "The source is HTML or PDF, which particles-rs does not render; start it \
                     with --upstream URL (the reference's engine) to have it rendered."
                        .to_owned(),
                );
                json_response(StatusCode::OK, &passage)
            }
        },
        Ok(Hydrated::Raised(_)) => internal_error(),
        Err(response) => response,
    }
}

/// Every other path and method: to the reference's engine, or a 501 naming
/// the path.
async fn forward(State(state): State<Shared>, request: Request) -> Response {
    match &state.upstream {
        Some(upstream) => {
            upstream
                .forward(request, state.backend.max_request_body_bytes)
                .await
        }
        None => {
            let path = request
                .extensions()
                .get::<RawTarget>()
                .map(|t| t.0.split('?').next().unwrap_or_default().to_owned())
                .unwrap_or_else(|| request.uri().path().to_owned());
            detail(
                StatusCode::NOT_IMPLEMENTED,
                format!(
                    "{} {path} is not served by particles-rs; start it with --upstream URL \
                     (the reference's engine) to forward it",
                    request.method()
                ),
            )
        }
    }
}

/// The path uvicorn hands Starlette: percent-decoded as UTF-8 (invalid
/// sequences replaced, malformed escapes kept).
pub(crate) fn decoded_path(raw: &str) -> String {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8_lossy()
        .into_owned()
}

/// Re-encodes a decoded path so the router sees its `/` structure and each
/// segment decodes back to the decoded text.
pub(crate) fn routing_path(decoded: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'#')
        .add(b'%')
        .add(b'<')
        .add(b'>')
        .add(b'?')
        .add(b'`')
        .add(b'{')
        .add(b'}')
        .add(b'\\')
        .add(b'^')
        .add(b'|')
        .add(b'[')
        .add(b']');
    percent_encoding::utf8_percent_encode(decoded, SEGMENT).to_string()
}

/// Puts the peer and the raw target on the request and rewrites its path to
/// the decoded one the router matches.
pub(crate) fn prepare(mut request: Request, peer: SocketAddr) -> Request {
    let raw = request
        .uri()
        .path_and_query()
        .map(|pq| pq.as_str().to_owned())
        .unwrap_or_else(|| "/".to_owned());
    let path = request.uri().path().to_owned();
    let routed = routing_path(&decoded_path(&path));
    if routed != path {
        let query = request
            .uri()
            .query()
            .map(|q| format!("?{q}"))
            .unwrap_or_default();
        if let Ok(uri) = format!("{routed}{query}").parse() {
            *request.uri_mut() = uri;
        }
    }
    request.extensions_mut().insert(RawTarget(raw));
    request.extensions_mut().insert(Peer(Some(peer.ip())));
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_read_as_python_reads_them() {
        assert!(is_json_content_type("application/json"));
        assert!(is_json_content_type("Application/JSON; charset=utf-8"));
        assert!(is_json_content_type("application/vnd.api+json"));
        assert!(!is_json_content_type("text/plain"));
        assert!(!is_json_content_type("application/json/x"));
        assert!(!is_json_content_type("application/x-www-form-urlencoded"));
    }

    #[test]
    fn paths_route_decoded() {
        assert_eq!(
            decoded_path("/particles/a%2Fb/source"),
            "/particles/a/b/source"
        );
        assert_eq!(
            routing_path(&decoded_path("/particles/%2E%2E")),
            "/particles/.."
        );
        assert_eq!(routing_path("/particles/a b%"), "/particles/a%20b%25");
        assert_eq!(decoded_path("/x%zz%ff"), "/x%zz\u{fffd}");
    }
}
