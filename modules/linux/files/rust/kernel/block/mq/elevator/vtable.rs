// SPDX-License-Identifier: GPL-2.0

//! The C vtable (`struct elevator_mq_ops`) that calls an [`Elevator`]'s
//! hooks, and the sysfs show and store functions of its tunables.
//!
//! C header: [`block/elevator.h`](srctree/block/elevator.h)

use super::{
    alloc::Allocation,
    api,
    data::{arm_rerun, ElevatorData, MergeCtx},
    merge::{list_is_empty, FreeList},
    request::{RQ_HELD, RQ_MERGED_AWAY, RQ_NOT_HELD},
    Bio, BioMerge, Elevator, HwQueue, Insertion, LockContext, LockOnDemand, MergeKind, OpFlags,
    Queue, RequestRef, MAX_TUNABLES,
};
use crate::{
    bindings, container_of,
    ffi::{c_char, c_int, c_uint},
    prelude::*,
    sync::lock::Lock,
    types::Opaque,
};
use core::{
    cell::UnsafeCell,
    marker::PhantomData,
    ptr,
    sync::atomic::{AtomicUsize, Ordering},
};

pub(super) struct Vtable<T: Elevator>(PhantomData<T>);

type ShowFn = unsafe extern "C" fn(*mut bindings::elevator_queue, *mut c_char) -> isize;
type StoreFn = unsafe extern "C" fn(*mut bindings::elevator_queue, *const c_char, usize) -> isize;

macro_rules! tunable_fns {
    ($($i:literal)*) => {
        [$((Self::tunable_show::<$i> as ShowFn, Self::tunable_store::<$i> as StoreFn)),*]
    };
}

impl<T: Elevator> Vtable<T> {
    /// A lock that is not interrupt-safe must not be taken where the
    /// completion path or the I/O context teardown would take it.
    const LOCK_CONTEXT_OK: () = assert!(
        T::LockContext::IRQ || !(T::HAS_REQUEUE_REQUEST || T::IO_CONTEXTS),
        "requeue_request and IO_CONTEXTS need `type LockContext = IrqSafe`"
    );

    pub(super) const OPS: bindings::elevator_mq_ops = bindings::elevator_mq_ops {
        exit_sched: {
            #[allow(clippy::let_unit_value)]
            let () = Self::LOCK_CONTEXT_OK;
            Some(Self::exit_sched)
        },
        exit_hctx: None,
        allow_merge: None,
        bio_merge: if T::HAS_BIO_MERGE {
            Some(Self::bio_merge)
        } else {
            None
        },
        request_merge: if T::HAS_REQUEST_MERGE {
            Some(Self::request_merge)
        } else {
            None
        },
        request_merged: if T::HAS_REQUEST_MERGED {
            Some(Self::request_merged)
        } else {
            None
        },
        requests_merged: if T::HAS_REQUESTS_MERGED {
            Some(Self::requests_merged)
        } else {
            None
        },
        limit_depth: if T::HAS_LIMIT_DEPTH {
            Some(Self::limit_depth)
        } else {
            None
        },
        prepare_request: if T::HAS_PREPARE_REQUEST || T::IO_CONTEXTS {
            Some(Self::prepare_request)
        } else {
            None
        },
        // Mandatory for `elv_register()`.
        finish_request: Some(Self::finish_request),
        insert_requests: Some(Self::insert_requests),
        dispatch_request: Some(Self::dispatch_request),
        has_work: Some(Self::has_work),
        completed_request: if T::HAS_COMPLETED_REQUEST {
            Some(Self::completed_request)
        } else {
            None
        },
        requeue_request: if T::HAS_REQUEUE_REQUEST {
            Some(Self::requeue_request)
        } else {
            None
        },
        // Request-to-request merges after a bio merge need the scheduler's
        // sort order; without these, only insertion merges join requests.
        former_request: None,
        next_request: None,
        // The icq memory is zeroed at allocation: nothing to initialise.
        init_icq: None,
        exit_icq: if T::IO_CONTEXTS {
            Some(Self::exit_icq)
        } else {
            None
        },
        // Attaching and depth changes: what differs between kernels.
        ..Self::CORE_OPS
    };

    pub(super) const TUNABLE_FNS: [(ShowFn, StoreFn); MAX_TUNABLES] =
        tunable_fns!(
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
            16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
        );

