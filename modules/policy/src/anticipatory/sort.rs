// SPDX-License-Identifier: GPL-2.0

//! The sort trees and FIFOs of AS, and elevator order: which of the
//! requests around the last one goes next (C's `as_choose_req()` and
//! `as_find_next_rq()`).

use super::super::intrusive::{tree_first, tree_lower_bound, tree_next, tree_prev, Tree};
use super::{
    Anticipatory, ContextSlot, Nanos, Sector, Slot, State, BACK_PENALTY, MAXBACK, NIL, SYNC,
};

impl<R, C> Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
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

    /// Puts `x` into the sort tree of direction `dir`.
    pub(super) fn tree_insert(&mut self, dir: usize, x: u32) {
        let prio = self.next_heap();
        Tree {
            nodes: self.storage.as_mut(),
            root: &mut self.trees[dir],
        }
        .insert(x, prio);
    }

    /// Takes `x` out of the sort tree of direction `dir`.
    pub(super) fn tree_remove(&mut self, dir: usize, x: u32) {
        Tree {
            nodes: self.storage.as_mut(),
            root: &mut self.trees[dir],
        }
        .remove(x);
    }

    /// The first request of direction `dir` whose sector is at least
    /// `pos`, or `NIL`.
    #[inline]
    pub(super) fn lower_bound(&self, dir: usize, pos: Sector) -> u32 {
        tree_lower_bound(self.slots(), self.trees[dir], pos)
    }

    /// `x`, fresh or back from the device, joins its sort tree and the
    /// back of its FIFO with its deadline (C's `as_add_rq_rb()` and
    /// `rq_set_fifo_time()`); its process has one more request queued.
    pub(super) fn add_queued(&mut self, x: u32, now: Nanos) {
        self.rng ^= now;
        let dir = self.at(x).dir();
        let expire = self.fifo_expire[dir];
        let context = {
            let s = self.at_mut(x);
            s.state = State::Sorted;
            s.fifo_time = now.wrapping_add(expire);
            s.context
        };
        self.tree_insert(dir, x);
        self.fifos[dir].push_back(self.storage.as_mut(), x);
        if context != NIL {
            let c = self.ctx_mut(context);
            c.queued = c.queued.saturating_add(1);
        }
    }

    /// C's `as_remove_queued_request()`: takes the sorted request `x` off
    /// its tree and FIFO, keeping the next request of its direction up to
    /// date; its state is left to the caller.
    pub(super) fn remove_queued(&mut self, x: u32) {
        let s = *self.at(x);
        let dir = s.dir();
        if s.context != NIL {
            let c = self.ctx_mut(s.context);
            c.queued = c.queued.saturating_sub(1);
        }
        if self.next_rq[dir] == x {
            self.next_rq[dir] = self.find_next_rq(x);
        }
        self.fifos[dir].remove(self.storage.as_mut(), x);
        self.tree_remove(dir, x);
        self.queued = self.queued.saturating_sub(1);
    }

    /// C's `as_choose_req()`: the better of two requests of one direction
    /// to go after the last one dispatched in it, or `NIL` if neither is a
    /// request. Ahead of the head, the nearer; behind it by up to
    /// [`MAXBACK`], [`BACK_PENALTY`] times its distance; further behind,
    /// only if both are, the lower one. Ties go to the higher sector.
    pub(super) fn choose_req(&self, r1: u32, r2: u32) -> u32 {
        if r1 == NIL || r1 == r2 {
            return r2;
        }
        if r2 == NIL {
            return r1;
        }
        let last = self.last_sector[self.at(r1).dir()];
        let (s1, s2) = (self.at(r1).sector, self.at(r2).sector);
        // The cost of going to `s`, or `None` if it lies too far behind.
        let cost = |s: Sector| {
            if s >= last {
                Some(s - last)
            } else if s.saturating_add(MAXBACK) >= last {
                Some((last - s).saturating_mul(BACK_PENALTY))
            } else {
                None
            }
        };
        match (cost(s1), cost(s2)) {
            (Some(_), None) => r1,
            (None, Some(_)) => r2,
            (None, None) => {
                if s1 <= s2 {
                    r1
                } else {
                    r2
                }
            }
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    r1
                } else {
                    r2
                }
            }
        }
    }

    /// C's `as_find_next_rq()`: the request to go after `last`, a sorted
    /// request: the better of its neighbours in sector order, the one
    /// after it being the lowest of the tree when `last` is the highest.
    pub(super) fn find_next_rq(&self, last: u32) -> u32 {
        let slots = self.slots();
        let prev = tree_prev(slots, last);
        let mut next = tree_next(slots, last);
        if next == NIL {
            let first = tree_first(slots, self.trees[self.at(last).dir()]);
            if first != last {
                next = first;
            }
        }
        self.choose_req(next, prev)
    }

    /// The sorted requests of the sync (`true`) or async direction, in
    /// sector order (for tests).
    pub fn sorted(&self, sync: bool) -> impl Iterator<Item = usize> + '_ {
        let dir = if sync { SYNC } else { super::ASYNC };
        let slots = self.slots();
        let mut x = tree_first(slots, self.trees[dir]);
        core::iter::from_fn(move || {
            if x == NIL {
                return None;
            }
            let cur = x;
            x = tree_next(slots, x);
            Some(cur as usize)
        })
    }
}
