// SPDX-License-Identifier: GPL-2.0

//! Property tests of the SIO policy: over random sequences of inserts,
//! dispatches, completions, requeues, merges, tunable writes and time
//! steps it decides as a literal port of the C does, keeps its structures
//! consistent, and dispatches every request exactly once; and an expired
//! request goes out within the bound its documentation gives.

use std::collections::HashMap;

use ironlift_policy::sio::{Sio, Slot};
use ironlift_policy::{Dispatch, Nanos, Op, Policy, RequestDesc, TunableError, NSEC_PER_MSEC};
use proptest::prelude::*;

mod sio_naive;
use sio_naive as naive;

const MS: Nanos = NSEC_PER_MSEC;

type S = Sio<Vec<Slot>>;

#[derive(Clone, Debug)]
enum Step {
    Insert {
        hint: usize,
        op: Op,
        sync: bool,
        at_head: bool,
    },
    Dispatch,
    Complete(usize),
    /// Requeue an in-flight request and insert it again at head.
    Requeue(usize),
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

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (any::<usize>(), op(), any::<bool>(), prop::bool::weighted(0.1))
            .prop_map(|(hint, op, sync, at_head)| Step::Insert { hint, op, sync, at_head }),
        10 => Just(Step::Dispatch),
        6 => any::<usize>().prop_map(Step::Complete),
        1 => any::<usize>().prop_map(Step::Requeue),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Merge(a, b)),
        4 => prop_oneof![0..MS, 0..1_000 * MS, 0..20_000 * MS].prop_map(Step::Advance),
        1 => (0..6usize, prop_oneof![0..4u32, 0..20_000u32]).prop_map(|(n, v)| Step::Tune(n, v)),
        1 => (0..6usize, prop::sample::select(vec!["", "-1", "x", "2147483648", "1 "]))
            .prop_map(|(n, t)| Step::BadTune(n, t)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(t, k)| Step::Abuse(t, k)),
    ]
}

/// What the test knows of a tag beyond the literal port.
#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Free,
    Queued,
    InFlight,
}

fn check(s: &S, r: &naive::Sio) -> Result<(), TestCaseError> {
    s.check_invariants().map_err(TestCaseError::fail)?;
    prop_assert_eq!(s.queued(), r.queued());
    prop_assert_eq!(s.has_work(), r.queued() > 0);
    prop_assert_eq!((s.batched(), s.starved()), (r.batched, r.starved));
    Ok(())
}

