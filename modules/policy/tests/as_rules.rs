// SPDX-License-Identifier: GPL-2.0

//! One test per rule of the anticipatory scheduler, through the public
//! API: elevator order, batches, FIFO expiry, requests at head, requeues
//! and merges, tunables, and the module core's view. The anticipation
//! rules are in `as_antic_rules.rs`.

mod as_common;
use as_common::*;

// ---- elevator order ----------------------------------------------------

#[test]
fn first_dispatch_starts_a_sync_batch_with_the_oldest_read() {
    let mut a = sched(8);
    a.insert(0, &read(0, 300), false, 0);
    a.insert(1, &read(0, 100), false, 0);
    a.insert(2, &read(0, 200), false, 0);
    assert!(!a.sync_batch(), "C starts in an empty async batch");
    assert_eq!(take(&mut a, 0), 0);
    assert!(a.sync_batch());
    check(&a);
}

#[test]
fn elevator_order_goes_forward_from_where_the_last_request_ended() {
    let mut a = sched(8);
    for (t, s) in [(0, 1000), (1, 3000), (2, 2000), (3, 500)] {
        a.insert(t, &read(0, s), false, 0);
    }
    // From 1008: 2000 is 992 ahead, 500 is 508 behind (costing 1016).
    assert_eq!(take_n(&mut a, 4, 0), [0, 2, 1, 3]);
}

#[test]
fn short_backward_seek_costs_twice_its_distance() {
    let mut a = sched(8);
    a.insert(0, &read(0, 1000), false, 0);
    a.insert(1, &read(0, 1400), false, 0);
    a.insert(2, &read(0, 900), false, 0);
    // From 1008: 1400 costs 392, 900 costs 2 * 108 = 216.
    assert_eq!(take_n(&mut a, 3, 0), [0, 2, 1]);
    let mut a = sched(8);
    a.insert(0, &read(0, 1000), false, 0);
    a.insert(1, &read(0, 1100), false, 0);
    a.insert(2, &read(0, 900), false, 0);
    // 1100 costs 92 < 216.
    assert_eq!(take_n(&mut a, 3, 0), [0, 1, 2]);
}

#[test]
fn equal_costs_go_to_the_higher_sector() {
    let mut a = sched(8);
    a.insert(0, &read(0, 992), false, 0);
    a.insert(1, &read(0, 1100), false, 0);
    a.insert(2, &read(0, 950), false, 0);
    // From 1000: 1100 costs 100, 950 costs 2 * 50 = 100.
    assert_eq!(take_n(&mut a, 3, 0), [0, 1, 2]);
}

#[test]
fn requests_further_back_than_maxback_go_after_those_ahead() {
    let mut a = sched(8);
    let far = 4 * MAXBACK;
    a.insert(0, &read(0, far), false, 0);
    a.insert(1, &read(0, 100), false, 0);
    a.insert(2, &read(0, far + 100 * MAXBACK), false, 0);
    a.insert(3, &read(0, 50), false, 0);
    // 100 lies beyond MAXBACK behind: the far one ahead goes first; then,
    // all of them behind, the lowest.
    assert_eq!(take_n(&mut a, 4, 0), [0, 2, 3, 1]);
}

#[test]
fn the_next_request_wraps_to_the_lowest_sector() {
    let mut a = sched(8);
    a.insert(0, &read(0, 5000), false, 0);
    a.insert(1, &read(0, 10), false, 0);
    a.insert(2, &read(0, 20), false, 0);
    take(&mut a, 0);
    // Nothing after 5000: the lowest is the "next", 20 the "previous";
    // both within MAXBACK behind, 20 is nearer.
    assert_eq!(a.next_request(true), Some(2));
    assert_eq!(take_n(&mut a, 2, 0), [2, 1]);
}

