//! The no-egress posture (`network.egress`, `network.allow`) as the provider
//! selection applies it, and the URL facts it and the plaintext-key rule need.
//!
//! Nothing is inferred from an address: loopback is refused under `none` like any
//! other host, and an allowlist entry names a host, an IP literal or a CIDR block,
//! optionally with a port. Host names are compared stripped and lower-cased as
//! Python strips and lower-cases them (`particles_pytext`); the reference also
//! IDNA-encodes non-ASCII names, which this does not (see the crate docs).

use std::net::IpAddr;

use crate::{
    error::{Error, RefusingPosture},
    pytext,
};

/// `network.egress` with its `network.allow` list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EgressPosture {
    /// No check (the default).
    #[default]
    Open,
    /// Refuse every destination, loopback included.
    None,
    /// Refuse all but the listed destinations.
    Allowlist(Vec<AllowEntry>),
}

/// One `network.allow` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    /// An IP literal, a CIDR block (`10.0.0.0/8`) or an exact host name.
    pub host: String,
    /// The permitted port; `None` permits any.
    pub port: Option<u16>,
}

impl EgressPosture {
    /// Refuses `url`'s destination unless the posture allows it.
    ///
    /// # Errors
    ///
    /// [`Error::EgressRefused`] naming the host and port the URL connects to.
    pub fn check_url(&self, url: &str) -> Result<(), Error> {
        let (host, port) = host_port(url);
        self.check(&host, port)
    }

    pub(crate) fn check(&self, host: &str, port: Option<u16>) -> Result<(), Error> {
        let posture = match self {
            EgressPosture::Open => return Ok(()),
            EgressPosture::None => RefusingPosture::None,
            EgressPosture::Allowlist(entries) if allows(entries, host, port) => return Ok(()),
            EgressPosture::Allowlist(_) => RefusingPosture::Allowlist,
        };
        Err(Error::EgressRefused {
            host: host.to_owned(),
            port,
            posture,
        })
    }
}

fn allows(entries: &[AllowEntry], host: &str, port: Option<u16>) -> bool {
    let name = normalize_host(host);
    let ip = parse_ip(&name);
    entries.iter().any(|entry| {
        let port_matches = entry.port.is_none() || port.is_none() || entry.port == port;
        if !port_matches {
            return false;
        }
        let entry_host = pytext::lower(pytext::strip(&entry.host));
        match (ip, entry_host.split_once('/')) {
            (Some(ip), Some((network, prefix))) => in_network(ip, network, prefix),
            (Some(ip), None) => parse_ip(&normalize_host(&entry_host)) == Some(ip),
            (None, Some(_)) => false,
            (None, None) => {
                let entry_name = normalize_host(&entry_host);
                parse_ip(&entry_name).is_none() && entry_name == name
            }
        }
    })
}

/// The reference's `normalize_host` short of IDNA: `host.strip().strip("[]")
/// .rstrip(".").lower()`.
fn normalize_host(host: &str) -> String {
    pytext::lower(
        pytext::strip(host)
            .trim_matches(['[', ']'])
            .trim_end_matches('.'),
    )
}

/// An IP literal, a zone suffix (`%eth0`) ignored.
fn parse_ip(host: &str) -> Option<IpAddr> {
    let bare = host.trim_matches(['[', ']']);
    let bare = bare.split_once('%').map_or(bare, |(addr, _)| addr);
    bare.parse().ok()
}

/// Whether `ip` lies in `network/prefix` (host bits of the network ignored, as
/// `ip_network(..., strict=False)` ignores them).
fn in_network(ip: IpAddr, network: &str, prefix: &str) -> bool {
    let Ok(prefix) = prefix.parse::<u32>() else {
        return false;
    };
    match (ip, parse_ip(network)) {
        (IpAddr::V4(ip), Some(IpAddr::V4(network))) if prefix <= 32 => {
            let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
            u32::from(ip) & mask == u32::from(network) & mask
        }
        (IpAddr::V6(ip), Some(IpAddr::V6(network))) if prefix <= 128 => {
            let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
            u128::from(ip) & mask == u128::from(network) & mask
        }
        _ => false,
    }
}

