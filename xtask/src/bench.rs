//! Benchmark suites: the interleaved plan, fio result parsing, statistics
//! and the results file (schema `ironlift-bench/1`, see docs/results-schema.md).

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Results file schema identifier; bump on incompatible change.
pub const SCHEMA: &str = "ironlift-bench/1";

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    pub name: String,
    /// What the suite runs: fio workloads (the default), or the start-up
    /// latency benchmark (`xtask/src/startup.rs`).
    #[serde(default)]
    pub kind: SuiteKind,
    pub description: String,
    pub devices: Vec<String>,
    pub full: Timing,
    pub quick: Timing,
    #[serde(default)]
    pub workload: Vec<Workload>,
    /// The start-up benchmark's settings (kind = "startup").
    #[serde(default)]
    pub startup: Option<crate::startup::StartupSpec>,
}

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SuiteKind {
    #[default]
    Fio,
    Startup,
}

#[derive(Deserialize, Serialize, Debug, Clone, Copy)]
pub struct Timing {
    pub repeats: u32,
    pub runtime_s: u32,
    pub ramp_s: u32,
}

#[derive(Deserialize, Serialize, Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub fio: String,
}

#[derive(Deserialize, Serialize, Debug, Clone)]
pub struct Device {
    pub path: String,
    pub kind: String,
    /// For a null_blk device the guest makes besides `/dev/nullb0` (which the
    /// job's own `NULLB_*` settings shape): how to make it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub null_blk: Option<NullBlk>,
}

/// configfs settings of an extra null_blk device (see the kernel's
/// Documentation/block/null_blk.rst).
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NullBlk {
    pub size_mb: u64,
    pub memory_backed: bool,
    /// 0 none, 1 softirq, 2 timer (`completion_nsec` after submission).
    pub irqmode: u32,
    pub completion_nsec: u64,
    pub hw_queue_depth: u32,
}

/// The null_blk index of a `/dev/nullb<N>` path.
fn nullb_index(path: &str) -> Option<u32> {
    path.strip_prefix("/dev/nullb")?.parse().ok()
}

/// job.env lines that make the guest create every extra null_blk device in
/// `devices` (lib.sh `make_nullbs`): `NULLB_EXTRA` lists the indices, and
/// `NULLB<i>_*` holds each one's settings.
pub fn nullb_env<'a>(
    devices: impl IntoIterator<Item = (&'a String, &'a Device)>,
) -> Result<String> {
    let mut idx = Vec::new();
    let mut s = String::new();
    for (name, d) in devices {
        let Some(n) = &d.null_blk else { continue };
        let i = match nullb_index(&d.path) {
            Some(i) if i >= 1 => i,
            _ => bail!(
                "device {name:?}: a [{name}.null_blk] device must be /dev/nullb<N> with N >= 1 \
                 (nullb0 is the job's own), not {:?}",
                d.path
            ),
        };
        if idx.contains(&i) {
            bail!("device {name:?}: two null_blk devices are {}", d.path);
        }
        if n.irqmode > 2 || n.hw_queue_depth == 0 || n.size_mb == 0 {
            bail!(
                "device {name:?}: null_blk needs irqmode 0..=2, hw_queue_depth >= 1, size_mb >= 1"
            );
        }
        idx.push(i);
        s.push_str(&format!(
            "NULLB{i}_SIZE_MB={}\nNULLB{i}_MEMORY_BACKED={}\nNULLB{i}_IRQMODE={}\n\
             NULLB{i}_COMPLETION_NSEC={}\nNULLB{i}_HW_QUEUE_DEPTH={}\n",
            n.size_mb,
            u8::from(n.memory_backed),
            n.irqmode,
            n.completion_nsec,
            n.hw_queue_depth
        ));
    }
    let list: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    Ok(format!("NULLB_EXTRA='{}'\n{s}", list.join(" ")))
}

/// Loads `configs/suites/<name>.toml`.
pub fn load_suite(root: &Path, name: &str) -> Result<Suite> {
    let p = root.join("configs/suites").join(format!("{name}.toml"));
    let text = fs::read_to_string(&p).with_context(|| {
        format!(
            "no suite {name:?} ({} missing); suites are the .toml files in configs/suites",
            p.display()
        )
    })?;
    parse_suite(&text).with_context(|| format!("parsing {}", p.display()))
}

/// Parses a suite file and checks that its tables fit its kind.
pub fn parse_suite(text: &str) -> Result<Suite> {
    let suite: Suite = toml::from_str(text)?;
    match suite.kind {
        SuiteKind::Fio if suite.workload.is_empty() => {
            bail!("a fio suite needs [[workload]] entries")
        }
        SuiteKind::Fio if suite.startup.is_some() => {
            bail!("[startup] belongs to kind = \"startup\" suites")
        }
        SuiteKind::Startup if suite.startup.is_none() => {
            bail!("kind = \"startup\" needs a [startup] table")
        }
        SuiteKind::Startup if !suite.workload.is_empty() => {
            bail!("a startup suite has no [[workload]] entries")
        }
        _ => {}
    }
    Ok(suite)
}

