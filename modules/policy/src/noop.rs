// SPDX-License-Identifier: GPL-2.0

//! noop: one FIFO, and the block layer's merging.
//!
//! A port of the single-queue `block/noop-iosched.c` (as of Linux v4.16;
//! the single-queue elevators were removed in v5.0) onto the [`Policy`]
//! trait. C noop keeps one list: a request is added at its tail and
//! dispatched from its head; when the block layer merges one queued
//! request into another, the one merged away leaves the list. It looks at
//! nothing else: no sectors, no directions, no time, no tunables.
//!
//! Here: one FIFO of queued requests, and a list of requests inserted at
//! head, served before it (latest first, as `list_add()` puts them).
//! Requests live in caller-provided storage (one [`Slot`] per tag); the
//! lists are intrusive and index based, so nothing allocates and every
//! operation is O(1).
//!
//! Where blk-mq makes it differ from C (the module documentation of
//! `rust_noop` has the rest):
//!
//! * C dispatched with `elv_dispatch_sort()`, which placed the request on
//!   the queue's dispatch list in sector order behind the requests
//!   already there. blk-mq has no such list to sort into: the driver gets
//!   each request as the policy hands it out, so the order is the FIFO's.
//! * Requests inserted at head (requeues, and the few others blk-mq
//!   inserts at head) went to the front of the single-queue dispatch
//!   list, past the elevator. blk-mq inserts them through the scheduler,
//!   so the policy keeps them, on their own list, served before the FIFO,
//!   and otherwise as C never saw them.
//! * Merging is the block layer's (`blk_mq_sched_try_merge()`: the request
//!   hash for back merges; noop offers no front-merge candidates, as C
//!   had no `elevator_merge_fn`). C also let the block layer merge a grown
//!   request with its FIFO neighbour (`elevator_former_req_fn` and
//!   `elevator_latter_req_fn`); the elevator abstraction has no such
//!   hooks, so that second merge does not happen.
//!
//! [`Policy`]: super::types::Policy

use super::intrusive::{List, ListLinks, ListNode, NIL};
use super::types::{
    tunable_names, Dispatch, MergeProbe, Nanos, Policy, RequestDesc, Sector, SetupError, Tag,
    TunableError,
};
use core::ffi::CStr;

/// The tunables' sysfs names: none.
pub(crate) const TUNABLE_NAMES: [&CStr; 0] = [];

/// [`TUNABLE_NAMES`] as the policy matches them.
const TUNABLES: &[&str] = &tunable_names(TUNABLE_NAMES);

/// The state of a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not known to the scheduler.
    Free,
    /// Queued on the at-head list.
    AtHead,
    /// Queued on the FIFO.
    Queued,
    /// Handed to the device (or handed back by the driver, waiting to be
    /// inserted again).
    Dispatched,
}

/// The per-request node the policy keeps in caller-provided storage.
///
/// Opaque: create storage with `Slot::default()` and hand it to
/// [`Noop::new`].
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// FIFO or at-head list links.
    list: ListLinks,
    /// Where the request is.
    state: State,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            list: ListLinks::NONE,
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

/// The noop policy over storage `S` (one [`Slot`] per tag): any owner of
/// a slot slice (`Vec<Slot>`, an array, `&mut [Slot]`, or the kernel
/// module's allocation wrapped to implement `AsRef` and `AsMut`).
pub struct Noop<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    storage: S,
    /// Queued requests, oldest first (C's `nd->queue`).
    fifo: List,
    /// Requests inserted at head, latest first.
    at_head: List,
    /// Requests waiting in the scheduler.
    queued: usize,
}

