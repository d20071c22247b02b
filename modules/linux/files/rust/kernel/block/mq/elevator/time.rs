// SPDX-License-Identifier: GPL-2.0

//! Clocks for schedulers' timestamps.
//!
//! C header: [`include/linux/timekeeping.h`](srctree/include/linux/timekeeping.h)

use crate::bindings;
use core::ptr;

/// Monotonic time in nanoseconds (`ktime_get_ns()`).
///
/// Reads the clocksource, which can be slow (an HPET read is a device
/// access); see [`jiffies_ns`] for per-request timestamps.
#[inline]
pub fn ktime_get_ns() -> u64 {
    // SAFETY: `ktime_get_ns()` can be called from any context.
    unsafe { bindings::ktime_get_ns() }
}

/// The block layer's clock (`blk_time_get_ns()`, what BFQ reads): monotonic
/// nanoseconds, read once per plug in task context (the plug caches it
/// until the task sleeps or is preempted), else [`ktime_get_ns`].
#[inline]
pub fn blk_time_get_ns() -> u64 {
    // SAFETY: `blk_time_get_ns()` can be called from any context; it only
    // touches the current task's plug in task context.
    unsafe { bindings::blk_time_get_ns() }
}

/// The tick count in nanoseconds (`jiffies64_to_nsecs(get_jiffies_64())`):
/// the time mq-deadline's deadlines use (`jiffies`).
#[inline]
pub fn jiffies_ns() -> u64 {
    const NSEC_PER_SEC: u64 = bindings::NSEC_PER_SEC as u64;
    const HZ: u64 = bindings::HZ as u64;
    if cfg!(CONFIG_64BIT) && NSEC_PER_SEC % HZ == 0 {
        // What `get_jiffies_64()` and `jiffies64_to_nsecs()` come to on
        // 64-bit machines with a whole number of nanoseconds per tick: one
        // load and one multiplication instead of two calls per timestamp;
        // mq-deadline reads `jiffies` once per request.
        // SAFETY: `jiffies` is a live static, updated by the timer tick; a
        // volatile load of it is `READ_ONCE()`, and an aligned word cannot
        // tear.
        let j = unsafe { ptr::read_volatile(&raw const bindings::jiffies) };
        // Lossless: `unsigned long` is 64 bits wide here.
        (j as u64).wrapping_mul(NSEC_PER_SEC / HZ)
    } else {
        // SAFETY: Both can be called from any context.
        unsafe { bindings::jiffies64_to_nsecs(bindings::get_jiffies_64()) }
    }
}
