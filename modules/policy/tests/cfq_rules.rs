// SPDX-License-Identifier: GPL-2.0

//! One test per rule of the CFQ policy, through its public API: queues,
//! request order, slices, service trees and workloads, idling, dispatch
//! limits, preemption, issuers, merges and tunables.

use ironlift_policy::{MergeProbe, TunableError};

mod cfq_common;
use cfq_common::*;

const BE: PrioClass = PrioClass::BestEffort;
const RT: PrioClass = PrioClass::RealTime;
const IDLE: PrioClass = PrioClass::Idle;

/// Makes issuer `issuer`'s queue seeky: six reads far apart, one at a
/// time, each dispatched and completed; returns a time 20 ms after the
/// last completion, by which the queue was idled out (so that its next
/// request puts it on the tree of its new workload type).
fn make_seeky(c: &mut C, issuer: usize, tag: usize, mut t: Nanos) -> Nanos {
    for i in 0..6u64 {
        c.insert(tag, &read(issuer, (i + 1) * 1_000_000, 8), false, t);
        let got = tag_of(c.dispatch(t));
        assert_eq!(got, tag);
        t += MS;
        c.completed(tag, t);
    }
    t + 20 * MS
}

// ----- setup and queues -------------------------------------------------------

#[test]
fn setup_needs_a_request_and_an_issuer_beyond_the_async_queues() {
    assert!(Cfq::new(
        Vec::<ReqSlot>::new(),
        vec![QueueSlot::default(); C::queue_slots(1)]
    )
    .is_err());
    assert!(Cfq::new(vec![ReqSlot::default(); 4], vec![QueueSlot::default(); 17]).is_err());
    assert!(Cfq::new(vec![ReqSlot::default(); 4], vec![QueueSlot::default(); 18]).is_ok());
    assert_eq!(C::queue_slots(3), 20);
}

#[test]
fn sync_requests_go_to_their_issuers_queue_async_ones_to_their_prioritys() {
    let mut c = plain(16, 4);
    c.insert(0, &read(0, 0, 8), false, 0);
    c.insert(1, &read(0, 1000, 8), false, 0);
    c.insert(2, &write_async(1, 5000, 8), false, 0);
    c.insert(3, &write_async(2, 6000, 8), false, 0);
    c.insert(4, &with_prio(write_async(2, 7000, 8), BE, 2), false, 0);
    assert_eq!(c.queue_info(QueueId::Sync(0)).queued, 2);
    // Async requests of one priority share a queue, whoever sent them.
    assert_eq!(c.queue_info(QueueId::Async(prio(BE, 4))).queued, 2);
    assert_eq!(c.queue_info(QueueId::Async(prio(BE, 2))).queued, 1);
    // An issuer that sent only async requests still holds its slot.
    assert_eq!(c.queue_info(QueueId::Sync(1)).queued, 0);
    assert!(!c.issuer_is_free(1));
}

#[test]
fn issuers_beyond_the_slots_share_the_last_one() {
    let mut c = plain(8, 3);
    c.insert(0, &read(7, 0, 8), false, 0);
    c.insert(1, &read(2, 100, 8), false, 0);
    assert_eq!(c.queue_info(QueueId::Sync(2)).queued, 2);
    assert_eq!(c.queue_info(QueueId::Sync(9)).queued, 2);
}

// ----- request order ------------------------------------------------------------

#[test]
fn a_queue_serves_its_requests_in_sector_order_from_the_head() {
    let mut c = plain(8, 2);
    for (t, s) in [(0, 100), (1, 300), (2, 200)] {
        c.insert(t, &read(0, s, 8), false, 0);
    }
    let order: Vec<_> = (0..3).map(|_| tag_of(c.dispatch(0))).collect();
    assert_eq!(order, [0, 2, 1]);
}

#[test]
fn a_short_backward_seek_costs_its_penalty() {
    let mut c = plain(8, 2);
    c.insert(0, &read(0, 10_000, 8), false, 0);
    assert_eq!(c.dispatch(0), Dispatch::Request(0));
    // The head is at 10008: 18 back (36 with the penalty) beats 92 ahead.
    c.insert(1, &read(0, 9_990, 8), false, 0);
    c.insert(2, &read(0, 10_100, 8), false, 0);
    assert_eq!(tag_of(c.dispatch(0)), 1);
    assert_eq!(tag_of(c.dispatch(0)), 2);
}

