// SPDX-License-Identifier: GPL-2.0

//! CFQ: Completely Fair Queueing, after Linux's `block/cfq-iosched.c`.
//!
//! Source: the last CFQ, of Linux 4.20 (`block/cfq-iosched.c`, removed in
//! 5.0 with the legacy block layer), read as carried unchanged in
//! `raspberrypi/linux` (commit `0cf56c159d64e14fe5c68b5b2a245f4c266ffa13`,
//! the nanosecond-based version with the `_us` tunables and the hrtimer
//! idle timer). The behaviour is ported, not the code, without cgroups:
//! every queue belongs to the one root group.
//!
//! Queues. Each process (issuer) has a sync queue for its synchronous
//! requests (reads, sync writes); asynchronous requests go to one of 17
//! async queues shared by every process: one per priority level of the
//! real-time and best-effort classes, and one for the idle class. A
//! queue's requests wait in a sort tree by sector and a FIFO with each
//! request's deadline (`fifo_expire_sync` / `fifo_expire_async` after its
//! arrival); the queue serves them in sector order from the last position
//! served, with backward seeks of up to `back_seek_max` KiB allowed at
//! `back_seek_penalty` times their distance (`cfq_choose_req`), and once
//! per slice the oldest request first if its deadline passed
//! (`cfq_check_fifo`).
//!
//! Service trees. Busy queues wait on seven service trees: per class
//! (real time, best effort) and workload type (async, sync-noidle, sync),
//! plus one for the idle class, each sorted by a key of time: a queue
//! joins at now plus an offset that favours higher priorities, less the
//! slice it had left when it was last preempted or idled out
//! (`cfq_service_tree_add`); idle-class queues join 200 ms after the last.
//! A sync queue is of the sync workload while its idle window is on, else
//! sync-noidle. The class served is the highest with busy queues; within
//! it a workload type is served for a workload slice, the share of
//! `target_latency` its busy queues are of the class's (async workloads
//! scaled down by `slice_async / slice_sync`, sync ones at least
//! `2 * slice_idle`), then the type whose first queue has the lowest key
//! (`choose_wl_class_and_type`). The queue served is that tree's first.
//!
//! Slices. A queue in service keeps the device for its time slice:
//! `slice_sync` or `slice_async`, scaled by priority level (level 4 the
//! base, each level a fifth of it more or less), and with `low_latency`
//! cut so that the class's busy queues fit into `target_latency` (no
//! shorter than its share of `2 * slice_idle`). The slice starts at the
//! queue's first completion. Up to `quantum / 2` requests of the queue in
//! service are in the device at once, up to `quantum` early in its slice,
//! without limit when it is the only (sync) busy queue; async queues
//! wait for sync requests in the device to complete and, with
//! `low_latency`, ramp up from one request per `slice_sync` since a sync
//! request was last delayed; an async queue's slice also ends after
//! `2 * slice_async_rq * (8 - level)` requests, an idle-class queue's
//! after each request, when other queues are busy (`cfq_may_dispatch`,
//! `cfq_dispatch_requests`).
//!
//! Idling. When the queue in service runs out of requests it keeps the
//! device, waiting up to `slice_idle` for its next request, if it is sync
//! and its idle window is on, or if it is the last queue on its service
//! tree (so sync-noidle queues, together, are idled for) and that tree's
//! think time is short (`cfq_should_idle`); else, with `group_idle`, while
//! it is the only busy queue and the group's think time is short. A
//! queue's idle window closes when its process exited, when it is seeky
//! (more than 4 of its last 32 requests more than 800 sectors from the
//! previous one, or, on a non-rotational device, smaller than 32 KiB)
//! unless it keeps 4 or more requests queued, or when its think time
//! (a decaying mean of the time from a completion to the next request,
//! valid after enough samples) exceeds `slice_idle`. It does not idle
//! when the think time exceeds what is left of the slice, nor on a
//! non-rotational queueing device (which also starts with `slice_idle`
//! 0). A queue whose slice ends while it is the only busy queue waits
//! for its next request past the slice end (`wait_busy`).
//!
//! Preemption. A newly busy queue takes the device at once, the queue in
//! service keeping what was left of its slice for its next turn, when:
//! the queue in service is of the idle class; the request is sync and the
//! queue in service async; the queue in service used its slice; the new
//! queue is real time and the one in service is not; both are
//! sync-noidle and the one in service is empty; the one in service is
//! empty and would not be idled for; or it is being idled for and the
//! request lies within 8192 sectors of the last one served. An idle-class
//! queue never preempts, and nothing but real time preempts real time
//! (`cfq_should_preempt`). The preempting queue goes a second ahead of the
//! first queue of its tree.
//!
//! Starvation. Lower classes wait while a higher one is busy, without
//! bound. Within a class, on a rotational device with idling on, with
//! sync queues of sequential readers (at most one seeky) and at most one
//! async queue (async writers all of one priority level), all thinking
//! less than `slice_idle` between requests, each queue has a turn within
//! a round `T = (Q + 1) (180 ms + slice_idle + 140 ms + 2 (quantum + D)
//! t) + target_latency` for `Q` queues of at most `D` requests each on a
//! device taking `t` per request (180 ms is the longest sync slice,
//! 140 ms per queue the most the tree offsets put a higher level ahead).
//! A sync request waits at most `2 T`; an async one at most `(D + 1) T`,
//! as an async queue that sync requests keep preempting sends only its
//! expired oldest request per turn. The property tests check these
//! bounds with the default tunables. There is no bound where queues keep
//! preempting one another: two seeky sync queues, a seeky sync queue and
//! an async one, or two async queues (of two levels), each sending while
//! the other is in service and empty, or any queues with idling off
//! (`slice_idle` 0, the default on non-rotational devices). An empty
//! queue in service that would not be idled for (an async queue never
//! is) yields to any new request of its class; the preempting queue goes
//! a second ahead of its tree's first, and the preempted one, empty,
//! leaves the tree, so the queues that take no part wait as long as that
//! goes on, as the same rules let them in C.
//!
//! Where blk-mq makes this differ from the single-queue original:
//!
//! - a dispatch hands one request to the driver; C moved it to the
//!   request queue's dispatch list, sorted there by sector
//!   (`elv_dispatch_sort`), from which the driver took it;
//! - requests inserted at head (requeues, flush sequences, passthrough)
//!   are sent before all others, as C's dispatch list had them at its
//!   head without the elevator; a requeued request stays counted as its
//!   queue's (C's `cfq_deactivate_request`), other at-head requests are
//!   not CFQ's;
//! - a request that arrives for the queue being idled for ends the idling
//!   at once; C waited for a second request or the timer when the first
//!   was no larger than a page and no other queue was busy, so that the
//!   block layer could merge more into it, which blk-mq does before the
//!   request reaches the scheduler (plugging);
//! - C's drivers ran the queue after every completion; here a completion
//!   asks for a run only when the last dispatch held queued requests back
//!   ([`Cfq::after_completion`]), and the end of an idle slice is the
//!   caller's timer, at which it runs the queue. The idle timer's body
//!   (`cfq_idle_slice_timer`) runs at the first entry point at or after
//!   its deadline, as of the deadline;
//! - the front-merge candidate is any queued request at the bio's end
//!   sector with its operation, priority and sync flag (C: only in the
//!   submitting process's queue, which `request_merge` does not name);
//! - there is no request allocation hook (`cfq_may_queue`), so no
//!   `must_alloc_slice`, and no depth limits.
//!
//! Left out, or deliberately different:
//!
//! - no cgroups: one group, whose weight and virtual disk time do not
//!   matter. `group_idle` acts on that group: it idles while the queue in
//!   service is the only busy one. Its default is C's 8 ms, which kernels
//!   built with `CONFIG_CFQ_GROUP_IOSCHED` kept (without it C set it to 0);
//! - no close cooperators (`cfq_close_cooperator`, the per-priority
//!   position trees) and no queue merging or splitting: an empty queue in
//!   service is never expired in favour of another process's queue
//!   working close by, and it is idled for instead;
//! - no `REQ_PRIO` (metadata) boost or preemption, and sync writes count
//!   as `REQ_IDLE` ones (idled for): the requests' flags beyond the sync
//!   flag are not passed to the policy;
//! - `iops_mode` only changed the group's charge, which does not matter
//!   with one group;
//! - when a process exits while its async queue is in service, that
//!   shared queue is not expired (C expired it); its sync queue is;
//! - a sync queue's priority is that of its latest request (the block
//!   layer gives each request its issuer's I/O priority, from its nice
//!   level when none was set), taken at insertion (C: from the I/O
//!   context when it changes, at the next insertion);
//! - times are nanoseconds passed in; what C counted in jiffies
//!   (the shortest workload slice, `CFQ_MIN_TT`, and the one-jiffy
//!   margins) assumes `HZ = 250`, Debian's;
//! - sysfs writes that are not numbers or are out of range fail and keep
//!   the value (C parsed leniently and clamped). Accepted ranges,
//!   inclusive, all at most 2^32 - 1 (C's `unsigned int`):
//!
//!   | tunable | unit | range | default |
//!   |---|---|---|---|
//!   | `quantum` | requests | 1 .. | 8 |
//!   | `fifo_expire_sync` | ms | 1 .. | 125 |
//!   | `fifo_expire_async` | ms | 1 .. | 250 |
//!   | `back_seek_max` | KiB | 0 .. | 16384 |
//!   | `back_seek_penalty` | factor | 1 .. | 2 |
//!   | `slice_sync`, `slice_sync_us` | ms, µs | 1 .. | 100 ms |
//!   | `slice_async`, `slice_async_us` | ms, µs | 1 .. | 40 ms |
//!   | `slice_async_rq` | requests | 1 .. | 2 |
//!   | `slice_idle`, `slice_idle_us` | ms, µs | 0 .. | 8 ms (0 when non-rotational) |
//!   | `group_idle`, `group_idle_us` | ms, µs | 0 .. | 8 ms |
//!   | `low_latency` | bool | 0 ..= 1 | 1 |
//!   | `target_latency`, `target_latency_us` | ms, µs | 1 .. | 300 ms |
//!
//!   Values parse as `kstrtoint(buf, 0, ...)` does (decimal, `0x` hex,
//!   `0` octal), with at most one trailing newline.
//!
//! Using it from a kernel module:
//!
//! - `Cfq::new(requests, queues)` at `init_sched` with
//!   [`Cfq::queue_slots`]`(issuers)` queue slots, then
//!   [`Cfq::set_nonrotational`] with `blk_queue_nonrot()`.
//! - Give each I/O context an issuer id from `0..issuers - 1` whose
//!   [`Cfq::issuer_is_free`] holds, keep the last id as the shared queue
//!   of contexts that found no free slot, and call [`Cfq::issuer_exit`]
//!   from `exit_icq`; the id may be handed out again once
//!   `issuer_is_free` says so.
//! - [`Dispatch::IdleUntil`] means "arm a timer and run the queue then
//!   (or when a request arrives)"; [`Cfq::after_completion`] says what a
//!   completion calls for.
//!
//! Storage is handed in: `n` [`ReqSlot`]s (tags `0..n`) and
//! [`Cfq::queue_slots`]`(m)` [`QueueSlot`]s for `m` issuers; nothing
//! allocates. Every operation is O(log n) in expectation (the request
//! sort trees and the service trees are treaps), except that a queue's
//! release and the invariant checks walk what they own.
//!
//! The code: `queue` (a queue's requests, their order, merges, the merge
//! hash), `service` (service trees, workloads and slices), `idle` (think
//! times, seekiness, idle windows and the idle timer), `dispatch`
//! (choosing the queue and its request, expiry, preemption), `hooks` (the
//! entry points), `tunables` and `invariants`.
//!
//! [`Dispatch::IdleUntil`]: super::types::Dispatch::IdleUntil

