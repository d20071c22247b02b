//! fio suites (`kind = "fio"`, the default; configs/suites/fio-basic.toml):
//! each `[[workload]]` is an fio run on each device under each scheduler.
//! The guest side is `qemu/guest/fio.sh`; results.json is schema
//! `ironlift-bench/1` (docs/results-schema.md).

use super::kind::{Kind, Suite};
use crate::chart::{self, esc};
use crate::devices::Device;
use crate::flags::QemuBench;
use crate::guest::Prepared;
use crate::insns;
use crate::report::{self, num, Page};
use crate::results::{Header, Planned, RunRecord, Timing};
use crate::stats::{mean_of_some, mean_sd, mean_sd_of, paired_ratios};
use crate::util::note;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The perf the guest runs for `--profile` (the host's, over the 9p root).
const PERF: &str = "/usr/bin/perf";

/// A `[[workload]]`: fio's arguments besides the device, time and output.
#[derive(Deserialize, Serialize, Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub fio: String,
}

/// A planned run's workload and its whole fio command line.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct FioCase {
    pub workload: String,
    pub fio_args: String,
}

/// The fio kind, for one `qemu-bench` invocation.
pub struct Fio {
    workloads: Vec<Workload>,
    profile: bool,
    count_insns: bool,
    /// The insn_count plugin (`--count-insns`).
    plugin: Option<PathBuf>,
    /// The guest's kernel and module symbols (`--count-insns`).
    symbols: Option<insns::Symbols>,
}

