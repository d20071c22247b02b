// SPDX-License-Identifier: GPL-2.0

//! Consistency checks of the policy's structures, for tests, fuzzing and
//! debug builds: compiled only with `test`, `debug_assertions` or the
//! `invariants` feature (in a kernel module, `--cfg 'feature="invariants"'`).

use super::super::intrusive::tree_check;
use super::queue::bucket;
use super::{Cfq, QueueSlot, ReqSlot, RqState, NIL, NO_TREE, TREES};

/// What the queues add up to, to compare with the device-wide counts.
#[derive(Default)]
struct Totals {
    queued: u64,
    busy: u32,
    busy_sync: u32,
    dispatched: [u32; 2],
    st_count: [u32; TREES],
}

impl<R, Q> Cfq<R, Q>
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[QueueSlot]> + AsMut<[QueueSlot]>,
{
    /// Checks the policy's structures for consistency: each queue's sort
    /// tree, FIFO and next request against its queued requests, the
    /// service trees and busy counts, the requests dispatched per queue
    /// and in total, the merge hash and the at-head list. O(n + m): for
    /// tests and fuzzing. Returns the first inconsistency found.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let totals = self.check_queues()?;
        self.check_trees(&totals)?;
        self.check_requests()
    }

    /// Each queue's sort tree, FIFO and next request against its queued
    /// requests, and its flags; returns what the queues add up to.
    fn check_queues(&self) -> Result<Totals, &'static str> {
        let reqs = self.reqs.as_ref();
        let s = &self.st;
        let mut t = Totals::default();
        for (qi, q) in self.qs.as_ref().iter().enumerate() {
            let qi = qi as u32;
            let mine = |r: &ReqSlot| r.state == RqState::Queued && r.queue == qi;
            if tree_check(reqs, q.root, mine)? != q.queued as usize {
                return Err("a queue's count differs from its sort tree");
            }
            if q.fifo.check(reqs, mine)? != q.queued as usize {
                return Err("a queue's count differs from its FIFO");
            }
            if (q.next_rq == NIL) != (q.queued == 0) {
                return Err("a queue's next request and its count disagree");
            }
            if q.next_rq != NIL && !reqs.get(q.next_rq as usize).is_some_and(mine) {
                return Err("a queue's next request is not queued in it");
            }
            if !q.used && (q.queued > 0 || q.dispatched > 0 || q.on_rr) {
                return Err("an unused queue holds requests");
            }
            if q.queued > 0 && !q.on_rr {
                return Err("a queue with requests is not busy");
            }
            if q.on_rr != (q.st != NO_TREE) {
                return Err("a busy queue is not on a service tree");
            }
            if q.on_rr {
                t.busy += 1;
                t.busy_sync += u32::from(q.sync);
                t.st_count[q.st as usize] += 1;
                if q.empty() && s.active != qi {
                    return Err("an empty queue not in service is busy");
                }
            }
            t.queued += u64::from(q.queued);
            t.dispatched[usize::from(q.sync)] += q.dispatched;
            if q.wait_request && s.active != qi {
                return Err("a queue not in service waits for a request");
            }
        }
        Ok(t)
    }

    /// The service trees, and the device-wide counts against the queues'.
    fn check_trees(&self, t: &Totals) -> Result<(), &'static str> {
        let qs = self.qs.as_ref();
        let s = &self.st;
        for (st, &count) in t.st_count.iter().enumerate() {
            if count != s.st_count[st] {
                return Err("a service tree's count is wrong");
            }
            let on = |q: &QueueSlot| q.on_rr && q.st as usize == st;
            if tree_check(qs, s.st_root[st], on)? != count as usize {
                return Err("a service tree does not hold its queues");
            }
        }
        if t.busy != s.busy_queues || t.busy != s.nr_cfqq || t.busy_sync != s.busy_sync_queues {
            return Err("busy queue counts are wrong");
        }
        if t.queued != u64::from(s.rq_queued) {
            return Err("queued request count is wrong");
        }
        if t.dispatched != s.rq_in_flight || t.dispatched[0] + t.dispatched[1] != s.group_dispatched
        {
            return Err("dispatched request counts are wrong");
        }
        if s.active != NIL && !qs.get(s.active as usize).is_some_and(|q| q.on_rr) {
            return Err("the queue in service is not busy");
        }
        if s.timer_armed && (s.active == NIL || !qs[s.active as usize].wait_request) {
            return Err("the idle timer is armed for no waiting queue");
        }
        Ok(())
    }

    /// The requests: their counts by state, the merge hash and the at-head
    /// list.
    fn check_requests(&self) -> Result<(), &'static str> {
        let reqs = self.reqs.as_ref();
        let qs = self.qs.as_ref();
        let s = &self.st;
        let (mut in_driver, mut foreign, mut at_head) = (0u32, 0u32, 0u32);
        let mut per_queue = [0u32; 2];
        for (x, r) in reqs.iter().enumerate() {
            match r.state {
                RqState::Free => {}
                RqState::Queued => {
                    if !qs.get(r.queue as usize).is_some_and(|q| q.used) {
                        return Err("a queued request's queue is not in use");
                    }
                    if !self.hashed(x as u32) {
                        return Err("a queued request is not in the merge hash");
                    }
                }
                RqState::AtHead | RqState::InFlight | RqState::Requeued => {
                    at_head += u32::from(r.state == RqState::AtHead);
                    if r.queue == NIL {
                        foreign += u32::from(r.state == RqState::InFlight);
                        continue;
                    }
                    let Some(q) = qs.get(r.queue as usize) else {
                        return Err("a request's queue is out of range");
                    };
                    per_queue[usize::from(q.sync)] += 1;
                    in_driver += u32::from(r.state == RqState::InFlight);
                }
            }
        }
        if per_queue != s.rq_in_flight {
            return Err("requests dispatched differ from the queues' counts");
        }
        if in_driver != s.rq_in_driver || foreign != s.foreign_in_flight {
            return Err("requests in the driver are miscounted");
        }
        let listed = s.disp.check(reqs, |r| r.state == RqState::AtHead)?;
        if listed != at_head as usize || listed != s.disp_len as usize {
            return Err("the at-head list is wrong");
        }
        Ok(())
    }

    /// Whether request `x` is on its bucket's chain.
    fn hashed(&self, x: u32) -> bool {
        let reqs = self.reqs.as_ref();
        let mut i = reqs[bucket(reqs[x as usize].sector, reqs.len())].hhead;
        let mut steps = 0;
        while i != NIL && steps <= reqs.len() {
            if i == x {
                return true;
            }
            i = reqs[i as usize].hnext;
            steps += 1;
        }
        false
    }
}
