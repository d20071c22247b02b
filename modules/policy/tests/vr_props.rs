// SPDX-License-Identifier: GPL-2.0

//! Property tests of the V(R) policy: over random sequences of inserts,
//! dispatches, completions, requeues, front merges, request merges,
//! tunable writes and time steps it decides as a slow model of its
//! documentation does, keeps its structures consistent, and dispatches
//! every request exactly once; and an expired request goes out within the
//! bound its documentation gives.

use std::collections::HashMap;

use ironlift_policy::vr::{HeadDir, Slot, Vr};
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector, TunableError,
    NSEC_PER_MSEC,
};
use proptest::prelude::*;

mod vr_naive;
use vr_naive as naive;

const MS: Nanos = NSEC_PER_MSEC;

type V = Vr<Vec<Slot>>;

#[derive(Clone, Debug)]
enum Step {
    Insert {
        hint: usize,
        sector: Sector,
        op: Op,
        sync: bool,
        class: PrioClass,
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
    Merge(usize, usize),
    Advance(Nanos),
    Tune(usize, u32),
    /// A write that is not a valid value: it fails and changes nothing.
    BadTune(usize, &'static str),
    /// Calls that break the protocol; they must change nothing.
    Abuse(usize, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Read),
        3 => Just(Op::Write),
        1 => Just(Op::Discard),
    ]
}

fn sector() -> impl Strategy<Value = Sector> {
    prop_oneof![
        8 => 0..256u64,
        1 => any::<u64>(),
        1 => (u64::MAX - 64)..=u64::MAX,
    ]
}

fn class() -> impl Strategy<Value = PrioClass> {
    prop_oneof![
        1 => Just(PrioClass::RealTime),
        3 => Just(PrioClass::BestEffort),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (any::<usize>(), sector(), op(), any::<bool>(), class(), prop::bool::weighted(0.1))
            .prop_map(|(hint, sector, op, sync, class, at_head)| Step::Insert {
                hint, sector, op, sync, class, at_head
            }),
        10 => Just(Step::Dispatch),
        6 => any::<usize>().prop_map(Step::Complete),
        1 => any::<usize>().prop_map(Step::Requeue),
        2 => (any::<usize>(), prop::option::weighted(0.3, 0..300u64), 0..16u32)
            .prop_map(|(pick, anywhere, grow)| Step::FrontMerge { pick, anywhere, grow }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Merge(a, b)),
        4 => prop_oneof![0..MS, 0..1_000 * MS, 0..20_000 * MS].prop_map(Step::Advance),
        1 => (0..4usize, prop_oneof![0..4u32, 0..6_000u32]).prop_map(|(n, v)| Step::Tune(n, v)),
        1 => (0..4usize, prop::sample::select(vec!["", "-1", "x", "2147483648", "1 "]))
            .prop_map(|(n, t)| Step::BadTune(n, t)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(t, k)| Step::Abuse(t, k)),
    ]
}

/// What the test knows of a tag beyond the model.
#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Free,
    Queued,
    InFlight,
}

fn check(v: &V, r: &naive::Vr) -> Result<(), TestCaseError> {
    v.check_invariants().map_err(TestCaseError::fail)?;
    prop_assert_eq!(v.queued(), r.queued());
    prop_assert_eq!(v.has_work(), r.queued() > 0);
    let dir = if r.forward {
        HeadDir::Forward
    } else {
        HeadDir::Backward
    };
    prop_assert_eq!(v.head(), (r.last_sector, dir));
    prop_assert_eq!(v.batched(), r.nbatched);
    Ok(())
}

fn pick(st: &[St], n: usize, want: St) -> Option<usize> {
    let tags: Vec<usize> = (0..st.len()).filter(|&t| st[t] == want).collect();
    (!tags.is_empty()).then(|| tags[n % tags.len()])
}

fn dispatch(
    v: &mut V,
    r: &mut naive::Vr,
    st: &mut [St],
    now: Nanos,
) -> Result<Option<usize>, TestCaseError> {
    let want = r.dispatch(now);
    let got = match v.dispatch(now) {
        Dispatch::Request(t) => Some(t),
        Dispatch::Empty => None,
        other => return Err(TestCaseError::fail(format!("{other:?}"))),
    };
    prop_assert_eq!(got, want);
    if let Some(t) = got {
        // Only a queued request goes out, once.
        prop_assert_eq!(st[t], St::Queued);
        st[t] = St::InFlight;
    }
    Ok(got)
}