impl Fio {
    /// The suite's workloads, all or those named.
    fn workloads(suite: &Suite, want: Option<&[String]>) -> Result<Vec<Workload>> {
        let mut workloads: Vec<Workload> = suite.table::<Fio, _>("workload")?.unwrap_or_default();
        if workloads.is_empty() {
            bail!("a fio suite needs [[workload]] entries");
        }
        if let Some(want) = want {
            for w in want {
                if !workloads.iter().any(|x| &x.name == w) {
                    bail!(
                        "suite {} has no workload {w:?}; it has: {}",
                        suite.name,
                        workloads
                            .iter()
                            .map(|x| x.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
            }
            workloads.retain(|x| want.contains(&x.name));
        }
        Ok(workloads)
    }
}

/// One run's record in the results file.
pub type RunResult = RunRecord<FioCase, Measured>;

impl Kind for Fio {
    const NAME: &'static str = "fio";
    const SCHEMA: &'static str = "ironlift-bench/1";
    const TABLES: &'static [&'static str] = &["workload"];
    const CASES: Option<&'static str> = Some("workloads");

    type Case = FioCase;
    type Measured = Measured;
    type Results = Results;

    fn new(suite: &Suite, o: &QemuBench) -> Result<Self> {
        let workloads = Fio::workloads(suite, o.workloads.as_deref())?;
        if o.profile && !Path::new(PERF).exists() {
            bail!(
                "--profile needs {PERF}, which the guest runs from the host's root: \
                 install it with `apt-get install linux-perf` (as root)"
            );
        }
        Ok(Fio {
            workloads,
            profile: o.profile,
            count_insns: o.count_insns,
            plugin: None,
            symbols: None,
        })
    }

    fn prepared(&mut self, o: &QemuBench, p: &Prepared) -> Result<()> {
        if self.count_insns {
            if p.accel != crate::qemu::Accel::Tcg {
                bail!("--count-insns needs TCG (it is a TCG plugin): add --accel tcg");
            }
            self.plugin = Some(insns::plugin(&o.k.kernel_opts().cache)?);
        }
        Ok(())
    }

    fn check_schedulers(&self, schedulers: &[String], _elevators: &[String]) -> Result<()> {
        if !schedulers.iter().any(|s| s == "none") {
            bail!("--schedulers must include none: every figure is a ratio to it");
        }
        Ok(())
    }

    fn cases(&self, timing: &Timing) -> Vec<FioCase> {
        self.workloads
            .iter()
            .map(|w| {
                let mut args = format!(
                    "--name={} {} --time_based --runtime={} --group_reporting \
                     --percentile_list=50:99:99.9",
                    w.name, w.fio, timing.runtime_s
                );
                if timing.ramp_s > 0 {
                    args.push_str(&format!(" --ramp_time={}", timing.ramp_s));
                }
                FioCase {
                    workload: w.name.clone(),
                    fio_args: args,
                }
            })
            .collect()
    }

    fn tsv(case: &FioCase) -> String {
        format!("{}\t{}", case.workload, case.fio_args)
    }

    fn job_env(&self, _timing: &Timing) -> String {
        if self.profile {
            format!("PERF={PERF}\n")
        } else if self.count_insns {
            "INSN_COUNT=1\n".to_string()
        } else {
            String::new()
        }
    }

    fn out_tag(&self, _suite: &Suite) -> Option<String> {
        None
    }

    fn duration(&self, runs: usize, timing: &Timing) -> (u64, u64) {
        let per_run = timing.runtime_s + timing.ramp_s + 6;
        let estimate = runs as u64 * per_run as u64 + 60;
        (estimate, estimate * 2 + 300)
    }

    fn qemu_extra(&self, out: &Path) -> Result<Vec<String>> {
        match &self.plugin {
            Some(so) => insns::qemu_args(so, out),
            None => Ok(Vec::new()),
        }
    }

    fn guest_done(&mut self, p: &Prepared, out: &Path) -> Result<()> {
        if self.count_insns {
            self.symbols = Some(insns::Symbols::load(
                &p.kernel.build.join("System.map"),
                &fs::read_to_string(out.join("modules.txt")).unwrap_or_default(),
                &p.modules,
            )?);
        }
        Ok(())
    }

    fn read_run(&self, runs_dir: &Path, run: &Planned<FioCase>) -> Result<Measured, String> {
        let base = runs_dir.join(&run.id);
        if let Ok(e) = fs::read_to_string(base.with_extension("err")) {
            return Err(e.trim().to_string());
        }
        let Ok(j) = fs::read_to_string(base.with_extension("json")) else {
            return Err("no result: the guest stopped before this run".into());
        };
        let mut m = parse_fio(&j).map_err(|e| format!("{e:#}"))?;
        if let Ok(c) = fs::read_to_string(base.with_extension("counters")) {
            add_counters(&mut m, &c);
        }
        if let Some(syms) = &self.symbols {
            m.insns = count_insns(&base, syms, &run.scheduler);
        }
        Ok(m)
    }

    fn results(
        &self,
        header: Header,
        schedulers: Vec<String>,
        devices: BTreeMap<String, Device>,
        runs: Vec<RunResult>,
    ) -> Results {
        Results {
            header,
            summary: summarize(&runs, &schedulers),
            schedulers,
            devices,
            workloads: self.workloads.clone(),
            runs,
        }
    }

    fn reread(res: &mut Results) {
        // The summary is derived from the runs: recompute it, so that a
        // report of an older file has every column this version computes.
        res.summary = summarize(&res.runs, &res.schedulers);
    }

    fn write_report(dir: &Path, res: &Results) -> Result<()> {
        write_report(dir, res)
    }

    fn table_markdown(res: &Results) -> String {
        table_markdown(res)
    }
}

/// A run's instruction counts (`<base>.insns`, from the plugin), per
/// request; the listing goes to `<base>.insns.txt`. A run without counts,
/// or whose counts cannot be read, gets none, and says why.
fn count_insns(base: &Path, syms: &insns::Symbols, scheduler: &str) -> Option<insns::InsnCount> {
    let dump = match fs::read_to_string(base.with_extension("insns")) {
        Ok(d) => d,
        Err(e) => {
            note(&format!("{}: no instruction counts ({e})", base.display()));
            return None;
        }
    };
    match insns::summarize(&dump, syms, scheduler, &base.with_extension("insns.txt")) {
        Ok(c) => Some(c),
        Err(e) => {
            note(&format!("{}: instruction counts: {e:#}", base.display()));
            None
        }
    }
}

/// What one fio run measured.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct Measured {
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub iops: f64,
    /// MB/s (10^6 bytes per second).
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mb_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_mean_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p50_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p99_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p999_us: f64,
    /// fio's context switches (`ctx`, all jobs) per 1000 I/Os: how often
    /// the issuing threads slept or were preempted. A scheduler that holds
    /// requests back, or wakes a worker per request, shows here first.
    #[serde(default)]
    pub ctx_per_kio: Option<f64>,
    /// I/Os fio completed, all jobs and directions.
    #[serde(default)]
    pub ios: Option<f64>,
    /// Context switches of the whole guest (`/proc/stat` `ctxt`, every
    /// CPU, workers and idle included) per 1000 I/Os.
    #[serde(default)]
    pub sys_ctx_per_kio: Option<f64>,
    /// Kernel instructions per request (`--count-insns`).
    #[serde(default)]
    pub insns: Option<insns::InsnCount>,
}

fn pct(clat: &serde_json::Value, key: &str) -> f64 {
    clat.get("percentile")
        .and_then(|p| p.get(key))
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN)
        / 1000.0
}