mod dispatch;
mod hooks;
mod idle;
#[cfg(any(test, debug_assertions, feature = "invariants"))]
mod invariants;
mod queue;
mod service;
mod tunables;

use super::intrusive::{List, ListLinks, ListNode, TreeLinks, TreeNode, NIL};
use super::types::{
    Dispatch, IoPrio, IssuerId, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector,
    SetupError, Tag, TunableError, NSEC_PER_MSEC, NSEC_PER_USEC,
};
pub(crate) use tunables::TUNABLE_NAMES;

const NSEC_PER_SEC: Nanos = 1_000_000_000;
/// A jiffy at `HZ = 250`.
const JIFFY: Nanos = 4 * NSEC_PER_MSEC;
/// `CFQ_MIN_TT`: the shortest workload slice, two jiffies.
const MIN_TT: Nanos = 2 * JIFFY;
/// `CFQ_IDLE_DELAY`: idle-class queues join their tree this long after
/// its last queue.
const IDLE_DELAY: i64 = (NSEC_PER_SEC / 5) as i64;
/// `CFQ_SLICE_SCALE`: each priority level changes the slice by a fifth.
const SLICE_SCALE: u64 = 5;
/// `CFQ_HW_QUEUE_MIN`: requests in the driver that show queueing.
const HW_QUEUE_MIN: u32 = 5;
/// `CFQQ_SEEK_THR`: a request farther than this from the previous one is
/// a seek, in sectors.
const SEEK_THR: Sector = 8 * 100;
/// `CFQQ_CLOSE_THR`: a request this close to the last position served is
/// as good as the queue in service's own, in sectors.
const CLOSE_THR: Sector = 8 * 1024;
/// `CFQQ_SECT_THR_NONROT`: on a non-rotational device, smaller requests
/// count as seeky, in sectors.
const SECT_THR_NONROT: u32 = 2 * 32;
/// `cfq_hist_divisor`.
const HIST_DIVISOR: u32 = 4;
/// A think time is known after this many (decayed) samples.
const TTIME_VALID: u64 = 80;
/// `cfq_update_hw_tag` decides after this many samples.
const HW_TAG_SAMPLES: u32 = 50;

