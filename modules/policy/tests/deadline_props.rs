// SPDX-License-Identifier: GPL-2.0

//! Property tests of the mq-deadline policy against a simple model, over
//! random sequences of inserts, dispatches, completions, requeues, merges,
//! tunable writes and time steps.

use std::collections::VecDeque;

use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector, TunableError,
    NSEC_PER_MSEC,
};
use proptest::prelude::*;

const MS: Nanos = NSEC_PER_MSEC;

fn time_after(a: Nanos, b: Nanos) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

fn time_after_eq(a: Nanos, b: Nanos) -> bool {
    (a.wrapping_sub(b) as i64) >= 0
}

#[derive(Clone, Debug)]
enum Step {
    Insert {
        hint: usize,
        sector: Sector,
        sectors: u32,
        op: Op,
        class: PrioClass,
        level: u8,
        at_head: bool,
    },
    Dispatch,
    Complete(usize),
    /// Requeue an in-flight request and insert it again at head.
    Requeue(usize),
    /// Probe for a front merge at a queued request's start (or anywhere)
    /// and, on a hit, grow the request at its front.
    FrontMerge {
        pick: usize,
        anywhere: Option<Sector>,
        grow: u32,
    },
    MergeRequests(usize, usize),
    Advance(Nanos),
    Tune(usize, i64),
    /// Calls that break the protocol; they must change nothing.
    Abuse(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Read),
        3 => Just(Op::Write),
        1 => Just(Op::Discard),
        1 => Just(Op::Flush),
    ]
}

fn class() -> impl Strategy<Value = PrioClass> {
    prop_oneof![
        1 => Just(PrioClass::RealTime),
        2 => Just(PrioClass::BestEffort),
        1 => Just(PrioClass::Idle),
    ]
}

fn sector() -> impl Strategy<Value = Sector> {
    prop_oneof![
        8 => 0..256u64,
        1 => any::<u64>(),
        1 => (u64::MAX - 64)..=u64::MAX,
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (any::<usize>(), sector(), 0..64u32, op(), class(), 0..2u8, prop::bool::weighted(0.1))
            .prop_map(|(hint, sector, sectors, op, class, level, at_head)| Step::Insert {
                hint, sector, sectors, op, class, level, at_head
            }),
        10 => Just(Step::Dispatch),
        6 => any::<usize>().prop_map(Step::Complete),
        1 => any::<usize>().prop_map(Step::Requeue),
        2 => (any::<usize>(), prop::option::weighted(0.3, 0..300u64), 0..16u32)
            .prop_map(|(pick, anywhere, grow)| Step::FrontMerge { pick, anywhere, grow }),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::MergeRequests(a, b)),
        4 => prop_oneof![0..MS, 0..1_000 * MS, 0..20_000 * MS].prop_map(Step::Advance),
        1 => (0..7usize, -3..40i64).prop_map(|(n, v)| Step::Tune(n, v)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(t, k)| Step::Abuse(t, k)),
    ]
}

const NAMES: [&str; 7] = [
    "read_expire",
    "write_expire",
    "writes_starved",
    "front_merges",
    "async_depth",
    "fifo_batch",
    "prio_aging_expire",
];

#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Free,
    AtHead,
    Sorted,
    InFlight,
}

/// What the model knows about a tag.
#[derive(Clone, Copy, Debug)]
struct Req {
    st: St,
    desc: RequestDesc,
    /// The level that owns it (class at first insertion).
    owner: usize,
    fifo_time: Nanos,
    /// Order of entry into its sort tree (equal sectors sort by it).
    seq: u64,
}

struct Model {
    reqs: Vec<Req>,
    /// At-head requests, most recent last.
    at_head: Vec<usize>,
    /// Tunables, as sysfs values.
    tun: [i64; 7],
    /// An expire tunable was lowered at some point: a queued request may
    /// then look as if it started in the future, and dispatch may stall.
    expire_lowered: bool,
    now: Nanos,
    fresh_inserts: u64,
    /// Sort tree entries so far.
    seq: u64,
    completed: u64,
    merged: u64,
}

