// SPDX-License-Identifier: GPL-2.0

//! A queue's requests: the sort tree (by sector), the FIFO, the
//! device-wide merge hash; the choice of a queue's next request
//! (`cfq_choose_req`, `cfq_find_next_rq`); adding and removing requests
//! (`cfq_add_rq_rb`, `cfq_remove_request`), merges, and the release of an
//! exited issuer's queue.

use super::super::intrusive::{self, Tree};
use super::{Cfq, Ctx, MergeProbe, Op, QueueSlot, ReqSlot, RqState, Sector, State, Tag, NIL};

impl State {
    /// The next heap priority for a treap node (xorshift32).
    #[inline]
    pub(super) fn next_rand(&mut self) -> u32 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }
}

impl ReqSlot {
    #[inline]
    pub(super) fn end(&self) -> Sector {
        self.sector.saturating_add(Sector::from(self.sectors))
    }
}

/// The merge-hash bucket of a sector among `n` (< 2^32) buckets: a
/// Fibonacci hash, range-reduced by multiply and shift.
pub(super) fn bucket(sector: Sector, n: usize) -> usize {
    let h = sector.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    ((h * n as u64) >> 32) as usize
}

impl<R, Q> Cfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[QueueSlot]> + AsMut<[QueueSlot]>,
{
    /// `cfq_find_rq_fmerge`, device-wide: a queued request that starts at
    /// the bio's end, of its operation, priority and sync flag (a read is
    /// sync; a write's flag is not in the probe, so writes only merge into
    /// async ones, as C allows no sync bio into an async request and the
    /// block layer's writes are mostly async).
    pub(super) fn find_front_merge(&self, probe: &MergeProbe) -> Option<Tag> {
        if probe.op == Op::Flush {
            return None;
        }
        let reqs = self.reqs.as_ref();
        let mut i = reqs[bucket(probe.bio_end, reqs.len())].hhead;
        // Chains are short; the bound only guards against corruption.
        let mut steps = 0usize;
        while i != NIL && steps <= reqs.len() {
            let r = &reqs[i as usize];
            if r.state == RqState::Queued
                && r.sector == probe.bio_end
                && r.op == probe.op
                && r.prio == probe.prio
                && r.sync == probe.op.is_read()
            {
                return Some(i as Tag);
            }
            i = r.hnext;
            steps += 1;
        }
        None
    }
}

