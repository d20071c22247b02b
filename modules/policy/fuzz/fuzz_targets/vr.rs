// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the V(R) policy with random operation sequences against the
//! slow model of its documentation that the property tests use: every
//! dispatch, the head and the batch count, front-merge candidates,
//! queued()/has_work() and the tunables match it; the structures stay
//! consistent; sysfs text is accepted exactly when it is a number in
//! range, and a rejected write keeps the value; calls that break the
//! protocol change nothing; draining at the end dispatches everything
//! exactly once.

#![no_main]

use arbitrary::Arbitrary;
use ironlift_policy::vr::{HeadDir, Slot, Vr};
use ironlift_policy::{
    parse_sysfs_in_range, Dispatch, IoPrio, MergeProbe, Op, Policy, PrioClass, RequestDesc,
};
use libfuzzer_sys::fuzz_target;

/// The slow model of V(R) that the property tests use too.
#[path = "../../tests/vr_naive/mod.rs"]
#[allow(dead_code)]
mod naive;

#[derive(Arbitrary, Debug)]
struct Input {
    cap: u8,
    start: u64,
    ops: Vec<FuzzOp>,
}

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Insert {
        hint: u8,
        sector: u64,
        small_sector: u8,
        use_small: bool,
        op: u8,
        sync: bool,
        class: u8,
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
    Merge(u8, u8),
    Advance(u32),
    AdvanceFar(u64),
    Tune(u8, u32),
    TuneText(u8, String),
    Abuse(u16, u8),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Free,
    Queued,
    InFlight,
}

struct Model {
    st: Vec<St>,
    desc: Vec<RequestDesc>,
    now: u64,
    fresh: u64,
    gone: u64,
    naive: naive::Vr,
}

impl Model {
    fn pick(&self, n: u8, want: St) -> Option<usize> {
        let tags: Vec<usize> = (0..self.st.len()).filter(|&t| self.st[t] == want).collect();
        (!tags.is_empty()).then(|| tags[usize::from(n) % tags.len()])
    }

    fn insert(&mut self, v: &mut Vr<Vec<Slot>>, t: usize, at_head: bool) {
        v.insert(t, &self.desc[t], at_head, self.now);
        self.naive.insert(t, &self.desc[t], at_head, self.now);
        self.st[t] = St::Queued;
    }

