//! The report: Markdown tables like the reference's page (per engine), the ratio
//! table of a side-by-side run, and plots (latency against store size, log-log,
//! both engines; the stage split) as SVG.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
};

use serde_json::Value;

use crate::{
    cell::STAGES,
    error::{io_error, read_json, Error, Result},
    plot::{duration_label, log_log_svg, stacked_shares_svg, PlotLine, ShareBar},
    runner::{size_label, EXTRA_CELLS_DIR},
    stats::quantile,
};

/// One `(size, mode, variant)` row of one engine.
#[derive(Debug, Clone, Default)]
struct Row {
    size: u64,
    mode: String,
    variant: String,
    status: String,
    n: usize,
    p50: Option<f64>,
    p95: Option<f64>,
    rows_read_p50: Option<f64>,
    bytes_p50: Option<f64>,
    peak_rss: Option<u64>,
    stage_p50: BTreeMap<&'static str, f64>,
    stage_share: BTreeMap<&'static str, f64>,
    warmup: Option<f64>,
    /// p50 of process start to answer (one-shot cells).
    process_p50: Option<f64>,
    /// Floors measured in the same cells (`floors` of the cell results).
    floors: BTreeMap<String, f64>,
    notes: Vec<String>,
}

/// The result files in `dir` (every `*.json`).
fn cell_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    Ok(std::fs::read_dir(dir)
        .map_err(io_error("list the cells in", dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect())
}

/// Reads result files in file-name order (so a cell's kinds stay together, as
/// they were when every kind lived in `cells/`).
fn load_cells(mut paths: Vec<PathBuf>) -> Result<Vec<Value>> {
    paths.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    paths.iter().map(|p| read_json(p)).collect()
}

/// One engine's results: `cells/` and, for our engine, `cells-extra/` (the kinds
/// the reference's harness has no mode for), when there is one.
fn load_engine_cells(engine_dir: &Path) -> Result<Vec<Value>> {
    let mut paths = cell_paths(&engine_dir.join("cells"))?;
    let extra = engine_dir.join(EXTRA_CELLS_DIR);
    if extra.is_dir() {
        paths.extend(cell_paths(&extra)?);
    }
    load_cells(paths)
}

fn rows_of(cells: &[Value]) -> Vec<Row> {
    let mut groups: BTreeMap<(String, String, u64), Vec<&Value>> = BTreeMap::new();
    for cell in cells {
        let spec = &cell["spec"];
        let key = (
            spec["mode"].as_str().unwrap_or_default().to_owned(),
            spec["variant"].as_str().unwrap_or_default().to_owned(),
            spec["size"].as_u64().unwrap_or(0),
        );
        groups.entry(key).or_default().push(cell);
    }
    groups
        .into_iter()
        .map(|((mode, variant, size), cells)| {
            let ok: Vec<&&Value> = cells.iter().filter(|c| c["status"] == "ok").collect();
            let samples: Vec<&Value> = ok
                .iter()
                .flat_map(|c| c["samples"].as_array().into_iter().flatten())
                .collect();
            let totals: Vec<f64> = samples
                .iter()
                .filter_map(|s| s["total_seconds"].as_f64())
                .collect();
            let field = |name: &str| -> Vec<f64> {
                samples.iter().filter_map(|s| s[name].as_f64()).collect()
            };
            let sum_total: f64 = totals.iter().sum();
            let mut stage_p50 = BTreeMap::new();
            let mut stage_share = BTreeMap::new();
            for stage in STAGES {
                let values: Vec<f64> = samples
                    .iter()
                    .filter_map(|s| s["stages"][stage].as_f64())
                    .collect();
                stage_p50.insert(stage, quantile(&values, 0.50).unwrap_or(0.0));
                let sum: f64 = values.iter().sum();
                stage_share.insert(
                    stage,
                    if sum_total > 0.0 {
                        sum / sum_total
                    } else {
                        0.0
                    },
                );
            }
            let status = cells
                .iter()
                .find(|c| c["status"] != "ok")
                .and_then(|c| c["status"].as_str())
                .unwrap_or("ok")
                .to_owned();
            let mut notes: Vec<String> = cells
                .iter()
                .flat_map(|c| {
                    c["notes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|n| n.as_str().map(str::to_owned))
                })
                .collect();
            for cell in cells.iter().filter(|c| c["status"] != "ok") {
                let first = cell["error"]
                    .as_str()
                    .and_then(|e| e.lines().next())
                    .unwrap_or("");
                notes.push(format!(
                    "{}: {}: {first}",
                    cell["spec"]["cell_id"].as_str().unwrap_or("?"),
                    cell["status"].as_str().unwrap_or("?")
                ));
            }
            Row {
                size,
                mode,
                variant,
                status,
                n: totals.len(),
                p50: quantile(&totals, 0.50),
                p95: quantile(&totals, 0.95),
                rows_read_p50: quantile(&field("rows_read"), 0.50),
                bytes_p50: quantile(&field("embedding_json_bytes"), 0.50),
                peak_rss: cells
                    .iter()
                    .flat_map(|c| {
                        [
                            c["peak_rss_bytes"].as_u64(),
                            c["sampled_peak_rss_bytes"].as_u64(),
                        ]
                    })
                    .flatten()
                    .max(),
                stage_p50,
                stage_share,
                warmup: ok.iter().find_map(|c| c["warmup_seconds"].as_f64()),
                process_p50: quantile(&field("process_seconds"), 0.50),
                floors: ok
                    .iter()
                    .flat_map(|c| c["floors"].as_object().into_iter().flatten())
                    .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                    .collect(),
                notes,
            }
        })
        .collect()
}

fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "—".into(), duration_label)
}

