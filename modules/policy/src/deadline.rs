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
//! [`Deadline::depth_updated`]), which starts at the capacity.
//!
//! [`Policy`]: super::types::Policy

use super::types::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector, SetupError,
    Tag, TunableError, NSEC_PER_MSEC,
};

/// The "no node" link value.
const NIL: u32 = u32::MAX;

/// Number of priority levels.
const LEVELS: usize = PrioClass::COUNT;
/// Number of directions (read, write).
const DIRS: usize = 2;
/// Read direction index.
const READ: usize = 0;
/// Write direction index.
const WRITE: usize = 1;
/// Left child index.
const LEFT: usize = 0;
/// Right child index.
const RIGHT: usize = 1;

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
    /// Sort tree links: left and right child, parent.
    child: [u32; 2],
    parent: u32,
    /// Treap heap priority.
    heap: u32,
    /// FIFO / dispatch list links.
    prev: u32,
    next: u32,
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
            child: [NIL; 2],
            parent: NIL,
            heap: 0,
            prev: NIL,
            next: NIL,
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

/// A tree link: which field points at a subtree.
#[derive(Clone, Copy)]
enum Link {
    /// The root of sort tree `n`.
    Root(usize),
    /// A child of a node, on side `LEFT` or `RIGHT`.
    Child(u32, usize),
}

/// Head and tail of an intrusive list.
#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

impl List {
    const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };
}

/// Which list a list operation works on.
#[derive(Clone, Copy)]
enum ListId {
    /// FIFO `n` (level * 2 + direction).
    Fifo(usize),
    /// The at-head dispatch list.
    Dispatch,
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
    /// Treap priority generator state (a splitmix64 counter, with the
    /// caller's clock mixed in so the shapes are hard to predict).
    rng: u64,
    fifo_expire: [Nanos; DIRS],
    fifo_batch: u32,
    writes_starved: u32,
    front_merges: bool,
    async_depth: u32,
    nr_requests: u32,
    prio_aging_expire: Nanos,
}

