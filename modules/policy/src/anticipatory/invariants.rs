// SPDX-License-Identifier: GPL-2.0

//! Consistency checks of AS's structures, for tests, fuzzing and debug
//! builds: compiled only with `test`, `debug_assertions` or the
//! `invariants` feature (in a kernel module, `--cfg 'feature="invariants"'`).

use super::super::intrusive::tree_check;
use super::{AnticStatus, Anticipatory, ContextSlot, Slot, State, DIRS, NIL};

impl<R, C> Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    /// Checks the internal structures (for tests and fuzzing; O(n log n +
    /// m)): each sort tree is a well-formed treap holding exactly the
    /// sorted requests of its direction, and its FIFO the same; the
    /// at-head list holds the at-head requests; each direction's next
    /// request is one of its sorted requests, and there is one if the
    /// tree is not empty; the counters match the slots, per process too;
    /// a wait has a process to wait for.
    // Long: one pass over the slots checks every structure against the
    // same counts; split, each part would walk the slots again.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        self.check_link_range()?;
        let slots = self.slots();
        let mut in_tree = [0usize; DIRS];
        let mut at_head = 0usize;
        let mut counted = 0u32;
        let m = self.issuers();
        // Requests by context, for the first 64: (queued, owned).
        let mut by_context = [(0u32, 0u32); 64];
        for s in slots {
            match s.state {
                State::Sorted => in_tree[s.dir()] += 1,
                State::AtHead => at_head += 1,
                _ => {
                    if s.list.prev != NIL || s.list.next != NIL {
                        return Err("unqueued request has list links");
                    }
                }
            }
            if s.state != State::Sorted && (s.tree.child != [NIL; 2] || s.tree.parent != NIL) {
                return Err("unsorted request has tree links");
            }
            if s.counted {
                if !matches!(s.state, State::Dispatched | State::Requeued | State::AtHead) {
                    return Err("a request counted as dispatched is not out");
                }
                counted += 1;
            }
            if s.state != State::Free && s.context != NIL {
                if s.context as usize >= m - 1 {
                    return Err("a request's context is out of range");
                }
                if !self.ctx(s.context).used {
                    return Err("a request refers to a free context");
                }
                if let Some((queued, owned)) = by_context.get_mut(s.context as usize) {
                    *queued += u32::from(s.state == State::Sorted);
                    *owned += 1;
                }
            }
        }
        for (dir, &sorted) in in_tree.iter().enumerate() {
            let member = |s: &Slot| s.state == State::Sorted && s.dir() == dir;
            if tree_check(slots, self.trees[dir], member)? != sorted {
                return Err("tree does not hold its sorted requests");
            }
            if self.fifos[dir].check(slots, member)? != sorted {
                return Err("FIFO does not hold its sorted requests");
            }
            let next = self.next_rq[dir];
            if (next == NIL) != (sorted == 0) {
                return Err("next request missing, or set with nothing sorted");
            }
            if next != NIL && !member(self.at(next)) {
                return Err("next request is not a sorted request of its direction");
            }
        }
        if self.at_head.check(slots, |s| s.state == State::AtHead)? != at_head {
            return Err("at-head list does not hold the at-head requests");
        }
        if at_head + in_tree.iter().sum::<usize>() != self.queued {
            return Err("queued count wrong");
        }
        if counted != self.nr_dispatched {
            return Err("dispatched count wrong");
        }
        self.check_contexts(&by_context)?;
        if self.io_context != NIL && !self.ctx(self.io_context).used {
            return Err("the anticipated process's context is free");
        }
        if matches!(
            self.status,
            AnticStatus::WaitRequest | AnticStatus::WaitNext
        ) && self.io_context == NIL
        {
            return Err("waiting with no process to wait for");
        }
        if self.exit_prob > 256 || self.exit_no_coop > 256 {
            return Err("a probability above one");
        }
        Ok(())
    }

    /// Each context's counts against the requests that refer to it
    /// (`by_context`: the sorted ones and all of them, of the first 64).
    fn check_contexts(&self, by_context: &[(u32, u32); 64]) -> Result<(), &'static str> {
        for (i, c) in self.contexts.as_ref().iter().enumerate() {
            if !c.used {
                if c.owned != 0 || c.queued != 0 || c.running {
                    return Err("a free context has requests");
                }
                continue;
            }
            if i == self.issuers() - 1 {
                return Err("the shared issuer has a context");
            }
            if by_context
                .get(i)
                .is_some_and(|&counts| counts != (c.queued, c.owned))
            {
                return Err("a context's request counts wrong");
            }
            if c.queued > c.owned {
                return Err("a context has more queued than owned");
            }
            if !c.running && c.owned == 0 && i as u32 != self.io_context {
                return Err("an exited context nothing refers to was kept");
            }
            if c.ttime_samples > 256 || c.seek_samples > 256 {
                return Err("a sample weight above one");
            }
        }
        Ok(())
    }

    /// Every link names a slot or `NIL`.
    fn check_link_range(&self) -> Result<(), &'static str> {
        let slots = self.slots();
        let valid = |i: u32| i == NIL || (i as usize) < slots.len();
        let roots = self.trees.iter().chain(&self.next_rq).copied();
        let heads = self.fifos.iter().chain([&self.at_head]);
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
}
