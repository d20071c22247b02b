//! The start-up latency benchmark (`kind = "startup"`;
//! configs/suites/startup.toml): how long an "application" takes to read
//! its files cold while greedy sequential readers keep the device busy —
//! the case BFQ's `low_latency` is for (the S suite's comm_startup_lat,
//! Phoronix's "Application Start-up Time").
//!
//! The guest side is `qemu/guest/startup.sh`; results.json is schema
//! `ironlift-startup/1` (docs/results-schema.md).

use super::fio::parse_fio;
use super::kind::{Kind, Suite};
use crate::chart::{self, esc};
use crate::devices::Device;
use crate::flags::QemuBench;
use crate::report::{self, num, pm, Page};
use crate::results::{Header, Planned, RunRecord, Timing};
use crate::stats::{mean_sd, mean_sd_of, paired_ratios, Ratio};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// The schedulers every start-up time is compared with, as ratios.
pub const REFERENCES: [&str; 2] = ["mq-deadline", "bfq"];

/// The `[startup]` table of a suite file.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StartupSpec {
    /// Files of the application stand-in ...
    pub app_files: u32,
    /// ... spread over this many folders ...
    pub app_dirs: u32,
    /// ... with sizes log-uniform between these (KiB).
    pub app_file_kb_min: u32,
    pub app_file_kb_max: u32,
    /// Greedy sequential readers, one fio process each, and the size of
    /// each one's file (they wrap round it).
    pub readers: u32,
    pub reader_file_mb: u32,
    /// fio arguments of a reader (direct I/O, so it always reaches the device).
    pub reader_fio: String,
    /// `queue/nr_requests`, set after selecting each scheduler (selecting
    /// one resets it to twice the device depth); not under `none`, whose
    /// depth is the device's and cannot grow.
    pub nr_requests: u32,
}

impl StartupSpec {
    pub fn validate(&self) -> Result<()> {
        if self.app_files == 0 || self.app_dirs == 0 || self.app_dirs > self.app_files {
            bail!("[startup]: need app_files >= app_dirs >= 1");
        }
        if self.app_file_kb_min == 0 || self.app_file_kb_min > self.app_file_kb_max {
            bail!("[startup]: need 1 <= app_file_kb_min <= app_file_kb_max");
        }
        if self.readers == 0 || self.reader_file_mb == 0 {
            bail!("[startup]: need readers >= 1 and reader_file_mb >= 1");
        }
        if self.reader_fio.contains(['\'', '\n']) {
            bail!("[startup]: reader_fio must not hold quotes or newlines");
        }
        if self.nr_requests == 0 {
            bail!("[startup]: nr_requests must be >= 1");
        }
        Ok(())
    }

    /// The suite's `[startup]` table, checked.
    pub fn of(suite: &Suite) -> Result<StartupSpec> {
        let spec: StartupSpec = suite
            .table::<Startup, _>("startup")?
            .context("kind = \"startup\" needs a [startup] table")?;
        spec.validate()?;
        Ok(spec)
    }
}

/// A start-up run has nothing to plan besides device and scheduler.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct StartupCase {}

/// The startup kind, for one `qemu-bench` invocation.
pub struct Startup {
    spec: StartupSpec,
}

/// One run's record in the results file.
pub type StartupRun = RunRecord<StartupCase, StartupMeasured>;