/// The parts of a URL the checks read (Python's `urlsplit`, simplified to what a
/// provider base URL holds).
struct UrlParts<'a> {
    scheme: String,
    host: String,
    port: Option<&'a str>,
}

fn split_url(url: &str) -> UrlParts<'_> {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (pytext::lower(scheme), rest),
        None => (String::new(), url.strip_prefix("//").unwrap_or(url)),
    };
    let netloc = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let hostport = netloc
        .rsplit_once('@')
        .map_or(netloc, |(_, hostport)| hostport);
    let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
        match bracketed.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => (bracketed, None),
        }
    } else {
        match hostport.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (hostport, None),
        }
    };
    // `SplitResult.hostname`: lower-cased, an IPv6 zone (`%eth0`) kept as written.
    let host = match host.split_once('%') {
        Some((name, zone)) => format!("{}%{zone}", pytext::lower(name)),
        None => pytext::lower(host),
    };
    UrlParts { scheme, host, port }
}

/// The host and port a URL connects to; the scheme's default port when the URL
/// names none (or names one that does not parse, as the reference falls back).
pub(crate) fn host_port(url: &str) -> (String, Option<u16>) {
    let parts = split_url(url);
    let port = parts
        .port
        .filter(|port| !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit()))
        .and_then(|port| port.parse::<u16>().ok())
        .or(match parts.scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        });
    (parts.host, port)
}

/// Whether a credential sent to `url` would cross the network unencrypted: any
/// scheme but https, to a host that is not loopback (`localhost`, 127.0.0.0/8,
/// `::1`; names are not resolved).
pub(crate) fn is_cleartext_remote(url: &str) -> bool {
    let parts = split_url(url);
    if parts.scheme == "https" {
        return false;
    }
    // `host_is_loopback`: `host.strip().lower()` (the host is lower-cased already).
    let host = pytext::strip(&parts.host);
    if host.is_empty() {
        return true;
    }
    if host == "localhost" {
        return false;
    }
    !parse_ip(host).is_some_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(host: &str, port: Option<u16>) -> AllowEntry {
        AllowEntry {
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn urls() {
        assert_eq!(
            host_port("https://api.anthropic.com"),
            ("api.anthropic.com".into(), Some(443))
        );
        assert_eq!(
            host_port("http://LOCALHOST:11434/v1"),
            ("localhost".into(), Some(11434))
        );
        assert_eq!(host_port("http://[::1]:8/v1"), ("::1".into(), Some(8)));
        assert_eq!(host_port("http://h:bad/v1"), ("h".into(), Some(80)));
        assert_eq!(host_port("ftp://u@h/x"), ("h".into(), None));
        assert!(is_cleartext_remote("http://example.com/v1"));
        assert!(!is_cleartext_remote("http://127.0.0.2:1/v1"));
        assert!(!is_cleartext_remote("http://[::1]/v1"));
        assert!(!is_cleartext_remote("HTTPS://example.com"));
    }

    #[test]
    fn postures() {
        let allow = EgressPosture::Allowlist(vec![
            entry("10.0.0.0/8", None),
            entry("Example.com", Some(443)),
            entry("::1", None),
        ]);
        assert!(allow.check_url("http://10.1.2.3:5/v1").is_ok());
        assert!(allow.check_url("https://example.com./v1").is_ok());
        assert!(allow.check_url("http://example.com/v1").is_err());
        assert!(allow.check_url("http://[::1]:9/v1").is_ok());
        let refused = EgressPosture::None
            .check_url("http://127.0.0.1:9/v1")
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "network.egress is none: refusing to connect to 127.0.0.1:9 (llm purpose \
             query_response). Add the destination to network.allow to permit it."
        );
    }
}
