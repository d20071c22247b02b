// SPDX-License-Identifier: GPL-2.0

//! The anticipatory I/O scheduler (AS).
//!
//! A port of `block/as-iosched.c` as of Linux 2.6.32, the last release
//! that had it (read from the 2.6.32.71 tree at
//! `github.com/SunMoonStar2000/linux-2.6.32.71-hi3512`, commit `f02b7eac`,
//! path `block/as-iosched.c`), onto the [`Policy`] trait. AS is deadline
//! with one addition: after a synchronous request completes, the disk may
//! stay idle for a few milliseconds in the hope that the process that
//! issued it sends another one close by, instead of seeking away to serve
//! someone else ("deceptive idleness": a process that reads one block at a
//! time looks idle between its reads, and a plain elevator then moves the
//! head away every time).
//!
//! What it does:
//!
//! * **Directions are sync and async**, not read and write (C's
//!   `rq_is_sync()`): reads and `REQ_SYNC` writes sort together. Each
//!   direction has a sort tree keyed by sector (a treap; equal sectors in
//!   the order they entered) and a FIFO carrying each request's deadline
//!   (`read_expire` for sync, `write_expire` for async).
//! * **Batches.** Requests go out in batches of one direction. A sync
//!   batch lasts `read_batch_expire`, counted from the completion of its
//!   first request; an async batch lasts `write_batch_expire` or
//!   `write_batch_count` requests, a count tuned after every async batch
//!   (halved or decremented when the batch overran, doubled or
//!   incremented when it finished early and used up its count; C's
//!   `update_write_batch()`). The direction changes only once the
//!   requests of the old one have all completed (C's `changed_batch`).
//! * **Elevator order** within a batch: the next request is the better of
//!   the requests just after and just before the last one in sector order
//!   (wrapping to the lowest), measured from where the last dispatched
//!   request of that direction ended. Backward seeks of up to
//!   [`MAXBACK`] sectors cost [`BACK_PENALTY`] times their distance;
//!   requests further behind are taken only when nothing is ahead, the
//!   lowest first (C's `as_choose_req()`, `as_find_next_rq()`).
//! * **FIFO expiry**: at most once per expire interval and direction, the
//!   FIFO head is checked and, if its deadline passed, served next (C
//!   limits the check so that many expired requests do not make a seek
//!   storm).
//! * **Anticipation.** Within a sync batch, before dispatching the next
//!   request in elevator order, AS asks whether it is better to wait for
//!   the process whose sync request was dispatched last. It waits unless
//!   (C's `as_can_break_anticipation()`): the next request is that
//!   process's own; the wait ran out; the process has requests queued;
//!   the next request is "close" to where the head is ([`close`](#close-requests),
//!   below); the process exited and exited processes are rarely followed
//!   by a cooperating close request (`exit_no_coop` over one half); a new
//!   process (no think-time samples) would wait for longer than
//!   `antic_expire` by the mean new-process think time, or is likely to
//!   exit (`exit_prob * exit_no_coop` over one half); or the process's
//!   mean think time is above `antic_expire`. While the process's last
//!   request is still on the device the wait has no time limit (C's
//!   `ANTIC_WAIT_REQ`); from its completion it lasts `antic_expire` (C's
//!   `ANTIC_WAIT_NEXT` and `antic_timer`). It ends early when a request
//!   arrives that breaks it by the same rules (the process's own next
//!   request, most of all). `antic_expire` 0 turns anticipation off. It
//!   waits on any device, as C did (its test for non-rotational devices
//!   was compiled out).
//! * **Per-process statistics** (C's `as_io_context`, one per issuer):
//!   the think time between the completion of a process's sync request
//!   and its next one (capped at 20 ms), and the seek distance between its
//!   consecutive sync requests (capped near four times its mean), both as
//!   exponentially decaying means in 1/256 fixed point; whether it exited.
//!   Queue-wide: the same means for processes with no samples yet, and
//!   the probabilities that an anticipated process exits (`exit_prob`)
//!   and that an exited one is not followed by a close request of another
//!   (`exit_no_coop`), updated at each time-out and break.
//!
//! # Close requests
//!
//! A request is close to the last position of the current batch's
//! direction if it lies within 8192 sectors ahead (4096 behind) of it;
//! while waiting for a process whose request completed `d` whole
//! milliseconds ago, within `8192 << d` ahead (half that behind), and
//! after more than 20 ms or `antic_expire`, anything is close. Otherwise
//! a request is close if it is nearer than the anticipated process's mean
//! seek distance (the new-process mean while it has no samples). A close
//! request of another process also counts as a sample of the anticipated
//! process's history (C: "cooperating processes").
//!
//! # Where blk-mq makes it differ
//!
//! * **No dispatch queue.** AS moved one request at a time onto the queue's
//!   dispatch list (`elv_dispatch_sort()`, sorted by sector) and the
//!   driver took requests from there; blk-mq pulls each request from
//!   [`Policy::dispatch`] and hands it to the driver (or to its own
//!   dispatch list when the driver is busy). So nothing re-sorts what AS
//!   chose, and C's per-process count of requests on the dispatch list not
//!   yet started by the driver (`aic->nr_dispatched`, raised at dispatch and
//!   lowered at `elv_activate_rq()`), one of the reasons not to anticipate,
//!   is always zero here.
//! * **Several hardware queues, tags.** The scheduler is single-queue: one
//!   instance serves all hardware queues, and a request is named by its
//!   scheduler tag. A process cannot be given a request ahead of others
//!   (C's `as_may_queue()` answered `ELV_MQUEUE_MUST` for the anticipated
//!   process): blk-mq allocates scheduler tags without asking.
//! * **No forced dispatch.** C emptied the scheduler on demand
//!   (`force`, on an elevator switch); blk-mq drains a queue by running it,
//!   which anticipation delays by at most `antic_expire` after a
//!   completion.
//! * **Requests inserted at head** (requeues, flush sequences,
//!   passthrough) went to C's dispatch list without passing through AS;
//!   here they wait on a list of their own that is served before anything
//!   else (the latest first, as `list_add()`), even while anticipating,
//!   and AS keeps no account of them. A request the driver gave back is
//!   still counted as dispatched, as C's requeue kept it `REQ_SORTED`; if
//!   it is inserted back into the sort tree instead, it counts as never
//!   dispatched, and if it is merged away, as completed. Should the
//!   process waited for have nothing out any more for that reason, the
//!   wait is timed from the decision to wait, as no completion will come.
//! * **The timer** is the module's rerun timer: waiting answers
//!   [`Dispatch::IdleUntil`] with the end of the wait (once the request
//!   completed; before, [`Dispatch::Empty`], as C arms nothing until
//!   then), and the time-out's bookkeeping (C's `as_antic_timeout()`) is
//!   done by the first call at or after that time, whichever it is.
//!   [`Anticipatory::after_completion`] says when a completion must arm
//!   the timer or run the queue (C's `kblockd_schedule_work()` after the
//!   last request of an old batch).
//! * **A new batch starts with its oldest request.** C chose the FIFO
//!   head when it changed direction, but if requests of the old batch
//!   were still out it waited for them and then went on in elevator order
//!   from wherever that direction had last been. On a device that queues
//!   (blk-mq asks for a request whenever the driver has room) that is the
//!   usual case, and a request behind in elevator order could be passed
//!   over batch after batch, since within a batch shorter than the expire
//!   interval its FIFO is never checked. Here the batch starts with the
//!   FIFO head either way, which bounds how long the oldest request of a
//!   direction waits: two expire intervals, or the other direction's
//!   batch and a wait for a reader, plus a few service times.
//! * **Processes** are issuers: a bounded table of per-process slots
//!   handed in by the caller (in the kernel, one per process I/O context,
//!   through its `io_cq`), of which the last is for requests with no
//!   process of their own (no context, or a full table). Those count as
//!   C's requests without an `io_context`: they have no statistics and are
//!   never anticipated. A slot is reused once its process exited and
//!   nothing refers to it any more (C frees the `as_io_context` with the
//!   last reference to the `io_context`).
//!
//! # Deliberate differences from C
//!
//! * Times are nanoseconds passed in by the caller, compared with
//!   wrap-around as `time_after()` does; think times and deadlines are
//!   exact (C counts jiffies). Where C's arithmetic counts jiffies in
//!   another unit (the close window doubles per jiffy of waiting, up to 20),
//!   it counts milliseconds, as C at `HZ=1000`. The defaults are C's at
//!   `HZ=1000`, as its sysfs files show them.
//! * Of several requests at one sector none is dispatched at insertion
//!   (C's `elv_rb_add()` returned the old one as an alias and AS moved it
//!   to the dispatch list at once); they sort in the order they entered.
//! * The front-merge candidate is the request of the bio's operation that
//!   starts where the bio ends, in the sync tree for a read and in either
//!   tree for a write (C looked in `sort_list[bio_data_dir(bio)]`, indexed
//!   by read/write where the trees are indexed by sync/async, so reads
//!   found the async tree and never front-merged).
//! * When two requests merge, the survivor takes the other's deadline and
//!   FIFO place only if both sit in the same FIFO (C moved it regardless).
//! * A merged-away sync request counts for its process as one that
//!   completed, as C's `as_put_io_context()` did, at the time of the latest
//!   call (a merge is not given the time).
//! * sysfs writes that are garbage, negative or out of range fail and keep
//!   the old value (C's `simple_strtoul()` took any text and clamped):
//!
//!   | tunable | unit | range | default |
//!   |---|---|---|---|
//!   | `est_time` | ms (read-only) | | the mean think time of new processes |
//!   | `read_expire` | ms | 0 ..= 2^31-1 | 125 |
//!   | `write_expire` | ms | 0 ..= 2^31-1 | 250 |
//!   | `antic_expire` | ms | 0 ..= 2^31-1 | 6 |
//!   | `read_batch_expire` | ms | 0 ..= 2^31-1 | 500 |
//!   | `write_batch_expire` | ms | 0 ..= 2^31-1 | 125 |
//!
//!   C's `est_time` printed four lines (the two exit probabilities in
//!   percent, the new-process think time in ms and seek distance in
//!   sectors); a tunable here is one number, so it shows the think time,
//!   and [`Anticipatory::estimates`] gives all four. Writing it fails with
//!   [`TunableError::ReadOnly`].
//!
//! The code: `hooks` (the [`Policy`] hooks), `sort` (the sort trees and
//! FIFOs, elevator order), `dispatch` (batches, FIFO expiry, a request's
//! way out), `antic` (the anticipation
//! state machine and its decisions), `context` (the per-process
//! statistics and slots), `tunables`, and `invariants` (the consistency
//! checks, compiled only with `test`, `debug_assertions` or the
//! `invariants` feature).
//!
//! [`Policy`]: super::types::Policy

