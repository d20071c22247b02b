// SPDX-License-Identifier: GPL-2.0

//! The entry points: [`Bfq`]'s set-up and life-cycle calls, the
//! [`Policy`] hooks with the tunables, and what a request's arrival
//! (`bfq_insert_request`, `bfq_add_request`) and completion
//! (`bfq_completed_request`) do.

use super::super::types::tunable_names;
use super::budget::Expiration;
use super::peak_rate::{REF_RATE, REF_WR_DURATION_MS};
use super::weight_raise::WR_COEFF;
use super::{
    AfterCompletion, Bfq, Ctx, Dispatch, IoPrio, IssuerId, IssuerSlot, List, MergeProbe, Nanos, Op,
    Policy, PrioClass, Queue, ReqSlot, RequestDesc, RqState, Sector, SetupError, State, Tag,
    TunableError, ALL_HEAPS, DEFAULT_BACK_MAX_KIB, DEFAULT_BACK_PENALTY, DEFAULT_FIFO_EXPIRE_ASYNC,
    DEFAULT_FIFO_EXPIRE_SYNC, DEFAULT_MAX_BUDGET, DEFAULT_SLICE_IDLE, DEFAULT_TIMEOUT,
    LARGE_BURST_THRESH, NIL, NSEC_PER_MSEC, NSEC_PER_USEC, WEIGHT_SLOTS,
};
use core::ffi::CStr;

const INT_MAX: u64 = i32::MAX as u64;
const UINT_MAX: u64 = u32::MAX as u64;

/// The tunables, in the order BFQ's sysfs directory lists them: the sysfs
/// attribute names.
pub(crate) const TUNABLE_NAMES: [&CStr; 10] = [
    c"fifo_expire_sync",
    c"fifo_expire_async",
    c"back_seek_max",
    c"back_seek_penalty",
    c"slice_idle",
    c"slice_idle_us",
    c"max_budget",
    c"timeout_sync",
    c"strict_guarantees",
    c"low_latency",
];

/// [`TUNABLE_NAMES`] as the policy matches them.
const TUNABLES: &[&str] = &tunable_names(TUNABLE_NAMES);
/// Parses a sysfs write as BFQ's `kstrtoul(page, 10, ..)` does: an
/// optional `+`, decimal digits, at most one trailing newline.
fn parse_decimal(text: &str) -> Result<u64, TunableError> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TunableError::Invalid);
    }
    let mut value: u64 = 0;
    for b in digits.bytes() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(TunableError::OutOfRange)?;
    }
    Ok(value)
}

fn parse_decimal_in(text: &str, min: u64, max: u64) -> Result<u64, TunableError> {
    let value = parse_decimal(text)?;
    if value < min || value > max {
        return Err(TunableError::OutOfRange);
    }
    Ok(value)
}