const DEFAULT_QUANTUM: u32 = 8;
const DEFAULT_FIFO_EXPIRE_SYNC: Nanos = NSEC_PER_SEC / 8;
const DEFAULT_FIFO_EXPIRE_ASYNC: Nanos = NSEC_PER_SEC / 4;
const DEFAULT_BACK_MAX_KIB: u64 = 16 * 1024;
const DEFAULT_BACK_PENALTY: u64 = 2;
const DEFAULT_SLICE_SYNC: Nanos = NSEC_PER_SEC / 10;
const DEFAULT_SLICE_ASYNC: Nanos = NSEC_PER_SEC / 25;
const DEFAULT_SLICE_ASYNC_RQ: u32 = 2;
const DEFAULT_SLICE_IDLE: Nanos = NSEC_PER_SEC / 125;
const DEFAULT_GROUP_IDLE: Nanos = NSEC_PER_SEC / 125;
const DEFAULT_TARGET_LATENCY: Nanos = NSEC_PER_SEC * 3 / 10;

/// Async queues: real time levels 0..7, best effort levels 0..7, idle.
pub const ASYNC_QUEUES: usize = 17;

/// A time as a service-tree key (keys go a second before a time, and
/// times past `i64::MAX` are not met in practice).
#[inline]
fn time_key(t: Nanos) -> i64 {
    t.min(i64::MAX as u64) as i64
}

