//! Project rules that `cargo test` enforces, each the machine check of an
//! invariant `ARCHITECTURE.md` states:
//!
//! - every Rust module opens with a `//!` doc comment, and no test carries a
//!   should-panic or ignore attribute (slow checks belong in an xtask verb);
//! - each crate's project dependencies are the ones the codemap lists, so
//!   dependencies point one way;
//! - only `particles-store` depends on `rusqlite` (other crates' tests may);
//! - `unsafe` code only in the files [`UNSAFE_FILES`] names, each with why;
//! - the wall clock read only where `now` is owned ([`CLOCK_OWNERS`]);
//! - no function over [`MAX_FUNCTION_LINES`] lines but the ports
//!   [`LONG_FUNCTIONS`] names, each with why;
//! - `ARCHITECTURE.md` stays a map: at most [`MAX_ARCHITECTURE_LINES`] lines and
//!   no timings (they live in `docs/benchmarks/`).

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The files that may hold `unsafe` code, and why.
const UNSAFE_FILES: &[(&str, &str)] = &[
    (
        "crates/particles-candidates/src/column.rs",
        "a column viewed in place over a sidecar's map (alignment and length checked)",
    ),
    (
        "crates/particles-candidates/src/einsum.rs",
        "the SSE dot kernel in NumPy's reduction order (target features detected)",
    ),
    (
        "crates/particles-candidates/src/tiles.rs",
        "the scan's tiles: AVX2 / AVX-512 intrinsics and prefetches (detected at run time)",
    ),
    (
        "crates/particles-candidates/src/half.rs",
        "the half-precision dot kernel: AVX2 + F16C + FMA intrinsics, and the intervals' ends \
         compiled for AVX2 (detected at run time)",
    ),
    (
        "crates/particles-cache/src/sidecar/open.rs",
        "memory-mapping the sidecar (a file only ever replaced by rename)",
    ),
    (
        "crates/particles-cache/src/release.rs",
        "glibc's malloc_trim after a write-behind's swap (the build's arenas given back)",
    ),
    (
        "crates/particles-bench/src/runner.rs",
        "posix_fadvise to drop a store's pages before a cold-evicted cell",
    ),
];

/// Where the wall clock may be read: the front ends and the engine, which own
/// `now` (a request's instant when it brings none), the benchmark and the test
/// kit, and `Timestamp::now` itself. Everything else takes `now` as an input.
const CLOCK_OWNERS: &[&str] = &[
    "crates/particles-cli/src/",
    "crates/particles-server/src/",
    "crates/particles-engine/src/",
    "crates/particles-bench/src/",
    "crates/particles-testkit/src/",
    "crates/particles-model/src/timestamp.rs",
];

/// The longest a function may be.
const MAX_FUNCTION_LINES: usize = 150;

/// Functions allowed past [`MAX_FUNCTION_LINES`]: ports kept in the shape of
/// the code they mirror, so that they can be read side by side with it.
const LONG_FUNCTIONS: &[(&str, &str, &str)] = &[(
    "crates/particles-pyre/src/parse.rs",
    "parse_group",
    "the `(` branch of CPython 3.11's re/_parser.py `_parse`, elif for elif, so a difference is found by reading both side by side",
)];

/// The longest `ARCHITECTURE.md` may be.
const MAX_ARCHITECTURE_LINES: usize = 320;

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

/// Every Rust file of the project, with its path relative to the root.
fn sources() -> Vec<(String, String)> {
    let root = crate::project_root();
    let mut files = Vec::new();
    for dir in ["crates", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 10, "found only {} Rust files", files.len());
    files
        .into_iter()
        .map(|file| {
            let relative = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (relative, std::fs::read_to_string(&file).unwrap())
        })
        .collect()
}

/// Whether a file is library or binary source (not a test, an example or a
/// benchmark).
fn is_shipped(path: &str) -> bool {
    path.contains("/src/") && !path.contains("/tests/") && !path.starts_with("xtask/")
}

