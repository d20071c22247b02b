// SPDX-License-Identifier: GPL-2.0

//! BFQ-like policy: Budget Fair Queueing after Linux's `bfq-iosched.c`.
//!
//! Every issuer (a process's I/O context on the kernel side) gets a queue,
//! or shares one with issuers that started with it (stable merging, below).
//! Queues are scheduled by B-WF2Q+ on per-class service trees (real time,
//! then best effort, then idle, in strict order): each busy queue carries a
//! virtual start and finish time, a queue is eligible when its start is not
//! after the class's virtual time, and the eligible queue with the smallest
//! finish time is served next. A served queue dispatches its requests in
//! sector order (C-LOOK with short, penalised back seeks, plus one FIFO
//! check per service slot) until its budget (in sectors) is exhausted, its
//! budget times out, or it runs out of requests; a sync queue that runs out
//! may be idled on first (see below). Budgets adapt to each queue's
//! behaviour, the device's peak rate is measured to size the maximum
//! budget and the weight-raising duration, and with `low_latency` newly
//! active (interactive) and soft real-time queues get their weight raised.
//!
//! Idling follows Linux 6.12's `bfq_better_to_idle`: an empty sync queue
//! of a live issuer, not of the idle class, keeps the device (for up to
//! `slice_idle`; 2 ms for a seeky queue in a symmetric scenario, at least
//! 20 ms for a weight-raised one) when idling boosts throughput without
//! issues (a rotational device without internal queueing, or a
//! sequential, I/O-bound queue with a short think time on a device that
//! is not both non-rotational and queueing; and no weight-raised queue
//! busy), or when its service guarantees need it (it is weight-raised and
//! non-raised queues are busy, or four more requests than its own are in
//! the drive; the scenario is asymmetric: the active queues that are not
//! weight-raised have more than one weight and it does not have the
//! smallest, or queues of several classes are busy; or it is the only
//! busy queue). `strict_guarantees` always idles and `slice_idle` 0 never
//! does. What this looks at is modelled as in C: seekiness
//! (`BFQQ_SEEKY`), the think time (`bfq_update_io_thinktime`,
//! `bfq_update_has_short_ttime`; an exited issuer's counts as long), the
//! I/O intensity (`bfq_update_io_intensity`), whether the device queues
//! (`bfq_update_hw_tag`, unknown at first, which counts as queueing), and
//! the weights of the active queues (a count per weight level instead of
//! the weights rb-tree, with per-class busy counts). A newly busy queue
//! also preempts the in-service one when idling for the latter is no
//! longer worth it.
//!
//! Large bursts follow `bfq_handle_burst`: while no queue is busy, or
//! while a burst is under way, a queue created within 180 ms of the
//! previous creation joins the burst; from the eighth on, the burst is
//! large and all its queues (later ones at once) are kept from weight
//! raising (raised ones end it at their next dispatch). A queue idle for
//! 10 s past its budget timeout leaves its burst; an exiting one shrinks
//! it.
//!
//! While the drive waits for the in-service queue, other queues' requests
//! may be injected as in `bfq_select_queue`, unless idling is for
//! throughput alone or the in-service queue is the only weight-raised one
//! and thinks briefly: up to the queue's inject limit may be in the drive
//! (`bfq_choose_bfqq_for_injection`; a weight-raised in-service queue with
//! a short think time only lets weight-raised queues in). The limit is
//! learnt as in `bfq_update_inject_limit`: the service time of a request
//! that arrives at an empty drive is the baseline; with injection, the
//! limit goes up while service times stay under 1.5 times it, and down
//! when they do not. Unlike C, only weight-raised queues are injected
//! this way (C injects any queue into a non-raised or slow-thinking one),
//! which keeps injection from undoing the weights of non-raised queues.
//!
//! Wakers follow `bfq_check_waker`: when a sync queue with a long think
//! time gets a request while its issuer has nothing else queued or in
//! flight (C's `bic->requests <= 1`; for a queue serving merged issuers,
//! while the queue has nothing else), less than 4 ms after the last
//! completion, and that completion was another queue's, that queue is a
//! step closer to being its waker; the third time in a row within 128
//! `slice_idle`s of the first, it is (a step that finds another queue
//! starts over with that one). The shared last slot, as BFQ's
//! `oom_bfqq`, is neither waker nor woken. While the drive waits for
//! the queue in service, its waker's next request, if its budget covers
//! it, goes first, then that of the latest queue found to be woken by it,
//! whatever the inject limit and whatever idling is for (the second and
//! third alternatives of `bfq_select_queue`): the one is what the queue
//! waits for, the other waits for the queue. A queue's release forgets
//! it as a waker (its woken queues' waker is reset) and as a woken queue.
//! There is no injection from a queue's own async queue (there is none:
//! see below).
//!
//! Issuers that start together share a queue, as in BFQ's early stable
//! merging (`merge`): on a non-rotational device that queues, an issuer
//! whose first request is sync, within 180 ms of the creation of the last
//! queue created and at its priority, is served by that queue for as long
//! as it lives (fio's jobs, a service's workers: on a fast device,
//! separate queues would cost a queue switch nearly every request).
//!
//! Differences from the C original, on purpose: there are no cgroups; of
//! queue merging only the early stable merge (no delayed stable merge on
//! rotational or non-queueing devices, no merging of cooperating queues,
//! no splitting, so no waker inherited through a merge); no actuator
//! awareness; sync and async requests of one
//! issuer share that issuer's queue (async requests are charged three
//! times their size, as BFQ charges async queues), the queue counting as
//! sync when its latest request was sync; the idle class is served
//! strictly after the others (no anti-starvation timeout); a newly busy
//! queue preempts the in-service one when its class is higher, its weight
//! larger, it comes back in time with budget left, or idling for the
//! in-service queue is no longer worth it (`next_queue_may_preempt` is
//! not modelled); weight
//! changes (from priority changes or the end of weight raising) count at
//! once, where BFQ applies them at the queue's next activation; a queue
//! with only at-head requests in flight counts as active; a new queue's
//! first think time and idle time are 0 (BFQ sets the last completion 1
//! ns after creation, so when the clock has not moved its unsigned
//! arithmetic wraps them: the think time to its 2 * `slice_idle` cap, the
//! idle time to about 2^64 ns, leaving the queue not I/O bound for
//! seconds); `hw_tag` is sampled at completions, not requeues; async
//! queues are not weight-raised on rare arrivals; and tunables reject
//! out-of-range values instead of clamping them.
//!
//! Using it from a kernel module:
//!
//! - `Bfq::new(requests, issuers)` at `init_sched`, then
//!   [`Bfq::set_nonrotational`] with `blk_queue_nonrot()`.
//! - Give each I/O context (`bfq_io_cq`) an issuer id from `0..m - 1` whose
//!   [`Bfq::issuer_is_free`] holds, keep the last id (`m - 1`) as the
//!   shared queue for contexts that found no free slot, and call
//!   [`Bfq::issuer_exit`] from `exit_icq`; the id may be handed out again
//!   once `issuer_is_free` says so (immediately, or when the context's
//!   last request completes).
//! - To mirror BFQ's shared async queues exactly, pass async requests with
//!   an issuer id reserved per I/O priority (BFQ has one per RT and BE
//!   level, plus one for the idle class) instead of the context's own id:
//!   a queue that only ever sees async requests never idles, is never
//!   weight-raised and is charged three times its sectors, as BFQ's async
//!   queues are.
//! - [`Dispatch::IdleUntil`] means "arm a timer and run the queue again
//!   then (or when a request arrives)"; an idle slice that ran out is also
//!   noticed by the next insert, dispatch or completion.
//! - [`Policy::async_depth_limit`] and [`Bfq::tag_depth`] implement
//!   `limit_depth`.
//! - `Bfq::check_invariants` is O(n + m) (plus O(m) per queue merged
//!   into), for tests and debugging only:
//!   it is compiled only with `test`, `debug_assertions` or the crate's
//!   `invariants` feature (in a kernel module, `--cfg 'feature="invariants"'`).
//!
//! Storage is handed in: `n` [`ReqSlot`]s (request tags `0..n`) and `m`
//! [`IssuerSlot`]s (issuer ids `0..m`). An issuer id out of range is
//! served by the last slot, which callers should therefore keep as a
//! shared overflow queue. Nothing here allocates, and every operation is
//! O(log n) or O(log m) (the per-queue request trees are treaps, so that
//! bound is in expectation over the policy's own random priorities),
//! except that releasing a queue also visits each queue it wakes.
//!
//! The code is split by layer, as C BFQ is split between `bfq-wf2q.c` and
//! `bfq-iosched.c`:
//!
//! - `wf2q`: B-WF2Q+ over the queues' entities (timestamps, virtual time,
//!   the per-class service trees, busy bookkeeping);
//! - `queue`: a queue's requests (sort tree, FIFOs, merge hash), the choice
//!   of its next request, merges, and the release of an exited issuer's
//!   queue;
//! - `budget`: service slots (putting a queue in service, budgets,
//!   expiration);
//! - `idle`: what idling decisions look at, and the decisions;
//! - `inject`, `waker`, `weight_raise`, `burst`, `peak_rate`: the
//!   heuristics of their names;
//! - `merge`: early stable merging (which issuers share a queue);
//! - `tags`: each queue's share of the scheduler tags (`limit_depth`);
//! - `hooks`, `dispatch`: the entry points;
//! - `invariants`: the consistency checks.