impl State {
    fn new() -> Self {
        State {
            in_service: NIL,
            wait_request: false,
            withheld: false,
            idle_deadline: 0,
            last_budget_start: 0,
            last_idling_start: 0,
            budgets_assigned: 0,
            vtime: [0; PrioClass::COUNT],
            wsum: [0; PrioClass::COUNT],
            heap_len: [0; ALL_HEAPS],
            idle_wsum: [0; PrioClass::COUNT],
            raised_idle: 0,
            busy_queues: 0,
            busy_in_class: [0; PrioClass::COUNT],
            busy_classes: 0,
            wr_busy_queues: 0,
            burst_list: [NIL; LARGE_BURST_THRESH],
            burst_len: 0,
            burst_size: 0,
            large_burst: false,
            last_ins_in_burst: None,
            last_created: NIL,
            last_empty_occupied: 0,
            wait_dispatch: false,
            waited_rq: NIL,
            rqs_injected: false,
            weight_count: [0; WEIGHT_SLOTS],
            weight_mask: 0,
            hw_tag: -1,
            max_rq_in_driver: 0,
            device_depth: 0,
            hold_rq: NIL,
            hold_sectors: 0,
            hw_tag_samples: 0,
            disp: List::EMPTY,
            disp_len: 0,
            queued: 0,
            in_driver: 0,
            peak_rate: REF_RATE[0] * 2 / 3,
            peak_rate_samples: 0,
            sequential_samples: 0,
            tot_sectors_dispatched: 0,
            last_rq_max_size: 0,
            first_dispatch: 0,
            last_dispatch: 0,
            delta_from_first: 0,
            last_completion: 0,
            last_completed: NIL,
            last_position: 0,
            rate_dur_prod: REF_RATE[0] * REF_WR_DURATION_MS[0],
            nonrot: false,
            max_budget: DEFAULT_MAX_BUDGET,
            user_max_budget: 0,
            slice_idle: DEFAULT_SLICE_IDLE,
            low_latency: true,
            strict_guarantees: false,
            timeout: DEFAULT_TIMEOUT,
            fifo_expire: [DEFAULT_FIFO_EXPIRE_ASYNC, DEFAULT_FIFO_EXPIRE_SYNC],
            back_max: DEFAULT_BACK_MAX_KIB,
            back_penalty: DEFAULT_BACK_PENALTY,
            rng: 0x2545_f491,
        }
    }
}

impl<R, Q> Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    /// Sets the policy up over `requests` (one slot per tag) and `issuers`
    /// (one slot per issuer id). Both must be non-empty and shorter than
    /// `u32::MAX`; their previous contents are overwritten.
    pub fn new(mut requests: R, mut issuers: Q) -> Result<Self, SetupError> {
        let n = requests.as_ref().len();
        let m = issuers.as_ref().len();
        if n == 0 || m == 0 || n >= NIL as usize || m >= NIL as usize {
            return Err(SetupError::Capacity);
        }
        for r in requests.as_mut().iter_mut() {
            *r = ReqSlot::default();
        }
        for q in issuers.as_mut().iter_mut() {
            *q = IssuerSlot::default();
        }
        Ok(Bfq {
            reqs: requests,
            qs: issuers,
            st: State::new(),
            queue_async_depth: None,
        })
    }

    /// Tells the policy whether the device is non-rotational (the kernel's
    /// `blk_queue_nonrot`). This picks the reference peak rate and
    /// weight-raising duration, as BFQ does at init; call it before any
    /// I/O. Default: rotational.
    pub fn set_nonrotational(&mut self, nonrot: bool) {
        let i = usize::from(nonrot);
        self.st.nonrot = nonrot;
        self.st.rate_dur_prod = REF_RATE[i] * REF_WR_DURATION_MS[i];
        self.st.peak_rate = REF_RATE[i] * 2 / 3;
    }

    /// Tells the policy how many requests the device can hold at once
    /// (blk-mq's driver tags: the tag set's `queue_depth`, per hardware
    /// queue); 0, the default, means not known. A device whose several
    /// hardware queues each hold no more than 3 requests then counts as not
    /// queueing, which errs towards idling.
    ///
    /// `hw_tag` then counts at most that many requests as in the driver.
    /// Deliberate difference from C: the policy counts a request as in the
    /// driver from its dispatch, and blk-mq may take one from the scheduler
    /// per CPU running the queue before finding no driver tag and parking
    /// it on the hardware queue's dispatch list. On a device of depth 2
    /// that is four "in the driver" now and then, and one such sample
    /// makes `hw_tag` stick at queueing, which turns off idling for the
    /// queue of the smallest weight: measured in the guest, the 1:2
    /// readers then got 1:12 (the light queue expired after each small
    /// batch, and its budget shrank to that batch).
    pub fn set_device_depth(&mut self, depth: u32) {
        self.st.device_depth = depth;
    }

    /// The issuer's I/O context is going away: the policy stops idling for
    /// it, and releases the slot as soon as its queue is empty and none of
    /// its requests is in flight (at once if that holds already). Check
    /// [`Bfq::issuer_is_free`] before reusing the id for a new context.
    pub fn issuer_exit(&mut self, issuer: IssuerId, now: Nanos) {
        if issuer >= self.qs.as_ref().len() {
            return;
        }
        let issuer = issuer as u32;
        let mut c = self.ctx();
        let served = c.queue_of(issuer);
        if served == issuer && !c.q(issuer).used {
            return;
        }
        // As `bfq_reassign_last_bfqq()`: an exit of any issuer a queue
        // serves ends its candidacy for stable merges.
        if c.s.last_created == served {
            c.s.last_created = NIL;
        }
        let qi = if served != issuer {
            match c.merged_exit(issuer) {
                Some(qi) => qi,
                None => return,
            }
        } else {
            let q = c.qm(issuer);
            q.own_exited = true;
            if q.merged_in > 0 {
                return;
            }
            issuer
        };
        // No process left to send more: never idle for it, and its think
        // time counts as long (C: the context's `active_ref` is 0).
        let q = c.qm(qi);
        q.exited = true;
        q.has_short_ttime = false;
        if c.s.in_service == qi && c.q(qi).queued == 0 {
            c.expire(qi, Expiration::NoMoreRequests, false, now);
        }
        c.maybe_release(qi);
    }

    /// What the caller, who runs the hardware queues, must do after
    /// [`Policy::completed`]. C BFQ's `bfq_completed_request()` arms its
    /// idle timer whenever the device starts waiting for the queue in
    /// service, and runs the queue whenever nothing is left in the driver
    /// while requests wait. Both are needed only when requests wait that
    /// no one else will dispatch:
    /// - no request queued: a request that arrives runs the queue (the
    ///   block layer does after every insertion), and an idle slice that
    ///   has passed by then ends at that dispatch, as of its deadline;
    /// - requests queued, device waiting for the queue in service: run
    ///   the queue when the idle slice ends ([`AfterCompletion::RunAt`]);
    /// - requests queued, nothing in flight, and the last dispatch gave
    ///   none: run the queue now ([`AfterCompletion::RunNow`]). A request
    ///   queued since then was inserted since then, and its insertion runs
    ///   the queue.
    ///
    /// On a fast device, where each issuer has one request at a time and
    /// the queue in service changes with nearly every request, C's rule
    /// arms a timer for most completions and wakes a worker for about one
    /// in ten.
    pub fn after_completion(&mut self) -> AfterCompletion {
        if !self.has_work() {
            return AfterCompletion::Nothing;
        }
        if let Some(until) = self.idling_until() {
            return AfterCompletion::RunAt(until);
        }
        if self.st.withheld && self.st.in_driver == 0 {
            self.st.withheld = false;
            return AfterCompletion::RunNow;
        }
        AfterCompletion::Nothing
    }
}

