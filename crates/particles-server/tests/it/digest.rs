//! `GET /digest/{store}` against the reference's engine: the same store (a rich
//! digest store the reference wrote and stamped) served by `particles engine
//! serve` and by ours, the same requests, the same status and the same bytes:
//! store-wide and through projects, a second handle, the 404 of an unknown
//! store (its Python repr), the 422 of an empty project, and the bearer gate
//! (which the digest keeps whatever `api.require_auth_for_reads` says).

use std::{path::Path, process::Command};

use crate::support::{
    reference, request, stamped_copy, workspace_root, Reference, ServerSetup, TestServer, Upstream,
};

/// The bearer key both engines are started with.
const KEY: &str = "a-real-key";

/// The reference's engine and ours over `served` (as `default` and as
/// `other`), behind [`KEY`], the configuration's rate limit off and `extra`
/// appended to it.
fn both_engines(
    reference: &Reference,
    dir: &Path,
    served: &Path,
    extra: &str,
) -> (Upstream, TestServer) {
    let yaml = format!(
        "network: {{egress: none}}\nstorage:\n  database_url: \"sqlite+aiosqlite:///{0}\"\n  \
         stores:\n    other: \"sqlite+aiosqlite:///{0}\"\napi: {{rate_limit_per_minute: 0}}\n{extra}",
        served.display()
    );
    let config = dir.join("test.yaml");
    std::fs::write(&config, &yaml).expect("config");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let upstream = Upstream::start(
        reference,
        &[
            ("PARTICLES_CONFIG".into(), config.display().to_string()),
            ("HOME".into(), home.display().to_string()),
            ("PARTICLES_API_KEY".into(), KEY.to_owned()),
        ],
    );
    let yaml: &'static str = Box::leak(yaml.into_boxed_str());
    let mut setup = ServerSetup::new(served);
    setup.config_yaml = yaml;
    setup.key = Some(KEY);
    (upstream, TestServer::start(setup))
}

