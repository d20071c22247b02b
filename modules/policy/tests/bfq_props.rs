// SPDX-License-Identifier: GPL-2.0

//! Property tests for the BFQ-like policy: random operation sequences
//! against a model of the request life cycle, and long runs on a small
//! simulated device for fairness, weights and latency.

use ironlift_policy::bfq::{Bfq, IssuerSlot, ReqSlot};
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, NSEC_PER_MSEC,
    NSEC_PER_USEC,
};
use proptest::prelude::*;
use std::collections::VecDeque;

type B = Bfq<Vec<ReqSlot>, Vec<IssuerSlot>>;

const MS: Nanos = NSEC_PER_MSEC;
const US: Nanos = NSEC_PER_USEC;

fn bfq(n: usize, m: usize) -> B {
    Bfq::new(vec![ReqSlot::default(); n], vec![IssuerSlot::default(); m]).unwrap()
}

// ---------------------------------------------------------------------------
// Random operation sequences against a life-cycle model.

#[derive(Clone, Debug)]
enum OpKind {
    Insert {
        issuer: usize,
        sector: u64,
        sectors: u32,
        sync: bool,
        class: u8,
        level: u8,
        at_head: bool,
    },
    Dispatch,
    Complete(usize),
    Requeue(usize),
    Advance(Nanos),
    FrontMerge(usize),
    BackMerge(usize),
    Merge(usize, usize),
    Exit(usize),
    Tunable(usize, u32),
    BadTag(usize),
}

