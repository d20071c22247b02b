//! Throughput against the number of jobs (`kind = "jobs"`;
//! configs/suites/jobs-1-8.toml, after Herrmann's linux-block benchmark of
//! 2017): fio with 1..N jobs for each access pattern, each job on its own
//! region of the device, one request at a time each. A scheduler that
//! serves concurrent sequential readers by idling keeps one reader's
//! throughput as jobs are added; one that interleaves them seeks; one that
//! weight-raises new jobs while measuring shows a dent.
//!
//! Each (pattern, job count) is a case run as a fio run by
//! `qemu/guest/fio.sh`; results.json is schema `ironlift-jobs/1`
//! (docs/results-schema.md).

mod report;
mod results;

pub use results::*;

use super::fio::{read_fio_run, Measured};
use super::kind::{Kind, Suite};
use crate::devices::Device;
use crate::flags::QemuBench;
use crate::results::{Header, Planned, Timing};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The suite's `[jobs]` table.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobsSpec {
    /// fio `--rw` patterns, each a case per job count.
    pub rw: Vec<String>,
    /// Job counts of the full suite.
    pub counts: Vec<u32>,
    /// The patterns and job counts of `--quick`.
    pub quick_rw: Vec<String>,
    pub quick_counts: Vec<u32>,
    /// Each job's region (MiB): job k reads or writes from k × region_mb
    /// (`--size` and `--offset_increment`).
    pub region_mb: u32,
    /// fio's arguments common to every case (besides the device, pattern,
    /// job count, regions, time and output).
    pub fio: String,
}

impl JobsSpec {
    fn check(&self) -> Result<()> {
        let rws = ["read", "write", "randread", "randwrite", "rw", "randrw"];
        for (rw, counts) in [
            (&self.rw, &self.counts),
            (&self.quick_rw, &self.quick_counts),
        ] {
            if rw.is_empty() || counts.is_empty() {
                bail!("[jobs] needs patterns and job counts, full and quick");
            }
            if let Some(bad) = rw.iter().find(|r| !rws.contains(&r.as_str())) {
                bail!("[jobs] rw {bad:?} is not one of {}", rws.join(", "));
            }
            if counts.contains(&0) || counts.windows(2).any(|w| w[0] >= w[1]) {
                bail!("[jobs] job counts must rise from 1 or more: {counts:?}");
            }
        }
        if self.region_mb == 0 {
            bail!("[jobs] region_mb must be above 0");
        }
        if self.fio.contains('\'') || self.fio.contains('\t') {
            bail!("[jobs] fio arguments must not hold quotes or tabs");
        }
        Ok(())
    }
}

/// A planned run's pattern, job count and fio arguments.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct JobsCase {
    pub rw: String,
    pub jobs: u32,
    pub fio_args: String,
}

/// The jobs kind, for one `qemu-bench` invocation.
pub struct Jobs {
    spec: JobsSpec,
    quick: bool,
}