impl Model {
    fn new(cap: usize, now: Nanos) -> Self {
        Model {
            reqs: vec![
                Req {
                    st: St::Free,
                    desc: RequestDesc::default(),
                    owner: 0,
                    fifo_time: 0,
                    seq: 0,
                };
                cap
            ],
            at_head: Vec::new(),
            tun: [500, 5000, 2, 1, cap as i64, 16, 10000],
            expire_lowered: false,
            now,
            fresh_inserts: 0,
            seq: 0,
            completed: 0,
            merged: 0,
        }
    }

    fn queued(&self) -> usize {
        self.reqs
            .iter()
            .filter(|r| matches!(r.st, St::AtHead | St::Sorted))
            .count()
    }

    fn owned(&self, level: usize) -> u32 {
        self.reqs
            .iter()
            .filter(|r| r.st != St::Free && r.owner == level)
            .count() as u32
    }

    fn queued_in(&self, level: usize) -> usize {
        self.reqs
            .iter()
            .filter(|r| {
                matches!(r.st, St::AtHead | St::Sorted) && r.desc.prio.class.index() == level
            })
            .count()
    }

    fn pick(&self, n: usize, f: impl Fn(&Req) -> bool) -> Option<usize> {
        let tags: Vec<usize> = (0..self.reqs.len()).filter(|&t| f(&self.reqs[t])).collect();
        (!tags.is_empty()).then(|| tags[n % tags.len()])
    }

    fn expire(&self, op: Op) -> Nanos {
        self.tun[op.dir()] as Nanos * MS
    }

    /// Start time as C computes it (`started_after()`).
    fn start(&self, t: usize) -> Nanos {
        let r = &self.reqs[t];
        r.fifo_time.wrapping_sub(self.expire(r.desc.op))
    }
}

type Dd = Deadline<Vec<Slot>>;

fn check(d: &Dd, m: &Model) -> Result<(), TestCaseError> {
    d.check_invariants().map_err(TestCaseError::fail)?;
    prop_assert_eq!(d.queued(), m.queued());
    prop_assert_eq!(d.has_work(), m.queued() > 0);
    for class in [PrioClass::RealTime, PrioClass::BestEffort, PrioClass::Idle] {
        prop_assert_eq!(d.level_queued(class), m.owned(class.index()));
    }
    let busy = m.reqs.iter().filter(|r| r.st != St::Free).count();
    prop_assert!(busy <= d.capacity());
    Ok(())
}

/// Runs one dispatch and checks it against the model.
fn dispatch(d: &mut Dd, m: &mut Model) -> Result<Option<usize>, TestCaseError> {
    let queued = m.queued();
    let got = d.dispatch(m.now);
    if queued == 0 {
        // Nothing comes out of an empty scheduler.
        prop_assert_eq!(got, Dispatch::Empty);
    }
    match got {
        Dispatch::Request(t) => {
            prop_assert!(t < m.reqs.len());
            let r = m.reqs[t];
            prop_assert!(
                matches!(r.st, St::AtHead | St::Sorted),
                "dispatched tag {} in state {:?}",
                t,
                r.st
            );
            if let Some(&top) = m.at_head.last() {
                // The at-head list goes first, latest insertion first.
                prop_assert_eq!(t, top);
                m.at_head.pop();
            } else {
                // Strict priority, unless the request aged.
                let level = r.desc.prio.class.index();
                let aging = m.tun[6] as Nanos * MS;
                let aged = !time_after(m.start(t), m.now.wrapping_sub(aging));
                let higher_busy = (0..level).any(|l| m.owned(l) != 0);
                prop_assert!(
                    !higher_busy || aged,
                    "level {} served while a higher one is busy",
                    level
                );
            }
            m.reqs[t].st = St::InFlight;
            Ok(Some(t))
        }
        Dispatch::Empty => {
            if queued > 0 && !m.expire_lowered {
                // Only allowed when the highest busy level has nothing
                // queued (C's dd_queued() counts requests in flight).
                let top = (0..3).find(|&l| m.owned(l) != 0);
                prop_assert!(
                    m.at_head.is_empty() && top.is_some_and(|l| m.queued_in(l) == 0),
                    "nothing dispatched with {} queued",
                    queued
                );
            }
            Ok(None)
        }
        other => Err(TestCaseError::fail(format!("unexpected {other:?}"))),
    }
}

