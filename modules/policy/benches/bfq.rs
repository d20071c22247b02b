// SPDX-License-Identifier: GPL-2.0

//! Cost of one request's trip through the BFQ-like policy (insert,
//! dispatch, completion) at a steady number of queued requests (1, 32,
//! 256), spread over 1, 8 or 64 issuers, at random sectors (two sync
//! reads for every async write, all best effort, weight raising on).
//! When the policy idles, the clock jumps to the wake-up time and the
//! dispatch is retried, and that cost counts too. Goal: at most 300 ns
//! per request with 64 issuers. `turns_*` and `turns_2_in_flight_60` are
//! the guest's overhead benchmark (fio randread, 2 jobs, null_blk); the
//! latter keeps 60 requests on the device, as there (`trace/mod.rs`),
//! and is the one to count instructions on: `examples/overhead_trace.rs`
//! runs it alone, for callgrind (about 1,470 instructions per request;
//! about 450 for the deadline policy).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ironlift_policy::bfq::{Bfq, IssuerSlot, ReqSlot};
use ironlift_policy::{Dispatch, Nanos, Op, Policy, RequestDesc, NSEC_PER_USEC};

mod trace;

use trace::{InFlight, Rng};

/// The steady-state workload: `depth` requests always queued.
struct Workload {
    b: Bfq<Vec<ReqSlot>, Vec<IssuerSlot>>,
    rng: Rng,
    issuers: usize,
    /// Issuers take turns, each sending sync reads only (fio randread,
    /// `numjobs` issuers, on a device that completes at once), instead of
    /// a random mix.
    turns: bool,
    next_issuer: usize,
    free: Vec<usize>,
    now: Nanos,
}

impl Workload {
    fn new(depth: usize, issuers: usize) -> Self {
        Self::with(depth, issuers, false)
    }

    fn with(depth: usize, issuers: usize, turns: bool) -> Self {
        let capacity = depth + 1;
        let mut w = Workload {
            b: Bfq::new(
                vec![ReqSlot::default(); capacity],
                vec![IssuerSlot::default(); issuers],
            )
            .unwrap(),
            rng: Rng(0x1234_5678_9ABC_DEF1),
            issuers,
            turns,
            next_issuer: 0,
            free: (0..capacity).rev().collect(),
            now: 0,
        };
        for _ in 0..depth {
            w.insert();
        }
        for _ in 0..8 * capacity {
            w.step();
        }
        w
    }

    fn insert(&mut self) {
        let tag = self.free.pop().expect("a free tag");
        let r = self.rng.next();
        let op = if r % 3 == 2 && !self.turns {
            Op::Write
        } else {
            Op::Read
        };
        let issuer = if self.turns {
            self.next_issuer = (self.next_issuer + 1) % self.issuers;
            self.next_issuer
        } else {
            (r >> 40) as usize % self.issuers
        };
        let desc = RequestDesc {
            sector: (r >> 8) % (1 << 31),
            sectors: 8,
            op,
            sync: op.is_read(),
            issuer,
            arrival: self.now,
            ..RequestDesc::default()
        };
        self.b.insert(tag, &desc, false, self.now);
    }

    /// One request in, one out and completed.
    fn step(&mut self) {
        self.now += 10 * NSEC_PER_USEC;
        self.insert();
        loop {
            match self.b.dispatch(self.now) {
                Dispatch::Request(tag) => {
                    self.b.completed(black_box(tag), self.now);
                    self.free.push(tag);
                    return;
                }
                Dispatch::IdleUntil(t) => self.now = t.max(self.now + 1),
                Dispatch::Empty => panic!("work was queued"),
            }
        }
    }
}

fn per_request(c: &mut Criterion) {
    let mut g = c.benchmark_group("bfq_insert_dispatch_complete");
    g.throughput(Throughput::Elements(1));
    for issuers in [1usize, 8, 64] {
        for depth in [1usize, 32, 256] {
            let mut w = Workload::new(depth, issuers);
            g.bench_with_input(
                BenchmarkId::new(format!("issuers_{issuers}"), depth),
                &depth,
                |bch, _| bch.iter(|| w.step()),
            );
        }
    }
    // The guest's overhead benchmark (fio randread, 2 jobs, on null_blk):
    // every request finds its issuer's queue empty, and the other issuer's
    // queue in service.
    for issuers in [2usize, 8] {
        let mut w = Workload::with(0, issuers, true);
        g.bench_with_input(
            BenchmarkId::new(format!("turns_{issuers}"), 0),
            &0,
            |bch, _| bch.iter(|| w.step()),
        );
    }
    let mut w = InFlight::new();
    g.bench_with_input(BenchmarkId::new("turns_2_in_flight_60", 0), &0, |bch, _| {
        bch.iter(|| w.step())
    });
    g.finish();
}

criterion_group!(benches, per_request);
criterion_main!(benches);
