// SPDX-License-Identifier: GPL-2.0

//! A literal, slow port of SIO's C (`sio-iosched.c` 0.2), with plain
//! vectors for the FIFOs, to check the policy decision by decision.
//! Shared by the property tests and the fuzz target (which include this
//! file with `#[path]`).

use ironlift_policy::{Nanos, Op, RequestDesc, NSEC_PER_MSEC};

/// `time_after()`, with wrap-around.
pub fn time_after(a: Nanos, b: Nanos) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

/// The FIFO of a sync flag (C: ASYNC 0, SYNC 1) and direction.
pub fn fifo_of(sync: bool, dir: usize) -> usize {
    usize::from(sync) * 2 + dir
}

/// The tunables' names, in sysfs order.
pub const NAMES: [&str; 6] = [
    "sync_read_expire",
    "sync_write_expire",
    "async_read_expire",
    "async_write_expire",
    "fifo_batch",
    "writes_starved",
];

#[derive(Clone, Copy, Default, Debug)]
pub struct Rq {
    pub fifo_time: Nanos,
    pub write: bool,
    /// The FIFO it sits on, if queued and not at head.
    pub fifo: Option<usize>,
    pub at_head: bool,
    /// Inserted and not completed or merged away.
    pub busy: bool,
}

impl Rq {
    pub fn queued(&self) -> bool {
        self.fifo.is_some() || self.at_head
    }
}

pub struct Sio {
    pub rq: Vec<Rq>,
    /// By `fifo_of`, oldest first.
    pub fifos: [Vec<usize>; 4],
    /// Latest first.
    pub at_head: Vec<usize>,
    pub batched: u32,
    pub starved: u32,
    /// By `fifo_of`.
    pub fifo_expire: [Nanos; 4],
    pub fifo_batch: u32,
    pub writes_starved: u32,
}

impl Sio {
    pub fn new(cap: usize) -> Self {
        let ms = |v: u64| v * NSEC_PER_MSEC;
        Sio {
            rq: vec![Rq::default(); cap],
            fifos: Default::default(),
            at_head: Vec::new(),
            batched: 0,
            starved: 0,
            // async read, async write, sync read, sync write.
            fifo_expire: [ms(4000), ms(16000), ms(500), ms(2000)],
            fifo_batch: 8,
            writes_starved: 0,
        }
    }

    /// Sets a tunable by its index in [`NAMES`] to a valid value.
    pub fn tune(&mut self, n: usize, v: u32) {
        let ns = u64::from(v) * NSEC_PER_MSEC;
        match n {
            0 => self.fifo_expire[fifo_of(true, 0)] = ns,
            1 => self.fifo_expire[fifo_of(true, 1)] = ns,
            2 => self.fifo_expire[fifo_of(false, 0)] = ns,
            3 => self.fifo_expire[fifo_of(false, 1)] = ns,
            4 => self.fifo_batch = v,
            _ => self.writes_starved = v,
        }
    }

    /// `sio_add_request()`, or the front of the dispatch list at head.
    pub fn insert(&mut self, t: usize, d: &RequestDesc, at_head: bool, now: Nanos) {
        if self.rq[t].queued() {
            return;
        }
        let dir = d.op.dir();
        self.rq[t].write = dir == 1;
        self.rq[t].busy = true;
        if at_head {
            self.rq[t].at_head = true;
            self.at_head.insert(0, t);
        } else {
            let q = fifo_of(d.sync || d.op == Op::Read, dir);
            self.rq[t].fifo_time = now.wrapping_add(self.fifo_expire[q]);
            self.rq[t].fifo = Some(q);
            self.fifos[q].push(t);
        }
    }

    fn remove(&mut self, t: usize) {
        if let Some(q) = self.rq[t].fifo.take() {
            self.fifos[q].retain(|&x| x != t);
        }
        if self.rq[t].at_head {
            self.rq[t].at_head = false;
            self.at_head.retain(|&x| x != t);
        }
    }

    /// `sio_dispatch_requests()`, after the dispatch list.
    pub fn dispatch(&mut self, now: Nanos) -> Option<usize> {
        if let Some(&t) = self.at_head.first() {
            self.remove(t);
            return Some(t);
        }
        let mut rq = None;
        if self.batched > self.fifo_batch {
            self.batched = 0;
            // async write, async read, sync write, sync read.
            for q in [
                fifo_of(false, 1),
                fifo_of(false, 0),
                fifo_of(true, 1),
                fifo_of(true, 0),
            ] {
                if let Some(&t) = self.fifos[q].first() {
                    if time_after(now, self.rq[t].fifo_time) {
                        rq = Some(t);
                        break;
                    }
                }
            }
        }
        if rq.is_none() {
            let dir = usize::from(self.starved > self.writes_starved);
            let order = [
                fifo_of(true, dir),
                fifo_of(false, dir),
                fifo_of(true, dir ^ 1),
                fifo_of(false, dir ^ 1),
            ];
            rq = order.iter().find_map(|&q| self.fifos[q].first().copied());
        }
        let t = rq?;
        self.remove(t);
        self.batched = self.batched.saturating_add(1);
        if self.rq[t].write {
            self.starved = 0;
        } else {
            self.starved = self.starved.saturating_add(1);
        }
        Some(t)
    }

    /// `sio_merged_requests()`: `n` merged into `i`.
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