/// Loads `configs/devices/guest.toml`.
pub fn load_devices(root: &Path) -> Result<BTreeMap<String, Device>> {
    let p = root.join("configs/devices/guest.toml");
    let text = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))
}

/// One planned fio run.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct PlannedRun {
    pub id: String,
    pub order: usize,
    pub repeat: u32,
    pub device: String,
    pub scheduler: String,
    pub workload: String,
    pub fio_args: String,
}

/// Builds the interleaved plan: repeat → device → workload → every
/// scheduler, the scheduler order rotated by one each repeat (and each
/// workload), so no scheduler always runs first or after the same one.
pub fn plan(
    suite: &Suite,
    devices: &[String],
    schedulers: &[String],
    timing: Timing,
) -> Vec<PlannedRun> {
    let mut out = Vec::new();
    for r in 0..timing.repeats {
        for d in devices {
            for (wi, w) in suite.workload.iter().enumerate() {
                let n = schedulers.len().max(1);
                for k in 0..schedulers.len() {
                    let s = &schedulers[(k + r as usize + wi) % n];
                    let order = out.len();
                    let mut args = format!(
                        "--name={} {} --time_based --runtime={} --group_reporting \
                         --percentile_list=50:99:99.9",
                        w.name, w.fio, timing.runtime_s
                    );
                    if timing.ramp_s > 0 {
                        args.push_str(&format!(" --ramp_time={}", timing.ramp_s));
                    }
                    out.push(PlannedRun {
                        id: format!("{order:04}"),
                        order,
                        repeat: r,
                        device: d.clone(),
                        scheduler: s.clone(),
                        workload: w.name.clone(),
                        fio_args: args,
                    });
                }
            }
        }
    }
    out
}

/// The plan as the guest's bench.sh reads it.
pub fn plan_tsv(plan: &[PlannedRun], devices: &BTreeMap<String, Device>) -> Result<String> {
    let mut s = String::new();
    for p in plan {
        let dev = devices.get(&p.device).with_context(|| {
            format!(
                "unknown device {:?} (see configs/devices/guest.toml)",
                p.device
            )
        })?;
        s.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            p.id, dev.path, p.scheduler, p.workload, p.fio_args
        ));
    }
    Ok(s)
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
    pub insns: Option<crate::insns::InsnCount>,
}

/// One run's record in the results file.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct RunResult {
    #[serde(flatten)]
    pub run: PlannedRun,
    pub ok: bool,
    pub error: Option<String>,
    pub measured: Option<Measured>,
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
/// `bench.sh`: one `name change` per line) to what fio measured, per 1000
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

/// Mean and sample standard deviation.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
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
    /// scheduler's own share ([`crate::insns::InsnCount`]).
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
    let by_repeat: BTreeMap<u32, f64> = reference
        .iter()
        .filter_map(|r| r.measured.as_ref().map(|m| (r.run.repeat, m.iops)))
        .collect();
    let ratios: Vec<f64> = runs
        .iter()
        .filter_map(|r| Some(r.measured.as_ref()?.iops / by_repeat.get(&r.run.repeat)?))
        .collect();
    if ratios.is_empty() {
        return (None, None);
    }
    let (m, sd) = mean_sd(&ratios);
    (Some(m), Some(sd))
}

/// The mean of an optional figure over the runs that have it.
fn mean_of(ms: &[&Measured], f: fn(&Measured) -> Option<f64>) -> Option<f64> {
    let xs: Vec<f64> = ms.iter().filter_map(|m| f(m)).collect();
    Some(mean_sd(&xs).0).filter(|x| x.is_finite())
}

