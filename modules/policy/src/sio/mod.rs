// SPDX-License-Identifier: GPL-2.0

//! SIO, the Simple I/O scheduler: FIFOs with deadlines, no sorting.
//!
//! A port of Miguel Boton's `block/sio-iosched.c`, version 0.2, as
//! CyanogenMod shipped it (`CyanogenMod/android_kernel_samsung_jf`,
//! commit 768cf4406cd6acc40bfb46f412a3a058e568f3ea, Linux 3.4), onto the
//! [`Policy`] trait. SIO was written for devices where seeks cost nothing
//! (flash): noop's order, plus deadline's expiry and write starvation.
//!
//! * Four FIFOs, by sync flag and direction (a read is always sync, as
//!   `rq_is_sync()` says). A request entering one gets its deadline: now
//!   plus the FIFO's expire tunable.
//! * Dispatch, after more than `fifo_batch` requests were sent since the
//!   FIFOs were last looked at: the head of the first FIFO whose head has
//!   expired (strictly past its deadline), looked at in the order async
//!   write, async read, sync write, sync read (C: "asynchronous requests
//!   have priority over synchronous; write requests have priority over
//!   read"). The count starts again from zero whether or not one expired.
//! * Otherwise the head of the first non-empty FIFO in the order sync
//!   read, async read, sync write, async write; or, once more than
//!   `writes_starved` reads went out since the last write, writes first:
//!   sync write, async write, sync read, async read.
//! * Every dispatched request counts towards the batch; a read adds one
//!   to the starvation count, a write clears it.
//! * When the block layer merges queued request `next` into `into` and
//!   `next` expires first, `into` takes `next`'s deadline and FIFO place
//!   (its FIFO too, should they differ: `list_move()`), as
//!   `sio_merged_requests()` does.
//!
//! Requests live in caller-provided storage (one [`Slot`] per tag); the
//! FIFOs are intrusive, index-based lists, so nothing allocates and every
//! operation is O(1).
//!
//! Starvation: the FIFOs are looked at every `fifo_batch + 1` dispatches
//! (the first time after `fifo_batch + 2`), and each time an expired
//! request goes out if there is one. So once a request has expired, it
//! goes out within `(A + 1) × (fifo_batch + 1) + 1` dispatches, where `A`
//! is the number of requests that go out as expired before it: those ahead
//! of it in its FIFO when it expired, and the expired heads of the FIFOs
//! looked at before its own, which can keep coming (an expired async write
//! goes before an expired sync read). A sync read, last in that order, is
//! only safe from expired writes and async reads because their expire
//! times are longer.
//!
//! Where this port differs from the C, beyond what blk-mq forces (the
//! module documentation of `rust_sio` has that):
//!
//! * sysfs writes that are not numbers, negative or beyond `INT_MAX` fail
//!   with an error and the old value stays (C's `simple_strtol()` takes
//!   garbage as 0, and C clamps). Accepted ranges, inclusive:
//!
//!   | tunable | unit | range | default |
//!   |---|---|---|---|
//!   | `sync_read_expire` | ms | 0 ..= 2^31-1 | 500 |
//!   | `sync_write_expire` | ms | 0 ..= 2^31-1 | 2000 |
//!   | `async_read_expire` | ms | 0 ..= 2^31-1 | 4000 |
//!   | `async_write_expire` | ms | 0 ..= 2^31-1 | 16000 |
//!   | `fifo_batch` | requests | 0 ..= 2^31-1 | 8 |
//!   | `writes_starved` | reads | 0 ..= 2^31-1 | 0 |
//!
//!   The source declares `writes_starved = 2` but `sio_init_queue()`
//!   stores 0, so 0 is what that kernel started with and showed in sysfs:
//!   after a read, a waiting write goes first. It leaves the starvation
//!   count uninitialised (`kmalloc`); here it starts at 0.
//! * times are nanoseconds passed in by the caller, compared with
//!   wrap-around as `time_after()` does; deadlines are kept in exact
//!   milliseconds (C rounds to jiffies).
//! * requests inserted at head (requeues; in the single-queue block layer
//!   they went to the dispatch list, past the elevator) are kept on their
//!   own list and served before the FIFOs, latest first, without touching
//!   the batch or starvation counts: as in C, the elevator never sees them.
//!
//! The code: this file (slots, FIFOs, dispatch, merges), `tunables`, and
//! `invariants` (the consistency checks, compiled only with `test`,
//! `debug_assertions` or the `invariants` feature).
//!
//! [`Policy`]: super::types::Policy

#[cfg(any(test, debug_assertions, feature = "invariants"))]
mod invariants;
mod tunables;

use super::intrusive::{List, ListLinks, ListNode, NIL};
use super::types::{
    Dispatch, MergeProbe, Nanos, Policy, RequestDesc, Sector, SetupError, Tag, TunableError,
    NSEC_PER_MSEC,
};
pub(crate) use tunables::TUNABLE_NAMES;

