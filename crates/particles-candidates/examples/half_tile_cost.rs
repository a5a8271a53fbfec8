//! What each half tile this CPU runs costs over a scan's rows: `ROWS` rows of
//! 384 halves (default 100k), read as the scan reads them (blocks of 32 rows,
//! the next block's first rows handed over to prefetch) on 2 threads, one
//! question, best of 20 passes. Twice over: the rows adjacent in memory (an
//! unfiltered scan of a set in order), then about one row in four of a set four
//! times as large, in no fixed stride (a filtered scan).
//!
//! `cargo run --release -p particles-candidates --example half_tile_cost -- [ROWS] [QUESTIONS]`
//!
//! QUESTIONS (default 1) asks that many questions in each tile, as a batch's
//! shared pass does.
//!
//! Last, the arithmetic alone: the first 1024 adjacent rows (768 KiB, in the
//! L2 cache after the first pass) on one thread, best of 15 rounds of 20
//! passes, in nanoseconds a row and question. Memory speed drifts on a shared
//! host by more than a kernel change moves the two lines above; this line
//! drifts much less.

use std::time::Instant;

use half::f16;
use particles_candidates::{half_tile_kernels, HalfTile, PREFETCH_ROWS};

const DIMS: usize = 384;
const BLOCK: usize = 32;
const THREADS: usize = 2;

fn main() {
    let rows: usize = match std::env::args().nth(1).map(|arg| arg.parse()) {
        None => 100_000,
        Some(Ok(rows)) => rows,
        Some(Err(_)) => {
            eprintln!("ROWS must be a whole number of rows, like 100000");
            std::process::exit(2);
        }
    };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let data: Vec<f16> = (0..rows * 4 * DIMS)
        .map(|_| f16::from_f32(next() * 0.1))
        .collect();
    let questions: usize = match std::env::args().nth(2).map(|arg| arg.parse()) {
        None => 1,
        Some(Ok(questions)) if questions > 0 => questions,
        Some(_) => {
            eprintln!("QUESTIONS must be a whole number of questions, 1 or more, like 4");
            std::process::exit(2);
        }
    };
    let queries: Vec<Vec<f32>> = (0..questions)
        .map(|_| (0..DIMS).map(|_| next() * 0.1).collect())
        .collect();
    let all: Vec<&[f16]> = data.chunks(DIMS).collect();
    let adjacent: Vec<&[f16]> = all[..rows].to_vec();
    // Gaps of 1 to 7 rows, 4 on average, in no fixed stride.
    let mut scattered: Vec<&[f16]> = Vec::with_capacity(rows);
    let mut at = 0;
    while at < all.len() {
        scattered.push(all[at]);
        at += 1 + state_gap(&mut next);
    }
    println!(
        "{rows} rows of {DIMS} halves, {questions} question(s), {THREADS} threads, best of 20 passes"
    );
    // The portable tile is the others' oracle, not a contender.
    let contenders: Vec<_> = half_tile_kernels()
        .into_iter()
        .filter(|(name, _)| *name != "portable")
        .collect();
    for (layout, picked) in [("adjacent", &adjacent), ("one in ~4", &scattered)] {
        for &(name, kernel) in &contenders {
            let seconds = best_pass(kernel, picked, &queries);
            println!(
                "{layout:>11}  {name:<8}  {:7.2} ms  {:5.1} GB/s",
                seconds * 1e3,
                (picked.len() * DIMS * 2) as f64 / seconds / 1e9
            );
        }
    }
    let cached = &adjacent[..adjacent.len().min(1024)];
    for &(name, kernel) in &contenders {
        let seconds = best_in_cache(kernel, cached, &queries);
        println!(
            "{:>11}  {name:<8}  {:7.2} ns a row and question, one thread",
            "in cache",
            seconds * 1e9 / (cached.len() * questions) as f64
        );
    }
}

/// The best of 15 rounds of `kernel` over `rows` on this thread (20 passes a
/// round), in seconds a pass.
fn best_in_cache(kernel: HalfTile, rows: &[&[f16]], queries: &[Vec<f32>]) -> f64 {
    let queries: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
    let mut dots = vec![0.0f32; BLOCK * queries.len()];
    let mut best = f64::INFINITY;
    for _ in 0..15 {
        let started = Instant::now();
        for _ in 0..20 {
            for block in rows.chunks(BLOCK) {
                kernel(block, &[], &queries, &mut dots);
                std::hint::black_box(&dots);
            }
        }
        best = best.min(started.elapsed().as_secs_f64() / 20.0);
    }
    best
}

/// A gap of 0 to 6 rows, from the generator.
fn state_gap(next: &mut impl FnMut() -> f32) -> usize {
    ((next() + 0.5) * 7.0) as usize % 7
}

/// The best of 20 passes of `kernel` over `rows`, split across the threads.
fn best_pass(kernel: HalfTile, rows: &[&[f16]], queries: &[Vec<f32>]) -> f64 {
    let queries: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
    let queries = &queries[..];
    let mut best = f64::INFINITY;
    for _ in 0..20 {
        let started = Instant::now();
        std::thread::scope(|scope| {
            for part in rows.chunks(rows.len().div_ceil(THREADS).max(1)) {
                scope.spawn(move || {
                    let mut dots = vec![0.0f32; BLOCK * queries.len()];
                    let mut sum = 0.0f32;
                    for (at, block) in part.chunks(BLOCK).enumerate() {
                        let ahead_from = ((at + 1) * BLOCK).min(part.len());
                        let ahead_to = (ahead_from + PREFETCH_ROWS).min(part.len());
                        kernel(block, &part[ahead_from..ahead_to], queries, &mut dots);
                        sum += dots[..block.len() * queries.len()].iter().sum::<f32>();
                    }
                    std::hint::black_box(sum);
                });
            }
        });
        best = best.min(started.elapsed().as_secs_f64());
    }
    best
}