/// Parses fio's JSON output (one group-reported job).
pub fn parse_fio(text: &str) -> Result<Measured> {
    // fio may print notes before the JSON object.
    let start = text.find('{').context("no JSON object in fio output")?;
    let v: serde_json::Value = serde_json::from_str(&text[start..]).context("fio JSON")?;
    let job = v
        .get("jobs")
        .and_then(|j| j.get(0))
        .context("fio JSON has no jobs")?;
    if let Some(e) = job.get("error").and_then(|e| e.as_i64()) {
        if e != 0 {
            bail!("fio reported error {e}");
        }
    }
    let mut m = Measured::default();
    let mut ios = 0.0;
    let mut lat_from: Option<&serde_json::Value> = None;
    let mut best_ios = 0.0;
    for dir in ["read", "write", "trim"] {
        let d = match job.get(dir) {
            Some(d) => d,
            None => continue,
        };
        let iops = d.get("iops").and_then(|x| x.as_f64()).unwrap_or(0.0);
        ios += d.get("total_ios").and_then(|x| x.as_f64()).unwrap_or(0.0);
        let bw_kib = d.get("bw").and_then(|x| x.as_f64()).unwrap_or(0.0);
        m.iops += iops;
        m.mb_s += bw_kib * 1024.0 / 1e6;
        if iops > best_ios {
            best_ios = iops;
            lat_from = d.get("clat_ns");
        }
    }
    if let Some(c) = lat_from {
        m.lat_mean_us = c.get("mean").and_then(|x| x.as_f64()).unwrap_or(f64::NAN) / 1000.0;
        m.lat_p50_us = pct(c, "50.000000");
        m.lat_p99_us = pct(c, "99.000000");
        m.lat_p999_us = pct(c, "99.900000");
    }
    if m.iops <= 0.0 {
        bail!("fio measured no I/O");
    }
    m.ios = Some(ios).filter(|&n| n > 0.0);
    m.ctx_per_kio = per_kio(job.get("ctx").and_then(|x| x.as_f64()), m.ios);
    Ok(m)
}

/// `count` per 1000 of the run's I/Os, if both are known.
fn per_kio(count: Option<f64>, ios: Option<f64>) -> Option<f64> {
    Some(count? / ios? * 1000.0)
}

/// Adds the guest's counters over a run (`runs/<id>.counters`, written by
/// `fio.sh`: one `name change` per line) to what fio measured, per 1000
/// I/Os. Unknown names and unreadable lines are skipped: the counters
/// explain a result, they are not one.
pub fn add_counters(m: &mut Measured, text: &str) {
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(name), Some(Ok(v))) = (it.next(), it.next().map(str::parse::<f64>)) else {
            continue;
        };
        if name == "ctx_switches" {
            m.sys_ctx_per_kio = per_kio(Some(v), m.ios);
        }
    }
}