#[test]
fn back_seek_max_and_penalty_decide_backward_seeks() {
    for (max, penalty, first) in [("16384", "2", 2), ("16384", "1", 2), ("65536", "1", 1)] {
        let mut c = plain(8, 2);
        c.set_tunable("back_seek_max", max).unwrap();
        c.set_tunable("back_seek_penalty", penalty).unwrap();
        c.insert(0, &read(0, 100_000, 8), false, 0);
        assert_eq!(c.dispatch(0), Dispatch::Request(0));
        // 50008 sectors behind the head, 99992 ahead.
        c.insert(1, &read(0, 50_000, 8), false, 0);
        c.insert(2, &read(0, 200_000, 8), false, 0);
        assert_eq!(
            tag_of(c.dispatch(0)),
            first,
            "back_seek_max {max}, penalty {penalty}"
        );
    }
}

#[test]
fn an_expired_request_goes_first_once_per_slice() {
    let mut c = plain(8, 2);
    c.insert(0, &read(0, 500_000, 8), false, 0);
    c.insert(1, &read(0, 400_000, 8), false, 10 * MS);
    c.insert(2, &read(0, 100, 8), false, 200 * MS);
    // Both older requests are past fifo_expire_sync (125 ms): the oldest
    // goes first, then sector order resumes (the other expired one waits).
    let order: Vec<_> = (0..3).map(|_| tag_of(c.dispatch(200 * MS))).collect();
    assert_eq!(order, [0, 2, 1]);
}

// ----- slices -----------------------------------------------------------------------

#[test]
fn a_slice_starts_at_the_first_completion_and_scales_with_priority() {
    for (class, level, sync, slice) in [
        (BE, 0, true, 180),
        (BE, 4, true, 100),
        (BE, 7, true, 40),
        (RT, 4, true, 100),
        (BE, 4, false, 40),
        (BE, 0, false, 72),
    ] {
        let mut c = plain(8, 2);
        let d = if sync {
            read(0, 0, 8)
        } else {
            write_async(0, 0, 8)
        };
        c.insert(0, &with_prio(d, class, level), false, 0);
        let id = if sync {
            QueueId::Sync(0)
        } else {
            QueueId::Async(prio(class, level))
        };
        assert_eq!(c.dispatch(0), Dispatch::Request(0));
        assert_eq!(
            c.queue_info(id).slice_end,
            0,
            "no slice before a completion"
        );
        c.completed(0, 5 * MS);
        let q = c.queue_info(id);
        assert_eq!(
            q.allocated_slice,
            slice * MS,
            "{class:?} {level} sync {sync}"
        );
        assert_eq!(q.slice_end, 5 * MS + slice * MS);
    }
}

#[test]
fn low_latency_fits_the_classs_queues_into_target_latency() {
    let mut c = cfq(16, 6);
    for i in 0..5 {
        c.insert(i, &read(i, i as u64 * 1_000_000, 8), false, 0);
    }
    let t = tag_of(c.dispatch(0));
    c.completed(t, MS);
    // Five busy queues of 100 ms would take 500 ms: each gets 300 / 4
    // (the averaged queue count rises to 4 at once).
    let q = c.queue_info(QueueId::Sync(t));
    assert_eq!(q.allocated_slice, 75 * MS);
}

#[test]
fn a_queue_is_expired_when_its_slice_is_used() {
    let mut c = plain(512, 3);
    for i in 0..200 {
        c.insert(i, &read(0, i as u64 * 8, 8), false, 0);
        c.insert(200 + i, &read(1, 1 << 30 | (i as u64 * 8), 8), false, 0);
    }
    let mut first_other = None;
    for step in 0..150u64 {
        let t = serve(&mut c, step * MS, (step + 1) * MS);
        if t >= 200 && first_other.is_none() {
            first_other = Some(step);
        }
    }
    // The slice starts at the first completion (1 ms) and lasts 100 ms.
    assert_eq!(first_other, Some(101));
}

