// SPDX-License-Identifier: GPL-2.0

//! Consistency checks of mq-deadline's structures, for tests, fuzzing and
//! debug builds: compiled only with `test`, `debug_assertions` or the
//! `invariants` feature (in a kernel module, `--cfg 'feature="invariants"'`).

use super::super::intrusive::tree_check;
use super::{Deadline, Slot, State, DIRS, LEVELS, NIL};

impl<S> Deadline<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// Checks the internal structures (for tests and fuzzing; O(n log n)):
    /// every sort tree is a well-formed treap holding exactly the sorted
    /// requests of its level and direction, every list is well linked and
    /// holds exactly its requests, and the counters match the slots.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        self.check_link_range()?;
        let (queued, in_tree) = self.check_slots()?;
        for (q, &sorted) in in_tree.iter().enumerate() {
            let slots = self.slots();
            let member = |s: &Slot| s.state == State::Sorted && s.queue() == q;
            if tree_check(slots, self.trees[q], member)? != sorted {
                return Err("tree does not hold its sorted requests");
            }
            if self.next_rq[q] != self.lower_bound(q, self.latest_pos[q]) {
                return Err("next request is not the first at or after latest_pos");
            }
            if self.fifos[q].check(slots, member)? != sorted {
                return Err("FIFO does not hold its sorted requests");
            }
        }
        let at_head = self
            .dispatch
            .check(self.slots(), |s| s.state == State::AtHead)?;
        if at_head + in_tree.iter().sum::<usize>() != queued {
            return Err("dispatch list does not hold the at-head requests");
        }
        if queued != self.queued {
            return Err("queued count wrong");
        }
        Ok(())
    }

    /// Every link names a slot or `NIL`.
    fn check_link_range(&self) -> Result<(), &'static str> {
        let slots = self.slots();
        let valid = |i: u32| i == NIL || (i as usize) < slots.len();
        let roots = self.trees.iter().copied();
        let heads = self.fifos.iter().chain([&self.dispatch]);
        let slot_links = slots.iter().flat_map(|s| {
            let [l, r] = s.tree.child;
            [l, r, s.tree.parent, s.list.prev, s.list.next]
        });
        if roots
            .chain(heads.flat_map(|l| [l.head, l.tail]))
            .chain(slot_links)
            .all(valid)
        {
            Ok(())
        } else {
            Err("link out of range")
        }
    }

    /// Checks each slot's links against its state and the per-level
    /// counts; returns the number of queued requests and of sorted ones by
    /// tree.
    fn check_slots(&self) -> Result<(usize, [usize; LEVELS * DIRS]), &'static str> {
        let mut queued = 0usize;
        let mut owned = [0u32; LEVELS];
        let mut in_tree = [0usize; LEVELS * DIRS];
        for s in self.slots() {
            if s.state != State::Free {
                owned[usize::from(s.owner).min(LEVELS - 1)] += 1;
            }
            if s.state != State::Sorted && (s.tree.child != [NIL; 2] || s.tree.parent != NIL) {
                return Err("unsorted request has tree links");
            }
            match s.state {
                State::Sorted => {
                    queued += 1;
                    in_tree[s.queue()] += 1;
                }
                State::AtHead => queued += 1,
                _ => {
                    if s.list.prev != NIL || s.list.next != NIL {
                        return Err("unqueued request has list links");
                    }
                }
            }
        }
        if owned != self.owned {
            return Err("per-level counts wrong");
        }
        Ok((queued, in_tree))
    }
}