impl Kind for Startup {
    const NAME: &'static str = "startup";
    const SCHEMA: &'static str = "ironlift-startup/1";
    const TABLES: &'static [&'static str] = &["startup"];
    const ROTATE_BY_DEVICE: bool = true;

    type Case = StartupCase;
    type Measured = StartupMeasured;
    type Results = StartupResults;

    fn new(suite: &Suite, o: &QemuBench) -> Result<Self> {
        if o.workloads.is_some() {
            bail!("suite {} has no workloads to choose from", suite.name);
        }
        if o.profile || o.count_insns {
            bail!(
                "--profile and --count-insns measure fio runs; suite {} is a start-up suite",
                suite.name
            );
        }
        Ok(Startup {
            spec: StartupSpec::of(suite)?,
        })
    }

    fn check_schedulers(&self, schedulers: &[String], elevators: &[String]) -> Result<()> {
        for need in REFERENCES
            .iter()
            .map(|s| s.to_string())
            .chain(elevators.iter().cloned())
        {
            if !schedulers.contains(&need) {
                bail!(
                    "--schedulers must include {need}: start-up times are compared with \
                     mq-deadline and bfq, and every rust-* elevator built is measured"
                );
            }
        }
        Ok(())
    }

    fn cases(&self, _timing: &Timing) -> Vec<StartupCase> {
        vec![StartupCase {}]
    }

    fn tsv(_case: &StartupCase) -> String {
        "startup\t-".into()
    }

    /// job.env lines for startup.sh: the `[startup]` table, the readers'
    /// head start (`ramp_s`) and the cap on one start-up (`runtime_s`).
    fn job_env(&self, timing: &Timing) -> String {
        let sp = &self.spec;
        format!(
            "STARTUP_FILES={}\nSTARTUP_DIRS={}\nSTARTUP_FILE_KB_MIN={}\n\
             STARTUP_FILE_KB_MAX={}\nSTARTUP_READERS={}\nSTARTUP_READER_MB={}\n\
             STARTUP_READER_FIO='{}'\nSTARTUP_NR_REQUESTS={}\nSTARTUP_RAMP_S={}\nSTARTUP_CAP_S={}\n",
            sp.app_files,
            sp.app_dirs,
            sp.app_file_kb_min,
            sp.app_file_kb_max,
            sp.readers,
            sp.reader_file_mb,
            sp.reader_fio,
            sp.nr_requests,
            timing.ramp_s,
            timing.runtime_s
        )
    }

    /// Setup (mkfs, files) plus, per run, fio's start, the head start and a
    /// start-up of some seconds; the timeout allows every run its cap.
    fn duration(&self, runs: usize, timing: &Timing) -> (u64, u64) {
        let runs = runs as u64;
        let estimate = 120 + runs * (timing.ramp_s as u64 + 25);
        let timeout = 600 + runs * (timing.runtime_s as u64 + timing.ramp_s as u64 + 60);
        (estimate, timeout)
    }

    fn read_run(
        &self,
        runs_dir: &Path,
        run: &Planned<StartupCase>,
    ) -> Result<StartupMeasured, String> {
        read_run(runs_dir, &run.id)
    }

    fn results(
        &self,
        header: Header,
        schedulers: Vec<String>,
        devices: BTreeMap<String, Device>,
        runs: Vec<StartupRun>,
    ) -> StartupResults {
        StartupResults {
            header,
            startup: self.spec.clone(),
            summary: summarize(&runs, &schedulers),
            schedulers,
            devices,
            runs,
        }
    }

    fn write_report(dir: &Path, res: &StartupResults) -> Result<()> {
        write_report(dir, res)
    }

    fn table_markdown(res: &StartupResults) -> String {
        table_markdown(res)
    }
}

/// What one run measured.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct StartupMeasured {
    /// Seconds to read the application's files cold.
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_s: f64,
    /// The same, right after, with the readers stopped (the device to
    /// itself): the floor. Absent in results written before it was
    /// measured.
    #[serde(default)]
    pub alone_s: Option<f64>,
    pub app_files: u64,
    pub app_bytes: u64,
    /// Bytes the device read during the start-up (application + readers).
    pub window_read_bytes: u64,
    /// The readers' aggregate throughput over their whole run (head start
    /// and start-up), MB/s (10^6 B/s), from fio.
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub readers_mb_s: f64,
}

#[derive(Deserialize)]
struct GuestStartup {
    startup_s: f64,
    #[serde(default)]
    alone_s: Option<f64>,
    app_files: u64,
    app_bytes: u64,
    window_read_bytes: u64,
}

