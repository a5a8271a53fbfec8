//! `benchmark serve-load --writer-rate`: a writer committing through the
//! reference's engine while our engine is loaded.
//!
//! The writer retracts one particle per tick with the reference's own write
//! route (`POST /particles/retract?store=default`, what its client's
//! `particle_retract` sends). Sent to our engine, the route is forwarded to its
//! `--upstream`, the reference's engine, which commits it; the journal moves, and
//! our next query catches up. The latency of each write, sent to answered, is
//! the writer's commit latency as its client sees it.

use std::{
    path::Path,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use serde::Serialize;

use crate::{load::BlockingClient, stats::quantile, Error, Result};

/// What the writer did in one phase.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct WriterReport {
    /// What the phase was (e.g. "alone, straight to the reference's engine").
    pub(crate) phase: String,
    /// The engine written through.
    pub(crate) url: String,
    /// Writes per second asked for.
    pub(crate) rate: f64,
    /// Writes sent.
    pub(crate) sent: usize,
    /// Writes answered 200.
    pub(crate) ok: usize,
    /// The first failures, verbatim (at most ten).
    pub(crate) errors: Vec<String>,
    /// Latency of the writes answered 200, seconds.
    pub(crate) p50: Option<f64>,
    /// Its 99th percentile.
    pub(crate) p99: Option<f64>,
    /// Its worst.
    pub(crate) max: Option<f64>,
}

/// Ids of ACTIVE particles to retract, spread over the store (every n-th by
/// rowid), read-only.
pub(crate) fn retractable_ids(store: &Path, count: usize) -> Result<Vec<String>> {
    let store = particles_store::Store::open_read_only(store)?;
    let total = particles_store::count_active(&store)?.max(1);
    let step = (total / count.max(1)).max(1);
    let ids = particles_store::active_ids_spread(&store, step, count)?;
    Ok(ids)
}

/// Writes at `rate` per second (a fixed schedule; a write slower than the
/// interval delays the next) until `stop` or the ids run out. With `warm_up`,
/// one write goes first, not measured: the reference's first write pays for its
/// imports and statement caches (about 0.8 s here), which is not a commit's cost.
pub(crate) fn run(
    phase: &str,
    url: &str,
    ids: &mut Vec<String>,
    rate: f64,
    warm_up: bool,
    stop: &AtomicBool,
) -> WriterReport {
    let client = match BlockingClient::new() {
        Ok(client) => client,
        Err(error) => {
            return WriterReport {
                phase: phase.to_owned(),
                url: url.to_owned(),
                rate,
                sent: 0,
                ok: 0,
                errors: vec![error.to_string()],
                p50: None,
                p99: None,
                max: None,
            }
        }
    };
    if warm_up {
        if let Some(id) = ids.pop() {
            let _ = retract(&client, url, &id);
        }
    }
    let interval = Duration::from_secs_f64(1.0 / rate.max(1e-3));
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut errors = Vec::new();
    let mut sent = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let Some(id) = ids.pop() else { break };
        let due = started + interval * u32::try_from(sent).unwrap_or(u32::MAX);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        sent += 1;
        let begun = Instant::now();
        match retract(&client, url, &id) {
            Ok(()) => latencies.push(begun.elapsed().as_secs_f64()),
            Err(error) if errors.len() < 10 => errors.push(format!("{id}: {error}")),
            Err(_) => {}
        }
    }
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| quantile(&latencies, q);
    WriterReport {
        phase: phase.to_owned(),
        url: url.to_owned(),
        rate,
        sent,
        ok: latencies.len(),
        errors,
        p50: at(0.5),
        p99: at(0.99),
        max: latencies.last().copied(),
    }
}

/// One retraction through `url`; an error unless it is answered 200.
fn retract(client: &BlockingClient, url: &str, id: &str) -> Result<()> {
    let body = serde_json::json!({
        "particle_id": id,
        "reason": "particles-rs serve-load writer",
        "project_key": null,
    })
    .to_string();
    let target = format!(
        "{}/particles/retract?store=default",
        url.trim_end_matches('/')
    );
    let (status, answer) = client.post_json(&target, body, Duration::from_secs(120))?;
    if status == 200 {
        Ok(())
    } else {
        Err(Error::Load {
            reason: format!("HTTP {status}: {answer}"),
        })
    }
}

/// The writer's phases as a Markdown table.
pub(crate) fn markdown(reports: &[WriterReport]) -> String {
    let ms = |s: Option<f64>| s.map_or("—".to_owned(), |s| format!("{:.1} ms", s * 1e3));
    let mut out = String::from(
        "| writer phase | rate | sent | ok | p50 | p99 | max |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for report in reports {
        out.push_str(&format!(
            "| {} | {}/s | {} | {} | {} | {} | {} |\n",
            report.phase,
            report.rate,
            report.sent,
            report.ok,
            ms(report.p50),
            ms(report.p99),
            ms(report.max),
        ));
    }
    out
}
