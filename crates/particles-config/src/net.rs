//! The slices of Python's `ipaddress` and `urllib.parse.urlsplit` that the
//! reference's network validators lean on.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `ipaddress.ip_address(text)`.
pub(crate) fn ip_address(text: &str) -> Option<IpAddr> {
    if let Ok(v4) = text.parse::<Ipv4Addr>() {
        return Some(IpAddr::V4(v4));
    }
    // Python accepts a scope id (`fe80::1%eth0`); it does not change the checks here.
    let address = text.split_once('%').map_or(
        text,
        |(address, scope)| {
            if scope.is_empty() {
                text
            } else {
                address
            }
        },
    );
    address.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
}

/// A network as `ipaddress.ip_network(text, strict=False)` reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Network {
    pub(crate) address: IpAddr,
    pub(crate) prefix: u8,
}

impl Network {
    /// `network.is_loopback`: the whole range lies in 127.0.0.0/8, or is `::1/128`.
    pub(crate) fn is_loopback(&self) -> bool {
        match self.address {
            IpAddr::V4(address) => {
                let bits = u32::from(address);
                let mask = if self.prefix == 0 {
                    0
                } else {
                    u32::MAX << (32 - u32::from(self.prefix))
                };
                let first = bits & mask;
                let last = first | !mask;
                first >> 24 == 127 && last >> 24 == 127
            }
            IpAddr::V6(address) => self.prefix == 128 && address == Ipv6Addr::LOCALHOST,
        }
    }
}

/// Python's message when `ip_network` refuses a value.
pub(crate) fn network_error(text: &str) -> String {
    format!(
        "{} does not appear to be an IPv4 or IPv6 network",
        crate::pyfmt::str_repr(text)
    )
}

/// `ipaddress.ip_network(text, strict=False)`.
pub(crate) fn ip_network(text: &str) -> Option<Network> {
    let mut parts = text.split('/');
    let address = parts.next()?;
    let prefix = parts.next();
    if parts.next().is_some() {
        return None;
    }
    let address = ip_address(address)?;
    let max = match address {
        IpAddr::V4(_) => 32u8,
        IpAddr::V6(_) => 128u8,
    };
    let prefix = match prefix {
        None => max,
        Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            let value: u32 = digits.parse().ok()?;
            if value > u32::from(max) {
                return None;
            }
            u8::try_from(value).ok()?
        }
        // An IPv4 netmask (255.255.0.0) or host mask (0.0.255.255).
        Some(mask) => {
            let IpAddr::V4(_) = address else { return None };
            let mask = u32::from(mask.parse::<Ipv4Addr>().ok()?);
            let ones = mask.leading_ones();
            let zeros = (!mask).leading_ones();
            if mask.checked_shl(ones).unwrap_or(0) == 0 {
                u8::try_from(ones).ok()?
            } else if (!mask).checked_shl(zeros).unwrap_or(0) == 0 {
                u8::try_from(zeros).ok()?
            } else {
                return None;
            }
        }
    };
    Some(Network { address, prefix })
}

/// What `urlsplit` yields, the parts the origin check reads.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SplitUrl {
    pub(crate) scheme: String,
    pub(crate) netloc: String,
    pub(crate) path: String,
    pub(crate) query: String,
    pub(crate) fragment: String,
}

/// `urllib.parse.urlsplit(url)` (Python 3.11), including its `ValueError` for
/// unbalanced or misplaced IPv6 brackets.
pub(crate) fn urlsplit(url: &str) -> Result<SplitUrl, String> {
    let url: String = url
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let mut out = SplitUrl::default();
    let mut rest = url.as_str();
    if let Some(colon) = rest.find(':') {
        let candidate = &rest[..colon];
        let starts_alpha = candidate
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic());
        let all_scheme = candidate
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if colon > 0 && starts_alpha && all_scheme {
            out.scheme = candidate.to_ascii_lowercase();
            rest = &rest[colon + 1..];
        }
    }
    if let Some(after) = rest.strip_prefix("//") {
        let end = after.find(['/', '?', '#']).unwrap_or(after.len());
        out.netloc = after[..end].to_owned();
        rest = &after[end..];
        let (open, close) = (out.netloc.contains('['), out.netloc.contains(']'));
        if open != close {
            return Err("Invalid IPv6 URL".to_owned());
        }
        if open {
            let host_and_port = out
                .netloc
                .rsplit_once('@')
                .map_or(out.netloc.as_str(), |(_, h)| h);
            if let Some((before, bracketed)) = host_and_port.split_once('[') {
                if !before.is_empty() {
                    return Err("Invalid IPv6 URL".to_owned());
                }
                let (host, port) = bracketed.split_once(']').unwrap_or((bracketed, ""));
                if !port.is_empty() && !port.starts_with(':') {
                    return Err("Invalid IPv6 URL".to_owned());
                }
                if !host.starts_with('v') && !matches!(ip_address(host), Some(IpAddr::V6(_))) {
                    return Err(format!(
                        "{} does not appear to be an IPv4 or IPv6 address",
                        crate::pyfmt::str_repr(host)
                    ));
                }
            }
        }
    }
    if let Some((before, fragment)) = rest.split_once('#') {
        out.fragment = fragment.to_owned();
        rest = before;
    }
    if let Some((before, query)) = rest.split_once('?') {
        out.query = query.to_owned();
        rest = before;
    }
    out.path = rest.to_owned();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_parse_as_python_does() {
        let net = ip_network("10.0.0.5/8").expect("non-strict accepts host bits");
        assert_eq!(net.prefix, 8);
        assert_eq!(ip_network("10.0.0.0/255.0.0.0").map(|n| n.prefix), Some(8));
        assert_eq!(ip_network("10.0.0.0/0.0.0.255").map(|n| n.prefix), Some(24));
        assert_eq!(ip_network("::/0").map(|n| n.prefix), Some(0));
        assert!(ip_network("10.0.0.0/33").is_none());
        assert!(ip_network("x").is_none());
        assert!(ip_network("01.2.3.4").is_none());
        assert!(ip_network("127.0.0.1").is_some_and(|n| n.is_loopback()));
        assert!(ip_network("127.0.0.0/8").is_some_and(|n| n.is_loopback()));
        assert!(!ip_network("127.0.0.0/7").is_some_and(|n| n.is_loopback()));
        assert!(ip_network("::1").is_some_and(|n| n.is_loopback()));
    }

    #[test]
    fn urls_split_as_python_does() {
        let url = urlsplit("https://notes.example.org:8443/").expect("valid");
        assert_eq!(url.scheme, "https");
        assert_eq!(url.netloc, "notes.example.org:8443");
        assert_eq!(url.path, "/");
        let bare = urlsplit("notes.example.org").expect("valid");
        assert_eq!(bare.scheme, "");
        assert_eq!(bare.path, "notes.example.org");
        assert!(urlsplit("http://[::1").is_err());
        assert_eq!(urlsplit("a:b").map(|u| u.scheme), Ok("a".to_owned()));
    }
}
