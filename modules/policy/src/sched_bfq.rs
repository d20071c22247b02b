// SPDX-License-Identifier: GPL-2.0

//! [`Bfq`] as a module core runs it ([`super::sched`]): completions are
//! timed and may call for a queue run ([`Bfq::after_completion`]), so they
//! go through a [`TimedLog`]; the policy idles; its depth limits change
//! with weight raising. Process I/O contexts map onto its issuers through
//! [`ContextIssuers`], which frees an issuer once [`Bfq::issuer_is_free`]
//! says so.

use super::bfq::{AfterCompletion, Bfq, IssuerSlot, ReqSlot, TUNABLE_NAMES};
use super::completions::{LogWords, TimedLog};
pub use super::sched::ContextIssuers;
use super::sched::{Effect, SchedPolicy};
use super::types::{IssuerId, Nanos, Op, Policy};
use core::ffi::CStr;

impl<R, Q> SchedPolicy for Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    type Log<W: LogWords> = TimedLog<W, W>;

    const TUNABLES: &'static [&'static CStr] = &TUNABLE_NAMES;

    const IDLES: bool = true;

    /// The limits change when weight-raised queues come and go
    /// ([`Bfq::weight_raised_busy`]).
    const LIMITS_FOLLOW_STATE: bool = true;

    const DEPTH_LIMITS: &'static [(Op, bool)] = &[
        (Op::Write, false),
        (Op::Write, true),
        (Op::Read, false),
        (Op::Read, true),
    ];

    /// As `bfq_limit_depth()`: reads, and everything else as writes.
    #[inline]
    fn depth_limit_index(op: Op, sync: bool) -> Option<usize> {
        Some(usize::from(op.is_read()) * 2 + usize::from(sync))
    }

    /// The policy's limits are fractions of its storage: scaled to
    /// `nr_requests`. Where the queue keeps `async_depth` (7.3), they
    /// derive from it instead ([`Bfq::queue_depth_limit`]).
    fn depth_limit(&self, op: Op, sync: bool, nr_requests: u32, capacity: usize) -> Option<u32> {
        let l = self.async_depth_limit(op, sync)?;
        if let Some(limit) = self.queue_depth_limit(sync) {
            return Some(limit);
        }
        let capacity = capacity.max(1) as u64;
        let limit = u64::from(l) * u64::from(nr_requests) / capacity;
        Some(limit.clamp(1, u64::from(u32::MAX)) as u32)
    }

    /// `bfq_init_queue()` runs `bfq_depth_updated()` first, with the
    /// queue's `async_depth` as it was, and then sets it to three
    /// quarters of `nr_requests`.
    fn initial_queue_async_depth(nr_requests: u32) -> Option<(u32, bool)> {
        Some(((nr_requests.saturating_mul(3)) >> 2, true))
    }

    fn depth_updated(&mut self, _nr_requests: u32, queue_async_depth: Option<u32>) {
        if let Some(depth) = queue_async_depth {
            Bfq::queue_depth_updated(self, depth);
        }
    }

    #[inline]
    fn limits_state(&self) -> bool {
        self.weight_raised_busy()
    }

    /// As `bfqq_request_over_limit()`, while a weight-raised queue is
    /// active (see [`Bfq::tag_depth`]).
    const SHARES_TAGS: bool = true;

    #[inline]
    fn tags_shared(&self) -> bool {
        Bfq::tags_shared(self)
    }

    #[inline]
    fn tag_depth(&mut self, issuer: IssuerId, limit: u32) -> Option<u32> {
        Bfq::tag_depth(self, issuer, limit)
    }

    #[inline]
    fn idling_until(&self) -> Option<Nanos> {
        Bfq::idling_until(self)
    }

    /// Only for requests that would otherwise wait: C BFQ arms its idle
    /// timer, or schedules a dispatch, on most completions when each
    /// process has one request at a time (see [`Bfq::after_completion`]).
    #[inline]
    fn completion_effect(&mut self) -> Effect {
        match self.after_completion() {
            AfterCompletion::RunAt(until) => Effect::ArmRerun(until),
            AfterCompletion::RunNow => Effect::RunAsync,
            AfterCompletion::Nothing => Effect::Nothing,
        }
    }

    fn issuer_exit(&mut self, issuer: IssuerId, now: Nanos) {
        Bfq::issuer_exit(self, issuer, now);
    }

    #[inline]
    fn issuer_is_free(&self, issuer: IssuerId) -> bool {
        Bfq::issuer_is_free(self, issuer)
    }

    /// Where the policy's checks are compiled in (otherwise the default).
    #[cfg(any(test, debug_assertions, feature = "invariants"))]
    fn check_invariants(&self) -> Result<(), &'static str> {
        Bfq::check_invariants(self)
    }
}
