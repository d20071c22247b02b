// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the mq-deadline policy with random operation sequences against a
//! small model: internal structures stay consistent, queued()/has_work()
//! and the per-level counts match, only queued requests are dispatched,
//! the at-head list and strict priority (with aging) are respected,
//! front-merge lookups agree with the model, and draining at the end
//! dispatches everything exactly once. In "simple" runs (one class,
//! nothing at head, fixed tunables, no request merges) an expired read
//! FIFO head must also go out within `2 * fifo_batch` dispatches. A
//! literal Vec-based port of the C (shared with the property tests) runs
//! alongside, and every dispatch and merge candidate must match it.

#![no_main]

use std::collections::VecDeque;

use arbitrary::Arbitrary;
use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, NSEC_PER_MSEC,
};
use libfuzzer_sys::fuzz_target;

/// The literal port of mq-deadline that the property tests use too.
#[path = "../../tests/deadline_naive/mod.rs"]
#[allow(dead_code)]
mod naive;

const MS: Nanos = NSEC_PER_MSEC;

#[derive(Arbitrary, Debug)]
struct Input {
    cap: u8,
    start: u64,
    simple: bool,
    fifo_batch: u8,
    writes_starved: u8,
    ops: Vec<FuzzOp>,
}

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Insert {
        hint: u8,
        sector: u64,
        small_sector: u8,
        use_small: bool,
        sectors: u32,
        op: u8,
        class: u8,
        level: u8,
        at_head: bool,
    },
    Dispatch,
    Complete(u8),
    Requeue(u8),
    FrontMerge {
        pick: u8,
        anywhere: Option<u8>,
        grow: u16,
    },
    MergeRequests(u8, u8),
    Advance(u32),
    AdvanceFar(u64),
    Tune(u8, i32),
    TuneText(u8, String),
    DepthUpdated(u16),
    Abuse(u16, u8),
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

fn time_after(a: Nanos, b: Nanos) -> bool {
    (b.wrapping_sub(a) as i64) < 0
}

fn time_after_eq(a: Nanos, b: Nanos) -> bool {
    (a.wrapping_sub(b) as i64) >= 0
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Free,
    AtHead,
    Sorted,
    InFlight,
}

#[derive(Clone, Copy, Debug)]
struct Req {
    st: St,
    desc: RequestDesc,
    owner: usize,
    fifo_time: Nanos,
    /// Order of entry into its sort tree (equal sectors sort by it).
    seq: u64,
}

struct Model {
    reqs: Vec<Req>,
    at_head: Vec<usize>,
    expire: [Nanos; 2],
    aging: Nanos,
    front_merges: bool,
    expire_lowered: bool,
    now: Nanos,
    fresh: u64,
    /// Sort tree entries so far.
    seq: u64,
    gone: u64,
    /// The literal C port, run beside the policy.
    naive: naive::Dd,
}

impl Model {
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

    fn pick(&self, n: u8, f: impl Fn(&Req) -> bool) -> Option<usize> {
        let tags: Vec<usize> = (0..self.reqs.len()).filter(|&t| f(&self.reqs[t])).collect();
        (!tags.is_empty()).then(|| tags[n as usize % tags.len()])
    }

    fn start(&self, t: usize) -> Nanos {
        let r = &self.reqs[t];
        r.fifo_time.wrapping_sub(self.expire[r.desc.op.dir()])
    }

    fn complete(&mut self, d: &mut Deadline<Vec<Slot>>, t: usize) {
        d.completed(t, self.now);
        self.naive.finish(t);
        self.reqs[t].st = St::Free;
        self.gone += 1;
    }

    fn reinsert_at_head(&mut self, d: &mut Deadline<Vec<Slot>>, t: usize) {
        let desc = self.reqs[t].desc;
        d.insert(t, &desc, true, self.now);
        self.naive.insert(t, &desc, true, self.now);
        self.reqs[t].st = St::AtHead;
        self.reqs[t].fifo_time = self.now;
        self.at_head.push(t);
    }
}

