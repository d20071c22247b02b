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
//! [`Request`] handle: the scheduler holds it until it gives it back from
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

mod icq;
pub use icq::IoCq;

use crate::{
    bindings, c_str, container_of,
    error::{code::*, to_result, Result},
    ffi::{c_char, c_int, c_uint, c_void},
    pin_init,
    prelude::*,
    str::CStr,
    sync::{
        lock::{
            spinlock::SpinLockBackend, spinlock_irqsave::IrqSaveSpinLockBackend, Backend, Guard,
            Lock,
        },
        LockClassKey,
    },
    types::Opaque,
    ThisModule,
};
use core::{
    cell::UnsafeCell,
    marker::PhantomData,
    mem::ManuallyDrop,
    ops::Deref,
    pin::Pin,
    ptr::{self, NonNull},
    sync::atomic::{AtomicUsize, Ordering},
};

/// The largest number of scheduler tags of one hardware queue
/// (`MAX_SCHED_RQ`, `block/blk-mq-sched.h`): `blk_mq_tag_update_depth()`
/// refuses to grow scheduler tags beyond it, and the initial depth
/// (`2 * BLKDEV_DEFAULT_RQ` at most) is below it.
pub const MAX_SCHED_TAGS: usize = bindings::MAX_SCHED_RQ as usize;

/// The most sysfs tunables an elevator may declare.
pub const MAX_TUNABLES: usize = 16;

/// Length limit of an elevator name, including the terminating NUL
/// (`ELV_NAME_MAX`): `elv_iosched_store()` cannot select longer names.
const ELV_NAME_MAX: usize = bindings::ELV_NAME_MAX as usize;

/// Monotonic time in nanoseconds (`ktime_get_ns()`).
///
/// Reads the clocksource, which can be slow (an HPET read is a device
/// access); see [`jiffies_ns`] for per-request timestamps.
#[inline]
pub fn ktime_get_ns() -> u64 {
    // SAFETY: `ktime_get_ns()` can be called from any context.
    unsafe { bindings::ktime_get_ns() }
}

/// The block layer's clock (`blk_time_get_ns()`, what BFQ reads): monotonic
/// nanoseconds, read once per plug in task context (the plug caches it
/// until the task sleeps or is preempted), else [`ktime_get_ns`].
#[inline]
pub fn blk_time_get_ns() -> u64 {
    // SAFETY: `blk_time_get_ns()` can be called from any context; it only
    // touches the current task's plug in task context.
    unsafe { bindings::blk_time_get_ns() }
}

/// The tick count in nanoseconds (`jiffies64_to_nsecs(get_jiffies_64())`):
/// the time mq-deadline's deadlines use (`jiffies`).
#[inline]
pub fn jiffies_ns() -> u64 {
    const NSEC_PER_SEC: u64 = bindings::NSEC_PER_SEC as u64;
    const HZ: u64 = bindings::HZ as u64;
    if cfg!(CONFIG_64BIT) && NSEC_PER_SEC % HZ == 0 {
        // What `get_jiffies_64()` and `jiffies64_to_nsecs()` come to on
        // 64-bit machines with a whole number of nanoseconds per tick: one
        // load and one multiplication, where the calls were two per
        // timestamp, and mq-deadline reads `jiffies` once per request.
        // SAFETY: `jiffies` is a live static, updated by the timer tick; a
        // volatile load of it is `READ_ONCE()`, and an aligned word cannot
        // tear.
        let j = unsafe { ptr::read_volatile(&raw const bindings::jiffies) };
        // Lossless: `unsigned long` is 64 bits wide here.
        (j as u64).wrapping_mul(NSEC_PER_SEC / HZ)
    } else {
        // SAFETY: Both can be called from any context.
        unsafe { bindings::jiffies64_to_nsecs(bindings::get_jiffies_64()) }
    }
}

// ---- the lock ----------------------------------------------------------

mod sealed {
    pub trait Sealed {}
}