mod budget;
mod burst;
mod dispatch;
mod hooks;
mod idle;
mod inject;
#[cfg(any(test, debug_assertions, feature = "invariants"))]
mod invariants;
mod merge;
mod peak_rate;
mod queue;
mod tags;
mod waker;
mod weight_raise;
mod wf2q;

use super::intrusive::{List, ListLinks, ListNode, TreeLinks, TreeNode, NIL};
use super::types::{
    Dispatch, IoPrio, IssuerId, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector,
    SetupError, Tag, TunableError, NSEC_PER_MSEC, NSEC_PER_USEC,
};
use burst::LARGE_BURST_THRESH;
pub(crate) use hooks::TUNABLE_NAMES;
use idle::{NO_SLOT, WEIGHT_SLOTS};
use wf2q::{ALL_HEAPS, IDLE_HEAP0, NO_HEAP};

const NSEC_PER_SEC: Nanos = 1_000_000_000;

const DEFAULT_FIFO_EXPIRE_SYNC: Nanos = 125 * NSEC_PER_MSEC;
const DEFAULT_FIFO_EXPIRE_ASYNC: Nanos = 250 * NSEC_PER_MSEC;
const DEFAULT_BACK_MAX_KIB: u64 = 16 * 1024;
const DEFAULT_BACK_PENALTY: u64 = 2;
const DEFAULT_SLICE_IDLE: Nanos = 8 * NSEC_PER_MSEC;
const DEFAULT_TIMEOUT: Nanos = 125 * NSEC_PER_MSEC;
/// `bfq_default_max_budget`, in sectors.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;