fn check(d: &Deadline<Vec<Slot>>, m: &Model) {
    if let Err(e) = d.check_invariants() {
        panic!("invariant: {e}");
    }
    assert_eq!(d.queued(), m.queued());
    assert_eq!(d.has_work(), m.queued() > 0);
    for class in [PrioClass::RealTime, PrioClass::BestEffort, PrioClass::Idle] {
        assert_eq!(d.level_queued(class), m.owned(class.index()));
    }
}

fn dispatch(d: &mut Deadline<Vec<Slot>>, m: &mut Model) -> Option<usize> {
    let queued = m.queued();
    let got = d.dispatch(m.now);
    let want = m.naive.dispatch(m.now);
    assert_eq!(
        got,
        want.map_or(Dispatch::Empty, Dispatch::Request),
        "differs from the C port"
    );
    if queued == 0 {
        assert_eq!(got, Dispatch::Empty, "dispatch from an empty scheduler");
    }
    match got {
        Dispatch::Request(t) => {
            assert!(t < m.reqs.len());
            let r = m.reqs[t];
            assert!(
                matches!(r.st, St::AtHead | St::Sorted),
                "dispatched {t} in {:?}",
                r.st
            );
            if let Some(&top) = m.at_head.last() {
                assert_eq!(t, top, "at-head order");
                m.at_head.pop();
            } else {
                let level = r.desc.prio.class.index();
                let aged = !time_after(m.start(t), m.now.wrapping_sub(m.aging));
                let higher_busy = (0..level).any(|l| m.owned(l) != 0);
                assert!(!higher_busy || aged, "priority inversion at level {level}");
            }
            m.reqs[t].st = St::InFlight;
            Some(t)
        }
        Dispatch::Empty => {
            if queued > 0 && !m.expire_lowered {
                let top = (0..3).find(|&l| m.owned(l) != 0);
                assert!(
                    m.at_head.is_empty() && top.is_some_and(|l| m.queued_in(l) == 0),
                    "nothing dispatched with {queued} queued"
                );
            }
            None
        }
        other => panic!("unexpected {other:?}"),
    }
}

