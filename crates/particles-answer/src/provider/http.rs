//! One blocking JSON POST over ureq, with the reference's per-attempt timeouts, and
//! transport failures named the way httpx names them.

use std::{io, time::Duration};

/// The largest reply body read (a completion is far smaller; this only bounds a
/// misbehaving endpoint).
const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

/// A reply of any status.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: String,
    location: Option<String>,
    retry_after_ms: Option<String>,
    retry_after: Option<String>,
    should_retry: Option<String>,
}

impl Reply {
    /// The `location` of a redirect (301, 302, 303, 307, 308).
    pub(crate) fn redirect_location(&self) -> Option<&str> {
        matches!(self.status, 301 | 302 | 303 | 307 | 308)
            .then_some(self.location.as_deref())
            .flatten()
    }

    /// `x-should-retry`, lower-cased.
    pub(crate) fn should_retry_header(&self) -> Option<&str> {
        self.should_retry.as_deref()
    }

    /// The wait a `retry-after-ms` or numeric `retry-after` header asks for, each
    /// read by Python's `float()` as the SDK reads it (underscores between digits,
    /// `inf` and `nan` included).
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        let seconds = self
            .retry_after_ms
            .as_deref()
            .and_then(particles_pytext::python_float)
            .map(|ms| ms / 1000.0)
            .or_else(|| {
                self.retry_after
                    .as_deref()
                    .and_then(particles_pytext::python_float)
            })?;
        (seconds.is_finite() && seconds > 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(4_294_967.0)))
    }
}

/// A request that produced no reply.
#[derive(Debug)]
pub(crate) struct TransportError {
    kind: TransportKind,
    message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TransportKind {
    ConnectTimeout,
    ReadTimeout,
    WriteTimeout,
    Connect,
    RemoteProtocol,
    Read,
}

impl TransportError {
    /// Whether the attempt ran out of time.
    pub(crate) fn is_timeout(&self) -> bool {
        matches!(
            self.kind,
            TransportKind::ConnectTimeout
                | TransportKind::ReadTimeout
                | TransportKind::WriteTimeout
        )
    }

    /// httpx's `f"{type(exc).__name__}: {exc}"`, which the OpenAI-compatible
    /// adapter puts in its exhaustion message.
    pub(crate) fn httpx_detail(&self) -> String {
        let name = match self.kind {
            TransportKind::ConnectTimeout => "ConnectTimeout",
            TransportKind::ReadTimeout => "ReadTimeout",
            TransportKind::WriteTimeout => "WriteTimeout",
            TransportKind::Connect => "ConnectError",
            TransportKind::RemoteProtocol => "RemoteProtocolError",
            TransportKind::Read => "ReadError",
        };
        format!("{name}: {}", self.message)
    }
}

/// A blocking client with one timeout for connecting and one for each read and
/// write (httpx's `Timeout` semantics, not a wall-clock cap on the call). It never
/// follows a redirect itself: the caller decides, and checks each hop's egress.
pub(crate) struct Client {
    agent: ureq::Agent,
}

impl Client {
    pub(crate) fn new(connect_timeout: Duration, io_timeout: Duration) -> Client {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .user_agent(concat!("particles-rs/", env!("CARGO_PKG_VERSION")))
            .accept("application/json")
            .timeout_connect(Some(connect_timeout))
            .timeout_per_read(Some(io_timeout))
            .timeout_per_write(Some(io_timeout))
            .build();
        Client {
            agent: config.into(),
        }
    }

    /// POSTs a JSON body and reads the whole reply as text (invalid UTF-8 replaced).
    pub(crate) fn post_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> Result<Reply, TransportError> {
        let mut request = self
            .agent
            .post(url)
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        read_reply(request.send(body).map_err(transport_error)?)
    }

    /// GETs a URL (where a redirect turned the POST into a GET).
    pub(crate) fn get(
        &self,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<Reply, TransportError> {
        let mut request = self.agent.get(url);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        read_reply(request.call().map_err(transport_error)?)
    }
}

fn read_reply(mut response: ureq::http::Response<ureq::Body>) -> Result<Reply, TransportError> {
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    let location = header("location");
    let retry_after_ms = header("retry-after-ms");
    let retry_after = header("retry-after");
    let should_retry = header("x-should-retry").map(|value| value.to_ascii_lowercase());
    let status = response.status().as_u16();
    let bytes = response
        .body_mut()
        .with_config()
        .limit(MAX_BODY_BYTES)
        .read_to_vec()
        .map_err(transport_error)?;
    Ok(Reply {
        status,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        location,
        retry_after_ms,
        retry_after,
        should_retry,
    })
}

/// Names a ureq failure as httpx would name the same event, with httpx's message
/// where it is a fixed text.
fn transport_error(error: ureq::Error) -> TransportError {
    use ureq::Timeout;
    let (kind, message) = match &error {
        ureq::Error::Timeout(Timeout::Connect | Timeout::Resolve) => {
            (TransportKind::ConnectTimeout, String::new())
        }
        ureq::Error::Timeout(Timeout::SendRequest | Timeout::SendBody | Timeout::PerWrite) => {
            (TransportKind::WriteTimeout, String::new())
        }
        ureq::Error::Timeout(_) => (TransportKind::ReadTimeout, String::new()),
        ureq::Error::HostNotFound => (
            TransportKind::Connect,
            "[Errno -2] Name or service not known".to_owned(),
        ),
        ureq::Error::ConnectionFailed => (
            TransportKind::Connect,
            "All connection attempts failed".to_owned(),
        ),
        ureq::Error::Io(io_error) => io_kind(io_error),
        ureq::Error::Protocol(_) => (TransportKind::RemoteProtocol, error.to_string()),
        _ => (TransportKind::Connect, error.to_string()),
    };
    TransportError { kind, message }
}

fn io_kind(error: &io::Error) -> (TransportKind, String) {
    match error.kind() {
        io::ErrorKind::ConnectionRefused => (
            TransportKind::Connect,
            "All connection attempts failed".to_owned(),
        ),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            (TransportKind::ReadTimeout, String::new())
        }
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted => (
            TransportKind::RemoteProtocol,
            "Server disconnected without sending a response.".to_owned(),
        ),
        _ => (TransportKind::Read, error.to_string()),
    }
}
