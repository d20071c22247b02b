// SPDX-License-Identifier: GPL-2.0

//! Idling: what `bfq_better_to_idle` looks at, kept up to date as requests
//! come and go (seekiness, think time, I/O intensity, whether the device
//! queues, the weights of the active queues), the decision itself, the
//! idle slice, and the preemption of a queue in service that idling is no
//! longer worth it for.

use super::budget::Expiration;
use super::{
    Ctx, Nanos, PrioClass, Queue, RequestDesc, Sector, NIL, NSEC_PER_MSEC, WEIGHT_CONVERSION_COEFF,
};

/// `BFQ_MIN_TT`.
pub(super) const MIN_TT: Nanos = 2 * NSEC_PER_MSEC;
/// `BFQQ_SEEK_THR`, sectors.
pub(super) const SEEK_THR: Sector = 8 * 100;
/// `BFQQ_SECT_THR_NONROT`, sectors.
pub(super) const SECT_THR_NONROT: u32 = 2 * 32;
/// `BFQ_HW_QUEUE_THRESHOLD`: more requests than this in the driver at
/// once means the device queues internally.
const HW_QUEUE_THRESHOLD: u32 = 3;
/// `BFQ_HW_QUEUE_SAMPLES`: completions sampled per `hw_tag` decision.
pub(super) const HW_QUEUE_SAMPLES: u32 = 32;
/// `bfq_sample_valid`: think-time statistics count once the (decaying,
/// fixed-point) sample count exceeds this, i.e. from the third sample on.
const TTIME_VALID_SAMPLES: u32 = 80;
/// `bfq_update_io_intensity`'s observation window.
const IO_INTENSITY_WINDOW: Nanos = 200 * NSEC_PER_MSEC;
/// Weight levels counted for `bfq_asymmetric_scenario`: a queue that is
/// not weight-raised weighs `ioprio_to_weight(level)`, 10 to 80.
pub(super) const WEIGHT_SLOTS: usize = 8;
/// `Queue::wc_slot` of a queue not counted.
pub(super) const NO_SLOT: u8 = u8::MAX;

/// The weight-count slot of a weight: `weight / 10 - 1`, so 0 for the
/// lightest level (weight 10) up to 7 (weight 80).
#[inline]
pub(super) fn weight_slot(weight: u32) -> u8 {
    ((weight / WEIGHT_CONVERSION_COEFF).clamp(1, WEIGHT_SLOTS as u32) - 1) as u8
}

/// The weight-count slot a queue belongs in: active (busy, or with
/// requests in flight) and not weight-raised, as BFQ keeps queues in its
/// `queue_weights_tree`.
#[inline]
pub(super) fn wanted_slot(q: &Queue) -> u8 {
    if q.used && (q.busy || q.dispatched > 0) && q.wr_coeff == 1 {
        q.weight_slot
    } else {
        NO_SLOT
    }
}

/// Whether a seek history (a bit per request, set when it was far from its
/// predecessor) is seeky: more than 19 of the last 32 (`BFQQ_SEEKY`).
#[inline]
pub(super) fn seeky_history(history: u32) -> bool {
    history.count_ones() > 19
}

impl Queue {
    /// Sets the weight, and the weight-count slot that goes with it.
    #[inline]
    pub(super) fn set_weight_value(&mut self, w: u32) {
        self.weight = w;
        self.weight_slot = weight_slot(w);
    }
}