#[test]
fn the_only_busy_queue_waits_busy_past_its_slice_end() {
    let mut c = plain(8, 2);
    for k in 0..97u64 {
        let tag = (k % 2) as usize;
        c.insert(tag, &read(0, k * 8, 8), false, k * MS);
        serve(&mut c, k * MS, (k + 1) * MS);
        if k == 95 {
            assert_eq!(c.queue_info(QueueId::Sync(0)).slice_end, 101 * MS);
        }
    }
    // Completed at 97 ms, 4 ms (a jiffy) short of its end: it waits for
    // its next request one idle slice past then.
    let q = c.queue_info(QueueId::Sync(0));
    assert_eq!(q.slice_end, 105 * MS);
    assert!(q.in_service);
}

// ----- idling --------------------------------------------------------------------------

#[test]
fn an_empty_sync_queue_is_idled_for_after_its_completion() {
    let mut c = plain(8, 3);
    c.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(c.dispatch(0), Dispatch::Request(0));
    c.insert(1, &read(1, 100_000, 8), false, 0);
    // In flight: wait for its completion rather than switch.
    assert_eq!(c.dispatch(0), Dispatch::Empty);
    c.completed(0, MS);
    assert_eq!(c.idling_until(), Some(9 * MS));
    assert_eq!(c.dispatch(MS), Dispatch::IdleUntil(9 * MS));
    assert_eq!(c.dispatch(5 * MS), Dispatch::IdleUntil(9 * MS));
    assert_eq!(c.in_service(), Some(QueueId::Sync(0)));
}

#[test]
fn a_request_of_the_idled_for_queue_ends_the_idling() {
    let mut c = plain(8, 3);
    c.insert(0, &read(0, 0, 8), false, 0);
    serve(&mut c, 0, MS);
    c.insert(1, &read(1, 100_000, 8), false, MS);
    c.insert(2, &read(0, 8, 8), false, 3 * MS);
    assert_eq!(c.idling_until(), None);
    assert_eq!(c.dispatch(3 * MS), Dispatch::Request(2));
}

#[test]
fn the_idle_timer_expires_the_idled_for_queue() {
    let mut c = plain(8, 3);
    c.insert(0, &read(0, 0, 8), false, 0);
    serve(&mut c, 0, MS);
    c.insert(1, &read(1, 100_000, 8), false, MS);
    assert_eq!(c.dispatch(MS), Dispatch::IdleUntil(9 * MS));
    assert_eq!(c.dispatch(9 * MS), Dispatch::Request(1));
    assert_eq!(c.in_service(), Some(QueueId::Sync(1)));
    assert!(!c.queue_info(QueueId::Sync(0)).busy);
}

#[test]
fn a_seeky_queue_loses_its_idle_window() {
    let mut c = plain(8, 2);
    make_seeky(&mut c, 0, 0, 0);
    let q = c.queue_info(QueueId::Sync(0));
    assert!(q.seeky);
    assert!(!q.idle_window);
    assert_eq!(q.workload, Workload::SyncNoIdle);
}

#[test]
fn a_long_think_time_closes_the_idle_window() {
    let mut c = plain(8, 2);
    let mut t = 0;
    for k in 0..4u64 {
        c.insert(0, &read(0, k * 8, 8), false, t);
        serve(&mut c, t, t + MS);
        t += MS + 20 * MS;
    }
    let q = c.queue_info(QueueId::Sync(0));
    // Think times count up to twice slice_idle (16 ms): above 8 ms.
    let think = q.think_time.expect("enough samples");
    assert!(think > 8 * MS && think <= 16 * MS, "{think}");
    assert!(!q.idle_window);
    assert!(!q.seeky);
}

#[test]
fn the_last_queue_on_the_sync_noidle_tree_is_idled_for() {
    let mut c = plain(8, 3);
    let t = make_seeky(&mut c, 0, 0, 0);
    c.insert(0, &read(0, 50_000_000, 8), false, t);
    c.insert(1, &read(1, 8, 8), false, t);
    assert_eq!(c.dispatch(t), Dispatch::Request(0));
    c.completed(0, t + MS);
    // Seeky, so no idle window of its own, but the only queue on its tree.
    assert_eq!(c.idling_until(), Some(t + 9 * MS));
}

