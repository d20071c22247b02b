// SPDX-License-Identifier: GPL-2.0

//! The per-queue data of an elevator: the scheduler's state, its lock, the
//! abstraction's bookkeeping and the rerun timer.
//!
//! C header: [`block/elevator.h`](srctree/block/elevator.h)

use super::{ktime_get_ns, lock::ElevatorLock, Elevator, RequestRef};
use crate::{bindings, prelude::*, types::Opaque};
use core::{
    cell::UnsafeCell,
    ptr,
    sync::atomic::{AtomicUsize, Ordering},
};

/// What the merge hooks need while a merge the abstraction started runs.
pub(super) struct MergeCtx<T: Elevator> {
    /// The locked state, lent by the caller of `try_merge` for its duration.
    pub(super) locked: *mut T::Locked,
    /// The request being inserted ([`Insertion::try_merge`]), or null.
    ///
    /// [`Insertion::try_merge`]: super::Insertion::try_merge
    pub(super) incoming: *mut bindings::request,
}

/// The queue's rerun timer, for a hook that runs where the hardware queues
/// cannot be run directly ([`Elevator::exit_icq`]). The timer's callback
/// runs them in hard-IRQ context, holding no lock, as
/// [`Elevator::rerun_at`] answers are served.
pub struct Rerun<'a> {
    pub(super) timer: &'a Opaque<bindings::hrtimer>,
}

impl Rerun<'_> {
    /// Runs the hardware queues as soon as the timer can fire, replacing
    /// any time it was armed for.
    pub fn now(&self) {
        arm_rerun(self.timer, ktime_get_ns());
    }
}

/// Arms a queue's rerun timer for `at_ns` (`CLOCK_MONOTONIC`).
pub(super) fn arm_rerun(timer: &Opaque<bindings::hrtimer>, at_ns: u64) {
    let at = bindings::ktime_t::try_from(at_ns).unwrap_or(bindings::ktime_t::MAX);
    // SAFETY: The timer was initialised in `init_sched` and is cancelled
    // before its data goes; re-arming an armed timer moves it, from any
    // context.
    unsafe {
        bindings::hrtimer_start_range_ns(
            timer.get(),
            at,
            0,
            bindings::hrtimer_mode_HRTIMER_MODE_ABS,
        )
    };
}

/// The per-queue data behind `elevator_queue->elevator_data`.
#[pin_data]
pub(super) struct ElevatorData<T: Elevator> {
    pub(super) shared: T,
    #[pin]
    pub(super) lock: ElevatorLock<T>,
    /// Only accessed with `lock` held.
    pub(super) merge: UnsafeCell<MergeCtx<T>>,
    /// Number of [`SchedRequest`] handles the scheduler holds. Written only with
    /// `lock` held (so a load and a store, no atomic read-modify-write);
    /// read without it by `has_work` and `bio_merge`.
    ///
    /// [`SchedRequest`]: super::SchedRequest
    pub(super) held: AtomicUsize,
    /// Number of CPUs in `dispatch_request`, counted from before they take
    /// the lock until they release it. Each will look at the scheduler's
    /// requests under the lock, and each one that gets a request comes back
    /// (blk-mq asks `has_work` again after every request), so `has_work`
    /// says yes only if there are more held requests than that: another
    /// CPU would wait for the lock only to find them gone.
    pub(super) dispatching: AtomicUsize,
    pub(super) queue: *mut bindings::request_queue,
    /// Runs the hardware queues at the time [`Elevator::rerun_at`] asked
    /// for. Set up in `init_sched`, cancelled in `exit_sched`.
    #[pin]
    pub(super) rerun: Opaque<bindings::hrtimer>,
}

impl<T: Elevator> ElevatorData<T> {
    /// # Safety
    ///
    /// `q` must be live with this elevator type attached (`q->elevator` set
    /// by [`Vtable::init_sched`] and not yet exited).
    ///
    /// [`Vtable::init_sched`]: super::vtable::Vtable::init_sched
    pub(super) unsafe fn from_queue<'a>(q: *mut bindings::request_queue) -> &'a Self {
        // SAFETY: By the safety requirements, `q->elevator->elevator_data`
        // is the `ElevatorData<T>` `init_sched` stored, alive until
        // `exit_sched`, which the block layer calls only once no hook runs.
        unsafe { &*(*(*q).elevator).elevator_data.cast::<Self>() }
    }

    /// Runs `f` with the merge context set to `locked` (and `incoming`).
    ///
    /// # Safety
    ///
    /// The elevator lock must be held, `locked` must be the data it protects.
    pub(super) unsafe fn with_merge_ctx<R>(
        &self,
        locked: &mut T::Locked,
        incoming: *mut bindings::request,
        f: impl FnOnce() -> R,
    ) -> R {
        let ctx = self.merge.get();
        // SAFETY: The lock is held (safety requirement), which protects
        // `merge`. The pointer to `locked` is used only by the merge hooks
        // that `f` triggers, while the borrow of `locked` lasts.
        unsafe {
            (*ctx).locked = locked;
            (*ctx).incoming = incoming;
        }
        let r = f();
        // SAFETY: As above.
        unsafe {
            (*ctx).locked = ptr::null_mut();
            (*ctx).incoming = ptr::null_mut();
        }
        r
    }

    /// The locked state lent by the running merge, if one runs.
    ///
    /// # Safety
    ///
    /// Only callable from a merge hook (`request_merge`, `request_merged`,
    /// `requests_merged`): the block layer calls them only from
    /// `blk_mq_sched_try_merge()` and `blk_mq_sched_try_insert_merge()`,
    /// which the abstraction calls with the lock held and the context set.
    // The `&mut` comes from the pointer `with_merge_ctx` lent, not from
    // `&self`: the lock, held up the stack, makes it exclusive.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn merge_ctx(&self) -> Option<(&mut T::Locked, *mut bindings::request)> {
        // SAFETY: See above: the lock is held by our caller up the stack.
        let ctx = unsafe { &*self.merge.get() };
        if ctx.locked.is_null() {
            pr_err!("WARNING: elevator merge hook called outside a merge\n");
            return None;
        }
        // SAFETY: `locked` was lent by `with_merge_ctx` for the duration of
        // the merge; nothing else uses it meanwhile.
        Some((unsafe { &mut *ctx.locked }, ctx.incoming))
    }

    /// Takes a request off the merge structures, as `deadline_remove_request()`
    /// does, when it leaves the scheduler.
    ///
    /// # Safety
    ///
    /// The lock must be held and `rq` must be a request of this queue.
    pub(super) unsafe fn unhash(&self, rq: *mut bindings::request) {
        // SAFETY: The lock protects the hash and `last_merge`;
        // `elv_rqhash_del()` does nothing for a request not on the hash.
        unsafe {
            bindings::elv_rqhash_del(self.queue, rq);
            if (*self.queue).last_merge == rq {
                (*self.queue).last_merge = ptr::null_mut();
            }
        }
    }

    /// A handle for `rq` was given back: the scheduler no longer holds it.
    ///
    /// # Safety
    ///
    /// The lock must be held; `rq` comes from a consumed handle.
    pub(super) unsafe fn released(&self, rq: &RequestRef) {
        // SAFETY: Lock held (caller).
        unsafe { self.unhash(rq.as_ptr()) };
        // Writers hold the lock: no read-modify-write needed.
        let held = self.held.load(Ordering::Relaxed);
        self.held.store(held.wrapping_sub(1), Ordering::Relaxed);
    }
}
