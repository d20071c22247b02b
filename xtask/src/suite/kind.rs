//! What a kind of suite is to the runner: the suite file, the [`Kind`]
//! trait every kind implements, and the interleaved plan.

use crate::devices::Device;
use crate::flags::QemuBench;
use crate::guest::Prepared;
use crate::results::{Header, Planned, RunRecord, Timing};
use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// A suite file, `configs/suites/<name>.toml`: what every suite has, and
/// the tables its kind reads.
#[derive(Deserialize, Debug, Clone)]
pub struct Suite {
    pub name: String,
    /// The kind of suite ([`Kind::NAME`]); fio when not given.
    #[serde(default = "fio_kind")]
    pub kind: String,
    pub description: String,
    pub devices: Vec<String>,
    /// The devices of `--quick` (default: `devices`).
    #[serde(default)]
    pub quick_devices: Option<Vec<String>>,
    /// The workloads of `--quick` in a fio suite (default: all);
    /// `--workloads` overrides it.
    #[serde(default)]
    pub quick_workloads: Option<Vec<String>>,
    pub full: Timing,
    pub quick: Timing,
    /// Scheduler variants with tunables (`bfq:low_latency=0`, see
    /// [`super::sched`]) measured after the default schedulers, each its
    /// own column; `--schedulers` replaces both.
    #[serde(default)]
    pub variants: Vec<String>,
    /// The kind's own tables ([`Kind::TABLES`]).
    #[serde(flatten)]
    pub tables: toml::Table,
}

fn fio_kind() -> String {
    "fio".into()
}

impl Suite {
    /// Loads `configs/suites/<name>.toml`.
    pub fn load(root: &Path, name: &str) -> Result<Suite> {
        let p = root.join("configs/suites").join(format!("{name}.toml"));
        let text = fs::read_to_string(&p).with_context(|| {
            format!(
                "no suite {name:?} ({} missing); suites are the .toml files in configs/suites",
                p.display()
            )
        })?;
        Suite::parse(&text).with_context(|| format!("parsing {}", p.display()))
    }

    pub fn parse(text: &str) -> Result<Suite> {
        let suite: Suite = toml::from_str(text)?;
        super::sched::check_all(&suite.variants).context("variants")?;
        Ok(suite)
    }

    /// The kind's table `key`, if the file has it; fails on a table the
    /// kind does not read.
    pub fn table<K: Kind, T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        if let Some(other) = self
            .tables
            .keys()
            .find(|k| !K::TABLES.contains(&k.as_str()))
        {
            bail!(
                "a {} suite has no [{other}]; its tables: {}",
                K::NAME,
                K::TABLES.join(", ")
            );
        }
        self.tables
            .get(key)
            .map(|v| v.clone().try_into().with_context(|| format!("[{key}]")))
            .transpose()
    }
}

