//! What the query path's hash maps pay per lookup with each hasher: the keys
//! and sizes the band and the gather use (a source slot, `Option<u32>`; an
//! interned id, `u32`; `(Option<u32>)` tuples for the set's dense slots), filled
//! once and then looked up ten times per key, in a shuffled order, as a band
//! over a large store does. foldhash was adopted over SipHash (std's default)
//! and this is the measurement behind it (docs/benchmarks/hashing.md).
//!
//! `cargo run --release -p particles-candidates --example hash_cost`

use std::{
    collections::HashMap,
    hash::{BuildHasher, Hash},
    time::Instant,
};

/// A small deterministic generator (xorshift), so every hasher sees the same keys.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Nanoseconds per lookup (best of five rounds) and per insert.
fn cost<K: Hash + Eq + Copy, S: BuildHasher + Default>(keys: &[K], order: &[usize]) -> (f64, f64) {
    let mut best_lookup = f64::INFINITY;
    let mut best_insert = f64::INFINITY;
    let mut sink = 0.0f64;
    for _ in 0..5 {
        let started = Instant::now();
        let mut map: HashMap<K, f64, S> = HashMap::with_hasher(S::default());
        for (at, key) in keys.iter().enumerate() {
            map.insert(*key, at as f64);
        }
        best_insert = best_insert.min(started.elapsed().as_nanos() as f64 / keys.len() as f64);
        let started = Instant::now();
        for &at in order {
            sink += map.get(&keys[at]).copied().unwrap_or(0.0);
        }
        best_lookup = best_lookup.min(started.elapsed().as_nanos() as f64 / order.len() as f64);
    }
    std::hint::black_box(sink);
    (best_lookup, best_insert)
}

fn row<K: Hash + Eq + Copy>(label: &str, keys: &[K], order: &[usize]) {
    let (sip_l, sip_i) = cost::<K, std::collections::hash_map::RandomState>(keys, order);
    let (fold_l, fold_i) = cost::<K, foldhash::fast::RandomState>(keys, order);
    let (fixed_l, fixed_i) = cost::<K, foldhash::fast::FixedState>(keys, order);
    println!(
        "| {label} | {} | {sip_l:.1} / {sip_i:.1} | {fold_l:.1} / {fold_i:.1} | {fixed_l:.1} / {fixed_i:.1} | {:.2}x |",
        keys.len(),
        sip_l / fold_l
    );
}

fn main() {
    println!("| keys | distinct | SipHash ns lookup / insert | foldhash (random seed) | foldhash (fixed seed) | lookup speed-up |");
    println!("|---|---|---|---|---|---|");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for distinct in [1_000usize, 16_384, 131_072] {
        // Interned ids are dense small integers; source slots are those or None.
        let ids: Vec<u32> = (0..distinct as u32).collect();
        let slots: Vec<Option<u32>> = (0..distinct as u32)
            .map(|i| (i % 97 != 0).then_some(i))
            .collect();
        let pairs: Vec<Option<(u32, Option<u32>)>> = (0..distinct as u32)
            .map(|i| Some((i / 3, (i % 3 != 0).then_some(i))))
            .collect();
        let order: Vec<usize> = (0..distinct * 10)
            .map(|_| (rng.next() % distinct as u64) as usize)
            .collect();
        row("u32", &ids, &order);
        row("Option<u32>", &slots, &order);
        row("Option<(u32, Option<u32>)>", &pairs, &order);
    }
}