/// Summarises runs, keeping the plan's device/workload order and the
/// given scheduler order.
pub fn summarize(results: &[RunResult], schedulers: &[String]) -> Vec<Summary> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in results {
        let k = (r.run.device.clone(), r.run.workload.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for (dev, wl) in &keys {
        let of = |s: &str| -> Vec<&RunResult> {
            results
                .iter()
                .filter(|r| &r.run.device == dev && &r.run.workload == wl && r.run.scheduler == s)
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
            let (iops_mean, iops_sd) = mean_sd(&col(|m| m.iops));
            let (ratio, ratio_sd) = paired_ratio(&rs, &none);
            let counterpart = counterpart(s, schedulers);
            let per_request: Vec<f64> = ms
                .iter()
                .filter_map(|m| m.insns.as_ref().map(|c| c.kernel_per_request))
                .collect();
            let (kernel_insns, kernel_insns_sd) = if per_request.is_empty() {
                (None, None)
            } else {
                let (m, sd) = mean_sd(&per_request);
                (Some(m), Some(sd))
            };
            let (ratio_to_counterpart, counterpart_sd) = match &counterpart {
                Some(c) => paired_ratio(&rs, &of(c)),
                None => (None, None),
            };
            out.push(Summary {
                device: dev.clone(),
                workload: wl.clone(),
                scheduler: s.clone(),
                runs: rs.len(),
                failed: rs.len() - ms.len(),
                iops_mean,
                iops_sd,
                mb_s_mean: mean_sd(&col(|m| m.mb_s)).0,
                lat_p50_us: mean_sd(&col(|m| m.lat_p50_us)).0,
                lat_p99_us: mean_sd(&col(|m| m.lat_p99_us)).0,
                lat_p999_us: mean_sd(&col(|m| m.lat_p999_us)).0,
                ctx_per_kio: mean_of(&ms, |m| m.ctx_per_kio),
                sys_ctx_per_kio: mean_of(&ms, |m| m.sys_ctx_per_kio),
                ratio_to_none: ratio,
                ratio_sd,
                counterpart,
                ratio_to_counterpart,
                counterpart_sd,
                kernel_insns,
                kernel_insns_sd,
                scheduler_insns: mean_of(&ms, |m| {
                    m.insns.as_ref().map(|c| c.scheduler_per_request)
                }),
            });
        }
    }
    out
}

/// The whole results file.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ResultsFile {
    pub schema: String,
    pub suite: String,
    pub suite_description: String,
    pub quick: bool,
    pub started: String,
    pub finished: String,
    pub kernel_release: String,
    pub kernel_key: String,
    pub accel: String,
    /// The guest's clocksource (`tsc`, `hpet`, ...), as it reported it.
    #[serde(default = "crate::bench::unknown_clocksource")]
    pub guest_clocksource: String,
    pub host: String,
    pub guest_cpus: u32,
    pub guest_memory_mb: u32,
    pub timing: Timing,
    pub schedulers: Vec<String>,
    pub devices: BTreeMap<String, Device>,
    pub workloads: Vec<Workload>,
    pub runs: Vec<RunResult>,
    pub summary: Vec<Summary>,
}

/// The clocksource of a guest that did not say (or of results from before
/// it was recorded).
pub(crate) fn unknown_clocksource() -> String {
    "unknown".into()
}

/// A number with `prec` decimals, or `-` when it is not finite.
pub(crate) fn f(x: f64, prec: usize) -> String {
    if x.is_finite() {
        format!("{x:.prec$}")
    } else {
        "-".into()
    }
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
pub fn table_markdown(res: &ResultsFile) -> String {
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
            (Some(r), Some(sd)) => format!("{} ± {}", f(r, 2), f(sd, 2)),
            _ => "-".into(),
        };
        let vs_c = match (
            &row.counterpart,
            row.ratio_to_counterpart,
            row.counterpart_sd,
        ) {
            (Some(c), Some(r), Some(sd)) => format!("{} ± {} ({c})", f(r, 2), f(sd, 2)),
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
            f(row.mb_s_mean, 1),
            f(row.lat_p50_us, 0),
            f(row.lat_p99_us, 0),
            f(row.lat_p999_us, 0),
            f(row.ctx_per_kio.unwrap_or(f64::NAN), 1),
            f(row.sys_ctx_per_kio.unwrap_or(f64::NAN), 1),
            ratio,
            vs_c
        ));
    }
    s.push_str(&insns_markdown(res));
    s
}

