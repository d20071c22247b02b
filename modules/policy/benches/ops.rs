// SPDX-License-Identifier: GPL-2.0

//! Cost of each policy operation on its own, for every policy: `insert`,
//! `dispatch`, `completed` and the merge lookup (`front_merge_candidate`),
//! so that a change that makes one operation of one policy dearer shows
//! without booting a guest (the guest's `qemu-bench --count-insns` judges
//! the whole module).
//!
//! Each policy holds 32 requests queued from 8 issuers (two sync reads
//! for every async write, random sectors, best effort). A cycle inserts
//! 32 more, dispatches 32 (fewer where the policy limits what it has in
//! flight) and completes them, so the state is the same at the start of
//! every cycle; each benchmark times one phase of the
//! cycle (its inputs made before the clock starts) and reports the time
//! per operation. When a policy idles, the clock jumps to the wake-up
//! time and the dispatch is retried, within the dispatch's time.
//!
//! `cargo bench -p ironlift-policy --bench ops -- <policy>/<op>` runs
//! one; criterion's report says whether it moved since the last run.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ironlift_policy::anticipatory::{Anticipatory, ContextSlot, Slot as AsSlot};
use ironlift_policy::bfq::{Bfq, IssuerSlot, ReqSlot};
use ironlift_policy::cfq::{self, Cfq, QueueSlot};
use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::noop::{self, Noop};
use ironlift_policy::sio::{self, Sio};
use ironlift_policy::vr::{self, Vr};
use ironlift_policy::{Dispatch, MergeProbe, Nanos, Op, Policy, RequestDesc, NSEC_PER_USEC};
use std::time::{Duration, Instant};

mod rng;

use rng::Rng;

/// Requests queued between cycles, and the requests a cycle moves.
const DEPTH: usize = 32;
const BATCH: usize = 32;
const ISSUERS: usize = 8;
/// Scheduler tags: room for the queued requests and one cycle's.
const TAGS: usize = DEPTH + BATCH;

type CfqVec = Cfq<Vec<cfq::ReqSlot>, Vec<QueueSlot>>;

/// The operations a benchmark times.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Insert,
    Dispatch,
    Complete,
    MergeLookup,
}

impl Phase {
    const ALL: [Phase; 4] = [
        Phase::Insert,
        Phase::Dispatch,
        Phase::Complete,
        Phase::MergeLookup,
    ];

    fn name(self) -> &'static str {
        match self {
            Phase::Insert => "insert",
            Phase::Dispatch => "dispatch",
            Phase::Complete => "completed",
            Phase::MergeLookup => "merge_lookup",
        }
    }
}

/// A policy at its steady state, and what the cycle needs.
struct Steady<P> {
    p: P,
    rng: Rng,
    free: Vec<usize>,
    dispatched: Vec<usize>,
    descs: Vec<RequestDesc>,
    probes: Vec<MergeProbe>,
    now: Nanos,
}

impl<P: Policy> Steady<P> {
    fn new(p: P) -> Self {
        let mut s = Steady {
            p,
            rng: Rng(0x1234_5678_9ABC_DEF1),
            free: (0..TAGS).rev().collect(),
            dispatched: Vec::with_capacity(BATCH),
            descs: Vec::with_capacity(BATCH),
            probes: Vec::with_capacity(BATCH),
            now: 0,
        };
        s.make_inputs(DEPTH);
        for i in 0..DEPTH {
            let tag = s.free.pop().expect("a free tag");
            let d = s.descs[i];
            s.p.insert(tag, &d, false, s.now);
        }
        for _ in 0..16 {
            s.cycle(None);
        }
        s
    }

    fn make_inputs(&mut self, n: usize) {
        self.descs.clear();
        self.probes.clear();
        for _ in 0..n {
            self.now += 10 * NSEC_PER_USEC;
            let r = self.rng.next();
            let op = if r % 3 == 2 { Op::Write } else { Op::Read };
            let desc = RequestDesc {
                sector: (r >> 8) % (1 << 31),
                sectors: 8,
                op,
                sync: op.is_read(),
                issuer: (r >> 40) as usize % ISSUERS,
                arrival: self.now,
                ..RequestDesc::default()
            };
            self.descs.push(desc);
            self.probes.push(MergeProbe {
                bio_end: desc.sector,
                op,
                prio: desc.prio,
            });
        }
    }

