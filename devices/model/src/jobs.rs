// SPDX-License-Identifier: GPL-2.0

//! Fixed fio-like jobs, run against a model in virtual time with no
//! scheduler (commands reach the device in the order the jobs issue
//! them, as under `none`), and the figures the models are calibrated to.
//!
//! A job keeps `iodepth` commands in flight per process and issues the
//! next one the moment one completes. Throughput counts the commands
//! that complete in the measured window, after a ramp, as fio's
//! `ramp_time` and `runtime` do.

use crate::{Command, Completion, Device, Id, Nanos, Op, Sector, SECTOR_BYTES};
use std::collections::HashMap;

/// What a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rw {
    /// Sequential reads (fio `rw=read`).
    Read,
    /// Sequential writes.
    Write,
    /// Random reads, block-aligned.
    RandRead,
    /// Random writes, block-aligned.
    RandWrite,
}

impl Rw {
    /// fio's name for it.
    pub const fn fio(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
        }
    }

    fn op(self) -> Op {
        match self {
            Rw::Read | Rw::RandRead => Op::Read,
            Rw::Write | Rw::RandWrite => Op::Write,
        }
    }
}

/// A fio-like job.
#[derive(Clone, Copy, Debug)]
pub struct Job {
    /// Its name in tables.
    pub name: &'static str,
    /// What it does.
    pub rw: Rw,
    /// Bytes per command.
    pub bs: u32,
    /// Commands in flight per process.
    pub iodepth: u32,
    /// Processes, each over its own equal slice of the region.
    pub numjobs: u32,
    /// Bytes from the device's start the job covers (0: all of it).
    pub region: u64,
}

const KIB: u32 = 1024;
const MIB: u64 = 1 << 20;

/// The fixed jobs: the disk and SSD ones over the whole device, and
/// Androbench's four as the emmc figures were measured (256 KiB
/// sequential, 4 KiB random, a 16 MiB file read and a 1 MiB file
/// written).
pub const JOBS: &[Job] = &[
    job("seq-read-4k-qd1", Rw::Read, 4 * KIB, 1, 0),
    job("seq-write-4k-qd1", Rw::Write, 4 * KIB, 1, 0),
    job("rand-read-4k-qd1", Rw::RandRead, 4 * KIB, 1, 0),
    job("rand-read-4k-qd8", Rw::RandRead, 4 * KIB, 8, 0),
    // QEMU's NBD client keeps at most 16 requests in flight per
    // connection: what a guest's depth 32 becomes at the device server.
    job("rand-read-4k-qd16", Rw::RandRead, 4 * KIB, 16, 0),
    job("rand-read-4k-qd32", Rw::RandRead, 4 * KIB, 32, 0),
    job("rand-write-4k-qd1", Rw::RandWrite, 4 * KIB, 1, 0),
    job("seq-read-1m-qd4", Rw::Read, 1024 * KIB, 4, 0),
    job("seq-write-1m-qd4", Rw::Write, 1024 * KIB, 4, 0),
    job("androbench-seq-read", Rw::Read, 256 * KIB, 1, 16 * MIB),
    job("androbench-seq-write", Rw::Write, 256 * KIB, 1, MIB),
    job("androbench-rand-read", Rw::RandRead, 4 * KIB, 1, 16 * MIB),
    job("androbench-rand-write", Rw::RandWrite, 4 * KIB, 1, MIB),
];

const fn job(name: &'static str, rw: Rw, bs: u32, iodepth: u32, region: u64) -> Job {
    Job {
        name,
        rw,
        bs,
        iodepth,
        numjobs: 1,
        region,
    }
}

/// The job of that name.
pub fn find(name: &str) -> Option<&'static Job> {
    JOBS.iter().find(|j| j.name == name)
}

/// Which figure a target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// 10^6 bytes a second.
    MbS,
    /// Commands a second.
    Iops,
}

/// A figure a model is calibrated to.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The model ([`crate::by_name`]).
    pub device: &'static str,
    /// The job ([`JOBS`]).
    pub job: &'static str,
    /// Which figure.
    pub metric: Metric,
    /// Its value.
    pub value: f64,
    /// Where it comes from.
    pub source: &'static str,
}

/// How far a prediction may be from its target, as a fraction.
pub const TOLERANCE: f64 = 0.15;

const fn target(
    device: &'static str,
    job: &'static str,
    metric: Metric,
    value: f64,
    source: &'static str,
) -> Target {
    Target {
        device,
        job,
        metric,
        value,
        source,
    }
}

