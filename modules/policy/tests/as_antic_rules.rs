// SPDX-License-Identifier: GPL-2.0

//! One test per rule of the anticipatory scheduler's anticipation, through
//! the public API: when it waits for the last reader, what ends the wait,
//! and the per-process statistics it decides by.

mod as_common;
use as_common::*;

// ---- anticipation ------------------------------------------------------

#[test]
fn waits_for_the_last_reader_while_its_request_is_on_the_device() {
    let (mut a, _) = two_readers(10_000_000);
    assert_eq!(a.dispatch(0), Dispatch::Empty);
    assert_eq!(a.status(), AnticStatus::WaitRequest);
    assert_eq!(a.anticipated(), Some(0));
    assert_eq!(a.idling_until(), None, "no time limit yet");
    check(&a);
}

#[test]
fn completion_of_the_awaited_request_starts_the_timed_wait() {
    let (mut a, t) = two_readers(10_000_000);
    assert_eq!(a.dispatch(0), Dispatch::Empty);
    a.completed(t, MS);
    assert_eq!(a.status(), AnticStatus::WaitNext);
    assert_eq!(a.after_completion(), AfterCompletion::RunAt(7 * MS));
    assert_eq!(a.dispatch(2 * MS), Dispatch::IdleUntil(7 * MS));
    check(&a);
}

#[test]
fn the_awaited_readers_next_request_ends_the_wait() {
    let (mut a, t) = two_readers(10_000_000);
    a.dispatch(0);
    a.completed(t, MS);
    a.insert(2, &read(0, 8), false, 3 * MS);
    assert_eq!(a.status(), AnticStatus::Finished);
    assert_eq!(a.idling_until(), None);
    assert_eq!(take(&mut a, 3 * MS), 2);
}

#[test]
fn the_wait_times_out_after_antic_expire() {
    let (mut a, t) = two_readers(10_000_000);
    a.dispatch(0);
    a.completed(t, MS);
    assert_eq!(a.dispatch(7 * MS - 1), Dispatch::IdleUntil(7 * MS));
    assert_eq!(take(&mut a, 7 * MS), 1);
    // A process with no think time yet counts towards exit_prob.
    assert_eq!(a.estimates().exit_prob, 32);
}

#[test]
fn a_timed_out_wait_is_noticed_by_any_call() {
    let (mut a, t) = two_readers(10_000_000);
    a.dispatch(0);
    a.completed(t, MS);
    // An insertion after the deadline finds the wait over (C's timer ran).
    a.insert(2, &read(2, 20_000_000), false, 8 * MS);
    assert_eq!(a.status(), AnticStatus::Finished);
    assert_eq!(a.estimates().exit_prob, 32);
}

#[test]
fn a_close_request_of_another_process_ends_the_wait() {
    let (mut a, t) = two_readers(10_000_000);
    a.dispatch(0);
    a.completed(t, MS);
    // Within 8192 sectors of where issuer 0's read ended (8).
    a.insert(2, &read(2, 16), false, MS);
    assert_eq!(a.status(), AnticStatus::Finished);
    assert_eq!(take(&mut a, MS), 2);
    // It counts for issuer 0's history: a seek distance sample.
    assert!(a.context_info(0).unwrap().seek_samples > 0);
}

#[test]
fn a_far_request_of_another_process_does_not_end_the_wait() {
    let (mut a, t) = two_readers(10_000_000);
    a.dispatch(0);
    a.completed(t, MS);
    a.insert(2, &read(2, 20_000_000), false, 2 * MS);
    assert_eq!(a.status(), AnticStatus::WaitNext);
    assert_eq!(a.dispatch(2 * MS), Dispatch::IdleUntil(7 * MS));
}

#[test]
fn the_close_window_doubles_with_each_millisecond_waited() {
    // 8192 << 2 = 32768 sectors ahead, at 2 ms into the wait.
    for (at, sector, close) in [
        (MS + MS / 2, 8 + 20_000, false),
        (3 * MS, 8 + 20_000, true),
        (3 * MS, 8 + 32_768, true),
        (3 * MS, 8 + 32_769, false),
        // Behind: half the window.
        (3 * MS, 0, true),
    ] {
        let (mut a, t) = two_readers(100_000_000);
        a.dispatch(0);
        a.completed(t, MS);
        a.insert(2, &read(2, sector), false, at);
        assert_eq!(
            a.status() == AnticStatus::Finished,
            close,
            "sector {sector} at {at}"
        );
    }
}

#[test]
fn a_request_nearer_than_the_mean_seek_distance_is_close() {
    // Issuer 0 reads with seeks of 1 << 20 sectors.
    let mut a = sched(16);
    let mut now = 0;
    for k in 0..4u64 {
        a.insert(0, &read(0, k << 20), false, now);
        take(&mut a, now);
        now += MS;
    }
    // About 1 Mi sectors (C's fixed point rounds the sample weight down).
    let mean = a.context_info(0).unwrap().seek_mean;
    assert!((1 << 20..1 << 21).contains(&mean), "{mean}");
    a.insert(0, &read(0, 4 << 20), false, now);
    a.insert(1, &read(1, 1 << 40), false, now);
    take(&mut a, now);
    assert_eq!(a.dispatch(now), Dispatch::IdleUntil(now + 6 * MS));
    // 500000 sectors from the head: outside the window, within the mean.
    a.insert(2, &read(2, (4 << 20) + 500_000), false, now);
    assert_eq!(take(&mut a, now), 2);
}

