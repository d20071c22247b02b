// SPDX-License-Identifier: GPL-2.0

//! The elevator every ironlift scheduler module registers: a policy of the
//! policy crate, run by its module core (`sched`: [`Core`] under the
//! elevator lock, [`Shared`] without it), on the elevator abstraction
//! (`kernel::block::mq::elevator`). The core decides and says what to do
//! ([`Effect`]); this file carries it out with the abstraction's timer and
//! queue handles, and keeps the owned request handles. A module says only
//! what differs ([`Scheduler`]) and registers [`PolicyElevator`] through
//! [`SchedulerModule`].
//!
//! - Requests are named in the policy by their scheduler index
//!   ([`RequestRef::sched_index`]: hardware queue × `MAX_SCHED_TAGS` +
//!   scheduler tag), unique among the queue's scheduler requests. The
//!   policy's storage and the table of handles are sized for the largest
//!   depth the block layer allows (`nr_hw_queues × MAX_SCHED_TAGS`), so a
//!   change of `nr_requests` never moves them.
//! - Hooks only some schedulers need are registered from what the policy
//!   and the module say: `rerun_at` if the policy idles,
//!   `completed_request` if its completions are timed, `requeue_request`
//!   if the lock is taken in interrupt context (otherwise, as in
//!   mq-deadline, a requeued request is simply inserted again, which the
//!   policy takes as a requeue: its index is still in flight), `exit_icq`
//!   with I/O contexts.
//! - The sysfs files are the policy's tunables, named by the policy
//!   ([`SchedPolicy::TUNABLES`], or [`SchedPolicy::QUEUE_DEPTH_TUNABLES`]
//!   where the queue keeps `async_depth`, as the abstraction's
//!   `QUEUE_ASYNC_DEPTH` says); bad writes fail with `EINVAL` and keep
//!   the value.
//! - The queues are never run under the elevator lock (running them may
//!   take `queue_lock`, which the block layer takes before `ioc->lock`,
//!   under which `exit_icq` takes ours).

use super::completions::Completions;
use super::sched::{self as core_sched, ContextIssuers, Core, Effect, SchedPolicy, Shared};
use super::types::{AsyncDepth, IoPrio, IssuerId, MergeProbe, Op, RequestDesc};
use core::marker::PhantomData;
use core::sync::atomic::AtomicU64;
use kernel::block::mq::elevator::{
    self, Allocation, Bio, BioMerge, DepthUpdate, Elevator, HwQueue, InitAsyncDepth, Insertion,
    IoCq, IrqSafe, LockContext, LockOnDemand, MergeKind, OpFlags, ProcessContext, Queue, ReqOp,
    RequestRef, Rerun, SchedRequest, MAX_TUNABLES, QUEUE_ASYNC_DEPTH,
};
use kernel::prelude::*;
use kernel::{c_str, str::CStr};

/// What a scheduler module says about itself; [`PolicyElevator`] does the
/// rest.
pub(crate) trait Scheduler: Send + Sync + 'static {
    /// The policy, over [`Storage`].
    type Policy: SchedPolicy + Send + Unpin;
    /// How the elevator lock is taken: [`IrqSafe`] if completions may need
    /// it (a timed completion log) or with I/O contexts, else
    /// [`ProcessContext`].
    type LockContext: CompletionLock;
    /// What maps requests to the policy's issuers, behind the lock.
    type Issuers: Send + Unpin;

    /// The elevator's name.
    const NAME: &'static CStr;
    /// Another name it can be selected by (`elevator_alias`): the name of
    /// the scheduler it reimplements, where no built-in elevator has it.
    const ALIAS: Option<&'static CStr> = None;
    /// Whether issuers are process I/O contexts ([`Elevator::IO_CONTEXTS`]).
    const IO_CONTEXTS: bool = false;

    /// The time the policy is given, in nanoseconds.
    fn now() -> u64;

    /// The policy for `queue`, over storage for `capacity` requests, and
    /// its issuers.
    fn init(queue: &Queue, capacity: usize) -> Result<(Self::Policy, Self::Issuers)>;

    /// The issuer of a request being inserted.
    #[inline]
    fn issuer(
        _issuers: &mut Self::Issuers,
        _policy: &Self::Policy,
        _rq: &RequestRef,
        _at_head: bool,
    ) -> IssuerId {
        0
    }

    /// An I/O context exits: the issuer it had of its own, if any.
    fn exit_context(_issuers: &Self::Issuers, _icq: &IoCq) -> Option<IssuerId> {
        None
    }

    /// The issuer of the I/O context whose word is `word`, if it has one
    /// of its own (for a policy that limits issuers by the tags they hold,
    /// [`SchedPolicy::SHARES_TAGS`]).
    fn context_issuer(_issuers: &Self::Issuers, _word: usize) -> Option<IssuerId> {
        None
    }
}

