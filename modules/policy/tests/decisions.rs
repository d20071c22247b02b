// SPDX-License-Identifier: GPL-2.0

//! Pins what the policies decide. A change meant to restructure or speed
//! up a policy without changing its behaviour must leave these digests as
//! they are; a change meant to alter decisions updates them, and says why.
//!
//! - The overhead trace (`benches/trace/mod.rs`, also run by
//!   `examples/overhead_trace.rs`): the BFQ-like policy in the guest's
//!   overhead benchmark, its end time and the digest of every dispatch.
//! - A churn for each policy: a fixed pseudo-random mix of every operation
//!   the block layer performs (inserts with many requests per queue and
//!   equal sectors, at-head inserts, completions, requeues, front, back
//!   and request merges, issuer exits, tunable writes, clock jumps past
//!   idle slices and FIFO deadlines), hashing every answer the policy
//!   gives on the way.

#[allow(dead_code)]
#[path = "../benches/trace/mod.rs"]
mod trace;

use ironlift_policy::bfq::{AfterCompletion, Bfq, IssuerSlot, ReqSlot};
use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, NSEC_PER_USEC,
};
use trace::Rng;

#[test]
fn overhead_trace_decisions_are_pinned() {
    let mut t = trace::InFlight::new();
    for _ in 0..1000 {
        t.step();
    }
    assert_eq!((t.now, t.digest), (60_480_000, 0x752a_72e4_8e4b_0a00));
    for _ in 1000..200_000 {
        t.step();
    }
    assert_eq!((t.now, t.digest), (8_020_480_000, 0xadc1_920a_44c0_0310));
}

/// FNV-1a over 64-bit values.
struct Digest(u64);

impl Digest {
    fn mix(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x0000_0100_0000_01b3);
    }

    fn dispatch(&mut self, d: Dispatch) {
        match d {
            Dispatch::Request(t) => self.mix(1 << 40 | t as u64),
            Dispatch::IdleUntil(t) => {
                self.mix(2 << 40);
                self.mix(t)
            }
            Dispatch::Empty => self.mix(3 << 40),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Life {
    Free,
    Queued,
    InFlight,
}

/// What the churn needs of a policy beyond [`Policy`].
trait Churned: Policy {
    fn check(&self) -> Result<(), &'static str>;
    /// Hashes the policy's own observable state.
    fn observe(&mut self, d: &mut Digest);
    fn exit(&mut self, issuer: usize, now: Nanos);
    fn tunable_write(&mut self, pick: u64) -> Result<(), ironlift_policy::TunableError>;
}

type B = Bfq<Vec<ReqSlot>, Vec<IssuerSlot>>;
type D = Deadline<Vec<Slot>>;

const BFQ_TUNABLES: &[(&str, &[&str])] = &[
    ("slice_idle", &["0", "8", "2"]),
    ("low_latency", &["0", "1"]),
    ("strict_guarantees", &["1", "0"]),
    ("back_seek_max", &["0", "16384"]),
    ("max_budget", &["0", "64", "4096"]),
    ("timeout_sync", &["10", "125"]),
    ("fifo_expire_sync", &["5", "125"]),
];

impl Churned for B {
    fn check(&self) -> Result<(), &'static str> {
        self.check_invariants()
    }

    fn observe(&mut self, d: &mut Digest) {
        d.mix(match self.after_completion() {
            AfterCompletion::Nothing => 0,
            AfterCompletion::RunNow => 1,
            AfterCompletion::RunAt(t) => t | 1 << 63,
        });
        d.mix(self.idling_until().unwrap_or(u64::MAX));
        d.mix(self.in_service().map_or(u64::MAX, |i| i as u64));
        d.mix(self.in_flight() as u64);
        d.mix(self.peak_rate());
        d.mix(self.max_budget());
        d.mix(self.hw_tag().map_or(2, u64::from));
        for i in 0..8 {
            let q = self.issuer_info(i);
            for v in [
                q.busy as u64,
                q.weight as u64,
                q.budget,
                q.service,
                q.max_budget,
                q.inject_limit as u64,
                q.short_think_time as u64 | (q.io_bound as u64) << 1 | (q.seeky as u64) << 2,
                q.in_large_burst as u64,
            ] {
                d.mix(v);
            }
        }
    }

    fn exit(&mut self, issuer: usize, now: Nanos) {
        self.issuer_exit(issuer, now);
    }

    fn tunable_write(&mut self, pick: u64) -> Result<(), ironlift_policy::TunableError> {
        let (name, values) = BFQ_TUNABLES[pick as usize % BFQ_TUNABLES.len()];
        self.set_tunable(name, values[(pick >> 8) as usize % values.len()])
    }
}

const DEADLINE_TUNABLES: &[(&str, &[&str])] = &[
    ("fifo_batch", &["1", "4", "16"]),
    ("writes_starved", &["0", "2"]),
    ("read_expire", &["1", "500"]),
    ("write_expire", &["3", "5000"]),
    ("front_merges", &["0", "1"]),
    ("prio_aging_expire", &["5", "10000"]),
];

impl Churned for D {
    fn check(&self) -> Result<(), &'static str> {
        self.check_invariants()
    }

    fn observe(&mut self, d: &mut Digest) {
        for class in [PrioClass::RealTime, PrioClass::BestEffort, PrioClass::Idle] {
            d.mix(self.level_queued(class) as u64);
            for op in [Op::Read, Op::Write] {
                d.mix(self.next_request(class, op).map_or(u64::MAX, |t| t as u64));
            }
        }
    }

    fn exit(&mut self, _issuer: usize, _now: Nanos) {}

    fn tunable_write(&mut self, pick: u64) -> Result<(), ironlift_policy::TunableError> {
        let (name, values) = DEADLINE_TUNABLES[pick as usize % DEADLINE_TUNABLES.len()];
        self.set_tunable(name, values[(pick >> 8) as usize % values.len()])
    }
}

