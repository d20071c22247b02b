// SPDX-License-Identifier: GPL-2.0

//! The entry points: [`Cfq`]'s set-up, life-cycle and introspection
//! calls, the [`Policy`] hooks, and what a request's arrival
//! (`cfq_insert_request`, `cfq_rq_enqueued`) and completion
//! (`cfq_completed_request`) do.

use super::service::st_of;
use super::{
    AfterCompletion, Cfq, Ctx, Dispatch, IoPrio, IssuerId, List, MergeProbe, Nanos, Policy,
    PrioClass, QueueId, QueueInfo, QueueSlot, ReqSlot, RequestDesc, RqState, Sector, SetupError,
    State, Tag, Ttime, TunableError, Workload, ASYNC_QUEUES, DEFAULT_BACK_MAX_KIB,
    DEFAULT_BACK_PENALTY, DEFAULT_FIFO_EXPIRE_ASYNC, DEFAULT_FIFO_EXPIRE_SYNC, DEFAULT_GROUP_IDLE,
    DEFAULT_QUANTUM, DEFAULT_SLICE_ASYNC, DEFAULT_SLICE_ASYNC_RQ, DEFAULT_SLICE_IDLE,
    DEFAULT_SLICE_SYNC, DEFAULT_TARGET_LATENCY, NIL, NO_TREE, SYNC_WL, TREES,
};

impl State {
    fn new() -> Self {
        State {
            active: NIL,
            active_issuer: NIL,
            serving_class: super::service::BE,
            serving_type: SYNC_WL,
            workload_expires: 0,
            busy_queues_avg: [0; 2],
            saved_wl_slice: 0,
            saved_type: SYNC_WL,
            saved_class: super::service::BE,
            st_root: [NIL; TREES],
            st_count: [0; TREES],
            st_ttime: [Ttime::default(); TREES],
            group_ttime: Ttime::default(),
            group_dispatched: 0,
            nr_cfqq: 0,
            busy_queues: 0,
            busy_sync_queues: 0,
            rq_in_driver: 0,
            rq_in_flight: [0; 2],
            rq_queued: 0,
            foreign_in_flight: 0,
            hw_tag: -1,
            hw_tag_est_depth: 0,
            hw_tag_samples: 0,
            timer_armed: false,
            idle_deadline: 0,
            last_position: 0,
            last_delayed_sync: None,
            disp: List::EMPTY,
            disp_len: 0,
            withheld: false,
            started: false,
            last_now: 0,
            nonrot: false,
            rng: 0x2545_f491,
            quantum: DEFAULT_QUANTUM,
            fifo_expire: [DEFAULT_FIFO_EXPIRE_ASYNC, DEFAULT_FIFO_EXPIRE_SYNC],
            back_max: DEFAULT_BACK_MAX_KIB,
            back_penalty: DEFAULT_BACK_PENALTY,
            slice: [DEFAULT_SLICE_ASYNC, DEFAULT_SLICE_SYNC],
            slice_async_rq: DEFAULT_SLICE_ASYNC_RQ,
            slice_idle: DEFAULT_SLICE_IDLE,
            group_idle: DEFAULT_GROUP_IDLE,
            low_latency: true,
            target_latency: DEFAULT_TARGET_LATENCY,
        }
    }
}

/// The async queue slot (after the issuers') of a priority
/// (`cfq_async_queue_prio`): real time levels, best effort levels, idle.
fn async_index(prio: IoPrio) -> usize {
    let level = usize::from(prio.level.min(7));
    match prio.class {
        PrioClass::RealTime => level,
        PrioClass::BestEffort => 8 + level,
        PrioClass::Idle => 16,
    }
}

impl<R, Q> Cfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[QueueSlot]> + AsMut<[QueueSlot]>,
{
    /// The queue slots needed for `issuers` issuers: one sync queue each,
    /// and the [`ASYNC_QUEUES`] shared async queues.
    pub const fn queue_slots(issuers: usize) -> usize {
        issuers + ASYNC_QUEUES
    }

