//! The reference's gates (`particles/api/auth.py`), per request: the host bound
//! every path passes, the cross-site check for browser requests, the bearer gate
//! of `/query` (AuthDep) and the read gate of `/particles/*` (ReadAuthDep), and
//! the fail-closed start. Refusal texts are the reference's, byte for byte:
//! clients print them.

use std::net::IpAddr;

use http::{HeaderMap, StatusCode};
use subtle::ConstantTimeEq;

use crate::pytext;

/// The key value that means "bearer auth disabled" (the reference's dev mode).
pub const DEV_KEY: &str = "dev-key";

/// The 503 every dev-mode bound gives a non-loopback client.
pub(crate) const NON_LOOPBACK_REFUSAL: &str =
    "Refusing to serve an unauthenticated request from a \
non-loopback client. Set PARTICLES_API_KEY to enable authenticated access, or bind the API to \
loopback for local development.";

/// `PARTICLES_API_KEY` as the reference reads it, once per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiKey {
    /// Unset or `dev-key`: no bearer is checked, and only loopback is served.
    Dev,
    /// A real key: the bearer must match it.
    Real(String),
}

impl ApiKey {
    /// The key from the variable's value (`None` when unset).
    pub fn from_value(value: Option<String>) -> ApiKey {
        match value {
            Some(key) if key != DEV_KEY => ApiKey::Real(key),
            _ => ApiKey::Dev,
        }
    }
}

/// The `api.*` keys the gates read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    pub(crate) trusted_proxies: Vec<String>,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) require_auth_for_reads: bool,
}

impl Policy {
    pub(crate) fn from_config(api: &particles_config::ApiConfig) -> Policy {
        Policy {
            trusted_proxies: api.trusted_proxies.clone(),
            allowed_hosts: api.allowed_hosts.clone(),
            allowed_origins: api.allowed_origins.clone(),
            require_auth_for_reads: api.require_auth_for_reads,
        }
    }
}

/// A refused request: the status and the `detail` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    Detail(StatusCode, String),
}

/// What the gates see of a request.
pub(crate) struct Caller<'a> {
    /// The network peer (`None`: no peer, which counts as local).
    pub(crate) peer: Option<IpAddr>,
    pub(crate) headers: &'a HeaderMap,
}

impl Caller<'_> {
    /// The first value of a header, decoded as Starlette decodes it.
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|value| pytext::latin1(value.as_bytes()))
    }
}