fuzz_target!(|input: Input| {
    let cap = usize::from(input.cap % 64) + 1;
    let mut d = Deadline::new(vec![Slot::default(); cap]).unwrap();
    let fifo_batch = u32::from(input.fifo_batch % 16) + 1;
    let writes_starved = u32::from(input.writes_starved % 4) + u32::from(input.simple);
    d.set_tunable("fifo_batch", &fifo_batch.to_string())
        .unwrap();
    d.set_tunable("writes_starved", &writes_starved.to_string())
        .unwrap();
    let mut m = Model {
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
        expire: [500 * MS, 5000 * MS],
        aging: 10_000 * MS,
        front_merges: true,
        expire_lowered: false,
        now: input.start,
        fresh: 0,
        seq: 0,
        gone: 0,
        naive: naive::Dd::new(cap),
    };
    m.naive.fifo_batch = fifo_batch;
    m.naive.writes_starved = writes_starved;
    // Simple mode: the read FIFO (tag, deadline) and the number of
    // dispatches since its head expired.
    let mut fifo: VecDeque<(usize, Nanos)> = VecDeque::new();
    let mut late = 0u32;

    for op in input.ops.into_iter().take(2000) {
        match op {
            FuzzOp::Insert {
                hint,
                sector,
                small_sector,
                use_small,
                sectors,
                op,
                class,
                level,
                at_head,
            } => {
                let Some(t) = (0..cap)
                    .map(|i| (usize::from(hint) + i) % cap)
                    .find(|&t| m.reqs[t].st == St::Free)
                else {
                    continue;
                };
                let op = [
                    Op::Read,
                    Op::Read,
                    Op::Write,
                    Op::Write,
                    Op::Discard,
                    Op::Flush,
                ][usize::from(op) % 6];
                let class = if input.simple {
                    PrioClass::BestEffort
                } else {
                    [PrioClass::RealTime, PrioClass::BestEffort, PrioClass::Idle]
                        [usize::from(class) % 3]
                };
                let at_head = at_head && !input.simple;
                let desc = RequestDesc {
                    sector: if use_small {
                        u64::from(small_sector)
                    } else {
                        sector
                    },
                    sectors,
                    op,
                    sync: op.is_read(),
                    prio: IoPrio {
                        class,
                        level: level % 3,
                    },
                    issuer: usize::from(hint),
                    arrival: m.now,
                };
                d.insert(t, &desc, at_head, m.now);
                m.naive.insert(t, &desc, at_head, m.now);
                m.fresh += 1;
                let fifo_time = if at_head {
                    m.at_head.push(t);
                    m.now
                } else {
                    m.now.wrapping_add(m.expire[op.dir()])
                };
                m.reqs[t] = Req {
                    st: if at_head { St::AtHead } else { St::Sorted },
                    desc,
                    owner: class.index(),
                    fifo_time,
                    seq: m.seq,
                };
                m.seq += 1;
                if input.simple && op == Op::Read {
                    fifo.push_back((t, fifo_time));
                }
            }
            FuzzOp::Dispatch => {
                let expired = fifo
                    .front()
                    .is_some_and(|&(_, deadline)| time_after_eq(m.now, deadline));
                if expired {
                    late += 1;
                }
                if let Some(t) = dispatch(&mut d, &mut m) {
                    if input.simple {
                        let bound = 2 * fifo_batch;
                        if fifo.front().is_some_and(|&(h, _)| h == t) {
                            assert!(late <= bound, "expired head served after {late}");
                            fifo.pop_front();
                            late = 0;
                        } else {
                            fifo.retain(|&(r, _)| r != t);
                            assert!(late < bound, "expired head waits after {late}");
                        }
                    }
                } else {
                    assert!(!input.simple || m.queued() == 0);
                }
            }
            FuzzOp::Complete(n) => {
                if let Some(t) = m.pick(n, |r| r.st == St::InFlight) {
                    m.complete(&mut d, t);
                }
            }
            FuzzOp::Requeue(n) => {
                if input.simple {
                    continue;
                }
                if let Some(t) = m.pick(n, |r| r.st == St::InFlight) {
                    d.requeued(t, m.now);
                    m.reinsert_at_head(&mut d, t);
                }
            }
            FuzzOp::FrontMerge {
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
                        bio_end: u64::from(s),
                        op: [Op::Read, Op::Write][usize::from(pick % 2)],
                        prio: IoPrio::DEFAULT,
                    },
                    (None, None) => continue,
                };
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
                    m.front_merges
                        && probe.op != Op::Flush
                        && r.desc.op == probe.op
                        && r.desc.prio == probe.prio
                });
                let got = d.front_merge_candidate(&probe);
                assert_eq!(got, expect, "front merge candidate for {probe:?}");
                assert_eq!(got, m.naive.front_merge_candidate(&probe), "C port");
                if let Some(t) = got {
                    let r = &mut m.reqs[t].desc;
                    r.sector = r.sector.saturating_sub(u64::from(grow));
                    r.sectors = r.sectors.saturating_add(u32::from(grow));
                    d.front_merged(t, r.sector, r.sectors);
                    m.naive.front_merged(t, r.sector);
                    m.reqs[t].seq = m.seq;
                    m.seq += 1;
                }
            }
            FuzzOp::MergeRequests(a, b) => {
                if input.simple {
                    continue;
                }
                let queued = |r: &Req| matches!(r.st, St::AtHead | St::Sorted);
                let (Some(i), Some(n)) = (m.pick(a, queued), m.pick(b, queued)) else {
                    continue;
                };
                if i == n {
                    continue;
                }
                d.requests_merged(i, n);
                m.naive.merged(i, n);
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
                m.gone += 1;
            }
            FuzzOp::Advance(dt) => m.now = m.now.wrapping_add(u64::from(dt) * 1000),
            FuzzOp::AdvanceFar(dt) => {
                if !input.simple {
                    // Forward only, as a clock goes: total time stays
                    // well below the 2^63 ns wrap-compare horizon.
                    m.now = m.now.wrapping_add(dt % (1 << 50));
                }
            }
            FuzzOp::Tune(n, v) => {
                if input.simple {
                    continue;
                }
                let n = usize::from(n) % NAMES.len();
                let res = d.set_tunable(NAMES[n], &v.to_string());
                let v = i64::from(v);
                let ok = match n {
                    3 => (0..=1).contains(&v),
                    4 => (1..=i64::from(d.nr_requests())).contains(&v),
                    5 => v >= 1,
                    _ => v >= 0,
                };
                assert_eq!(res.is_ok(), ok, "{} = {v}", NAMES[n]);
                if ok {
                    assert_eq!(d.tunable(NAMES[n]), Ok(v));
                    let ns = (v as Nanos) * MS;
                    match n {
                        0 | 1 => {
                            if ns < m.expire[n] {
                                m.expire_lowered = true;
                            }
                            m.expire[n] = ns;
                            m.naive.fifo_expire[n] = ns;
                        }
                        2 => m.naive.writes_starved = v as u32,
                        3 => {
                            m.front_merges = v == 1;
                            m.naive.front_merges = v == 1;
                        }
                        5 => m.naive.fifo_batch = v as u32,
                        6 => {
                            m.aging = ns;
                            m.naive.prio_aging_expire = ns;
                        }
                        _ => {}
                    }
                }
            }
            FuzzOp::TuneText(n, text) => {
                if input.simple {
                    continue;
                }
                let name = NAMES[usize::from(n) % NAMES.len()];
                let before = d.tunable(name).unwrap();
                if d.set_tunable(name, &text).is_ok() {
                    // Keep the model simple: undo.
                    d.set_tunable(name, &before.to_string()).unwrap();
                } else {
                    assert_eq!(d.tunable(name), Ok(before));
                }
                assert!(d.tunable(&text).is_err() || NAMES.contains(&text.as_str()));
                for name in NAMES {
                    d.tunable(name).unwrap();
                }
            }
            FuzzOp::DepthUpdated(nr) => {
                if input.simple {
                    continue;
                }
                d.depth_updated(u32::from(nr));
                assert_eq!(d.tunable("async_depth"), Ok(i64::from(nr.max(1))));
                assert_eq!(
                    d.async_depth_limit(Op::Write, true),
                    Some(u32::from(nr.max(1)))
                );
                assert_eq!(d.async_depth_limit(Op::Read, true), None);
            }
            FuzzOp::Abuse(t, k) => {
                if input.simple && k % 6 == 2 {
                    continue;
                }
                let t = usize::from(t);
                let desc = RequestDesc::default();
                match k % 6 {
                    0 => d.insert(cap + t, &desc, k & 8 != 0, m.now),
                    1 => d.completed(t, m.now),
                    2 => d.requeued(t, m.now),
                    3 => d.front_merged(cap + t, 0, 0),
                    4 => d.requests_merged(t % (cap + 2), cap + t % 3),
                    _ => {
                        if let Some(q) = m.pick(k, |r| matches!(r.st, St::AtHead | St::Sorted)) {
                            d.insert(q, &desc, k & 8 != 0, m.now);
                        }
                    }
                }
                if matches!(k % 6, 1 | 2) && t < cap && m.reqs[t].st == St::InFlight {
                    if k % 6 == 1 {
                        m.reqs[t].st = St::Free;
                        m.naive.finish(t);
                        m.gone += 1;
                    } else {
                        m.reinsert_at_head(&mut d, t);
                    }
                }
            }
        }
        check(&d, &m);
    }

    // Drain: everything goes out exactly once (or was merged away).
    let mut rounds = 0;
    while m.reqs.iter().any(|r| r.st != St::Free) {
        rounds += 1;
        assert!(rounds < 10 * cap + 10, "drain does not finish");
        match dispatch(&mut d, &mut m) {
            Some(t) => m.complete(&mut d, t),
            None => {
                for t in 0..cap {
                    if m.reqs[t].st == St::InFlight {
                        m.complete(&mut d, t);
                    }
                }
                m.now = m.now.wrapping_add(i32::MAX as Nanos * MS);
            }
        }
        check(&d, &m);
    }
    assert_eq!(m.fresh, m.gone);
    assert_eq!(d.dispatch(m.now), Dispatch::Empty);
});