    /// The per-queue data of a queue the scheduler is being attached to:
    /// the scheduler's own from [`Elevator::init`], its lock and the rerun
    /// timer.
    ///
    /// # Safety
    ///
    /// `q` must be live for the duration of the call.
    pub(super) unsafe fn new_data(
        q: *mut bindings::request_queue,
    ) -> Result<Pin<KBox<ElevatorData<T>>>> {
        // SAFETY: `q` is live for the duration of the call.
        let queue = unsafe { Queue::from_raw(q) };
        let (shared, locked) = T::init(queue)?;
        let (lock_name, lock_key) = T::LockContext::lock_class();
        KBox::pin_init(
            pin_init!(ElevatorData::<T> {
                shared,
                lock <- Lock::new(locked, lock_name, lock_key),
                merge: UnsafeCell::new(MergeCtx {
                    locked: ptr::null_mut(),
                    incoming: ptr::null_mut(),
                }),
                held: AtomicUsize::new(0),
                dispatching: AtomicUsize::new(0),
                queue: q,
                // SAFETY: `slot` is the timer's final, pinned place, which
                // `init_rerun_timer()` initialises completely.
                rerun <- unsafe {
                    Opaque::ffi_init(|slot: *mut bindings::hrtimer| {
                        api::init_rerun_timer(slot, Self::rerun_timer)
                    })
                },
            }),
            GFP_KERNEL,
        )
    }

    /// Makes `data` the elevator data of `eq`, makes the scheduler a
    /// single-queue one and attaches `eq` to `q`, as `dd_init_sched()` does.
    ///
    /// # Safety
    ///
    /// `q` must be live and `eq` an elevator queue allocated for it and not
    /// yet attached.
    pub(super) unsafe fn attach(
        q: *mut bindings::request_queue,
        eq: *mut bindings::elevator_queue,
        data: Pin<KBox<ElevatorData<T>>>,
    ) {
        // SAFETY: The data is never moved out of the box: it is turned back
        // into a pinned box in `exit_sched` and dropped.
        let data = KBox::into_raw(unsafe { Pin::into_inner_unchecked(data) });
        // SAFETY: `q` and `eq` are valid (safety requirements).
        unsafe {
            (*eq).elevator_data = data.cast();
            bindings::blk_queue_flag_set(bindings::QUEUE_FLAG_SQ_SCHED as c_uint, q);
            (*q).elevator = eq;
        }
    }

    /// # Safety
    ///
    /// Called by the block layer (`blk_mq_exit_sched()`) once, for an
    /// elevator queue `init_sched` set up, when no other hook can run.
    unsafe extern "C" fn exit_sched(e: *mut bindings::elevator_queue) {
        // SAFETY: `elevator_data` is the box `init_sched` leaked.
        let data = unsafe { KBox::from_raw((*e).elevator_data.cast::<ElevatorData<T>>()) };
        let held = data.held.load(Ordering::Relaxed);
        if held != 0 {
            pr_err!(
                "WARNING: elevator {} exits holding {} requests\n",
                T::NAME,
                held
            );
        }
        // SAFETY: The timer was initialised in `init_sched`. No hook runs
        // any more, so nothing arms it again; after `hrtimer_cancel()` its
        // callback is not running either and the data can go.
        unsafe { bindings::hrtimer_cancel(data.rerun.get()) };
        // SAFETY: No hook runs any more; forget the pointer before freeing.
        unsafe { (*e).elevator_data = ptr::null_mut() };
        drop(data);
    }

    /// The rerun timer's callback, in hard-IRQ context.
    ///
    /// # Safety
    ///
    /// Called by the hrtimer core for the `rerun` timer of a live
    /// `ElevatorData<T>` (`exit_sched` cancels it before freeing).
    unsafe extern "C" fn rerun_timer(timer: *mut bindings::hrtimer) -> bindings::hrtimer_restart {
        // SAFETY: `timer` is the `rerun` field of an `ElevatorData<T>`
        // (safety requirement); `Opaque<T>` is `repr(transparent)`.
        let data = unsafe {
            &*container_of!(
                timer.cast::<Opaque<bindings::hrtimer>>(),
                ElevatorData<T>,
                rerun
            )
        };
        // SAFETY: The queue is live while its elevator is; with `async` set
        // the function only queues work, so any context will do (as
        // `bfq_idle_slice_timer()` does).
        unsafe { bindings::blk_mq_run_hw_queues(data.queue, true) };
        api::HRTIMER_NORESTART
    }

