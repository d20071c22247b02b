// SPDX-License-Identifier: GPL-2.0

//! `rust-bfq`: a BFQ-like proportional-share I/O scheduler in Rust.
//!
//! The scheduling decisions are the policy crate's [`Bfq`] (the very source
//! file the host tests, property tests and fuzzers exercise, included
//! below); this module maps the block layer onto it through the elevator
//! abstraction (`kernel::block::mq::elevator`).
//!
//! - Requests are named in the policy by their scheduler index
//!   ([`RequestRef::sched_index`]), unique among the queue's scheduler
//!   requests; storage is sized for the largest depth the block layer
//!   allows, so `nr_requests` changes never move it.
//! - Issuers are process I/O contexts: the scheduler asks for one
//!   [`IoCq`] per (context, queue) ([`Elevator::IO_CONTEXTS`]) and keeps
//!   the context's issuer id in its word (0: none yet). The first request a
//!   context inserts takes a free issuer slot; the last slot is shared by
//!   requests without a context, contexts that found no free slot, and
//!   contexts that already exited. `exit_icq` calls [`Bfq::issuer_exit`];
//!   the policy frees the slot once the context's requests are done.
//! - Weights come from the requests' I/O priority (`ionice`), mapped as
//!   `bfq_ioprio_to_weight()` does: `(8 - level) * 10`.
//! - Idling: [`Dispatch::IdleUntil`] is handed to the abstraction through
//!   [`Elevator::rerun_at`], whose hrtimer runs the hardware queues when
//!   the idle slice ends (BFQ's `idle_slice_timer`); the arrival of the
//!   request the device idles for cancels it; a request arriving earlier
//!   runs the queue anyway (the block layer does after every insertion),
//!   and an early or late run just asks the policy again.
//! - Completions ([`Bfq::after_completion`]): one that starts an idle slice
//!   while other requests wait arms the timer too; one that leaves nothing
//!   in flight after a dispatch held requests back schedules a run. C BFQ
//!   does either whenever requests could wait; here only when they do, so
//!   that on a fast device a completion neither arms a timer nor wakes a
//!   worker (a tenth of the context switches C bfq makes fio do).
//! - Completions take the lock only while the policy holds queued
//!   requests ([`TimedLog`]): otherwise nothing can follow from them until
//!   the next request arrives, and the insertion that brings it hands them
//!   to the policy first, with the times they happened. On a fast device,
//!   where requests rarely wait, this saves one of the three lock
//!   acquisitions per request (C BFQ takes `bfqd->lock` in every
//!   completion).
//! - `limit_depth`: the policy's async/sync-write depth fractions, applied
//!   to the current `nr_requests`.
//!
//! Differences from C BFQ beyond the policy's own (see its module docs):
//! no cgroups; front merges look at every queue, not only the submitter's;
//! async requests use their context's queue, not shared per-priority
//! async queues.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::block::mq::elevator::{
    self, Bio, BioMerge, DepthUpdate, Elevator, HwQueue, Insertion, IoCq, LockOnDemand, MergeKind,
    OpFlags, Queue, ReqOp, RequestRef, Rerun, SchedRequest,
};
use kernel::prelude::*;
use kernel::{c_str, str::CStr};

// The policy crate's sources, included at the crate root as in every
// ironlift module, so that their `super::` paths name each other.
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/bfq/mod.rs"]
mod bfq;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/completions.rs"]
mod completions;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/intrusive.rs"]
mod intrusive;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
// Shared with the other elevator module; not all of it is used by each.
#[allow(dead_code)]
mod handles;

use bfq::{AfterCompletion, Bfq, IssuerSlot, ReqSlot};
use completions::{words_for, DrainBatch, TimedLog};
use handles::{kvvec_from_fn, policy_op, Handles, Words};
use types::{Dispatch, IoPrio, IssuerId, Op, Policy, RequestDesc, TunableError};

module! {
    type: RustBfqModule,
    name: "rust_bfq",
    author: "ironlift developers",
    description: "BFQ-like proportional-share I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-bfq-iosched"],
}

struct RustBfqModule {
    _registration: elevator::Registration<RustBfq>,
}

