// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the SIO policy with random operation sequences against the
//! literal port of its C that the property tests use: every dispatch, the
//! batch and starvation counts, queued()/has_work() and the tunables
//! match it; the structures stay consistent; sysfs text is accepted
//! exactly when it is a number in range, and a rejected write keeps the
//! value; calls that break the protocol change nothing; draining at the
//! end dispatches everything exactly once.

#![no_main]

use arbitrary::Arbitrary;
use ironlift_policy::sio::{Sio, Slot};
use ironlift_policy::{
    parse_sysfs_in_range, Dispatch, IoPrio, MergeProbe, Op, Policy, PrioClass, RequestDesc,
};
use libfuzzer_sys::fuzz_target;

/// The literal port of SIO that the property tests use too.
#[path = "../../tests/sio_naive/mod.rs"]
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
        op: u8,
        sync: bool,
        class: u8,
        at_head: bool,
    },
    Dispatch,
    Complete(u8),
    Requeue(u8),
    Merge(u8, u8),
    FrontMerge(u8),
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
    naive: naive::Sio,
}

impl Model {
    fn pick(&self, n: u8, want: St) -> Option<usize> {
        let tags: Vec<usize> = (0..self.st.len()).filter(|&t| self.st[t] == want).collect();
        (!tags.is_empty()).then(|| tags[usize::from(n) % tags.len()])
    }

    fn insert(&mut self, s: &mut Sio<Vec<Slot>>, t: usize, at_head: bool) {
        s.insert(t, &self.desc[t], at_head, self.now);
        self.naive.insert(t, &self.desc[t], at_head, self.now);
        self.st[t] = St::Queued;
    }

    fn dispatch(&mut self, s: &mut Sio<Vec<Slot>>) -> Option<usize> {
        let want = self.naive.dispatch(self.now);
        let got = match s.dispatch(self.now) {
            Dispatch::Request(t) => Some(t),
            Dispatch::Empty => None,
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(got, want, "differs from the C port");
        if let Some(t) = got {
            assert_eq!(self.st[t], St::Queued, "dispatched {t} twice");
            self.st[t] = St::InFlight;
        }
        got
    }

    fn complete(&mut self, s: &mut Sio<Vec<Slot>>, t: usize) {
        s.completed(t, self.now);
        self.naive.complete(t);
        self.st[t] = St::Free;
        self.gone += 1;
    }
}

fn check(s: &Sio<Vec<Slot>>, m: &Model) {
    if let Err(e) = s.check_invariants() {
        panic!("invariant: {e}");
    }
    assert_eq!(s.queued(), m.naive.queued());
    assert_eq!(s.has_work(), m.naive.queued() > 0);
    assert_eq!((s.batched(), s.starved()), (m.naive.batched, m.naive.starved));
}

fuzz_target!(|input: Input| {
    let cap = usize::from(input.cap % 64) + 1;
    let mut s = Sio::new(vec![Slot::default(); cap]).unwrap();
    let mut m = Model {
        st: vec![St::Free; cap],
        desc: vec![RequestDesc::default(); cap],
        now: input.start,
        fresh: 0,
        gone: 0,
        naive: naive::Sio::new(cap),
    };
    for op in input.ops.into_iter().take(2000) {
        match op {
            FuzzOp::Insert {
                hint,
                sector,
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
                    sector,
                    op,
                    // The block layer makes every read sync; the policy
                    // files an async one as sync all the same.
                    sync,
                    prio: IoPrio { class, level: 4 },
                    ..RequestDesc::default()
                };
                m.insert(&mut s, t, at_head);
                m.fresh += 1;
            }
            FuzzOp::Dispatch => {
                m.dispatch(&mut s);
            }
            FuzzOp::Complete(k) => {
                if let Some(t) = m.pick(k, St::InFlight) {
                    m.complete(&mut s, t);
                }
            }
            FuzzOp::Requeue(k) => {
                if let Some(t) = m.pick(k, St::InFlight) {
                    s.requeued(t, m.now);
                    m.insert(&mut s, t, true);
                }
            }
            FuzzOp::Merge(a, b) => {
                let (Some(i), Some(n)) = (m.pick(a, St::Queued), m.pick(b, St::Queued)) else {
                    continue;
                };
                if i == n {
                    continue;
                }
                s.requests_merged(i, n);
                m.naive.merged(i, n);
                m.st[n] = St::Free;
                m.gone += 1;
            }
            FuzzOp::FrontMerge(k) => {
                if let Some(t) = m.pick(k, St::Queued) {
                    let d = m.desc[t];
                    let probe = MergeProbe {
                        bio_end: d.sector,
                        op: d.op,
                        prio: d.prio,
                    };
                    assert_eq!(s.front_merge_candidate(&probe), None);
                    s.front_merged(t, d.sector.saturating_sub(8), 16);
                    s.back_merged(t, 24);
                }
            }
            FuzzOp::Advance(dt) => m.now = m.now.wrapping_add(u64::from(dt) * 1000),
            FuzzOp::AdvanceFar(dt) => m.now = m.now.wrapping_add(dt),
            FuzzOp::Tune(k, v) => {
                let n = usize::from(k) % naive::NAMES.len();
                let v = v % 40_000;
                s.set_tunable(naive::NAMES[n], &v.to_string()).unwrap();
                m.naive.tune(n, v);
                assert_eq!(s.tunable(naive::NAMES[n]), Ok(i64::from(v)));
            }
            FuzzOp::TuneText(k, text) => {
                let n = usize::from(k) % naive::NAMES.len();
                let name = naive::NAMES[n];
                let before = s.tunable(name).unwrap();
                let want = parse_sysfs_in_range(&text, 0, i64::from(i32::MAX));
                match s.set_tunable(name, &text) {
                    Ok(()) => {
                        let v = want.expect("accepted text that does not parse");
                        assert_eq!(s.tunable(name), Ok(v));
                        m.naive.tune(n, v as u32);
                    }
                    Err(e) => {
                        assert_eq!(want, Err(e), "rejected text that parses");
                        assert_eq!(s.tunable(name), Ok(before));
                    }
                }
            }
            FuzzOp::Abuse(t, k) => {
                let t = usize::from(t);
                let d = RequestDesc::default();
                match k % 5 {
                    0 => s.insert(cap + t % 4, &d, k & 8 != 0, m.now),
                    1 => s.completed(cap + t % 4, m.now),
                    2 => s.requests_merged(t % (cap + 2), cap + t % 3),
                    3 => {
                        if let Some(q) = m.pick(k, St::Queued) {
                            s.insert(q, &d, k & 8 != 0, m.now);
                            s.completed(q, m.now);
                        }
                    }
                    _ => s.requeued(t, m.now),
                }
                assert!(s.set_tunable("nope", "1").is_err());
            }
        }
        check(&s, &m);
    }
    // Drain: everything inserted goes out exactly once (or was merged).
    while let Some(t) = m.dispatch(&mut s) {
        m.complete(&mut s, t);
    }
    for t in 0..cap {
        if m.st[t] == St::InFlight {
            m.complete(&mut s, t);
        }
    }
    check(&s, &m);
    assert_eq!(m.fresh, m.gone, "a request was lost or went out twice");
});
