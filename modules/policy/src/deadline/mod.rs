// SPDX-License-Identifier: GPL-2.0

//! mq-deadline parity policy.
//!
//! A port of `block/mq-deadline.c` as of Linux 6.12 onto the [`Policy`]
//! trait. Requests live in caller-provided storage (one [`Slot`] per tag);
//! every structure is intrusive and index based, so nothing allocates:
//!
//! * per priority level (RT, BE, IDLE) and direction (read, write) a sort
//!   tree keyed by sector, equal sectors in the order they entered the
//!   tree, as C's `elv_rb_add()` puts them (a treap with parent links and
//!   pseudo-random heap priorities: insert and lookups in expected
//!   O(log n), removal in expected O(1) plus the successor walk) and a
//!   FIFO in insertion order carrying each request's deadline;
//! * one "dispatch" list of requests inserted at head, served before
//!   anything else (C's `list_add()`: the latest at-head insertion first);
//! * per level and direction, the first request at or after the last
//!   dispatched position, kept up to date so a batch goes on in O(1).
//!
//! Dispatch follows `dd_dispatch_request()`: the at-head list first, then
//! lower-priority requests older than `prio_aging_expire`, then the levels
//! in strict priority order, where a level is skipped only if it owns no
//! request at all (queued *or* in flight, C's `dd_queued()`). Within a
//! level, `__dd_dispatch_request()`: continue the batch in sector order
//! from the last dispatched position (C's per-level, per-direction
//! `latest_pos`, see [`Deadline::next_request`]) while fewer than
//! `fifo_batch` requests were sent, else pick a direction (reads unless
//! writes were starved `writes_starved` times) and start from the FIFO
//! head if it expired or nothing lies further on, else from the next
//! request in sector order.
//!
//! Deliberate differences from C:
//!
//! * sysfs writes that are garbage, negative or out of range are rejected
//!   with an error and the old value stays (C clamps). Accepted ranges,
//!   inclusive:
//!
//!   | tunable | unit | range | default |
//!   |---|---|---|---|
//!   | `read_expire` | ms | 0 ..= 2^31-1 | 500 |
//!   | `write_expire` | ms | 0 ..= 2^31-1 | 5000 |
//!   | `writes_starved` | count | 0 ..= 2^31-1 (C also takes negatives) | 2 |
//!   | `front_merges` | bool | 0 ..= 1 | 1 |
//!   | `async_depth` | requests | 1 ..= `nr_requests` (C: ..= 2^31-1) | `nr_requests` |
//!   | `fifo_batch` | requests | 1 ..= 2^31-1 (C also takes 0, which acts as 1) | 16 |
//!   | `prio_aging_expire` | ms | 0 ..= 2^31-1 | 10000 |
//!
//! * times are nanoseconds passed in by the caller, not jiffies; they are
//!   compared with wrap-around like `time_after()`, and expires are kept
//!   in exact milliseconds (C rounds to jiffies).
//! * of several sorted requests starting at the probed sector, the front
//!   merge candidate is the one that entered the tree first (C: whichever
//!   its red-black search meets first).
//! * when two requests merge, the survivor takes over the other's FIFO
//!   place only if both sit in the same FIFO (they always do when the
//!   block layer merges: same direction and priority).
//!
//! As in Linux 6.12.y, `async_depth` follows `nr_requests` (see
//! [`Deadline::depth_updated`]), which starts at the capacity. Where the
//! kernel keeps `async_depth` on the queue instead (Linux 7.3,
//! [`AsyncDepth::Queue`], [`Deadline::with_async_depth`]), the tunable is
//! gone and the limit is the queue's ([`Deadline::queue_depth_updated`]).
//!
//! The code: `sort` (the sort trees, FIFOs and dispatch list, over the
//! shared intrusive structures, and a request's way through them),
//! `dispatch` (which sorted request goes next), `tunables`, and
//! `invariants` (the consistency checks, compiled only with `test`,
//! `debug_assertions` or the `invariants` feature).
//!
//! [`Policy`]: super::types::Policy

