// SPDX-License-Identifier: GPL-2.0

//! Request queues and hardware queues, as an elevator sees them.
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)

use super::MAX_SCHED_TAGS;
use crate::{bindings, types::Opaque};
use core::ptr;

/// A request queue, as an elevator sees it (`struct request_queue`).
#[repr(transparent)]
pub struct Queue(Opaque<bindings::request_queue>);

impl Queue {
    /// # Safety
    ///
    /// `ptr` must point to a live request queue for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::request_queue) -> &'a Self {
        // SAFETY: `Queue` is a transparent wrapper; the caller guarantees
        // that `ptr` is valid for `'a`.
        unsafe { &*ptr.cast() }
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::request_queue {
        self.0.get()
    }

    /// The queue's `nr_requests` (scheduler tags per hardware queue).
    // `nr_requests` is an `unsigned long` in some kernels, an `unsigned int`
    // in others.
    #[allow(clippy::useless_conversion)]
    pub fn nr_requests(&self) -> u32 {
        // SAFETY: The queue is live; `nr_requests` is only changed with the
        // queue frozen, when no elevator hook runs but `depth_updated`.
        u32::try_from(unsafe { (*self.as_ptr()).nr_requests }).unwrap_or(u32::MAX)
    }

    /// Number of hardware queues (fixed while an elevator is attached:
    /// `blk_mq_update_nr_hw_queues()` detaches it first).
    pub fn nr_hw_queues(&self) -> u32 {
        // SAFETY: As above.
        unsafe { (*self.as_ptr()).nr_hw_queues }
    }

    /// Requests the device can hold at once on each hardware queue: the
    /// tag set's `queue_depth` (its driver tags).
    pub fn hw_queue_depth(&self) -> u32 {
        // SAFETY: The queue is live, and a blk-mq queue (the only kind an
        // elevator attaches to) points to its tag set for all its life;
        // `queue_depth` is set before the queue is created and not changed
        // while it exists (`blk_mq_update_nr_hw_queues()` changes the number
        // of hardware queues, not their depth).
        unsafe { (*(*self.as_ptr()).tag_set).queue_depth }
    }

    /// Whether the device reports itself rotational (`!blk_queue_nonrot()`).
    pub fn is_rotational(&self) -> bool {
        // SAFETY: The queue is live; `limits.features` changes only with the
        // queue frozen.
        unsafe { (*self.as_ptr()).limits.features & bindings::BLK_FEAT_ROTATIONAL != 0 }
    }

    /// The NUMA node of the queue.
    pub fn numa_node(&self) -> i32 {
        // SAFETY: `node` is set when the queue is allocated and never changed.
        unsafe { (*self.as_ptr()).node }
    }

    /// An exclusive bound of [`RequestRef::sched_index`] for this queue:
    /// `nr_hw_queues * MAX_SCHED_TAGS`.
    ///
    /// [`RequestRef::sched_index`]: super::RequestRef::sched_index
    pub fn sched_index_bound(&self) -> usize {
        self.nr_hw_queues() as usize * MAX_SCHED_TAGS
    }

    /// Runs all hardware queues from kblockd (`blk_mq_run_hw_queues(q, true)`).
    ///
    /// Callable from any context, but it may take `queue_lock` (when it
    /// finds nothing pending it checks for quiescing under that lock), so
    /// not with `queue_lock` held, nor with a lock taken under it: the
    /// elevator lock in [`Elevator::exit_icq`] is one (use its [`Rerun`]),
    /// and holding the elevator lock while calling this makes it one.
    ///
    /// [`Elevator::exit_icq`]: super::Elevator::exit_icq
    /// [`Rerun`]: super::Rerun
    pub fn run_hw_queues_async(&self) {
        // SAFETY: The queue is live. `might_lock()` only tells lockdep
        // (nothing without it) that the lock may be taken here, with
        // interrupts off, as `blk_mq_run_hw_queue()` takes it.
        unsafe { bindings::might_lock(ptr::addr_of_mut!((*self.as_ptr()).queue_lock)) };
        // SAFETY: The queue is live; with `async` set the function sleeps
        // nowhere and only queues work, so any context will do.
        unsafe { bindings::blk_mq_run_hw_queues(self.as_ptr(), true) }
    }
}

/// A hardware queue (`struct blk_mq_hw_ctx`).
#[repr(transparent)]
pub struct HwQueue(Opaque<bindings::blk_mq_hw_ctx>);

impl HwQueue {
    /// # Safety
    ///
    /// `ptr` must point to a live hardware queue for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::blk_mq_hw_ctx) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's guarantee.
        unsafe { &*ptr.cast() }
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::blk_mq_hw_ctx {
        self.0.get()
    }

    /// The index of this hardware queue (`queue_num`).
    pub fn index(&self) -> u32 {
        // SAFETY: `queue_num` is set at hctx init and never changed.
        unsafe { (*self.as_ptr()).queue_num }
    }

    /// The request queue this hardware queue belongs to.
    pub fn queue(&self) -> &Queue {
        // SAFETY: `hctx->queue` outlives the hctx.
        unsafe { Queue::from_raw((*self.as_ptr()).queue) }
    }
}
