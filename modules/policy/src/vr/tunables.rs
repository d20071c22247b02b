// SPDX-License-Identifier: GPL-2.0

//! V(R)'s sysfs tunables: names, reads, and writes checked against the
//! ranges in the [module documentation](super).

use super::super::types::{parse_sysfs_in_range, tunable_names};
use super::{Nanos, Slot, TunableError, Vr, ASYNC, NSEC_PER_MSEC, SYNC};
use core::ffi::CStr;

/// The tunables, in sysfs order: the sysfs attribute names.
pub(crate) const TUNABLE_NAMES: [&CStr; 4] = [
    c"sync_expire",
    c"async_expire",
    c"fifo_batch",
    c"rev_penalty",
];

/// [`TUNABLE_NAMES`] as the policy matches them.
pub(super) const TUNABLES: &[&str] = &tunable_names(TUNABLE_NAMES);

/// The largest value every tunable accepts (C's `INT_MAX`).
const TUNABLE_MAX: i64 = i32::MAX as i64;

impl<S> Vr<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    pub(super) fn tunable_value(&self, name: &str) -> Result<i64, TunableError> {
        let ms = |ns: Nanos| (ns / NSEC_PER_MSEC) as i64;
        Ok(match name {
            "sync_expire" => ms(self.fifo_expire[SYNC]),
            "async_expire" => ms(self.fifo_expire[ASYNC]),
            "fifo_batch" => i64::from(self.fifo_batch),
            "rev_penalty" => i64::from(self.rev_penalty),
            _ => return Err(TunableError::UnknownName),
        })
    }

    pub(super) fn write_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        if !TUNABLES.contains(&name) {
            return Err(TunableError::UnknownName);
        }
        let value = parse_sysfs_in_range(text, 0, TUNABLE_MAX)?;
        // In range, so it fits a u32 and the ms product fits a u64.
        let ns = value as Nanos * NSEC_PER_MSEC;
        match name {
            "sync_expire" => self.fifo_expire[SYNC] = ns,
            "async_expire" => self.fifo_expire[ASYNC] = ns,
            "fifo_batch" => self.fifo_batch = value as u32,
            _ => self.rev_penalty = value as u32,
        }
        Ok(())
    }
}
