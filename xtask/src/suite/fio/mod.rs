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
use crate::flags::QemuBench;
use crate::guest::Prepared;
use crate::insns;
use crate::results::{Header, Planned, Timing};
use crate::util::note;
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

impl Kind for Fio {
    const NAME: &'static str = "fio";
    const SCHEMA: &'static str = "ironlift-bench/1";
    const TABLES: &'static [&'static str] = &["workload"];
    const CASES: Option<&'static str> = Some("workloads");

    type Case = FioCase;
    type Measured = Measured;
    type Results = Results;

    fn new(suite: &Suite, o: &QemuBench) -> Result<Self> {
        let workloads = Fio::workloads(suite, o.s.workloads.as_deref())?;
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
        report::write(dir, res)
    }

    fn table_markdown(res: &Results) -> String {
        report::table_markdown(res)
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
