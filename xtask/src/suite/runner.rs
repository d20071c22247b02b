//! The suite runner: options → plan → guest job → boot → collect →
//! results.json → report → verdict, the same for every [`Kind`].

use super::kind::{plan, plan_tsv, Kind, Suite};
use super::sched;
use crate::devices::{self, Device, BENCH_NULLB0};
use crate::flags::{QemuBench, SuiteArgs};
use crate::guest::{self, Prepared};
use crate::results::{Header, Planned, RunRecord, Timing};
use crate::util::{self, note, step};
use crate::{blkserve, kcidb, ktap, qemu};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

impl QemuBench {
    /// The suite's timing (full or quick), with `--repeats` and
    /// `--runtime` applied.
    fn timing(&self, suite: &Suite) -> Timing {
        timing(suite, self.s.quick, self.s.repeats, self.s.runtime)
    }

    /// `--devices`, or the suite's (its `quick_devices` under `--quick`);
    /// each must be a known guest device.
    fn devices(&self, suite: &Suite, all: &BTreeMap<String, Device>) -> Result<Vec<String>> {
        let devices = planned_devices(suite, &self.s);
        for d in &devices {
            if !all.contains_key(d) {
                bail!(
                    "unknown device {d:?}; known: {}",
                    all.keys().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
        Ok(devices)
    }

    /// `--schedulers`, or the built-in ones, every elevator module built
    /// and the suite's variants.
    fn schedulers(&self, p: &Prepared, suite: &Suite) -> Vec<String> {
        self.s.schedulers.clone().unwrap_or_else(|| {
            let mut all = p.all_schedulers();
            all.extend(suite.variants.iter().cloned());
            all
        })
    }

    /// `--out`, or `results/<date>-<kernel>[-<tag>][-quick]`.
    fn out_dir(&self, root: &Path, p: &Prepared, tag: Option<&str>) -> PathBuf {
        match &self.out {
            Some(d) => d.clone(),
            None => root.join("results").join(format!(
                "{}-{}{}{}",
                guest::now("+%Y-%m-%dT%H%M"),
                p.kernel.release,
                tag.map(|t| format!("-{t}")).unwrap_or_default(),
                if self.s.quick { "-quick" } else { "" }
            )),
        }
    }
}

/// The suite's timing (full or `quick`), with `repeats` and `runtime`
/// (seconds per run) applied.
/// The devices a suite runs on: `--devices`, or the suite's (its
/// `quick_devices` under `--quick`); not checked.
pub fn planned_devices(suite: &Suite, s: &SuiteArgs) -> Vec<String> {
    s.devices
        .clone()
        .unwrap_or_else(|| match (&suite.quick_devices, s.quick) {
            (Some(q), true) => q.clone(),
            _ => suite.devices.clone(),
        })
}

pub fn timing(suite: &Suite, quick: bool, repeats: Option<u32>, runtime: Option<u32>) -> Timing {
    let mut timing = if quick { suite.quick } else { suite.full };
    if let Some(r) = repeats {
        timing.repeats = r.max(1);
    }
    if let Some(r) = runtime {
        timing.runtime_s = r.max(1);
    }
    timing
}

// Long: the runner's pipeline (plan, job, boot, collect, results,
// report, verdict) in the order it happens, so a suite author reads it once.
/// Runs `suite` as a `K` suite.
pub fn run<K: Kind>(o: &QemuBench, suite: &Suite) -> Result<()> {
    let started_at = Instant::now();
    let root = util::repo_root();
    let all_devices = devices::load(&root)?;
    let mut kind = K::new(suite, o)?;
    let timing = o.timing(suite);
    let devices = o.devices(suite, &all_devices)?;
    if let Some(s) = &o.s.schedulers {
        sched::check_all(s).context("--schedulers")?;
    }
    let p = guest::prepare(&o.k, &o.g)?;
    kind.prepared(o, &p)?;
    let schedulers = o.schedulers(&p, suite);
    kind.check_schedulers(&schedulers, &p.elevators())?;
    let cases = kind.cases(&timing);
    let plan = plan(
        &devices,
        &cases,
        &schedulers,
        timing.repeats,
        K::ROTATE_BY_DEVICE,
    );
    let out = o.out_dir(&root, &p, kind.out_tag(suite).as_deref());

    let used = write_job(
        &out,
        &p,
        &all_devices,
        &devices,
        &plan_tsv::<K>(&plan, &all_devices)?,
        &format!("SUITE_KIND={}\n{}", K::RUNNER, kind.job_env(&timing)),
    )?;

    let (estimate, timeout) = kind.duration(plan.len(), &timing);
    let cases_part = match K::CASES {
        Some(what) => format!(" × {} {what}", cases.len()),
        None => String::new(),
    };
    step(&format!(
        "Benchmark {}: {} runs ({} repeats × {} devices{cases_part} × {} schedulers), ~{} under {}",
        suite.name,
        plan.len(),
        timing.repeats,
        devices.len(),
        schedulers.len(),
        util::human_secs(estimate),
        p.accel.name().to_uppercase()
    ));
    note(&format!("results: {}", out.display()));
    let servers = blkserve::start_for(&o.k, &out, &used)?;
    let mut qemu_extra = kind.qemu_extra(&out)?;
    qemu_extra.extend(servers.as_ref().map(|s| s.qemu_args()).unwrap_or_default());
    let started = guest::now("-Iseconds");
    let boot = qemu::Boot {
        qemu_extra,
        ..p.boot(&o.g, "bench", &out, Duration::from_secs(timeout))
    };
    let r = boot.run()?;
    let finished = guest::now("-Iseconds");
    let lags = servers.map(|s| s.stop()).transpose()?;
    r.check_setup(&boot.console_log)?;
    kind.guest_done(&p, &out)?;

    let header = Header {
        schema: K::SCHEMA.into(),
        suite: suite.name.clone(),
        suite_description: suite.description.clone(),
        quick: o.s.quick,
        started,
        finished,
        kernel_release: p.kernel.release.clone(),
        kernel_key: p.kernel.key.clone(),
        accel: p.accel.name().into(),
        guest_clocksource: qemu::guest_clocksource(&out),
        host: guest::host_description(),
        guest_cpus: o.g.cpus,
        guest_memory_mb: o.g.memory,
        timing,
        provenance: Some(kcidb::provenance_of(&p.kernel)),
    };
    let recorded = used
        .iter()
        .map(|(n, d)| (n.clone(), d.recorded()))
        .collect();
    let (failed, total) = finish(&kind, &out, plan, header, schedulers, recorded)?;
    if let Some(lags) = lags.filter(|l| !l.is_empty()) {
        println!("device servers' lag:\n{}", blkserve::lag_markdown(&lags));
    }
    note(&format!(
        "report: {}  (wall time {})",
        out.join("report.md").display(),
        util::human_secs(started_at.elapsed().as_secs())
    ));
    verdict(&boot, &r, failed, total)
}

/// Reads the runs' output in `out`/runs, writes results.json, the report,
/// the charts and kcidb.json, and prints the tables. Returns how many
/// runs failed, of how many.
pub fn finish<K: Kind>(
    kind: &K,
    out: &Path,
    plan: Vec<Planned<K::Case>>,
    header: Header,
    schedulers: Vec<String>,
    devices: BTreeMap<String, Device>,
) -> Result<(usize, usize)> {
    let runs_dir = out.join("runs");
    let runs: Vec<RunRecord<K::Case, K::Measured>> = plan
        .into_iter()
        .map(|pr| {
            let m = kind.read_run(&runs_dir, &pr);
            RunRecord::new(pr, m)
        })
        .collect();
    let failed = runs.iter().filter(|r| !r.ok).count();
    let total = runs.len();
    let res = kind.results(header, schedulers, devices, runs);
    fs::write(
        out.join("results.json"),
        serde_json::to_string_pretty(&res)?,
    )?;
    K::write_report(out, &res)?;
    kcidb::write(out, K::header(&res), &K::kcidb_runs(&res))?;
    blkserve::append_to_report(out)?;
    println!("{}", K::table_markdown(&res));
    Ok((failed, total))
}

/// Lays out the job folder for the guest: an empty `runs/`, the plan, and
/// job.env (the elevator modules to load, the devices, the null_blk devices
/// to make, then `kind_env`). Returns the devices used, by name.
fn write_job(
    out: &Path,
    p: &Prepared,
    all: &BTreeMap<String, Device>,
    devices: &[String],
    plan_tsv: &str,
    kind_env: &str,
) -> Result<BTreeMap<String, Device>> {
    let _ = fs::remove_dir_all(out.join("runs"));
    fs::create_dir_all(out.join("runs"))?;
    fs::write(out.join("plan.tsv"), plan_tsv)?;
    let used: BTreeMap<String, Device> = devices::pick(all, devices.iter().map(String::as_str))?
        .into_iter()
        .collect();
    let mut made = devices::pick(all, [BENCH_NULLB0])?;
    if used.values().any(|d| d.path == made[0].1.path) {
        made.clear();
    }
    made.extend(used.iter().map(|(n, d)| (n.clone(), d.clone())));
    fs::write(
        out.join("job.env"),
        format!("{}{kind_env}", p.job_env(used.values(), &made)?),
    )?;
    Ok(used)
}

/// A benchmark fails when the guest hung, the kernel complained on the
/// console, or a run failed; the results are written before this check.
fn verdict(boot: &qemu::Boot, r: &qemu::BootResult, failed: usize, total: usize) -> Result<()> {
    let trouble = ktap::console_problems(&r.console);
    if r.timed_out {
        bail!(
            "the guest did not finish within {}s; console log: {}",
            boot.timeout.as_secs(),
            boot.console_log.display()
        );
    }
    if !trouble.is_empty() {
        bail!(
            "the kernel reported trouble during the benchmark:\n{}\nconsole log: {}",
            trouble.join("\n---\n"),
            boot.console_log.display()
        );
    }
    if failed > 0 {
        bail!("{failed} of {total} runs failed (see the report and runs/*.err)");
    }
    Ok(())
}

/// `cargo xtask report` for a `K` results file: reads it, writes report.md
/// and the charts next to it, and prints the tables.
pub fn rerender<K: Kind>(file: &Path, text: &str, not_valid: &str) -> Result<()> {
    let mut res: K::Results =
        serde_json::from_str(text).with_context(|| format!("{} {not_valid}", file.display()))?;
    K::reread(&mut res);
    let dir = file.parent().unwrap_or(Path::new("."));
    K::write_report(dir, &res)?;
    kcidb::write(dir, K::header(&res), &K::kcidb_runs(&res))?;
    blkserve::append_to_report(dir)?;
    println!("{}", K::table_markdown(&res));
    note(&format!("wrote {}", dir.join("report.md").display()));
    Ok(())
}