#[test]
fn sync_noidle_queues_are_not_idled_for_one_by_one() {
    let mut c = plain(8, 3);
    let t = make_seeky(&mut c, 0, 0, 0);
    let t = make_seeky(&mut c, 1, 1, t);
    c.insert(0, &read(0, 50_000_000, 8), false, t);
    c.insert(1, &read(1, 70_000_000, 8), false, t);
    let first = tag_of(c.dispatch(t));
    c.completed(first, t + MS);
    assert_eq!(c.idling_until(), None);
    assert_eq!(tag_of(c.dispatch(t + MS)), 1 - first);
}

#[test]
fn no_idling_with_slice_idle_and_group_idle_zero() {
    let mut c = plain(8, 3);
    c.set_tunable("slice_idle", "0").unwrap();
    c.set_tunable("group_idle", "0").unwrap();
    c.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(c.dispatch(0), Dispatch::Request(0));
    c.insert(1, &read(1, 100_000, 8), false, 0);
    // Nothing holds the device for the empty queue.
    assert_eq!(c.dispatch(0), Dispatch::Request(1));
}

#[test]
fn group_idle_holds_the_device_for_the_only_busy_queue() {
    let mut c = plain(8, 3);
    c.set_tunable("slice_idle", "0").unwrap();
    c.insert(0, &read(0, 0, 8), false, 0);
    serve(&mut c, 0, MS);
    assert_eq!(c.idling_until(), Some(9 * MS));
    c.insert(1, &read(0, 8, 8), false, 3 * MS);
    assert_eq!(c.dispatch(3 * MS), Dispatch::Request(1));
    // With another busy queue there is no group idling.
    c.insert(2, &read(1, 100_000, 8), false, 3 * MS);
    c.completed(1, 4 * MS);
    assert_eq!(c.idling_until(), None);
}

#[test]
fn a_queueing_non_rotational_device_is_not_idled_for() {
    let mut c = plain(8, 3);
    c.set_nonrotational(true);
    assert_eq!(c.tunable("slice_idle"), Ok(0));
    c.set_tunable("slice_idle", "8").unwrap();
    c.set_tunable("group_idle", "0").unwrap();
    c.insert(0, &read(0, 0, 8), false, 0);
    serve(&mut c, 0, MS);
    // Queueing is presumed until measured.
    assert_eq!(c.hw_tag(), None);
    assert_eq!(c.idling_until(), None);
}

#[test]
fn an_exited_issuer_is_not_idled_for_and_its_slot_is_released() {
    let mut c = plain(8, 3);
    c.insert(0, &read(0, 0, 8), false, 0);
    c.insert(1, &read(1, 100_000, 8), false, 0);
    assert_eq!(c.dispatch(0), Dispatch::Request(0));
    c.issuer_exit(0, 0);
    assert!(!c.issuer_is_free(0), "a request is in flight");
    assert_eq!(c.in_service(), None);
    c.completed(0, MS);
    assert_eq!(c.idling_until(), None);
    assert!(c.issuer_is_free(0));
    assert_eq!(c.dispatch(MS), Dispatch::Request(1));
}

// ----- dispatch limits ------------------------------------------------------------------

#[test]
fn quantum_halves_limit_a_queue_while_others_are_busy() {
    let mut c = plain(64, 3);
    for i in 0..20 {
        c.insert(i, &read(0, i as u64 * 8, 8), false, 0);
        c.insert(20 + i, &read(1, 1 << 30 | (i as u64 * 8), 8), false, 0);
    }
    let sent: Vec<_> = (0..4).map(|_| tag_of(c.dispatch(0))).collect();
    assert!(sent.iter().all(|&t| t < 20));
    // quantum / 2 = 4 in flight before the slice started.
    assert_eq!(c.dispatch(0), Dispatch::Empty);
    // Once it runs with time to spare, up to quantum (8).
    c.completed(sent[0], MS);
    let more: Vec<_> = (0..5).map(|_| tag_of(c.dispatch(MS))).collect();
    assert!(more.iter().all(|&t| t < 20));
    assert_eq!(c.dispatch(MS), Dispatch::Empty);
}

