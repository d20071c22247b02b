// SPDX-License-Identifier: GPL-2.0

//! Device models: when each request completes, given what the device did
//! before. Deterministic; time is the simulation's.
//!
//! The disk, flash and eMMC models are `ironlift-devmodel`'s (the same
//! models the device server runs in wall-clock time), re-exported here;
//! [`Fixed`] is the guest's null_blk, made from configs/devices/guest.toml.

use ironlift_policy::{Nanos, Sector};

pub use ironlift_devmodel::emmc::Emmc;
pub use ironlift_devmodel::flash::Flash;
pub use ironlift_devmodel::hdd::{Hdd, HddSpec};
pub use ironlift_devmodel::{by_name, Command, Completion, Decided, Device, Id, SECTOR_BYTES};

/// null_blk with `irqmode=2`: every request completes `service` after it
/// starts, whatever its size, plus up to `jitter` more; `depth` at once.
///
/// The jitter stands for the timer and interrupt latency a guest sees.
/// Without it, requests that start together complete together: on a
/// device of depth 2 both slots then free at once, the next two requests
/// go out at once, and no request ever waits for a slot while a bio could
/// merge into it. With 20 µs of it deadline merges into 45 KiB requests
/// on such a device, and BFQ sends 16.5 KiB (the guest: 56-61 and 17; see
/// `tests/scenarios.rs`).
#[derive(Clone, Debug)]
pub struct Fixed {
    /// Time from start to completion.
    pub service: Nanos,
    /// Requests at once.
    pub depth: usize,
    /// The most a completion comes late, drawn evenly in `0..jitter`.
    pub jitter: Nanos,
    rng: u64,
    decided: Decided,
}

impl Fixed {
    /// A device that takes `service` per request, `depth` at once, on time.
    pub fn new(service: Nanos, depth: usize) -> Self {
        Self::jittered(service, depth, 0)
    }

    /// The same with completions up to `jitter` late (deterministic).
    pub fn jittered(service: Nanos, depth: usize, jitter: Nanos) -> Self {
        Fixed {
            service,
            depth,
            jitter,
            rng: 1,
            decided: Decided::default(),
        }
    }

    /// The guest's null_blk device `name` (configs/devices/guest.toml): its
    /// `completion_nsec` per request, `hw_queue_depth` at once, on time.
    /// Panics unless the file has it as a null_blk device with timer
    /// completions (`irqmode` 2), the mode in which a request takes
    /// `completion_nsec`.
    pub fn guest(name: &str) -> Self {
        let n = crate::guest::null_blk(name);
        assert_eq!(
            n.irqmode, 2,
            "{name}: only timer completions (irqmode 2) take a fixed time"
        );
        Fixed::new(n.completion_nsec, n.hw_queue_depth)
    }

    /// The same device with completions up to `jitter` late.
    pub fn with_jitter(self, jitter: Nanos) -> Self {
        Fixed::jittered(self.service, self.depth, jitter)
    }
}

impl Fixed {
    /// When a request starting at `now` completes.
    fn completion(&mut self, now: Nanos) -> Nanos {
        if self.jitter == 0 {
            return now + self.service;
        }
        self.rng = crate::lcg_next(self.rng);
        now + self.service + (self.rng >> 33) % self.jitter
    }
}

impl Device for Fixed {
    fn depth(&self) -> usize {
        self.depth
    }
    fn rotational(&self) -> bool {
        false
    }
    fn capacity(&self) -> Sector {
        Sector::MAX
    }
    fn submit(&mut self, now: Nanos, _: Command) -> Id {
        let id = self.decided.take_id();
        let done = self.completion(now);
        self.decided.push(done, id);
        id
    }
    fn next_event(&self) -> Option<Nanos> {
        self.decided.first()
    }
    fn poll(&mut self, now: Nanos, done: &mut Vec<Completion>) {
        self.decided.drain_until(now, done);
    }
    fn name(&self) -> String {
        let late = match self.jitter {
            0 => String::new(),
            j => format!(" (+0-{} µs)", j / 1000),
        };
        format!(
            "null_blk {} µs{late}, depth {}",
            self.service / 1000,
            self.depth
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ironlift_policy::Op;

    /// Submits a request at `now`; when it completes.
    fn start(d: &mut dyn Device, now: Nanos, sector: Sector, sectors: u32) -> Nanos {
        let cmd = Command::new(Op::Read, sector, sectors);
        ironlift_devmodel::complete_one(d, now, cmd).expect("never completed")
    }

    #[test]
    fn fixed_takes_its_time_whatever_the_size() {
        let mut d = Fixed::new(2_000_000, 2);
        assert_eq!(start(&mut d, 5, 0, 8), 2_000_005);
        assert_eq!(start(&mut d, 5, 1 << 30, 255), 2_000_005);
        // Jittered: late by less than the jitter, not always by as much.
        let mut j = Fixed::jittered(2_000_000, 2, 20_000);
        let ends: Vec<_> = (0..100).map(|_| start(&mut j, 0, 0, 8)).collect();
        assert!(ends.iter().all(|&e| (2_000_000..2_020_000).contains(&e)));
        assert!(ends.iter().any(|&e| e != ends[0]), "{ends:?}");
    }

    #[test]
    fn guest_null_blk_devices_take_their_time_from_guest_toml() {
        for (name, n) in crate::guest::null_blk_devices() {
            if n.irqmode != 2 {
                continue;
            }
            let d = Fixed::guest(&name).with_jitter(7);
            assert_eq!(
                (d.service, d.depth, d.jitter),
                (n.completion_nsec, n.hw_queue_depth, 7)
            );
        }
    }
}
