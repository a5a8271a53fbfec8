//! The particle reads on the fixture store.

use serde_json::json;

use crate::support::{fixture_store, request, ServerSetup, TestServer};

#[test]
fn contested_particle_and_source_reads() {
    let dir = tempfile::tempdir().unwrap();
    let store = fixture_store(dir.path());
    let server = TestServer::start(ServerSetup::new(&store));
    let contested = request(server.addr, "GET", "/particles/contested", &[], None);
    assert_eq!(contested.status, 200);
    // First record wins, in the store's order.
    assert_eq!(
        String::from_utf8_lossy(&contested.body),
        r#"{"22222222-2222-4222-8222-222222222222":"44444444-4444-4444-8444-444444444444","33333333-3333-4333-8333-333333333333":"44444444-4444-4444-8444-444444444444"}"#
    );
    let particle = request(
        server.addr,
        "GET",
        "/particles/11111111-1111-4111-8111-111111111111",
        &[],
        None,
    );
    assert_eq!(particle.status, 200);
    assert_eq!(
        particle.json()["content"],
        "Silver coins were struck in Rome from the third century BC."
    );
    let prefix = request(server.addr, "GET", "/particles/11111111", &[], None);
    assert_eq!(prefix.status, 404, "exact ids only");

    let pinned = request(
        server.addr,
        "GET",
        "/particles/11111111-1111-4111-8111-111111111111/source",
        &[],
        None,
    );
    assert_eq!(
        pinned.json(),
        json!({"particle_id": "11111111-1111-4111-8111-111111111111", "match": "LOCATED",
               "text": "Silver coins were struck in Rome from the third century BC.",
               "corpus_entry_id": "entry-1", "snapshot_id": "snap-1",
               "uri_r": "https://example.org/coins", "source_type": "WEB_PAGE",
               "locate_overlap": 1.0, "snapshot_chars": crate::support::BLOB_TEXT.chars().count(),
               "truncated": false, "note": null})
    );
    let latest = request(
        server.addr,
        "GET",
        "/particles/22222222-2222-4222-8222-222222222222/source",
        &[],
        None,
    );
    assert_eq!(latest.json()["match"], "LOCATED");
    assert_eq!(latest.json()["text"], "Gold coins came later.");
    assert_eq!(latest.json()["snapshot_id"], "snap-1");
    assert_eq!(
        latest.json()["note"],
        "Provenance pins no snapshot; the entry's latest snapshot was read."
    );
    let derived = request(
        server.addr,
        "GET",
        "/particles/33333333-3333-4333-8333-333333333333/source",
        &[],
        None,
    );
    assert_eq!(derived.json()["match"], "UNAVAILABLE");
    assert_eq!(
        derived.json()["note"],
        "This particle has no corpus source (it derives from other particles)."
    );
    let missing = request(server.addr, "GET", "/particles/nope/source", &[], None);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body, br#"{"detail":"Particle not found"}"#);
}

#[test]
fn a_query_answers_with_the_reference_shape() {
    let dir = tempfile::tempdir().unwrap();
    let store = fixture_store(dir.path());
    let server = TestServer::start(ServerSetup::new(&store));
    let reply = crate::support::post_query(
        server.addr,
        &[],
        r#"{"question": "Silver coins were struck in Rome from the third century BC.", "top_k": 2}"#,
    );
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let body = reply.json();
    assert_eq!(
        body["particles"][0]["id"],
        "11111111-1111-4111-8111-111111111111"
    );
    assert_eq!(
        body["effective_confidences"].as_array().map(Vec::len),
        Some(2)
    );
    assert!(body["answer"].as_str().is_some_and(|a| !a.is_empty()));
    // Where the time went rides in a header, the body staying the reference's:
    // a batch of one (nothing else was asking), each stage within the total.
    let timing = particles_bench::load::ServerTiming::parse(
        reply
            .header("server-timing")
            .expect("a Server-Timing header"),
    );
    assert_eq!(timing.batch_size, Some(1));
    let names: Vec<&str> = timing.metrics.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["thread", "encode", "queue", "pass", "batch", "rank", "answer", "total"]
    );
    let ms = |name: &str| {
        timing
            .metrics
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, ms)| *ms)
            .expect("the metric")
    };
    assert!(ms("pass") > 0.0 && ms("pass") <= ms("batch") && ms("batch") <= ms("rank"));
    assert!(ms("encode") + ms("rank") + ms("answer") <= ms("total") + 0.01);
    let health = request(server.addr, "GET", "/health", &[], None);
    assert_eq!(health.json()["version"], particles_server::VERSION);
}
