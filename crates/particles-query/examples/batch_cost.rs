//! What a shared pass costs as the batch grows: the same questions answered in
//! batches of 1, 2, 4, 8 and 16 (the whole response's ranking: the band after
//! the cut), on a warm cache over the store's sidecar, as `serve` keeps it.
//!
//! `cargo run --release -p particles-query --example batch_cost -- STORE.db QUESTIONS.json [ROUNDS]`
//! (`SIZES=1,4` picks the batch sizes)
//!
//! QUESTIONS.json is the benchmark's question file (`{"vectors": [[...], ...]}`).
//! Prints, per batch size, the median wall time of a batch and per question.

use particles_cache::CandidateCache;
use particles_model::{QueryRequest, Timestamp};
use particles_query::{run_query_batch, QueryInput, TruncationSettings};
use particles_store::Store;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(store_path), Some(questions)) = (args.get(1), args.get(2)) else {
        return Err("usage: batch_cost STORE.db QUESTIONS.json [ROUNDS]".into());
    };
    let rounds: usize = args.get(3).map_or(Ok(5), |s| s.parse())?;
    let store = Store::open_read_only(std::path::Path::new(store_path))?;
    let questions: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(questions)?)?;
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
    let mut cache = CandidateCache::with_sidecar(particles_cache::SidecarConfig {
        path: particles_cache::sidecar_path(std::path::Path::new(store_path), None),
        write: particles_cache::SidecarWrite::OnRebuild,
    });
    cache.set_huge_pages(true);
    cache.set_half_precision(std::env::var_os("F32_SCAN").is_none().then_some(0));
    let requests: Vec<_> = (0..vectors.len())
        .map(|i| {
            QueryRequest {
                question: Some(format!("q{i}")),
                top_k: 40,
                ..QueryRequest::default()
            }
            .validate(now)
        })
        .collect::<Result<_, _>>()?;
    let truncation = TruncationSettings::default();
    let input = |i: usize| {
        QueryInput::new(&requests[i], Some(&vectors[i][..]), now).with_truncation(&truncation)
    };
    // Warm: the state, the half copy, the source memo.
    run_query_batch(&store, &mut cache, &[input(0)])?;
    let mut next = 1;
    let sizes: Vec<usize> = match std::env::var("SIZES") {
        Ok(list) => list.split(',').map(str::parse).collect::<Result<_, _>>()?,
        Err(_) => vec![1, 2, 4, 8, 16],
    };
    for size in sizes {
        let mut times = Vec::new();
        for _ in 0..rounds {
            let inputs: Vec<QueryInput<'_>> = (0..size)
                .map(|k| input(1 + (next + k) % (vectors.len() - 1)))
                .collect();
            next += size;
            let started = std::time::Instant::now();
            for outcome in run_query_batch(&store, &mut cache, &inputs)? {
                outcome?;
            }
            times.push(started.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "batch of {size:>2}: {:>7.1} ms a batch, {:>6.1} ms a question",
            median * 1e3,
            median * 1e3 / size as f64
        );
    }
    Ok(())
}
