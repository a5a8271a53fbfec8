//! The reference's gates and limits (engine-api §2), and ours, against an
//! in-process server: each refusal's status and text, nothing leaked, and the
//! server still answering afterwards.

use std::{io::Write, net::TcpStream, time::Duration};

use particles_server::Limits;

use crate::support::{
    fixture_store, post_query, raw, request, request_bytes, ServerSetup, TestServer,
};

const KEY: &str = "s3cret-key";
const QUESTION: &str = r#"{"question": "silver coins"}"#;

fn server_with_key(dir: &std::path::Path, key: Option<&str>, yaml: &'static str) -> TestServer {
    let store = fixture_store(dir);
    let mut setup = ServerSetup::new(&store);
    setup.key = key;
    setup.config_yaml = yaml;
    TestServer::start(setup)
}

fn still_serving(server: &TestServer) {
    let health = request(server.addr, "GET", "/health", &[], None);
    assert_eq!(health.status, 200, "{:?}", health);
    assert_eq!(health.json()["status"], "ok");
}

#[test]
fn the_bearer_gate_answers_as_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_key(
        dir.path(),
        Some(KEY),
        "network: {egress: none}\napi: {rate_limit_per_minute: 0}\n",
    );
    let cases: [(&str, Option<String>, u16); 6] = [
        ("no header", None, 401),
        ("another scheme", Some(format!("Basic {KEY}")), 401),
        ("a wrong key", Some("Bearer not-the-key".into()), 401),
        ("a key with a suffix", Some(format!("Bearer {KEY}x")), 401),
        ("lower-case scheme", Some(format!("bearer {KEY}")), 200),
        ("padded credentials", Some(format!("Bearer   {KEY}  ")), 200),
    ];
    for (what, header, status) in cases {
        let headers: Vec<(&str, &str)> = header
            .as_deref()
            .map(|h| vec![("Authorization", h)])
            .unwrap_or_default();
        let reply = post_query(server.addr, &headers, QUESTION);
        assert_eq!(
            reply.status,
            status,
            "{what}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        if status == 401 {
            assert_eq!(reply.body, br#"{"detail":"Invalid API key"}"#, "{what}");
            assert!(reply.header("www-authenticate").is_none(), "{what}");
            assert!(
                !String::from_utf8_lossy(&reply.body).contains(KEY),
                "{what} leaks the key"
            );
        }
    }
    // Reads stay open to a caller without the bearer (curl), as the reference's do.
    let read = request(server.addr, "GET", "/particles/contested", &[], None);
    assert_eq!(read.status, 200);
    still_serving(&server);
}