/// Runs `steps` pseudo-random operations on `p` (whose capacity is
/// `tags`) and returns the digest of every answer. `light`: a third of the
/// inserts, so that queues hold a few requests rather than all the tags.
fn churn<P: Churned>(p: &mut P, tags: usize, seed: u64, steps: usize, light: bool) -> u64 {
    let mut rng = Rng(seed);
    let mut d = Digest(0xcbf2_9ce4_8422_2325);
    let mut life = vec![Life::Free; tags];
    let mut descs = vec![RequestDesc::default(); tags];
    let mut now: Nanos = 1;
    let pick = |rng: &mut Rng, life: &[Life], want: Life| -> Option<usize> {
        let start = rng.next() as usize % life.len();
        (0..life.len())
            .map(|i| (start + i) % life.len())
            .find(|&i| life[i] == want)
    };
    for step in 0..steps {
        let r = rng.next();
        match r % 100 {
            0..=29 if light && !r.is_multiple_of(3) => {}
            0..=29 => {
                let Some(tag) = pick(&mut rng, &life, Life::Free) else {
                    continue;
                };
                let x = rng.next();
                let desc = RequestDesc {
                    // Few distinct sectors, so that requests share them.
                    sector: (x % 48) * 8,
                    sectors: 8 * (1 + (x >> 8) as u32 % 4),
                    op: [Op::Read, Op::Read, Op::Write, Op::Discard][(x >> 12) as usize % 4],
                    sync: !(x >> 14).is_multiple_of(4),
                    prio: IoPrio {
                        class: [
                            PrioClass::BestEffort,
                            PrioClass::BestEffort,
                            PrioClass::RealTime,
                            PrioClass::Idle,
                        ][(x >> 16) as usize % 4],
                        level: [4, 4, 0, 7][(x >> 18) as usize % 4],
                    },
                    issuer: (x >> 20) as usize % 7,
                    arrival: now,
                };
                let at_head = (x >> 24).is_multiple_of(20);
                descs[tag] = desc;
                life[tag] = Life::Queued;
                p.insert(tag, &desc, at_head, now);
            }
            30..=54 => {
                let got = p.dispatch(now);
                if let Dispatch::Request(t) = got {
                    life[t] = Life::InFlight;
                }
                d.dispatch(got);
            }
            55..=74 => {
                if let Some(tag) = pick(&mut rng, &life, Life::InFlight) {
                    life[tag] = Life::Free;
                    p.completed(tag, now);
                }
            }
            75..=77 => {
                if let Some(tag) = pick(&mut rng, &life, Life::InFlight) {
                    p.requeued(tag, now);
                    life[tag] = Life::Queued;
                    p.insert(tag, &descs[tag], true, now);
                }
            }
            78..=80 => {
                if let Some(tag) = pick(&mut rng, &life, Life::Queued) {
                    let r = descs[tag];
                    let probe = MergeProbe {
                        bio_end: r.sector,
                        op: r.op,
                        prio: r.prio,
                    };
                    let found = p.front_merge_candidate(&probe);
                    d.mix(found.map_or(u64::MAX, |t| t as u64));
                    if let Some(t) = found {
                        let r = &mut descs[t];
                        r.sector = r.sector.saturating_sub(8);
                        r.sectors += 8;
                        p.front_merged(t, r.sector, r.sectors);
                    }
                }
            }
            81..=82 => {
                if let Some(tag) = pick(&mut rng, &life, Life::Queued) {
                    descs[tag].sectors += 8;
                    p.back_merged(tag, descs[tag].sectors);
                }
            }
            83..=85 => {
                // Two queued requests of one issuer, operation and
                // priority, as the block layer merges them.
                let Some(a) = pick(&mut rng, &life, Life::Queued) else {
                    continue;
                };
                let (ra, start) = (descs[a], rng.next() as usize);
                let b = (0..tags).map(|i| (start + i) % tags).find(|&b| {
                    let rb = &descs[b];
                    b != a
                        && life[b] == Life::Queued
                        && (rb.issuer, rb.op, rb.prio, rb.sync)
                            == (ra.issuer, ra.op, ra.prio, ra.sync)
                });
                if let Some(b) = b {
                    let rb = descs[b];
                    let s = ra.sector.min(rb.sector);
                    let e = (ra.sector + ra.sectors as u64).max(rb.sector + rb.sectors as u64);
                    descs[a].sector = s;
                    descs[a].sectors = (e - s) as u32;
                    life[b] = Life::Free;
                    p.requests_merged(a, b);
                }
            }
            86..=93 => now += rng.next() % (3 * 1000 * NSEC_PER_USEC),
            94..=95 => now += rng.next() % (400 * 1000 * NSEC_PER_USEC),
            96..=97 => p.exit(rng.next() as usize % 7, now),
            _ => d.mix(p.tunable_write(rng.next()).is_ok() as u64),
        }
        d.mix(p.queued() as u64 | (p.has_work() as u64) << 32);
        d.mix(p.async_depth_limit(Op::Write, false).unwrap_or(0) as u64);
        p.observe(&mut d);
        if step % 16 == 0 {
            p.check().unwrap();
        }
    }
    d.0
}

