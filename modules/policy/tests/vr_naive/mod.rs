// SPDX-License-Identifier: GPL-2.0

//! A literal, slow model of V(R) as the policy documents it (the C's
//! `vr-iosched.c`, with the header's multiplicative penalty), with plain
//! vectors for the sort tree and FIFOs, to check the policy decision by
//! decision. Shared by the property tests and the fuzz target (which
//! include this file with `#[path]`).

use ironlift_policy::{IoPrio, MergeProbe, Nanos, Op, RequestDesc, Sector, NSEC_PER_MSEC};

/// `time_after()`, with wrap-around.
pub fn time_after(a: Nanos, b: Nanos) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// The tunables' names, in sysfs order.
pub const NAMES: [&str; 4] = ["sync_expire", "async_expire", "fifo_batch", "rev_penalty"];

#[derive(Clone, Copy, Default, Debug)]
pub struct Rq {
    pub sector: Sector,
    pub op: Option<Op>,
    pub prio: IoPrio,
    pub fifo_time: Nanos,
    /// Order of entry into the sort tree (equal sectors sort by it).
    pub seq: u64,
    /// In the sort tree.
    pub sorted: bool,
    /// The FIFO it sits on (0 async, 1 sync), if it has a deadline.
    pub fifo: Option<usize>,
    pub at_head: bool,
    /// Inserted and not completed or merged away.
    pub busy: bool,
}

impl Rq {
    pub fn queued(&self) -> bool {
        self.sorted || self.at_head
    }
}

pub struct Vr {
    pub rq: Vec<Rq>,
    /// 0 async, 1 sync; oldest first.
    pub fifos: [Vec<usize>; 2],
    /// Latest first.
    pub at_head: Vec<usize>,
    pub last_sector: Sector,
    pub forward: bool,
    pub nbatched: u32,
    seq: u64,
    /// 0 async, 1 sync.
    pub fifo_expire: [Nanos; 2],
    pub fifo_batch: u32,
    pub rev_penalty: u32,
}

impl Vr {
    pub fn new(cap: usize) -> Self {
        Vr {
            rq: vec![Rq::default(); cap],
            fifos: Default::default(),
            at_head: Vec::new(),
            last_sector: 0,
            forward: true,
            nbatched: 0,
            seq: 0,
            fifo_expire: [5000 * NSEC_PER_MSEC, 500 * NSEC_PER_MSEC],
            fifo_batch: 1,
            rev_penalty: 1,
        }
    }

    /// Sets a tunable by its index in [`NAMES`] to a valid value.
    pub fn tune(&mut self, n: usize, v: u32) {
        let ns = u64::from(v) * NSEC_PER_MSEC;
        match n {
            0 => self.fifo_expire[1] = ns,
            1 => self.fifo_expire[0] = ns,
            2 => self.fifo_batch = v,
            _ => self.rev_penalty = v,
        }
    }

    fn key(&self, t: usize) -> (Sector, u64) {
        (self.rq[t].sector, self.rq[t].seq)
    }

