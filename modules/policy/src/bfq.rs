// SPDX-License-Identifier: GPL-2.0

//! BFQ-like policy: Budget Fair Queueing after Linux's `bfq-iosched.c`.
//!
//! Every issuer (a process's I/O context on the kernel side) gets a queue.
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
//! (C injects any queue into a non-raised or slow-thinking one), which
//! keeps injection from undoing the weights of non-raised queues. There
//! is no injection from a queue's own async or waker/woken queues
//! (neither exists here).
//!
//! Differences from the C original, on purpose: there are no cgroups, no
//! queue merging or splitting, no waker/wakee
//! detection and no actuator awareness; sync and async requests of one
//! issuer share that issuer's queue (async requests are charged three
//! times their size, as BFQ charges async queues), the queue counting as
//! sync when its latest request was sync; the idle class is served
//! strictly after the others (no anti-starvation timeout); a newly busy
//! queue preempts the in-service one when its class is higher, its weight
//! larger, it comes back in time with budget left, or idling for the
//! in-service queue is no longer worth it (`next_queue_may_preempt` is
//! not modelled); an empty queue preempted while it needed idling for its
//! guarantees leaves the service tree (BFQ keeps it queued); weight
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
//! - [`Policy::async_depth_limit`] implements `limit_depth`.
//! - [`Bfq::check_invariants`] is O(n + m), for tests and debugging only.
//!
//! Storage is handed in: `n` [`ReqSlot`]s (request tags `0..n`) and `m`
//! [`IssuerSlot`]s (issuer ids `0..m`). An issuer id out of range is
//! served by the last slot, which callers should therefore keep as a
//! shared overflow queue. Nothing here allocates, and every operation is
//! O(log n) or O(log m) (the per-queue request trees are treaps, so that
//! bound is in expectation over the policy's own random priorities).

use super::types::{
    Dispatch, IoPrio, IssuerId, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector,
    SetupError, Tag, TunableError, NSEC_PER_MSEC, NSEC_PER_USEC,
};

const NIL: u32 = u32::MAX;
const NSEC_PER_SEC: Nanos = 1_000_000_000;

/// Virtual time is service scaled by `1 << WFQ_SERVICE_SHIFT` over weight.
const WFQ_SERVICE_SHIFT: u32 = 22;
/// Largest service charged in one go (keeps shifts far from overflow).
const MAX_CHARGE: u64 = 1 << 40;
/// A remembered finish time this far ahead of the virtual time is stale.
const MAX_VTIME_AHEAD: u64 = 1 << 62;

const DEFAULT_FIFO_EXPIRE_SYNC: Nanos = 125 * NSEC_PER_MSEC;
const DEFAULT_FIFO_EXPIRE_ASYNC: Nanos = 250 * NSEC_PER_MSEC;
const DEFAULT_BACK_MAX_KIB: u64 = 16 * 1024;
const DEFAULT_BACK_PENALTY: u64 = 2;
const DEFAULT_SLICE_IDLE: Nanos = 8 * NSEC_PER_MSEC;
const DEFAULT_TIMEOUT: Nanos = 125 * NSEC_PER_MSEC;
/// `bfq_default_max_budget`, in sectors.
const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// `bfq_stats_min_budgets`.
const STATS_MIN_BUDGETS: u32 = 194;
/// `bfq_async_charge_factor`.
const ASYNC_CHARGE_FACTOR: u64 = 3;
/// `BFQ_MIN_TT`.
const MIN_TT: Nanos = 2 * NSEC_PER_MSEC;
/// `bfq_large_burst_thresh`: queues created this close together make a
/// large burst.
const LARGE_BURST_THRESH: usize = 8;
/// `bfq_burst_interval`: the longest gap between two queue creations of one
/// burst.
const BURST_INTERVAL: Nanos = 180 * NSEC_PER_MSEC;
/// How long after its budget timeout an idle queue leaves its burst.
const BURST_FORGET: Nanos = 10 * NSEC_PER_SEC;
/// `BFQQ_SEEK_THR`, sectors.
const SEEK_THR: Sector = 8 * 100;
/// `BFQQ_SECT_THR_NONROT`, sectors.
const SECT_THR_NONROT: u32 = 2 * 32;
/// `BFQ_HW_QUEUE_THRESHOLD`: more requests than this in the driver at
/// once means the device queues internally.
const HW_QUEUE_THRESHOLD: u32 = 3;
/// `BFQ_HW_QUEUE_SAMPLES`: completions sampled per `hw_tag` decision.
const HW_QUEUE_SAMPLES: u32 = 32;
/// `bfq_sample_valid`: think-time statistics count once the (decaying,
/// fixed-point) sample count exceeds this, i.e. from the third sample on.
const TTIME_VALID_SAMPLES: u32 = 80;
/// `bfq_update_io_intensity`'s observation window.
const IO_INTENSITY_WINDOW: Nanos = 200 * NSEC_PER_MSEC;
/// Weight levels counted for `bfq_asymmetric_scenario`: a queue that is
/// not weight-raised weighs `ioprio_to_weight(level)`, 10 to 80.
const WEIGHT_SLOTS: usize = 8;
/// `Queue::wc_slot` of a queue not counted.
const NO_SLOT: u8 = u8::MAX;

/// `BFQ_WEIGHT_CONVERSION_COEFF`.
const WEIGHT_CONVERSION_COEFF: u32 = 10;
/// Weight of the default priority (best effort, level 4).
const DEFAULT_WEIGHT: u32 = 40;
/// `bfq_wr_coeff`.
const WR_COEFF: u32 = 30;
/// `BFQ_SOFTRT_WEIGHT_FACTOR`.
const SOFTRT_WEIGHT_FACTOR: u32 = 100;
/// `bfq_wr_rt_max_time`.
const WR_RT_MAX_TIME: Nanos = 300 * NSEC_PER_MSEC;
/// `bfq_wr_min_idle_time`.
const WR_MIN_IDLE_TIME: Nanos = 2000 * NSEC_PER_MSEC;
/// `bfq_wr_max_softrt_rate`, sectors per second.
const WR_MAX_SOFTRT_RATE: u64 = 7000;
/// `max_service_from_wr`, sectors.
const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// `BFQ_RATE_SHIFT`.
const RATE_SHIFT: u32 = 16;
/// `BFQ_RATE_MIN_SAMPLES`.
const RATE_MIN_SAMPLES: u32 = 32;
/// `BFQ_RATE_MIN_INTERVAL`.
const RATE_MIN_INTERVAL: Nanos = 300 * NSEC_PER_MSEC;
/// `BFQ_RATE_REF_INTERVAL`.
const RATE_REF_INTERVAL: Nanos = NSEC_PER_SEC;
/// `ref_rate[]`: reference peak rates (sectors/µs << 16), rotational and
/// non-rotational.
const REF_RATE: [u64; 2] = [14000, 33000];
/// `ref_wr_duration[]` in milliseconds.
const REF_WR_DURATION_MS: [u64; 2] = [7000, 2500];

const INT_MAX: u64 = i32::MAX as u64;
const UINT_MAX: u64 = u32::MAX as u64;

/// Maps an I/O priority level (0 highest .. 7 lowest) to a BFQ weight, as
/// `bfq_ioprio_to_weight`: `(8 - level) * 10`, so 80 down to 10. Levels
/// past 7 count as 7.
pub const fn ioprio_to_weight(level: u8) -> u32 {
    let level = if level > 7 { 7 } else { level as u32 };
    (8 - level) * WEIGHT_CONVERSION_COEFF
}

/// Wrapping "a is after b" for virtual times (`bfq_gt`).
#[inline]
fn vt_gt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// Virtual time needed to serve `service` sectors at `weight`.
#[inline]
fn vt_delta(service: u64, weight: u32) -> u64 {
    (service.min(MAX_CHARGE) << WFQ_SERVICE_SHIFT) / (weight.max(1) as u64)
}

/// The weight-count slot of a weight: `weight / 10 - 1`, so 0 for the
/// lightest level (weight 10) up to 7 (weight 80).
#[inline]
fn weight_slot(weight: u32) -> u8 {
    ((weight / WEIGHT_CONVERSION_COEFF).clamp(1, WEIGHT_SLOTS as u32) - 1) as u8
}

/// The weight-count slot a queue belongs in: active (busy, or with
/// requests in flight) and not weight-raised, as BFQ keeps queues in its
/// `queue_weights_tree`.
#[inline]
fn wanted_slot(q: &Queue) -> u8 {
    if q.used && (q.busy || q.dispatched > 0) && q.wr_coeff == 1 {
        weight_slot(q.weight)
    } else {
        NO_SLOT
    }
}

/// Why the in-service queue stops being served (`enum bfqq_expiration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expiration {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
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
    // Per-queue sort treap.
    left: u32,
    right: u32,
    parent: u32,
    tprio: u32,
    // FIFO (or at-head dispatch list) links.
    fprev: u32,
    fnext: u32,
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
            left: NIL,
            right: NIL,
            parent: NIL,
            tprio: 0,
            fprev: NIL,
            fnext: NIL,
            hprev: NIL,
            hnext: NIL,
            hhead: NIL,
        }
    }
}

/// The per-issuer queue (`struct bfq_queue` plus its entity).
#[derive(Clone, Copy, Debug)]
struct Queue {
    used: bool,
    exited: bool,
    sync: bool,
    root: u32,
    queued: u32,
    at_head: u32,
    fifo_head: [u32; 2],
    fifo_tail: [u32; 2],
    next_rq: u32,
    dispatched: u32,
    class: PrioClass,
    level: u8,
    new_prio: IoPrio,
    prio_changed: bool,
    orig_weight: u32,
    weight: u32,
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
}

const NO_HEAP: u8 = u8::MAX;
const HEAPS: usize = PrioClass::COUNT * 2;

impl Default for Queue {
    fn default() -> Self {
        Queue {
            used: false,
            exited: false,
            sync: true,
            root: NIL,
            queued: 0,
            at_head: 0,
            fifo_head: [NIL; 2],
            fifo_tail: [NIL; 2],
            next_rq: NIL,
            dispatched: 0,
            class: PrioClass::BestEffort,
            level: 4,
            new_prio: IoPrio::DEFAULT,
            prio_changed: false,
            orig_weight: DEFAULT_WEIGHT,
            weight: DEFAULT_WEIGHT,
            wr_coeff: 1,
            start: 0,
            finish: 0,
            finish_valid: false,
            budget: 0,
            service: 0,
            max_budget: 0,
            busy: false,
            heap_id: NO_HEAP,
            heap_pos: 0,
            fifo_checked: false,
            non_blocking_wait_rq: false,
            last_end_request: 0,
            budget_timeout: None,
            wr_cur_max_time: 0,
            last_wr_start_finish: 0,
            wr_start_at_switch_to_srt: None,
            service_from_wr: 0,
            soft_rt_next_start: 0,
            last_idle_bklogged: 0,
            service_from_backlogged: 0,
            softrt_update: false,
            seek_history: 0,
            last_request_pos: 0,
            wc_slot: NO_SLOT,
            just_created: true,
            in_large_burst: false,
            in_burst_list: false,
            inject_limit: 0,
            last_serv_time: 0,
            decrease_time: 0,
            io_bound: true,
            has_short_ttime: false,
            ttime_samples: 0,
            ttime_total: 0,
            ttime_mean: 0,
            io_start_time: 0,
            tot_idle_time: 0,
        }
    }
}

/// Storage for one issuer: its queue, plus one row of the service trees'
/// heap arrays. Opaque; create with `IssuerSlot::default()`.
#[derive(Clone, Copy, Debug)]
pub struct IssuerSlot {
    q: Queue,
    heap: [u32; HEAPS],
}

