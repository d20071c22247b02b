// SPDX-License-Identifier: GPL-2.0

//! Bios and requests entering the scheduler: insertion, merging, and the
//! requests merges free.
//!
//! C header: [`block/blk-mq-sched.h`](srctree/block/blk-mq-sched.h)

use super::{
    api,
    data::ElevatorData,
    request::{RQ_HELD, RQ_NOT_HELD},
    Elevator, OpFlags, RequestRef, SchedRequest,
};
use crate::{bindings, ffi::c_uint, types::Opaque};
use core::{
    ptr::{self, NonNull},
    sync::atomic::Ordering,
};

/// A bio being merged (`struct bio`).
#[repr(transparent)]
pub struct Bio(Opaque<bindings::bio>);

impl Bio {
    /// # Safety
    ///
    /// `ptr` must point to a live bio for `'a`.
    #[inline]
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::bio) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's guarantee.
        unsafe { &*ptr.cast() }
    }

    #[inline]
    fn as_ptr(&self) -> *mut bindings::bio {
        self.0.get()
    }

    /// First sector.
    #[inline]
    pub fn sector(&self) -> u64 {
        // SAFETY: The bio is live; its iterator is not advanced while it is
        // being merged.
        unsafe { (*self.as_ptr()).bi_iter.bi_sector }
    }

    /// Length in bytes.
    #[inline]
    pub fn bytes(&self) -> u32 {
        // SAFETY: As above.
        unsafe { (*self.as_ptr()).bi_iter.bi_size }
    }

    /// The sector just past the end (`bio_end_sector()`).
    #[inline]
    pub fn end_sector(&self) -> u64 {
        self.sector() + u64::from(self.bytes() >> 9)
    }

    /// Operation and flags.
    #[inline]
    pub fn opf(&self) -> OpFlags {
        // SAFETY: The bio is live; `bi_opf` is set before submission.
        OpFlags(unsafe { (*self.as_ptr()).bi_opf })
    }

    /// The I/O priority (`bi_ioprio`).
    #[inline]
    pub fn ioprio(&self) -> u16 {
        // SAFETY: As above.
        unsafe { (*self.as_ptr()).bi_ioprio }
    }
}

/// How a bio was merged into a request (`enum elv_merge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    /// The bio was added at the request's front: its start sector moved.
    Front,
    /// The bio was added at the request's end.
    Back,
    /// A discard merge (the request's ranges grew).
    Discard,
}

impl MergeKind {
    pub(super) fn from_raw(kind: bindings::elv_merge) -> Option<Self> {
        match kind {
            bindings::elv_merge_ELEVATOR_FRONT_MERGE => Some(MergeKind::Front),
            bindings::elv_merge_ELEVATOR_BACK_MERGE => Some(MergeKind::Back),
            bindings::elv_merge_ELEVATOR_DISCARD_MERGE => Some(MergeKind::Discard),
            _ => None,
        }
    }
}

/// `INIT_LIST_HEAD()`, without a call (two stores).
///
/// # Safety
///
/// `head` must be valid for writes.
#[inline]
unsafe fn init_list_head(head: *mut bindings::list_head) {
    // SAFETY: Valid for writes by the safety requirements; volatile writes
    // are the `WRITE_ONCE()`s of the C version.
    unsafe {
        ptr::write_volatile(&raw mut (*head).next, head);
        ptr::write_volatile(&raw mut (*head).prev, head);
    }
}

/// `list_del_init()`, without a call where the kernel checks no list
/// operation (`CONFIG_DEBUG_LIST`, `CONFIG_LIST_HARDENED`): two loads and
/// four stores.
///
/// # Safety
///
/// `entry` must be on a well-formed list, valid for reads and writes, as
/// must its neighbours, and the caller must own the list.
#[inline]
unsafe fn list_del_init(entry: *mut bindings::list_head) {
    #[cfg(any(CONFIG_DEBUG_LIST, CONFIG_LIST_HARDENED))]
    {
        // SAFETY: As required by the caller.
        unsafe { bindings::list_del_init(entry) };
    }
    #[cfg(not(any(CONFIG_DEBUG_LIST, CONFIG_LIST_HARDENED)))]
    {
        // SAFETY: `entry` and its neighbours are valid (safety
        // requirements): `__list_del_entry()` (the volatile write is its
        // `WRITE_ONCE()`), then `INIT_LIST_HEAD()`.
        unsafe {
            let next = (*entry).next;
            let prev = (*entry).prev;
            (*next).prev = prev;
            ptr::write_volatile(&raw mut (*prev).next, next);
            init_list_head(entry);
        }
    }
}

/// `list_empty()`, without a call (one load).
///
/// # Safety
///
/// `head` must point to an initialised list head, valid for reads.
#[inline]
pub(super) unsafe fn list_is_empty(head: *const bindings::list_head) -> bool {
    // SAFETY: Valid for reads by the safety requirements; a volatile read is
    // the `READ_ONCE()` of the C version.
    let next = unsafe { ptr::read_volatile(&raw const (*head).next) };
    ptr::eq(next.cast_const(), head)
}