    /// # Safety
    ///
    /// Called by the block layer with a live hctx of a queue this elevator
    /// is attached to and a list of requests now owned by the scheduler.
    unsafe extern "C" fn insert_requests(
        hctx: *mut bindings::blk_mq_hw_ctx,
        list: *mut bindings::list_head,
        flags: bindings::blk_insert_t,
    ) {
        // SAFETY: The elevator is attached to `hctx->queue`.
        let data = unsafe { ElevatorData::<T>::from_queue((*hctx).queue) };
        // SAFETY: `hctx` is live for the call.
        let hw = unsafe { HwQueue::from_raw(hctx) };
        let mut free = FreeList::new();
        // `free` lives on this stack frame and does not move: it is only
        // used through this pointer from now on.
        let free = &raw mut free;
        {
            let mut guard = data.lock.lock();
            let mut requests = Insertion { data, list, free };
            T::insert_requests(
                &data.shared,
                &mut guard,
                hw,
                &mut requests,
                flags & bindings::BLK_MQ_INSERT_AT_HEAD != 0,
            );
            // SAFETY: `list` is valid for the call.
            if !unsafe { list_is_empty(list) } {
                pr_err!(
                    "WARNING: elevator {} did not take every inserted request\n",
                    T::NAME
                );
            }
            // SAFETY: `free` is valid and did not move.
            if unsafe { FreeList::is_empty(free) } {
                // Nearly every insertion merges nothing away.
                return;
            }
            // SAFETY: The lock is held; `free` is valid and did not move.
            unsafe { FreeList::keep_held(free) };
        }
        // SAFETY: The lock is dropped; `free` did not move and holds
        // merged-away requests whose handles were given back.
        unsafe { Self::free_requests(free) };
    }

    /// Frees the requests on `list` ([`FreeList::free_all`]). Out of line
    /// and cold: nearly every hook that may free requests has none to free,
    /// and sees so with a look at the list.
    ///
    /// # Safety
    ///
    /// As for [`FreeList::free_all`].
    #[cold]
    #[inline(never)]
    unsafe fn free_requests(list: *mut FreeList) {
        // SAFETY: As required by the caller.
        unsafe { FreeList::free_all(list) };
    }

    /// # Safety
    ///
    /// Called by the block layer with a live hctx of a queue this elevator
    /// is attached to.
    unsafe extern "C" fn dispatch_request(
        hctx: *mut bindings::blk_mq_hw_ctx,
    ) -> *mut bindings::request {
        // SAFETY: The elevator is attached to `hctx->queue`.
        let data = unsafe { ElevatorData::<T>::from_queue((*hctx).queue) };
        // SAFETY: `hctx` is live for the call.
        let hw = unsafe { HwQueue::from_raw(hctx) };
        let mut husks = FreeList::new();
        // `husks` lives on this stack frame and does not move: it is only
        // used through this pointer from now on.
        let husks = &raw mut husks;
        // Counted from before the lock is taken (see `dispatching`).
        data.dispatching.fetch_add(1, Ordering::Relaxed);
        let rq = {
            let mut guard = data.lock.lock();
            let rq = loop {
                let Some(rq) = T::dispatch_request(&data.shared, &mut guard, hw) else {
                    if T::HAS_RERUN_AT {
                        if let Some(at) = T::rerun_at(&data.shared, &guard) {
                            arm_rerun(&data.rerun, at);
                        }
                    }
                    break ptr::null_mut();
                };
                if rq.queue_ptr() != data.queue {
                    pr_err!(
                        "WARNING: elevator {} dispatched a foreign request\n",
                        T::NAME
                    );
                    core::mem::forget(rq);
                    continue;
                }
                let rq = rq.into_raw();
                // SAFETY: The lock is held; the handle was consumed, so the
                // request leaves the scheduler. `husks` is valid and does
                // not move.
                unsafe {
                    let r = RequestRef::from_raw(rq);
                    let state = r.held_state();
                    r.set_held_state(RQ_NOT_HELD);
                    data.released(r);
                    if state == RQ_MERGED_AWAY {
                        // Its bio went to another request: free it instead.
                        bindings::list_add(
                            &raw mut (*rq).__bindgen_anon_1.queuelist,
                            FreeList::head(husks),
                        );
                        continue;
                    }
                }
                break rq;
            };
            // Still under the lock, so that a CPU inserting after it sees
            // the count without this one.
            data.dispatching.fetch_sub(1, Ordering::Relaxed);
            rq
        };
        // SAFETY: `husks` is valid and did not move.
        if !unsafe { FreeList::is_empty(husks) } {
            // SAFETY: The lock is dropped; `husks` did not move, and the
            // husks' handles were given back.
            unsafe { Self::free_requests(husks) };
        }
        rq
    }

