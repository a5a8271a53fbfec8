//! The public API on files in temporary directories: precedence (environment >
//! file > default), provenance of every value, ignored keys, errors that name
//! the file, line and key (or the variable), and the typed defaults.

use std::{collections::BTreeMap, path::Path};

use particles_config::{
    env_override_names, load, load_defaults, Config, ConfigOrigin, Environment, Error, Origin,
    Place,
};

fn env(vars: &[(&str, &str)], cwd: &Path) -> Environment {
    Environment::new(
        vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        cwd,
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write config");
    path.display().to_string()
}

#[test]
fn environment_beats_file_beats_default() -> Result<(), Error> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "c.yaml",
        "storage:\n  database_url: sqlite+aiosqlite:////from/file.db\n  max_page_size: 7\napi:\n  rate_limit_per_minute: 5\n",
    );
    let vars = [
        ("PARTICLES_CONFIG", file.as_str()),
        ("DATABASE_URL", "sqlite+aiosqlite:////from/env.db"),
        ("PARTICLES_WRITE_LOCK_ENABLED", "off"),
    ];
    let loaded = load(None, &env(&vars, dir.path()))?;
    let config = loaded.config();
    assert_eq!(
        config.storage.database_url,
        "sqlite+aiosqlite:////from/env.db"
    );
    assert_eq!(config.storage.max_page_size, 7);
    assert!(!config.storage.write_lock_enabled);
    assert_eq!(config.api.rate_limit_per_minute, 5);
    assert_eq!(config.query, Config::default().query);

    let origins: BTreeMap<String, Origin> = loaded
        .entries()
        .into_iter()
        .map(|entry| (entry.key, entry.origin))
        .collect();
    assert_eq!(
        origins["storage.database_url"],
        Origin::Env {
            var: "DATABASE_URL".to_owned()
        }
    );
    assert_eq!(
        origins["storage.write_lock.enabled"],
        Origin::Env {
            var: "PARTICLES_WRITE_LOCK_ENABLED".to_owned()
        }
    );
    assert_eq!(
        origins["storage.max_page_size"],
        Origin::File {
            path: file.clone().into(),
            line: 3
        }
    );
    assert_eq!(origins["query.similarity_weight"], Origin::Default);
    assert_eq!(loaded.source(), ConfigOrigin::EnvVar);
    Ok(())
}

#[test]
fn an_empty_variable_still_overrides() -> Result<(), Error> {
    let dir = tempfile::tempdir().expect("tempdir");
    let loaded = load_defaults(&env(&[("DATABASE_URL", "")], dir.path()))?;
    assert_eq!(loaded.config().storage.database_url, "");
    let error = particles_config::resolve_store(loaded.config(), "default", dir.path())
        .expect_err("an empty URL is no store");
    assert!(matches!(error, Error::EmptyStoreUrl { .. }));
    Ok(())
}

#[test]
fn every_schema_key_has_an_entry() -> Result<(), Error> {
    let dir = tempfile::tempdir().expect("tempdir");
    let loaded = load_defaults(&env(&[], dir.path()))?;
    let entries = loaded.entries();
    assert!(entries.len() > 500, "only {} entries", entries.len());
    assert!(entries.iter().all(|entry| entry.origin == Origin::Default));
    let keys: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
    for key in [
        "query.similarity_weight",
        "llm.providers",
        "content_age_decay.sources",
        "network.egress",
    ] {
        assert!(keys.contains(&key), "{key}");
    }
    // The table and the JSON form carry the same rows.
    let table = loaded.render_table();
    assert!(table.contains("query.similarity_weight"));
    let json = serde_json::to_value(loaded.to_show_json()).expect("serializes");
    assert_eq!(
        json["entries"].as_array().map(Vec::len),
        Some(entries.len())
    );
    Ok(())
}

#[test]
fn typed_defaults_are_the_reference_defaults() -> Result<(), Error> {
    // The tree's defaults come from schema.json, which the generator recorded
    // from the reference; the hand-written `Default` must agree with them.
    let dir = tempfile::tempdir().expect("tempdir");
    let loaded = load_defaults(&env(&[], dir.path()))?;
    assert_eq!(loaded.config(), &Config::default());
    Ok(())
}

