//! The `sidecar` verbs: build, check or locate a store's sidecar. None of them
//! writes the store.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use particles_cache::{Route, SidecarWrite};
use particles_store::{CandidateLoader, Store};

#[derive(Debug, Args)]
pub(crate) struct SidecarCmdArgs {
    #[command(subcommand)]
    command: SidecarCommand,
}

#[derive(Debug, Args)]
struct Target {
    /// The store file.
    #[arg(long, value_name = "PATH")]
    store: PathBuf,

    /// The sidecar's directory (default: PARTICLES_SIDECAR_DIR, else the store's).
    #[arg(long, value_name = "DIR", env = "PARTICLES_SIDECAR_DIR")]
    sidecar_dir: Option<PathBuf>,
}

impl Target {
    fn path(&self) -> PathBuf {
        particles_cache::sidecar_path(&self.store, self.sidecar_dir.as_deref())
    }
}

#[derive(Debug, Subcommand)]
enum SidecarCommand {
    /// Bring the sidecar up to date with the store now (build, delta or nothing),
    /// so that the next query starts warm.
    Build(Target),
    /// Check every section of the sidecar, vectors included (opening a sidecar
    /// checks all but the vectors, their norms, the claims and a server's half
    /// copy), and that a stored half copy is the one its vectors give. Exit 1
    /// when it is unusable.
    Verify(Target),
    /// Print where the store's sidecar lives.
    Path(Target),
}

pub(crate) fn run(args: SidecarCmdArgs) -> Result<()> {
    match args.command {
        SidecarCommand::Build(target) => {
            let store = Store::open_read_only(&target.store)?;
            particles_store::check_schema_version(&store)?;
            // Cache maintenance, not a query: the cache alone, no engine.
            let mut cache =
                particles_cache::CandidateCache::with_sidecar(particles_cache::SidecarConfig {
                    path: target.path(),
                    write: SidecarWrite::OnChange,
                });
            cache.set_build_progress(crate::engine::build_progress_bar());
            cache.load(&store, 0.0, None)?;
            let route = cache.last_route();
            let written = cache.persist(&target.store);
            let notes = cache.take_notes();
            for note in &notes {
                eprintln!("note: {note}");
            }
            match route {
                Some(Route::NoJournal) => bail!(
                    "{} has no change journal, so a sidecar could not be kept exact; \
                     `particles-rs store install-journal --store {}` installs it (this writes the store)",
                    target.store.display(),
                    target.store.display()
                ),
                Some(Route::EmptyJournal) => bail!(
                    "the change journal of {} is empty (its install entry was pruned or deleted); \
                     reinstall it with `particles-rs store install-journal`",
                    target.store.display()
                ),
                _ if !notes.is_empty() && !written => bail!("the sidecar was not written"),
                _ => {}
            }
            println!(
                "{}: {} rows, {}",
                target.path().display(),
                cache.cached_rows().unwrap_or(0),
                if written {
                    "written"
                } else {
                    "already up to date"
                }
            );
            Ok(())
        }
        SidecarCommand::Verify(target) => {
            let report = particles_cache::verify_sidecar(&target.path())?;
            println!(
                "{}: {} rows, journal seq {}",
                target.path().display(),
                report.rows,
                report.head_seq
            );
            for section in report.sections {
                println!(
                    "  {:<14} {:>14} bytes at {:>12}  ok",
                    section.name,
                    section.range.len(),
                    section.range.start
                );
            }
            Ok(())
        }
        SidecarCommand::Path(target) => {
            println!("{}", target.path().display());
            Ok(())
        }
    }
}