mod antic;
mod context;
mod dispatch;
mod hooks;
#[cfg(any(test, debug_assertions, feature = "invariants"))]
mod invariants;
mod sort;
mod tunables;

use super::intrusive::{List, ListLinks, ListNode, TreeLinks, TreeNode, NIL};
use super::types::{
    Dispatch, IssuerId, MergeProbe, Nanos, Op, Policy, RequestDesc, Sector, SetupError, Tag,
    TunableError, NSEC_PER_MSEC,
};
pub use antic::AfterCompletion;
pub(crate) use tunables::TUNABLE_NAMES;

/// Number of directions (async, sync).
const DIRS: usize = 2;
/// The async direction (C's `BLK_RW_ASYNC`).
const ASYNC: usize = 0;
/// The sync direction (C's `BLK_RW_SYNC`).
const SYNC: usize = 1;

/// The furthest a request may lie behind the head, in sectors, and still
/// be taken before those ahead (C's `MAXBACK`).
pub const MAXBACK: Sector = 1024 * 1024;
/// How much more a backward seek costs than a forward one of the same
/// distance (C's `BACK_PENALTY`).
pub const BACK_PENALTY: Sector = 2;
/// The longest think time that counts (C's `MAX_THINKTIME`, `HZ / 50`):
/// longer ones count as just under it.
pub const MAX_THINKTIME: Nanos = 20 * NSEC_PER_MSEC;