    fn dispatch(&mut self, v: &mut Vr<Vec<Slot>>) -> Option<usize> {
        let want = self.naive.dispatch(self.now);
        let got = match v.dispatch(self.now) {
            Dispatch::Request(t) => Some(t),
            Dispatch::Empty => None,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(got, want, "differs from the model");
        if let Some(t) = got {
            assert_eq!(self.st[t], St::Queued, "dispatched {t} twice");
            self.st[t] = St::InFlight;
        }
        got
    }

    fn complete(&mut self, v: &mut Vr<Vec<Slot>>, t: usize) {
        v.completed(t, self.now);
        self.naive.complete(t);
        self.st[t] = St::Free;
        self.gone += 1;
    }
}

fn check(v: &Vr<Vec<Slot>>, m: &Model) {
    if let Err(e) = v.check_invariants() {
        panic!("invariant: {e}");
    }
    assert_eq!(v.queued(), m.naive.queued());
    assert_eq!(v.has_work(), m.naive.queued() > 0);
    let dir = if m.naive.forward {
        HeadDir::Forward
    } else {
        HeadDir::Backward
    };
    assert_eq!(v.head(), (m.naive.last_sector, dir));
    assert_eq!(v.batched(), m.naive.nbatched);
}

fuzz_target!(|input: Input| {
    let cap = usize::from(input.cap % 64) + 1;
    let mut v = Vr::new(vec![Slot::default(); cap]).unwrap();
    let mut m = Model {
        st: vec![St::Free; cap],
        desc: vec![RequestDesc::default(); cap],
        now: input.start,
        fresh: 0,
        gone: 0,
        naive: naive::Vr::new(cap),
    };
    for op in input.ops.into_iter().take(2000) {
        match op {
            FuzzOp::Insert {
                hint,
                sector,
                small_sector,
                use_small,
                op,
                sync,
                class,
                at_head,
            } => {
                let Some(t) = (0..cap)
                    .map(|i| (usize::from(hint) + i) % cap)
                    .find(|&t| m.st[t] == St::Free)
                else {
                    continue;
                };
                let op = [Op::Read, Op::Read, Op::Write, Op::Discard][usize::from(op) % 4];
                let class = [PrioClass::RealTime, PrioClass::BestEffort, PrioClass::Idle]
                    [usize::from(class) % 3];
                m.desc[t] = RequestDesc {
                    sector: if use_small {
                        u64::from(small_sector)
                    } else {
                        sector
                    },
                    op,
                    sync,
                    prio: IoPrio { class, level: 4 },
                    ..RequestDesc::default()
                };
                m.insert(&mut v, t, at_head);
                m.fresh += 1;
            }
            FuzzOp::Dispatch => {
                m.dispatch(&mut v);
            }
            FuzzOp::Complete(k) => {
                if let Some(t) = m.pick(k, St::InFlight) {
                    m.complete(&mut v, t);
                }
            }
            FuzzOp::Requeue(k) => {
                if let Some(t) = m.pick(k, St::InFlight) {
                    v.requeued(t, m.now);
                    m.desc[t].sector = m.naive.rq[t].sector;
                    m.insert(&mut v, t, true);
                }
            }
            FuzzOp::FrontMerge {
                pick,
                anywhere,
                grow,
            } => {
                let probe = match (anywhere, m.pick(pick, St::Queued)) {
                    (None, Some(t)) => MergeProbe {
                        bio_end: m.naive.rq[t].sector,
                        op: m.desc[t].op,
                        prio: m.desc[t].prio,
                    },
                    (Some(s), _) => MergeProbe {
                        bio_end: u64::from(s),
                        op: [Op::Read, Op::Write, Op::Flush][usize::from(pick) % 3],
                        prio: IoPrio::DEFAULT,
                    },
                    (None, None) => continue,
                };
                let want = m.naive.front_merge_candidate(&probe);
                assert_eq!(v.front_merge_candidate(&probe), want);
                if let Some(t) = want {
                    let sector = m.naive.rq[t].sector.saturating_sub(u64::from(grow));
                    v.front_merged(t, sector, 8);
                    m.naive.front_merged(t, sector);
                }
            }
            FuzzOp::Merge(a, b) => {
                let (Some(i), Some(n)) = (m.pick(a, St::Queued), m.pick(b, St::Queued)) else {
                    continue;
                };
                if i == n {
                    continue;
                }
                v.requests_merged(i, n);
                m.naive.merged(i, n);
                m.st[n] = St::Free;
                m.gone += 1;
            }
            FuzzOp::Advance(dt) => m.now = m.now.wrapping_add(u64::from(dt) * 1000),
            FuzzOp::AdvanceFar(dt) => m.now = m.now.wrapping_add(dt),
            FuzzOp::Tune(k, val) => {
                let n = usize::from(k) % naive::NAMES.len();
                let val = val % 8_000;
                v.set_tunable(naive::NAMES[n], &val.to_string()).unwrap();
                m.naive.tune(n, val);
                assert_eq!(v.tunable(naive::NAMES[n]), Ok(i64::from(val)));
            }
            FuzzOp::TuneText(k, text) => {
                let n = usize::from(k) % naive::NAMES.len();
                let name = naive::NAMES[n];
                let before = v.tunable(name).unwrap();
                let want = parse_sysfs_in_range(&text, 0, i64::from(i32::MAX));
                match v.set_tunable(name, &text) {
                    Ok(()) => {
                        let val = want.expect("accepted text that does not parse");
                        assert_eq!(v.tunable(name), Ok(val));
                        m.naive.tune(n, val as u32);
                    }
                    Err(e) => {
                        assert_eq!(want, Err(e), "rejected text that parses");
                        assert_eq!(v.tunable(name), Ok(before));
                    }
                }
            }
            FuzzOp::Abuse(t, k) => {
                let t = usize::from(t);
                let d = RequestDesc::default();
                match k % 6 {
                    0 => v.insert(cap + t % 4, &d, k & 8 != 0, m.now),
                    1 => v.completed(cap + t % 4, m.now),
                    2 => v.requests_merged(t % (cap + 2), cap + t % 3),
                    3 => {
                        if let Some(q) = m.pick(k, St::Queued) {
                            v.insert(q, &d, k & 8 != 0, m.now);
                            v.completed(q, m.now);
                        }
                    }
                    4 => v.front_merged(cap + t % 4, 0, 0),
                    _ => v.requeued(t, m.now),
                }
                assert!(v.set_tunable("nope", "1").is_err());
            }
        }
        check(&v, &m);
    }
    // Drain: everything inserted goes out exactly once (or was merged).
    while let Some(t) = m.dispatch(&mut v) {
        m.complete(&mut v, t);
    }
    for t in 0..cap {
        if m.st[t] == St::InFlight {
            m.complete(&mut v, t);
        }
    }
    check(&v, &m);
    assert_eq!(m.fresh, m.gone, "a request was lost or went out twice");
});
