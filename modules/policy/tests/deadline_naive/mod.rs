// SPDX-License-Identifier: GPL-2.0

//! A literal, slow port of mq-deadline's dispatch logic (Linux 6.12),
//! with plain vectors for the sort trees and FIFOs, to check the policy
//! decision by decision. Shared by the property tests and the fuzz target
//! (which include this file with `#[path]`).

use std::collections::VecDeque;

use ironlift_policy::{IoPrio, MergeProbe, Nanos, Op, RequestDesc, Sector, NSEC_PER_MSEC};

const MS: Nanos = NSEC_PER_MSEC;

/// `time_after()`, with wrap-around.
pub fn time_after(a: Nanos, b: Nanos) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// `time_after_eq()`, with wrap-around.
pub fn time_after_eq(a: Nanos, b: Nanos) -> bool {
    (a.wrapping_sub(b) as i64) >= 0
}

#[derive(Clone, Copy, Default)]
pub struct Rq {
    pub sector: Sector,
    pub op: Option<Op>,
    pub prio: IoPrio,
    pub fifo_time: Nanos,
    /// Order of entry into the sort tree: elv_rb_add() puts equal
    /// sectors to the right.
    pub seq: u64,
    pub owner: usize,
    pub queued: bool,
    pub busy: bool,
}

impl Rq {
    fn dir(&self) -> usize {
        self.op.map_or(0, Op::dir)
    }
    fn level(&self) -> usize {
        self.prio.class.index()
    }
}

pub struct Dd {
    pub rq: Vec<Rq>,
    sort: [Vec<usize>; 6],
    fifo: [Vec<usize>; 6],
    dispatch: VecDeque<usize>,
    latest_pos: [[Sector; 2]; 3],
    last_dir: usize,
    batching: u32,
    starved: u32,
    queued: [u32; 3],
    pub fifo_expire: [Nanos; 2],
    pub fifo_batch: u32,
    pub writes_starved: u32,
    pub front_merges: bool,
    pub prio_aging_expire: Nanos,
    seq: u64,
}

impl Dd {
    pub fn new(cap: usize) -> Self {
        Dd {
            rq: vec![Rq::default(); cap],
            sort: Default::default(),
            fifo: Default::default(),
            dispatch: VecDeque::new(),
            latest_pos: [[0; 2]; 3],
            last_dir: 1,
            batching: 0,
            starved: 0,
            queued: [0; 3],
            fifo_expire: [500 * MS, 5000 * MS],
            fifo_batch: 16,
            writes_starved: 2,
            front_merges: true,
            prio_aging_expire: 10_000 * MS,
            seq: 0,
        }
    }

    fn q(&self, t: usize) -> usize {
        self.rq[t].level() * 2 + self.rq[t].dir()
    }

    fn sort_add(&mut self, t: usize) {
        self.rq[t].seq = self.seq;
        self.seq += 1;
        let q = self.q(t);
        self.sort[q].push(t);
    }

    /// deadline_from_pos()
    fn deadline_from_pos(&self, level: usize, dir: usize, pos: Sector) -> Option<usize> {
        self.sort[level * 2 + dir]
            .iter()
            .copied()
            .filter(|&t| self.rq[t].sector >= pos)
            .min_by_key(|&t| (self.rq[t].sector, self.rq[t].seq))
    }

    /// deadline_remove_request()
    fn remove(&mut self, t: usize) {
        let q = self.q(t);
        self.sort[q].retain(|&r| r != t);
        self.fifo[q].retain(|&r| r != t);
        self.dispatch.retain(|&r| r != t);
        self.rq[t].queued = false;
    }

    /// dd_insert_request()
    pub fn insert(&mut self, t: usize, desc: &RequestDesc, at_head: bool, now: Nanos) {
        let r = &mut self.rq[t];
        if !r.busy {
            r.busy = true;
            r.owner = desc.prio.class.index();
            self.queued[r.owner] += 1;
        }
        r.sector = desc.sector;
        r.op = Some(desc.op);
        r.prio = desc.prio;
        r.queued = true;
        if at_head {
            r.fifo_time = now;
            self.dispatch.push_front(t);
        } else {
            r.fifo_time = now.wrapping_add(self.fifo_expire[desc.op.dir()]);
            self.sort_add(t);
            let q = self.q(t);
            self.fifo[q].push(t);
        }
    }

    /// dd_finish_request()
    pub fn finish(&mut self, t: usize) {
        self.rq[t].busy = false;
        self.queued[self.rq[t].owner] -= 1;
    }

