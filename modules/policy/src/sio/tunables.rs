// SPDX-License-Identifier: GPL-2.0

//! SIO's sysfs tunables: names, reads, and writes checked against the
//! ranges in the [module documentation](super).

use super::super::types::{parse_sysfs_in_range, tunable_names};
use super::{fifo, Nanos, Sio, Slot, TunableError, ASYNC, NSEC_PER_MSEC, READ, SYNC, WRITE};
use core::ffi::CStr;

/// The tunables, in sysfs order: the sysfs attribute names.
pub(crate) const TUNABLE_NAMES: [&CStr; 6] = [
    c"sync_read_expire",
    c"sync_write_expire",
    c"async_read_expire",
    c"async_write_expire",
    c"fifo_batch",
    c"writes_starved",
];

/// [`TUNABLE_NAMES`] as the policy matches them.
pub(super) const TUNABLES: &[&str] = &tunable_names(TUNABLE_NAMES);

/// The largest value every tunable accepts (C's `INT_MAX`).
const TUNABLE_MAX: i64 = i32::MAX as i64;

/// The FIFO whose expire the tunable `name` is, if it is one.
fn expire_fifo(name: &str) -> Option<usize> {
    Some(match name {
        "sync_read_expire" => fifo(SYNC, READ),
        "sync_write_expire" => fifo(SYNC, WRITE),
        "async_read_expire" => fifo(ASYNC, READ),
        "async_write_expire" => fifo(ASYNC, WRITE),
        _ => return None,
    })
}

impl<S> Sio<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    pub(super) fn tunable_value(&self, name: &str) -> Result<i64, TunableError> {
        if let Some(q) = expire_fifo(name) {
            return Ok((self.fifo_expire[q] / NSEC_PER_MSEC) as i64);
        }
        Ok(match name {
            "fifo_batch" => i64::from(self.fifo_batch),
            "writes_starved" => i64::from(self.writes_starved),
            _ => return Err(TunableError::UnknownName),
        })
    }

    pub(super) fn write_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        let expire = expire_fifo(name);
        if expire.is_none() && !matches!(name, "fifo_batch" | "writes_starved") {
            return Err(TunableError::UnknownName);
        }
        let value = parse_sysfs_in_range(text, 0, TUNABLE_MAX)?;
        // In range, so it fits a u32 and the ms product fits a u64.
        match (expire, name) {
            (Some(q), _) => self.fifo_expire[q] = value as Nanos * NSEC_PER_MSEC,
            (None, "fifo_batch") => self.fifo_batch = value as u32,
            _ => self.writes_starved = value as u32,
        }
        Ok(())
    }
}
