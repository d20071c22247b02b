// SPDX-License-Identifier: GPL-2.0

//! One test per mq-deadline rule, through the public API.

use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, Sector, TunableError,
    NSEC_PER_MSEC,
};

const MS: Nanos = NSEC_PER_MSEC;

type Dd = Deadline<Vec<Slot>>;

fn dd(capacity: usize) -> Dd {
    Deadline::new(vec![Slot::default(); capacity]).unwrap()
}

fn prio(class: PrioClass) -> IoPrio {
    IoPrio { class, level: 4 }
}

fn desc(sector: Sector, op: Op, class: PrioClass) -> RequestDesc {
    RequestDesc {
        sector,
        sectors: 8,
        op,
        sync: op.is_read(),
        prio: prio(class),
        ..RequestDesc::default()
    }
}

fn read(sector: Sector) -> RequestDesc {
    desc(sector, Op::Read, PrioClass::BestEffort)
}

fn write(sector: Sector) -> RequestDesc {
    desc(sector, Op::Write, PrioClass::BestEffort)
}

fn tag(d: Dispatch) -> usize {
    match d {
        Dispatch::Request(t) => t,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// Dispatches (and completes) `n` requests at `now`.
fn take(d: &mut Dd, n: usize, now: Nanos) -> Vec<usize> {
    (0..n)
        .map(|_| {
            let t = tag(d.dispatch(now));
            d.completed(t, now);
            t
        })
        .collect()
}

/// Dispatches and completes everything at `now`.
fn drain(d: &mut Dd, now: Nanos) -> Vec<usize> {
    let mut out = Vec::new();
    while let Dispatch::Request(t) = d.dispatch(now) {
        d.completed(t, now);
        out.push(t);
    }
    assert!(!d.has_work());
    out
}

fn set(d: &mut Dd, name: &str, value: &str) {
    d.set_tunable(name, value).unwrap();
}

#[test]
fn at_head_requests_go_first() {
    let mut d = dd(8);
    d.insert(0, &read(0), false, 0);
    d.insert(1, &desc(10, Op::Read, PrioClass::RealTime), false, 0);
    d.insert(2, &desc(500, Op::Write, PrioClass::Idle), true, 0);
    assert_eq!(take(&mut d, 1, 0), [2]);
    assert_eq!(drain(&mut d, 0), [1, 0]);
}

#[test]
fn at_head_list_serves_latest_insertion_first_like_list_add() {
    let mut d = dd(8);
    for t in 0..3 {
        d.insert(t, &read(t as Sector * 8), true, 0);
    }
    assert_eq!(drain(&mut d, 0), [2, 1, 0]);
}

#[test]
fn first_dispatch_continues_a_write_batch_as_c_starts_with_last_dir_write() {
    let mut d = dd(8);
    d.insert(0, &read(0), false, 0);
    d.insert(1, &write(100), false, 0);
    assert_eq!(take(&mut d, 1, 0), [1]);
}

#[test]
fn reads_preferred_until_writes_starved() {
    let mut d = dd(64);
    set(&mut d, "fifo_batch", "1");
    for t in 0..20 {
        d.insert(t, &read(t as Sector * 8), false, 0);
    }
    // Leave the initial write "batch" behind.
    assert_eq!(take(&mut d, 1, 0), [0]);
    for t in 20..30 {
        d.insert(t, &write(t as Sector * 8), false, 0);
    }
    let kinds: Vec<bool> = take(&mut d, 9, 0).into_iter().map(|t| t < 20).collect();
    // writes_starved = 2: reads starve the writes twice, then one write.
    assert_eq!(
        kinds,
        [true, true, false, true, true, false, true, true, false]
    );

    // writes_starved = 1: one read, then one write.
    let mut d = dd(64);
    set(&mut d, "fifo_batch", "1");
    set(&mut d, "writes_starved", "1");
    for t in 0..20 {
        d.insert(t, &read(t as Sector * 8), false, 0);
    }
    take(&mut d, 1, 0);
    for t in 20..30 {
        d.insert(t, &write(t as Sector * 8), false, 0);
    }
    let kinds: Vec<bool> = take(&mut d, 6, 0).into_iter().map(|t| t < 20).collect();
    assert_eq!(kinds, [true, false, true, false, true, false]);

    // writes_starved = 0: writes win whenever there are any.
    set(&mut d, "writes_starved", "0");
    let kinds: Vec<bool> = take(&mut d, 4, 0).into_iter().map(|t| t < 20).collect();
    assert_eq!(kinds, [false, false, false, false]);
}

#[test]
fn writes_served_when_no_reads() {
    let mut d = dd(8);
    d.insert(0, &write(300), false, 0);
    d.insert(1, &write(100), false, 0);
    assert_eq!(drain(&mut d, 0), [1, 0]);
}

#[test]
fn expired_read_fifo_head_served() {
    for (now, expect) in [(450 * MS, 3), (500 * MS, 0)] {
        let mut d = dd(16);
        set(&mut d, "fifo_batch", "2");
        d.insert(0, &read(1000), false, 0);
        for t in 1..6 {
            d.insert(t, &read(t as Sector * 10), false, 400 * MS);
        }
        // A batch in sector order from sector 0.
        assert_eq!(take(&mut d, 2, 400 * MS), [1, 2]);
        // New batch: the FIFO head (tag 0) once its 500 ms have passed,
        // else on in sector order.
        assert_eq!(take(&mut d, 1, now), [expect]);
    }
}

#[test]
fn expired_write_fifo_head_served() {
    for (now, expect) in [(5_000 * MS - 1, 3), (5_000 * MS, 0)] {
        let mut d = dd(16);
        set(&mut d, "fifo_batch", "2");
        d.insert(0, &write(1000), false, 0);
        for t in 1..6 {
            d.insert(t, &write(t as Sector * 10), false, MS);
        }
        assert_eq!(take(&mut d, 2, MS), [1, 2]);
        assert_eq!(take(&mut d, 1, now), [expect]);
    }
}

#[test]
fn expired_fifo_head_waits_for_the_running_batch() {
    let mut d = dd(16);
    set(&mut d, "fifo_batch", "3");
    d.insert(0, &read(1000), false, 0);
    for t in 1..6 {
        d.insert(t, &read(t as Sector * 10), false, 0);
    }
    assert_eq!(take(&mut d, 1, 0), [1]);
    // Tag 0 expires, but the batch goes on in sector order first.
    assert_eq!(take(&mut d, 3, 600 * MS), [2, 3, 0]);
}

#[test]
fn batch_continues_in_sector_order_up_to_fifo_batch() {
    let mut d = dd(32);
    set(&mut d, "fifo_batch", "4");
    set(&mut d, "writes_starved", "0");
    let sectors = [70, 10, 50, 30, 80, 20, 60, 40];
    for (t, &s) in sectors.iter().enumerate() {
        d.insert(t, &read(s), false, 0);
    }
    // FIFO head (sector 70) is not expired: the first read batch starts at
    // the lowest sector at or after the last read position (0).
    assert_eq!(take(&mut d, 1, 0), [1]);
    for t in 8..10 {
        d.insert(t, &write(1000 + t as Sector), false, 0);
    }
    // Three more reads in sector order (fifo_batch = 4) ...
    assert_eq!(take(&mut d, 3, 0), [5, 3, 7]);
    // ... then the batch ends and the starved writes get a turn.
    assert_eq!(take(&mut d, 2, 0), [8, 9]);
    // Reads resume from where they stopped (sector 40).
    assert_eq!(take(&mut d, 4, 0), [2, 6, 0, 4]);
}

#[test]
fn batch_does_not_wrap_to_lower_sectors() {
    let mut d = dd(16);
    d.insert(0, &read(100), false, 0);
    d.insert(1, &read(200), false, 0);
    assert_eq!(take(&mut d, 1, 0), [0]);
    // Behind the batch position: served only when nothing lies ahead;
    // then the batch restarts from the FIFO head.
    d.insert(2, &read(50), false, 0);
    d.insert(3, &read(300), false, 0);
    assert_eq!(drain(&mut d, 0), [1, 3, 2]);
}

#[test]
fn next_request_remembered_per_direction() {
    let mut d = dd(16);
    d.insert(0, &read(100), false, 0);
    d.insert(1, &read(300), false, 0);
    d.insert(2, &read(50), false, 0);
    d.insert(3, &write(900), false, 0);
    d.insert(4, &write(400), false, 0);
    d.insert(5, &write(1200), false, 0);
    // The initial "write batch" takes the lowest write.
    assert_eq!(take(&mut d, 1, 0), [4]);
    assert_eq!(d.next_request(PrioClass::BestEffort, Op::Write), Some(3));
    assert_eq!(d.next_request(PrioClass::BestEffort, Op::Read), Some(2));
    set(&mut d, "fifo_batch", "1");
    // Reads now: starts from the lowest read at or after position 0.
    assert_eq!(take(&mut d, 1, 0), [2]);
    assert_eq!(d.next_request(PrioClass::BestEffort, Op::Read), Some(0));
    assert_eq!(d.next_request(PrioClass::BestEffort, Op::Write), Some(3));
    assert_eq!(d.next_request(PrioClass::RealTime, Op::Read), None);
}

#[test]
fn strict_priority_order() {
    let mut d = dd(16);
    let classes = [PrioClass::Idle, PrioClass::BestEffort, PrioClass::RealTime];
    for (i, &class) in classes.iter().cycle().take(9).enumerate() {
        d.insert(i, &desc(i as Sector * 8, Op::Read, class), false, 0);
    }
    let out = drain(&mut d, 0);
    assert_eq!(out, [2, 5, 8, 1, 4, 7, 0, 3, 6]);
}

#[test]
fn class_none_counts_as_best_effort() {
    let mut d = dd(8);
    let mut none = read(0);
    none.prio = IoPrio::from_kernel(0);
    d.insert(0, &desc(8, Op::Read, PrioClass::Idle), false, 0);
    d.insert(1, &none, false, 0);
    assert_eq!(d.level_queued(PrioClass::BestEffort), 1);
    assert_eq!(drain(&mut d, 0), [1, 0]);
}

#[test]
fn higher_priority_in_flight_blocks_lower_levels() {
    let mut d = dd(8);
    d.insert(0, &desc(0, Op::Read, PrioClass::RealTime), false, 0);
    d.insert(1, &read(8), false, 0);
    assert_eq!(d.dispatch(0), Dispatch::Request(0));
    // C's dd_queued() counts the RT request until it completes.
    assert_eq!(d.level_queued(PrioClass::RealTime), 1);
    assert_eq!(d.dispatch(0), Dispatch::Empty);
    assert!(d.has_work());
    d.completed(0, 0);
    assert_eq!(d.dispatch(0), Dispatch::Request(1));
}

#[test]
fn prio_aging_serves_old_lower_priority_first() {
    let aging = 10_000 * MS;
    let mut d = dd(32);
    d.insert(0, &desc(0, Op::Read, PrioClass::Idle), false, 0);
    d.insert(1, &read(8), false, MS);
    for t in 2..10 {
        d.insert(
            t,
            &desc(100 + t as Sector, Op::Read, PrioClass::RealTime),
            false,
            aging - MS,
        );
    }
    // Not aged yet: strict priority.
    assert_eq!(take(&mut d, 1, aging - MS), [2]);
    // Idle tag 0 aged at `aging`, best-effort tag 1 one ms later; the
    // aged pass checks best effort first.
    assert_eq!(take(&mut d, 1, aging), [0]);
    assert_eq!(take(&mut d, 1, aging + MS), [1]);
    assert_eq!(drain(&mut d, aging + MS), [3, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn prio_aging_expire_zero_serves_lower_levels_first() {
    let mut d = dd(8);
    set(&mut d, "prio_aging_expire", "0");
    d.insert(0, &desc(0, Op::Read, PrioClass::Idle), false, 0);
    d.insert(1, &desc(8, Op::Read, PrioClass::RealTime), false, 0);
    // With aging at 0 ms every lower-priority request is "aged".
    assert_eq!(take(&mut d, 1, 0), [0]);
    assert_eq!(take(&mut d, 1, 0), [1]);
}

#[test]
fn front_merges_off_disables_candidates() {
    let mut d = dd(8);
    d.insert(0, &read(100), false, 0);
    let probe = MergeProbe {
        bio_end: 100,
        op: Op::Read,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(d.front_merge_candidate(&probe), Some(0));
    set(&mut d, "front_merges", "0");
    assert_eq!(d.front_merge_candidate(&probe), None);
    set(&mut d, "front_merges", "1");
    assert_eq!(d.front_merge_candidate(&probe), Some(0));
}

#[test]
fn front_merge_candidate_needs_same_start_op_and_prio() {
    let mut d = dd(8);
    d.insert(0, &read(100), false, 0);
    d.insert(1, &write(200), false, 0);
    d.insert(2, &read(300), true, 0);
    let probe = |bio_end, op, prio| MergeProbe { bio_end, op, prio };
    let be = IoPrio::DEFAULT;
    assert_eq!(d.front_merge_candidate(&probe(100, Op::Read, be)), Some(0));
    assert_eq!(d.front_merge_candidate(&probe(99, Op::Read, be)), None);
    assert_eq!(d.front_merge_candidate(&probe(101, Op::Read, be)), None);
    assert_eq!(d.front_merge_candidate(&probe(100, Op::Write, be)), None);
    let be0 = IoPrio {
        class: PrioClass::BestEffort,
        level: 0,
    };
    assert_eq!(d.front_merge_candidate(&probe(100, Op::Read, be0)), None);
    let rt = prio(PrioClass::RealTime);
    assert_eq!(d.front_merge_candidate(&probe(100, Op::Read, rt)), None);
    assert_eq!(d.front_merge_candidate(&probe(200, Op::Write, be)), Some(1));
    assert_eq!(d.front_merge_candidate(&probe(200, Op::Discard, be)), None);
    // At-head requests are not in the sort trees.
    assert_eq!(d.front_merge_candidate(&probe(300, Op::Read, be)), None);
}

#[test]
fn front_merged_request_moves_in_sector_order() {
    let mut d = dd(8);
    d.insert(0, &read(100), false, 0);
    d.insert(1, &read(60), false, 0);
    d.front_merged(0, 40, 68);
    let probe = MergeProbe {
        bio_end: 40,
        op: Op::Read,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(d.front_merge_candidate(&probe), Some(0));
    assert_eq!(drain(&mut d, 0), [0, 1]);
}

#[test]
fn merged_request_takes_earlier_deadline_and_fifo_place() {
    let mut d = dd(8);
    set(&mut d, "fifo_batch", "1");
    d.insert(0, &read(100), false, 0);
    d.insert(1, &read(5000), false, 10 * MS);
    d.insert(2, &read(200), false, 20 * MS);
    d.insert(4, &read(400), false, 25 * MS);
    d.insert(3, &read(300), false, 30 * MS);
    assert_eq!(take(&mut d, 1, 30 * MS), [0]);
    // 2 (deadline 520 ms) merges into 3 (530 ms): 3 takes 2's deadline
    // and FIFO place, ahead of 4 (525 ms).
    d.requests_merged(3, 2);
    assert_eq!(d.queued(), 3);
    assert_eq!(d.level_queued(PrioClass::BestEffort), 3);
    // Everything expired: FIFO order, 1, 3, 4.
    assert_eq!(drain(&mut d, 600 * MS), [1, 3, 4]);
}

#[test]
fn merged_request_keeps_fifo_place_when_it_expires_first() {
    let mut d = dd(8);
    set(&mut d, "fifo_batch", "1");
    d.insert(0, &read(100), false, 0);
    d.insert(1, &read(5000), false, 10 * MS);
    d.insert(2, &read(6000), false, 20 * MS);
    d.insert(3, &read(7000), false, 30 * MS);
    d.requests_merged(0, 3);
    assert_eq!(take(&mut d, 1, 0), [0]);
    // Deadlines passed for all: FIFO order 1, 2.
    assert_eq!(drain(&mut d, 600 * MS), [1, 2]);
}

#[test]
fn requeued_request_is_reinserted_and_counted_once() {
    let mut d = dd(8);
    d.insert(0, &read(100), false, 0);
    assert_eq!(d.dispatch(0), Dispatch::Request(0));
    d.requeued(0, 0);
    d.insert(0, &read(100), true, 0);
    assert_eq!(d.level_queued(PrioClass::BestEffort), 1);
    assert_eq!(d.queued(), 1);
    assert_eq!(d.dispatch(0), Dispatch::Request(0));
    d.completed(0, 0);
    assert_eq!(d.level_queued(PrioClass::BestEffort), 0);
    assert_eq!(d.dispatch(0), Dispatch::Empty);
}

#[test]
fn protocol_errors_are_ignored() {
    let mut d = dd(4);
    d.insert(4, &read(0), false, 0);
    d.insert(usize::MAX, &read(0), true, 0);
    assert!(!d.has_work());
    d.insert(0, &read(0), false, 0);
    d.insert(0, &write(8), true, 0); // already queued
    d.completed(0, 0); // not dispatched
    d.completed(9, 0);
    d.requeued(0, 0);
    d.requeued(7, 0);
    d.front_merged(9, 0, 0);
    d.requests_merged(0, 0);
    d.requests_merged(0, 9);
    d.requests_merged(9, 0);
    d.requests_merged(0, 1); // 1 is not queued
    assert_eq!(d.queued(), 1);
    assert_eq!(drain(&mut d, 0), [0]);
    assert_eq!(d.dispatch(u64::MAX), Dispatch::Empty);
}

#[test]
fn times_wrap_like_jiffies() {
    let start = u64::MAX - 100 * MS;
    for (now, expect) in [(499 * MS, 2), (500 * MS, 0)] {
        let mut d = dd(4);
        d.insert(0, &read(3000), false, start);
        d.insert(1, &read(0), false, start);
        assert_eq!(take(&mut d, 1, start), [1]);
        d.insert(2, &read(2000), false, start);
        set(&mut d, "fifo_batch", "1");
        // 0's deadline (start + 500 ms) lies past the wrap.
        assert_eq!(take(&mut d, 1, start.wrapping_add(now)), [expect]);
    }
}

#[test]
fn tunables_have_sysfs_names_units_and_defaults() {
    let d = dd(64);
    let expect = [
        ("read_expire", 500),
        ("write_expire", 5000),
        ("writes_starved", 2),
        ("front_merges", 1),
        ("async_depth", 64),
        ("fifo_batch", 16),
        ("prio_aging_expire", 10000),
    ];
    assert_eq!(
        d.tunables(),
        expect.iter().map(|e| e.0).collect::<Vec<_>>().as_slice()
    );
    for (name, value) in expect {
        assert_eq!(d.tunable(name), Ok(value), "{name}");
    }
    assert_eq!(d.tunable("nope"), Err(TunableError::UnknownName));
}

#[test]
fn tunables_accept_their_whole_range() {
    let mut d = dd(64);
    let ranges = [
        ("read_expire", 0, i32::MAX as i64),
        ("write_expire", 0, i32::MAX as i64),
        ("writes_starved", 0, i32::MAX as i64),
        ("front_merges", 0, 1),
        ("async_depth", 1, 64),
        ("fifo_batch", 1, i32::MAX as i64),
        ("prio_aging_expire", 0, i32::MAX as i64),
    ];
    for (name, min, max) in ranges {
        for v in [min, max] {
            assert_eq!(d.set_tunable(name, &format!("{v}\n")), Ok(()), "{name}");
            assert_eq!(d.tunable(name), Ok(v), "{name}");
        }
        assert_eq!(
            d.set_tunable(name, &(min - 1).to_string()),
            Err(TunableError::OutOfRange),
            "{name}"
        );
        assert_eq!(
            d.set_tunable(name, &(max + 1).to_string()),
            Err(TunableError::OutOfRange),
            "{name}"
        );
    }
    set(&mut d, "read_expire", "0x10");
    assert_eq!(d.tunable("read_expire"), Ok(16));
}

#[test]
fn bad_tunable_value_keeps_old_value() {
    let mut d = dd(64);
    for name in d.tunables() {
        let before = d.tunable(name).unwrap();
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
            assert!(d.set_tunable(name, bad).is_err(), "{name}={bad:?}");
            assert_eq!(d.tunable(name), Ok(before), "{name}={bad:?}");
        }
    }
    assert_eq!(
        d.set_tunable("fifo_batch", "0"),
        Err(TunableError::OutOfRange)
    );
    assert_eq!(
        d.set_tunable("front_merges", "2"),
        Err(TunableError::OutOfRange)
    );
    assert_eq!(
        d.set_tunable("async_depth", "65"),
        Err(TunableError::OutOfRange)
    );
    assert_eq!(d.set_tunable("nope", "1"), Err(TunableError::UnknownName));
    assert_eq!(d.tunable("fifo_batch"), Ok(16));
}

#[test]
fn async_depth_limits_async_requests_and_writes() {
    let mut d = dd(64);
    set(&mut d, "async_depth", "10");
    assert_eq!(d.async_depth_limit(Op::Read, true), None);
    assert_eq!(d.async_depth_limit(Op::Read, false), Some(10));
    assert_eq!(d.async_depth_limit(Op::Write, true), Some(10));
    assert_eq!(d.async_depth_limit(Op::Write, false), Some(10));
    assert_eq!(d.async_depth_limit(Op::Discard, true), Some(10));
    // REQ_OP_FLUSH is even: op_is_write() is false for it.
    assert_eq!(d.async_depth_limit(Op::Flush, true), None);
    assert_eq!(d.async_depth_limit(Op::Flush, false), Some(10));
}

#[test]
fn depth_updated_resets_async_depth_to_nr_requests() {
    let mut d = dd(256);
    assert_eq!(d.nr_requests(), 256);
    assert_eq!(d.tunable("async_depth"), Ok(256));
    set(&mut d, "async_depth", "100");
    d.depth_updated(64);
    assert_eq!(d.nr_requests(), 64);
    assert_eq!(d.tunable("async_depth"), Ok(64));
    assert_eq!(
        d.set_tunable("async_depth", "65"),
        Err(TunableError::OutOfRange)
    );
    d.depth_updated(0);
    assert_eq!(d.tunable("async_depth"), Ok(1));
}

#[test]
fn capacity_is_storage_length() {
    assert!(Deadline::new(Vec::<Slot>::new()).is_err());
    let mut d = dd(3);
    assert_eq!(d.capacity(), 3);
    for t in 0..3 {
        d.insert(t, &read(t as Sector), false, 0);
    }
    d.insert(3, &read(3), false, 0);
    assert_eq!(d.queued(), 3);
    // Slots handed back dirty are reset by `new`.
    let d = Deadline::new(d.into_storage()).unwrap();
    assert!(!d.has_work());
    // Storage can be any slice owner, e.g. an array.
    let mut a = Deadline::new([Slot::default(); 2]).unwrap();
    a.insert(1, &read(0), false, 0);
    assert_eq!(a.dispatch(0), Dispatch::Request(1));
}

#[test]
fn at_head_dispatch_moves_the_batch_position() {
    let mut d = dd(8);
    d.insert(0, &read(100), false, 0);
    d.insert(1, &read(300), false, 0);
    d.insert(2, &read(200), true, 0);
    // C's dd_start_request() records the at-head request's position too,
    // so the read batch goes on from sector 200, not from the start.
    assert_eq!(take(&mut d, 1, 0), [2]);
    assert_eq!(d.next_request(PrioClass::BestEffort, Op::Read), Some(1));
    assert_eq!(drain(&mut d, 0), [1, 0]);
}

#[test]
fn lowered_expire_delays_queued_requests_like_c() {
    // C derives a request's start time from its deadline and the current
    // expire (started_after()): lowering read_expire makes queued reads
    // look younger, and dispatch returns nothing until that start passes.
    let mut d = dd(8);
    d.insert(0, &read(100), false, 0);
    set(&mut d, "read_expire", "100");
    assert_eq!(d.dispatch(399 * MS), Dispatch::Empty);
    assert!(d.has_work());
    assert_eq!(d.dispatch(400 * MS), Dispatch::Request(0));
}

#[test]
fn equal_sectors_go_in_insertion_order() {
    // elv_rb_add() puts an equal sector to the right: the earlier request
    // comes first, whatever the tags.
    let mut d = dd(8);
    for t in [3, 1, 2] {
        d.insert(t, &read(64), false, 0);
    }
    // A front merge re-enters the tree, behind its equals.
    d.insert(5, &read(72), false, 0);
    d.front_merged(5, 64, 16);
    d.insert(4, &read(64), false, 0);
    assert_eq!(drain(&mut d, 0), [3, 1, 2, 5, 4]);
}