/// Statistics over the repeats of one (device, workload, scheduler).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Summary {
    pub device: String,
    pub workload: String,
    pub scheduler: String,
    pub runs: usize,
    pub failed: usize,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub iops_mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub iops_sd: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mb_s_mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p50_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p99_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p999_us: f64,
    /// Mean over repeats of [`Measured::ctx_per_kio`].
    #[serde(default)]
    pub ctx_per_kio: Option<f64>,
    /// Mean over repeats of [`Measured::sys_ctx_per_kio`].
    #[serde(default)]
    pub sys_ctx_per_kio: Option<f64>,
    /// Mean over repeats of (this scheduler's IOPS / `none`'s IOPS in the
    /// same repeat), and its standard deviation.
    pub ratio_to_none: Option<f64>,
    pub ratio_sd: Option<f64>,
    /// For a Rust scheduler, the C scheduler it reimplements
    /// ([`counterpart`]), and the mean and standard deviation over repeats
    /// of (this scheduler's IOPS / the counterpart's in the same repeat).
    #[serde(default)]
    pub counterpart: Option<String>,
    #[serde(default)]
    pub ratio_to_counterpart: Option<f64>,
    #[serde(default)]
    pub counterpart_sd: Option<f64>,
    /// With `--count-insns`: mean and standard deviation over repeats of
    /// the kernel's instructions per request, and the mean of the
    /// scheduler's own share ([`insns::InsnCount`]).
    #[serde(default)]
    pub kernel_insns: Option<f64>,
    #[serde(default)]
    pub kernel_insns_sd: Option<f64>,
    #[serde(default)]
    pub scheduler_insns: Option<f64>,
}

/// The C scheduler a Rust one reimplements, by name: `rust-X` stands for
/// `mq-X` if that was measured, else for `X` (`rust-deadline` for
/// `mq-deadline`, `rust-bfq` for `bfq`).
pub fn counterpart(scheduler: &str, schedulers: &[String]) -> Option<String> {
    let base = scheduler.strip_prefix("rust-")?;
    [format!("mq-{base}"), base.to_string()]
        .into_iter()
        .find(|c| schedulers.contains(c))
}

/// Mean and standard deviation over repeats of `runs`' IOPS divided by
/// `reference`'s IOPS in the same repeat; `None` without a pair.
fn paired_ratio(runs: &[&RunResult], reference: &[&RunResult]) -> (Option<f64>, Option<f64>) {
    let iops = |rs: &[&RunResult]| -> Vec<(u32, f64)> {
        rs.iter()
            .filter_map(|r| r.measured.as_ref().map(|m| (r.run.repeat, m.iops)))
            .collect()
    };
    let by_repeat: BTreeMap<u32, f64> = iops(reference).into_iter().collect();
    match mean_sd_of(&paired_ratios(iops(runs), &by_repeat)) {
        Some((m, sd)) => (Some(m), Some(sd)),
        None => (None, None),
    }
}