fn op_strategy() -> impl Strategy<Value = OpKind> {
    prop_oneof![
        6 => (0usize..7, 0u64..512, 1u32..64, any::<bool>(), 0u8..3, 0u8..9, prop::bool::weighted(0.05))
            .prop_map(|(issuer, s, sectors, sync, class, level, at_head)| OpKind::Insert {
                issuer,
                sector: s * 8,
                sectors,
                sync,
                class,
                level,
                at_head,
            }),
        6 => Just(OpKind::Dispatch),
        4 => any::<usize>().prop_map(OpKind::Complete),
        1 => any::<usize>().prop_map(OpKind::Requeue),
        3 => prop_oneof![0u64..2 * MS, 0u64..300 * MS].prop_map(OpKind::Advance),
        1 => any::<usize>().prop_map(OpKind::FrontMerge),
        1 => any::<usize>().prop_map(OpKind::BackMerge),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| OpKind::Merge(a, b)),
        1 => (0usize..7).prop_map(OpKind::Exit),
        1 => (0usize..10, 0u32..300).prop_map(|(a, b)| OpKind::Tunable(a, b)),
        1 => any::<usize>().prop_map(OpKind::BadTag),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum M {
    Free,
    Queued,
    InFlight,
}

/// The four depth limits, as rust-bfq reads them.
fn depth_limits(b: &B) -> [Option<u32>; 4] {
    let mut l = [None; 4];
    for (i, (op, sync)) in [
        (Op::Read, false),
        (Op::Read, true),
        (Op::Write, false),
        (Op::Write, true),
    ]
    .into_iter()
    .enumerate()
    {
        l[i] = b.async_depth_limit(op, sync);
    }
    l
}

/// Runs `ops` against a scheduler with `n` tags and `m` issuers on a
/// rotational or non-rotational device, checking the life-cycle
/// invariants (and, through `check_invariants`, the weight and class
/// counts behind the idling decisions) after every step, then drains it.
fn run_ops(n: usize, m: usize, nonrot: bool, ops: &[OpKind]) -> Result<(), TestCaseError> {
    let mut b = bfq(n, m);
    b.set_nonrotational(nonrot);
    let mut model = vec![M::Free; n];
    let mut descs = vec![RequestDesc::default(); n];
    let mut now: Nanos = 0;
    let mut dispatched_count = vec![0u32; n];
    let mut inserted = 0u64;
    let mut gone = 0u64; // dispatched or merged away
    let mut limits_by_key = std::collections::HashMap::new();
    let names = b.tunables();
    for op in ops {
        match op {
            OpKind::Insert {
                issuer,
                sector,
                sectors,
                sync,
                class,
                level,
                at_head,
            } => {
                if let Some(tag) = model.iter().position(|s| *s == M::Free) {
                    let class = match class {
                        0 => PrioClass::RealTime,
                        1 => PrioClass::BestEffort,
                        _ => PrioClass::Idle,
                    };
                    let d = RequestDesc {
                        sector: *sector,
                        sectors: *sectors,
                        op: if *sync { Op::Read } else { Op::Write },
                        sync: *sync,
                        prio: IoPrio {
                            class,
                            level: *level,
                        },
                        issuer: *issuer,
                        arrival: now,
                    };
                    b.insert(tag, &d, *at_head, now);
                    descs[tag] = d;
                    model[tag] = M::Queued;
                    dispatched_count[tag] = 0;
                    inserted += 1;
                }
            }
            OpKind::Dispatch => {
                let queued = model.iter().filter(|s| **s == M::Queued).count();
                match b.dispatch(now) {
                    Dispatch::Request(t) => {
                        prop_assert!(t < n, "tag {} out of range", t);
                        prop_assert_eq!(model[t], M::Queued, "dispatched a tag not queued");
                        model[t] = M::InFlight;
                        dispatched_count[t] += 1;
                        prop_assert_eq!(dispatched_count[t], 1);
                        gone += 1;
                    }
                    Dispatch::IdleUntil(t) => {
                        prop_assert!(queued > 0, "idling with nothing queued");
                        prop_assert!(t >= now);
                    }
                    Dispatch::Empty => {
                        let inflight = model.contains(&M::InFlight);
                        prop_assert!(queued == 0 || inflight, "stalled with work queued");
                    }
                }
                if queued == 0 {
                    prop_assert!(!b.has_work());
                }
            }
            OpKind::Complete(i) => {
                let inflight: Vec<_> = (0..n).filter(|t| model[*t] == M::InFlight).collect();
                if !inflight.is_empty() {
                    let t = inflight[i % inflight.len()];
                    b.completed(t, now);
                    model[t] = M::Free;
                }
            }
            OpKind::Requeue(i) => {
                let inflight: Vec<_> = (0..n).filter(|t| model[*t] == M::InFlight).collect();
                if !inflight.is_empty() {
                    let t = inflight[i % inflight.len()];
                    b.requeued(t, now);
                    b.insert(t, &descs[t], true, now);
                    model[t] = M::Queued;
                    dispatched_count[t] = 0;
                    gone -= 1;
                }
            }
            OpKind::Advance(dt) => now += dt,
            OpKind::FrontMerge(i) => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if !queued.is_empty() {
                    let t = queued[i % queued.len()];
                    let d = descs[t];
                    let probe = MergeProbe {
                        bio_end: d.sector,
                        op: d.op,
                        prio: d.prio,
                    };
                    if let Some(c) = b.front_merge_candidate(&probe) {
                        prop_assert!(c < n);
                        prop_assert_eq!(model[c], M::Queued);
                        prop_assert_eq!(descs[c].sector, d.sector);
                        if descs[c].sector >= 8 {
                            descs[c].sector -= 8;
                            descs[c].sectors += 8;
                            b.front_merged(c, descs[c].sector, descs[c].sectors);
                        }
                    }
                }
            }
            OpKind::BackMerge(i) => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if !queued.is_empty() {
                    let t = queued[i % queued.len()];
                    descs[t].sectors += 8;
                    b.back_merged(t, descs[t].sectors);
                }
            }
            OpKind::Merge(i, j) => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if queued.len() >= 2 {
                    let a = queued[i % queued.len()];
                    let c = queued[j % queued.len()];
                    if a != c {
                        b.requests_merged(a, c);
                        // `a` now covers both.
                        let start = descs[a].sector.min(descs[c].sector);
                        let end = descs[a].end().max(descs[c].end());
                        descs[a].sector = start;
                        descs[a].sectors = (end - start) as u32;
                        model[c] = M::Free;
                        gone += 1;
                    }
                }
            }
            OpKind::Exit(q) => b.issuer_exit(*q, now),
            OpKind::Tunable(k, v) => {
                let name = names[k % names.len()];
                let text = format!("{v}");
                let before = b.tunable(name).unwrap();
                if b.set_tunable(name, &text).is_err() {
                    prop_assert_eq!(b.tunable(name).unwrap(), before);
                }
            }
            OpKind::BadTag(t) => {
                let t = n + (t % 1000);
                b.completed(t, now);
                b.requeued(t, now);
                b.front_merged(t, 0, 8);
                b.back_merged(t, 8);
                b.requests_merged(t, 0);
            }
        }
        if let Err(e) = b.check_invariants() {
            prop_assert!(false, "invariant broken after {:?}: {}", op, e);
        }
        // rust-bfq recomputes its depth limits only when this key changes.
        let limits = depth_limits(&b);
        let seen = limits_by_key
            .entry(b.weight_raised_busy())
            .or_insert(limits);
        prop_assert_eq!(
            *seen,
            limits,
            "depth limits moved without their key, after {:?}",
            op
        );
        let queued = model.iter().filter(|s| **s == M::Queued).count();
        prop_assert_eq!(b.queued(), queued, "queued count after {:?}", op);
        prop_assert_eq!(b.has_work(), queued > 0);
        prop_assert!(b.queued() <= n, "capacity");
        let inflight = model.iter().filter(|s| **s == M::InFlight).count();
        prop_assert_eq!(b.in_flight(), inflight);
    }
    // Drain: complete everything, honour idling, dispatch the rest.
    for (t, state) in model.iter_mut().enumerate() {
        if *state == M::InFlight {
            b.completed(t, now);
            *state = M::Free;
        }
    }
    let mut steps = 0;
    while b.has_work() {
        steps += 1;
        prop_assert!(steps < 10 * n + 100, "drain does not progress");
        match b.dispatch(now) {
            Dispatch::Request(t) => {
                prop_assert_eq!(model[t], M::Queued);
                model[t] = M::Free;
                gone += 1;
                now += 10 * US;
                b.completed(t, now);
            }
            Dispatch::IdleUntil(t) => {
                prop_assert!(t >= now);
                now = t.max(now + 1);
            }
            Dispatch::Empty => prop_assert!(false, "stalled with work queued"),
        }
    }
    prop_assert_eq!(b.check_invariants(), Ok(()));
    prop_assert!(model.iter().all(|s| *s == M::Free));
    prop_assert_eq!(inserted, gone);
    prop_assert_eq!(b.queued(), 0);
    prop_assert_eq!(b.in_flight(), 0);
    prop_assert_eq!(b.dispatch(now), Dispatch::Empty);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_request_dispatched_exactly_once(
        ops in prop::collection::vec(op_strategy(), 1..400),
        nonrot in any::<bool>(),
    ) {
        run_ops(24, 5, nonrot, &ops)?;
    }

    #[test]
    fn single_issuer_single_tag_holds(
        ops in prop::collection::vec(op_strategy(), 1..200),
        nonrot in any::<bool>(),
    ) {
        run_ops(1, 1, nonrot, &ops)?;
    }
}

