// SPDX-License-Identifier: GPL-2.0

//! Property tests of the noop policy against a model (two double-ended
//! queues), over random sequences of inserts, dispatches, completions,
//! requeues, merges and calls that break the protocol: every decision is
//! the model's, the structures stay consistent, every request goes out
//! exactly once, and none waits for more than the requests ahead of it.

use std::collections::VecDeque;

use ironlift_policy::noop::{Noop, Slot};
use ironlift_policy::{Dispatch, MergeProbe, Nanos, Op, Policy, RequestDesc};
use proptest::prelude::*;

type N = Noop<Vec<Slot>>;

#[derive(Clone, Debug)]
enum Step {
    Insert {
        hint: usize,
        at_head: bool,
    },
    Dispatch,
    Complete(usize),
    /// Requeue an in-flight request and insert it again at head.
    Requeue(usize),
    Merge(usize, usize),
    /// Calls that break the protocol, or that noop ignores; they must
    /// change nothing.
    Abuse(usize, u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (any::<usize>(), prop::bool::weighted(0.1))
            .prop_map(|(hint, at_head)| Step::Insert { hint, at_head }),
        10 => Just(Step::Dispatch),
        6 => any::<usize>().prop_map(Step::Complete),
        1 => any::<usize>().prop_map(Step::Requeue),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Merge(a, b)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(t, k)| Step::Abuse(t, k)),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Free,
    Queued,
    InFlight,
}

/// The model: the at-head requests (latest first) and the FIFO; for each
/// queued request, the dispatches it may still wait for (those ahead of
/// it when it came, and at-head ones since).
struct Model {
    at_head: VecDeque<usize>,
    fifo: VecDeque<usize>,
    st: Vec<St>,
    may_wait: Vec<usize>,
}

impl Model {
    fn queued(&self) -> usize {
        self.at_head.len() + self.fifo.len()
    }

    fn pick(&self, n: usize, want: St) -> Option<usize> {
        let tags: Vec<usize> = (0..self.st.len()).filter(|&t| self.st[t] == want).collect();
        (!tags.is_empty()).then(|| tags[n % tags.len()])
    }

    fn insert(&mut self, t: usize, at_head: bool) {
        if at_head {
            self.at_head.push_front(t);
            self.may_wait[t] = 0;
            for &q in self.fifo.iter().chain(self.at_head.iter().skip(1)) {
                self.may_wait[q] += 1;
            }
        } else {
            self.fifo.push_back(t);
            self.may_wait[t] = self.queued() - 1;
        }
        self.st[t] = St::Queued;
    }

    fn remove(&mut self, t: usize) {
        self.at_head.retain(|&x| x != t);
        self.fifo.retain(|&x| x != t);
    }
}

fn dispatch(n: &mut N, m: &mut Model) -> Result<Option<usize>, TestCaseError> {
    let want = m.at_head.front().or(m.fifo.front()).copied();
    let got = match n.dispatch(0) {
        Dispatch::Request(t) => Some(t),
        Dispatch::Empty => None,
        other => return Err(TestCaseError::fail(format!("{other:?}"))),
    };
    prop_assert_eq!(got, want);
    if let Some(t) = got {
        prop_assert_eq!(m.st[t], St::Queued);
        m.remove(t);
        m.st[t] = St::InFlight;
        for &q in m.at_head.iter().chain(m.fifo.iter()) {
            // One of the requests it may wait for went out.
            prop_assert!(m.may_wait[q] > 0, "tag {} waits beyond its bound", q);
            m.may_wait[q] -= 1;
        }
    }
    Ok(got)
}

fn run(cap: usize, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let mut n: N = Noop::new(vec![Slot::default(); cap]).unwrap();
    let mut m = Model {
        at_head: VecDeque::new(),
        fifo: VecDeque::new(),
        st: vec![St::Free; cap],
        may_wait: vec![0; cap],
    };
    let (mut fresh, mut done, mut merged) = (0u64, 0u64, 0u64);
    let req = |t: usize| RequestDesc {
        sector: (t as u64 * 7919) % 1000,
        op: if t.is_multiple_of(3) {
            Op::Write
        } else {
            Op::Read
        },
        ..RequestDesc::default()
    };
    for step in steps {
        match step {
            Step::Insert { hint, at_head } => {
                let Some(t) = (0..cap)
                    .map(|i| (hint + i) % cap)
                    .find(|&t| m.st[t] == St::Free)
                else {
                    continue;
                };
                n.insert(t, &req(t), at_head, hint as Nanos);
                m.insert(t, at_head);
                fresh += 1;
            }
            Step::Dispatch => {
                dispatch(&mut n, &mut m)?;
            }
            Step::Complete(k) => {
                if let Some(t) = m.pick(k, St::InFlight) {
                    n.completed(t, 0);
                    m.st[t] = St::Free;
                    done += 1;
                }
            }
            Step::Requeue(k) => {
                if let Some(t) = m.pick(k, St::InFlight) {
                    n.requeued(t, 0);
                    n.insert(t, &req(t), true, 0);
                    m.insert(t, true);
                }
            }
            Step::Merge(a, b) => {
                let (Some(i), Some(k)) = (m.pick(a, St::Queued), m.pick(b, St::Queued)) else {
                    continue;
                };
                if i == k {
                    continue;
                }
                n.requests_merged(i, k);
                m.remove(k);
                m.st[k] = St::Free;
                merged += 1;
            }
            Step::Abuse(t, k) => {
                let d = RequestDesc::default();
                match k % 6 {
                    0 => n.insert(cap + t % 4, &d, k & 8 != 0, 0),
                    1 => n.completed(cap + t % 4, 0),
                    2 => n.requests_merged(t % (cap + 2), cap + t % 3),
                    3 => {
                        if let Some(q) = m.pick(t, St::Queued) {
                            n.insert(q, &d, k & 8 != 0, 0);
                            n.completed(q, 0);
                        }
                    }
                    4 => {
                        if let Some(q) = m.pick(t, St::Queued) {
                            n.front_merged(q, 0, 0);
                            n.back_merged(q, 64);
                        }
                    }
                    _ => {
                        let probe = MergeProbe {
                            bio_end: t as u64 % 1000,
                            op: Op::Read,
                            prio: Default::default(),
                        };
                        prop_assert_eq!(n.front_merge_candidate(&probe), None);
                    }
                }
            }
        }
        n.check_invariants().map_err(TestCaseError::fail)?;
        prop_assert_eq!(n.queued(), m.queued());
        prop_assert_eq!(n.has_work(), m.queued() > 0);
    }
    // Drain: everything inserted goes out exactly once (or was merged).
    while let Some(t) = dispatch(&mut n, &mut m)? {
        n.completed(t, 0);
        m.st[t] = St::Free;
        done += 1;
    }
    for t in 0..cap {
        if m.st[t] == St::InFlight {
            n.completed(t, 0);
            m.st[t] = St::Free;
            done += 1;
        }
    }
    n.check_invariants().map_err(TestCaseError::fail)?;
    prop_assert_eq!(fresh, done + merged);
    prop_assert!(!n.has_work());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_operations_keep_the_model(
        cap in 1..48usize,
        steps in prop::collection::vec(step(), 0..300),
    ) {
        run(cap, steps)?;
    }
}
