//! The session digest against the reference's: `particles-rs digest --json` and
//! `build_digest_located` on the same store, configuration and frozen instant,
//! byte for byte (the Markdown, each line's belief, offset and contested bases);
//! where the reference fails, particles-rs must fail too.
//!
//! `tests/reference/digest_cases.py` builds each seed's store (the hand store,
//! enriched with observer scopes, contested records and stances, use events,
//! lens utility rules, recorded spend and declined sources) and asks the
//! reference for the digest under several configurations (belief caps, badges
//! off, utility off or strong, the owner lens, the refusal hold off or under
//! another model), each store-wide and through a project.

use std::{path::Path, process::Command};

use serde_json::Value;

use crate::support::{
    file_digest, first_difference, particles_rs, particles_rs_command, reference_cases,
    reference_python, workspace_root,
};

/// `--seed N`, a generator's arguments.
pub(crate) fn seed_args(seed: u64) -> Vec<String> {
    vec!["--seed".to_owned(), seed.to_string()]
}

/// Our digest of one case, as the reference's store handle `default`.
fn ours(case: &Value) -> Result<Value, String> {
    let request = &case["request"];
    let store = request["store"].as_str().expect("a store");
    let mut command = particles_rs_command();
    command
        .env("DATABASE_URL", format!("sqlite+aiosqlite:///{store}"))
        .args(["--config", request["config"].as_str().expect("a config")])
        .args(["digest", "--json", "--now", "2026-06-01T00:00:00Z"]);
    if let Some(project) = request["project"].as_str() {
        command.args(["--project", project]);
    }
    let output = command.output().expect("particles-rs runs");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&output.stdout).expect("--json prints JSON"))
}

#[test]
fn digests_equal_the_references_on_rich_stores() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let (mut compared, mut refused_both) = (0, 0);
    for seed in 1..=4 {
        let cases = reference_cases(&python, "digest_cases.py", &seed_args(seed), dir.path());
        let store = cases[0]["request"]["store"].as_str().unwrap().to_owned();
        let before = file_digest(Path::new(&store));
        for case in &cases {
            compared += 1;
            let expected = &case["expected"];
            match (ours(case), expected.get("error")) {
                (Err(_), Some(_)) => refused_both += 1,
                (Ok(actual), None) if &actual == expected => {}
                (Ok(actual), None) => failures.push(format!(
                    "seed {seed}, {}: {}",
                    case["request"],
                    first_difference(
                        expected["markdown"].as_str().unwrap_or(""),
                        actual["markdown"].as_str().unwrap_or("")
                    )
                )),
                (Ok(_), Some(error)) => failures.push(format!(
                    "seed {seed}, {}: the reference failed ({error}), particles-rs answered",
                    case["request"]
                )),
                (Err(error), None) => failures.push(format!(
                    "seed {seed}, {}: particles-rs failed: {error}",
                    case["request"]
                )),
            }
        }
        assert_eq!(
            before,
            file_digest(Path::new(&store)),
            "the store of seed {seed} was written"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} digests differ from the reference's:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Every case but the malformed-tags ones (which both refuse) is a digest.
    assert!(
        compared - refused_both >= compared / 2,
        "too few digests compared"
    );
}

/// An MCP client reading the digest resources of the server it starts (`argv[1:]`
/// is the server's command line): both templates' and the listed resources'
/// shapes, a read store-wide and through a project, and the errors.
const RESOURCES_CLIENT: &str = r#"
import asyncio, json, os, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            templates = await session.list_resource_templates()
            listed = await session.list_resources()
            out = {
                "resources_capability": init.capabilities.resources is not None,
                "templates": [t.model_dump(by_alias=True, exclude_none=True) for t in templates.resourceTemplates],
                "listed": [r.model_dump(by_alias=True, exclude_none=True, mode="json") for r in listed.resources],
                "reads": {},
            }
            for uri in ["particles://digest/default", "particles://digest/default/alpha",
                        "particles://digest/other", "particles://digest/nope",
                        "particles://digest/a/b/c", "particles://digest/listed-missing"]:
                try:
                    result = await session.read_resource(uri)
                    out["reads"][uri] = [c.model_dump(by_alias=True, exclude_none=True, mode="json")
                                         for c in result.contents]
                except Exception as error:
                    out["reads"][uri] = {"error": str(error)}
            print(json.dumps(out))

asyncio.run(main())
"#;