impl Ctx<'_> {
    // ----- the weights of the active queues ------------------------------------

    /// Keeps the queue's place in the weight counts (BFQ's
    /// `bfq_weights_tree_add` and `_remove`) in step with its state: call
    /// after anything that may change whether it is active (busy or with
    /// requests in flight), weight-raised, or its weight.
    #[inline(always)]
    pub(super) fn sync_weight_count(&mut self, qi: u32) {
        // Called on nearly every state change, which rarely moves the
        // queue's slot: the comparison stays in the caller.
        let q = self.q(qi);
        let (want, have) = (wanted_slot(q), q.wc_slot);
        if want != have {
            self.move_weight_count(qi, have, want);
        }
    }

    /// [`Ctx::sync_weight_count`] when the queue's slot changes.
    #[inline(never)]
    fn move_weight_count(&mut self, qi: u32, have: u8, want: u8) {
        if have != NO_SLOT {
            let c = &mut self.s.weight_count[have as usize];
            *c = c.saturating_sub(1);
            if *c == 0 {
                self.s.weight_mask &= !(1 << have);
            }
        }
        if want != NO_SLOT {
            self.s.weight_count[want as usize] += 1;
            self.s.weight_mask |= 1 << want;
        }
        self.qm(qi).wc_slot = want;
    }

    // ----- what idling decisions look at ------------------------------------------

    /// `bfq_update_hw_tag`, at each completion (before the in-driver count
    /// drops): over `HW_QUEUE_SAMPLES` completions that had more than
    /// `HW_QUEUE_THRESHOLD` requests queued or in the driver, did the
    /// driver ever hold more than `HW_QUEUE_THRESHOLD`? Completions
    /// while the in-service queue has a short think time but few requests
    /// (so that it alone may keep the driver short) do not count.
    #[inline]
    pub(super) fn update_hw_tag(&mut self) {
        let s = &mut *self.s;
        let in_driver = match s.device_depth {
            0 => s.in_driver,
            d => s.in_driver.min(d),
        };
        s.max_rq_in_driver = s.max_rq_in_driver.max(in_driver);
        if s.hw_tag == 1 {
            return;
        }
        if s.in_driver.saturating_add(s.queued) <= HW_QUEUE_THRESHOLD {
            return;
        }
        let is = s.in_service;
        if is != NIL {
            let q = &self.qs[is as usize].q;
            if q.has_short_ttime
                && q.dispatched.saturating_add(q.queued) < HW_QUEUE_THRESHOLD
                && s.in_driver < HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        let samples = s.hw_tag_samples;
        s.hw_tag_samples = samples + 1;
        if samples < HW_QUEUE_SAMPLES {
            return;
        }
        s.hw_tag = i8::from(s.max_rq_in_driver > HW_QUEUE_THRESHOLD);
        s.max_rq_in_driver = 0;
        s.hw_tag_samples = 0;
    }

    /// `bfq_update_io_thinktime`, at a request's arrival: when the queue
    /// had nothing queued or in flight, sample the time since its last
    /// completion (at most `2 * slice_idle`) into a decaying average.
    #[inline]
    pub(super) fn update_io_thinktime(&mut self, qi: u32, now: Nanos) {
        let cap = self.s.slice_idle.saturating_mul(2);
        let q = self.qm(qi);
        if q.dispatched > 0 || q.busy {
            return;
        }
        // C computes this in unsigned arithmetic from a last completion
        // set 1 ns after the queue's creation, so the first sample wraps
        // to the cap when the clock has not moved; here it is 0.
        let elapsed = now.saturating_sub(q.last_end_request).min(cap);
        q.ttime_samples = (7 * q.ttime_samples + 256) / 8;
        q.ttime_total = q
            .ttime_total
            .saturating_mul(7)
            .saturating_add(elapsed.saturating_mul(256))
            / 8;
        q.ttime_mean = q.ttime_total.saturating_add(128) / u64::from(q.ttime_samples.max(1));
    }

    /// `bfq_update_has_short_ttime`, at a sync request's arrival (no
    /// burst or split handling: neither is modelled). An exited issuer's
    /// think time is infinite; see [`Bfq::issuer_exit`](super::Bfq::issuer_exit).
    #[inline]
    pub(super) fn update_has_short_ttime(&mut self, qi: u32, sync: bool, now: Nanos) {
        let half_slice = self.s.slice_idle / 2;
        if !sync || self.q(qi).class == PrioClass::Idle || self.s.slice_idle == 0 {
            return;
        }
        let q = self.qm(qi);
        let short =
            !(q.exited || (q.ttime_samples > TTIME_VALID_SAMPLES && q.ttime_mean > half_slice));
        let changed = short != q.has_short_ttime;
        q.has_short_ttime = short;
        if changed
            && q.last_serv_time == 0
            && (now >= q.decrease_time.saturating_add(100 * NSEC_PER_MSEC) || !short)
        {
            self.reset_inject_limit(qi, now);
        }
    }

    /// `bfq_update_io_intensity`, at a sync request's arrival (before it
    /// is queued): time the queue spent with nothing queued or in flight
    /// counts as idle; it is I/O bound when idle at most a fifth of the
    /// window, which keeps at most about 200 ms of the past.
    #[inline]
    pub(super) fn update_io_intensity(&mut self, qi: u32, now: Nanos) {
        let q = self.qm(qi);
        let tot_io_time = now.saturating_sub(q.io_start_time);
        if q.queued == 0 && q.dispatched == 0 {
            // Saturating where C wraps, as in update_io_thinktime.
            q.tot_idle_time = q
                .tot_idle_time
                .saturating_add(now.saturating_sub(q.last_end_request));
        }
        if q.just_created {
            return;
        }
        q.io_bound = q.tot_idle_time.saturating_mul(5) <= tot_io_time;
        if tot_io_time > IO_INTENSITY_WINDOW {
            q.io_start_time = now - (tot_io_time >> 1);
            q.tot_idle_time >>= 1;
        }
    }

    /// `bfq_update_io_seektime`, at a request's arrival: whether it is far
    /// from where the queue's previous one ended, in the queue's history
    /// of the last 32.
    #[inline]
    pub(super) fn update_io_seektime(&mut self, qi: u32, desc: &RequestDesc) {
        let dist = desc.sector.abs_diff(self.q(qi).last_request_pos);
        let seeky = dist > SEEK_THR && (!self.s.nonrot || desc.sectors < SECT_THR_NONROT);
        let qm = self.qm(qi);
        qm.seek_history = (qm.seek_history << 1) | u32::from(seeky);
        qm.seeky = seeky_history(qm.seek_history);
        qm.last_request_pos = desc.sector.saturating_add(u64::from(desc.sectors));
    }

    #[inline]
    pub(super) fn seeky(&self, qi: u32) -> bool {
        self.q(qi).seeky
    }

    // ----- idling and preemption ---------------------------------------------------

    /// `bfq_asymmetric_scenario`: whether the active queues may not all
    /// be owed the same share, so that not idling for `qi` could cost it
    /// its share: the active queues that are not weight-raised have more
    /// than one weight (unless `qi` has the smallest of them), or queues
    /// of more than one class are busy. (No cgroups, so no group term.)
    #[inline]
    fn asymmetric_scenario(&self, qi: u32) -> bool {
        let mask = self.s.weight_mask;
        let slot = self.q(qi).wc_slot;
        let smallest_weight = slot != NO_SLOT && mask.trailing_zeros() == u32::from(slot);
        // More than one bit set, without counting them.
        let varied_queue_weights = !smallest_weight && mask & mask.wrapping_sub(1) != 0;
        let classes = self.s.busy_classes;
        let multiple_classes_busy = classes & classes.wrapping_sub(1) != 0;
        varied_queue_weights || multiple_classes_busy
    }

    /// `idling_boosts_thr_without_issues`: idling raises throughput (a
    /// rotational device without internal queueing, or a sequential,
    /// I/O-bound queue with a short think time on a device that is not
    /// both non-rotational and queueing), and no weight-raised queue is
    /// busy (which idling for others would hurt).
    #[inline]
    pub(super) fn idling_boosts_thr_without_issues(&self, qi: u32) -> bool {
        let q = self.q(qi);
        if q.exited {
            return false;
        }
        // hw_tag -1 (not yet known) counts as queueing, as in C.
        let queueing = self.s.hw_tag != 0;
        let rot_without_queueing = !self.s.nonrot && !queueing;
        let sequential_and_io_bound = !self.seeky(qi) && q.io_bound && q.has_short_ttime;
        let idling_boosts_thr =
            rot_without_queueing || ((!self.s.nonrot || !queueing) && sequential_and_io_bound);
        idling_boosts_thr && self.s.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees`: without idling `qi` could
    /// lose its share: it is weight-raised and non-raised queues are busy
    /// (or many other requests are in the drive), or the scenario is
    /// asymmetric, or it is the only busy queue (kept plugged in case a
    /// lighter queue turns up).
    #[inline(always)]
    pub(super) fn idling_needed_for_service_guarantees(&self, qi: u32) -> bool {
        let q = self.q(qi);
        if q.exited {
            return false;
        }
        let tot_busy = self.s.busy_queues;
        (q.wr_coeff > 1
            && (self.s.wr_busy_queues < tot_busy
                || self.s.in_driver >= q.dispatched.saturating_add(4)))
            || self.asymmetric_scenario(qi)
            || tot_busy == 1
    }

    /// `bfq_better_to_idle`: whether to plug dispatching while `qi` (in
    /// service, empty) waits for its next request. Never for an exited
    /// issuer (no process left to send one); always with
    /// `strict_guarantees`; never with `slice_idle` 0, for async queues or
    /// the idle class; otherwise when idling boosts throughput without
    /// issues or is needed for service guarantees.
    #[inline]
    pub(super) fn better_to_idle(&self, qi: u32) -> bool {
        let q = self.q(qi);
        if q.exited {
            return false;
        }
        if self.s.strict_guarantees {
            return true;
        }
        if self.s.slice_idle == 0 || !q.sync || q.class == PrioClass::Idle {
            return false;
        }
        self.idling_boosts_thr_without_issues(qi) || self.idling_needed_for_service_guarantees(qi)
    }

    #[inline]
    pub(super) fn must_idle(&self, qi: u32) -> bool {
        self.q(qi).queued == 0 && self.better_to_idle(qi)
    }

    /// The idle slice for the in-service queue (`bfq_arm_slice_timer`):
    /// short for a seeky queue unless it is raised or the scenario is
    /// asymmetric, long for a raised one.
    #[inline]
    pub(super) fn idle_slice(&self, qi: u32) -> Nanos {
        let sl = self.s.slice_idle;
        if self.seeky(qi) && self.q(qi).wr_coeff == 1 && !self.asymmetric_scenario(qi) {
            sl.min(MIN_TT)
        } else if self.q(qi).wr_coeff > 1 {
            sl.max(20 * NSEC_PER_MSEC)
        } else {
            sl
        }
    }

    #[inline]
    pub(super) fn arm_idle(&mut self, qi: u32, now: Nanos) {
        self.s.wait_request = true;
        self.s.idle_deadline = now.saturating_add(self.idle_slice(qi));
        self.s.last_idling_start = now;
    }

    /// The idle slice timer, run lazily: an idle slice that ran out
    /// expires the in-service queue as of the slice's end.
    #[inline]
    pub(super) fn idle_timer(&mut self, now: Nanos) {
        // Run by every hook: the test that nearly always ends it first.
        if self.s.wait_request && now >= self.s.idle_deadline {
            let qi = self.s.in_service;
            if qi != NIL {
                let at = self.s.idle_deadline;
                self.expire(qi, Expiration::TooIdle, true, at);
            }
        }
    }

    /// Queue `qi` just became busy (the end of
    /// `bfq_bfqq_handle_idle_busy_switch`): the queue in service is
    /// expired if `qi` comes back in time with budget left and is raised
    /// at least as much (`wants_to_preempt`), is of a higher class or
    /// weighs more, or if idling for the queue in service is no longer
    /// worth it now that `qi` is busy too.
    #[inline]
    pub(super) fn preempt_for(&mut self, qi: u32, wants_to_preempt: bool, now: Nanos) {
        let is = self.s.in_service;
        if is != NIL && is != qi {
            let (a, b) = (self.q(qi), self.q(is));
            if (wants_to_preempt && a.wr_coeff >= b.wr_coeff)
                || a.class < b.class
                || a.weight > b.weight
                || !self.better_to_idle(is)
            {
                self.expire(is, Expiration::Preempted, false, now);
            }
        }
    }
}