/// `BFQ_WEIGHT_CONVERSION_COEFF`.
const WEIGHT_CONVERSION_COEFF: u32 = 10;
/// Weight of the default priority (best effort, level 4).
const DEFAULT_WEIGHT: u32 = 40;

/// Maps an I/O priority level (0 highest .. 7 lowest) to a BFQ weight, as
/// `bfq_ioprio_to_weight`: `(8 - level) * 10`, so 80 down to 10. Levels
/// past 7 count as 7.
pub const fn ioprio_to_weight(level: u8) -> u32 {
    let level = if level > 7 { 7 } else { level as u32 };
    (8 - level) * WEIGHT_CONVERSION_COEFF
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RqState {
    Free,
    Queued,
    AtHead,
    InFlight,
}

/// Storage for one request tag. Opaque; create with `ReqSlot::default()`.
#[derive(Clone, Copy, Debug)]
pub struct ReqSlot {
    sector: Sector,
    sectors: u32,
    op: Op,
    sync: bool,
    prio: IoPrio,
    fifo_time: Nanos,
    queue: u32,
    state: RqState,
    /// Per-queue sort tree links.
    tree: TreeLinks,
    /// FIFO (or at-head dispatch list) links.
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
            fifo_time: 0,
            queue: NIL,
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

/// A queue's sort tree is keyed by sector, then tag.
impl TreeNode for ReqSlot {
    type Key = (Sector, u32);

    #[inline]
    fn tree_links(&self) -> &TreeLinks {
        &self.tree
    }

    #[inline]
    fn tree_links_mut(&mut self) -> &mut TreeLinks {
        &mut self.tree
    }

    #[inline]
    fn key(&self, index: u32) -> (Sector, u32) {
        (self.sector, index)
    }
}

/// The per-issuer queue (`struct bfq_queue` plus its entity).
#[derive(Clone, Copy, Debug)]
struct Queue {
    used: bool,
    /// No issuer left to send requests (C: no process references): its
    /// own has exited and none is merged into it.
    exited: bool,
    /// The issuer whose slot this is has exited (others merged into the
    /// queue may still send requests).
    own_exited: bool,
    /// Issuers merged into this queue ([`merge`]) that have not exited.
    merged_in: u32,
    /// When the queue was created (`creation_time`).
    creation_time: Nanos,
    sync: bool,
    root: u32,
    queued: u32,
    at_head: u32,
    /// FIFOs, by direction (async, sync).
    fifo: [List; 2],
    next_rq: u32,
    dispatched: u32,
    class: PrioClass,
    level: u8,
    new_prio: IoPrio,
    prio_changed: bool,
    orig_weight: u32,
    /// Set with [`Queue::set_weight_value`], which keeps `weight_slot`.
    weight: u32,
    /// The weight-count slot of `weight`, kept with it: the weight counts
    /// are brought in step on nearly every change of a queue's state.
    weight_slot: u8,
    wr_coeff: u32,
    start: u64,
    finish: u64,
    finish_valid: bool,
    budget: u64,
    service: u64,
    max_budget: u64,
    busy: bool,
    heap_id: u8,
    heap_pos: u32,
    /// On an idle tree: the finish, weight and raising it went idle with.
    idle_finish: u64,
    idle_weight: u32,
    idle_raised: bool,
    /// [`Bfq::tag_depth`] held the issuer to one tag, and no request of
    /// its has arrived since: its process may have been kept waiting by
    /// the block layer, not by its own choice.
    tag_limited: bool,
    fifo_checked: bool,
    non_blocking_wait_rq: bool,
    /// `ttime.last_end_request`: the last completion (creation + 1 ns
    /// before any).
    last_end_request: Nanos,
    budget_timeout: Option<Nanos>,
    wr_cur_max_time: Nanos,
    last_wr_start_finish: Nanos,
    wr_start_at_switch_to_srt: Option<Nanos>,
    service_from_wr: u64,
    soft_rt_next_start: Nanos,
    last_idle_bklogged: Nanos,
    service_from_backlogged: u64,
    softrt_update: bool,
    seek_history: u32,
    /// [`idle::seeky_history`] of `seek_history`, kept with it: the
    /// idling decisions read it several times per request.
    seeky: bool,
    last_request_pos: Sector,
    /// The weight-count slot this queue is counted in while active (busy
    /// or with requests in flight) and not weight-raised (BFQ's
    /// `weight_counter`), or `NO_SLOT`.
    wc_slot: u8,
    /// `BFQQF_just_created`: not yet activated once.
    just_created: bool,
    /// `BFQQF_in_large_burst`: created in a large burst of queues.
    in_large_burst: bool,
    /// On the burst list (BFQ's `burst_list_node` hashed).
    in_burst_list: bool,
    /// How many requests of other queues may be in the drive while this
    /// one, in service, waits for its next request (`inject_limit`).
    inject_limit: u32,
    /// The time from this queue's request arriving at an empty drive to
    /// its completion, without injection (`last_serv_time_ns`; 0: not
    /// sampled).
    last_serv_time: Nanos,
    /// When `inject_limit` was last lowered or reset (`decrease_time_jif`).
    decrease_time: Nanos,
    /// `BFQQF_IO_bound`: busy at least about 80 % of the time.
    io_bound: bool,
    /// `BFQQF_has_short_ttime`.
    has_short_ttime: bool,
    // `struct bfq_ttime`.
    ttime_samples: u32,
    ttime_total: u64,
    ttime_mean: u64,
    // `bfq_update_io_intensity`'s window.
    io_start_time: Nanos,
    tot_idle_time: u64,
    /// The queue whose completions this one's new I/O follows
    /// (`waker_bfqq`), or `NIL`.
    waker: u32,
    /// The latest of the queues this one wakes: the head of its woken
    /// list (`woken_list`), linked through their `woken_prev` and
    /// `woken_next`.
    woken_first: u32,
    woken_prev: u32,
    woken_next: u32,
    /// The candidate waker (`tentative_waker_bfqq`), or `NIL`, with its
    /// slot's generation at the first detection.
    tentative_waker: u32,
    tentative_gen: u32,
    /// `num_waker_detections`.
    waker_detections: u32,
    /// `waker_detection_started`.
    waker_detection_started: Nanos,
}

/// Storage for one issuer: its queue, plus one row of the service trees'
/// heap arrays. Opaque; create with `IssuerSlot::default()`.
#[derive(Clone, Copy, Debug)]
pub struct IssuerSlot {
    q: Queue,
    /// The queue this issuer is merged into ([`merge`]), or `NIL`: then
    /// `q` is its own.
    merged: u32,
    heap: [u32; ALL_HEAPS],
    /// How many queues this slot has released: a reference kept across a
    /// release (a tentative waker) names the same queue only while this
    /// has not moved.
    gen: u32,
}

impl Default for IssuerSlot {
    fn default() -> Self {
        IssuerSlot {
            q: Queue::default(),
            merged: NIL,
            heap: [NIL; ALL_HEAPS],
            gen: 0,
        }
    }
}

/// A read-only view of one issuer's queue, for tests, statistics and
/// debugging.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IssuerInfo {
    /// Whether the slot is free (never used, or released after
    /// [`Bfq::issuer_exit`] once drained).
    pub free: bool,
    /// The issuer whose queue serves this one, if it is merged into
    /// another's (stable merging); the other fields describe that queue.
    pub merged_into: Option<IssuerId>,
    /// Whether the queue is busy (has requests, or is in service).
    pub busy: bool,
    /// Whether the queue is the one in service.
    pub in_service: bool,
    /// Requests waiting in the queue.
    pub queued: u32,
    /// Requests dispatched and not yet completed.
    pub in_flight: u32,
    /// The priority class the queue is scheduled in.
    pub class: PrioClass,
    /// Weight from the I/O priority.
    pub orig_weight: u32,
    /// Current weight (`orig_weight * wr_coeff`).
    pub weight: u32,
    /// Weight-raising coefficient (1: not raised; 30: interactive; 3000:
    /// soft real time).
    pub wr_coeff: u32,
    /// Budget of the current or next service slot, sectors.
    pub budget: u64,
    /// Service received in the current slot, sectors.
    pub service: u64,
    /// The queue's adaptive maximum budget, sectors.
    pub max_budget: u64,
    /// Whether more than 19 of the queue's last 32 requests were far from
    /// their predecessor (`BFQQ_SEEKY`).
    pub seeky: bool,
    /// Whether the queue's mean think time counts as short
    /// (`BFQQF_has_short_ttime`): at most `slice_idle / 2`, or too few
    /// samples yet, and its issuer has not exited.
    pub short_think_time: bool,
    /// Whether the queue counts as I/O bound (`BFQQF_IO_bound`): busy at
    /// least about 80 % of the recent past.
    pub io_bound: bool,
    /// Whether the queue was created in a large burst of queues
    /// (`BFQQF_in_large_burst`), which keeps it from weight raising.
    pub in_large_burst: bool,
    /// How many requests of other queues may be in the drive while this
    /// queue, in service, waits for its next one (`inject_limit`).
    pub inject_limit: u32,
    /// The issuer whose queue wakes this one (`waker_bfqq`): its new I/O
    /// arrived right after that queue's completions three times in a row.
    pub waker: Option<IssuerId>,
}

/// What a completion requires of the caller ([`Bfq::after_completion`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCompletion {
    /// Nothing: no request waits, or one will be dispatched anyway.
    Nothing,
    /// Run the queue at this time, the end of the idle slice (and not
    /// before, unless a request arrives): the device waits for the queue
    /// in service while other requests are queued.
    RunAt(Nanos),
    /// Run the queue now: nothing is in flight and the last dispatch
    /// held the queued requests back.
    RunNow,
}

