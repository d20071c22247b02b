// SPDX-License-Identifier: GPL-2.0

//! Early stable merging (`bfq_do_or_sched_stable_merge`,
//! `bfq_do_early_stable_merge`): the flows of one application or task
//! (fio's jobs, a service's workers) start together, at one priority, and
//! gain nothing from being protected from each other, while keeping them
//! in separate queues costs a queue switch, and on a fast device nearly
//! one per request, each time one of them is briefly empty. So, on a
//! non-rotational device that queues (or whose queueing is not known
//! yet), an issuer whose first request is sync and comes within
//! `bfq_burst_interval` (180 ms) of the creation of the last queue created,
//! at the same priority class and level, is served by that queue for as
//! long as it lives: its own slot holds no queue, and its requests, merge
//! look-ups and tag share are that queue's.
//!
//! The last queue created moves on to a newly created queue when there is
//! none, when the last was created more than 600 ms before
//! (`bfq_activation_stable_merging`), or when the priorities differ; it is
//! forgotten when an issuer it serves exits (`bfq_reassign_last_bfqq`).
//! A queue merged into keeps serving while any of its issuers lives; its
//! state is its own (the merged issuer's new queue would have been just
//! created, I/O bound and not raised, so all it passes on is being I/O
//! bound, as `bfq_merge_bfqqs` does).
//!
//! Not modelled: the delayed stable merge C schedules on rotational or
//! non-queueing devices (after 600 ms, unless the queue proves sequential
//! and I/O bound), the close-cooperator merging of queues whose requests
//! interleave (`bfq_setup_cooperator`, which C also skips on
//! non-rotational queueing devices), and splitting (C never splits a
//! stable merge).

use super::burst::BURST_INTERVAL;
use super::{Ctx, IoPrio, IssuerSlot, Nanos, Queue, State, NIL, NSEC_PER_MSEC};

/// `bfq_activation_stable_merging`: a queue created this long after the
/// last one starts a new candidate.
const ACTIVATION_STABLE_MERGING: Nanos = 600 * NSEC_PER_MSEC;

impl IssuerSlot {
    /// The queue serving the issuer of this slot, numbered `own`: its own
    /// unless it is merged into another's.
    #[inline]
    pub(super) fn served_by(&self, own: u32) -> u32 {
        if self.merged == NIL {
            own
        } else {
            self.merged
        }
    }
}

impl State {
    /// `nonrot_with_queueing`: a non-rotational device whose queueing is
    /// not known yet counts as queueing, as in C.
    #[inline]
    pub(super) fn nonrot_with_queueing(&self) -> bool {
        self.nonrot && self.hw_tag != 0
    }
}

impl Ctx<'_> {
    /// The queue serving issuer `issuer` (its own slot unless merged).
    #[inline]
    pub(super) fn queue_of(&self, issuer: u32) -> u32 {
        self.qs[issuer as usize].served_by(issuer)
    }

    /// `issuer`, whose slot holds no queue, sends its first request
    /// (`prio`, `sync`): the queue it is merged into, or `None` if it gets
    /// a queue of its own (which may become the last created).
    pub(super) fn stable_merge(
        &mut self,
        issuer: u32,
        prio: IoPrio,
        sync: bool,
        now: Nanos,
    ) -> Option<u32> {
        // As for BFQ's oom_bfqq, the shared last slot neither merges nor
        // is merged into; async requests get no stable merge.
        let shared = issuer as usize + 1 == self.qs.len();
        if shared || !sync {
            return None;
        }
        let last = self.s.last_created;
        if last == NIL {
            self.s.last_created = issuer;
            return None;
        }
        let l = self.q(last);
        let created = l.creation_time;
        if now > created.saturating_add(ACTIVATION_STABLE_MERGING)
            || l.class != prio.class
            || l.level != prio.level.min(7)
        {
            self.s.last_created = issuer;
            return None;
        }
        if now > created.saturating_add(BURST_INTERVAL)
            || !self.s.nonrot_with_queueing()
            || l.exited
        {
            return None;
        }
        self.qs[issuer as usize].merged = last;
        let q = self.qm(last);
        q.merged_in += 1;
        q.io_bound = true;
        Some(last)
    }

    /// Issuer `issuer`, merged into another issuer's queue, exits: its
    /// slot is free at once; the queue loses one of its issuers, and
    /// tells whether that was its last.
    pub(super) fn merged_exit(&mut self, issuer: u32) -> Option<u32> {
        let target = self.qs[issuer as usize].merged;
        self.qs[issuer as usize].merged = NIL;
        self.qs[issuer as usize].q = Queue::default();
        let q = self.qm(target);
        q.merged_in = q.merged_in.saturating_sub(1);
        (q.merged_in == 0 && q.own_exited).then_some(target)
    }
}
