//! fio suites (`kind = "fio"`, the default; configs/suites/fio-basic.toml):
//! each `[[workload]]` is an fio run on each device under each scheduler.
//! The guest side is `qemu/guest/fio.sh`; results.json is schema
//! `ironlift-bench/1` (docs/results-schema.md).

mod report;
mod results;

pub use report::table_markdown;
pub use results::*;

use super::kind::{Kind, Suite};
use crate::devices::Device;
use crate::flags::{QemuBench, SuiteArgs};
use crate::guest::Prepared;
use crate::results::{Header, Planned, Timing};
use crate::util::note;
use crate::{insns, kcidb};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The perf the guest runs for `--profile` (the host's, over the 9p root).
const PERF: &str = "/usr/bin/perf";

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

impl Fio {
    /// The kind for `host-bench`: the suite's workloads (those named in
    /// `want`, else all), less those that write unless `writes_allowed`.
    /// Returns it and the names left out; fails when a named workload
    /// writes and writing is not allowed, or when none is left.
    pub fn for_host(
        suite: &Suite,
        want: Option<&[String]>,
        writes_allowed: bool,
    ) -> Result<(Fio, Vec<String>)> {
        let mut workloads = Fio::workloads(suite, want)?;
        let mut left_out = Vec::new();
        if !writes_allowed {
            if let Some(w) = want.and_then(|_| workloads.iter().find(|w| writes(&w.fio))) {
                bail!(
                    "workload {} writes to the device; add --destructive to overwrite it",
                    w.name
                );
            }
            left_out = workloads
                .iter()
                .filter(|w| writes(&w.fio))
                .map(|w| w.name.clone())
                .collect();
            workloads.retain(|w| !writes(&w.fio));
            if workloads.is_empty() {
                bail!(
                    "suite {} has no read-only workload; add --destructive to run its \
                     write workloads",
                    suite.name
                );
            }
        }
        let fio = Fio {
            workloads,
            profile: false,
            count_insns: false,
            plugin: None,
            symbols: None,
        };
        Ok((fio, left_out))
    }

    /// The names of the workloads that write.
    pub fn writing_workloads(&self) -> Vec<String> {
        self.workloads
            .iter()
            .filter(|w| writes(&w.fio))
            .map(|w| w.name.clone())
            .collect()
    }
}

/// Whether fio's arguments make it write: an `--rw` (`--readwrite`) other
/// than `read` or `randread`; fio reads when it has none.
pub fn writes(fio_args: &str) -> bool {
    fio_args
        .split_whitespace()
        .filter_map(|a| {
            a.strip_prefix("--rw=")
                .or_else(|| a.strip_prefix("--readwrite="))
        })
        .any(|rw| !matches!(rw.split(':').next(), Some("read" | "randread")))
}

impl Fio {
    /// The workloads `qemu-bench` runs: `--workloads`, or the suite's
    /// `quick_workloads` under `--quick`, or all.
    fn planned_workloads(suite: &Suite, s: &SuiteArgs) -> Result<Vec<Workload>> {
        let quick = suite.quick_workloads.as_deref().filter(|_| s.quick);
        Fio::workloads(suite, s.workloads.as_deref().or(quick))
    }

    /// The names of the workloads `qemu-bench` runs.
    pub fn planned_workload_names(suite: &Suite, s: &SuiteArgs) -> Result<Vec<String>> {
        Ok(Fio::planned_workloads(suite, s)?
            .into_iter()
            .map(|w| w.name)
            .collect())
    }
}

impl Kind for Fio {
    const NAME: &'static str = "fio";
    const SCHEMA: &'static str = "ironlift-bench/1";
    const TABLES: &'static [&'static str] = &["workload"];
    const CASES: Option<&'static str> = Some("workloads");

    type Case = FioCase;
    type Measured = Measured;
    type Results = Results;

    fn new(suite: &Suite, o: &QemuBench) -> Result<Self> {
        let workloads = Fio::planned_workloads(suite, &o.s)?;
        if o.profile && !Path::new(PERF).exists() {
            bail!(
                "--profile needs {PERF}, which the guest runs from the host's root: \
                 install it with `apt-get install linux-perf` (as root)"
            );
        }
        Ok(Fio {
            workloads,
            profile: o.profile,
            count_insns: o.s.count_insns,
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
        let mut m = read_fio_run(runs_dir, &run.id)?;
        if let Ok(c) = fs::read_to_string(base.with_extension("counters")) {
            add_counters(&mut m, &c);
        }
        if let Some(syms) = &self.symbols {
            m.insns = count_insns(&base, syms, super::sched::elevator_of(&run.scheduler));
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
        report::write(dir, res)
    }

    fn table_markdown(res: &Results) -> String {
        report::table_markdown(res)
    }

    fn header(res: &Results) -> &Header {
        &res.header
    }

    fn kcidb_runs(res: &Results) -> Vec<kcidb::Run> {
        kcidb::runs_of(&res.runs, |c| c.workload.clone(), |_, m| kcidb_metrics(m))
    }
}

/// A fio run's figures for kcidb.json, in base units where KCIDB scales
/// them (seconds, bytes per second).
pub(crate) fn kcidb_metrics(m: &Measured) -> Vec<kcidb::Metric> {
    use kcidb::Metric;
    let mut out = vec![
        Metric::plain("iops", m.iops, "IOPS"),
        Metric::scaled("bandwidth", m.mb_s * 1e6, "B/s"),
        Metric::scaled("lat_mean", m.lat_mean_us * 1e-6, "s"),
        Metric::scaled("lat_p50", m.lat_p50_us * 1e-6, "s"),
        Metric::scaled("lat_p99", m.lat_p99_us * 1e-6, "s"),
        Metric::scaled("lat_p999", m.lat_p999_us * 1e-6, "s"),
    ];
    let optional = [
        ("ctx_per_kio", m.ctx_per_kio, "switches/1000 I/Os"),
        ("sys_ctx_per_kio", m.sys_ctx_per_kio, "switches/1000 I/Os"),
        (
            "kernel_insns_per_request",
            m.insns.as_ref().map(|c| c.kernel_per_request),
            "instructions/request",
        ),
        (
            "scheduler_insns_per_request",
            m.insns.as_ref().map(|c| c.scheduler_per_request),
            "instructions/request",
        ),
    ];
    out.extend(
        optional
            .into_iter()
            .filter_map(|(name, v, unit)| Some(Metric::plain(name, v?, unit))),
    );
    out
}

/// What one fio run of the guest measured: fio's JSON, `runs/<id>.json`,
/// read; or why the run failed (`runs/<id>.err`, or no output).
pub fn read_fio_run(runs_dir: &Path, id: &str) -> Result<Measured, String> {
    let base = runs_dir.join(id);
    if let Ok(e) = fs::read_to_string(base.with_extension("err")) {
        return Err(e.trim().to_string());
    }
    let Ok(j) = fs::read_to_string(base.with_extension("json")) else {
        return Err("no result: the guest stopped before this run".into());
    };
    parse_fio(&j).map_err(|e| format!("{e:#}"))
}

/// A run's instruction counts (`<base>.insns`, from the plugin), per
/// request; the listing goes to `<base>.insns.txt` and the function table
/// to `<base>.functions.tsv`. A run without counts,
/// or whose counts cannot be read, gets none, and says why.
fn count_insns(base: &Path, syms: &insns::Symbols, scheduler: &str) -> Option<insns::InsnCount> {
    let dump = match fs::read_to_string(base.with_extension("insns")) {
        Ok(d) => d,
        Err(e) => {
            note(&format!("{}: no instruction counts ({e})", base.display()));
            return None;
        }
    };
    match insns::summarize(&dump, syms, scheduler, base) {
        Ok(c) => Some(c),
        Err(e) => {
            note(&format!("{}: instruction counts: {e:#}", base.display()));
            None
        }
    }
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
    fn the_host_runs_only_read_workloads_unless_told_to_write() {
        assert!(!writes("--rw=randread --bs=4k"));
        assert!(!writes("--bs=4k"));
        assert!(!writes("--rw=read:16k"));
        assert!(writes("--rw=randwrite"));
        assert!(writes("--readwrite=randrw --rwmixread=70"));
        assert!(writes("--rw=trim"));
        let suite = Suite::load(&crate::util::repo_root(), "fio-basic").unwrap();
        let (f, out) = Fio::for_host(&suite, None, false).unwrap();
        let names = |f: &Fio| {
            f.workloads
                .iter()
                .map(|w| w.name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&f), ["randread", "seqread"]);
        assert_eq!(out, ["randwrite", "seqwrite"]);
        let (f, out) = Fio::for_host(&suite, None, true).unwrap();
        assert_eq!(names(&f).len(), 4);
        assert_eq!(f.writing_workloads(), ["randwrite", "seqwrite"]);
        assert!(out.is_empty());
        let named = vec!["randwrite".to_string()];
        let Err(e) = Fio::for_host(&suite, Some(&named), false) else {
            panic!("a write workload without --destructive")
        };
        assert!(format!("{e}").contains("--destructive"), "{e}");
        assert!(Fio::for_host(&suite, Some(&named), true).is_ok());
    }

    #[test]
    fn quick_runs_the_suites_quick_workloads() {
        let suite = Suite::load(&crate::util::repo_root(), "hdd-seeks").unwrap();
        let q = suite.quick_workloads.as_deref();
        let w = Fio::workloads(&suite, q).unwrap();
        assert_eq!(
            w.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(),
            ["seqread-1", "seqread-4"]
        );
        assert_eq!(Fio::workloads(&suite, None).unwrap().len(), 4);
        let fio = Suite::load(&crate::util::repo_root(), "fio-basic").unwrap();
        assert!(fio.quick_workloads.is_none());
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