/// Where the anticipation state machine is (C's `antic_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnticStatus {
    /// Not anticipating.
    Off,
    /// Waiting for the anticipated process's last request to complete.
    WaitRequest,
    /// Waiting for the anticipated process's next request, until the
    /// deadline ([`Anticipatory::idling_until`]).
    WaitNext,
    /// The wait ended (a request broke it, or it timed out); the next
    /// dispatch goes on without waiting again.
    Finished,
}

/// The state of a request slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not known to the scheduler.
    Free,
    /// Queued on the at-head list.
    AtHead,
    /// Queued on a sort tree and a FIFO.
    Sorted,
    /// Handed to the device.
    Dispatched,
    /// Handed back by the driver, waiting to be inserted again.
    Requeued,
}

/// The per-request node the policy keeps in caller-provided storage.
///
/// Opaque: create storage with `Slot::default()` and hand it to
/// [`Anticipatory::new`].
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Start sector (the sort key).
    sector: Sector,
    /// Length in sectors.
    sectors: u32,
    /// Deadline (C's `fifo_time`).
    fifo_time: Nanos,
    /// Sort tree links.
    tree: TreeLinks,
    /// FIFO / at-head list links.
    list: ListLinks,
    /// The request's operation.
    op: Op,
    /// Its direction: [`SYNC`] or [`ASYNC`].
    dir: u8,
    /// Its process's context slot, or `NIL` (none: C's `RQ_IOC()` NULL).
    context: u32,
    /// Where the request is.
    state: State,
    /// Counted in `nr_dispatched` (dispatched from the sort tree and not
    /// completed; C's `REQ_SORTED` once dispatched).
    counted: bool,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            sector: 0,
            sectors: 0,
            fifo_time: 0,
            tree: TreeLinks::NONE,
            list: ListLinks::NONE,
            op: Op::Read,
            dir: SYNC as u8,
            context: NIL,
            state: State::Free,
            counted: false,
        }
    }
}

