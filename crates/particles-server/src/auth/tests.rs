//! Unit tests of the gates: keys, loopback, hosts and origins.

use std::net::IpAddr;

use http::{HeaderMap, HeaderValue, StatusCode};

use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(*name, HeaderValue::from_str(value).expect("a header value"));
    }
    map
}

fn caller<'a>(peer: &str, headers: &'a HeaderMap) -> Caller<'a> {
    Caller {
        peer: Some(peer.parse::<IpAddr>().expect("an IP")),
        headers,
    }
}

#[test]
fn loopback_names_as_the_reference_reads_them() {
    for host in [
        "localhost",
        " LocalHost ",
        "127.0.0.1",
        "127.9.9.9",
        "::1",
        "[::1]",
        "fe80::1%eth0",
    ] {
        assert_eq!(is_loopback_host(host), host != "fe80::1%eth0", "{host}");
    }
    for host in [
        "0.0.0.0",
        "::",
        "",
        "127.1",
        "example.org",
        "::ffff:127.0.0.1",
    ] {
        assert!(!is_loopback_host(host), "{host}");
    }
}

#[test]
fn hosts_lose_their_port_like_the_reference() {
    assert_eq!(host_without_port("[::1]:8000"), "[::1]");
    assert_eq!(host_without_port("example.org:80"), "example.org");
    assert_eq!(host_without_port("::1"), "::1");
}

#[test]
fn forwarded_hops_count_only_behind_a_trusted_proxy() {
    let policy = Policy {
        trusted_proxies: vec![
            "127.0.0.0/8".into(),
            "10.0.0.0/8".into(),
            "not a net".into(),
        ],
        ..Policy::default()
    };
    let h = headers(&[("x-forwarded-for", "198.51.100.9, 10.1.2.3")]);
    assert_eq!(
        real_client_host(&caller("127.0.0.1", &h), &policy).as_deref(),
        Some("198.51.100.9")
    );
    assert_eq!(
        real_client_host(&caller("192.0.2.1", &h), &policy).as_deref(),
        Some("192.0.2.1")
    );
    let all_trusted = headers(&[("x-forwarded-for", "10.9.9.9")]);
    assert_eq!(
        real_client_host(&caller("127.0.0.1", &all_trusted), &policy).as_deref(),
        Some("127.0.0.1")
    );
    let untrusting = Policy::default();
    assert_eq!(
        real_client_host(&caller("127.0.0.1", &h), &untrusting).as_deref(),
        Some("127.0.0.1")
    );
}

#[test]
fn the_bearer_is_parsed_as_fastapi_parses_it() {
    assert_eq!(
        bearer(&headers(&[("authorization", "Bearer abc")])).as_deref(),
        Some("abc")
    );
    assert_eq!(
        bearer(&headers(&[("authorization", "BEARER  abc ")])).as_deref(),
        Some("abc")
    );
    assert_eq!(bearer(&headers(&[("authorization", "Basic abc")])), None);
    assert_eq!(bearer(&headers(&[("authorization", "Bearer")])), None);
    assert_eq!(bearer(&headers(&[("authorization", " Bearer abc")])), None);
    assert_eq!(bearer(&HeaderMap::new()), None);
}

#[test]
fn gates_refuse_with_the_reference_statuses() {
    let policy = Policy::default();
    let key = ApiKey::Real("k".into());
    let none = HeaderMap::new();
    let unauthorized = Refusal::Detail(StatusCode::UNAUTHORIZED, "Invalid API key".into());
    assert_eq!(
        verify_key(&caller("127.0.0.1", &none), &key, &policy),
        Err(unauthorized)
    );
    let good = headers(&[("authorization", "bearer k")]);
    assert_eq!(
        verify_key(&caller("203.0.113.1", &good), &key, &policy),
        Ok(())
    );
    // Reads: open without the bearer, unless a browser comes cross-site.
    assert_eq!(
        verify_read_key(&caller("203.0.113.1", &none), &key, &policy),
        Ok(())
    );
    let cross = headers(&[("sec-fetch-site", "cross-site")]);
    assert!(matches!(
        verify_read_key(&caller("127.0.0.1", &cross), &key, &policy),
        Err(Refusal::Detail(StatusCode::FORBIDDEN, _))
    ));
    // Dev mode: remote peers get 503 on every path, a foreign Host 403.
    assert!(matches!(
        request_bound(&caller("203.0.113.1", &none), &ApiKey::Dev, &policy),
        Err(Refusal::Detail(StatusCode::SERVICE_UNAVAILABLE, _))
    ));
    let foreign = headers(&[("host", "evil.example")]);
    assert!(matches!(
        request_bound(&caller("127.0.0.1", &foreign), &ApiKey::Dev, &policy),
        Err(Refusal::Detail(StatusCode::FORBIDDEN, _))
    ));
    assert_eq!(
        request_bound(&caller("127.0.0.1", &foreign), &key, &policy),
        Ok(())
    );
    let listed = Policy {
        allowed_hosts: vec!["*.tailnet.example".into()],
        ..Policy::default()
    };
    let sub = headers(&[("host", "engine.tailnet.example:8931")]);
    assert_eq!(
        request_bound(&caller("127.0.0.1", &sub), &ApiKey::Dev, &listed),
        Ok(())
    );
    // An Origin that cannot be parsed (urlsplit raises on it; the reference
    // answers 500) cannot name this engine: a cross-site request, refused.
    let malformed = headers(&[("origin", "http://[::1"), ("host", "127.0.0.1:8931")]);
    match verify_key(&caller("127.0.0.1", &malformed), &ApiKey::Dev, &policy) {
        Err(Refusal::Detail(StatusCode::FORBIDDEN, text)) => assert!(
            text.starts_with("Refusing a cross-site browser request (Origin: http://[::1)."),
            "{text}"
        ),
        other => panic!("a malformed Origin was not refused as cross-site: {other:?}"),
    }
    // An Origin naming the engine's own host and port is same-origin.
    let own = headers(&[
        ("origin", "http://127.0.0.1:8931"),
        ("host", "127.0.0.1:8931"),
    ]);
    assert_eq!(
        verify_key(&caller("127.0.0.1", &own), &ApiKey::Dev, &policy),
        Ok(())
    );
}
