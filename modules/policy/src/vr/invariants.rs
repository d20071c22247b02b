// SPDX-License-Identifier: GPL-2.0

//! Consistency checks of V(R)'s structures, for tests, fuzzing and debug
//! builds: compiled only with `test`, `debug_assertions` or the
//! `invariants` feature (in a kernel module, `--cfg 'feature="invariants"'`).

use super::super::intrusive::tree_check;
use super::{ListLinks, Slot, State, Vr, AT_HEAD, NIL, NO_FIFO};

impl<S> Vr<S>
where
    S: AsRef<[Slot]> + AsMut<[Slot]>,
{
    /// Checks the internal structures (for tests and fuzzing; O(n log n)):
    /// the sort tree is a well-formed treap holding exactly the sorted
    /// requests, every list is well linked and holds exactly its
    /// requests, and the count matches the slots.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let slots = self.slots();
        let valid = |i: u32| i == NIL || (i as usize) < slots.len();
        let heads = self.fifos.iter().chain([&self.at_head]);
        let links = slots.iter().flat_map(|s| {
            let [l, r] = s.tree.child;
            [l, r, s.tree.parent, s.list.prev, s.list.next]
        });
        if !heads
            .flat_map(|l| [l.head, l.tail])
            .chain([self.root])
            .chain(links)
            .all(valid)
        {
            return Err("link out of range");
        }
        let sorted = tree_check(slots, self.root, |s| s.state == State::Sorted)?;
        let mut on_fifos = 0;
        for (q, list) in self.fifos.iter().enumerate() {
            on_fifos += list.check(slots, |s| {
                s.state == State::Sorted && usize::from(s.fifo) == q
            })?;
        }
        let at_head = self
            .at_head
            .check(slots, |s| s.state == State::AtHead && s.fifo == AT_HEAD)?;
        let (mut queued, mut in_tree, mut with_deadline) = (0, 0, 0);
        for s in slots {
            if s.state != State::Sorted && (s.tree.child != [NIL; 2] || s.tree.parent != NIL) {
                return Err("unsorted request has tree links");
            }
            match s.state {
                State::Sorted => {
                    queued += 1;
                    in_tree += 1;
                    match s.fifo {
                        0 | 1 => with_deadline += 1,
                        NO_FIFO if s.list == ListLinks::NONE => {}
                        _ => return Err("sorted request on the wrong list"),
                    }
                }
                State::AtHead => queued += 1,
                _ if s.list != ListLinks::NONE => return Err("unqueued request has list links"),
                _ => {}
            }
        }
        if sorted != in_tree {
            return Err("tree does not hold the sorted requests");
        }
        if on_fifos != with_deadline {
            return Err("FIFOs do not hold the requests with deadlines");
        }
        if at_head + in_tree != queued || queued != self.queued {
            return Err("queued count wrong");
        }
        Ok(())
    }
}