#[derive(Clone, Copy, Debug)]
struct State {
    in_service: u32,
    wait_request: bool,
    /// The last dispatch gave no request while requests were queued (it
    /// idled, or held them back): see [`Bfq::after_completion`].
    withheld: bool,
    idle_deadline: Nanos,
    last_budget_start: Nanos,
    last_idling_start: Nanos,
    budgets_assigned: u32,
    vtime: [u64; PrioClass::COUNT],
    wsum: [u64; PrioClass::COUNT],
    heap_len: [u32; ALL_HEAPS],
    /// The weights on each class's idle tree, as they went there.
    idle_wsum: [u64; PrioClass::COUNT],
    /// Weight-raised queues on the idle trees.
    raised_idle: u32,
    busy_queues: u32,
    /// `bfqd->busy_queues[]`, per class.
    busy_in_class: [u32; PrioClass::COUNT],
    /// A bit per class with busy queues, for the idling decisions.
    busy_classes: u8,
    wr_busy_queues: u32,
    // Large-burst detection (`bfq_handle_burst`): the queues of the current
    // burst while it is not large yet (never more than the threshold less
    // one), its size, whether it is large, and its latest creation.
    burst_list: [u32; LARGE_BURST_THRESH],
    burst_len: u8,
    burst_size: u32,
    large_burst: bool,
    last_ins_in_burst: Option<Nanos>,
    /// The last queue created, which new queues may be merged into
    /// (`last_bfqq_created`), or `NIL`.
    last_created: u32,
    // Injection: measuring the in-service queue's service time with and
    // without other queues' requests in the drive
    // (`bfq_update_inject_limit`).
    last_empty_occupied: Nanos,
    wait_dispatch: bool,
    waited_rq: u32,
    rqs_injected: bool,
    /// BFQ's `queue_weights_tree`, flattened: how many active queues that
    /// are not weight-raised have each weight (slot `weight / 10 - 1`),
    /// and a bit per non-empty slot.
    weight_count: [u32; WEIGHT_SLOTS],
    weight_mask: u8,
    // hw_tag detection: -1 unknown (counts as queueing), 0 or 1.
    hw_tag: i8,
    max_rq_in_driver: u32,
    /// Requests the device itself can hold (0: not known).
    device_depth: u32,
    /// The request [`Ctx::merge_hold`] last held, and its size then.
    hold_rq: u32,
    hold_sectors: u32,
    hw_tag_samples: u32,
    /// Requests inserted at head, in dispatch order.
    disp: List,
    disp_len: u32,
    queued: u32,
    in_driver: u32,
    // Peak rate estimation.
    peak_rate: u64,
    peak_rate_samples: u32,
    sequential_samples: u32,
    tot_sectors_dispatched: u64,
    last_rq_max_size: u64,
    first_dispatch: Nanos,
    last_dispatch: Nanos,
    delta_from_first: Nanos,
    last_completion: Nanos,
    /// The queue of the latest completion (`last_completed_rq_bfqq`), or
    /// `NIL`.
    last_completed: u32,
    last_position: Sector,
    rate_dur_prod: u64,
    nonrot: bool,
    // Budgets.
    max_budget: u64,
    user_max_budget: u64,
    // Tunables.
    slice_idle: Nanos,
    low_latency: bool,
    strict_guarantees: bool,
    timeout: Nanos,
    fifo_expire: [Nanos; 2],
    back_max: u64,
    back_penalty: u64,
    rng: u32,
}