#[test]
fn a_sole_sync_queue_is_not_limited() {
    let mut c = plain(64, 2);
    for i in 0..20 {
        c.insert(i, &read(0, i as u64 * 8, 8), false, 0);
    }
    for _ in 0..20 {
        tag_of(c.dispatch(0));
    }
    assert!(!c.has_work());
}

#[test]
fn an_async_queue_waits_for_sync_requests_in_flight() {
    let mut c = plain(8, 3);
    c.set_tunable("slice_idle", "0").unwrap();
    c.set_tunable("group_idle", "0").unwrap();
    c.insert(0, &read(0, 0, 8), false, 0);
    c.insert(1, &read(0, 8, 8), false, 0);
    assert_eq!(c.dispatch(0), Dispatch::Request(0));
    assert_eq!(c.dispatch(0), Dispatch::Request(1));
    c.insert(2, &write_async(1, 100_000, 8), false, 0);
    assert_eq!(c.dispatch(0), Dispatch::Empty);
    assert_eq!(c.in_service(), Some(QueueId::Async(prio(BE, 4))));
    c.completed(0, MS);
    assert_eq!(c.dispatch(MS), Dispatch::Empty);
    c.completed(1, MS);
    assert_eq!(c.dispatch(MS), Dispatch::Request(2));
}

#[test]
fn an_async_queues_slice_ends_after_its_share_of_requests() {
    let mut c = plain(64, 3);
    for i in 0..20 {
        c.insert(i, &write_async(0, i as u64 * 8, 8), false, 0);
        let d = with_prio(write_async(1, 1 << 30 | (i as u64 * 8), 8), BE, 5);
        c.insert(20 + i, &d, false, 0);
    }
    let first = tag_of(c.dispatch(0)) < 20;
    c.completed(if first { 0 } else { 20 }, 0);
    // 2 * slice_async_rq * (8 - level): 16 at level 4, 12 at level 5.
    let share = if first { 16 } else { 12 };
    let mut run = 1;
    let mut t = 0;
    loop {
        t += MS;
        let tag = serve(&mut c, t, t);
        if (tag < 20) != first {
            break;
        }
        run += 1;
    }
    assert_eq!(run, share);
}

#[test]
fn async_depth_ramps_up_after_a_sync_request_was_delayed() {
    let mut c = cfq(16, 3);
    c.set_tunable("slice_idle", "0").unwrap();
    c.set_tunable("group_idle", "0").unwrap();
    c.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(c.dispatch(0), Dispatch::Request(0));
    for i in 0..8 {
        c.insert(1 + i, &write_async(1, 100_000 + i as u64 * 8, 8), false, 0);
    }
    // The sync request took longer than fifo_expire_sync (125 ms).
    c.completed(0, 130 * MS);
    assert!(matches!(c.dispatch(130 * MS), Dispatch::Request(_)));
    assert_eq!(
        c.dispatch(130 * MS),
        Dispatch::Empty,
        "one at a time at first"
    );
    // One more per slice_sync (100 ms) since.
    assert!(matches!(c.dispatch(330 * MS), Dispatch::Request(_)));
    assert_eq!(c.dispatch(330 * MS), Dispatch::Empty);
}

// ----- classes and preemption -----------------------------------------------------------

#[test]
fn real_time_is_served_before_best_effort_and_best_effort_before_idle() {
    let mut c = plain(8, 4);
    c.insert(0, &with_prio(read(0, 0, 8), IDLE, 0), false, 0);
    c.insert(1, &read(1, 100_000, 8), false, 0);
    c.insert(2, &with_prio(read(2, 200_000, 8), RT, 4), false, 0);
    c.set_tunable("slice_idle", "0").unwrap();
    c.set_tunable("group_idle", "0").unwrap();
    let order: Vec<_> = (0..3).map(|_| serve(&mut c, 0, 0)).collect();
    assert_eq!(order, [2, 1, 0]);
}