/// A list of requests to free once the lock is dropped, linked through
/// `queuelist` (what `blk_mq_sched_try_insert_merge()` expects).
///
/// Nearly every dispatch frees nothing, so the list head is initialised
/// only when first needed ([`FreeList::head`]); until then `head.next` is
/// null, and there is nothing to walk.
pub(super) struct FreeList {
    head: bindings::list_head,
}

impl FreeList {
    /// A list whose head is not yet initialised; it must not move once
    /// [`FreeList::head`] has been called.
    #[inline]
    pub(super) fn new() -> Self {
        FreeList {
            head: bindings::list_head {
                next: ptr::null_mut(),
                prev: ptr::null_mut(),
            },
        }
    }

    /// The list head, initialised on the first call.
    ///
    /// # Safety
    ///
    /// `this` must be valid and not move until the list is freed.
    #[inline]
    pub(super) unsafe fn head(this: *mut FreeList) -> *mut bindings::list_head {
        // SAFETY: Valid for reads and writes by the safety requirements.
        unsafe {
            if !Self::initialised(this) {
                init_list_head(&raw mut (*this).head);
            }
            &raw mut (*this).head
        }
    }

    /// Whether [`FreeList::head`] was called: only then can a request be on
    /// the list.
    ///
    /// # Safety
    ///
    /// `this` must be valid.
    #[inline]
    unsafe fn initialised(this: *mut FreeList) -> bool {
        // SAFETY: Valid for reads by the safety requirements.
        !unsafe { (*this).head.next }.is_null()
    }

    /// Whether the list holds no request: it was never initialised, or
    /// is empty.
    ///
    /// # Safety
    ///
    /// `this` must be valid.
    #[inline]
    pub(super) unsafe fn is_empty(this: *mut FreeList) -> bool {
        // SAFETY: `this` is valid (safety requirements); once initialised,
        // its head is a list head.
        unsafe { !Self::initialised(this) || list_is_empty(&raw const (*this).head) }
    }

    /// Takes merged-away requests whose handle is still held off the list
    /// (they are freed when their handle is dispatched).
    ///
    /// # Safety
    ///
    /// The elevator lock must be held; `this` is valid and did not move.
    #[inline]
    pub(super) unsafe fn keep_held(this: *mut FreeList) {
        // SAFETY: `this` is valid (safety requirements).
        if !unsafe { Self::initialised(this) } {
            return;
        }
        // SAFETY: The list is initialised and links requests through
        // `queuelist`; the lock protects `priv[1]`.
        unsafe {
            let head = &raw mut (*this).head;
            let mut pos = (*head).next;
            while pos != head {
                let next = (*pos).next;
                let rq = RequestRef::from_raw(api::request_of_queuelist(pos));
                if rq.held_state() != RQ_NOT_HELD {
                    list_del_init(pos);
                }
                pos = next;
            }
        }
    }

    /// Frees every request on the list (`blk_mq_free_requests()`).
    ///
    /// # Safety
    ///
    /// The elevator lock must not be held (freeing calls `finish_request`);
    /// `this` is valid, did not move, and the list holds only requests
    /// nobody else owns.
    #[inline]
    pub(super) unsafe fn free_all(this: *mut FreeList) {
        // SAFETY: `this` is valid (safety requirements).
        if !unsafe { Self::initialised(this) } {
            return;
        }
        // SAFETY: The list is initialised; see the safety requirements.
        unsafe {
            let head = &raw mut (*this).head;
            while !list_is_empty(head) {
                let pos = (*head).next;
                list_del_init(pos);
                bindings::blk_mq_free_request(api::request_of_queuelist(pos));
            }
        }
    }
}

/// The requests handed to [`Elevator::insert_requests`], as owned handles.
pub struct Insertion<'a, T: Elevator> {
    pub(super) data: &'a ElevatorData<T>,
    /// The caller's list, linked through `queuelist`.
    pub(super) list: *mut bindings::list_head,
    /// Requests merged away, freed after the lock is dropped.
    pub(super) free: *mut FreeList,
}

impl<T: Elevator> Iterator for Insertion<'_, T> {
    type Item = SchedRequest;

    fn next(&mut self) -> Option<SchedRequest> {
        // SAFETY: `list` is the list `insert_requests` was given, valid for
        // the call; the requests on it now belong to the scheduler. The
        // elevator lock is held while an `Insertion` exists.
        unsafe {
            if list_is_empty(self.list) {
                return None;
            }
            let pos = (*self.list).next;
            list_del_init(pos);
            let rq = api::request_of_queuelist(pos);
            RequestRef::from_raw(rq).set_held_state(RQ_HELD);
            // Writers hold the lock: no read-modify-write needed.
            let held = self.data.held.load(Ordering::Relaxed);
            self.data
                .held
                .store(held.wrapping_add(1), Ordering::Relaxed);
            // INVARIANT: The request was just taken off the insertion list,
            // so this is its only handle, and it is held.
            Some(SchedRequest {
                ptr: NonNull::new_unchecked(rq),
            })
        }
    }
}

