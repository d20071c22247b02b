//! Androbench's storage tests on an emulated phone eMMC (`kind =
//! "androbench"`; configs/suites/androbench.toml): sequential read and
//! write in 256 KiB requests, random read and write in 4 KiB requests, on
//! files of an ext4 file system, one request at a time, reported as
//! Androbench reports them: MB/s for the sequential tests, IOPS for the
//! random ones. The seeds compared Android's schedulers with it.
//!
//! The guest side is `qemu/guest/androbench.sh` (ext4 and the files once
//! per device, then one fio run per test); results.json is schema
//! `ironlift-androbench/1` (docs/results-schema.md).

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

/// The suite's `[androbench]` table.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AndrobenchSpec {
    /// The file the read tests read, and the one the write tests write
    /// (MiB), in the full suite and with `--quick`.
    pub read_file_mb: u32,
    pub write_file_mb: u32,
    pub quick_read_file_mb: u32,
    pub quick_write_file_mb: u32,
    /// Request sizes of the sequential and the random tests (KiB).
    pub seq_bs_kb: u32,
    pub rand_bs_kb: u32,
    /// fio's arguments common to every test.
    pub fio: String,
}

/// Androbench's four tests: name, fio `--rw`, whether sequential (MB/s)
/// or random (IOPS), and whether it reads.
pub const TESTS: &[(&str, &str, bool, bool)] = &[
    ("seq-read", "read", true, true),
    ("seq-write", "write", true, false),
    ("rand-read", "randread", false, true),
    ("rand-write", "randwrite", false, false),
];

/// Whether Androbench reports `test` in MB/s (sequential) or IOPS.
pub fn in_mb_s(test: &str) -> bool {
    TESTS.iter().any(|t| t.0 == test && t.2)
}

/// A planned run's test and fio arguments (`@MNT@` standing for the
/// device's mount point).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct AndrobenchCase {
    pub test: String,
    pub fio_args: String,
}

/// The androbench kind, for one `qemu-bench` invocation.
pub struct Androbench {
    spec: AndrobenchSpec,
    quick: bool,
}

impl Androbench {
    /// The read and the write file's sizes (MiB) of this invocation.
    fn files(&self) -> (u32, u32) {
        let s = &self.spec;
        if self.quick {
            (s.quick_read_file_mb, s.quick_write_file_mb)
        } else {
            (s.read_file_mb, s.write_file_mb)
        }
    }
}

