// SPDX-License-Identifier: GPL-2.0

//! [`Bfq`] as a module core runs it ([`super::sched`]): completions are
//! timed and may call for a queue run ([`Bfq::after_completion`]), so they
//! go through a [`TimedLog`]; the policy idles; its depth limits change
//! with weight raising. Also how process I/O contexts map onto the
//! policy's issuers ([`ContextIssuers`]).

use super::bfq::{AfterCompletion, Bfq, IssuerSlot, ReqSlot, TUNABLE_NAMES};
use super::completions::{LogWords, TimedLog};
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
    /// `nr_requests`.
    fn depth_limit(&self, op: Op, sync: bool, nr_requests: u32, capacity: usize) -> Option<u32> {
        let l = self.async_depth_limit(op, sync)?;
        let capacity = capacity.max(1) as u64;
        let limit = u64::from(l) * u64::from(nr_requests) / capacity;
        Some(limit.clamp(1, u64::from(u32::MAX)) as u32)
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

    /// Where the policy's checks are compiled in (otherwise the default).
    #[cfg(any(test, debug_assertions, feature = "invariants"))]
    fn check_invariants(&self) -> Result<(), &'static str> {
        Bfq::check_invariants(self)
    }
}

/// Issuers for process I/O contexts, over `count` issuer slots of which
/// the last is shared: each context keeps a word (rust-bfq: its `io_cq`'s),
/// [`ContextIssuers::UNASSIGNED`] at first. A context's first request
/// takes a free slot of its own; requests without a context, contexts that
/// found no free slot and contexts that exited use the shared one. A slot
/// is free again once the policy released it after the context's exit
/// ([`Bfq::issuer_exit`], [`Bfq::issuer_is_free`]).
pub struct ContextIssuers {
    count: usize,
    /// Where the search for a free slot starts.
    next: usize,
}

impl ContextIssuers {
    /// The word of a context that has no issuer yet.
    pub const UNASSIGNED: usize = 0;
    /// The word of a context that found no free slot.
    const SHARED: usize = usize::MAX - 1;
    /// The word of a context that exited.
    const EXITED: usize = usize::MAX;

    /// Issuers over `count` slots (at least 1).
    pub const fn new(count: usize) -> Self {
        ContextIssuers { count, next: 0 }
    }

    /// The shared issuer.
    #[inline]
    pub fn shared(&self) -> IssuerId {
        self.count.saturating_sub(1)
    }

    /// The context's own issuer, if its word names one.
    #[inline]
    pub fn own(&self, word: usize) -> Option<IssuerId> {
        match word {
            Self::UNASSIGNED | Self::SHARED | Self::EXITED => None,
            w if w - 1 < self.shared() => Some(w - 1),
            _ => None,
        }
    }

    /// The issuer of a request whose context has the word `word` (updated
    /// when the context takes a slot or finds none). Requests inserted at
    /// head go straight out and take no slot.
    #[inline]
    pub fn issuer<R, Q>(&mut self, policy: &Bfq<R, Q>, word: &mut usize, at_head: bool) -> IssuerId
    where
        R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
        Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
    {
        if *word != Self::UNASSIGNED {
            return self.own(*word).unwrap_or(self.shared());
        }
        if at_head {
            return self.shared();
        }
        match self.free(policy) {
            Some(id) => {
                *word = id + 1;
                id
            }
            None => {
                *word = Self::SHARED;
                self.shared()
            }
        }
    }

    /// A free slot (not the shared one), if any.
    fn free<R, Q>(&mut self, policy: &Bfq<R, Q>) -> Option<IssuerId>
    where
        R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
        Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
    {
        let n = self.shared();
        for k in 0..n {
            let i = (self.next + k) % n;
            if policy.issuer_is_free(i) {
                self.next = (i + 1) % n;
                return Some(i);
            }
        }
        None
    }

    /// The context with the word `word` exits: the issuer it had of its
    /// own, for [`Bfq::issuer_exit`]. The word then sends the requests it
    /// still makes to the shared slot (its own may go to another context
    /// once released).
    pub fn exit(&self, word: &mut usize) -> Option<IssuerId> {
        let own = self.own(*word);
        *word = Self::EXITED;
        own
    }
}