    fn start(&mut self, t: usize) -> usize {
        self.remove(t);
        let (level, dir) = (self.rq[t].level(), self.rq[t].dir());
        self.latest_pos[level][dir] = self.rq[t].sector;
        t
    }

    fn started_after(&self, t: usize, latest_start: Nanos) -> bool {
        let start = self.rq[t]
            .fifo_time
            .wrapping_sub(self.fifo_expire[self.rq[t].dir()]);
        time_after(start, latest_start)
    }

    /// __dd_dispatch_request()
    fn dispatch_prio(&mut self, level: usize, latest_start: Nanos, now: Nanos) -> Option<usize> {
        let base = level * 2;
        let mut data_dir;
        let rq;
        let next =
            self.deadline_from_pos(level, self.last_dir, self.latest_pos[level][self.last_dir]);
        if let (Some(next), true) = (next, self.batching < self.fifo_batch) {
            rq = next;
        } else {
            if !self.fifo[base].is_empty() {
                data_dir = 0;
                if !self.fifo[base + 1].is_empty() {
                    let starved = self.starved;
                    self.starved = starved.wrapping_add(1);
                    if starved >= self.writes_starved {
                        self.starved = 0;
                        data_dir = 1;
                    }
                }
            } else if !self.fifo[base + 1].is_empty() {
                self.starved = 0;
                data_dir = 1;
            } else {
                return None;
            }
            let next = self.deadline_from_pos(level, data_dir, self.latest_pos[level][data_dir]);
            let head = self.fifo[base + data_dir][0];
            let expired = time_after_eq(now, self.rq[head].fifo_time);
            rq = match next {
                Some(next) if !expired => next,
                _ => head,
            };
            self.last_dir = data_dir;
            self.batching = 0;
        }
        if self.started_after(rq, latest_start) {
            return None;
        }
        self.batching += 1;
        Some(self.start(rq))
    }

    /// dd_dispatch_request()
    pub fn dispatch(&mut self, now: Nanos) -> Option<usize> {
        if let Some(t) = self.dispatch.pop_front() {
            return Some(self.start(t));
        }
        if self.queued.iter().filter(|&&n| n != 0).count() >= 2 {
            for level in 1..3 {
                let latest = now.wrapping_sub(self.prio_aging_expire);
                if let Some(t) = self.dispatch_prio(level, latest, now) {
                    return Some(t);
                }
            }
        }
        for level in 0..3 {
            if let Some(t) = self.dispatch_prio(level, now, now) {
                return Some(t);
            }
            if self.queued[level] != 0 {
                break;
            }
        }
        None
    }

    /// Whether `t` waits on the at-head dispatch list.
    pub fn dispatch_has(&self, t: usize) -> bool {
        self.dispatch.contains(&t)
    }

    /// dd_request_merge()
    pub fn front_merge_candidate(&self, p: &MergeProbe) -> Option<usize> {
        if !self.front_merges || p.op == Op::Flush {
            return None;
        }
        let t = self.sort[p.prio.class.index() * 2 + p.op.dir()]
            .iter()
            .copied()
            .filter(|&t| self.rq[t].sector == p.bio_end)
            .min_by_key(|&t| self.rq[t].seq)?;
        (self.rq[t].op == Some(p.op) && self.rq[t].prio == p.prio).then_some(t)
    }

    /// dd_request_merged(ELEVATOR_FRONT_MERGE)
    pub fn front_merged(&mut self, t: usize, sector: Sector) {
        let q = self.q(t);
        self.sort[q].retain(|&r| r != t);
        self.rq[t].sector = sector;
        self.sort_add(t);
    }

    /// dd_merged_requests(), then the block layer frees `next`.
    pub fn merged(&mut self, into: usize, next: usize) {
        let (qi, qn) = (self.q(into), self.q(next));
        let sorted = |t: usize| self.fifo[self.q(t)].contains(&t);
        if sorted(into)
            && sorted(next)
            && qi == qn
            && time_after(self.rq[into].fifo_time, self.rq[next].fifo_time)
        {
            let f = &mut self.fifo[qi];
            f.retain(|&r| r != into);
            let at = f.iter().position(|&r| r == next).unwrap();
            f.insert(at + 1, into);
            self.rq[into].fifo_time = self.rq[next].fifo_time;
        }
        self.remove(next);
        self.finish(next);
    }
}