impl Slot {
    /// The direction index.
    #[inline]
    fn dir(&self) -> usize {
        usize::from(self.dir)
    }

    /// The sector just past the request's end.
    #[inline]
    fn end(&self) -> Sector {
        self.sector.saturating_add(Sector::from(self.sectors))
    }
}

impl ListNode for Slot {
    #[inline]
    fn list_links(&self) -> &ListLinks {
        &self.list
    }

    #[inline]
    fn list_links_mut(&mut self) -> &mut ListLinks {
        &mut self.list
    }
}

/// Sort trees are keyed by sector; a request entering one goes after those
/// at its sector, so equal sectors stay in the order they entered.
impl TreeNode for Slot {
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

/// What AS knows of one process (C's `as_io_context`), in caller-provided
/// storage.
///
/// Opaque: create storage with `ContextSlot::default()` and hand it to
/// [`Anticipatory::new`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ContextSlot {
    /// Holds a process (C: the `as_io_context` exists).
    used: bool,
    /// The process has not exited (C's `AS_TASK_RUNNING`).
    running: bool,
    /// It has submitted a sync request (C's `AS_TASK_IOSTARTED`).
    io_started: bool,
    /// A sync request of it has completed (C's `AS_TASK_IORUNNING`).
    io_running: bool,
    /// Its requests in the sort trees (C's `nr_queued`).
    queued: u32,
    /// Its requests known to the scheduler: queued, in flight or requeued.
    owned: u32,
    /// When its latest sync request completed.
    last_end_request: Nanos,
    /// Where its latest sync request ended.
    last_request_pos: Sector,
    /// Think time: decaying sum (ns × 256), sample weight (256 = 1.0), mean.
    ttime_total: u64,
    ttime_samples: u32,
    ttime_mean: Nanos,
    /// Seek distance: decaying sum (sectors × 256), sample weight, mean.
    seek_total: u64,
    seek_samples: u32,
    seek_mean: Sector,
}

