//! The fio suites' report: the tables, a chart per device, report.md.

use super::results::{Results, Summary};
use crate::chart::{self, esc};
use crate::report::{self, num, Page};
use anyhow::Result;
use std::fmt::Write as _;
use std::path::Path;

fn kiops(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 1000.0 {
        format!("{:.1}K", x / 1000.0)
    } else {
        format!("{x:.0}")
    }
}

/// The results as Markdown tables, one per device and workload.
pub fn table_markdown(res: &Results) -> String {
    let mut s = String::new();
    let mut last: Option<(&str, &str)> = None;
    for row in &res.summary {
        let k = (row.device.as_str(), row.workload.as_str());
        if last != Some(k) {
            let path = res
                .devices
                .get(&row.device)
                .map(|d| d.path.as_str())
                .unwrap_or("?");
            s.push_str(&format!(
                "\n#### {} ({}) — {}\n\n| scheduler | IOPS (mean ± sd) | MB/s | p50 µs | p99 µs | p99.9 µs | fio ctx sw / 1000 I/Os | all ctx sw / 1000 I/Os | IOPS vs none | IOPS vs C counterpart |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                row.device, path, row.workload
            ));
            last = Some(k);
        }
        let ratio = match (row.ratio_to_none, row.ratio_sd) {
            (Some(r), Some(sd)) => report::pm(r, sd, 2),
            _ => "-".into(),
        };
        let vs_c = match (
            &row.counterpart,
            row.ratio_to_counterpart,
            row.counterpart_sd,
        ) {
            (Some(c), Some(r), Some(sd)) => format!("{} ({c})", report::pm(r, sd, 2)),
            _ => "".into(),
        };
        let failed = if row.failed > 0 {
            format!(" ({} of {} runs failed)", row.failed, row.runs)
        } else {
            String::new()
        };
        s.push_str(&format!(
            "| {}{} | {} ± {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            row.scheduler,
            failed,
            kiops(row.iops_mean),
            kiops(row.iops_sd),
            num(row.mb_s_mean, 1),
            num(row.lat_p50_us, 0),
            num(row.lat_p99_us, 0),
            num(row.lat_p999_us, 0),
            num(row.ctx_per_kio.unwrap_or(f64::NAN), 1),
            num(row.sys_ctx_per_kio.unwrap_or(f64::NAN), 1),
            ratio,
            vs_c
        ));
    }
    s.push_str(&insns_markdown(res));
    s
}

/// The `--count-insns` tables, one per device and workload that has
/// counts; empty without any.
fn insns_markdown(res: &Results) -> String {
    let mut s = String::new();
    let mut last: Option<(&str, &str)> = None;
    for row in res.summary.iter().filter(|r| r.kernel_insns.is_some()) {
        let k = (row.device.as_str(), row.workload.as_str());
        if last != Some(k) {
            s.push_str(&format!(
                "\n#### {} — {}: kernel instructions per request\n\n\
                 Counted by QEMU's TCG plugin (`--count-insns`) over each fio run, \
                 every CPU, divided by the requests started; \
                 the scheduler's own: its functions (a Rust scheduler's module and \
                 the `rust_helper_` functions it calls).\n\n\
                 | scheduler | kernel insns / request (mean ± sd) | vs none | \
                 scheduler's own insns / request |\n|---|---:|---:|---:|\n",
                row.device, row.workload
            ));
            last = Some(k);
        }
        let none = res
            .summary
            .iter()
            .find(|r| r.device == row.device && r.workload == row.workload && r.scheduler == "none")
            .and_then(|r| r.kernel_insns);
        let vs_none = match (row.kernel_insns, none) {
            (Some(x), Some(n)) if n > 0.0 => num(x / n, 2),
            _ => "-".into(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            row.scheduler,
            report::pm(
                row.kernel_insns.unwrap_or(f64::NAN),
                row.kernel_insns_sd.unwrap_or(f64::NAN),
                0
            ),
            vs_none,
            num(row.scheduler_insns.unwrap_or(f64::NAN), 0),
        ));
    }
    s
}

