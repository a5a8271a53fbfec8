//! What an operator of `serve --http` sees: one log line per request (text or
//! JSON, with the request id echoed in a header), start-up lines saying what
//! was loaded from where, Prometheus counters that move with the requests they
//! count, liveness and readiness on `--metrics-listen`, and no secret in any
//! log line.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{http_exchange, particles_rs_command, Running};

const API_KEY: &str = "operator-secret-key-7c1d";
const WRONG_TOKEN: &str = "wrong-bearer-token-93ab";

/// The demo's store (the encoder embeds it), in `dir`.
fn coins_store(dir: &Path) -> Option<PathBuf> {
    if !cfg!(feature = "encoder") {
        eprintln!("skipping: this build has no encoder (the `encoder` feature is off)");
        return None;
    }
    particles_testkit::model_files()?;
    Some(crate::support::demo_store(dir))
}

/// The value of one sample (`name{labels} value`) in a Prometheus scrape,
/// 0 when absent.
fn sample(scrape: &str, series: &str) -> f64 {
    scrape
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn wait_ready(metrics: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let (status, _, body) = http_exchange(metrics, "GET", "/readyz", &[], None);
        if status == 200 {
            return serde_json::from_str(&body).expect("readiness is JSON");
        }
        assert!(std::time::Instant::now() < deadline, "never ready: {body}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The counters of the first test's requests moved by what they count.
fn counters_moved(before: &str, after: &str, seq: &str) {
    let moved = |series: &str| sample(after, series) - sample(before, series);
    assert_eq!(
        moved(r#"particles_http_requests_total{route="/query",method="POST",status="200"}"#),
        4.0,
        "{after}"
    );
    assert_eq!(
        moved(r#"particles_http_requests_total{route="/query",method="POST",status="401"}"#),
        2.0
    );
    assert_eq!(
        moved(
            r#"particles_http_requests_total{route="/particles/{id}",method="GET",status="200"}"#
        ),
        1.0
    );
    assert_eq!(
        moved(r#"particles_http_requests_total{route="other",method="GET",status="501"}"#),
        1.0
    );
    assert_eq!(
        moved(r#"particles_http_request_duration_seconds_count{route="/query",status="200"}"#),
        4.0
    );
    assert_eq!(
        moved(r#"particles_http_rejected_total{reason="auth"}"#),
        2.0
    );
    assert_eq!(moved("particles_query_batch_size_count"), 4.0);
    assert_eq!(moved("particles_query_queue_wait_seconds_count"), 4.0);
    assert_eq!(moved("particles_encoder_seconds_count"), 4.0);
    assert_eq!(
        sample(after, "particles_journal_seq_served").to_string(),
        seq,
        "the journal position served is the one the answers named"
    );
    assert_eq!(sample(after, "particles_queries_in_flight"), 0.0);
    assert!(
        sample(after, r#"particles_cache_routes_total{route="reuse"}"#) >= 4.0,
        "{after}"
    );
}

/// One access line per request of the first test, start-up lines naming what
/// was loaded, and no secret anywhere.
fn logged_each_request(lines: &[String], store: &Path, seq: &str) {
    let events: Vec<Value> = lines
        .iter()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let access: Vec<&Value> = events
        .iter()
        .filter(|e| e["target"] == "particles_rs::access")
        .collect();
    assert_eq!(
        access.len(),
        8,
        "one line per request:\n{}",
        lines.join("\n")
    );
    for line in &access {
        for field in ["request_id", "method", "path", "status", "latency_ms"] {
            assert!(!line[field].is_null(), "{field} missing in {line}");
        }
    }
    let queries: Vec<&&Value> = access
        .iter()
        .filter(|e| e["path"] == "/query" && e["status"] == 200)
        .collect();
    assert_eq!(queries.len(), 4);
    for query in &queries {
        assert_eq!(query["journal_seq"].to_string(), seq);
        assert_eq!(query["batch_size"], 1);
    }
    assert!(access.iter().any(|e| e["request_id"] == "caller-chosen-42"));
    assert!(access
        .iter()
        .any(|e| e["path"] == "/events" && e["status"] == 501));
    let said = |message: &str| events.iter().find(|e| e["message"] == message);
    let opened = said("store opened read-only").expect("the store is named at start");
    assert_eq!(opened["store"], store.display().to_string());
    assert!(opened["sidecar"].as_str().is_some_and(|s| !s.is_empty()));
    let encoder = said("question encoder loaded").expect("the model is named at start");
    assert!(encoder["model_dir"].as_str().is_some_and(|d| !d.is_empty()));
    assert!(said("no configuration file: the reference's defaults").is_some());
    assert!(said("listening").is_some());
    assert!(said("candidate cache at the store's head").is_some());
    let everything = lines.join("\n");
    for secret in [API_KEY, WRONG_TOKEN, "query-string-secret"] {
        assert!(
            !everything.contains(secret),
            "{secret} appears in the log:\n{everything}"
        );
    }
}

#[test]
fn requests_are_logged_counted_and_never_leak_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let Some(store) = coins_store(dir.path()) else {
        return;
    };
    let mut server = Running::start(
        particles_rs_command()
            .args([
                "serve",
                "--http",
                "--listen",
                "127.0.0.1:0",
                "--metrics-listen",
                "127.0.0.1:0",
                "--log-format",
                "json",
                // Everything every library would say, to look for secrets in.
                "--log-level",
                "trace",
                "--store",
            ])
            .arg(&store)
            .env("PARTICLES_API_KEY", API_KEY),
    );
    let api = server.api_addr();
    let metrics = server.metrics_addr();
    let ready = wait_ready(&metrics);
    assert_eq!(ready["ready"], true, "{ready}");
    assert_eq!(ready["encoder"], "loaded");
    assert_eq!(ready["stores"][0]["open"], true);
    let (_, _, before) = http_exchange(&metrics, "GET", "/metrics", &[], None);

    let bearer = format!("Bearer {API_KEY}");
    let wrong = format!("Bearer {WRONG_TOKEN}");
    let body = r#"{"question": "roman silver coins", "top_k": 3}"#;
    let mut seqs = Vec::new();
    for _ in 0..3 {
        let (status, headers, _) = http_exchange(
            &api,
            "POST",
            "/query",
            &[("authorization", &bearer)],
            Some(body),
        );
        assert_eq!(status, 200);
        seqs.push(
            header(&headers, "x-particles-journal-seq")
                .unwrap()
                .to_owned(),
        );
        assert!(header(&headers, "x-request-id").is_some_and(|id| !id.is_empty()));
    }
    // A request id the caller chose comes back.
    let (status, headers, _) = http_exchange(
        &api,
        "POST",
        "/query",
        &[
            ("authorization", &bearer),
            ("x-request-id", "caller-chosen-42"),
        ],
        Some(body),
    );
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "x-request-id"), Some("caller-chosen-42"));
    let (status, _, _) = http_exchange(
        &api,
        "POST",
        "/query",
        &[("authorization", &wrong)],
        Some(body),
    );
    assert_eq!(status, 401, "a wrong bearer");
    let (status, _, _) = http_exchange(&api, "POST", "/query", &[], Some(body));
    assert_eq!(status, 401, "no bearer");
    let (status, _, _) = http_exchange(
        &api,
        "GET",
        "/particles/demo-074",
        &[("authorization", &bearer)],
        None,
    );
    assert_eq!(status, 200);
    let (status, _, _) = http_exchange(
        &api,
        "GET",
        "/events?token=query-string-secret",
        &[("authorization", &bearer)],
        None,
    );
    assert_eq!(status, 501, "no upstream: refused, naming the path");

    let (_, _, after) = http_exchange(&metrics, "GET", "/metrics", &[], None);
    counters_moved(&before, &after, &seqs[0]);
    assert_eq!(http_exchange(&metrics, "GET", "/livez", &[], None).0, 200);

    let status = server.terminate();
    assert!(status.success());
    logged_each_request(&server.stderr(), &store, &seqs[0]);
}

#[test]
fn readiness_names_what_is_missing_and_text_logs_are_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("empty.db");
    drop(particles_store::create_store(&store).expect("a new store"));
    // Nothing listens on the upstream's port; no model where the encoder looks.
    // The port is found free on 127.0.0.2, where no other test's server
    // listens (they bind 127.0.0.1:0): on 127.0.0.1, a server started in
    // parallel could be given the same port once it is let go, and answer.
    let dead = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let upstream = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let mut server = Running::start(
        particles_rs_command()
            .args([
                "serve",
                "--http",
                "--listen",
                "127.0.0.1:0",
                "--metrics-listen",
                "127.0.0.1:0",
                "--no-sidecar",
                "--upstream",
                &upstream,
                "--store",
            ])
            .arg(&store)
            .env("PARTICLES_MODEL_DIR", dir.path().join("no-model"))
            // One query a minute per client host.
            .env("PARTICLES_API_RATE_LIMIT_PER_MINUTE", "1")
            .env_remove("RUST_LOG"),
    );
    let api = server.api_addr();
    let metrics = server.metrics_addr();
    let (status, _, body) = http_exchange(&metrics, "GET", "/readyz", &[], None);
    assert_eq!(status, 503, "{body}");
    let ready: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["ready"], false);
    assert_eq!(ready["stores"][0]["open"], true, "the store itself is fine");
    assert!(ready["encoder"].as_str().unwrap().starts_with("missing"));
    assert!(ready["upstream"]["error"].is_string(), "{ready}");
    // A forwarded request the upstream cannot answer: a 502, counted.
    let (status, _, _) = http_exchange(&api, "GET", "/events", &[], None);
    assert_eq!(status, 502);
    // Past the rate limit: a 429, counted as a refusal.
    let body = r#"{"no_embedding": true, "top_k": 1}"#;
    let (first, _, answer) = http_exchange(&api, "POST", "/query", &[], Some(body));
    assert_eq!(first, 200, "{answer}");
    let (second, _, _) = http_exchange(&api, "POST", "/query", &[], Some(body));
    assert_eq!(second, 429);
    let (_, _, scrape) = http_exchange(&metrics, "GET", "/metrics", &[], None);
    assert_eq!(
        sample(
            &scrape,
            r#"particles_http_rejected_total{reason="rate_limit"}"#
        ),
        1.0
    );
    assert_eq!(sample(&scrape, "particles_upstream_errors_total"), 1.0);
    assert_eq!(
        sample(
            &scrape,
            r#"particles_http_requests_total{route="forwarded",method="GET",status="502"}"#
        ),
        1.0
    );
    assert!(server.terminate().success());
    let lines = server.stderr();
    let access = lines
        .iter()
        .find(|l| l.contains("particles_rs::access"))
        .expect("a text access line");
    for field in [
        "request_id=",
        "method=GET",
        "path=/events",
        "status=502",
        "upstream_unreachable=true",
    ] {
        assert!(access.contains(field), "{field} in {access}");
    }
}

#[test]
fn a_store_that_cannot_be_read_is_a_500_whose_reason_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.db");
    drop(particles_store::create_store(&store).expect("a new store"));
    let mut server = Running::start(
        particles_rs_command()
            .args(["serve", "--http", "--listen", "127.0.0.1:0", "--no-sidecar"])
            .arg("--store")
            .arg(&store)
            .env("PARTICLES_MODEL_DIR", dir.path().join("no-model"))
            .env_remove("RUST_LOG"),
    );
    let api = server.api_addr();
    let body = r#"{"no_embedding": true, "top_k": 1}"#;
    let (status, _, answer) = http_exchange(&api, "POST", "/query", &[], Some(body));
    assert_eq!(status, 200, "{answer}");
    // The file's header overwritten in place (the same file, no longer a
    // SQLite database), as a disk fault or a stray write would leave it.
    {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&store)
            .unwrap();
        file.write_all_at(&[0u8; 100], 0).unwrap();
    }
    let (status, _, answer) = http_exchange(&api, "POST", "/query", &[], Some(body));
    assert_eq!(
        (status, answer.as_str()),
        (500, "Internal Server Error"),
        "the reference's bare 500"
    );
    assert!(server.terminate().success());
    let lines = server.stderr();
    let failed = lines
        .iter()
        .find(|l| l.contains("the store could not be read"))
        .unwrap_or_else(|| panic!("no store failure logged in:\n{}", lines.join("\n")));
    assert!(failed.contains("ERROR"), "{failed}");
    assert!(
        failed.contains("not a database"),
        "SQLite's reason: {failed}"
    );
}

#[test]
fn a_log_filter_that_does_not_parse_is_named() {
    let output = particles_rs_command()
        .args(["serve", "--stdio", "--no-sidecar", "--store", "x.db"])
        .env("RUST_LOG", "particles_rs=loud")
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("RUST_LOG=\"particles_rs=loud\""),
        "{stderr}"
    );
    let output = particles_rs_command()
        .args(["serve", "--stdio", "--log-level", "=", "--store", "x.db"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--log-level"));
}

#[test]
fn explain_gives_each_hits_score_factors_and_where_the_scan_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let Some(store) = coins_store(dir.path()) else {
        return;
    };
    let mut server = Running::start(
        particles_rs_command()
            .args(["serve", "--http", "--listen", "127.0.0.1:0", "--store"])
            .arg(&store)
            .env("PARTICLES_API_KEY", API_KEY),
    );
    let api = server.api_addr();
    let bearer = format!("Bearer {API_KEY}");
    let auth = [("authorization", bearer.as_str())];
    for top_k in [1, 3, 10] {
        let body = format!(r#"{{"question": "how was Roman silver debased?", "top_k": {top_k}}}"#);
        let (status, _, answer) = http_exchange(&api, "POST", "/query", &auth, Some(&body));
        assert_eq!(status, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        let (status, headers, explained) =
            http_exchange(&api, "POST", "/particles-rs/explain", &auth, Some(&body));
        assert_eq!(status, 200, "{explained}");
        assert!(header(&headers, "x-particles-journal-seq").is_some());
        let explained: Value = serde_json::from_str(&explained).unwrap();
        let hits = explained["hits"].as_array().unwrap();
        let ids: Vec<&Value> = answer["particles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["id"])
            .collect();
        assert_eq!(hits.iter().map(|h| &h["id"]).collect::<Vec<_>>(), ids);
        let weights = &explained["weights"];
        let (sw, cw) = (
            weights["similarity_weight"].as_f64().unwrap(),
            weights["confidence_weight"].as_f64().unwrap(),
        );
        for (hit, effective) in hits
            .iter()
            .zip(answer["effective_confidences"].as_array().unwrap())
        {
            // The very number the response reports, bit for bit.
            assert_eq!(&hit["effective_confidence"], effective);
            let similarity = hit["similarity"].as_f64().unwrap();
            let effective = effective.as_f64().unwrap();
            // No narrative particle in this store: the score is the sum, as computed.
            assert_eq!(
                hit["score"].as_f64().unwrap(),
                sw * similarity + cw * effective
            );
            let f = &hit["factors"];
            let product = hit["confidence"]["value"].as_f64().unwrap()
                * f["extractor_weight"].as_f64().unwrap()
                * f["source_trust"].as_f64().unwrap()
                * f["decay"].as_f64().unwrap();
            let expected = product.clamp(0.0, 1.0) * f["stale_support_discount"].as_f64().unwrap();
            assert!((expected - effective).abs() < 1e-12, "{hit}");
        }
        let counts = &explained["counts"];
        let stop = &explained["scan_stop"];
        // 212 candidates: past the first batch the walk stops on a bound.
        assert!(stop.is_object(), "top_k={top_k}: {explained}");
        assert!(
            stop["bound"].as_f64().unwrap()
                < stop["kth_score"].as_f64().unwrap() - stop["margin"].as_f64().unwrap()
        );
        assert_eq!(
            stop["scored"].as_u64().unwrap() + stop["skipped"].as_u64().unwrap(),
            counts["candidates"].as_u64().unwrap() - counts["filtered_out"].as_u64().unwrap()
        );
        assert!(
            counts["pruned"].as_u64().unwrap()
                <= counts["candidates"].as_u64().unwrap() - hits.len() as u64
        );
    }
    // The gates are /query's.
    let (status, _, _) = http_exchange(
        &api,
        "POST",
        "/particles-rs/explain",
        &[],
        Some(r#"{"question": "coins"}"#),
    );
    assert_eq!(status, 401);
    let (status, _, body) = http_exchange(
        &api,
        "POST",
        "/particles-rs/explain",
        &auth,
        Some(r#"{"predicate": "ex:mintage"}"#),
    );
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("no rank to explain"), "{body}");
    server.terminate();
}
