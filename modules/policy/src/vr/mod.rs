// SPDX-License-Identifier: GPL-2.0

//! V(R): requests sorted by sector, the next one the nearest to the head,
//! with a penalty for reversing the head's direction; FIFO expiry.
//!
//! A port of Aaron Carroll's `block/vr-iosched.c` as Android kernels
//! carried it (`CyanogenMod/android_kernel_samsung_jf`, commit
//! 768cf4406cd6acc40bfb46f412a3a058e568f3ea, Linux 3.4) onto the
//! [`Policy`] trait.
//!
//! * One sort tree of every queued request, reads and writes alike,
//!   keyed by sector; two FIFOs, sync and async (a read is always sync).
//!   A request enters its FIFO, with a deadline of now plus
//!   `sync_expire` or `async_expire`, only if that expire is not 0: with
//!   0, requests of that kind have no deadline.
//! * The head is the sector of the last request dispatched (0 at first),
//!   and its direction forward if that request lay beyond the one before
//!   it, else backward (forward at first).
//! * Dispatch, after more than `fifo_batch` requests were sent since the
//!   FIFOs were last looked at: of the two FIFO heads, those strictly
//!   past their deadline, the one with the earlier deadline (async on a
//!   tie). The count starts again from zero whether or not one expired.
//! * Otherwise, of the nearest request at or beyond the head (`next`) and
//!   the nearest before it (`prev`), the one at the smaller distance
//!   from the head, where a distance against the head's direction counts
//!   `rev_penalty` times; `next` on a tie. `rev_penalty` 1 is shortest
//!   seek first; larger values approach SCAN, and 0 is SCAN (the head
//!   turns only when nothing lies ahead of it).
//! * Every dispatched request counts towards the batch and moves the
//!   head.
//! * When the block layer merges queued request `next` into `into` and
//!   `next` expires first, `into` takes `next`'s deadline and FIFO place
//!   (its FIFO too, should they differ), as `vr_merged_requests()` does;
//!   a front merge moves the request in the sort tree.
//!
//! Requests live in caller-provided storage (one [`Slot`] per tag); the
//! sort tree is the shared treap (insertion and lookup in expected
//! O(log n)) and the FIFOs intrusive lists, so nothing allocates.
//!
//! Starvation: the FIFOs are looked at every `fifo_batch + 1` dispatches
//! (the first time after `fifo_batch + 2`), and each time the oldest
//! expired FIFO head goes out if there is one. With fixed expire times a
//! FIFO is in deadline order and a request queued later has a later
//! deadline, so once a request with a deadline has expired it goes out
//! within `(A + 1) × (fifo_batch + 1) + 1` dispatches, `A` being the
//! requests then queued whose deadline is not later than its own.
//!
//! Where this port differs from the C, beyond what blk-mq forces (the
//! module documentation of `rust_vr` has that):
//!
//! * **The penalty.** The header's rule, "a multiplicative penalty of
//!   `rev_penalty` applied for reversing the head direction", is what is
//!   implemented. The Android code divides the distance in the head's
//!   direction by the penalty with `do_div()`, whose value is the
//!   remainder, and assigns that: with the default of 1 every distance in
//!   the head's direction becomes 0, so the head sweeps on until nothing
//!   lies ahead (SCAN), and 0 (a penalty of `INT_MAX`) gives shortest seek
//!   first, the reverse of the header. Here 1 is shortest seek first and
//!   0 is SCAN, as the header says.
//! * **Equal sectors.** Requests at the same sector all stay in the sort
//!   tree, in the order they came (as `elv_rb_add()` does since Linux
//!   4.x). The 3.4 `elv_rb_add()` refused a second request at a sector
//!   and V(R) ignored the refusal, so that request sat in its FIFO only
//!   and went out only once expired (or never, without a deadline).
//! * **Front-merge candidate.** Of the sorted requests starting where the
//!   bio ends, the one that entered the tree first, if its operation and
//!   priority are the bio's (C: the one request at that sector).
//! * sysfs writes that are not numbers, negative or beyond `INT_MAX` fail
//!   with an error and the old value stays (C's `simple_strtol()` takes
//!   garbage as 0, and C clamps). Accepted ranges, inclusive:
//!
//!   | tunable | unit | range | default |
//!   |---|---|---|---|
//!   | `sync_expire` | ms | 0 ..= 2^31-1 (0: no deadline) | 500 |
//!   | `async_expire` | ms | 0 ..= 2^31-1 (0: no deadline) | 5000 |
//!   | `fifo_batch` | requests | 0 ..= 2^31-1 | 1 |
//!   | `rev_penalty` | factor | 0 ..= 2^31-1 (0: SCAN) | 1 |
//!
//! * times are nanoseconds passed in by the caller, compared with
//!   wrap-around as `time_after()` does; deadlines are kept in exact
//!   milliseconds (C rounds to jiffies).
//! * requests inserted at head (requeues; in the single-queue block layer
//!   they went to the dispatch list, past the elevator) are kept on their
//!   own list and served before the rest, latest first, without moving
//!   the head or counting towards the batch: as in C, the elevator never
//!   sees them.
//!
//! The code: this file (slots, the sort tree and FIFOs, dispatch,
//! merges), `tunables`, and `invariants` (the consistency checks,
//! compiled only with `test`, `debug_assertions` or the `invariants`
//! feature).
//!
//! [`Policy`]: super::types::Policy

