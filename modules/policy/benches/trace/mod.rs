// SPDX-License-Identifier: GPL-2.0

//! The guest's overhead benchmark as a trace for the BFQ-like policy,
//! shared by `benches/bfq.rs` (its `turns_2_in_flight_60` case) and
//! `examples/overhead_trace.rs` (instruction counts under callgrind, and
//! the digest that shows a change kept the policy's decisions).

use ironlift_policy::bfq::{Bfq, IssuerSlot, ReqSlot};
use ironlift_policy::{Dispatch, Nanos, Op, Policy, RequestDesc, NSEC_PER_USEC};
use std::collections::VecDeque;
use std::hint::black_box;

#[path = "../rng/mod.rs"]
mod rng;

pub use rng::Rng;

/// The guest's overhead benchmark as rust-bfq sees it (fio randread, 2
/// jobs x iodepth 32, on null_blk): the issuers take turns, each request is
/// dispatched as soon as it is inserted, and completions come back in order
/// with `IN_FLIGHT` requests on the device, so the queue in service still
/// has requests in flight when the other issuer's request arrives. Set up
/// as rust-bfq's `init_sched` does for null_blk (non-rotational, depth 64,
/// 512 issuer slots).
pub struct InFlight {
    b: Bfq<Vec<ReqSlot>, Vec<IssuerSlot>>,
    free: Vec<usize>,
    in_flight: VecDeque<usize>,
    rng: Rng,
    issuer: usize,
    pub now: Nanos,
    /// A hash of every dispatch decision (tags and idle deadlines), to
    /// check that a change of the policy's code left its decisions alone.
    pub digest: u64,
}

impl InFlight {
    const IN_FLIGHT: usize = 60;

    pub fn new() -> Self {
        let capacity = 128;
        let mut b = Bfq::new(
            vec![ReqSlot::default(); capacity],
            vec![IssuerSlot::default(); 512],
        )
        .unwrap();
        b.set_nonrotational(true);
        b.set_device_depth(64);
        let mut w = InFlight {
            b,
            free: (0..capacity).rev().collect(),
            in_flight: VecDeque::new(),
            rng: Rng(0x1234_5678_9ABC_DEF1),
            issuer: 0,
            now: 0,
            digest: 0,
        };
        for _ in 0..4 * capacity {
            w.step();
        }
        w
    }

    /// One completion (once the device is full), one request in and out.
    pub fn step(&mut self) {
        self.now += 40 * NSEC_PER_USEC;
        if self.in_flight.len() >= Self::IN_FLIGHT {
            let tag = self.in_flight.pop_front().expect("in flight");
            self.b.completed(black_box(tag), self.now);
            self.free.push(tag);
        }
        self.issuer ^= 1;
        let desc = RequestDesc {
            sector: (self.rng.next() >> 8) % (1 << 31),
            sectors: 8,
            op: Op::Read,
            sync: true,
            issuer: self.issuer,
            arrival: self.now,
            ..RequestDesc::default()
        };
        let tag = self.free.pop().expect("a free tag");
        self.b.insert(tag, &desc, false, self.now);
        loop {
            match self.b.dispatch(self.now) {
                Dispatch::Request(tag) => {
                    self.mix(tag as u64);
                    self.in_flight.push_back(tag)
                }
                // Idling for a queue with requests in flight: the next
                // completion or insertion runs the queue again.
                Dispatch::IdleUntil(t) if self.in_flight.is_empty() => {
                    self.now = t.max(self.now + 1)
                }
                Dispatch::IdleUntil(t) => {
                    self.mix(t);
                    return;
                }
                Dispatch::Empty => return,
            }
        }
    }

    fn mix(&mut self, v: u64) {
        // FNV-1a over 64-bit values.
        self.digest = (self.digest ^ v).wrapping_mul(0x0000_0100_0000_01b3);
    }
}