/// Summarises runs, keeping the plan's device/workload order and the
/// given scheduler order.
pub fn summarize(results: &[RunResult], schedulers: &[String]) -> Vec<Summary> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in results {
        let k = (r.run.device.as_str(), r.run.case.workload.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for (dev, wl) in keys {
        let of = |s: &str| -> Vec<&RunResult> {
            results
                .iter()
                .filter(|r| {
                    r.run.device == dev && r.run.case.workload == wl && r.run.scheduler == s
                })
                .collect()
        };
        let none = of("none");
        for s in schedulers {
            let rs = of(s);
            if rs.is_empty() {
                continue;
            }
            let ms: Vec<&Measured> = rs.iter().filter_map(|r| r.measured.as_ref()).collect();
            let col = |f: fn(&Measured) -> f64| -> Vec<f64> { ms.iter().map(|m| f(m)).collect() };
            let mean_of = |f: fn(&Measured) -> Option<f64>| mean_of_some(ms.iter().map(|m| f(m)));
            let (iops_mean, iops_sd) = mean_sd(&col(|m| m.iops));
            let (ratio, ratio_sd) = paired_ratio(&rs, &none);
            let counterpart = counterpart(s, schedulers);
            let per_request: Vec<f64> = ms
                .iter()
                .filter_map(|m| m.insns.as_ref().map(|c| c.kernel_per_request))
                .collect();
            let (kernel_insns, kernel_insns_sd) = match mean_sd_of(&per_request) {
                Some((m, sd)) => (Some(m), Some(sd)),
                None => (None, None),
            };
            let (ratio_to_counterpart, counterpart_sd) = match &counterpart {
                Some(c) => paired_ratio(&rs, &of(c)),
                None => (None, None),
            };
            out.push(Summary {
                device: dev.to_string(),
                workload: wl.to_string(),
                scheduler: s.clone(),
                runs: rs.len(),
                failed: rs.len() - ms.len(),
                iops_mean,
                iops_sd,
                mb_s_mean: mean_sd(&col(|m| m.mb_s)).0,
                lat_p50_us: mean_sd(&col(|m| m.lat_p50_us)).0,
                lat_p99_us: mean_sd(&col(|m| m.lat_p99_us)).0,
                lat_p999_us: mean_sd(&col(|m| m.lat_p999_us)).0,
                ctx_per_kio: mean_of(|m| m.ctx_per_kio),
                sys_ctx_per_kio: mean_of(|m| m.sys_ctx_per_kio),
                ratio_to_none: ratio,
                ratio_sd,
                counterpart,
                ratio_to_counterpart,
                counterpart_sd,
                kernel_insns,
                kernel_insns_sd,
                scheduler_insns: mean_of(|m| m.insns.as_ref().map(|c| c.scheduler_per_request)),
            });
        }
    }
    out
}

/// The whole results file (schema `ironlift-bench/1`).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Results {
    #[serde(flatten)]
    pub header: Header,
    pub schedulers: Vec<String>,
    pub devices: BTreeMap<String, Device>,
    pub workloads: Vec<Workload>,
    pub runs: Vec<RunResult>,
    pub summary: Vec<Summary>,
}

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
pub fn write_report(dir: &Path, res: &Results) -> Result<()> {
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
        failed: res
            .runs
            .iter()
            .filter(|r| !r.ok)
            .map(|r| {
                format!(
                    "{} {} {}: {}",
                    r.run.device,
                    r.run.scheduler,
                    r.run.case.workload,
                    r.error.as_deref().unwrap_or("?")
                )
            })
            .collect(),
        charts,
        tables: table_markdown(res),
        raw_runs: "fio's own output per run under `runs/`.",
    }
    .write(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::kind::plan;

    fn fio_basic() -> Fio {
        let suite = Suite::load(&crate::util::repo_root(), "fio-basic").expect("suite parses");
        Fio {
            workloads: Fio::workloads(&suite, None).unwrap(),
            profile: false,
            count_insns: false,
            plugin: None,
            symbols: None,
        }
    }

    #[test]
    fn plan_interleaves_and_rotates_schedulers() {
        let suite = Suite::load(&crate::util::repo_root(), "fio-basic").unwrap();
        let scheds: Vec<String> = ["none", "mq-deadline", "kyber", "bfq"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        let devs = vec!["nullb".to_string()];
        let cases = fio_basic().cases(&suite.quick);
        let p = plan(&devs, &cases, &scheds, suite.quick.repeats, false);
        assert_eq!(p.len(), 2 * 4 * 4);
        // Every block of 4 consecutive runs has each scheduler once.
        for block in p.chunks(4) {
            let mut names: Vec<&str> = block.iter().map(|r| r.scheduler.as_str()).collect();
            names.sort();
            assert_eq!(names, ["bfq", "kyber", "mq-deadline", "none"]);
        }
        // The first scheduler of a workload differs between repeats.
        let first_r0 = &p[0].scheduler;
        let first_r1 = &p[16].scheduler;
        assert_ne!(first_r0, first_r1);
        assert!(p[0].case.fio_args.contains("--runtime=2"));
        assert!(!p[0].case.fio_args.contains("--ramp_time"));
        let full = fio_basic().cases(&suite.full);
        assert!(full[0].fio_args.ends_with("--ramp_time=2"), "{:?}", full[0]);
        assert_eq!(
            Fio::tsv(&full[1]),
            format!("randwrite\t{}", full[1].fio_args)
        );
    }

    #[test]
    fn workloads_are_chosen_by_name() {
        let suite = Suite::load(&crate::util::repo_root(), "fio-basic").unwrap();
        let want = vec!["seqread".to_string(), "randread".to_string()];
        let w = Fio::workloads(&suite, Some(&want)).unwrap();
        assert_eq!(
            w.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(),
            ["randread", "seqread"]
        );
        assert!(Fio::workloads(&suite, Some(&["nope".to_string()])).is_err());
    }

    #[test]
    fn fio_json_is_parsed() {
        let text = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"jobs":[{"error":0,"ctx":50,"read":{"iops":1000.5,"bw":4002,"total_ios":10000,"clat_ns":{"mean":31000.0,
"percentile":{"50.000000":30000,"99.000000":90000,"99.900000":150000}}},
"write":{"iops":0,"bw":0,"clat_ns":{"mean":0}}}]}"#;
        let m = parse_fio(text).unwrap();
        assert!((m.iops - 1000.5).abs() < 1e-9);
        assert!((m.lat_p99_us - 90.0).abs() < 1e-9);
        assert!((m.mb_s - 4002.0 * 1024.0 / 1e6).abs() < 1e-9);
        assert!((m.ctx_per_kio.unwrap() - 5.0).abs() < 1e-9);
        // Files from before the field: no figure, not zero.
        let old: Measured = serde_json::from_str(
            r#"{"iops":1,"mb_s":1,"lat_mean_us":1,"lat_p50_us":1,"lat_p99_us":1,"lat_p999_us":1}"#,
        )
        .unwrap();
        assert_eq!(old.ctx_per_kio, None);
        // What is not finite is written as null, and read back as NaN.
        let gap = Measured {
            iops: 5.0,
            lat_p99_us: f64::NAN,
            ..Default::default()
        };
        let text = serde_json::to_string(&gap).unwrap();
        assert!(text.contains("\"lat_p99_us\":null"), "{text}");
        let back: Measured = serde_json::from_str(&text).unwrap();
        assert!(back.lat_p99_us.is_nan());
        assert_eq!(back.iops, 5.0);
        assert!(parse_fio(r#"{"jobs":[{"error":5,"read":{"iops":1}}]}"#).is_err());
        assert!(parse_fio("fio: failed").is_err());
    }

    fn run(rep: u32, s: &str, m: Option<Measured>) -> RunResult {
        RunRecord::new(
            Planned {
                id: String::new(),
                order: 0,
                repeat: rep,
                device: "nullb".into(),
                scheduler: s.into(),
                case: FioCase {
                    workload: "randread".into(),
                    fio_args: String::new(),
                },
            },
            m.ok_or_else(|| "failed".to_string()),
        )
    }

    #[test]
    fn guest_counters_are_per_thousand_ios() {
        let mut m =
            parse_fio(r#"{"jobs":[{"ctx":7,"read":{"iops":10,"total_ios":20000}}]}"#).unwrap();
        assert_eq!(m.ios, Some(20000.0));
        add_counters(&mut m, "ctx_switches 500\nnoise\nother 1\n");
        assert_eq!(m.sys_ctx_per_kio, Some(25.0));
        // No counters file, or no line for it: no figure, not zero.
        let mut m = parse_fio(r#"{"jobs":[{"read":{"iops":10,"total_ios":1000}}]}"#).unwrap();
        add_counters(&mut m, "other 10\n");
        assert_eq!(m.sys_ctx_per_kio, None);
        // The summary averages over the runs that have the figure.
        let with = |x: Option<f64>| Measured {
            iops: 1.0,
            sys_ctx_per_kio: x,
            ..Default::default()
        };
        let rs = vec![
            run(0, "none", Some(with(Some(2.0)))),
            run(1, "none", Some(with(Some(4.0)))),
            run(2, "none", Some(with(None))),
            run(0, "bfq", Some(with(None))),
        ];
        let s = summarize(&rs, &["none".to_string(), "bfq".to_string()]);
        assert_eq!(s[0].sys_ctx_per_kio, Some(3.0));
        assert_eq!(s[1].sys_ctx_per_kio, None);
    }

    #[test]
    fn ratios_pair_runs_of_the_same_repeat() {
        let iops = |x| {
            Some(Measured {
                iops: x,
                ..Default::default()
            })
        };
        let rs = vec![
            run(0, "none", iops(100.0)),
            run(0, "bfq", iops(50.0)),
            run(0, "rust-bfq", iops(75.0)),
            run(1, "none", iops(200.0)),
            run(1, "bfq", iops(120.0)),
            run(1, "rust-bfq", iops(120.0)),
            run(1, "rust-deadline", iops(10.0)),
            run(2, "rust-deadline", None),
        ];
        let scheds: Vec<String> = ["none", "bfq", "rust-bfq", "rust-deadline"]
            .map(String::from)
            .to_vec();
        let s = summarize(&rs, &scheds);
        let bfq = s.iter().find(|x| x.scheduler == "bfq").unwrap();
        assert!((bfq.ratio_to_none.unwrap() - 0.55).abs() < 1e-9);
        assert_eq!(bfq.runs, 2);
        assert_eq!(bfq.counterpart, None);
        let rb = s.iter().find(|x| x.scheduler == "rust-bfq").unwrap();
        assert_eq!(rb.counterpart.as_deref(), Some("bfq"));
        assert!((rb.ratio_to_counterpart.unwrap() - 1.25).abs() < 1e-9);
        // Ratios 1.5 and 1.0: sample standard deviation sqrt(0.125).
        assert!((rb.counterpart_sd.unwrap() - 0.125f64.sqrt()).abs() < 1e-9);
        // No C counterpart measured: no ratio.
        let rd = s.iter().find(|x| x.scheduler == "rust-deadline").unwrap();
        assert_eq!(rd.counterpart, None);
        assert_eq!(rd.ratio_to_counterpart, None);
        assert_eq!((rd.runs, rd.failed), (2, 1));
    }

    #[test]
    fn counterparts_prefer_the_mq_name() {
        let s: Vec<String> = ["none", "mq-deadline", "bfq", "rust-deadline", "rust-bfq"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            counterpart("rust-deadline", &s).as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(counterpart("rust-bfq", &s).as_deref(), Some("bfq"));
        assert_eq!(counterpart("bfq", &s), None);
        assert_eq!(counterpart("rust-kyber", &s), None);
    }

    #[test]
    fn the_guest_estimate_and_job_env() {
        let f = fio_basic();
        let t = Timing {
            repeats: 1,
            runtime_s: 10,
            ramp_s: 2,
        };
        assert_eq!(f.duration(10, &t), (240, 780));
        assert_eq!(f.job_env(&t), "");
        assert_eq!(f.out_tag(&Suite::parse(SUITE).unwrap()), None);
    }

    const SUITE: &str = "name = \"x\"\ndescription = \"d\"\ndevices = [\"nullb\"]\n\
                         [full]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n\
                         [quick]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n";

    #[test]
    fn a_fio_suite_needs_workloads_and_no_other_table() {
        let wl = "[[workload]]\nname = \"r\"\nfio = \"--rw=read\"\n";
        let s = Suite::parse(&format!("{SUITE}{wl}")).unwrap();
        assert_eq!(s.kind, Fio::NAME);
        assert_eq!(Fio::workloads(&s, None).unwrap().len(), 1);
        let s = Suite::parse(SUITE).unwrap();
        assert!(
            Fio::workloads(&s, None).is_err(),
            "fio suite without workloads"
        );
        let st = "[startup]\nreaders = 1\n";
        let s = Suite::parse(&format!("{SUITE}{wl}{st}")).unwrap();
        assert!(
            Fio::workloads(&s, None).is_err(),
            "[startup] in a fio suite"
        );
    }
}