fn run(cap: usize, start: Nanos, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let mut d: Dd = Deadline::new(vec![Slot::default(); cap]).unwrap();
    let mut m = Model::new(cap, start);
    for step in steps {
        match step {
            Step::Insert {
                hint,
                sector,
                sectors,
                op,
                class,
                level,
                at_head,
            } => {
                let Some(t) = (0..cap)
                    .map(|i| (hint % cap + i) % cap)
                    .find(|&t| m.reqs[t].st == St::Free)
                else {
                    continue;
                };
                let desc = RequestDesc {
                    sector,
                    sectors,
                    op,
                    sync: op.is_read(),
                    prio: IoPrio { class, level },
                    issuer: hint % 7,
                    arrival: m.now,
                };
                d.insert(t, &desc, at_head, m.now);
                m.fresh_inserts += 1;
                let fifo_time = if at_head {
                    m.at_head.push(t);
                    m.now
                } else {
                    m.now.wrapping_add(m.expire(op))
                };
                m.reqs[t] = Req {
                    st: if at_head { St::AtHead } else { St::Sorted },
                    desc,
                    owner: class.index(),
                    fifo_time,
                    seq: m.seq,
                };
                m.seq += 1;
            }
            Step::Dispatch => {
                dispatch(&mut d, &mut m)?;
            }
            Step::Complete(n) => {
                if let Some(t) = m.pick(n, |r| r.st == St::InFlight) {
                    d.completed(t, m.now);
                    m.reqs[t].st = St::Free;
                    m.completed += 1;
                }
            }
            Step::Requeue(n) => {
                if let Some(t) = m.pick(n, |r| r.st == St::InFlight) {
                    d.requeued(t, m.now);
                    let desc = m.reqs[t].desc;
                    d.insert(t, &desc, true, m.now);
                    m.reqs[t].st = St::AtHead;
                    m.reqs[t].fifo_time = m.now;
                    m.at_head.push(t);
                }
            }
            Step::FrontMerge {
                pick,
                anywhere,
                grow,
            } => {
                let probe = match (anywhere, m.pick(pick, |r| r.st == St::Sorted)) {
                    (None, Some(t)) => MergeProbe {
                        bio_end: m.reqs[t].desc.sector,
                        op: m.reqs[t].desc.op,
                        prio: m.reqs[t].desc.prio,
                    },
                    (Some(s), _) => MergeProbe {
                        bio_end: s,
                        op: [Op::Read, Op::Write][pick % 2],
                        prio: IoPrio::DEFAULT,
                    },
                    (None, None) => continue,
                };
                // The model's answer: the sorted request of the probe's
                // queue starting at bio_end that entered its tree first,
                // if its op and prio match.
                let first = (0..cap)
                    .filter(|&t| {
                        let r = &m.reqs[t];
                        r.st == St::Sorted
                            && r.desc.sector == probe.bio_end
                            && r.desc.prio.class == probe.prio.class
                            && r.desc.op.dir() == probe.op.dir()
                    })
                    .min_by_key(|&t| m.reqs[t].seq);
                let expect = first.filter(|&t| {
                    let r = &m.reqs[t];
                    m.tun[3] == 1
                        && probe.op != Op::Flush
                        && r.desc.op == probe.op
                        && r.desc.prio == probe.prio
                });
                let got = d.front_merge_candidate(&probe);
                prop_assert_eq!(got, expect);
                if let Some(t) = got {
                    let r = &mut m.reqs[t].desc;
                    r.sector = r.sector.saturating_sub(grow as Sector);
                    r.sectors = r.sectors.saturating_add(grow);
                    d.front_merged(t, r.sector, r.sectors);
                    m.reqs[t].seq = m.seq;
                    m.seq += 1;
                }
            }
            Step::MergeRequests(a, b) => {
                let queued = |r: &Req| matches!(r.st, St::AtHead | St::Sorted);
                let (Some(i), Some(n)) = (m.pick(a, queued), m.pick(b, queued)) else {
                    continue;
                };
                if i == n {
                    continue;
                }
                d.requests_merged(i, n);
                let (ri, rn) = (m.reqs[i], m.reqs[n]);
                if ri.st == St::Sorted
                    && rn.st == St::Sorted
                    && ri.desc.prio.class == rn.desc.prio.class
                    && ri.desc.op.dir() == rn.desc.op.dir()
                    && time_after(ri.fifo_time, rn.fifo_time)
                {
                    m.reqs[i].fifo_time = rn.fifo_time;
                }
                m.at_head.retain(|&t| t != n);
                m.reqs[n].st = St::Free;
                m.merged += 1;
            }
            Step::Advance(dt) => m.now = m.now.wrapping_add(dt),
            Step::Tune(n, v) => {
                let name = NAMES[n];
                let res = d.set_tunable(name, &v.to_string());
                let (min, max) = match n {
                    3 => (0, 1),
                    4 => (1, cap as i64),
                    5 => (1, i64::MAX),
                    _ => (0, i64::MAX),
                };
                if (min..=max).contains(&v) {
                    prop_assert_eq!(res, Ok(()));
                    if (n == 0 || n == 1) && v < m.tun[n] {
                        m.expire_lowered = true;
                    }
                    m.tun[n] = v;
                } else {
                    prop_assert_eq!(res, Err(TunableError::OutOfRange));
                }
                prop_assert_eq!(d.tunable(name), Ok(m.tun[n]));
            }
            Step::Abuse(t, k) => {
                let desc = RequestDesc::default();
                match k % 6 {
                    0 => d.insert(cap + t % 4, &desc, k & 8 != 0, m.now),
                    1 => d.completed(t, m.now),
                    2 => d.requeued(t, m.now),
                    3 => d.front_merged(cap + t % 4, 0, 0),
                    4 => d.requests_merged(t % (cap + 2), cap + t % 3),
                    _ => {
                        // Insert a tag that is already queued.
                        if let Some(q) = m.pick(t, |r| matches!(r.st, St::AtHead | St::Sorted)) {
                            d.insert(q, &desc, k & 8 != 0, m.now);
                        }
                    }
                }
                // Completing or requeueing a random tag may hit one in
                // flight: mirror that in the model.
                if matches!(k % 6, 1 | 2) && t < cap && m.reqs[t].st == St::InFlight {
                    if k % 6 == 1 {
                        m.reqs[t].st = St::Free;
                        m.completed += 1;
                    } else {
                        // Requeued but never reinserted: the caller must
                        // reinsert; do it now.
                        let desc = m.reqs[t].desc;
                        d.insert(t, &desc, true, m.now);
                        m.reqs[t].st = St::AtHead;
                        m.reqs[t].fifo_time = m.now;
                        m.at_head.push(t);
                    }
                }
            }
        }
        check(&d, &m)?;
    }

    // Drain: everything inserted goes out exactly once (or was merged).
    let mut rounds = 0;
    while m.reqs.iter().any(|r| r.st != St::Free) {
        rounds += 1;
        prop_assert!(rounds < 10 * cap + 10, "drain does not finish");
        match dispatch(&mut d, &mut m)? {
            Some(t) => {
                d.completed(t, m.now);
                m.reqs[t].st = St::Free;
                m.completed += 1;
            }
            None => {
                for t in 0..cap {
                    if m.reqs[t].st == St::InFlight {
                        d.completed(t, m.now);
                        m.reqs[t].st = St::Free;
                        m.completed += 1;
                    }
                }
                // Past any deadline a lowered expire could confuse.
                m.now = m.now.wrapping_add(i32::MAX as Nanos * MS);
            }
        }
        check(&d, &m)?;
    }
    prop_assert_eq!(m.fresh_inserts, m.completed + m.merged);
    prop_assert_eq!(d.dispatch(m.now), Dispatch::Empty);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_the_model(
        cap in 1..48usize,
        start in prop_oneof![Just(0u64), any::<u64>(), Just(u64::MAX - 5_000 * MS)],
        steps in prop::collection::vec(step(), 0..300),
    ) {
        run(cap, start, steps)?;
    }
}

