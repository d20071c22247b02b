// SPDX-License-Identifier: GPL-2.0

//! What idling looks at and decides: think times
//! (`__cfq_update_io_thinktime`), seekiness (`cfq_update_io_seektime`),
//! a queue's idle window (`cfq_update_idle_window`), whether to idle for
//! the queue in service (`cfq_should_idle`, `cfq_arm_slice_timer`,
//! `cfq_should_wait_busy`), the idle timer (`cfq_idle_slice_timer`), and
//! whether the device queues commands (`cfq_update_hw_tag`).

use super::service::IDLE;
use super::{
    Ctx, Nanos, PrioClass, RequestDesc, Ttime, HW_QUEUE_MIN, HW_TAG_SAMPLES, JIFFY, NIL, NO_TREE,
    SECT_THR_NONROT, SEEK_THR, TTIME_VALID,
};

impl Ttime {
    /// A new request arrived at `now`: one more sample of the time since
    /// the last completion, capped at `cap` (twice the idle slice).
    pub(super) fn update(&mut self, now: Nanos, cap: Nanos) {
        let elapsed = now.saturating_sub(self.last_end_request).min(cap);
        self.samples = (7 * self.samples + 256) / 8;
        // Within range for any idle slice up to 2^32 - 1 ms; saturating
        // beyond (no 128-bit division in the kernel).
        self.total = self
            .total
            .saturating_mul(7)
            .saturating_add(elapsed.saturating_mul(256))
            / 8;
        self.mean = self.total.saturating_add(128) / self.samples.max(1);
    }

    /// `sample_valid`: enough samples for the mean to count.
    #[inline]
    pub(super) fn valid(&self) -> bool {
        self.samples > TTIME_VALID
    }
}

