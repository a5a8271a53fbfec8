//! `query --help` tells a user of the reference's `particles query` the truth:
//! every flag of the reference's own `--help` is listed as taken, accepted but not
//! applied, or not yet; every flag listed as taken or accepted is one of ours, and
//! none listed as not yet is.

use std::{collections::BTreeSet, process::Command};

use crate::support::{isolated_home, particles_rs, reference_python};

fn flags(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let tail = &rest[at + 2..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '-')
            .collect();
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            found.insert(format!("--{}", name.trim_end_matches('-')));
        }
        rest = &tail[name.len()..];
    }
    found
}

/// The text between `start` and `end` (or the end).
fn section<'a>(text: &'a str, start: &str, end: Option<&str>) -> &'a str {
    let from = text.find(start).map_or(text.len(), |at| at + start.len());
    let rest = &text[from..];
    end.and_then(|end| rest.find(end))
        .map_or(rest, |to| &rest[..to])
}

#[test]
fn query_help_lists_the_references_flags_truthfully() {
    let ours = particles_rs(&["query", "--help"]);
    assert!(ours.status.success());
    let help = String::from_utf8_lossy(&ours.stdout).into_owned();
    let (options, note) = help
        .split_once("Coming from the reference's `particles query`:")
        .expect("query --help has the section for the reference's users");
    let ours: BTreeSet<String> = options
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("-h, ").unwrap_or(line);
            line.starts_with("--")
                .then(|| flags(line).into_iter().next())?
        })
        .collect();
    let taken = flags(section(
        note,
        "taken as it takes them:",
        Some("accepted, not applied"),
    ));
    let accepted = flags(section(note, "accepted, not applied", Some("not yet:")));
    let not_yet = flags(section(note, "not yet:", Some("this engine's own:")));
    let own = flags(section(note, "this engine's own:", None));
    for flag in taken.iter().chain(&accepted).chain(&own) {
        assert!(
            ours.contains(flag),
            "{flag} is listed but query does not take it"
        );
    }
    for flag in &not_yet {
        assert!(
            !ours.contains(flag),
            "{flag} is taken now: move it out of `not yet`"
        );
    }
    for flag in &ours {
        let listed = [&taken, &accepted, &own]
            .iter()
            .any(|set| set.contains(flag));
        assert!(listed || flag == "--help", "{flag} is not in the section");
    }

    let Some(python) = reference_python() else {
        return;
    };
    let reference = Command::new(python.with_file_name("particles"))
        .args(["query", "--help"])
        .env("COLUMNS", "200")
        .env("HOME", isolated_home())
        .env_remove("PARTICLES_CONFIG")
        .output()
        .unwrap();
    assert!(
        reference.status.success(),
        "{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let theirs = flags(&String::from_utf8_lossy(&reference.stdout));
    assert!(theirs.len() > 25, "too few flags read: {theirs:?}");
    for flag in theirs.iter().filter(|f| *f != "--help") {
        let listed = [&taken, &accepted, &not_yet]
            .iter()
            .any(|set| set.contains(flag));
        assert!(
            listed,
            "the reference's {flag} is not in query --help's section"
        );
    }
}
