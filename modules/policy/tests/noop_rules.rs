// SPDX-License-Identifier: GPL-2.0

//! One test per noop rule, through the public API.

use ironlift_policy::noop::{Noop, Slot};
use ironlift_policy::sched::{check_layout, SchedPolicy};
use ironlift_policy::AsyncDepth;
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, RequestDesc, Sector, TunableError,
};

type N = Noop<Vec<Slot>>;

fn noop(capacity: usize) -> N {
    Noop::new(vec![Slot::default(); capacity]).unwrap()
}

fn req(sector: Sector, op: Op) -> RequestDesc {
    RequestDesc {
        sector,
        sectors: 8,
        op,
        sync: op.is_read(),
        ..RequestDesc::default()
    }
}

/// Dispatches and completes everything at `now`.
fn drain(n: &mut N, now: Nanos) -> Vec<usize> {
    let mut out = Vec::new();
    while let Dispatch::Request(t) = n.dispatch(now) {
        n.completed(t, now);
        out.push(t);
    }
    assert!(!n.has_work());
    n.check_invariants().unwrap();
    out
}

#[test]
fn requests_go_in_the_order_they_came_whatever_their_sector_and_direction() {
    let mut n = noop(8);
    let reqs = [
        (3, req(900, Op::Write)),
        (0, req(10, Op::Read)),
        (5, req(500, Op::Discard)),
        (1, req(0, Op::Read)),
    ];
    for (i, (t, r)) in reqs.iter().enumerate() {
        n.insert(*t, r, false, i as Nanos);
    }
    assert_eq!(n.queued(), 4);
    assert_eq!(drain(&mut n, 0), [3, 0, 5, 1]);
}

#[test]
fn at_head_requests_go_first_latest_first() {
    let mut n = noop(8);
    n.insert(0, &req(0, Op::Read), false, 0);
    n.insert(1, &req(8, Op::Read), true, 0);
    n.insert(2, &req(16, Op::Write), true, 0);
    n.insert(3, &req(24, Op::Read), false, 0);
    assert_eq!(drain(&mut n, 0), [2, 1, 0, 3]);
}

#[test]
fn time_changes_nothing() {
    let mut n = noop(4);
    n.insert(0, &req(0, Op::Write), false, 0);
    n.insert(1, &req(8, Op::Read), false, u64::MAX);
    assert_eq!(n.dispatch(u64::MAX / 2), Dispatch::Request(0));
    assert_eq!(n.dispatch(0), Dispatch::Request(1));
}

#[test]
fn merged_away_request_leaves_the_fifo_and_the_survivor_keeps_its_place() {
    let mut n = noop(8);
    for t in 0..4 {
        n.insert(t, &req(t as Sector * 8, Op::Read), false, 0);
    }
    // 0 grew by 1's sectors; 3 took in 2.
    n.requests_merged(0, 1);
    n.requests_merged(3, 2);
    assert_eq!(n.queued(), 2);
    assert_eq!(drain(&mut n, 0), [0, 3]);
    // The merged-away tags are free: they can come back.
    n.insert(1, &req(0, Op::Read), false, 0);
    assert_eq!(drain(&mut n, 0), [1]);
}

#[test]
fn no_front_merge_candidates_of_its_own() {
    let mut n = noop(4);
    n.insert(0, &req(100, Op::Read), false, 0);
    let probe = MergeProbe {
        bio_end: 100,
        op: Op::Read,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(n.front_merge_candidate(&probe), None);
    // Merges the block layer made itself change no place.
    n.insert(1, &req(0, Op::Read), false, 0);
    n.front_merged(1, 0, 16);
    n.back_merged(0, 16);
    assert_eq!(drain(&mut n, 0), [0, 1]);
}

#[test]
fn requeued_request_is_inserted_again_at_head() {
    let mut n = noop(4);
    n.insert(0, &req(0, Op::Read), false, 0);
    n.insert(1, &req(8, Op::Read), false, 0);
    assert_eq!(n.dispatch(0), Dispatch::Request(0));
    n.requeued(0, 0);
    n.insert(0, &req(0, Op::Read), true, 0);
    assert_eq!(n.queued(), 2);
    assert_eq!(drain(&mut n, 0), [0, 1]);
}

#[test]
fn protocol_errors_are_ignored() {
    let mut n = noop(4);
    n.insert(4, &req(0, Op::Read), false, 0);
    n.insert(usize::MAX, &req(0, Op::Read), true, 0);
    assert!(!n.has_work());
    n.insert(0, &req(0, Op::Read), false, 0);
    n.insert(0, &req(8, Op::Write), true, 0); // already queued
    n.completed(0, 0); // not dispatched
    n.completed(9, 0);
    n.requeued(7, 0);
    n.front_merged(9, 0, 0);
    n.requests_merged(0, 0);
    n.requests_merged(0, 9);
    n.requests_merged(9, 0);
    n.requests_merged(0, 1); // 1 is not queued
    assert_eq!(n.queued(), 1);
    assert_eq!(drain(&mut n, 0), [0]);
    assert_eq!(n.dispatch(0), Dispatch::Empty);
}

#[test]
fn has_no_tunables() {
    let mut n = noop(4);
    assert!(n.tunables().is_empty());
    assert!(<N as SchedPolicy>::TUNABLES.is_empty());
    assert_eq!(n.tunable("fifo_batch"), Err(TunableError::UnknownName));
    assert_eq!(
        n.set_tunable("fifo_batch", "1"),
        Err(TunableError::UnknownName)
    );
    check_layout(&n, AsyncDepth::Elevator).unwrap();
}

#[test]
fn limits_no_depth() {
    let n = noop(4);
    for op in [Op::Read, Op::Write, Op::Flush, Op::Discard] {
        for sync in [false, true] {
            assert_eq!(n.async_depth_limit(op, sync), None);
            assert_eq!(<N as SchedPolicy>::depth_limit_index(op, sync), None);
            assert_eq!(n.depth_limit(op, sync, 64, 4), None);
        }
    }
}

#[test]
fn capacity_is_storage_length() {
    assert!(Noop::new(Vec::<Slot>::new()).is_err());
    let mut n = noop(3);
    assert_eq!(n.capacity(), 3);
    for t in 0..4 {
        n.insert(t, &req(0, Op::Read), false, 0);
    }
    assert_eq!(n.queued(), 3);
    // Slots handed back dirty are reset by `new`.
    let n = Noop::new(n.into_storage()).unwrap();
    assert!(!n.has_work());
    let mut a = Noop::new([Slot::default(); 2]).unwrap();
    a.insert(1, &req(0, Op::Read), false, 0);
    assert_eq!(a.dispatch(0), Dispatch::Request(1));
}