#[cfg(any(test, debug_assertions, feature = "invariants"))]
mod invariants;
mod tunables;

use super::intrusive::{
    tree_last, tree_lower_bound, tree_prev, List, ListLinks, ListNode, Tree, TreeLinks, TreeNode,
    NIL,
};
use super::types::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, RequestDesc, Sector, SetupError, Tag,
    TunableError, NSEC_PER_MSEC,
};
pub(crate) use tunables::TUNABLE_NAMES;

/// C's `ASYNC`.
const ASYNC: usize = 0;
/// C's `SYNC`.
const SYNC: usize = 1;
/// The `fifo` of a sorted request without a deadline.
const NO_FIFO: u8 = 2;
/// The `fifo` of a request on the at-head list.
const AT_HEAD: u8 = 3;

/// The direction the head last moved in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeadDir {
    /// Towards higher sectors.
    Forward,
    /// Towards lower sectors, or staying.
    Backward,
}

/// The state of a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not known to the scheduler.
    Free,
    /// Queued on the at-head list.
    AtHead,
    /// Queued in the sort tree (and on its FIFO, if it has a deadline).
    Sorted,
    /// Handed to the device (or handed back by the driver, waiting to be
    /// inserted again).
    Dispatched,
}

/// The per-request node the policy keeps in caller-provided storage.
///
/// Opaque: create storage with `Slot::default()` and hand it to
/// [`Vr::new`].
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Start sector (the sort key).
    sector: Sector,
    /// Deadline (C's `rq_fifo_time()`), if on a FIFO.
    fifo_time: Nanos,
    /// Sort tree links.
    tree: TreeLinks,
    /// FIFO or at-head list links.
    list: ListLinks,
    /// `SYNC` or `ASYNC` for a request on that FIFO, else [`NO_FIFO`] or
    /// [`AT_HEAD`].
    fifo: u8,
    /// The request's operation (for front-merge candidates).
    op: Op,
    /// The request's priority (for front-merge candidates).
    prio: IoPrio,
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
            fifo: NO_FIFO,
            op: Op::Read,
            prio: IoPrio::DEFAULT,
            state: State::Free,
        }
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

/// The sort tree is keyed by sector; a request entering it goes after
/// those at its sector, so equal sectors stay in the order they entered.
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

