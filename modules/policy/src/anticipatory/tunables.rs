// SPDX-License-Identifier: GPL-2.0

//! AS's sysfs tunables: names (in C's order), reads, and writes checked
//! against the ranges in the [module documentation](super).

use super::super::types::{parse_sysfs_in_range, tunable_names};
use super::{Anticipatory, ContextSlot, Nanos, Slot, TunableError, ASYNC, NSEC_PER_MSEC, SYNC};
use core::ffi::CStr;

/// The tunables, in sysfs order (C's `as_attrs`): the sysfs attribute
/// names.
pub(crate) const TUNABLE_NAMES: [&CStr; 6] = [
    c"est_time",
    c"read_expire",
    c"write_expire",
    c"antic_expire",
    c"read_batch_expire",
    c"write_batch_expire",
];

/// [`TUNABLE_NAMES`] as the policy matches them.
pub(super) const TUNABLES: &[&str] = &tunable_names(TUNABLE_NAMES);

/// The largest value the millisecond tunables accept (C's `INT_MAX`).
const TUNABLE_MAX: i64 = i32::MAX as i64;

impl<R, C> Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    pub(super) fn tunable_value(&self, name: &str) -> Result<i64, TunableError> {
        let ms = |ns: Nanos| (ns / NSEC_PER_MSEC) as i64;
        Ok(match name {
            "est_time" => ms(self.new_ttime_mean),
            "read_expire" => ms(self.fifo_expire[SYNC]),
            "write_expire" => ms(self.fifo_expire[ASYNC]),
            "antic_expire" => ms(self.antic_expire),
            "read_batch_expire" => ms(self.batch_expire[SYNC]),
            "write_batch_expire" => ms(self.batch_expire[ASYNC]),
            _ => return Err(TunableError::UnknownName),
        })
    }

    pub(super) fn write_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        let target = match name {
            "est_time" => return Err(TunableError::ReadOnly),
            "read_expire" => &mut self.fifo_expire[SYNC],
            "write_expire" => &mut self.fifo_expire[ASYNC],
            "antic_expire" => &mut self.antic_expire,
            "read_batch_expire" => &mut self.batch_expire[SYNC],
            "write_batch_expire" => &mut self.batch_expire[ASYNC],
            _ => return Err(TunableError::UnknownName),
        };
        let value = parse_sysfs_in_range(text, 0, TUNABLE_MAX)?;
        // In range, so the product fits a u64.
        *target = value as Nanos * NSEC_PER_MSEC;
        Ok(())
    }
}
