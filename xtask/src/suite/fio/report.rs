//! The fio suites' report: the tables, a chart per device, report.md.

use super::results::{Results, Summary};
use crate::chart;
use crate::report::{self, num, Page};
use anyhow::Result;
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

/// A grouped bar chart of IOPS relative to `none` for one device: a group
/// per workload, a bar per scheduler, whiskers at ± one standard deviation.
pub fn ratio_chart_svg(device: &str, rows: &[&Summary], schedulers: &[String]) -> Result<String> {
    let workloads: Vec<&str> = report::distinct(rows.iter().map(|r| r.workload.as_str()));
    chart::ratio_bars_svg(
        &format!("{device}: IOPS relative to none (mean ± sd over repeats)"),
        0,
        &workloads,
        schedulers,
        |wi, si| {
            let r = rows
                .iter()
                .find(|r| r.workload == workloads[wi] && r.scheduler == schedulers[si])?;
            Some((r.ratio_to_none?, r.ratio_sd))
        },
    )
}

/// Writes report.md and one chart per device into `dir`.
pub fn write(dir: &Path, res: &Results) -> Result<()> {
    let h = &res.header;
    let charts = report::distinct(res.summary.iter().map(|s| s.device.as_str()))
        .into_iter()
        .map(|d| {
            let rows: Vec<&Summary> = res.summary.iter().filter(|s| s.device == d).collect();
            Ok((
                d.to_string(),
                format!("chart-{d}.svg"),
                ratio_chart_svg(d, &rows, &res.schedulers)?,
            ))
        })
        .collect::<Result<_>>()?;
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