    /// # Safety
    ///
    /// Called by the block layer with a live hctx of a queue this elevator
    /// is attached to, from any context.
    unsafe extern "C" fn has_work(hctx: *mut bindings::blk_mq_hw_ctx) -> bool {
        // SAFETY: The elevator is attached to `hctx->queue`.
        let data = unsafe { ElevatorData::<T>::from_queue((*hctx).queue) };
        if T::HAS_HAS_WORK {
            // SAFETY: `hctx` is live for the call.
            T::has_work(&data.shared, unsafe { HwQueue::from_raw(hctx) })
        } else {
            data.held.load(Ordering::Relaxed) > data.dispatching.load(Ordering::Relaxed)
        }
    }

    /// # Safety
    ///
    /// Called by the block layer for a request being allocated on a queue
    /// this elevator is attached to.
    unsafe extern "C" fn prepare_request(rq: *mut bindings::request) {
        if T::IO_CONTEXTS {
            // SAFETY: A request being prepared, in process context.
            unsafe { Self::get_icq(rq) };
        }
        if !T::HAS_PREPARE_REQUEST {
            return;
        }
        // SAFETY: The request is live and its queue has this elevator.
        let (data, r) = unsafe {
            (
                ElevatorData::<T>::from_queue((*rq).q),
                RequestRef::from_raw(rq),
            )
        };
        T::prepare_request(&data.shared, r);
    }

    /// # Safety
    ///
    /// Called by the block layer (`blk_mq_free_request()`) for a request of
    /// a queue this elevator is attached to, possibly in hard-IRQ context.
    unsafe extern "C" fn finish_request(rq: *mut bindings::request) {
        if T::HAS_FINISH_REQUEST {
            // SAFETY: The request is live and its queue has this elevator.
            let (data, r) = unsafe {
                (
                    ElevatorData::<T>::from_queue((*rq).q),
                    RequestRef::from_raw(rq),
                )
            };
            T::finish_request(
                &data.shared,
                r,
                LockOnDemand {
                    lock: &data.lock,
                    rerun: &data.rerun,
                },
            );
        }
        if T::IO_CONTEXTS {
            // SAFETY: The request is being freed; the lock is not held.
            unsafe { Self::put_icq(rq) };
        }
    }

    /// # Safety
    ///
    /// As for `finish_request`.
    unsafe extern "C" fn completed_request(rq: *mut bindings::request, now: u64) {
        // SAFETY: The request is live and its queue has this elevator.
        let (data, r) = unsafe {
            (
                ElevatorData::<T>::from_queue((*rq).q),
                RequestRef::from_raw(rq),
            )
        };
        T::completed_request(&data.shared, r, now);
    }

    /// # Safety
    ///
    /// Called by the block layer (`blk_mq_requeue_request()`) for a
    /// dispatched request of a queue this elevator is attached to.
    unsafe extern "C" fn requeue_request(rq: *mut bindings::request) {
        // SAFETY: The request is live and its queue has this elevator.
        let (data, r) = unsafe {
            (
                ElevatorData::<T>::from_queue((*rq).q),
                RequestRef::from_raw(rq),
            )
        };
        let mut guard = data.lock.lock();
        T::requeue_request(&data.shared, &mut guard, r);
    }

    /// # Safety
    ///
    /// Called by the block layer (`blk_mq_sched_bio_merge()`) with a live
    /// queue this elevator is attached to and a live bio.
    unsafe extern "C" fn bio_merge(
        q: *mut bindings::request_queue,
        bio: *mut bindings::bio,
        nr_segs: c_uint,
    ) -> bool {
        // SAFETY: The elevator is attached to `q`.
        let data = unsafe { ElevatorData::<T>::from_queue(q) };
        // A bio merges only into a request the scheduler holds: with none
        // held, the lock is not taken (mq-deadline and BFQ take theirs for
        // every bio, and on a fast device the scheduler is mostly empty).
        // A request inserted meanwhile is a merge missed, not an error: the
        // bio becomes a request of its own.
        if data.held.load(Ordering::Relaxed) == 0 {
            return false;
        }
        // SAFETY: The bio is live for the call.
        Self::bio_merge_locked(data, unsafe { Bio::from_raw(bio) }, nr_segs)
    }