impl Ctx<'_> {
    fn init_queue(&mut self, qi: u32, prio: IoPrio, sync: bool, now: Nanos) {
        let mb = self.s.cur_max_budget() * 2 / 3;
        *self.qm(qi) = Queue::default();
        let q = self.qm(qi);
        q.used = true;
        self.apply_prio(qi, prio);
        let q = self.qm(qi);
        q.max_budget = mb.max(1);
        q.last_wr_start_finish = now;
        q.soft_rt_next_start = now;
        // bfq_init_bfqq: tentatively a short think time (sync queues not
        // of the idle class), I/O bound, just created.
        q.has_short_ttime = sync && q.class != PrioClass::Idle;
        q.last_end_request = now.saturating_add(1);
        q.creation_time = now;
        q.io_start_time = now;
        q.decrease_time = now;
    }

    /// `bfq_insert_request`: request `tag` arrives, at head or for its
    /// issuer's queue.
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        if tag >= self.r.len() {
            return;
        }
        self.idle_timer(now);
        let x = tag as u32;
        match self.rq(x).state {
            RqState::Free => {}
            RqState::InFlight => self.requeued(x),
            RqState::Queued | RqState::AtHead => return,
        }
        let issuer = desc.issuer.min(self.qs.len() - 1) as u32;
        let mut qi = self.queue_of(issuer);
        if !self.q(qi).used {
            match self.stable_merge(qi, desc.prio, desc.sync, now) {
                Some(target) => qi = target,
                None => self.init_queue(qi, desc.prio, desc.sync, now),
            }
        }
        if self.q(qi).just_created && (self.s.burst_size > 0 || self.s.busy_queues == 0) {
            self.handle_burst(qi, now);
        }
        if qi == issuer {
            let q = self.qm(qi);
            q.exited = false;
            q.own_exited = false;
        }
        let d = usize::from(desc.sync);
        {
            let fifo_time = now.saturating_add(self.s.fifo_expire[d]);
            let r = self.rqm(x);
            r.sector = desc.sector;
            r.sectors = desc.sectors;
            r.op = desc.op;
            r.sync = desc.sync;
            r.prio = desc.prio;
            r.queue = qi;
            r.fifo_time = fifo_time;
        }
        if at_head {
            self.rqm(x).state = RqState::AtHead;
            self.disp_push(x);
            self.qm(qi).at_head += 1;
            return;
        }
        self.rqm(x).state = RqState::Queued;
        self.add_request(qi, x, desc, now);
    }

    /// `bfq_add_request`: request `x`, described by `desc`, joins queue
    /// `qi`, which it may make busy.
    fn add_request(&mut self, qi: u32, x: u32, desc: &RequestDesc, now: Nanos) {
        self.update_prio_on_arrival(qi, desc.prio);
        self.qm(qi).sync = desc.sync;
        self.update_io_thinktime(qi, now);
        self.update_has_short_ttime(qi, desc.sync, now);
        let alone = {
            let q = self.q(qi);
            q.queued == 0 && q.dispatched == 0 && q.at_head == 0
        };
        self.update_io_seektime(qi, desc);
        if desc.sync {
            self.update_io_intensity(qi, now);
        }
        self.fifo_push(qi, usize::from(desc.sync), x);
        self.tree_insert(qi, x);
        self.hash_insert(x);
        self.qm(qi).queued += 1;
        self.s.queued += 1;
        if desc.sync && alone {
            self.check_waker(qi, now);
            self.inject_on_arrival(qi, now);
        }

        let prev = self.q(qi).next_rq;
        let next = self.choose_req(prev, x, self.s.last_position);
        self.qm(qi).next_rq = next;
        let old_wr = self.q(qi).wr_coeff;
        let mut interactive = false;
        if !self.q(qi).busy {
            interactive = self.idle_busy_switch(qi, now);
            self.qm(qi).tag_limited = false;
        } else {
            if prev != next {
                self.updated_next_req(qi);
            }
            if self.s.in_service == qi && self.s.wait_request {
                // A request of the in-service queue ends the idling.
                self.s.wait_request = false;
            }
        }
        if self.s.low_latency && (old_wr == 1 || self.q(qi).wr_coeff == 1 || interactive) {
            self.qm(qi).last_wr_start_finish = now;
        }
    }

    /// `bfq_bfqq_handle_idle_busy_switch`: queue `qi`, idle, got a request
    /// and becomes busy; tells whether it counted as interactive.
    #[inline]
    fn idle_busy_switch(&mut self, qi: u32, now: Nanos) -> bool {
        if self.q(qi).prio_changed {
            let p = self.q(qi).new_prio;
            self.apply_prio(qi, p);
        }
        let q = *self.q(qi);
        let arrival = q.wr_arrival(now);
        let (wants_to_preempt, charge) = self.update_budget_for_activation(qi, now);
        self.update_wr_on_arrival(qi, &q, arrival, charge, now);
        self.leave_burst_if_idle(qi, &q, arrival.idle_long, now);
        {
            let qm = self.qm(qi);
            qm.last_idle_bklogged = now;
            qm.service_from_backlogged = 0;
            qm.softrt_update = false;
            qm.just_created = false;
        }
        self.activate(qi);
        self.preempt_for(qi, wants_to_preempt, now);
        arrival.interactive
    }

    fn requeued(&mut self, x: u32) {
        if self.rq(x).state != RqState::InFlight {
            return;
        }
        self.rqm(x).state = RqState::Free;
        self.s.in_driver = self.s.in_driver.saturating_sub(1);
        let qi = self.rq(x).queue;
        if (qi as usize) < self.qs.len() {
            self.qm(qi).dispatched = self.q(qi).dispatched.saturating_sub(1);
            self.sync_weight_count(qi);
            self.maybe_release(qi);
        }
    }

    fn completed(&mut self, tag: Tag, now: Nanos) {
        if tag >= self.r.len() || self.r[tag].state != RqState::InFlight {
            return;
        }
        self.idle_timer(now);
        self.update_hw_tag();
        let x = tag as u32;
        if self.s.waited_rq == x && (self.rq(x).queue as usize) < self.qs.len() {
            self.update_inject_limit(self.rq(x).queue, now);
        }
        self.rqm(x).state = RqState::Free;
        self.s.in_driver = self.s.in_driver.saturating_sub(1);
        let qi = self.rq(x).queue;
        if qi as usize >= self.qs.len() {
            return;
        }
        self.qm(qi).dispatched = self.q(qi).dispatched.saturating_sub(1);
        if self.q(qi).dispatched == 0 && !self.q(qi).busy {
            self.qm(qi).budget_timeout = Some(now);
            self.sync_weight_count(qi);
        }
        self.qm(qi).last_end_request = now;
        self.rate_at_completion(now);
        self.s.last_completed = qi;
        if self.q(qi).softrt_update
            && self.q(qi).dispatched == 0
            && self.q(qi).queued == 0
            && self.q(qi).wr_coeff != WR_COEFF
        {
            let t = self.softrt_next_start(qi, now);
            self.qm(qi).soft_rt_next_start = t;
        }
        if self.s.in_service == qi {
            if self.must_idle(qi) {
                if self.q(qi).dispatched == 0 {
                    self.arm_idle(qi, now);
                }
            } else if self.may_expire_for_budget_timeout(qi, now) {
                self.expire(qi, Expiration::BudgetTimeout, false, now);
            } else if self.q(qi).queued == 0
                && (self.q(qi).dispatched == 0 || !self.better_to_idle(qi))
            {
                self.expire(qi, Expiration::NoMoreRequests, false, now);
            }
        }
        self.maybe_release(qi);
    }
}