#[test]
fn the_digest_route_answers_as_the_references_engine() {
    let Some(reference) = reference(&["fastapi", "uvicorn"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new(&reference.python)
        .arg(workspace_root().join("tests/reference/digest_cases.py"))
        .args(["--seed", "7", "--out"])
        .arg(dir.path())
        .output()
        .expect("digest_cases.py runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let served = stamped_copy(
        &reference,
        &dir.path().join("digest-store-7.db"),
        &dir.path().join("served.db"),
    );
    let (upstream, ours) = both_engines(
        &reference,
        dir.path(),
        &served,
        "mcp:\n  recall:\n    digest_max_beliefs: 9\n",
    );
    let key = KEY;
    let bearer = format!("Bearer {key}");
    let authorised: &[(&str, &str)] = &[("authorization", bearer.as_str())];
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("/digest/default", authorised),
        ("/digest/default?project=alpha", authorised),
        ("/digest/default?project=beta&project=gamma", authorised),
        ("/digest/default?project=alpha+beta&other=1", authorised),
        ("/digest/other", authorised),
        ("/digest/nope", authorised),
        ("/digest/it%27s", authorised),
        ("/digest/d%C3%A9f", authorised),
        ("/digest/default?project=", authorised),
        ("/digest/default", &[]),
        ("/digest/default?project=", &[]),
        ("/digest/default", &[("authorization", "Bearer wrong")]),
    ];
    let mut rendered = 0;
    for (path, headers) in cases {
        let theirs = request(upstream.addr, "GET", path, headers, None);
        let mine = request(ours.addr, "GET", path, headers, None);
        assert_eq!(
            (mine.status, String::from_utf8_lossy(&mine.body)),
            (theirs.status, String::from_utf8_lossy(&theirs.body)),
            "GET {path} with {headers:?}"
        );
        if theirs.status == 200 {
            rendered += 1;
        }
    }
    assert_eq!(
        rendered, 5,
        "every authorised digest of a known store renders"
    );
}

/// `POST /memory/projection/{store}` against the reference's engine: the same
/// rich store (with hostile belief text and the provenance index the fold
/// reads) served by both, the same bodies, the same status and bytes: regions
/// store-wide and through an observer, with excluded tags, fold verdicts,
/// several sections and a budget; the 422 of a file section, of a manifest
/// pydantic refuses (each shape of its errors) and of a body that is no JSON
/// object; the 404 of an unknown store; the 500 of a stale pin; the bearer gate.
#[test]
fn the_memory_projection_route_answers_as_the_references_engine() {
    let Some(reference) = reference(&["fastapi", "uvicorn"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new(&reference.python)
        .arg(workspace_root().join("tests/reference/projection_cases.py"))
        .args(["--seed", "6", "--out"])
        .arg(dir.path())
        .output()
        .expect("projection_cases.py runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let cases: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("projection-cases-6.json")).expect("cases"),
    )
    .expect("JSON");
    let served = stamped_copy(
        &reference,
        &dir.path().join("projection-store-6.db"),
        &dir.path().join("served.db"),
    );
    let (upstream, ours) = both_engines(&reference, dir.path(), &served, "");
    let key = KEY;
    let bearer = format!("Bearer {key}");
    let json = ("content-type", "application/json");
    let authorised: &[(&str, &str)] = &[("authorization", bearer.as_str()), json];
    // Every case's manifest and options as a client sends them (the generator's
    // first configuration: the served one).
    let mut bodies: Vec<(String, String)> = cases
        .as_array()
        .expect("a list")
        .iter()
        .filter(|case| {
            case["request"]["config"]
                .as_str()
                .is_some_and(|c| c.ends_with("-0.yaml"))
        })
        .map(|case| {
            let request = &case["request"];
            let body = serde_json::json!({
                "manifest": request["manifest"],
                "observer_project": request["observer_project"],
                "exclude_source_tags": request["exclude_source_tags"],
                "fold_targets": request["fold_targets"],
            });
            ("/memory/projection/default".to_owned(), body.to_string())
        })
        .collect();
    let memory = r#"{"name": "memory-index", "max_lines": 120, "sections": [{"title": "M", "render": "bullets"}]}"#;
    for (path, body) in [
        ("/memory/projection/other", format!(r#"{{"manifest": {memory}}}"#)),
        ("/memory/projection/nope", format!(r#"{{"manifest": {memory}}}"#)),
        ("/memory/projection/it%27s", format!(r#"{{"manifest": {memory}}}"#)),
        ("/memory/projection/default", "{}".to_owned()),
        ("/memory/projection/default", "[1]".to_owned()),
        ("/memory/projection/default", "{\"manifest\": ".to_owned()),
        ("/memory/projection/default", r#"{"manifest": {}}"#.to_owned()),
        ("/memory/projection/default", r#"{"manifest": {"name": "Bad Name", "sections": []}}"#.to_owned()),
        ("/memory/projection/default", r#"{"manifest": {"name": "m", "sections": [{"title": "t"}]}}"#.to_owned()),
        ("/memory/projection/default", r#"{"manifest": {"name": "m", "sections": [5, {"block": ""}]}}"#.to_owned()),
        ("/memory/projection/default", r#"{"manifest": {"name": "m", "max_lines": 0, "sections": [{"title": "t", "render": "bullets", "top_k": "0"}]}}"#.to_owned()),
        ("/memory/projection/default", r#"{"manifest": {"name": "m", "sections": [{"title": "t", "render": "list", "select": {"allow": ["p-a"], "deny": ["p-a"]}}]}}"#.to_owned()),
        ("/memory/projection/default", r#"{"manifest": {"name": "m", "sections": [{"title": "t", "render": "bullets", "select": {"allow": ["p-a", "p-a"], "deny": ["p-a"]}}]}}"#.to_owned()),
        ("/memory/projection/default", r#"{"manifest": {"name": "m", "sections": [{"title": "t", "render": "bullets", "region": "a"}, {"title": "u", "render": "bullets", "region": "a"}]}}"#.to_owned()),
        ("/memory/projection/default", format!(r#"{{"manifest": {memory}, "observer_project": "", "exclude_source_tags": "x", "fold_targets": [1]}}"#)),
        ("/memory/projection/default", r#"{"manifest": {"name": "m", "sections": [{"block": "README.md"}]}}"#.to_owned()),
        ("/memory/projection/nope", r#"{"manifest": {"name": "m", "sections": [{"block": "README.md"}]}}"#.to_owned()),
        ("/memory/projection/default", r#"{"manifest": {"name": "m", "sections": [{"title": "t", "render": "bullets", "select": {"allow": ["p-zzzzzzzz"]}}]}}"#.to_owned()),
    ] {
        bodies.push((path.to_owned(), body));
    }
    let mut rendered = 0;
    for (path, body) in &bodies {
        let theirs = request(upstream.addr, "POST", path, authorised, Some(body));
        let mine = request(ours.addr, "POST", path, authorised, Some(body));
        assert_eq!(
            (mine.status, String::from_utf8_lossy(&mine.body)),
            (theirs.status, String::from_utf8_lossy(&theirs.body)),
            "POST {path} {body}"
        );
        if theirs.status == 200 {
            rendered += 1;
        }
    }
    assert!(rendered >= 8, "too few regions rendered ({rendered})");
    let body = format!(r#"{{"manifest": {memory}}}"#);
    for headers in [
        &[json][..],
        &[("authorization", "Bearer wrong"), json][..],
        &[("authorization", bearer.as_str())][..],
    ] {
        let path = "/memory/projection/default";
        let theirs = request(upstream.addr, "POST", path, headers, Some(&body));
        let mine = request(ours.addr, "POST", path, headers, Some(&body));
        assert_eq!(
            (mine.status, String::from_utf8_lossy(&mine.body)),
            (theirs.status, String::from_utf8_lossy(&theirs.body)),
            "POST {path} with {headers:?}"
        );
    }
}