/// The largest value the millisecond and count tunables accept
/// (C's `INT_MAX`).
const TUNABLE_MAX: i64 = i32::MAX as i64;

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
                Self::DEFAULT_READ_EXPIRE_MS as Nanos * NSEC_PER_MSEC,
                Self::DEFAULT_WRITE_EXPIRE_MS as Nanos * NSEC_PER_MSEC,
            ],
            fifo_batch: Self::DEFAULT_FIFO_BATCH,
            writes_starved: Self::DEFAULT_WRITES_STARVED,
            front_merges: true,
            async_depth: nr_requests,
            nr_requests,
            prio_aging_expire: Self::DEFAULT_PRIO_AGING_EXPIRE_MS as Nanos * NSEC_PER_MSEC,
        })
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

    /// Checks the internal structures (for tests and fuzzing; O(n log n)):
    /// every sort tree is a well-formed treap holding exactly the sorted
    /// requests of its level and direction, every list is well linked and
    /// holds exactly its requests, and the counters match the slots.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let slots = self.slots();
        let cap = slots.len();
        let valid = |i: u32| i == NIL || (i as usize) < cap;
        let mut queued = 0usize;
        let mut owned = [0u32; LEVELS];
        let mut in_tree = [0usize; LEVELS * DIRS];
        let mut links = [0usize; LEVELS * DIRS];
        let roots = self.trees.iter().copied();
        let heads = self.fifos.iter().chain([&self.dispatch]);
        if !roots
            .chain(heads.flat_map(|l| [l.head, l.tail]))
            .chain(
                slots
                    .iter()
                    .flat_map(|s| [s.child[LEFT], s.child[RIGHT], s.parent, s.prev, s.next]),
            )
            .all(valid)
        {
            return Err("link out of range");
        }
        for (i, s) in slots.iter().enumerate() {
            if s.state != State::Free {
                owned[usize::from(s.owner).min(LEVELS - 1)] += 1;
            }
            if s.state != State::Sorted && (s.child != [NIL; 2] || s.parent != NIL) {
                return Err("unsorted request has tree links");
            }
            match s.state {
                State::Sorted => {
                    queued += 1;
                    let q = s.queue();
                    in_tree[q] += 1;
                    for child in s.child {
                        if child == NIL {
                            continue;
                        }
                        let c = &slots[child as usize];
                        if c.state != State::Sorted || c.queue() != q {
                            return Err("tree child in another tree");
                        }
                        if c.heap > s.heap {
                            return Err("treap heap order broken");
                        }
                        if c.parent != i as u32 {
                            return Err("tree child's parent link wrong");
                        }
                        links[q] += 1;
                    }
                    let [l, r] = s.child;
                    if (l != NIL && slots[l as usize].sector > s.sector)
                        || (r != NIL && slots[r as usize].sector < s.sector)
                    {
                        return Err("tree child out of order");
                    }
                    // Its parent links lead to its tree's root.
                    let mut cur = i as u32;
                    let mut steps = 0;
                    while self.at(cur).parent != NIL && steps <= cap {
                        steps += 1;
                        cur = self.at(cur).parent;
                    }
                    if cur != self.trees[q] {
                        return Err("sorted request not under its tree's root");
                    }
                }
                State::AtHead => queued += 1,
                _ => {
                    if s.prev != NIL || s.next != NIL {
                        return Err("unqueued request has list links");
                    }
                }
            }
        }
        for q in 0..LEVELS * DIRS {
            let root = self.trees[q];
            if root != NIL {
                links[q] += 1;
                if self.at(root).parent != NIL {
                    return Err("tree root has a parent");
                }
            }
            if links[q] != in_tree[q] {
                return Err("tree is not a tree");
            }
            // In order, sectors never decrease.
            let mut cur = root;
            while cur != NIL && self.at(cur).child[LEFT] != NIL {
                cur = self.at(cur).child[LEFT];
            }
            let mut seen = 0;
            let mut last = 0;
            while cur != NIL {
                seen += 1;
                let sector = self.at(cur).sector;
                if seen > in_tree[q] || sector < last {
                    return Err("tree out of sector order");
                }
                last = sector;
                cur = self.successor(cur);
            }
            if seen != in_tree[q] {
                return Err("tree walk misses requests");
            }
            if self.next_rq[q] != self.lower_bound(q, self.latest_pos[q]) {
                return Err("next request is not the first at or after latest_pos");
            }
            if self.list_check(ListId::Fifo(q), |s| {
                s.state == State::Sorted && s.queue() == q
            })? != in_tree[q]
            {
                return Err("FIFO does not hold its sorted requests");
            }
        }
        let at_head = self.list_check(ListId::Dispatch, |s| s.state == State::AtHead)?;
        if at_head + in_tree.iter().sum::<usize>() != queued {
            return Err("dispatch list does not hold the at-head requests");
        }
        if queued != self.queued {
            return Err("queued count wrong");
        }
        if owned != self.owned {
            return Err("per-level counts wrong");
        }
        Ok(())
    }

    /// Walks a list checking its links; returns its length.
    fn list_check(
        &self,
        id: ListId,
        member: impl Fn(&Slot) -> bool,
    ) -> Result<usize, &'static str> {
        let list = self.list(id);
        let mut prev = NIL;
        let mut cur = list.head;
        let mut len = 0;
        while cur != NIL {
            len += 1;
            if len > self.capacity() {
                return Err("list has a cycle");
            }
            let s = self.at(cur);
            if s.prev != prev || !member(s) {
                return Err("list badly linked");
            }
            prev = cur;
            cur = s.next;
        }
        if list.tail != prev {
            return Err("list tail wrong");
        }
        Ok(len)
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

    // ---- sort trees (treaps keyed by sector) -------------------------
    //
    // A request entering a tree is the latest among those at its sector,
    // so it goes right of equal sectors (as in C's `elv_rb_add()`); in
    // order, equal sectors stay in the order they entered.
    //
    // Children are indexed by side (`LEFT`, `RIGHT`) so that a descent
    // picks the side from a comparison instead of branching on it.

    #[inline]
    fn link(&self, link: Link) -> u32 {
        match link {
            Link::Root(t) => self.trees[t],
            Link::Child(n, side) => self.at(n).child[side],
        }
    }

    /// Points `link` at `to`, and `to` back at its new parent.
    #[inline]
    fn set_link(&mut self, link: Link, to: u32) {
        let parent = match link {
            Link::Root(t) => {
                self.trees[t] = to;
                NIL
            }
            Link::Child(n, side) => {
                self.at_mut(n).child[side] = to;
                n
            }
        };
        if to != NIL {
            self.at_mut(to).parent = parent;
        }
    }

    /// The next node of `x`'s tree in key order, or `NIL`.
    #[inline]
    fn successor(&self, x: u32) -> u32 {
        let mut cur = self.at(x).child[RIGHT];
        if cur != NIL {
            while self.at(cur).child[LEFT] != NIL {
                cur = self.at(cur).child[LEFT];
            }
            return cur;
        }
        let mut child = x;
        let mut parent = self.at(x).parent;
        while parent != NIL && self.at(parent).child[RIGHT] == child {
            child = parent;
            parent = self.at(parent).parent;
        }
        parent
    }

    #[inline]
    fn next_heap(&mut self) -> u32 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 32) as u32
    }

    fn tree_insert(&mut self, tree: usize, x: u32) {
        let heap = self.next_heap();
        {
            let s = self.at_mut(x);
            s.heap = heap;
            s.child = [NIL; 2];
            s.parent = NIL;
        }
        let sector = self.at(x).sector;
        // Descend to where x's heap priority puts it.
        let mut link = Link::Root(tree);
        let mut cur = self.link(link);
        while cur != NIL && self.at(cur).heap >= heap {
            link = Link::Child(cur, usize::from(sector >= self.at(cur).sector));
            cur = self.link(link);
        }
        self.set_link(link, x);
        // Split the displaced subtree around x's sector.
        let mut hooks = [Link::Child(x, LEFT), Link::Child(x, RIGHT)];
        while cur != NIL {
            // Nodes up to x's sector go left of x, continuing to their right.
            let side = usize::from(self.at(cur).sector > sector);
            self.set_link(hooks[side], cur);
            hooks[side] = Link::Child(cur, side ^ 1);
            cur = self.at(cur).child[side ^ 1];
        }
        self.set_link(hooks[LEFT], NIL);
        self.set_link(hooks[RIGHT], NIL);
        // Keep next_rq the first request at or after latest_pos.
        let next = self.next_rq[tree];
        if sector >= self.latest_pos[tree] && (next == NIL || self.at(next).sector > sector) {
            self.next_rq[tree] = x;
        }
    }

    fn tree_remove(&mut self, tree: usize, x: u32) {
        // The link that points at x.
        let parent = self.at(x).parent;
        let link = if parent == NIL {
            if self.trees[tree] != x {
                return;
            }
            Link::Root(tree)
        } else {
            match self.at(parent).child {
                [l, _] if l == x => Link::Child(parent, LEFT),
                [_, r] if r == x => Link::Child(parent, RIGHT),
                _ => return,
            }
        };
        if self.next_rq[tree] == x {
            // Everything after x in order is at or after latest_pos too.
            self.next_rq[tree] = self.successor(x);
        }
        let [mut l, mut r] = self.at(x).child;
        // Replace x by the merge of its subtrees.
        let mut hook = link;
        loop {
            if l == NIL {
                self.set_link(hook, r);
                break;
            }
            if r == NIL {
                self.set_link(hook, l);
                break;
            }
            if self.at(l).heap > self.at(r).heap {
                self.set_link(hook, l);
                hook = Link::Child(l, RIGHT);
                l = self.at(l).child[RIGHT];
            } else {
                self.set_link(hook, r);
                hook = Link::Child(r, LEFT);
                r = self.at(r).child[LEFT];
            }
        }
        let s = self.at_mut(x);
        s.child = [NIL; 2];
        s.parent = NIL;
    }

    /// The first node of `tree` whose sector is at least `pos`
    /// (C's `deadline_from_pos()`), or `NIL`.
    #[inline]
    fn lower_bound(&self, tree: usize, pos: Sector) -> u32 {
        let mut cur = self.trees[tree];
        let mut res = NIL;
        while cur != NIL {
            let s = self.at(cur);
            let below = s.sector < pos;
            res = if below { res } else { cur };
            cur = s.child[usize::from(below)];
        }
        res
    }

    // ---- lists -------------------------------------------------------

    #[inline]
    fn list(&self, id: ListId) -> List {
        match id {
            ListId::Fifo(i) => self.fifos[i],
            ListId::Dispatch => self.dispatch,
        }
    }

    #[inline]
    fn list_mut(&mut self, id: ListId) -> &mut List {
        match id {
            ListId::Fifo(i) => &mut self.fifos[i],
            ListId::Dispatch => &mut self.dispatch,
        }
    }

    /// Links `x` into list `id` after `after` (`NIL`: at the front).
    #[inline]
    fn list_insert_after(&mut self, id: ListId, after: u32, x: u32) {
        let next = if after == NIL {
            self.list(id).head
        } else {
            self.at(after).next
        };
        {
            let s = self.at_mut(x);
            s.prev = after;
            s.next = next;
        }
        if after == NIL {
            self.list_mut(id).head = x;
        } else {
            self.at_mut(after).next = x;
        }
        if next == NIL {
            self.list_mut(id).tail = x;
        } else {
            self.at_mut(next).prev = x;
        }
    }

    #[inline]
    fn list_push_back(&mut self, id: ListId, x: u32) {
        let tail = self.list(id).tail;
        self.list_insert_after(id, tail, x);
    }

    #[inline]
    fn list_remove(&mut self, id: ListId, x: u32) {
        let (prev, next) = {
            let s = self.at(x);
            (s.prev, s.next)
        };
        if prev == NIL {
            self.list_mut(id).head = next;
        } else {
            self.at_mut(prev).next = next;
        }
        if next == NIL {
            self.list_mut(id).tail = prev;
        } else {
            self.at_mut(next).prev = prev;
        }
        let s = self.at_mut(x);
        s.prev = NIL;
        s.next = NIL;
    }

    // ---- request bookkeeping -----------------------------------------

    /// Takes a queued request off every structure (C's
    /// `deadline_remove_request()`); its state is left to the caller.
    #[inline]
    fn unqueue(&mut self, x: u32) {
        let s = *self.at(x);
        match s.state {
            State::AtHead => self.list_remove(ListId::Dispatch, x),
            State::Sorted => {
                let q = s.queue();
                self.list_remove(ListId::Fifo(q), x);
                self.tree_remove(q, x);
            }
            _ => return,
        }
        self.queued = self.queued.saturating_sub(1);
    }

    /// C's `dd_start_request()`: the request leaves for the device.
    #[inline]
    fn start(&mut self, x: u32) -> Dispatch {
        let (q, sector) = {
            let s = self.at(x);
            (s.queue(), s.sector)
        };
        // Continuing a batch: the next request becomes x's successor as x
        // leaves its tree, and no other request sits at x's sector below
        // x (x was the first at or after the old, lower, position).
        let was_next = self.next_rq[q] == x;
        self.unqueue(x);
        self.at_mut(x).state = State::Dispatched;
        self.latest_pos[q] = sector;
        if !was_next {
            self.next_rq[q] = self.lower_bound(q, sector);
        }
        Dispatch::Request(x as Tag)
    }

    /// The request no longer belongs to the scheduler (completed, or
    /// merged away): C's `dd_finish_request()`.
    #[inline]
    fn finish(&mut self, x: u32) {
        let s = self.at_mut(x);
        let owner = usize::from(s.owner).min(LEVELS - 1);
        s.state = State::Free;
        self.owned[owner] = self.owned[owner].saturating_sub(1);
    }

    // ---- dispatch ----------------------------------------------------

    /// C's `started_after()`.
    #[inline]
    fn started_after(&self, x: u32, latest_start: Nanos) -> bool {
        let s = self.at(x);
        let start = s.fifo_time.wrapping_sub(self.fifo_expire[s.op.dir()]);
        time_after(start, latest_start)
    }

    /// C's `__dd_dispatch_request()` for one level: the best request of
    /// that level that started no later than `latest_start`.
    fn dispatch_level(&mut self, level: usize, latest_start: Nanos, now: Nanos) -> Option<u32> {
        let base = level * DIRS;
        // Batches are reads XOR writes: continue the current one.
        let rq = self.next_rq[base + self.last_dir];
        let rq = if rq != NIL && self.batching < self.fifo_batch {
            rq
        } else {
            // Not running a batch: choose a direction.
            let reads = self.fifos[base + READ].head != NIL;
            let writes = self.fifos[base + WRITE].head != NIL;
            let dir = if reads {
                let starved = self.starved;
                let starve = writes && {
                    self.starved = starved.wrapping_add(1);
                    starved >= self.writes_starved
                };
                if starve {
                    self.starved = 0;
                    WRITE
                } else {
                    READ
                }
            } else if writes {
                self.starved = 0;
                WRITE
            } else {
                return None;
            };
            let head = self.fifos[base + dir].head;
            let next = self.next_rq[base + dir];
            let expired = time_after_eq(now, self.at(head).fifo_time);
            let rq = if expired || next == NIL { head } else { next };
            self.last_dir = dir;
            self.batching = 0;
            rq
        };
        if self.started_after(rq, latest_start) {
            return None;
        }
        self.batching = self.batching.wrapping_add(1);
        Some(rq)
    }

    /// C's `dd_dispatch_prio_aged_requests()`.
    fn dispatch_aged(&mut self, now: Nanos) -> Option<u32> {
        let levels = self.owned.iter().filter(|&&n| n != 0).count();
        if levels < 2 {
            return None;
        }
        let latest_start = now.wrapping_sub(self.prio_aging_expire);
        (PrioClass::BestEffort.index()..LEVELS)
            .find_map(|level| self.dispatch_level(level, latest_start, now))
    }

    fn tunable_value(&self, name: &str) -> Result<i64, TunableError> {
        let ms = |ns: Nanos| (ns / NSEC_PER_MSEC) as i64;
        Ok(match name {
            "read_expire" => ms(self.fifo_expire[READ]),
            "write_expire" => ms(self.fifo_expire[WRITE]),
            "writes_starved" => i64::from(self.writes_starved),
            "front_merges" => i64::from(self.front_merges),
            "async_depth" => i64::from(self.async_depth),
            "fifo_batch" => i64::from(self.fifo_batch),
            "prio_aging_expire" => ms(self.prio_aging_expire),
            _ => return Err(TunableError::UnknownName),
        })
    }
}