#[test]
fn a_process_with_requests_queued_is_not_waited_for() {
    let mut a = sched(16);
    a.insert(0, &read(0, 0), false, 0);
    a.insert(1, &read(0, 20_000_000), false, 0);
    a.insert(2, &read(1, 100), false, 0);
    assert_eq!(take(&mut a, 0), 0);
    // Next in elevator order is issuer 1's; issuer 0 has one queued.
    assert_eq!(take(&mut a, 0), 2);
}

#[test]
fn no_wait_once_the_process_completed_antic_expire_ago() {
    let (mut a, t) = two_readers(10_000_000);
    // The read completes before the dispatch asks.
    a.completed(t, MS);
    assert_eq!(take(&mut a, 8 * MS), 1);
}

#[test]
fn wait_starts_timed_if_the_request_already_completed() {
    let (mut a, t) = two_readers(10_000_000);
    a.completed(t, MS);
    assert_eq!(a.dispatch(2 * MS), Dispatch::IdleUntil(7 * MS));
}

#[test]
fn a_process_that_thinks_longer_than_antic_expire_is_not_waited_for() {
    let mut a = sched(16);
    let now = history(&mut a, 0, 10, 10 * MS, 0);
    assert!(a.context_info(0).unwrap().ttime_mean > 6 * MS);
    a.insert(0, &read(0, 10 * 8), false, now);
    take(&mut a, now);
    a.insert(1, &read(1, 1 << 40), false, now);
    assert_eq!(take(&mut a, now), 1, "no wait");
    // One that thinks briefly is waited for.
    let mut a = sched(16);
    let now = history(&mut a, 0, 10, MS, 0);
    a.insert(0, &read(0, 10 * 8), false, now);
    take(&mut a, now);
    a.insert(1, &read(1, 1 << 40), false, now);
    assert_eq!(a.dispatch(now), Dispatch::IdleUntil(now + 6 * MS));
}

#[test]
fn a_new_process_is_judged_by_the_new_process_think_time() {
    let mut a = sched(16);
    let mut now = 0;
    // Processes 1..8 each think 15 ms before their second request.
    for p in 1..8 {
        now = history(&mut a, p, 2, 15 * MS, now);
    }
    assert!(a.estimates().new_ttime_mean > 6 * MS);
    // Process 0 has no think time yet: not waited for.
    a.insert(0, &read(0, 0), false, now);
    take(&mut a, now);
    a.insert(1, &read(14, 1 << 40), false, now);
    assert_eq!(take(&mut a, now), 1);
}

/// Rounds of a new process making one read and exiting, with a far read
/// of another waiting: each round waits and times out (the read completes
/// at once) unless a rule says not to wait. Returns whether the last
/// round waited.
fn exit_round(a: &mut As, p: IssuerId, round: u64) -> bool {
    let now = round * 100 * MS;
    let base = round << 42;
    a.insert(0, &read(p, base), false, now);
    a.insert(1, &read(SHARED, base + (1 << 40)), false, now);
    let t = tag(a.dispatch(now));
    assert_eq!(t, 0);
    a.issuer_exit(p, now);
    a.completed(t, now);
    let waited = match a.dispatch(now) {
        Dispatch::IdleUntil(until) => {
            assert_eq!(take(a, until), 1);
            true
        }
        Dispatch::Request(1) => {
            a.completed(1, now);
            false
        }
        other => panic!("{other:?}"),
    };
    check(a);
    waited
}

#[test]
fn an_exited_process_is_not_waited_for_once_exits_rarely_find_cooperation() {
    let mut a = sched(16);
    let mut rounds = 0;
    while exit_round(&mut a, rounds % 8, rounds as u64) {
        rounds += 1;
        assert!(rounds < 20);
    }
    // Each timed-out wait for an exited process raised exit_no_coop by an
    // eighth of the way to 256, until it passed 128.
    assert_eq!(rounds, 6);
    assert_eq!(a.estimates().exit_no_coop, 139);
}

#[test]
fn a_new_process_likely_to_exit_is_not_waited_for() {
    let mut a = sched(16);
    for round in 0..60 {
        exit_round(&mut a, round % 8, round as u64);
    }
    let e = a.estimates();
    assert!(e.exit_prob * e.exit_no_coop > 128 * 256, "{e:?}");
    // A running process with no history: not waited for.
    let (now, base) = (60 * 100 * MS, 60 << 42);
    a.insert(0, &read(9, base), false, now);
    a.insert(1, &read(SHARED, base + (1 << 40)), false, now);
    take(&mut a, now);
    assert_eq!(take(&mut a, now), 1);
}