/// Workload types, in the order `cfq_choose_wl_type` looks at them.
const ASYNC_WL: usize = 0;
const SYNC_NOIDLE_WL: usize = 1;
const SYNC_WL: usize = 2;
/// Service trees: real time and best effort by workload type, then idle.
const TREES: usize = 7;
const IDLE_TREE: usize = 6;
/// A queue on no service tree.
const NO_TREE: u8 = u8::MAX;

/// A workload type, as [`Cfq::serving`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Async queues.
    Async,
    /// Sync queues not idled for one by one (seeky, or thinking long),
    /// idled for as a group.
    SyncNoIdle,
    /// Sync queues with their idle window on.
    Sync,
}

impl Workload {
    const fn from_index(i: usize) -> Self {
        match i {
            ASYNC_WL => Workload::Async,
            SYNC_NOIDLE_WL => Workload::SyncNoIdle,
            _ => Workload::Sync,
        }
    }
}

/// A queue, as the policy's introspection names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueId {
    /// An issuer's sync queue.
    Sync(IssuerId),
    /// The async queue shared by the issuers of this priority (the idle
    /// class has one, at level 7).
    Async(IoPrio),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RqState {
    Free,
    Queued,
    AtHead,
    InFlight,
    /// Handed back by the driver, to be inserted again.
    Requeued,
}