/// A scheduler module: its elevator is registered while it is loaded.
pub(crate) struct SchedulerModule<S: Scheduler> {
    _registration: elevator::Registration<PolicyElevator<S>>,
}

impl<S: Scheduler> kernel::Module for SchedulerModule<S> {
    fn init(module: &'static ThisModule) -> Result<Self> {
        Ok(SchedulerModule {
            _registration: elevator::Registration::new(module)?,
        })
    }
}

/// Storage for the policy crate, which takes its slices as `AsRef` and
/// `AsMut`: a vector from the kernel's allocator.
pub(crate) struct Storage<T>(KVVec<T>);

impl<T> Storage<T> {
    /// `n` values made by `f`.
    pub(crate) fn new(n: usize, f: impl Fn() -> T) -> Result<Self> {
        let mut v = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            v.push(f(), GFP_KERNEL)?;
        }
        Ok(Storage(v))
    }
}

impl<T> AsRef<[T]> for Storage<T> {
    fn as_ref(&self) -> &[T] {
        &self.0
    }
}

impl<T> AsMut<[T]> for Storage<T> {
    fn as_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

/// Storage of the completion log.
type Words = Storage<AtomicU64>;

/// The per-queue state read without the lock.
pub(crate) struct PolicyElevator<S: Scheduler> {
    shared: Shared<S::Policy, Words>,
    _scheduler: PhantomData<S>,
}

/// The per-queue state behind the elevator lock.
pub(crate) struct Locked<S: Scheduler> {
    core: Core<S::Policy>,
    /// The handle of each queued request, by scheduler index.
    requests: Handles,
    issuers: S::Issuers,
}

impl<S: Scheduler> PolicyElevator<S> {
    /// A completion log that may ask for the lock needs a lock that the
    /// completion path may take.
    const LOCK_OK: () = assert!(
        <S::LockContext as LockContext>::IRQ || !Self::TIMED,
        "a timed completion log needs `type LockContext = IrqSafe`"
    );

    /// Whether completions carry their times.
    const TIMED: bool = <<S::Policy as SchedPolicy>::Log<Words> as Completions<Words>>::TIMED;
}

#[vtable]
impl<S: Scheduler> Elevator for PolicyElevator<S> {
    type Locked = Locked<S>;
    type LockContext = S::LockContext;

    const NAME: &'static CStr = S::NAME;
    const ALIAS: Option<&'static CStr> = S::ALIAS;
    const TUNABLES: &'static [&'static CStr] = SysfsNames::<S::Policy>::NAMES;
    const IO_CONTEXTS: bool = S::IO_CONTEXTS;

    // The hooks only some schedulers have (see the module documentation).
    const HAS_RERUN_AT: bool = <S::Policy as SchedPolicy>::IDLES;
    const HAS_COMPLETED_REQUEST: bool = Self::TIMED;
    const HAS_REQUEUE_REQUEST: bool = <S::LockContext as LockContext>::IRQ;
    const HAS_EXIT_ICQ: bool = S::IO_CONTEXTS;

    fn init(queue: &Queue) -> Result<(Self, Locked<S>)> {
        #[allow(clippy::let_unit_value)]
        let () = Self::LOCK_OK;
        let capacity = queue.sched_index_bound();
        let (policy, issuers) = S::init(queue, capacity)?;
        let (bitmap, times) = Shared::<S::Policy, Words>::log_words(capacity);
        let zero = || AtomicU64::new(0);
        let shared = Shared::new(
            Storage::new(bitmap, zero)?,
            Storage::new(times, zero)?,
            queue.nr_requests(),
        );
        let core = Core::with_async_depth(policy, capacity, &shared, ASYNC_DEPTH_HOME);
        let locked = Locked {
            core,
            requests: Handles::new(capacity)?,
            issuers,
        };
        Ok((
            PolicyElevator {
                shared,
                _scheduler: PhantomData,
            },
            locked,
        ))
    }