/// The `--count-insns` tables, one per device and workload that has
/// counts; empty without any.
fn insns_markdown(res: &ResultsFile) -> String {
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
            (Some(x), Some(n)) if n > 0.0 => f(x / n, 2),
            _ => "-".into(),
        };
        s.push_str(&format!(
            "| {} | {} ± {} | {} | {} |\n",
            row.scheduler,
            f(row.kernel_insns.unwrap_or(f64::NAN), 0),
            f(row.kernel_insns_sd.unwrap_or(f64::NAN), 0),
            vs_none,
            f(row.scheduler_insns.unwrap_or(f64::NAN), 0),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Suite {
        load_suite(&crate::util::repo_root(), "fio-basic").expect("suite parses")
    }

    #[test]
    fn plan_interleaves_and_rotates_schedulers() {
        let s = suite();
        let scheds: Vec<String> = ["none", "mq-deadline", "kyber", "bfq"]
            .iter()
            .map(|x| x.to_string())
            .collect();
        let devs = vec!["nullb".to_string()];
        let p = plan(&s, &devs, &scheds, s.quick);
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
        assert!(p[0].fio_args.contains("--runtime=2"));
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
        let a = Measured {
            sys_ctx_per_kio: Some(2.0),
            ..Default::default()
        };
        let b = Measured {
            sys_ctx_per_kio: Some(4.0),
            ..Default::default()
        };
        let c = Measured::default();
        assert_eq!(mean_of(&[&a, &b, &c], |m| m.sys_ctx_per_kio), Some(3.0));
        assert_eq!(mean_of(&[&c], |m| m.sys_ctx_per_kio), None);
    }

    #[test]
    fn ratios_pair_runs_of_the_same_repeat() {
        let mk = |rep, s: &str, iops| RunResult {
            run: PlannedRun {
                id: String::new(),
                order: 0,
                repeat: rep,
                device: "nullb".into(),
                scheduler: s.into(),
                workload: "randread".into(),
                fio_args: String::new(),
            },
            ok: true,
            error: None,
            measured: Some(Measured {
                iops,
                ..Default::default()
            }),
        };
        let rs = vec![
            mk(0, "none", 100.0),
            mk(0, "bfq", 50.0),
            mk(0, "rust-bfq", 75.0),
            mk(1, "none", 200.0),
            mk(1, "bfq", 120.0),
            mk(1, "rust-bfq", 120.0),
            mk(1, "rust-deadline", 10.0),
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
    fn suite_kind_defaults_to_fio_and_must_fit_its_tables() {
        assert_eq!(suite().kind, SuiteKind::Fio);
        let head = "name = \"x\"\ndescription = \"d\"\ndevices = [\"nullb\"]\n\
                    [full]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n\
                    [quick]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n";
        let wl = "[[workload]]\nname = \"r\"\nfio = \"--rw=read\"\n";
        let st = "[startup]\napp_files = 2\napp_dirs = 1\napp_file_kb_min = 4\n\
                  app_file_kb_max = 8\nreaders = 1\nreader_file_mb = 1\n\
                  reader_fio = \"--rw=read\"\nnr_requests = 8\n";
        assert!(parse_suite(&format!("{head}{wl}")).is_ok());
        assert!(parse_suite(head).is_err(), "fio suite without workloads");
        assert!(parse_suite(&format!("{head}{wl}{st}")).is_err());
        let k = head.replacen("name = \"x\"\n", "name = \"x\"\nkind = \"startup\"\n", 1);
        let s = parse_suite(&format!("{k}{st}")).unwrap();
        assert_eq!(s.kind, SuiteKind::Startup);
        assert!(parse_suite(&k).is_err(), "startup suite without [startup]");
        assert!(parse_suite(&format!("{k}{st}{wl}")).is_err());
        let bad = k.replacen("kind = \"startup\"", "kind = \"other\"", 1);
        assert!(parse_suite(&format!("{bad}{st}")).is_err());
    }

    #[test]
    fn extra_null_blk_devices_become_job_env() {
        let all = load_devices(&crate::util::repo_root()).unwrap();
        let slow = &all["nullb-slow"];
        assert_eq!(slow.path, "/dev/nullb1");
        let env = nullb_env(&all).unwrap();
        // In the order of the devices' names: nullb-8ms, nullb-slow.
        assert!(env.starts_with("NULLB_EXTRA='2 1'\n"), "{env}");
        assert!(env.contains("NULLB2_COMPLETION_NSEC=8000000\n"), "{env}");
        assert!(env.contains("NULLB1_IRQMODE=2\n"));
        assert!(env.contains("NULLB1_MEMORY_BACKED=1\n"));
        let n = slow.null_blk.as_ref().unwrap();
        assert!(env.contains(&format!("NULLB1_COMPLETION_NSEC={}\n", n.completion_nsec)));
        assert!(env.contains(&format!("NULLB1_HW_QUEUE_DEPTH={}\n", n.hw_queue_depth)));
        // Devices without a null_blk table add nothing; nullb0 is the job's.
        let plain: BTreeMap<String, Device> = all
            .iter()
            .filter(|(_, d)| d.null_blk.is_none())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(nullb_env(&plain).unwrap(), "NULLB_EXTRA=''\n");
        let mut bad = BTreeMap::new();
        let mut d = slow.clone();
        d.path = "/dev/nullb0".into();
        bad.insert("x".to_string(), d.clone());
        assert!(nullb_env(&bad).is_err());
        d.path = "/dev/nullb2".into();
        bad.insert("x".to_string(), d.clone());
        bad.insert("y".to_string(), d.clone());
        assert!(nullb_env(&bad).is_err(), "two devices at one index");
        // A device without a null_blk table serializes as before.
        let j = serde_json::to_string(&all["nvme"]).unwrap();
        assert!(!j.contains("null_blk"));
    }

    #[test]
    fn mean_sd_matches_hand_computation() {
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!((m - 5.0).abs() < 1e-12);
        assert!((sd - 2.138089935).abs() < 1e-6);
    }
}