#[test]
fn a_real_time_request_preempts_a_best_effort_queue() {
    let mut c = plain(16, 3);
    for i in 0..4 {
        c.insert(i, &read(0, i as u64 * 8, 8), false, 0);
    }
    serve(&mut c, 0, MS);
    c.insert(8, &with_prio(read(1, 1 << 30, 8), RT, 4), false, 2 * MS);
    assert_eq!(c.dispatch(2 * MS), Dispatch::Request(8));
}

#[test]
fn nothing_but_real_time_preempts_real_time() {
    let mut c = plain(16, 3);
    for i in 0..4 {
        c.insert(
            i,
            &with_prio(write_async(0, i as u64 * 8, 8), RT, 4),
            false,
            0,
        );
    }
    serve(&mut c, 0, MS);
    // Even a sync request: the real-time (async) queue keeps its slice.
    c.insert(8, &read(1, 1 << 30, 8), false, 2 * MS);
    assert!(tag_of(c.dispatch(2 * MS)) < 4);
}

#[test]
fn a_sync_request_preempts_an_async_queue() {
    let mut c = plain(16, 3);
    for i in 0..4 {
        c.insert(i, &write_async(0, i as u64 * 8, 8), false, 0);
    }
    serve(&mut c, 0, MS);
    c.insert(8, &read(1, 1 << 30, 8), false, 2 * MS);
    assert_eq!(c.in_service(), None, "the async queue was expired");
    assert_eq!(c.dispatch(2 * MS), Dispatch::Request(8));
}

#[test]
fn the_idle_class_never_preempts_and_is_preempted_by_the_others() {
    let mut c = plain(16, 3);
    for i in 0..4 {
        c.insert(i, &with_prio(read(0, i as u64 * 8, 8), IDLE, 0), false, 0);
    }
    serve(&mut c, 0, MS);
    let mut d = plain(16, 3);
    for i in 0..4 {
        d.insert(i, &read(0, i as u64 * 8, 8), false, 0);
    }
    serve(&mut d, 0, MS);
    d.insert(8, &with_prio(read(1, 1 << 30, 8), IDLE, 0), false, 2 * MS);
    assert_eq!(d.in_service(), Some(QueueId::Sync(0)));
    c.insert(8, &read(1, 1 << 30, 8), false, 2 * MS);
    assert_eq!(c.in_service(), None);
    assert_eq!(c.dispatch(2 * MS), Dispatch::Request(8));
}

#[test]
fn an_idle_class_queue_sends_one_request_at_a_time_and_one_per_turn() {
    let mut c = plain(16, 3);
    for i in 0..4 {
        c.insert(i, &with_prio(read(0, i as u64 * 8, 8), IDLE, 0), false, 0);
        c.insert(
            8 + i,
            &with_prio(read(1, 1 << 30 | (i as u64 * 8), 8), IDLE, 0),
            false,
            0,
        );
    }
    let a = tag_of(c.dispatch(0));
    let b = tag_of(c.dispatch(0));
    assert_ne!(a < 8, b < 8, "the other idle-class queue's turn");
    assert_eq!(c.dispatch(0), Dispatch::Empty, "one in flight per queue");
    c.completed(a, MS);
    c.completed(b, MS);
    assert!(matches!(c.dispatch(MS), Dispatch::Request(_)));
}

#[test]
fn a_close_request_preempts_the_queue_being_idled_for() {
    for (sector, preempts) in [(5_000, true), (50_000_000, false)] {
        let mut c = plain(8, 3);
        c.insert(0, &read(0, 4_000, 8), false, 0);
        serve(&mut c, 0, MS);
        assert_eq!(c.idling_until(), Some(9 * MS));
        c.insert(1, &read(1, sector, 8), false, 2 * MS);
        assert_eq!(c.idling_until().is_none(), preempts, "request at {sector}");
        let expect = if preempts {
            Dispatch::Request(1)
        } else {
            Dispatch::IdleUntil(9 * MS)
        };
        assert_eq!(c.dispatch(2 * MS), expect);
    }
}