    fn insert_requests(
        &self,
        locked: &mut Locked<S>,
        _hctx: &HwQueue,
        requests: &mut Insertion<'_, Self>,
        at_head: bool,
    ) {
        let now = S::now();
        locked.core.begin_insert(&self.shared, now);
        while let Some(rq) = requests.next() {
            let Err(rq) = requests.try_merge(locked, rq) else {
                continue;
            };
            requests.trace_insert(&rq);
            let desc = RequestDesc {
                sector: rq.sector(),
                sectors: rq.sectors(),
                op: policy_op(rq.op()),
                sync: rq.is_sync(),
                prio: IoPrio::from_kernel(rq.ioprio()),
                issuer: S::issuer(&mut locked.issuers, locked.core.policy(), &rq, at_head),
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
            locked.core.insert(tag, &desc, at_head, now);
        }
        if locked.core.end_insert(&self.shared, now) == Effect::CancelRerun {
            requests.cancel_rerun();
        }
    }

    fn dispatch_request(&self, locked: &mut Locked<S>, _hctx: &HwQueue) -> Option<SchedRequest> {
        let Locked { core, requests, .. } = locked;
        // Without a request, the end of an idle slice is armed through
        // `rerun_at`, which the abstraction asks next.
        let (rq, _) = core.dispatch(&self.shared, S::now(), |tag| requests.take(tag));
        rq
    }

    fn rerun_at(&self, locked: &Locked<S>) -> Option<u64> {
        locked.core.rerun_at()
    }

    fn completed_request(&self, rq: &RequestRef, now_ns: u64) {
        if let Some(tag) = rq.sched_index() {
            self.shared.completed(tag, now_ns);
        }
    }

    fn finish_request(&self, rq: &RequestRef, lock: LockOnDemand<'_, Self>) {
        // Requests that bypassed the scheduler are recorded too: the
        // policy ignores indexes that are not in flight.
        let Some(tag) = rq.sched_index() else {
            return;
        };
        if !self.shared.finish(tag, S::now) {
            return;
        }
        let effect = S::LockContext::with_lock(&lock, |locked| {
            let effect = locked.core.finished(&self.shared, S::now);
            if let Effect::ArmRerun(at) = effect {
                lock.rerun_at(at);
            }
            effect
        });
        if effect == Some(Effect::RunAsync) {
            rq.queue().run_hw_queues_async();
        }
    }

    fn requeue_request(&self, locked: &mut Locked<S>, rq: &RequestRef) {
        // Only scheduler requests are requeued through the scheduler.
        if let Some(tag) = rq.sched_index() {
            locked.core.requeued(&self.shared, tag, S::now());
        }
    }

    fn exit_icq(&self, locked: &mut Locked<S>, icq: &IoCq, rerun: Rerun<'_>) {
        let issuer = S::exit_context(&locked.issuers, icq);
        if locked.core.issuer_exit(&self.shared, issuer, S::now()) == Effect::RerunNow {
            rerun.now();
        }
    }

    fn bio_merge(&self, locked: &mut Locked<S>, merge: BioMerge<'_, Self>) -> bool {
        merge.try_merge(locked)
    }

    fn request_merge<'a>(&self, locked: &'a mut Locked<S>, bio: &Bio) -> Option<&'a RequestRef> {
        let probe = MergeProbe {
            bio_end: bio.end_sector(),
            op: policy_op(bio.opf().op()),
            prio: IoPrio::from_kernel(bio.ioprio()),
        };
        let tag = locked.core.front_merge_candidate(&probe)?;
        locked.requests.get(tag)
    }

    /// A front merge moved the request's start, which the policy sorts by;
    /// either merge changed its size, which a policy may charge by.
    fn request_merged(&self, locked: &mut Locked<S>, rq: &RequestRef, kind: MergeKind) {
        let Some(tag) = rq.sched_index() else {
            return;
        };
        match kind {
            MergeKind::Front => locked.core.front_merged(tag, rq.sector(), rq.sectors()),
            MergeKind::Back => locked.core.back_merged(tag, rq.sectors()),
            MergeKind::Discard => {}
        }
    }

    /// `next` was merged into `into`: the policy forgets it, and its handle
    /// is given back. Only `next`'s own handle is (for the request being
    /// inserted, the slot is empty).
    fn requests_merged(
        &self,
        locked: &mut Locked<S>,
        into: &RequestRef,
        next: &RequestRef,
    ) -> Option<SchedRequest> {
        let into = into.sched_index()?;
        let (tag, slot) = locked.requests.slot(next)?;
        let handle = match slot {
            Some(held) if core::ptr::eq::<RequestRef>(&**held, next) => slot.take(),
            _ => None,
        };
        locked.core.requests_merged(into, tag);
        handle
    }

    /// The policy's depth limit for the request's kind; while the policy
    /// shares the tags among issuers ([`Shared::tags_shared`]), depth 1 if
    /// the allocating process's issuer holds its share, which takes the
    /// lock (as `bfq_limit_depth()` takes `bfqd->lock`).
    fn limit_depth(&self, opf: OpFlags, alloc: &mut Allocation<'_, Self>) -> Option<u32> {
        let (op, sync) = (policy_op(opf.op()), opf.is_sync());
        if !self.shared.tags_shared() {
            return self.shared.depth_limit(op, sync);
        }
        // The word is read before the lock, as `io_cq` cannot be called
        // under it. Should the context exit in between and its issuer go
        // to another context, one allocation is limited by that one's
        // share: a depth, never a wrong request.
        let Some(word) = alloc.io_cq().map(|icq| icq.private()) else {
            return self.shared.depth_limit(op, sync);
        };
        let mut guard = alloc.lock();
        let locked = &mut *guard;
        match S::context_issuer(&locked.issuers, word) {
            Some(issuer) => locked.core.tag_depth(&self.shared, issuer, op, sync),
            None => self.shared.depth_limit(op, sync),
        }
    }

    fn initial_async_depth(nr_requests: u32) -> InitAsyncDepth {
        match <S::Policy as SchedPolicy>::initial_queue_async_depth(nr_requests) {
            None => InitAsyncDepth::Keep,
            Some((depth, false)) => InitAsyncDepth::Before(depth),
            Some((depth, true)) => InitAsyncDepth::After(depth),
        }
    }

    fn depth_updated(&self, locked: &mut Locked<S>, update: &DepthUpdate<'_>) {
        locked
            .core
            .depth_updated(&self.shared, update.nr_requests(), update.async_depth());
        // As mq-deadline and BFQ in 6.12: the depth limit may go down to 1.
        update.set_min_shallow_depth(1);
    }

    fn tunable_show(&self, locked: &Locked<S>, index: usize) -> Result<i64> {
        locked.core.tunable(index).map_err(|_| EINVAL)
    }

    fn tunable_store(&self, locked: &mut Locked<S>, index: usize, text: &str) -> Result {
        locked
            .core
            .set_tunable(&self.shared, index, text)
            .map_err(|_| EINVAL)
    }
}