#[derive(Clone, Debug)]
enum Simple {
    Read(Sector),
    Write(Sector),
    Dispatch,
    Advance(Nanos),
}

fn simple(writes: bool) -> impl Strategy<Value = Simple> {
    let w = if writes { 3 } else { 0 };
    prop_oneof![
        4 => (0..10_000u64).prop_map(Simple::Read),
        w => (0..10_000u64).prop_map(Simple::Write),
        6 => Just(Simple::Dispatch),
        2 => (0..20 * MS).prop_map(Simple::Advance),
    ]
}

/// Once the oldest queued read has expired, it goes out within `bound`
/// dispatches (one class, nothing at head, fixed tunables).
fn expired_read_bound(
    steps: Vec<Simple>,
    fifo_batch: u32,
    writes_starved: u32,
    start: Nanos,
    reads_only: bool,
) -> Result<(), TestCaseError> {
    let cap = 64;
    let mut d: Dd = Deadline::new(vec![Slot::default(); cap]).unwrap();
    d.set_tunable("fifo_batch", &fifo_batch.to_string())
        .unwrap();
    d.set_tunable("writes_starved", &writes_starved.to_string())
        .unwrap();
    d.set_tunable("read_expire", "30").unwrap();
    d.set_tunable("write_expire", "60").unwrap();
    let mut free: Vec<usize> = (0..cap).rev().collect();
    let mut fifo: VecDeque<(usize, Nanos)> = VecDeque::new();
    let mut now = start;
    // Dispatches since the read FIFO head expired.
    let mut late = 0u32;
    let bound = if reads_only {
        fifo_batch
    } else {
        2 * fifo_batch
    };
    for s in steps {
        match s {
            Simple::Read(sector) | Simple::Write(sector) => {
                let Some(t) = free.pop() else { continue };
                let op = if matches!(s, Simple::Read(_)) {
                    Op::Read
                } else {
                    Op::Write
                };
                let desc = RequestDesc {
                    sector,
                    op,
                    ..RequestDesc::default()
                };
                d.insert(t, &desc, false, now);
                if op == Op::Read {
                    fifo.push_back((t, now.wrapping_add(30 * MS)));
                }
            }
            Simple::Advance(dt) => now = now.wrapping_add(dt),
            Simple::Dispatch => {
                let expired = fifo
                    .front()
                    .is_some_and(|&(_, deadline)| time_after_eq(now, deadline));
                if expired {
                    late += 1;
                }
                let got = d.dispatch(now);
                let Dispatch::Request(t) = got else {
                    prop_assert!(!d.has_work(), "{:?} with work queued", got);
                    continue;
                };
                d.completed(t, now);
                free.push(t);
                if fifo.front().is_some_and(|&(h, _)| h == t) {
                    prop_assert!(late <= bound, "head served after {} dispatches", late);
                    fifo.pop_front();
                    late = 0;
                } else {
                    fifo.retain(|&(r, _)| r != t);
                    prop_assert!(
                        late < bound,
                        "expired head still waiting after {} dispatches",
                        late
                    );
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Reads only: an expired read FIFO head waits at most for the rest
    /// of the running batch, so it goes out within `fifo_batch` dispatches.
    #[test]
    fn expired_read_served_within_one_batch(
        fifo_batch in 1..8u32,
        start in any::<u64>(),
        steps in prop::collection::vec(simple(false), 0..400),
    ) {
        expired_read_bound(steps, fifo_batch, 2, start, true)?;
    }

    /// With writes (and `writes_starved` >= 1): at most the rest of the
    /// running batch and one write batch come first, so `2 * fifo_batch`.
    #[test]
    fn expired_read_served_within_a_batch_and_a_write_batch(
        fifo_batch in 1..8u32,
        writes_starved in 1..4u32,
        start in any::<u64>(),
        steps in prop::collection::vec(simple(true), 0..400),
    ) {
        expired_read_bound(steps, fifo_batch, writes_starved, start, false)?;
    }
}

mod deadline_naive;
use deadline_naive as naive;

#[derive(Clone, Debug)]
enum Diff {
    Insert(usize, Sector, Op, PrioClass, u8, bool),
    Dispatch,
    Complete(usize),
    Requeue(usize),
    FrontMerge(usize, u32),
    Merge(usize, usize),
    Advance(Nanos),
    Tune(usize, i64),
}

fn diff_step() -> impl Strategy<Value = Diff> {
    prop_oneof![
        10 => (any::<usize>(), prop_oneof![0..64u64, any::<u64>()], op(), class(), 0..2u8,
               prop::bool::weighted(0.1))
            .prop_map(|(h, s, o, c, l, a)| Diff::Insert(h, s, o, c, l, a)),
        12 => Just(Diff::Dispatch),
        6 => any::<usize>().prop_map(Diff::Complete),
        1 => any::<usize>().prop_map(Diff::Requeue),
        2 => (any::<usize>(), 0..16u32).prop_map(|(p, g)| Diff::FrontMerge(p, g)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Diff::Merge(a, b)),
        4 => prop_oneof![0..MS, 0..1_000 * MS, 0..20_000 * MS].prop_map(Diff::Advance),
        1 => (0..7usize, 0..40i64).prop_map(|(n, v)| Diff::Tune(n, v)),
    ]
}

fn differential(cap: usize, start: Nanos, steps: Vec<Diff>) -> Result<(), TestCaseError> {
    let mut d: Dd = Deadline::new(vec![Slot::default(); cap]).unwrap();
    let mut r = naive::Dd::new(cap);
    let mut now = start;
    let mut in_flight: Vec<usize> = Vec::new();
    let queued = |r: &naive::Dd| (0..cap).filter(|&t| r.rq[t].queued).collect::<Vec<_>>();
    for step in steps {
        match step {
            Diff::Insert(hint, sector, op, class, level, at_head) => {
                let Some(t) = (0..cap).map(|i| (hint + i) % cap).find(|&t| !r.rq[t].busy) else {
                    continue;
                };
                let desc = RequestDesc {
                    sector,
                    op,
                    prio: IoPrio { class, level },
                    ..RequestDesc::default()
                };
                d.insert(t, &desc, at_head, now);
                r.insert(t, &desc, at_head, now);
            }
            Diff::Dispatch => {
                let want = r.dispatch(now);
                let got = match d.dispatch(now) {
                    Dispatch::Request(t) => Some(t),
                    _ => None,
                };
                prop_assert_eq!(got, want);
                in_flight.extend(got);
            }
            Diff::Complete(n) | Diff::Requeue(n) if !in_flight.is_empty() => {
                let t = in_flight.swap_remove(n % in_flight.len());
                if matches!(step, Diff::Complete(_)) {
                    d.completed(t, now);
                    r.finish(t);
                } else {
                    d.requeued(t, now);
                    let rq = r.rq[t];
                    let desc = RequestDesc {
                        sector: rq.sector,
                        op: rq.op.unwrap(),
                        prio: rq.prio,
                        ..RequestDesc::default()
                    };
                    d.insert(t, &desc, true, now);
                    r.insert(t, &desc, true, now);
                }
            }
            Diff::FrontMerge(pick, grow) => {
                let sorted: Vec<usize> = (0..cap)
                    .filter(|&t| r.rq[t].queued && !r.dispatch_has(t))
                    .collect();
                if sorted.is_empty() {
                    continue;
                }
                let t = sorted[pick % sorted.len()];
                let probe = MergeProbe {
                    bio_end: r.rq[t].sector,
                    op: r.rq[t].op.unwrap(),
                    prio: r.rq[t].prio,
                };
                let want = r.front_merge_candidate(&probe);
                prop_assert_eq!(d.front_merge_candidate(&probe), want);
                if let Some(t) = want {
                    let sector = r.rq[t].sector.saturating_sub(u64::from(grow));
                    d.front_merged(t, sector, 0);
                    r.front_merged(t, sector);
                }
            }
            Diff::Merge(a, b) => {
                let q = queued(&r);
                if q.len() < 2 {
                    continue;
                }
                let (i, n) = (q[a % q.len()], q[b % q.len()]);
                if i == n {
                    continue;
                }
                d.requests_merged(i, n);
                r.merged(i, n);
            }
            Diff::Advance(dt) => now = now.wrapping_add(dt),
            Diff::Tune(n, v) => {
                let v = match n {
                    3 => v % 2,
                    4 => 1 + v % cap as i64,
                    5 => 1 + v,
                    _ => v,
                };
                prop_assert_eq!(d.set_tunable(NAMES[n], &v.to_string()), Ok(()));
                let ns = v as Nanos * MS;
                match n {
                    0 => r.fifo_expire[0] = ns,
                    1 => r.fifo_expire[1] = ns,
                    2 => r.writes_starved = v as u32,
                    3 => r.front_merges = v == 1,
                    5 => r.fifo_batch = v as u32,
                    6 => r.prio_aging_expire = ns,
                    _ => {}
                }
            }
            _ => {}
        }
        prop_assert_eq!(d.queued(), queued(&r).len());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Decision for decision, the policy does what a literal port of
    /// mq-deadline's C does.
    #[test]
    fn matches_a_naive_port_of_mq_deadline(
        cap in 1..40usize,
        start in prop_oneof![Just(0u64), any::<u64>()],
        steps in prop::collection::vec(diff_step(), 0..400),
    ) {
        differential(cap, start, steps)?;
    }
}