impl Default for IssuerSlot {
    fn default() -> Self {
        IssuerSlot {
            q: Queue::default(),
            heap: [NIL; HEAPS],
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
    heap_len: [u32; HEAPS],
    busy_queues: u32,
    /// `bfqd->busy_queues[]`, per class.
    busy_in_class: [u32; PrioClass::COUNT],
    wr_busy_queues: u32,
    // Large-burst detection (`bfq_handle_burst`): the queues of the current
    // burst while it is not large yet (never more than the threshold less
    // one), its size, whether it is large, and its latest creation.
    burst_list: [u32; LARGE_BURST_THRESH],
    burst_len: u8,
    burst_size: u32,
    large_burst: bool,
    last_ins_in_burst: Option<Nanos>,
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
    hw_tag_samples: u32,
    disp_head: u32,
    disp_tail: u32,
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

impl State {
    fn new() -> Self {
        State {
            in_service: NIL,
            wait_request: false,
            withheld: false,
            idle_deadline: 0,
            last_budget_start: 0,
            last_idling_start: 0,
            budgets_assigned: 0,
            vtime: [0; PrioClass::COUNT],
            wsum: [0; PrioClass::COUNT],
            heap_len: [0; HEAPS],
            busy_queues: 0,
            busy_in_class: [0; PrioClass::COUNT],
            wr_busy_queues: 0,
            burst_list: [NIL; LARGE_BURST_THRESH],
            burst_len: 0,
            burst_size: 0,
            large_burst: false,
            last_ins_in_burst: None,
            last_empty_occupied: 0,
            wait_dispatch: false,
            waited_rq: NIL,
            rqs_injected: false,
            weight_count: [0; WEIGHT_SLOTS],
            weight_mask: 0,
            hw_tag: -1,
            max_rq_in_driver: 0,
            device_depth: 0,
            hw_tag_samples: 0,
            disp_head: NIL,
            disp_tail: NIL,
            disp_len: 0,
            queued: 0,
            in_driver: 0,
            peak_rate: REF_RATE[0] * 2 / 3,
            peak_rate_samples: 0,
            sequential_samples: 0,
            tot_sectors_dispatched: 0,
            last_rq_max_size: 0,
            first_dispatch: 0,
            last_dispatch: 0,
            delta_from_first: 0,
            last_completion: 0,
            last_position: 0,
            rate_dur_prod: REF_RATE[0] * REF_WR_DURATION_MS[0],
            nonrot: false,
            max_budget: DEFAULT_MAX_BUDGET,
            user_max_budget: 0,
            slice_idle: DEFAULT_SLICE_IDLE,
            low_latency: true,
            strict_guarantees: false,
            timeout: DEFAULT_TIMEOUT,
            fifo_expire: [DEFAULT_FIFO_EXPIRE_ASYNC, DEFAULT_FIFO_EXPIRE_SYNC],
            back_max: DEFAULT_BACK_MAX_KIB,
            back_penalty: DEFAULT_BACK_PENALTY,
            rng: 0x2545_f491,
        }
    }

    fn timeout_ms(&self) -> u64 {
        (self.timeout / NSEC_PER_MSEC).max(1)
    }

    /// `bfq_calc_max_budget`.
    fn calc_max_budget(&self) -> u64 {
        (self
            .peak_rate
            .saturating_mul(1000)
            .saturating_mul(self.timeout_ms())
            >> RATE_SHIFT)
            .max(1)
    }

    /// `bfq_max_budget`.
    fn cur_max_budget(&self) -> u64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS {
            DEFAULT_MAX_BUDGET
        } else {
            self.max_budget
        }
    }

    /// `bfq_min_budget`.
    fn min_budget(&self) -> u64 {
        self.cur_max_budget() / 32
    }

    /// `bfq_wr_duration`.
    fn wr_duration(&self) -> Nanos {
        let ms = self.rate_dur_prod / self.peak_rate.max(1);
        ms.clamp(3000, 25000) * NSEC_PER_MSEC
    }

    fn next_rand(&mut self) -> u32 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }
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
}

/// The tunables, in the order BFQ's sysfs directory lists them.
const TUNABLES: &[&str] = &[
    "fifo_expire_sync",
    "fifo_expire_async",
    "back_seek_max",
    "back_seek_penalty",
    "slice_idle",
    "slice_idle_us",
    "max_budget",
    "timeout_sync",
    "strict_guarantees",
    "low_latency",
];

/// Parses a sysfs write as BFQ's `kstrtoul(page, 10, ..)` does: an
/// optional `+`, decimal digits, at most one trailing newline.
fn parse_decimal(text: &str) -> Result<u64, TunableError> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let digits = text.strip_prefix('+').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TunableError::Invalid);
    }
    let mut value: u64 = 0;
    for b in digits.bytes() {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add((b - b'0') as u64))
            .ok_or(TunableError::OutOfRange)?;
    }
    Ok(value)
}

fn parse_decimal_in(text: &str, min: u64, max: u64) -> Result<u64, TunableError> {
    let value = parse_decimal(text)?;
    if value < min || value > max {
        return Err(TunableError::OutOfRange);
    }
    Ok(value)
}

impl<R, Q> Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    /// Sets the policy up over `requests` (one slot per tag) and `issuers`
    /// (one slot per issuer id). Both must be non-empty and shorter than
    /// `u32::MAX`; their previous contents are overwritten.
    pub fn new(mut requests: R, mut issuers: Q) -> Result<Self, SetupError> {
        let n = requests.as_ref().len();
        let m = issuers.as_ref().len();
        if n == 0 || m == 0 || n >= NIL as usize || m >= NIL as usize {
            return Err(SetupError::Capacity);
        }
        for r in requests.as_mut().iter_mut() {
            *r = ReqSlot::default();
        }
        for q in issuers.as_mut().iter_mut() {
            *q = IssuerSlot::default();
        }
        Ok(Bfq {
            reqs: requests,
            qs: issuers,
            st: State::new(),
        })
    }

    /// Tells the policy whether the device is non-rotational (the kernel's
    /// `blk_queue_nonrot`). This picks the reference peak rate and
    /// weight-raising duration, as BFQ does at init; call it before any
    /// I/O. Default: rotational.
    pub fn set_nonrotational(&mut self, nonrot: bool) {
        let i = nonrot as usize;
        self.st.nonrot = nonrot;
        self.st.rate_dur_prod = REF_RATE[i] * REF_WR_DURATION_MS[i];
        self.st.peak_rate = REF_RATE[i] * 2 / 3;
    }

    /// Tells the policy how many requests the device can hold at once
    /// (blk-mq's driver tags: the tag set's `queue_depth`, per hardware
    /// queue); 0, the default, means not known. A device whose several
    /// hardware queues each hold no more than 3 requests then counts as not
    /// queueing, which errs towards idling.
    ///
    /// `hw_tag` then counts at most that many requests as in the driver.
    /// Deliberate difference from C: the policy counts a request as in the
    /// driver from its dispatch, and blk-mq may take one from the scheduler
    /// per CPU running the queue before finding no driver tag and parking
    /// it on the hardware queue's dispatch list. On a device of depth 2
    /// that is four "in the driver" now and then, and one such sample
    /// makes `hw_tag` stick at queueing, which turns off idling for the
    /// queue of the smallest weight: measured in the guest, the 1:2
    /// readers then got 1:12 (the light queue expired after each small
    /// batch, and its budget shrank to that batch).
    pub fn set_device_depth(&mut self, depth: u32) {
        self.st.device_depth = depth;
    }

    /// The issuer's I/O context is going away: the policy stops idling for
    /// it, and releases the slot as soon as its queue is empty and none of
    /// its requests is in flight (at once if that holds already). Check
    /// [`Bfq::issuer_is_free`] before reusing the id for a new context.
    pub fn issuer_exit(&mut self, issuer: IssuerId, now: Nanos) {
        if issuer >= self.qs.as_ref().len() {
            return;
        }
        let qi = issuer as u32;
        let mut c = self.ctx();
        if !c.q(qi).used {
            return;
        }
        // No process left to send more: never idle for it, and its think
        // time counts as long (C: the context's `active_ref` is 0).
        let q = c.qm(qi);
        q.exited = true;
        q.has_short_ttime = false;
        if c.s.in_service == qi && c.q(qi).queued == 0 {
            c.expire(qi, Expiration::NoMoreRequests, false, now);
        }
        c.maybe_release(qi);
    }

    /// The end of the idle slice the device is held for, if the queue in
    /// service is waiting for its next request (BFQ's `wait_request`): a
    /// caller that sees it after [`Policy::completed`] arms its timer for
    /// it rather than dispatching at once, as `bfq_completed_request()`
    /// returns after `bfq_arm_slice_timer()` without scheduling a dispatch.
    pub fn idling_until(&self) -> Option<Nanos> {
        (self.st.in_service != NIL && self.st.wait_request).then_some(self.st.idle_deadline)
    }

    /// What the caller, who runs the hardware queues, must do after
    /// [`Policy::completed`]. C BFQ's `bfq_completed_request()` arms its
    /// idle timer whenever the device starts waiting for the queue in
    /// service, and runs the queue whenever nothing is left in the driver
    /// while requests wait. Both are needed only when requests wait that
    /// no one else will dispatch:
    /// - no request queued: a request that arrives runs the queue (the
    ///   block layer does after every insertion), and an idle slice that
    ///   has passed by then ends at that dispatch, as of its deadline;
    /// - requests queued, device waiting for the queue in service: run
    ///   the queue when the idle slice ends ([`AfterCompletion::RunAt`]);
    /// - requests queued, nothing in flight, and the last dispatch gave
    ///   none: run the queue now ([`AfterCompletion::RunNow`]). A request
    ///   queued since then was inserted since then, and its insertion runs
    ///   the queue.
    ///
    /// On a fast device, where each issuer has one request at a time and
    /// the queue in service changes with nearly every request, C's rule
    /// arms a timer for most completions and wakes a worker for about one
    /// in ten.
    pub fn after_completion(&mut self) -> AfterCompletion {
        if !self.has_work() {
            return AfterCompletion::Nothing;
        }
        if let Some(until) = self.idling_until() {
            return AfterCompletion::RunAt(until);
        }
        if self.st.withheld && self.st.in_driver == 0 {
            self.st.withheld = false;
            return AfterCompletion::RunNow;
        }
        AfterCompletion::Nothing
    }

    /// Whether the issuer slot is free: never used, or released after
    /// [`Bfq::issuer_exit`]. A free slot may be handed to a new I/O
    /// context, which then starts as a brand-new queue. Out of range ids
    /// are never free.
    pub fn issuer_is_free(&self, issuer: IssuerId) -> bool {
        self.qs
            .as_ref()
            .get(issuer)
            .map(|s| !s.q.used)
            .unwrap_or(false)
    }

    /// A snapshot of one issuer's queue; ids out of range read the
    /// shared last slot, as requests from them go there.
    pub fn issuer_info(&self, issuer: IssuerId) -> IssuerInfo {
        let qs = self.qs.as_ref();
        let qi = issuer.min(qs.len() - 1);
        let q = &qs[qi].q;
        IssuerInfo {
            free: !q.used,
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
            seeky: q.seek_history.count_ones() > 19,
            short_think_time: q.has_short_ttime,
            io_bound: q.io_bound,
            in_large_burst: q.in_large_burst,
            inject_limit: q.inject_limit,
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

    /// Like [`Policy::front_merge_candidate`], but only among the requests
    /// of `issuer`'s own queue, as BFQ's `bfq_request_merge` looks only in
    /// the submitting process's queue.
    pub fn front_merge_candidate_for(&self, issuer: IssuerId, probe: &MergeProbe) -> Option<Tag> {
        let qi = issuer.min(self.qs.as_ref().len() - 1) as u32;
        self.find_front_merge(probe, Some(qi))
    }

    fn find_front_merge(&self, probe: &MergeProbe, queue: Option<u32>) -> Option<Tag> {
        if probe.op == Op::Flush {
            return None;
        }
        let reqs = self.reqs.as_ref();
        let b = bucket(probe.bio_end, reqs.len());
        let mut i = reqs[b].hhead;
        // Chains are short; the bound only guards against corruption.
        let mut steps = 0usize;
        while i != NIL && steps <= reqs.len() {
            let r = &reqs[i as usize];
            if r.state == RqState::Queued
                && r.sector == probe.bio_end
                && r.op == probe.op
                && r.prio == probe.prio
                && queue.unwrap_or(r.queue) == r.queue
            {
                return Some(i as usize);
            }
            i = r.hnext;
            steps += 1;
        }
        None
    }

    /// Checks the policy's internal structures for consistency (request
    /// trees, FIFOs, merge hash, service-tree heaps, weight sums and
    /// counts). O(n + m): meant for tests and fuzzing, not the I/O path.
    /// Returns a description of the first inconsistency found.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let reqs = self.reqs.as_ref();
        let qs = self.qs.as_ref();
        let s = &self.st;
        let n = reqs.len();
        let key = |i: u32| (reqs[i as usize].sector, i);
        let mut total_queued = 0u64;
        let mut total_dispatched = 0u64;
        let mut total_at_head = 0u64;
        let mut wsum = [0u64; PrioClass::COUNT];
        let mut busy = 0u32;
        let mut wr_busy = 0u32;
        let mut busy_in_class = [0u32; PrioClass::COUNT];
        let mut weight_count = [0u32; WEIGHT_SLOTS];
        for (qi, slot) in qs.iter().enumerate() {
            let q = &slot.q;
            let qi = qi as u32;
            if q.wc_slot != wanted_slot(q) {
                return Err("queue counted under the wrong weight");
            }
            if q.wc_slot != NO_SLOT {
                weight_count[q.wc_slot as usize] += 1;
            }
            // In-order walk of the treap.
            let mut count = 0u32;
            let mut x = q.root;
            if x != NIL && reqs[x as usize].parent != NIL {
                return Err("treap root has a parent");
            }
            while x != NIL && reqs[x as usize].left != NIL {
                x = reqs[x as usize].left;
            }
            let mut prev = NIL;
            while x != NIL {
                count += 1;
                if count as usize > n {
                    return Err("treap cycle");
                }
                let r = &reqs[x as usize];
                if r.state != RqState::Queued || r.queue != qi {
                    return Err("treap node not queued in this queue");
                }
                for c in [r.left, r.right] {
                    if c != NIL {
                        if reqs[c as usize].parent != x {
                            return Err("treap parent link");
                        }
                        if reqs[c as usize].tprio < r.tprio {
                            return Err("treap heap order");
                        }
                    }
                }
                if prev != NIL && key(prev) >= key(x) {
                    return Err("treap key order");
                }
                prev = x;
                // successor
                if r.right != NIL {
                    x = r.right;
                    while reqs[x as usize].left != NIL {
                        x = reqs[x as usize].left;
                    }
                } else {
                    let mut y = x;
                    loop {
                        let p = reqs[y as usize].parent;
                        if p == NIL || reqs[p as usize].left == y {
                            x = p;
                            break;
                        }
                        y = p;
                    }
                }
            }
            if count != q.queued {
                return Err("queue count differs from its tree");
            }
            let mut fifo = 0u32;
            for d in 0..2 {
                let mut x = q.fifo_head[d];
                let mut last = NIL;
                while x != NIL {
                    fifo += 1;
                    if fifo > q.queued {
                        return Err("fifo longer than the queue");
                    }
                    let r = &reqs[x as usize];
                    if r.state != RqState::Queued || r.queue != qi || usize::from(r.sync) != d {
                        return Err("fifo node misplaced");
                    }
                    if r.fprev != last {
                        return Err("fifo back link");
                    }
                    last = x;
                    x = r.fnext;
                }
                if q.fifo_tail[d] != last {
                    return Err("fifo tail");
                }
            }
            if fifo != q.queued {
                return Err("fifo count");
            }
            if (q.next_rq == NIL) != (q.queued == 0) {
                return Err("next_rq vs queued");
            }
            if q.next_rq != NIL {
                let r = &reqs[q.next_rq as usize];
                if r.state != RqState::Queued || r.queue != qi {
                    return Err("next_rq not in queue");
                }
            }
            if !q.used && (q.queued > 0 || q.dispatched > 0 || q.at_head > 0 || q.busy) {
                return Err("free slot with requests");
            }
            if q.queued > 0 && !q.busy {
                return Err("queue with requests not busy");
            }
            if q.busy {
                busy += 1;
                busy_in_class[q.class.index()] += 1;
                if q.wr_coeff > 1 {
                    wr_busy += 1;
                }
                wsum[q.class.index()] += q.weight as u64;
                if s.in_service == qi {
                    if q.heap_id != NO_HEAP {
                        return Err("in-service queue in a heap");
                    }
                } else {
                    if q.queued == 0 {
                        return Err("empty queue waiting in a heap");
                    }
                    let h = q.heap_id as usize;
                    if q.heap_id == NO_HEAP || h / 2 != q.class.index() {
                        return Err("busy queue not in its class heap");
                    }
                    if q.heap_pos >= s.heap_len[h] || qs[q.heap_pos as usize].heap[h] != qi {
                        return Err("heap position");
                    }
                }
            } else if q.heap_id != NO_HEAP {
                return Err("idle queue in a heap");
            }
            total_queued += q.queued as u64;
            total_at_head += q.at_head as u64;
            total_dispatched += q.dispatched as u64;
        }
        if total_queued != s.queued as u64 {
            return Err("total queued");
        }
        if wsum != s.wsum {
            return Err("weight sums");
        }
        if busy != s.busy_queues {
            return Err("busy count");
        }
        if busy_in_class != s.busy_in_class {
            return Err("per-class busy counts");
        }
        if weight_count != s.weight_count {
            return Err("weight counts");
        }
        let mask = weight_count
            .iter()
            .enumerate()
            .fold(0u8, |m, (i, &c)| if c > 0 { m | 1 << i } else { m });
        if mask != s.weight_mask {
            return Err("weight mask");
        }
        if !(-1..=1).contains(&s.hw_tag) || s.hw_tag_samples > HW_QUEUE_SAMPLES {
            return Err("hw_tag state");
        }
        if wr_busy != s.wr_busy_queues {
            return Err("weight-raised busy count");
        }
        for h in 0..HEAPS {
            let len = s.heap_len[h];
            for pos in 1..len {
                let (a, b) = (
                    qs[((pos - 1) / 2) as usize].heap[h],
                    qs[pos as usize].heap[h],
                );
                let ka = if h & 1 == 0 {
                    qs[a as usize].q.finish
                } else {
                    qs[a as usize].q.start
                };
                let kb = if h & 1 == 0 {
                    qs[b as usize].q.finish
                } else {
                    qs[b as usize].q.start
                };
                if vt_gt(ka, kb) {
                    return Err("heap order");
                }
            }
        }
        if s.in_service != NIL && !qs[s.in_service as usize].q.busy {
            return Err("in-service queue not busy");
        }
        if s.wait_request && s.in_service == NIL {
            return Err("idling without a queue");
        }
        let mut at_head = 0u32;
        let mut inflight = 0u64;
        let mut hashed = 0u64;
        for (i, r) in reqs.iter().enumerate() {
            match r.state {
                RqState::AtHead => at_head += 1,
                RqState::InFlight => inflight += 1,
                _ => {}
            }
            let mut x = r.hhead;
            while x != NIL {
                hashed += 1;
                if hashed > n as u64 {
                    return Err("hash cycle");
                }
                let rx = &reqs[x as usize];
                if rx.state != RqState::Queued || bucket(rx.sector, n) != i {
                    return Err("hash entry misplaced");
                }
                x = rx.hnext;
            }
        }
        if hashed != s.queued as u64 {
            return Err("hash count");
        }
        if at_head != s.disp_len || at_head as u64 != total_at_head {
            return Err("at-head count");
        }
        if inflight != s.in_driver as u64 {
            return Err("in-flight count");
        }
        if total_dispatched != inflight {
            return Err("per-queue in-flight counts");
        }
        let len = self.st.burst_len as usize;
        if len >= LARGE_BURST_THRESH {
            return Err("burst list as long as the large-burst threshold");
        }
        let listed = self
            .qs
            .as_ref()
            .iter()
            .filter(|s| s.q.in_burst_list)
            .count();
        if listed != len
            || self.st.burst_list[..len].iter().any(|&x| {
                !self
                    .qs
                    .as_ref()
                    .get(x as usize)
                    .is_some_and(|s| s.q.in_burst_list && s.q.used)
            })
        {
            return Err("burst list and queue flags disagree");
        }
        Ok(())
    }

    fn ctx(&mut self) -> Ctx<'_> {
        Ctx {
            r: self.reqs.as_mut(),
            qs: self.qs.as_mut(),
            s: &mut self.st,
        }
    }
}