// ---------------------------------------------------------------------------
// A simulated device: one server, requests served in dispatch order, each
// taking a fixed time; the scheduler may keep up to `depth` in flight.

struct Issuer {
    prio: IoPrio,
    next_sector: u64,
    outstanding: usize,
    target: usize,
    sectors: u32,
    done_sectors: u64,
    sync: bool,
}

struct Sim {
    b: B,
    now: Nanos,
    depth: usize,
    svc: Nanos,
    busy_until: Nanos,
    inflight: VecDeque<(Nanos, usize)>,
    free: Vec<usize>,
    owner: Vec<usize>,
    issuers: Vec<Issuer>,
    wake: Option<Nanos>,
    inserted_at: Vec<Nanos>,
    /// Per tag, a callback slot: (issuer, latency) of completed requests
    /// that were flagged for measurement.
    watch: Vec<bool>,
    watched: Vec<Nanos>,
}

impl Sim {
    fn new(b: B, tags: usize, depth: usize, svc: Nanos) -> Self {
        Sim {
            b,
            now: 0,
            depth,
            svc,
            busy_until: 0,
            inflight: VecDeque::new(),
            free: (0..tags).rev().collect(),
            owner: vec![0; tags],
            issuers: Vec::new(),
            wake: None,
            inserted_at: vec![0; tags],
            watch: vec![false; tags],
            watched: Vec::new(),
        }
    }