/// What AS estimates of processes it knows nothing about yet (C's
/// `est_time` file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Estimates {
    /// How likely an anticipated process exits, in 1/256.
    pub exit_prob: u32,
    /// How likely an exited process is not followed by a cooperating close
    /// request, in 1/256.
    pub exit_no_coop: u32,
    /// The mean think time of a new process.
    pub new_ttime_mean: Nanos,
    /// The mean seek distance of a new process, in sectors.
    pub new_seek_mean: Sector,
}

/// What AS knows of one process ([`Anticipatory::context_info`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextInfo {
    /// It has not exited.
    pub running: bool,
    /// Its requests in the sort trees.
    pub queued: u32,
    /// Its requests known to the scheduler (queued, in flight, requeued).
    pub owned: u32,
    /// Think-time sample weight (256 is one full sample) and mean.
    pub ttime_samples: u32,
    /// The mean think time.
    pub ttime_mean: Nanos,
    /// Seek-distance sample weight (256 is one full sample).
    pub seek_samples: u32,
    /// The mean seek distance, in sectors.
    pub seek_mean: Sector,
}

/// `time_after(a, b)`: whether `a` is later than `b`, with wrap-around.
#[inline]
fn time_after(a: Nanos, b: Nanos) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// `time_after_eq(a, b)`, with wrap-around.
#[inline]
fn time_after_eq(a: Nanos, b: Nanos) -> bool {
    (a.wrapping_sub(b) as i64) >= 0
}

/// `|a - b|` of two times, with wrap-around (C's "funny absolute
/// difference" on jiffies).
#[inline]
fn time_distance(a: Nanos, b: Nanos) -> Nanos {
    (a.wrapping_sub(b) as i64).unsigned_abs()
}

/// The anticipatory policy over request storage `R` (one [`Slot`] per
/// tag) and process storage `C` (one [`ContextSlot`] per issuer; the last
/// is for requests of no process).
///
/// Any owner of a slice will do: `Vec`, `Box<[_]>`, an array, `&mut [_]`
/// (the kernel wraps its allocations in a newtype with `AsRef` and
/// `AsMut`).
pub struct Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    storage: R,
    contexts: C,
    /// Sort tree roots, by direction.
    trees: [u32; DIRS],
    /// FIFOs, by direction.
    fifos: [List; DIRS],
    /// Requests inserted at head.
    at_head: List,
    /// The next request in elevator order, by direction (C's `next_rq`).
    next_rq: [u32; DIRS],
    /// Where the last request dispatched in each direction ended.
    last_sector: [Sector; DIRS],
    /// Requests waiting in the scheduler.
    queued: usize,
    /// See [`Estimates`].
    exit_prob: u32,
    exit_no_coop: u32,
    new_ttime_total: u64,
    new_ttime_mean: Nanos,
    new_seek_total: u64,
    new_seek_mean: Sector,
    /// When the current batch ends.
    current_batch_expires: Nanos,
    /// When each FIFO was last checked for an expired head.
    last_check_fifo: [Nanos; DIRS],
    /// Waiting for the old batch's requests to complete before the new
    /// one starts.
    changed_batch: bool,
    /// A sync batch started; its time starts at its first completion.
    new_batch: bool,
    /// The current batch's direction.
    batch_dir: usize,
    /// Requests per async batch (tuned).
    write_batch_count: u32,
    /// Requests left in the current async batch.
    current_write_count: u32,
    /// The async batch ran out of requests before its time.
    write_batch_idled: bool,
    /// The new batch waited for the old one's requests to complete: it
    /// starts with its FIFO head.
    fifo_start: bool,
    status: AnticStatus,
    /// When the anticipated process's latest request completed.
    antic_start: Nanos,
    /// The end of the wait ([`AnticStatus::WaitNext`]: C's `antic_timer`).
    antic_deadline: Nanos,
    /// The anticipated process: that of the last sync request dispatched,
    /// or `NIL`.
    io_context: u32,
    /// A request of the anticipated process completed since the last
    /// dispatch.
    ioc_finished: bool,
    /// Requests dispatched from the sort trees and not completed.
    nr_dispatched: u32,
    /// A completion let a new batch start while requests wait: the queue
    /// must run ([`Anticipatory::after_completion`]).
    kick: bool,
    /// The latest time any call was given.
    now: Nanos,
    /// Treap priority generator state.
    rng: u64,
    fifo_expire: [Nanos; DIRS],
    batch_expire: [Nanos; DIRS],
    antic_expire: Nanos,
}