    /// `bio_merge` while the scheduler holds requests: the merge,
    /// under the lock. Out of line, so that the entry point, which returns
    /// at once on a scheduler holding nothing (nearly every bio on a fast
    /// device), saves none of the registers this needs.
    #[inline(never)]
    fn bio_merge_locked(data: &ElevatorData<T>, bio: &Bio, nr_segs: c_uint) -> bool {
        let mut free: *mut bindings::request = ptr::null_mut();
        let merged = {
            let mut guard = data.lock.lock();
            let merge = BioMerge {
                data,
                bio,
                nr_segs,
                free: &mut free,
            };
            let merged = T::bio_merge(&data.shared, &mut guard, merge);
            // SAFETY: The lock is held, which protects `priv[1]`. A request
            // merged away whose handle is still held is not freed here.
            if !free.is_null() && unsafe { RequestRef::from_raw(free) }.held_state() != RQ_NOT_HELD
            {
                free = ptr::null_mut();
            }
            merged
        };
        if !free.is_null() {
            // SAFETY: The lock is dropped and nobody holds the request.
            unsafe { bindings::blk_mq_free_request(free) };
        }
        merged
    }

    /// # Safety
    ///
    /// Called by `elv_merge()`, inside `blk_mq_sched_try_merge()`.
    unsafe extern "C" fn request_merge(
        q: *mut bindings::request_queue,
        req: *mut *mut bindings::request,
        bio: *mut bindings::bio,
    ) -> c_int {
        const NO_MERGE: c_int = bindings::elv_merge_ELEVATOR_NO_MERGE as c_int;
        // SAFETY: The elevator is attached to `q`.
        let data = unsafe { ElevatorData::<T>::from_queue(q) };
        // SAFETY: Called from a merge the abstraction started.
        let Some((locked, _)) = (unsafe { data.merge_ctx() }) else {
            return NO_MERGE;
        };
        // SAFETY: The bio is live for the call.
        let Some(rq) = T::request_merge(&data.shared, locked, unsafe { Bio::from_raw(bio) }) else {
            return NO_MERGE;
        };
        let p = rq.as_ptr();
        // Only a request this scheduler holds may take the bio.
        if rq.queue_ptr() != q || rq.held_state() != RQ_HELD {
            return NO_MERGE;
        }
        // SAFETY: `p` is a held request of `q`, `bio` is live, `req` is the
        // caller's out parameter.
        unsafe {
            if !bindings::elv_bio_merge_ok(p, bio) {
                return NO_MERGE;
            }
            *req = p;
            if bindings::blk_discard_mergable(p) {
                bindings::elv_merge_ELEVATOR_DISCARD_MERGE as c_int
            } else {
                bindings::elv_merge_ELEVATOR_FRONT_MERGE as c_int
            }
        }
    }

    /// # Safety
    ///
    /// Called by `elv_merged_request()`, inside `blk_mq_sched_try_merge()`.
    unsafe extern "C" fn request_merged(
        q: *mut bindings::request_queue,
        rq: *mut bindings::request,
        kind: bindings::elv_merge,
    ) {
        // SAFETY: The elevator is attached to `q`.
        let data = unsafe { ElevatorData::<T>::from_queue(q) };
        // SAFETY: Called from a merge the abstraction started.
        let Some((locked, _)) = (unsafe { data.merge_ctx() }) else {
            return;
        };
        let Some(kind) = MergeKind::from_raw(kind) else {
            return;
        };
        // SAFETY: `rq` is a live request of `q`.
        T::request_merged(
            &data.shared,
            locked,
            unsafe { RequestRef::from_raw(rq) },
            kind,
        );
    }

    /// # Safety
    ///
    /// Called by `elv_merge_requests()`, inside
    /// `blk_mq_sched_try_insert_merge()` or `blk_mq_sched_try_merge()`.
    unsafe extern "C" fn requests_merged(
        q: *mut bindings::request_queue,
        rq: *mut bindings::request,
        next: *mut bindings::request,
    ) {
        // SAFETY: The elevator is attached to `q`.
        let data = unsafe { ElevatorData::<T>::from_queue(q) };
        // SAFETY: Called from a merge the abstraction started.
        let Some((locked, incoming)) = (unsafe { data.merge_ctx() }) else {
            return;
        };
        // SAFETY: Both requests are live requests of `q`; the lock is held.
        let (into, gone) = unsafe { (RequestRef::from_raw(rq), RequestRef::from_raw(next)) };
        // SAFETY: The lock is held: `next` leaves the merge structures.
        unsafe { data.unhash(next) };
        let handle = T::requests_merged(&data.shared, locked, into, gone);
        if next == incoming {
            // The abstraction holds the incoming request's handle itself.
            if let Some(h) = handle {
                pr_err!(
                    "WARNING: elevator {} gave back an unrelated request\n",
                    T::NAME
                );
                core::mem::forget(h);
            }
            return;
        }
        match handle {
            Some(h) if h.ptr.as_ptr() == next => {
                let p = h.into_raw();
                // SAFETY: The lock is held and the handle is consumed: the
                // request may be freed.
                unsafe {
                    let r = RequestRef::from_raw(p);
                    r.set_held_state(RQ_NOT_HELD);
                    data.released(r);
                }
            }
            other => {
                if let Some(h) = other {
                    pr_err!(
                        "WARNING: elevator {} gave back an unrelated request\n",
                        T::NAME
                    );
                    core::mem::forget(h);
                }
                if gone.held_state() == RQ_HELD {
                    // The scheduler kept the handle: never free the request
                    // behind its back; it is freed when dispatched.
                    // SAFETY: The lock is held.
                    unsafe { gone.set_held_state(RQ_MERGED_AWAY) };
                }
            }
        }
    }