/// Storage for one request tag. Opaque; create with `ReqSlot::default()`.
#[derive(Clone, Copy, Debug)]
pub struct ReqSlot {
    sector: Sector,
    sectors: u32,
    op: Op,
    sync: bool,
    prio: IoPrio,
    /// The issuer (process) whose request it is.
    issuer: u32,
    /// The queue that owns it, or `NIL` for an at-head request that never
    /// was CFQ's.
    queue: u32,
    fifo_time: Nanos,
    /// When it entered the scheduler (C's `start_time_ns`).
    arrival: Nanos,
    state: RqState,
    /// Per-queue sort tree links.
    tree: TreeLinks,
    /// FIFO or at-head list links.
    list: ListLinks,
    // Merge hash chain, and the head of the bucket numbered like this slot.
    hprev: u32,
    hnext: u32,
    hhead: u32,
}

impl Default for ReqSlot {
    fn default() -> Self {
        ReqSlot {
            sector: 0,
            sectors: 0,
            op: Op::Read,
            sync: true,
            prio: IoPrio::DEFAULT,
            issuer: NIL,
            queue: NIL,
            fifo_time: 0,
            arrival: 0,
            state: RqState::Free,
            tree: TreeLinks::NONE,
            list: ListLinks::NONE,
            hprev: NIL,
            hnext: NIL,
            hhead: NIL,
        }
    }
}

impl ListNode for ReqSlot {
    #[inline]
    fn list_links(&self) -> &ListLinks {
        &self.list
    }

    #[inline]
    fn list_links_mut(&mut self) -> &mut ListLinks {
        &mut self.list
    }
}

/// A queue's sort tree is keyed by sector; a request goes after those at
/// its sector (`elv_rb_add`).
impl TreeNode for ReqSlot {
    type Key = Sector;

    #[inline]
    fn tree_links(&self) -> &TreeLinks {
        &self.tree
    }

    #[inline]
    fn tree_links_mut(&mut self) -> &mut TreeLinks {
        &mut self.tree
    }

    #[inline]
    fn key(&self, _index: u32) -> Sector {
        self.sector
    }
}

/// `struct cfq_ttime`: a decaying mean of the time from a completion to
/// the next request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Ttime {
    last_end_request: Nanos,
    samples: u64,
    total: u64,
    mean: u64,
}

/// Storage for one queue: an issuer's sync queue (and what C keeps in the
/// process's `cfq_io_cq`), or an async queue. Opaque; create with
/// `QueueSlot::default()`.
#[derive(Clone, Copy, Debug)]
pub struct QueueSlot {
    /// In use: an issuer's queue once its first request arrived, until it
    /// is released after the issuer exited; an async queue once created.
    used: bool,
    /// The issuer exited (C: its I/O context's `active_ref` is 0).
    exited: bool,
    /// The issuer's think time (C: the `cfq_io_cq`'s, of sync requests).
    ttime: Ttime,
    /// A sync queue (`CFQ_CFQQ_FLAG_sync`).
    sync: bool,
    class: PrioClass,
    level: u8,
    on_rr: bool,
    idle_window: bool,
    deep: bool,
    wait_request: bool,
    fifo_expire: bool,
    slice_new: bool,
    wait_busy: bool,
    /// The service tree it is on, or `NO_TREE`.
    st: u8,
    rb_key: i64,
    /// Service tree links.
    links: TreeLinks,
    /// The requests' sort tree.
    root: u32,
    fifo: List,
    next_rq: u32,
    queued: u32,
    /// Requests dispatched and not completed (requeued ones included).
    dispatched: u32,
    dispatch_start: Nanos,
    slice_start: Nanos,
    slice_end: Nanos,
    allocated_slice: Nanos,
    slice_resid: i64,
    slice_dispatch: u32,
    nr_sectors: u64,
    seek_history: u32,
    last_request_pos: Sector,
}