    /// Sets the policy up over `requests` (one slot per tag) and `queues`
    /// ([`Cfq::queue_slots`] of the issuers wanted: at least one issuer).
    /// Both must be shorter than `u32::MAX`; their contents are reset.
    pub fn new(mut requests: R, mut queues: Q) -> Result<Self, SetupError> {
        let n = requests.as_ref().len();
        let m = queues.as_ref().len();
        if n == 0 || m <= ASYNC_QUEUES {
            return Err(SetupError::StorageSize);
        }
        if n >= NIL as usize || m >= NIL as usize {
            return Err(SetupError::Capacity);
        }
        requests.as_mut().fill(ReqSlot::default());
        queues.as_mut().fill(QueueSlot::default());
        Ok(Cfq {
            reqs: requests,
            qs: queues,
            st: State::new(),
        })
    }

    fn ctx(&mut self) -> Ctx<'_> {
        Ctx {
            r: self.reqs.as_mut(),
            qs: self.qs.as_mut(),
            s: &mut self.st,
        }
    }

    /// Tells the policy whether the device is non-rotational
    /// (`blk_queue_nonrot()`): on one, `slice_idle` starts at 0, as
    /// `cfq_registered_queue` set it, and small requests count as seeky.
    pub fn set_nonrotational(&mut self, nonrot: bool) {
        self.st.nonrot = nonrot;
        if nonrot {
            self.st.slice_idle = 0;
        }
    }

    /// How many issuers the queue slots hold (the last one shared).
    pub fn issuers(&self) -> usize {
        self.qs.as_ref().len() - ASYNC_QUEUES
    }

    /// Whether issuer slot `issuer` is free: never used, or released after
    /// [`Cfq::issuer_exit`] once drained. Out of range ids are never free.
    pub fn issuer_is_free(&self, issuer: IssuerId) -> bool {
        issuer < self.issuers() && !self.qs.as_ref()[issuer].used
    }

    /// The issuer's process went away (`cfq_exit_icq`): its sync queue is
    /// expired if in service, never idled for again, and released once
    /// its requests are done.
    pub fn issuer_exit(&mut self, issuer: IssuerId, now: Nanos) {
        if issuer >= self.issuers() || !self.qs.as_ref()[issuer].used {
            return;
        }
        let mut c = self.ctx();
        c.enter(now);
        let qi = issuer as u32;
        c.qm(qi).exited = true;
        if c.s.active == qi {
            c.slice_expired(qi, false, now);
        }
        c.maybe_release(qi);
    }

    /// The end of the idle slice the device is held for, if the idle timer
    /// is armed.
    pub fn idling_until(&self) -> Option<Nanos> {
        self.st.timer_armed.then_some(self.st.idle_deadline)
    }

    /// What the caller, who runs the hardware queues, must do after
    /// [`Policy::completed`]: C's drivers ran the queue after each
    /// completion, and `cfq_completed_request` armed the idle timer. That
    /// is needed only while requests wait that no one else will send:
    /// with the idle timer armed, run the queue at its end; after a
    /// dispatch that held queued requests back, now.
    pub fn after_completion(&mut self) -> AfterCompletion {
        if !self.has_work() {
            return AfterCompletion::Nothing;
        }
        if let Some(until) = self.idling_until() {
            return AfterCompletion::RunAt(until);
        }
        if self.st.withheld {
            self.st.withheld = false;
            return AfterCompletion::RunNow;
        }
        AfterCompletion::Nothing
    }

    /// The queue in service, if any.
    pub fn in_service(&self) -> Option<QueueId> {
        let qi = self.st.active;
        (qi != NIL).then(|| self.queue_id(qi))
    }

    /// The class and workload type served.
    pub fn serving(&self) -> (PrioClass, Workload) {
        let class = match self.st.serving_class {
            0 => PrioClass::RealTime,
            1 => PrioClass::BestEffort,
            _ => PrioClass::Idle,
        };
        (class, Workload::from_index(self.st.serving_type))
    }

    /// Requests sent to the device and not yet completed or requeued.
    pub fn in_flight(&self) -> usize {
        (self.st.rq_in_driver + self.st.foreign_in_flight) as usize
    }

    /// Whether the device queues commands, as detected (`hw_tag`): `None`
    /// until known, which counts as queueing.
    pub fn hw_tag(&self) -> Option<bool> {
        match self.st.hw_tag {
            -1 => None,
            t => Some(t == 1),
        }
    }

    fn queue_id(&self, qi: u32) -> QueueId {
        let m = self.issuers();
        let i = qi as usize;
        if i < m {
            return QueueId::Sync(i);
        }
        let a = i - m;
        let prio = match a {
            0..=7 => IoPrio {
                class: PrioClass::RealTime,
                level: a as u8,
            },
            8..=15 => IoPrio {
                class: PrioClass::BestEffort,
                level: (a - 8) as u8,
            },
            _ => IoPrio {
                class: PrioClass::Idle,
                level: 7,
            },
        };
        QueueId::Async(prio)
    }

    fn queue_index(&self, id: QueueId) -> usize {
        match id {
            QueueId::Sync(i) => i.min(self.issuers() - 1),
            QueueId::Async(prio) => self.issuers() + async_index(prio),
        }
    }

    /// A snapshot of a queue; an issuer out of range reads the shared
    /// last one, as its requests go there.
    pub fn queue_info(&self, id: QueueId) -> QueueInfo {
        let qi = self.queue_index(id);
        let q = &self.qs.as_ref()[qi];
        QueueInfo {
            used: q.used,
            busy: q.on_rr,
            in_service: self.st.active == qi as u32,
            queued: q.queued,
            in_flight: q.dispatched,
            prio: IoPrio {
                class: q.class,
                level: q.level,
            },
            workload: Workload::from_index(q.wl_type()),
            idle_window: q.idle_window,
            seeky: q.seeky(),
            think_time: (q.sync && q.ttime.valid()).then_some(q.ttime.mean),
            rb_key: q.rb_key,
            allocated_slice: q.allocated_slice,
            slice_end: q.slice_end,
        }
    }
}

