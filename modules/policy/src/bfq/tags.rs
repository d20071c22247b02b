// SPDX-License-Identifier: GPL-2.0

//! Each queue's share of the scheduler tags, as `bfq_limit_depth()` keeps
//! it through `bfqq_request_over_limit()`: a queue that holds its weight's
//! share of the tags may allocate its next request from only one tag
//! (`shallow_depth = 1`), so that the queues the scheduler is not serving
//! cannot take every tag.
//!
//! On a shallow device this decides start-ups. With 4 tags (null_blk with
//! a hardware depth of 2) and five greedy readers, the readers' queued
//! requests hold every tag; a starting application's reads then sleep for
//! a tag in the block layer before the scheduler sees them, and weight
//! raising, preemption and idling cannot act on a request that has not
//! arrived. With the share, a reader of weight 40 beside a raised queue of
//! weight 1200 is owed `round(4 * 40 / 1400) = 0` tags, is confined to one,
//! and the application finds the others free.
//!
//! Two differences from C, both to keep the weights' proportions when no
//! start-up needs protecting:
//! - the share applies only while a weight-raised queue is active (busy,
//!   or on an idle tree). C applies it always; on the guest's 4-tag
//!   device, two sequential readers weighted 2:1 (16 KiB, depth 8) then
//!   get about 1:1 in the host model, as each is confined to tag 0 in turn
//!   and the one in service waits for it;
//! - the queue in service is not limited unless it is soft real-time
//!   raised: it is the one the device works for (C limits it like any
//!   other). A soft real-time queue holding its share while in service is
//!   not issuing at the low pace its raising was for: greedy readers
//!   raised so, each in turn in service and weighing 3,000 times their
//!   weight, would otherwise take every tag from a starting application.
//!
//! As in C, the weights the tags are divided by are those of the busy
//! queues and of the queues on the idle trees (C's `st->wsum`), the
//! classes above the queue's own each weighing [`IOPRIO_BE_NR`] times the
//! one below; a queue that is neither busy nor on an idle tree is not
//! limited (its request must reach the scheduler for BFQ to learn of it).
//! A queue preempted while idling was needed for its guarantees stays busy
//! while empty (`Ctx::expire`, as C's `__bfq_bfqq_expire`), so greedy
//! readers preempted on each of their requests by a starting application
//! keep their weight in the sum and stay held to their share.
//! A queue holds its queued requests and those dispatched and not yet
//! completed (C counts requests from allocation to free).

use super::weight_raise::WR_COEFF;
use super::{Bfq, IssuerId, IssuerSlot, PrioClass, ReqSlot, IDLE_HEAP0, NO_HEAP};

/// `IOPRIO_BE_NR`: how many times a class weighs the one below it in the
/// sum the tags are divided by.
const IOPRIO_BE_NR: u64 = 8;

impl<R, Q> Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    /// Whether the tag share is in force: a weight-raised queue is busy
    /// or on an idle tree. (The idle trees may still hold queues whose
    /// finish the virtual time has passed; [`Bfq::tag_depth`] forgets them
    /// first, so this may say yes when that would say no.)
    #[inline]
    pub fn tags_shared(&self) -> bool {
        self.st.wr_busy_queues > 0 || self.st.raised_idle > 0
    }

    /// `limit_depth` for a request of `issuer`, whose kind may use `limit`
    /// scheduler tags (`nr_requests` for sync reads): `Some(1)` if its
    /// queue holds its share of them, else `None` (see the module docs).
    pub fn tag_depth(&mut self, issuer: IssuerId, limit: u32) -> Option<u32> {
        let mut ctx = self.ctx();
        for c in 0..PrioClass::COUNT {
            ctx.forget_idle(c);
        }
        if !self.tags_shared() {
            return None;
        }
        let issuer = self.qs.as_ref().get(issuer)?.served_by(issuer as u32) as usize;
        let q = &self.qs.as_ref()[issuer].q;
        if self.st.in_service as usize == issuer && q.wr_coeff <= WR_COEFF {
            return None;
        }
        let idle = q.heap_id != NO_HEAP && q.heap_id as usize >= IDLE_HEAP0;
        if !q.used || !(q.busy || idle) {
            return None;
        }
        let own = q.class.index();
        let mut wsum = 0u64;
        for c in 0..=own {
            wsum = wsum
                .saturating_mul(IOPRIO_BE_NR)
                .saturating_add(self.st.wsum[c])
                .saturating_add(self.st.idle_wsum[c]);
        }
        if wsum == 0 {
            return None;
        }
        let weight = u64::from(if q.busy { q.weight } else { q.idle_weight });
        // DIV_ROUND_CLOSEST(limit * weight, wsum)
        let share = (u64::from(limit) * weight).saturating_add(wsum / 2) / wsum;
        let held = u64::from(q.queued) + u64::from(q.at_head) + u64::from(q.dispatched);
        if held < share {
            return None;
        }
        self.qs.as_mut()[issuer].q.tag_limited = true;
        Some(1)
    }
}
