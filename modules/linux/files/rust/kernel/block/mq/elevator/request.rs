// SPDX-License-Identifier: GPL-2.0

//! Requests, as a scheduler sees them, and the handles it holds.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)

use super::{Queue, MAX_SCHED_TAGS};
use crate::{bindings, ffi::c_void, prelude::*, types::Opaque};
use core::{mem::ManuallyDrop, ops::Deref, ptr::NonNull};

/// A request operation (`req_op()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqOp {
    /// `REQ_OP_READ`.
    Read,
    /// `REQ_OP_WRITE`.
    Write,
    /// `REQ_OP_FLUSH`.
    Flush,
    /// `REQ_OP_DISCARD`.
    Discard,
    /// `REQ_OP_WRITE_ZEROES`.
    WriteZeroes,
    /// Any other operation, by its `REQ_OP_*` value.
    Other(u32),
}

impl ReqOp {
    #[inline]
    fn from_opf(opf: u32) -> Self {
        match opf & bindings::REQ_OP_MASK {
            bindings::req_op_REQ_OP_READ => ReqOp::Read,
            bindings::req_op_REQ_OP_WRITE => ReqOp::Write,
            bindings::req_op_REQ_OP_FLUSH => ReqOp::Flush,
            bindings::req_op_REQ_OP_DISCARD => ReqOp::Discard,
            bindings::req_op_REQ_OP_WRITE_ZEROES => ReqOp::WriteZeroes,
            op => ReqOp::Other(op),
        }
    }
}

/// Operation and flags of a request or bio (`blk_opf_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpFlags(pub(super) u32);

impl OpFlags {
    /// The raw `blk_opf_t` value.
    #[inline]
    pub fn raw(self) -> u32 {
        self.0
    }

    /// The operation.
    #[inline]
    pub fn op(self) -> ReqOp {
        ReqOp::from_opf(self.0)
    }

    /// Whether the issuer waits for it (`op_is_sync()`).
    #[inline]
    pub fn is_sync(self) -> bool {
        self.0 & bindings::REQ_OP_MASK == bindings::req_op_REQ_OP_READ
            || self.0 & (bindings::REQ_SYNC | bindings::REQ_FUA | bindings::REQ_PREFLUSH) != 0
    }

    /// Whether data moves to the device (`op_is_write()`).
    #[inline]
    pub fn is_write(self) -> bool {
        self.0 & 1 != 0
    }
}

/// Values of `rq->elv.priv[1]`, which the abstraction keeps for itself.
/// They are read and written with the elevator lock held.
pub(super) const RQ_NOT_HELD: usize = 0;
/// The scheduler holds a [`SchedRequest`] handle for the request.
pub(super) const RQ_HELD: usize = 1;
/// The request was merged into another one while the scheduler kept its
/// handle: it has no bio and must be freed, not dispatched.
pub(super) const RQ_MERGED_AWAY: usize = 2;

/// A request, as a scheduler sees it (`struct request`).
///
/// Obtained by dereferencing a [`SchedRequest`] handle or as an argument of a
/// hook.
///
/// # Invariants
///
/// The request is live. Its fields are read through raw pointers, never
/// through a reference to the whole `struct request` (the block layer
/// changes its reference count and state concurrently). Of the fields read
/// here, the block layer changes only sector and length while the scheduler
/// holds the request (bio merges), and only with the elevator lock held,
/// which every hook that sees a held request holds; the others are set when
/// the request is allocated or its bio attached.
#[repr(transparent)]
pub struct RequestRef(Opaque<bindings::request>);

