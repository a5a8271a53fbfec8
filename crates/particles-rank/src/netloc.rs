//! The host key of a source URI: Python's `urllib.parse.urlsplit(uri).netloc`.

/// Why `urlsplit` raises on a URI (the reference aborts the query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetlocError(pub &'static str);

/// The netloc of `uri` as Python 3.11's `urlsplit` computes it (userinfo and port
/// included, case preserved), or the empty string when there is none.
///
/// # Errors
///
/// Where Python raises `ValueError`: an unbalanced or invalid bracketed IPv6 host, or
/// a non-ASCII netloc whose NFKC form introduces one of `/ ? # @ :`.
pub fn netloc(uri: &str) -> Result<String, NetlocError> {
    // Leading C0 controls and spaces are stripped; tabs and newlines removed anywhere.
    let stripped: String = uri
        .trim_start_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\r' | '\n'))
        .collect();
    let mut rest = stripped.as_str();
    if let Some(colon) = rest.find(':') {
        let scheme = &rest[..colon];
        let valid_scheme = scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if valid_scheme {
            rest = &rest[colon + 1..];
        }
    }
    let Some(after) = rest.strip_prefix("//") else {
        return Ok(String::new());
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let netloc = &after[..end];
    let open = netloc.contains('[');
    let close = netloc.contains(']');
    if open != close {
        return Err(NetlocError("Invalid IPv6 URL"));
    }
    if open {
        check_bracketed(netloc)?;
    }
    check_nfkc(netloc)?;
    Ok(netloc.to_owned())
}

/// Python 3.11.7's check of a netloc holding both `[` and `]`: the text from the
/// first `[` to the first `]` after it (nothing else about the netloc is looked
/// at) must be an IPvFuture (`v`, hex digits, `.`, something) or an IPv6 address
/// as `ipaddress.ip_address` reads it; an IPv4 address is refused too.
fn check_bracketed(netloc: &str) -> Result<(), NetlocError> {
    const INVALID: NetlocError = NetlocError("Invalid IPv6 URL");
    let after_open = netloc.split_once('[').map_or("", |(_, after)| after);
    let host = after_open
        .split_once(']')
        .map_or(after_open, |(host, _)| host);
    let valid = if let Some(future) = host.strip_prefix('v') {
        future.split_once('.').is_some_and(|(hex, rest)| {
            !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) && !rest.is_empty()
        })
    } else {
        !is_ipv4(host) && is_ipv6(host)
    };
    if valid {
        Ok(())
    } else {
        Err(INVALID)
    }
}

/// `ipaddress.IPv4Address(text)` succeeds: four dot-separated decimal octets of
/// one to three ASCII digits, at most 255, no leading zero.
fn is_ipv4(text: &str) -> bool {
    let octets: Vec<&str> = text.split('.').collect();
    octets.len() == 4
        && octets.iter().all(|octet| {
            !octet.is_empty()
                && octet.len() <= 3
                && octet.bytes().all(|b| b.is_ascii_digit())
                && (*octet == "0" || !octet.starts_with('0'))
                && octet.parse::<u16>().is_ok_and(|value| value <= 255)
        })
}

/// `ipaddress.IPv6Address(text)` succeeds (CPython 3.11's `_ip_int_from_string`,
/// with a scope id after `%`).
fn is_ipv6(text: &str) -> bool {
    const HEXTETS: usize = 8;
    if text.contains('/') {
        return false;
    }
    let address = match text.split_once('%') {
        None => text,
        Some((address, scope)) if !scope.is_empty() && !scope.contains('%') => address,
        Some(_) => return false,
    };
    if address.is_empty() {
        return false;
    }
    let mut parts: Vec<String> = address.split(':').map(str::to_owned).collect();
    if parts.len() < 3 {
        return false;
    }
    if parts.last().is_some_and(|last| last.contains('.')) {
        let last = parts.pop().unwrap_or_default();
        if !is_ipv4(&last) {
            return false;
        }
        let value = last.split('.').fold(0u32, |acc, octet| {
            (acc << 8) | octet.parse::<u32>().unwrap_or(0)
        });
        parts.push(format!("{:x}", value >> 16));
        parts.push(format!("{:x}", value & 0xFFFF));
    }
    if parts.len() > HEXTETS + 1 {
        return false;
    }
    let mut skip = None;
    for (at, part) in parts.iter().enumerate().take(parts.len() - 1).skip(1) {
        if part.is_empty() {
            if skip.is_some() {
                return false;
            }
            skip = Some(at);
        }
    }
    let hextet = |part: &str| {
        !part.is_empty() && part.len() <= 4 && part.bytes().all(|b| b.is_ascii_hexdigit())
    };
    let (high, low) = match skip {
        Some(at) => {
            let mut high = at;
            let mut low = parts.len() - at - 1;
            if parts[0].is_empty() {
                high -= 1;
                if high > 0 {
                    return false;
                }
            }
            if parts[parts.len() - 1].is_empty() {
                low -= 1;
                if low > 0 {
                    return false;
                }
            }
            if high + low >= HEXTETS {
                return false;
            }
            (high, low)
        }
        None => {
            if parts.len() != HEXTETS || parts[0].is_empty() || parts[HEXTETS - 1].is_empty() {
                return false;
            }
            (HEXTETS, 0)
        }
    };
    parts[..high].iter().all(|p| hextet(p)) && parts[parts.len() - low..].iter().all(|p| hextet(p))
}

/// Python's `_checknetloc`.
fn check_nfkc(netloc: &str) -> Result<(), NetlocError> {
    if netloc.is_ascii() {
        return Ok(());
    }
    let cleaned: String = netloc
        .chars()
        .filter(|c| !matches!(c, '@' | ':' | '#' | '?'))
        .collect();
    // `unicodedata.normalize("NFKC", ...)`, with Python 3.11's Unicode (14.0).
    let normalized = particles_pytext::nfkc(&cleaned);
    if normalized == cleaned {
        return Ok(());
    }
    if normalized.contains(['/', '?', '#', '@', ':']) {
        return Err(NetlocError(
            "netloc contains invalid characters under NFKC normalization",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_python() {
        assert_eq!(
            netloc("https://en.wikipedia.org/wiki/X").unwrap(),
            "en.wikipedia.org"
        );
        assert_eq!(netloc("HTTPS://Ex.COM:80/x").unwrap(), "Ex.COM:80");
        assert_eq!(netloc("example.com:8080/x").unwrap(), "");
        assert_eq!(netloc("mailto:a@b").unwrap(), "");
        assert_eq!(netloc("//host/x").unwrap(), "host");
        assert_eq!(netloc(" \thttps://a\nb.com?q").unwrap(), "ab.com");
        assert_eq!(netloc("http://u@[::1]:8/").unwrap(), "u@[::1]:8");
        assert!(netloc("http://[::1/").is_err());
        assert!(netloc("http://[zz]/").is_err());
        // Python 3.11.7 checks only the first bracketed text.
        assert_eq!(netloc("http://a[::1]b/").unwrap(), "a[::1]b");
        assert_eq!(
            netloc("//[::1]@[1:2:3:4:5:6:7:1.2.3.4]").unwrap(),
            "[::1]@[1:2:3:4:5:6:7:1.2.3.4]"
        );
        assert!(netloc("http://[fe80::1%]/").is_err());
        assert!(netloc("http://[1.2.3.4]/").is_err());
        assert!(netloc("http://[::01.2.3.4]/").is_err());
        assert_eq!(netloc("http://[::1%25eth0]/").unwrap(), "[::1%25eth0]");
    }
}