#[test]
fn auth_runs_before_the_limiter_and_the_limiter_before_validation() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_key(
        dir.path(),
        Some(KEY),
        "network: {egress: none}\napi: {rate_limit_per_minute: 2}\n",
    );
    let bearer = format!("Bearer {KEY}");
    let auth = [("Authorization", bearer.as_str())];
    // An unauthenticated bad body is a 401, and spends no token.
    assert_eq!(post_query(server.addr, &[], r#"{"top_k": 0}"#).status, 401);
    assert_eq!(
        post_query(server.addr, &auth, r#"{"top_k": 0}"#).status,
        422
    );
    assert_eq!(post_query(server.addr, &auth, QUESTION).status, 200);
    let limited = post_query(server.addr, &auth, r#"{"top_k": 0}"#);
    assert_eq!(
        limited.status, 429,
        "the third request finds the bucket empty"
    );
    assert_eq!(limited.header("retry-after"), Some("60"));
    assert_eq!(
        limited.detail(),
        "Rate limit exceeded for this client. This endpoint drives a paid model call per \
         request; retry after a short wait or raise api.rate_limit_per_minute."
    );
    still_serving(&server);
}

#[test]
fn bodies_are_capped_and_malformed_ones_get_fastapi_422s() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_key(
        dir.path(),
        None,
        "network: {egress: none}\napi: {max_request_body_bytes: 1000, rate_limit_per_minute: 0}\n",
    );
    let big = format!(r#"{{"question": "{}"}}"#, "x".repeat(2000));
    let declared = post_query(server.addr, &[], &big);
    assert_eq!(declared.status, 413);
    assert_eq!(declared.body, br#"{"detail":"Request body too large"}"#);
    // Declared on another path too (the reference's middleware covers every path).
    let elsewhere = request(
        server.addr,
        "POST",
        "/particles/assert",
        &[("Content-Type", "application/json")],
        Some(&big),
    );
    assert_eq!(elsewhere.status, 413);

    let missing = request(server.addr, "POST", "/query", &[], None);
    assert_eq!(missing.status, 422);
    assert_eq!(
        missing.json(),
        serde_json::json!({"detail": [{"type": "missing", "loc": ["body"], "msg": "Field required", "input": null}]})
    );
    let malformed = post_query(server.addr, &[], r#"{"question": "a",}"#);
    assert_eq!(malformed.status, 422);
    assert_eq!(
        malformed.json(),
        serde_json::json!({"detail": [{"type": "json_invalid", "loc": ["body", 17], "msg": "JSON decode error", "input": {}, "ctx": {"error": "Expecting property name enclosed in double quotes"}}]})
    );
    let array = post_query(server.addr, &[], "[1]");
    assert_eq!(array.json()["detail"][0]["type"], "model_attributes_type");
    let text = request(
        server.addr,
        "POST",
        "/query",
        &[("Content-Type", "text/plain")],
        Some(QUESTION),
    );
    assert_eq!(text.status, 422);
    assert_eq!(text.json()["detail"][0]["input"], QUESTION);
    // Not UTF-8 either: the reference's error encoder raises (a 500); ours
    // answers the same 422, the input decoded lossily.
    let bytes = request_bytes(
        server.addr,
        "POST",
        "/query",
        &[("Content-Type", "text/plain")],
        Some(b"caf\xe9?".as_slice()),
    );
    assert_eq!(bytes.status, 422);
    assert_eq!(bytes.json()["detail"][0]["type"], "model_attributes_type");
    assert_eq!(bytes.json()["detail"][0]["input"], "caf\u{fffd}?");
    let huge_top_k = post_query(
        server.addr,
        &[],
        r#"{"question": "q", "top_k": 1000000000000}"#,
    );
    assert_eq!(huge_top_k.status, 422);
    assert_eq!(huge_top_k.json()["detail"][0]["type"], "less_than_equal");
    assert_eq!(
        huge_top_k.json()["detail"][0]["loc"],
        serde_json::json!(["body", "top_k"])
    );
    still_serving(&server);
}

#[test]
fn slow_clients_are_cut_off_and_others_still_served() {
    let dir = tempfile::tempdir().unwrap();
    let store = fixture_store(dir.path());
    let mut setup = ServerSetup::new(&store);
    setup.limits = Limits {
        header_timeout: Duration::from_millis(500),
        body_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let server = TestServer::start(setup);
    // Headers that never finish: the connection is closed, without a response.
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.write_all(b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buffer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut slow, &mut buffer);
    assert!(
        buffer.is_empty() || String::from_utf8_lossy(&buffer).starts_with("HTTP/1.1 408"),
        "{:?}",
        String::from_utf8_lossy(&buffer)
    );
    // A body that stops halfway: 408 once the body timeout passes.
    let mut stalled = TcpStream::connect(server.addr).unwrap();
    stalled
        .write_all(b"POST /query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"question\"")
        .unwrap();
    stalled
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buffer = Vec::new();
    let _ = std::io::Read::read_to_end(&mut stalled, &mut buffer);
    let reply = crate::support::parse_reply(&buffer);
    assert_eq!(reply.status, 408);
    still_serving(&server);
}

#[test]
fn hosts_and_origins_are_bounded_and_forwarded_for_is_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_key(
        dir.path(),
        None,
        "network: {egress: none}\napi: {rate_limit_per_minute: 0}\n",
    );
    let rebinding = request(
        server.addr,
        "GET",
        "/health",
        &[("Host", "evil.example:8931")],
        None,
    );
    assert_eq!(rebinding.status, 403);
    assert_eq!(
        rebinding.detail(),
        "Refusing a request for host 'evil.example:8931' while bearer auth is disabled. Open the \
         engine at http://127.0.0.1 or http://localhost, list the name in api.allowed_hosts, or \
         set PARTICLES_API_KEY."
    );
    let cross = post_query(server.addr, &[("Origin", "https://evil.example")], QUESTION);
    assert_eq!(cross.status, 403);
    assert!(cross
        .detail()
        .starts_with("Refusing a cross-site browser request (Origin: https://evil.example)."));
    let same = post_query(server.addr, &[("Sec-Fetch-Site", "same-origin")], QUESTION);
    assert_eq!(same.status, 200);
    // Without trusted proxies a forwarded header is ignored: the peer is loopback.
    // (The configuration refuses a loopback proxy, so the remote-client 503 is
    // covered by the gate's unit tests.)
    let spoofed = request(
        server.addr,
        "GET",
        "/health",
        &[("X-Forwarded-For", "203.0.113.7")],
        None,
    );
    assert_eq!(spoofed.status, 200);
    still_serving(&server);
}

#[test]
fn path_ids_are_routed_as_starlette_routes_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_key(dir.path(), None, "network: {egress: none}\n");
    for path in [
        "/particles/%2E%2E",
        "/particles/..",
        "/particles/%2e%2e/source",
        "/particles/a%20b",
    ] {
        let reply = request(server.addr, "GET", path, &[], None);
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(reply.body, br#"{"detail":"Particle not found"}"#, "{path}");
    }
    // An encoded slash makes a deeper path, and the fingerprint search is the
    // upstream's route: none of ours, and no upstream.
    for path in [
        "/particles/..%2F..%2Fetc%2Fpasswd",
        "/particles/a%2Fb/source",
        "/corpus",
        // The reference's fingerprint search, not a particle id.
        "/particles/search?fingerprint=00ff",
        "/particles/%73earch?fingerprint=00ff",
    ] {
        let reply = request(server.addr, "GET", path, &[], None);
        assert_eq!(reply.status, 501, "{path}");
        assert!(reply.detail().contains("--upstream"), "{path}");
        assert!(!reply.detail().contains("root:"), "{path}");
    }
    still_serving(&server);
}

#[test]
fn dev_mode_refuses_to_start_beyond_loopback() {
    let refusal =
        particles_server::check_startup(&particles_server::ApiKey::Dev, "0.0.0.0", "--listen")
            .expect_err("dev mode on every interface");
    assert!(
        refusal.starts_with("Refusing to start: bearer auth is disabled"),
        "{refusal}"
    );
    assert!(
        particles_server::check_startup(&particles_server::ApiKey::Dev, "::1", "--listen").is_ok()
    );
    assert!(particles_server::check_startup(
        &particles_server::ApiKey::Real("k".into()),
        "0.0.0.0",
        "--listen"
    )
    .is_ok());
}

#[test]
fn raw_garbage_does_not_stop_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_key(dir.path(), None, "network: {egress: none}\n");
    let reply = raw(server.addr, b"GARBAGE\r\n\r\n");
    assert!(
        reply.status == 400 || reply.status == 405 || reply.status == 501,
        "{}",
        reply.status
    );
    still_serving(&server);
}

/// The reference's own client with a bearer token (`PARTICLES_ENGINE_TOKEN`):
/// over loopback `http://` it sends the token and our server accepts it; toward
/// a non-loopback plain `http://` address it refuses to send it at all, before
/// any connection, so the key never leaves the machine.
#[test]
fn the_references_client_sends_the_key_only_where_it_may() {
    let Some(reference) = crate::support::reference(&["httpx"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = server_with_key(dir.path(), Some(KEY), "network: {egress: none}\n");
    let script = r#"
import asyncio, json
from particles.api.client.http import HttpBackend, PlaintextTokenRefused
from particles.core.schema import QueryRequest

async def main():
    try:
        response = await HttpBackend().query(QueryRequest(question="silver coins", top_k=3))
        print(json.dumps({"sent": True, "particles": len(response.particles)}))
    except PlaintextTokenRefused as refused:
        print(json.dumps({"sent": False, "refused": str(refused)}))

asyncio.run(main())
"#;
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |base_url: &str| -> serde_json::Value {
        let output = std::process::Command::new(&reference.python)
            .arg("-c")
            .arg(script)
            .env("PYTHONPATH", &reference.pythonpath)
            .env("PARTICLES_ENGINE_BASE_URL", base_url)
            .env("PARTICLES_ENGINE_TOKEN", KEY)
            .env("HOME", &home)
            .env_remove("PARTICLES_CONFIG")
            .env_remove("DATABASE_URL")
            .output()
            .expect("the reference's python runs");
        assert!(
            output.status.success(),
            "{base_url}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        serde_json::from_str(stdout.lines().last().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{base_url}: {e}: {stdout}"))
    };
    let loopback = run(&server.url());
    assert_eq!(loopback["sent"], true, "{loopback}");
    assert!(loopback["particles"].as_u64().unwrap() > 0, "{loopback}");
    // 192.0.2.1 is TEST-NET-1: not loopback, and never routed.
    let remote = run("http://192.0.2.1:8931");
    assert_eq!(remote["sent"], false, "{remote}");
    assert!(
        remote["refused"].as_str().unwrap().contains("https://"),
        "{remote}"
    );
    still_serving(&server);
}