fn bfq(nonrot: bool) -> B {
    let mut b = Bfq::new(vec![ReqSlot::default(); 48], vec![IssuerSlot::default(); 8]).unwrap();
    b.set_nonrotational(nonrot);
    b
}

#[test]
fn bfq_churn_decisions_are_pinned() {
    let got = [
        churn(&mut bfq(false), 48, 1, 40_000, false),
        churn(&mut bfq(true), 48, 2, 40_000, false),
        churn(&mut bfq(false), 48, 3, 40_000, true),
        churn(&mut bfq(true), 48, 4, 40_000, true),
    ];
    assert_eq!(
        got,
        [
            0x2354_8b89_6156_8d81,
            0x9268_7bc8_f775_5996,
            0x9a9a_8cff_5d54_baed,
            0xab81_a30d_e355_b340,
        ],
        "{got:#018x?}"
    );
}

fn deadline() -> D {
    Deadline::new(vec![Slot::default(); 48]).unwrap()
}

#[test]
fn deadline_churn_decisions_are_pinned() {
    let got = [
        churn(&mut deadline(), 48, 1, 40_000, false),
        churn(&mut deadline(), 48, 2, 40_000, true),
    ];
    assert_eq!(
        got,
        [0xb038_cc8f_46d5_1491, 0x1ce8_5e47_bc0b_b36a,],
        "{got:#018x?}"
    );
}