    fn sorted(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.rq.len()).filter(|&t| self.rq[t].sorted)
    }

    pub fn insert(&mut self, t: usize, d: &RequestDesc, at_head: bool, now: Nanos) {
        if self.rq[t].queued() {
            return;
        }
        let r = &mut self.rq[t];
        r.sector = d.sector;
        r.op = Some(d.op);
        r.prio = d.prio;
        r.busy = true;
        if at_head {
            r.at_head = true;
            self.at_head.insert(0, t);
            return;
        }
        let q = usize::from(d.sync || d.op == Op::Read);
        r.sorted = true;
        r.seq = self.seq;
        self.seq += 1;
        if self.fifo_expire[q] != 0 {
            r.fifo_time = now.wrapping_add(self.fifo_expire[q]);
            r.fifo = Some(q);
            self.fifos[q].push(t);
        }
    }

    fn remove(&mut self, t: usize) {
        if let Some(q) = self.rq[t].fifo.take() {
            self.fifos[q].retain(|&x| x != t);
        }
        self.rq[t].sorted = false;
        if self.rq[t].at_head {
            self.rq[t].at_head = false;
            self.at_head.retain(|&x| x != t);
        }
    }

    /// The nearest request at or beyond the head and the nearest before.
    pub fn neighbours(&self) -> (Option<usize>, Option<usize>) {
        let next = self
            .sorted()
            .filter(|&t| self.rq[t].sector >= self.last_sector)
            .min_by_key(|&t| self.key(t));
        let prev = self
            .sorted()
            .filter(|&t| self.rq[t].sector < self.last_sector)
            .max_by_key(|&t| self.key(t));
        (next, prev)
    }

    fn cost(&self, d: u64, reversing: bool) -> u128 {
        let d = u128::from(d);
        if !reversing || d == 0 {
            d
        } else if self.rev_penalty == 0 {
            u128::MAX
        } else {
            d * u128::from(self.rev_penalty)
        }
    }

    pub fn dispatch(&mut self, now: Nanos) -> Option<usize> {
        if let Some(&t) = self.at_head.first() {
            self.remove(t);
            return Some(t);
        }
        let mut rq = None;
        if self.nbatched > self.fifo_batch {
            self.nbatched = 0;
            let exp = |q: usize| {
                self.fifos[q]
                    .first()
                    .copied()
                    .filter(|&t| time_after(now, self.rq[t].fifo_time))
            };
            rq = match (exp(1), exp(0)) {
                (Some(s), Some(a)) => {
                    if time_after(self.rq[a].fifo_time, self.rq[s].fifo_time) {
                        Some(s)
                    } else {
                        Some(a)
                    }
                }
                (s, a) => s.or(a),
            };
        }
        if rq.is_none() {
            rq = match self.neighbours() {
                (Some(n), Some(p)) => {
                    let nc = self.cost(self.rq[n].sector - self.last_sector, !self.forward);
                    let pc = self.cost(self.last_sector - self.rq[p].sector, self.forward);
                    Some(if nc <= pc { n } else { p })
                }
                (n, p) => n.or(p),
            };
        }
        let t = rq?;
        self.forward = self.rq[t].sector > self.last_sector;
        self.last_sector = self.rq[t].sector;
        self.nbatched = self.nbatched.saturating_add(1);
        self.remove(t);
        Some(t)
    }

    pub fn front_merge_candidate(&self, p: &MergeProbe) -> Option<usize> {
        if p.op == Op::Flush {
            return None;
        }
        let t = self
            .sorted()
            .filter(|&t| self.rq[t].sector == p.bio_end)
            .min_by_key(|&t| self.rq[t].seq)?;
        (self.rq[t].op == Some(p.op) && self.rq[t].prio == p.prio).then_some(t)
    }

    /// A front merge: `t` now starts at `sector` and enters the tree anew.
    pub fn front_merged(&mut self, t: usize, sector: Sector) {
        self.rq[t].sector = sector;
        if self.rq[t].sorted {
            self.rq[t].seq = self.seq;
            self.seq += 1;
        }
    }

    /// `vr_merged_requests()`: `n` merged into `i`.
    pub fn merged(&mut self, i: usize, n: usize) {
        if let (Some(qi), Some(qn)) = (self.rq[i].fifo, self.rq[n].fifo) {
            if time_after(self.rq[i].fifo_time, self.rq[n].fifo_time) {
                self.fifos[qi].retain(|&x| x != i);
                let at = self.fifos[qn].iter().position(|&x| x == n).unwrap();
                self.fifos[qn].insert(at + 1, i);
                self.rq[i].fifo = Some(qn);
                self.rq[i].fifo_time = self.rq[n].fifo_time;
            }
        }
        self.remove(n);
        self.rq[n].busy = false;
    }

    pub fn complete(&mut self, t: usize) {
        self.rq[t].busy = false;
    }

    pub fn queued(&self) -> usize {
        self.rq.iter().filter(|r| r.queued()).count()
    }
}