impl Ctx<'_> {
    // ----- a queue's sort tree --------------------------------------------

    #[inline]
    fn rq_tree(&mut self, qi: u32) -> Tree<'_, ReqSlot> {
        Tree {
            nodes: &mut *self.r,
            root: &mut self.qs[qi as usize].root,
        }
    }

    #[inline]
    fn rq_tree_insert(&mut self, qi: u32, x: u32) {
        let prio = self.s.next_rand();
        self.rq_tree(qi).insert(x, prio);
    }

    #[inline]
    fn rq_tree_remove(&mut self, qi: u32, x: u32) {
        self.rq_tree(qi).remove(x);
    }

    // ----- merge hash -------------------------------------------------------

    #[inline]
    pub(super) fn hash_insert(&mut self, x: u32) {
        let b = bucket(self.rq(x).sector, self.r.len());
        let head = self.r[b].hhead;
        self.rqm(x).hprev = NIL;
        self.rqm(x).hnext = head;
        if head != NIL {
            self.rqm(head).hprev = x;
        }
        self.r[b].hhead = x;
    }

    #[inline]
    fn hash_remove(&mut self, x: u32) {
        let (p, nx) = (self.rq(x).hprev, self.rq(x).hnext);
        if p != NIL {
            self.rqm(p).hnext = nx;
        } else {
            let b = bucket(self.rq(x).sector, self.r.len());
            if self.r[b].hhead == x {
                self.r[b].hhead = nx;
            }
        }
        if nx != NIL {
            self.rqm(nx).hprev = p;
        }
        self.rqm(x).hprev = NIL;
        self.rqm(x).hnext = NIL;
    }

    // ----- request choice ----------------------------------------------------

    /// `cfq_choose_req`: the better of two requests to serve with the head
    /// at `last`: a sync one before an async one, else the closer one
    /// ahead, a backward seek of up to `back_seek_max` counting
    /// `back_seek_penalty` times its distance; of two that would wrap, the
    /// one farther behind.
    pub(super) fn choose_req(&self, r1: u32, r2: u32, last: Sector) -> u32 {
        if r1 == NIL || r1 == r2 {
            return r2;
        }
        if r2 == NIL {
            return r1;
        }
        let (a, b) = (self.rq(r1), self.rq(r2));
        if a.sync != b.sync {
            return if a.sync { r1 } else { r2 };
        }
        let (s1, s2) = (a.sector, b.sector);
        // By definition, 1 KiB is 2 sectors.
        let back_max = self.s.back_max.saturating_mul(2);
        let penalty = self.s.back_penalty;
        let dist = |s: Sector| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s.saturating_add(back_max) >= last {
                Some((last - s).saturating_mul(penalty))
            } else {
                None
            }
        };
        match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    r1
                } else {
                    r2
                }
            }
            (Some(_), None) => r1,
            (None, Some(_)) => r2,
            (None, None) => {
                if s1 <= s2 {
                    r1
                } else {
                    r2
                }
            }
        }
    }

    /// `cfq_find_next_rq`: what to serve after `last`, which is still in
    /// queue `qi`'s tree: the better of its neighbours, the first request
    /// standing in for the one after when `last` is the tree's last.
    pub(super) fn find_next_rq(&self, qi: u32, last: u32) -> u32 {
        let prev = intrusive::tree_prev(self.r, last);
        let mut next = intrusive::tree_next(self.r, last);
        if next == NIL {
            let first = intrusive::tree_first(self.r, self.q(qi).root);
            if first != last {
                next = first;
            }
        }
        self.choose_req(next, prev, self.rq(last).sector)
    }

    // ----- adding and removing ------------------------------------------------

    /// `cfq_add_rq_rb`: queued request `x` joins its queue's sort tree; the
    /// queue becomes busy if it was not; its next request may change.
    pub(super) fn add_rq_rb(&mut self, x: u32, now: u64) {
        let qi = self.rq(x).queue;
        self.qm(qi).queued += 1;
        self.rq_tree_insert(qi, x);
        if !self.q(qi).on_rr {
            self.add_cfqq_rr(qi, now);
        }
        let next = self.choose_req(self.q(qi).next_rq, x, self.s.last_position);
        self.qm(qi).next_rq = next;
    }

    /// `cfq_remove_request`: queued request `x` leaves its queue (to be
    /// dispatched, or merged away). An emptied queue stays busy: it is
    /// taken off its service tree when it expires (or by the caller).
    pub(super) fn remove_request(&mut self, x: u32) {
        let qi = self.rq(x).queue;
        if self.q(qi).next_rq == x {
            let n = self.find_next_rq(qi, x);
            self.qm(qi).next_rq = n;
        }
        self.qs[qi as usize].fifo.remove(self.r, x);
        self.rq_tree_remove(qi, x);
        self.hash_remove(x);
        let q = self.qm(qi);
        q.queued = q.queued.saturating_sub(1);
        if q.root == NIL {
            q.next_rq = NIL;
        }
        self.s.rq_queued = self.s.rq_queued.saturating_sub(1);
    }

    // ----- merges -----------------------------------------------------------------

    /// A bio was back-merged into `tag`: only its size changes (the tree
    /// and the hash are keyed by its start).
    pub(super) fn back_merged(&mut self, tag: Tag, new_sectors: u32) {
        if tag < self.r.len() && matches!(self.r[tag].state, RqState::Queued | RqState::AtHead) {
            self.r[tag].sectors = new_sectors;
        }
    }

    /// `cfq_merged_request` for a front merge: the request moves in its
    /// queue's tree (`cfq_reposition_rq_rb`).
    pub(super) fn front_merged(&mut self, tag: Tag, new_sector: Sector, new_sectors: u32) {
        if tag >= self.r.len() {
            return;
        }
        let x = tag as u32;
        match self.rq(x).state {
            RqState::Queued => {}
            RqState::AtHead => {
                let r = self.rqm(x);
                r.sector = new_sector;
                r.sectors = new_sectors;
                return;
            }
            _ => return,
        }
        let qi = self.rq(x).queue;
        self.hash_remove(x);
        self.rq_tree_remove(qi, x);
        {
            let r = self.rqm(x);
            r.sector = new_sector;
            r.sectors = new_sectors;
        }
        self.rq_tree_insert(qi, x);
        self.hash_insert(x);
        let next = self.choose_req(self.q(qi).next_rq, x, self.s.last_position);
        self.qm(qi).next_rq = next;
    }

    /// `cfq_merged_requests`: `next` was merged into `into` and is gone.
    /// `into` takes `next`'s deadline and FIFO place if it is older and of
    /// the same queue; a queue other than the one in service that `next`
    /// leaves empty is no longer busy.
    pub(super) fn requests_merged(&mut self, into: Tag, next: Tag) {
        if into >= self.r.len() || next >= self.r.len() || into == next {
            return;
        }
        let (a, b) = (into as u32, next as u32);
        let (ra, rb) = (*self.rq(a), *self.rq(b));
        if !matches!(rb.state, RqState::Queued | RqState::AtHead) {
            return;
        }
        let start = ra.sector.min(rb.sector);
        let end = ra.end().max(rb.end());
        let len = end.saturating_sub(start).min(u64::from(u32::MAX)) as u32;
        match ra.state {
            RqState::Queued => {
                let qa = ra.queue;
                if rb.state == RqState::Queued && qa == rb.queue && rb.fifo_time < ra.fifo_time {
                    let fifo = &mut self.qs[qa as usize].fifo;
                    fifo.remove(self.r, a);
                    fifo.insert_after(self.r, b, a);
                    self.rqm(a).fifo_time = rb.fifo_time;
                }
                if self.q(qa).next_rq == b {
                    self.qm(qa).next_rq = a;
                }
                if start != ra.sector || len != ra.sectors {
                    self.front_merged(into, start, len);
                }
            }
            RqState::AtHead => {
                let r = self.rqm(a);
                r.sector = start;
                r.sectors = len;
            }
            _ => {}
        }
        if rb.state == RqState::AtHead {
            self.disp_remove(b);
            self.forget_at_head(b);
            return;
        }
        let qb = rb.queue;
        self.remove_request(b);
        self.rqm(b).state = RqState::Free;
        if self.q(qb).on_rr && self.q(qb).empty() && self.s.active != qb {
            self.del_cfqq_rr(qb);
        }
        self.maybe_release(qb);
    }

    /// An at-head request `x`, off the at-head list, is gone without being
    /// dispatched (merged away): a requeued one leaves its queue's counts.
    fn forget_at_head(&mut self, x: u32) {
        let qi = self.rq(x).queue;
        self.rqm(x).state = RqState::Free;
        if qi != NIL {
            self.uncount_dispatched(qi);
            self.maybe_release(qi);
        }
    }

    // ----- the at-head list -----------------------------------------------------

    pub(super) fn disp_push(&mut self, x: u32) {
        self.s.disp.push_back(self.r, x);
        self.s.disp_len += 1;
    }

    pub(super) fn disp_remove(&mut self, x: u32) {
        self.s.disp.remove(self.r, x);
        self.s.disp_len = self.s.disp_len.saturating_sub(1);
    }

    // ----- the end of a queue -----------------------------------------------------

    /// A request of queue `qi`, dispatched (sync or not), is done: it
    /// leaves the queue's and the device's counts of requests dispatched.
    pub(super) fn uncount_dispatched(&mut self, qi: u32) {
        let kind = usize::from(self.q(qi).sync);
        let q = self.qm(qi);
        q.dispatched = q.dispatched.saturating_sub(1);
        self.s.group_dispatched = self.s.group_dispatched.saturating_sub(1);
        self.s.rq_in_flight[kind] = self.s.rq_in_flight[kind].saturating_sub(1);
    }

    /// Frees an exited issuer's sync queue once nothing of it remains
    /// (C: its last reference is put). Requeued requests waiting at head
    /// count as dispatched, so none of the queue's is left.
    #[inline]
    pub(super) fn maybe_release(&mut self, qi: u32) {
        let q = self.q(qi);
        if q.used
            && q.exited
            && q.queued == 0
            && q.dispatched == 0
            && !q.on_rr
            && self.s.active != qi
            && qi < self.issuers()
        {
            *self.qm(qi) = QueueSlot::default();
        }
    }
}