/// [`Scheduler::issuer`] for a policy whose issuers are process I/O
/// contexts: the issuer the request's context holds in its word
/// ([`ContextIssuers`]), taking a free one at its first request; the
/// shared one for a request without a context.
#[inline]
pub(crate) fn context_issuer<P: SchedPolicy>(
    issuers: &mut ContextIssuers,
    policy: &P,
    rq: &RequestRef,
    at_head: bool,
) -> IssuerId {
    let Some(icq) = rq.io_cq() else {
        return issuers.shared();
    };
    let mut word = icq.private();
    let was = word;
    let issuer = issuers.issuer(policy, &mut word, at_head);
    if word != was {
        icq.set_private(word);
    }
    issuer
}

/// [`Scheduler::exit_context`] for a policy whose issuers are process I/O
/// contexts: the issuer the context had of its own; its word now sends any
/// later request to the shared one.
pub(crate) fn context_exit(issuers: &ContextIssuers, icq: &IoCq) -> Option<IssuerId> {
    let mut word = icq.private();
    let issuer = issuers.exit(&mut word);
    icq.set_private(word);
    issuer
}

/// The policy's view of a block-layer operation.
#[inline]
fn policy_op(op: ReqOp) -> Op {
    match op {
        ReqOp::Read => Op::Read,
        ReqOp::Flush => Op::Flush,
        ReqOp::Discard => Op::Discard,
        // Writes, write-zeroes and the rest are writes (`rq_data_dir()`).
        _ => Op::Write,
    }
}