/// Parses a run's `<id>.json` (startup.sh) and `<id>.readers.json` (fio).
pub fn parse_run(startup_json: &str, readers_json: &str) -> Result<StartupMeasured> {
    let g: GuestStartup =
        serde_json::from_str(startup_json.trim()).context("the guest's start-up record")?;
    if !(g.startup_s.is_finite() && g.startup_s > 0.0) {
        bail!("implausible start-up time {}", g.startup_s);
    }
    if let Some(a) = g.alone_s {
        if !(a.is_finite() && a > 0.0) {
            bail!("implausible start-up time with no readers {a}");
        }
    }
    if g.app_files == 0 || g.app_bytes == 0 {
        bail!("the application had no files");
    }
    let readers = parse_fio(readers_json).context("the readers' fio output")?;
    Ok(StartupMeasured {
        startup_s: g.startup_s,
        alone_s: g.alone_s,
        app_files: g.app_files,
        app_bytes: g.app_bytes,
        window_read_bytes: g.window_read_bytes,
        readers_mb_s: readers.mb_s,
    })
}

/// Reads the guest's files for one run: the measurement, or why it failed.
pub fn read_run(runs_dir: &Path, id: &str) -> Result<StartupMeasured, String> {
    let base = runs_dir.join(id);
    if let Ok(e) = fs::read_to_string(base.with_extension("err")) {
        return Err(e.trim().to_string());
    }
    let Ok(s) = fs::read_to_string(base.with_extension("json")) else {
        return Err("no result: the guest stopped before this run".into());
    };
    let r = fs::read_to_string(runs_dir.join(format!("{id}.readers.json"))).unwrap_or_default();
    parse_run(&s, &r).map_err(|e| format!("{e:#}"))
}

/// Statistics over the repeats of one (device, scheduler).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct StartupSummary {
    pub device: String,
    pub scheduler: String,
    pub runs: usize,
    pub failed: usize,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_mean_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_sd_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_min_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_max_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub readers_mb_s_mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub readers_mb_s_sd: f64,
    /// Mean and sample standard deviation of the start-up time with no
    /// readers (null when not measured).
    #[serde(default)]
    pub alone_mean_s: Option<f64>,
    #[serde(default)]
    pub alone_sd_s: Option<f64>,
    /// The start-up time under the readers / with none, per run: how much
    /// the readers slow the start-up (null when not measured).
    #[serde(default)]
    pub slowdown: Option<Ratio>,
    /// This scheduler's start-up time / the reference's in the same
    /// repeat, keyed by reference scheduler (`mq-deadline`, `bfq`).
    pub ratio_to: BTreeMap<String, Ratio>,
}

/// Summaries per device (plan order) × scheduler (given order).
pub fn summarize(runs: &[StartupRun], schedulers: &[String]) -> Vec<StartupSummary> {
    let mut out = Vec::new();
    for dev in report::distinct(runs.iter().map(|r| r.run.device.as_str())) {
        let of = |s: &str| -> Vec<&StartupRun> {
            runs.iter()
                .filter(|r| r.run.device == dev && r.run.scheduler == s)
                .collect()
        };
        let by_repeat = |s: &str| -> BTreeMap<u32, f64> {
            of(s)
                .iter()
                .filter_map(|r| r.measured.as_ref().map(|m| (r.run.repeat, m.startup_s)))
                .collect()
        };
        let refs: Vec<(&str, BTreeMap<u32, f64>)> =
            REFERENCES.iter().map(|s| (*s, by_repeat(s))).collect();
        for s in schedulers {
            let rs = of(s);
            if rs.is_empty() {
                continue;
            }
            let ms: Vec<(u32, &StartupMeasured)> = rs
                .iter()
                .filter_map(|r| r.measured.as_ref().map(|m| (r.run.repeat, m)))
                .collect();
            let times: Vec<f64> = ms.iter().map(|(_, m)| m.startup_s).collect();
            let (startup_mean_s, startup_sd_s) = mean_sd(&times);
            let (readers_mb_s_mean, readers_mb_s_sd) =
                mean_sd(&ms.iter().map(|(_, m)| m.readers_mb_s).collect::<Vec<_>>());
            let alone: Vec<f64> = ms.iter().filter_map(|(_, m)| m.alone_s).collect();
            let (alone_mean_s, alone_sd_s) = match mean_sd_of(&alone) {
                Some((m, sd)) => (Some(m), Some(sd)),
                None => (None, None),
            };
            let slowdowns: Vec<f64> = ms
                .iter()
                .filter_map(|(_, m)| Some(m.startup_s / m.alone_s?))
                .collect();
            let mut ratio_to = BTreeMap::new();
            for (name, base) in &refs {
                let ratios = paired_ratios(ms.iter().map(|(rep, m)| (*rep, m.startup_s)), base);
                if let Some(r) = Ratio::of(&ratios) {
                    ratio_to.insert(name.to_string(), r);
                }
            }
            out.push(StartupSummary {
                device: dev.to_string(),
                scheduler: s.clone(),
                runs: rs.len(),
                failed: rs.len() - ms.len(),
                startup_mean_s,
                startup_sd_s,
                startup_min_s: times.iter().copied().fold(f64::NAN, f64::min),
                startup_max_s: times.iter().copied().fold(f64::NAN, f64::max),
                readers_mb_s_mean,
                readers_mb_s_sd,
                alone_mean_s,
                alone_sd_s,
                slowdown: Ratio::of(&slowdowns),
                ratio_to,
            });
        }
    }
    out
}

