// SPDX-License-Identifier: GPL-2.0

//! Cost of one request's trip through the mq-deadline policy (insert,
//! dispatch, completion) at a steady queue depth, with requests from a
//! number of issuers at random sectors (two reads for every write, all
//! best effort). Goal: at most 100 ns per request at depth 256.
//!
//! Criterion measures wall-clock time, which a busy machine inflates. With
//! `DEADLINE_BENCH_ONCPU=1` the bench instead prints the thread's on-CPU
//! time per request (from `/proc/thread-self/schedstat`) over long runs,
//! best of three, for the same cases.

use criterion::{black_box, criterion_group, BenchmarkId, Criterion, Throughput};
use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::{Dispatch, Nanos, Op, Policy, RequestDesc, NSEC_PER_USEC};

mod rng;

use rng::Rng;

/// The steady-state workload: `depth` requests always queued.
struct Workload {
    dd: Deadline<Vec<Slot>>,
    rng: Rng,
    issuers: usize,
    next_issuer: usize,
    free: Vec<usize>,
    now: Nanos,
}

impl Workload {
    fn new(depth: usize, issuers: usize) -> Self {
        let capacity = depth + 1;
        let mut w = Workload {
            dd: Deadline::new(vec![Slot::default(); capacity]).unwrap(),
            rng: Rng(0x1234_5678_9ABC_DEF1),
            issuers,
            next_issuer: 0,
            free: (0..capacity).rev().collect(),
            now: 0,
        };
        for _ in 0..depth {
            w.insert();
        }
        // Warm the batching state up.
        for _ in 0..4 * capacity {
            w.step();
        }
        w
    }

    fn insert(&mut self) {
        let tag = self.free.pop().expect("a free tag");
        let r = self.rng.next();
        let op = if r % 3 == 2 { Op::Write } else { Op::Read };
        let desc = RequestDesc {
            sector: (r >> 8) % (1 << 31),
            sectors: 8,
            op,
            sync: op.is_read(),
            issuer: self.next_issuer,
            arrival: self.now,
            ..RequestDesc::default()
        };
        self.next_issuer = (self.next_issuer + 1) % self.issuers;
        self.dd.insert(tag, &desc, false, self.now);
    }

    /// One request in, one out and completed.
    fn step(&mut self) {
        self.now += 10 * NSEC_PER_USEC;
        self.insert();
        match self.dd.dispatch(self.now) {
            Dispatch::Request(tag) => {
                self.dd.completed(black_box(tag), self.now);
                self.free.push(tag);
            }
            other => panic!("steady state broken: {other:?}"),
        }
    }
}

fn insert_dispatch_complete(c: &mut Criterion) {
    let mut group = c.benchmark_group("deadline_request");
    group.throughput(Throughput::Elements(1));
    for depth in [1, 32, 256] {
        for issuers in [1, 8, 64] {
            let mut w = Workload::new(depth, issuers);
            group.bench_function(
                BenchmarkId::new(format!("depth{depth}"), format!("issuers{issuers}")),
                |b| b.iter(|| w.step()),
            );
        }
    }
    group.finish();
}

/// Nanoseconds this thread has spent on a CPU, if the kernel tells.
fn on_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    stat.split_whitespace().next()?.parse().ok()
}

fn on_cpu_report() {
    const STEPS: u32 = 2_000_000;
    if on_cpu_ns().is_none() {
        eprintln!("no /proc/thread-self/schedstat: on-CPU times unavailable");
        return;
    }
    for depth in [1, 32, 256] {
        for issuers in [1, 8, 64] {
            let mut w = Workload::new(depth, issuers);
            let best = (0..3)
                .filter_map(|_| {
                    let start = on_cpu_ns()?;
                    for _ in 0..STEPS {
                        w.step();
                    }
                    Some(on_cpu_ns()?.saturating_sub(start))
                })
                .min()
                .unwrap_or(0);
            println!(
                "deadline_request/depth{depth}/issuers{issuers}: {:.1} ns per request on-CPU",
                best as f64 / f64::from(STEPS)
            );
        }
    }
}

criterion_group!(benches, insert_dispatch_complete);

fn main() {
    if std::env::var_os("DEADLINE_BENCH_ONCPU").is_some() {
        on_cpu_report();
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