impl Ctx<'_> {
    /// Every entry point starts here: the think-time clocks start at the
    /// first event (C: at the scheduler's creation), and an idle timer
    /// that ran out fires.
    #[inline]
    fn enter(&mut self, now: Nanos) {
        if !self.s.started {
            self.s.started = true;
            for t in &mut self.s.st_ttime {
                t.last_end_request = now;
            }
            self.s.group_ttime.last_end_request = now;
        }
        if now > self.s.last_now {
            self.s.last_now = now;
        }
        self.fire_timer(now);
    }

    /// A queue slot comes into use: an issuer's sync queue (with its idle
    /// window on unless of the idle class) or an async queue.
    fn init_queue(&mut self, qi: u32, sync: bool, prio: IoPrio, now: Nanos) {
        *self.qm(qi) = QueueSlot::default();
        let q = self.qm(qi);
        q.used = true;
        q.sync = sync;
        q.ttime.last_end_request = now;
        self.set_prio(qi, prio);
        if sync && self.q(qi).class != PrioClass::Idle {
            self.qm(qi).idle_window = true;
        }
    }

    /// `cfq_init_prio_data`: the queue's class and level (the idle class
    /// at level 7, without an idle window).
    fn set_prio(&mut self, qi: u32, prio: IoPrio) {
        let q = self.qm(qi);
        q.class = prio.class;
        q.level = prio.level.min(7);
        if prio.class == PrioClass::Idle {
            q.level = 7;
            q.idle_window = false;
        }
    }

    /// `cfq_insert_request`: request `tag` arrives, at head or for its
    /// queue: its issuer's sync queue, or the async queue of its priority.
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        if tag >= self.r.len() {
            return;
        }
        self.enter(now);
        let x = tag as u32;
        match self.rq(x).state {
            RqState::Free => {}
            RqState::InFlight => {
                self.requeued(x);
                return self.insert_again(x, desc, at_head, now);
            }
            RqState::Requeued => return self.insert_again(x, desc, at_head, now),
            RqState::Queued | RqState::AtHead => return,
        }
        if at_head {
            // Not CFQ's: straight to the driver (C's dispatch list head).
            let r = self.rqm(x);
            r.sector = desc.sector;
            r.sectors = desc.sectors;
            r.op = desc.op;
            r.sync = desc.sync;
            r.prio = desc.prio;
            r.issuer = NIL;
            r.queue = NIL;
            r.arrival = now;
            r.state = RqState::AtHead;
            self.disp_push(x);
            return;
        }
        self.insert_sorted(x, desc, now);
    }

    /// A requeued request `x` is inserted again: at head it stays its
    /// queue's (in flight for it, as C's requeue list); otherwise it
    /// leaves its queue's counts and arrives anew.
    fn insert_again(&mut self, x: u32, desc: &RequestDesc, at_head: bool, now: Nanos) {
        if at_head {
            self.rqm(x).state = RqState::AtHead;
            self.disp_push(x);
            return;
        }
        let qi = self.rq(x).queue;
        self.rqm(x).state = RqState::Free;
        if qi != NIL {
            self.uncount_dispatched(qi);
            self.maybe_release(qi);
        }
        self.insert_sorted(x, desc, now);
    }

    /// `cfq_insert_request` for a request that is CFQ's.
    fn insert_sorted(&mut self, x: u32, desc: &RequestDesc, now: Nanos) {
        let issuers = self.issuers();
        let issuer = (desc.issuer as u64).min(u64::from(issuers - 1)) as u32;
        // The issuer's slot is its process's (C's `cfq_io_cq`), used from
        // its first request, sync or not.
        if !self.q(issuer).used {
            self.init_queue(issuer, true, desc.prio, now);
        }
        let qi = if desc.sync {
            issuer
        } else {
            issuers + async_index(desc.prio) as u32
        };
        if !self.q(qi).used {
            self.init_queue(qi, false, desc.prio, now);
        } else if desc.sync {
            let q = self.q(qi);
            if q.class != desc.prio.class || q.level != desc.prio.level.min(7) {
                self.set_prio(qi, desc.prio);
            }
        }
        let fifo_time = now.saturating_add(self.s.fifo_expire[usize::from(desc.sync)]);
        {
            let r = self.rqm(x);
            r.sector = desc.sector;
            r.sectors = desc.sectors;
            r.op = desc.op;
            r.sync = desc.sync;
            r.prio = desc.prio;
            r.issuer = issuer;
            r.queue = qi;
            r.fifo_time = fifo_time;
            r.arrival = now;
            r.state = RqState::Queued;
        }
        self.qs[qi as usize].fifo.push_back(self.r, x);
        self.add_rq_rb(x, now);
        self.hash_insert(x);
        self.rq_enqueued(qi, x, desc, now);
    }

    /// `cfq_rq_enqueued`: what a new request of queue `qi` tells: think
    /// time, seekiness and idle window; it ends the idling for it, or it
    /// may preempt the queue in service.
    fn rq_enqueued(&mut self, qi: u32, x: u32, desc: &RequestDesc, now: Nanos) {
        self.s.rq_queued += 1;
        let issuer = self.rq(x).issuer;
        self.update_io_thinktime(qi, issuer, now);
        self.update_io_seektime(qi, desc);
        self.update_idle_window(qi);
        self.qm(qi).last_request_pos = desc.end();
        if self.s.active == qi {
            if self.q(qi).wait_request {
                self.del_timer();
                self.qm(qi).wait_request = false;
            }
        } else if self.should_preempt(qi, x, now) {
            self.preempt_queue(qi, now);
        }
    }

    /// `cfq_deactivate_request`: the driver gave request `x` back; it will
    /// be inserted again.
    fn requeued(&mut self, x: u32) {
        if self.rq(x).state != RqState::InFlight {
            return;
        }
        self.rqm(x).state = RqState::Requeued;
        if self.rq(x).queue == NIL {
            self.s.foreign_in_flight = self.s.foreign_in_flight.saturating_sub(1);
        } else {
            self.s.rq_in_driver = self.s.rq_in_driver.saturating_sub(1);
        }
    }

    /// `cfq_completed_request`.
    fn completed(&mut self, tag: Tag, now: Nanos) {
        if tag >= self.r.len() {
            return;
        }
        let x = tag as u32;
        let qi = self.rq(x).queue;
        match self.rq(x).state {
            RqState::InFlight => {}
            RqState::Requeued => {
                // Completed without being sent again: it only leaves.
                self.rqm(x).state = RqState::Free;
                if qi != NIL {
                    self.uncount_dispatched(qi);
                    self.maybe_release(qi);
                }
                return;
            }
            _ => return,
        }
        self.enter(now);
        self.rqm(x).state = RqState::Free;
        if qi == NIL {
            self.s.foreign_in_flight = self.s.foreign_in_flight.saturating_sub(1);
            return;
        }
        self.update_hw_tag();
        self.s.rq_in_driver = self.s.rq_in_driver.saturating_sub(1);
        self.uncount_dispatched(qi);
        let r = *self.rq(x);
        if r.sync {
            self.qm(r.issuer).ttime.last_end_request = now;
            let q = self.q(qi);
            let st = if q.on_rr && q.st != NO_TREE {
                q.st as usize
            } else {
                st_of(self.class_of(qi), q.wl_type())
            };
            self.s.st_ttime[st].last_end_request = now;
            if r.arrival.saturating_add(self.s.fifo_expire[1]) <= now {
                self.s.last_delayed_sync = Some(now);
            }
        }
        self.s.group_ttime.last_end_request = now;
        if self.s.active == qi {
            let empty = self.q(qi).empty();
            if self.q(qi).slice_new {
                self.set_prio_slice(qi, now);
                self.qm(qi).slice_new = false;
            }
            // Should the queue wait for its next request before expiring?
            if self.should_wait_busy(qi, now) {
                let extend = if self.s.slice_idle != 0 {
                    self.s.slice_idle
                } else {
                    self.s.group_idle
                };
                let q = self.qm(qi);
                q.slice_end = now.saturating_add(extend);
                q.wait_busy = true;
            }
            if self.slice_used(qi, now) || self.idle_class(qi) {
                self.slice_expired(qi, true, now);
            } else if r.sync && empty {
                self.arm_slice_timer(now);
            }
        }
        self.maybe_release(qi);
    }
}