/// The reference's `_is_loopback_host`: `localhost` or a loopback IP literal
/// (brackets and an IPv6 zone stripped); no DNS.
pub fn is_loopback_host(host: &str) -> bool {
    let lowered = pytext::lower(pytext::strip(host));
    if lowered == "localhost" {
        return true;
    }
    let bare = lowered.strip_prefix('[').unwrap_or(&lowered);
    let bare = bare.strip_suffix(']').unwrap_or(bare);
    let bare = bare.split('%').next().unwrap_or(bare);
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An IP network as Python's `ip_network(text, strict=False)` reads the forms
/// operators write: an address, or an address with a prefix length.
fn parse_network(text: &str) -> Option<(IpAddr, u8)> {
    let text = pytext::strip(text);
    let (address, prefix) = match text.split_once('/') {
        Some((address, prefix)) => (address, Some(prefix)),
        None => (text, None),
    };
    let address: IpAddr = address.parse().ok()?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    let prefix = match prefix {
        Some(prefix) if prefix.bytes().all(|b| b.is_ascii_digit()) && !prefix.is_empty() => {
            prefix.parse::<u8>().ok().filter(|p| *p <= max)?
        }
        Some(_) => return None,
        None => max,
    };
    Some((address, prefix))
}

fn in_network(ip: IpAddr, (network, prefix): (IpAddr, u8)) -> bool {
    match (ip, network) {
        (IpAddr::V4(ip), IpAddr::V4(network)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(network) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(network)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(network) & mask
        }
        _ => false,
    }
}

/// The reference's `_ip_in_networks`: a non-IP host or an unreadable network
/// never matches (the safe direction for a trust check).
fn ip_in_networks(host: &str, networks: &[String]) -> bool {
    let Ok(ip) = pytext::strip(host).parse::<IpAddr>() else {
        return false;
    };
    networks
        .iter()
        .filter_map(|network| parse_network(network))
        .any(|network| in_network(ip, network))
}

/// The real client: the peer, unless the peer is a trusted proxy; then the
/// nearest `X-Forwarded-For` hop that is not one (the reference's
/// `_real_client_host`). `None` when there is no peer.
pub(crate) fn real_client_host(caller: &Caller<'_>, policy: &Policy) -> Option<String> {
    let peer = caller.peer?.to_string();
    if policy.trusted_proxies.is_empty() || !ip_in_networks(&peer, &policy.trusted_proxies) {
        return Some(peer);
    }
    let forwarded = caller.header("x-forwarded-for").unwrap_or_default();
    let hops: Vec<&str> = forwarded
        .split(',')
        .map(pytext::strip)
        .filter(|hop| !hop.is_empty())
        .collect();
    for hop in hops.iter().rev() {
        if !ip_in_networks(hop, &policy.trusted_proxies) {
            return Some((*hop).to_owned());
        }
    }
    Some(peer)
}

fn client_is_loopback(caller: &Caller<'_>, policy: &Policy) -> bool {
    real_client_host(caller, policy).is_none_or(|host| is_loopback_host(&host))
}

/// `[::1]:8000` -> `[::1]`, `host:80` -> `host`; more than one colon is a bare
/// IPv6 literal and stays whole.
fn host_without_port(host: &str) -> &str {
    let host = pytext::strip(host);
    if host.starts_with('[') {
        return match host.find(']') {
            Some(end) => &host[..=end],
            None => host,
        };
    }
    if host.matches(':').count() == 1 {
        return host.split(':').next().unwrap_or(host);
    }
    host
}

fn host_is_allowed(host: &str, dev_key: bool, policy: &Policy) -> bool {
    let name = pytext::lower(host_without_port(host));
    if is_loopback_host(&name) {
        return true;
    }
    if policy.allowed_hosts.is_empty() {
        return !dev_key;
    }
    policy
        .allowed_hosts
        .iter()
        .any(|entry| (entry.starts_with("*.") && name.ends_with(&entry[1..])) || name == *entry)
}

/// The bound every path passes before any route runs (the reference's
/// `request_bound_refusal`, applied by its `HostBoundMiddleware` and again in
/// each gate): in dev mode the real client must be loopback (503); a `Host`
/// must be one this engine answers on (403).
pub(crate) fn request_bound(
    caller: &Caller<'_>,
    key: &ApiKey,
    policy: &Policy,
) -> Result<(), Refusal> {
    let dev_key = *key == ApiKey::Dev;
    if dev_key && !client_is_loopback(caller, policy) {
        return Err(Refusal::Detail(
            StatusCode::SERVICE_UNAVAILABLE,
            NON_LOOPBACK_REFUSAL.to_owned(),
        ));
    }
    if let Some(host) = caller.header("host") {
        if !host_is_allowed(&host, dev_key, policy) {
            let shown = particles_model::python_repr(&host);
            let detail = if dev_key {
                format!(
                    "Refusing a request for host {shown} while bearer auth is disabled. Open the \
                     engine at http://127.0.0.1 or http://localhost, list the name in \
                     api.allowed_hosts, or set PARTICLES_API_KEY."
                )
            } else {
                format!("Refusing a request for host {shown}: it is not in api.allowed_hosts.")
            };
            return Err(Refusal::Detail(StatusCode::FORBIDDEN, detail));
        }
    }
    Ok(())
}

fn is_browser_request(caller: &Caller<'_>) -> bool {
    caller.headers.contains_key("sec-fetch-site") || caller.headers.contains_key("origin")
}

fn normalise_origin(origin: &str) -> String {
    pytext::lower(pytext::strip(origin).trim_end_matches('/'))
}

/// Why the request is a cross-site browser request, or `None`.
fn cross_site_reason(caller: &Caller<'_>, policy: &Policy) -> Result<Option<String>, Refusal> {
    let origin = caller.header("origin");
    if let Some(origin) = &origin {
        let wanted = normalise_origin(origin);
        if policy
            .allowed_origins
            .iter()
            .any(|allowed| normalise_origin(allowed) == wanted)
        {
            return Ok(None);
        }
    }
    if let Some(site) = caller.header("sec-fetch-site") {
        let site = pytext::strip(&site);
        return Ok(match pytext::lower(site).as_str() {
            "same-origin" | "none" => None,
            _ => Some(format!("Sec-Fetch-Site: {site}")),
        });
    }
    let Some(origin) = origin else {
        return Ok(None);
    };
    let origin = pytext::strip(&origin);
    // urlsplit raises on a malformed bracketed host, and the reference answers
    // an unhandled 500. An Origin that cannot be parsed cannot name this engine,
    // so here it is what it is: a cross-site request, refused with the reason
    // (a documented difference, docs/reliability.md).
    let Ok(netloc) = particles_rank::netloc(origin) else {
        return Ok(Some(format!("Origin: {origin}")));
    };
    let netloc = pytext::lower(&netloc);
    let host = caller.header("host").unwrap_or_default();
    if !netloc.is_empty() && netloc == pytext::lower(pytext::strip(&host)) {
        return Ok(None);
    }
    Ok(Some(format!("Origin: {origin}")))
}

fn refuse_cross_site(caller: &Caller<'_>, policy: &Policy) -> Result<(), Refusal> {
    match cross_site_reason(caller, policy)? {
        None => Ok(()),
        Some(reason) => Err(Refusal::Detail(
            StatusCode::FORBIDDEN,
            format!(
                "Refusing a cross-site browser request ({reason}). A web page on another site \
                 cannot drive this engine. Open the web UI from the engine itself (/app), or \
                 list a trusted browser origin in api.allowed_origins."
            ),
        )),
    }
}

fn bound_dev_key_request(caller: &Caller<'_>, policy: &Policy) -> Result<(), Refusal> {
    request_bound(caller, &ApiKey::Dev, policy)?;
    if is_browser_request(caller) {
        refuse_cross_site(caller, policy)?;
    }
    Ok(())
}

/// The bearer FastAPI's `HTTPBearer(auto_error=False)` extracts: the first
/// `Authorization` header split at its first space, the scheme `bearer` in any
/// case, the rest stripped and non-empty. Anything else is no credential.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = pytext::latin1(headers.get("authorization")?.as_bytes());
    let (scheme, rest) = value.split_once(' ').unwrap_or((value.as_str(), ""));
    let credentials = pytext::strip(rest);
    if scheme.is_empty() || credentials.is_empty() || pytext::lower(scheme) != "bearer" {
        return None;
    }
    Some(credentials.to_owned())
}