impl kernel::Module for RustBfqModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        // The sysfs files must be the policy's tunables, in its order.
        let probe =
            Bfq::new([ReqSlot::default(); 1], [IssuerSlot::default(); 1]).map_err(|_| EINVAL)?;
        if !handles::tunables_match(probe.tunables(), TUNABLES) {
            pr_err!("rust-bfq: sysfs tunables do not match the policy's\n");
            return Err(EINVAL);
        }
        Ok(RustBfqModule {
            _registration: elevator::Registration::new(module)?,
        })
    }
}

/// BFQ's tunables, as the policy names them (the order of its sysfs files).
const TUNABLES: &[&CStr] = &[
    c_str!("fifo_expire_sync"),
    c_str!("fifo_expire_async"),
    c_str!("back_seek_max"),
    c_str!("back_seek_penalty"),
    c_str!("slice_idle"),
    c_str!("slice_idle_us"),
    c_str!("max_budget"),
    c_str!("timeout_sync"),
    c_str!("strict_guarantees"),
    c_str!("low_latency"),
];

/// Issuer slots: one per process I/O context with I/O in flight or queued
/// (slots are reused once a context exited and its requests are done),
/// the last one shared.
const ISSUERS: usize = 512;

/// Values of an [`IoCq`]'s word besides `id + 1`.
const ICQ_UNASSIGNED: usize = 0;
const ICQ_SHARED: usize = usize::MAX - 1;
const ICQ_EXITED: usize = usize::MAX;

/// The policy's request storage: one [`ReqSlot`] per scheduler index.
struct ReqSlots(KVVec<ReqSlot>);

impl AsRef<[ReqSlot]> for ReqSlots {
    fn as_ref(&self) -> &[ReqSlot] {
        &self.0
    }
}

impl AsMut<[ReqSlot]> for ReqSlots {
    fn as_mut(&mut self) -> &mut [ReqSlot] {
        &mut self.0
    }
}

/// The policy's issuer storage.
struct IssuerSlots(KVVec<IssuerSlot>);

impl AsRef<[IssuerSlot]> for IssuerSlots {
    fn as_ref(&self) -> &[IssuerSlot] {
        &self.0
    }
}

impl AsMut<[IssuerSlot]> for IssuerSlots {
    fn as_mut(&mut self) -> &mut [IssuerSlot] {
        &mut self.0
    }
}

/// The per-queue state behind the elevator lock.
struct Locked {
    policy: Bfq<ReqSlots, IssuerSlots>,
    /// The handle of each queued request, by scheduler index.
    requests: Handles,
    /// Where the search for a free issuer slot starts.
    next_issuer: usize,
    /// The end of the idle slice the rerun timer was armed for, by
    /// `dispatch_request` (through [`Elevator::rerun_at`]) or by a
    /// completion; cleared, and the timer cancelled, when the request the
    /// device idled for arrives.
    idle_until: Option<u64>,
    /// What the depth limits were last computed from (`nr_requests`, and
    /// whether a weight-raised queue was busy), so that
    /// [`RustBfq::refresh`] can skip recomputing.
    limits_from: Option<(u32, bool)>,
    /// Where [`RustBfq::drain`] sorts completions by time.
    drain_batch: DrainBatch,
}

/// The per-queue state read without the lock.
struct RustBfq {
    /// `limit_depth()` answers by [`limit_index`]; 0 means no limit. Kept
    /// equal to the policy's limits, scaled to `nr_requests`, under the lock.
    depth_limits: [AtomicU32; 4],
    /// The scheduler tags per hardware queue (`nr_requests`).
    nr_requests: AtomicU32,
    /// The completions not yet handed to the policy, with the times the
    /// block layer gave `completed_request` (so that `finish_request`,
    /// which follows, need not read the clock again), and whether the
    /// policy holds queued requests (then a completion is handed over at
    /// once, under the lock).
    done: TimedLog<Words, Words>,
}

fn limit_index(read: bool, sync: bool) -> usize {
    usize::from(read) * 2 + usize::from(sync)
}

fn tunable_error(_: TunableError) -> Error {
    EINVAL
}

impl RustBfq {
    /// Hands the completions recorded since the last call to the policy,
    /// in the order they happened. Every hook that lets the policy decide
    /// something calls it first.
    #[inline]
    fn drain(&self, locked: &mut Locked) {
        let Locked {
            policy,
            drain_batch,
            ..
        } = locked;
        self.done
            .drain(drain_batch, |tag, at| policy.completed(tag, at));
    }

