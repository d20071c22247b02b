// SPDX-License-Identifier: GPL-2.0

//! mq-deadline's sysfs tunables: names, reads, and writes checked against
//! the ranges in the [module documentation](super).

use super::super::types::{parse_sysfs_in_range, tunable_names};
use super::{AsyncDepth, Deadline, Nanos, Slot, TunableError, NSEC_PER_MSEC, READ, WRITE};
use core::ffi::CStr;

/// The tunables, in sysfs order: the sysfs attribute names.
pub(crate) const TUNABLE_NAMES: [&CStr; 7] = [
    c"read_expire",
    c"write_expire",
    c"writes_starved",
    c"front_merges",
    c"async_depth",
    c"fifo_batch",
    c"prio_aging_expire",
];

/// [`TUNABLE_NAMES`] as the policy matches them.
pub(super) const TUNABLES: &[&str] = &tunable_names(TUNABLE_NAMES);

/// The tunables where the queue keeps `async_depth` ([`AsyncDepth::Queue`],
/// Linux 7.3's mq-deadline): [`TUNABLE_NAMES`] without it.
pub(crate) const QUEUE_DEPTH_TUNABLE_NAMES: [&CStr; 6] = [
    c"read_expire",
    c"write_expire",
    c"writes_starved",
    c"front_merges",
    c"fifo_batch",
    c"prio_aging_expire",
];

/// [`QUEUE_DEPTH_TUNABLE_NAMES`] as the policy matches them.
pub(super) const QUEUE_DEPTH_TUNABLES: &[&str] = &tunable_names(QUEUE_DEPTH_TUNABLE_NAMES);

/// The largest value the millisecond and count tunables accept
/// (C's `INT_MAX`).
const TUNABLE_MAX: i64 = i32::MAX as i64;

impl<S> Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// The tunables' names, as the kernel in use has them.
    pub(super) fn tunable_list(&self) -> &'static [&'static str] {
        match self.depth_home {
            AsyncDepth::Elevator => TUNABLES,
            AsyncDepth::Queue => QUEUE_DEPTH_TUNABLES,
        }
    }

    /// Whether `name` is a tunable of this kernel's mq-deadline.
    fn known(&self, name: &str) -> Result<(), TunableError> {
        if self.tunable_list().contains(&name) {
            Ok(())
        } else {
            Err(TunableError::UnknownName)
        }
    }

    pub(super) fn tunable_value(&self, name: &str) -> Result<i64, TunableError> {
        self.known(name)?;
        let ms = |ns: Nanos| (ns / NSEC_PER_MSEC) as i64;
        Ok(match name {
            "read_expire" => ms(self.fifo_expire[READ]),
            "write_expire" => ms(self.fifo_expire[WRITE]),
            "writes_starved" => i64::from(self.writes_starved),
            "front_merges" => i64::from(self.front_merges),
            "async_depth" => i64::from(self.async_depth),
            "fifo_batch" => i64::from(self.fifo_batch),
            "prio_aging_expire" => ms(self.prio_aging_expire),
            _ => return Err(TunableError::UnknownName),
        })
    }

    pub(super) fn write_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        self.known(name)?;
        let (min, max) = match name {
            "read_expire" | "write_expire" | "writes_starved" | "prio_aging_expire" => {
                (0, TUNABLE_MAX)
            }
            "front_merges" => (0, 1),
            "async_depth" => (1, i64::from(self.nr_requests)),
            "fifo_batch" => (1, TUNABLE_MAX),
            _ => return Err(TunableError::UnknownName),
        };
        let value = parse_sysfs_in_range(text, min, max)?;
        // In range, so it fits a u32 and the ms products fit a u64.
        let count = value as u32;
        let ns = value as Nanos * NSEC_PER_MSEC;
        match name {
            "read_expire" => self.fifo_expire[READ] = ns,
            "write_expire" => self.fifo_expire[WRITE] = ns,
            "writes_starved" => self.writes_starved = count,
            "front_merges" => self.front_merges = value != 0,
            "async_depth" => self.async_depth = count,
            "fifo_batch" => self.fifo_batch = count,
            _ => self.prio_aging_expire = ns,
        }
        Ok(())
    }
}