/// The V(R) policy over storage `S` (one [`Slot`] per tag): any owner of
/// a slot slice (`Vec<Slot>`, an array, `&mut [Slot]`, or the kernel
/// module's allocation wrapped to implement `AsRef` and `AsMut`).
pub struct Vr<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    storage: S,
    /// The sort tree's root.
    root: u32,
    /// The FIFOs, `ASYNC` and `SYNC`.
    fifos: [List; 2],
    /// Requests inserted at head, latest first.
    at_head: List,
    /// Requests waiting in the scheduler.
    queued: usize,
    /// The head: the sector of the last request dispatched.
    last_sector: Sector,
    /// The direction the head last moved in.
    head_dir: HeadDir,
    /// Requests dispatched since the FIFOs were last checked for expiry.
    nbatched: u32,
    /// Treap priority generator state (a splitmix64 counter, with the
    /// caller's clock mixed in so the shapes are hard to predict).
    rng: u64,
    /// The expires, `ASYNC` and `SYNC`.
    fifo_expire: [Nanos; 2],
    fifo_batch: u32,
    rev_penalty: u32,
}

impl<S> Vr<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// Default `sync_expire`: 500 ms (C: `HZ / 2`).
    pub const DEFAULT_SYNC_EXPIRE_MS: u32 = 500;
    /// Default `async_expire`: 5 s.
    pub const DEFAULT_ASYNC_EXPIRE_MS: u32 = 5_000;
    /// Default `fifo_batch`.
    pub const DEFAULT_FIFO_BATCH: u32 = 1;
    /// Default `rev_penalty`.
    pub const DEFAULT_REV_PENALTY: u32 = 1;
    /// The largest capacity supported (tags must fit the `u32` links).
    pub const MAX_CAPACITY: usize = (u32::MAX - 1) as usize;

    /// Creates the policy over `storage`, whose length is the capacity:
    /// tags are `0..storage.len()`. Every slot is reset.
    pub fn new(mut storage: S) -> Result<Self, SetupError> {
        let capacity = storage.as_ref().len();
        if capacity == 0 || capacity > Self::MAX_CAPACITY {
            return Err(SetupError::Capacity);
        }
        for slot in storage.as_mut().iter_mut() {
            *slot = Slot::default();
        }
        let ms = |ms: u32| Nanos::from(ms) * NSEC_PER_MSEC;
        Ok(Vr {
            storage,
            root: NIL,
            fifos: [List::EMPTY; 2],
            at_head: List::EMPTY,
            queued: 0,
            last_sector: 0,
            head_dir: HeadDir::Forward,
            nbatched: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
            fifo_expire: [
                ms(Self::DEFAULT_ASYNC_EXPIRE_MS),
                ms(Self::DEFAULT_SYNC_EXPIRE_MS),
            ],
            fifo_batch: Self::DEFAULT_FIFO_BATCH,
            rev_penalty: Self::DEFAULT_REV_PENALTY,
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

    /// The head: the sector of the last request dispatched, and the
    /// direction it moved in.
    pub fn head(&self) -> (Sector, HeadDir) {
        (self.last_sector, self.head_dir)
    }

    /// Requests dispatched since the FIFOs were last checked for expiry.
    pub fn batched(&self) -> u32 {
        self.nbatched
    }

    // ---- slot access -------------------------------------------------

    #[inline]
    fn slots(&self) -> &[Slot] {
        self.storage.as_ref()
    }

    /// The slot of an internal link; links always name valid slots.
    #[inline]
    fn at(&self, i: u32) -> &Slot {
        &self.slots()[i as usize]
    }

    #[inline]
    fn at_mut(&mut self, i: u32) -> &mut Slot {
        &mut self.storage.as_mut()[i as usize]
    }

    /// Bounds-checks a caller's tag.
    #[inline]
    fn check(&self, tag: Tag) -> Option<u32> {
        (tag < self.capacity()).then_some(tag as u32)
    }

    // ---- the sort tree and FIFOs ---------------------------------------

    /// The next heap priority for a sort tree node: a splitmix64 counter,
    /// with the caller's clock mixed in at insertions.
    #[inline]
    fn next_heap(&mut self) -> u32 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 32) as u32
    }

    fn tree_insert(&mut self, x: u32) {
        let prio = self.next_heap();
        Tree {
            nodes: self.storage.as_mut(),
            root: &mut self.root,
        }
        .insert(x, prio);
    }

    fn tree_remove(&mut self, x: u32) {
        Tree {
            nodes: self.storage.as_mut(),
            root: &mut self.root,
        }
        .remove(x);
    }

    /// Takes a queued request off every structure (C's
    /// `vr_remove_request()`); its state is left to the caller.
    fn unqueue(&mut self, x: u32) {
        let s = *self.at(x);
        match s.state {
            State::AtHead => self.at_head.remove(self.storage.as_mut(), x),
            State::Sorted => {
                if usize::from(s.fifo) < self.fifos.len() {
                    self.fifos[usize::from(s.fifo)].remove(self.storage.as_mut(), x);
                }
                self.tree_remove(x);
            }
            _ => return,
        }
        self.queued = self.queued.saturating_sub(1);
    }

    /// C's `vr_expired_request()`: the head of FIFO `q` if it is past its
    /// deadline, else `NIL`.
    fn expired(&self, q: usize, now: Nanos) -> u32 {
        let x = self.fifos[q].head;
        if x != NIL && time_after(now, self.at(x).fifo_time) {
            x
        } else {
            NIL
        }
    }

    /// C's `vr_check_fifo()`: the expired FIFO head with the earlier
    /// deadline (async on a tie), or `NIL`.
    fn check_fifo(&self, now: Nanos) -> u32 {
        let sync = self.expired(SYNC, now);
        let async_ = self.expired(ASYNC, now);
        if sync != NIL
            && (async_ == NIL || time_after(self.at(async_).fifo_time, self.at(sync).fifo_time))
        {
            sync
        } else {
            async_
        }
    }

    /// The nearest request at or beyond the head, and the nearest before
    /// it (C's `next_rq` and `prev_rq`), each `NIL` if none.
    fn neighbours(&self) -> (u32, u32) {
        let slots = self.slots();
        let next = tree_lower_bound(slots, self.root, self.last_sector);
        let prev = if next == NIL {
            tree_last(slots, self.root)
        } else {
            tree_prev(slots, next)
        };
        (next, prev)
    }

    /// `distance` from the head, multiplied by the penalty if it goes
    /// against the head's direction (`rev_penalty` 0: infinitely).
    #[inline]
    fn cost(&self, distance: Sector, reversing: bool) -> u128 {
        let d = u128::from(distance);
        if !reversing || d == 0 {
            return d;
        }
        match self.rev_penalty {
            0 => u128::MAX,
            p => d * u128::from(p),
        }
    }

    /// C's `vr_choose_request()`, with the header's penalty (see the
    /// module documentation): the neighbour at the smaller penalised
    /// distance, `next` on a tie; `NIL` if the tree is empty.
    fn choose(&self) -> u32 {
        let (next, prev) = self.neighbours();
        if prev == NIL {
            return next;
        }
        if next == NIL {
            return prev;
        }
        let forward = self.head_dir == HeadDir::Forward;
        let next_cost = self.cost(self.at(next).sector - self.last_sector, !forward);
        let prev_cost = self.cost(self.last_sector - self.at(prev).sector, forward);
        if next_cost <= prev_cost {
            next
        } else {
            prev
        }
    }

    /// C's `vr_move_request()`: the request leaves for the device and the
    /// head moves to it.
    fn start_sorted(&mut self, x: u32) -> Dispatch {
        let sector = self.at(x).sector;
        self.head_dir = if sector > self.last_sector {
            HeadDir::Forward
        } else {
            HeadDir::Backward
        };
        self.last_sector = sector;
        self.nbatched = self.nbatched.saturating_add(1);
        self.start(x)
    }

    /// The request leaves the scheduler for the device.
    #[inline]
    fn start(&mut self, x: u32) -> Dispatch {
        self.unqueue(x);
        self.at_mut(x).state = State::Dispatched;
        Dispatch::Request(x as Tag)
    }
}