    /// Tells the completion path whether the policy now holds queued
    /// requests, at the end of every hook that may change it. If it just
    /// began to, completions that found it empty may not have been handed
    /// over: do it now. What they call for ([`Bfq::after_completion`]) the
    /// queue run that follows every insertion does.
    #[inline]
    fn publish(&self, locked: &mut Locked) {
        if self.done.set_busy(locked.policy.has_work()) {
            self.drain(locked);
            let _ = locked.policy.after_completion();
        }
    }

    /// Mirrors the policy's depth limits for the lock-free `limit_depth`.
    /// The policy expresses them against its storage size; they are
    /// fractions of the depth, so scale them to `nr_requests`. They change
    /// only with the depth and when weight-raised queues come and go
    /// ([`Bfq::weight_raised_busy`]), so this runs on every scheduler call
    /// but asks the policy and scales (four divisions) only when one of
    /// those changed.
    #[inline]
    fn refresh(&self, locked: &mut Locked) {
        let key = (
            self.nr_requests.load(Ordering::Relaxed),
            locked.policy.weight_raised_busy(),
        );
        if locked.limits_from == Some(key) {
            return;
        }
        locked.limits_from = Some(key);
        self.rescale(locked, key.0);
    }

    /// [`RustBfq::refresh`]'s work when the limits may have changed.
    fn rescale(&self, locked: &mut Locked, depth: u32) {
        let mut raw = [None; 4];
        for (op, read) in [(Op::Read, true), (Op::Write, false)] {
            for sync in [false, true] {
                raw[limit_index(read, sync)] = locked.policy.async_depth_limit(op, sync);
            }
        }
        let capacity = locked.requests.len().max(1) as u64;
        for (i, l) in raw.into_iter().enumerate() {
            let limit = match l {
                None => 0,
                Some(l) => {
                    (u64::from(l) * u64::from(depth) / capacity).clamp(1, u64::from(u32::MAX))
                }
            };
            self.depth_limits[i].store(limit as u32, Ordering::Relaxed);
        }
    }
}

impl Locked {
    /// The shared issuer slot.
    fn shared(&self) -> IssuerId {
        ISSUERS - 1
    }

    /// A free issuer slot (not the shared one), if any.
    fn free_issuer(&mut self) -> Option<IssuerId> {
        let n = ISSUERS - 1;
        for k in 0..n {
            let i = (self.next_issuer + k) % n;
            if self.policy.issuer_is_free(i) {
                self.next_issuer = (i + 1) % n;
                return Some(i);
            }
        }
        None
    }

    /// The issuer of a request: its context's slot, taking a free one on
    /// the context's first request (unless `at_head`: those go straight
    /// out and need no queue of their own).
    fn issuer(&mut self, rq: &RequestRef, at_head: bool) -> IssuerId {
        let Some(icq) = rq.io_cq() else {
            return self.shared();
        };
        match icq.private() {
            ICQ_UNASSIGNED if at_head => self.shared(),
            ICQ_UNASSIGNED => match self.free_issuer() {
                Some(id) => {
                    icq.set_private(id + 1);
                    id
                }
                None => {
                    icq.set_private(ICQ_SHARED);
                    self.shared()
                }
            },
            ICQ_SHARED | ICQ_EXITED => self.shared(),
            w if w - 1 < ISSUERS - 1 => w - 1,
            _ => self.shared(),
        }
    }
}

#[vtable]
impl Elevator for RustBfq {
    type Locked = Locked;
    type LockContext = elevator::IrqSafe;

