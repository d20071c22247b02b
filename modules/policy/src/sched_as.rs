// SPDX-License-Identifier: GPL-2.0

//! [`Anticipatory`] as a module core runs it ([`super::sched`]): a
//! completion may start the timed wait for the anticipated process or let
//! a new batch start ([`Anticipatory::after_completion`]), so completions
//! go through a [`TimedLog`], with their times; the policy idles; it
//! limits no depth; its issuers are process I/O contexts
//! ([`ContextIssuers`](super::sched::ContextIssuers)), freed once
//! [`Anticipatory::issuer_is_free`] says so.

use super::anticipatory::{AfterCompletion, Anticipatory, ContextSlot, Slot, TUNABLE_NAMES};
use super::completions::{LogWords, TimedLog};
use super::sched::{Effect, SchedPolicy};
use super::types::{IssuerId, Nanos, Op};
use core::ffi::CStr;

impl<R, C> SchedPolicy for Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    type Log<W: LogWords> = TimedLog<W, W>;

    const TUNABLES: &'static [&'static CStr] = &TUNABLE_NAMES;

    const IDLES: bool = true;

    /// AS limits no request's depth (C had no such hook).
    const DEPTH_LIMITS: &'static [(Op, bool)] = &[];

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

    #[inline]
    fn idling_until(&self) -> Option<Nanos> {
        Anticipatory::idling_until(self)
    }

    /// Only while requests wait: the end of the wait a completion started
    /// (C's `mod_timer()` in `as_antic_waitnext()`), or a run when the old
    /// batch's last request completed (C's `kblockd_schedule_work()`).
    #[inline]
    fn completion_effect(&mut self) -> Effect {
        match self.after_completion() {
            AfterCompletion::RunAt(until) => Effect::ArmRerun(until),
            AfterCompletion::RunNow => Effect::RunAsync,
            AfterCompletion::Nothing => Effect::Nothing,
        }
    }

    fn issuer_exit(&mut self, issuer: IssuerId, now: Nanos) {
        Anticipatory::issuer_exit(self, issuer, now);
    }

    #[inline]
    fn issuer_is_free(&self, issuer: IssuerId) -> bool {
        Anticipatory::issuer_is_free(self, issuer)
    }

    /// Where the policy's checks are compiled in (otherwise the default).
    #[cfg(any(test, debug_assertions, feature = "invariants"))]
    fn check_invariants(&self) -> Result<(), &'static str> {
        Anticipatory::check_invariants(self)
    }
}
