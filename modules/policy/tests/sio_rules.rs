// SPDX-License-Identifier: GPL-2.0

//! One test per SIO rule, through the public API.

use ironlift_policy::sched::{check_layout, SchedPolicy};
use ironlift_policy::sio::{Sio, Slot};
use ironlift_policy::AsyncDepth;
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, RequestDesc, Sector, TunableError,
    NSEC_PER_MSEC,
};

const MS: Nanos = NSEC_PER_MSEC;

type S = Sio<Vec<Slot>>;

fn sio(capacity: usize) -> S {
    Sio::new(vec![Slot::default(); capacity]).unwrap()
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

/// An async read (the block layer never makes one; the policy still
/// files it as sync, as `rq_is_sync()` does).
fn async_read(sector: Sector) -> RequestDesc {
    desc(sector, Op::Read, false)
}

fn sync_write(sector: Sector) -> RequestDesc {
    desc(sector, Op::Write, true)
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
fn take(s: &mut S, n: usize, now: Nanos) -> Vec<usize> {
    (0..n)
        .map(|_| {
            let t = tag(s.dispatch(now));
            s.completed(t, now);
            s.check_invariants().unwrap();
            t
        })
        .collect()
}

/// Dispatches and completes everything at `now`.
fn drain(s: &mut S, now: Nanos) -> Vec<usize> {
    let mut out = Vec::new();
    while let Dispatch::Request(t) = s.dispatch(now) {
        s.completed(t, now);
        out.push(t);
    }
    assert!(!s.has_work());
    s.check_invariants().unwrap();
    out
}

fn set(s: &mut S, name: &str, value: &str) {
    s.set_tunable(name, value).unwrap();
}

/// No expiry and no write preference get in the way.
fn plain(capacity: usize) -> S {
    let mut s = sio(capacity);
    set(&mut s, "fifo_batch", "1000");
    set(&mut s, "writes_starved", "1000");
    s
}

#[test]
fn tunables_have_the_sources_names_units_and_defaults() {
    let s = sio(8);
    let expect = [
        ("sync_read_expire", 500),
        ("sync_write_expire", 2000),
        ("async_read_expire", 4000),
        ("async_write_expire", 16000),
        ("fifo_batch", 8),
        ("writes_starved", 0),
    ];
    assert_eq!(
        s.tunables(),
        expect.iter().map(|e| e.0).collect::<Vec<_>>().as_slice()
    );
    for (name, value) in expect {
        assert_eq!(s.tunable(name), Ok(value), "{name}");
    }
    assert_eq!(s.tunable("nope"), Err(TunableError::UnknownName));
    check_layout(&s, AsyncDepth::Elevator).unwrap();
}

#[test]
fn no_sorting_each_fifo_in_arrival_order() {
    let mut s = plain(8);
    for (t, sector) in [(0, 900), (1, 10), (2, 500), (3, 0)] {
        s.insert(t, &read(sector), false, 0);
    }
    assert_eq!(drain(&mut s, 0), [0, 1, 2, 3]);
}

#[test]
fn reads_first_sync_before_async_then_writes() {
    let mut s = plain(8);
    s.insert(0, &async_write(0), false, 0);
    s.insert(1, &sync_write(0), false, 0);
    s.insert(2, &read(0), false, 0);
    s.insert(3, &async_write(8), false, 0);
    s.insert(4, &read(8), false, 0);
    s.insert(5, &sync_write(8), false, 0);
    assert_eq!(drain(&mut s, 0), [2, 4, 1, 5, 0, 3]);
}

#[test]
fn reads_are_sync_even_without_the_flag() {
    let mut s = plain(8);
    s.insert(0, &read(0), false, 0);
    s.insert(1, &async_read(8), false, 0);
    s.insert(2, &read(16), false, 0);
    // One FIFO: arrival order.
    assert_eq!(drain(&mut s, 0), [0, 1, 2]);
}

#[test]
fn writes_first_once_more_than_writes_starved_reads_went_out() {
    let mut s = plain(16);
    set(&mut s, "writes_starved", "2");
    for t in 0..6 {
        s.insert(t, &read(t as Sector), false, 0);
    }
    s.insert(6, &async_write(0), false, 0);
    s.insert(7, &sync_write(0), false, 0);
    // Three reads (starved 3 > 2), then the writes, sync first; a write
    // clears the count, so reads again.
    assert_eq!(take(&mut s, 3, 0), [0, 1, 2]);
    assert_eq!(s.starved(), 3);
    assert_eq!(take(&mut s, 1, 0), [7]);
    assert_eq!(s.starved(), 0);
    assert_eq!(take(&mut s, 3, 0), [3, 4, 5]);
    assert_eq!(take(&mut s, 1, 0), [6]);
}

#[test]
fn default_writes_starved_zero_lets_a_write_follow_every_read() {
    let mut s = sio(16);
    set(&mut s, "fifo_batch", "1000");
    for t in 0..3 {
        s.insert(t, &read(0), false, 0);
        s.insert(t + 3, &async_write(0), false, 0);
    }
    assert_eq!(drain(&mut s, 0), [0, 3, 1, 4, 2, 5]);
}

#[test]
fn writes_preferred_still_serve_reads_when_no_write_waits() {
    let mut s = plain(8);
    set(&mut s, "writes_starved", "0");
    s.insert(0, &read(0), false, 0);
    s.insert(1, &read(8), false, 0);
    // After the first read writes are preferred, but there are none.
    assert_eq!(drain(&mut s, 0), [0, 1]);
    assert_eq!(s.starved(), 2);
}

#[test]
fn fifos_looked_at_after_more_than_fifo_batch_dispatches() {
    let mut s = sio(16);
    set(&mut s, "fifo_batch", "2");
    set(&mut s, "writes_starved", "1000");
    s.insert(0, &async_write(0), false, 0);
    for t in 1..8 {
        s.insert(t, &read(t as Sector), false, 0);
    }
    // The async write expired long ago, but the FIFOs are looked at only
    // when more than 2 requests went out since: on the fourth dispatch,
    // then every third.
    let late = 20_000 * MS;
    assert_eq!(take(&mut s, 3, late), [1, 2, 3]);
    assert_eq!(s.batched(), 3);
    assert_eq!(take(&mut s, 1, late), [0]);
    assert_eq!(s.batched(), 1);
}

#[test]
fn batch_count_starts_again_when_nothing_expired() {
    let mut s = sio(16);
    set(&mut s, "fifo_batch", "1");
    set(&mut s, "writes_starved", "1000");
    for t in 0..3 {
        s.insert(t, &read(t as Sector), false, 0);
    }
    s.insert(3, &async_write(0), false, 0);
    // Dispatch 3 looks (nothing expired yet: 16 s): the count restarts.
    assert_eq!(take(&mut s, 3, 0), [0, 1, 2]);
    assert_eq!(s.batched(), 1);
    // Expired now, but the next look is two dispatches away.
    s.insert(4, &read(9), false, 0);
    s.insert(5, &read(10), false, 0);
    assert_eq!(take(&mut s, 1, 17_000 * MS), [4]);
    assert_eq!(take(&mut s, 1, 17_000 * MS), [3]);
}

#[test]
fn expiry_is_strictly_after_the_deadline() {
    // Sync write 0's deadline is 2000 ms. Dispatch 1 does not look (the
    // count is 0) and takes a read; dispatch 2 looks.
    for (now, expect) in [(2_000 * MS, [2, 0]), (2_000 * MS + 1, [0, 2])] {
        let mut s = sio(8);
        set(&mut s, "fifo_batch", "0");
        set(&mut s, "writes_starved", "1000");
        s.insert(0, &sync_write(0), false, 0);
        s.insert(1, &read(0), false, now);
        s.insert(2, &read(8), false, now);
        assert_eq!(take(&mut s, 1, now), [1]);
        assert_eq!(take(&mut s, 2, now), expect);
    }
}

#[test]
fn expired_heads_looked_at_async_write_async_read_sync_write_sync_read() {
    let mut s = sio(16);
    set(&mut s, "fifo_batch", "0");
    set(&mut s, "writes_starved", "1000");
    for name in [
        "sync_read_expire",
        "sync_write_expire",
        "async_read_expire",
        "async_write_expire",
    ] {
        set(&mut s, name, "0");
    }
    // A fresh read to start the count (dispatch 1 does not look).
    s.insert(9, &read(0), false, 0);
    assert_eq!(take(&mut s, 1, 0), [9]);
    s.insert(0, &read(0), false, 0);
    s.insert(1, &sync_write(0), false, 0);
    s.insert(2, &async_write(0), false, 0);
    // No async read can be made (reads are sync): three FIFOs, looked at
    // async write first, then sync write, then sync read, whatever the
    // read preference says.
    assert_eq!(take(&mut s, 3, 1), [2, 1, 0]);
}

#[test]
fn at_head_requests_go_first_and_count_nothing() {
    let mut s = plain(8);
    s.insert(0, &read(0), false, 0);
    s.insert(1, &async_write(0), true, 0);
    s.insert(2, &read(8), true, 0);
    assert_eq!(take(&mut s, 2, 0), [2, 1]);
    assert_eq!((s.batched(), s.starved()), (0, 0));
    assert_eq!(take(&mut s, 1, 0), [0]);
    assert_eq!((s.batched(), s.starved()), (1, 1));
}

#[test]
fn merged_request_takes_earlier_deadline_and_fifo_place() {
    let mut s = plain(8);
    set(&mut s, "fifo_batch", "0");
    s.insert(0, &async_write(0), false, 0);
    s.insert(1, &async_write(8), false, MS);
    s.insert(2, &async_write(16), false, 2 * MS);
    s.insert(3, &sync_write(24), false, 0);
    // 0 (deadline 16 s) into 3 (2 s): 3 expires first and keeps its
    // place. 1 (16.001 s) into 2 (16.002 s): 2 takes 1's deadline and
    // place.
    s.requests_merged(3, 0);
    s.requests_merged(2, 1);
    assert_eq!(s.queued(), 2);
    s.insert(4, &async_write(100), false, 0);
    s.insert(5, &sync_write(108), false, 15_000 * MS);
    s.requests_merged(5, 4);
    // Everything expired: the first look (dispatch 2) takes the async
    // FIFO's head: 2, then 5 (now async), then the sync write 3.
    s.insert(6, &read(0), false, 20_000 * MS);
    assert_eq!(take(&mut s, 1, 20_000 * MS), [6]);
    assert_eq!(take(&mut s, 3, 20_000 * MS), [2, 5, 3]);
}

#[test]
fn merged_request_keeps_its_place_when_it_expires_first() {
    let mut s = plain(8);
    s.insert(0, &read(0), false, 0);
    s.insert(1, &read(8), false, MS);
    s.insert(2, &read(16), false, 2 * MS);
    s.requests_merged(0, 2);
    assert_eq!(drain(&mut s, 0), [0, 1]);
}

#[test]
fn no_front_merge_candidates_of_its_own() {
    let mut s = plain(4);
    s.insert(0, &read(100), false, 0);
    let probe = MergeProbe {
        bio_end: 100,
        op: Op::Read,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(s.front_merge_candidate(&probe), None);
}

#[test]
fn requeued_request_is_inserted_again_at_head() {
    let mut s = plain(4);
    s.insert(0, &read(0), false, 0);
    s.insert(1, &read(8), false, 0);
    assert_eq!(s.dispatch(0), Dispatch::Request(0));
    s.requeued(0, 0);
    s.insert(0, &read(0), true, 0);
    assert_eq!(s.queued(), 2);
    assert_eq!(drain(&mut s, 0), [0, 1]);
}

#[test]
fn times_wrap_like_jiffies() {
    // Sync write 0's deadline, start + 500 ms, lies past the wrap; it
    // expires one nanosecond after it.
    let start = u64::MAX - 100 * MS;
    for (now, expect) in [(500 * MS, [1, 0]), (500 * MS + 1, [0, 1])] {
        let mut s = sio(4);
        set(&mut s, "fifo_batch", "0");
        set(&mut s, "writes_starved", "1000");
        set(&mut s, "sync_write_expire", "500");
        s.insert(0, &sync_write(0), false, start);
        s.insert(2, &read(0), false, start);
        assert_eq!(take(&mut s, 1, start), [2]);
        s.insert(1, &read(0), false, start.wrapping_add(now));
        assert_eq!(take(&mut s, 2, start.wrapping_add(now)), expect);
    }
}

#[test]
fn tunables_accept_their_whole_range() {
    let mut s = sio(8);
    let max = i32::MAX as i64;
    for name in s.tunables() {
        for v in [0, 1, max] {
            assert_eq!(s.set_tunable(name, &format!("{v}\n")), Ok(()), "{name}");
            assert_eq!(s.tunable(name), Ok(v), "{name}");
        }
        assert_eq!(
            s.set_tunable(name, "-1"),
            Err(TunableError::OutOfRange),
            "{name}"
        );
        assert_eq!(
            s.set_tunable(name, &(max + 1).to_string()),
            Err(TunableError::OutOfRange),
            "{name}"
        );
    }
    set(&mut s, "sync_read_expire", "0x10");
    assert_eq!(s.tunable("sync_read_expire"), Ok(16));
}

#[test]
fn bad_tunable_value_keeps_old_value() {
    let mut s = sio(8);
    for name in s.tunables() {
        let before = s.tunable(name).unwrap();
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
            assert!(s.set_tunable(name, bad).is_err(), "{name}={bad:?}");
            assert_eq!(s.tunable(name), Ok(before), "{name}={bad:?}");
        }
    }
    assert_eq!(s.set_tunable("nope", "1"), Err(TunableError::UnknownName));
}

#[test]
fn limits_no_depth() {
    let s = sio(4);
    for op in [Op::Read, Op::Write, Op::Flush, Op::Discard] {
        for sync in [false, true] {
            assert_eq!(s.async_depth_limit(op, sync), None);
            assert_eq!(<S as SchedPolicy>::depth_limit_index(op, sync), None);
        }
    }
}

#[test]
fn protocol_errors_are_ignored() {
    let mut s = plain(4);
    s.insert(4, &read(0), false, 0);
    s.insert(usize::MAX, &read(0), true, 0);
    assert!(!s.has_work());
    s.insert(0, &read(0), false, 0);
    s.insert(0, &sync_write(8), true, 0); // already queued
    s.completed(0, 0); // not dispatched
    s.completed(9, 0);
    s.requeued(7, 0);
    s.front_merged(9, 0, 0);
    s.requests_merged(0, 0);
    s.requests_merged(0, 9);
    s.requests_merged(9, 0);
    s.requests_merged(0, 1); // 1 is not queued
    assert_eq!(s.queued(), 1);
    assert_eq!(drain(&mut s, 0), [0]);
    assert_eq!(s.dispatch(u64::MAX), Dispatch::Empty);
}

#[test]
fn capacity_is_storage_length() {
    assert!(Sio::new(Vec::<Slot>::new()).is_err());
    let mut s = plain(3);
    assert_eq!(s.capacity(), 3);
    for t in 0..4 {
        s.insert(t, &read(0), false, 0);
    }
    assert_eq!(s.queued(), 3);
    let s = Sio::new(s.into_storage()).unwrap();
    assert!(!s.has_work());
}
