//! The host key of a source URI: Python's `urllib.parse.urlsplit(uri).netloc`.

use unicode_normalization::UnicodeNormalization;

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

/// Python 3.11's `_check_bracketed_netloc`: nothing before `[`, only a port after
/// `]`, and a valid IPv6 (or IPvFuture) address inside.
fn check_bracketed(netloc: &str) -> Result<(), NetlocError> {
    const INVALID: NetlocError = NetlocError("Invalid IPv6 URL");
    let host_and_port = netloc.rsplit_once('@').map_or(netloc, |(_, host)| host);
    let Some((before, bracketed)) = host_and_port.split_once('[') else {
        return Ok(());
    };
    if !before.is_empty() {
        return Err(INVALID);
    }
    let (host, port) = bracketed.split_once(']').unwrap_or((bracketed, ""));
    if !port.is_empty() && !port.starts_with(':') {
        return Err(INVALID);
    }
    let valid = if let Some(future) = host.strip_prefix('v') {
        future.split_once('.').is_some_and(|(hex, rest)| {
            !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) && !rest.is_empty()
        })
    } else {
        let address = host.split_once('%').map_or(host, |(address, _)| address);
        address.parse::<std::net::Ipv6Addr>().is_ok()
    };
    if valid {
        Ok(())
    } else {
        Err(INVALID)
    }
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
    let normalized: String = cleaned.nfkc().collect();
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
    }
}
