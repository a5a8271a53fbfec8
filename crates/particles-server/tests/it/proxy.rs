//! Forwarding to the reference's engine: with `particles engine serve` as the
//! upstream (serving a copy of a store the reference wrote), a write through
//! the reference's own client goes through our server, and the next query
//! through our server sees it.

use std::{
    io::Write,
    process::{Command, Stdio},
};

use serde_json::Value;

use crate::support::{
    reference, reference_store_to_serve, request, ServerSetup, TestServer, Upstream,
};

const SCRIPT: &str = r#"
import asyncio, json, sys
from particles.api.client.http import HttpBackend
from particles.core.schema import QueryRequest

async def main():
    question = sys.argv[1]
    backend = HttpBackend()
    before = await backend.query(QueryRequest(question=question, top_k=5))
    target = next(p for p in before.particles
                  if p.confidence.calibration_source.value != "HUMAN_REVIEW")
    await backend.particle_retract(particle_id=target.id, reason="server test", store="default")
    after = await backend.query(QueryRequest(question=question, top_k=5))
    print(json.dumps({"before": [p.id for p in before.particles],
                      "after": [p.id for p in after.particles],
                      "retracted": target.id}))

asyncio.run(main())
"#;

#[test]
fn a_write_through_our_server_is_seen_by_the_next_query() {
    let Some(reference) = reference(&["fastapi", "uvicorn"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The reference's engine migrates the store it serves: serve a copy, and
    // point ours at the same copy (it reads what the upstream writes).
    let served = reference_store_to_serve(&reference, dir.path(), 13, None);
    let question = "which coins were struck first?";
    let qvecs = dir.path().join("qvecs.json");
    std::fs::write(
        &qvecs,
        serde_json::json!({ question: crate::support::vector_for(question) }).to_string(),
    )
    .expect("qvecs");
    let config = dir.path().join("test.yaml");
    let yaml = format!(
        "storage:\n  database_url: \"sqlite+aiosqlite:///{}\"\n\
         api: {{rate_limit_per_minute: 0}}\nmcp:\n  write: {{enabled_stores: [default], asserter_identity: gen}}\n",
        served.display()
    );
    std::fs::write(&config, &yaml).expect("config");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let upstream = Upstream::start(
        &reference,
        &[
            ("PARTICLES_CONFIG".into(), config.display().to_string()),
            ("PARTICLES_TEST_QVECS".into(), qvecs.display().to_string()),
            ("HOME".into(), home.display().to_string()),
        ],
    );
    let yaml: &'static str = Box::leak(yaml.into_boxed_str());
    let mut setup = ServerSetup::new(&served);
    setup.config_yaml = yaml;
    setup.upstream = Some(upstream.url());
    let server = TestServer::start(setup);

    // A forwarded read first: the upstream's own route answers through us.
    let listing = request(server.addr, "GET", "/particles?limit=2", &[], None);
    assert_eq!(
        listing.status,
        200,
        "{}",
        String::from_utf8_lossy(&listing.body)
    );

    let mut child = Command::new(&reference.python)
        .args(["-c", SCRIPT, question])
        .env_remove("DATABASE_URL")
        .env("PARTICLES_CONFIG", &config)
        .env("PARTICLES_ENGINE_BASE_URL", server.url())
        .env("PYTHONPATH", &reference.pythonpath)
        .env("HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the client runs");
    drop(child.stdin.take().map(|mut s| s.flush()));
    let output = child.wait_with_output().expect("the client ends");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let retracted = result["retracted"].as_str().expect("an id");
    assert!(result["before"]
        .as_array()
        .unwrap()
        .iter()
        .any(|id| id == retracted));
    assert!(
        !result["after"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| id == retracted),
        "the query after the retraction still ranks it: {result}"
    );
    let shown = request(
        server.addr,
        "GET",
        &format!("/particles/{retracted}"),
        &[],
        None,
    );
    assert_eq!(shown.json()["status"], "RETRACTED");
}