fn bytes(value: Option<f64>) -> String {
    match value {
        None => "—".into(),
        Some(b) if b >= (1u64 << 30) as f64 => format!("{:.2} GiB", b / (1u64 << 30) as f64),
        Some(b) => format!("{:.0} MiB", b / (1u64 << 20) as f64),
    }
}

fn thousands(value: Option<f64>) -> String {
    let Some(value) = value else {
        return "—".into();
    };
    let digits = format!("{:.0}", value);
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Least-squares slope of `ln p50` on `ln N`.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let points: Vec<(f64, f64)> = points
        .iter()
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .map(|(x, y)| (x.ln(), y.ln()))
        .collect();
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

const GROUPS: [(&str, &str); 6] = [
    ("first", "unfiltered"),
    ("cold", "unfiltered"),
    ("cold-evicted", "unfiltered"),
    ("cold", "subject"),
    ("warm", "unfiltered"),
    ("warm", "subject"),
];

fn engine_tables(out: &mut String, rows: &[Row]) {
    for (mode, variant) in GROUPS {
        let group: Vec<&Row> = rows
            .iter()
            .filter(|r| r.mode == mode && r.variant == variant)
            .collect();
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out, "#### {mode}, {variant}\n");
        let _ = writeln!(out, "| Store | n | p50 | p95 (closed-loop) | warm-up | rows read (p50) | embedding JSON decoded (p50) | peak RSS | status |");
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
        for r in &group {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                size_label(r.size),
                r.n,
                seconds(r.p50),
                seconds(r.p95),
                seconds(r.warmup),
                thousands(r.rows_read_p50),
                bytes(r.bytes_p50),
                bytes(r.peak_rss.map(|b| b as f64)),
                r.status
            );
        }
        let _ = writeln!(out, "\n| Store | {} |", STAGES.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(STAGES.len()));
        for r in group.iter().filter(|r| r.n > 0) {
            let cells: Vec<String> = STAGES
                .iter()
                .map(|s| {
                    format!(
                        "{} ({:.0}%)",
                        seconds(r.stage_p50.get(s).copied()),
                        100.0 * r.stage_share.get(s).copied().unwrap_or(0.0)
                    )
                })
                .collect();
            let _ = writeln!(out, "| {} | {} |", size_label(r.size), cells.join(" | "));
        }
        let notes: Vec<&String> = group.iter().flat_map(|r| &r.notes).collect();
        for note in notes {
            let _ = writeln!(out, "\n> {note}");
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "#### Scaling (derived)\n\n| Mode, variant | sizes | slope of log p50 on log N | µs per row read (p50 / rows read) |\n|---|---|---|---|");
    for (mode, variant) in GROUPS {
        let group: Vec<&Row> = rows
            .iter()
            .filter(|r| r.mode == mode && r.variant == variant && r.p50.is_some())
            .collect();
        if group.is_empty() {
            continue;
        }
        let points: Vec<(f64, f64)> = group
            .iter()
            .map(|r| (r.size as f64, r.p50.unwrap_or(0.0)))
            .collect();
        let per_row: Vec<String> = group
            .iter()
            .filter_map(|r| {
                Some(format!(
                    "{}: {:.2}",
                    size_label(r.size),
                    r.p50? / r.rows_read_p50.filter(|v| *v > 0.0)? * 1e6
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "| {mode}, {variant} | {} | {} | {} |",
            group
                .iter()
                .map(|r| size_label(r.size))
                .collect::<Vec<_>>()
                .join(", "),
            slope(&points).map_or("—".into(), |s| format!("{s:.2}")),
            per_row.join("; ")
        );
    }
    let _ = writeln!(out);
}

fn ratio_table(out: &mut String, ours: &[Row], theirs: &[Row]) {
    let _ = writeln!(
        out,
        "### Side by side (ratios derived from the measured p50s)\n"
    );
    let _ = writeln!(out, "| Cell | Store | reference p50 | particles-rs p50 | speed-up | reference peak RSS | particles-rs peak RSS |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for (mode, variant) in GROUPS {
        for r in ours
            .iter()
            .filter(|r| r.mode == mode && r.variant == variant)
        {
            // Our first and evicted one-shots answer the reference's cold cell.
            let their_mode = if r.mode == "warm" { "warm" } else { "cold" };
            let Some(t) = theirs
                .iter()
                .find(|t| t.mode == their_mode && t.variant == r.variant && t.size == r.size)
            else {
                continue;
            };
            let ratio = match (t.p50, r.p50) {
                (Some(a), Some(b)) if b > 0.0 => format!("{:.0}x", a / b),
                _ => "—".into(),
            };
            let _ = writeln!(
                out,
                "| {mode}, {variant} | {} | {} | {} | {ratio} | {} | {} |",
                size_label(r.size),
                seconds(t.p50),
                seconds(r.p50),
                bytes(t.peak_rss.map(|b| b as f64)),
                bytes(r.peak_rss.map(|b| b as f64))
            );
        }
    }
    let _ = writeln!(out);
}

/// The issue-7 targets, per store size: our cells against the floors measured in
/// the same run and the reference's cells.
fn targets_table(out: &mut String, ours: &[Row], theirs: &[Row]) {
    let find = |rows: &[Row], mode: &str, variant: &str, size: u64| -> Option<Row> {
        rows.iter()
            .find(|r| r.mode == mode && r.variant == variant && r.size == size)
            .cloned()
    };
    let mut sizes: Vec<u64> = ours.iter().map(|r| r.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "—".into(),
    };
    let _ = writeln!(
        out,
        "### Against the floors (measured in the same run; ratios derived)
"
    );
    let _ = writeln!(out, "Scan floor: the best of 20 single-thread passes of one f32 dot product per row over the warm cell's vectors. JSON floor: decoding every ACTIVE embedding's JSON on one core, reading excluded (measured in the `first` cell). One-shot: process start to answer, one question, sidecar present; `cold-evicted`: the sidecar's and the store's pages dropped from the page cache first (`posix_fadvise` DONTNEED).
");
    let _ = writeln!(out, "| Store | warm p50 | scan floor | warm / floor | reference warm / ours | first query | JSON floor | first / floor | one-shot (page cache warm) | one-shot / warm | one-shot, evicted | reference cold / one-shot | warm subject p50 | peak RSS warm |");
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for size in sizes {
        let warm = find(ours, "warm", "unfiltered", size);
        let first = find(ours, "first", "unfiltered", size);
        let cold = find(ours, "cold", "unfiltered", size);
        let evicted = find(ours, "cold-evicted", "unfiltered", size);
        let subject = find(ours, "warm", "subject", size);
        let their_warm = find(theirs, "warm", "unfiltered", size);
        let their_cold = find(theirs, "cold", "unfiltered", size);
        let warm_p50 = warm.as_ref().and_then(|r| r.p50);
        let scan = warm
            .as_ref()
            .and_then(|r| r.floors.get("f32_scan_single_thread_seconds").copied());
        let json_floor = first
            .as_ref()
            .and_then(|r| r.floors.get("json_parse_single_core_seconds").copied());
        let first_p50 = first.as_ref().and_then(|r| r.process_p50);
        let one_shot = cold.as_ref().and_then(|r| r.process_p50);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            size_label(size),
            seconds(warm_p50),
            seconds(scan),
            ratio(warm_p50, scan),
            ratio(their_warm.as_ref().and_then(|r| r.p50), warm_p50),
            seconds(first_p50),
            seconds(json_floor),
            ratio(first_p50, json_floor),
            seconds(one_shot),
            ratio(one_shot, warm_p50),
            seconds(evicted.as_ref().and_then(|r| r.process_p50)),
            ratio(their_cold.as_ref().and_then(|r| r.p50), one_shot),
            seconds(subject.as_ref().and_then(|r| r.p50)),
            bytes(warm.as_ref().and_then(|r| r.peak_rss).map(|b| b as f64)),
        );
    }
    let _ = writeln!(out);
}

/// A log-log plot of p50 against store size, one line per engine and cell kind.
fn latency_svg(series: &[(String, Vec<(f64, f64)>)]) -> String {
    let lines: Vec<PlotLine> = series
        .iter()
        .enumerate()
        .map(|(i, (name, points))| PlotLine {
            // One colour per cell kind; the reference's lines are dashed.
            color: GROUPS
                .iter()
                .position(|(mode, variant)| name.ends_with(&format!("{mode} {variant}")))
                .unwrap_or(i),
            dashed: name.starts_with("reference"),
            name: name.clone(),
            points: points.clone(),
        })
        .collect();
    log_log_svg(
        &lines,
        "beliefs in the store (log)",
        "p50 query latency (log)",
        |x| size_label(x as u64),
    )
}

/// Stacked bars of the stage split (p50 shares) per store size, for one engine's
/// rows of one cell kind.
fn stages_svg(title: &str, rows: &[&Row]) -> String {
    let bars: Vec<ShareBar> = rows
        .iter()
        .map(|row| ShareBar {
            label: size_label(row.size),
            shares: STAGES
                .iter()
                .map(|stage| row.stage_share.get(stage).copied().unwrap_or(0.0))
                .collect(),
        })
        .collect();
    stacked_shares_svg(
        &format!("{title}: share of total time per stage"),
        &bars,
        &STAGES,
    )
}

/// Renders the report of a work directory into `export_dir`: the Markdown page
/// (`query-latency.md`, whose path is returned), the SVG plots, and every cell of
/// ours per store size (`query-latency-{size}.json`). Reads `cells/` and
/// `cells-extra/`, and a side-by-side run's `rust/` and `reference/` directories.
///
/// # Errors
///
/// [`Error::Io`] when the work directory has no cells or the export directory
/// cannot be written, [`Error::Json`] on a result file that does not parse.
pub fn render_report(work_dir: &Path, export_dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(export_dir).map_err(io_error("create", export_dir))?;
    let side_by_side = work_dir.join("rust/cells").is_dir();
    let ours_dir = if side_by_side {
        work_dir.join("rust")
    } else {
        work_dir.to_owned()
    };
    let ours_cells = load_engine_cells(&ours_dir)?;
    let ours = rows_of(&ours_cells);
    let theirs = if side_by_side && work_dir.join("reference/cells").is_dir() {
        rows_of(&load_cells(cell_paths(&work_dir.join("reference/cells"))?)?)
    } else {
        Vec::new()
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Query latency: particles-rs{}\n",
        if theirs.is_empty() {
            ""
        } else {
            " and the reference, side by side"
        }
    );
    let _ = writeln!(out, "Percentiles here are NumPy's default (linear interpolation between the two nearest ranks), computed by `particles_bench::stats::quantile`. Every latency below is **measured** (closed loop: one question at a time, so p95 is a closed-loop p95, not a tail SLO); ratios and slopes are **derived** from them. Cold = a fresh process, one question; warm = one process, an untimed warm-up, then timed questions. top_k 40. The reference has cold and warm cells; particles-rs, which keeps a sidecar beside the store, has four one-shot kinds: `first` (no sidecar yet, the store read into the page cache beforehand: decode the store, answer, then write the sidecar), `cold` (sidecar present, page cache warm), `cold-evicted` (sidecar and store pages dropped from the page cache first) and the subject-filtered cold cell (which never opens the sidecar); each is compared with the reference's cold cell. Our warm cells stand for `serve`: they start from the sidecar and keep the vectors in huge pages.\n");
    if let Some(environment) = ours_cells
        .iter()
        .find_map(|c| c.get("environment").filter(|e| !e.is_null()))
    {
        let _ = writeln!(out, "Reproduction tuple (particles-rs cells): git `{}`, {}, SQLite {}, {} ({} cores, {} memory), load average before {} / after {}.\n",
            environment["git_sha"].as_str().unwrap_or("?"),
            environment["rustc"].as_str().unwrap_or("rustc ?"),
            environment["sqlite"].as_str().unwrap_or("?"),
            environment["cpu"].as_str().unwrap_or("?"),
            environment["cpu_count"],
            bytes(environment["memory_bytes"].as_f64()),
            environment["load_average_before"],
            environment["load_average_after"]);
    }
    targets_table(&mut out, &ours, &theirs);
    if !theirs.is_empty() {
        ratio_table(&mut out, &ours, &theirs);
    }
    let _ = writeln!(out, "### particles-rs\n");
    engine_tables(&mut out, &ours);
    if !theirs.is_empty() {
        let _ = writeln!(
            out,
            "### The reference (linkedparticles 1.214.1, its own harness, same store files)\n"
        );
        engine_tables(&mut out, &theirs);
    }
    let mut series = Vec::new();
    for (engine, rows) in [("particles-rs", &ours), ("reference", &theirs)] {
        for (mode, variant) in GROUPS {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.mode == mode && r.variant == variant)
                .filter_map(|r| Some((r.size as f64, r.p50?)))
                .collect();
            if !points.is_empty() {
                series.push((format!("{engine} {mode} {variant}"), points));
            }
        }
    }
    write_file(
        &export_dir.join("latency-vs-size.svg"),
        latency_svg(&series),
    )?;
    let mut plots = vec!["latency-vs-size.svg".to_owned()];
    for (mode, variant) in [("cold", "unfiltered"), ("warm", "unfiltered")] {
        let rows: Vec<&Row> = ours
            .iter()
            .filter(|r| r.mode == mode && r.variant == variant && r.n > 0)
            .collect();
        if !rows.is_empty() {
            let name = format!("stages-{mode}-{variant}.svg");
            write_file(
                &export_dir.join(&name),
                stages_svg(&format!("particles-rs, {mode} {variant}"), &rows),
            )?;
            plots.push(name);
        }
    }
    let commands: Vec<Vec<String>> =
        read_json(&work_dir.join("run-commands.json")).unwrap_or_default();
    if !commands.is_empty() {
        let _ = writeln!(out, "### Reproduce\n\n```sh\ncargo xtask reference   # the reference venv, for side-by-side runs");
        for command in &commands {
            let flags: Vec<&str> = command
                .iter()
                .map(String::as_str)
                .skip_while(|a| *a != "run")
                .skip(1)
                .collect();
            let _ = writeln!(out, "cargo xtask bench {}", flags.join(" "));
        }
        let _ = writeln!(
            out,
            "cargo xtask bench report --work-dir {} --export-dir docs/benchmarks\n```\n",
            work_dir.display()
        );
    }
    let _ = writeln!(out, "### Plots\n");
    for plot in &plots {
        let _ = writeln!(out, "![{plot}]({plot})\n");
    }
    let mut by_size: BTreeMap<u64, Vec<&Value>> = BTreeMap::new();
    for cell in &ours_cells {
        by_size
            .entry(cell["spec"]["size"].as_u64().unwrap_or(0))
            .or_default()
            .push(cell);
    }
    for (size, cells) in by_size {
        let path = export_dir.join(format!("query-latency-{}.json", size_label(size)));
        let text = serde_json::to_string_pretty(&cells).map_err(|source| Error::Json {
            path: path.clone(),
            source,
        })?;
        write_file(&path, text)?;
    }
    let page = export_dir.join("query-latency.md");
    write_file(&page, out)?;
    Ok(page)
}

fn write_file(path: &Path, text: String) -> Result<()> {
    std::fs::write(path, text).map_err(io_error("write", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_is_fitted_in_logs() {
        // The percentiles are `stats::quantile`'s (NumPy's), tested there.
        assert_eq!(
            slope(&[(10.0, 1.0), (100.0, 10.0)]).map(|s| (s * 1e9).round() / 1e9),
            Some(1.0)
        );
    }
}