/// `hmac.compare_digest` over the UTF-8 bytes of both sides: constant time in
/// the contents (a length mismatch returns at once, as it does there).
fn bearer_matches(key: &str, credentials: Option<&str>) -> bool {
    credentials.is_some_and(|given| bool::from(given.as_bytes().ct_eq(key.as_bytes())))
}

/// AuthDep (`/query`): dev mode gets the bound and the cross-site check; a real
/// key the bound, then a matching bearer or 401 `Invalid API key`.
pub(crate) fn verify_key(
    caller: &Caller<'_>,
    key: &ApiKey,
    policy: &Policy,
) -> Result<(), Refusal> {
    match key {
        ApiKey::Dev => bound_dev_key_request(caller, policy),
        ApiKey::Real(secret) => {
            request_bound(caller, key, policy)?;
            if bearer_matches(secret, bearer(caller.headers).as_deref()) {
                Ok(())
            } else {
                Err(Refusal::Detail(
                    StatusCode::UNAUTHORIZED,
                    "Invalid API key".to_owned(),
                ))
            }
        }
    }
}

/// ReadAuthDep (`/particles/*`): AuthDep under `api.require_auth_for_reads`;
/// otherwise dev mode gets the bound and the cross-site check, and a real key
/// the bound plus the cross-site check for a caller without the bearer.
pub(crate) fn verify_read_key(
    caller: &Caller<'_>,
    key: &ApiKey,
    policy: &Policy,
) -> Result<(), Refusal> {
    if policy.require_auth_for_reads {
        return verify_key(caller, key, policy);
    }
    match key {
        ApiKey::Dev => bound_dev_key_request(caller, policy),
        ApiKey::Real(secret) => {
            request_bound(caller, key, policy)?;
            if !bearer_matches(secret, bearer(caller.headers).as_deref()) {
                refuse_cross_site(caller, policy)?;
            }
            Ok(())
        }
    }
}

/// The fail-closed start (the reference's `enforce_fail_closed_on_startup`):
/// with bearer auth disabled, only a loopback bind may serve.
///
/// # Errors
///
/// The refusal, worded as the reference words it, naming where the bind came
/// from.
pub fn check_startup(key: &ApiKey, bind_host: &str, source: &str) -> Result<(), String> {
    if *key != ApiKey::Dev || is_loopback_host(bind_host) {
        return Ok(());
    }
    Err(format!(
        "Refusing to start: bearer auth is disabled (PARTICLES_API_KEY is unset or 'dev-key') \
         and the bind from {source}, {}, is not a loopback address, so the API would serve every \
         endpoint — including the write verbs — unauthenticated beyond loopback. Set \
         PARTICLES_API_KEY to a secret value, or bind the API to a loopback interface for local \
         development.",
        particles_model::python_repr(bind_host)
    ))
}

#[cfg(test)]
mod tests;