impl Kind for Jobs {
    const NAME: &'static str = "jobs";
    const SCHEMA: &'static str = "ironlift-jobs/1";
    const TABLES: &'static [&'static str] = &["jobs"];
    const RUNNER: &'static str = "fio";
    const CASES: Option<&'static str> = Some("pattern × job counts");

    type Case = JobsCase;
    type Measured = Measured;
    type Results = JobsResults;

    fn new(suite: &Suite, o: &QemuBench) -> Result<Self> {
        if o.profile || o.s.count_insns || o.s.workloads.is_some() {
            bail!(
                "--profile, --count-insns and --workloads are for fio suites; {} is a jobs suite",
                suite.name
            );
        }
        let spec: JobsSpec = suite
            .table::<Jobs, _>("jobs")?
            .context("kind = \"jobs\" needs a [jobs] table")?;
        spec.check()?;
        Ok(Jobs {
            spec,
            quick: o.s.quick,
        })
    }

    fn cases(&self, timing: &Timing) -> Vec<JobsCase> {
        let s = &self.spec;
        let (rws, counts) = if self.quick {
            (&s.quick_rw, &s.quick_counts)
        } else {
            (&s.rw, &s.counts)
        };
        let mut out = Vec::new();
        for rw in rws {
            for &n in counts {
                out.push(JobsCase {
                    rw: rw.clone(),
                    jobs: n,
                    fio_args: format!(
                        "--name={rw}-{n} --rw={rw} --numjobs={n} --size={r}m \
                         --offset_increment={r}m {} --time_based --runtime={} \
                         --group_reporting",
                        s.fio,
                        timing.runtime_s,
                        r = s.region_mb
                    ),
                });
            }
        }
        out
    }

    fn tsv(case: &JobsCase) -> String {
        format!("{}-{}\t{}", case.rw, case.jobs, case.fio_args)
    }

    fn job_env(&self, _timing: &Timing) -> String {
        String::new()
    }

    /// fio's start under TCG and the scheduler switch: about 5 s a run.
    fn duration(&self, runs: usize, timing: &Timing) -> (u64, u64) {
        let estimate = runs as u64 * (timing.runtime_s as u64 + 5) + 60;
        (estimate, estimate * 2 + 300)
    }

    fn read_run(&self, runs_dir: &Path, run: &Planned<JobsCase>) -> Result<Measured, String> {
        read_fio_run(runs_dir, &run.id)
    }

    fn results(
        &self,
        header: Header,
        schedulers: Vec<String>,
        devices: BTreeMap<String, Device>,
        runs: Vec<JobsRun>,
    ) -> JobsResults {
        JobsResults {
            header,
            jobs: self.spec.clone(),
            summary: summarize(&runs, &schedulers),
            schedulers,
            devices,
            runs,
        }
    }

    fn reread(res: &mut JobsResults) {
        res.summary = summarize(&res.runs, &res.schedulers);
    }

    fn write_report(dir: &Path, res: &JobsResults) -> Result<()> {
        report::write(dir, res)
    }

    fn table_markdown(res: &JobsResults) -> String {
        report::table_markdown(res)
    }

    fn header(res: &JobsResults) -> &Header {
        &res.header
    }

    fn kcidb_runs(res: &JobsResults) -> Vec<crate::kcidb::Run> {
        crate::kcidb::runs_of(
            &res.runs,
            |c| format!("{}.jobs{}", c.rw, c.jobs),
            |_, m| super::fio::kcidb_metrics(m),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Suite {
        Suite::load(&crate::util::repo_root(), "jobs-1-8").unwrap()
    }

    fn kind(quick: bool) -> Jobs {
        let s = suite();
        let spec: JobsSpec = s.table::<Jobs, _>("jobs").unwrap().unwrap();
        spec.check().unwrap();
        Jobs { spec, quick }
    }

    #[test]
    fn the_suite_is_the_seeds_matrix() {
        let s = suite();
        assert_eq!(s.kind, Jobs::NAME);
        assert_eq!(
            (s.full.repeats, s.full.runtime_s, s.full.ramp_s),
            (10, 10, 0)
        );
        let full = kind(false).cases(&s.full);
        assert_eq!(full.len(), 4 * 8);
        assert_eq!(
            full.iter().map(|c| c.jobs).collect::<Vec<_>>()[..8],
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        let c = &full[9];
        assert_eq!((c.rw.as_str(), c.jobs), ("write", 2));
        for want in [
            "--rw=write",
            "--numjobs=2",
            "--size=256m",
            "--offset_increment=256m",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=1",
            "--runtime=10",
            "--group_reporting",
        ] {
            assert!(c.fio_args.contains(want), "{want} not in {}", c.fio_args);
        }
        assert_eq!(Jobs::tsv(c), format!("write-2\t{}", c.fio_args));
        // Eight regions fit the device.
        let devices = crate::devices::load(&crate::util::repo_root()).unwrap();
        let spec = kind(false).spec;
        for d in &s.devices {
            let size = devices[d].model.as_ref().map_or(u64::MAX, |m| m.size_mb);
            assert!(spec.region_mb as u64 * 8 <= size, "{d}");
        }
        let quick = kind(true).cases(&s.quick);
        assert!(quick.len() < full.len());
        assert!(quick[0]
            .fio_args
            .contains(&format!("--runtime={}", s.quick.runtime_s)));
    }

    #[test]
    fn bad_tables_are_refused() {
        let good = kind(false).spec;
        let mut bad = good.clone();
        bad.counts = vec![2, 1];
        assert!(bad.check().is_err());
        bad = good.clone();
        bad.quick_rw = vec!["sideways".into()];
        assert!(format!("{}", bad.check().unwrap_err()).contains("sideways"));
        bad = good;
        bad.region_mb = 0;
        assert!(bad.check().is_err());
    }
}
