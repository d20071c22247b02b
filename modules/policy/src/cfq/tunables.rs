// SPDX-License-Identifier: GPL-2.0

//! CFQ's sysfs tunables: names (in `cfq_attrs` order), reads in their
//! units, and writes checked against the ranges in the [module
//! documentation](super).

use super::super::types::{parse_sysfs_in_range, tunable_names};
use super::{Cfq, Nanos, QueueSlot, ReqSlot, TunableError, NSEC_PER_MSEC, NSEC_PER_USEC};
use core::ffi::CStr;

/// The tunables, in sysfs order: the sysfs attribute names.
pub(crate) const TUNABLE_NAMES: [&CStr; 17] = [
    c"quantum",
    c"fifo_expire_sync",
    c"fifo_expire_async",
    c"back_seek_max",
    c"back_seek_penalty",
    c"slice_sync",
    c"slice_sync_us",
    c"slice_async",
    c"slice_async_us",
    c"slice_async_rq",
    c"slice_idle",
    c"slice_idle_us",
    c"group_idle",
    c"group_idle_us",
    c"low_latency",
    c"target_latency",
    c"target_latency_us",
];

/// [`TUNABLE_NAMES`] as the policy matches them.
pub(super) const TUNABLES: &[&str] = &tunable_names(TUNABLE_NAMES);

/// The largest value any tunable takes (C's `unsigned int`).
const UINT_MAX: i64 = u32::MAX as i64;

/// What a tunable is, for reading and writing it.
#[derive(Clone, Copy)]
enum Kind {
    /// A count or factor.
    Count,
    /// A time shown in milliseconds.
    Ms,
    /// A time shown in microseconds.
    Us,
}

/// A tunable's unit and smallest value.
fn spec(name: &str) -> Option<(Kind, i64)> {
    Some(match name {
        "quantum" | "back_seek_penalty" | "slice_async_rq" => (Kind::Count, 1),
        "back_seek_max" => (Kind::Count, 0),
        "low_latency" => (Kind::Count, 0),
        "fifo_expire_sync" | "fifo_expire_async" | "slice_sync" | "slice_async"
        | "target_latency" => (Kind::Ms, 1),
        "slice_idle" | "group_idle" => (Kind::Ms, 0),
        "slice_sync_us" | "slice_async_us" | "target_latency_us" => (Kind::Us, 1),
        "slice_idle_us" | "group_idle_us" => (Kind::Us, 0),
        _ => return None,
    })
}

impl<R, Q> Cfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[QueueSlot]> + AsMut<[QueueSlot]>,
{
    /// The time tunable behind `name` (both of its units), if it is one.
    fn time_mut(&mut self, name: &str) -> Option<&mut Nanos> {
        let s = &mut self.st;
        Some(match name.strip_suffix("_us").unwrap_or(name) {
            "fifo_expire_sync" => &mut s.fifo_expire[1],
            "fifo_expire_async" => &mut s.fifo_expire[0],
            "slice_sync" => &mut s.slice[1],
            "slice_async" => &mut s.slice[0],
            "slice_idle" => &mut s.slice_idle,
            "group_idle" => &mut s.group_idle,
            "target_latency" => &mut s.target_latency,
            _ => return None,
        })
    }

    pub(super) fn tunable_value(&self, name: &str) -> Result<i64, TunableError> {
        let s = &self.st;
        let (kind, _) = spec(name).ok_or(TunableError::UnknownName)?;
        let ns = match name.strip_suffix("_us").unwrap_or(name) {
            "fifo_expire_sync" => s.fifo_expire[1],
            "fifo_expire_async" => s.fifo_expire[0],
            "slice_sync" => s.slice[1],
            "slice_async" => s.slice[0],
            "slice_idle" => s.slice_idle,
            "group_idle" => s.group_idle,
            "target_latency" => s.target_latency,
            "quantum" => return Ok(i64::from(s.quantum)),
            "back_seek_max" => return Ok(s.back_max as i64),
            "back_seek_penalty" => return Ok(s.back_penalty as i64),
            "slice_async_rq" => return Ok(i64::from(s.slice_async_rq)),
            "low_latency" => return Ok(i64::from(s.low_latency)),
            _ => return Err(TunableError::UnknownName),
        };
        Ok(match kind {
            Kind::Us => ns / NSEC_PER_USEC,
            _ => ns / NSEC_PER_MSEC,
        } as i64)
    }

    pub(super) fn write_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        let (kind, min) = spec(name).ok_or(TunableError::UnknownName)?;
        let max = if name == "low_latency" { 1 } else { UINT_MAX };
        // In range, so it fits a u32 and the time products fit a u64.
        let value = parse_sysfs_in_range(text, min, max)? as u64;
        let ns = match kind {
            Kind::Ms => value * NSEC_PER_MSEC,
            Kind::Us => value * NSEC_PER_USEC,
            Kind::Count => value,
        };
        if let Some(t) = self.time_mut(name) {
            *t = ns;
            return Ok(());
        }
        let s = &mut self.st;
        match name {
            "quantum" => s.quantum = value as u32,
            "back_seek_max" => s.back_max = value,
            "back_seek_penalty" => s.back_penalty = value,
            "slice_async_rq" => s.slice_async_rq = value as u32,
            "low_latency" => s.low_latency = value != 0,
            _ => return Err(TunableError::UnknownName),
        }
        Ok(())
    }
}
