// SPDX-License-Identifier: GPL-2.0

//! One test per V(R) rule, through the public API.

use ironlift_policy::sched::{check_layout, SchedPolicy};
use ironlift_policy::vr::{HeadDir, Slot, Vr};
use ironlift_policy::AsyncDepth;
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector, TunableError,
    NSEC_PER_MSEC,
};

const MS: Nanos = NSEC_PER_MSEC;
const SEC_1: Nanos = 1000 * MS;

type V = Vr<Vec<Slot>>;

fn vr(capacity: usize) -> V {
    Vr::new(vec![Slot::default(); capacity]).unwrap()
}

fn desc(sector: Sector, op: Op, sync: bool) -> RequestDesc {
    RequestDesc {
        sector,
        sectors: 8,
        op,
        sync,
        ..RequestDesc::default()
    }
}

fn read(sector: Sector) -> RequestDesc {
    desc(sector, Op::Read, true)
}

fn async_write(sector: Sector) -> RequestDesc {
    desc(sector, Op::Write, false)
}

fn tag(d: Dispatch) -> usize {
    match d {
        Dispatch::Request(t) => t,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// Dispatches (and completes) `n` requests at `now`.
fn take(v: &mut V, n: usize, now: Nanos) -> Vec<usize> {
    (0..n)
        .map(|_| {
            let t = tag(v.dispatch(now));
            v.completed(t, now);
            v.check_invariants().unwrap();
            t
        })
        .collect()
}

/// Dispatches and completes everything at `now`.
fn drain(v: &mut V, now: Nanos) -> Vec<usize> {
    let mut out = Vec::new();
    while let Dispatch::Request(t) = v.dispatch(now) {
        v.completed(t, now);
        out.push(t);
    }
    assert!(!v.has_work());
    v.check_invariants().unwrap();
    out
}

fn set(v: &mut V, name: &str, value: &str) {
    v.set_tunable(name, value).unwrap();
}

/// Sorting alone: no expiry gets in the way.
fn sorting(capacity: usize) -> V {
    let mut v = vr(capacity);
    set(&mut v, "fifo_batch", "1000");
    v
}

/// Puts the head at `sector`, moving `dir`, through a request there.
fn head_at(v: &mut V, spare: usize, sector: Sector, dir: HeadDir) {
    if dir == HeadDir::Backward {
        // Up past it, then back down to it.
        v.insert(spare, &read(sector + 1), false, 0);
        assert_eq!(take(v, 1, 0), [spare]);
    }
    v.insert(spare, &read(sector), false, 0);
    assert_eq!(take(v, 1, 0), [spare]);
    assert_eq!(v.head(), (sector, dir));
}

#[test]
fn tunables_have_the_sources_names_units_and_defaults() {
    let v = vr(8);
    let expect = [
        ("sync_expire", 500),
        ("async_expire", 5000),
        ("fifo_batch", 1),
        ("rev_penalty", 1),
    ];
    assert_eq!(
        v.tunables(),
        expect.iter().map(|e| e.0).collect::<Vec<_>>().as_slice()
    );
    for (name, value) in expect {
        assert_eq!(v.tunable(name), Ok(value), "{name}");
    }
    assert_eq!(v.tunable("nope"), Err(TunableError::UnknownName));
    check_layout(&v, AsyncDepth::Elevator).unwrap();
}

#[test]
fn head_starts_at_sector_zero_moving_forward() {
    let mut v = sorting(8);
    assert_eq!(v.head(), (0, HeadDir::Forward));
    v.insert(0, &read(500), false, 0);
    v.insert(1, &read(100), false, 0);
    v.insert(2, &read(300), false, 0);
    assert_eq!(drain(&mut v, 0), [1, 2, 0]);
    assert_eq!(v.head(), (500, HeadDir::Forward));
}

#[test]
fn reads_and_writes_share_one_sort_order() {
    let mut v = sorting(8);
    v.insert(0, &async_write(300), false, 0);
    v.insert(1, &read(200), false, 0);
    v.insert(2, &desc(100, Op::Write, true), false, 0);
    assert_eq!(drain(&mut v, 0), [2, 1, 0]);
}

#[test]
fn rev_penalty_one_is_shortest_seek_first() {
    let mut v = sorting(8);
    head_at(&mut v, 7, 100, HeadDir::Forward);
    // 80 lies 20 behind, 130 lies 30 ahead: the nearer, behind.
    v.insert(0, &read(130), false, 0);
    v.insert(1, &read(80), false, 0);
    assert_eq!(take(&mut v, 1, 0), [1]);
    assert_eq!(v.head(), (80, HeadDir::Backward));
    // Now 130 is 50 ahead (a reversal), 60 is 20 behind.
    v.insert(2, &read(60), false, 0);
    assert_eq!(take(&mut v, 2, 0), [2, 0]);
}

#[test]
fn reversing_costs_rev_penalty_times_its_distance() {
    for (penalty, expect) in [(1, 1), (2, 0)] {
        let mut v = sorting(8);
        set(&mut v, "rev_penalty", &penalty.to_string());
        head_at(&mut v, 7, 100, HeadDir::Forward);
        v.insert(0, &read(130), false, 0);
        v.insert(1, &read(80), false, 0);
        // Behind: 20 × penalty against 30 ahead.
        assert_eq!(take(&mut v, 1, 0), [expect], "rev_penalty {penalty}");
    }
    // Moving backward, the reversal is forward.
    for (penalty, expect) in [(1, 0), (2, 1)] {
        let mut v = sorting(8);
        set(&mut v, "rev_penalty", &penalty.to_string());
        head_at(&mut v, 7, 100, HeadDir::Backward);
        v.insert(0, &read(120), false, 0);
        v.insert(1, &read(70), false, 0);
        // Ahead: 20 × penalty against 30 behind.
        assert_eq!(take(&mut v, 1, 0), [expect], "rev_penalty {penalty}");
    }
}

#[test]
fn ties_go_to_the_request_ahead() {
    let mut v = sorting(8);
    head_at(&mut v, 7, 100, HeadDir::Forward);
    v.insert(0, &read(120), false, 0);
    v.insert(1, &read(80), false, 0);
    assert_eq!(take(&mut v, 1, 0), [0]);
    // Backward, with a penalty of 1 a tie still goes to the request ahead
    // (C: `next_pen <= prev_pen`).
    let mut v = sorting(8);
    head_at(&mut v, 7, 100, HeadDir::Backward);
    v.insert(0, &read(120), false, 0);
    v.insert(1, &read(80), false, 0);
    assert_eq!(take(&mut v, 1, 0), [0]);
}

#[test]
fn rev_penalty_zero_is_scan() {
    let mut v = sorting(16);
    set(&mut v, "rev_penalty", "0");
    head_at(&mut v, 15, 1000, HeadDir::Forward);
    for (t, s) in [(0, 999), (1, 5000), (2, 2000), (3, 10), (4, 1001)] {
        v.insert(t, &read(s), false, 0);
    }
    // Up to the end, however near the requests behind, then down.
    assert_eq!(drain(&mut v, 0), [4, 2, 1, 0, 3]);
    assert_eq!(v.head(), (10, HeadDir::Backward));
}

#[test]
fn a_request_at_the_head_goes_next_and_turns_it_backward() {
    let mut v = sorting(8);
    head_at(&mut v, 7, 100, HeadDir::Forward);
    v.insert(0, &read(101), false, 0);
    v.insert(1, &read(100), false, 0);
    assert_eq!(take(&mut v, 1, 0), [1]);
    // C's vr_move_request(): not beyond the head, so backward.
    assert_eq!(v.head(), (100, HeadDir::Backward));
}

#[test]
fn equal_sectors_all_stay_sorted_in_arrival_order() {
    let mut v = sorting(8);
    for t in [3, 1, 2] {
        v.insert(t, &read(64), false, 0);
    }
    v.insert(0, &read(8), false, 0);
    assert_eq!(drain(&mut v, 0), [0, 3, 1, 2]);
}

#[test]
fn fifos_looked_at_after_more_than_fifo_batch_dispatches() {
    let mut v = vr(16);
    // fifo_batch 1: dispatch 3 looks, then every second one.
    v.insert(0, &read(5000), false, 0);
    for t in 1..8 {
        v.insert(t, &read(t as Sector * 10), false, 100 * MS);
    }
    let late = 700 * MS;
    assert_eq!(take(&mut v, 2, late), [1, 2]);
    assert_eq!(v.batched(), 2);
    // The expired read 0 goes; the head follows it.
    assert_eq!(take(&mut v, 1, late), [0]);
    assert_eq!(v.head(), (5000, HeadDir::Forward));
    assert_eq!(v.batched(), 1);
    // The rest expired too (at 600 ms): every second dispatch takes the
    // oldest, the others the nearest (from 5000, 70; from 30, 40).
    assert_eq!(take(&mut v, 5, late), [7, 3, 4, 5, 6]);
}

#[test]
fn expiry_is_strictly_after_the_deadline() {
    for (now, expect) in [(500 * MS, [2, 3, 0]), (500 * MS + 1, [2, 0, 3])] {
        let mut v = vr(8);
        v.insert(0, &read(900), false, 0);
        v.insert(1, &read(10), false, now);
        v.insert(2, &read(20), false, now);
        v.insert(3, &read(30), false, now);
        assert_eq!(take(&mut v, 1, now), [1]);
        // Dispatch 3 looks: read 0's deadline is 500 ms.
        assert_eq!(take(&mut v, 3, now), expect);
    }
}

#[test]
fn of_two_expired_heads_the_earlier_deadline_async_on_a_tie() {
    for (async_at, expect) in [(0, 1), (MS, 1), (2 * MS, 0)] {
        let mut v = vr(8);
        set(&mut v, "fifo_batch", "0");
        set(&mut v, "async_expire", "500");
        v.insert(0, &read(900), false, MS);
        v.insert(1, &async_write(800), false, async_at);
        v.insert(2, &read(0), false, 0);
        assert_eq!(take(&mut v, 1, SEC_1), [2]);
        // Deadlines: sync read 0 at 501 ms, async write 1 at async_at +
        // 500 ms (sync read 2, inserted last, sits behind 0).
        assert_eq!(take(&mut v, 1, SEC_1), [expect], "async at {async_at}");
    }
}

#[test]
fn expire_zero_means_no_deadline() {
    let mut v = vr(8);
    set(&mut v, "fifo_batch", "0");
    set(&mut v, "sync_expire", "0");
    v.insert(0, &read(9000), false, 0);
    set(&mut v, "sync_expire", "500");
    v.insert(1, &read(8000), false, 0);
    // An hour later 1 has expired, 0 has no deadline, and the others are
    // new: after the first dispatch 1 goes, then the nearest, 0.
    let late = 3_600_000 * MS;
    v.insert(2, &read(10), false, late);
    v.insert(3, &read(20), false, late);
    v.insert(4, &read(30), false, late);
    assert_eq!(drain(&mut v, late), [2, 1, 0, 4, 3]);
}

#[test]
fn at_head_requests_go_first_without_moving_the_head() {
    let mut v = sorting(8);
    v.insert(0, &read(100), false, 0);
    v.insert(1, &read(5000), true, 0);
    v.insert(2, &read(9000), true, 0);
    assert_eq!(take(&mut v, 2, 0), [2, 1]);
    assert_eq!(v.head(), (0, HeadDir::Forward));
    assert_eq!(v.batched(), 0);
    assert_eq!(take(&mut v, 1, 0), [0]);
}

#[test]
fn front_merge_candidate_starts_where_the_bio_ends_with_its_op_and_prio() {
    let mut v = sorting(8);
    v.insert(0, &read(100), false, 0);
    v.insert(1, &async_write(200), false, 0);
    v.insert(2, &read(300), true, 0);
    let probe = |bio_end, op, prio| MergeProbe { bio_end, op, prio };
    let be = IoPrio::DEFAULT;
    assert_eq!(v.front_merge_candidate(&probe(100, Op::Read, be)), Some(0));
    assert_eq!(v.front_merge_candidate(&probe(99, Op::Read, be)), None);
    assert_eq!(v.front_merge_candidate(&probe(100, Op::Write, be)), None);
    let rt = IoPrio {
        class: PrioClass::RealTime,
        level: 4,
    };
    assert_eq!(v.front_merge_candidate(&probe(100, Op::Read, rt)), None);
    assert_eq!(v.front_merge_candidate(&probe(200, Op::Write, be)), Some(1));
    assert_eq!(v.front_merge_candidate(&probe(200, Op::Flush, be)), None);
    // At-head requests are not in the sort tree.
    assert_eq!(v.front_merge_candidate(&probe(300, Op::Read, be)), None);
    // Of several at the sector, the first to arrive.
    v.insert(3, &read(100), false, 0);
    assert_eq!(v.front_merge_candidate(&probe(100, Op::Read, be)), Some(0));
}

#[test]
fn front_merged_request_moves_in_sector_order() {
    let mut v = sorting(8);
    v.insert(0, &read(100), false, 0);
    v.insert(1, &read(60), false, 0);
    v.front_merged(0, 40, 68);
    let probe = MergeProbe {
        bio_end: 40,
        op: Op::Read,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(v.front_merge_candidate(&probe), Some(0));
    assert_eq!(drain(&mut v, 0), [0, 1]);
}

#[test]
fn merged_request_takes_earlier_deadline_and_fifo_place() {
    let mut v = vr(8);
    set(&mut v, "fifo_batch", "0");
    v.insert(0, &read(100), false, 0);
    v.insert(1, &read(200), false, MS);
    v.insert(2, &read(300), false, 2 * MS);
    v.insert(3, &async_write(400), false, 0);
    // 1 (501 ms) into 2 (502 ms): 2 takes 1's deadline and place. 3
    // (async, 5 s) into 0 (500 ms): 0 keeps its own.
    v.requests_merged(2, 1);
    v.requests_merged(0, 3);
    assert_eq!(v.queued(), 2);
    // Across FIFOs: the sync read 5 (later) takes the async write 4's
    // deadline and its place in the async FIFO.
    v.insert(4, &async_write(9000), false, 0);
    v.insert(5, &read(9100), false, 4_900 * MS);
    v.requests_merged(5, 4);
    v.insert(6, &read(0), false, 6_000 * MS);
    // At 6 s all expired. Dispatch 1 (no look) takes 6 at sector 0; then
    // every dispatch looks: sync 0 (500 ms), sync 2 (501 ms), then the
    // async FIFO's 5 (5 s).
    assert_eq!(take(&mut v, 4, 6_000 * MS), [6, 0, 2, 5]);
}

#[test]
fn requeued_request_is_inserted_again_at_head() {
    let mut v = sorting(4);
    v.insert(0, &read(0), false, 0);
    v.insert(1, &read(8), false, 0);
    assert_eq!(v.dispatch(0), Dispatch::Request(0));
    v.requeued(0, 0);
    v.insert(0, &read(0), true, 0);
    assert_eq!(v.queued(), 2);
    assert_eq!(drain(&mut v, 0), [0, 1]);
}

#[test]
fn times_wrap_like_jiffies() {
    let start = u64::MAX - 100 * MS;
    for (now, expect) in [(500 * MS, [2, 3, 0]), (500 * MS + 1, [2, 0, 3])] {
        let mut v = vr(8);
        v.insert(0, &read(900), false, start);
        v.insert(1, &read(10), false, start);
        v.insert(2, &read(20), false, start);
        v.insert(3, &read(30), false, start);
        assert_eq!(take(&mut v, 1, start), [1]);
        // 0's deadline (start + 500 ms) lies past the wrap.
        assert_eq!(take(&mut v, 3, start.wrapping_add(now)), expect);
    }
}

#[test]
fn tunables_accept_their_whole_range() {
    let mut v = vr(8);
    let max = i32::MAX as i64;
    for name in v.tunables() {
        for val in [0, 1, max] {
            assert_eq!(v.set_tunable(name, &format!("{val}\n")), Ok(()), "{name}");
            assert_eq!(v.tunable(name), Ok(val), "{name}");
        }
        assert_eq!(
            v.set_tunable(name, "-1"),
            Err(TunableError::OutOfRange),
            "{name}"
        );
        assert_eq!(
            v.set_tunable(name, &(max + 1).to_string()),
            Err(TunableError::OutOfRange),
            "{name}"
        );
    }
}

#[test]
fn bad_tunable_value_keeps_old_value() {
    let mut v = vr(8);
    for name in v.tunables() {
        let before = v.tunable(name).unwrap();
        for bad in [
            "",
            "abc",
            "-1",
            "1.5",
            "12 ",
            " 1",
            "1\n\n",
            "99999999999999999999",
        ] {
            assert!(v.set_tunable(name, bad).is_err(), "{name}={bad:?}");
            assert_eq!(v.tunable(name), Ok(before), "{name}={bad:?}");
        }
    }
    assert_eq!(v.set_tunable("nope", "1"), Err(TunableError::UnknownName));
}

#[test]
fn limits_no_depth() {
    let v = vr(4);
    for op in [Op::Read, Op::Write, Op::Flush, Op::Discard] {
        for sync in [false, true] {
            assert_eq!(v.async_depth_limit(op, sync), None);
            assert_eq!(<V as SchedPolicy>::depth_limit_index(op, sync), None);
        }
    }
}

#[test]
fn protocol_errors_are_ignored() {
    let mut v = sorting(4);
    v.insert(4, &read(0), false, 0);
    v.insert(usize::MAX, &read(0), true, 0);
    assert!(!v.has_work());
    v.insert(0, &read(0), false, 0);
    v.insert(0, &async_write(8), true, 0); // already queued
    v.completed(0, 0); // not dispatched
    v.completed(9, 0);
    v.requeued(7, 0);
    v.front_merged(9, 0, 0);
    v.requests_merged(0, 0);
    v.requests_merged(0, 9);
    v.requests_merged(9, 0);
    v.requests_merged(0, 1); // 1 is not queued
    assert_eq!(v.queued(), 1);
    assert_eq!(drain(&mut v, 0), [0]);
    assert_eq!(v.dispatch(u64::MAX), Dispatch::Empty);
}

#[test]
fn capacity_is_storage_length() {
    assert!(Vr::new(Vec::<Slot>::new()).is_err());
    let mut v = sorting(3);
    assert_eq!(v.capacity(), 3);
    for t in 0..4 {
        v.insert(t, &read(0), false, 0);
    }
    assert_eq!(v.queued(), 3);
    let v = Vr::new(v.into_storage()).unwrap();
    assert!(!v.has_work());
}