    fn add_issuer(&mut self, prio: IoPrio, target: usize, sectors: u32, sync: bool) -> usize {
        let id = self.issuers.len();
        self.issuers.push(Issuer {
            prio,
            next_sector: (id as u64) << 32,
            outstanding: 0,
            target,
            sectors,
            done_sectors: 0,
            sync,
        });
        id
    }

    fn submit(&mut self, i: usize, sector: u64, sectors: u32, watch: bool) {
        let Some(tag) = self.free.pop() else { return };
        let is = &mut self.issuers[i];
        let d = RequestDesc {
            sector,
            sectors,
            op: if is.sync { Op::Read } else { Op::Write },
            sync: is.sync,
            prio: is.prio,
            issuer: i,
            arrival: self.now,
        };
        is.outstanding += 1;
        self.owner[tag] = i;
        self.inserted_at[tag] = self.now;
        self.watch[tag] = watch;
        self.b.insert(tag, &d, false, self.now);
    }

    fn refill(&mut self) {
        for i in 0..self.issuers.len() {
            while self.issuers[i].outstanding < self.issuers[i].target && !self.free.is_empty() {
                let s = self.issuers[i].next_sector;
                let len = self.issuers[i].sectors;
                self.issuers[i].next_sector += len as u64;
                self.submit(i, s, len, false);
            }
        }
    }

    fn dispatch_all(&mut self) {
        self.wake = None;
        while self.inflight.len() < self.depth {
            match self.b.dispatch(self.now) {
                Dispatch::Request(t) => {
                    let start = self.busy_until.max(self.now);
                    self.busy_until = start + self.svc;
                    self.inflight.push_back((self.busy_until, t));
                }
                Dispatch::IdleUntil(t) => {
                    self.wake = Some(t.max(self.now + 1));
                    break;
                }
                Dispatch::Empty => {
                    // Work queued, nothing in flight, no idling: a stall.
                    assert!(
                        !self.b.has_work() || !self.inflight.is_empty(),
                        "stalled at {} with work queued",
                        self.now
                    );
                    break;
                }
            }
        }
    }