#[test]
fn an_exited_process_whose_wait_runs_out_frees_its_slot() {
    let mut a = sched(16);
    exit_round(&mut a, 3, 0);
    // Anticipated on until the next dispatch, then free.
    assert!(a.issuer_is_free(3));
    assert!(a.context_info(3).is_none());
    check(&a);
}

#[test]
fn antic_expire_zero_turns_anticipation_off() {
    let (mut a, _) = two_readers(10_000_000);
    set(&mut a, "antic_expire", "0");
    assert_eq!(tag(a.dispatch(0)), 1);
}

#[test]
fn async_requests_are_never_waited_for() {
    let mut a = sched(8);
    a.insert(0, &write(0, 0), false, 0);
    a.insert(1, &write(1, 10_000_000), false, 0);
    assert_eq!(take_n(&mut a, 2, 0), [0, 1]);
    assert_eq!(a.anticipated(), None);
}

#[test]
fn requests_of_no_process_are_never_waited_for() {
    let mut a = sched(8);
    a.insert(0, &read(SHARED, 0), false, 0);
    a.insert(1, &read(1, 10_000_000), false, 0);
    assert_eq!(take(&mut a, 0), 0);
    assert_eq!(a.anticipated(), None);
    assert_eq!(take(&mut a, 0), 1);
    assert!(!a.issuer_is_free(SHARED));
}

// ---- per-process statistics ---------------------------------------------

#[test]
fn think_time_and_seek_distance_are_decaying_means_from_the_second_request() {
    let mut a = sched(8);
    a.insert(0, &read(0, 1000), false, 0);
    take(&mut a, 0);
    let c = a.context_info(0).unwrap();
    assert_eq!((c.ttime_samples, c.seek_samples), (0, 0));
    // 3 ms after the completion, 992 sectors on from its end (1008).
    a.insert(0, &read(0, 2000), false, 3 * MS);
    let c = a.context_info(0).unwrap();
    assert_eq!((c.ttime_samples, c.seek_samples), (32, 32));
    // C's fixed point: (32 t + 128) / 32, and (32 d + 16) / 32.
    assert_eq!(c.ttime_mean, 3 * MS + 4);
    assert_eq!(c.seek_mean, 992);
    // A new process's first samples are the new-process means' too.
    let e = a.estimates();
    assert_eq!((e.new_ttime_mean, e.new_seek_mean), (3 * MS / 8, 992 / 8));
}

#[test]
fn think_time_counts_only_when_nothing_of_the_process_is_queued() {
    let mut a = sched(8);
    a.insert(0, &read(0, 0), false, 0);
    take(&mut a, 0);
    a.insert(0, &read(0, 8), false, 5 * MS);
    a.insert(1, &read(0, 16), false, 9 * MS);
    // The second sample is 0 (one request queued): the mean falls.
    let c = a.context_info(0).unwrap();
    assert_eq!(c.ttime_samples, 60);
    assert_eq!(c.ttime_mean, (7 * (32 * 5 * MS) / 8 + 128) / 60);
}

#[test]
fn think_time_samples_are_capped_just_under_max_thinktime() {
    let mut a = sched(8);
    a.insert(0, &read(0, 0), false, 0);
    take(&mut a, 0);
    a.insert(0, &read(0, 8), false, 5000 * MS);
    let c = a.context_info(0).unwrap();
    assert_eq!(c.ttime_mean, (32 * (MAX_THINKTIME - 1) + 128) / 32);
}

#[test]
fn seek_distance_samples_are_capped_near_four_times_the_mean() {
    let mut a = sched(8);
    a.insert(0, &read(0, 0), false, 0);
    take(&mut a, 0);
    // The first sample: at most 2 Mi sectors (4 x 0 + 2 Mi).
    a.insert(0, &read(0, 1 << 40), false, MS);
    assert_eq!(a.context_info(0).unwrap().seek_mean, 2 * 1024 * 1024);
    // But the new-process mean takes it whole.
    assert_eq!(a.estimates().new_seek_mean, ((1 << 40) - 8) / 8);
}

#[test]
fn a_merged_away_sync_request_counts_as_completed_for_its_process() {
    let mut a = sched(8);
    a.insert(0, &read(0, 0), false, 0);
    take(&mut a, 0);
    a.insert(0, &read(0, 8), false, 2 * MS);
    a.insert(1, &read(0, 16), false, 3 * MS);
    a.requests_merged(0, 1);
    check(&a);
    // The merge (at the latest time given, 3 ms) is the latest
    // completion: 4 ms of think time at 7 ms.
    take(&mut a, 3 * MS);
    a.insert(1, &read(0, 100), false, 7 * MS);
    let c = a.context_info(0).unwrap();
    assert_eq!(c.ttime_samples, 84);
    let total = (7 * (7 * (32 * 2 * MS) / 8) / 8) + 32 * 4 * MS;
    assert_eq!(c.ttime_mean, (total + 128) / 84);
}
