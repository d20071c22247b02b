// SPDX-License-Identifier: GPL-2.0

//! AS's [`Policy`] hooks: a request's arrival and completion, dispatch,
//! merges and tunables, each calling into the parts of [`Anticipatory`]
//! that C's `as_*` functions are.

use super::{
    time_after, tunables, AnticStatus, Anticipatory, ContextSlot, Dispatch, MergeProbe, Nanos, Op,
    Policy, RequestDesc, Sector, Slot, State, Tag, TunableError, ASYNC, NIL, SYNC,
};

impl<R, C> Policy for Anticipatory<R, C>
where
    R: AsRef<[Slot]> + AsMut<[Slot]>,
    C: AsRef<[ContextSlot]> + AsMut<[ContextSlot]>,
{
    /// C's `as_add_request()`, or for a request inserted at head the
    /// at-head list (not AS's business, see the [module
    /// documentation](super)). A tag that is already queued is ignored; a
    /// tag still in flight is taken as requeued first.
    fn insert(&mut self, tag: Tag, desc: &RequestDesc, at_head: bool, now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        self.note_time(now);
        self.tick(now);
        let fresh = match self.at(x).state {
            State::AtHead | State::Sorted => return,
            State::Free => true,
            State::Dispatched | State::Requeued => false,
        };
        let dir = if desc.op.is_read() || desc.sync {
            SYNC
        } else {
            ASYNC
        };
        {
            let s = self.at_mut(x);
            s.sector = desc.sector;
            s.sectors = desc.sectors;
            s.op = desc.op;
            s.dir = dir as u8;
        }
        if fresh {
            let context = if at_head {
                NIL
            } else {
                self.take_context(desc.issuer)
            };
            let s = self.at_mut(x);
            s.context = context;
            s.counted = false;
        }
        self.queued += 1;
        if at_head {
            self.at_mut(x).state = State::AtHead;
            self.at_head.insert_after(self.storage.as_mut(), NIL, x);
            return;
        }
        if !fresh {
            // Back into the sort tree: as if it had never gone out.
            self.uncount(x, now);
        } else if dir == SYNC {
            self.update_iohist(self.at(x).context, x, now);
        }
        self.add_queued(x, now);
        // C's `as_update_rq()`: keep the next request up to date, and see
        // whether this is the request being anticipated.
        self.next_rq[dir] = self.choose_req(x, self.next_rq[dir]);
        if matches!(
            self.status,
            AnticStatus::WaitRequest | AnticStatus::WaitNext
        ) && self.can_break_anticipation(x, now)
        {
            self.antic_stop();
        }
    }

    /// C's `as_dispatch_request()`, after the at-head list. Returns
    /// [`Dispatch::IdleUntil`] while waiting for the anticipated process
    /// with its request completed, [`Dispatch::Empty`] while waiting for
    /// that request to complete or for the old batch to drain (the
    /// completion then calls for a run: [`Anticipatory::after_completion`]).
    fn dispatch(&mut self, now: Nanos) -> Dispatch {
        self.note_time(now);
        self.tick(now);
        let head = self.at_head.head;
        if head != NIL {
            return self.start_at_head(head);
        }
        self.dispatch_sorted(now)
    }

    fn has_work(&self) -> bool {
        self.queued != 0
    }

    fn queued(&self) -> usize {
        self.queued
    }

    /// C's `as_completed_request()`. Completing a tag that is not in
    /// flight (or requeued) is ignored.
    fn completed(&mut self, tag: Tag, now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        if !matches!(self.at(x).state, State::Dispatched | State::Requeued) {
            return;
        }
        self.note_time(now);
        self.tick(now);
        self.at_mut(x).state = State::Free;
        let s = *self.at(x);
        if s.counted {
            self.at_mut(x).counted = false;
            self.completed_sorted(&s, now);
            self.put_context(s.context, s.dir() == SYNC, now);
        }
        self.release_request(s.context);
    }

    fn requeued(&mut self, tag: Tag, now: Nanos) {
        let Some(x) = self.check(tag) else { return };
        if self.at(x).state == State::Dispatched {
            self.note_time(now);
            self.at_mut(x).state = State::Requeued;
        }
    }

    /// The request of the bio's operation that starts where the bio ends:
    /// in the sync tree for a read, in the sync then the async tree for a
    /// write (see the [module documentation](super) for C's lookup). Only
    /// the first request at that sector is looked at, as
    /// `elv_rb_find()` finds one. Flushes never merge.
    fn front_merge_candidate(&self, probe: &MergeProbe) -> Option<Tag> {
        let dirs: &[usize] = match probe.op {
            Op::Flush => return None,
            Op::Read => &[SYNC],
            _ => &[SYNC, ASYNC],
        };
        dirs.iter().find_map(|&dir| {
            let x = self.lower_bound(dir, probe.bio_end);
            if x == NIL {
                return None;
            }
            let s = self.at(x);
            (s.sector == probe.bio_end && s.op == probe.op).then_some(x as Tag)
        })
    }

    /// C's `as_merged_request()` for a front merge: the request moves in
    /// its sort tree (the next request is not looked at again, as in C).
    fn front_merged(&mut self, tag: Tag, new_sector: Sector, new_sectors: u32) {
        let Some(x) = self.check(tag) else { return };
        match self.at(x).state {
            State::Sorted => {
                let dir = self.at(x).dir();
                self.tree_remove(dir, x);
                let s = self.at_mut(x);
                s.sector = new_sector;
                s.sectors = new_sectors;
                self.tree_insert(dir, x);
            }
            State::AtHead => {
                let s = self.at_mut(x);
                s.sector = new_sector;
                s.sectors = new_sectors;
            }
            _ => {}
        }
    }

    /// The request grew at its end: where it ends is where the head will
    /// be after it.
    fn back_merged(&mut self, tag: Tag, new_sectors: u32) {
        let Some(x) = self.check(tag) else { return };
        if matches!(self.at(x).state, State::Sorted | State::AtHead) {
            self.at_mut(x).sectors = new_sectors;
        }
    }

    /// C's `as_merged_requests()`: if `next` expires before `into` (in the
    /// same FIFO), `into` takes its deadline and FIFO place; `next` is
    /// gone, and counts for its process as a completed request.
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
            && si.dir == sn.dir
            && time_after(si.fifo_time, sn.fifo_time)
        {
            let (fifo, nodes) = (&mut self.fifos[si.dir()], self.storage.as_mut());
            fifo.remove(nodes, i);
            fifo.insert_after(nodes, n, i);
            self.at_mut(i).fifo_time = sn.fifo_time;
        }
        match sn.state {
            State::Sorted => self.remove_queued(n),
            _ => {
                self.at_head.remove(self.storage.as_mut(), n);
                self.queued = self.queued.saturating_sub(1);
            }
        }
        self.at_mut(n).state = State::Free;
        let now = self.now;
        if sn.counted {
            // A requeued request, out once: it is done as if it completed.
            self.at_mut(n).counted = false;
            self.completed_sorted(&sn, now);
        }
        self.put_context(sn.context, sn.dir() == SYNC, now);
        self.release_request(sn.context);
    }

    fn tunables(&self) -> &'static [&'static str] {
        tunables::TUNABLES
    }

    fn tunable(&self, name: &str) -> Result<i64, TunableError> {
        self.tunable_value(name)
    }

    /// Rejects anything outside the ranges in the [module
    /// documentation](super), and any write of `est_time`; the old value
    /// then stays.
    fn set_tunable(&mut self, name: &str, text: &str) -> Result<(), TunableError> {
        self.write_tunable(name, text)
    }
}