/// C's `ASYNC`.
const ASYNC: usize = 0;
/// C's `SYNC`.
const SYNC: usize = 1;
/// Read direction index.
const READ: usize = 0;
/// Write direction index.
const WRITE: usize = 1;
/// Number of FIFOs: by sync flag, then direction.
const FIFOS: usize = 4;
/// The `fifo` of a request on the at-head list.
const AT_HEAD: u8 = FIFOS as u8;

/// The FIFO of requests with sync flag `sync` and direction `dir`.
#[inline]
const fn fifo(sync: usize, dir: usize) -> usize {
    sync * 2 + dir
}

/// The order in which the FIFOs' heads are checked for expiry (C's
/// `sio_choose_expired_request()`).
const EXPIRED_ORDER: [usize; FIFOS] = [
    fifo(ASYNC, WRITE),
    fifo(ASYNC, READ),
    fifo(SYNC, WRITE),
    fifo(SYNC, READ),
];

/// The state of a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not known to the scheduler.
    Free,
    /// Queued on the at-head list.
    AtHead,
    /// Queued on a FIFO.
    Queued,
    /// Handed to the device (or handed back by the driver, waiting to be
    /// inserted again).
    Dispatched,
}

/// The per-request node the policy keeps in caller-provided storage.
///
/// Opaque: create storage with `Slot::default()` and hand it to
/// [`Sio::new`].
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// FIFO or at-head list links.
    list: ListLinks,
    /// Deadline (C's `rq_fifo_time()`).
    fifo_time: Nanos,
    /// The FIFO the request sits on ([`fifo`]), or [`AT_HEAD`].
    fifo: u8,
    /// Whether it is a write (C's `rq_data_dir()`).
    write: bool,
    /// Where the request is.
    state: State,
}