impl Ctx<'_> {
    /// `cfq_io_thinktime_big`: whether a tree's or the group's think time
    /// is known and longer than the idle slice.
    pub(super) fn thinktime_big(&self, ttime: &Ttime, group_idle: bool) -> bool {
        let slice = if group_idle {
            self.s.group_idle
        } else {
            self.s.slice_idle
        };
        ttime.valid() && ttime.mean > slice
    }

    /// `cfq_update_io_thinktime`: a request arrives for queue `qi`, of
    /// issuer `issuer`; for a sync queue, its issuer's and its tree's think
    /// times take a sample; the group's always does.
    pub(super) fn update_io_thinktime(&mut self, qi: u32, issuer: u32, now: Nanos) {
        let cap = self.s.slice_idle.saturating_mul(2);
        if self.q(qi).sync {
            self.qm(issuer).ttime.update(now, cap);
            let st = self.q(qi).st;
            if st != NO_TREE {
                self.s.st_ttime[st as usize].update(now, cap);
            }
        }
        let cap = self.s.group_idle.saturating_mul(2);
        self.s.group_ttime.update(now, cap);
    }

    /// `cfq_update_io_seektime`: one more bit of the queue's seek history:
    /// on a rotational device, whether the request lies more than 800
    /// sectors from the end of the previous one; on a non-rotational one,
    /// whether it is smaller than 32 KiB.
    pub(super) fn update_io_seektime(&mut self, qi: u32, desc: &RequestDesc) {
        let nonrot = self.s.nonrot;
        let q = self.qm(qi);
        let sdist = if q.last_request_pos != 0 {
            q.last_request_pos.abs_diff(desc.sector)
        } else {
            0
        };
        q.seek_history <<= 1;
        q.seek_history |= u32::from(if nonrot {
            desc.sectors < SECT_THR_NONROT
        } else {
            sdist > SEEK_THR
        });
    }

    /// `cfq_update_idle_window`: a sync queue not of the idle class keeps
    /// its idle window unless its issuer exited, idling is off, it is seeky
    /// and not deep (4 or more requests queued make it deep), or its
    /// issuer's think time is known to exceed `slice_idle`.
    pub(super) fn update_idle_window(&mut self, qi: u32) {
        let q = *self.q(qi);
        if !q.sync || q.class == PrioClass::Idle {
            return;
        }
        if q.queued >= 4 {
            self.qm(qi).deep = true;
        }
        let q = *self.q(qi);
        let ttime = q.ttime;
        let mut enable = q.idle_window;
        if q.exited || self.s.slice_idle == 0 || (!q.deep && q.seeky()) {
            enable = false;
        } else if ttime.valid() {
            enable = ttime.mean <= self.s.slice_idle;
        }
        self.qm(qi).idle_window = enable;
    }

    /// `cfq_should_idle`: whether the device is kept for queue `qi` when it
    /// runs out of requests: never with `slice_idle` 0 or for the idle
    /// class; when its idle window is on (unless the device is
    /// non-rotational and queues); else when it is the last sync queue on
    /// its tree and the tree's think time is short.
    pub(super) fn should_idle(&self, qi: u32) -> bool {
        let q = self.q(qi);
        if self.s.slice_idle == 0 || q.class == PrioClass::Idle || q.st == NO_TREE {
            return false;
        }
        if q.idle_window && !(self.s.nonrot && self.s.hw_tag != 0) {
            return true;
        }
        let st = q.st as usize;
        self.s.st_count[st] == 1 && q.sync && !self.thinktime_big(&self.s.st_ttime[st], false)
    }

    /// `cfq_arm_slice_timer`: the queue in service, empty, waits for its
    /// next request for `slice_idle` (or `group_idle`), if it should be
    /// idled for, has nothing in flight, its issuer lives and thinks less
    /// than what is left of its slice.
    pub(super) fn arm_slice_timer(&mut self, now: Nanos) {
        let qi = self.s.active;
        if qi == NIL {
            return;
        }
        if self.s.nonrot && self.s.hw_tag != 0 && self.s.group_idle == 0 {
            return;
        }
        let mut group_idle = 0;
        if !self.should_idle(qi) {
            if self.s.group_idle == 0 {
                return;
            }
            group_idle = self.s.group_idle;
        }
        if self.q(qi).dispatched > 0 {
            return;
        }
        let issuer = self.s.active_issuer;
        if issuer == NIL || self.q(issuer).exited {
            return;
        }
        let ttime = self.q(issuer).ttime;
        if ttime.valid() && self.q(qi).slice_end.saturating_sub(now) < ttime.mean {
            return;
        }
        if group_idle != 0 && (self.s.nr_cfqq > 1 || self.thinktime_big(&self.s.group_ttime, true))
        {
            return;
        }
        self.qm(qi).wait_request = true;
        let sl = if group_idle != 0 {
            group_idle
        } else {
            self.s.slice_idle
        };
        self.s.timer_armed = true;
        self.s.idle_deadline = now.saturating_add(sl);
    }

    /// `cfq_del_timer`.
    #[inline]
    pub(super) fn del_timer(&mut self) {
        self.s.timer_armed = false;
    }

    /// The idle timer, run lazily: if it is armed and its deadline passed,
    /// its body (`cfq_idle_slice_timer`) runs as of the deadline: the queue
    /// in service is expired if its slice is used, or if other queues are
    /// busy and it still has no request.
    #[inline]
    pub(super) fn fire_timer(&mut self, now: Nanos) {
        if self.s.timer_armed && now >= self.s.idle_deadline {
            let at = self.s.idle_deadline;
            self.idle_slice_timer(at);
        }
    }

    fn idle_slice_timer(&mut self, now: Nanos) {
        self.s.timer_armed = false;
        let qi = self.s.active;
        if qi == NIL {
            return;
        }
        if !self.slice_used(qi, now) {
            // Only expire if other queues have requests to send.
            if self.s.busy_queues == 0 || !self.q(qi).empty() {
                return;
            }
            // The queue's depth flag is reset only when idling failed.
            self.qm(qi).deep = false;
        }
        self.slice_expired(qi, false, now);
    }

    /// `cfq_should_wait_busy`: the queue in service, the only busy one and
    /// empty, with the group thinking briefly, is kept past its slice end
    /// for its next request if its slice is used, or if less of it is left
    /// than its issuer's think time or a jiffy.
    pub(super) fn should_wait_busy(&self, qi: u32, now: Nanos) -> bool {
        if !self.q(qi).empty() || self.s.nr_cfqq > 1 {
            return false;
        }
        if self.thinktime_big(&self.s.group_ttime, true) {
            return false;
        }
        if self.slice_used(qi, now) {
            return true;
        }
        let left = self.q(qi).slice_end.saturating_sub(now);
        let issuer = self.s.active_issuer;
        if issuer != NIL {
            let t = self.q(issuer).ttime;
            if t.valid() && left < t.mean {
                return true;
            }
        }
        left <= JIFFY
    }

    /// `cfq_update_hw_tag`: at a completion, whether the device queues
    /// commands, from the most requests seen in the driver over 50
    /// completions under enough load; once it does, it always does.
    pub(super) fn update_hw_tag(&mut self) {
        let s = &mut *self.s;
        s.hw_tag_est_depth = s.hw_tag_est_depth.max(s.rq_in_driver);
        if s.hw_tag == 1 {
            return;
        }
        if s.rq_queued <= HW_QUEUE_MIN && s.rq_in_driver <= HW_QUEUE_MIN {
            return;
        }
        let qi = s.active;
        if qi != NIL {
            let q = self.q(qi);
            if q.idle_window
                && q.dispatched + q.queued < HW_QUEUE_MIN
                && self.s.rq_in_driver < HW_QUEUE_MIN
            {
                return;
            }
        }
        let s = &mut *self.s;
        let sampled = s.hw_tag_samples;
        s.hw_tag_samples = sampled.saturating_add(1);
        if sampled < HW_TAG_SAMPLES {
            return;
        }
        s.hw_tag = i8::from(s.hw_tag_est_depth >= HW_QUEUE_MIN);
    }

    /// Whether queue `qi` is of the idle class (served one request at a
    /// time, never idled for).
    #[inline]
    pub(super) fn idle_class(&self, qi: u32) -> bool {
        self.class_of(qi) == IDLE
    }
}