impl RequestRef {
    /// # Safety
    ///
    /// `ptr` must point to a live request for `'a`.
    #[inline]
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::request) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's guarantee.
        unsafe { &*ptr.cast() }
    }

    #[inline]
    pub(super) fn as_ptr(&self) -> *mut bindings::request {
        self.0.get()
    }

    /// First sector (`blk_rq_pos()`).
    #[inline]
    pub fn sector(&self) -> u64 {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        unsafe { (*self.as_ptr()).__sector }
    }

    /// Length in bytes (`blk_rq_bytes()`).
    #[inline]
    pub fn bytes(&self) -> u32 {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        unsafe { (*self.as_ptr()).__data_len }
    }

    /// Length in 512-byte sectors (`blk_rq_sectors()`).
    #[inline]
    pub fn sectors(&self) -> u32 {
        self.bytes() >> 9
    }

    /// Operation and flags (`cmd_flags`).
    #[inline]
    pub fn opf(&self) -> OpFlags {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        OpFlags(unsafe { (*self.as_ptr()).cmd_flags })
    }

    /// The operation (`req_op()`).
    #[inline]
    pub fn op(&self) -> ReqOp {
        self.opf().op()
    }

    /// Whether the issuer waits for it (`rq_is_sync()`).
    #[inline]
    pub fn is_sync(&self) -> bool {
        self.opf().is_sync()
    }

    /// The I/O priority (`req_get_ioprio()`): its first bio's, 0 without
    /// a bio.
    #[inline]
    pub fn ioprio(&self) -> u16 {
        // SAFETY: The request is live. Its first bio changes only by a
        // front merge, which the block layer makes under the elevator lock
        // that every hook seeing a held request holds (type invariants);
        // a bio is live while it is attached to a live request.
        unsafe {
            let bio = (*self.as_ptr()).bio;
            if bio.is_null() {
                0
            } else {
                (*bio).bi_ioprio
            }
        }
    }

    /// Whether the request may be merged with others (`rq_mergeable()`).
    #[inline]
    pub(super) fn is_mergeable(&self) -> bool {
        let opf = self.opf().raw();
        let op = opf & bindings::REQ_OP_MASK;
        if matches!(
            op,
            bindings::req_op_REQ_OP_DRV_IN
                | bindings::req_op_REQ_OP_DRV_OUT
                | bindings::req_op_REQ_OP_FLUSH
                | bindings::req_op_REQ_OP_WRITE_ZEROES
                | bindings::req_op_REQ_OP_ZONE_APPEND
        ) {
            return false;
        }
        // SAFETY: The request is live; `rq_flags` changes under the
        // elevator lock (`RQF_HASHED`) or before the request reaches the
        // scheduler, and the caller holds the lock.
        let flags = unsafe { (*self.as_ptr()).rq_flags };
        opf & bindings::REQ_NOMERGE_FLAGS == 0 && flags & bindings::RQF_NOMERGE_FLAGS == 0
    }

    /// The scheduler tag (`internal_tag`), unique within its hardware queue
    /// (or, with shared scheduler tags, within the queue).
    #[inline]
    pub fn sched_tag(&self) -> i32 {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        unsafe { (*self.as_ptr()).internal_tag }
    }

    /// The request queue the request belongs to.
    #[inline]
    pub fn queue(&self) -> &Queue {
        // SAFETY: `q` is set at allocation and outlives the request.
        unsafe { Queue::from_raw(self.queue_ptr()) }
    }

    /// The index of the request's hardware queue.
    #[inline]
    pub fn hw_queue(&self) -> u32 {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        let hctx = unsafe { (*self.as_ptr()).mq_hctx };
        if hctx.is_null() {
            return 0;
        }
        // SAFETY: `mq_hctx` is set at allocation and outlives the request.
        unsafe { (*hctx).queue_num }
    }

    /// A dense index unique among the queue's scheduler requests:
    /// `hw_queue * MAX_SCHED_TAGS + sched_tag`, below
    /// [`Queue::sched_index_bound`]. Every request that reaches the
    /// scheduler has a scheduler tag, so this is `None` only for requests
    /// that bypassed it.
    #[inline]
    pub fn sched_index(&self) -> Option<usize> {
        let tag = usize::try_from(self.sched_tag()).ok()?;
        if tag >= MAX_SCHED_TAGS {
            return None;
        }
        Some(self.hw_queue() as usize * MAX_SCHED_TAGS + tag)
    }

    /// When the request was started (`start_time_ns`), in
    /// [`ktime_get_ns`] time.
    ///
    /// [`ktime_get_ns`]: super::ktime_get_ns
    #[inline]
    pub fn start_time_ns(&self) -> u64 {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        unsafe { (*self.as_ptr()).start_time_ns }
    }

    /// When the request was allocated (`alloc_time_ns`), if the kernel
    /// records it (`CONFIG_BLK_RQ_ALLOC_TIME`).
    #[inline]
    pub fn alloc_time_ns(&self) -> Option<u64> {
        #[cfg(CONFIG_BLK_RQ_ALLOC_TIME)]
        {
            // SAFETY: The request is live and the field stable (type
            // invariants).
            Some(unsafe { (*self.as_ptr()).alloc_time_ns })
        }
        #[cfg(not(CONFIG_BLK_RQ_ALLOC_TIME))]
        {
            None
        }
    }

    /// The scheduler's private word of this request (`rq->elv.priv[0]`).
    /// Not initialised by the block layer: set it in
    /// [`Elevator::prepare_request`] before relying on it.
    ///
    /// [`Elevator::prepare_request`]: super::Elevator::prepare_request
    #[inline]
    pub fn private(&self) -> usize {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        (unsafe { (*self.as_ptr()).elv.priv_[0] }) as usize
    }

    /// Sets the scheduler's private word (`rq->elv.priv[0]`).
    #[inline]
    pub fn set_private(&self, value: usize) {
        // SAFETY: The request is live. `elv.priv[0]` belongs to the elevator
        // and the block layer never touches it; hooks for one request are
        // serialised by the request's life cycle (prepare, insert, dispatch,
        // finish happen one after the other). `Opaque` makes the write
        // through a shared reference legal.
        unsafe { (*self.as_ptr()).elv.priv_[0] = value as *mut c_void };
    }

    #[inline]
    pub(super) fn queue_ptr(&self) -> *mut bindings::request_queue {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        unsafe { (*self.as_ptr()).q }
    }

    #[inline]
    pub(super) fn held_state(&self) -> usize {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        (unsafe { (*self.as_ptr()).elv.priv_[1] }) as usize
    }

    /// # Safety
    ///
    /// The elevator lock of the request's queue must be held.
    #[inline]
    pub(super) unsafe fn set_held_state(&self, state: usize) {
        // SAFETY: `elv.priv[1]` is only accessed by this abstraction, with
        // the elevator lock held (guaranteed by the caller).
        unsafe { (*self.as_ptr()).elv.priv_[1] = state as *mut c_void };
    }
}