/// The contexts an elevator's lock is taken from, chosen by
/// [`Elevator::LockContext`]: [`IrqSafe`] or [`ProcessContext`].
pub trait LockContext: sealed::Sealed {
    /// How the spinlock is taken.
    type Backend: Backend<State = bindings::spinlock_t>;
    /// Whether the lock may be taken in interrupt context.
    const IRQ: bool;

    /// The lockdep name and class of the lock. One per lock context, not
    /// per elevator: a static in the generic `init_sched` would be a single
    /// class for every elevator (lockdep would then see one class taken
    /// both with and without interrupts disabled), and a name literal
    /// there would be copied into each module (lockdep warns about one
    /// key with several names).
    fn lock_class() -> (&'static CStr, &'static LockClassKey);
}

/// The elevator lock is taken with `spin_lock_irqsave()`, so that the
/// completion path may take it: [`LockOnDemand::lock`] in
/// [`Elevator::finish_request`], and [`Elevator::requeue_request`]. Needed
/// by [`Elevator::IO_CONTEXTS`] schedulers (`exit_icq` runs with
/// interrupts off). BFQ's choice.
pub struct IrqSafe;

/// The elevator lock is taken with plain `spin_lock()` and never in
/// interrupt context: [`Elevator::finish_request`] cannot take it, and a
/// scheduler with this choice may implement neither
/// [`Elevator::requeue_request`] nor [`Elevator::IO_CONTEXTS`] (a build
/// error says so). Saves disabling and restoring interrupts twice per
/// request. mq-deadline's choice.
pub struct ProcessContext;

impl sealed::Sealed for IrqSafe {}
impl sealed::Sealed for ProcessContext {}

impl LockContext for IrqSafe {
    type Backend = IrqSaveSpinLockBackend;
    const IRQ: bool = true;

    fn lock_class() -> (&'static CStr, &'static LockClassKey) {
        static NAME: &CStr = c_str!("elevator_data::lock(irqsafe)");
        (NAME, crate::static_lock_class!())
    }
}

impl LockContext for ProcessContext {
    type Backend = SpinLockBackend;
    const IRQ: bool = false;

    fn lock_class() -> (&'static CStr, &'static LockClassKey) {
        static NAME: &CStr = c_str!("elevator_data::lock");
        (NAME, crate::static_lock_class!())
    }
}

/// The lock type of an elevator's per-queue state.
type ElevatorLock<T> =
    Lock<<T as Elevator>::Locked, <<T as Elevator>::LockContext as LockContext>::Backend>;

// ---- views -------------------------------------------------------------

/// A request queue, as an elevator sees it (`struct request_queue`).
#[repr(transparent)]
pub struct Queue(Opaque<bindings::request_queue>);

impl Queue {
    /// # Safety
    ///
    /// `ptr` must point to a live request queue for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::request_queue) -> &'a Self {
        // SAFETY: `Queue` is a transparent wrapper; the caller guarantees
        // that `ptr` is valid for `'a`.
        unsafe { &*ptr.cast() }
    }

    fn as_ptr(&self) -> *mut bindings::request_queue {
        self.0.get()
    }

    /// The queue's `nr_requests` (scheduler tags per hardware queue).
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
    pub fn run_hw_queues_async(&self) {
        // SAFETY: The queue is live. `might_lock()` only tells lockdep
        // (nothing without it) that the lock may be taken here.
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
    unsafe fn from_raw<'a>(ptr: *mut bindings::blk_mq_hw_ctx) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's guarantee.
        unsafe { &*ptr.cast() }
    }

    fn as_ptr(&self) -> *mut bindings::blk_mq_hw_ctx {
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
pub struct OpFlags(u32);

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
        // `op_is_sync()` is true for every read: answer those without a call.
        if self.op() == ReqOp::Read {
            return true;
        }
        // SAFETY: Pure function of its argument.
        unsafe { bindings::op_is_sync(self.0) }
    }

    /// Whether data moves to the device (`op_is_write()`).
    #[inline]
    pub fn is_write(self) -> bool {
        self.0 & 1 != 0
    }
}

