// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the noop policy with random operation sequences against a
//! queue model: the structures stay consistent, queued()/has_work()
//! match, every dispatch is the model's (at-head requests latest first,
//! then the FIFO), merges remove exactly the request merged away, calls
//! that break the protocol change nothing, and draining at the end
//! dispatches everything exactly once.

#![no_main]

use std::collections::VecDeque;

use arbitrary::Arbitrary;
use ironlift_policy::noop::{Noop, Slot};
use ironlift_policy::{Dispatch, MergeProbe, Op, Policy, RequestDesc};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    cap: u8,
    ops: Vec<FuzzOp>,
}

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Insert { hint: u8, sector: u64, op: u8, at_head: bool },
    Dispatch,
    Complete(u8),
    Requeue(u8),
    Merge(u8, u8),
    FrontMerge(u8, u16),
    Tune(u8, String),
    Abuse(u16, u8),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Free,
    Queued,
    InFlight,
}

struct Model {
    at_head: VecDeque<usize>,
    fifo: VecDeque<usize>,
    st: Vec<St>,
    desc: Vec<RequestDesc>,
    fresh: u64,
    gone: u64,
}

impl Model {
    fn pick(&self, n: u8, want: St) -> Option<usize> {
        let tags: Vec<usize> = (0..self.st.len()).filter(|&t| self.st[t] == want).collect();
        (!tags.is_empty()).then(|| tags[usize::from(n) % tags.len()])
    }

    fn queued(&self) -> usize {
        self.at_head.len() + self.fifo.len()
    }

    fn insert(&mut self, n: &mut Noop<Vec<Slot>>, t: usize, at_head: bool) {
        n.insert(t, &self.desc[t], at_head, 0);
        if at_head {
            self.at_head.push_front(t);
        } else {
            self.fifo.push_back(t);
        }
        self.st[t] = St::Queued;
    }

    fn dispatch(&mut self, n: &mut Noop<Vec<Slot>>) -> Option<usize> {
        let want = self.at_head.pop_front().or_else(|| self.fifo.pop_front());
        let got = match n.dispatch(0) {
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

    fn complete(&mut self, n: &mut Noop<Vec<Slot>>, t: usize) {
        n.completed(t, 0);
        self.st[t] = St::Free;
        self.gone += 1;
    }
}

fn check(n: &Noop<Vec<Slot>>, m: &Model) {
    if let Err(e) = n.check_invariants() {
        panic!("invariant: {e}");
    }
    assert_eq!(n.queued(), m.queued());
    assert_eq!(n.has_work(), m.queued() > 0);
}

fuzz_target!(|input: Input| {
    let cap = usize::from(input.cap % 64) + 1;
    let mut n = Noop::new(vec![Slot::default(); cap]).unwrap();
    let mut m = Model {
        at_head: VecDeque::new(),
        fifo: VecDeque::new(),
        st: vec![St::Free; cap],
        desc: vec![RequestDesc::default(); cap],
        fresh: 0,
        gone: 0,
    };
    for op in input.ops.into_iter().take(2000) {
        match op {
            FuzzOp::Insert {
                hint,
                sector,
                op,
                at_head,
            } => {
                let Some(t) = (0..cap)
                    .map(|i| (usize::from(hint) + i) % cap)
                    .find(|&t| m.st[t] == St::Free)
                else {
                    continue;
                };
                let op = [Op::Read, Op::Write, Op::Discard][usize::from(op) % 3];
                m.desc[t] = RequestDesc {
                    sector,
                    op,
                    sync: op.is_read(),
                    ..RequestDesc::default()
                };
                m.insert(&mut n, t, at_head);
                m.fresh += 1;
            }
            FuzzOp::Dispatch => {
                m.dispatch(&mut n);
            }
            FuzzOp::Complete(k) => {
                if let Some(t) = m.pick(k, St::InFlight) {
                    m.complete(&mut n, t);
                }
            }
            FuzzOp::Requeue(k) => {
                if let Some(t) = m.pick(k, St::InFlight) {
                    n.requeued(t, 0);
                    m.insert(&mut n, t, true);
                }
            }
            FuzzOp::Merge(a, b) => {
                let (Some(i), Some(k)) = (m.pick(a, St::Queued), m.pick(b, St::Queued)) else {
                    continue;
                };
                if i == k {
                    continue;
                }
                n.requests_merged(i, k);
                m.at_head.retain(|&x| x != k);
                m.fifo.retain(|&x| x != k);
                m.st[k] = St::Free;
                m.gone += 1;
            }
            FuzzOp::FrontMerge(k, grow) => {
                if let Some(t) = m.pick(k, St::Queued) {
                    let d = m.desc[t];
                    let probe = MergeProbe {
                        bio_end: d.sector,
                        op: d.op,
                        prio: d.prio,
                    };
                    assert_eq!(n.front_merge_candidate(&probe), None);
                    n.front_merged(t, d.sector.saturating_sub(u64::from(grow)), 8);
                    n.back_merged(t, u32::from(grow));
                }
            }
            FuzzOp::Tune(k, text) => {
                let name = ["fifo_batch", "", "read_expire"][usize::from(k) % 3];
                assert!(n.set_tunable(name, &text).is_err());
                assert!(n.tunable(name).is_err());
            }
            FuzzOp::Abuse(t, k) => {
                let t = usize::from(t);
                let d = RequestDesc::default();
                match k % 5 {
                    0 => n.insert(cap + t % 4, &d, k & 8 != 0, 0),
                    1 => n.completed(cap + t % 4, 0),
                    2 => n.requests_merged(t % (cap + 2), cap + t % 3),
                    3 => {
                        // Insert or complete a tag that is queued.
                        if let Some(q) = m.pick(k, St::Queued) {
                            n.insert(q, &d, k & 8 != 0, 0);
                            n.completed(q, 0);
                        }
                    }
                    _ => n.requeued(t, 0),
                }
            }
        }
        check(&n, &m);
    }
    // Drain: everything inserted goes out exactly once (or was merged).
    while let Some(t) = m.dispatch(&mut n) {
        m.complete(&mut n, t);
    }
    for t in 0..cap {
        if m.st[t] == St::InFlight {
            m.complete(&mut n, t);
        }
    }
    check(&n, &m);
    assert_eq!(m.fresh, m.gone, "a request was lost or went out twice");
});