fn run(cap: usize, start: Nanos, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let mut v: V = Vr::new(vec![Slot::default(); cap]).unwrap();
    let mut r = naive::Vr::new(cap);
    let mut st = vec![St::Free; cap];
    let mut descs = vec![RequestDesc::default(); cap];
    let mut now = start;
    let (mut fresh, mut done, mut merged) = (0u64, 0u64, 0u64);
    for step in steps {
        match step {
            Step::Insert {
                hint,
                sector,
                op,
                sync,
                class,
                at_head,
            } => {
                let Some(t) = (0..cap)
                    .map(|i| (hint + i) % cap)
                    .find(|&t| st[t] == St::Free)
                else {
                    continue;
                };
                let d = RequestDesc {
                    sector,
                    op,
                    sync: sync || op.is_read(),
                    prio: IoPrio { class, level: 4 },
                    ..RequestDesc::default()
                };
                v.insert(t, &d, at_head, now);
                r.insert(t, &d, at_head, now);
                descs[t] = d;
                st[t] = St::Queued;
                fresh += 1;
            }
            Step::Dispatch => {
                dispatch(&mut v, &mut r, &mut st, now)?;
            }
            Step::Complete(n) => {
                if let Some(t) = pick(&st, n, St::InFlight) {
                    v.completed(t, now);
                    r.complete(t);
                    st[t] = St::Free;
                    done += 1;
                }
            }
            Step::Requeue(n) => {
                if let Some(t) = pick(&st, n, St::InFlight) {
                    v.requeued(t, now);
                    descs[t].sector = r.rq[t].sector;
                    v.insert(t, &descs[t], true, now);
                    r.insert(t, &descs[t], true, now);
                    st[t] = St::Queued;
                }
            }
            Step::FrontMerge {
                pick: n,
                anywhere,
                grow,
            } => {
                let probe = match (anywhere, pick(&st, n, St::Queued)) {
                    (None, Some(t)) => MergeProbe {
                        bio_end: r.rq[t].sector,
                        op: descs[t].op,
                        prio: descs[t].prio,
                    },
                    (Some(s), _) => MergeProbe {
                        bio_end: s,
                        op: [Op::Read, Op::Write, Op::Flush][n % 3],
                        prio: IoPrio::DEFAULT,
                    },
                    (None, None) => continue,
                };
                let want = r.front_merge_candidate(&probe);
                prop_assert_eq!(v.front_merge_candidate(&probe), want);
                if let Some(t) = want {
                    let sector = r.rq[t].sector.saturating_sub(u64::from(grow));
                    v.front_merged(t, sector, 8 + grow);
                    r.front_merged(t, sector);
                }
            }
            Step::Merge(a, b) => {
                let (Some(i), Some(n)) = (pick(&st, a, St::Queued), pick(&st, b, St::Queued))
                else {
                    continue;
                };
                if i == n {
                    continue;
                }
                v.requests_merged(i, n);
                r.merged(i, n);
                st[n] = St::Free;
                merged += 1;
            }
            Step::Advance(dt) => now = now.wrapping_add(dt),
            Step::Tune(n, val) => {
                prop_assert_eq!(v.set_tunable(naive::NAMES[n], &val.to_string()), Ok(()));
                r.tune(n, val);
                prop_assert_eq!(v.tunable(naive::NAMES[n]), Ok(i64::from(val)));
            }
            Step::BadTune(n, text) => {
                let before = v.tunable(naive::NAMES[n]);
                prop_assert!(v.set_tunable(naive::NAMES[n], text).is_err());
                prop_assert_eq!(v.tunable(naive::NAMES[n]), before);
            }
            Step::Abuse(t, k) => {
                let d = RequestDesc::default();
                match k % 5 {
                    0 => v.insert(cap + t % 4, &d, k & 8 != 0, now),
                    1 => v.completed(cap + t % 4, now),
                    2 => v.requests_merged(t % (cap + 2), cap + t % 3),
                    3 => {
                        // Insert a tag that is already queued.
                        if let Some(q) = pick(&st, t, St::Queued) {
                            v.insert(q, &d, k & 8 != 0, now);
                        }
                    }
                    _ => v.front_merged(cap + t % 4, 0, 0),
                }
                prop_assert_eq!(v.tunable("nope"), Err(TunableError::UnknownName));
            }
        }
        check(&v, &r)?;
    }
    // Drain: everything inserted goes out exactly once (or was merged).
    let mut rounds = 0;
    while st.iter().any(|&x| x != St::Free) {
        rounds += 1;
        prop_assert!(rounds < 2 * cap + 10, "drain does not finish");
        match dispatch(&mut v, &mut r, &mut st, now)? {
            Some(t) => {
                v.completed(t, now);
                r.complete(t);
                st[t] = St::Free;
                done += 1;
            }
            None => {
                prop_assert!(!st.contains(&St::Queued), "queued requests stay");
                for (t, x) in st.iter_mut().enumerate() {
                    if *x == St::InFlight {
                        v.completed(t, now);
                        r.complete(t);
                        *x = St::Free;
                        done += 1;
                    }
                }
            }
        }
        check(&v, &r)?;
    }
    prop_assert_eq!(fresh, done + merged);
    prop_assert_eq!(v.dispatch(now), Dispatch::Empty);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Decision for decision, the policy does what a slow model of its
    /// documentation does, and every request goes out exactly once.
    #[test]
    fn random_operations_match_a_slow_model(
        cap in 1..48usize,
        start in prop_oneof![Just(0u64), any::<u64>(), Just(u64::MAX - 5_000 * MS)],
        steps in prop::collection::vec(step(), 0..300),
    ) {
        run(cap, start, steps)?;
    }
}

