//! The readable report: Markdown with tables and SVG charts, written next
//! to results.json.

use crate::bench::{table_markdown, ResultsFile, Summary};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

const PALETTE: &[&str] = &[
    "#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A grouped bar chart of IOPS relative to `none` for one device: a group
/// per workload, a bar per scheduler, whiskers at ± one standard deviation.
pub fn ratio_chart_svg(device: &str, rows: &[&Summary], schedulers: &[String]) -> String {
    let workloads: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in rows {
            if !v.contains(&r.workload.as_str()) {
                v.push(&r.workload);
            }
        }
        v
    };
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
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{left}" y="20" font-size="14" font-weight="bold">{}: IOPS relative to none (mean ± sd over repeats)</text>"#,
        esc(device)
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
            let color = PALETTE[si % PALETTE.len()];
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
            PALETTE[si % PALETTE.len()],
            lx + 14.0,
            ly,
            esc(sched)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Writes report.md and one chart per device into `dir`.
pub fn write(dir: &Path, res: &ResultsFile) -> Result<()> {
    let mut md = String::new();
    let _ = writeln!(md, "# ironlift benchmark: {}\n", res.suite);
    let _ = writeln!(md, "{}\n", res.suite_description);
    let _ = writeln!(md, "| | |\n|---|---|");
    let _ = writeln!(md, "| kernel | {} |", res.kernel_release);
    let _ = writeln!(
        md,
        "| guest | QEMU, accelerator **{}**, clocksource {}, {} vCPUs, {} MiB |",
        res.accel.to_uppercase(),
        res.guest_clocksource,
        res.guest_cpus,
        res.guest_memory_mb
    );
    let _ = writeln!(md, "| host | {} |", res.host);
    let _ = writeln!(
        md,
        "| timing | {} repeats × {} s (+{} s ramp) per run{} |",
        res.timing.repeats,
        res.timing.runtime_s,
        res.timing.ramp_s,
        if res.quick { ", `--quick`" } else { "" }
    );
    let _ = writeln!(md, "| schedulers | {} |", res.schedulers.join(", "));
    let _ = writeln!(
        md,
        "| started / finished | {} / {} |",
        res.started, res.finished
    );
    let _ = writeln!(
        md,
        "\nRuns are interleaved (every scheduler once per device, workload and repeat, \
         order rotated between repeats). \"vs none\" is the mean over repeats of this \
         scheduler's IOPS divided by `none`'s IOPS in the same repeat: compare schedulers \
         by these ratios, not by absolute figures, which move between boots (and under TCG \
         reflect a slow emulated CPU). \"vs C counterpart\" pairs a Rust scheduler with \
         the C one it reimplements (`rust-deadline` with `mq-deadline`, `rust-bfq` with \
         `bfq`) the same way.\n"
    );
    let failed: Vec<_> = res.runs.iter().filter(|r| !r.ok).collect();
    if !failed.is_empty() {
        let _ = writeln!(md, "**{} run(s) failed:**\n", failed.len());
        for r in &failed {
            let _ = writeln!(
                md,
                "- {} {} {}: {}",
                r.run.device,
                r.run.scheduler,
                r.run.workload,
                r.error.as_deref().unwrap_or("?")
            );
        }
        md.push('\n');
    }
    let mut devices: Vec<&str> = Vec::new();
    for s in &res.summary {
        if !devices.contains(&s.device.as_str()) {
            devices.push(&s.device);
        }
    }
    for d in &devices {
        let rows: Vec<&Summary> = res.summary.iter().filter(|s| s.device == *d).collect();
        let name = format!("chart-{d}.svg");
        fs::write(dir.join(&name), ratio_chart_svg(d, &rows, &res.schedulers))
            .with_context(|| format!("writing {name}"))?;
        let kind = res.devices.get(*d).map(|x| x.kind.as_str()).unwrap_or("");
        let _ = writeln!(md, "## {d}\n\n{kind}\n\n![{d}]({name})\n");
    }
    let _ = writeln!(md, "## Tables\n{}", table_markdown(res));
    let _ = writeln!(
        md,
        "\nRaw data: `results.json` (schema `{}`, see docs/results-schema.md); fio's own \
         output per run under `runs/`.",
        res.schema
    );
    fs::write(dir.join("report.md"), md)?;
    Ok(())
}
