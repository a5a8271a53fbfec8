//! Project rules that `cargo test` enforces: every Rust module opens with a `//!`
//! doc comment, and no test carries a should-panic or ignore attribute (slow checks
//! belong in an xtask subcommand instead).

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            if name != "target" && name != "snapshots" && !name.to_string_lossy().starts_with('.') {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn tidy() {
    let root = crate::project_root();
    let mut files = Vec::new();
    for dir in ["crates", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 10, "found only {} Rust files", files.len());
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        if !text.trim_start().starts_with("//!") {
            problems.push(format!(
                "{}: does not start with a //! module doc",
                file.display()
            ));
        }
        // The needles are split so this file does not flag itself.
        for banned in [concat!("#[should", "_panic"), concat!("#[ig", "nore")] {
            if text.contains(banned) {
                problems.push(format!("{}: uses {banned}]", file.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
