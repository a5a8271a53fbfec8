//! The benchmarks' plots, as standalone SVG documents written by hand (no
//! plotting dependency): log-log line plots ([`log_log_svg`]: latency against
//! store size, latency against offered rate) and stacked share bars
//! ([`stacked_shares_svg`]: the stage split of a cell kind per store size).

use std::fmt::Write as _;

/// A duration in seconds as the benchmark pages print it (`0.8 ms`, `14 ms`,
/// `1.30 s`).
pub(crate) fn duration_label(seconds: f64) -> String {
    if seconds < 0.01 {
        format!("{:.1} ms", seconds * 1e3)
    } else if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1e3)
    } else {
        format!("{seconds:.2} s")
    }
}

/// One line of [`log_log_svg`].
#[derive(Debug, Clone)]
pub struct PlotLine {
    /// The legend's text.
    pub name: String,
    /// Index into the palette.
    pub color: usize,
    /// Drawn dashed (by convention, the reference's lines).
    pub dashed: bool,
    /// `(x, y)` points; those not both positive are left out (a log scale).
    pub points: Vec<(f64, f64)>,
}

/// A log-log line plot (y in seconds) as a standalone SVG document, with a
/// gridline and label at each decade and a legend on the right. `x_tick` labels
/// the x decades.
pub fn log_log_svg(
    lines: &[PlotLine],
    x_label: &str,
    y_label: &str,
    x_tick: impl Fn(f64) -> String,
) -> String {
    let (w, h, left, bottom, top, right) = (820.0, 440.0, 70.0, 50.0, 20.0, 250.0);
    let points: Vec<(f64, f64)> = lines
        .iter()
        .flat_map(|line| line.points.iter().copied())
        .filter(|(x, y)| *x > 0.0 && *y > 0.0)
        .collect();
    if points.is_empty() {
        return String::from("<svg xmlns=\"http://www.w3.org/2000/svg\"/>");
    }
    let (x0, x1) = points.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
        (a.min(p.0.log10()), b.max(p.0.log10()))
    });
    let (y0, y1) = points.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
        (a.min(p.1.log10()), b.max(p.1.log10()))
    });
    let (x0, x1) = (x0.floor(), x1.ceil().max(x0.floor() + 1.0));
    let (y0, y1) = (y0.floor(), y1.ceil().max(y0.floor() + 1.0));
    let px = |x: f64| left + (x.log10() - x0) / (x1 - x0) * (w - left - right);
    let py = |y: f64| h - bottom - (y.log10() - y0) / (y1 - y0) * (h - bottom - top);
    let colors = [
        "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    ];
    let mut svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    for decade in (x0 as i32)..=(x1 as i32) {
        let x = px(10f64.powi(decade));
        let _ = writeln!(svg, "<line x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{}\" stroke=\"#ddd\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>", h - bottom, h - bottom + 18.0, x_tick(10f64.powi(decade)));
    }
    for decade in (y0 as i32)..=(y1 as i32) {
        let y = py(10f64.powi(decade));
        let _ = writeln!(svg, "<line x1=\"{left}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", w - right, left - 6.0, y + 4.0, duration_label(10f64.powi(decade)));
    }
    let _ = writeln!(
        svg,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{x_label}</text>",
        (left + w - right) / 2.0,
        h - 10.0
    );
    let _ = writeln!(svg, "<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">{y_label}</text>", h / 2.0, h / 2.0);
    for (i, line) in lines.iter().enumerate() {
        let color = colors[line.color % colors.len()];
        let dash = if line.dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let shown: Vec<(f64, f64)> = line
            .points
            .iter()
            .copied()
            .filter(|(x, y)| *x > 0.0 && *y > 0.0)
            .collect();
        let path: Vec<String> = shown
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
            path.join(" ")
        );
        for (x, y) in &shown {
            let _ = writeln!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"/>",
                px(*x),
                py(*y)
            );
        }
        let ly = top + 18.0 * i as f64 + 10.0;
        let _ = writeln!(svg, "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/><text x=\"{}\" y=\"{}\">{}</text>", w - right + 10.0, w - right + 34.0, w - right + 40.0, ly + 4.0, line.name);
    }
    svg.push_str("</svg>\n");
    svg
}

/// One bar of [`stacked_shares_svg`].
#[derive(Debug, Clone)]
pub(crate) struct ShareBar {
    /// The label left of the bar (a store size).
    pub(crate) label: String,
    /// Each segment's share of the bar's width, in the segments' order
    /// (`0..=1`; a missing or zero share draws nothing).
    pub(crate) shares: Vec<f64>,
}

/// Horizontal bars, one per [`ShareBar`], each split into its segments' shares
/// (one colour per segment, a tooltip with its percentage), under `title`, with
/// the segments' legend below, six to a row.
pub(crate) fn stacked_shares_svg(title: &str, bars: &[ShareBar], segments: &[&str]) -> String {
    let (w, h, left, bottom, top) = (760.0, 60.0 + 34.0 * bars.len() as f64, 60.0, 70.0, 30.0);
    let colors = [
        "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
        "#9c755f", "#bab0ac", "#86bcb6", "#d37295",
    ];
    let mut svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{left}\" y=\"18\">{title}</text>\n", h + bottom);
    for (i, bar) in bars.iter().enumerate() {
        let y = top + 34.0 * i as f64;
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + 16.0,
            bar.label
        );
        let mut x = left;
        for (j, segment) in segments.iter().enumerate() {
            let share = bar.shares.get(j).copied().unwrap_or(0.0);
            let width = share * (w - left - 20.0);
            if width > 0.0 {
                let _ = writeln!(svg, "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"24\" fill=\"{}\"><title>{segment} {:.0}%</title></rect>", colors[j % colors.len()], share * 100.0);
            }
            x += width;
        }
    }
    for (j, segment) in segments.iter().enumerate() {
        let x = left + (j % 6) as f64 * 115.0;
        let y = h + 10.0 + (j / 6) as f64 * 20.0;
        let _ = writeln!(svg, "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{segment}</text>", y - 10.0, colors[j % colors.len()], x + 16.0, y);
    }
    svg.push_str("</svg>\n");
    svg
}