    /// Advances to the next event (a completion or the idle wake-up).
    fn step(&mut self) {
        let next_done = self.inflight.front().map(|x| x.0);
        let next = match (next_done, self.wake) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => self.now + MS,
        };
        self.now = next.max(self.now);
        while let Some(&(t, tag)) = self.inflight.front() {
            if t > self.now {
                break;
            }
            self.inflight.pop_front();
            self.b.completed(tag, self.now);
            let i = self.owner[tag];
            self.issuers[i].outstanding -= 1;
            self.issuers[i].done_sectors += self.issuers[i].sectors as u64;
            if self.watch[tag] {
                self.watched.push(self.now - self.inserted_at[tag]);
                self.watch[tag] = false;
            }
            self.free.push(tag);
        }
    }

    /// Runs until `end` and returns each issuer's sectors done meanwhile.
    fn sectors_until(&mut self, end: Nanos) -> Vec<f64> {
        let base: Vec<u64> = self.issuers.iter().map(|i| i.done_sectors).collect();
        self.run_until(end);
        self.issuers
            .iter()
            .zip(&base)
            .map(|(i, b)| (i.done_sectors - b) as f64)
            .collect()
    }

    fn run_until(&mut self, end: Nanos) {
        let mut steps = 0u64;
        while self.now < end {
            self.refill();
            self.dispatch_all();
            self.step();
            steps += 1;
            if steps.is_multiple_of(64) {
                assert_eq!(self.b.check_invariants(), Ok(()));
            }
        }
    }
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Equal-weight, always-backlogged issuers get the same service: Jain's
    /// index >= 0.95 and every share within 5 % of the mean, or within two
    /// of the largest budget (BFQ's lag bound is in budgets: at either end
    /// of the window a queue may be a slot ahead, which on a slow device
    /// with small requests is more than 5 % of 20 s).
    #[test]
    fn equal_weights_get_equal_service(
        issuers in 2usize..7,
        sectors in prop::sample::select(vec![8u32, 64, 256, 512]),
        svc_us in 100u64..1000,
        depth in 1usize..4,
        low_latency in any::<bool>(),
    ) {
        let mut b = bfq(256, 8);
        if !low_latency {
            b.set_tunable("low_latency", "0").unwrap();
        }
        let mut sim = Sim::new(b, 256, depth, svc_us * US);
        for _ in 0..issuers {
            sim.add_issuer(IoPrio::DEFAULT, 16, sectors, true);
        }
        // Past the weight-raising phase, then measure.
        sim.run_until(12_000 * MS);
        let got = sim.sectors_until(32_000 * MS);
        let j = jain(&got);
        let mean = got.iter().sum::<f64>() / got.len() as f64;
        let worst = got.iter().map(|g| (g - mean).abs()).fold(0.0, f64::max);
        let budget = (0..issuers)
            .map(|i| sim.b.issuer_info(i).max_budget)
            .max()
            .unwrap_or(0) as f64;
        let bound = (0.05 * mean).max(2.0 * budget);
        prop_assert!(j >= 0.95, "jain {} {:?}", j, got);
        prop_assert!(
            worst <= bound,
            "worst deviation {} sectors, bound {} (mean {}, max budget {}) {:?}",
            worst, bound, mean, budget, got
        );
    }

    /// Levels 6, 4 and 0 (weights 20, 40, 80) share the device 1:2:4,
    /// each share within 10 % of its ideal, on rotational and
    /// non-rotational devices.
    #[test]
    fn weights_one_two_four_share_in_ratio(
        sectors in prop::sample::select(vec![64u32, 256, 512]),
        svc_us in 100u64..1000,
        depth in 1usize..4,
        sync in any::<bool>(),
        nonrot in any::<bool>(),
    ) {
        let mut b = bfq(256, 4);
        b.set_tunable("low_latency", "0").unwrap();
        b.set_nonrotational(nonrot);
        let mut sim = Sim::new(b, 256, depth, svc_us * US);
        for level in [6u8, 4, 0] {
            let prio = IoPrio { class: PrioClass::BestEffort, level };
            sim.add_issuer(prio, 24, sectors, sync);
        }
        sim.run_until(2_000 * MS);
        let base: Vec<u64> = sim.issuers.iter().map(|i| i.done_sectors).collect();
        sim.run_until(22_000 * MS);
        let got: Vec<f64> = sim
            .issuers
            .iter()
            .zip(&base)
            .map(|(i, b)| (i.done_sectors - b) as f64)
            .collect();
        let total: f64 = got.iter().sum();
        for (g, ideal) in got.iter().zip([1.0 / 7.0, 2.0 / 7.0, 4.0 / 7.0]) {
            let share = g / total;
            prop_assert!(
                (share / ideal - 1.0).abs() <= 0.10,
                "share {} ideal {} ({:?})", share, ideal, got
            );
        }
    }

    /// Two sequential readers at levels 0 and 4 (weights 80 and 40) with
    /// 16 KiB requests on a slow, shallow, non-rotational device (2
    /// requests in the driver), as in the guest's fairness test. The
    /// heavier reader keeps at most as many requests outstanding as the
    /// driver takes, so its queue empties after every dispatch round; the
    /// lighter one always has more waiting. Idling for the heavier reader
    /// (the scenario is asymmetric for it, and once the device is found
    /// not to queue, idling also pays for its sequential I/O) keeps the
    /// lighter one from taking the device each time: 1:2 within 15 %.
    /// (Never idling gives about 0.8:1.)
    ///
    /// (The other way round, a light reader that empties is not idled on:
    /// it has the smallest weight, so BFQ deems the scenario symmetric
    /// for it, and it then gets less than its share.)
    #[test]
    fn two_readers_share_one_to_two_on_shallow_nonrot_device(
        svc_us in 500u64..3000,
        outstanding in 1usize..3,
        low_latency in any::<bool>(),
    ) {
        let mut b = bfq(256, 4);
        b.set_nonrotational(true);
        if !low_latency {
            b.set_tunable("low_latency", "0").unwrap();
        }
        let mut sim = Sim::new(b, 256, 2, svc_us * US);
        for (level, target) in [(4u8, 8), (0, outstanding)] {
            let prio = IoPrio { class: PrioClass::BestEffort, level };
            sim.add_issuer(prio, target, 32, true);
        }
        sim.run_until(15_000 * MS);
        let got = sim.sectors_until(45_000 * MS);
        let ratio = got[1] / got[0];
        prop_assert!((1.7..=2.3).contains(&ratio), "ratio {} ({:?})", ratio, got);
    }

    /// With 8 greedy sequential readers running, a newcomer's first request
    /// completes within 10 ms when `low_latency` is on (it is weight
    /// raised and preempts the in-service reader), i.e. within a few
    /// device service times rather than a budget slot (up to 125 ms per
    /// reader ahead of it).
    #[test]
    fn interactive_newcomer_served_quickly(
        svc_us in 100u64..800,
        depth in 1usize..4,
        arrival_ms in 5_000u64..8_000,
    ) {
        let b = bfq(256, 16);
        let mut sim = Sim::new(b, 256, depth, svc_us * US);
        for _ in 0..8 {
            sim.add_issuer(IoPrio::DEFAULT, 16, 256, true);
        }
        let newcomer = sim.add_issuer(IoPrio::DEFAULT, 0, 8, true);
        sim.run_until(arrival_ms * MS);
        // Greedy readers have lost their own raising by now.
        for i in 0..8 {
            prop_assert_eq!(sim.b.issuer_info(i).wr_coeff, 1);
        }
        sim.submit(newcomer, 1 << 40, 8, true);
        sim.run_until(arrival_ms * MS + 200 * MS);
        prop_assert_eq!(sim.watched.len(), 1);
        let lat = sim.watched[0];
        prop_assert!(lat <= 10 * MS, "newcomer waited {} us", lat / US);
    }

    /// Without weight raising, B-WF2Q+ alone still bounds the wait: the
    /// newcomer is eligible at once, so at worst every reader whose
    /// finish time is smaller, and the one in service, get one budget
    /// slot first: 9 x timeout_sync = 1125 ms. (Measured: a few hundred
    /// ms; compare with 10 ms when raised.)
    #[test]
    fn newcomer_bounded_without_low_latency(
        svc_us in 100u64..800,
        depth in 1usize..4,
        arrival_ms in 1_000u64..4_000,
    ) {
        let mut b = bfq(256, 16);
        b.set_tunable("low_latency", "0").unwrap();
        let mut sim = Sim::new(b, 256, depth, svc_us * US);
        for _ in 0..8 {
            sim.add_issuer(IoPrio::DEFAULT, 16, 256, true);
        }
        let newcomer = sim.add_issuer(IoPrio::DEFAULT, 0, 8, true);
        sim.run_until(arrival_ms * MS);
        sim.submit(newcomer, 1 << 40, 8, true);
        sim.run_until(arrival_ms * MS + 2_000 * MS);
        prop_assert_eq!(sim.watched.len(), 1);
        let lat = sim.watched[0];
        prop_assert!(lat <= 9 * 125 * MS, "newcomer waited {} ms", lat / MS);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Mixed classes, weights, sync and async issuers, with tunables
    /// changed on the way: the device never stalls while work waits, the
    /// structures stay consistent, and once the issuers stop everything
    /// they submitted completes.
    #[test]
    fn mixed_workload_drains(
        specs in prop::collection::vec((0u8..3, 0u8..8, any::<bool>(), 1usize..12, 1u32..512), 1..8),
        svc_us in 20u64..2000,
        depth in 1usize..6,
        tweak in prop::option::of((0usize..10, 0u32..200)),
        nonrot in any::<bool>(),
    ) {
        let mut b = bfq(64, 6);
        b.set_nonrotational(nonrot);
        let mut sim = Sim::new(b, 64, depth, svc_us * US);
        for (class, level, sync, target, sectors) in specs {
            let class = [PrioClass::RealTime, PrioClass::BestEffort, PrioClass::Idle][class as usize];
            sim.add_issuer(IoPrio { class, level }, target, sectors, sync);
        }
        sim.run_until(1_000 * MS);
        if let Some((k, v)) = tweak {
            let name = sim.b.tunables()[k];
            let _ = sim.b.set_tunable(name, &format!("{v}"));
        }
        sim.run_until(3_000 * MS);
        let done: u64 = sim.issuers.iter().map(|i| i.done_sectors).sum();
        prop_assert!(done > 0);
        for i in sim.issuers.iter_mut() {
            i.target = 0;
        }
        let stop = sim.now + 120_000 * MS;
        while sim.issuers.iter().any(|i| i.outstanding > 0) {
            prop_assert!(sim.now < stop, "requests left after the issuers stopped");
            sim.dispatch_all();
            sim.step();
        }
        prop_assert!(!sim.b.has_work());
        prop_assert_eq!(sim.b.in_flight(), 0);
        prop_assert_eq!(sim.b.check_invariants(), Ok(()));
    }
}