    const NAME: &'static CStr = c_str!("rust-bfq");
    const TUNABLES: &'static [&'static CStr] = TUNABLES;
    const IO_CONTEXTS: bool = true;

    fn init(queue: &Queue) -> Result<(Self, Locked)> {
        let capacity = queue.sched_index_bound();
        let mut slots = KVVec::with_capacity(capacity, GFP_KERNEL)?;
        slots.extend_with(capacity, ReqSlot::default(), GFP_KERNEL)?;
        let mut issuers = KVVec::with_capacity(ISSUERS, GFP_KERNEL)?;
        issuers.extend_with(ISSUERS, IssuerSlot::default(), GFP_KERNEL)?;
        let requests = Handles::new(capacity)?;
        let mut policy = Bfq::new(ReqSlots(slots), IssuerSlots(issuers)).map_err(|_| EINVAL)?;
        policy.set_nonrotational(!queue.is_rotational());
        // One hardware queue's depth, not the sum over them: null_blk's
        // poll queue, for one, takes no normal I/O.
        policy.set_device_depth(queue.hw_queue_depth());
        let shared = RustBfq {
            depth_limits: Default::default(),
            nr_requests: AtomicU32::new(queue.nr_requests()),
            done: TimedLog::new(
                Words(kvvec_from_fn(words_for(capacity), || AtomicU64::new(0))?),
                Words(kvvec_from_fn(capacity, || AtomicU64::new(0))?),
            ),
        };
        let mut locked = Locked {
            policy,
            requests,
            next_issuer: 0,
            idle_until: None,
            limits_from: None,
            drain_batch: DrainBatch::default(),
        };
        shared.refresh(&mut locked);
        Ok((shared, locked))
    }

    fn insert_requests(
        &self,
        locked: &mut Locked,
        _hctx: &HwQueue,
        requests: &mut Insertion<'_, Self>,
        at_head: bool,
    ) {
        let now = elevator::blk_time_get_ns();
        self.drain(locked);
        while let Some(rq) = requests.next() {
            let Err(rq) = requests.try_merge(locked, rq) else {
                continue;
            };
            let desc = RequestDesc {
                sector: rq.sector(),
                sectors: rq.sectors(),
                op: policy_op(rq.op()),
                sync: rq.is_sync(),
                prio: IoPrio::from_kernel(rq.ioprio()),
                issuer: locked.issuer(&rq, at_head),
                arrival: now,
            };
            if !at_head {
                requests.add_merge_candidate(&rq);
            }
            let Some((tag, slot)) = locked.requests.slot(&rq) else {
                // Cannot happen: every scheduler request has an index below
                // the bound. Dropping the handle reports it.
                drop(rq);
                continue;
            };
            if slot.is_some() {
                // The index is in use: the block layer gave one tag to two
                // requests. Keep the queued one; report the new one.
                drop(rq);
                continue;
            }
            *slot = Some(rq);
            locked.policy.insert(tag, &desc, at_head, now);
        }
        if locked.idle_until.is_some() && locked.policy.idling_until().is_none() {
            // The request the device idled for came: no run at the end of
            // the slice (bfq_rq_enqueued() cancels the idle_slice_timer).
            locked.idle_until = None;
            requests.cancel_rerun();
        }
        self.publish(locked);
        self.refresh(locked);
    }

    fn dispatch_request(&self, locked: &mut Locked, _hctx: &HwQueue) -> Option<SchedRequest> {
        let now = elevator::blk_time_get_ns();
        self.drain(locked);
        let rq = loop {
            match locked.policy.dispatch(now) {
                Dispatch::Request(tag) => {
                    if let Some(rq) = locked.requests.take(tag) {
                        break Some(rq);
                    }
                    // The policy named a tag without a request: skip it.
                }
                Dispatch::IdleUntil(until) => {
                    // `rerun_at` arms the abstraction's hrtimer for the end
                    // of the idle slice; a request arriving earlier runs the
                    // queue anyway.
                    locked.idle_until = Some(until);
                    break None;
                }
                Dispatch::Empty => {
                    locked.idle_until = None;
                    break None;
                }
            }
        };
        self.publish(locked);
        self.refresh(locked);
        rq
    }

    fn rerun_at(&self, locked: &Locked) -> Option<u64> {
        locked.idle_until
    }

    fn completed_request(&self, rq: &RequestRef, now_ns: u64) {
        if let Some(i) = rq.sched_index() {
            self.done.set_time(i, now_ns);
        }
    }

    fn finish_request(&self, rq: &RequestRef, lock: LockOnDemand<'_, Self>) {
        let Some(tag) = rq.sched_index() else {
            return;
        };
        // At the time the block layer read for this request, just before;
        // a request freed without completing (merged away, say) has none,
        // and reads the clock, outside the lock. C BFQ reads it again,
        // under its lock. With no request queued, the next insertion hands
        // the completion over (see `TimedLog`).
        if !self.done.complete(tag, elevator::blk_time_get_ns) {
            return;
        }
        // As bfq_finish_requeue_request(): completions go through the lock.
        let mut guard = lock.lock();
        let locked = &mut *guard;
        self.drain(locked);
        let mut run_now = false;
        // Only for requests that would otherwise wait: C BFQ arms its idle
        // timer, or schedules a dispatch, on most completions when each
        // process has one request at a time (see `after_completion()`).
        match locked.policy.after_completion() {
            AfterCompletion::RunAt(until) => {
                // As bfq_completed_request() after bfq_arm_slice_timer():
                // the device waits for the in-service queue's next request;
                // only the end of the idle slice runs the queue (a dispatch
                // now would only look for requests of other queues to
                // inject).
                locked.idle_until = Some(until);
                lock.rerun_at(until);
            }
            // Nothing left on the device, and the last dispatch held the
            // queued requests back: nothing else will run the queue.
            AfterCompletion::RunNow => run_now = true,
            AfterCompletion::Nothing => {}
        }
        self.publish(locked);
        self.refresh(locked);
        // After the unlock (C BFQ schedules the dispatch under its lock):
        // running the queues may take `queue_lock`, which the block layer
        // holds while `exit_icq` takes ours.
        drop(guard);
        if run_now {
            rq.queue().run_hw_queues_async();
        }
    }

    fn requeue_request(&self, locked: &mut Locked, rq: &RequestRef) {
        self.drain(locked);
        if let Some(tag) = rq.sched_index() {
            locked.policy.requeued(tag, elevator::blk_time_get_ns());
        }
        self.publish(locked);
    }

    fn exit_icq(&self, locked: &mut Locked, icq: &IoCq, rerun: Rerun<'_>) {
        self.drain(locked);
        let w = icq.private();
        if w != ICQ_UNASSIGNED && w != ICQ_SHARED && w != ICQ_EXITED && w - 1 < ISSUERS - 1 {
            locked
                .policy
                .issuer_exit(w - 1, elevator::blk_time_get_ns());
        }
        // Requests the context still allocates go to the shared slot: its
        // own may be handed to another context once drained.
        icq.set_private(ICQ_EXITED);
        if locked.policy.has_work() {
            // As bfq_exit_bfqq(): the device may have been idling for the
            // exiting process; the policy stopped that, so run the queue now
            // rather than when the idle slice ends. From the rerun timer:
            // the block layer holds `ioc->lock` here, and running the queue
            // may take `queue_lock`, which it takes before `ioc->lock`.
            rerun.now();
            locked.idle_until = None;
        }
        self.publish(locked);
        self.refresh(locked);
    }

    fn bio_merge(&self, locked: &mut Locked, merge: BioMerge<'_, Self>) -> bool {
        merge.try_merge(locked)
    }

    fn request_merge<'a>(&self, locked: &'a mut Locked, bio: &Bio) -> Option<&'a RequestRef> {
        locked.requests.front_merge_candidate(&locked.policy, bio)
    }

    fn request_merged(&self, locked: &mut Locked, rq: &RequestRef, kind: MergeKind) {
        handles::request_merged(&mut locked.policy, rq, kind);
    }

    fn requests_merged(
        &self,
        locked: &mut Locked,
        into: &RequestRef,
        next: &RequestRef,
    ) -> Option<SchedRequest> {
        locked.requests.merged_away(&mut locked.policy, into, next)
    }

    fn limit_depth(&self, opf: OpFlags) -> Option<u32> {
        let read = opf.op() == ReqOp::Read;
        let limit = self.depth_limits[limit_index(read, opf.is_sync())].load(Ordering::Relaxed);
        (limit != 0).then_some(limit)
    }

    fn depth_updated(&self, locked: &mut Locked, update: &DepthUpdate<'_>) {
        self.nr_requests
            .store(update.nr_requests(), Ordering::Relaxed);
        update.set_min_shallow_depth(1);
        self.refresh(locked);
    }

    fn tunable_show(&self, locked: &Locked, index: usize) -> Result<i64> {
        let name = TUNABLES.get(index).ok_or(EINVAL)?.to_str()?;
        locked.policy.tunable(name).map_err(tunable_error)
    }

    fn tunable_store(&self, locked: &mut Locked, index: usize, text: &str) -> Result {
        let name = TUNABLES.get(index).ok_or(EINVAL)?.to_str()?;
        locked
            .policy
            .set_tunable(name, text)
            .map_err(tunable_error)?;
        self.refresh(locked);
        Ok(())
    }
}