impl Default for QueueSlot {
    fn default() -> Self {
        QueueSlot {
            used: false,
            exited: false,
            ttime: Ttime::default(),
            sync: true,
            class: PrioClass::BestEffort,
            level: 4,
            on_rr: false,
            idle_window: false,
            deep: false,
            wait_request: false,
            fifo_expire: false,
            slice_new: false,
            wait_busy: false,
            st: NO_TREE,
            rb_key: 0,
            links: TreeLinks::NONE,
            root: NIL,
            fifo: List::EMPTY,
            next_rq: NIL,
            queued: 0,
            dispatched: 0,
            dispatch_start: 0,
            slice_start: 0,
            slice_end: 0,
            allocated_slice: 0,
            slice_resid: 0,
            slice_dispatch: 0,
            nr_sectors: 0,
            seek_history: 0,
            last_request_pos: 0,
        }
    }
}

/// A service tree is keyed by service time; a queue goes after those of
/// equal key.
impl TreeNode for QueueSlot {
    type Key = i64;

    #[inline]
    fn tree_links(&self) -> &TreeLinks {
        &self.links
    }

    #[inline]
    fn tree_links_mut(&mut self) -> &mut TreeLinks {
        &mut self.links
    }

    #[inline]
    fn key(&self, _index: u32) -> i64 {
        self.rb_key
    }
}

impl QueueSlot {
    /// `cfqq_type`: the workload type the queue belongs to.
    #[inline]
    fn wl_type(&self) -> usize {
        if !self.sync {
            ASYNC_WL
        } else if !self.idle_window {
            SYNC_NOIDLE_WL
        } else {
            SYNC_WL
        }
    }

    /// `CFQQ_SEEKY`.
    #[inline]
    fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 32 / 8
    }

    #[inline]
    fn empty(&self) -> bool {
        self.root == NIL
    }
}

/// A read-only view of one queue, for tests and debugging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueInfo {
    /// In use (an issuer's queue: between its first request and its
    /// release after the issuer exited).
    pub used: bool,
    /// On a service tree (C's `on_rr`).
    pub busy: bool,
    /// The queue in service.
    pub in_service: bool,
    /// Requests waiting in it.
    pub queued: u32,
    /// Requests dispatched and not completed.
    pub in_flight: u32,
    /// Its class and level.
    pub prio: IoPrio,
    /// Its workload type (from its kind and idle window).
    pub workload: Workload,
    /// Whether its idle window is on.
    pub idle_window: bool,
    /// Whether it counts as seeky (`CFQQ_SEEKY`).
    pub seeky: bool,
    /// The issuer's mean think time, if enough samples make it valid
    /// (sync queues).
    pub think_time: Option<Nanos>,
    /// Its key on its service tree.
    pub rb_key: i64,
    /// The slice it was given (0 before its first completion in service).
    pub allocated_slice: Nanos,
    /// When its slice ends (0 before its first completion in service).
    pub slice_end: Nanos,
}

/// What a completion requires of the caller ([`Cfq::after_completion`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCompletion {
    /// Nothing: no request waits, or the last dispatch held none back.
    Nothing,
    /// Run the queue at this time, the end of the idle slice.
    RunAt(Nanos),
    /// Run the queue now: the last dispatch held queued requests back.
    RunNow,
}