/// How `finish_request` takes the elevator lock, where it can.
pub(crate) trait CompletionLock: LockContext + Sized {
    /// Runs `f` under the lock; `None` if the lock cannot be taken there.
    fn with_lock<T: Elevator<LockContext = Self>, R>(
        lock: &LockOnDemand<'_, T>,
        f: impl FnOnce(&mut T::Locked) -> R,
    ) -> Option<R>;
}

impl CompletionLock for IrqSafe {
    #[inline]
    fn with_lock<T: Elevator<LockContext = Self>, R>(
        lock: &LockOnDemand<'_, T>,
        f: impl FnOnce(&mut T::Locked) -> R,
    ) -> Option<R> {
        let mut guard = lock.lock();
        Some(f(&mut guard))
    }
}

impl CompletionLock for ProcessContext {
    /// Never asked: its completions never need the lock
    /// ([`PolicyElevator::LOCK_OK`]).
    #[inline]
    fn with_lock<T: Elevator<LockContext = Self>, R>(
        _lock: &LockOnDemand<'_, T>,
        _f: impl FnOnce(&mut T::Locked) -> R,
    ) -> Option<R> {
        None
    }
}

/// Where this kernel keeps `async_depth`, as the abstraction says.
const ASYNC_DEPTH_HOME: AsyncDepth = if QUEUE_ASYNC_DEPTH {
    AsyncDepth::Queue
} else {
    AsyncDepth::Elevator
};

/// The sysfs names of `P`'s tunables on this kernel: the policy's C
/// strings, made the abstraction's at compile time.
struct SysfsNames<P>(PhantomData<P>);

impl<P: SchedPolicy> SysfsNames<P> {
    const POLICY: &'static [&'static core::ffi::CStr] =
        core_sched::sysfs_names::<P>(ASYNC_DEPTH_HOME);
    const ALL: &'static [&'static CStr; MAX_TUNABLES] = &sysfs_names(Self::POLICY);
    const NAMES: &'static [&'static CStr] = Self::ALL.split_at(Self::POLICY.len()).0;
}

/// `names` as the abstraction's C strings, the rest of the table empty.
/// Fails the build if there are more than [`MAX_TUNABLES`].
const fn sysfs_names(names: &'static [&'static core::ffi::CStr]) -> [&'static CStr; MAX_TUNABLES] {
    assert!(names.len() <= MAX_TUNABLES, "too many tunables");
    let mut out = [c_str!(""); MAX_TUNABLES];
    let mut i = 0;
    while i < names.len() {
        out[i] = match CStr::from_bytes_with_nul(names[i].to_bytes_with_nul()) {
            Ok(name) => name,
            Err(_) => panic!("a tunable's name is not a C string"),
        };
        i += 1;
    }
    out
}

/// The handle of each request the scheduler holds, by scheduler index.
struct Handles(Storage<Option<SchedRequest>>);

impl Handles {
    /// Room for `capacity` scheduler indexes, all empty.
    fn new(capacity: usize) -> Result<Self> {
        Ok(Handles(Storage::new(capacity, || None)?))
    }

    /// The handle slot of a request, if it has a scheduler index.
    #[inline]
    fn slot(&mut self, rq: &RequestRef) -> Option<(usize, &mut Option<SchedRequest>)> {
        let index = rq.sched_index()?;
        self.0 .0.get_mut(index).map(|slot| (index, slot))
    }

    /// Takes the handle the policy dispatched, if there is one.
    #[inline]
    fn take(&mut self, tag: usize) -> Option<SchedRequest> {
        self.0 .0.get_mut(tag).and_then(Option::take)
    }

    /// The held request of index `tag`.
    fn get(&self, tag: usize) -> Option<&RequestRef> {
        self.0 .0.get(tag)?.as_deref()
    }
}
