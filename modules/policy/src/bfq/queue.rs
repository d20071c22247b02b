// SPDX-License-Identifier: GPL-2.0

//! A queue's requests and what becomes of them: the per-queue sort tree
//! (by sector, then tag), the FIFOs (one per direction, each request with
//! its deadline), the device-wide merge hash and the at-head list; the
//! choice of a queue's next request (`bfq_choose_req`, `bfq_check_fifo`,
//! `bfq_find_next_rq`); removal (`bfq_remove_request`), merges, and the
//! release of an exited issuer's queue.

use super::super::intrusive::{self, Tree};
use super::idle::weight_slot;
use super::{
    Bfq, Ctx, IoPrio, IssuerId, IssuerSlot, List, MergeProbe, Nanos, Op, PrioClass, Queue, ReqSlot,
    RqState, Sector, State, Tag, DEFAULT_WEIGHT, NIL, NO_HEAP, NO_SLOT,
};

impl Default for Queue {
    fn default() -> Self {
        Queue {
            used: false,
            exited: false,
            own_exited: false,
            merged_in: 0,
            creation_time: 0,
            sync: true,
            root: NIL,
            queued: 0,
            at_head: 0,
            fifo: [List::EMPTY; 2],
            next_rq: NIL,
            dispatched: 0,
            class: PrioClass::BestEffort,
            level: 4,
            new_prio: IoPrio::DEFAULT,
            prio_changed: false,
            orig_weight: DEFAULT_WEIGHT,
            weight: DEFAULT_WEIGHT,
            weight_slot: weight_slot(DEFAULT_WEIGHT),
            wr_coeff: 1,
            start: 0,
            finish: 0,
            finish_valid: false,
            budget: 0,
            service: 0,
            max_budget: 0,
            busy: false,
            heap_id: NO_HEAP,
            heap_pos: 0,
            idle_finish: 0,
            idle_weight: 0,
            idle_raised: false,
            tag_limited: false,
            fifo_checked: false,
            non_blocking_wait_rq: false,
            last_end_request: 0,
            budget_timeout: None,
            wr_cur_max_time: 0,
            last_wr_start_finish: 0,
            wr_start_at_switch_to_srt: None,
            service_from_wr: 0,
            soft_rt_next_start: 0,
            last_idle_bklogged: 0,
            service_from_backlogged: 0,
            softrt_update: false,
            seek_history: 0,
            seeky: false,
            last_request_pos: 0,
            wc_slot: NO_SLOT,
            just_created: true,
            in_large_burst: false,
            in_burst_list: false,
            inject_limit: 0,
            last_serv_time: 0,
            decrease_time: 0,
            io_bound: true,
            has_short_ttime: false,
            ttime_samples: 0,
            ttime_total: 0,
            ttime_mean: 0,
            io_start_time: 0,
            tot_idle_time: 0,
            waker: NIL,
            woken_first: NIL,
            woken_prev: NIL,
            woken_next: NIL,
            tentative_waker: NIL,
            tentative_gen: 0,
            waker_detections: 0,
            waker_detection_started: 0,
        }
    }
}

impl State {
    /// The next heap priority for a sort tree node (xorshift32).
    #[inline]
    fn next_rand(&mut self) -> u32 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng = x;
        x
    }
}

impl ReqSlot {
    fn end_sat(&self) -> Sector {
        self.sector.saturating_add(u64::from(self.sectors))
    }
}

/// The merge-hash bucket of a sector among `n` (< 2^32) buckets: a
/// Fibonacci hash, range-reduced by multiply and shift (no division).
pub(super) fn bucket(sector: Sector, n: usize) -> usize {
    let h = sector.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    ((h * n as u64) >> 32) as usize
}

impl<R, Q> Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    /// Like [`Policy::front_merge_candidate`](super::Policy::front_merge_candidate),
    /// but only among the requests of the queue serving `issuer`, as BFQ's
    /// `bfq_request_merge` looks only in the submitting process's queue.
    pub fn front_merge_candidate_for(&self, issuer: IssuerId, probe: &MergeProbe) -> Option<Tag> {
        let qs = self.qs.as_ref();
        let own = issuer.min(qs.len() - 1);
        self.find_front_merge(probe, Some(qs[own].served_by(own as u32)))
    }

    pub(super) fn find_front_merge(&self, probe: &MergeProbe, queue: Option<u32>) -> Option<Tag> {
        if probe.op == Op::Flush {
            return None;
        }
        let reqs = self.reqs.as_ref();
        let b = bucket(probe.bio_end, reqs.len());
        let mut i = reqs[b].hhead;
        // Chains are short; the bound only guards against corruption.
        let mut steps = 0usize;
        while i != NIL && steps <= reqs.len() {
            let r = &reqs[i as usize];
            if r.state == RqState::Queued
                && r.sector == probe.bio_end
                && r.op == probe.op
                && r.prio == probe.prio
                && queue.unwrap_or(r.queue) == r.queue
            {
                return Some(i as usize);
            }
            i = r.hnext;
            steps += 1;
        }
        None
    }
}

