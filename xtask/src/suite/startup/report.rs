//! The start-up suite's report: the tables with each device's floor, a
//! chart per device, report.md.

use super::results::{StartupResults, StartupRun, StartupSummary};
use super::spec::StartupSpec;
use crate::chart;
use crate::report::{self, num, pm, Page};
use crate::stats::Ratio;
use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
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

/// A cell of the summary: device, application, load.
type CellRef<'a> = (&'a str, Option<&'a str>, Option<&'a str>);

/// The cells of the summary rows, in order.
fn row_groups(res: &StartupResults) -> Vec<CellRef<'_>> {
    let mut out: Vec<CellRef<'_>> = Vec::new();
    for r in &res.summary {
        let g = (r.device.as_str(), r.app.as_deref(), r.load.as_deref());
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

/// The summary rows of a cell.
fn cell_rows<'a>(
    res: &'a StartupResults,
    (dev, app, load): CellRef<'_>,
) -> Vec<&'a StartupSummary> {
    res.summary
        .iter()
        .filter(|r| r.device == dev && r.app.as_deref() == app && r.load.as_deref() == load)
        .collect()
}

/// What a table's heading says the background is: the named load's
/// readers and writers, or the implicit load's readers.
fn load_words(sp: &StartupSpec, load: Option<&str>) -> String {
    let Some(l) = load.and_then(|n| sp.load.iter().find(|l| l.name == n)) else {
        return format!("{} readers", sp.readers.unwrap_or(0));
    };
    let pattern = if l.background == "rand" {
        "random"
    } else {
        "sequential"
    };
    if l.writers > 0 {
        format!(
            "{} ({} {pattern} readers and {} writers)",
            l.name, l.readers, l.writers
        )
    } else {
        format!("{} ({} {pattern} readers)", l.name, l.readers)
    }
}

/// The matrix at a glance (suites with `[[startup.load]]`): per device, a
/// row per application and load, a column per scheduler, each cell the
/// mean start-up time under the load and alone; then the seed's figures
/// beside ours.
fn matrix_markdown(res: &StartupResults) -> String {
    let sp = &res.startup;
    if sp.load.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let mut devices: Vec<&str> = Vec::new();
    for (d, _, _) in row_groups(res) {
        if !devices.contains(&d) {
            devices.push(d);
        }
    }
    for dev in devices {
        let _ = write!(
            s,
            "\n#### {dev}: start-up s under the load / alone (mean over repeats)\n\n\
             | application | load | background | mix | {} |\n|---|---|---|---|{}\n",
            res.schedulers.join(" | "),
            "---:|".repeat(res.schedulers.len())
        );
        for cell in row_groups(res).into_iter().filter(|c| c.0 == dev) {
            let rows = cell_rows(res, cell);
            let l = cell.2.and_then(|n| sp.load.iter().find(|l| l.name == n));
            let _ = write!(
                s,
                "| {} | {} | {} | {} |",
                cell.1.unwrap_or("tar"),
                cell.2.unwrap_or("-"),
                l.map_or("-", |l| l.background.as_str()),
                l.map_or("-", |l| l.mix.as_str())
            );
            for sched in &res.schedulers {
                let v = match rows.iter().find(|r| &r.scheduler == sched) {
                    Some(r) if r.startup_mean_s.is_finite() => format!(
                        "{} / {}",
                        num(r.startup_mean_s, 2),
                        r.alone_mean_s.map_or("-".into(), |a| num(a, 2))
                    ),
                    Some(_) => "failed".into(),
                    None => "-".into(),
                };
                let _ = write!(s, " {v} |");
            }
            s.push('\n');
        }
    }
    s.push_str(&super::seeds::beside_ours(res));
    s
}