impl<R, Q> Policy for Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        self.ctx().insert(tag, desc, at_head, now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let d = self.ctx().dispatch(now);
        self.st.withheld = !matches!(d, Dispatch::Request(_)) && self.has_work();
        d
    }

    fn has_work(&self) -> bool {
        self.st.queued > 0 || self.st.disp_len > 0
    }

    fn queued(&self) -> usize {
        self.st.queued as usize + self.st.disp_len as usize
    }

    fn completed(&mut self, tag: Tag, now: Nanos) {
        self.ctx().completed(tag, now);
    }

    fn requeued(&mut self, tag: Tag, _now: Nanos) {
        if tag < self.reqs.as_ref().len() {
            self.ctx().requeued(tag as u32);
        }
    }

    fn front_merge_candidate(&self, probe: &MergeProbe) -> Option<Tag> {
        self.find_front_merge(probe, None)
    }

    fn front_merged(&mut self, tag: Tag, new_sector: Sector, new_sectors: u32) {
        self.ctx().front_merged(tag, new_sector, new_sectors);
    }

    fn back_merged(&mut self, tag: Tag, new_sectors: u32) {
        self.ctx().back_merged(tag, new_sectors);
    }

    fn requests_merged(&mut self, into: Tag, next: Tag) {
        // The merge happens "now"; the last dispatch time is the best
        // clock available here, and only the FIFO check looks at it.
        let now = self.st.last_dispatch;
        self.ctx().requests_merged(into, next, now);
    }

    /// BFQ's `bfq_limit_depth`: sync reads get the full depth; async
    /// requests get half of the scheduler tags (3/16 while weight-raised
    /// queues are busy), sync writes three quarters (6/16).
    fn async_depth_limit(&self, op: Op, sync: bool) -> Option<u32> {
        if sync && op.is_read() {
            return None;
        }
        let n = self.reqs.as_ref().len().min(u32::MAX as usize) as u64;
        let wr = self.st.wr_busy_queues > 0;
        let limit = match (wr, sync) {
            (false, false) => n >> 1,
            (false, true) => (n * 3) >> 2,
            (true, false) => (n * 3) >> 4,
            (true, true) => (n * 6) >> 4,
        };
        Some(limit.max(1) as u32)
    }

    fn tunables(&self) -> &'static [&'static str] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let s = &self.st;
        let v = match name {
            "fifo_expire_sync" => s.fifo_expire[1] / NSEC_PER_MSEC,
            "fifo_expire_async" => s.fifo_expire[0] / NSEC_PER_MSEC,
            "back_seek_max" => s.back_max,
            "back_seek_penalty" => s.back_penalty,
            "slice_idle" => s.slice_idle / NSEC_PER_MSEC,
            "slice_idle_us" => s.slice_idle / NSEC_PER_USEC,
            "max_budget" => s.user_max_budget,
            "timeout_sync" => s.timeout / NSEC_PER_MSEC,
            "strict_guarantees" => u64::from(s.strict_guarantees),
            "low_latency" => u64::from(s.low_latency),
            _ => return Err(TunableError::UnknownName),
        };
        Ok(v as i64)
    }

    fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        if !TUNABLES.contains(&name) {
            return Err(TunableError::UnknownName);
        }
        match name {
            "fifo_expire_sync" => {
                self.st.fifo_expire[1] = parse_decimal_in(text, 1, INT_MAX)? * NSEC_PER_MSEC
            }
            "fifo_expire_async" => {
                self.st.fifo_expire[0] = parse_decimal_in(text, 1, INT_MAX)? * NSEC_PER_MSEC
            }
            "back_seek_max" => self.st.back_max = parse_decimal_in(text, 0, INT_MAX)?,
            "back_seek_penalty" => self.st.back_penalty = parse_decimal_in(text, 1, INT_MAX)?,
            "slice_idle" => {
                self.st.slice_idle = parse_decimal_in(text, 0, INT_MAX)? * NSEC_PER_MSEC
            }
            "slice_idle_us" => {
                self.st.slice_idle = parse_decimal_in(text, 0, UINT_MAX)? * NSEC_PER_USEC
            }
            "max_budget" => {
                let v = parse_decimal_in(text, 0, INT_MAX)?;
                self.st.max_budget = if v == 0 { self.st.calc_max_budget() } else { v };
                self.st.user_max_budget = v;
            }
            "timeout_sync" => {
                let v = parse_decimal_in(text, 1, INT_MAX)?;
                self.st.timeout = v * NSEC_PER_MSEC;
                if self.st.user_max_budget == 0 {
                    self.st.max_budget = self.st.calc_max_budget();
                }
            }
            "strict_guarantees" => {
                let v = parse_decimal_in(text, 0, 1)? == 1;
                if !self.st.strict_guarantees && v && self.st.slice_idle < 8 * NSEC_PER_MSEC {
                    self.st.slice_idle = 8 * NSEC_PER_MSEC;
                }
                self.st.strict_guarantees = v;
            }
            "low_latency" => {
                let v = parse_decimal_in(text, 0, 1)? == 1;
                if !v && self.st.low_latency {
                    // bfq_end_wr: every queue loses its raising.
                    let now = self.st.last_dispatch;
                    let mut c = self.ctx();
                    for qi in 0..c.qs.len() as u32 {
                        if c.q(qi).used && c.q(qi).wr_coeff > 1 {
                            c.end_wr(qi, now);
                        }
                    }
                }
                self.st.low_latency = v;
            }
            _ => return Err(TunableError::UnknownName),
        }
        Ok(())
    }
}
