// SPDX-License-Identifier: GPL-2.0

//! Timing models of block devices: when each command a device receives
//! completes, given everything it received before. Deterministic; time is
//! passed in as nanoseconds, so the same models serve a simulator's
//! virtual time and a device server's wall-clock time.
//!
//! A device receives commands ([`Device::submit`]), decides which queued
//! command it serves next (a disk with command queueing reorders them)
//! and reports completions ([`Device::poll`]). [`Device::next_event`] says
//! when the caller should poll next: it is the earliest time at which the
//! model completes a command or makes a decision, if nothing else arrives
//! meanwhile.
//!
//! - [`hdd`]: hard disks with seeks, rotation, zones, a read-ahead and a
//!   write-back cache and NCQ (`hdd-7200`, `hdd-raptor`).
//! - [`flash`]: SSDs and NVMe: per-command latency, internal parallelism,
//!   a bandwidth cap (`sata-ssd`, `nvme`).
//! - [`emmc`]: a phone's eMMC of 2010: one command at a time, slow
//!   programming and an erase-unit read-modify-write for small writes.
//! - [`jobs`]: fixed fio-like jobs run against a model in virtual time,
//!   and the figures the models are calibrated to.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod emmc;
pub mod flash;
pub mod hdd;
pub mod jobs;

pub use ironlift_policy::{Nanos, Op, Sector};

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// 512-byte sectors.
pub const SECTOR_BYTES: u64 = 512;

/// A command's number, given by the device that received it (in the
/// order received, from 0).
pub type Id = u64;

/// A command as the device receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    /// What it does.
    pub op: Op,
    /// First sector (0 for a flush).
    pub sector: Sector,
    /// Length in sectors (0 for a flush).
    pub sectors: u32,
}

impl Command {
    /// A command of `op` over `sectors` at `sector`.
    pub const fn new(op: Op, sector: Sector, sectors: u32) -> Self {
        Command {
            op,
            sector,
            sectors,
        }
    }

    /// The sector after its last one.
    pub fn end(&self) -> Sector {
        self.sector.saturating_add(u64::from(self.sectors))
    }
}

/// A command completed at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Completion {
    /// When it completed.
    pub at: Nanos,
    /// Which command.
    pub id: Id,
}

/// A block device's timing.
///
/// Calls come in time order: each `now` is at least the previous one.
/// Completions are never earlier than their command's submission.
pub trait Device {
    /// A name for reports.
    fn name(&self) -> String;
    /// Commands the device holds at once (the driver's tags: NCQ's 32 on
    /// SATA, 1 without command queueing). More may be submitted; the
    /// excess waits, in order, as in the host's queue.
    fn depth(&self) -> usize;
    /// Whether the block layer would call it rotational.
    fn rotational(&self) -> bool;
    /// Sectors the model covers.
    fn capacity(&self) -> Sector;
    /// `cmd` arrives at `now`: its number.
    fn submit(&mut self, now: Nanos, cmd: Command) -> Id;
    /// When to poll next: the earliest completion or decision the model
    /// has ahead, if nothing else is submitted first. `None`: idle.
    fn next_event(&self) -> Option<Nanos>;
    /// Advances to `now` and appends the completions at or before `now`,
    /// earliest first.
    fn poll(&mut self, now: Nanos, done: &mut Vec<Completion>);
}

impl<D: Device + ?Sized> Device for Box<D> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn depth(&self) -> usize {
        (**self).depth()
    }
    fn rotational(&self) -> bool {
        (**self).rotational()
    }
    fn capacity(&self) -> Sector {
        (**self).capacity()
    }
    fn submit(&mut self, now: Nanos, cmd: Command) -> Id {
        (**self).submit(now, cmd)
    }
    fn next_event(&self) -> Option<Nanos> {
        (**self).next_event()
    }
    fn poll(&mut self, now: Nanos, done: &mut Vec<Completion>) {
        (**self).poll(now, done)
    }
}

/// Submits `cmd` to `dev` at `now` and runs the model until that command
/// completes: when it did, or `None` if the model went idle without
/// completing it. Completions of other commands on the way are dropped.
pub fn complete_one(dev: &mut dyn Device, now: Nanos, cmd: Command) -> Option<Nanos> {
    let id = dev.submit(now, cmd);
    let mut done = Vec::new();
    while let Some(t) = dev.next_event() {
        dev.poll(t, &mut done);
        if let Some(c) = done.iter().find(|c| c.id == id) {
            return Some(c.at);
        }
    }
    None
}