mod dispatch;
#[cfg(any(test, debug_assertions, feature = "invariants"))]
mod invariants;
mod sort;
mod tunables;

use super::intrusive::{List, ListLinks, ListNode, TreeLinks, TreeNode, NIL};
use super::types::{
    AsyncDepth, Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector,
    SetupError, Tag, TunableError, NSEC_PER_MSEC,
};
pub(crate) use tunables::{QUEUE_DEPTH_TUNABLE_NAMES, TUNABLE_NAMES};

/// Number of priority levels.
const LEVELS: usize = PrioClass::COUNT;
/// Number of directions (read, write).
const DIRS: usize = 2;
/// Read direction index.
const READ: usize = 0;
/// Write direction index.
const WRITE: usize = 1;

/// The state of a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not known to the scheduler.
    Free,
    /// Queued on the at-head dispatch list.
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
/// [`Deadline::new`].
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Start sector (the sort key).
    sector: Sector,
    /// Deadline (C's `fifo_time`); the insertion time for at-head requests.
    fifo_time: Nanos,
    /// Sort tree links.
    tree: TreeLinks,
    /// FIFO / dispatch list links.
    list: ListLinks,
    /// The request's operation.
    op: Op,
    /// The request's priority.
    prio: IoPrio,
    /// The level whose counters own this request (C's `elv.priv[0]`).
    owner: u8,
    /// Where the request is.
    state: State,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            sector: 0,
            fifo_time: 0,
            tree: TreeLinks::NONE,
            list: ListLinks::NONE,
            op: Op::Read,
            prio: IoPrio::DEFAULT,
            owner: 0,
            state: State::Free,
        }
    }
}

impl Slot {
    /// The sort tree / FIFO index of a sorted request.
    #[inline]
    fn queue(&self) -> usize {
        self.prio.class.index() * DIRS + self.op.dir()
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

/// The mq-deadline policy over storage `S` (one [`Slot`] per tag).
///
/// Any owner of a slot slice will do: `Vec<Slot>`, `Box<[Slot]>`, an
/// array, `&mut [Slot]`. The kernel's `KVec`/`KBox` (6.12) only implement
/// `Deref`, so a module wraps its allocation in a newtype with `AsRef` and
/// `AsMut` impls that forward to it.
pub struct Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    storage: S,
    /// Sort tree roots, by level * 2 + direction.
    trees: [u32; LEVELS * DIRS],
    /// FIFOs, by level * 2 + direction.
    fifos: [List; LEVELS * DIRS],
    /// The at-head dispatch list.
    dispatch: List,
    /// Position of the most recently dispatched request, by level * 2 +
    /// direction.
    latest_pos: [Sector; LEVELS * DIRS],
    /// The first request of each sort tree at or after `latest_pos` (C's
    /// `deadline_from_pos()`), kept up to date on every tree change so a
    /// batch continues without a tree search.
    next_rq: [u32; LEVELS * DIRS],
    /// Direction of the latest dispatched request.
    last_dir: usize,
    /// Number of requests dispatched in the current batch.
    batching: u32,
    /// Times reads have starved writes.
    starved: u32,
    /// Requests owned per level: inserted and not completed (C's
    /// `dd_queued()`, which counts requests in flight too).
    owned: [u32; LEVELS],
    /// Requests waiting in the scheduler.
    queued: usize,
    /// Treap priority generator state (a Weyl sequence, with the caller's
    /// clock mixed in so the shapes are hard to predict).
    rng: u64,
    fifo_expire: [Nanos; DIRS],
    fifo_batch: u32,
    writes_starved: u32,
    front_merges: bool,
    async_depth: u32,
    nr_requests: u32,
    prio_aging_expire: Nanos,
    /// Where `async_depth` lives: this policy's tunable, or the queue's.
    depth_home: AsyncDepth,
}

impl<S> Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// Default `read_expire`: 500 ms.
    pub const DEFAULT_READ_EXPIRE_MS: u32 = 500;
    /// Default `write_expire`: 5 s.
    pub const DEFAULT_WRITE_EXPIRE_MS: u32 = 5_000;
    /// Default `prio_aging_expire`: 10 s.
    pub const DEFAULT_PRIO_AGING_EXPIRE_MS: u32 = 10_000;
    /// Default `writes_starved`.
    pub const DEFAULT_WRITES_STARVED: u32 = 2;
    /// Default `fifo_batch`.
    pub const DEFAULT_FIFO_BATCH: u32 = 16;
    /// The largest capacity supported (tags must fit the `u32` links).
    pub const MAX_CAPACITY: usize = (u32::MAX - 1) as usize;