/// The BFQ-like policy over caller-provided storage.
///
/// `R` holds one [`ReqSlot`] per request tag, `Q` one [`IssuerSlot`] per
/// issuer; on the host both are typically `Vec`s, in a kernel module the
/// module's own allocations.
pub struct Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    reqs: R,
    qs: Q,
    st: State,
    /// The queue's `async_depth` where the kernel keeps it there (Linux
    /// 7.3), which the depth limits derive from; `None` where BFQ derives
    /// them from its scheduler tags (6.12).
    queue_async_depth: Option<u32>,
}

impl<R, Q> Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    /// The depth limit of requests other than synchronous reads where the
    /// queue keeps `async_depth` (Linux 7.3's `bfq_depth_updated()`), by
    /// whether weight-raised queues are busy and whether the request is
    /// synchronous: all of it for sync writes, two thirds for async ones,
    /// a half and a quarter while weight-raised queues are busy; never
    /// below 1. `None` where BFQ derives its limits from its tags.
    pub fn queue_depth_limit(&self, sync: bool) -> Option<u32> {
        let a = self.queue_async_depth?;
        let limit = match (self.st.wr_busy_queues > 0, sync) {
            (false, true) => a,
            (false, false) => a.saturating_mul(2) / 3,
            (true, true) => a >> 1,
            (true, false) => a >> 2,
        };
        Some(limit.max(1))
    }

    /// The queue's `async_depth` changed where the kernel keeps it there
    /// (or the depth did; [`Bfq::queue_depth_limit`]).
    pub fn queue_depth_updated(&mut self, async_depth: u32) {
        self.queue_async_depth = Some(async_depth);
    }

    /// The end of the idle slice the device is held for, if the queue in
    /// service is waiting for its next request (BFQ's `wait_request`): a
    /// caller that sees it after [`Policy::completed`] arms its timer for
    /// it rather than dispatching at once, as `bfq_completed_request()`
    /// returns after `bfq_arm_slice_timer()` without scheduling a dispatch.
    pub fn idling_until(&self) -> Option<Nanos> {
        (self.st.in_service != NIL && self.st.wait_request).then_some(self.st.idle_deadline)
    }

    /// Whether the issuer slot is free: never used, or released after
    /// [`Bfq::issuer_exit`]. A free slot may be handed to a new I/O
    /// context, which then starts as a brand-new queue. Out of range ids
    /// are never free.
    pub fn issuer_is_free(&self, issuer: IssuerId) -> bool {
        self.qs
            .as_ref()
            .get(issuer)
            .map(|s| !s.q.used && s.merged == NIL)
            .unwrap_or(false)
    }

    /// A snapshot of the queue serving one issuer (its own, or the one it
    /// is merged into); ids out of range read the shared last slot, as
    /// requests from them go there.
    pub fn issuer_info(&self, issuer: IssuerId) -> IssuerInfo {
        let qs = self.qs.as_ref();
        let own = issuer.min(qs.len() - 1);
        let qi = qs[own].served_by(own as u32) as usize;
        let q = &qs[qi].q;
        IssuerInfo {
            free: !q.used,
            merged_into: (qi != own).then_some(qi),
            busy: q.busy,
            in_service: self.st.in_service == qi as u32,
            queued: q.queued,
            in_flight: q.dispatched,
            class: q.class,
            orig_weight: q.orig_weight,
            weight: q.weight,
            wr_coeff: q.wr_coeff,
            budget: q.budget,
            service: q.service,
            max_budget: q.max_budget,
            seeky: q.seeky,
            short_think_time: q.has_short_ttime,
            io_bound: q.io_bound,
            in_large_burst: q.in_large_burst,
            inject_limit: q.inject_limit,
            waker: (q.waker != NIL).then_some(q.waker as usize),
        }
    }

    /// Whether the device queues requests internally, as BFQ detects it
    /// (`hw_tag`) from the number of requests in the driver over 32
    /// completions that had enough requests around to tell: `None` until
    /// then, which counts as queueing. Once queueing, always queueing.
    pub fn hw_tag(&self) -> Option<bool> {
        match self.st.hw_tag {
            -1 => None,
            t => Some(t == 1),
        }
    }

    /// The measured (or, before enough samples, assumed) peak rate, in
    /// sectors per microsecond shifted left by 16 (BFQ's unit).
    pub fn peak_rate(&self) -> u64 {
        self.st.peak_rate
    }

    /// The current device-wide maximum budget, sectors (`max_budget` when
    /// set, else computed from the peak rate and `timeout_sync`).
    pub fn max_budget(&self) -> u64 {
        self.st.max_budget
    }

    /// How long interactive weight raising lasts, given the peak rate.
    pub fn wr_duration(&self) -> Nanos {
        self.st.wr_duration()
    }

    /// The issuer whose queue is in service, if any.
    pub fn in_service(&self) -> Option<IssuerId> {
        (self.st.in_service != NIL).then_some(self.st.in_service as usize)
    }

    /// Whether a weight-raised queue is busy. The depth limits
    /// ([`Policy::async_depth_limit`]) depend on this and on the storage
    /// size only, so a caller that mirrors them recomputes them when this
    /// changes.
    pub fn weight_raised_busy(&self) -> bool {
        self.st.wr_busy_queues > 0
    }

    /// Requests dispatched and not yet completed or requeued.
    pub fn in_flight(&self) -> usize {
        self.st.in_driver as usize
    }

    fn ctx(&mut self) -> Ctx<'_> {
        Ctx {
            r: self.reqs.as_mut(),
            qs: self.qs.as_mut(),
            s: &mut self.st,
        }
    }
}

/// Mutable view over the storage and the state, so that helpers can touch
/// requests, queues and scalars at once.
struct Ctx<'a> {
    r: &'a mut [ReqSlot],
    qs: &'a mut [IssuerSlot],
    s: &'a mut State,
}

impl Ctx<'_> {
    #[inline]
    fn q(&self, i: u32) -> &Queue {
        &self.qs[i as usize].q
    }
    #[inline]
    fn qm(&mut self, i: u32) -> &mut Queue {
        &mut self.qs[i as usize].q
    }
    #[inline]
    fn rq(&self, i: u32) -> &ReqSlot {
        &self.r[i as usize]
    }
    #[inline]
    fn rqm(&mut self, i: u32) -> &mut ReqSlot {
        &mut self.r[i as usize]
    }
}