/// Measures and prints the figures the properties check, for the record
/// (`cargo test --test bfq_props -- --nocapture figures`).
#[test]
fn figures() {
    let mut b = bfq(256, 8);
    b.set_tunable("low_latency", "0").unwrap();
    let mut sim = Sim::new(b, 256, 2, 500 * US);
    for _ in 0..4 {
        sim.add_issuer(IoPrio::DEFAULT, 16, 256, true);
    }
    sim.run_until(20_000 * MS);
    let got: Vec<f64> = sim.issuers.iter().map(|i| i.done_sectors as f64).collect();
    println!("equal weights: jain {:.5} sectors {:?}", jain(&got), got);

    let mut b = bfq(256, 4);
    b.set_tunable("low_latency", "0").unwrap();
    let mut sim = Sim::new(b, 256, 2, 500 * US);
    for level in [6u8, 4, 0] {
        let prio = IoPrio {
            class: PrioClass::BestEffort,
            level,
        };
        sim.add_issuer(prio, 24, 256, true);
    }
    sim.run_until(20_000 * MS);
    let got: Vec<f64> = sim.issuers.iter().map(|i| i.done_sectors as f64).collect();
    let total: f64 = got.iter().sum();
    let shares: Vec<f64> = got.iter().map(|g| g * 7.0 / total).collect();
    println!("weights 20:40:80 -> shares x7 {shares:.3?} (ideal 1, 2, 4)");

    for ll in [true, false] {
        let mut worst = 0;
        for svc_us in [100u64, 400, 800] {
            for depth in [1usize, 2, 3] {
                for arrival_ms in [5_000u64, 5_333, 5_777, 6_100] {
                    let mut b = bfq(256, 16);
                    if !ll {
                        b.set_tunable("low_latency", "0").unwrap();
                    }
                    let mut sim = Sim::new(b, 256, depth, svc_us * US);
                    for _ in 0..8 {
                        sim.add_issuer(IoPrio::DEFAULT, 16, 256, true);
                    }
                    let newcomer = sim.add_issuer(IoPrio::DEFAULT, 0, 8, true);
                    sim.run_until(arrival_ms * MS);
                    sim.submit(newcomer, 1 << 40, 8, true);
                    sim.run_until(arrival_ms * MS + 2_000 * MS);
                    worst = worst.max(sim.watched[0]);
                }
            }
        }
        println!(
            "newcomer latency with 8 greedy readers, low_latency={}: worst {} us over 36 runs",
            ll as u8,
            worst / US
        );
    }
}