#[test]
fn validation_errors_name_file_line_and_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "bad.yaml",
        "query:\n  similarity_weight: -0.5\n  grounded_answers: maybe\nwiki:\n  layer_b_retry_enabled: 7\n",
    );
    let vars = [
        ("PARTICLES_CONFIG", file.as_str()),
        ("PARTICLES_API_RATE_LIMIT_PER_MINUTE", "lots"),
    ];
    let Err(Error::Invalid { errors, .. }) = load(None, &env(&vars, dir.path())) else {
        panic!("invalid")
    };
    let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        [
            "environment PARTICLES_API_RATE_LIMIT_PER_MINUTE: api.rate_limit_per_minute: Input should be a valid integer, unable to parse string as an integer".to_owned(),
            format!("{file}:2: query.similarity_weight: Input should be greater than or equal to 0"),
            format!("{file}:3: query.grounded_answers: Input should be a valid boolean, unable to interpret input"),
            format!("{file}:5: wiki.layer_b_retry_enabled: Input should be a valid boolean, unable to interpret input"),
        ]
    );
    assert!(matches!(&errors.0[1].place, Place::File { line: 2, .. }));
}

#[test]
fn yaml_errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "broken.yaml",
        "query:\n  similarity_weight: [1, 2\n",
    );
    let error = load(Some(Path::new(&file)), &env(&[], dir.path())).expect_err("broken");
    let Error::Yaml { line, column, .. } = &error else {
        panic!("{error}")
    };
    assert!(*line >= 2 && *column >= 1, "{error}");
    assert!(error.to_string().starts_with(&format!("{file}:")));
    let tagged = write(dir.path(), "tagged.yaml", "query: !!python/tuple [1]\n");
    let error = load(Some(Path::new(&tagged)), &env(&[], dir.path())).expect_err("tag");
    assert!(error.to_string().contains(":1:8:"), "{error}");
}

#[test]
fn an_override_into_a_null_section_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "c.yaml", "storage:\n");
    let vars = [("PARTICLES_CONFIG", file.as_str()), ("DATABASE_URL", "x")];
    let error = load(None, &env(&vars, dir.path())).expect_err("TypeError in the reference");
    assert!(
        matches!(error, Error::EnvIntoNonMapping { line: 1, .. }),
        "{error}"
    );
}

#[test]
fn ignored_keys_and_legacy_keys() -> Result<(), Error> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "c.yaml",
        "Query: {}\nquery:\n  similarity_wieght: 0.9\nextraction:\n  query_max_tokens: 2048\n",
    );
    let loaded = load(Some(Path::new(&file)), &env(&[], dir.path()))?;
    let ignored: Vec<&str> = loaded
        .ignored_keys()
        .iter()
        .map(|k| k.key.as_str())
        .collect();
    assert_eq!(ignored, ["query.similarity_wieght", "Query"]);
    assert_eq!(loaded.config().query.answer_max_tokens, 2048);
    let entry = loaded
        .entries()
        .into_iter()
        .find(|e| e.key == "query.answer_max_tokens")
        .expect("entry");
    assert_eq!(
        entry.origin,
        Origin::File {
            path: file.into(),
            line: 5
        }
    );
    assert!(loaded
        .warnings()
        .iter()
        .any(|w| w.contains("extraction.query_max_tokens")));
    Ok(())
}

#[test]
fn a_nearby_config_is_reported_not_read() -> Result<(), Error> {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "config.yaml",
        "query: {similarity_weight: 0.9}\n",
    );
    let home = dir.path().join("home");
    let vars = [("HOME", home.to_str().expect("utf8"))];
    let loaded = load(None, &env(&vars, dir.path()))?;
    assert_eq!(loaded.config().query.similarity_weight, 0.6);
    assert!(loaded.warnings().iter().any(|w| w.starts_with("Ignoring ")));
    Ok(())
}

#[test]
fn override_names_match_the_reference() {
    let Some(python) = particles_testkit::reference_python() else {
        return;
    };
    let output = std::process::Command::new(python)
        .args([
            "-c",
            "from particles import config; print('\\n'.join(sorted(config.env_override_names())))",
        ])
        .output()
        .expect("run the reference");
    assert!(output.status.success());
    let theirs: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(env_override_names(), theirs);
}