/// The store of digest seed `seed`, its configuration (the default store, a
/// second handle, a listed handle whose file is missing, a belief cap) and
/// the directory they are in.
fn served_digest_store(python: &Path, dir: &Path, seed: u64) -> std::path::PathBuf {
    let cases = reference_cases(python, "digest_cases.py", &seed_args(seed), dir);
    let store = Path::new(cases[0]["request"]["store"].as_str().unwrap()).to_owned();
    let config = dir.join("served.yaml");
    std::fs::write(
        &config,
        format!(
            "network: {{egress: none}}\nstorage:\n  database_url: \"sqlite+aiosqlite:///{0}\"\n  \
             stores:\n    other: \"sqlite+aiosqlite:///{0}\"\n    listed-missing: \
             \"sqlite+aiosqlite:///{1}\"\nmcp:\n  recall:\n    digest_max_beliefs: 6\n    \
             digest_stores: [other, listed-missing]\n",
            store.display(),
            dir.join("missing.db").display()
        ),
    )
    .unwrap();
    config
}

fn read_resources(python: &Path, pythonpath: &str, config: &Path, server: &[&str]) -> Value {
    let template = particles_rs_command();
    let mut command = Command::new(python);
    for (name, value) in template.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    let output = command
        .args(["-c", RESOURCES_CLIENT])
        .args(server)
        .env("PARTICLES_CONFIG", config)
        .env("PYTHONPATH", pythonpath)
        .output()
        .expect("the MCP client runs");
    assert!(
        output.status.success(),
        "{server:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[test]
fn the_mcp_digest_resources_read_as_the_references_do() {
    let pythonpath = std::env::var("PARTICLES_REFERENCE_EXTRA_PATH").unwrap_or_default();
    let Some(python) = particles_testkit::reference_python_with(&["mcp"], &pythonpath) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = served_digest_store(&python, dir.path(), 7);
    let reference_cli = python.with_file_name("particles");
    let reference = read_resources(
        &python,
        &pythonpath,
        &config,
        &[reference_cli.to_str().unwrap(), "mcp", "serve"],
    );
    let ours = read_resources(
        &python,
        &pythonpath,
        &config,
        &[env!("CARGO_BIN_EXE_particles-rs"), "mcp", "--no-sidecar"],
    );
    assert_eq!(ours["resources_capability"], true);
    for key in ["templates", "listed"] {
        assert_eq!(ours[key], reference[key], "{key}");
    }
    for (uri, expected) in reference["reads"].as_object().unwrap() {
        let actual = &ours["reads"][uri];
        if uri.ends_with("listed-missing") {
            // The reference creates an empty database at a missing file and
            // fails on its tables; we never create a store: both fail.
            assert!(
                expected.get("error").is_some() && actual.get("error").is_some(),
                "{uri}"
            );
            continue;
        }
        assert_eq!(actual, expected, "{uri}");
    }
    assert!(reference["reads"]["particles://digest/default"][0]["text"]
        .as_str()
        .is_some_and(|text| text.starts_with("# Memory digest — default")));
}

/// The recall callers' ranking (`query --apply-utility --apply-owner
/// --exclude-source-tag --code-symbol-rank-weight`) against the reference's
/// `retrieve_ranked` with the same keywords: same ids, order and bits.
#[test]
fn recall_rankings_equal_the_references() {
    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut compared = 0;
    for seed in 1..=4 {
        let cases = reference_cases(&python, "recall_cases.py", &seed_args(seed), dir.path());
        for case in &cases {
            compared += 1;
            let config = Path::new(case["config"].as_str().unwrap());
            if let Some(failure) = crate::reference::compare(dir.path(), case, Some(config)) {
                failures.push(format!("seed {seed}: {failure}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} recall rankings differ from the reference's:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The recall options as fields, on the two other front ends: the same cases
/// as `recall_rankings_equal_the_references` (the reference's
/// `retrieve_ranked` with the keywords), sent as `serve --stdio` lines and as
/// `POST /query` bodies (`apply_utility`, `apply_owner`, `exclude_source_tags`,
/// `code_symbol_rank_weight` beside the request's fields), to one process of
/// each per store: the stdio hits carry the reference's ids and bits, and the
/// HTTP response's particles the same ids in the same order.
#[test]
fn recall_options_are_fields_on_stdio_and_http() {
    use std::io::Write;

    let Some(python) = reference_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cases = reference_cases(&python, "recall_cases.py", &seed_args(2), dir.path());
    // The requests a body can carry as they are (a window is the CLI's
    // --during / --on; a raised reference is the CLI test's).
    let cases: Vec<&Value> = cases
        .iter()
        .filter(|case| {
            let request = &case["request"];
            request["during"].is_null()
                && request["on"].is_null()
                && case["expected"].get("error").is_none()
        })
        .collect();
    assert!(cases.len() >= 8, "too few cases ({})", cases.len());
    let store = cases[0]["request"]["store"].as_str().unwrap().to_owned();
    let config = cases[0]["config"].as_str().unwrap().to_owned();
    assert!(cases
        .iter()
        .all(|c| c["request"]["store"] == store.as_str() && c["config"] == config.as_str()));
    let bodies: Vec<Value> = cases
        .iter()
        .map(|case| {
            let request = &case["request"];
            let mut body = serde_json::json!({"question": "the question", "now": request["now"]});
            for (key, value) in request.as_object().unwrap() {
                if key != "store" && !value.is_null() {
                    body[key] = value.clone();
                }
            }
            if request["vector"].is_null() {
                body["no_embedding"] = Value::Bool(true);
                body.as_object_mut().unwrap().remove("vector");
            }
            body
        })
        .collect();
    let bits = |hits: &Value, sim: &str, eff: &str| -> Vec<(String, u64, u64)> {
        hits.as_array()
            .into_iter()
            .flatten()
            .map(|hit| {
                (
                    hit["id"].as_str().unwrap_or_default().to_owned(),
                    hit[sim].as_f64().unwrap_or(f64::NAN).to_bits(),
                    hit[eff].as_f64().unwrap_or(f64::NAN).to_bits(),
                )
            })
            .collect()
    };

    let mut child = particles_rs_command()
        .args([
            "--config",
            &config,
            "serve",
            "--stdio",
            "--no-sidecar",
            "--store",
            &store,
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for body in &bodies {
        writeln!(stdin, "{body}").unwrap();
    }
    drop(stdin);
    let done = child.wait_with_output().unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let answers: Vec<Value> = String::from_utf8(done.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(answers.len(), bodies.len());
    for ((case, body), answer) in cases.iter().zip(&bodies).zip(&answers) {
        assert_eq!(
            bits(&answer["hits"], "similarity", "effective_confidence"),
            bits(&case["expected"]["hits"], "sim", "eff"),
            "serve --stdio {body}: {answer}"
        );
    }

    let mut server = crate::support::Running::start(
        particles_rs_command()
            .args([
                "--config",
                &config,
                "serve",
                "--http",
                "--listen",
                "127.0.0.1:0",
            ])
            .args(["--no-sidecar", "--store", &store]),
    );
    let api = server.api_addr();
    for (case, body) in cases.iter().zip(&bodies) {
        let (status, _, text) =
            crate::support::http_exchange(&api, "POST", "/query", &[], Some(&body.to_string()));
        assert_eq!(status, 200, "POST /query {body}: {text}");
        let response: Value = serde_json::from_str(&text).unwrap();
        let ids: Vec<&str> = response["particles"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["id"].as_str())
            .collect();
        let expected: Vec<&str> = case["expected"]["hits"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|h| h["id"].as_str())
            .collect();
        assert_eq!(ids, expected, "POST /query {body}");
    }
    server.terminate();
}

/// The synopsis's other forms: `--store PATH` names the store by its path in
/// the header, prints the Markdown the JSON carries, never writes the store;
/// `--project` with nothing in it is a usage error.
#[test]
fn the_digest_verb_takes_a_store_file_and_prints_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("coins.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-a.db"),
        &store,
    )
    .unwrap();
    let before = file_digest(&store);
    let path = store.display().to_string();
    let now = "--now=2026-06-01T00:00:00Z";
    let markdown = particles_rs(&["digest", "--store", &path, now]);
    assert!(
        markdown.status.success(),
        "{}",
        String::from_utf8_lossy(&markdown.stderr)
    );
    let text = String::from_utf8(markdown.stdout).unwrap();
    assert!(
        text.starts_with(&format!("# Memory digest — {path}\n")),
        "{text}"
    );
    let json = particles_rs(&["digest", "--store", &path, now, "--json"]);
    let body: Value = serde_json::from_slice(&json.stdout).expect("--json prints JSON");
    assert_eq!(body["markdown"], text);
    let offsets: Vec<u64> = body["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line["offset"].as_u64().unwrap())
        .collect();
    assert!(!offsets.is_empty());
    let chars: Vec<char> = text.chars().collect();
    for offset in offsets {
        assert_eq!(chars[offset as usize], '-', "a line starts at each offset");
    }
    let empty = particles_rs(&["digest", "--store", &path, "--project="]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty.stderr).contains("--project"));
    assert_eq!(
        before,
        file_digest(&store),
        "the digest never writes the store"
    );
}
