// SPDX-License-Identifier: GPL-2.0

//! Consistency checks of the policy's structures, for tests, fuzzing and
//! debug builds: compiled only with `test`, `debug_assertions` or the
//! `invariants` feature (in a kernel module, `--cfg 'feature="invariants"'`).

use super::super::intrusive::tree_check;
use super::idle::{seeky_history, wanted_slot, weight_slot, HW_QUEUE_SAMPLES};
use super::queue::bucket;
use super::wf2q::{heap_key, vt_gt};
use super::{
    Bfq, IssuerSlot, PrioClass, Queue, ReqSlot, RqState, ALL_HEAPS, IDLE_HEAP0, LARGE_BURST_THRESH,
    NIL, NO_HEAP, NO_SLOT, WEIGHT_SLOTS,
};

/// What the queues add up to, to compare with the device-wide counts.
#[derive(Default)]
struct Totals {
    queued: u64,
    dispatched: u64,
    at_head: u64,
    wsum: [u64; PrioClass::COUNT],
    busy: u32,
    wr_busy: u32,
    busy_in_class: [u32; PrioClass::COUNT],
    weight_count: [u32; WEIGHT_SLOTS],
    idle_wsum: [u64; PrioClass::COUNT],
    raised_idle: u32,
}

impl<R, Q> Bfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[IssuerSlot]> + AsMut<[IssuerSlot]>,
{
    /// Checks the policy's internal structures for consistency (request
    /// trees, FIFOs, merge hash, service-tree heaps, weight sums and
    /// counts). O(n + m), plus O(m) per queue merged into: meant for tests
    /// and fuzzing, not the I/O path.
    /// Returns a description of the first inconsistency found.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let mut t = Totals::default();
        for qi in 0..self.qs.as_ref().len() as u32 {
            self.check_queue_requests(qi)?;
            self.check_queue_state(qi, &mut t)?;
        }
        self.check_totals(&t)?;
        self.check_heaps()?;
        self.check_requests(&t)?;
        self.check_burst()?;
        self.check_merges()?;
        self.check_wakers()
    }

    /// Every merged issuer's slot holds no queue and names a live queue of
    /// another slot, which counts it; the last queue created is live.
    /// O(m) per queue merged into: each such queue's count is checked
    /// exactly, and the counts' sum against the merged slots, which leaves
    /// no merged slot to a queue counting none.
    fn check_merges(&self) -> Result<(), &'static str> {
        let qs = self.qs.as_ref();
        let merged_slots = qs.iter().filter(|s| s.merged != NIL).count();
        let counted: usize = qs.iter().map(|s| s.q.merged_in as usize).sum();
        if counted != merged_slots {
            return Err("merged issuers miscounted");
        }
        for (i, slot) in qs.iter().enumerate() {
            let count = if slot.q.merged_in == 0 {
                0
            } else {
                qs.iter().filter(|o| o.merged == i as u32).count() as u32
            };
            if slot.q.merged_in != count {
                return Err("merged issuers miscounted");
            }
            if count > 0 && (!slot.q.used || slot.q.exited) {
                return Err("merged into a queue with no issuer");
            }
            if slot.q.exited && !(slot.q.used && slot.q.own_exited && count == 0) {
                return Err("queue exited with issuers left");
            }
            if slot.merged != NIL
                && (slot.q.used || slot.merged == i as u32 || slot.merged as usize >= qs.len())
            {
                return Err("merged issuer holds a queue");
            }
        }
        let last = self.st.last_created;
        if last != NIL && (!qs[last as usize].q.used || qs[last as usize].q.exited) {
            return Err("last created queue not live");
        }
        Ok(())
    }

    /// A queue's sort tree, FIFOs and next request hold exactly its
    /// queued requests.
    fn check_queue_requests(&self, qi: u32) -> Result<(), &'static str> {
        let reqs = self.reqs.as_ref();
        let q = &self.qs.as_ref()[qi as usize].q;
        let queued = |r: &ReqSlot| r.state == RqState::Queued && r.queue == qi;
        if tree_check(reqs, q.root, queued)? != q.queued as usize {
            return Err("queue count differs from its tree");
        }
        let mut fifo = 0;
        for (d, list) in q.fifo.iter().enumerate() {
            fifo += list.check(reqs, |r| queued(r) && usize::from(r.sync) == d)?;
        }
        if fifo != q.queued as usize {
            return Err("fifo count");
        }
        if (q.next_rq == NIL) != (q.queued == 0) {
            return Err("next_rq vs queued");
        }
        if q.next_rq != NIL && !queued(&reqs[q.next_rq as usize]) {
            return Err("next_rq not in queue");
        }
        Ok(())
    }

    /// A queue's flags, weight count and place in the service trees agree
    /// with its requests; adds it up into `t`.
    fn check_queue_state(&self, qi: u32, t: &mut Totals) -> Result<(), &'static str> {
        let qs = self.qs.as_ref();
        let s = &self.st;
        let q: &Queue = &qs[qi as usize].q;
        if q.seeky != seeky_history(q.seek_history) {
            return Err("seekiness differs from the seek history");
        }
        if q.weight_slot != weight_slot(q.weight) {
            return Err("weight slot differs from the weight");
        }
        if q.wc_slot != wanted_slot(q) {
            return Err("queue counted under the wrong weight");
        }
        if q.wc_slot != NO_SLOT {
            t.weight_count[q.wc_slot as usize] += 1;
        }
        if !q.used && (q.queued > 0 || q.dispatched > 0 || q.at_head > 0 || q.busy) {
            return Err("free slot with requests");
        }
        if q.queued > 0 && !q.busy {
            return Err("queue with requests not busy");
        }
        if q.busy {
            t.busy += 1;
            t.busy_in_class[q.class.index()] += 1;
            if q.wr_coeff > 1 {
                t.wr_busy += 1;
            }
            t.wsum[q.class.index()] += q.weight as u64;
            if s.in_service == qi {
                if q.heap_id != NO_HEAP {
                    return Err("in-service queue in a heap");
                }
            } else {
                // A busy queue may be empty: preempted while idling was
                // needed for its guarantees, it keeps its place
                // (__bfq_bfqq_expire).
                let h = q.heap_id as usize;
                if q.heap_id == NO_HEAP || h / 2 != q.class.index() {
                    return Err("busy queue not in its class heap");
                }
                if q.heap_pos >= s.heap_len[h] || qs[q.heap_pos as usize].heap[h] != qi {
                    return Err("heap position");
                }
            }
        } else if q.heap_id != NO_HEAP {
            let h = q.heap_id as usize;
            if !(IDLE_HEAP0..ALL_HEAPS).contains(&h) || !q.used {
                return Err("idle queue in a service heap");
            }
            if q.heap_pos >= s.heap_len[h] || qs[q.heap_pos as usize].heap[h] != qi {
                return Err("idle heap position");
            }
            t.idle_wsum[h - IDLE_HEAP0] += u64::from(q.idle_weight);
            t.raised_idle += u32::from(q.idle_raised);
        }
        t.queued += q.queued as u64;
        t.at_head += q.at_head as u64;
        t.dispatched += q.dispatched as u64;
        Ok(())
    }

    /// The device-wide counts are what the queues add up to.
    fn check_totals(&self, t: &Totals) -> Result<(), &'static str> {
        let s = &self.st;
        if t.queued != s.queued as u64 {
            return Err("total queued");
        }
        if t.wsum != s.wsum {
            return Err("weight sums");
        }
        if t.busy != s.busy_queues {
            return Err("busy count");
        }
        if t.busy_in_class != s.busy_in_class {
            return Err("per-class busy counts");
        }
        let classes =
            t.busy_in_class
                .iter()
                .enumerate()
                .fold(0u8, |m, (c, &n)| if n > 0 { m | 1 << c } else { m });
        if classes != s.busy_classes {
            return Err("busy class mask");
        }
        if t.weight_count != s.weight_count {
            return Err("weight counts");
        }
        let mask = t
            .weight_count
            .iter()
            .enumerate()
            .fold(0u8, |m, (i, &c)| if c > 0 { m | 1 << i } else { m });
        if mask != s.weight_mask {
            return Err("weight mask");
        }
        if !(-1..=1).contains(&s.hw_tag) || s.hw_tag_samples > HW_QUEUE_SAMPLES {
            return Err("hw_tag state");
        }
        if t.wr_busy != s.wr_busy_queues {
            return Err("weight-raised busy count");
        }
        if t.idle_wsum != s.idle_wsum || t.raised_idle != s.raised_idle {
            return Err("idle-tree sums");
        }
        if s.in_service != NIL && !self.qs.as_ref()[s.in_service as usize].q.busy {
            return Err("in-service queue not busy");
        }
        if s.wait_request && s.in_service == NIL {
            return Err("idling without a queue");
        }
        Ok(())
    }

    /// Each service-tree and idle-tree heap is in heap order of its key.
    fn check_heaps(&self) -> Result<(), &'static str> {
        let qs = self.qs.as_ref();
        for h in 0..ALL_HEAPS {
            let key = |qi: u32| heap_key(&qs[qi as usize].q, h);
            for pos in 1..self.st.heap_len[h] {
                let parent = qs[((pos - 1) / 2) as usize].heap[h];
                if vt_gt(key(parent), key(qs[pos as usize].heap[h])) {
                    return Err("heap order");
                }
            }
        }
        Ok(())
    }

    /// The requests' states agree with the at-head list, the merge hash
    /// and the in-flight counts.
    fn check_requests(&self, t: &Totals) -> Result<(), &'static str> {
        let reqs = self.reqs.as_ref();
        let s = &self.st;
        let n = reqs.len();
        let mut at_head = 0u32;
        let mut inflight = 0u64;
        let mut hashed = 0u64;
        for (i, r) in reqs.iter().enumerate() {
            match r.state {
                RqState::AtHead => at_head += 1,
                RqState::InFlight => inflight += 1,
                _ => {}
            }
            let mut x = r.hhead;
            while x != NIL {
                hashed += 1;
                if hashed > n as u64 {
                    return Err("hash cycle");
                }
                let rx = &reqs[x as usize];
                if rx.state != RqState::Queued || bucket(rx.sector, n) != i {
                    return Err("hash entry misplaced");
                }
                x = rx.hnext;
            }
        }
        if hashed != s.queued as u64 {
            return Err("hash count");
        }
        if at_head != s.disp_len || at_head as u64 != t.at_head {
            return Err("at-head count");
        }
        if s.disp.check(reqs, |r| r.state == RqState::AtHead)? != at_head as usize {
            return Err("at-head list");
        }
        if inflight != s.in_driver as u64 {
            return Err("in-flight count");
        }
        if t.dispatched != inflight {
            return Err("per-queue in-flight counts");
        }
        Ok(())
    }

    /// The burst list holds exactly the queues flagged as on it.
    fn check_burst(&self) -> Result<(), &'static str> {
        let qs = self.qs.as_ref();
        let len = self.st.burst_len as usize;
        if len >= LARGE_BURST_THRESH {
            return Err("burst list as long as the large-burst threshold");
        }
        let listed = qs.iter().filter(|s| s.q.in_burst_list).count();
        if listed != len
            || self.st.burst_list[..len].iter().any(|&x| {
                !qs.get(x as usize)
                    .is_some_and(|s| s.q.in_burst_list && s.q.used)
            })
        {
            return Err("burst list and queue flags disagree");
        }
        Ok(())
    }

    /// Every waker is a queue in use, other than the woken one, and the
    /// woken lists hold exactly the queues that name their owner as
    /// waker, each once, with consistent back links; the last completed
    /// queue is in use.
    fn check_wakers(&self) -> Result<(), &'static str> {
        let qs = self.qs.as_ref();
        let m = qs.len();
        let mut listed = 0usize;
        for (wi, slot) in qs.iter().enumerate() {
            let w = &slot.q;
            if !w.used && (w.waker != NIL || w.woken_first != NIL) {
                return Err("free slot with waker links");
            }
            let (mut prev, mut j, mut steps) = (NIL, w.woken_first, 0);
            while j != NIL {
                let q = qs.get(j as usize).map(|s| &s.q).ok_or("woken index")?;
                if q.waker != wi as u32 || q.woken_prev != prev {
                    return Err("woken list and waker disagree");
                }
                steps += 1;
                if steps > m {
                    return Err("woken list loops");
                }
                prev = j;
                j = q.woken_next;
            }
            listed += steps;
        }
        let mut named = 0usize;
        for (qi, slot) in qs.iter().enumerate() {
            let q = &slot.q;
            if q.waker != NIL {
                let w = qs.get(q.waker as usize).ok_or("waker index")?;
                if !w.q.used || q.waker == qi as u32 {
                    return Err("waker not in use, or the queue itself");
                }
                named += 1;
            } else if q.woken_prev != NIL || q.woken_next != NIL {
                return Err("woken links without a waker");
            }
        }
        if listed != named {
            return Err("woken lists and wakers differ in number");
        }
        let last = self.st.last_completed;
        if last != NIL && !qs.get(last as usize).is_some_and(|s| s.q.used) {
            return Err("last completed queue not in use");
        }
        Ok(())
    }
}