impl<S> Policy for Vr<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// C's `vr_add_request()`: into the sort tree, and onto its FIFO with
    /// a deadline if its expire is not 0; at head, the front of the
    /// at-head list. A tag that is already queued is ignored; a tag still
    /// in flight is taken as requeued.
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        if matches!(self.at(x).state, State::AtHead | State::Sorted) {
            return;
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
            s.fifo = AT_HEAD;
            s.fifo_time = now;
            self.at_head.insert_after(self.storage.as_mut(), NIL, x);
        } else {
            self.rng ^= now;
            let q = if desc.sync || desc.op.is_read() {
                SYNC
            } else {
                ASYNC
            };
            let expire = self.fifo_expire[q];
            let s = self.at_mut(x);
            s.state = State::Sorted;
            s.fifo_time = now.wrapping_add(expire);
            s.fifo = if expire != 0 { q as u8 } else { NO_FIFO };
            self.tree_insert(x);
            if expire != 0 {
                self.fifos[q].push_back(self.storage.as_mut(), x);
            }
        }
        self.queued += 1;
    }

    /// C's `vr_dispatch_requests()`, after the at-head requests. Returns
    /// [`Dispatch::Empty`] only when nothing is queued.
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let head = self.at_head.head;
        if head != NIL {
            return self.start(head);
        }
        let mut x = NIL;
        if self.nbatched > self.fifo_batch {
            self.nbatched = 0;
            x = self.check_fifo(now);
        }
        if x == NIL {
            x = self.choose();
            if x == NIL {
                return Dispatch::Empty;
            }
        }
        self.start_sorted(x)
    }

    fn has_work(&self) -> bool {
        self.queued != 0
    }

    fn queued(&self) -> usize {
        self.queued
    }

    /// Completing a tag that is not in flight is ignored.
    fn completed(&mut self, tag: Tag, _now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        if self.at(x).state == State::Dispatched {
            self.at_mut(x).state = State::Free;
        }
    }

    /// Nothing to do: the request is inserted again.
    fn requeued(&mut self, _tag: Tag, _now: Nanos) {}

    /// C's `vr_merge()`: the sorted request that starts where the bio
    /// ends (the first to enter the tree, if several do), if its
    /// operation and priority are the bio's. Flushes never merge.
    fn front_merge_candidate(&self, probe: &MergeProbe) -> Option<Tag> {
        if probe.op == Op::Flush {
            return None;
        }
        let x = tree_lower_bound(self.slots(), self.root, probe.bio_end);
        if x == NIL {
            return None;
        }
        let s = self.at(x);
        (s.sector == probe.bio_end && s.op == probe.op && s.prio == probe.prio).then_some(x as Tag)
    }

    /// C's `vr_merged_request()` for a front merge: the request moves in
    /// the sort tree.
    fn front_merged(&mut self, tag: Tag, new_sector: Sector, _new_sectors: u32) {
        let Some(x) = self.check(tag) else { return };
        match self.at(x).state {
            State::Sorted => {
                self.tree_remove(x);
                self.at_mut(x).sector = new_sector;
                self.tree_insert(x);
            }
            State::AtHead => self.at_mut(x).sector = new_sector,
            _ => {}
        }
    }

    /// V(R) looks at no request's size.
    fn back_merged(&mut self, _tag: Tag, _new_sectors: u32) {}

    /// C's `vr_merged_requests()`: if both sit on FIFOs and `next` expires
    /// first, `into` takes `next`'s deadline and place; `next` is gone.
    fn requests_merged(&mut self, into: Tag, next: Tag) {
        let (Some(i), Some(n)) = (self.check(into), self.check(next)) else {
            return;
        };
        if i == n || !matches!(self.at(n).state, State::AtHead | State::Sorted) {
            return;
        }
        let (si, sn) = (*self.at(i), *self.at(n));
        let on_fifo = |s: &Slot| s.state == State::Sorted && usize::from(s.fifo) < 2;
        if on_fifo(&si) && on_fifo(&sn) && time_after(si.fifo_time, sn.fifo_time) {
            let nodes = self.storage.as_mut();
            self.fifos[usize::from(si.fifo)].remove(nodes, i);
            self.fifos[usize::from(sn.fifo)].insert_after(nodes, n, i);
            let s = self.at_mut(i);
            s.fifo = sn.fifo;
            s.fifo_time = sn.fifo_time;
        }
        self.unqueue(n);
        self.at_mut(n).state = State::Free;
    }

    fn tunables(&self) -> &'static [&'static str] {
        tunables::TUNABLES
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
