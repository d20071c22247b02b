//! The start-up suite's report: the tables with each device's floor, a
//! chart per device, report.md.

use super::results::{StartupResults, StartupRun, StartupSummary};
use crate::chart::{self, esc};
use crate::report::{self, num, pm, Page};
use crate::stats::Ratio;
use anyhow::Result;
use std::fmt::Write as _;
use std::path::Path;

fn ratio_cell(r: Option<&Ratio>) -> String {
    match r {
        Some(r) => pm(r.mean, r.sd, 2),
        None => "-".into(),
    }
}

/// The floor of "vs mq-deadline" on a device: the start-up alone (mean over
/// every scheduler's runs) / mq-deadline's start-up under the readers, and
/// the two times. None without both.
pub fn floor_vs_mq_deadline(rows: &[&StartupSummary]) -> Option<(f64, f64, f64)> {
    let mq = rows.iter().find(|r| r.scheduler == "mq-deadline")?;
    let (mut sum, mut n) = (0.0, 0usize);
    for r in rows {
        if let Some(m) = r.alone_mean_s {
            let k = r.runs - r.failed;
            sum += m * k as f64;
            n += k;
        }
    }
    if n == 0 || mq.startup_mean_s <= 0.0 {
        return None;
    }
    let alone = sum / n as f64;
    Some((alone / mq.startup_mean_s, alone, mq.startup_mean_s))
}

/// The line under a device's table that says how low "vs mq-deadline" can
/// go there.
fn floor_line(rows: &[&StartupSummary]) -> String {
    match floor_vs_mq_deadline(rows) {
        Some((x, alone, mq)) => format!(
            "\nFloor: the start-up alone takes {} s, {} × mq-deadline's {} s under the \
             readers: about the lowest \"vs mq-deadline\" any scheduler can reach here.\n",
            num(alone, 2),
            num(x, 2),
            num(mq, 2)
        ),
        None => String::new(),
    }
}