#[test]
fn a_preempted_queue_keeps_the_rest_of_its_slice() {
    let mut c = plain(16, 3);
    for i in 0..4 {
        c.insert(i, &read(0, i as u64 * 8, 8), false, 0);
    }
    serve(&mut c, 0, MS);
    // Its slice runs from 1 to 101 ms; a real-time request takes over at
    // 11 ms: it goes back on its tree at now + offset (80 ms with two
    // busy queues) less the 90 ms it had left.
    c.insert(8, &with_prio(read(1, 1 << 30, 8), RT, 4), false, 11 * MS);
    assert_eq!(c.queue_info(QueueId::Sync(0)).rb_key, MS as i64);
}

#[test]
fn another_sync_noidle_queue_preempts_an_empty_one_on_that_tree() {
    let mut c = plain(8, 3);
    let t = make_seeky(&mut c, 0, 0, 0);
    let t = make_seeky(&mut c, 1, 1, t);
    c.insert(0, &read(0, 50_000_000, 8), false, t);
    assert_eq!(c.dispatch(t), Dispatch::Request(0));
    assert_eq!(c.serving().1, Workload::SyncNoIdle);
    c.insert(1, &read(1, 90_000_000, 8), false, t);
    assert_eq!(c.in_service(), None, "preempted");
}

#[test]
fn the_workload_type_served_alternates_by_its_slice() {
    let mut c = plain(64, 4);
    let t = make_seeky(&mut c, 0, 0, 0);
    // A sequential reader (sync workload) and a seeky one (sync-noidle).
    for i in 0..30 {
        c.insert(1 + i, &read(1, i as u64 * 8, 8), false, t);
    }
    c.insert(0, &read(0, 90_000_000, 8), false, t);
    let mut seen = Vec::new();
    let mut now = t;
    for _ in 0..40 {
        match c.dispatch(now) {
            Dispatch::Request(tag) => {
                seen.push(c.serving().1);
                now += MS;
                c.completed(tag, now);
                if tag == 0 {
                    c.insert(0, &read(0, 90_000_000 + now, 8), false, now);
                }
            }
            Dispatch::IdleUntil(u) => now = u,
            Dispatch::Empty => now += MS,
        }
    }
    assert!(seen.contains(&Workload::Sync) && seen.contains(&Workload::SyncNoIdle));
}

// ----- at-head requests and requeues --------------------------------------------------------

#[test]
fn at_head_requests_go_before_the_queues() {
    let mut c = plain(8, 2);
    c.insert(0, &read(0, 0, 8), false, 0);
    c.insert(1, &read(0, 100, 8), true, 0);
    c.insert(2, &read(0, 200, 8), true, 0);
    let order: Vec<_> = (0..3).map(|_| tag_of(c.dispatch(0))).collect();
    assert_eq!(order, [1, 2, 0]);
    assert_eq!(c.in_flight(), 3);
}

#[test]
fn a_requeued_request_goes_first_and_stays_its_queues() {
    let mut c = plain(8, 2);
    c.insert(0, &read(0, 0, 8), false, 0);
    c.insert(1, &read(0, 100, 8), false, 0);
    assert_eq!(c.dispatch(0), Dispatch::Request(0));
    c.requeued(0, 0);
    assert_eq!(c.in_flight(), 0);
    assert_eq!(c.queue_info(QueueId::Sync(0)).in_flight, 1);
    c.insert(0, &read(0, 0, 8), true, 0);
    assert_eq!(c.dispatch(0), Dispatch::Request(0));
    assert_eq!(c.queue_info(QueueId::Sync(0)).in_flight, 1);
    c.completed(0, MS);
    assert_eq!(c.queue_info(QueueId::Sync(0)).in_flight, 0);
}

// ----- merges -------------------------------------------------------------------------------

