//! Bad configuration input gets the reference's verdict (`particles query` fails
//! with exit code 1) and one clear message naming the file, the line and the key;
//! the store is never written. The reference's verdicts come from running its CLI
//! in-process on the same files (`tests/reference/verdicts.py`).

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use serde_json::Value;

use crate::support::{file_digest, isolated_home, particles_rs, reference_python, workspace_root};

struct Case {
    label: &'static str,
    /// The file's text; `{store}` stands for the store file's path.
    yaml: &'static str,
    handle: &'static str,
    /// What our message must name (after `{file}` is replaced by the file's path).
    needles: &'static [&'static str],
    /// What the reference's error must say.
    theirs: &'static str,
}

const CASES: &[Case] = &[
    Case {
        label: "yaml that does not parse",
        yaml: "query:\n  similarity_weight: [0.6,\n",
        handle: "a",
        needles: &["{file}:3:1: invalid YAML"],
        theirs: "ParserError",
    },
    Case {
        label: "a wrong type",
        yaml: "query:\n  similarity_weight: heavy\n",
        handle: "a",
        needles: &["{file}:2: query.similarity_weight: Input should be a valid number"],
        theirs: "query.similarity_weight",
    },
    Case {
        label: "an out-of-range value",
        yaml: "query:\n  confidence_weight: 0.4\n  narrative_rank_weight: 1.5\n",
        handle: "a",
        needles: &["{file}:3: query.narrative_rank_weight: Input should be less than or equal to 1"],
        theirs: "query.narrative_rank_weight",
    },
    Case {
        label: "a bad value in a section no query reads",
        yaml: "wiki:\n  layer_b_unrelated_tolerance: lots\n",
        handle: "a",
        needles: &["{file}:2: wiki.layer_b_unrelated_tolerance"],
        theirs: "wiki.layer_b_unrelated_tolerance",
    },
    Case {
        label: "stores given as a list",
        yaml: "storage:\n  stores:\n    - a\n",
        handle: "a",
        needles: &["{file}:3: storage.stores", "valid dictionary"],
        theirs: "storage.stores",
    },
    Case {
        label: "an unknown store handle",
        yaml: "storage:\n  database_url: sqlite+aiosqlite:///{store}\n  stores:\n    a: sqlite+aiosqlite:///{store}\n",
        handle: "nope",
        needles: &["--store \"nope\"", "known: default, a", "{file}:3: storage.stores"],
        theirs: "KeyError: \"Unknown store 'nope'\"",
    },
    Case {
        label: "a URL that is not SQLite",
        yaml: "storage:\n  stores:\n    a: sqlite+aiosqlite:///{store}\n    pg: postgresql+asyncpg://reader@localhost/beliefs\n",
        handle: "pg",
        needles: &["store 'pg'", "only SQLite stores", "{file}:2: storage.stores"],
        theirs: "asyncpg",
    },
    Case {
        label: "a default store that is not SQLite",
        yaml: "storage:\n  database_url: mysql://reader@localhost/beliefs\n",
        handle: "default",
        needles: &["store 'default'", "only SQLite stores", "{file}:2: storage.database_url"],
        theirs: "Error",
    },
];

fn write_config(dir: &Path, index: usize, case: &Case, store: &Path) -> PathBuf {
    let path = dir.join(format!("config-{index}.yaml"));
    std::fs::write(
        &path,
        case.yaml.replace("{store}", &store.display().to_string()),
    )
    .unwrap();
    path
}

#[test]
fn bad_configuration_is_refused_as_the_reference_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("a.db");
    std::fs::copy(
        workspace_root().join("tests/fixtures/stores/coins-a.db"),
        &store,
    )
    .unwrap();
    let before = file_digest(&store);
    let mut ours = Vec::new();
    for (index, case) in CASES.iter().enumerate() {
        let config = write_config(dir.path(), index, case, &store);
        let config_text = config.display().to_string();
        let output = particles_rs(&[
            "--config",
            &config_text,
            "query",
            "q",
            "--no-embedding",
            "--store",
            case.handle,
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(1), "{}: {stderr}", case.label);
        for needle in case.needles {
            let needle = needle.replace("{file}", &config_text);
            assert!(
                stderr.contains(&needle),
                "{}: {needle:?} not in: {stderr}",
                case.label
            );
        }
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(
            output.stdout.is_empty(),
            "{}: printed an answer",
            case.label
        );
        ours.push(config);
    }
    assert_eq!(
        before,
        file_digest(&store),
        "a bad configuration wrote the store"
    );

    let Some(python) = reference_python() else {
        return;
    };
    // The reference on its own copy (its engine switches a store it opens to WAL).
    let copy = dir.path().join("reference-a.db");
    std::fs::copy(&store, &copy).unwrap();
    let cases: Vec<Value> = CASES
        .iter()
        .enumerate()
        .map(|(index, case)| {
            let config = write_config(dir.path(), 100 + index, case, &copy);
            serde_json::json!({"config": config, "args": ["query", "q", "--store", case.handle]})
        })
        .collect();
    let mut child = Command::new(python)
        .arg(workspace_root().join("tests/reference/verdicts.py"))
        .env("HOME", isolated_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(Value::Array(cases).to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let verdicts: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    for (case, verdict) in CASES.iter().zip(&verdicts) {
        assert_eq!(
            verdict["exit"], 1,
            "{}: the reference's verdict {verdict}",
            case.label
        );
        let error = verdict["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(case.theirs),
            "{}: the reference failed otherwise: {verdict}",
            case.label
        );
    }
}