/// The merge-hash bucket of a sector among `n` (< 2^32) buckets: a
/// Fibonacci hash, range-reduced by multiply and shift (no division).
fn bucket(sector: Sector, n: usize) -> usize {
    let h = sector.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    ((h * n as u64) >> 32) as usize
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

    // ----- per-queue sort treap ------------------------------------------

    fn key_less(&self, a: u32, b: u32) -> bool {
        let (ra, rb) = (self.rq(a), self.rq(b));
        (ra.sector, a) < (rb.sector, b)
    }

    fn set_child(&mut self, qi: u32, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            self.qm(qi).root = new;
        } else if self.rq(parent).left == old {
            self.rqm(parent).left = new;
        } else {
            self.rqm(parent).right = new;
        }
        if new != NIL {
            self.rqm(new).parent = parent;
        }
    }

    /// Rotates `x` above its parent.
    fn rotate_up(&mut self, qi: u32, x: u32) {
        let p = self.rq(x).parent;
        if p == NIL {
            return;
        }
        let g = self.rq(p).parent;
        if self.rq(p).left == x {
            let b = self.rq(x).right;
            self.rqm(p).left = b;
            if b != NIL {
                self.rqm(b).parent = p;
            }
            self.rqm(x).right = p;
        } else {
            let b = self.rq(x).left;
            self.rqm(p).right = b;
            if b != NIL {
                self.rqm(b).parent = p;
            }
            self.rqm(x).left = p;
        }
        self.rqm(p).parent = x;
        self.set_child(qi, g, p, x);
    }

    #[inline(always)]
    fn tree_insert(&mut self, qi: u32, x: u32) {
        let prio = self.s.next_rand();
        {
            let r = self.rqm(x);
            r.left = NIL;
            r.right = NIL;
            r.parent = NIL;
            r.tprio = prio;
        }
        // Into an empty tree (on a fast device, nearly always) here; the
        // walk and the rotations out of line.
        if self.q(qi).root == NIL {
            self.qm(qi).root = x;
        } else {
            self.tree_insert_below(qi, x);
        }
    }

    /// [`Ctx::tree_insert`] into a non-empty tree, `x`'s links cleared.
    fn tree_insert_below(&mut self, qi: u32, x: u32) {
        let mut cur = self.q(qi).root;
        loop {
            let next = if self.key_less(x, cur) {
                self.rq(cur).left
            } else {
                self.rq(cur).right
            };
            if next == NIL {
                break;
            }
            cur = next;
        }
        if self.key_less(x, cur) {
            self.rqm(cur).left = x;
        } else {
            self.rqm(cur).right = x;
        }
        self.rqm(x).parent = cur;
        while self.rq(x).parent != NIL && self.rq(self.rq(x).parent).tprio > self.rq(x).tprio {
            self.rotate_up(qi, x);
        }
    }

    fn tree_remove(&mut self, qi: u32, x: u32) {
        loop {
            let (l, rt) = (self.rq(x).left, self.rq(x).right);
            let child = match (l, rt) {
                (NIL, NIL) => break,
                (c, NIL) | (NIL, c) => c,
                (a, b) => {
                    if self.rq(a).tprio < self.rq(b).tprio {
                        a
                    } else {
                        b
                    }
                }
            };
            self.rotate_up(qi, child);
        }
        let p = self.rq(x).parent;
        self.set_child(qi, p, x, NIL);
        self.rqm(x).parent = NIL;
    }

    fn tree_first(&self, qi: u32) -> u32 {
        let mut x = self.q(qi).root;
        if x == NIL {
            return NIL;
        }
        while self.rq(x).left != NIL {
            x = self.rq(x).left;
        }
        x
    }

    fn tree_next(&self, mut x: u32) -> u32 {
        if self.rq(x).right != NIL {
            x = self.rq(x).right;
            while self.rq(x).left != NIL {
                x = self.rq(x).left;
            }
            return x;
        }
        loop {
            let p = self.rq(x).parent;
            if p == NIL || self.rq(p).left == x {
                return p;
            }
            x = p;
        }
    }

    fn tree_prev(&self, mut x: u32) -> u32 {
        if self.rq(x).left != NIL {
            x = self.rq(x).left;
            while self.rq(x).right != NIL {
                x = self.rq(x).right;
            }
            return x;
        }
        loop {
            let p = self.rq(x).parent;
            if p == NIL || self.rq(p).right == x {
                return p;
            }
            x = p;
        }
    }

    // ----- merge hash ------------------------------------------------------

    #[inline]
    fn hash_insert(&mut self, x: u32) {
        let b = bucket(self.rq(x).sector, self.r.len());
        let head = self.r[b].hhead;
        self.rqm(x).hprev = NIL;
        self.rqm(x).hnext = head;
        if head != NIL {
            self.rqm(head).hprev = x;
        }
        self.r[b].hhead = x;
    }

    #[inline]
    fn hash_remove(&mut self, x: u32) {
        let (p, nx) = (self.rq(x).hprev, self.rq(x).hnext);
        if p != NIL {
            self.rqm(p).hnext = nx;
        } else {
            let b = bucket(self.rq(x).sector, self.r.len());
            if self.r[b].hhead == x {
                self.r[b].hhead = nx;
            }
        }
        if nx != NIL {
            self.rqm(nx).hprev = p;
        }
        self.rqm(x).hprev = NIL;
        self.rqm(x).hnext = NIL;
    }

    // ----- FIFO lists (per queue and direction) and the at-head list --------

    #[inline]
    fn fifo_push(&mut self, qi: u32, d: usize, x: u32) {
        let tail = self.q(qi).fifo_tail[d];
        self.rqm(x).fprev = tail;
        self.rqm(x).fnext = NIL;
        if tail != NIL {
            self.rqm(tail).fnext = x;
        } else {
            self.qm(qi).fifo_head[d] = x;
        }
        self.qm(qi).fifo_tail[d] = x;
    }

    #[inline]
    fn fifo_remove(&mut self, qi: u32, d: usize, x: u32) {
        let (p, nx) = (self.rq(x).fprev, self.rq(x).fnext);
        if p != NIL {
            self.rqm(p).fnext = nx;
        } else if self.q(qi).fifo_head[d] == x {
            self.qm(qi).fifo_head[d] = nx;
        }
        if nx != NIL {
            self.rqm(nx).fprev = p;
        } else if self.q(qi).fifo_tail[d] == x {
            self.qm(qi).fifo_tail[d] = p;
        }
        self.rqm(x).fprev = NIL;
        self.rqm(x).fnext = NIL;
    }

    /// Puts `x` where `y` is in `y`'s FIFO list; `x` must be unlinked.
    fn fifo_replace(&mut self, qi: u32, d: usize, y: u32, x: u32) {
        let (p, nx) = (self.rq(y).fprev, self.rq(y).fnext);
        self.rqm(x).fprev = p;
        self.rqm(x).fnext = nx;
        if p != NIL {
            self.rqm(p).fnext = x;
        } else {
            self.qm(qi).fifo_head[d] = x;
        }
        if nx != NIL {
            self.rqm(nx).fprev = x;
        } else {
            self.qm(qi).fifo_tail[d] = x;
        }
        self.rqm(y).fprev = NIL;
        self.rqm(y).fnext = NIL;
    }

    fn disp_push(&mut self, x: u32) {
        let tail = self.s.disp_tail;
        self.rqm(x).fprev = tail;
        self.rqm(x).fnext = NIL;
        if tail != NIL {
            self.rqm(tail).fnext = x;
        } else {
            self.s.disp_head = x;
        }
        self.s.disp_tail = x;
        self.s.disp_len += 1;
    }

    fn disp_remove(&mut self, x: u32) {
        let (p, nx) = (self.rq(x).fprev, self.rq(x).fnext);
        if p != NIL {
            self.rqm(p).fnext = nx;
        } else if self.s.disp_head == x {
            self.s.disp_head = nx;
        }
        if nx != NIL {
            self.rqm(nx).fprev = p;
        } else if self.s.disp_tail == x {
            self.s.disp_tail = p;
        }
        self.rqm(x).fprev = NIL;
        self.rqm(x).fnext = NIL;
        self.s.disp_len = self.s.disp_len.saturating_sub(1);
    }

    // ----- service-tree heaps -------------------------------------------------

    /// Heap `h` = class * 2 + kind; kind 0 holds eligible queues keyed by
    /// finish time, kind 1 not-yet-eligible queues keyed by start time.
    #[inline]
    fn heap_key(&self, h: usize, qi: u32) -> u64 {
        let q = self.q(qi);
        if h & 1 == 0 {
            q.finish
        } else {
            q.start
        }
    }

    #[inline]
    fn heap_less(&self, h: usize, a: u32, b: u32) -> bool {
        let (ka, kb) = (self.heap_key(h, a), self.heap_key(h, b));
        if ka == kb {
            a < b
        } else {
            vt_gt(kb, ka)
        }
    }

    #[inline]
    fn heap_at(&self, h: usize, pos: u32) -> u32 {
        self.qs[pos as usize].heap[h]
    }

    #[inline]
    fn heap_set(&mut self, h: usize, pos: u32, qi: u32) {
        self.qs[pos as usize].heap[h] = qi;
        let q = self.qm(qi);
        q.heap_id = h as u8;
        q.heap_pos = pos;
    }

    #[inline]
    fn sift_up(&mut self, h: usize, mut pos: u32) {
        let x = self.heap_at(h, pos);
        while pos > 0 {
            let pp = (pos - 1) / 2;
            let p = self.heap_at(h, pp);
            if !self.heap_less(h, x, p) {
                break;
            }
            self.heap_set(h, pos, p);
            pos = pp;
        }
        self.heap_set(h, pos, x);
    }

    #[inline]
    fn sift_down(&mut self, h: usize, mut pos: u32) {
        let len = self.s.heap_len[h];
        let x = self.heap_at(h, pos);
        loop {
            let l = pos.saturating_mul(2).saturating_add(1);
            if l >= len {
                break;
            }
            let mut c = l;
            if l + 1 < len && self.heap_less(h, self.heap_at(h, l + 1), self.heap_at(h, l)) {
                c = l + 1;
            }
            let cq = self.heap_at(h, c);
            if !self.heap_less(h, cq, x) {
                break;
            }
            self.heap_set(h, pos, cq);
            pos = c;
        }
        self.heap_set(h, pos, x);
    }

    #[inline]
    fn heap_push(&mut self, h: usize, qi: u32) {
        let pos = self.s.heap_len[h];
        if pos as usize >= self.qs.len() {
            return; // cannot happen: a queue is in at most one heap
        }
        self.s.heap_len[h] += 1;
        self.heap_set(h, pos, qi);
        self.sift_up(h, pos);
    }

    #[inline(always)]
    fn heap_remove(&mut self, qi: u32) {
        let h = self.q(qi).heap_id;
        if h != NO_HEAP {
            self.heap_remove_from(qi, h as usize);
        }
    }

    /// [`Ctx::heap_remove`] for a queue in heap `h`.
    fn heap_remove_from(&mut self, qi: u32, h: usize) {
        let pos = self.q(qi).heap_pos;
        let len = self.s.heap_len[h];
        self.qm(qi).heap_id = NO_HEAP;
        if len == 0 || pos >= len || self.heap_at(h, pos) != qi {
            return;
        }
        let last = len - 1;
        self.s.heap_len[h] = last;
        if pos != last {
            let y = self.heap_at(h, last);
            self.heap_set(h, pos, y);
            self.sift_down(h, pos);
            let p2 = self.q(y).heap_pos;
            self.sift_up(h, p2);
        }
        self.qs[last as usize].heap[h] = NIL;
    }

    /// Puts a busy, not in-service queue into its class's service tree.
    #[inline]
    fn enqueue_entity(&mut self, qi: u32) {
        let c = self.q(qi).class.index();
        let eligible = !vt_gt(self.q(qi).start, self.s.vtime[c]);
        self.heap_push(c * 2 + usize::from(!eligible), qi);
    }

    /// B-WF2Q+ selection in class `c`: jump the virtual time if nothing is
    /// eligible, then take the eligible queue with the smallest finish.
    #[inline]
    fn pick_in_class(&mut self, c: usize) -> u32 {
        let (eh, ih) = (c * 2, c * 2 + 1);
        if self.s.heap_len[eh] == 0 && self.s.heap_len[ih] > 0 {
            let min_start = self.q(self.heap_at(ih, 0)).start;
            if vt_gt(min_start, self.s.vtime[c]) {
                self.s.vtime[c] = min_start;
            }
        }
        while self.s.heap_len[ih] > 0 {
            let top = self.heap_at(ih, 0);
            if vt_gt(self.q(top).start, self.s.vtime[c]) {
                break;
            }
            self.heap_remove(top);
            self.heap_push(eh, top);
        }
        if self.s.heap_len[eh] == 0 {
            return NIL;
        }
        let top = self.heap_at(eh, 0);
        self.heap_remove(top);
        top
    }

    // ----- charging and virtual time ------------------------------------------

    /// `bfq_serv_to_charge`.
    #[inline]
    fn charge(&self, x: u32, qi: u32) -> u64 {
        let r = self.rq(x);
        let s = r.sectors as u64;
        if r.sync || self.q(qi).wr_coeff > 1 {
            s
        } else {
            s * ASYNC_CHARGE_FACTOR
        }
    }

    /// `bfq_bfqq_served`.
    #[inline]
    fn served(&mut self, qi: u32, served: u64) {
        let served = served.min(MAX_CHARGE);
        let c = self.q(qi).class.index();
        let q = self.qm(qi);
        if q.wr_coeff > 1 {
            q.service_from_wr = q.service_from_wr.saturating_add(served);
        }
        q.service_from_backlogged = q.service_from_backlogged.saturating_add(served);
        q.service = q.service.saturating_add(served);
        let wsum = self.s.wsum[c].clamp(1, u32::MAX as u64) as u32;
        self.s.vtime[c] = self.s.vtime[c].wrapping_add(vt_delta(served, wsum));
    }

    fn set_weight(&mut self, qi: u32, w: u32) {
        let q = self.q(qi);
        if q.busy {
            let (c, old) = (q.class.index(), q.weight as u64);
            self.s.wsum[c] = self.s.wsum[c].saturating_sub(old) + w as u64;
        }
        self.qm(qi).weight = w;
        self.sync_weight_count(qi);
    }

    /// Keeps the queue's place in the weight counts (BFQ's
    /// `bfq_weights_tree_add` and `_remove`) in step with its state: call
    /// after anything that may change whether it is active (busy or with
    /// requests in flight), weight-raised, or its weight.
    #[inline(always)]
    fn sync_weight_count(&mut self, qi: u32) {
        // Called on nearly every state change, which rarely moves the
        // queue's slot: the comparison stays in the caller.
        let q = self.q(qi);
        let (want, have) = (wanted_slot(q), q.wc_slot);
        if want != have {
            self.move_weight_count(qi, have, want);
        }
    }

    /// [`Ctx::sync_weight_count`] when the queue's slot changes.
    #[inline(never)]
    fn move_weight_count(&mut self, qi: u32, have: u8, want: u8) {
        if have != NO_SLOT {
            let c = &mut self.s.weight_count[have as usize];
            *c = c.saturating_sub(1);
            if *c == 0 {
                self.s.weight_mask &= !(1 << have);
            }
        }
        if want != NO_SLOT {
            self.s.weight_count[want as usize] += 1;
            self.s.weight_mask |= 1 << want;
        }
        self.qm(qi).wc_slot = want;
    }

    fn apply_prio(&mut self, qi: u32, prio: IoPrio) {
        let w = ioprio_to_weight(prio.level);
        let q = self.qm(qi);
        if q.class != prio.class {
            q.finish_valid = false;
        }
        q.class = prio.class;
        q.level = prio.level.min(7);
        q.orig_weight = w;
        q.weight = w.saturating_mul(q.wr_coeff);
        q.prio_changed = false;
        self.sync_weight_count(qi);
    }

    /// Makes an idle queue busy (`bfq_add_bfqq_busy` + activation).
    #[inline]
    fn activate(&mut self, qi: u32) {
        if self.q(qi).prio_changed {
            let p = self.q(qi).new_prio;
            self.apply_prio(qi, p);
        }
        let wr = self.q(qi).wr_coeff;
        let ow = self.q(qi).orig_weight;
        self.qm(qi).weight = ow.saturating_mul(wr);
        let c = self.q(qi).class.index();
        let v = self.s.vtime[c];
        let q = &mut self.qs[qi as usize].q;
        // A queue back in time with budget left keeps its place
        // (`non_blocking_wait_rq`): its timestamps are backshifted.
        let backshifted = q.non_blocking_wait_rq && q.finish_valid && vt_gt(v, q.finish);
        q.non_blocking_wait_rq = false;
        let start = if backshifted
            || (q.finish_valid && vt_gt(q.finish, v) && q.finish.wrapping_sub(v) < MAX_VTIME_AHEAD)
        {
            q.finish
        } else {
            v
        };
        q.start = start;
        q.finish = start.wrapping_add(vt_delta(q.budget, q.weight));
        if backshifted && vt_gt(v, q.finish) {
            let delta = v.wrapping_sub(q.finish) / q.wr_coeff.max(1) as u64;
            q.start = q.start.wrapping_add(delta);
            q.finish = q.finish.wrapping_add(delta);
        }
        q.finish_valid = true;
        q.busy = true;
        let w = q.weight as u64;
        if q.wr_coeff > 1 {
            self.s.wr_busy_queues += 1;
        }
        self.s.wsum[c] = self.s.wsum[c].saturating_add(w);
        self.s.busy_queues += 1;
        self.s.busy_in_class[c] += 1;
        self.sync_weight_count(qi);
        self.enqueue_entity(qi);
    }

    /// Makes a busy queue idle, remembering its finish time
    /// (`bfq_del_bfqq_busy`).
    #[inline]
    fn deactivate(&mut self, qi: u32) {
        if !self.q(qi).busy {
            return;
        }
        self.heap_remove(qi);
        let in_service = self.s.in_service == qi;
        let q = &mut self.qs[qi as usize].q;
        let (c, w) = (q.class.index(), q.weight as u64);
        if q.wr_coeff > 1 {
            self.s.wr_busy_queues = self.s.wr_busy_queues.saturating_sub(1);
        }
        if in_service {
            q.finish = q.start.wrapping_add(vt_delta(q.service, q.weight));
            self.s.in_service = NIL;
            self.s.wait_request = false;
        }
        self.s.wsum[c] = self.s.wsum[c].saturating_sub(w);
        self.s.busy_queues = self.s.busy_queues.saturating_sub(1);
        self.s.busy_in_class[c] = self.s.busy_in_class[c].saturating_sub(1);
        self.qm(qi).busy = false;
        self.sync_weight_count(qi);
    }

    /// Repositions a busy queue after its budget changed (`bfq_requeue_bfqq`
    /// for a queue not in service).
    fn reposition(&mut self, qi: u32) {
        if !self.q(qi).busy || self.s.in_service == qi {
            return;
        }
        self.heap_remove(qi);
        let q = self.qm(qi);
        q.finish = q.start.wrapping_add(vt_delta(q.budget, q.weight));
        self.enqueue_entity(qi);
    }

    /// `bfq_updated_next_req`.
    #[inline]
    fn updated_next_req(&mut self, qi: u32) {
        let next_rq = self.q(qi).next_rq;
        if next_rq == NIL || self.s.in_service == qi {
            return;
        }
        let c = self.charge(next_rq, qi);
        let q = self.q(qi);
        let nb = q.max_budget.max(c).max(q.service);
        if nb != q.budget {
            self.qm(qi).budget = nb;
            self.reposition(qi);
        }
    }

    // ----- request choice -------------------------------------------------------

    /// `bfq_choose_req`: the better of two requests to serve after `last`.
    #[inline]
    fn choose_req(&self, r1: u32, r2: u32, last: Sector) -> u32 {
        if r1 == NIL || r1 == r2 {
            return r2;
        }
        if r2 == NIL {
            return r1;
        }
        let (a, b) = (self.rq(r1), self.rq(r2));
        if a.sync && !b.sync {
            return r1;
        } else if b.sync && !a.sync {
            return r2;
        }
        let (s1, s2) = (a.sector, b.sector);
        let back_max = self.s.back_max.saturating_mul(2);
        let pen = self.s.back_penalty;
        let dist = |s: Sector| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s.saturating_add(back_max) >= last {
                Some((last - s).saturating_mul(pen))
            } else {
                None
            }
        };
        match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    r1
                } else {
                    r2
                }
            }
            (Some(_), None) => r1,
            (None, Some(_)) => r2,
            (None, None) => {
                if s1 <= s2 {
                    r1
                } else {
                    r2
                }
            }
        }
    }

    /// `bfq_check_fifo`: at most once per service slot, the oldest
    /// request if its FIFO deadline passed.
    fn check_fifo(&mut self, qi: u32, last: u32, now: Nanos) -> u32 {
        if self.q(qi).fifo_checked {
            return NIL;
        }
        self.qm(qi).fifo_checked = true;
        let mut best = NIL;
        for d in [1usize, 0] {
            let h = self.q(qi).fifo_head[d];
            let h = if h == last { self.rq(h).fnext } else { h };
            if h != NIL
                && now >= self.rq(h).fifo_time
                && (best == NIL || self.rq(h).fifo_time < self.rq(best).fifo_time)
            {
                best = h;
            }
        }
        best
    }

    /// `bfq_find_next_rq`: what follows `last` (still in the tree).
    fn find_next_rq(&mut self, qi: u32, last: u32, now: Nanos) -> u32 {
        let f = self.check_fifo(qi, last, now);
        if f != NIL {
            return f;
        }
        let prev = self.tree_prev(last);
        let mut next = self.tree_next(last);
        if next == NIL {
            let first = self.tree_first(qi);
            if first != last {
                next = first;
            }
        }
        self.choose_req(next, prev, self.rq(last).sector)
    }

    /// Unlinks a queued request from its queue (`bfq_remove_request`).
    #[inline]
    fn remove_queued(&mut self, x: u32, now: Nanos) {
        let qi = self.rq(x).queue;
        let d = usize::from(self.rq(x).sync);
        let r = self.rq(x);
        if r.left == NIL && r.right == NIL && r.parent == NIL && self.q(qi).root == x {
            // The queue's only queued request (on a fast device, nearly
            // every one), so the only one in its FIFO list too: the same
            // unlinking without looking for a successor.
            let r = self.rqm(x);
            r.fprev = NIL;
            r.fnext = NIL;
            let q = self.qm(qi);
            if q.next_rq == x {
                // What `check_fifo` notes on its way to finding nothing.
                q.fifo_checked = true;
            }
            q.next_rq = NIL;
            q.root = NIL;
            if q.fifo_head[d] == x {
                q.fifo_head[d] = NIL;
            }
            if q.fifo_tail[d] == x {
                q.fifo_tail[d] = NIL;
            }
        } else {
            if self.q(qi).next_rq == x {
                let n = self.find_next_rq(qi, x, now);
                self.qm(qi).next_rq = if n == x { NIL } else { n };
            }
            self.fifo_remove(qi, d, x);
            self.tree_remove(qi, x);
        }
        self.hash_remove(x);
        self.qm(qi).queued = self.q(qi).queued.saturating_sub(1);
        self.s.queued = self.s.queued.saturating_sub(1);
        if self.q(qi).root == NIL {
            self.qm(qi).next_rq = NIL;
            if self.q(qi).busy && self.s.in_service != qi {
                self.deactivate(qi);
            }
        } else {
            self.updated_next_req(qi);
        }
    }

    // ----- weight raising ---------------------------------------------------------

    fn end_wr(&mut self, qi: u32, now: Nanos) {
        let ow = self.q(qi).orig_weight;
        if self.q(qi).busy && self.q(qi).wr_coeff > 1 {
            self.s.wr_busy_queues = self.s.wr_busy_queues.saturating_sub(1);
        }
        let q = self.qm(qi);
        q.wr_coeff = 1;
        q.wr_cur_max_time = 0;
        q.last_wr_start_finish = now;
        self.set_weight(qi, ow);
    }

    fn is_srt(&self, qi: u32) -> bool {
        self.q(qi).wr_coeff > 1 && self.q(qi).wr_cur_max_time == WR_RT_MAX_TIME
    }

    /// `bfq_update_wr_data`, at each dispatch from the in-service queue.
    #[inline]
    fn update_wr_data(&mut self, qi: u32, now: Nanos) {
        if self.q(qi).wr_coeff <= 1 {
            return;
        }
        let q = self.q(qi);
        let (last_wr, srt_switch, ow) = (
            q.last_wr_start_finish,
            q.wr_start_at_switch_to_srt,
            q.orig_weight,
        );
        if q.in_large_burst {
            // Raised before the burst it belongs to turned out large.
            self.end_wr(qi, now);
        } else if now > last_wr.saturating_add(q.wr_cur_max_time) {
            let srt_over = srt_switch
                .map(|t| now > t.saturating_add(self.s.wr_duration()))
                .unwrap_or(true);
            if !self.is_srt(qi) || srt_over {
                self.end_wr(qi, now);
            } else {
                // Back from soft real-time to interactive raising.
                let dur = self.s.wr_duration();
                let qm = self.qm(qi);
                qm.wr_coeff = WR_COEFF;
                qm.wr_cur_max_time = dur;
                qm.last_wr_start_finish = srt_switch.unwrap_or(0);
                self.set_weight(qi, ow * WR_COEFF);
            }
        }
        if self.q(qi).wr_coeff > 1
            && !self.is_srt(qi)
            && self.q(qi).service_from_wr > MAX_SERVICE_FROM_WR
        {
            // Greedy: large consumption while raised.
            self.end_wr(qi, now);
        }
    }

    /// `bfq_bfqq_softrt_next_start`.
    fn softrt_next_start(&self, qi: u32, now: Nanos) -> Nanos {
        let q = self.q(qi);
        let by_rate = q.last_idle_bklogged.saturating_add(
            NSEC_PER_SEC.saturating_mul(q.service_from_backlogged) / WR_MAX_SOFTRT_RATE,
        );
        let by_idle = now
            .saturating_add(self.s.slice_idle)
            .saturating_add(4 * NSEC_PER_MSEC);
        q.soft_rt_next_start.max(by_rate).max(by_idle)
    }

    // ----- what idling decisions look at ------------------------------------------

    /// `bfq_update_hw_tag`, at each completion (before the in-driver count
    /// drops): over `HW_QUEUE_SAMPLES` completions that had more than
    /// `HW_QUEUE_THRESHOLD` requests queued or in the driver, did the
    /// driver ever hold more than `HW_QUEUE_THRESHOLD`? Completions
    /// while the in-service queue has a short think time but few requests
    /// (so that it alone may keep the driver short) do not count.
    #[inline]
    fn update_hw_tag(&mut self) {
        let s = &mut *self.s;
        let in_driver = match s.device_depth {
            0 => s.in_driver,
            d => s.in_driver.min(d),
        };
        s.max_rq_in_driver = s.max_rq_in_driver.max(in_driver);
        if s.hw_tag == 1 {
            return;
        }
        if s.in_driver.saturating_add(s.queued) <= HW_QUEUE_THRESHOLD {
            return;
        }
        let is = s.in_service;
        if is != NIL {
            let q = &self.qs[is as usize].q;
            if q.has_short_ttime
                && q.dispatched.saturating_add(q.queued) < HW_QUEUE_THRESHOLD
                && s.in_driver < HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        let samples = s.hw_tag_samples;
        s.hw_tag_samples = samples + 1;
        if samples < HW_QUEUE_SAMPLES {
            return;
        }
        s.hw_tag = (s.max_rq_in_driver > HW_QUEUE_THRESHOLD) as i8;
        s.max_rq_in_driver = 0;
        s.hw_tag_samples = 0;
    }

    /// `bfq_update_io_thinktime`, at a request's arrival: when the queue
    /// had nothing queued or in flight, sample the time since its last
    /// completion (at most `2 * slice_idle`) into a decaying average.
    #[inline]
    fn update_io_thinktime(&mut self, qi: u32, now: Nanos) {
        let cap = self.s.slice_idle.saturating_mul(2);
        let q = self.qm(qi);
        if q.dispatched > 0 || q.busy {
            return;
        }
        // C computes this in unsigned arithmetic from a last completion
        // set 1 ns after the queue's creation, so the first sample wraps
        // to the cap when the clock has not moved; here it is 0.
        let elapsed = now.saturating_sub(q.last_end_request).min(cap);
        q.ttime_samples = (7 * q.ttime_samples + 256) / 8;
        q.ttime_total = q
            .ttime_total
            .saturating_mul(7)
            .saturating_add(elapsed.saturating_mul(256))
            / 8;
        q.ttime_mean = q.ttime_total.saturating_add(128) / q.ttime_samples.max(1) as u64;
    }

    /// `bfq_update_has_short_ttime`, at a sync request's arrival (no
    /// burst or split handling: neither is modelled). An exited issuer's
    /// think time is infinite; see [`Bfq::issuer_exit`].
    #[inline]
    fn update_has_short_ttime(&mut self, qi: u32, sync: bool, now: Nanos) {
        let half_slice = self.s.slice_idle / 2;
        if !sync || self.q(qi).class == PrioClass::Idle || self.s.slice_idle == 0 {
            return;
        }
        let q = self.qm(qi);
        let short =
            !(q.exited || (q.ttime_samples > TTIME_VALID_SAMPLES && q.ttime_mean > half_slice));
        let changed = short != q.has_short_ttime;
        q.has_short_ttime = short;
        if changed
            && q.last_serv_time == 0
            && (now >= q.decrease_time.saturating_add(100 * NSEC_PER_MSEC) || !short)
        {
            self.reset_inject_limit(qi, now);
        }
    }

    // ----- injection --------------------------------------------------------------

    /// `bfq_reset_inject_limit`: forget the measured service time; a queue
    /// with a short think time starts with no injection (an injected
    /// request may outlast its think time), one with a long think time
    /// with one request.
    fn reset_inject_limit(&mut self, qi: u32, now: Nanos) {
        self.s.waited_rq = NIL;
        let q = self.qm(qi);
        q.last_serv_time = 0;
        q.inject_limit = if q.has_short_ttime { 0 } else { 1 };
        q.decrease_time = now;
    }

    /// `bfq_update_inject_limit`, when the request whose service time was
    /// being measured completes (before it leaves the drive count): raise
    /// the limit while injection does not stretch the service time by half,
    /// lower it when it does, and keep the shortest time seen without
    /// injection as the baseline.
    fn update_inject_limit(&mut self, qi: u32, now: Nanos) {
        let tot = now.saturating_sub(self.s.last_empty_occupied);
        let (in_driver, injected, max_in_driver) = (
            self.s.in_driver,
            self.s.rqs_injected,
            self.s.max_rq_in_driver,
        );
        let q = self.qm(qi);
        let old = q.inject_limit;
        if q.last_serv_time > 0 && injected {
            let threshold = q.last_serv_time.saturating_mul(3) >> 1;
            if tot >= threshold && old > 0 {
                q.inject_limit -= 1;
                q.decrease_time = now;
            } else if tot < threshold && old <= max_in_driver {
                q.inject_limit += 1;
            }
        }
        if (q.last_serv_time == 0 && in_driver == 1) || tot < q.last_serv_time {
            if q.last_serv_time == 0 {
                q.inject_limit = old.max(1);
            }
            q.last_serv_time = tot;
        } else if !injected && in_driver == 1 {
            q.last_serv_time = tot;
        }
        self.s.waited_rq = NIL;
        self.s.rqs_injected = false;
    }

    /// The sync request of the in-service queue `qi` arrived while the
    /// queue had nothing else outstanding (part of `bfq_add_request`): maybe
    /// start measuring its service time.
    #[inline]
    fn inject_on_arrival(&mut self, qi: u32, now: Nanos) {
        if now >= self.q(qi).decrease_time.saturating_add(NSEC_PER_SEC) {
            self.reset_inject_limit(qi, now);
        }
        let q = self.q(qi);
        if self.s.in_service == qi
            && (self.s.in_driver == 0
                || (q.last_serv_time > 0 && self.s.rqs_injected && self.s.in_driver > 0))
            && now >= q.decrease_time.saturating_add(10 * NSEC_PER_MSEC)
        {
            self.s.last_empty_occupied = now;
            self.s.wait_dispatch = true;
            if self.s.in_driver == 0 {
                self.s.rqs_injected = false;
            }
        }
    }

    /// `bfq_choose_bfqq_for_injection`: a queue whose next request may go
    /// to the drive while the in-service queue `is` waits for its own, if
    /// fewer than its inject limit are in the drive. Queues are searched in
    /// service-tree order. Only weight-raised queues are injected; C also
    /// injects others when `is` is not raised or thinks long, but a
    /// request of a non-raised queue slipped into every think time of
    /// another undoes their weights: two sequential readers weighted 2:1
    /// on a 2-deep null_blk got 1.46 to 1.91 instead of 1.83 to 2.06.
    fn choose_for_injection(&mut self, is: u32, now: Nanos) -> Option<u32> {
        let q = self.q(is);
        let mut limit = q.inject_limit;
        // No baseline yet and the drive wasted a whole idle slice: one.
        if limit == 0
            && q.last_serv_time == 0
            && self.s.wait_request
            && now >= self.s.last_idling_start.saturating_add(self.s.slice_idle)
        {
            limit = 1;
        }
        if self.s.in_driver >= limit {
            return None;
        }
        for h in 0..HEAPS {
            for pos in 0..self.s.heap_len[h] {
                let j = self.heap_at(h, pos);
                let jq = self.q(j);
                if j == is || jq.next_rq == NIL || jq.wr_coeff == 1 {
                    continue;
                }
                if self.charge(jq.next_rq, j) > self.budget_left(j) {
                    continue;
                }
                // Only one large request at a time on a non-rotational
                // drive: it would delay `is`'s next one too long.
                if self.s.nonrot
                    && self.rq(jq.next_rq).sectors >= SECT_THR_NONROT
                    && self.s.in_driver >= 1
                {
                    continue;
                }
                self.s.rqs_injected = true;
                return Some(j);
            }
        }
        None
    }

    /// `bfq_update_io_intensity`, at a sync request's arrival (before it
    /// is queued): time the queue spent with nothing queued or in flight
    /// counts as idle; it is I/O bound when idle at most a fifth of the
    /// window, which keeps at most about 200 ms of the past.
    #[inline]
    fn update_io_intensity(&mut self, qi: u32, now: Nanos) {
        let q = self.qm(qi);
        let tot_io_time = now.saturating_sub(q.io_start_time);
        if q.queued == 0 && q.dispatched == 0 {
            // Saturating where C wraps, as in update_io_thinktime.
            q.tot_idle_time = q
                .tot_idle_time
                .saturating_add(now.saturating_sub(q.last_end_request));
        }
        if q.just_created {
            return;
        }
        q.io_bound = q.tot_idle_time.saturating_mul(5) <= tot_io_time;
        if tot_io_time > IO_INTENSITY_WINDOW {
            q.io_start_time = now - (tot_io_time >> 1);
            q.tot_idle_time >>= 1;
        }
    }

    // ----- idling and expiration -------------------------------------------------

    #[inline]
    fn seeky(&self, qi: u32) -> bool {
        self.q(qi).seek_history.count_ones() > 19
    }

    /// `bfq_asymmetric_scenario`: whether the active queues may not all
    /// be owed the same share, so that not idling for `qi` could cost it
    /// its share: the active queues that are not weight-raised have more
    /// than one weight (unless `qi` has the smallest of them), or queues
    /// of more than one class are busy. (No cgroups, so no group term.)
    #[inline]
    fn asymmetric_scenario(&self, qi: u32) -> bool {
        let mask = self.s.weight_mask;
        let slot = self.q(qi).wc_slot;
        let smallest_weight = slot != NO_SLOT && mask.trailing_zeros() == slot as u32;
        let varied_queue_weights = !smallest_weight && mask.count_ones() > 1;
        let multiple_classes_busy = self.s.busy_in_class.iter().filter(|&&n| n > 0).count() > 1;
        varied_queue_weights || multiple_classes_busy
    }

    /// `idling_boosts_thr_without_issues`: idling raises throughput (a
    /// rotational device without internal queueing, or a sequential,
    /// I/O-bound queue with a short think time on a device that is not
    /// both non-rotational and queueing), and no weight-raised queue is
    /// busy (which idling for others would hurt).
    #[inline]
    fn idling_boosts_thr_without_issues(&self, qi: u32) -> bool {
        let q = self.q(qi);
        if q.exited {
            return false;
        }
        // hw_tag -1 (not yet known) counts as queueing, as in C.
        let queueing = self.s.hw_tag != 0;
        let rot_without_queueing = !self.s.nonrot && !queueing;
        let sequential_and_io_bound = !self.seeky(qi) && q.io_bound && q.has_short_ttime;
        let idling_boosts_thr =
            rot_without_queueing || ((!self.s.nonrot || !queueing) && sequential_and_io_bound);
        idling_boosts_thr && self.s.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees`: without idling `qi` could
    /// lose its share: it is weight-raised and non-raised queues are busy
    /// (or many other requests are in the drive), or the scenario is
    /// asymmetric, or it is the only busy queue (kept plugged in case a
    /// lighter queue turns up).
    #[inline]
    fn idling_needed_for_service_guarantees(&self, qi: u32) -> bool {
        let q = self.q(qi);
        if q.exited {
            return false;
        }
        let tot_busy = self.s.busy_queues;
        (q.wr_coeff > 1
            && (self.s.wr_busy_queues < tot_busy
                || self.s.in_driver >= q.dispatched.saturating_add(4)))
            || self.asymmetric_scenario(qi)
            || tot_busy == 1
    }

    /// `bfq_better_to_idle`: whether to plug dispatching while `qi` (in
    /// service, empty) waits for its next request. Never for an exited
    /// issuer (no process left to send one); always with
    /// `strict_guarantees`; never with `slice_idle` 0, for async queues or
    /// the idle class; otherwise when idling boosts throughput without
    /// issues or is needed for service guarantees.
    #[inline]
    fn better_to_idle(&self, qi: u32) -> bool {
        let q = self.q(qi);
        if q.exited {
            return false;
        }
        if self.s.strict_guarantees {
            return true;
        }
        if self.s.slice_idle == 0 || !q.sync || q.class == PrioClass::Idle {
            return false;
        }
        self.idling_boosts_thr_without_issues(qi) || self.idling_needed_for_service_guarantees(qi)
    }

    #[inline]
    fn must_idle(&self, qi: u32) -> bool {
        self.q(qi).queued == 0 && self.better_to_idle(qi)
    }

    /// The idle slice for the in-service queue (`bfq_arm_slice_timer`):
    /// short for a seeky queue unless it is raised or the scenario is
    /// asymmetric, long for a raised one.
    #[inline]
    fn idle_slice(&self, qi: u32) -> Nanos {
        let sl = self.s.slice_idle;
        if self.seeky(qi) && self.q(qi).wr_coeff == 1 && !self.asymmetric_scenario(qi) {
            sl.min(MIN_TT)
        } else if self.q(qi).wr_coeff > 1 {
            sl.max(20 * NSEC_PER_MSEC)
        } else {
            sl
        }
    }

    #[inline]
    fn arm_idle(&mut self, qi: u32, now: Nanos) {
        self.s.wait_request = true;
        self.s.idle_deadline = now.saturating_add(self.idle_slice(qi));
        self.s.last_idling_start = now;
    }

    #[inline]
    fn budget_left(&self, qi: u32) -> u64 {
        let q = self.q(qi);
        q.budget.saturating_sub(q.service)
    }

    #[inline]
    fn budget_timed_out(&self, qi: u32, now: Nanos) -> bool {
        !matches!(self.q(qi).budget_timeout, Some(t) if now < t)
    }

    /// `bfq_may_expire_for_budg_timeout`.
    #[inline]
    fn may_expire_for_budget_timeout(&self, qi: u32, now: Nanos) -> bool {
        (!self.s.wait_request || self.budget_left(qi) >= self.q(qi).budget / 3)
            && self.budget_timed_out(qi, now)
    }

    /// `bfq_bfqq_is_slow`: whether the queue got little done in its slot,
    /// and the slot's length in ms.
    #[inline]
    fn is_slow(&self, qi: u32, compensate: bool, now: Nanos) -> (bool, u64) {
        if !self.q(qi).sync {
            return (false, 0);
        }
        let end = if compensate {
            self.s.last_idling_start
        } else {
            now
        };
        let delta_us = end.saturating_sub(self.s.last_budget_start) / NSEC_PER_USEC;
        let mut slow = self.seeky(qi);
        if delta_us < 1000 {
            let ms = if self.s.nonrot {
                MIN_TT / NSEC_PER_MSEC
            } else {
                DEFAULT_SLICE_IDLE / NSEC_PER_MSEC
            };
            return (slow, ms);
        }
        if delta_us > 20000 {
            slow = self.q(qi).service < self.s.max_budget / 2;
        }
        (slow, delta_us / 1000)
    }

    /// `bfq_bfqq_charge_time`.
    #[inline]
    fn charge_time(&mut self, qi: u32, time_ms: u64) {
        let timeout_ms = self.s.timeout_ms();
        let bounded = time_ms.min(timeout_ms);
        let for_time = self.s.max_budget.saturating_mul(bounded) / timeout_ms;
        let q = *self.q(qi);
        let tot = for_time.max(q.service);
        if tot > q.budget {
            self.qm(qi).budget = tot;
        }
        self.served(qi, tot - q.service);
    }

    /// `__bfq_bfqq_recalc_budget`.
    #[inline]
    fn recalc_budget(&mut self, qi: u32, reason: Expiration) {
        let min_budget = self.s.min_budget();
        let dev_max = self.s.max_budget;
        let q = *self.q(qi);
        let mut budget = if q.wr_coeff == 1 {
            q.max_budget
        } else {
            2 * min_budget
        };
        if q.sync && q.wr_coeff == 1 {
            budget = match reason {
                Expiration::TooIdle => {
                    if q.dispatched > 0 {
                        budget.saturating_mul(2).min(dev_max)
                    } else if budget > 5 * min_budget {
                        budget - 4 * min_budget
                    } else {
                        min_budget
                    }
                }
                Expiration::BudgetTimeout => budget.saturating_mul(2).min(dev_max),
                Expiration::BudgetExhausted => budget.saturating_mul(4).min(dev_max),
                Expiration::NoMoreRequests => q.service.max(min_budget),
                Expiration::Preempted => return,
            };
        } else if !q.sync {
            budget = dev_max;
        }
        let mut mb = budget.max(1);
        if self.s.budgets_assigned >= STATS_MIN_BUDGETS && self.s.user_max_budget == 0 {
            mb = mb.min(dev_max);
        }
        self.qm(qi).max_budget = mb;
        if q.next_rq != NIL {
            let c = self.charge(q.next_rq, qi);
            self.qm(qi).budget = mb.max(c);
        }
    }

    /// `bfq_bfqq_expire`: the in-service queue stops being served.
    #[inline]
    fn expire(&mut self, qi: u32, reason: Expiration, compensate: bool, now: Nanos) {
        if self.s.in_service != qi {
            return;
        }
        // No service time to measure for it any more.
        self.s.rqs_injected = false;
        self.s.wait_dispatch = false;
        self.s.waited_rq = NIL;
        let (slow, delta_ms) = self.is_slow(qi, compensate, now);
        if self.q(qi).wr_coeff == 1
            && (slow
                || (reason == Expiration::BudgetTimeout
                    && self.budget_left(qi) >= self.q(qi).budget / 3))
        {
            self.charge_time(qi, delta_ms);
        }
        if self.s.low_latency && self.q(qi).wr_coeff == 1 {
            self.qm(qi).last_wr_start_finish = now;
        }
        if self.s.low_latency && self.q(qi).queued == 0 {
            if self.q(qi).dispatched == 0 {
                let t = self.softrt_next_start(qi, now);
                self.qm(qi).soft_rt_next_start = t;
            } else {
                self.qm(qi).softrt_update = true;
            }
        }
        self.recalc_budget(qi, reason);
        self.s.wait_request = false;
        if self.q(qi).queued == 0 {
            if self.q(qi).dispatched == 0 {
                self.qm(qi).budget_timeout = Some(now);
            }
            self.deactivate(qi);
        } else {
            // Requeue: charge the service received, then queue the next slot.
            self.s.in_service = NIL;
            if self.q(qi).prio_changed {
                let p = self.q(qi).new_prio;
                let q = *self.q(qi);
                let f = q.start.wrapping_add(vt_delta(q.service, q.weight));
                self.qm(qi).finish = f;
                self.deactivate(qi);
                self.qm(qi).service = 0;
                self.apply_prio(qi, p);
                self.activate(qi);
                self.maybe_release(qi);
                return;
            }
            let q = *self.q(qi);
            let f = q.start.wrapping_add(vt_delta(q.service, q.weight));
            let qm = self.qm(qi);
            qm.start = f;
            qm.finish = f.wrapping_add(vt_delta(q.budget, q.weight));
            self.enqueue_entity(qi);
        }
        if !self.q(qi).busy
            && reason != Expiration::BudgetTimeout
            && reason != Expiration::BudgetExhausted
        {
            // It may come back in time and use the rest of its budget.
            self.qm(qi).non_blocking_wait_rq = true;
        } else {
            self.qm(qi).service = 0;
        }
        self.maybe_release(qi);
    }

    /// Starts serving the next queue (`bfq_set_in_service_queue`).
    #[inline]
    fn set_in_service(&mut self, now: Nanos) -> u32 {
        let mut qi = NIL;
        for c in 0..PrioClass::COUNT {
            qi = self.pick_in_class(c);
            if qi != NIL {
                break;
            }
        }
        if qi == NIL {
            return NIL;
        }
        self.s.in_service = qi;
        self.s.wait_request = false;
        self.s.budgets_assigned = (self.s.budgets_assigned * 7 + 256) / 8;
        let q = *self.q(qi);
        let mut budget = q.budget;
        if q.next_rq != NIL {
            budget = budget.max(self.charge(q.next_rq, qi));
        }
        let coeff = if self.is_srt(qi) {
            1
        } else {
            (q.weight / q.orig_weight.max(1)).max(1) as u64
        };
        let to = now.saturating_add(self.s.timeout.saturating_mul(coeff));
        let qm = self.qm(qi);
        qm.fifo_checked = false;
        qm.budget = budget;
        qm.service = 0;
        qm.budget_timeout = Some(to);
        self.s.last_budget_start = now;
        qi
    }

    /// Frees an exited issuer's slot once nothing of it remains.
    #[inline]
    fn maybe_release(&mut self, qi: u32) {
        // Called on most dispatches and completions: the test that almost
        // always ends it, kept where the caller is.
        if self.q(qi).exited {
            self.release_if_done(qi);
        }
    }

    /// [`Ctx::maybe_release`] for a queue whose issuer exited.
    fn release_if_done(&mut self, qi: u32) {
        let q = self.q(qi);
        if q.used
            && q.exited
            && q.queued == 0
            && q.at_head == 0
            && q.dispatched == 0
            && !q.busy
            && q.heap_id == NO_HEAP
            && self.s.in_service != qi
        {
            self.sync_weight_count(qi);
            // As bfq_put_queue(): an exiting process no longer counts in
            // the burst it was created in.
            if self.burst_list_del(qi) && self.s.burst_size > 0 {
                self.s.burst_size -= 1;
            }
            *self.qm(qi) = Queue::default();
        }
    }

    // ----- peak rate --------------------------------------------------------------

    fn reset_rate_computation(&mut self, rq: Option<(Sector, u32)>, now: Nanos) {
        if let Some((_, sectors)) = rq {
            self.s.last_dispatch = now;
            self.s.first_dispatch = now;
            self.s.peak_rate_samples = 1;
            self.s.sequential_samples = 0;
            self.s.tot_sectors_dispatched = sectors as u64;
            self.s.last_rq_max_size = sectors as u64;
        } else {
            self.s.peak_rate_samples = 0;
        }
    }

    /// `bfq_update_rate_reset`.
    fn update_rate_reset(&mut self, rq: Option<(Sector, u32)>, now: Nanos) {
        let s = &mut *self.s;
        if s.peak_rate_samples >= RATE_MIN_SAMPLES && s.delta_from_first >= RATE_MIN_INTERVAL {
            s.delta_from_first = s
                .delta_from_first
                .max(s.last_completion.saturating_sub(s.first_dispatch));
            let us = (s.delta_from_first / NSEC_PER_USEC).max(1);
            let mut rate = (s.tot_sectors_dispatched.min(1 << 40) << RATE_SHIFT) / us;
            let samples = s.peak_rate_samples.max(1) as u64;
            let seq = s.sequential_samples as u64;
            let accept =
                !((seq < (3 * samples) >> 2 && rate <= s.peak_rate) || rate > 20 << RATE_SHIFT);
            if accept {
                let w = (9 * seq) / samples;
                let w = 8u64.min(w.saturating_mul(s.delta_from_first) / RATE_REF_INTERVAL);
                let divisor = 10 - w;
                s.peak_rate = s.peak_rate * (divisor - 1) / divisor;
                rate /= divisor;
                s.peak_rate = (s.peak_rate + rate).max(1);
                if s.user_max_budget == 0 {
                    s.max_budget = s.calc_max_budget();
                }
            }
        }
        self.reset_rate_computation(rq, now);
    }

    /// `bfq_update_peak_rate`, at each dispatch.
    #[inline]
    fn update_peak_rate(&mut self, sector: Sector, sectors: u32, now: Nanos) {
        let rq = Some((sector, sectors));
        if self.s.peak_rate_samples == 0 {
            self.reset_rate_computation(rq, now);
        } else {
            let mut update = false;
            if now.saturating_sub(self.s.last_dispatch) > 100 * NSEC_PER_MSEC
                && self.s.in_driver == 0
            {
                update = true;
            } else {
                let s = &mut *self.s;
                s.peak_rate_samples = s.peak_rate_samples.saturating_add(1);
                let dist = sector.abs_diff(s.last_position);
                let seeky = dist > SEEK_THR && (!s.nonrot || sectors < SECT_THR_NONROT);
                if (s.in_driver > 0 || now.saturating_sub(s.last_completion) < MIN_TT) && !seeky {
                    s.sequential_samples = s.sequential_samples.saturating_add(1);
                }
                s.tot_sectors_dispatched = s.tot_sectors_dispatched.saturating_add(sectors as u64);
                if s.peak_rate_samples & 31 != 0 {
                    s.last_rq_max_size = s.last_rq_max_size.max(sectors as u64);
                } else {
                    s.last_rq_max_size = sectors as u64;
                }
                s.delta_from_first = now.saturating_sub(s.first_dispatch);
                if s.delta_from_first >= RATE_REF_INTERVAL {
                    update = true;
                }
            }
            if update {
                self.update_rate_reset(rq, now);
            }
        }
        self.s.last_position = sector.saturating_add(sectors as u64);
        self.s.last_dispatch = now;
    }

    // ----- large bursts -----------------------------------------------------------

    /// Takes `qi` off the burst list if it is on it; tells whether it was.
    fn burst_list_del(&mut self, qi: u32) -> bool {
        if !self.q(qi).in_burst_list {
            return false;
        }
        self.qm(qi).in_burst_list = false;
        let len = self.s.burst_len as usize;
        if let Some(pos) = self.s.burst_list[..len].iter().position(|&x| x == qi) {
            self.s.burst_list[pos] = self.s.burst_list[len - 1];
            self.s.burst_list[len - 1] = NIL;
            self.s.burst_len -= 1;
        }
        true
    }

    /// Empties the burst list.
    fn burst_list_clear(&mut self) {
        for i in 0..self.s.burst_len as usize {
            let x = self.s.burst_list[i];
            self.qm(x).in_burst_list = false;
            self.s.burst_list[i] = NIL;
        }
        self.s.burst_len = 0;
    }

    /// Puts `qi` on the burst list (which is shorter than the threshold:
    /// it is emptied when the burst becomes large).
    fn burst_list_add(&mut self, qi: u32) {
        let len = self.s.burst_len as usize;
        if len < LARGE_BURST_THRESH {
            self.s.burst_list[len] = qi;
            self.s.burst_len += 1;
            self.qm(qi).in_burst_list = true;
        }
    }

    /// `bfq_reset_burst_list`: a new burst starts with `qi`, but only if no
    /// queue is busy (otherwise there is no burst to speak of).
    fn reset_burst_list(&mut self, qi: u32) {
        self.burst_list_clear();
        if self.s.busy_queues == 0 {
            self.burst_list_add(qi);
            self.s.burst_size = 1;
        } else {
            self.s.burst_size = 0;
        }
    }

    /// `bfq_add_to_burst`.
    fn add_to_burst(&mut self, qi: u32) {
        self.s.burst_size += 1;
        if self.s.burst_size as usize == LARGE_BURST_THRESH {
            // Enough queues created shortly after each other: all of
            // them, and every further one until the burst ends, are in a
            // large burst. The list is not needed any more.
            self.s.large_burst = true;
            for i in 0..self.s.burst_len as usize {
                let x = self.s.burst_list[i];
                self.qm(x).in_large_burst = true;
            }
            self.qm(qi).in_large_burst = true;
            self.burst_list_clear();
        } else {
            self.burst_list_add(qi);
        }
    }

    /// `bfq_handle_burst`, for a queue just created (its first request),
    /// when a burst is under way or no queue is busy: many queues created
    /// close together usually serve one task (a `make -j`, a service
    /// starting its workers), which should not be weight-raised as
    /// interactive; a few, as when an application starts, should be.
    fn handle_burst(&mut self, qi: u32, now: Nanos) {
        let q = self.q(qi);
        if q.in_burst_list || q.in_large_burst {
            return;
        }
        let in_interval = matches!(self.s.last_ins_in_burst,
            Some(t) if now.saturating_sub(t) <= BURST_INTERVAL);
        if !in_interval {
            self.s.large_burst = false;
            self.reset_burst_list(qi);
        } else if self.s.large_burst {
            self.qm(qi).in_large_burst = true;
        } else {
            self.add_to_burst(qi);
        }
        self.s.last_ins_in_burst = Some(now);
    }

    // ----- the operations ---------------------------------------------------------

    fn init_queue(&mut self, qi: u32, prio: IoPrio, sync: bool, now: Nanos) {
        let mb = self.s.cur_max_budget() * 2 / 3;
        *self.qm(qi) = Queue::default();
        let q = self.qm(qi);
        q.used = true;
        self.apply_prio(qi, prio);
        let q = self.qm(qi);
        q.max_budget = mb.max(1);
        q.last_wr_start_finish = now;
        q.soft_rt_next_start = now;
        // bfq_init_bfqq: tentatively a short think time (sync queues not
        // of the idle class), I/O bound, just created.
        q.has_short_ttime = sync && q.class != PrioClass::Idle;
        q.last_end_request = now.saturating_add(1);
        q.io_start_time = now;
        q.decrease_time = now;
    }

    /// `bfq_bfqq_handle_idle_busy_switch`; tells whether the queue
    /// counted as interactive.
    #[inline]
    fn idle_busy_switch(&mut self, qi: u32, now: Nanos) -> bool {
        if self.q(qi).prio_changed {
            let p = self.q(qi).new_prio;
            self.apply_prio(qi, p);
        }
        let q = *self.q(qi);
        let old_wr = q.wr_coeff;
        let idle_long = q.dispatched == 0
            && !matches!(q.budget_timeout, Some(t) if now <= t.saturating_add(WR_MIN_IDLE_TIME));
        let soft_rt = q.seek_history != u32::MAX
            && !q.in_large_burst
            && now > q.soft_rt_next_start
            && q.dispatched == 0
            && q.orig_weight == DEFAULT_WEIGHT;
        let interactive = !q.in_large_burst && idle_long && q.orig_weight == DEFAULT_WEIGHT;
        let deserves =
            self.s.low_latency && (q.wr_coeff > 1 || (q.sync && (interactive || soft_rt)));

        // bfq_bfqq_update_budg_for_activation
        let c = if q.next_rq != NIL {
            self.charge(q.next_rq, qi)
        } else {
            0
        };
        let arrived_in_time = now
            <= q.last_end_request
                .saturating_add(self.s.slice_idle.saturating_mul(3));
        let budget_left = q.budget.saturating_sub(q.service);
        let wants_to_preempt = q.non_blocking_wait_rq && arrived_in_time && budget_left > 0;
        {
            let qm = self.qm(qi);
            if wants_to_preempt {
                qm.budget = budget_left.min(q.max_budget);
            } else {
                qm.budget = q.max_budget.max(c);
                qm.non_blocking_wait_rq = false;
            }
            qm.service = 0;
        }

        if self.s.low_latency && (deserves || old_wr > 1) {
            // Both divide; most activations need neither.
            let dur = self.s.wr_duration();
            let min_budget = self.s.min_budget();
            let qm = self.qm(qi);
            if old_wr == 1 {
                if interactive {
                    qm.service_from_wr = 0;
                    qm.wr_coeff = WR_COEFF;
                    qm.wr_cur_max_time = dur;
                } else {
                    qm.wr_start_at_switch_to_srt = None;
                    qm.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                    qm.wr_cur_max_time = WR_RT_MAX_TIME;
                }
                qm.last_wr_start_finish = now;
                qm.budget = qm.budget.min(2 * min_budget).max(c);
            } else if old_wr > 1 {
                if interactive {
                    qm.wr_coeff = WR_COEFF;
                    qm.wr_cur_max_time = dur;
                } else if soft_rt {
                    if qm.wr_cur_max_time != WR_RT_MAX_TIME {
                        qm.wr_start_at_switch_to_srt = Some(qm.last_wr_start_finish);
                        qm.wr_cur_max_time = WR_RT_MAX_TIME;
                        qm.wr_coeff = WR_COEFF * SOFTRT_WEIGHT_FACTOR;
                    }
                    qm.last_wr_start_finish = now;
                }
            }
        }
        // Idle for much longer than an interactive queue would be: its
        // part of the burst's work is over, it no longer belongs to it.
        if !q.just_created
            && idle_long
            && q.budget_timeout
                .map(|t| now > t.saturating_add(BURST_FORGET))
                .unwrap_or(true)
        {
            self.burst_list_del(qi);
            self.qm(qi).in_large_burst = false;
        }
        {
            let qm = self.qm(qi);
            qm.last_idle_bklogged = now;
            qm.service_from_backlogged = 0;
            qm.softrt_update = false;
            qm.just_created = false;
        }
        self.activate(qi);

        // The in-service queue is also expired when idling for it is no
        // longer worth it now that this queue is busy too.
        let is = self.s.in_service;
        if is != NIL && is != qi {
            let (a, b) = (self.q(qi), self.q(is));
            if (wants_to_preempt && a.wr_coeff >= b.wr_coeff)
                || a.class < b.class
                || a.weight > b.weight
                || !self.better_to_idle(is)
            {
                self.expire(is, Expiration::Preempted, false, now);
            }
        }
        interactive
    }

    /// The idle slice timer, run lazily: an idle slice that ran out
    /// expires the in-service queue as of the slice's end.
    #[inline]
    fn idle_timer(&mut self, now: Nanos) {
        let qi = self.s.in_service;
        if qi != NIL && self.s.wait_request && now >= self.s.idle_deadline {
            let at = self.s.idle_deadline;
            self.expire(qi, Expiration::TooIdle, true, at);
        }
    }

    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        if tag >= self.r.len() {
            return;
        }
        self.idle_timer(now);
        let x = tag as u32;
        match self.rq(x).state {
            RqState::Free => {}
            RqState::InFlight => self.requeued(x),
            RqState::Queued | RqState::AtHead => return,
        }
        let qi = desc.issuer.min(self.qs.len() - 1) as u32;
        if !self.q(qi).used {
            self.init_queue(qi, desc.prio, desc.sync, now);
        }
        if self.q(qi).just_created && (self.s.burst_size > 0 || self.s.busy_queues == 0) {
            self.handle_burst(qi, now);
        }
        self.qm(qi).exited = false;
        let d = usize::from(desc.sync);
        {
            let fifo_time = now.saturating_add(self.s.fifo_expire[d]);
            let r = self.rqm(x);
            r.sector = desc.sector;
            r.sectors = desc.sectors;
            r.op = desc.op;
            r.sync = desc.sync;
            r.prio = desc.prio;
            r.queue = qi;
            r.fifo_time = fifo_time;
        }
        if at_head {
            self.rqm(x).state = RqState::AtHead;
            self.disp_push(x);
            self.qm(qi).at_head += 1;
            return;
        }
        self.rqm(x).state = RqState::Queued;

        let q = self.q(qi);
        if desc.prio.class != q.class || desc.prio.level.min(7) != q.level {
            if q.busy {
                self.qm(qi).new_prio = desc.prio;
                self.qm(qi).prio_changed = true;
            } else {
                self.apply_prio(qi, desc.prio);
            }
        } else {
            self.qm(qi).prio_changed = false;
        }
        self.qm(qi).sync = desc.sync;
        self.update_io_thinktime(qi, now);
        self.update_has_short_ttime(qi, desc.sync, now);
        let alone = {
            let q = self.q(qi);
            q.queued == 0 && q.dispatched == 0 && q.at_head == 0
        };
        {
            // bfq_update_io_seektime
            let dist = desc.sector.abs_diff(self.q(qi).last_request_pos);
            let seeky = dist > SEEK_THR && (!self.s.nonrot || desc.sectors < SECT_THR_NONROT);
            let qm = self.qm(qi);
            qm.seek_history = (qm.seek_history << 1) | seeky as u32;
            qm.last_request_pos = desc.sector.saturating_add(desc.sectors as u64);
        }
        if desc.sync {
            self.update_io_intensity(qi, now);
        }
        self.fifo_push(qi, d, x);
        self.tree_insert(qi, x);
        self.hash_insert(x);
        self.qm(qi).queued += 1;
        self.s.queued += 1;
        if desc.sync && alone {
            self.inject_on_arrival(qi, now);
        }

        let prev = self.q(qi).next_rq;
        let next = self.choose_req(prev, x, self.s.last_position);
        self.qm(qi).next_rq = next;
        let old_wr = self.q(qi).wr_coeff;
        let mut interactive = false;
        if !self.q(qi).busy {
            interactive = self.idle_busy_switch(qi, now);
        } else {
            if prev != next {
                self.updated_next_req(qi);
            }
            if self.s.in_service == qi && self.s.wait_request {
                // A request of the in-service queue ends the idling.
                self.s.wait_request = false;
            }
        }
        if self.s.low_latency && (old_wr == 1 || self.q(qi).wr_coeff == 1 || interactive) {
            self.qm(qi).last_wr_start_finish = now;
        }
    }

    fn requeued(&mut self, x: u32) {
        if self.rq(x).state != RqState::InFlight {
            return;
        }
        self.rqm(x).state = RqState::Free;
        self.s.in_driver = self.s.in_driver.saturating_sub(1);
        let qi = self.rq(x).queue;
        if (qi as usize) < self.qs.len() {
            self.qm(qi).dispatched = self.q(qi).dispatched.saturating_sub(1);
            self.sync_weight_count(qi);
            self.maybe_release(qi);
        }
    }

    fn completed(&mut self, tag: Tag, now: Nanos) {
        if tag >= self.r.len() || self.r[tag].state != RqState::InFlight {
            return;
        }
        self.idle_timer(now);
        self.update_hw_tag();
        let x = tag as u32;
        if self.s.waited_rq == x && (self.rq(x).queue as usize) < self.qs.len() {
            self.update_inject_limit(self.rq(x).queue, now);
        }
        self.rqm(x).state = RqState::Free;
        self.s.in_driver = self.s.in_driver.saturating_sub(1);
        let qi = self.rq(x).queue;
        if qi as usize >= self.qs.len() {
            return;
        }
        self.qm(qi).dispatched = self.q(qi).dispatched.saturating_sub(1);
        if self.q(qi).dispatched == 0 && !self.q(qi).busy {
            self.qm(qi).budget_timeout = Some(now);
            self.sync_weight_count(qi);
        }
        self.qm(qi).last_end_request = now;
        let delta_us = now.saturating_sub(self.s.last_completion) / NSEC_PER_USEC;
        if delta_us > MIN_TT / NSEC_PER_USEC
            && (self.s.last_rq_max_size.min(1 << 40) << RATE_SHIFT) / delta_us
                < 1 << (RATE_SHIFT - 10)
        {
            self.update_rate_reset(None, now);
        }
        self.s.last_completion = now;
        if self.q(qi).softrt_update
            && self.q(qi).dispatched == 0
            && self.q(qi).queued == 0
            && self.q(qi).wr_coeff != WR_COEFF
        {
            let t = self.softrt_next_start(qi, now);
            self.qm(qi).soft_rt_next_start = t;
        }
        if self.s.in_service == qi {
            if self.must_idle(qi) {
                if self.q(qi).dispatched == 0 {
                    self.arm_idle(qi, now);
                }
            } else if self.may_expire_for_budget_timeout(qi, now) {
                self.expire(qi, Expiration::BudgetTimeout, false, now);
            } else if self.q(qi).queued == 0
                && (self.q(qi).dispatched == 0 || !self.better_to_idle(qi))
            {
                self.expire(qi, Expiration::NoMoreRequests, false, now);
            }
        }
        self.maybe_release(qi);
    }

    #[inline]
    fn dispatch_from(&mut self, qi: u32, now: Nanos) -> Tag {
        let x = self.q(qi).next_rq;
        let c = self.charge(x, qi);
        self.served(qi, c);
        if self.s.in_service == qi && self.s.wait_dispatch {
            // The request whose service time is measured.
            self.s.wait_dispatch = false;
            self.s.waited_rq = x;
        }
        let (sector, sectors) = (self.rq(x).sector, self.rq(x).sectors);
        self.remove_queued(x, now);
        self.rqm(x).state = RqState::InFlight;
        self.qm(qi).dispatched += 1;
        // An injected queue left the busy set above if that emptied it;
        // in flight, it stays active.
        self.sync_weight_count(qi);
        self.update_peak_rate(sector, sectors, now);
        self.s.in_driver += 1;
        if self.s.in_service != qi {
            // Injected: the rest concerns the queue in service.
            return x as Tag;
        }
        self.update_wr_data(qi, now);
        if self.s.busy_queues > 1 && self.q(qi).class == PrioClass::Idle {
            self.expire(qi, Expiration::BudgetExhausted, false, now);
        }
        x as Tag
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.idle_timer(now);
        let h = self.s.disp_head;
        if h != NIL {
            self.disp_remove(h);
            self.rqm(h).state = RqState::InFlight;
            self.s.in_driver += 1;
            let qi = self.rq(h).queue;
            if (qi as usize) < self.qs.len() {
                let q = self.qm(qi);
                q.dispatched += 1;
                q.at_head = q.at_head.saturating_sub(1);
                self.sync_weight_count(qi);
            }
            return Dispatch::Request(h as Tag);
        }
        if self.s.queued == 0 {
            return Dispatch::Empty;
        }
        if self.s.strict_guarantees && self.s.in_driver > 0 {
            return Dispatch::Empty;
        }
        // Each pass either dispatches, idles, or expires the in-service
        // queue; a queue just put in service always has a request that fits
        // its budget, so three passes suffice.
        for _ in 0..3 {
            let mut qi = self.s.in_service;
            let fresh = qi == NIL;
            if fresh {
                qi = self.set_in_service(now);
                if qi == NIL {
                    return Dispatch::Empty;
                }
            }
            // As in bfq_select_queue, a queue just put in service goes
            // straight to its first request.
            if !fresh && self.may_expire_for_budget_timeout(qi, now) && !self.must_idle(qi) {
                self.expire(qi, Expiration::BudgetTimeout, false, now);
                continue;
            }
            let next = self.q(qi).next_rq;
            if next != NIL {
                if self.charge(next, qi) > self.budget_left(qi) {
                    self.expire(qi, Expiration::BudgetExhausted, false, now);
                    continue;
                }
                self.s.wait_request = false;
                return Dispatch::Request(self.dispatch_from(qi, now));
            }
            if self.s.wait_request && now >= self.s.idle_deadline {
                self.expire(qi, Expiration::TooIdle, true, now);
                continue;
            }
            let until = if self.s.wait_request {
                self.s.idle_deadline
            } else if self.better_to_idle(qi) {
                if self.q(qi).dispatched > 0 {
                    // Idling starts at the last completion; until then
                    // look again after one idle slice.
                    now.saturating_add(self.idle_slice(qi))
                } else {
                    self.arm_idle(qi, now);
                    self.s.idle_deadline
                }
            } else {
                self.expire(qi, Expiration::NoMoreRequests, false, now);
                continue;
            };
            // While the drive waits for `qi`, it may serve other queues'
            // requests (bfq_select_queue's injection), unless idling is for
            // throughput alone, or `qi` is the only weight-raised queue and
            // thinks briefly.
            let q = self.q(qi);
            if !self.idling_boosts_thr_without_issues(qi)
                && (q.wr_coeff == 1 || self.s.wr_busy_queues > 1 || !q.has_short_ttime)
            {
                if let Some(j) = self.choose_for_injection(qi, now) {
                    return Dispatch::Request(self.dispatch_from(j, now));
                }
            }
            return Dispatch::IdleUntil(until);
        }
        Dispatch::Empty
    }

    /// A back merge: only the size changes (the sort tree and the
    /// front-merge hash are keyed by the start). What is charged, the
    /// budget check and the peak rate all read the size at dispatch, as C
    /// reads `blk_rq_sectors()`.
    fn back_merged(&mut self, tag: Tag, new_sectors: u32) {
        if tag >= self.r.len() {
            return;
        }
        let x = tag as u32;
        if matches!(self.rq(x).state, RqState::Queued | RqState::AtHead) {
            self.rqm(x).sectors = new_sectors;
        }
    }

    fn front_merged(&mut self, tag: Tag, new_sector: Sector, new_sectors: u32) {
        if tag >= self.r.len() {
            return;
        }
        let x = tag as u32;
        match self.rq(x).state {
            RqState::Queued => {}
            RqState::AtHead => {
                self.rqm(x).sector = new_sector;
                self.rqm(x).sectors = new_sectors;
                return;
            }
            _ => return,
        }
        let qi = self.rq(x).queue;
        self.hash_remove(x);
        self.tree_remove(qi, x);
        self.rqm(x).sector = new_sector;
        self.rqm(x).sectors = new_sectors;
        self.tree_insert(qi, x);
        self.hash_insert(x);
        let prev = self.q(qi).next_rq;
        let next = self.choose_req(prev, x, self.s.last_position);
        self.qm(qi).next_rq = next;
        self.updated_next_req(qi);
    }

    fn requests_merged(&mut self, into: Tag, next: Tag, now: Nanos) {
        if into >= self.r.len() || next >= self.r.len() || into == next {
            return;
        }
        let (a, b) = (into as u32, next as u32);
        let (ra, rb) = (*self.rq(a), *self.rq(b));
        if !matches!(rb.state, RqState::Queued | RqState::AtHead) {
            return;
        }
        // `into` now covers both.
        let start = ra.sector.min(rb.sector);
        let end = ra.end_sat().max(rb.end_sat());
        let len = end.saturating_sub(start).min(u32::MAX as u64) as u32;
        match ra.state {
            RqState::Queued => {
                let qa = ra.queue;
                if rb.state == RqState::Queued
                    && qa == rb.queue
                    && ra.sync == rb.sync
                    && rb.fifo_time < ra.fifo_time
                {
                    // bfq_requests_merged: keep the earlier deadline.
                    let d = usize::from(ra.sync);
                    self.fifo_remove(qa, d, a);
                    self.fifo_replace(qa, d, b, a);
                    self.rqm(a).fifo_time = rb.fifo_time;
                }
                if self.q(qa).next_rq == b {
                    self.qm(qa).next_rq = a;
                }
                if start != ra.sector || len != ra.sectors {
                    self.front_merged(into, start, len);
                }
            }
            RqState::AtHead => {
                self.rqm(a).sector = start;
                self.rqm(a).sectors = len;
            }
            _ => {}
        }
        let qb = rb.queue;
        if rb.state == RqState::AtHead {
            self.disp_remove(b);
            let q = self.qm(qb);
            q.at_head = q.at_head.saturating_sub(1);
        } else {
            self.remove_queued(b, now);
        }
        self.rqm(b).state = RqState::Free;
        self.maybe_release(qb);
    }
}

impl ReqSlot {
    fn end_sat(&self) -> Sector {
        self.sector.saturating_add(self.sectors as u64)
    }
}

impl<R, Q> Policy for Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        self.ctx().insert(tag, desc, at_head, now);
    }

    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let d = self.ctx().dispatch(now);
        self.st.withheld = !matches!(d, Dispatch::Request(_)) && self.has_work();
        d
    }

    fn has_work(&self) -> bool {
        self.st.queued > 0 || self.st.disp_len > 0
    }

    fn queued(&self) -> usize {
        self.st.queued as usize + self.st.disp_len as usize
    }

    fn completed(&mut self, tag: Tag, now: Nanos) {
        self.ctx().completed(tag, now);
    }

    fn requeued(&mut self, tag: Tag, _now: Nanos) {
        if tag < self.reqs.as_ref().len() {
            self.ctx().requeued(tag as u32);
        }
    }

    fn front_merge_candidate(&self, probe: &MergeProbe) -> Option<Tag> {
        self.find_front_merge(probe, None)
    }

    fn front_merged(&mut self, tag: Tag, new_sector: Sector, new_sectors: u32) {
        self.ctx().front_merged(tag, new_sector, new_sectors);
    }

    fn back_merged(&mut self, tag: Tag, new_sectors: u32) {
        self.ctx().back_merged(tag, new_sectors);
    }

    fn requests_merged(&mut self, into: Tag, next: Tag) {
        // The merge happens "now"; the last dispatch time is the best
        // clock available here, and only the FIFO check looks at it.
        let now = self.st.last_dispatch;
        self.ctx().requests_merged(into, next, now);
    }

    /// BFQ's `bfq_limit_depth`: sync reads get the full depth; async
    /// requests get half of the scheduler tags (3/16 while weight-raised
    /// queues are busy), sync writes three quarters (6/16).
    fn async_depth_limit(&self, op: Op, sync: bool) -> Option<u32> {
        if sync && op.is_read() {
            return None;
        }
        let n = self.reqs.as_ref().len().min(u32::MAX as usize) as u64;
        let wr = self.st.wr_busy_queues > 0;
        let limit = match (wr, sync) {
            (false, false) => n >> 1,
            (false, true) => (n * 3) >> 2,
            (true, false) => (n * 3) >> 4,
            (true, true) => (n * 6) >> 4,
        };
        Some(limit.max(1) as u32)
    }

    fn tunables(&self) -> &'static [&'static str] {
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        let s = &self.st;
        let v = match name {
            "fifo_expire_sync" => s.fifo_expire[1] / NSEC_PER_MSEC,
            "fifo_expire_async" => s.fifo_expire[0] / NSEC_PER_MSEC,
            "back_seek_max" => s.back_max,
            "back_seek_penalty" => s.back_penalty,
            "slice_idle" => s.slice_idle / NSEC_PER_MSEC,
            "slice_idle_us" => s.slice_idle / NSEC_PER_USEC,
            "max_budget" => s.user_max_budget,
            "timeout_sync" => s.timeout / NSEC_PER_MSEC,
            "strict_guarantees" => s.strict_guarantees as u64,
            "low_latency" => s.low_latency as u64,
            _ => return Err(TunableError::UnknownName),
        };
        Ok(v as i64)
    }

    fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        if !TUNABLES.contains(&name) {
            return Err(TunableError::UnknownName);
        }
        match name {
            "fifo_expire_sync" => {
                self.st.fifo_expire[1] = parse_decimal_in(text, 1, INT_MAX)? * NSEC_PER_MSEC
            }
            "fifo_expire_async" => {
                self.st.fifo_expire[0] = parse_decimal_in(text, 1, INT_MAX)? * NSEC_PER_MSEC
            }
            "back_seek_max" => self.st.back_max = parse_decimal_in(text, 0, INT_MAX)?,
            "back_seek_penalty" => self.st.back_penalty = parse_decimal_in(text, 1, INT_MAX)?,
            "slice_idle" => {
                self.st.slice_idle = parse_decimal_in(text, 0, INT_MAX)? * NSEC_PER_MSEC
            }
            "slice_idle_us" => {
                self.st.slice_idle = parse_decimal_in(text, 0, UINT_MAX)? * NSEC_PER_USEC
            }
            "max_budget" => {
                let v = parse_decimal_in(text, 0, INT_MAX)?;
                self.st.max_budget = if v == 0 { self.st.calc_max_budget() } else { v };
                self.st.user_max_budget = v;
            }
            "timeout_sync" => {
                let v = parse_decimal_in(text, 1, INT_MAX)?;
                self.st.timeout = v * NSEC_PER_MSEC;
                if self.st.user_max_budget == 0 {
                    self.st.max_budget = self.st.calc_max_budget();
                }
            }
            "strict_guarantees" => {
                let v = parse_decimal_in(text, 0, 1)? == 1;
                if !self.st.strict_guarantees && v && self.st.slice_idle < 8 * NSEC_PER_MSEC {
                    self.st.slice_idle = 8 * NSEC_PER_MSEC;
                }
                self.st.strict_guarantees = v;
            }
            "low_latency" => {
                let v = parse_decimal_in(text, 0, 1)? == 1;
                if !v && self.st.low_latency {
                    // bfq_end_wr: every queue loses its raising.
                    let now = self.st.last_dispatch;
                    let mut c = self.ctx();
                    for qi in 0..c.qs.len() as u32 {
                        if c.q(qi).used && c.q(qi).wr_coeff > 1 {
                            c.end_wr(qi, now);
                        }
                    }
                }
                self.st.low_latency = v;
            }
            _ => return Err(TunableError::UnknownName),
        }
        Ok(())
    }
}
