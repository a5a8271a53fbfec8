//! The reference's own clients against our engine (spec engine-api §10): on
//! stores the reference wrote (`tests/reference/make_cases.py`), `particles
//! query ...` run by the reference's CLI with PARTICLES_ENGINE_BASE_URL pointing
//! at our server must print what the same CLI prints in-process, for every
//! query flag it has. Both sides rank the same vector for each question (the
//! reference's encoder stubbed through its seam by `sitecustomize.py`), freeze
//! the clock at one instant, and answer through one fake OpenAI-compatible
//! endpoint with a fixed reply, so the answer text is deterministic.
//!
//! Where the outputs differ, the reference's two backends are compared field
//! by field (`both_backends.py`) to name the fields in the failure. Every
//! case must print the same: no response field is excused.

use std::{
    collections::HashMap,
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{json, Value};

use crate::support::{fake_llm, reference, workspace_root, Reference, ServerSetup, TestServer};

/// The instant both engines evaluate decay at.
const NOW: &str = "2026-06-01T00:00:00+00:00";

fn make_cases(reference: &Reference, dir: &Path, seed: u64) -> (PathBuf, Vec<Value>) {
    let script = workspace_root().join("tests/reference/make_cases.py");
    let output = Command::new(&reference.python)
        .arg(&script)
        .args(["--seed", &seed.to_string(), "--out"])
        .arg(dir)
        .args(["--requests", "14"])
        .output()
        .expect("make_cases.py runs");
    assert!(
        output.status.success(),
        "make_cases.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let cases: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("cases-{seed}.json"))).expect("the cases"),
    )
    .expect("JSON cases");
    (dir.join(format!("store-{seed}.db")), cases)
}

/// One invocation of the reference's `particles query`.
struct Invocation {
    label: String,
    args: Vec<String>,
    /// The request the CLI builds from `args`, for the field comparison.
    request: Value,
}

/// The CLI flags and the request for a case, plus a variant's extra flags.
fn invocation(index: usize, case: &Value, question: &str, variant: &[&str]) -> Invocation {
    let request = &case["request"];
    let mut args = vec!["query".to_owned(), question.to_owned()];
    let mut body = json!({"question": question});
    let top_k = request["top_k"].as_u64().unwrap_or(40);
    args.push(format!("--top-k={top_k}"));
    body["top_k"] = json!(top_k);
    let min_confidence = request["min_confidence"].as_f64().unwrap_or(0.0);
    args.push(format!("--min-confidence={min_confidence}"));
    body["min_confidence"] = json!(min_confidence);
    for (field, flag) in [
        ("subject_id", "--subject"),
        ("assertion_modality", "--assertion-modality"),
        ("predicate", "--predicate"),
        ("object_eq", "--object-eq"),
        ("object_gt", "--object-gt"),
        ("object_lt", "--object-lt"),
        ("object_contains", "--object-contains"),
        ("as_of", "--as-of"),
        ("during", "--during"),
        ("on", "--on"),
    ] {
        if let Some(value) = request[field].as_str() {
            args.push(format!("{flag}={value}"));
            if !matches!(field, "during" | "on") {
                body[field] = json!(value);
            }
        }
    }
    for (field, flag) in [
        ("include_document_meta", "--include-document-meta"),
        ("include_non_asserted", "--include-non-asserted"),
        ("include_ancestors", "--include-ancestors"),
    ] {
        if request[field].as_bool() == Some(true) {
            args.push(flag.to_owned());
            body[field] = json!(true);
        }
    }
    if let Some(tags) = request["tags"].as_array() {
        for tag in tags.iter().filter_map(Value::as_str) {
            args.push(format!("--tag={tag}"));
        }
        body["tags"] = json!(tags);
    }
    for flag in variant {
        args.push((*flag).to_owned());
        match *flag {
            "--contestedness" => body["include_contestedness"] = json!(true),
            "--grounded" => body["grounded"] = json!(true),
            "--ungrounded" => body["grounded"] = json!(false),
            f if f.starts_with("--audience=") => {
                body["audience"] = json!(&f["--audience=".len()..])
            }
            _ => {}
        }
    }
    Invocation {
        label: format!("case {index} {}", args[2..].join(" ")),
        args,
        request: body,
    }
}

struct Sides {
    env: Vec<(String, String)>,
    pythonpath: String,
    server_url: String,
}

fn run_cli(reference: &Reference, sides: &Sides, args: &[String], remote: bool) -> Output {
    let mut command = Command::new(&reference.particles);
    command
        .args(args)
        .env_remove("DATABASE_URL")
        .env_remove("PARTICLES_ENGINE_BASE_URL");
    command.env("PYTHONPATH", &sides.pythonpath);
    for (name, value) in &sides.env {
        command.env(name, value);
    }
    if remote {
        command.env("PARTICLES_ENGINE_BASE_URL", &sides.server_url);
    }
    command.output().expect("the reference's CLI runs")
}

fn both_backends(reference: &Reference, sides: &Sides, request: &Value, mcp: bool) -> Value {
    let script = workspace_root().join("tests/reference/server/both_backends.py");
    let mut command = Command::new(&reference.python);
    command.arg(&script);
    if mcp {
        command.arg("--mcp");
    }
    command
        .env_remove("DATABASE_URL")
        .env("PYTHONPATH", &sides.pythonpath)
        .env("PARTICLES_ENGINE_BASE_URL", &sides.server_url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in &sides.env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("both_backends.py runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(request.to_string().as_bytes())
        .expect("the request is written");
    let output = child.wait_with_output().expect("both_backends.py ends");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "both_backends.py: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The setup both sides share: the store (ours reads the original, the
/// reference's in-process side a copy), vectors, the clock, the fake model.
fn setup(
    reference: &Reference,
    dir: &Path,
    store: &Path,
    vectors: &HashMap<String, Vec<f32>>,
) -> (Sides, PathBuf) {
    let copy = dir.join("local-copy.db");
    std::fs::copy(store, &copy).expect("the store is copied");
    let llm = fake_llm();
    let config = dir.join("test.yaml");
    std::fs::write(
        &config,
        format!(
            "storage:\n  database_url: \"sqlite+aiosqlite:///{}\"\nllm:\n  query_response: {{provider: fake, model: fake-model}}\n  providers:\n    fake: {{base_url: \"http://127.0.0.1:{llm}/v1\", max_retries: 0}}\n",
            copy.display()
        ),
    )
    .expect("the config is written");
    let qvecs = dir.join("qvecs.json");
    std::fs::write(&qvecs, serde_json::to_vec(vectors).expect("vectors")).expect("qvecs");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("a home");
    let env = vec![
        ("PARTICLES_CONFIG".to_owned(), config.display().to_string()),
        (
            "PARTICLES_TEST_QVECS".to_owned(),
            qvecs.display().to_string(),
        ),
        ("PARTICLES_TEST_NOW".to_owned(), NOW.to_owned()),
        ("HOME".to_owned(), home.display().to_string()),
        (
            "PARTICLES_ENGINE_TIMEOUT_SECONDS".to_owned(),
            "300".to_owned(),
        ),
    ];
    (
        Sides {
            env,
            pythonpath: reference.pythonpath.clone(),
            server_url: String::new(),
        },
        config,
    )
}

fn start_server(store: &Path, config: &Path, vectors: HashMap<String, Vec<f32>>) -> TestServer {
    let yaml = std::fs::read_to_string(config).expect("the config");
    let yaml: &'static str = Box::leak(yaml.into_boxed_str());
    let mut server_setup = ServerSetup::new(store);
    server_setup.config_yaml = yaml;
    server_setup.encoder = Some(crate::support::table_encoder(vectors));
    server_setup.frozen_now = Some(particles_model::Timestamp::parse(NOW).expect("an instant"));
    TestServer::start(server_setup)
}

/// The local side's stderr without the warnings the reference's engine logs
/// while it reads store rows (`particle ID: malformed ...`, `Skipped N ...
/// whose embedding model id != ...`): in-process they reach the CLI's stderr,
/// against a remote engine they stay in the engine's log.
fn in_process_stderr(stderr: &[u8]) -> String {
    let mut kept = String::new();
    // A malformed row's warning may carry pydantic's multi-line report: field
    // names alone on a line, then indented messages; they go with it.
    let mut in_report = false;
    for line in String::from_utf8_lossy(stderr).lines() {
        if line.starts_with("particle ") && line.contains(": malformed ") {
            in_report = true;
            continue;
        }
        let continuation = line.starts_with("  ")
            || (!line.is_empty()
                && line
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'));
        if in_report && continuation {
            continue;
        }
        in_report = false;
        if line.starts_with("Skipped ") && line.contains("whose embedding model id") {
            continue;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    kept
}

#[derive(Default)]
struct Tally {
    passed: Vec<String>,
    failed: Vec<String>,
}

fn compare(reference: &Reference, sides: &Sides, invocation: &Invocation, tally: &mut Tally) {
    let local = run_cli(reference, sides, &invocation.args, false);
    let remote = run_cli(reference, sides, &invocation.args, true);
    let same = local.stdout == remote.stdout
        && in_process_stderr(&local.stderr) == String::from_utf8_lossy(&remote.stderr)
        && local.status.code() == remote.status.code();
    if same {
        tally.passed.push(invocation.label.clone());
        return;
    }
    // Where the in-process reference raises (a store row its model refuses),
    // the reference's engine answers a plain 500, and so does ours: the thin
    // client then prints this line.
    let local_raised = local.status.code() == Some(1)
        && String::from_utf8_lossy(&local.stderr).starts_with("Traceback (most recent call last)");
    if local_raised
        && remote.status.code() == Some(1)
        && remote.stdout.is_empty()
        && remote.stderr == b"Error: 500 from /query: Internal Server Error\n"
    {
        tally
            .passed
            .push(format!("{} (both raise: 500)", invocation.label));
        return;
    }
    let fields = both_backends(reference, sides, &invocation.request, false);
    // The reference's client resolves a --subject prefix or name only
    // in-process; against any remote engine it passes the text through as an
    // ID (its "graceful degradation"), so an unknown subject stops the local
    // side only. The engine is held to the same response for that request.
    let subject_not_resolved = local.status.code() == Some(1)
        && String::from_utf8_lossy(&local.stderr).starts_with("No subject matches ")
        && invocation.args.iter().any(|a| a.starts_with("--subject"));
    if subject_not_resolved && fields["differing"] == json!([]) {
        tally.passed.push(format!(
            "{} (the client resolves --subject only in-process; the same response)",
            invocation.label
        ));
        return;
    }
    let differing: Vec<String> = fields["differing"]
        .as_array()
        .map(|d| {
            d.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let report = format!(
        "{}\n  fields differing: {differing:?}\n  local (exit {:?}):\n{}{}\n  remote (exit {:?}):\n{}{}",
        invocation.label,
        local.status.code(),
        String::from_utf8_lossy(&local.stdout),
        String::from_utf8_lossy(&local.stderr),
        remote.status.code(),
        String::from_utf8_lossy(&remote.stdout),
        String::from_utf8_lossy(&remote.stderr),
    );
    tally.failed.push(report);
}

#[test]
fn the_reference_cli_prints_the_same_through_our_server() {
    let Some(reference) = reference(&[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (store, cases) = make_cases(&reference, dir.path(), 11);
    let mut vectors = HashMap::new();
    let mut questions = Vec::new();
    for (index, case) in cases.iter().enumerate() {
        let question = format!("question {index} about coins");
        let vector = match case["request"]["vector"].as_array() {
            Some(values) => values
                .iter()
                .map(|v| v.as_f64().unwrap_or(0.0) as f32)
                .collect(),
            None => crate::support::vector_for(&question),
        };
        vectors.insert(question.clone(), vector);
        questions.push(question);
    }
    let (mut sides, config) = setup(&reference, dir.path(), &store, &vectors);
    let server = start_server(&store, &config, vectors);
    sides.server_url = server.url();

    let variants: [&[&str]; 6] = [
        &[],
        &["--show-particles"],
        &["--contestedness"],
        &["--grounded"],
        &["--ungrounded", "--audience=EXPERT"],
        &["--audience=REGULATORY", "--show-particles"],
    ];
    let mut tally = Tally::default();
    for (index, case) in cases.iter().enumerate() {
        let variant = variants[index % variants.len()];
        compare(
            &reference,
            &sides,
            &invocation(index, case, &questions[index], variant),
            &mut tally,
        );
    }
    // --show-source needs blobs; the hand stores have none, so it runs on the
    // fixture store (our writer, the reference's schema) below.
    eprintln!(
        "reference CLI through particles-rs: {} identical, {} different",
        tally.passed.len(),
        tally.failed.len()
    );
    assert!(
        tally.failed.is_empty(),
        "outputs differ:\n{}",
        tally.failed.join("\n\n")
    );
    assert!(!tally.passed.is_empty(), "no case printed the same");
}

#[test]
fn show_source_and_version_through_our_server() {
    let Some(reference) = reference(&[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = crate::support::fixture_store(dir.path());
    let question = "Silver coins were struck in Rome from the third century BC.";
    let mut vectors = HashMap::new();
    vectors.insert(question.to_owned(), crate::support::vector_for(question));
    let (mut sides, config) = setup(&reference, dir.path(), &store, &vectors);
    // The in-process side reads its copy's blobs beside the copy.
    let server = start_server(&store, &config, vectors);
    sides.server_url = server.url();
    let args: Vec<String> = ["query", question, "--top-k=3", "--show-source"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let local = run_cli(&reference, &sides, &args, false);
    let remote = run_cli(&reference, &sides, &args, true);
    // The fixture's INCONSISTENCY records give two hits contested badges: the
    // engine composes them, so the whole output must be the same.
    assert_eq!(
        String::from_utf8_lossy(&remote.stdout),
        String::from_utf8_lossy(&local.stdout),
        "stderr local:\n{}\nremote:\n{}",
        String::from_utf8_lossy(&local.stderr),
        String::from_utf8_lossy(&remote.stderr)
    );
    assert!(String::from_utf8_lossy(&remote.stdout).contains("⚠ contested (inconsistency)"));
    assert!(String::from_utf8_lossy(&remote.stdout).contains("Match:     located"));
    let version = run_cli(&reference, &sides, &["--version".to_owned()], true);
    let printed = String::from_utf8_lossy(&version.stdout);
    assert!(
        printed.contains(&format!("engine {}", particles_server::VERSION)),
        "{printed}"
    );
}

#[test]
fn the_reference_mcp_tool_gives_the_same_json_through_our_server() {
    let Some(reference) = reference(&["mcp"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (store, cases) = make_cases(&reference, dir.path(), 12);
    let mut vectors = HashMap::new();
    let question = "what do the coins weigh?";
    let vector = cases
        .iter()
        .find_map(|c| c["request"]["vector"].as_array())
        .map(|values| {
            values
                .iter()
                .map(|v| v.as_f64().unwrap_or(0.0) as f32)
                .collect()
        })
        .unwrap_or_else(|| crate::support::vector_for(question));
    vectors.insert(question.to_owned(), vector);
    let (mut sides, config) = setup(&reference, dir.path(), &store, &vectors);
    let server = start_server(&store, &config, vectors);
    sides.server_url = server.url();
    for arguments in [
        json!({"question": question, "top_k": 5}),
        json!({"question": question, "top_k": 3, "summary": true}),
        json!({"question": question, "top_k": 4, "as_of": "2024-01-01", "audience": "EXPERT"}),
        json!({"question": question, "during_start": "2019-01-01", "during_end": "2021-12-31"}),
    ] {
        let both = both_backends(&reference, &sides, &arguments, true);
        assert_eq!(
            both["differing"],
            json!([]),
            "the MCP tool differs for {arguments}:\nlocal {}\nremote {}",
            both["local"],
            both["remote"]
        );
        assert!(
            both["remote"].get("error").is_none(),
            "the MCP tool failed for {arguments}: {}",
            both["remote"]
        );
    }
}