/// C's `op_is_write()`: the op code's low bit (so a flush is not a write
/// for `dd_limit_depth()`, though it sorts with the writes).
fn op_is_write(op: Op) -> bool {
    matches!(op, Op::Write | Op::Discard)
}

/// The tunables, in sysfs order.
const TUNABLES: &[&str] = &[
    "read_expire",
    "write_expire",
    "writes_starved",
    "front_merges",
    "async_depth",
    "fifo_batch",
    "prio_aging_expire",
];

impl<S> Policy for Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// C's `dd_insert_request()`. A request inserted at head goes on the
    /// front of the dispatch list (C's `list_add()`: the most recent
    /// at-head insertion is served first). A tag that is already queued
    /// is ignored; a tag still in flight is taken as requeued first.
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        let level = desc.prio.class.index();
        match self.at(x).state {
            State::AtHead | State::Sorted => return,
            State::Free => {
                self.owned[level] = self.owned[level].wrapping_add(1);
                self.at_mut(x).owner = level as u8;
            }
            State::Dispatched | State::Requeued => {}
        }
        {
            let s = self.at_mut(x);
            s.sector = desc.sector;
            s.op = desc.op;
            s.prio = desc.prio;
        }
        if at_head {
            let s = self.at_mut(x);
            s.state = State::AtHead;
            s.fifo_time = now;
            self.list_insert_after(ListId::Dispatch, NIL, x);
        } else {
            self.rng ^= now;
            let dir = desc.op.dir();
            let expire = self.fifo_expire[dir];
            let s = self.at_mut(x);
            s.state = State::Sorted;
            s.fifo_time = now.wrapping_add(expire);
            let q = level * DIRS + dir;
            self.tree_insert(q, x);
            self.list_push_back(ListId::Fifo(q), x);
        }
        self.queued += 1;
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
        for level in 0..LEVELS {
            if let Some(x) = self.dispatch_level(level, now, now) {
                return self.start(x);
            }
            if self.owned[level] != 0 {
                break;
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
            let fifo = ListId::Fifo(si.queue());
            self.list_remove(fifo, i);
            self.list_insert_after(fifo, n, i);
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
        TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        self.tunable_value(name)
    }

    /// Rejects anything outside the ranges in the [module
    /// documentation](self); the old value then stays.
    fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        let (min, max) = match name {
            "read_expire" | "write_expire" | "writes_starved" | "prio_aging_expire" => {
                (0, TUNABLE_MAX)
            }
            "front_merges" => (0, 1),
            "async_depth" => (1, i64::from(self.nr_requests)),
            "fifo_batch" => (1, TUNABLE_MAX),
            _ => return Err(TunableError::UnknownName),
        };
        let value = super::types::parse_sysfs_in_range(text, min, max)?;
        // In range, so it fits a u32 and the ms products fit a u64.
        let count = value as u32;
        let ns = value as Nanos * NSEC_PER_MSEC;
        match name {
            "read_expire" => self.fifo_expire[READ] = ns,
            "write_expire" => self.fifo_expire[WRITE] = ns,
            "writes_starved" => self.writes_starved = count,
            "front_merges" => self.front_merges = value != 0,
            "async_depth" => self.async_depth = count,
            "fifo_batch" => self.fifo_batch = count,
            _ => self.prio_aging_expire = ns,
        }
        Ok(())
    }
}