    /// One cycle; the time of `timed`'s phase, scaled to [`BATCH`]
    /// operations (a policy that limits what it has in flight, as CFQ's
    /// `quantum` does, dispatches fewer in a cycle, and as many fewer are
    /// inserted in the next, for want of free tags).
    fn cycle(&mut self, timed: Option<Phase>) -> Duration {
        let mut spent = Duration::ZERO;
        let mut ops = BATCH;
        let mut time = |phase: Phase, f: &mut dyn FnMut()| {
            if timed == Some(phase) {
                let t = Instant::now();
                f();
                spent += t.elapsed();
            } else {
                f();
            }
        };
        self.make_inputs(BATCH);
        let (p, descs, probes, free) = (&mut self.p, &self.descs, &self.probes, &mut self.free);
        time(Phase::MergeLookup, &mut || {
            for probe in probes {
                black_box(p.front_merge_candidate(probe));
            }
        });
        let now = self.now;
        let inserts = BATCH.min(free.len());
        time(Phase::Insert, &mut || {
            for d in &descs[..inserts] {
                let tag = free.pop().expect("a free tag");
                p.insert(tag, d, false, now);
            }
        });
        let (dispatched, clock) = (&mut self.dispatched, &mut self.now);
        time(Phase::Dispatch, &mut || {
            while dispatched.len() < BATCH {
                match p.dispatch(*clock) {
                    Dispatch::Request(tag) => dispatched.push(tag),
                    Dispatch::IdleUntil(t) => *clock = t.max(*clock + 1),
                    Dispatch::Empty => break,
                }
            }
        });
        let now = self.now;
        time(Phase::Complete, &mut || {
            for &tag in dispatched.iter() {
                p.completed(tag, now);
            }
        });
        match timed {
            Some(Phase::Insert) => ops = inserts,
            Some(Phase::Dispatch | Phase::Complete) => ops = self.dispatched.len(),
            _ => {}
        }
        self.free.append(&mut self.dispatched);
        spent.mul_f64(BATCH as f64 / ops.max(1) as f64)
    }
}

fn bench_policy<P: Policy>(c: &mut Criterion, name: &str, make: impl Fn() -> P) {
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(BATCH as u64));
    for phase in Phase::ALL {
        let mut s = Steady::new(make());
        g.bench_function(BenchmarkId::from_parameter(phase.name()), |b| {
            b.iter_custom(|cycles| (0..cycles).map(|_| s.cycle(Some(phase))).sum())
        });
    }
    g.finish();
}

fn every_policy(c: &mut Criterion) {
    bench_policy(c, "deadline", || {
        let mut d = Deadline::new(vec![Slot::default(); TAGS]).unwrap();
        d.depth_updated(TAGS as u32);
        d
    });
    bench_policy(c, "bfq", || {
        let mut b = Bfq::new(
            vec![ReqSlot::default(); TAGS],
            vec![IssuerSlot::default(); ISSUERS + 1],
        )
        .unwrap();
        b.set_nonrotational(true);
        b.set_device_depth(64);
        b
    });
    bench_policy(c, "cfq", || {
        let mut q = Cfq::new(
            vec![cfq::ReqSlot::default(); TAGS],
            vec![QueueSlot::default(); CfqVec::queue_slots(ISSUERS + 1)],
        )
        .unwrap();
        q.set_nonrotational(true);
        q
    });
    bench_policy(c, "anticipatory", || {
        Anticipatory::new(
            vec![AsSlot::default(); TAGS],
            vec![ContextSlot::default(); ISSUERS + 1],
        )
        .unwrap()
    });
    bench_policy(c, "noop", || {
        Noop::new(vec![noop::Slot::default(); TAGS]).unwrap()
    });
    bench_policy(c, "sio", || {
        Sio::new(vec![sio::Slot::default(); TAGS]).unwrap()
    });
    bench_policy(c, "vr", || {
        Vr::new(vec![vr::Slot::default(); TAGS]).unwrap()
    });
}

criterion_group!(benches, every_policy);
criterion_main!(benches);