    /// Creates the policy over `storage`, whose length is the capacity:
    /// tags are `0..storage.len()`. Every slot is reset. `nr_requests`
    /// (and so `async_depth`) starts at the capacity; see
    /// [`Deadline::depth_updated`].
    pub fn new(mut storage: S) -> Result<Self, SetupError> {
        let capacity = storage.as_ref().len();
        if capacity == 0 || capacity > Self::MAX_CAPACITY {
            return Err(SetupError::Capacity);
        }
        for slot in storage.as_mut().iter_mut() {
            *slot = Slot::default();
        }
        let nr_requests = u32::try_from(capacity).unwrap_or(u32::MAX);
        Ok(Deadline {
            storage,
            trees: [NIL; LEVELS * DIRS],
            fifos: [List::EMPTY; LEVELS * DIRS],
            dispatch: List::EMPTY,
            latest_pos: [0; LEVELS * DIRS],
            next_rq: [NIL; LEVELS * DIRS],
            last_dir: WRITE,
            batching: 0,
            starved: 0,
            owned: [0; LEVELS],
            queued: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
            fifo_expire: [
                Nanos::from(Self::DEFAULT_READ_EXPIRE_MS) * NSEC_PER_MSEC,
                Nanos::from(Self::DEFAULT_WRITE_EXPIRE_MS) * NSEC_PER_MSEC,
            ],
            fifo_batch: Self::DEFAULT_FIFO_BATCH,
            writes_starved: Self::DEFAULT_WRITES_STARVED,
            front_merges: true,
            async_depth: nr_requests,
            nr_requests,
            prio_aging_expire: Nanos::from(Self::DEFAULT_PRIO_AGING_EXPIRE_MS) * NSEC_PER_MSEC,
            depth_home: AsyncDepth::Elevator,
        })
    }

    /// The policy for a kernel that keeps `async_depth` where `home` says
    /// ([`AsyncDepth::Elevator`] unless told): with
    /// [`AsyncDepth::Queue`] there is no `async_depth` tunable, and the
    /// limit is the queue's ([`Deadline::queue_depth_updated`]).
    pub fn with_async_depth(mut self, home: AsyncDepth) -> Self {
        self.set_async_depth(home);
        self
    }

    /// [`Deadline::with_async_depth`] in place.
    pub fn set_async_depth(&mut self, home: AsyncDepth) {
        self.depth_home = home;
    }

    /// Where `async_depth` lives.
    pub fn async_depth_home(&self) -> AsyncDepth {
        self.depth_home
    }

    /// The number of tags (the storage length).
    pub fn capacity(&self) -> usize {
        self.storage.as_ref().len()
    }

    /// Gives the storage back.
    pub fn into_storage(self) -> S {
        self.storage
    }

    /// The queue's `nr_requests` changed (C's `dd_depth_updated()`, also
    /// run at init): `async_depth` is reset to `nr_requests`, as in Linux
    /// 6.12.y. Zero counts as one.
    pub fn depth_updated(&mut self, nr_requests: u32) {
        self.nr_requests = nr_requests.max(1);
        self.async_depth = self.nr_requests;
    }

