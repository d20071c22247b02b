// SPDX-License-Identifier: GPL-2.0

//! blk-mq I/O schedulers ("elevators").
//!
//! C header: [`block/elevator.h`](srctree/block/elevator.h)
//!
//! An I/O scheduler implements [`Elevator`] and registers it with a
//! [`Registration`] owned by its module. When a queue selects the scheduler
//! (`echo name > /sys/block/<dev>/queue/scheduler`), [`Elevator::init`]
//! creates the per-queue state; it is dropped when the queue switches away.
//!
//! # Per-queue state and locking
//!
//! [`Elevator::init`] returns two parts:
//!
//! * `Self`, shared without a lock. It is what the hooks the block layer
//!   calls without a scheduler lock see: [`Elevator::has_work`],
//!   [`Elevator::limit_depth`], [`Elevator::prepare_request`],
//!   [`Elevator::finish_request`], [`Elevator::completed_request`]. Use
//!   atomics for anything they share.
//! * [`Elevator::Locked`], behind one spinlock per queue. Every other hook
//!   runs with that lock held and gets `&mut Self::Locked`: insertion,
//!   dispatch, merging, requeue, depth changes and sysfs. The block layer's
//!   merge structures (the request hash and `q->last_merge`) are protected
//!   by the same lock, as `dd->lock` protects them in mq-deadline.
//!   [`Elevator::finish_request`], on the completion path of every request,
//!   takes the lock only if the scheduler asks for it ([`LockOnDemand`]):
//!   mq-deadline completes requests with an atomic counter, BFQ under its
//!   lock, and a Rust scheduler can do either.
//!
//! [`Elevator::LockContext`] says how the lock is taken. `finish_request`
//! and `requeue_request` can be called from the completion path, in
//! hard-IRQ context, so a scheduler that takes the lock there chooses
//! [`IrqSafe`] (`spin_lock_irqsave()`, as BFQ); one that never does
//! chooses [`ProcessContext`] (plain `spin_lock()`, as mq-deadline), and
//! the abstraction refuses to build it with a hook that would take the
//! lock in interrupt context.
//!
//! The scheduler is a single-queue scheduler: `init` sets
//! `QUEUE_FLAG_SQ_SCHED`, so one instance serves all hardware queues and
//! [`Elevator::dispatch_request`] may return a request of any of them.
//!
//! # Request ownership
//!
//! A request given to [`Elevator::insert_requests`] becomes an owned
//! [`SchedRequest`] handle: the scheduler holds it until it gives it back from
//! [`Elevator::dispatch_request`], or until the block layer merges it into
//! another queued request, in which case [`Elevator::requests_merged`] must
//! return it. A request is freed only after its handle has been given back,
//! so a handle never dangles: if a scheduler keeps the handle of a request
//! that was merged away, the request is not freed; when the handle comes
//! back through dispatch, the abstraction frees it instead of sending an
//! empty request to the driver. A dropped handle leaks its request (it
//! never completes) and is reported: it is a bug in the scheduler.
//!
//! # Merging
//!
//! The block layer merges bios into queued requests in
//! [`Elevator::bio_merge`] through [`BioMerge::try_merge`] (back merges
//! through the request hash, front merges through
//! [`Elevator::request_merge`]), and requests into queued requests on
//! insertion through [`Insertion::try_merge`]. Requests become back-merge
//! candidates with [`Insertion::add_merge_candidate`]; the abstraction
//! removes them from the hash when they leave the scheduler.
//!
//! # Per-process state
//!
//! A scheduler that sets [`Elevator::IO_CONTEXTS`] gets an [`IoCq`] per
//! (process I/O context, queue), found through [`RequestRef::io_cq`], and
//! [`Elevator::exit_icq`] when one goes away (see the `icq` module).
//!
//! # Example
//!
//! A FIFO: requests go to the driver in the order they were inserted, those
//! inserted at the head first. It neither merges nor has tunables, and its
//! lock is never taken in interrupt context. The queue is a ring with a slot
//! for every scheduler tag of the queue, so insertion never allocates.
//!
//! ```
//! use kernel::block::mq::elevator::{
//!     Elevator, HwQueue, Insertion, ProcessContext, Queue, Registration, SchedRequest,
//! };
//! use kernel::{c_str, prelude::*};
//!
//! /// The requests the scheduler holds, oldest first.
//! struct Ring {
//!     slots: KVVec<Option<SchedRequest>>,
//!     head: usize,
//!     len: usize,
//! }
//!
//! impl Ring {
//!     fn new(capacity: usize) -> Result<Self> {
//!         let mut slots = KVVec::with_capacity(capacity, GFP_KERNEL)?;
//!         for _ in 0..capacity {
//!             slots.push(None, GFP_KERNEL)?;
//!         }
//!         Ok(Ring {
//!             slots,
//!             head: 0,
//!             len: 0,
//!         })
//!     }
//!
//!     /// Adds `rq` at the back, or at the front if `at_head`; gives it back
//!     /// if the ring is full.
//!     fn push(&mut self, rq: SchedRequest, at_head: bool) -> Result<(), SchedRequest> {
//!         let capacity = self.slots.len();
//!         if self.len == capacity {
//!             return Err(rq);
//!         }
//!         let slot = if at_head {
//!             self.head = (self.head + capacity - 1) % capacity;
//!             self.head
//!         } else {
//!             (self.head + self.len) % capacity
//!         };
//!         self.slots[slot] = Some(rq);
//!         self.len += 1;
//!         Ok(())
//!     }
//!
//!     /// Takes the request at the front.
//!     fn pop(&mut self) -> Option<SchedRequest> {
//!         if self.len == 0 {
//!             return None;
//!         }
//!         let rq = self.slots[self.head].take();
//!         self.head = (self.head + 1) % self.slots.len();
//!         self.len -= 1;
//!         rq
//!     }
//! }
//!
//! struct Fifo;
//!
//! #[vtable]
//! impl Elevator for Fifo {
//!     type Locked = Ring;
//!     type LockContext = ProcessContext;
//!
//!     const NAME: &'static CStr = c_str!("fifo");
//!
//!     fn init(queue: &Queue) -> Result<(Self, Ring)> {
//!         // A held request keeps its scheduler tag: the scheduler never
//!         // holds more requests than that.
//!         Ok((Fifo, Ring::new(queue.sched_index_bound())?))
//!     }
//!
//!     fn insert_requests(
//!         &self,
//!         ring: &mut Ring,
//!         _hctx: &HwQueue,
//!         requests: &mut Insertion<'_, Self>,
//!         at_head: bool,
//!     ) {
//!         for rq in requests {
//!             if let Err(rq) = ring.push(rq, at_head) {
//!                 // Not reached (see `init`). A dropped handle is reported
//!                 // and its request never completes.
//!                 drop(rq);
//!             }
//!         }
//!     }
//!
//!     fn dispatch_request(&self, ring: &mut Ring, _hctx: &HwQueue) -> Option<SchedRequest> {
//!         ring.pop()
//!     }
//! }
//!
//! /// Registers the scheduler for as long as the registration is kept (in
//! /// the module's state); `echo fifo > /sys/block/<dev>/queue/scheduler`
//! /// then selects it.
//! fn register(module: &'static ThisModule) -> Result<Registration<Fifo>> {
//!     Registration::new(module)
//! }
//! ```