impl Ctx<'_> {
    // ----- per-queue sort tree -------------------------------------------------

    /// The sort tree of queue `qi`.
    #[inline]
    fn tree(&mut self, qi: u32) -> Tree<'_, ReqSlot> {
        Tree {
            nodes: &mut *self.r,
            root: &mut self.qs[qi as usize].q.root,
        }
    }

    #[inline(always)]
    pub(super) fn tree_insert(&mut self, qi: u32, x: u32) {
        let prio = self.s.next_rand();
        self.tree(qi).insert(x, prio);
    }

    fn tree_remove(&mut self, qi: u32, x: u32) {
        self.tree(qi).remove(x);
    }

    fn tree_first(&self, qi: u32) -> u32 {
        intrusive::tree_first(self.r, self.q(qi).root)
    }

    fn tree_next(&self, x: u32) -> u32 {
        intrusive::tree_next(self.r, x)
    }

    fn tree_prev(&self, x: u32) -> u32 {
        intrusive::tree_prev(self.r, x)
    }

    // ----- merge hash ------------------------------------------------------

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

    #[inline(always)]
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

    // ----- FIFO lists (per queue and direction) and the at-head list --------

    #[inline]
    pub(super) fn fifo_push(&mut self, qi: u32, d: usize, x: u32) {
        self.qs[qi as usize].q.fifo[d].push_back(self.r, x);
    }

    #[inline]
    fn fifo_remove(&mut self, qi: u32, d: usize, x: u32) {
        self.qs[qi as usize].q.fifo[d].remove(self.r, x);
    }

    pub(super) fn disp_push(&mut self, x: u32) {
        self.s.disp.push_back(self.r, x);
        self.s.disp_len += 1;
    }

    pub(super) fn disp_remove(&mut self, x: u32) {
        self.s.disp.remove(self.r, x);
        self.s.disp_len = self.s.disp_len.saturating_sub(1);
    }

    // ----- request choice -------------------------------------------------------

    /// `bfq_choose_req`: the better of two requests to serve after `last`.
    #[inline]
    pub(super) fn choose_req(&self, r1: u32, r2: u32, last: Sector) -> u32 {
        if r1 == NIL || r1 == r2 {
            return r2;
        }
        if r2 == NIL {
            return r1;
        }
        let (a, b) = (self.rq(r1), self.rq(r2));
        if a.sync && !b.sync {
            return r1;
        } else if b.sync && !a.sync {
            return r2;
        }
        let (s1, s2) = (a.sector, b.sector);
        let back_max = self.s.back_max.saturating_mul(2);
        let pen = self.s.back_penalty;
        let dist = |s: Sector| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s.saturating_add(back_max) >= last {
                Some((last - s).saturating_mul(pen))
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

    /// `bfq_check_fifo`: at most once per service slot, the oldest
    /// request if its FIFO deadline passed.
    fn check_fifo(&mut self, qi: u32, last: u32, now: Nanos) -> u32 {
        if self.q(qi).fifo_checked {
            return NIL;
        }
        self.qm(qi).fifo_checked = true;
        let mut best = NIL;
        for d in [1usize, 0] {
            let h = self.q(qi).fifo[d].head;
            let h = if h == last { self.rq(h).list.next } else { h };
            if h != NIL
                && now >= self.rq(h).fifo_time
                && (best == NIL || self.rq(h).fifo_time < self.rq(best).fifo_time)
            {
                best = h;
            }
        }
        best
    }

    /// `bfq_find_next_rq`: what follows `last` (still in the tree).
    fn find_next_rq(&mut self, qi: u32, last: u32, now: Nanos) -> u32 {
        let f = self.check_fifo(qi, last, now);
        if f != NIL {
            return f;
        }
        let prev = self.tree_prev(last);
        let mut next = self.tree_next(last);
        if next == NIL {
            let first = self.tree_first(qi);
            if first != last {
                next = first;
            }
        }
        self.choose_req(next, prev, self.rq(last).sector)
    }

    /// Unlinks a queued request from its queue (`bfq_remove_request`).
    #[inline(always)]
    pub(super) fn remove_queued(&mut self, x: u32, now: Nanos) {
        let qi = self.rq(x).queue;
        let d = usize::from(self.rq(x).sync);
        if intrusive::tree_is_sole(self.r, self.q(qi).root, x) {
            // The queue's only queued request (on a fast device, nearly
            // every one), so the only one in its FIFO list too: the same
            // unlinking without looking for a successor.
            self.fifo_remove(qi, d, x);
            let q = self.qm(qi);
            if q.next_rq == x {
                // What `check_fifo` notes on its way to finding nothing.
                q.fifo_checked = true;
            }
            q.next_rq = NIL;
            q.root = NIL;
        } else {
            if self.q(qi).next_rq == x {
                let n = self.find_next_rq(qi, x, now);
                self.qm(qi).next_rq = if n == x { NIL } else { n };
            }
            self.fifo_remove(qi, d, x);
            self.tree_remove(qi, x);
        }
        self.hash_remove(x);
        self.qm(qi).queued = self.q(qi).queued.saturating_sub(1);
        self.s.queued = self.s.queued.saturating_sub(1);
        if self.q(qi).root == NIL {
            self.qm(qi).next_rq = NIL;
            if self.q(qi).busy && self.s.in_service != qi {
                self.deactivate(qi);
            }
        } else {
            self.updated_next_req(qi);
        }
    }

    // ----- merges ------------------------------------------------------------------

    /// A back merge: only the size changes (the sort tree and the
    /// front-merge hash are keyed by the start). What is charged, the
    /// budget check and the peak rate all read the size at dispatch, as C
    /// reads `blk_rq_sectors()`.
    pub(super) fn back_merged(&mut self, tag: Tag, new_sectors: u32) {
        if tag >= self.r.len() {
            return;
        }
        let x = tag as u32;
        if matches!(self.rq(x).state, RqState::Queued | RqState::AtHead) {
            self.rqm(x).sectors = new_sectors;
        }
    }

    pub(super) fn front_merged(&mut self, tag: Tag, new_sector: Sector, new_sectors: u32) {
        if tag >= self.r.len() {
            return;
        }
        let x = tag as u32;
        match self.rq(x).state {
            RqState::Queued => {}
            RqState::AtHead => {
                self.rqm(x).sector = new_sector;
                self.rqm(x).sectors = new_sectors;
                return;
            }
            _ => return,
        }
        let qi = self.rq(x).queue;
        self.hash_remove(x);
        self.tree_remove(qi, x);
        self.rqm(x).sector = new_sector;
        self.rqm(x).sectors = new_sectors;
        self.tree_insert(qi, x);
        self.hash_insert(x);
        let prev = self.q(qi).next_rq;
        let next = self.choose_req(prev, x, self.s.last_position);
        self.qm(qi).next_rq = next;
        self.updated_next_req(qi);
    }

    pub(super) fn requests_merged(&mut self, into: Tag, next: Tag, now: Nanos) {
        if into >= self.r.len() || next >= self.r.len() || into == next {
            return;
        }
        let (a, b) = (into as u32, next as u32);
        let (ra, rb) = (*self.rq(a), *self.rq(b));
        if !matches!(rb.state, RqState::Queued | RqState::AtHead) {
            return;
        }
        // `into` now covers both.
        let start = ra.sector.min(rb.sector);
        let end = ra.end_sat().max(rb.end_sat());
        let len = end.saturating_sub(start).min(u64::from(u32::MAX)) as u32;
        match ra.state {
            RqState::Queued => {
                let qa = ra.queue;
                if rb.state == RqState::Queued
                    && qa == rb.queue
                    && ra.sync == rb.sync
                    && rb.fifo_time < ra.fifo_time
                {
                    // bfq_requests_merged: keep the earlier deadline, and
                    // `next`'s place in the FIFO, which it leaves below.
                    let d = usize::from(ra.sync);
                    self.fifo_remove(qa, d, a);
                    self.qs[qa as usize].q.fifo[d].insert_after(self.r, b, a);
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
                self.rqm(a).sector = start;
                self.rqm(a).sectors = len;
            }
            _ => {}
        }
        let qb = rb.queue;
        if rb.state == RqState::AtHead {
            self.disp_remove(b);
            let q = self.qm(qb);
            q.at_head = q.at_head.saturating_sub(1);
        } else {
            self.remove_queued(b, now);
        }
        self.rqm(b).state = RqState::Free;
        self.maybe_release(qb);
    }

    // ----- the end of a queue ------------------------------------------------------

    /// Frees an exited issuer's slot once nothing of it remains.
    #[inline]
    pub(super) fn maybe_release(&mut self, qi: u32) {
        // Called on most dispatches and completions: the test that almost
        // always ends it, kept where the caller is.
        if self.q(qi).exited {
            self.release_if_done(qi);
        }
    }

    /// [`Ctx::maybe_release`] for a queue whose issuer exited.
    fn release_if_done(&mut self, qi: u32) {
        let q = self.q(qi);
        if q.used
            && q.exited
            && q.queued == 0
            && q.at_head == 0
            && q.dispatched == 0
            && !q.busy
            && self.s.in_service != qi
        {
            self.idle_tree_remove(qi);
            self.sync_weight_count(qi);
            // As bfq_put_queue(): an exiting process no longer counts in
            // the burst it was created in.
            if self.burst_list_del(qi) && self.s.burst_size > 0 {
                self.s.burst_size -= 1;
            }
            self.forget_wakers(qi);
            *self.qm(qi) = Queue::default();
        }
    }
}