/// Completions already decided, earliest first; what a device that fixes a
/// command's completion when it receives it keeps.
#[derive(Clone, Debug, Default)]
pub struct Decided {
    heap: BinaryHeap<Reverse<Completion>>,
    next_id: Id,
}

impl Decided {
    /// A number for the next command.
    pub fn take_id(&mut self) -> Id {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Command `id` completes at `at`.
    pub fn push(&mut self, at: Nanos, id: Id) {
        self.heap.push(Reverse(Completion { at, id }));
    }

    /// The earliest completion.
    pub fn first(&self) -> Option<Nanos> {
        self.heap.peek().map(|c| c.0.at)
    }

    /// Moves the completions at or before `now` to `done`.
    pub fn drain_until(&mut self, now: Nanos, done: &mut Vec<Completion>) {
        while let Some(&Reverse(c)) = self.heap.peek() {
            if c.at > now {
                break;
            }
            self.heap.pop();
            done.push(c);
        }
    }

    /// Commands decided but not yet reported.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// Nanoseconds per sector at `mb_s` (10^6 bytes a second).
pub fn ns_per_sector(mb_s: f64) -> f64 {
    SECTOR_BYTES as f64 * 1e3 / mb_s
}

/// One step of the 64-bit LCG (Knuth's MMIX constants) behind the models'
/// deterministic randomness; its high bits are the random ones.
pub fn lcg_next(x: u64) -> u64 {
    x.wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}

/// How a model is set up beyond its name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Setup {
    /// A disk's command queue depth (1: no command queueing); flash
    /// devices ignore it.
    pub ncq: Option<usize>,
    /// Latency the path to the device adds outside the model (a guest's
    /// kernel, QEMU, NBD), taken off each command's own latency (down to
    /// 0), so that path and model together take about what the model
    /// alone does.
    pub path_latency: Nanos,
}

/// Every model by the name the device server and the job table use
/// ([`MODELS`], and `null`), set up as `setup` says.
///
/// `null` completes every command when it arrives: with it, what a client
/// measures is the path to the device alone.
pub fn build(name: &str, setup: Setup) -> Option<Box<dyn Device + Send>> {
    let pl = setup.path_latency;
    let hdd = |mut spec: hdd::HddSpec| {
        if let Some(n) = setup.ncq {
            spec.ncq_depth = n.max(1);
        }
        spec.read_overhead = spec.read_overhead.saturating_sub(pl);
        spec.write_overhead = spec.write_overhead.saturating_sub(pl);
        Box::new(hdd::Hdd::new(spec)) as Box<dyn Device + Send>
    };
    let flash = |mut f: flash::Flash| {
        f.read_latency = f.read_latency.saturating_sub(pl);
        f.write_latency = f.write_latency.saturating_sub(pl);
        f.flush_latency = f.flush_latency.saturating_sub(pl);
        Box::new(f) as Box<dyn Device + Send>
    };
    Some(match name {
        "hdd-7200" => hdd(hdd::HddSpec::hd103sj()),
        "hdd-raptor" => hdd(hdd::HddSpec::raptor()),
        "sata-ssd" => flash(flash::Flash::sata_ssd()),
        "nvme" => flash(flash::Flash::nvme()),
        "null" => flash(flash::Flash::null()),
        "emmc" => {
            let mut e = emmc::Emmc::galaxy_s();
            e.read_latency = e.read_latency.saturating_sub(pl);
            e.write_latency = e.write_latency.saturating_sub(pl);
            Box::new(e)
        }
        _ => return None,
    })
}

/// [`build`] with only the command queue depth set.
pub fn by_name(name: &str, ncq: Option<usize>) -> Option<Box<dyn Device + Send>> {
    build(
        name,
        Setup {
            ncq,
            ..Setup::default()
        },
    )
}

/// The calibrated models [`build`] knows (it also knows `null`).
pub const MODELS: [&str; 5] = ["hdd-7200", "hdd-raptor", "sata-ssd", "nvme", "emmc"];
