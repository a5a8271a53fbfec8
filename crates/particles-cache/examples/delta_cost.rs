//! The price of a delta refresh, on a store of your choice: the cache opens the
//! store's sidecar (or builds), then after each of N single-belief retractions
//! (committed by our writer) one `select` catches up through the journal.
//!
//! ```sh
//! cargo run --release -p particles-cache --example delta_cost -- COPY.db [N]
//! ```
//!
//! COPY.db is written (N retractions): give it a copy of a store, never the
//! original. `serve` keeps its state in order and in huge pages; so does this.

use std::time::Instant;

use particles_cache::{sidecar_path, CandidateCache, SidecarConfig, SidecarWrite};
use particles_store::{CandidateLoader, Store, Writer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = std::path::PathBuf::from(args.next().ok_or("usage: delta_cost COPY.db [N]")?);
    let writes: usize = args.next().map_or(Ok(5), |n| n.parse())?;
    let mut cache = CandidateCache::with_sidecar(SidecarConfig {
        path: sidecar_path(&path, None),
        write: SidecarWrite::Never,
    });
    cache.set_huge_pages(true);
    let store = Store::open_read_only(&path)?;
    let started = Instant::now();
    let selection = cache.select(&store, 0.0, None)?;
    println!(
        "first select: {:.1} ms, {} rows, route {:?}",
        started.elapsed().as_secs_f64() * 1e3,
        selection.rows.len(),
        cache.last_route()
    );
    drop(selection);
    let ids = particles_store::active_ids_spread(&store, 997, writes)?;
    let mut writer = Writer::open(&path)?;
    for id in ids {
        let tx = writer.transaction()?;
        tx.retract(&id, particles_model::Timestamp::now())?;
        tx.commit()?;
        let started = Instant::now();
        let selection = cache.select(&store, 0.0, None)?;
        println!(
            "delta select: {:.1} ms, {} rows, route {:?}",
            started.elapsed().as_secs_f64() * 1e3,
            selection.rows.len(),
            cache.last_route()
        );
    }
    Ok(())
}