fn run(cap: usize, start: Nanos, steps: Vec<Step>) -> Result<(), TestCaseError> {
    let mut s: S = Sio::new(vec![Slot::default(); cap]).unwrap();
    let mut r = naive::Sio::new(cap);
    let mut st = vec![St::Free; cap];
    let mut descs = vec![RequestDesc::default(); cap];
    let mut now = start;
    let (mut fresh, mut done, mut merged) = (0u64, 0u64, 0u64);
    let pick = |st: &[St], n: usize, want: St| {
        let tags: Vec<usize> = (0..st.len()).filter(|&t| st[t] == want).collect();
        (!tags.is_empty()).then(|| tags[n % tags.len()])
    };
    let dispatch = |s: &mut S, r: &mut naive::Sio, st: &mut [St], now| {
        let want = r.dispatch(now);
        let got = match s.dispatch(now) {
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
    };
    for step in steps {
        match step {
            Step::Insert {
                hint,
                op,
                sync,
                at_head,
            } => {
                let Some(t) = (0..cap)
                    .map(|i| (hint + i) % cap)
                    .find(|&t| st[t] == St::Free)
                else {
                    continue;
                };
                let d = RequestDesc {
                    sector: hint as u64 % 1000,
                    op,
                    sync: sync || op.is_read(),
                    ..RequestDesc::default()
                };
                s.insert(t, &d, at_head, now);
                r.insert(t, &d, at_head, now);
                descs[t] = d;
                st[t] = St::Queued;
                fresh += 1;
            }
            Step::Dispatch => {
                dispatch(&mut s, &mut r, &mut st, now)?;
            }
            Step::Complete(n) => {
                if let Some(t) = pick(&st, n, St::InFlight) {
                    s.completed(t, now);
                    r.complete(t);
                    st[t] = St::Free;
                    done += 1;
                }
            }
            Step::Requeue(n) => {
                if let Some(t) = pick(&st, n, St::InFlight) {
                    s.requeued(t, now);
                    s.insert(t, &descs[t], true, now);
                    r.insert(t, &descs[t], true, now);
                    st[t] = St::Queued;
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
                s.requests_merged(i, n);
                r.merged(i, n);
                st[n] = St::Free;
                merged += 1;
            }
            Step::Advance(dt) => now = now.wrapping_add(dt),
            Step::Tune(n, v) => {
                prop_assert_eq!(s.set_tunable(naive::NAMES[n], &v.to_string()), Ok(()));
                r.tune(n, v);
                prop_assert_eq!(s.tunable(naive::NAMES[n]), Ok(i64::from(v)));
            }
            Step::BadTune(n, text) => {
                let before = s.tunable(naive::NAMES[n]);
                prop_assert!(s.set_tunable(naive::NAMES[n], text).is_err());
                prop_assert_eq!(s.tunable(naive::NAMES[n]), before);
            }
            Step::Abuse(t, k) => {
                let d = RequestDesc::default();
                match k % 5 {
                    0 => s.insert(cap + t % 4, &d, k & 8 != 0, now),
                    1 => s.completed(cap + t % 4, now),
                    2 => s.requests_merged(t % (cap + 2), cap + t % 3),
                    3 => {
                        // Insert a tag that is already queued.
                        if let Some(q) = pick(&st, t, St::Queued) {
                            s.insert(q, &d, k & 8 != 0, now);
                        }
                    }
                    _ => {
                        // Complete one that is not in flight.
                        if let Some(q) = pick(&st, t, St::Queued) {
                            s.completed(q, now);
                        }
                    }
                }
                prop_assert_eq!(s.tunable("nope"), Err(TunableError::UnknownName));
            }
        }
        check(&s, &r)?;
    }
    // Drain: everything inserted goes out exactly once (or was merged).
    let mut rounds = 0;
    while st.iter().any(|&x| x != St::Free) {
        rounds += 1;
        prop_assert!(rounds < 2 * cap + 10, "drain does not finish");
        match dispatch(&mut s, &mut r, &mut st, now)? {
            Some(t) => {
                s.completed(t, now);
                r.complete(t);
                st[t] = St::Free;
                done += 1;
            }
            None => {
                prop_assert!(!st.contains(&St::Queued), "queued requests stay");
                for (t, x) in st.iter_mut().enumerate() {
                    if *x == St::InFlight {
                        s.completed(t, now);
                        r.complete(t);
                        *x = St::Free;
                        done += 1;
                    }
                }
            }
        }
        check(&s, &r)?;
    }
    prop_assert_eq!(fresh, done + merged);
    prop_assert_eq!(s.dispatch(now), Dispatch::Empty);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Decision for decision, the policy does what a literal port of
    /// SIO's C does, and every request goes out exactly once.
    #[test]
    fn random_operations_match_a_literal_port(
        cap in 1..48usize,
        start in prop_oneof![Just(0u64), any::<u64>(), Just(u64::MAX - 5_000 * MS)],
        steps in prop::collection::vec(step(), 0..300),
    ) {
        run(cap, start, steps)?;
    }
}

#[derive(Clone, Debug)]
enum Simple {
    Insert(Op, bool),
    Dispatch,
    Advance(Nanos),
}

fn simple(writes: bool) -> impl Strategy<Value = Simple> {
    let w = if writes { 3 } else { 0 };
    prop_oneof![
        4 => Just(Simple::Insert(Op::Read, true)),
        w => any::<bool>().prop_map(|sync| Simple::Insert(Op::Write, sync)),
        6 => Just(Simple::Dispatch),
        2 => (0..20 * MS).prop_map(Simple::Advance),
    ]
}

/// The FIFO of a request: C's sync flag, direction.
fn fifo_of(op: Op, sync: bool) -> usize {
    naive::fifo_of(sync || op.is_read(), op.dir())
}

/// The place of each FIFO in the order the expired heads are looked at
/// (async write, async read, sync write, sync read).
fn expiry_rank(fifo: usize) -> usize {
    [1, 0, 3, 2][fifo]
}

/// A request that expired, waiting: the dispatches since it expired and
/// the bound they must stay within.
struct Waiting {
    dispatches: u64,
    /// Requests that may go out as expired before it: those ahead of it
    /// in its FIFO when it expired, and expired ones of the FIFOs looked
    /// at before its own that went out since.
    ahead: u64,
}

/// Once a request has expired, it goes out within
/// `(A + 1) × (fifo_batch + 1) + 1` dispatches (the module
/// documentation's bound), with fixed tunables, nothing at head, no
/// merges and time that only moves on.
fn expiry_bound(
    steps: Vec<Simple>,
    fifo_batch: u32,
    writes_starved: u32,
    expire_ms: [u32; 4],
    start: Nanos,
) -> Result<(), TestCaseError> {
    let cap = 64;
    let mut s: S = Sio::new(vec![Slot::default(); cap]).unwrap();
    for (n, v) in expire_ms.iter().enumerate() {
        s.set_tunable(naive::NAMES[n], &v.to_string()).unwrap();
    }
    s.set_tunable("fifo_batch", &fifo_batch.to_string())
        .unwrap();
    s.set_tunable("writes_starved", &writes_starved.to_string())
        .unwrap();
    // By the naive port's FIFO index.
    let expire = |fifo: usize| {
        let n = [2, 3, 0, 1][fifo];
        Nanos::from(expire_ms[n]) * MS
    };
    let mut free: Vec<usize> = (0..cap).rev().collect();
    // Queued requests: (tag, FIFO, deadline), in insertion order.
    let mut queued: Vec<(usize, usize, Nanos)> = Vec::new();
    let mut waiting: HashMap<usize, Waiting> = HashMap::new();
    let mut now = start;
    let per = u64::from(fifo_batch) + 1;
    for step in steps {
        match step {
            Simple::Insert(op, sync) => {
                let Some(t) = free.pop() else { continue };
                let d = RequestDesc {
                    op,
                    sync,
                    ..RequestDesc::default()
                };
                s.insert(t, &d, false, now);
                let f = fifo_of(op, sync);
                queued.push((t, f, now.wrapping_add(expire(f))));
            }
            Simple::Advance(dt) => now = now.wrapping_add(dt),
            Simple::Dispatch => {
                // Requests that expired since the last dispatch start
                // waiting.
                for (i, &(t, f, deadline)) in queued.iter().enumerate() {
                    if naive::time_after(now, deadline) && !waiting.contains_key(&t) {
                        let ahead = queued[..i].iter().filter(|q| q.1 == f).count() as u64;
                        waiting.insert(
                            t,
                            Waiting {
                                dispatches: 0,
                                ahead,
                            },
                        );
                    }
                }
                let Dispatch::Request(t) = s.dispatch(now) else {
                    prop_assert!(queued.is_empty(), "nothing dispatched with requests queued");
                    continue;
                };
                s.completed(t, now);
                free.push(t);
                let i = queued.iter().position(|q| q.0 == t).unwrap();
                let (_, f, deadline) = queued.remove(i);
                let expired = naive::time_after(now, deadline);
                let queued_fifo = |t: usize| queued.iter().find(|q| q.0 == t).map(|q| q.1);
                for (&w, wait) in waiting.iter_mut() {
                    wait.dispatches += 1;
                    if w == t {
                        continue;
                    }
                    let wf = queued_fifo(w).unwrap();
                    if expired && expiry_rank(f) < expiry_rank(wf) {
                        wait.ahead += 1;
                    }
                    let bound = (wait.ahead + 1) * per + 1;
                    prop_assert!(
                        wait.dispatches < bound,
                        "an expired request still waits after {} dispatches (bound {})",
                        wait.dispatches,
                        bound
                    );
                }
                if let Some(wait) = waiting.remove(&t) {
                    let bound = (wait.ahead + 1) * per + 1;
                    prop_assert!(
                        wait.dispatches <= bound,
                        "an expired request went out after {} dispatches (bound {})",
                        wait.dispatches,
                        bound
                    );
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Sync reads only: an expired read waits only for the expired reads
    /// ahead of it, one per `fifo_batch + 1` dispatches.
    #[test]
    fn expired_read_goes_out_within_the_bound(
        fifo_batch in 0..8u32,
        start in any::<u64>(),
        steps in prop::collection::vec(simple(false), 0..400),
    ) {
        expiry_bound(steps, fifo_batch, 0, [30, 60, 90, 120], start)?;
    }

    /// Reads and writes, sync and async, any expire times: the bound
    /// counts the expired requests of the FIFOs looked at first.
    #[test]
    fn expired_request_goes_out_within_the_bound(
        fifo_batch in 0..8u32,
        writes_starved in 0..4u32,
        expire_ms in [1..100u32, 1..100u32, 1..100u32, 1..100u32],
        start in any::<u64>(),
        steps in prop::collection::vec(simple(true), 0..400),
    ) {
        expiry_bound(steps, fifo_batch, writes_starved, expire_ms, start)?;
    }
}

/// Without expiry in the way, once a write waits, at most
/// `writes_starved + 1` reads go out before a write does.
#[test]
fn a_waiting_write_lets_at_most_writes_starved_plus_one_reads_pass() {
    for writes_starved in 0..4u32 {
        let mut s: S = Sio::new(vec![Slot::default(); 64]).unwrap();
        s.set_tunable("fifo_batch", "1000000").unwrap();
        s.set_tunable("writes_starved", &writes_starved.to_string())
            .unwrap();
        let mut queued_writes = std::collections::HashSet::new();
        let mut next = 0u64;
        let mut reads_past_a_write = 0;
        for now in 0..400u64 {
            // Keep requests waiting: every fifth a write, sync or not.
            while s.queued() < 8 {
                let t = (next % 64) as usize;
                let write = next.is_multiple_of(5);
                let d = RequestDesc {
                    op: if write { Op::Write } else { Op::Read },
                    sync: !write || next.is_multiple_of(2),
                    ..RequestDesc::default()
                };
                s.insert(t, &d, false, now);
                if write {
                    queued_writes.insert(t);
                }
                next += 1;
            }
            let write_waits = !queued_writes.is_empty();
            let Dispatch::Request(t) = s.dispatch(now) else {
                panic!("nothing dispatched");
            };
            s.completed(t, now);
            if queued_writes.remove(&t) {
                reads_past_a_write = 0;
            } else if write_waits {
                reads_past_a_write += 1;
                assert!(
                    reads_past_a_write <= writes_starved + 1,
                    "writes_starved {writes_starved}: {reads_past_a_write} reads"
                );
            } else {
                reads_past_a_write = 0;
            }
        }
    }
}
