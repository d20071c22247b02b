// SPDX-License-Identifier: GPL-2.0

//! What the abstraction meets of the block core and the kernel crate in
//! Linux 7.3: attaching a scheduler (the core allocates the elevator queue
//! and passes it to `init_sched()`), depth changes per request queue
//! (`depth_updated()`, after `q->nr_requests` is set), the timer set-up,
//! lock classes and C strings.
//!
//! C header: [`block/elevator.h`](srctree/block/elevator.h)

use super::{data::ElevatorData, queue::Queue, vtable::Vtable, Elevator, InitAsyncDepth};
use crate::{
    bindings, container_of,
    ffi::{c_char, c_int},
    prelude::*,
    str::{CStr, CStrExt},
    sync::LockClassKey,
};

/// Whether the request queue keeps the depth that limits requests other
/// than synchronous reads (`q->async_depth`, `queue/async_depth`), which
/// the schedulers derive their limits from: yes in 7.3.
pub const QUEUE_ASYNC_DEPTH: bool = true;

/// What `static_lock_class!()` gives and `Lock::new()` takes.
pub(super) type ClassKey = Pin<&'static LockClassKey>;

/// The C string `s` points to, for the block core.
pub(super) fn c_str_ptr(s: &CStr) -> *const c_char {
    s.as_char_ptr()
}

/// The length of `s` without its NUL.
pub(super) fn c_str_len(s: &CStr) -> usize {
    s.count_bytes()
}

/// What a timer callback returns not to be restarted.
pub(super) const HRTIMER_NORESTART: bindings::hrtimer_restart =
    bindings::hrtimer_restart::HRTIMER_NORESTART;

/// The request whose `queuelist` is `pos`.
///
/// # Safety
///
/// `pos` must be the `queuelist` of a request.
pub(super) unsafe fn request_of_queuelist(pos: *mut bindings::list_head) -> *mut bindings::request {
    // SAFETY: `pos` is a request's `queuelist` (safety requirement).
    unsafe { container_of!(pos, bindings::request, __bindgen_anon_1.queuelist) }
}

/// Initialises the rerun timer in `slot` to call `function`
/// (`CLOCK_MONOTONIC`, absolute expiry times).
///
/// # Safety
///
/// `slot` must be valid for writes and stay where it is until the timer is
/// cancelled.
pub(super) unsafe fn init_rerun_timer(
    slot: *mut bindings::hrtimer,
    function: unsafe extern "C" fn(*mut bindings::hrtimer) -> bindings::hrtimer_restart,
) {
    // SAFETY: `slot` is valid for writes (safety requirement);
    // `hrtimer_setup()` initialises all of it.
    unsafe {
        bindings::hrtimer_setup(
            slot,
            Some(function),
            bindings::CLOCK_MONOTONIC as bindings::clockid_t,
            bindings::hrtimer_mode_HRTIMER_MODE_ABS,
        )
    };
}

impl<T: Elevator> Vtable<T> {
    /// The hooks of `elevator_mq_ops` that attach the scheduler and tell it
    /// of depth changes; every other one is `None` here. The per-queue data
    /// is allocated in `init_sched` (as mq-deadline's), not with
    /// `alloc_sched_data`.
    pub(super) const CORE_OPS: bindings::elevator_mq_ops = bindings::elevator_mq_ops {
        init_sched: Some(Self::init_sched),
        depth_updated: if T::HAS_DEPTH_UPDATED {
            Some(Self::depth_updated)
        } else {
            None
        },
        // SAFETY: Every other field is an optional function pointer, for
        // which all-zeroes is `None`.
        ..unsafe { core::mem::zeroed() }
    };

    /// # Safety
    ///
    /// Called by the block layer (`blk_mq_init_sched()`) with a live queue,
    /// frozen and quiesced, and the elevator queue it allocated for this
    /// registration's elevator type; the core releases `eq` if this fails.
    unsafe extern "C" fn init_sched(
        q: *mut bindings::request_queue,
        eq: *mut bindings::elevator_queue,
    ) -> c_int {
        // SAFETY: `q` is live for the duration of the call.
        match unsafe { Self::new_data(q) } {
            Ok(data) => {
                // SAFETY: `eq` was allocated for `q` and is not attached.
                unsafe { Self::attach(q, eq, data) };
                if T::HAS_DEPTH_UPDATED {
                    // As `dd_init_sched()` and `bfq_init_queue()`: the
                    // depth is set (`q->nr_requests`) before `init_sched`
                    // runs, and the scheduler sets the queue's
                    // `async_depth` before or after its first depth update.
                    // SAFETY: `q` is live, frozen and quiesced.
                    let nr_requests = unsafe { (*q).nr_requests };
                    let set = T::initial_async_depth(nr_requests);
                    if let InitAsyncDepth::Before(depth) = set {
                        // SAFETY: As above; `q->async_depth` is read by
                        // the hooks of the frozen queue only.
                        unsafe { (*q).async_depth = depth };
                    }
                    // SAFETY: The elevator is now attached to the frozen `q`.
                    unsafe { Self::depth_updated(q) };
                    if let InitAsyncDepth::After(depth) = set {
                        // SAFETY: As above.
                        unsafe { (*q).async_depth = depth };
                    }
                }
                0
            }
            Err(err) => err.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the block layer with a live, frozen queue this elevator is
    /// attached to, after `q->nr_requests` changed (or from `init_sched`).
    unsafe extern "C" fn depth_updated(q: *mut bindings::request_queue) {
        // SAFETY: The elevator is attached to `q`.
        let data = unsafe { ElevatorData::<T>::from_queue(q) };
        let update = DepthUpdate {
            // SAFETY: `q` is live for the call.
            queue: unsafe { Queue::from_raw(q) },
        };
        let mut guard = data.lock.lock();
        T::depth_updated(&data.shared, &mut guard, &update);
    }
}

/// A scheduler-tag depth change of the request queue, given to
/// [`Elevator::depth_updated`]: when the scheduler is attached (from
/// `init_sched`), whenever `nr_requests` changes and when the queue's
/// `async_depth` is written (`depth_updated`).
///
/// [`Elevator::depth_updated`]: super::Elevator::depth_updated
pub struct DepthUpdate<'a> {
    queue: &'a Queue,
}

impl DepthUpdate<'_> {
    /// The new number of scheduler tags per hardware queue
    /// (`q->nr_requests`, already set).
    pub fn nr_requests(&self) -> u32 {
        self.queue.nr_requests()
    }

    /// The queue's `async_depth` ([`QUEUE_ASYNC_DEPTH`]): what a write to
    /// `queue/async_depth` set, or what the block core scaled it to when
    /// `nr_requests` changed.
    pub fn async_depth(&self) -> Option<u32> {
        // SAFETY: The queue is live and frozen; `async_depth` changes only
        // with the queue frozen, before this hook runs.
        Some(unsafe { (*self.queue.as_ptr()).async_depth })
    }

    /// Sets the smallest `shallow_depth` [`Elevator::limit_depth`] will
    /// return on every hardware queue (`blk_mq_set_min_shallow_depth()`),
    /// which sizes the wake-up batches of the scheduler tags.
    ///
    /// [`Elevator::limit_depth`]: super::Elevator::limit_depth
    pub fn set_min_shallow_depth(&self, depth: u32) {
        // SAFETY: The queue is frozen with an elevator attached: every
        // hardware queue has its scheduler tags.
        unsafe { bindings::blk_mq_set_min_shallow_depth(self.queue.as_ptr(), depth) };
    }
}
