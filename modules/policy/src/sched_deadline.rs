// SPDX-License-Identifier: GPL-2.0

//! [`Deadline`] as a module core runs it ([`super::sched`]): completions
//! decide nothing by themselves, so they go through a lock-free
//! [`CompletionLog`] and reach the policy at the next insertion or
//! dispatch, as `dd_finish_request()` takes no lock; no idling; depth
//! limits from `async_depth` alone.

use super::completions::{CompletionLog, LogWords};
use super::deadline::{Deadline, Slot, QUEUE_DEPTH_TUNABLE_NAMES, TUNABLE_NAMES};
use super::sched::SchedPolicy;
use super::types::{AsyncDepth, Op, Policy};
use core::ffi::CStr;

impl<S> SchedPolicy for Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    type Log<W: LogWords> = CompletionLog<W>;

    const TUNABLES: &'static [&'static CStr] = &TUNABLE_NAMES;

    /// Linux 7.3's mq-deadline has no `async_depth` of its own.
    const QUEUE_DEPTH_TUNABLES: &'static [&'static CStr] = &QUEUE_DEPTH_TUNABLE_NAMES;

    const DEPTH_LIMITS: &'static [(Op, bool)] = &[
        (Op::Write, false),
        (Op::Write, true),
        (Op::Flush, false),
        (Op::Flush, true),
        (Op::Discard, false),
        (Op::Discard, true),
    ];

    /// As `dd_limit_depth()`, reads (all synchronous) are never limited
    /// and never looked up.
    #[inline]
    fn depth_limit_index(op: Op, sync: bool) -> Option<usize> {
        let op = match op {
            Op::Read => return None,
            Op::Write => 0,
            Op::Flush => 1,
            Op::Discard => 2,
        };
        Some(op * 2 + usize::from(sync))
    }

    /// `async_depth`, which the policy keeps within `nr_requests`.
    fn depth_limit(&self, op: Op, sync: bool, _nr_requests: u32, _capacity: usize) -> Option<u32> {
        self.async_depth_limit(op, sync)
    }

    fn set_async_depth_home(&mut self, home: AsyncDepth) {
        self.set_async_depth(home);
    }

    /// `dd_init_sched()` sets the queue's `async_depth` to `nr_requests`
    /// before its `dd_depth_updated()`.
    fn initial_queue_async_depth(nr_requests: u32) -> Option<(u32, bool)> {
        Some((Deadline::<S>::initial_queue_async_depth(nr_requests), false))
    }

    fn depth_updated(&mut self, nr_requests: u32, queue_async_depth: Option<u32>) {
        match queue_async_depth {
            Some(depth) => Deadline::queue_depth_updated(self, nr_requests, depth),
            None => Deadline::depth_updated(self, nr_requests),
        }
    }

    /// Where the policy's checks are compiled in (otherwise the default).
    #[cfg(any(test, debug_assertions, feature = "invariants"))]
    fn check_invariants(&self) -> Result<(), &'static str> {
        Deadline::check_invariants(self)
    }
}
