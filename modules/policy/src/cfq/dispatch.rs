// SPDX-License-Identifier: GPL-2.0

//! Dispatch (`cfq_dispatch_requests`): at-head requests first, then the
//! queue chosen by `cfq_select_queue` sends its next request if
//! `cfq_may_dispatch` allows; a queue's slice starts and ends
//! (`__cfq_set_active_queue`, `__cfq_slice_expired`); and a newly busy
//! queue may preempt the one in service (`cfq_should_preempt`,
//! `cfq_preempt_queue`).

use super::{time_key, Ctx, Dispatch, Nanos, PrioClass, RqState, Tag, CLOSE_THR, NIL};

/// Where `cfq_select_queue` goes once it decided to leave the queue in
/// service.
enum Leave {
    /// Expire it, unless the group is idled for.
    CheckGroupIdle,
    /// Expire it.
    Expire,
}

impl Ctx<'_> {
    /// `cfq_dispatch_requests` (without `force`): one request, or why none.
    pub(super) fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.fire_timer(now);
        if let Some(d) = self.dispatch_at_head() {
            return d;
        }
        if self.s.busy_queues == 0 {
            return Dispatch::Empty;
        }
        let qi = self.select_queue(now);
        if qi == NIL {
            return self.waiting();
        }
        let Some(x) = self.dispatch_request(qi, now) else {
            return Dispatch::Empty;
        };
        let q = self.qm(qi);
        q.slice_dispatch = q.slice_dispatch.saturating_add(1);
        // An async queue's slice ends once it sent its share of requests,
        // an idle-class queue's after each, while other queues are busy.
        if self.s.busy_queues > 1
            && ((!self.q(qi).sync && self.q(qi).slice_dispatch >= self.prio_to_maxrq(qi))
                || self.idle_class(qi))
        {
            self.qm(qi).slice_end = now.saturating_add(1);
            self.slice_expired(qi, false, now);
        }
        Dispatch::Request(x as Tag)
    }

    /// What a dispatch that chose no queue answers: the end of the idle
    /// slice if the timer is armed, else nothing (a completion runs the
    /// queue again).
    fn waiting(&self) -> Dispatch {
        if self.s.timer_armed && self.s.rq_queued > 0 {
            Dispatch::IdleUntil(self.s.idle_deadline)
        } else {
            Dispatch::Empty
        }
    }

    /// The request inserted at head longest ago, if any: it goes before
    /// all others. A requeued request of a queue counts in the driver
    /// again (`cfq_activate_request`).
    fn dispatch_at_head(&mut self) -> Option<Dispatch> {
        let h = self.s.disp.head;
        if h == NIL {
            return None;
        }
        self.disp_remove(h);
        self.rqm(h).state = RqState::InFlight;
        if self.rq(h).queue == NIL {
            self.s.foreign_in_flight += 1;
        } else {
            self.s.rq_in_driver += 1;
            self.s.last_position = self.rq(h).end();
        }
        Some(Dispatch::Request(h as Tag))
    }

    /// `cfq_select_queue`: the queue to send from, or `NIL` to wait (for
    /// the queue in service's next request, or its requests in flight).
    fn select_queue(&mut self, now: Nanos) -> u32 {
        let qi = self.s.active;
        if qi != NIL {
            if self.s.rq_queued == 0 {
                return NIL;
            }
            let leave = if self.q(qi).wait_busy && !self.q(qi).empty() {
                // The group got backlogged while the queue was waited for.
                Leave::Expire
            } else if self.slice_used(qi, now) {
                // Its slice is used; if it was the only busy queue and is
                // idled for, its last request may still come in.
                if self.s.nr_cfqq == 1
                    && self.q(qi).empty()
                    && self.q(qi).dispatched > 0
                    && self.should_idle(qi)
                {
                    return NIL;
                }
                Leave::CheckGroupIdle
            } else if !self.q(qi).empty() {
                return qi;
            } else {
                // No request, slice left: wait for the idle timer, or for
                // its requests in flight if it is idled for.
                if self.s.timer_armed {
                    return NIL;
                }
                // A seeky queue that is served faster than it asks is not
                // worth idling for.
                let q = *self.q(qi);
                if q.seeky()
                    && q.idle_window
                    && (q.slice_new
                        || q.slice_end.saturating_sub(now) > now.saturating_sub(q.slice_start))
                {
                    let qm = self.qm(qi);
                    qm.deep = false;
                    qm.idle_window = false;
                }
                if self.q(qi).dispatched > 0 && self.should_idle(qi) {
                    return NIL;
                }
                Leave::CheckGroupIdle
            };
            if let Leave::CheckGroupIdle = leave {
                if self.s.group_idle > 0
                    && self.s.nr_cfqq == 1
                    && self.s.group_dispatched > 0
                    && !self.thinktime_big(&self.s.group_ttime, true)
                {
                    return NIL;
                }
            }
            self.slice_expired(qi, false, now);
        }
        self.choose_cfqg(now);
        let next = self.next_queue();
        self.set_active_queue(next, now);
        next
    }

    /// `__cfq_set_active_queue`: queue `qi` (if any) is in service from
    /// now, its slice to start at its first completion.
    fn set_active_queue(&mut self, qi: u32, now: Nanos) {
        if qi != NIL {
            let q = self.qm(qi);
            q.slice_start = 0;
            q.dispatch_start = now;
            q.allocated_slice = 0;
            q.slice_end = 0;
            q.slice_dispatch = 0;
            q.nr_sectors = 0;
            q.wait_request = false;
            q.fifo_expire = false;
            q.slice_new = true;
            self.del_timer();
        }
        self.s.active = qi;
    }

    /// `__cfq_slice_expired`: queue `qi`'s slice ends. With `timed_out`
    /// (preempted), it keeps what was left of its slice for its next turn.
    /// The workload's rest is saved; an empty queue is no longer busy, a
    /// busy one takes its place on its tree again.
    pub(super) fn slice_expired(&mut self, qi: u32, timed_out: bool, now: Nanos) {
        if self.q(qi).wait_request {
            self.del_timer();
        }
        {
            let q = self.qm(qi);
            q.wait_request = false;
            q.wait_busy = false;
        }
        if timed_out {
            let resid = if self.q(qi).slice_new {
                self.scaled_slice(qi).min(i64::MAX as u64) as i64
            } else {
                time_key(self.q(qi).slice_end).saturating_sub(time_key(now))
            };
            self.qm(qi).slice_resid = resid;
        }
        self.save_workload(now);
        if self.q(qi).on_rr && self.q(qi).empty() {
            self.del_cfqq_rr(qi);
        }
        self.resort_rr_list(qi, now);
        if self.s.active == qi {
            self.s.active = NIL;
        }
        self.s.active_issuer = NIL;
        self.maybe_release(qi);
    }

    /// `cfq_prio_to_maxrq`: how many requests an async queue sends in one
    /// slice.
    fn prio_to_maxrq(&self, qi: u32) -> u32 {
        let level = u32::from(self.q(qi).level.min(7));
        self.s
            .slice_async_rq
            .saturating_mul(2)
            .saturating_mul(8 - level)
    }

    /// `cfq_slice_used_soon`: whether queue `qi`'s slice has not started,
    /// or ends before its requests in flight would complete at one idle
    /// slice each.
    fn slice_used_soon(&self, qi: u32, now: Nanos) -> bool {
        let q = self.q(qi);
        q.slice_new
            || now.saturating_add(self.s.slice_idle.saturating_mul(u64::from(q.dispatched)))
                > q.slice_end
    }

    /// `cfq_may_dispatch`: whether queue `qi` may send another request now.
    fn may_dispatch(&self, qi: u32, now: Nanos) -> bool {
        let q = self.q(qi);
        // Async requests drain before a queue that is idled for starts,
        // and an async queue waits for sync requests in the device.
        if self.should_idle(qi) && self.s.rq_in_flight[0] > 0 {
            return false;
        }
        if self.s.rq_in_flight[1] > 0 && !q.sync {
            return false;
        }
        let idle_class = self.idle_class(qi);
        let mut max_dispatch = if idle_class {
            1
        } else {
            (self.s.quantum / 2).max(1)
        };
        if q.dispatched >= max_dispatch {
            if idle_class {
                return false;
            }
            // A sole sync queue may go deeper: sync requests preempt async
            // ones anyway.
            let promote_sync = q.sync && self.s.busy_sync_queues == 1;
            if self.s.busy_queues > 1 && self.slice_used_soon(qi, now) && !promote_sync {
                return false;
            }
            max_dispatch = if self.s.busy_queues == 1 || promote_sync {
                u32::MAX
            } else {
                self.s.quantum
            };
        }
        // Async queues ramp their depth up with the time since a sync
        // request was last delayed.
        if !q.sync && self.s.low_latency {
            let depth = match self.s.last_delayed_sync {
                Some(t) => now.saturating_sub(t) / self.s.slice[1].max(1),
                None => u64::MAX,
            };
            let mut depth = depth.min(u64::from(u32::MAX)) as u32;
            if depth == 0 && q.dispatched == 0 {
                depth = 1;
            }
            max_dispatch = max_dispatch.min(depth);
        }
        q.dispatched < max_dispatch
    }

    /// `cfq_check_fifo`: once per slice, the queue's oldest request if its
    /// deadline passed.
    fn check_fifo(&mut self, qi: u32, now: Nanos) -> u32 {
        if self.q(qi).fifo_expire {
            return NIL;
        }
        self.qm(qi).fifo_expire = true;
        let h = self.q(qi).fifo.head;
        if h == NIL || now < self.rq(h).fifo_time {
            return NIL;
        }
        h
    }

    /// `cfq_dispatch_request`: queue `qi`'s next request, or its expired
    /// oldest one (which goes whatever the dispatch limits), if it may send
    /// one now.
    fn dispatch_request(&mut self, qi: u32, now: Nanos) -> Option<u32> {
        let expired = self.check_fifo(qi, now);
        if expired == NIL && !self.may_dispatch(qi, now) {
            return None;
        }
        let x = if expired != NIL {
            expired
        } else {
            self.q(qi).next_rq
        };
        if x == NIL {
            return None;
        }
        self.dispatch_insert(qi, x);
        if self.s.active_issuer == NIL {
            self.s.active_issuer = self.rq(x).issuer;
        }
        Some(x)
    }

    /// `cfq_dispatch_insert` and `cfq_activate_request`: request `x` of
    /// queue `qi` goes to the driver.
    fn dispatch_insert(&mut self, qi: u32, x: u32) {
        let n = self.find_next_rq(qi, x);
        self.qm(qi).next_rq = n;
        self.remove_request(x);
        let kind = usize::from(self.q(qi).sync);
        let sectors = u64::from(self.rq(x).sectors);
        let q = self.qm(qi);
        q.dispatched += 1;
        q.nr_sectors = q.nr_sectors.saturating_add(sectors);
        self.s.group_dispatched += 1;
        self.s.rq_in_flight[kind] += 1;
        self.s.rq_in_driver += 1;
        self.s.last_position = self.rq(x).end();
        self.rqm(x).state = RqState::InFlight;
    }

    /// `cfq_should_preempt`: whether queue `new`, which just got request
    /// `x`, should take the device from the queue in service.
    pub(super) fn should_preempt(&self, new: u32, x: u32, now: Nanos) -> bool {
        let cur = self.s.active;
        if cur == NIL || cur == new {
            return false;
        }
        let (n, c) = (self.q(new), self.q(cur));
        if n.class == PrioClass::Idle {
            return false;
        }
        if c.class == PrioClass::Idle {
            return true;
        }
        // Nothing but real time preempts real time.
        if c.class == PrioClass::RealTime && n.class != PrioClass::RealTime {
            return false;
        }
        // A sync request before an async queue.
        if self.rq(x).sync && !c.sync {
            return true;
        }
        if self.slice_used(cur, now) {
            return true;
        }
        if n.class == PrioClass::RealTime && c.class != PrioClass::RealTime {
            return true;
        }
        // Idling on the sync-noidle tree: another sync-noidle queue goes.
        if self.s.serving_type == super::SYNC_NOIDLE_WL
            && n.wl_type() == super::SYNC_NOIDLE_WL
            && c.empty()
        {
            return true;
        }
        // The queue in service is empty and would not be idled for.
        if c.empty() && !self.should_idle(cur) {
            return true;
        }
        if self.s.active_issuer == NIL || !c.wait_request {
            return false;
        }
        // Idling: a request as good as one the queue would send.
        self.rq(x).sector.abs_diff(self.s.last_position) <= CLOSE_THR
    }

    /// `cfq_preempt_queue`: queue `new` goes first; the queue in service
    /// keeps what is left of its slice.
    pub(super) fn preempt_queue(&mut self, new: u32, now: Nanos) {
        let cur = self.s.active;
        let old_type = self.q(cur).wl_type();
        self.slice_expired(cur, true, now);
        // Another workload type: do not go on with the saved one, or the
        // preemption would not happen.
        if old_type != self.q(new).wl_type() {
            self.s.saved_wl_slice = 0;
        }
        self.service_tree_add(new, true, now);
        let q = self.qm(new);
        q.slice_end = 0;
        q.slice_new = true;
    }
}
