// SPDX-License-Identifier: GPL-2.0

//! The sort trees and FIFOs of mq-deadline, and a request's way through
//! them: in, out to the device, gone.
//!
//! A request entering a sort tree is the latest among those at its sector,
//! so it goes after them (as in C's `elv_rb_add()`); in order, equal
//! sectors stay in the order they entered. Each tree also keeps its
//! `next_rq`, the first request at or after the position of the last one
//! dispatched from it (C's `deadline_from_pos()`), up to date on every
//! change, so that a batch goes on in O(1).

use super::super::intrusive::{tree_is_sole, tree_lower_bound, tree_next, Tree};
use super::{Deadline, Dispatch, Sector, Slot, State, Tag, LEVELS, NIL};

impl<S> Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// The next heap priority for a sort tree node: a Weyl sequence
    /// (with the caller's clock mixed in at insertions) through one
    /// xor-shift and multiply, the high half. A treap needs priorities
    /// that do not follow the keys, not statistical quality; the order
    /// of the requests does not depend on them.
    #[inline]
    fn next_heap(&mut self) -> u32 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = self.rng;
        ((z ^ (z >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 32) as u32
    }

    /// Puts `x` into sort tree `tree`, keeping `next_rq` the first request
    /// at or after `latest_pos`.
    #[inline(always)]
    pub(super) fn tree_insert(&mut self, tree: usize, x: u32) {
        let prio = self.next_heap();
        Tree {
            nodes: self.storage.as_mut(),
            root: &mut self.trees[tree],
        }
        .insert(x, prio);
        let sector = self.at(x).sector;
        let next = self.next_rq[tree];
        if sector >= self.latest_pos[tree] && (next == NIL || self.at(next).sector > sector) {
            self.next_rq[tree] = x;
        }
    }

    /// Takes `x` out of sort tree `tree`, keeping `next_rq` the first
    /// request at or after `latest_pos`.
    pub(super) fn tree_remove(&mut self, tree: usize, x: u32) {
        // Everything after x in order is at or after latest_pos too.
        let successor = (self.next_rq[tree] == x).then(|| tree_next(self.slots(), x));
        let removed = Tree {
            nodes: self.storage.as_mut(),
            root: &mut self.trees[tree],
        }
        .remove(x);
        if let (true, Some(next)) = (removed, successor) {
            self.next_rq[tree] = next;
        }
    }

    /// The first request of `tree` whose sector is at least `pos` (C's
    /// `deadline_from_pos()`), or `NIL`.
    #[inline]
    pub(super) fn lower_bound(&self, tree: usize, pos: Sector) -> u32 {
        tree_lower_bound(self.slots(), self.trees[tree], pos)
    }

    /// Takes a queued request off every structure (C's
    /// `deadline_remove_request()`); its state is left to the caller.
    #[inline(always)]
    pub(super) fn unqueue(&mut self, x: u32) {
        let s = *self.at(x);
        match s.state {
            State::AtHead => self.dispatch.remove(self.storage.as_mut(), x),
            State::Sorted => {
                let q = s.queue();
                self.fifos[q].remove(self.storage.as_mut(), x);
                if tree_is_sole(self.slots(), self.trees[q], x) {
                    // The only request of its tree (on a fast device,
                    // nearly every one): no successor to look for, no
                    // subtrees to merge.
                    self.trees[q] = NIL;
                    self.next_rq[q] = NIL;
                } else {
                    self.tree_remove(q, x);
                }
            }
            _ => return,
        }
        self.queued = self.queued.saturating_sub(1);
    }

    /// C's `dd_start_request()`: the request leaves for the device.
    #[inline]
    pub(super) fn start(&mut self, x: u32) -> Dispatch {
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
    pub(super) fn finish(&mut self, x: u32) {
        let s = self.at_mut(x);
        let owner = usize::from(s.owner).min(LEVELS - 1);
        s.state = State::Free;
        self.owned[owner] = self.owned[owner].saturating_sub(1);
    }
}
