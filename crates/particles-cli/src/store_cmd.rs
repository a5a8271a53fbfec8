//! The `store` verbs: maintenance that writes a store, and says what it did.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use particles_store::Writer;

#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    #[command(subcommand)]
    command: StoreCommand,
}

#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Install the change journal (the `particle_changes` table and its four
    /// triggers) on a store that lacks it, so caches can follow its writes.
    /// Idempotent. This WRITES the store.
    InstallJournal {
        /// The store file.
        #[arg(long, value_name = "PATH")]
        store: PathBuf,
    },
}

pub(crate) fn run(args: StoreArgs) -> Result<()> {
    match args.command {
        StoreCommand::InstallJournal { store } => {
            let mut writer = Writer::open(&store)?;
            let report = particles_store::install_journal(&mut writer).with_context(|| {
                format!(
                    "installing the change journal on {} failed; the store is unchanged",
                    store.display()
                )
            })?;
            if report.is_noop() {
                println!(
                    "{}: the change journal is already installed; nothing changed.",
                    store.display()
                );
            } else {
                println!("{}: installed the change journal:", store.display());
                if report.created_table {
                    println!("  created table particle_changes");
                }
                println!("  created {} of 4 triggers", report.created_triggers);
                if report.wrote_first_entry {
                    println!("  wrote the install entry");
                }
                if report.created_index {
                    println!("  created index ix_particles_status_schema_version");
                }
            }
            Ok(())
        }
    }
}
