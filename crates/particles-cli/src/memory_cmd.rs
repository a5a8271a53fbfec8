//! `particles-rs memory-region`: the memory projection's region body of a
//! manifest over a store, as the reference's `render_memory_region` renders it
//! (the `MEMORY.md` region; `POST /memory/projection/{store}` answers the same
//! through the one engine). Mechanical blocks are read beside the manifest,
//! as the reference's local cycle reads them.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use particles_model::{projection::DocManifest, Timestamp};

use crate::{config_cmd::Configured, digest_cmd::one_store_engine};

/// `memory-region` arguments.
#[derive(Debug, Args)]
pub(crate) struct MemoryRegionArgs {
    /// The manifest: a YAML (or JSON) file, as `particles project` reads one.
    #[arg(long, value_name = "FILE")]
    manifest: PathBuf,

    /// The directory a block's relative path is read from (default: the
    /// manifest's own).
    #[arg(long, value_name = "DIR", conflicts_with = "remote")]
    base_dir: Option<PathBuf>,

    /// The store: a handle of the configuration (`default`, a key of
    /// `storage.stores`) or a file. Without it, the configured default store.
    #[arg(long, value_name = "HANDLE|PATH")]
    store: Option<String>,

    /// Render through this project's observer (its trailer closes the body).
    #[arg(long, value_name = "P")]
    observer_project: Option<String>,

    /// Drop candidates held only by sources with this tag (repeatable; the
    /// agent-memory region passes `rule-file`).
    #[arg(long, value_name = "TAG")]
    exclude_source_tag: Vec<String>,

    /// Answer whether the region represents this file URI (repeatable).
    #[arg(long, value_name = "URI")]
    fold_target: Vec<String>,

    /// Read no file: refuse a manifest with a block, as a remote engine does.
    #[arg(long)]
    remote: bool,

    /// Print the JSON the route answers with (`body`, `content_hash`,
    /// `fold_verdicts`) instead of the body.
    #[arg(long)]
    json: bool,

    /// The instant decay and use events are aged at (RFC 3339; default: now).
    #[arg(long, value_name = "RFC3339", value_parser = crate::digest_cmd::parse_instant)]
    now: Option<Timestamp>,
}

/// Prints the region.
pub(crate) fn run(args: &MemoryRegionArgs, configured: &Configured) -> Result<()> {
    if args.observer_project.as_deref() == Some("") {
        return Err(crate::UsageError(
            "--observer-project: give a project name (at least one character)".to_owned(),
        )
        .into());
    }
    let manifest = read_manifest(&args.manifest)?;
    let base_dir = match &args.base_dir {
        Some(dir) => dir.clone(),
        None => match args.manifest.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        },
    };
    let (engine, target) = one_store_engine(configured, args.store.as_deref())?;
    let now = args.now.unwrap_or_else(Timestamp::now);
    let request = particles_engine::RegionRequest {
        base_dir: (!args.remote).then_some(base_dir.as_path()),
        observer_project: args.observer_project.as_deref(),
        exclude_source_tags: &args.exclude_source_tag,
        fold_targets: &args.fold_target,
    };
    let region = engine
        .memory_region(&target, &manifest, request, now)
        .with_context(|| format!("the memory region of {} failed", args.manifest.display()))?;
    crate::digest_cmd::print(args.json, &region, &region.body)
}

/// The manifest file, parsed and validated (pydantic's errors, one per line).
fn read_manifest(path: &std::path::Path) -> Result<DocManifest> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the manifest {}", path.display()))?;
    // JSON first (what a client sends the route), else YAML (what `particles
    // project` reads).
    let value = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(value) => Some(value),
        Err(_) => particles_config::yaml_to_json(&text).map_err(|why| {
            crate::UsageError(format!(
                "the manifest {} is not YAML: {why}",
                path.display()
            ))
        })?,
    };
    let Some(value @ serde_json::Value::Object(_)) = value else {
        return Err(crate::UsageError(format!(
            "the manifest {} must be a YAML mapping",
            path.display()
        ))
        .into());
    };
    DocManifest::from_json(&value).map_err(|errors| {
        crate::UsageError(format!(
            "the manifest {} is not valid: {errors}",
            path.display()
        ))
        .into()
    })
}
