// SPDX-License-Identifier: GPL-2.0

//! A phone's eMMC of 2010 (Galaxy S class, moviNAND): one command at a
//! time, in arrival order. Reads cost a fixed command latency and the bus
//! transfer. Writes go through a block-mapped flash translation layer
//! with one open erase unit (its write buffer, a log block), programmed in
//! order: a write that continues the open unit appends to it; a write
//! elsewhere closes the open unit, copying the pages after its last write
//! from the old block (the read-modify-write), then erases a block for the
//! new unit and copies the pages before the write into it. A small random
//! write so costs about a whole unit's copy; a sequential write that fills
//! whole units costs only their programming and erases.

use crate::{ns_per_sector, Command, Completion, Decided, Device, Id, Nanos, Op, Sector};

/// An eMMC device.
#[derive(Clone, Debug)]
pub struct Emmc {
    /// Command latency of a read, before its transfer.
    pub read_latency: Nanos,
    /// Command latency of a write.
    pub write_latency: Nanos,
    /// Bus transfer of a read, ns per sector.
    pub read_sector: f64,
    /// Programming, ns per sector.
    pub program_sector: f64,
    /// Copying a page from the old block (read and program), ns per sector.
    pub copy_sector: f64,
    /// Erasing a block.
    pub erase: Nanos,
    /// Sectors per erase unit (the FTL's mapping unit).
    pub unit: Sector,
    capacity: Sector,
    /// The open unit and the sector after its last programmed one.
    open: Option<(Sector, Sector)>,
    /// When the device is free again.
    free: Nanos,
    decided: Decided,
}

impl Emmc {
    /// The Galaxy S's 8 GB moviNAND, calibrated to Androbench's figures
    /// for it: 0.7 ms a read command plus 20 MB/s; 256 KiB erase units
    /// programmed at 7.5 MB/s, copied at 12 MB/s, 1.5 ms an erase.
    pub fn galaxy_s() -> Self {
        Emmc {
            read_latency: 705_000,
            write_latency: 500_000,
            read_sector: ns_per_sector(20.0),
            program_sector: ns_per_sector(7.5),
            copy_sector: ns_per_sector(12.0),
            erase: 1_500_000,
            unit: 512,
            capacity: 8 << 21,
            open: None,
            free: 0,
            decided: Decided::default(),
        }
    }

    /// What writing `[from, to)` costs the FTL, and its new state.
    fn write_cost(&mut self, from: Sector, to: Sector) -> Nanos {
        let mut cost = 0.0;
        let mut at = from;
        while at < to {
            let u = at / self.unit;
            let unit_end = (u + 1) * self.unit;
            let end = to.min(unit_end);
            match self.open {
                Some((open, next)) if open == u && at >= next => {
                    // Continues the open unit, copying any gap.
                    cost += (at - next) as f64 * self.copy_sector;
                }
                _ => {
                    if let Some((open, next)) = self.open {
                        cost += ((open + 1) * self.unit - next) as f64 * self.copy_sector;
                    }
                    cost += self.erase as f64 + (at - u * self.unit) as f64 * self.copy_sector;
                }
            }
            cost += (end - at) as f64 * self.program_sector;
            // A full unit is closed with nothing to copy.
            self.open = (end < unit_end).then_some((u, end));
            at = end;
        }
        cost as Nanos
    }
}

impl Device for Emmc {
    fn name(&self) -> String {
        "emmc".into()
    }
    fn depth(&self) -> usize {
        1
    }
    fn rotational(&self) -> bool {
        false
    }
    fn capacity(&self) -> Sector {
        self.capacity
    }
    fn submit(&mut self, now: Nanos, cmd: Command) -> Id {
        let id = self.decided.take_id();
        let start = now.max(self.free);
        let cost = match cmd.op {
            Op::Read => self.read_latency + (self.read_sector * f64::from(cmd.sectors)) as Nanos,
            Op::Write => self.write_latency + self.write_cost(cmd.sector, cmd.end()),
            // Writes are programmed before they complete: nothing to flush.
            Op::Flush | Op::Discard => self.write_latency,
        };
        self.free = start + cost;
        self.decided.push(self.free, id);
        id
    }
    fn next_event(&self) -> Option<Nanos> {
        self.decided.first()
    }
    fn poll(&mut self, now: Nanos, done: &mut Vec<Completion>) {
        self.decided.drain_until(now, done);
    }
}