/// The device-wide state (`struct cfq_data` and the root group).
#[derive(Clone, Copy, Debug)]
struct State {
    /// The queue in service (`active_queue`), or `NIL`.
    active: u32,
    /// The issuer of the first request dispatched in this slice
    /// (`active_cic`), or `NIL`.
    active_issuer: u32,
    /// The class (`PrioClass::index()`) and workload type served.
    serving_class: usize,
    serving_type: usize,
    workload_expires: i64,
    /// The group's averaged busy queues, real time and best effort.
    busy_queues_avg: [u32; 2],
    saved_wl_slice: Nanos,
    saved_type: usize,
    saved_class: usize,
    st_root: [u32; TREES],
    st_count: [u32; TREES],
    st_ttime: [Ttime; TREES],
    group_ttime: Ttime,
    /// Requests of the group's queues dispatched and not completed.
    group_dispatched: u32,
    /// Queues on a service tree, counted as the group counts them
    /// (`nr_cfqq`: after `busy_queues` when a queue becomes busy).
    nr_cfqq: u32,
    /// Queues on a service tree (`busy_queues`; the group's `nr_cfqq`).
    busy_queues: u32,
    busy_sync_queues: u32,
    /// CFQ's requests in the driver (requeued ones not).
    rq_in_driver: u32,
    /// CFQ's requests dispatched and not completed, by queue kind (async,
    /// sync).
    rq_in_flight: [u32; 2],
    /// Requests queued in the queues.
    rq_queued: u32,
    /// Other requests sent (inserted at head without being CFQ's) and not
    /// completed.
    foreign_in_flight: u32,
    /// -1 unknown (counts as queueing), 0 or 1.
    hw_tag: i8,
    hw_tag_est_depth: u32,
    hw_tag_samples: u32,
    /// The idle timer is armed, for `idle_deadline`.
    timer_armed: bool,
    idle_deadline: Nanos,
    /// The end of the last request sent.
    last_position: Sector,
    /// The last completion of a sync request that waited longer than
    /// `fifo_expire_sync`; `None` before one (C starts it a second before
    /// the scheduler's creation).
    last_delayed_sync: Option<Nanos>,
    /// Requests inserted at head, in dispatch order.
    disp: List,
    disp_len: u32,
    /// The last dispatch gave no request while requests were queued.
    withheld: bool,
    /// The think-time clocks started (at the first event).
    started: bool,
    /// The latest time an entry point was given.
    last_now: Nanos,
    nonrot: bool,
    rng: u32,
    // Tunables.
    quantum: u32,
    fifo_expire: [Nanos; 2],
    back_max: u64,
    back_penalty: u64,
    slice: [Nanos; 2],
    slice_async_rq: u32,
    slice_idle: Nanos,
    group_idle: Nanos,
    low_latency: bool,
    target_latency: Nanos,
}

/// The CFQ policy over caller-provided storage.
///
/// `R` holds one [`ReqSlot`] per request tag, `Q` the [`QueueSlot`]s
/// ([`Cfq::queue_slots`] of them for the issuers wanted); on the host both
/// are typically `Vec`s, in a kernel module the module's allocations.
pub struct Cfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[QueueSlot]> + AsMut<[QueueSlot]>,
{
    reqs: R,
    qs: Q,
    st: State,
}

/// Mutable view over the storage and the state, so that helpers can touch
/// requests, queues and scalars at once.
struct Ctx<'a> {
    r: &'a mut [ReqSlot],
    qs: &'a mut [QueueSlot],
    s: &'a mut State,
}

impl Ctx<'_> {
    #[inline]
    fn q(&self, i: u32) -> &QueueSlot {
        &self.qs[i as usize]
    }
    #[inline]
    fn qm(&mut self, i: u32) -> &mut QueueSlot {
        &mut self.qs[i as usize]
    }
    #[inline]
    fn rq(&self, i: u32) -> &ReqSlot {
        &self.r[i as usize]
    }
    #[inline]
    fn rqm(&mut self, i: u32) -> &mut ReqSlot {
        &mut self.r[i as usize]
    }

    /// How many issuers (sync queue slots) there are.
    #[inline]
    fn issuers(&self) -> u32 {
        (self.qs.len() - ASYNC_QUEUES) as u32
    }
}