#[derive(Clone, Debug)]
enum Simple {
    Insert(Sector, Op, bool),
    Dispatch,
    Advance(Nanos),
}

fn simple() -> impl Strategy<Value = Simple> {
    prop_oneof![
        4 => (0..100_000u64, op(), any::<bool>()).prop_map(|(s, o, y)| Simple::Insert(s, o, y)),
        6 => Just(Simple::Dispatch),
        2 => (0..20 * MS).prop_map(Simple::Advance),
    ]
}

/// Once a request with a deadline has expired, it goes out within
/// `(A + 1) × (fifo_batch + 1) + 1` dispatches, `A` being the requests
/// then queued whose deadline is not later than its own (the module
/// documentation's bound), with fixed tunables, nothing at head, no
/// merges and time that only moves on.
fn expiry_bound(
    steps: Vec<Simple>,
    fifo_batch: u32,
    rev_penalty: u32,
    expire_ms: [u32; 2],
    start: Nanos,
) -> Result<(), TestCaseError> {
    let cap = 64;
    let mut v: V = Vr::new(vec![Slot::default(); cap]).unwrap();
    v.set_tunable("sync_expire", &expire_ms[0].to_string())
        .unwrap();
    v.set_tunable("async_expire", &expire_ms[1].to_string())
        .unwrap();
    v.set_tunable("fifo_batch", &fifo_batch.to_string())
        .unwrap();
    v.set_tunable("rev_penalty", &rev_penalty.to_string())
        .unwrap();
    let mut free: Vec<usize> = (0..cap).rev().collect();
    // Queued requests: their deadlines.
    let mut queued: HashMap<usize, Nanos> = HashMap::new();
    // Expired ones: dispatches since, and the bound.
    let mut waiting: HashMap<usize, (u64, u64)> = HashMap::new();
    let mut now = start;
    let per = u64::from(fifo_batch) + 1;
    for step in steps {
        match step {
            Simple::Insert(sector, op, sync) => {
                let Some(t) = free.pop() else { continue };
                let sync = sync || op.is_read();
                let d = RequestDesc {
                    sector,
                    op,
                    sync,
                    ..RequestDesc::default()
                };
                v.insert(t, &d, false, now);
                let expire = expire_ms[usize::from(!sync)];
                queued.insert(t, now.wrapping_add(Nanos::from(expire) * MS));
            }
            Simple::Advance(dt) => now = now.wrapping_add(dt),
            Simple::Dispatch => {
                for (&t, &deadline) in &queued {
                    if naive::time_after(now, deadline) && !waiting.contains_key(&t) {
                        let ahead = queued
                            .iter()
                            .filter(|&(&o, &d)| o != t && !naive::time_after(d, deadline))
                            .count() as u64;
                        waiting.insert(t, (0, (ahead + 1) * per + 1));
                    }
                }
                let Dispatch::Request(t) = v.dispatch(now) else {
                    prop_assert!(queued.is_empty(), "nothing dispatched with requests queued");
                    continue;
                };
                v.completed(t, now);
                free.push(t);
                queued.remove(&t);
                for (&w, (dispatches, bound)) in waiting.iter_mut() {
                    *dispatches += 1;
                    if w == t {
                        prop_assert!(
                            *dispatches <= *bound,
                            "an expired request went out after {} dispatches (bound {})",
                            dispatches,
                            bound
                        );
                    } else {
                        prop_assert!(
                            *dispatches < *bound,
                            "an expired request still waits after {} dispatches (bound {})",
                            dispatches,
                            bound
                        );
                    }
                }
                waiting.remove(&t);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the penalty, sorting never holds an expired request back
    /// beyond the bound.
    #[test]
    fn expired_request_goes_out_within_the_bound(
        fifo_batch in 0..8u32,
        rev_penalty in prop_oneof![Just(0u32), Just(1), 0..1000u32],
        expire_ms in [1..100u32, 1..200u32],
        start in any::<u64>(),
        steps in prop::collection::vec(simple(), 0..400),
    ) {
        expiry_bound(steps, fifo_batch, rev_penalty, expire_ms, start)?;
    }
}
