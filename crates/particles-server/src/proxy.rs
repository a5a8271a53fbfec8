//! Forwarding to the reference's engine (`--upstream URL`): method, headers
//! without the hop-by-hop ones, body and status unchanged, bodies streamed both
//! ways; the request body still held to the reference's cap.

use std::{
    pin::Pin,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    task::{Context, Poll},
};

use axum::{
    body::Body,
    extract::Request,
    http::{header, HeaderMap, HeaderName, Method, StatusCode, Uri},
    response::Response,
};
use bytes::Bytes;
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};

use crate::{
    http::{detail, RawTarget},
    observe::Forwarded,
    Error, Result,
};

/// The reference's engine we forward to.
#[derive(Clone)]
pub(crate) struct Upstream {
    url: String,
    base: String,
    client: Client<HttpConnector, Body>,
}

/// Headers that describe one hop, never forwarded (RFC 9110 §7.6.1).
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in listed {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

impl Upstream {
    /// The upstream at `url` (`http://host:port`, optionally with a path prefix).
    ///
    /// # Errors
    ///
    /// [`Error::Upstream`] for anything but a plain `http://` URL with a host.
    pub(crate) fn parse(url: &str) -> Result<Upstream> {
        let invalid = |reason| Error::Upstream {
            url: url.to_owned(),
            reason,
        };
        let uri: Uri = url.parse().map_err(|_| invalid("not a URL"))?;
        if uri.scheme_str() != Some("http") {
            return Err(invalid("only http:// is forwarded (the engine beside us)"));
        }
        if uri.authority().is_none() {
            return Err(invalid("no host"));
        }
        if uri.query().is_some() {
            return Err(invalid("a query string has no place in it"));
        }
        let base = url.trim_end_matches('/').to_owned();
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(Upstream {
            url: url.to_owned(),
            base,
            client,
        })
    }

    /// The URL as given.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    fn target(&self, raw: &str) -> Option<Uri> {
        format!("{}{raw}", self.base).parse().ok()
    }

    /// Forwards a request as it came, its body streamed and counted against
    /// `cap` (413 when it crosses it, as the reference's middleware answers).
    pub(crate) async fn forward(&self, request: Request, cap: i64) -> Response {
        let (mut parts, body) = request.into_parts();
        let raw = parts
            .extensions
            .get::<RawTarget>()
            .map(|t| t.0.clone())
            .unwrap_or_else(|| parts.uri.to_string());
        let Some(uri) = self.target(&raw) else {
            return detail(
                StatusCode::BAD_REQUEST,
                "the request target cannot be forwarded",
            );
        };
        strip_hop_by_hop(&mut parts.headers);
        let tripped = Arc::new(AtomicBool::new(false));
        let body = if cap > 0 {
            Body::new(Capped {
                inner: body,
                seen: 0,
                cap: cap as u64,
                tripped: tripped.clone(),
            })
        } else {
            body
        };
        let mut outgoing = http::Request::new(body);
        *outgoing.method_mut() = parts.method;
        *outgoing.uri_mut() = uri;
        *outgoing.headers_mut() = parts.headers;
        match self.client.request(outgoing).await {
            Ok(response) => relay(response),
            // As the reference answers a streamed body past the cap (observed).
            Err(_) if tripped.load(Ordering::Relaxed) => detail(
                StatusCode::BAD_REQUEST,
                "There was an error parsing the body",
            ),
            Err(error) => self.unreachable(&error),
        }
    }

    /// Forwards a request whose body was already read (a `/query` the engine
    /// cannot answer yet, a source passage only the reference renders).
    pub(crate) async fn forward_buffered(
        &self,
        method: Method,
        parts: &http::request::Parts,
        body: Bytes,
    ) -> Response {
        let raw = parts
            .extensions
            .get::<RawTarget>()
            .map(|t| t.0.clone())
            .unwrap_or_else(|| parts.uri.to_string());
        let Some(uri) = self.target(&raw) else {
            return detail(
                StatusCode::BAD_REQUEST,
                "the request target cannot be forwarded",
            );
        };
        let mut headers = parts.headers.clone();
        strip_hop_by_hop(&mut headers);
        if !body.is_empty() {
            headers.insert(header::CONTENT_LENGTH, body.len().into());
        }
        let mut outgoing = http::Request::new(Body::from(body));
        *outgoing.method_mut() = method;
        *outgoing.uri_mut() = uri;
        *outgoing.headers_mut() = headers;
        match self.client.request(outgoing).await {
            Ok(response) => relay(response),
            Err(error) => self.unreachable(&error),
        }
    }

    fn unreachable(&self, error: &hyper_util::client::legacy::Error) -> Response {
        let mut response = detail(
            StatusCode::BAD_GATEWAY,
            format!(
                "the upstream engine at {} did not answer: {error}",
                self.url
            ),
        );
        response.extensions_mut().insert(Forwarded(None));
        response
    }

    /// The status of the upstream's `GET /health` (readiness), or why there
    /// was none within `wait`.
    pub(crate) async fn health(
        &self,
        wait: std::time::Duration,
    ) -> std::result::Result<u16, String> {
        let uri = self
            .target("/health")
            .ok_or_else(|| "the health URL cannot be formed".to_owned())?;
        let mut request = http::Request::new(Body::empty());
        *request.uri_mut() = uri;
        match tokio::time::timeout(wait, self.client.request(request)).await {
            Ok(Ok(response)) => Ok(response.status().as_u16()),
            Ok(Err(error)) => Err(format!("did not answer: {error}")),
            Err(_) => Err(format!("no answer within {} s", wait.as_secs())),
        }
    }
}

/// The upstream's response, streamed back without its hop-by-hop headers
/// (marked as forwarded, with its status, for the access log).
fn relay(response: http::Response<hyper::body::Incoming>) -> Response {
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let status = parts.status.as_u16();
    let mut response = Response::from_parts(parts, Body::new(body));
    response.extensions_mut().insert(Forwarded(Some(status)));
    response
}

/// A request body that fails once more than `cap` bytes have passed.
struct Capped {
    inner: Body,
    seen: u64,
    cap: u64,
    tripped: Arc<AtomicBool>,
}

impl http_body::Body for Capped {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.seen += data.len() as u64;
                    if this.seen > this.cap {
                        this.tripped.store(true, Ordering::Relaxed);
                        return Poll::Ready(Some(Err(axum::Error::new("request body too large"))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_stay_behind() {
        let mut headers = HeaderMap::new();
        headers.insert("connection", "close, x-private".parse().unwrap());
        headers.insert("x-private", "1".parse().unwrap());
        headers.insert("transfer-encoding", "chunked".parse().unwrap());
        headers.insert("authorization", "Bearer k".parse().unwrap());
        headers.insert("host", "127.0.0.1:1".parse().unwrap());
        strip_hop_by_hop(&mut headers);
        let mut names: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["authorization", "host"]);
    }

    #[test]
    fn only_plain_http_upstreams() {
        assert!(Upstream::parse("http://127.0.0.1:8000").is_ok());
        assert!(Upstream::parse("https://example.invalid").is_err());
        assert!(Upstream::parse("127.0.0.1:8000").is_err());
    }
}