/// The results as Markdown tables, one per cell (device, application,
/// load), after the matrix overview when the suite has loads.
pub fn table_markdown(res: &StartupResults) -> String {
    let mut s = matrix_markdown(res);
    for cell in row_groups(res) {
        let (dev, app, load) = cell;
        let rows = cell_rows(res, cell);
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
        let writing = rows.iter().any(|r| r.writers_mb_s_mean.is_some());
        let (w_head, w_rule) = if writing {
            (" writers MB/s |", "---:|")
        } else {
            ("", "")
        };
        let _ = write!(
            s,
            "\n#### {dev} ({path}) — {what} under {}\n\n\
             | scheduler | start-up s (mean ± sd) | min–max s | vs mq-deadline | vs bfq | \
             alone s (mean ± sd) | × alone | readers MB/s (mean ± sd) |{w_head}{tag_head} runs |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|{w_rule}{tag_rule}---:|\n",
            load_words(&res.startup, load)
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
            let writers = if writing {
                format!(
                    " {} |",
                    row.writers_mb_s_mean.map_or("-".into(), |x| num(x, 2))
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "| {} | {} | {}–{} | {} | {} | {} | {} | {} |{writers}{tags} {}{} |",
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

/// What the report says the background load is, or the loads are.
fn background_line(sp: &StartupSpec, ramp_s: u32) -> String {
    if sp.load.is_empty() {
        return format!(
            "{} sequential readers (one fio process each, `{}`, {} MiB file each), \
             {ramp_s} s head start",
            sp.readers.unwrap_or(0),
            sp.reader_fio.as_deref().unwrap_or(""),
            sp.reader_file_mb
        );
    }
    let loads: Vec<String> = sp
        .load
        .iter()
        .map(|l| {
            let mut x = format!("`{}`: {} readers `{}`", l.name, l.readers, l.reader_fio);
            if let Some(w) = &l.writer_fio {
                x.push_str(&format!(", {} writers `{w}`", l.writers));
                if l.sync_s > 0 {
                    x.push_str(&format!(", `sync` every {} s", l.sync_s));
                }
            }
            x
        })
        .collect();
    format!(
        "{} (fio jobs of one fio process, each on its own {} MiB file); {ramp_s} s head start",
        loads.join("; "),
        sp.reader_file_mb
    )
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

// Long: one chart drawn in order (axes, then per scheduler its label,
// bar, whisker, dots and mean), the row's coordinates shared by each.
/// A horizontal bar chart of start-up time per scheduler (mean, whiskers
/// at ± one standard deviation, each run as a dot).
pub fn chart_svg(
    device: &str,
    rows: &[&StartupSummary],
    runs: &[&StartupRun],
    background: &str,
) -> Result<String> {
    let n = rows.len().max(1);
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
    let height = 80 + 32 * n as u32;
    let title = format!("{device}: start-up time under {background} (s; mean ± sd, dots = runs)");
    // A matrix cell's title (device, application, load) is long: smaller
    // type keeps it inside the chart.
    let title_size = if title.chars().count() > 70 { 13 } else { 17 };
    chart::svg(710, height, |root| {
        let mut c = ChartBuilder::on(root)
            .caption(title, ("sans-serif", title_size))
            .margin(10)
            .margin_right(130)
            .x_label_area_size(25)
            .y_label_area_size(100)
            .build_cartesian_2d(0.0..max, 0.0..n as f64)?;
        c.configure_mesh()
            .label_style(("sans-serif", 13))
            .light_line_style(TRANSPARENT)
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(6)
            .draw()?;
        let font = ("sans-serif", 13).into_font().into_text_style(root);
        let left = font.pos(Pos::new(HPos::Right, VPos::Center));
        let right = font.pos(Pos::new(HPos::Left, VPos::Center));
        for (i, r) in rows.iter().enumerate() {
            let y = (n - 1 - i) as f64 + 0.5;
            let (lx, ly) = c.backend_coord(&(0.0, y));
            root.draw(&Text::new(r.scheduler.clone(), (lx - 6, ly), left.clone()))?;
            if r.startup_mean_s.is_finite() {
                c.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y - 0.35), (r.startup_mean_s, y + 0.35)],
                    chart::rgb(i).mix(0.8).filled(),
                )))?;
                c.draw_series(std::iter::once(PathElement::new(
                    vec![
                        ((r.startup_mean_s - r.startup_sd_s).max(0.0), y),
                        (r.startup_mean_s + r.startup_sd_s, y),
                    ],
                    BLACK,
                )))?;
                let (mx, my) = c.backend_coord(&(max, y));
                root.draw(&Text::new(
                    format!("{:.2} s", r.startup_mean_s),
                    (mx + 8, my),
                    right.clone(),
                ))?;
            }
            c.draw_series(
                runs.iter()
                    .filter(|x| x.run.scheduler == r.scheduler)
                    .filter_map(|run| run.measured.as_ref())
                    .map(|m| Circle::new((m.startup_s, y), 3, BLACK.filled())),
            )?;
        }
        Ok(())
    })
}

/// One chart per device and application: (name, file, SVG).
fn charts(res: &StartupResults) -> Result<Vec<(String, String, String)>> {
    let sp = &res.startup;
    row_groups(res)
        .into_iter()
        .map(|cell| {
            let (d, app, load) = cell;
            let rows = cell_rows(res, cell);
            let runs: Vec<&StartupRun> = res
                .runs
                .iter()
                .filter(|r| {
                    r.run.device == d
                        && r.run.case.app.as_deref() == app
                        && r.run.case.load.as_deref() == load
                })
                .collect();
            let name = [Some(d), app, load]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("-");
            let background = match load {
                Some(_) => load_words(sp, load),
                None => format!("{} sequential readers", sp.readers.unwrap_or(0)),
            };
            Ok((
                name.clone(),
                format!("chart-startup-{name}.svg"),
                chart_svg(&name, &rows, &runs, &background)?,
            ))
        })
        .collect()
}

/// Writes report.md and one chart per device and application into `dir`.
pub fn write(dir: &Path, res: &StartupResults) -> Result<()> {
    let (h, sp) = (&res.header, &res.startup);
    let charts = charts(res)?;
    Page {
        header: h,
        schedulers: &res.schedulers,
        devices: &res.devices,
        rows: vec![
            (
                "application",
                apps_line(sp),
            ),
            ("background", background_line(sp, h.timing.ramp_s)),
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
            let cell: Vec<&str> = [r.case.app.as_deref(), r.case.load.as_deref()]
                .into_iter()
                .flatten()
                .collect();
            let cell = if cell.is_empty() {
                String::new()
            } else {
                format!(" {}", cell.join(" under "))
            };
            format!("{} {}{cell} (repeat {})", r.device, r.scheduler, r.repeat)
        }),
        charts,
        tables: table_markdown(res),
        raw_runs: "per run under `runs/`: `<id>.json` (the start-up), `<id>.readers.json` (fio) \
                   and, for a replayed application, `<id>.replay.json` and `<id>.alone.json` \
                   (the replayer's lines: per task, its I/O wait).",
    }
    .write(dir)
}
