// SPDX-License-Identifier: GPL-2.0

//! Per-process I/O contexts for elevators (`struct io_cq`).
//!
//! C header: [`include/linux/iocontext.h`](srctree/include/linux/iocontext.h)
//!
//! A scheduler that keeps state per process, as BFQ does, sets
//! [`Elevator::IO_CONTEXTS`]. The block layer then allocates one [`IoCq`]
//! per (process I/O context, queue) pair the first time the process
//! allocates a request on the queue (`ioc_find_get_icq()` in
//! `prepare_request`); each request holds a reference on its I/O context
//! until it is freed (`put_io_context()` after `finish_request`), and
//! [`RequestRef::io_cq`] finds it. When the process exits, or when the
//! scheduler is detached from the queue, [`Elevator::exit_icq`] is called
//! once for the context, with the elevator lock held.
//!
//! An [`IoCq`] carries one word for the scheduler, zero when the context is
//! created. Requests of a context may still be queued, in flight, or even be
//! inserted after `exit_icq` (they were allocated before the process went
//! away): a scheduler must not assume otherwise.

use super::{data::ElevatorData, vtable::Vtable, Elevator, Queue, RequestRef, Rerun};
use crate::{bindings, types::Opaque};
use core::sync::atomic::{AtomicUsize, Ordering};

/// The memory behind an [`IoCq`]: the block layer's `io_cq` first, as
/// `icq_size` requires, then the scheduler's word.
#[repr(C)]
pub(super) struct IcqData {
    icq: bindings::io_cq,
    word: AtomicUsize,
}

/// A process's I/O context on one queue (`struct io_cq`), with one word of
/// scheduler data.
#[repr(transparent)]
pub struct IoCq(Opaque<IcqData>);

impl IoCq {
    /// # Safety
    ///
    /// `ptr` must point to a live `io_cq` allocated from the icq cache of a
    /// Rust elevator with [`Elevator::IO_CONTEXTS`] (`icq_size` is
    /// `size_of::<IcqData>()`), for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::io_cq) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's guarantee.
        unsafe { &*ptr.cast() }
    }

    #[inline]
    fn word(&self) -> &AtomicUsize {
        // SAFETY: The `IcqData` is live (type invariant); the word is only
        // accessed atomically.
        unsafe { &(*self.0.get()).word }
    }

    /// The scheduler's word (0 until set).
    #[inline]
    pub fn private(&self) -> usize {
        self.word().load(Ordering::Relaxed)
    }

    /// Sets the scheduler's word.
    #[inline]
    pub fn set_private(&self, value: usize) {
        self.word().store(value, Ordering::Relaxed);
    }

    /// The queue this context belongs to (`icq->q`).
    pub fn queue(&self) -> &Queue {
        // SAFETY: `icq.q` is set when the icq is created and never changes;
        // the queue outlives its icqs (the elevator exits them before it
        // detaches, and the queue before it is freed).
        unsafe { Queue::from_raw((*self.0.get()).icq.q) }
    }
}

/// The `icq_size` and `icq_align` of an elevator type with I/O contexts.
pub(super) const ICQ_SIZE: usize = core::mem::size_of::<IcqData>();
pub(super) const ICQ_ALIGN: usize = core::mem::align_of::<IcqData>();

impl RequestRef {
    /// The request's I/O context on its queue, if the queue's scheduler
    /// keeps them ([`Elevator::IO_CONTEXTS`]) and one could be allocated.
    pub fn io_cq(&self) -> Option<&IoCq> {
        // SAFETY: The request is live; `elv.icq` is set in `prepare_request`
        // and cleared when the request is freed.
        let icq = unsafe { (*self.as_ptr()).elv.icq };
        if icq.is_null() {
            return None;
        }
        // SAFETY: The request is live, so is its queue and the elevator
        // attached to it (it cannot change while requests exist).
        let icq_size = unsafe {
            let e = (*self.queue_ptr()).elevator;
            if e.is_null() || (*e).type_.is_null() {
                return None;
            }
            (*(*e).type_).icq_size
        };
        if icq_size != ICQ_SIZE {
            return None;
        }
        // SAFETY: The request holds a reference on the context, so the icq
        // stays allocated; it comes from a Rust elevator's icq cache.
        Some(unsafe { IoCq::from_raw(icq) })
    }
}

impl<T: Elevator> Vtable<T> {
    /// `prepare_request` half: find or create the I/O context of the
    /// current process on the request's queue, and hold it.
    ///
    /// # Safety
    ///
    /// `rq` is a live request being prepared in process context.
    pub(super) unsafe fn get_icq(rq: *mut bindings::request) {
        // SAFETY: `rq` and its queue are live; `ioc_find_get_icq()` takes a
        // reference on the context that `put_icq` drops.
        unsafe { (*rq).elv.icq = bindings::ioc_find_get_icq((*rq).q) };
    }

    /// `finish_request` half: drop the reference `get_icq` took. Call
    /// without the elevator lock (`put_io_context()` may take the
    /// context's lock, which `exit_icq` holds while taking ours).
    ///
    /// # Safety
    ///
    /// `rq` is a live request being freed.
    pub(super) unsafe fn put_icq(rq: *mut bindings::request) {
        // SAFETY: `rq` is live; a non-null `elv.icq` holds a reference on
        // its context taken in `get_icq`.
        unsafe {
            let icq = (*rq).elv.icq;
            if !icq.is_null() {
                bindings::put_io_context((*icq).ioc);
                (*rq).elv.icq = core::ptr::null_mut();
            }
        }
    }

    /// # Safety
    ///
    /// Called by the block layer (`ioc_exit_icq()`) once per context, with
    /// the context locked, for an icq of a queue this elevator is attached
    /// to (the elevator detaches only after exiting its queue's icqs).
    pub(super) unsafe extern "C" fn exit_icq(icq: *mut bindings::io_cq) {
        if !T::HAS_EXIT_ICQ {
            return;
        }
        // SAFETY: `icq->q` has this elevator attached (safety requirements).
        let data = unsafe { ElevatorData::<T>::from_queue((*icq).q) };
        // SAFETY: `icq` is live and comes from this elevator's icq cache.
        let icq = unsafe { IoCq::from_raw(icq) };
        let mut guard = data.lock.lock();
        let rerun = Rerun { timer: &data.rerun };
        T::exit_icq(&data.shared, &mut guard, icq, rerun);
    }
}