/// A bio being merged (`struct bio`).
#[repr(transparent)]
pub struct Bio(Opaque<bindings::bio>);

impl Bio {
    /// # Safety
    ///
    /// `ptr` must point to a live bio for `'a`.
    #[inline]
    unsafe fn from_raw<'a>(ptr: *mut bindings::bio) -> &'a Self {
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

/// Values of `rq->elv.priv[1]`, which the abstraction keeps for itself.
/// They are read and written with the elevator lock held.
const RQ_NOT_HELD: usize = 0;
/// The scheduler holds a [`Request`] handle for the request.
const RQ_HELD: usize = 1;
/// The request was merged into another one while the scheduler kept its
/// handle: it has no bio and must be freed, not dispatched.
const RQ_MERGED_AWAY: usize = 2;

/// A request, as a scheduler sees it (`struct request`).
///
/// Obtained by dereferencing a [`Request`] handle or as an argument of a
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
    unsafe fn from_raw<'a>(ptr: *mut bindings::request) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's guarantee.
        unsafe { &*ptr.cast() }
    }

    #[inline]
    fn as_ptr(&self) -> *mut bindings::request {
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

    /// The I/O priority (`req_get_ioprio()`).
    #[inline]
    pub fn ioprio(&self) -> u16 {
        // SAFETY: The request is live; `req_get_ioprio()` only reads it.
        unsafe { bindings::req_get_ioprio(self.as_ptr()) }
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
    fn queue_ptr(&self) -> *mut bindings::request_queue {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        unsafe { (*self.as_ptr()).q }
    }

    #[inline]
    fn held_state(&self) -> usize {
        // SAFETY: The request is live and the field stable (type
        // invariants).
        (unsafe { (*self.as_ptr()).elv.priv_[1] }) as usize
    }

    /// # Safety
    ///
    /// The elevator lock of the request's queue must be held.
    #[inline]
    unsafe fn set_held_state(&self, state: usize) {
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
/// handle exists (see the module documentation).
#[must_use = "a dropped request handle leaks the request"]
pub struct Request {
    ptr: NonNull<bindings::request>,
}

// SAFETY: A request may be handled on any CPU; the handle only gives
// access to fields that are stable or protected by the elevator lock.
unsafe impl Send for Request {}

impl Request {
    /// Gives up the handle without running `Drop`.
    #[inline]
    fn into_raw(self) -> *mut bindings::request {
        ManuallyDrop::new(self).ptr.as_ptr()
    }
}

impl Deref for Request {
    type Target = RequestRef;

    #[inline]
    fn deref(&self) -> &RequestRef {
        // SAFETY: By the type invariant the request is live while the handle
        // exists.
        unsafe { RequestRef::from_raw(self.ptr.as_ptr()) }
    }
}

impl Drop for Request {
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
    fn from_raw(kind: bindings::elv_merge) -> Option<Self> {
        match kind {
            bindings::elv_merge_ELEVATOR_FRONT_MERGE => Some(MergeKind::Front),
            bindings::elv_merge_ELEVATOR_BACK_MERGE => Some(MergeKind::Back),
            bindings::elv_merge_ELEVATOR_DISCARD_MERGE => Some(MergeKind::Discard),
            _ => None,
        }
    }
}

// ---- the trait ---------------------------------------------------------

/// An I/O scheduler.
///
/// `Self` is the per-queue state shared by the hooks that run without the
/// elevator lock; [`Elevator::Locked`] is the state behind it. See the
/// [module documentation](self) for locking and request ownership.
#[macros::vtable]
pub trait Elevator: Sized + Send + Sync + 'static {
    /// Per-queue state behind the elevator lock.
    type Locked: Send;

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
    fn dispatch_request(&self, locked: &mut Self::Locked, hctx: &HwQueue) -> Option<Request>;

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
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Whether requests wait in the scheduler. Called without the lock, from
    /// any context. If not implemented, the abstraction answers from the
    /// number of request handles the scheduler holds, less the number of
    /// CPUs already in [`Elevator::dispatch_request`]: blk-mq asks before
    /// every dispatch, and a CPU that went on to wait for the lock while
    /// another took the last request would only get nothing.
    fn has_work(&self, _hctx: &HwQueue) -> bool {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A request is being allocated (`prepare_request`), before it is
    /// inserted. Called without the lock.
    fn prepare_request(&self, _rq: &RequestRef) {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A request that was allocated with this scheduler attached is being
    /// freed (`finish_request`): it completed, was merged away, or bypassed
    /// the scheduler. Called without the lock, possibly in hard-IRQ
    /// context; `lock` takes the elevator lock if the scheduler needs it.
    fn finish_request(&self, _rq: &RequestRef, _lock: LockOnDemand<'_, Self>) {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A dispatched request completed on the device at `now_ns`
    /// (`completed_request`), the [`blk_time_get_ns`] time the block layer
    /// read for its own accounting; [`Elevator::finish_request`] follows
    /// for the request. Called without the lock, in the completion path
    /// (possibly hard-IRQ context).
    fn completed_request(&self, _rq: &RequestRef, _now_ns: u64) {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The driver handed a dispatched request back (`requeue_request`); it
    /// will be inserted again. May be called in interrupt context.
    fn requeue_request(&self, _locked: &mut Self::Locked, _rq: &RequestRef) {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A bio is about to become a request: try to merge it into a queued
    /// request instead, usually by calling [`BioMerge::try_merge`]. Returns
    /// whether the bio was merged.
    fn bio_merge(&self, _locked: &mut Self::Locked, _merge: BioMerge<'_, Self>) -> bool {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
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
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A bio was merged into the held request `rq`, which may have moved
    /// (front merge) or grown.
    fn request_merged(&self, _locked: &mut Self::Locked, _rq: &RequestRef, _kind: MergeKind) {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
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
    ) -> Option<Request> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// A request with operation and flags `opf` is being allocated: the
    /// scheduler-tag depth it may use (`shallow_depth`), or `None` for no
    /// limit. Called without the lock. The depth takes effect only down to
    /// the minimum set with [`DepthUpdate::set_min_shallow_depth`].
    fn limit_depth(&self, _opf: OpFlags) -> Option<u32> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// The scheduler-tag depth of a hardware queue was set: once per
    /// hardware queue when the scheduler is attached (`init_hctx`), and
    /// whenever `nr_requests` changes (`depth_updated`). The queue is frozen
    /// and holds no request.
    fn depth_updated(&self, _locked: &mut Self::Locked, _update: &DepthUpdate<'_>) {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
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
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Reads tunable `index` of [`Elevator::TUNABLES`].
    fn tunable_show(&self, _locked: &Self::Locked, _index: usize) -> Result<i64> {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }

    /// Writes tunable `index` of [`Elevator::TUNABLES`] from the text
    /// written to its file (with its trailing newline, if any). On error the
    /// value must stay unchanged; the write fails with the error.
    fn tunable_store(&self, _locked: &mut Self::Locked, _index: usize, _text: &str) -> Result {
        crate::build_error(crate::error::VTABLE_DEFAULT_ERROR)
    }
}

// ---- per-queue data ----------------------------------------------------

/// What the merge hooks need while a merge the abstraction started runs.
struct MergeCtx<T: Elevator> {
    /// The locked state, lent by the caller of `try_merge` for its duration.
    locked: *mut T::Locked,
    /// The request being inserted ([`Insertion::try_merge`]), or null.
    incoming: *mut bindings::request,
}

/// The elevator lock, for a hook that runs without it and may need it
/// ([`Elevator::finish_request`]).
pub struct LockOnDemand<'a, T: Elevator> {
    lock: &'a ElevatorLock<T>,
    rerun: &'a Opaque<bindings::hrtimer>,
}

impl<T: Elevator> LockOnDemand<'_, T> {
    /// Runs the hardware queues at `at_ns`, as an answer of
    /// [`Elevator::rerun_at`] does: for a scheduler that starts idling when
    /// a request completes (C BFQ arms its `idle_slice_timer` there).
    pub fn rerun_at(&self, at_ns: u64) {
        arm_rerun(self.rerun, at_ns);
    }
}

/// The queue's rerun timer, for a hook that runs where the hardware queues
/// cannot be run directly ([`Elevator::exit_icq`]). The timer's callback
/// runs them in hard-IRQ context, holding no lock, as
/// [`Elevator::rerun_at`] answers are served.
pub struct Rerun<'a> {
    timer: &'a Opaque<bindings::hrtimer>,
}

impl Rerun<'_> {
    /// Runs the hardware queues as soon as the timer can fire, replacing
    /// any time it was armed for.
    pub fn now(&self) {
        arm_rerun(self.timer, ktime_get_ns());
    }
}

/// Arms a queue's rerun timer for `at_ns` (`CLOCK_MONOTONIC`).
fn arm_rerun(timer: &Opaque<bindings::hrtimer>, at_ns: u64) {
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

impl<T: Elevator<LockContext = IrqSafe>> LockOnDemand<'_, T> {
    /// Takes the elevator lock (`spin_lock_irqsave()`); it is released when
    /// the guard is dropped.
    pub fn lock(&self) -> Guard<'_, T::Locked, IrqSaveSpinLockBackend> {
        self.lock.lock()
    }
}

/// The per-queue data behind `elevator_queue->elevator_data`.
#[pin_data]
struct ElevatorData<T: Elevator> {
    shared: T,
    #[pin]
    lock: ElevatorLock<T>,
    /// Only accessed with `lock` held.
    merge: UnsafeCell<MergeCtx<T>>,
    /// Number of [`Request`] handles the scheduler holds. Written only with
    /// `lock` held (so a load and a store, no atomic read-modify-write);
    /// read without it by `has_work` and `bio_merge`.
    held: AtomicUsize,
    /// Number of CPUs in `dispatch_request`, counted from before they take
    /// the lock until they release it. Each will look at the scheduler's
    /// requests under the lock, and each one that gets a request comes back
    /// (blk-mq asks `has_work` again after every request), so `has_work`
    /// says yes only if there are more held requests than that: another
    /// CPU would wait for the lock only to find them gone.
    dispatching: AtomicUsize,
    queue: *mut bindings::request_queue,
    /// Runs the hardware queues at the time [`Elevator::rerun_at`] asked
    /// for. Set up in `init_sched`, cancelled in `exit_sched`.
    #[pin]
    rerun: Opaque<bindings::hrtimer>,
}

impl<T: Elevator> ElevatorData<T> {
    /// # Safety
    ///
    /// `q` must be live with this elevator type attached (`q->elevator` set
    /// by [`Vtable::init_sched`] and not yet exited).
    unsafe fn from_queue<'a>(q: *mut bindings::request_queue) -> &'a Self {
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
    unsafe fn with_merge_ctx<R>(
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
    unsafe fn merge_ctx(&self) -> Option<(&mut T::Locked, *mut bindings::request)> {
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
    unsafe fn unhash(&self, rq: *mut bindings::request) {
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
    unsafe fn released(&self, rq: &RequestRef) {
        // SAFETY: Lock held (caller).
        unsafe { self.unhash(rq.as_ptr()) };
        // Writers hold the lock: no read-modify-write needed.
        let held = self.held.load(Ordering::Relaxed);
        self.held.store(held.wrapping_sub(1), Ordering::Relaxed);
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

/// `list_empty()`, without a call (one load).
///
/// # Safety
///
/// `head` must point to an initialised list head, valid for reads.
#[inline]
unsafe fn list_is_empty(head: *const bindings::list_head) -> bool {
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
struct FreeList {
    head: bindings::list_head,
}

impl FreeList {
    /// A list whose head is not yet initialised; it must not move once
    /// [`FreeList::head`] has been called.
    #[inline]
    fn new() -> Self {
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
    unsafe fn head(this: *mut FreeList) -> *mut bindings::list_head {
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

    /// Takes merged-away requests whose handle is still held off the list
    /// (they are freed when their handle is dispatched).
    ///
    /// # Safety
    ///
    /// The elevator lock must be held; `this` is valid and did not move.
    #[inline]
    unsafe fn keep_held(this: *mut FreeList) {
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
                let rq = RequestRef::from_raw(container_of!(
                    pos,
                    bindings::request,
                    __bindgen_anon_1.queuelist
                ) as *mut bindings::request);
                if rq.held_state() != RQ_NOT_HELD {
                    bindings::list_del_init(pos);
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
    unsafe fn free_all(this: *mut FreeList) {
        // SAFETY: `this` is valid (safety requirements).
        if !unsafe { Self::initialised(this) } {
            return;
        }
        // SAFETY: The list is initialised; see the safety requirements.
        unsafe {
            let head = &raw mut (*this).head;
            while !list_is_empty(head) {
                let pos = (*head).next;
                bindings::list_del_init(pos);
                bindings::blk_mq_free_request(container_of!(
                    pos,
                    bindings::request,
                    __bindgen_anon_1.queuelist
                ) as *mut bindings::request);
            }
        }
    }
}

// ---- hook arguments -----------------------------------------------------

/// The requests handed to [`Elevator::insert_requests`], as owned handles.
pub struct Insertion<'a, T: Elevator> {
    data: &'a ElevatorData<T>,
    /// The caller's list, linked through `queuelist`.
    list: *mut bindings::list_head,
    /// Requests merged away, freed after the lock is dropped.
    free: *mut FreeList,
}

impl<T: Elevator> Iterator for Insertion<'_, T> {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        // SAFETY: `list` is the list `insert_requests` was given, valid for
        // the call; the requests on it now belong to the scheduler. The
        // elevator lock is held while an `Insertion` exists.
        unsafe {
            if list_is_empty(self.list) {
                return None;
            }
            let pos = (*self.list).next;
            bindings::list_del_init(pos);
            let rq = container_of!(pos, bindings::request, __bindgen_anon_1.queuelist)
                as *mut bindings::request;
            RequestRef::from_raw(rq).set_held_state(RQ_HELD);
            // Writers hold the lock: no read-modify-write needed.
            let held = self.data.held.load(Ordering::Relaxed);
            self.data
                .held
                .store(held.wrapping_add(1), Ordering::Relaxed);
            // INVARIANT: The request was just taken off the insertion list,
            // so this is its only handle, and it is held.
            Some(Request {
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
    pub fn try_merge(&mut self, locked: &mut T::Locked, rq: Request) -> Result<(), Request> {
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
    pub fn cancel_rerun(&self) {
        // SAFETY: The timer was initialised in `init_sched` and is live
        // until `exit_sched`; trying to cancel it never waits, so it may be
        // called with the lock held and from any context.
        unsafe { bindings::hrtimer_try_to_cancel(self.data.rerun.get()) };
    }

    /// Makes `rq` a back-merge candidate (`elv_rqhash_add()`, and the
    /// one-hit cache `last_merge` if empty), as mq-deadline does for sorted
    /// requests. Does nothing for requests that cannot merge or are already
    /// candidates. The abstraction removes it when it leaves the scheduler.
    pub fn add_merge_candidate(&mut self, rq: &Request) {
        let p = rq.ptr.as_ptr();
        if rq.queue_ptr() != self.data.queue {
            return;
        }
        // SAFETY: The lock is held while an `Insertion` exists; it protects
        // the hash, `last_merge` and `rq_flags & RQF_HASHED`. `p` is a held
        // request of this queue.
        unsafe {
            if (*p).rq_flags & bindings::RQF_HASHED != 0 || !bindings::rq_mergeable(p) {
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
    data: &'a ElevatorData<T>,
    bio: &'a Bio,
    nr_segs: c_uint,
    /// The request `blk_mq_sched_try_merge()` merged away, to free.
    free: &'a mut *mut bindings::request,
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

/// A scheduler-tag depth change, given to [`Elevator::depth_updated`].
pub struct DepthUpdate<'a> {
    hctx: &'a HwQueue,
}

impl DepthUpdate<'_> {
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

// ---- the C vtable --------------------------------------------------------

struct Vtable<T: Elevator>(PhantomData<T>);

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

    const OPS: bindings::elevator_mq_ops = bindings::elevator_mq_ops {
        init_sched: {
            #[allow(clippy::let_unit_value)]
            let () = Self::LOCK_CONTEXT_OK;
            Some(Self::init_sched)
        },
        exit_sched: Some(Self::exit_sched),
        init_hctx: if T::HAS_DEPTH_UPDATED {
            Some(Self::init_hctx)
        } else {
            None
        },
        exit_hctx: None,
        depth_updated: if T::HAS_DEPTH_UPDATED {
            Some(Self::depth_updated)
        } else {
            None
        },
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
    };

    const TUNABLE_FNS: [(ShowFn, StoreFn); MAX_TUNABLES] =
        tunable_fns!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);

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
        let queue = unsafe { Queue::from_raw(q) };
        let (lock_name, lock_key) = T::LockContext::lock_class();
        let data = T::init(queue).and_then(|(shared, locked)| {
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
                    // SAFETY: `slot` is the timer's final, pinned place;
                    // `hrtimer_init()` initialises it completely.
                    rerun <- unsafe {
                        Opaque::ffi_init(|slot: *mut bindings::hrtimer| {
                            bindings::hrtimer_init(
                                slot,
                                bindings::CLOCK_MONOTONIC as bindings::clockid_t,
                                bindings::hrtimer_mode_HRTIMER_MODE_ABS,
                            );
                            (*slot).function = Some(Self::rerun_timer);
                        })
                    },
                }),
                GFP_KERNEL,
            )
        });
        match data {
            Ok(data) => {
                // SAFETY: The data is never moved out of the box: it is
                // turned back into a pinned box in `exit_sched` and dropped.
                let data = KBox::into_raw(unsafe { Pin::into_inner_unchecked(data) });
                // SAFETY: `eq` was just allocated for `q`; like
                // `dd_init_sched()`, store the data, make the scheduler a
                // single-queue one and attach it.
                unsafe {
                    (*eq).elevator_data = data.cast();
                    bindings::blk_queue_flag_set(bindings::QUEUE_FLAG_SQ_SCHED as c_uint, q);
                    (*q).elevator = eq;
                }
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
        let data = unsafe { &*container_of!(timer, ElevatorData<T>, rerun) };
        // SAFETY: The queue is live while its elevator is; with `async` set
        // the function only queues work, so any context will do (as
        // `bfq_idle_slice_timer()` does).
        unsafe { bindings::blk_mq_run_hw_queues(data.queue, true) };
        bindings::hrtimer_restart_HRTIMER_NORESTART
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
            // SAFETY: The lock is held; `free` is valid and did not move.
            unsafe { FreeList::keep_held(free) };
        }
        // SAFETY: The lock is dropped; `free` did not move and holds
        // merged-away requests whose handles were given back.
        unsafe { FreeList::free_all(free) };
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
        // SAFETY: The lock is dropped; `husks` did not move, and the
        // husks' handles were given back.
        unsafe { FreeList::free_all(husks) };
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
        let mut free: *mut bindings::request = ptr::null_mut();
        let merged = {
            let mut guard = data.lock.lock();
            let merge = BioMerge {
                data,
                // SAFETY: The bio is live for the call.
                bio: unsafe { Bio::from_raw(bio) },
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
        if let Some(depth) = T::limit_depth(&data.shared, OpFlags(opf)) {
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

// ---- registration ------------------------------------------------------

/// A registered elevator type: `elv_register()` on creation,
/// `elv_unregister()` on drop. Keep it in the module's state, so the type
/// is registered exactly while the module is loaded. The elevator's owner
/// is the module: while a queue uses the scheduler, the block layer holds a
/// reference on the module and it cannot be unloaded.
pub struct Registration<T: Elevator> {
    /// Linked into the block layer's list of elevators: never moved out of
    /// its box while registered.
    ty: KBox<Opaque<bindings::elevator_type>>,
    /// The sysfs attributes `ty` points to, NUL-terminated.
    _attrs: KVec<bindings::elv_fs_entry>,
    _p: PhantomData<T>,
}

// SAFETY: The registration is only used to unregister, from any thread.
unsafe impl<T: Elevator> Send for Registration<T> {}
// SAFETY: `&Registration` gives no access to anything.
unsafe impl<T: Elevator> Sync for Registration<T> {}

impl<T: Elevator> Registration<T> {
    /// Registers elevator `T`, owned by `module`.
    pub fn new(module: &'static ThisModule) -> Result<Self> {
        if T::NAME.len() >= ELV_NAME_MAX || T::ALIAS.is_some_and(|a| a.len() >= ELV_NAME_MAX) {
            return Err(EINVAL);
        }
        if T::HAS_EXIT_ICQ && !T::IO_CONTEXTS {
            return Err(EINVAL);
        }
        if T::TUNABLES.len() > MAX_TUNABLES
            || !(T::TUNABLES.is_empty() || (T::HAS_TUNABLE_SHOW && T::HAS_TUNABLE_STORE))
        {
            return Err(EINVAL);
        }
        let mut attrs = KVec::with_capacity(T::TUNABLES.len() + 1, GFP_KERNEL)?;
        for (i, name) in T::TUNABLES.iter().enumerate() {
            let (show, store) = Vtable::<T>::TUNABLE_FNS[i];
            // SAFETY: All-zeroes is a valid `elv_fs_entry` (null pointers,
            // `None` functions).
            let mut entry: bindings::elv_fs_entry = unsafe { core::mem::zeroed() };
            entry.attr.name = name.as_char_ptr();
            entry.attr.mode = 0o644;
            #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
            {
                // `sysfs_attr_init()`: attributes not in static storage
                // need a static lockdep key.
                entry.attr.key = crate::static_lock_class!().as_ptr();
            }
            entry.show = Some(show);
            entry.store = Some(store);
            attrs.push(entry, GFP_KERNEL)?;
        }
        // SAFETY: As above: the zeroed terminator (`__ATTR_NULL`).
        attrs.push(unsafe { core::mem::zeroed() }, GFP_KERNEL)?;

        // SAFETY: All-zeroes is a valid `elevator_type` (null pointers,
        // `None` functions, empty list head, which `elv_register()` links).
        let mut ty: bindings::elevator_type = unsafe { core::mem::zeroed() };
        ty.ops = Vtable::<T>::OPS;
        ty.elevator_name = T::NAME.as_char_ptr();
        ty.elevator_alias = T::ALIAS.map_or(ptr::null(), |a| a.as_char_ptr());
        ty.elevator_owner = module.as_ptr();
        if T::IO_CONTEXTS {
            // `elv_register()` makes the icq cache from these.
            ty.icq_size = icq::ICQ_SIZE;
            ty.icq_align = icq::ICQ_ALIGN;
        }
        ty.elevator_attrs = if T::TUNABLES.is_empty() {
            ptr::null_mut()
        } else {
            attrs.as_mut_ptr()
        };
        let ty = KBox::new(Opaque::new(ty), GFP_KERNEL)?;
        // SAFETY: `ty` is fully initialised and lives in a box that stays
        // put until `drop` unregisters it; its attributes live in `attrs`,
        // whose buffer does not move either (never pushed to again).
        to_result(unsafe { bindings::elv_register(ty.get()) })?;
        Ok(Registration {
            ty,
            _attrs: attrs,
            _p: PhantomData,
        })
    }
}

impl<T: Elevator> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered in `new`. The module owns the type, so no
        // queue uses it any more when the module (and this) goes away.
        unsafe { bindings::elv_unregister(self.ty.get()) };
    }
}
