// SPDX-License-Identifier: GPL-2.0

//! Dispatch (`bfq_dispatch_request`): at-head requests first, then the
//! queue in service (`bfq_select_queue`): its next request if its budget
//! allows, else its expiration, or idling for it, with its waker's, its
//! woken queue's or other queues' requests injected meanwhile.

use super::budget::Expiration;
use super::{Ctx, Dispatch, Nanos, PrioClass, RqState, Tag, NIL, NSEC_PER_USEC};

/// How long the queue in service's next request may wait in the scheduler
/// for the bios that follow it before it takes the device's last free
/// slot, and again each time one has merged into it meanwhile; see
/// [`Ctx::merge_hold`].
pub(super) const MERGE_HOLD: Nanos = 250 * NSEC_PER_USEC;

/// The longest that wait may last from the request's arrival.
pub(super) const MERGE_HOLD_MAX: Nanos = 1000 * NSEC_PER_USEC;

/// The deepest device on which it waits: one whose every slot is a large
/// share of what it can do.
pub(super) const MERGE_HOLD_DEPTH: u32 = 4;

impl Ctx<'_> {
    pub(super) fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.idle_timer(now);
        if let Some(d) = self.dispatch_at_head() {
            return d;
        }
        if self.s.queued == 0 {
            return Dispatch::Empty;
        }
        if self.s.strict_guarantees && self.s.in_driver > 0 {
            return Dispatch::Empty;
        }
        // Each pass either dispatches, idles, or expires the in-service
        // queue. A queue just put in service with a request has one that
        // fits its budget; one without (kept busy, empty, by a preemption)
        // leaves the busy set when it is expired. So three passes, plus one
        // per busy queue, suffice.
        for _ in 0..3 + self.s.busy_queues {
            let mut qi = self.s.in_service;
            let fresh = qi == NIL;
            if fresh {
                qi = self.set_in_service(now);
                if qi == NIL {
                    return Dispatch::Empty;
                }
            }
            // As in bfq_select_queue, a queue just put in service goes
            // straight to its first request.
            if !fresh && self.may_expire_for_budget_timeout(qi, now) && !self.must_idle(qi) {
                self.expire(qi, Expiration::BudgetTimeout, false, now);
                continue;
            }
            let next = self.q(qi).next_rq;
            if next != NIL {
                if !self.next_rq_fits_budget(qi) {
                    self.expire(qi, Expiration::BudgetExhausted, false, now);
                    continue;
                }
                self.s.wait_request = false;
                if let Some(until) = self.merge_hold(qi, next, now) {
                    return Dispatch::IdleUntil(until);
                }
                return Dispatch::Request(self.dispatch_from(qi, now));
            }
            if let Some(d) = self.wait_for(qi, now) {
                return d;
            }
        }
        Dispatch::Empty
    }

    /// Until when request `x`, the only one queued of `qi` (in service),
    /// stays in the scheduler so that the queue's next bios merge into it,
    /// or `None` to dispatch it now.
    ///
    /// On a shallow device the queue in service would otherwise send each
    /// request to the device the moment it arrives: with the other queues'
    /// waiting requests holding the remaining scheduler tags, each of its
    /// requests is one bio, and a device that takes the same time whatever
    /// the size moves a third of what it moves with the bios merged (the
    /// guest's fairness test: 17 KiB requests where mq-deadline's are 61).
    /// So while the queue has a request in flight and this one would take
    /// the device's last free slot, the request waits [`MERGE_HOLD`] from
    /// its arrival, and [`MERGE_HOLD`] more at each look that finds it
    /// grown, up to [`MERGE_HOLD_MAX`]: the device keeps the queue's
    /// other request, and the wait ends once the process stops sending.
    /// Not for a seeky queue (its bios do not merge), nor a weight-raised
    /// one (raised for its latency), nor when the depth is not known or is
    /// 1 (a request then waits for the device anyway), nor on a device
    /// deeper than [`MERGE_HOLD_DEPTH`], where a slot held empty costs
    /// more than the merges bring (in the host model's SATA SSD, depth
    /// 32, two sequential readers lost 7 %). Service is still charged in
    /// sectors, so the weights' proportions do not move.
    #[inline]
    fn merge_hold(&mut self, qi: u32, x: u32, now: Nanos) -> Option<Nanos> {
        let s = &self.s;
        if !(2..=MERGE_HOLD_DEPTH).contains(&s.device_depth) || s.in_driver + 1 < s.device_depth {
            return None;
        }
        let q = self.q(qi);
        if q.dispatched == 0 || q.queued != 1 || q.wr_coeff > 1 || self.seeky(qi) {
            return None;
        }
        let r = self.rq(x);
        let (arrival, sectors) = (
            r.fifo_time
                .saturating_sub(s.fifo_expire[usize::from(r.sync)]),
            r.sectors,
        );
        let mut until = arrival.saturating_add(MERGE_HOLD);
        if self.s.hold_rq == x && now >= until {
            if self.s.hold_sectors == sectors {
                return None;
            }
            until = now
                .saturating_add(MERGE_HOLD)
                .min(arrival.saturating_add(MERGE_HOLD_MAX));
        }
        self.s.hold_rq = x;
        self.s.hold_sectors = sectors;
        (now < until).then_some(until)
    }

    /// The request inserted at head longest ago, if any: it goes before
    /// all others.
    #[inline]
    fn dispatch_at_head(&mut self) -> Option<Dispatch> {
        let h = self.s.disp.head;
        if h == NIL {
            return None;
        }
        self.disp_remove(h);
        self.rqm(h).state = RqState::InFlight;
        self.s.in_driver += 1;
        let qi = self.rq(h).queue;
        if (qi as usize) < self.qs.len() {
            let q = self.qm(qi);
            q.dispatched += 1;
            q.at_head = q.at_head.saturating_sub(1);
            self.sync_weight_count(qi);
        }
        Some(Dispatch::Request(h as Tag))
    }

    /// Queue `qi`, in service, has no request: keep the device for it
    /// (serving other queues' requests meanwhile, where allowed), or
    /// expire it, which gives `None`.
    fn wait_for(&mut self, qi: u32, now: Nanos) -> Option<Dispatch> {
        if self.s.wait_request && now >= self.s.idle_deadline {
            self.expire(qi, Expiration::TooIdle, true, now);
            return None;
        }
        // As in bfq_select_queue, idling is armed only by a completion
        // (see `completed`): a queue with nothing in flight that is not
        // already idling is expired.
        let until = if self.s.wait_request {
            self.s.idle_deadline
        } else if self.q(qi).dispatched > 0 && self.better_to_idle(qi) {
            // Idling starts at the last completion; until then look again
            // after one idle slice.
            now.saturating_add(self.idle_slice(qi))
        } else {
            self.expire(qi, Expiration::NoMoreRequests, false, now);
            return None;
        };
        // While the drive waits for `qi`, it serves `qi`'s waker, or else
        // the queue `qi` wakes, whenever one has a request its budget
        // covers: `qi` waits for the one, and the other waits for `qi`.
        if let Some(j) = self.choose_waker_or_woken(qi) {
            return Some(Dispatch::Request(self.dispatch_from(j, now)));
        }
        // Else it may serve other queues' requests (bfq_select_queue's
        // injection), unless idling is for throughput alone, or `qi` is
        // the only weight-raised queue and thinks briefly.
        let q = self.q(qi);
        if !self.idling_boosts_thr_without_issues(qi)
            && (q.wr_coeff == 1 || self.s.wr_busy_queues > 1 || !q.has_short_ttime)
        {
            if let Some(j) = self.choose_for_injection(qi, now) {
                return Some(Dispatch::Request(self.dispatch_from(j, now)));
            }
        }
        Some(Dispatch::IdleUntil(until))
    }

    #[inline]
    fn dispatch_from(&mut self, qi: u32, now: Nanos) -> Tag {
        let x = self.q(qi).next_rq;
        let c = self.charge(x, qi);
        self.served(qi, c);
        if self.s.in_service == qi && self.s.wait_dispatch {
            // The request whose service time is measured.
            self.s.wait_dispatch = false;
            self.s.waited_rq = x;
        }
        let (sector, sectors) = (self.rq(x).sector, self.rq(x).sectors);
        self.remove_queued(x, now);
        self.rqm(x).state = RqState::InFlight;
        self.qm(qi).dispatched += 1;
        // An injected queue left the busy set above if that emptied it;
        // in flight, it stays active.
        self.sync_weight_count(qi);
        self.update_peak_rate(sector, sectors, now);
        self.s.in_driver += 1;
        if self.s.in_service != qi {
            // Injected: the rest concerns the queue in service.
            return x as Tag;
        }
        self.update_wr_data(qi, now);
        if self.s.busy_queues > 1 && self.q(qi).class == PrioClass::Idle {
            self.expire(qi, Expiration::BudgetExhausted, false, now);
        }
        x as Tag
    }
}
