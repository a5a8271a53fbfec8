//! Where the response's pruning margin spends its time: the same questions ranked
//! bare and with the truncation margin, on a warm cache, with stage timings.
//!
//! `cargo run --release -p particles-query --example band_cost -- STORE.db QUESTIONS.json [N]`
//!
//! Set `F32_SCAN` to scan the `f32` vectors (no half-precision copy), `KEEP` to
//! keep the store's particles as `serve` does, `BARE_ONLY` to skip the ranking
//! with the margin, `PASSES=P` to ask the questions P times.

use particles_cache::CandidateCache;
use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query_with, QueryInput, TruncationSettings};
use particles_store::Store;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let store = Store::open_read_only(std::path::Path::new(&args[1]))?;
    let questions: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&args[2])?)?;
    let n: usize = args.get(3).map_or(Ok(8), |s| s.parse())?;
    let vectors: Vec<Vec<f32>> = questions["vectors"]
        .as_array()
        .ok_or("no vectors")?
        .iter()
        .map(|v| {
            v.as_array()
                .map(|a| a.iter().map(|x| x.as_f64().unwrap_or(0.0) as f32).collect())
                .unwrap_or_default()
        })
        .collect();
    let now = Timestamp::parse("2026-06-01T00:00:00Z")?;
    // Start from the sidecar beside the store, as `serve` does (built when absent).
    let mut cache = CandidateCache::with_sidecar(particles_cache::SidecarConfig {
        path: particles_cache::sidecar_path(std::path::Path::new(&args[1]), None),
        write: particles_cache::SidecarWrite::OnRebuild,
    });
    cache.set_huge_pages(true);
    cache.set_half_precision(std::env::var_os("F32_SCAN").is_none().then_some(0));
    if std::env::var_os("KEEP").is_some() {
        cache.set_keep_particles(Some(particles_cache::KEEP_PARTICLES_MAX_ROWS));
    }
    let margin = TruncationSettings::default().prune_margin();
    let passes: usize = std::env::var("PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for (i, vector) in vectors
        .iter()
        .take(n + 1)
        .cycle()
        .take((n + 1) * passes)
        .enumerate()
    {
        let i = i % (n + 1);
        let request = QueryRequest {
            question: Some(format!("q{i}")),
            top_k: 40,
            ..QueryRequest::default()
        }
        .validate(now)?;
        if let Some(ms) = std::env::var("SLEEP_MS").ok().and_then(|v| v.parse().ok()) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        let margins: Vec<f64> = if std::env::var_os("BARE_ONLY").is_some() {
            vec![0.0]
        } else {
            vec![0.0, margin]
        };
        for prune_margin in margins {
            let input = QueryInput {
                prune_margin,
                near_margin: Some(TruncationSettings::default().near_margin),
                ..QueryInput::new(&request, Some(vector), now)
            };
            let started = std::time::Instant::now();
            let outcome = run_query_with(&store, &mut cache, &input)?;
            let total = started.elapsed().as_secs_f64();
            if i > 0 {
                let t = &outcome.timings;
                println!(
                    "q{i} margin {prune_margin}: {:.1} ms scored {} beyond {} pruned {} read exactly {} | scoring {:.1} source {:.1} support {:.1} sort {:.1}",
                    total * 1e3,
                    outcome.work.candidates_scored,
                    outcome.beyond_cut.len(),
                    outcome.stats.pruned,
                    outcome.work.band_rows_read_exactly,
                    t.scoring * 1e3,
                    t.source_rows * 1e3,
                    t.support_discounts * 1e3,
                    t.sort * 1e3,
                );
            }
        }
    }
    Ok(())
}