impl<S> Noop<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
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
        Ok(Noop {
            storage,
            fifo: List::EMPTY,
            at_head: List::EMPTY,
            queued: 0,
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

    #[inline]
    fn slots(&self) -> &[Slot] {
        self.storage.as_ref()
    }

    /// Bounds-checks a caller's tag.
    #[inline]
    fn check(&self, tag: Tag) -> Option<u32> {
        (tag < self.capacity()).then_some(tag as u32)
    }

    /// Takes a queued request off its list; its state is left to the
    /// caller.
    #[inline]
    fn unqueue(&mut self, x: u32) {
        let list = match self.slots()[x as usize].state {
            State::AtHead => &mut self.at_head,
            State::Queued => &mut self.fifo,
            _ => return,
        };
        list.remove(self.storage.as_mut(), x);
        self.queued = self.queued.saturating_sub(1);
    }

    /// Checks the internal structures (for tests and fuzzing): both lists
    /// are well linked and hold exactly their requests, unqueued requests
    /// have no links, and the count matches.
    #[cfg(any(test, debug_assertions, feature = "invariants"))]
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let slots = self.slots();
        let valid = |i: u32| i == NIL || (i as usize) < slots.len();
        let heads = [self.fifo, self.at_head];
        if !heads.iter().flat_map(|l| [l.head, l.tail]).all(valid)
            || !slots
                .iter()
                .all(|s| valid(s.list.prev) && valid(s.list.next))
        {
            return Err("link out of range");
        }
        let fifo = self.fifo.check(slots, |s| s.state == State::Queued)?;
        let at_head = self.at_head.check(slots, |s| s.state == State::AtHead)?;
        let mut queued = 0;
        for s in slots {
            match s.state {
                State::Queued | State::AtHead => queued += 1,
                _ if s.list != ListLinks::NONE => return Err("unqueued request has list links"),
                _ => {}
            }
        }
        if fifo + at_head != queued {
            return Err("lists do not hold the queued requests");
        }
        if queued != self.queued {
            return Err("queued count wrong");
        }
        Ok(())
    }
}

impl<S> Policy for Noop<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// C's `noop_add_request()`: the FIFO's tail; at head, the front of
    /// the at-head list. A tag that is already queued is ignored; a tag
    /// still in flight is taken as requeued.
    fn insert(&mut self, tag: Tag, _desc: &RequestDesc, at_head: bool, _now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        if matches!(
            self.slots()[x as usize].state,
            State::AtHead | State::Queued
        ) {
            return;
        }
        let nodes = self.storage.as_mut();
        if at_head {
            nodes[x as usize].state = State::AtHead;
            self.at_head.insert_after(nodes, NIL, x);
        } else {
            nodes[x as usize].state = State::Queued;
            self.fifo.push_back(nodes, x);
        }
        self.queued += 1;
    }

    /// C's `noop_dispatch()`: the oldest request, after the at-head ones.
    fn dispatch(&mut self, _now: Nanos) -> Dispatch {
        let x = if self.at_head.head != NIL {
            self.at_head.head
        } else {
            self.fifo.head
        };
        if x == NIL {
            return Dispatch::Empty;
        }
        self.unqueue(x);
        self.storage.as_mut()[x as usize].state = State::Dispatched;
        Dispatch::Request(x as Tag)
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
        let s = &mut self.storage.as_mut()[x as usize];
        if s.state == State::Dispatched {
            s.state = State::Free;
        }
    }

    /// Nothing to do: the request is inserted again.
    fn requeued(&mut self, _tag: Tag, _now: Nanos) {}

    /// C noop had no `elevator_merge_fn`: front merges come only from the
    /// block layer's own last-merge hint.
    fn front_merge_candidate(&self, _probe: &MergeProbe) -> Option<Tag> {
        None
    }

    /// noop looks at no request's position or size.
    fn front_merged(&mut self, _tag: Tag, _new_sector: Sector, _new_sectors: u32) {}

    /// noop looks at no request's size.
    fn back_merged(&mut self, _tag: Tag, _new_sectors: u32) {}

    /// C's `noop_merged_requests()`: `next` leaves the FIFO; `into` keeps
    /// its place.
    fn requests_merged(&mut self, into: Tag, next: Tag) {
        let (Some(i), Some(n)) = (self.check(into), self.check(next)) else {
            return;
        };
        if i == n
            || !matches!(
                self.slots()[n as usize].state,
                State::AtHead | State::Queued
            )
        {
            return;
        }
        self.unqueue(n);
        self.storage.as_mut()[n as usize].state = State::Free;
    }

    fn tunables(&self) -> &'static [&'static str] {
        TUNABLES
    }

    fn tunable(&self, _name: &str) -> Result<i64, TunableError> {
        Err(TunableError::UnknownName)
    }

    fn set_tunable(&mut self, _name: &str, _text: &str) -> Result<(), TunableError> {
        Err(TunableError::UnknownName)
    }
}
