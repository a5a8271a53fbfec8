//! Where a loader's time goes, for the benchmark's stage split: time inside SQLite
//! (preparing and stepping the loader's statements), time hydrating rows into
//! particles, and what was decoded. Counters are per thread, cheap (two clock
//! reads per row), and read with [`take_load_counters`], which resets them.

use std::{cell::Cell, time::Instant};

/// What the loaders of this thread did since the last `take_load_counters`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LoadCounters {
    /// Seconds inside SQLite for loader and journal statements.
    pub sql_seconds: f64,
    /// Seconds turning rows into particles.
    pub hydrate_seconds: f64,
    /// Rows hydrated.
    pub models_hydrated: u64,
    /// Bytes of `embedding_json` text decoded.
    pub embedding_json_bytes: u64,
}

thread_local! {
    static COUNTERS: Cell<LoadCounters> = const { Cell::new(LoadCounters {
        sql_seconds: 0.0,
        hydrate_seconds: 0.0,
        models_hydrated: 0,
        embedding_json_bytes: 0,
    }) };
}

/// Returns this thread's counters and resets them.
pub(crate) fn take_load_counters() -> LoadCounters {
    COUNTERS.with(|c| c.replace(LoadCounters::default()))
}

fn update(f: impl FnOnce(&mut LoadCounters)) {
    COUNTERS.with(|c| {
        let mut value = c.get();
        f(&mut value);
        c.set(value);
    });
}

/// Runs `f`, counting its time as SQL time.
pub(crate) fn sql<T>(f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = f();
    let elapsed = started.elapsed().as_secs_f64();
    update(|c| c.sql_seconds += elapsed);
    value
}

/// Runs `f`, counting its time as hydration of one row.
pub(crate) fn hydrate<T>(f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let value = f();
    let elapsed = started.elapsed().as_secs_f64();
    update(|c| {
        c.hydrate_seconds += elapsed;
        c.models_hydrated += 1;
    });
    value
}

/// Counts decoded embedding text.
pub(crate) fn decoded(bytes: usize) {
    update(|c| c.embedding_json_bytes += bytes as u64);
}

/// Counts rows hydrated and embedding text decoded by another thread for this
/// one (a build's worker hands its batches back to the reading thread).
pub(crate) fn add_counts(hydrated: u64, decoded_bytes: u64) {
    update(|c| {
        c.models_hydrated += hydrated;
        c.embedding_json_bytes += decoded_bytes;
    });
}
