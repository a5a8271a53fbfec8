//! `GET /digest/{store}` against the reference's engine: the same store (a rich
//! digest store the reference wrote and stamped) served by `particles engine
//! serve` and by ours, the same requests, the same status and the same bytes:
//! store-wide and through projects, a second handle, the 404 of an unknown
//! store (its Python repr), the 422 of an empty project, and the bearer gate
//! (which the digest keeps whatever `api.require_auth_for_reads` says).

use std::process::Command;

use crate::support::{
    reference, request, stamped_copy, workspace_root, ServerSetup, TestServer, Upstream,
};

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
    let yaml = format!(
        "network: {{egress: none}}\nstorage:\n  database_url: \"sqlite+aiosqlite:///{0}\"\n  \
         stores:\n    other: \"sqlite+aiosqlite:///{0}\"\napi: {{rate_limit_per_minute: 0}}\n\
         mcp:\n  recall:\n    digest_max_beliefs: 9\n",
        served.display()
    );
    let config = dir.path().join("test.yaml");
    std::fs::write(&config, &yaml).expect("config");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let key = "a-real-key";
    let upstream = Upstream::start(
        &reference,
        &[
            ("PARTICLES_CONFIG".into(), config.display().to_string()),
            ("HOME".into(), home.display().to_string()),
            ("PARTICLES_API_KEY".into(), key.to_owned()),
        ],
    );
    let yaml: &'static str = Box::leak(yaml.into_boxed_str());
    let mut setup = ServerSetup::new(&served);
    setup.config_yaml = yaml;
    setup.key = Some(key);
    let ours = TestServer::start(setup);

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