/// A kind of benchmark suite: how its runs are planned, what the guest
/// runs for each (`qemu/guest/<NAME>.sh`), how their output is read,
/// summarised and reported. The runner (`super::runner`) does the rest:
/// options, devices, the guest job, the boot, results.json, the verdict.
pub trait Kind: Sized {
    /// `kind` in the suite file.
    const NAME: &'static str;
    /// `SUITE_KIND` in job.env: the guest's runner,
    /// `qemu/guest/<RUNNER>.sh` (another kind's, when its runs are that
    /// kind's runs).
    const RUNNER: &'static str = Self::NAME;
    /// results.json `schema` (docs/results-schema.md).
    const SCHEMA: &'static str;
    /// The suite file's tables the kind reads.
    const TABLES: &'static [&'static str];
    /// What the step line calls the cases ("workloads"), when a suite has
    /// more than one per device.
    const CASES: Option<&'static str> = None;
    /// Whether the scheduler order rotates from device to device too.
    const ROTATE_BY_DEVICE: bool = false;

    /// What a planned run adds to its device and scheduler.
    type Case: Serialize + DeserializeOwned + Clone + std::fmt::Debug;
    /// What one run measured.
    type Measured: Serialize + DeserializeOwned + Clone;
    /// The results file.
    type Results: Serialize + DeserializeOwned;

    /// The kind's settings from the suite file and the options, checked.
    fn new(suite: &Suite, o: &QemuBench) -> Result<Self>;

    /// What the kind needs of the prepared guest (fio's `--count-insns`:
    /// TCG and the plugin).
    fn prepared(&mut self, _o: &QemuBench, _p: &Prepared) -> Result<()> {
        Ok(())
    }

    /// Checks the schedulers to compare (`elevators`: the rust-* built).
    fn check_schedulers(&self, _schedulers: &[String], _elevators: &[String]) -> Result<()> {
        Ok(())
    }

    /// The cases to run on each device, in order.
    fn cases(&self, timing: &Timing) -> Vec<Self::Case>;

    /// plan.tsv's columns after id, device and scheduler: the case's name
    /// and its arguments (`-` without).
    fn tsv(case: &Self::Case) -> String;

    /// The kind's job.env lines.
    fn job_env(&self, timing: &Timing) -> String;

    /// What the results folder's name ends with besides the date and
    /// kernel (and `-quick`).
    fn out_tag(&self, suite: &Suite) -> Option<String> {
        Some(suite.name.clone())
    }

    /// The guest's expected run time and its timeout, in seconds.
    fn duration(&self, runs: usize, timing: &Timing) -> (u64, u64);

    /// Extra QEMU arguments for a job whose folder is `out`.
    fn qemu_extra(&self, _out: &Path) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// Called once the guest is done, before its runs are read.
    fn guest_done(&mut self, _p: &Prepared, _out: &Path) -> Result<()> {
        Ok(())
    }

    /// Reads what the guest wrote for `run` into `runs_dir`: the
    /// measurement, or why the run failed.
    fn read_run(
        &self,
        runs_dir: &Path,
        run: &Planned<Self::Case>,
    ) -> Result<Self::Measured, String>;

    /// The results file of the runs.
    fn results(
        &self,
        header: Header,
        schedulers: Vec<String>,
        devices: BTreeMap<String, Device>,
        runs: Vec<RunRecord<Self::Case, Self::Measured>>,
    ) -> Self::Results;

    /// A results file read back for `cargo xtask report`: what is derived
    /// from the runs is derived again.
    fn reread(_res: &mut Self::Results) {}

    /// report.md and charts into `dir`.
    fn write_report(dir: &Path, res: &Self::Results) -> Result<()>;

    /// The results as Markdown tables.
    fn table_markdown(res: &Self::Results) -> String;

    /// The results file's header.
    fn header(res: &Self::Results) -> &Header;

    /// Every run with its figures, for kcidb.json ([`crate::kcidb`]).
    fn kcidb_runs(res: &Self::Results) -> Vec<crate::kcidb::Run>;
}

/// The interleaved plan: repeat → device → case → every scheduler once,
/// the scheduler order rotated by one each repeat and each case (and each
/// device if `rotate_by_device`), so no scheduler always runs first or
/// after the same one.
pub fn plan<C: Clone>(
    devices: &[String],
    cases: &[C],
    schedulers: &[String],
    repeats: u32,
    rotate_by_device: bool,
) -> Vec<Planned<C>> {
    let mut out = Vec::new();
    let n = schedulers.len().max(1);
    for r in 0..repeats {
        for (di, d) in devices.iter().enumerate() {
            for (ci, case) in cases.iter().enumerate() {
                let shift = r as usize + ci + if rotate_by_device { di } else { 0 };
                for k in 0..schedulers.len() {
                    let order = out.len();
                    out.push(Planned {
                        id: format!("{order:04}"),
                        order,
                        repeat: r,
                        device: d.clone(),
                        scheduler: schedulers[(k + shift) % n].clone(),
                        case: case.clone(),
                    });
                }
            }
        }
    }
    out
}

/// The plan as the guest reads it (lib.sh `run_plan`), one run a line:
/// id, device path, scheduler, then the kind's columns, tab-separated.
pub fn plan_tsv<K: Kind>(
    plan: &[Planned<K::Case>],
    devices: &BTreeMap<String, Device>,
) -> Result<String> {
    let mut s = String::new();
    for p in plan {
        let dev = devices.get(&p.device).with_context(|| {
            format!(
                "unknown device {:?} (see configs/devices/guest.toml)",
                p.device
            )
        })?;
        s.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            p.id,
            dev.path,
            p.scheduler,
            K::tsv(&p.case)
        ));
    }
    Ok(s)
}