#[test]
fn the_front_merge_candidate_starts_at_the_bio_end_with_its_kind() {
    let mut c = plain(8, 2);
    c.insert(0, &read(0, 100, 8), false, 0);
    c.insert(1, &write_async(0, 200, 8), false, 0);
    let probe = |bio_end, op| MergeProbe {
        bio_end,
        op,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(c.front_merge_candidate(&probe(100, Op::Read)), Some(0));
    assert_eq!(c.front_merge_candidate(&probe(100, Op::Write)), None);
    assert_eq!(c.front_merge_candidate(&probe(200, Op::Write)), Some(1));
    assert_eq!(c.front_merge_candidate(&probe(208, Op::Write)), None);
    c.front_merged(0, 92, 16);
    assert_eq!(c.front_merge_candidate(&probe(92, Op::Read)), Some(0));
    assert_eq!(c.front_merge_candidate(&probe(100, Op::Read)), None);
}

#[test]
fn a_merged_away_request_leaves_its_queue() {
    let mut c = plain(8, 3);
    c.insert(0, &read(0, 100, 8), false, 0);
    c.insert(1, &read(0, 108, 8), false, 0);
    c.insert(2, &read(1, 1000, 8), false, 0);
    c.requests_merged(0, 1);
    assert_eq!(c.queue_info(QueueId::Sync(0)).queued, 1);
    assert_eq!(c.queued(), 2);
    // A queue that a merge empties is no longer busy.
    c.requests_merged(0, 2);
    assert!(!c.queue_info(QueueId::Sync(1)).busy);
}

// ----- tunables -------------------------------------------------------------------------------

#[test]
fn the_tunables_are_cfqs_with_their_units_and_defaults() {
    let c = cfq(8, 2);
    let expect = [
        ("quantum", 8),
        ("fifo_expire_sync", 125),
        ("fifo_expire_async", 250),
        ("back_seek_max", 16384),
        ("back_seek_penalty", 2),
        ("slice_sync", 100),
        ("slice_sync_us", 100_000),
        ("slice_async", 40),
        ("slice_async_us", 40_000),
        ("slice_async_rq", 2),
        ("slice_idle", 8),
        ("slice_idle_us", 8_000),
        ("group_idle", 8),
        ("group_idle_us", 8_000),
        ("low_latency", 1),
        ("target_latency", 300),
        ("target_latency_us", 300_000),
    ];
    assert_eq!(c.tunables(), expect.map(|(n, _)| n));
    for (name, value) in expect {
        assert_eq!(c.tunable(name), Ok(value), "{name}");
    }
}

#[test]
fn the_us_tunables_are_the_same_times_in_microseconds() {
    let mut c = cfq(8, 2);
    c.set_tunable("slice_idle_us", "2500").unwrap();
    assert_eq!(c.tunable("slice_idle"), Ok(2));
    assert_eq!(c.tunable("slice_idle_us"), Ok(2500));
    c.set_tunable("target_latency", "150\n").unwrap();
    assert_eq!(c.tunable("target_latency_us"), Ok(150_000));
    c.set_tunable("slice_sync_us", "1").unwrap();
    assert_eq!(c.tunable("slice_sync"), Ok(0));
}

#[test]
fn bad_tunable_writes_fail_and_keep_the_value() {
    let mut c = cfq(8, 2);
    for (name, text) in [
        ("quantum", "0"),
        ("quantum", "abc"),
        ("quantum", "-1"),
        ("quantum", "4294967296"),
        ("slice_sync", "0"),
        ("slice_async_us", "0"),
        ("target_latency", "0"),
        ("fifo_expire_sync", "0"),
        ("back_seek_penalty", "0"),
        ("slice_async_rq", "0"),
        ("low_latency", "2"),
        ("slice_idle", "8ms"),
        ("group_idle", ""),
    ] {
        let before = c.tunable(name).unwrap();
        let err = c.set_tunable(name, text).unwrap_err();
        assert!(
            matches!(err, TunableError::Invalid | TunableError::OutOfRange),
            "{name} {text:?}"
        );
        assert_eq!(c.tunable(name), Ok(before), "{name} kept");
    }
    assert_eq!(c.set_tunable("nope", "1"), Err(TunableError::UnknownName));
    assert_eq!(c.tunable("nope"), Err(TunableError::UnknownName));
    c.set_tunable("quantum", "4294967295").unwrap();
    c.set_tunable("back_seek_max", "0").unwrap();
    c.set_tunable("slice_idle", "0").unwrap();
    assert_eq!(c.tunable("quantum"), Ok(4_294_967_295));
}
