// SPDX-License-Identifier: GPL-2.0

//! `rust-deadline`: mq-deadline in Rust.
//!
//! The scheduling decisions are the policy crate's [`Deadline`] (the very
//! source file the host tests exercise, included below); this module maps
//! the block layer onto it through the elevator abstraction
//! (`kernel::block::mq::elevator`).
//!
//! Time is [`elevator::jiffies_ns`]: mq-deadline's `jiffies`, in
//! nanoseconds, and no clocksource read per request.
//!
//! Completions take no lock, as in mq-deadline (`dd_finish_request()`
//! is one atomic increment): `finish_request` records the request's index
//! in a [`CompletionLog`], and insertion and dispatch, under the lock, hand
//! the recorded completions to the policy before anything else. The block
//! layer frees a scheduler tag only after `finish_request` returned, so the
//! policy learns of a completion before the index can be inserted again.
//!
//! As mq-deadline, it has no `requeue_request` hook: a requeued request
//! is simply inserted again, which the policy takes as a requeue (its
//! index is still in flight). So the lock is never taken in interrupt
//! context and is a plain spinlock ([`elevator::ProcessContext`]).
//!
//! Requests are named in the policy by their scheduler index
//! ([`RequestRef::sched_index`]: hardware queue × `MAX_SCHED_TAGS` +
//! scheduler tag), unique among the queue's scheduler requests. The policy's
//! storage and the table of request handles are sized for the largest
//! depth the block layer allows (`nr_hw_queues × MAX_SCHED_TAGS`), so a
//! change of `nr_requests` never needs to move them.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use kernel::block::mq::elevator::{
    self, Bio, BioMerge, DepthUpdate, Elevator, HwQueue, Insertion, LockOnDemand, MergeKind,
    OpFlags, Queue, ReqOp, RequestRef, SchedRequest,
};
use kernel::prelude::*;
use kernel::{c_str, str::CStr};

// The policy crate's sources, included at the crate root as in every
// ironlift module, so that their `super::` paths name each other.
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/completions.rs"]
mod completions;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/deadline/mod.rs"]
mod deadline;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/intrusive.rs"]
mod intrusive;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
// Shared with the other elevator module; not all of it is used by each.
#[allow(dead_code)]
mod handles;

use completions::{words_for, CompletionLog};
use deadline::{Deadline, Slot};
use handles::{kvvec_from_fn, policy_op, Handles, Words};
use types::{Dispatch, IoPrio, Op, Policy, RequestDesc, TunableError};

module! {
    type: RustDeadlineModule,
    name: "rust_deadline",
    author: "ironlift developers",
    description: "mq-deadline I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-deadline-iosched"],
}

struct RustDeadlineModule {
    _registration: elevator::Registration<RustDeadline>,
}

impl kernel::Module for RustDeadlineModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        // The sysfs files must be the policy's tunables, in its order.
        let probe = Deadline::new([Slot::default(); 1]).map_err(|_| EINVAL)?;
        if !handles::tunables_match(probe.tunables(), TUNABLES) {
            pr_err!("rust-deadline: sysfs tunables do not match the policy's\n");
            return Err(EINVAL);
        }
        // `limit_depth` answers reads without asking the policy.
        if probe.async_depth_limit(Op::Read, true).is_some() {
            pr_err!("rust-deadline: the policy limits the depth of reads\n");
            return Err(EINVAL);
        }
        Ok(RustDeadlineModule {
            _registration: elevator::Registration::new(module)?,
        })
    }
}

/// mq-deadline's tunables, as the policy names them.
const TUNABLES: &[&CStr] = &[
    c_str!("read_expire"),
    c_str!("write_expire"),
    c_str!("writes_starved"),
    c_str!("front_merges"),
    c_str!("async_depth"),
    c_str!("fifo_batch"),
    c_str!("prio_aging_expire"),
];

/// The policy's storage: one [`Slot`] per scheduler index.
struct Slots(KVVec<Slot>);

impl AsRef<[Slot]> for Slots {
    fn as_ref(&self) -> &[Slot] {
        &self.0
    }
}

impl AsMut<[Slot]> for Slots {
    fn as_mut(&mut self) -> &mut [Slot] {
        &mut self.0
    }
}

/// The per-queue state behind the elevator lock.
struct Locked {
    policy: Deadline<Slots>,
    /// The handle of each queued request, by scheduler index.
    requests: Handles,
}