// Long: an SVG drawn top to bottom (axes, groups, bars, whiskers,
// legend); the coordinates it shares would otherwise travel as arguments.
/// A grouped bar chart of IOPS relative to `none` for one device: a group
/// per workload, a bar per scheduler, whiskers at ± one standard deviation.
pub fn ratio_chart_svg(device: &str, rows: &[&Summary], schedulers: &[String]) -> String {
    let workloads: Vec<&str> = report::distinct(rows.iter().map(|r| r.workload.as_str()));
    let bar_w = 18.0;
    let gap = 24.0;
    let group_w = bar_w * schedulers.len() as f64 + gap;
    let left = 50.0;
    let top = 40.0;
    let plot_h = 220.0;
    let width = left + group_w * workloads.len() as f64 + 170.0;
    let height = top + plot_h + 50.0;
    let max_ratio = rows
        .iter()
        .filter_map(|r| Some(r.ratio_to_none? + r.ratio_sd.unwrap_or(0.0)))
        .fold(1.2f64, f64::max)
        .min(5.0);
    let y = |v: f64| top + plot_h - (v / max_ratio) * plot_h;
    let mut s = chart::start(
        width,
        height,
        left,
        &format!(
            "{}: IOPS relative to none (mean ± sd over repeats)",
            esc(device)
        ),
    );
    // Grid.
    let mut g = 0.0;
    while g <= max_ratio + 1e-9 {
        let yy = y(g);
        let stroke = if (g - 1.0).abs() < 1e-9 {
            "#000"
        } else {
            "#ddd"
        };
        let _ = write!(
            s,
            r#"<line x1="{left}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="{stroke}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{g:.1}</text>"#,
            left + group_w * workloads.len() as f64,
            left - 4.0,
            yy + 4.0
        );
        g += if max_ratio > 2.5 { 0.5 } else { 0.2 };
    }
    for (wi, w) in workloads.iter().enumerate() {
        let gx = left + wi as f64 * group_w + gap / 2.0;
        for (si, sched) in schedulers.iter().enumerate() {
            let Some(r) = rows
                .iter()
                .find(|r| r.workload == *w && &r.scheduler == sched)
            else {
                continue;
            };
            let Some(ratio) = r.ratio_to_none else {
                continue;
            };
            let x = gx + si as f64 * bar_w;
            let color = chart::color(si);
            let _ = write!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{} {}: {ratio:.2}</title></rect>"#,
                y(ratio.min(max_ratio)),
                bar_w - 2.0,
                (y(0.0) - y(ratio.min(max_ratio))).max(0.0),
                esc(sched),
                esc(w)
            );
            if let Some(sd) = r.ratio_sd {
                let cx = x + (bar_w - 2.0) / 2.0;
                let _ = write!(
                    s,
                    r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="#000"/>"##,
                    y((ratio - sd).max(0.0)),
                    y((ratio + sd).min(max_ratio))
                );
            }
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            gx + bar_w * schedulers.len() as f64 / 2.0,
            top + plot_h + 16.0,
            esc(w)
        );
    }
    let lx = left + group_w * workloads.len() as f64 + 15.0;
    for (si, sched) in schedulers.iter().enumerate() {
        let ly = top + 10.0 + si as f64 * 16.0;
        let _ = write!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            ly - 9.0,
            chart::color(si),
            lx + 14.0,
            ly,
            esc(sched)
        );
    }
    chart::end(s)
}

/// Writes report.md and one chart per device into `dir`.
pub fn write(dir: &Path, res: &Results) -> Result<()> {
    let h = &res.header;
    let charts = report::distinct(res.summary.iter().map(|s| s.device.as_str()))
        .into_iter()
        .map(|d| {
            let rows: Vec<&Summary> = res.summary.iter().filter(|s| s.device == d).collect();
            (
                d.to_string(),
                format!("chart-{d}.svg"),
                ratio_chart_svg(d, &rows, &res.schedulers),
            )
        })
        .collect();
    Page {
        header: h,
        schedulers: &res.schedulers,
        devices: &res.devices,
        rows: vec![(
            "timing",
            format!(
                "{} repeats × {} s (+{} s ramp) per run{}",
                h.timing.repeats,
                h.timing.runtime_s,
                h.timing.ramp_s,
                report::quick_mark(h)
            ),
        )],
        method: "Runs are interleaved (every scheduler once per device, workload and repeat, \
                 order rotated between repeats). \"vs none\" is the mean over repeats of this \
                 scheduler's IOPS divided by `none`'s IOPS in the same repeat: compare schedulers \
                 by these ratios, not by absolute figures, which move between boots (and under TCG \
                 reflect a slow emulated CPU). \"vs C counterpart\" pairs a Rust scheduler with \
                 the C one it reimplements (`rust-deadline` with `mq-deadline`, `rust-bfq` with \
                 `bfq`) the same way."
            .into(),
        failed: report::failed_runs(&res.runs, |r| {
            format!("{} {} {}", r.device, r.scheduler, r.case.workload)
        }),
        charts,
        tables: table_markdown(res),
        raw_runs: "fio's own output per run under `runs/`.",
    }
    .write(dir)
}
