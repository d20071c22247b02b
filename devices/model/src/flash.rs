// SPDX-License-Identifier: GPL-2.0

//! Flash behind a controller (a SATA SSD, NVMe): each command costs a
//! latency of its own, which commands in flight overlap up to the
//! device's internal parallelism (channels and dies), plus its bytes over
//! one shared transfer channel (the SATA link, or the controller's
//! bandwidth). Commands start in the order they arrive, up to the
//! device's depth; the rest wait for a tag.

use crate::{ns_per_sector, Command, Completion, Decided, Device, Id, Nanos, Op, Sector};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A flash device.
#[derive(Clone, Debug)]
pub struct Flash {
    name: &'static str,
    /// Commands at once (its tags).
    pub depth: usize,
    /// Commands whose latencies overlap; the rest wait for a unit.
    pub parallel: usize,
    /// Latency of a read before its transfer.
    pub read_latency: Nanos,
    /// Latency of a write (into the controller's buffer) before its
    /// transfer.
    pub write_latency: Nanos,
    /// What a flush costs after the writes before it completed.
    pub flush_latency: Nanos,
    /// Transfer time per sector of a read, in ns.
    pub read_sector: f64,
    /// The same for a write.
    pub write_sector: f64,
    capacity: Sector,
    /// When each unit is free again.
    units: Vec<Nanos>,
    /// When the transfer channel is free again.
    channel: Nanos,
    /// Completion times of the commands holding a tag.
    held: BinaryHeap<Reverse<Nanos>>,
    /// The latest completion decided so far (what a flush waits for).
    last: Nanos,
    decided: Decided,
}

impl Flash {
    /// A device of `depth` tags, `parallel` units, read and write
    /// latencies, and read and write bandwidths in MB/s.
    pub fn new(
        name: &'static str,
        depth: usize,
        parallel: usize,
        latency: (Nanos, Nanos),
        mb_per_s: (f64, f64),
        capacity: Sector,
    ) -> Self {
        Flash {
            name,
            depth: depth.max(1),
            parallel: parallel.max(1),
            read_latency: latency.0,
            write_latency: latency.1,
            flush_latency: latency.1,
            read_sector: ns_per_sector(mb_per_s.0),
            write_sector: ns_per_sector(mb_per_s.1),
            capacity,
            units: vec![0; parallel.max(1)],
            channel: 0,
            held: BinaryHeap::new(),
            last: 0,
            decided: Decided::default(),
        }
    }

    /// A datacenter NVMe drive: 80 µs reads, 20 µs (cached) writes, 32
    /// commands in parallel, 3 GB/s reads and 2 GB/s writes, 1023 tags.
    pub fn nvme() -> Self {
        Flash::new(
            "nvme",
            1023,
            32,
            (80_000, 20_000),
            (3000.0, 2000.0),
            1 << 32,
        )
    }

    /// No device at all: every command completes when it arrives, 1023 at
    /// once.
    pub fn null() -> Self {
        let mut f = Flash::new("null", 1023, 1, (0, 0), (1e12, 1e12), 1 << 40);
        f.flush_latency = 0;
        f
    }

    /// A SATA SSD of the Samsung PM851 128 GB class: NCQ's 32 tags, 8
    /// commands in parallel (its channels), 80 µs to read a page and
    /// 45 µs to take a write into its buffer, and the link's 530 MB/s for
    /// reads; writes program at 300 MB/s.
    pub fn sata_ssd() -> Self {
        Flash::new(
            "sata-ssd",
            32,
            8,
            (80_000, 45_000),
            (530.0, 300.0),
            250_069_680,
        )
    }
}

impl Device for Flash {
    fn name(&self) -> String {
        self.name.into()
    }
    fn depth(&self) -> usize {
        self.depth
    }
    fn rotational(&self) -> bool {
        false
    }
    fn capacity(&self) -> Sector {
        self.capacity
    }
    fn submit(&mut self, now: Nanos, cmd: Command) -> Id {
        let id = self.decided.take_id();
        // A tag: free now, or when the command holding the first one to
        // free completes.
        while self.held.peek().is_some_and(|t| t.0 <= now) {
            self.held.pop();
        }
        let mut start = now;
        if self.held.len() >= self.depth {
            start = self.held.pop().map_or(now, |t| t.0.max(now));
        }
        let done = match cmd.op {
            Op::Flush => start.max(self.last) + self.flush_latency,
            Op::Discard => start + self.write_latency,
            Op::Read | Op::Write => {
                let (latency, per) = if cmd.op == Op::Read {
                    (self.read_latency, self.read_sector)
                } else {
                    (self.write_latency, self.write_sector)
                };
                // The unit free first takes it.
                let (i, free) = self
                    .units
                    .iter()
                    .copied()
                    .enumerate()
                    .min_by_key(|&(_, t)| t)
                    .unwrap_or((0, 0));
                let ready = start.max(free) + latency;
                let done = ready.max(self.channel) + (per * f64::from(cmd.sectors)) as Nanos;
                self.channel = done;
                if let Some(u) = self.units.get_mut(i) {
                    *u = done;
                }
                done
            }
        };
        self.last = self.last.max(done);
        self.held.push(Reverse(done));
        self.decided.push(done, id);
        id
    }
    fn next_event(&self) -> Option<Nanos> {
        self.decided.first()
    }
    fn poll(&mut self, now: Nanos, done: &mut Vec<Completion>) {
        self.decided.drain_until(now, done);
    }
}