/// The per-queue state read without the lock.
struct RustDeadline {
    /// `limit_depth()` answers, by [`limit_index`]; 0 means no limit. Kept
    /// equal to the policy's `async_depth_limit()` under the lock.
    depth_limits: [AtomicU32; 8],
    /// Scheduler indexes completed since the policy last heard.
    completions: CompletionLog<Words>,
}

const OPS: [Op; 4] = [Op::Read, Op::Write, Op::Flush, Op::Discard];

fn limit_index(op: Op, sync: bool) -> usize {
    let op = match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Flush => 2,
        Op::Discard => 3,
    };
    op * 2 + usize::from(sync)
}

impl RustDeadline {
    /// Mirrors the policy's depth limits for the lock-free `limit_depth`.
    fn refresh_depth_limits(&self, policy: &Deadline<Slots>) {
        for op in OPS {
            for sync in [false, true] {
                let limit = policy.async_depth_limit(op, sync).unwrap_or(0);
                self.depth_limits[limit_index(op, sync)].store(limit, Ordering::Relaxed);
            }
        }
    }
}

impl RustDeadline {
    /// Tells the policy of the completions recorded since the last call.
    /// The lock must be held: `locked` proves it.
    #[inline]
    fn catch_up(&self, locked: &mut Locked, now: u64) {
        self.completions
            .drain(|tag| locked.policy.completed(tag, now));
    }
}

fn tunable_error(_: TunableError) -> Error {
    EINVAL
}

#[vtable]
impl Elevator for RustDeadline {
    type Locked = Locked;
    type LockContext = elevator::ProcessContext;

    const NAME: &'static CStr = c_str!("rust-deadline");
    const TUNABLES: &'static [&'static CStr] = TUNABLES;

    fn init(queue: &Queue) -> Result<(Self, Locked)> {
        let capacity = queue.sched_index_bound();
        let mut slots = KVVec::with_capacity(capacity, GFP_KERNEL)?;
        slots.extend_with(capacity, Slot::default(), GFP_KERNEL)?;
        let requests = Handles::new(capacity)?;
        let words = kvvec_from_fn(words_for(capacity), || AtomicU64::new(0))?;
        let mut policy = Deadline::new(Slots(slots)).map_err(|_| EINVAL)?;
        policy.depth_updated(queue.nr_requests());
        let shared = RustDeadline {
            depth_limits: Default::default(),
            completions: CompletionLog::new(Words(words)),
        };
        shared.refresh_depth_limits(&policy);
        Ok((shared, Locked { policy, requests }))
    }

    fn insert_requests(
        &self,
        locked: &mut Locked,
        _hctx: &HwQueue,
        requests: &mut Insertion<'_, Self>,
        at_head: bool,
    ) {
        let now = elevator::jiffies_ns();
        self.catch_up(locked, now);
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
                issuer: 0,
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
    }

    fn dispatch_request(&self, locked: &mut Locked, _hctx: &HwQueue) -> Option<SchedRequest> {
        let now = elevator::jiffies_ns();
        self.catch_up(locked, now);
        loop {
            match locked.policy.dispatch(now) {
                Dispatch::Request(tag) => {
                    if let Some(rq) = locked.requests.take(tag) {
                        return Some(rq);
                    }
                    // The policy named a tag without a request: skip it.
                }
                // mq-deadline never idles; `IdleUntil` is for other policies.
                Dispatch::IdleUntil(_) | Dispatch::Empty => return None,
            }
        }
    }

    fn finish_request(&self, rq: &RequestRef, _lock: LockOnDemand<'_, Self>) {
        if let Some(tag) = rq.sched_index() {
            // Requests that bypassed the scheduler are recorded too: the
            // policy ignores indexes that are not in flight.
            self.completions.record(tag);
        }
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
        // As `dd_limit_depth()`, reads (all synchronous) return before
        // anything is looked up: the policy never limits them, which
        // `init` checked.
        if opf.op() == ReqOp::Read {
            return None;
        }
        let limit = self.depth_limits[limit_index(policy_op(opf.op()), opf.is_sync())]
            .load(Ordering::Relaxed);
        (limit != 0).then_some(limit)
    }

    fn depth_updated(&self, locked: &mut Locked, update: &DepthUpdate<'_>) {
        locked.policy.depth_updated(update.nr_requests());
        // As mq-deadline in 6.12: the depth limit may go down to 1.
        update.set_min_shallow_depth(1);
        self.refresh_depth_limits(&locked.policy);
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
        self.refresh_depth_limits(&locked.policy);
        Ok(())
    }
}