#[test]
fn sync_writes_sort_with_reads_and_async_writes_apart() {
    let mut a = sched(8);
    let sync_write = RequestDesc {
        sync: true,
        ..write(0, 100)
    };
    a.insert(0, &read(0, 0), false, 0);
    a.insert(1, &sync_write, false, 0);
    a.insert(2, &write(0, 50), false, 0);
    assert_eq!(a.sorted(true).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(a.sorted(false).collect::<Vec<_>>(), [2]);
    // The sync batch takes both, the async write comes after.
    assert_eq!(take_n(&mut a, 3, 0), [0, 1, 2]);
    check(&a);
}

#[test]
fn equal_sectors_go_in_insertion_order() {
    let mut a = sched(8);
    a.insert(0, &read(0, 0), false, 0);
    for t in 1..4 {
        a.insert(t, &read(0, 64), false, 0);
    }
    assert_eq!(take_n(&mut a, 4, 0), [0, 1, 2, 3]);
}

// ---- batches -----------------------------------------------------------

/// A scheduler with `reads` reads of issuer 0 from sector 0 and `writes`
/// async writes from sector 1 << 30, inserted at 0.
fn mixed(reads: usize, writes: usize) -> As {
    let mut a = sched(reads + writes);
    for t in 0..reads {
        a.insert(t, &read(0, t as Sector * 8), false, 0);
    }
    for w in 0..writes {
        a.insert(reads + w, &write(1, (1 << 30) + w as Sector * 8), false, 0);
    }
    a
}

#[test]
fn sync_batch_lasts_read_batch_expire_from_its_first_completion() {
    let mut a = mixed(40, 40);
    // The first read completes at 1 ms: the batch ends after 501 ms.
    let first = tag(a.dispatch(0));
    a.completed(first, MS);
    for now in [2 * MS, 100 * MS, 501 * MS] {
        assert!(take(&mut a, now) < 40, "a read at {now}");
    }
    assert!(take(&mut a, 501 * MS + 1) >= 40, "the writes' turn");
    assert!(!a.sync_batch());
}

#[test]
fn async_batch_ends_after_write_batch_count_requests() {
    let mut a = mixed(40, 80);
    take(&mut a, 0);
    let count = a.write_batch_count() as usize;
    // 600 ms: the sync batch is over.
    let writes = std::iter::repeat_with(|| take(&mut a, 600 * MS))
        .take_while(|&t| t >= 40)
        .count();
    assert_eq!(writes, count);
    assert!(a.sync_batch());
}

#[test]
fn async_batch_ends_after_write_batch_expire() {
    let mut a = mixed(40, 80);
    take(&mut a, 0);
    assert!(take(&mut a, 400 * MS) < 40);
    assert!(take(&mut a, 601 * MS) >= 40, "the async batch starts");
    // Its time runs from its first dispatch: 125 ms.
    assert!(take(&mut a, 726 * MS) >= 40);
    assert!(take(&mut a, 726 * MS + 1) < 40, "over: reads again");
}

#[test]
fn old_batch_drains_before_the_new_one_starts() {
    let mut a = mixed(4, 4);
    let r = tag(a.dispatch(0));
    a.completed(r, 0);
    // A read in flight when the sync batch expires.
    let r = tag(a.dispatch(400 * MS));
    assert!(r < 4);
    assert_eq!(a.dispatch(601 * MS), Dispatch::Empty, "waits for the read");
    assert_eq!(a.dispatch(602 * MS), Dispatch::Empty);
    assert_eq!(a.in_flight(), 1);
    a.completed(r, 603 * MS);
    assert_eq!(a.after_completion(), AfterCompletion::RunNow);
    assert!(take(&mut a, 603 * MS) >= 4, "now the writes");
    check(&a);
}

#[test]
fn a_new_batch_that_waited_for_the_old_one_starts_with_its_oldest_request() {
    let mut a = sched(8);
    a.insert(0, &read(0, 10_000), false, 0);
    take(&mut a, 0);
    // No reads: a write batch, its first write left on the device.
    a.insert(1, &write(1, 1 << 30), false, 0);
    a.insert(2, &write(1, (1 << 30) + 8), false, 0);
    assert_eq!(a.dispatch(7 * MS), Dispatch::Request(1));
    // Reads: the oldest behind where the last sync batch ended, the newer
    // one just after it.
    a.insert(3, &read(2, 0), false, 8 * MS);
    a.insert(4, &read(0, 10_016), false, 9 * MS);
    // The write batch is over; the reads wait for the write to complete.
    assert_eq!(a.dispatch(200 * MS), Dispatch::Empty);
    a.completed(1, 201 * MS);
    assert_eq!(a.after_completion(), AfterCompletion::RunNow);
    // C would go on in elevator order (4); the batch starts at its oldest.
    assert_eq!(take(&mut a, 201 * MS), 3);
}

#[test]
fn write_batch_count_doubles_when_writes_finish_early() {
    let mut a = mixed(40, 80);
    take(&mut a, 0);
    // The initial empty async batch counted as quick: 12 doubled.
    assert_eq!(a.write_batch_count(), 24);
    // A 24-write batch in no time, then the next sync batch's first
    // completion measures it.
    assert!(take_n(&mut a, 24, 600 * MS).iter().all(|&t| t >= 40));
    assert!(take(&mut a, 601 * MS) < 40);
    assert_eq!(a.write_batch_count(), 48);
}

#[test]
fn write_batch_count_halves_when_the_async_batch_overran_threefold() {
    let mut a = mixed(40, 80);
    take(&mut a, 0);
    // One write takes 400 ms: more than 3 x write_batch_expire.
    let w = tag(a.dispatch(600 * MS));
    assert!(w >= 40);
    a.completed(w, 1000 * MS);
    assert!(take(&mut a, 1001 * MS) < 40);
    assert_eq!(a.write_batch_count(), 12);
}

#[test]
fn write_batch_count_drops_by_one_when_the_async_batch_overran() {
    let mut a = mixed(40, 80);
    take(&mut a, 0);
    let w = tag(a.dispatch(600 * MS));
    a.completed(w, 800 * MS);
    assert!(take(&mut a, 801 * MS) < 40);
    assert_eq!(a.write_batch_count(), 23);
}

#[test]
fn async_batch_that_ran_out_of_writes_is_not_shortened() {
    let mut a = mixed(1, 2);
    take(&mut a, 0);
    // No reads left: after waiting for the reader (6 ms), the writes go,
    // and the batch runs out of them.
    assert_eq!(a.dispatch(MS), Dispatch::IdleUntil(6 * MS));
    let w = tag(a.dispatch(6 * MS));
    a.completed(w, 300 * MS);
    take(&mut a, 300 * MS);
    assert_eq!(a.dispatch(300 * MS), Dispatch::Empty);
    // A read comes long after: the batch overran its time, but idled.
    a.insert(0, &read(0, 0), false, 400 * MS);
    take(&mut a, 400 * MS);
    assert_eq!(a.write_batch_count(), 24);
}

// ---- FIFO expiry -------------------------------------------------------

/// Issuer 0 reads at sector 0 (dispatched at 0), then at 1 ms a far read
/// of issuer 1 and near reads of issuer 0 arrive.
fn with_far_read(near: usize) -> As {
    let mut a = sched(near + 2);
    a.insert(0, &read(0, 0), false, 0);
    take(&mut a, 0);
    a.insert(1, &read(1, 1 << 30), false, MS);
    for t in 0..near {
        a.insert(t + 2, &read(0, 8 + t as Sector * 8), false, MS);
    }
    a
}

#[test]
fn expired_read_is_served_before_elevator_order() {
    let mut a = with_far_read(10);
    assert_eq!(take(&mut a, MS), 2, "elevator order");
    // The far read's deadline (126 ms) passed, and the FIFO was last
    // checked at 0.
    assert_eq!(take(&mut a, 200 * MS), 1);
}

#[test]
fn fifo_is_checked_once_per_expire_interval() {
    let mut a = sched(16);
    a.insert(0, &read(0, 1 << 30), false, 0);
    take(&mut a, 0);
    // Two reads out of elevator order (one far behind, one far ahead),
    // and issuer 0's next ones.
    a.insert(1, &read(1, 0), false, MS);
    a.insert(2, &read(2, 1 << 32), false, MS);
    for t in 3..12 {
        a.insert(t, &read(0, (1 << 30) + t as Sector * 8), false, MS);
    }
    // Deadlines at 126 ms; the FIFO was checked at 0, and is checked at
    // most every 125 ms.
    assert_eq!(take(&mut a, 124 * MS), 3);
    assert_eq!(take(&mut a, 127 * MS), 1, "checked: expired head");
    // Issuer 1 is waited for, then elevator order: not checked again yet.
    assert_eq!(a.dispatch(128 * MS), Dispatch::IdleUntil(133 * MS));
    assert_eq!(take(&mut a, 133 * MS), 4);
    assert_eq!(take(&mut a, 251 * MS), 5, "checked at 127 ms");
    assert_eq!(take(&mut a, 252 * MS), 2);
}

// ---- at head, requeues, merges ------------------------------------------

#[test]
fn at_head_requests_go_first_even_while_waiting() {
    let (mut a, t) = two_readers(10_000_000);
    a.dispatch(0);
    a.completed(t, MS);
    a.insert(2, &write(3, 7), true, 2 * MS);
    a.insert(3, &write(3, 9), true, 2 * MS);
    assert_eq!(take_n(&mut a, 2, 2 * MS), [3, 2], "the latest first");
    // Outside AS: still waiting for issuer 0.
    assert_eq!(a.status(), AnticStatus::WaitNext);
    assert_eq!(a.anticipated(), Some(0));
    check(&a);
}

#[test]
fn a_requeued_request_keeps_its_dispatch_accounting() {
    let mut a = mixed(2, 2);
    let r = tag(a.dispatch(0));
    a.requeued(r, MS);
    a.insert(r, &read(0, 0), true, MS);
    assert_eq!(a.in_flight(), 1);
    check(&a);
    assert_eq!(tag(a.dispatch(MS)), r);
    a.completed(r, 2 * MS);
    assert_eq!(a.in_flight(), 0);
    check(&a);
}

#[test]
fn a_requeued_request_back_in_the_tree_counts_as_never_dispatched() {
    let mut a = mixed(2, 2);
    let r = tag(a.dispatch(0));
    a.requeued(r, MS);
    a.insert(r, &read(0, 0), false, MS);
    assert_eq!(a.in_flight(), 0);
    assert_eq!(a.context_info(0).unwrap().queued, 2);
    check(&a);
    // It goes again (after the other read: the head is past it).
    let mut again = take_n(&mut a, 2, MS);
    again.sort();
    assert_eq!(again, [0, 1]);
}

#[test]
fn front_merge_candidate_is_the_request_of_the_bios_operation_at_its_end() {
    let mut a = sched(8);
    a.insert(0, &read(0, 100), false, 0);
    a.insert(1, &write(0, 200), false, 0);
    let sync_write = RequestDesc {
        sync: true,
        ..write(0, 300)
    };
    a.insert(2, &sync_write, false, 0);
    let probe = |bio_end, op| MergeProbe {
        bio_end,
        op,
        prio: Default::default(),
    };
    assert_eq!(a.front_merge_candidate(&probe(100, Op::Read)), Some(0));
    assert_eq!(a.front_merge_candidate(&probe(200, Op::Write)), Some(1));
    assert_eq!(a.front_merge_candidate(&probe(300, Op::Write)), Some(2));
    assert_eq!(a.front_merge_candidate(&probe(200, Op::Read)), None);
    assert_eq!(a.front_merge_candidate(&probe(100, Op::Write)), None);
    assert_eq!(a.front_merge_candidate(&probe(100, Op::Flush)), None);
}

#[test]
fn front_merged_request_moves_in_its_tree() {
    let mut a = sched(8);
    a.insert(0, &read(0, 100), false, 0);
    a.insert(1, &read(0, 50), false, 0);
    a.front_merged(0, 40, 68);
    check(&a);
    assert_eq!(a.sorted(true).collect::<Vec<_>>(), [0, 1]);
}

#[test]
fn merged_request_takes_the_earlier_deadline_and_fifo_place() {
    let mut a = sched(8);
    a.insert(0, &read(0, 0), false, 0);
    take(&mut a, 0);
    a.insert(1, &read(1, 1 << 30), false, MS);
    a.insert(2, &read(2, 1 << 31), false, 2 * MS);
    a.insert(3, &read(0, 8), false, 3 * MS);
    a.insert(4, &read(0, 16), false, 3 * MS);
    // The oldest (1) merges into 3.
    a.requests_merged(3, 1);
    check(&a);
    // At 200 ms the FIFO head is 3, with 1's deadline.
    assert_eq!(take(&mut a, 200 * MS), 3);
}

// ---- tunables ----------------------------------------------------------

#[test]
fn tunables_have_the_sources_names_units_and_defaults() {
    let a = sched(8);
    let got: Vec<(&str, i64)> = a
        .tunables()
        .iter()
        .map(|&n| (n, a.tunable(n).unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            ("est_time", 0),
            ("read_expire", 125),
            ("write_expire", 250),
            ("antic_expire", 6),
            ("read_batch_expire", 500),
            ("write_batch_expire", 125),
        ]
    );
    assert_eq!(a.tunable("quantum"), Err(TunableError::UnknownName));
    ironlift_policy::sched::check_layout(&a, ironlift_policy::AsyncDepth::Elevator).unwrap();
}

#[test]
fn tunables_accept_their_whole_range_in_ms() {
    let mut a = sched(8);
    for name in a.tunables().iter().skip(1) {
        for v in ["0", "1", "2147483647", "300\n"] {
            set(&mut a, name, v);
            assert_eq!(a.tunable(name), Ok(v.trim().parse().unwrap()));
        }
    }
}

#[test]
fn bad_tunable_value_keeps_old_value() {
    let mut a = sched(8);
    for (v, e) in [
        ("-1", TunableError::OutOfRange),
        ("2147483648", TunableError::OutOfRange),
        ("abc", TunableError::Invalid),
        ("", TunableError::Invalid),
        ("5 ", TunableError::Invalid),
    ] {
        assert_eq!(a.set_tunable("antic_expire", v), Err(e), "{v:?}");
        assert_eq!(a.tunable("antic_expire"), Ok(6));
    }
}

#[test]
fn est_time_is_read_only_and_shows_the_new_process_think_time() {
    let mut a = sched(16);
    assert_eq!(a.set_tunable("est_time", "5"), Err(TunableError::ReadOnly));
    let mut now = 0;
    for p in 1..8 {
        now = history(&mut a, p, 2, 15 * MS, now);
    }
    let ms = (a.estimates().new_ttime_mean / MS) as i64;
    assert!(ms > 6);
    assert_eq!(a.tunable("est_time"), Ok(ms));
    assert_eq!(a.set_tunable("est_time", "5"), Err(TunableError::ReadOnly));
    assert_eq!(a.tunable("est_time"), Ok(ms));
}

#[test]
fn a_changed_antic_expire_applies_to_the_next_wait() {
    let (mut a, t) = two_readers(10_000_000);
    set(&mut a, "antic_expire", "20");
    a.dispatch(0);
    a.completed(t, MS);
    assert_eq!(a.dispatch(2 * MS), Dispatch::IdleUntil(21 * MS));
}

// ---- the module core's view ---------------------------------------------

#[test]
fn contexts_take_free_issuers_and_reuse_them_after_exit() {
    let mut a = sched(8);
    let mut ids = ContextIssuers::new(3);
    let (mut w0, mut w1) = (ContextIssuers::UNASSIGNED, ContextIssuers::UNASSIGNED);
    // Three slots in the table; the policy has more: only the mapping's
    // own shared slot (2) matters here.
    let i0 = ids.issuer(&a, &mut w0, false);
    a.insert(0, &read(i0, 0), false, 0);
    let i1 = ids.issuer(&a, &mut w1, false);
    assert_eq!((i0, i1), (0, 1));
    take(&mut a, 0);
    // Exited, anticipated on, then released at the next dispatch.
    assert_eq!(ids.exit(&mut w0), Some(0));
    SchedPolicy::issuer_exit(&mut a, 0, 0);
    assert!(!SchedPolicy::issuer_is_free(&a, 0));
    a.insert(1, &write(i1, 100), false, MS);
    // The wait for the exited process runs out first.
    take(&mut a, 6 * MS);
    assert!(SchedPolicy::issuer_is_free(&a, 0));
    let mut w2 = ContextIssuers::UNASSIGNED;
    assert_eq!(ids.issuer(&a, &mut w2, false), 0);
    check(&a);
}

#[test]
fn protocol_errors_are_ignored() {
    let mut a = sched(4);
    a.insert(9, &read(0, 0), false, 0);
    a.completed(2, 0);
    a.requeued(3, 0);
    a.requests_merged(0, 0);
    a.front_merged(7, 0, 8);
    a.insert(0, &read(0, 0), false, 0);
    a.insert(0, &read(0, 8), false, 0);
    a.issuer_exit(99, 0);
    check(&a);
    assert_eq!(a.queued(), 1);
    assert_eq!(take(&mut a, 0), 0);
    a.completed(0, 0);
    assert!(!a.has_work());
    check(&a);
}

#[test]
fn times_wrap_like_jiffies() {
    let start = u64::MAX - 3 * MS;
    let mut a = sched(16);
    a.insert(0, &read(0, 0), false, start);
    a.insert(1, &read(1, 10_000_000), false, start);
    assert_eq!(take(&mut a, start), 0);
    let until = start.wrapping_add(6 * MS);
    assert_eq!(a.dispatch(start + MS), Dispatch::IdleUntil(until));
    assert_eq!(a.dispatch(until - 1), Dispatch::IdleUntil(until));
    assert_eq!(take(&mut a, until), 1);
}

#[test]
fn capacity_and_issuers_are_the_storage_lengths() {
    assert!(Anticipatory::new(Vec::<Slot>::new(), vec![ContextSlot::default(); 2]).is_err());
    assert!(Anticipatory::new(vec![Slot::default(); 2], Vec::<ContextSlot>::new()).is_err());
    let a = Anticipatory::new(vec![Slot::default(); 5], vec![ContextSlot::default(); 1]).unwrap();
    assert_eq!((a.capacity(), a.issuers()), (5, 1));
    // With one slot, every request is of no process.
    assert!(!a.issuer_is_free(0));
}