/// The calibration targets.
pub const TARGETS: &[Target] = &[
    target(
        "hdd-7200",
        "seq-read-4k-qd1",
        Metric::MbS,
        17.0,
        "2011 benchmark, direct I/O",
    ),
    target(
        "hdd-7200",
        "seq-write-4k-qd1",
        Metric::MbS,
        14.0,
        "2011 benchmark, direct I/O",
    ),
    target(
        "hdd-7200",
        "rand-read-4k-qd1",
        Metric::Iops,
        80.0,
        "75-85 over the whole disk",
    ),
    target(
        "hdd-7200",
        "rand-read-4k-qd32",
        Metric::Iops,
        160.0,
        "NCQ: about 2x depth 1",
    ),
    target(
        "hdd-7200",
        "seq-read-1m-qd4",
        Metric::MbS,
        140.0,
        "outer tracks' media rate",
    ),
    target(
        "hdd-raptor",
        "rand-read-4k-qd1",
        Metric::Iops,
        135.0,
        "130-140",
    ),
    target(
        "hdd-raptor",
        "seq-read-1m-qd4",
        Metric::MbS,
        85.0,
        "outer tracks",
    ),
    target(
        "emmc",
        "androbench-seq-read",
        Metric::MbS,
        19.0,
        "Androbench, Galaxy S",
    ),
    target(
        "emmc",
        "androbench-seq-write",
        Metric::MbS,
        7.0,
        "Androbench: 5-9",
    ),
    target(
        "emmc",
        "androbench-rand-read",
        Metric::Iops,
        1100.0,
        "Androbench",
    ),
    target(
        "emmc",
        "androbench-rand-write",
        Metric::Iops,
        42.0,
        "Androbench: 35-50",
    ),
    target(
        "sata-ssd",
        "rand-read-4k-qd1",
        Metric::Iops,
        11_000.0,
        "80-100 us per read",
    ),
    target(
        "sata-ssd",
        "rand-read-4k-qd32",
        Metric::Iops,
        90_000.0,
        "8 channels",
    ),
    target(
        "sata-ssd",
        "seq-read-1m-qd4",
        Metric::MbS,
        530.0,
        "SATA link",
    ),
    target(
        "sata-ssd",
        "seq-write-1m-qd4",
        Metric::MbS,
        300.0,
        "PM851 128 GB",
    ),
];

/// What a job gives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// 10^6 bytes a second.
    pub mb_s: f64,
    /// Commands a second.
    pub iops: f64,
    /// Commands completed in the window.
    pub ios: u64,
}

impl Prediction {
    /// The figure `m`.
    pub fn get(&self, m: Metric) -> f64 {
        match m {
            Metric::MbS => self.mb_s,
            Metric::Iops => self.iops,
        }
    }
}

/// Virtual time before the window (fio's `ramp_time`) and the window.
pub const RAMP: Nanos = 1_000_000_000;
/// See [`RAMP`].
pub const RUNTIME: Nanos = 5_000_000_000;

struct Proc {
    first: Sector,
    blocks: u64,
    next: u64,
    rng: u64,
}

/// Runs `job` on `dev` from idle, over `region` bytes if given (else the
/// job's own region), and measures it.
pub fn run(dev: &mut dyn Device, job: &Job, region: Option<u64>) -> Prediction {
    let bs = (u64::from(job.bs) / SECTOR_BYTES).max(1);
    let cap = dev.capacity();
    let region = match region.unwrap_or(job.region) {
        0 => cap,
        r => (r / SECTOR_BYTES).min(cap),
    };
    let n = u64::from(job.numjobs.max(1));
    let slice = region / n;
    let mut procs: Vec<Proc> = (0..n)
        .map(|i| Proc {
            first: i * slice,
            blocks: (slice / bs).max(1),
            next: 0,
            rng: 0x2545_f491_4f6c_dd1d ^ (i + 1),
        })
        .collect();
    let mut owner: HashMap<Id, usize> = HashMap::new();
    let mut issue = |dev: &mut dyn Device, p: usize, now: Nanos, owner: &mut HashMap<Id, usize>| {
        let pr = &mut procs[p];
        let block = match job.rw {
            Rw::Read | Rw::Write => {
                let b = pr.next;
                pr.next = (pr.next + 1) % pr.blocks;
                b
            }
            Rw::RandRead | Rw::RandWrite => {
                pr.rng = crate::lcg_next(pr.rng);
                (pr.rng >> 20) % pr.blocks
            }
        };
        let cmd = Command::new(job.rw.op(), pr.first + block * bs, bs as u32);
        owner.insert(dev.submit(now, cmd), p);
    };
    for p in 0..n as usize {
        for _ in 0..job.iodepth.max(1) {
            issue(dev, p, 0, &mut owner);
        }
    }
    let end = RAMP + RUNTIME;
    let mut ios = 0;
    let mut done: Vec<Completion> = Vec::new();
    while let Some(t) = dev.next_event() {
        if t > end {
            break;
        }
        done.clear();
        dev.poll(t, &mut done);
        for c in &done {
            if c.at > RAMP {
                ios += 1;
            }
            if let Some(p) = owner.remove(&c.id) {
                issue(dev, p, t, &mut owner);
            }
        }
    }
    let secs = RUNTIME as f64 / 1e9;
    let iops = ios as f64 / secs;
    Prediction {
        mb_s: iops * f64::from(job.bs) / 1e6,
        iops,
        ios,
    }
}

/// A target's prediction, from a fresh model.
pub fn predict(t: &Target) -> Option<Prediction> {
    let mut dev = crate::by_name(t.device, None)?;
    Some(run(dev.as_mut(), find(t.job)?, None))
}

/// Whether `got` is within [`TOLERANCE`] of `target`.
pub fn within(got: f64, target: f64) -> bool {
    (got - target).abs() <= TOLERANCE * target
}