    /// The queue's `nr_requests` or `async_depth` changed where the queue
    /// keeps `async_depth` (Linux 7.3's `dd_depth_updated()`, also run at
    /// init, and after a write to `queue/async_depth`): the limit is the
    /// queue's `async_depth`. Zero counts as one.
    pub fn queue_depth_updated(&mut self, nr_requests: u32, async_depth: u32) {
        self.nr_requests = nr_requests.max(1);
        self.async_depth = async_depth.max(1);
    }

    /// The queue's `async_depth` as mq-deadline sets it when attached
    /// where the queue keeps it (Linux 7.3's `dd_init_sched()`):
    /// `nr_requests`.
    pub fn initial_queue_async_depth(nr_requests: u32) -> u32 {
        nr_requests
    }

    /// The current `nr_requests`.
    pub fn nr_requests(&self) -> u32 {
        self.nr_requests
    }

    /// Requests of priority class `class` inserted and not yet completed
    /// or merged away: queued or in flight (C's `dd_queued()`, debugfs
    /// `queued`). A class with such requests blocks lower classes.
    pub fn level_queued(&self, class: PrioClass) -> u32 {
        self.owned[class.index()]
    }

    /// The request a batch of class `class` in direction `op.dir()` would
    /// continue with: the first one at or after the position of the last
    /// request dispatched there (debugfs `read0_next_rq` and friends).
    pub fn next_request(&self, class: PrioClass, op: Op) -> Option<Tag> {
        let tag = self.next_rq[class.index() * DIRS + op.dir()];
        (tag != NIL).then_some(tag as Tag)
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
        if tag < self.capacity() {
            Some(tag as u32)
        } else {
            None
        }
    }
}

/// C's `op_is_write()`: the op code's low bit (so a flush is not a write
/// for `dd_limit_depth()`, though it sorts with the writes).
fn op_is_write(op: Op) -> bool {
    matches!(op, Op::Write | Op::Discard)
}