/// An owned request held by the scheduler.
///
/// Created when a request is inserted ([`Insertion`]); given back from
/// [`Elevator::dispatch_request`] or [`Elevator::requests_merged`].
///
/// # Invariants
///
/// `ptr` points to a live request that the scheduler of its queue holds,
/// and this is the only handle for it. The request is not freed while the
/// handle exists (see [request ownership](super#request-ownership)).
///
/// [`Insertion`]: super::Insertion
/// [`Elevator::dispatch_request`]: super::Elevator::dispatch_request
/// [`Elevator::requests_merged`]: super::Elevator::requests_merged
#[must_use = "a dropped request handle leaks the request"]
pub struct SchedRequest {
    pub(super) ptr: NonNull<bindings::request>,
}

// SAFETY: A request may be handled on any CPU; the handle only gives
// access to fields that are stable or protected by the elevator lock.
unsafe impl Send for SchedRequest {}

impl SchedRequest {
    /// Gives up the handle without running `Drop`.
    #[inline]
    pub(super) fn into_raw(self) -> *mut bindings::request {
        ManuallyDrop::new(self).ptr.as_ptr()
    }
}

impl Deref for SchedRequest {
    type Target = RequestRef;

    #[inline]
    fn deref(&self) -> &RequestRef {
        // SAFETY: By the type invariant the request is live while the handle
        // exists.
        unsafe { RequestRef::from_raw(self.ptr.as_ptr()) }
    }
}

impl Drop for SchedRequest {
    fn drop(&mut self) {
        // The block layer still counts the request as queued: it can neither
        // be completed nor freed from here. Leak it (the queue cannot be
        // frozen any more) and say so: this is a bug in the scheduler.
        pr_err!(
            "WARNING: elevator dropped a request handle (sector {}); the request is leaked\n",
            self.sector()
        );
    }
}