#[test]
fn tidy() {
    let mut problems = Vec::new();
    for (file, text) in sources() {
        if !text.trim_start().starts_with("//!") {
            problems.push(format!("{file}: does not start with a //! module doc"));
        }
        // The needles are split so this file does not flag itself.
        for banned in [concat!("#[should", "_panic"), concat!("#[ig", "nore")] {
            if text.contains(banned) {
                problems.push(format!("{file}: uses {banned}]"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Code with comments and string literals blanked out (good enough for the
/// keyword checks below: block comments, raw strings and char literals of a
/// quote are rare here and only make a check stricter).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| {
            let mut out = String::with_capacity(line.len());
            let mut in_string = false;
            let mut chars = line.chars().peekable();
            while let Some(c) = chars.next() {
                if !in_string && c == '/' && chars.peek() == Some(&'/') {
                    break;
                }
                if c == '"' {
                    in_string = !in_string;
                }
                out.push(if in_string { ' ' } else { c });
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn unsafe_code_lives_where_the_architecture_says() {
    let allowed: BTreeSet<&str> = UNSAFE_FILES.iter().map(|(file, _)| *file).collect();
    let mut found = BTreeSet::new();
    for (file, text) in sources() {
        let code = code_of(&text);
        if ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern"]
            .iter()
            .any(|needle| code.contains(needle))
        {
            found.insert(file);
        }
    }
    let stray: Vec<&String> = found
        .iter()
        .filter(|f| !allowed.contains(f.as_str()))
        .collect();
    assert!(
        stray.is_empty(),
        "unsafe code outside the files ARCHITECTURE.md names (add the file to UNSAFE_FILES with \
         its reason, and to the invariant, or do without): {stray:?}"
    );
    let gone: Vec<&&str> = allowed.iter().filter(|f| !found.contains(**f)).collect();
    assert!(
        gone.is_empty(),
        "UNSAFE_FILES names files without unsafe code (remove them): {gone:?}"
    );
}

#[test]
fn the_wall_clock_is_read_only_where_now_is_owned() {
    let mut stray = Vec::new();
    for (file, text) in sources() {
        if !is_shipped(&file) || CLOCK_OWNERS.iter().any(|owner| file.starts_with(owner)) {
            continue;
        }
        let code = code_of(&text);
        for needle in ["Timestamp::now", "SystemTime::now", "UNIX_EPOCH"] {
            if code.contains(needle) {
                stray.push(format!("{file}: {needle}"));
            }
        }
    }
    assert!(
        stray.is_empty(),
        "the wall clock read outside the places that own `now` (take it as an input): {stray:?}"
    );
}

/// `(file, name, first line, length)` of every function, by rustfmt's layout:
/// a `fn` line, then the line that closes it at the same indentation.
fn functions(file: &str, text: &str) -> Vec<(String, String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let mut rest = trimmed;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        let Some(signature) = rest.strip_prefix("fn ") else {
            continue;
        };
        let name: String = signature
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let close = format!("{indent}}}");
        if let Some(end) = lines[at + 1..].iter().position(|l| *l == close) {
            out.push((file.to_owned(), name, at + 1, end + 2));
        }
    }
    out
}

#[test]
fn functions_fit_in_a_readers_head() {
    let allowed: BTreeMap<(&str, &str), &str> = LONG_FUNCTIONS
        .iter()
        .map(|(file, name, why)| ((*file, *name), *why))
        .collect();
    let mut long = Vec::new();
    let mut seen = BTreeSet::new();
    for (file, text) in sources() {
        for (file, name, line, length) in functions(&file, &text) {
            if length <= MAX_FUNCTION_LINES {
                continue;
            }
            if allowed.contains_key(&(file.as_str(), name.as_str())) {
                seen.insert((file, name));
            } else {
                long.push(format!("{file}:{line}: {name} is {length} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them into the steps their doc \
         comments list, or, for a port kept in its original's shape, add it to \
         LONG_FUNCTIONS with why):\n{}",
        long.join("\n")
    );
    let stale: Vec<_> = allowed
        .keys()
        .filter(|(file, name)| !seen.contains(&((*file).to_owned(), (*name).to_owned())))
        .collect();
    assert!(
        stale.is_empty(),
        "LONG_FUNCTIONS names functions that are gone or short now (remove them): {stale:?}"
    );
}

/// The project crates a manifest's `[dependencies]` names (not dev or build
/// dependencies), without the `particles-` prefix.
fn project_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut in_dependencies = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        if in_dependencies {
            if let Some(name) = line.strip_prefix("particles-") {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '-')
                    .collect();
                out.insert(name);
            }
        }
    }
    out
}

/// Whether a manifest's `[dependencies]` names `dependency`.
fn depends_on(manifest: &str, dependency: &str) -> bool {
    let mut in_dependencies = false;
    manifest.lines().any(|line| {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            return false;
        }
        in_dependencies
            && line
                .strip_prefix(dependency)
                .is_some_and(|rest| rest.starts_with([' ', '.', '=']))
    })
}

/// The dependency list of `ARCHITECTURE.md`'s codemap: the fenced block after
/// "Dependencies point one way", one line per crate or group of crates,
/// `a, b <- x, y` or `a, b (no project dependency)`.
fn documented_dependencies(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    let start = architecture
        .find("Dependencies point one way")
        .expect("ARCHITECTURE.md has the dependency list");
    let block = &architecture[start..];
    let open = block.find("```").expect("the list is fenced") + 3;
    let close = open + block[open..].find("```").expect("the fence closes");
    let mut out = BTreeMap::new();
    for line in block[open..close].lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (names, dependencies) = match line.split_once("<-") {
            Some((names, dependencies)) => (names, dependencies),
            None => (line.split('(').next().unwrap_or_default(), ""),
        };
        let dependencies: BTreeSet<String> = dependencies
            .split(',')
            .map(|d| d.split('(').next().unwrap_or_default().trim().to_owned())
            .filter(|d| !d.is_empty())
            .collect();
        for name in names.split(',') {
            out.insert(name.trim().to_owned(), dependencies.clone());
        }
    }
    out
}

#[test]
fn dependencies_are_the_ones_the_codemap_lists() {
    let root = crate::project_root();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let documented = documented_dependencies(&architecture);
    let mut problems = Vec::new();
    let mut crates = BTreeSet::new();
    for entry in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let short = name.strip_prefix("particles-").unwrap_or(&name).to_owned();
        let actual = project_dependencies(&text);
        match documented.get(&short) {
            None => problems.push(format!("{name}: not in ARCHITECTURE.md's dependency list")),
            Some(listed) if *listed != actual => problems.push(format!(
                "{name}: depends on {actual:?}, ARCHITECTURE.md lists {listed:?}"
            )),
            Some(_) => {}
        }
        if short != "store" && depends_on(&text, "rusqlite") {
            problems.push(format!(
                "{name}: depends on rusqlite; only particles-store runs SQL (tests may)"
            ));
        }
        crates.insert(short);
    }
    for listed in documented.keys() {
        if !crates.contains(listed) {
            problems.push(format!(
                "ARCHITECTURE.md lists {listed}, which is not a crate"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_architecture_page_is_a_map() {
    let root = crate::project_root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= MAX_ARCHITECTURE_LINES,
        "ARCHITECTURE.md has {lines} lines; keep it a map of at most {MAX_ARCHITECTURE_LINES}"
    );
    // A timing (a number of ms, µs, ns or seconds) belongs in docs/benchmarks/.
    let mut timings = Vec::new();
    for (at, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            let number = pair[0].trim_start_matches(['(', '~']);
            let unit = pair[1].trim_end_matches([',', '.', ';', ')', ':']);
            if number.parse::<f64>().is_ok() && ["ms", "µs", "us", "ns", "s"].contains(&unit) {
                timings.push(format!("line {}: {line}", at + 1));
            }
        }
        for word in &words {
            let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '.' && c != 'µ');
            for unit in ["ms", "µs", "ns"] {
                if let Some(number) = word.strip_suffix(unit) {
                    if number.parse::<f64>().is_ok() {
                        timings.push(format!("line {}: {line}", at + 1));
                    }
                }
            }
        }
    }
    assert!(
        timings.is_empty(),
        "ARCHITECTURE.md quotes timings; they live in docs/benchmarks/:\n{}",
        timings.join("\n")
    );
}