/// The whole results file (schema `ironlift-startup/1`). In its header,
/// `timing.runtime_s` caps one start-up and `timing.ramp_s` is the
/// readers' head start.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct StartupResults {
    #[serde(flatten)]
    pub header: Header,
    pub startup: StartupSpec,
    pub schedulers: Vec<String>,
    pub devices: BTreeMap<String, Device>,
    pub runs: Vec<StartupRun>,
    pub summary: Vec<StartupSummary>,
}

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

/// The results as Markdown tables, one per device.
pub fn table_markdown(res: &StartupResults) -> String {
    let mut s = String::new();
    let mut last: Option<&str> = None;
    let mut device_rows: Vec<&StartupSummary> = Vec::new();
    for row in &res.summary {
        if last != Some(row.device.as_str()) {
            s.push_str(&floor_line(&device_rows));
            device_rows.clear();
            let path = res
                .devices
                .get(&row.device)
                .map(|d| d.path.as_str())
                .unwrap_or("?");
            let _ = write!(
                s,
                "\n#### {} ({}) — start-up under {} readers\n\n\
                 | scheduler | start-up s (mean ± sd) | min–max s | vs mq-deadline | vs bfq | \
                 alone s (mean ± sd) | × alone | readers MB/s (mean ± sd) | runs |\n\
                 |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                row.device, path, res.startup.readers
            );
            last = Some(&row.device);
        }
        let failed = if row.failed > 0 {
            format!(" ({} failed)", row.failed)
        } else {
            String::new()
        };
        let alone = match (row.alone_mean_s, row.alone_sd_s) {
            (Some(m), Some(sd)) => pm(m, sd, 2),
            _ => "-".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {}–{} | {} | {} | {} | {} | {} | {}{} |",
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
        device_rows.push(row);
    }
    s.push_str(&floor_line(&device_rows));
    s
}

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

/// Writes report.md and one chart per device into `dir`.
pub fn write_report(dir: &Path, res: &StartupResults) -> Result<()> {
    let (h, sp) = (&res.header, &res.startup);
    let charts = report::distinct(res.summary.iter().map(|s| s.device.as_str()))
        .into_iter()
        .map(|d| {
            let rows: Vec<&StartupSummary> = res.summary.iter().filter(|s| s.device == d).collect();
            let runs: Vec<&StartupRun> = res.runs.iter().filter(|r| r.run.device == d).collect();
            (
                d.to_string(),
                format!("chart-startup-{d}.svg"),
                chart_svg(d, &rows, &runs, sp.readers),
            )
        })
        .collect();
    Page {
        header: h,
        schedulers: &res.schedulers,
        devices: &res.devices,
        rows: vec![
            (
                "application",
                format!(
                    "{} files in {} folders, {}–{} KiB each (log-uniform)",
                    sp.app_files, sp.app_dirs, sp.app_file_kb_min, sp.app_file_kb_max
                ),
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
                format!(
                    "{} (set under every scheduler; `none` keeps the device depth)",
                    sp.nr_requests
                ),
            ),
        ],
        method: "Each run: select the scheduler, drop caches, start the readers, let them run \
                 for the head start, drop caches again, then time `tar -cf - app | cat > /dev/null` \
                 over the application's folder (ext4, mounted noatime); then stop the readers, drop \
                 caches and time the same start-up with the device to itself (\"alone\": the floor \
                 no scheduler can beat). Runs are interleaved (every scheduler once per repeat, order rotated between \
                 repeats). \"vs X\" is the mean over repeats of this scheduler's start-up time \
                 divided by X's in the same repeat (below 1: faster than X); \"× alone\" is the mean \
                 over runs of the start-up time under the readers divided by the same run's time \
                 alone. Readers' MB/s is their aggregate over the whole run."
            .into(),
        failed: res
            .runs
            .iter()
            .filter(|r| !r.ok)
            .map(|r| {
                format!(
                    "{} {} (repeat {}): {}",
                    r.run.device,
                    r.run.scheduler,
                    r.run.repeat,
                    r.error.as_deref().unwrap_or("?")
                )
            })
            .collect(),
        charts,
        tables: table_markdown(res),
        raw_runs: "per run under `runs/`: `<id>.json` (the start-up) and `<id>.readers.json` (fio).",
    }
    .write(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::kind::plan;

    fn names(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|x| x.to_string()).collect()
    }

    fn suite() -> Suite {
        Suite::load(&crate::util::repo_root(), "startup").unwrap()
    }

    #[test]
    fn suite_file_parses_and_validates() {
        let s = suite();
        assert_eq!(s.kind, Startup::NAME);
        let sp = StartupSpec::of(&s).unwrap();
        let env = Startup { spec: sp.clone() }.job_env(&s.full);
        assert!(env.starts_with("STARTUP_FILES="));
        assert!(env.contains(&format!("STARTUP_CAP_S={}\n", s.full.runtime_s)));
        assert!(env.contains(&format!("STARTUP_RAMP_S={}\n", s.full.ramp_s)));
        assert!(env.contains(&format!("STARTUP_READER_FIO='{}'\n", sp.reader_fio)));
        let mut bad = sp.clone();
        bad.app_file_kb_min = bad.app_file_kb_max + 1;
        assert!(bad.validate().is_err());
        bad = sp;
        bad.reader_fio = "--name='x'".into();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn a_startup_suite_needs_its_table_and_no_other() {
        let head = "name = \"x\"\nkind = \"startup\"\ndescription = \"d\"\ndevices = [\"nullb\"]\n\
                    [full]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n\
                    [quick]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n";
        let st = "[startup]\napp_files = 2\napp_dirs = 1\napp_file_kb_min = 4\n\
                  app_file_kb_max = 8\nreaders = 1\nreader_file_mb = 1\n\
                  reader_fio = \"--rw=read\"\nnr_requests = 8\n";
        let wl = "[[workload]]\nname = \"r\"\nfio = \"--rw=read\"\n";
        let s = Suite::parse(&format!("{head}{st}")).unwrap();
        assert_eq!(s.kind, Startup::NAME);
        assert_eq!(StartupSpec::of(&s).unwrap().app_files, 2);
        assert!(StartupSpec::of(&Suite::parse(head).unwrap()).is_err());
        assert!(StartupSpec::of(&Suite::parse(&format!("{head}{st}{wl}")).unwrap()).is_err());
        let extra = st.replace("nr_requests = 8\n", "nr_requests = 8\nmore = 1\n");
        assert!(StartupSpec::of(&Suite::parse(&format!("{head}{extra}")).unwrap()).is_err());
    }

    #[test]
    fn plan_rotates_and_covers_every_scheduler_each_repeat() {
        let sch = names(&["mq-deadline", "kyber", "bfq"]);
        let p = plan(&names(&["nullb-slow"]), &[StartupCase {}], &sch, 3, true);
        assert_eq!(p.len(), 9);
        for (r, block) in p.chunks(3).enumerate() {
            let mut got: Vec<&str> = block.iter().map(|x| x.scheduler.as_str()).collect();
            assert!(block.iter().all(|x| x.repeat == r as u32));
            got.sort();
            assert_eq!(got, ["bfq", "kyber", "mq-deadline"]);
        }
        assert_ne!(p[0].scheduler, p[3].scheduler);
        assert_eq!(p[4].id, "0004");
        // A second device starts one further along the rotation.
        let p = plan(&names(&["a", "b"]), &[StartupCase {}], &sch, 1, true);
        assert_eq!(
            (p[0].scheduler.as_str(), p[3].scheduler.as_str()),
            ("mq-deadline", "kyber")
        );
        assert_eq!(Startup::tsv(&StartupCase {}), "startup\t-");
    }

    const FIO: &str =
        r#"{"jobs":[{"error":0,"read":{"iops":200,"bw":12800,"clat_ns":{"mean":1e6}}}]}"#;

    #[test]
    fn run_files_are_parsed_and_checked() {
        let g = r#"{"startup_s": 2.5, "alone_s": 0.5, "app_files": 150, "app_bytes": 3000000, "window_read_bytes": 90000000}"#;
        let m = parse_run(g, FIO).unwrap();
        assert_eq!(m.startup_s, 2.5);
        assert_eq!(m.alone_s, Some(0.5));
        // Results of guests that did not measure it yet.
        let old = r#"{"startup_s": 2.5, "app_files": 150, "app_bytes": 3000000, "window_read_bytes": 90000000}"#;
        assert_eq!(parse_run(old, FIO).unwrap().alone_s, None);
        assert!(parse_run(
            r#"{"startup_s": 2.5, "alone_s": 0, "app_files": 1, "app_bytes": 1, "window_read_bytes": 0}"#,
            FIO
        )
        .is_err());
        assert_eq!(m.app_files, 150);
        assert!((m.readers_mb_s - 12800.0 * 1024.0 / 1e6).abs() < 1e-9);
        assert!(parse_run(g, "").is_err());
        assert!(parse_run(
            r#"{"startup_s": 0, "app_files": 1, "app_bytes": 1, "window_read_bytes": 0}"#,
            FIO
        )
        .is_err());
        assert!(parse_run(r#"{"startup_s": 1}"#, FIO).is_err());
    }

    fn run(rep: u32, s: &str, t: Option<f64>) -> StartupRun {
        RunRecord::new(
            Planned {
                id: String::new(),
                order: 0,
                repeat: rep,
                device: "nullb-slow".into(),
                scheduler: s.into(),
                case: StartupCase {},
            },
            t.map(|t| StartupMeasured {
                startup_s: t,
                alone_s: Some(t / 4.0),
                app_files: 1,
                app_bytes: 1,
                window_read_bytes: 0,
                readers_mb_s: 10.0,
            })
            .ok_or_else(|| "x".to_string()),
        )
    }

    #[test]
    fn ratios_pair_repeats_and_skip_failed_references() {
        let runs = vec![
            run(0, "mq-deadline", Some(10.0)),
            run(0, "bfq", Some(2.0)),
            run(0, "kyber", Some(8.0)),
            run(1, "mq-deadline", Some(20.0)),
            run(1, "bfq", Some(3.0)),
            run(1, "kyber", Some(10.0)),
            run(2, "mq-deadline", None),
            run(2, "bfq", Some(4.0)),
            run(2, "kyber", Some(9.0)),
        ];
        let s = summarize(&runs, &names(&["mq-deadline", "kyber", "bfq"]));
        assert_eq!(
            s.iter().map(|x| x.scheduler.as_str()).collect::<Vec<_>>(),
            ["mq-deadline", "kyber", "bfq"]
        );
        let md = &s[0];
        assert_eq!((md.runs, md.failed), (3, 1));
        assert!((md.startup_mean_s - 15.0).abs() < 1e-12);
        let r = &md.ratio_to["mq-deadline"];
        assert_eq!((r.mean, r.sd, r.n), (1.0, 0.0, 2));
        let bfq = &s[2];
        // (2/10 + 3/20) / 2; repeat 2 has no mq-deadline to pair with.
        let r = &bfq.ratio_to["mq-deadline"];
        assert_eq!(r.n, 2);
        assert!((r.mean - 0.175).abs() < 1e-12);
        let k = &s[1].ratio_to["bfq"];
        assert_eq!(k.n, 3);
        assert!((k.mean - (4.0 + 10.0 / 3.0 + 2.25) / 3.0).abs() < 1e-12);
        assert_eq!((bfq.startup_min_s, bfq.startup_max_s), (2.0, 4.0));
        let t = table_markdown(&StartupResults {
            header: Header {
                schema: Startup::SCHEMA.into(),
                suite: "startup".into(),
                suite_description: String::new(),
                quick: false,
                started: String::new(),
                finished: String::new(),
                kernel_release: String::new(),
                kernel_key: String::new(),
                accel: "tcg".into(),
                guest_clocksource: String::new(),
                host: String::new(),
                guest_cpus: 2,
                guest_memory_mb: 2048,
                timing: Timing {
                    repeats: 3,
                    runtime_s: 60,
                    ramp_s: 1,
                },
            },
            startup: StartupSpec::of(&suite()).unwrap(),
            schedulers: names(&["mq-deadline", "kyber", "bfq"]),
            devices: BTreeMap::new(),
            runs: runs.clone(),
            summary: s.clone(),
        });
        assert!(t.contains("| mq-deadline | 15.00 ± 7.07 | 10.00–20.00 | 1.00 ± 0.00 |"));
        // Every run's floor was a quarter of its loaded time.
        assert!(t.contains("| 3.75 ± 1.77 | 4.00 ± 0.00 |"), "{t}");
        assert_eq!(md.slowdown.as_ref().map(|r| r.n), Some(2));
        assert!(t.contains("| 3 (1 failed) |"));
        // Alone: the mean over the 8 measured runs (each a quarter of its
        // loaded time), 16.5 / 8 s, against mq-deadline's 15 s.
        assert!(
            t.contains("Floor: the start-up alone takes 2.06 s, 0.14 × mq-deadline's 15.00 s"),
            "{t}"
        );
        let (x, alone, mq) = floor_vs_mq_deadline(&s.iter().collect::<Vec<_>>()).unwrap();
        assert!(
            (alone - 16.5 / 8.0).abs() < 1e-12 && mq == 15.0 && (x - alone / 15.0).abs() < 1e-12
        );
        // No floor without mq-deadline, or without a time alone.
        assert!(floor_vs_mq_deadline(&s[1..].iter().collect::<Vec<_>>()).is_none());
        let mut no_alone = s.clone();
        for r in &mut no_alone {
            r.alone_mean_s = None;
        }
        assert!(floor_vs_mq_deadline(&no_alone.iter().collect::<Vec<_>>()).is_none());
        let rows: Vec<&StartupSummary> = s.iter().collect();
        let rs: Vec<&StartupRun> = runs.iter().collect();
        let svg = chart_svg("nullb-slow", &rows, &rs, 4);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 8);
    }

    #[test]
    fn a_scheduler_with_no_good_run_survives_the_results_file() {
        // Its means are NaN, which serde_json writes as null: `cargo xtask
        // report` must still read the file back.
        let runs = vec![run(0, "mq-deadline", Some(10.0)), run(0, "bfq", None)];
        let s = summarize(&runs, &names(&["mq-deadline", "bfq"]));
        assert!(s[1].startup_mean_s.is_nan());
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"startup_mean_s\":null"), "{text}");
        let back: Vec<StartupSummary> = serde_json::from_str(&text).unwrap();
        assert!(back[1].startup_mean_s.is_nan());
        assert_eq!(back[0].startup_mean_s, 10.0);
    }

    #[test]
    fn references_and_elevators_must_be_measured() {
        let k = Startup {
            spec: StartupSpec::of(&suite()).unwrap(),
        };
        let el = names(&["rust-bfq"]);
        assert!(k
            .check_schedulers(&names(&["mq-deadline", "bfq", "rust-bfq"]), &el)
            .is_ok());
        assert!(k
            .check_schedulers(&names(&["mq-deadline", "bfq"]), &el)
            .is_err());
        assert!(k
            .check_schedulers(&names(&["bfq", "rust-bfq"]), &el)
            .is_err());
        let t = suite().full;
        assert_eq!(
            k.duration(6, &t),
            (120 + 6 * (26 + 25), 600 + 6 * (120 + 26 + 60))
        );
    }
}