mod alloc;
mod api;
mod data;
mod icq;
mod lock;
mod merge;
mod queue;
mod registration;
mod request;
mod time;
mod vtable;

pub use alloc::Allocation;
pub use data::Rerun;
pub use icq::IoCq;
pub use lock::{IrqSafe, LockContext, LockOnDemand, ProcessContext};
pub use merge::{Bio, BioMerge, Insertion, MergeKind};
pub use api::{DepthUpdate, QUEUE_ASYNC_DEPTH};
pub use queue::{HwQueue, Queue};
pub use registration::Registration;
pub use request::{OpFlags, ReqOp, RequestRef, SchedRequest};
pub use time::{blk_time_get_ns, jiffies_ns, ktime_get_ns};

use crate::{bindings, prelude::*};

/// The largest number of scheduler tags of one hardware queue
/// (`MAX_SCHED_RQ`, `block/blk-mq-sched.h`): `blk_mq_tag_update_depth()`
/// refuses to grow scheduler tags beyond it, and the initial depth
/// (`2 * BLKDEV_DEFAULT_RQ` at most) is below it.
pub const MAX_SCHED_TAGS: usize = bindings::MAX_SCHED_RQ as usize;

/// The most sysfs tunables an elevator may declare.
pub const MAX_TUNABLES: usize = 32;

