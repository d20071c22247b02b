// SPDX-License-Identifier: GPL-2.0

//! [`Vr`] as a module core runs it ([`super::sched`]): completions decide
//! nothing, so they go through a lock-free [`CompletionLog`] and reach the
//! policy at the next insertion or dispatch; no idling; no depth limits
//! (C V(R) had none).

use super::completions::{CompletionLog, LogWords};
use super::sched::SchedPolicy;
use super::types::Op;
use super::vr::{Slot, Vr, TUNABLE_NAMES};
use core::ffi::CStr;

impl<S> SchedPolicy for Vr<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    type Log<W: LogWords> = CompletionLog<W>;

    const TUNABLES: &'static [&'static CStr] = &TUNABLE_NAMES;

    const DEPTH_LIMITS: &'static [(Op, bool)] = &[];

    /// C V(R) limits no request's depth.
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
        Vr::check_invariants(self)
    }
}