impl<S> Policy for Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// C's `dd_insert_request()`. A request inserted at head goes on the
    /// front of the dispatch list (C's `list_add()`: the most recent
    /// at-head insertion is served first). A tag that is already queued
    /// is ignored; a tag still in flight is taken as requeued first.
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        let level = desc.prio.class.index();
        let dir = desc.op.dir();
        let fifo_time = if at_head {
            now
        } else {
            now.wrapping_add(self.fifo_expire[dir])
        };
        // One look at the slot for its state and its fields, which also
        // checks the caller's tag (tags are below the capacity, which fits
        // the `u32` links).
        let Some(s) = self.slots_mut().get_mut(tag) else {
            return;
        };
        let x = tag as u32;
        let new = match s.state {
            State::AtHead | State::Sorted => return,
            State::Free => true,
            State::Dispatched | State::Requeued => false,
        };
        if new {
            s.owner = level as u8;
        }
        s.sector = desc.sector;
        s.op = desc.op;
        s.prio = desc.prio;
        s.fifo_time = fifo_time;
        s.state = if at_head {
            State::AtHead
        } else {
            State::Sorted
        };
        if new {
            self.owned[level] = self.owned[level].wrapping_add(1);
        }
        if at_head {
            self.dispatch.insert_after(self.storage.as_mut(), NIL, x);
        } else {
            self.rng ^= now;
            let q = level * DIRS + dir;
            self.tree_insert(q, x);
            self.fifos[q].push_back(self.storage.as_mut(), x);
        }
        // At most the capacity: it cannot wrap.
        self.queued = self.queued.wrapping_add(1);
    }

    /// C's `dd_dispatch_request()`. May return [`Dispatch::Empty`] while
    /// [`Policy::has_work`] is true, as C returns `NULL`: when a higher
    /// class still has requests in flight, or when a request seems to
    /// start in the future because its expire tunable was lowered after
    /// it was queued. Run the queue again on completion or later.
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let head = self.dispatch.head;
        if head != NIL {
            return self.start(head);
        }
        if let Some(x) = self.dispatch_aged(now) {
            return self.start(x);
        }
        // A level that owns no request has none queued: it is passed
        // over without a look. The first that owns one decides.
        if let Some(level) = self.owned.iter().position(|&n| n != 0) {
            if let Some(x) = self.dispatch_level(level, now, now) {
                return self.start(x);
            }
        }
        Dispatch::Empty
    }

    fn has_work(&self) -> bool {
        self.queued != 0
    }

    fn queued(&self) -> usize {
        self.queued
    }

    /// Completing a tag that is not in flight (or requeued) is ignored.
    fn completed(&mut self, tag: Tag, _now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        if matches!(self.at(x).state, State::Dispatched | State::Requeued) {
            self.finish(x);
        }
    }

    fn requeued(&mut self, tag: Tag, _now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        if self.at(x).state == State::Dispatched {
            self.at_mut(x).state = State::Requeued;
        }
    }

    /// C's `dd_request_merge()`: with `front_merges` on, the sorted
    /// request of the bio's class and direction that starts where the bio
    /// ends, if its operation and priority match the bio's. Like
    /// `elv_rb_find()`, only one request at that sector is considered:
    /// here the one that entered the tree first (C takes whichever its
    /// red-black tree search meets first). Flushes never merge.
    fn front_merge_candidate(&self, probe: &MergeProbe) -> Option<Tag> {
        if !self.front_merges || probe.op == Op::Flush {
            return None;
        }
        let q = probe.prio.class.index() * DIRS + probe.op.dir();
        let x = self.lower_bound(q, probe.bio_end);
        if x == NIL {
            return None;
        }
        let s = self.at(x);
        (s.sector == probe.bio_end && s.op == probe.op && s.prio == probe.prio).then_some(x as Tag)
    }

    /// C's `dd_request_merged()` does nothing for a back merge, and
    /// mq-deadline looks at no request's size: nothing to do.
    fn back_merged(&mut self, _tag: Tag, _new_sectors: u32) {}

    /// C's `dd_request_merged()` for a front merge: the request moves in
    /// its sort tree.
    fn front_merged(&mut self, tag: Tag, new_sector: Sector, _new_sectors: u32) {
        let Some(x) = self.check(tag) else { return };
        match self.at(x).state {
            State::Sorted => {
                let q = self.at(x).queue();
                self.tree_remove(q, x);
                self.at_mut(x).sector = new_sector;
                self.tree_insert(q, x);
            }
            State::AtHead => self.at_mut(x).sector = new_sector,
            _ => {}
        }
    }

    /// C's `dd_merged_requests()`: if `next` expires before `into`, `into`
    /// takes its deadline and its place in the FIFO; `next` is gone (and
    /// counts as completed, as the block layer frees it).
    fn requests_merged(&mut self, into: Tag, next: Tag) {
        let (Some(i), Some(n)) = (self.check(into), self.check(next)) else {
            return;
        };
        if i == n || !matches!(self.at(n).state, State::AtHead | State::Sorted) {
            return;
        }
        let (si, sn) = (*self.at(i), *self.at(n));
        if si.state == State::Sorted
            && sn.state == State::Sorted
            && si.queue() == sn.queue()
            && time_after(si.fifo_time, sn.fifo_time)
        {
            let (fifo, nodes) = (&mut self.fifos[si.queue()], self.storage.as_mut());
            fifo.remove(nodes, i);
            fifo.insert_after(nodes, n, i);
            self.at_mut(i).fifo_time = sn.fifo_time;
        }
        self.unqueue(n);
        self.finish(n);
    }

    /// C's `dd_limit_depth()`: every request but a synchronous read is
    /// limited to `async_depth`.
    fn async_depth_limit(&self, op: Op, sync: bool) -> Option<u32> {
        if sync && !op_is_write(op) {
            None
        } else {
            Some(self.async_depth)
        }
    }

    fn tunables(&self) -> &'static [&'static str] {
        self.tunable_list()
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        self.tunable_value(name)
    }

    /// Rejects anything outside the ranges in the [module
    /// documentation](self); the old value then stays.
    fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        self.write_tunable(name, text)
    }
}
