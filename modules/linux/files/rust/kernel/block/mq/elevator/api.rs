// SPDX-License-Identifier: GPL-2.0

//! What the abstraction meets of the block core and the kernel crate in
//! Linux 6.12: attaching a scheduler (`init_sched()` allocates the
//! elevator queue), depth changes per hardware queue (`init_hctx()` and
//! `depth_updated()`), the timer set-up, lock classes and C strings.
//!
//! C header: [`block/elevator.h`](srctree/block/elevator.h)

use super::{data::ElevatorData, queue::HwQueue, vtable::Vtable, Elevator};
use crate::{
    bindings, container_of,
    ffi::{c_char, c_int, c_uint},
    prelude::*,
    str::CStr,
    sync::LockClassKey,
};

/// Whether the request queue keeps the depth that limits requests other
/// than synchronous reads (`async_depth`): not in 6.12, where mq-deadline
/// has it as its own tunable and BFQ derives its limits from its tags.
pub const QUEUE_ASYNC_DEPTH: bool = false;

/// What `static_lock_class!()` gives and `Lock::new()` takes.
pub(super) type ClassKey = &'static LockClassKey;

/// The C string `s` points to, for the block core.
pub(super) fn c_str_ptr(s: &CStr) -> *const c_char {
    s.as_char_ptr()
}

/// The length of `s` without its NUL.
pub(super) fn c_str_len(s: &CStr) -> usize {
    s.len()
}

/// What a timer callback returns not to be restarted.
pub(super) const HRTIMER_NORESTART: bindings::hrtimer_restart =
    bindings::hrtimer_restart_HRTIMER_NORESTART;

/// The request whose `queuelist` is `pos`.
///
/// # Safety
///
/// `pos` must be the `queuelist` of a request.
pub(super) unsafe fn request_of_queuelist(pos: *mut bindings::list_head) -> *mut bindings::request {
    // SAFETY: `pos` is a request's `queuelist` (safety requirement).
    unsafe { container_of!(pos, bindings::request, __bindgen_anon_1.queuelist) }.cast_mut()
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
    // `hrtimer_init()` initialises all of it but the callback, set next.
    unsafe {
        bindings::hrtimer_init(
            slot,
            bindings::CLOCK_MONOTONIC as bindings::clockid_t,
            bindings::hrtimer_mode_HRTIMER_MODE_ABS,
        );
        (*slot).function = Some(function);
    }
}

impl<T: Elevator> Vtable<T> {
    /// The hooks of `elevator_mq_ops` that attach the scheduler and tell it
    /// of depth changes; every other one is `None` here.
    pub(super) const CORE_OPS: bindings::elevator_mq_ops = bindings::elevator_mq_ops {
        init_sched: Some(Self::init_sched),
        init_hctx: if T::HAS_DEPTH_UPDATED {
            Some(Self::init_hctx)
        } else {
            None
        },
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
    /// frozen and quiesced, and this registration's elevator type.
    unsafe extern "C" fn init_sched(
        q: *mut bindings::request_queue,
        e: *mut bindings::elevator_type,
    ) -> c_int {
        // SAFETY: `q` and `e` are valid (safety requirements).
        let eq = unsafe { bindings::elevator_alloc(q, e) };
        if eq.is_null() {
            return ENOMEM.to_errno();
        }
        // SAFETY: `q` is live for the duration of the call.
        match unsafe { Self::new_data(q) } {
            Ok(data) => {
                // SAFETY: `eq` was just allocated for `q`.
                unsafe { Self::attach(q, eq, data) };
                0
            }
            Err(err) => {
                // SAFETY: `eq` is ours and not attached; dropping its only
                // reference frees it (as `dd_init_sched()` does on error).
                unsafe { bindings::kobject_put(&raw mut (*eq).kobj) };
                err.to_errno()
            }
        }
    }

    /// # Safety
    ///
    /// Called by the block layer with a live hctx of a queue this elevator
    /// is attached to, frozen.
    unsafe extern "C" fn init_hctx(hctx: *mut bindings::blk_mq_hw_ctx, _idx: c_uint) -> c_int {
        // SAFETY: Same requirements.
        unsafe { Self::depth_updated(hctx) };
        0
    }

    /// # Safety
    ///
    /// As for `init_hctx`.
    unsafe extern "C" fn depth_updated(hctx: *mut bindings::blk_mq_hw_ctx) {
        // SAFETY: The elevator is attached to `hctx->queue`.
        let data = unsafe { ElevatorData::<T>::from_queue((*hctx).queue) };
        let update = DepthUpdate {
            // SAFETY: `hctx` is live for the call.
            hctx: unsafe { HwQueue::from_raw(hctx) },
        };
        let mut guard = data.lock.lock();
        T::depth_updated(&data.shared, &mut guard, &update);
    }
}

/// A scheduler-tag depth change of one hardware queue, given to
/// [`Elevator::depth_updated`]: once per hardware queue when the scheduler
/// is attached (`init_hctx`), and whenever `nr_requests` changes
/// (`depth_updated`).
///
/// [`Elevator::depth_updated`]: super::Elevator::depth_updated
pub struct DepthUpdate<'a> {
    pub(super) hctx: &'a HwQueue,
}

impl DepthUpdate<'_> {
    /// The queue's `async_depth` where the queue keeps one
    /// ([`QUEUE_ASYNC_DEPTH`]): never in 6.12, whose schedulers keep their
    /// own.
    pub fn async_depth(&self) -> Option<u32> {
        None
    }

    /// The hardware queue.
    pub fn hw_queue(&self) -> &HwQueue {
        self.hctx
    }

    /// The new number of scheduler tags of the hardware queue (the new
    /// `nr_requests`; `blk_mq_update_nr_requests()` updates
    /// `q->nr_requests` only after this hook).
    pub fn nr_requests(&self) -> u32 {
        let h = self.hctx.as_ptr();
        // SAFETY: The queue is frozen: the hctx and its scheduler tags are
        // stable. Unless the tags are shared by all hardware queues, their
        // bitmap has been resized to the new depth minus reserved tags.
        unsafe {
            let tags = (*h).sched_tags;
            let q = (*h).queue;
            if tags.is_null() || tags == (*q).sched_shared_tags {
                return u32::try_from((*q).nr_requests).unwrap_or(u32::MAX);
            }
            (*tags).bitmap_tags.sb.depth + (*tags).nr_reserved_tags
        }
    }

    /// Sets the smallest `shallow_depth` [`Elevator::limit_depth`] will
    /// return (`sbitmap_queue_min_shallow_depth()`), which sizes the wake-up
    /// batches of the scheduler tags.
    ///
    /// [`Elevator::limit_depth`]: super::Elevator::limit_depth
    pub fn set_min_shallow_depth(&self, depth: u32) {
        let h = self.hctx.as_ptr();
        // SAFETY: The queue is frozen; `sched_tags` is set while an elevator
        // is attached.
        unsafe {
            let tags = (*h).sched_tags;
            if !tags.is_null() {
                bindings::sbitmap_queue_min_shallow_depth(&raw mut (*tags).bitmap_tags, depth);
            }
        }
    }
}