impl<R, C> Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    /// Default `read_expire` (C: `HZ / 8`).
    pub const DEFAULT_READ_EXPIRE_MS: u32 = 125;
    /// Default `write_expire` (C: `HZ / 4`).
    pub const DEFAULT_WRITE_EXPIRE_MS: u32 = 250;
    /// Default `read_batch_expire` (C: `HZ / 2`).
    pub const DEFAULT_READ_BATCH_EXPIRE_MS: u32 = 500;
    /// Default `write_batch_expire` (C: `HZ / 8`).
    pub const DEFAULT_WRITE_BATCH_EXPIRE_MS: u32 = 125;
    /// Default `antic_expire` (C: `HZ / 150`, "around 6ms").
    pub const DEFAULT_ANTIC_EXPIRE_MS: u32 = 6;
    /// The largest capacity supported (tags and issuers must fit the `u32`
    /// links).
    pub const MAX_CAPACITY: usize = (u32::MAX - 1) as usize;

    /// Creates the policy over `storage` (tags `0..storage.len()`) and
    /// `contexts` (issuers `0..contexts.len()`, the last shared by
    /// requests of no process, as are ids beyond it). Every slot is reset.
    pub fn new(mut storage: R, mut contexts: C) -> Result<Self, SetupError> {
        let capacity = storage.as_ref().len();
        let issuers = contexts.as_ref().len();
        if capacity == 0
            || capacity > Self::MAX_CAPACITY
            || issuers == 0
            || issuers > Self::MAX_CAPACITY
        {
            return Err(SetupError::Capacity);
        }
        for slot in storage.as_mut().iter_mut() {
            *slot = Slot::default();
        }
        for slot in contexts.as_mut().iter_mut() {
            *slot = ContextSlot::default();
        }
        let ms = |v: u32| Nanos::from(v) * NSEC_PER_MSEC;
        let batch_expire = [
            ms(Self::DEFAULT_WRITE_BATCH_EXPIRE_MS),
            ms(Self::DEFAULT_READ_BATCH_EXPIRE_MS),
        ];
        Ok(Anticipatory {
            storage,
            contexts,
            trees: [NIL; DIRS],
            fifos: [List::EMPTY; DIRS],
            at_head: List::EMPTY,
            next_rq: [NIL; DIRS],
            last_sector: [0; DIRS],
            queued: 0,
            exit_prob: 0,
            exit_no_coop: 0,
            new_ttime_total: 0,
            new_ttime_mean: 0,
            new_seek_total: 0,
            new_seek_mean: 0,
            // C's `as_init_queue()` at time 0; the rest zeroed
            // (`kzalloc`), so the first batch is an async one with no
            // requests left in it.
            current_batch_expires: batch_expire[SYNC],
            last_check_fifo: [0; DIRS],
            changed_batch: false,
            new_batch: false,
            batch_dir: ASYNC,
            // `batch_expire[BLK_RW_ASYNC] / 10` jiffies, at least 2.
            write_batch_count: (Self::DEFAULT_WRITE_BATCH_EXPIRE_MS / 10).max(2),
            current_write_count: 0,
            write_batch_idled: false,
            fifo_start: false,
            status: AnticStatus::Off,
            antic_start: 0,
            antic_deadline: 0,
            io_context: NIL,
            ioc_finished: false,
            nr_dispatched: 0,
            kick: false,
            now: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
            fifo_expire: [
                ms(Self::DEFAULT_WRITE_EXPIRE_MS),
                ms(Self::DEFAULT_READ_EXPIRE_MS),
            ],
            batch_expire,
            antic_expire: ms(Self::DEFAULT_ANTIC_EXPIRE_MS),
        })
    }

    /// The number of tags (the request storage's length).
    pub fn capacity(&self) -> usize {
        self.storage.as_ref().len()
    }

    /// The number of issuer slots, the shared last one included.
    pub fn issuers(&self) -> usize {
        self.contexts.as_ref().len()
    }

    /// Where the anticipation state machine is.
    pub fn status(&self) -> AnticStatus {
        self.status
    }

    /// The process anticipated on (that of the last sync request
    /// dispatched), if it has a slot of its own.
    pub fn anticipated(&self) -> Option<IssuerId> {
        (self.io_context != NIL).then_some(self.io_context as IssuerId)
    }

    /// Whether the current batch is a sync one.
    pub fn sync_batch(&self) -> bool {
        self.batch_dir == SYNC
    }

    /// Requests per async batch, as last tuned.
    pub fn write_batch_count(&self) -> u32 {
        self.write_batch_count
    }

    /// Requests dispatched from the sort trees and not yet completed.
    pub fn in_flight(&self) -> u32 {
        self.nr_dispatched
    }

    /// The request elevator order puts next in the sync (`sync`) or async
    /// direction (C's `next_rq`).
    pub fn next_request(&self, sync: bool) -> Option<Tag> {
        let x = self.next_rq[usize::from(sync)];
        (x != NIL).then_some(x as Tag)
    }

    /// The new-process estimates and exit probabilities.
    pub fn estimates(&self) -> Estimates {
        Estimates {
            exit_prob: self.exit_prob,
            exit_no_coop: self.exit_no_coop,
            new_ttime_mean: self.new_ttime_mean,
            new_seek_mean: self.new_seek_mean,
        }
    }

    /// What AS knows of process `issuer`, if it has a slot in use.
    pub fn context_info(&self, issuer: IssuerId) -> Option<ContextInfo> {
        let c = self.context_of(issuer);
        if c == NIL || !self.ctx(c).used {
            return None;
        }
        let s = self.ctx(c);
        Some(ContextInfo {
            running: s.running,
            queued: s.queued,
            owned: s.owned,
            ttime_samples: s.ttime_samples,
            ttime_mean: s.ttime_mean,
            seek_samples: s.seek_samples,
            seek_mean: s.seek_mean,
        })
    }

    /// Gives the storage back.
    pub fn into_storage(self) -> (R, C) {
        (self.storage, self.contexts)
    }

    // ---- slot access -------------------------------------------------

    #[inline]
    fn slots(&self) -> &[Slot] {
        self.storage.as_ref()
    }

    #[inline]
    fn slots_mut(&mut self) -> &mut [Slot] {
        self.storage.as_mut()
    }

    /// The slot of an internal link; links always name valid slots.
    #[inline]
    fn at(&self, i: u32) -> &Slot {
        &self.slots()[i as usize]
    }

    #[inline]
    fn at_mut(&mut self, i: u32) -> &mut Slot {
        &mut self.slots_mut()[i as usize]
    }

    /// Bounds-checks a caller's tag.
    #[inline]
    fn check(&self, tag: Tag) -> Option<u32> {
        (tag < self.capacity()).then_some(tag as u32)
    }

    /// Notes the caller's time, for the calls that are not given one.
    #[inline]
    fn note_time(&mut self, now: Nanos) {
        self.now = now;
    }
}