    /// # Safety
    ///
    /// Called by the block layer (`__blk_mq_alloc_requests()`) with valid
    /// allocation data of a queue this elevator is attached to.
    unsafe extern "C" fn limit_depth(
        opf: bindings::blk_opf_t,
        ad: *mut bindings::blk_mq_alloc_data,
    ) {
        // SAFETY: `ad` is valid; the queue is entered, so the elevator stays.
        let data = unsafe { ElevatorData::<T>::from_queue((*ad).q) };
        let mut alloc = Allocation { data };
        if let Some(depth) = T::limit_depth(&data.shared, OpFlags(opf), &mut alloc) {
            // SAFETY: `ad` is valid for writes for the call.
            unsafe { (*ad).shallow_depth = depth };
        }
    }

    /// # Safety
    ///
    /// Called by `elv_attr_show()` with the elevator queue of an attached
    /// elevator (under `sysfs_lock`) and a `PAGE_SIZE` buffer.
    unsafe extern "C" fn tunable_show<const I: usize>(
        e: *mut bindings::elevator_queue,
        page: *mut c_char,
    ) -> isize {
        // SAFETY: `elevator_data` is ours while the elevator is attached and
        // null after `exit_sched` (the files are removed before that).
        let Some(data) = (unsafe { (*e).elevator_data.cast::<ElevatorData<T>>().as_ref() }) else {
            return ENOENT.to_errno() as isize;
        };
        let value = {
            let guard = data.lock.lock();
            T::tunable_show(&data.shared, &guard, I)
        };
        match value {
            Ok(v) => {
                let mut buf = [0u8; 24];
                let text = format_i64(v, &mut buf);
                // SAFETY: `page` has `PAGE_SIZE` bytes, far more than 21.
                unsafe {
                    ptr::copy_nonoverlapping(text.as_ptr(), page.cast::<u8>(), text.len());
                }
                text.len() as isize
            }
            Err(err) => err.to_errno() as isize,
        }
    }

    /// # Safety
    ///
    /// Called by `elv_attr_store()` with the elevator queue of an attached
    /// elevator (under `sysfs_lock`) and `count` bytes at `page`.
    unsafe extern "C" fn tunable_store<const I: usize>(
        e: *mut bindings::elevator_queue,
        page: *const c_char,
        count: usize,
    ) -> isize {
        // SAFETY: As in `tunable_show`.
        let Some(data) = (unsafe { (*e).elevator_data.cast::<ElevatorData<T>>().as_ref() }) else {
            return ENOENT.to_errno() as isize;
        };
        // SAFETY: sysfs passes `count` readable bytes.
        let bytes = unsafe { core::slice::from_raw_parts(page.cast::<u8>(), count) };
        let Ok(text) = core::str::from_utf8(bytes) else {
            return EINVAL.to_errno() as isize;
        };
        let res = {
            let mut guard = data.lock.lock();
            T::tunable_store(&data.shared, &mut guard, I, text)
        };
        match res {
            Ok(()) => count as isize,
            Err(err) => err.to_errno() as isize,
        }
    }
}

/// Formats `v` and a newline into `buf`, returning the text.
fn format_i64(v: i64, buf: &mut [u8; 24]) -> &[u8] {
    let mut end = buf.len();
    end -= 1;
    buf[end] = b'\n';
    let mut n = v.unsigned_abs();
    loop {
        end -= 1;
        buf[end] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        end -= 1;
        buf[end] = b'-';
    }
    &buf[end..]
}