impl<T: Elevator> Insertion<'_, T> {
    /// Tries to merge `rq` into a queued request
    /// (`blk_mq_sched_try_insert_merge()`). On success the request is gone
    /// (it is freed after the lock is dropped); on failure it is given back.
    ///
    /// Merging may chain: the grown request may be merged into another held
    /// one, whose handle [`Elevator::requests_merged`] then gives back.
    /// Without that hook, nothing is merged.
    pub fn try_merge(
        &mut self,
        locked: &mut T::Locked,
        rq: SchedRequest,
    ) -> Result<(), SchedRequest> {
        if !T::HAS_REQUESTS_MERGED || rq.queue_ptr() != self.data.queue {
            return Err(rq);
        }
        let ptr = rq.ptr.as_ptr();
        // SAFETY: `free` is valid and does not move while the `Insertion`
        // exists.
        let free = unsafe { FreeList::head(self.free) };
        // SAFETY: The lock is held while an `Insertion` exists and `locked`
        // is the data it protects. `ptr` is a held request of this queue,
        // off any list; `free` is an initialised list. The merge hooks run
        // inside with the context set.
        let merged = unsafe {
            self.data.with_merge_ctx(locked, ptr, || {
                bindings::blk_mq_sched_try_insert_merge(self.data.queue, ptr, free)
            })
        };
        if !merged {
            return Err(rq);
        }
        let rq = rq.into_raw();
        // SAFETY: Lock held; the request is on the free list now and its
        // handle is consumed.
        unsafe {
            let r = RequestRef::from_raw(rq);
            r.set_held_state(RQ_NOT_HELD);
            self.data.released(r);
        }
        Ok(())
    }

    /// Stops the rerun timer armed through [`Elevator::rerun_at`] or
    /// [`LockOnDemand::rerun_at`], if it has not fired yet
    /// (`hrtimer_try_to_cancel()`): the request the scheduler idled for
    /// has arrived, as BFQ cancels its `idle_slice_timer` then.
    ///
    /// [`LockOnDemand::rerun_at`]: super::LockOnDemand::rerun_at
    pub fn cancel_rerun(&self) {
        // SAFETY: The timer was initialised in `init_sched` and is live
        // until `exit_sched`; trying to cancel it never waits, so it may be
        // called with the lock held and from any context.
        unsafe { bindings::hrtimer_try_to_cancel(self.data.rerun.get()) };
    }

    /// Reports `rq` to the `block_rq_insert` tracepoint (blktrace's `I`
    /// event), as C schedulers do for each request they take in, after an
    /// insert merge, if tried, failed.
    pub fn trace_insert(&self, rq: &SchedRequest) {
        // SAFETY: `rq` is a held request of this queue, live while its
        // handle exists; the tracepoint only reads it.
        unsafe { bindings::trace_block_rq_insert(rq.ptr.as_ptr()) };
    }

    /// Makes `rq` a back-merge candidate (`elv_rqhash_add()`, and the
    /// one-hit cache `last_merge` if empty), as mq-deadline does for sorted
    /// requests. Does nothing for requests that cannot merge or are already
    /// candidates. The abstraction removes it when it leaves the scheduler.
    pub fn add_merge_candidate(&mut self, rq: &SchedRequest) {
        let p = rq.ptr.as_ptr();
        if rq.queue_ptr() != self.data.queue {
            return;
        }
        // SAFETY: The lock is held while an `Insertion` exists; it protects
        // the hash, `last_merge` and `rq_flags & RQF_HASHED`. `p` is a held
        // request of this queue.
        unsafe {
            if (*p).rq_flags & bindings::RQF_HASHED != 0 || !rq.is_mergeable() {
                return;
            }
            bindings::elv_rqhash_add(self.data.queue, p);
            if (*self.data.queue).last_merge.is_null() {
                (*self.data.queue).last_merge = p;
            }
        }
    }
}

/// A bio merge in progress, given to [`Elevator::bio_merge`].
pub struct BioMerge<'a, T: Elevator> {
    pub(super) data: &'a ElevatorData<T>,
    pub(super) bio: &'a Bio,
    pub(super) nr_segs: c_uint,
    /// The request `blk_mq_sched_try_merge()` merged away, to free.
    pub(super) free: &'a mut *mut bindings::request,
}

impl<T: Elevator> BioMerge<'_, T> {
    /// The bio.
    pub fn bio(&self) -> &Bio {
        self.bio
    }

    /// Runs the block layer's merge logic (`blk_mq_sched_try_merge()`):
    /// back merges through the request hash, front merges through
    /// [`Elevator::request_merge`]. Returns whether the bio was merged.
    pub fn try_merge(self, locked: &mut T::Locked) -> bool {
        let free = self.free;
        // SAFETY: The lock is held while a `BioMerge` exists and `locked` is
        // the data it protects; the bio is live for the call. The merge hooks
        // run inside with the context set.
        unsafe {
            self.data.with_merge_ctx(locked, ptr::null_mut(), || {
                bindings::blk_mq_sched_try_merge(
                    self.data.queue,
                    self.bio.as_ptr(),
                    self.nr_segs,
                    free,
                )
            })
        }
    }
}