impl<R, Q> Policy for Cfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[QueueSlot]> + AsMut<[QueueSlot]>,
{
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        self.ctx().insert(tag, desc, at_head, now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let mut c = self.ctx();
        c.enter(now);
        let d = c.dispatch(now);
        self.st.withheld = !matches!(d, Dispatch::Request(_)) && self.has_work();
        d
    }

    fn has_work(&self) -> bool {
        self.st.rq_queued > 0 || self.st.disp_len > 0
    }

    fn queued(&self) -> usize {
        self.st.rq_queued as usize + self.st.disp_len as usize
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
        self.find_front_merge(probe)
    }

    fn front_merged(&mut self, tag: Tag, new_sector: Sector, new_sectors: u32) {
        self.ctx().front_merged(tag, new_sector, new_sectors);
    }

    fn back_merged(&mut self, tag: Tag, new_sectors: u32) {
        self.ctx().back_merged(tag, new_sectors);
    }

    fn requests_merged(&mut self, into: Tag, next: Tag) {
        self.ctx().requests_merged(into, next);
    }

    fn tunables(&self) -> &'static [&'static str] {
        super::tunables::TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        self.tunable_value(name)
    }

    /// Rejects anything outside the ranges in the [module
    /// documentation](super); the old value then stays.
    fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        self.write_tunable(name, text)
    }
}
