//! `cargo xtask fuzz [--minutes N] [--decoder NAME]...`: the long mode of the
//! differential fuzz. Each decoder's test (`particles_testkit::fuzz`) runs for N
//! minutes (default 10), generating batches from fresh seeds until its time is
//! up; then the figures: inputs tried, disagreements and documented differences
//! per decoder, with the shrunk disagreements in `target/fuzz/<decoder>.json`.
//! Decoders run one after the other (one core for the oracle, one for us).

use std::{path::Path, process::Command};

use anyhow::{bail, Context, Result};

/// Each decoder: its name, the crate whose `it` test binary holds it, and the
/// test's path.
const DECODERS: &[(&str, &str, &str)] = &[
    ("embedding", "particles-store", "fuzz::differential"),
    (
        "timestamp",
        "particles-model",
        "fuzz::timestamp::differential",
    ),
    (
        "datetime",
        "particles-model",
        "fuzz::datetime::differential",
    ),
    ("netloc", "particles-rank", "fuzz::netloc::differential"),
    ("regex", "particles-pyre", "fuzz::regex::differential"),
    ("config", "particles-config", "reference::differential"),
    ("request", "particles-model", "fuzz::request::differential"),
];

/// Runs the long mode with the command line's arguments after `fuzz`.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    let mut minutes: u64 = 10;
    let mut chosen: Vec<&str> = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--minutes" => {
                let value = args.next().context("--minutes needs a number")?;
                minutes = value
                    .parse()
                    .with_context(|| format!("--minutes {value:?}"))?;
            }
            "--decoder" => {
                let name = args.next().context("--decoder needs a name")?;
                let Some((known, _, _)) = DECODERS.iter().find(|(d, _, _)| d == name) else {
                    bail!(
                        "unknown decoder {name:?}; one of: {}",
                        DECODERS.iter().map(|d| d.0).collect::<Vec<_>>().join(", ")
                    );
                };
                chosen.push(known);
            }
            other => bail!("unknown argument {other:?} (fuzz [--minutes N] [--decoder NAME]...)"),
        }
    }
    let decoders: Vec<&(&str, &str, &str)> = DECODERS
        .iter()
        .filter(|(name, _, _)| chosen.is_empty() || chosen.contains(name))
        .collect();
    crate::reference::install(root)?;
    // Build first, so that compiling is not counted in any decoder's minutes.
    let mut build = vec!["test", "--no-run", "--test", "it"];
    for (_, package, _) in &decoders {
        if !build.contains(package) {
            build.extend(["-p", package]);
        }
    }
    crate::cargo(&build, &[])?;
    let reports = root.join("target/fuzz");
    std::fs::create_dir_all(&reports)?;
    let seconds = (minutes * 60).to_string();
    let mut rows = Vec::new();
    for (name, package, test) in &decoders {
        let report = reports.join(format!("{name}.json"));
        let _ = std::fs::remove_file(&report);
        eprintln!("$ fuzz {name} for {minutes} min ({package}, {test})");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        // A failing test is a decoder with disagreements: its report says which.
        let status = Command::new(cargo)
            .args([
                "test", "-q", "-p", package, "--test", "it", "--", "--exact", test,
            ])
            .envs([
                ("PARTICLES_FUZZ_SECONDS", seconds.as_str()),
                ("PARTICLES_FUZZ_REPORT", &reports.display().to_string()),
                ("PARTICLES_REQUIRE_REFERENCE", "1"),
            ])
            .status()
            .context("cannot run cargo")?;
        let text = std::fs::read_to_string(&report).with_context(|| {
            format!(
                "the {name} fuzz ended ({status}) without writing {}",
                report.display()
            )
        })?;
        let figures: serde_json::Value = serde_json::from_str(&text)?;
        let number = |key: &str| figures[key].as_u64().unwrap_or(0);
        rows.push((
            *name,
            number("tried"),
            number("rounds"),
            number("disagreements"),
            number("documented"),
        ));
    }
    println!(
        "\n{:<10} {:>12} {:>8} {:>14} {:>11}",
        "decoder", "inputs", "rounds", "disagreements", "documented"
    );
    for (name, tried, rounds, disagreements, documented) in &rows {
        println!("{name:<10} {tried:>12} {rounds:>8} {disagreements:>14} {documented:>11}");
    }
    println!(
        "(the disagreements, shrunk, with their seeds: {}/<decoder>.json)",
        reports.display()
    );
    if rows.iter().any(|row| row.3 > 0) {
        bail!("the fuzz found disagreements");
    }
    Ok(())
}