impl Kind for Androbench {
    const NAME: &'static str = "androbench";
    const SCHEMA: &'static str = "ironlift-androbench/1";
    const TABLES: &'static [&'static str] = &["androbench"];
    const CASES: Option<&'static str> = Some("tests");

    type Case = AndrobenchCase;
    type Measured = Measured;
    type Results = AndrobenchResults;

    fn new(suite: &Suite, o: &QemuBench) -> Result<Self> {
        if o.profile || o.s.count_insns || o.s.workloads.is_some() {
            bail!(
                "--profile, --count-insns and --workloads are for fio suites; {} is an androbench suite",
                suite.name
            );
        }
        let spec: AndrobenchSpec = suite
            .table::<Androbench, _>("androbench")?
            .context("kind = \"androbench\" needs an [androbench] table")?;
        let sizes = [
            spec.read_file_mb,
            spec.write_file_mb,
            spec.quick_read_file_mb,
            spec.quick_write_file_mb,
            spec.seq_bs_kb,
            spec.rand_bs_kb,
        ];
        if sizes.contains(&0) {
            bail!("[androbench]: every size must be above 0");
        }
        if spec.fio.contains(['\'', '\t', '@']) {
            bail!("[androbench] fio arguments must not hold quotes, tabs or @");
        }
        Ok(Androbench {
            spec,
            quick: o.s.quick,
        })
    }

    /// One pass over the test's file, capped at `runtime_s`.
    fn cases(&self, timing: &Timing) -> Vec<AndrobenchCase> {
        let (read_mb, write_mb) = self.files();
        TESTS
            .iter()
            .map(|&(name, rw, seq, reads)| {
                let (file, mb) = if reads {
                    ("read.dat", read_mb)
                } else {
                    ("write.dat", write_mb)
                };
                let bs = if seq {
                    self.spec.seq_bs_kb
                } else {
                    self.spec.rand_bs_kb
                };
                AndrobenchCase {
                    test: name.into(),
                    fio_args: format!(
                        "--name={name} --filename=@MNT@/{file} --rw={rw} --bs={bs}k \
                         --size={mb}m {} --runtime={}",
                        self.spec.fio, timing.runtime_s
                    ),
                }
            })
            .collect()
    }

    fn tsv(case: &AndrobenchCase) -> String {
        format!("{}\t{}", case.test, case.fio_args)
    }

    fn job_env(&self, _timing: &Timing) -> String {
        let (r, w) = self.files();
        format!("ANDROBENCH_READ_MB={r}\nANDROBENCH_WRITE_MB={w}\n")
    }

    /// mkfs and the files, then per run fio's start under TCG (about 4 s)
    /// and the test itself, a few seconds at the eMMC's pace.
    fn duration(&self, runs: usize, timing: &Timing) -> (u64, u64) {
        let estimate = 120 + runs as u64 * 7;
        (estimate, 600 + runs as u64 * (timing.runtime_s as u64 + 30))
    }

    fn read_run(&self, runs_dir: &Path, run: &Planned<AndrobenchCase>) -> Result<Measured, String> {
        read_fio_run(runs_dir, &run.id)
    }

    fn results(
        &self,
        header: Header,
        schedulers: Vec<String>,
        devices: BTreeMap<String, Device>,
        runs: Vec<AndrobenchRun>,
    ) -> AndrobenchResults {
        let (read_file_mb, write_file_mb) = self.files();
        AndrobenchResults {
            header,
            androbench: self.spec.clone(),
            read_file_mb,
            write_file_mb,
            summary: summarize(&runs, &schedulers),
            schedulers,
            devices,
            runs,
        }
    }

    fn reread(res: &mut AndrobenchResults) {
        res.summary = summarize(&res.runs, &res.schedulers);
    }

    fn write_report(dir: &Path, res: &AndrobenchResults) -> Result<()> {
        report::write(dir, res)
    }

    fn table_markdown(res: &AndrobenchResults) -> String {
        report::table_markdown(res)
    }

    fn header(res: &AndrobenchResults) -> &Header {
        &res.header
    }

    fn kcidb_runs(res: &AndrobenchResults) -> Vec<crate::kcidb::Run> {
        crate::kcidb::runs_of(
            &res.runs,
            |c| c.test.clone(),
            |_, m| super::fio::kcidb_metrics(m),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(quick: bool) -> (Suite, Androbench) {
        let s = Suite::load(&crate::util::repo_root(), "androbench").unwrap();
        let spec = s.table::<Androbench, _>("androbench").unwrap().unwrap();
        (s, Androbench { spec, quick })
    }

    #[test]
    fn the_four_tests_as_androbench_runs_them() {
        let (s, full) = kind(false);
        assert_eq!(s.kind, Androbench::NAME);
        let cases = full.cases(&s.full);
        assert_eq!(
            cases.iter().map(|c| c.test.as_str()).collect::<Vec<_>>(),
            ["seq-read", "seq-write", "rand-read", "rand-write"]
        );
        let args = |i: usize| cases[i].fio_args.as_str();
        for want in [
            "--filename=@MNT@/read.dat",
            "--rw=read",
            "--bs=256k",
            "--size=32m",
        ] {
            assert!(args(0).contains(want), "{want}: {}", args(0));
        }
        for want in [
            "--filename=@MNT@/write.dat",
            "--rw=randwrite",
            "--bs=4k",
            "--size=2m",
        ] {
            assert!(args(3).contains(want), "{want}: {}", args(3));
        }
        assert!(args(1).contains("--direct=1"));
        assert_eq!(
            full.job_env(&s.full),
            "ANDROBENCH_READ_MB=32\nANDROBENCH_WRITE_MB=2\n"
        );
        let (_, quick) = kind(true);
        let q = quick.cases(&s.quick);
        assert!(q[2].fio_args.contains("--size=16m") && q[1].fio_args.contains("--size=1m"));
        assert_eq!(
            Androbench::tsv(&q[0]),
            format!("seq-read\t{}", q[0].fio_args)
        );
        assert!(in_mb_s("seq-write") && !in_mb_s("rand-read"));
    }
}