impl Default for Slot {
    fn default() -> Self {
        Slot {
            list: ListLinks::NONE,
            fifo_time: 0,
            fifo: 0,
            write: false,
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

/// `time_after(a, b)`: whether `a` is later than `b`, with wrap-around.
#[inline]
fn time_after(a: Nanos, b: Nanos) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// The SIO policy over storage `S` (one [`Slot`] per tag): any owner of a
/// slot slice (`Vec<Slot>`, an array, `&mut [Slot]`, or the kernel
/// module's allocation wrapped to implement `AsRef` and `AsMut`).
pub struct Sio<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    storage: S,
    /// The FIFOs, by [`fifo`].
    fifos: [List; FIFOS],
    /// Requests inserted at head, latest first.
    at_head: List,
    /// Requests waiting in the scheduler.
    queued: usize,
    /// Requests dispatched since the FIFOs were last checked for expiry.
    batched: u32,
    /// Reads dispatched since the last write.
    starved: u32,
    /// The expire of each FIFO, by [`fifo`].
    fifo_expire: [Nanos; FIFOS],
    fifo_batch: u32,
    writes_starved: u32,
}

impl<S> Sio<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// Default `sync_read_expire`: 500 ms (C: `HZ / 2`).
    pub const DEFAULT_SYNC_READ_EXPIRE_MS: u32 = 500;
    /// Default `sync_write_expire`: 2 s.
    pub const DEFAULT_SYNC_WRITE_EXPIRE_MS: u32 = 2_000;
    /// Default `async_read_expire`: 4 s.
    pub const DEFAULT_ASYNC_READ_EXPIRE_MS: u32 = 4_000;
    /// Default `async_write_expire`: 16 s.
    pub const DEFAULT_ASYNC_WRITE_EXPIRE_MS: u32 = 16_000;
    /// Default `fifo_batch`.
    pub const DEFAULT_FIFO_BATCH: u32 = 8;
    /// Default `writes_starved`: what `sio_init_queue()` stores.
    pub const DEFAULT_WRITES_STARVED: u32 = 0;
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
        let mut fifo_expire = [0; FIFOS];
        fifo_expire[fifo(SYNC, READ)] = ms(Self::DEFAULT_SYNC_READ_EXPIRE_MS);
        fifo_expire[fifo(SYNC, WRITE)] = ms(Self::DEFAULT_SYNC_WRITE_EXPIRE_MS);
        fifo_expire[fifo(ASYNC, READ)] = ms(Self::DEFAULT_ASYNC_READ_EXPIRE_MS);
        fifo_expire[fifo(ASYNC, WRITE)] = ms(Self::DEFAULT_ASYNC_WRITE_EXPIRE_MS);
        Ok(Sio {
            storage,
            fifos: [List::EMPTY; FIFOS],
            at_head: List::EMPTY,
            queued: 0,
            batched: 0,
            starved: 0,
            fifo_expire,
            fifo_batch: Self::DEFAULT_FIFO_BATCH,
            writes_starved: Self::DEFAULT_WRITES_STARVED,
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

    /// Requests dispatched since the FIFOs were last checked for expiry.
    pub fn batched(&self) -> u32 {
        self.batched
    }

    /// Reads dispatched since the last write.
    pub fn starved(&self) -> u32 {
        self.starved
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

    /// Takes a queued request off its list; its state is left to the
    /// caller.
    #[inline]
    fn unqueue(&mut self, x: u32) {
        let s = *self.at(x);
        let list = match s.state {
            State::AtHead => &mut self.at_head,
            State::Queued => &mut self.fifos[usize::from(s.fifo) % FIFOS],
            _ => return,
        };
        list.remove(self.storage.as_mut(), x);
        self.queued = self.queued.saturating_sub(1);
    }

    /// C's `sio_choose_expired_request()`: the first expired FIFO head, in
    /// [`EXPIRED_ORDER`], or `NIL`.
    fn expired(&self, now: Nanos) -> u32 {
        EXPIRED_ORDER
            .iter()
            .map(|&q| self.fifos[q].head)
            .find(|&x| x != NIL && time_after(now, self.at(x).fifo_time))
            .unwrap_or(NIL)
    }

    /// C's `sio_choose_request()`: the head of the first non-empty FIFO,
    /// direction `dir` first, sync before async; or `NIL`.
    fn choose(&self, dir: usize) -> u32 {
        let other = dir ^ 1;
        [
            fifo(SYNC, dir),
            fifo(ASYNC, dir),
            fifo(SYNC, other),
            fifo(ASYNC, other),
        ]
        .iter()
        .map(|&q| self.fifos[q].head)
        .find(|&x| x != NIL)
        .unwrap_or(NIL)
    }

    /// The request leaves for the device.
    #[inline]
    fn start(&mut self, x: u32) -> Dispatch {
        self.unqueue(x);
        self.at_mut(x).state = State::Dispatched;
        Dispatch::Request(x as Tag)
    }
}

impl<S> Policy for Sio<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// C's `sio_add_request()`: the tail of the request's FIFO, with its
    /// deadline; at head, the front of the at-head list. A tag that is
    /// already queued is ignored; a tag still in flight is taken as
    /// requeued.
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        if matches!(self.at(x).state, State::AtHead | State::Queued) {
            return;
        }
        let dir = desc.op.dir();
        let sync = if desc.sync || desc.op.is_read() {
            SYNC
        } else {
            ASYNC
        };
        let q = fifo(sync, dir);
        let deadline = now.wrapping_add(self.fifo_expire[q]);
        let s = self.at_mut(x);
        s.write = dir == WRITE;
        if at_head {
            s.state = State::AtHead;
            s.fifo = AT_HEAD;
            s.fifo_time = now;
            self.at_head.insert_after(self.storage.as_mut(), NIL, x);
        } else {
            s.state = State::Queued;
            s.fifo = q as u8;
            s.fifo_time = deadline;
            self.fifos[q].push_back(self.storage.as_mut(), x);
        }
        self.queued += 1;
    }

    /// C's `sio_dispatch_requests()`, after the at-head requests. Returns
    /// [`Dispatch::Empty`] only when nothing is queued.
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        let head = self.at_head.head;
        if head != NIL {
            return self.start(head);
        }
        let mut x = NIL;
        if self.batched > self.fifo_batch {
            self.batched = 0;
            x = self.expired(now);
        }
        if x == NIL {
            let dir = if self.starved > self.writes_starved {
                WRITE
            } else {
                READ
            };
            x = self.choose(dir);
            if x == NIL {
                return Dispatch::Empty;
            }
        }
        let write = self.at(x).write;
        self.batched = self.batched.saturating_add(1);
        self.starved = if write {
            0
        } else {
            self.starved.saturating_add(1)
        };
        self.start(x)
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

    /// C SIO had no `elevator_merge_fn`: front merges come only from the
    /// block layer's own last-merge hint.
    fn front_merge_candidate(&self, _probe: &MergeProbe) -> Option<Tag> {
        None
    }

    /// SIO looks at no request's position or size.
    fn front_merged(&mut self, _tag: Tag, _new_sector: Sector, _new_sectors: u32) {}

    /// SIO looks at no request's size.
    fn back_merged(&mut self, _tag: Tag, _new_sectors: u32) {}

    /// C's `sio_merged_requests()`: if both sit on FIFOs and `next`
    /// expires first, `into` takes `next`'s deadline and place; `next` is
    /// gone.
    fn requests_merged(&mut self, into: Tag, next: Tag) {
        let (Some(i), Some(n)) = (self.check(into), self.check(next)) else {
            return;
        };
        if i == n || !matches!(self.at(n).state, State::AtHead | State::Queued) {
            return;
        }
        let (si, sn) = (*self.at(i), *self.at(n));
        if si.state == State::Queued
            && sn.state == State::Queued
            && time_after(si.fifo_time, sn.fifo_time)
        {
            let nodes = self.storage.as_mut();
            self.fifos[usize::from(si.fifo) % FIFOS].remove(nodes, i);
            self.fifos[usize::from(sn.fifo) % FIFOS].insert_after(nodes, n, i);
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
