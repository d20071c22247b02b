// SPDX-License-Identifier: GPL-2.0

//! [`Cfq`] as a module core runs it ([`super::sched`]): completions are
//! timed and may call for a queue run ([`Cfq::after_completion`]), so they
//! go through a [`TimedLog`]; the policy idles; it limits no depth. Its
//! issuers are process I/O contexts ([`ContextIssuers`](super::sched::ContextIssuers)).

use super::cfq::{AfterCompletion, Cfq, QueueSlot, ReqSlot, TUNABLE_NAMES};
use super::completions::{LogWords, TimedLog};
use super::sched::{Effect, SchedPolicy};
use super::types::{IssuerId, Nanos, Op};
use core::ffi::CStr;

impl<R, Q> SchedPolicy for Cfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[QueueSlot]> + AsMut<[QueueSlot]>,
{
    type Log<W: LogWords> = TimedLog<W, W>;

    const TUNABLES: &'static [&'static CStr] = &TUNABLE_NAMES;

    const IDLES: bool = true;

    /// CFQ had no `limit_depth` (its `cfq_may_queue` throttled request
    /// allocation only while a queue waited for its slice).
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
        Cfq::idling_until(self)
    }

    /// Only for requests that would otherwise wait (see
    /// [`Cfq::after_completion`]).
    #[inline]
    fn completion_effect(&mut self) -> Effect {
        match self.after_completion() {
            AfterCompletion::RunAt(until) => Effect::ArmRerun(until),
            AfterCompletion::RunNow => Effect::RunAsync,
            AfterCompletion::Nothing => Effect::Nothing,
        }
    }

    fn issuer_exit(&mut self, issuer: IssuerId, now: Nanos) {
        Cfq::issuer_exit(self, issuer, now);
    }

    /// An issuer slot is free while no I/O context's process has its queue.
    #[inline]
    fn issuer_is_free(&self, issuer: IssuerId) -> bool {
        Cfq::issuer_is_free(self, issuer)
    }

    /// Where the policy's checks are compiled in (otherwise the default).
    #[cfg(any(test, debug_assertions, feature = "invariants"))]
    fn check_invariants(&self) -> Result<(), &'static str> {
        Cfq::check_invariants(self)
    }
}