/// The (device, application) pairs of the summary rows, in order.
fn row_groups(res: &StartupResults) -> Vec<(&str, Option<&str>)> {
    let mut out: Vec<(&str, Option<&str>)> = Vec::new();
    for r in &res.summary {
        let g = (r.device.as_str(), r.app.as_deref());
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// The results as Markdown tables, one per device and application.
pub fn table_markdown(res: &StartupResults) -> String {
    let mut s = String::new();
    for (dev, app) in row_groups(res) {
        let rows: Vec<&StartupSummary> = res
            .summary
            .iter()
            .filter(|r| r.device == dev && r.app.as_deref() == app)
            .collect();
        let path = res.devices.get(dev).map(|d| d.path.as_str()).unwrap_or("?");
        let what = match app {
            Some(a) => format!("{a}: start-up"),
            None => "start-up".into(),
        };
        // Tag samples: only in results that have them.
        let sampled = rows.iter().any(|r| r.tags_full_share.is_some());
        let (tag_head, tag_rule) = if sampled {
            (" all tags taken | tags taken |", "---:|---:|")
        } else {
            ("", "")
        };
        let _ = write!(
            s,
            "\n#### {dev} ({path}) — {what} under {} readers\n\n\
             | scheduler | start-up s (mean ± sd) | min–max s | vs mq-deadline | vs bfq | \
             alone s (mean ± sd) | × alone | readers MB/s (mean ± sd) |{tag_head} runs |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|{tag_rule}---:|\n",
            res.startup.readers
        );
        for row in &rows {
            let failed = if row.failed > 0 {
                format!(" ({} failed)", row.failed)
            } else {
                String::new()
            };
            let alone = match (row.alone_mean_s, row.alone_sd_s) {
                (Some(m), Some(sd)) => pm(m, sd, 2),
                _ => "-".into(),
            };
            let tags = if sampled {
                let share = row
                    .tags_full_share
                    .map_or("-".into(), |x| format!("{:.0} %", 100.0 * x));
                let busy = row.tags_busy_mean.map_or("-".into(), |x| num(x, 1));
                format!(" {share} | {busy} |")
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "| {} | {} | {}–{} | {} | {} | {} | {} | {} |{tags} {}{} |",
                row.scheduler,
                pm(row.startup_mean_s, row.startup_sd_s, 2),
                num(row.startup_min_s, 2),
                num(row.startup_max_s, 2),
                ratio_cell(row.ratio_to.get("mq-deadline")),
                ratio_cell(row.ratio_to.get("bfq")),
                alone,
                ratio_cell(row.slowdown.as_ref()),
                pm(row.readers_mb_s_mean, row.readers_mb_s_sd, 1),
                row.runs,
                failed
            );
        }
        s.push_str(&floor_line(&rows));
    }
    s
}

/// What the report says the applications are.
fn apps_line(sp: &super::spec::StartupSpec) -> String {
    let tar = match sp.tar() {
        Some((files, dirs, lo, hi)) => {
            format!("{files} files in {dirs} folders, {lo}–{hi} KiB each (log-uniform)")
        }
        None => String::new(),
    };
    if sp.app.is_empty() {
        return tar;
    }
    sp.app
        .iter()
        .map(|a| match &a.trace {
            Some(t) => format!("`{}`: replay of `{t}`", a.name),
            None => format!("`{}`: {tar}", a.name),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

// Long: an SVG drawn top to bottom (axes, bars, whiskers, dots, labels);
// the coordinates it shares would otherwise travel as arguments.
/// A horizontal bar chart of start-up time per scheduler (mean, whiskers
/// at ± one standard deviation, each run as a dot).
pub fn chart_svg(
    device: &str,
    rows: &[&StartupSummary],
    runs: &[&StartupRun],
    readers: u32,
) -> String {
    let left = 110.0;
    let top = 40.0;
    let bar_h = 22.0;
    let gap = 10.0;
    let plot_w = 460.0;
    let height = top + rows.len() as f64 * (bar_h + gap) + 40.0;
    let width = left + plot_w + 140.0;
    let max_run = runs
        .iter()
        .filter_map(|r| r.measured.as_ref().map(|m| m.startup_s))
        .fold(0.0f64, f64::max);
    let max_bar = rows
        .iter()
        .map(|r| r.startup_mean_s + r.startup_sd_s)
        .filter(|x| x.is_finite())
        .fold(0.0f64, f64::max);
    let max = chart::nice_ceiling(max_run.max(max_bar).max(0.1));
    let x = |v: f64| left + v / max * plot_w;
    let mut s = chart::start(
        width,
        height,
        10.0,
        &format!(
            "{}: start-up time under {readers} sequential readers (s; mean ± sd, dots = runs)",
            esc(device)
        ),
    );
    let bottom = top + rows.len() as f64 * (bar_h + gap);
    for i in 0..=5 {
        let v = max * i as f64 / 5.0;
        let _ = write!(
            s,
            r##"<line x1="{xx:.1}" x2="{xx:.1}" y1="{top}" y2="{bottom:.1}" stroke="#ddd"/><text x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            bottom + 14.0,
            chart::trim_num(v),
            xx = x(v)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + i as f64 * (bar_h + gap);
        let color = chart::color(i);
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 6.0,
            y + bar_h / 2.0 + 4.0,
            esc(&r.scheduler)
        );
        if r.startup_mean_s.is_finite() {
            let _ = write!(
                s,
                r#"<rect x="{left}" y="{y:.1}" width="{:.1}" height="{bar_h}" fill="{color}" fill-opacity="0.8"><title>{}: {:.2} s ± {:.2}</title></rect>"#,
                x(r.startup_mean_s) - left,
                esc(&r.scheduler),
                r.startup_mean_s,
                r.startup_sd_s
            );
            let cy = y + bar_h / 2.0;
            let _ = write!(
                s,
                r##"<line x1="{:.1}" x2="{:.1}" y1="{cy:.1}" y2="{cy:.1}" stroke="#000"/>"##,
                x((r.startup_mean_s - r.startup_sd_s).max(0.0)),
                x(r.startup_mean_s + r.startup_sd_s)
            );
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}">{:.2} s</text>"#,
                x(max) + 8.0,
                cy + 4.0,
                r.startup_mean_s
            );
        }
        for run in runs.iter().filter(|x| x.run.scheduler == r.scheduler) {
            if let Some(m) = &run.measured {
                let _ = write!(
                    s,
                    r##"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="#000"/>"##,
                    x(m.startup_s),
                    y + bar_h / 2.0
                );
            }
        }
    }
    chart::end(s)
}

/// One chart per device and application: (name, file, SVG).
fn charts(res: &StartupResults) -> Vec<(String, String, String)> {
    let sp = &res.startup;
    row_groups(res)
        .into_iter()
        .map(|(d, app)| {
            let rows: Vec<&StartupSummary> = res
                .summary
                .iter()
                .filter(|s| s.device == d && s.app.as_deref() == app)
                .collect();
            let runs: Vec<&StartupRun> = res
                .runs
                .iter()
                .filter(|r| r.run.device == d && r.run.case.app.as_deref() == app)
                .collect();
            let name = match app {
                Some(a) => format!("{d}-{a}"),
                None => d.to_string(),
            };
            (
                name.clone(),
                format!("chart-startup-{name}.svg"),
                chart_svg(&name, &rows, &runs, sp.readers),
            )
        })
        .collect()
}

/// Writes report.md and one chart per device and application into `dir`.
pub fn write(dir: &Path, res: &StartupResults) -> Result<()> {
    let (h, sp) = (&res.header, &res.startup);
    let charts = charts(res);
    Page {
        header: h,
        schedulers: &res.schedulers,
        devices: &res.devices,
        rows: vec![
            (
                "application",
                apps_line(sp),
            ),
            (
                "background",
                format!(
                    "{} sequential readers (one fio process each, `{}`, {} MiB file each), \
                     {} s head start",
                    sp.readers, sp.reader_fio, sp.reader_file_mb, h.timing.ramp_s
                ),
            ),
            (
                "timing",
                format!(
                    "{} repeats; a start-up longer than {} s fails{}",
                    h.timing.repeats,
                    h.timing.runtime_s,
                    report::quick_mark(h)
                ),
            ),
            (
                "nr_requests",
                if sp.nr_requests == 0 {
                    "the device's default (twice its queue depth under a scheduler; \
                     `none`: the device depth)"
                        .to_string()
                } else {
                    format!(
                        "{} (set under every scheduler; `none` keeps the device depth)",
                        sp.nr_requests
                    )
                },
            ),
        ],
        method: "Each run: select the scheduler, drop caches, start the readers, let them run \
                 for the head start, drop caches again, then time the application's start-up: \
                 `tar -cf - app | cat > /dev/null` over the stand-in's folder, or a replay of a \
                 recorded start-up by `tools/startup-replay` (its own time, first operation to \
                 last task done) on files laid out by it (ext4, mounted noatime); then stop the readers, drop \
                 caches and time the same start-up with the device to itself (\"alone\": the floor \
                 no scheduler can beat). Runs are interleaved (every scheduler once per repeat, order rotated between \
                 repeats). \"vs X\" is the mean over repeats of this scheduler's start-up time \
                 divided by X's in the same repeat (below 1: faster than X); \"× alone\" is the mean \
                 over runs of the start-up time under the readers divided by the same run's time \
                 alone. Readers' MB/s is their aggregate over the whole run. During the loaded \
                 start-up the guest samples the device's tags every 20 ms (debugfs \
                 `hctx0/sched_tags`, `hctx0/tags` under none): \"all tags taken\" is the share of \
                 samples with every tag taken (a start-up request arriving then sleeps for a tag \
                 before the scheduler sees it), \"tags taken\" their mean."
            .into(),
        failed: report::failed_runs(&res.runs, |r| {
            format!("{} {} (repeat {})", r.device, r.scheduler, r.repeat)
        }),
        charts,
        tables: table_markdown(res),
        raw_runs: "per run under `runs/`: `<id>.json` (the start-up), `<id>.readers.json` (fio) \
                   and, for a replayed application, `<id>.replay.json` and `<id>.alone.json` \
                   (the replayer's lines: per task, its I/O wait).",
    }
    .write(dir)
}
