// SPDX-License-Identifier: GPL-2.0

//! [`Noop`] as a module core runs it ([`super::sched`]): completions
//! decide nothing, so they go through a lock-free [`CompletionLog`] and
//! reach the policy at the next insertion or dispatch; no idling, no depth
//! limits, no tunables.

use super::completions::{CompletionLog, LogWords};
use super::noop::{Noop, Slot, TUNABLE_NAMES};
use super::sched::SchedPolicy;
use super::types::Op;
use core::ffi::CStr;

impl<S> SchedPolicy for Noop<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    type Log<W: LogWords> = CompletionLog<W>;

    const TUNABLES: &'static [&'static CStr] = &TUNABLE_NAMES;

    const DEPTH_LIMITS: &'static [(Op, bool)] = &[];

    /// C noop limits no request's depth.
    #[inline]
    fn depth_limit_index(_op: Op, _sync: bool) -> Option<usize> {
        None
    }

    fn depth_limit(
        &self,
        _op: Op,
        _sync: bool,
        _nr_requests: u32,
        _capacity: usize,
    ) -> Option<u32> {
        None
    }

    /// Where the policy's checks are compiled in (otherwise the default).
    #[cfg(any(test, debug_assertions, feature = "invariants"))]
    fn check_invariants(&self) -> Result<(), &'static str> {
        Noop::check_invariants(self)
    }
}
