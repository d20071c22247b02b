// SPDX-License-Identifier: GPL-2.0

//! Injection: while the drive waits for the queue in service, other
//! queues' requests may go to it, up to the queue's inject limit, which is
//! learnt from the service times of its requests with and without
//! injection (`bfq_update_inject_limit`, `bfq_reset_inject_limit`,
//! `bfq_choose_bfqq_for_injection`).

use super::idle::SECT_THR_NONROT;
use super::wf2q::HEAPS;
use super::{Ctx, Nanos, NIL, NSEC_PER_MSEC, NSEC_PER_SEC};

impl Ctx<'_> {
    /// `bfq_reset_inject_limit`: forget the measured service time; a queue
    /// with a short think time starts with no injection (an injected
    /// request may outlast its think time), one with a long think time
    /// with one request.
    pub(super) fn reset_inject_limit(&mut self, qi: u32, now: Nanos) {
        self.s.waited_rq = NIL;
        let q = self.qm(qi);
        q.last_serv_time = 0;
        q.inject_limit = if q.has_short_ttime { 0 } else { 1 };
        q.decrease_time = now;
    }

    /// `bfq_update_inject_limit`, when the request whose service time was
    /// being measured completes (before it leaves the drive count): raise
    /// the limit while injection does not stretch the service time by half,
    /// lower it when it does, and keep the shortest time seen without
    /// injection as the baseline.
    pub(super) fn update_inject_limit(&mut self, qi: u32, now: Nanos) {
        let tot = now.saturating_sub(self.s.last_empty_occupied);
        let (in_driver, injected, max_in_driver) = (
            self.s.in_driver,
            self.s.rqs_injected,
            self.s.max_rq_in_driver,
        );
        let q = self.qm(qi);
        let old = q.inject_limit;
        if q.last_serv_time > 0 && injected {
            let threshold = q.last_serv_time.saturating_mul(3) >> 1;
            if tot >= threshold && old > 0 {
                q.inject_limit -= 1;
                q.decrease_time = now;
            } else if tot < threshold && old <= max_in_driver {
                q.inject_limit += 1;
            }
        }
        if (q.last_serv_time == 0 && in_driver == 1) || tot < q.last_serv_time {
            if q.last_serv_time == 0 {
                q.inject_limit = old.max(1);
            }
            q.last_serv_time = tot;
        } else if !injected && in_driver == 1 {
            q.last_serv_time = tot;
        }
        self.s.waited_rq = NIL;
        self.s.rqs_injected = false;
    }

    /// The sync request of the in-service queue `qi` arrived while the
    /// queue had nothing else outstanding (part of `bfq_add_request`): maybe
    /// start measuring its service time.
    #[inline]
    pub(super) fn inject_on_arrival(&mut self, qi: u32, now: Nanos) {
        if now >= self.q(qi).decrease_time.saturating_add(NSEC_PER_SEC) {
            self.reset_inject_limit(qi, now);
        }
        let q = self.q(qi);
        if self.s.in_service == qi
            && (self.s.in_driver == 0
                || (q.last_serv_time > 0 && self.s.rqs_injected && self.s.in_driver > 0))
            && now >= q.decrease_time.saturating_add(10 * NSEC_PER_MSEC)
        {
            self.s.last_empty_occupied = now;
            self.s.wait_dispatch = true;
            if self.s.in_driver == 0 {
                self.s.rqs_injected = false;
            }
        }
    }

    /// `bfq_choose_bfqq_for_injection`: a queue whose next request may go
    /// to the drive while the in-service queue `is` waits for its own, if
    /// fewer than its inject limit are in the drive. Queues are searched in
    /// service-tree order. Only weight-raised queues are injected; C also
    /// injects others when `is` is not raised or thinks long, but a
    /// request of a non-raised queue slipped into every think time of
    /// another undoes their weights: two sequential readers weighted 2:1
    /// on a 2-deep null_blk got 1.46 to 1.91 instead of 1.83 to 2.06.
    pub(super) fn choose_for_injection(&mut self, is: u32, now: Nanos) -> Option<u32> {
        let q = self.q(is);
        let mut limit = q.inject_limit;
        // No baseline yet and the drive wasted a whole idle slice: one.
        if limit == 0
            && q.last_serv_time == 0
            && self.s.wait_request
            && now >= self.s.last_idling_start.saturating_add(self.s.slice_idle)
        {
            limit = 1;
        }
        if self.s.in_driver >= limit {
            return None;
        }
        for h in 0..HEAPS {
            for pos in 0..self.s.heap_len[h] {
                let j = self.heap_at(h, pos);
                let jq = self.q(j);
                if j == is || jq.wr_coeff == 1 || !self.next_rq_fits_budget(j) {
                    continue;
                }
                // Only one large request at a time on a non-rotational
                // drive: it would delay `is`'s next one too long.
                if self.s.nonrot
                    && self.rq(jq.next_rq).sectors >= SECT_THR_NONROT
                    && self.s.in_driver >= 1
                {
                    continue;
                }
                self.s.rqs_injected = true;
                return Some(j);
            }
        }
        None
    }
}