/// What a scheduler sets the queue's `async_depth` to when it is attached,
/// on a kernel whose queue keeps one ([`QUEUE_ASYNC_DEPTH`]), from
/// [`Elevator::initial_async_depth`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitAsyncDepth {
    /// Leaves it as it is.
    Keep,
    /// Sets it before the first [`Elevator::depth_updated`].
    Before(u32),
    /// Sets it after the first [`Elevator::depth_updated`], which sees the
    /// value the queue had (as `bfq_init_queue()` does).
    After(u32),
}

/// An I/O scheduler.
///
/// `Self` is the per-queue state shared by the hooks that run without the
/// elevator lock; [`Elevator::Locked`] is the state behind it. See the
/// [module documentation](self) for locking and request ownership.
#[macros::vtable]
pub trait Elevator: Sized + Send + Sync + 'static {
    /// Per-queue state behind the elevator lock; hooks get it as `&mut`,
    /// so it is not pinned.
    type Locked: Send + Unpin;

    /// Where the elevator lock may be taken: [`IrqSafe`] if the completion
    /// path needs it, else [`ProcessContext`].
    type LockContext: LockContext;

    /// The scheduler's name, as written to `queue/scheduler` (at most 15
    /// bytes).
    const NAME: &'static CStr;

    /// Another name it can be selected by.
    const ALIAS: Option<&'static CStr> = None;

    /// The tunables listed in `queue/iosched/`, in order (at most
    /// [`MAX_TUNABLES`]). Their values are read and written by
    /// [`Elevator::tunable_show`] and [`Elevator::tunable_store`], by index.
    const TUNABLES: &'static [&'static CStr] = &[];

    /// Whether the scheduler keeps state per process I/O context: the block
    /// layer then gives each (context, queue) pair an [`IoCq`] (see the
    /// `icq` module).
    const IO_CONTEXTS: bool = false;

    /// Creates the state for `queue` when it selects this scheduler.
    fn init(queue: &Queue) -> Result<(Self, Self::Locked)>;

    /// Requests enter the scheduler. Every request of `requests` must be
    /// taken (iterate to the end) and kept until it is dispatched or merged
    /// away. `at_head` is `BLK_MQ_INSERT_AT_HEAD`: requeued, flush-sequence
    /// or otherwise urgent requests that should go out first.
    fn insert_requests(
        &self,
        locked: &mut Self::Locked,
        hctx: &HwQueue,
        requests: &mut Insertion<'_, Self>,
        at_head: bool,
    );

    /// Picks the next request to send to the driver of `hctx`, giving its
    /// handle back. Any queued request may be returned, whatever its
    /// hardware queue. `None`: nothing to send now (the block layer runs
    /// the queue again on the next completion or insertion).
    fn dispatch_request(&self, locked: &mut Self::Locked, hctx: &HwQueue) -> Option<SchedRequest>;

    /// When to run the hardware queues again after `dispatch_request`
    /// returned `None` although requests wait: an idling scheduler's end of
    /// idle (C BFQ's `idle_slice_timer`). Called with the lock held right
    /// after such a `dispatch_request`. `Some(t)`: the abstraction runs the
    /// queues at `t` (nanoseconds on [`ktime_get_ns`]'s clock, which
    /// [`blk_time_get_ns`] reads too) from a per-queue hrtimer, which each
    /// answer re-arms; a request or completion arriving earlier runs them
    /// anyway. Not implemented or `None`: the block layer's own rerun after
    /// an empty dispatch (3 ms, `BLK_MQ_BUDGET_DELAY`) is all there is.
    fn rerun_at(&self, _locked: &Self::Locked) -> Option<u64> {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Whether requests wait in the scheduler. Called without the lock, from
    /// any context. If not implemented, the abstraction answers from the
    /// number of request handles the scheduler holds, less the number of
    /// CPUs already in [`Elevator::dispatch_request`]: blk-mq asks before
    /// every dispatch, and a CPU that went on to wait for the lock while
    /// another took the last request would only get nothing.
    fn has_work(&self, _hctx: &HwQueue) -> bool {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A request is being allocated (`prepare_request`), before it is
    /// inserted. Called without the lock.
    fn prepare_request(&self, _rq: &RequestRef) {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A request that was allocated with this scheduler attached is being
    /// freed (`finish_request`): it completed, was merged away, or bypassed
    /// the scheduler. Called without the lock, possibly in hard-IRQ
    /// context; `lock` takes the elevator lock if the scheduler needs it.
    fn finish_request(&self, _rq: &RequestRef, _lock: LockOnDemand<'_, Self>) {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A dispatched request completed on the device at `now_ns`
    /// (`completed_request`), the [`blk_time_get_ns`] time the block layer
    /// read for its own accounting; [`Elevator::finish_request`] follows
    /// for the request. Called without the lock, in the completion path
    /// (possibly hard-IRQ context).
    fn completed_request(&self, _rq: &RequestRef, _now_ns: u64) {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The driver handed a dispatched request back (`requeue_request`); it
    /// will be inserted again. May be called in interrupt context.
    fn requeue_request(&self, _locked: &mut Self::Locked, _rq: &RequestRef) {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A bio is about to become a request: try to merge it into a queued
    /// request instead, usually by calling [`BioMerge::try_merge`]. Returns
    /// whether the bio was merged.
    fn bio_merge(&self, _locked: &mut Self::Locked, _merge: BioMerge<'_, Self>) -> bool {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Called by [`BioMerge::try_merge`] when no back merge was found: a
    /// held request the bio could be front-merged into (one that starts
    /// where the bio ends). The abstraction checks it with
    /// `elv_bio_merge_ok()` before the merge.
    fn request_merge<'a>(
        &self,
        _locked: &'a mut Self::Locked,
        _bio: &Bio,
    ) -> Option<&'a RequestRef> {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A bio was merged into the held request `rq`, which may have moved
    /// (front merge) or grown.
    fn request_merged(&self, _locked: &mut Self::Locked, _rq: &RequestRef, _kind: MergeKind) {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The request `next` was merged into the held request `into` and will
    /// be freed. If the scheduler holds `next`, it must give its handle back
    /// here; `None` otherwise (when `next` is the request being inserted).
    ///
    /// Without this hook, [`Insertion::try_merge`] merges nothing.
    fn requests_merged(
        &self,
        _locked: &mut Self::Locked,
        _into: &RequestRef,
        _next: &RequestRef,
    ) -> Option<SchedRequest> {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A request with operation and flags `opf` is being allocated: the
    /// scheduler-tag depth it may use (`shallow_depth`), or `None` for no
    /// limit. Called without the lock, in the allocating process's context:
    /// `alloc` finds its I/O context and takes the lock, for a scheduler
    /// that limits each process by what it holds. The depth takes effect
    /// only down to the minimum set with
    /// [`DepthUpdate::set_min_shallow_depth`].
    fn limit_depth(&self, _opf: OpFlags, _alloc: &mut Allocation<'_, Self>) -> Option<u32> {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// What the scheduler sets the queue's `async_depth` to when it is
    /// attached with `nr_requests` scheduler tags, on a kernel whose queue
    /// keeps one ([`QUEUE_ASYNC_DEPTH`]); not called otherwise. Only for
    /// schedulers with [`Elevator::depth_updated`].
    fn initial_async_depth(_nr_requests: u32) -> InitAsyncDepth {
        InitAsyncDepth::Keep
    }

    /// The scheduler-tag depth was set: when the scheduler is attached, and
    /// whenever `nr_requests` changes; [`DepthUpdate`] says for what (a
    /// hardware queue or the request queue, as the block core reports it).
    /// The queue is frozen and holds no request.
    fn depth_updated(&self, _locked: &mut Self::Locked, _update: &DepthUpdate<'_>) {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// An I/O context leaves the queue (`exit_icq`): its process exited, or
    /// the scheduler is being detached. Called once per context, with the
    /// elevator lock held. Only for [`Elevator::IO_CONTEXTS`] schedulers.
    ///
    /// The block layer holds the context's lock (`ioc->lock`), and on
    /// detach also `queue_lock`, which it takes before `ioc->lock`: the
    /// hardware queues cannot be run from here ([`Queue::run_hw_queues_async`]
    /// may take `queue_lock`). A scheduler that must run them, as BFQ does
    /// when the process it idled for exits, asks `rerun` to.
    fn exit_icq(&self, _locked: &mut Self::Locked, _icq: &IoCq, _rerun: Rerun<'_>) {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Reads tunable `index` of [`Elevator::TUNABLES`].
    fn tunable_show(&self, _locked: &Self::Locked, _index: usize) -> Result<i64> {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Writes tunable `index` of [`Elevator::TUNABLES`] from the text
    /// written to its file (with its trailing newline, if any). On error the
    /// value must stay unchanged; the write fails with the error.
    fn tunable_store(&self, _locked: &mut Self::Locked, _index: usize, _text: &str) -> Result {
        crate::build_error!(crate::error::VTABLE_DEFAULT_ERROR)
    }
}
