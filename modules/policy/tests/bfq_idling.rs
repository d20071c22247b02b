// SPDX-License-Identifier: GPL-2.0

//! One test per rule of the BFQ-like policy: when to idle (and what it
//! looks at), the device's queueing, think time and I/O intensity, large
//! bursts, injection, and what a completion asks of the caller.

use ironlift_policy::bfq::AfterCompletion;

mod bfq_common;
use bfq_common::*;

// ---------------------------------------------------------------------------
// When to idle (`bfq_better_to_idle` and what it looks at).

/// Queues `count` small reads for `issuer`, each far from the one before
/// (so the queue turns seeky), on tags `first..first + count`.
fn seeky_reads(b: &mut B, issuer: usize, level: u8, first: usize, count: usize, now: Nanos) {
    for k in 0..count {
        let sector = (issuer as u64 + 1) * (1 << 32) + k as u64 * 1_000_000;
        b.insert(
            first + k,
            &at_level(level, read(issuer, sector, 8)),
            false,
            now,
        );
    }
}

#[test]
fn seeky_queues_on_nonrot_queueing_device_alternate_without_idling() {
    // Two equal sync readers of random 4 KiB blocks, one request each at a
    // time, on a non-rotational device not (yet) known not to queue:
    // idling would boost neither throughput nor fairness, so when one
    // empties the other is served at once.
    let mut b = nonrot(4, 2);
    let mut x = 0x9E37_79B9u64;
    let mut sector = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 20) % (1 << 30) * 8
    };
    let mut now = 0;
    b.insert(0, &read(0, sector(), 8), false, now);
    b.insert(1, &read(1, sector(), 8), false, now);
    let mut served = [0u32; 2];
    for round in 0..100 {
        // Both requests go out back to back: no IdleUntil in between.
        let t1 = b.dispatch(now);
        let t2 = b.dispatch(now);
        let (t1, t2) = match (t1, t2) {
            (Dispatch::Request(a), Dispatch::Request(c)) => (a, c),
            other => panic!("round {round}: {other:?}"),
        };
        assert_ne!(t1, t2);
        served[t1] += 1;
        served[t2] += 1;
        now += 100_000;
        for t in [t1, t2] {
            b.completed(t, now);
            b.insert(t, &read(t, sector(), 8), false, now);
        }
        assert_eq!(b.check_invariants(), Ok(()));
    }
    assert!(b.issuer_info(0).seeky && b.issuer_info(1).seeky);
    assert_eq!(served, [100, 100]);
    assert_eq!(b.hw_tag(), None);
}

#[test]
fn sequential_io_bound_queue_on_rotational_device_is_idled() {
    // Rotational, queueing not yet ruled out: idling pays off only for a
    // sequential, I/O-bound queue with a short think time.
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    let i = b.issuer_info(0);
    assert!(!i.seeky && i.io_bound && i.short_think_time);
    assert!(matches!(b.dispatch(0), Dispatch::IdleUntil(_)));
    b.completed(0, MS);
    assert_eq!(b.dispatch(MS), Dispatch::IdleUntil(9 * MS));

    // The same with a seeky queue: served in turn, no idling.
    let mut b = plain(64, 2);
    seeky_reads(&mut b, 0, 4, 0, 24, 0);
    seeky_reads(&mut b, 1, 4, 24, 24, 0);
    assert!(b.issuer_info(0).seeky);
    let first = tag_of(b.dispatch(0));
    let q = usize::from(first >= 24);
    for _ in 1..24 {
        assert_eq!(tag_of(b.dispatch(0)) >= 24, q == 1);
    }
    // Emptied, with requests in flight: the other queue goes next.
    assert_eq!(tag_of(b.dispatch(0)) >= 24, q == 0);
}

/// Whether `issuer`, in service and idling since `since`, still idles
/// `after` later: a request of its own arriving then finds it in service,
/// rather than expired by the idle slice's end.
fn still_idling(mut b: B, issuer: usize, tag: usize, since: Nanos, after: Nanos) -> bool {
    assert_eq!(b.in_service(), Some(issuer));
    b.insert(tag, &read(issuer, 1 << 45, 8), false, since + after);
    b.in_service() == Some(issuer)
}

/// Issuer 0 weighs 80, issuer 1 weighs 40, both seeky, on a
/// non-rotational queueing device. Issuer 0 ends its first slot by
/// exhausting its budget with two large reads after 24 small ones, then
/// issuer 1 empties, then issuer 0 empties: returns the scheduler with
/// every request completed at 1 ms.
fn heavy_and_light_seeky() -> B {
    let mut b = nonrot(64, 2);
    seeky_reads(&mut b, 0, 0, 0, 24, 0);
    b.insert(24, &at_level(0, read(0, 1 << 40, 6000)), false, 0);
    b.insert(25, &at_level(0, read(0, 1 << 41, 6000)), false, 0);
    seeky_reads(&mut b, 1, 4, 32, 24, 0);
    assert!(b.issuer_info(0).seeky && b.issuer_info(1).seeky);
    for t in 0..25 {
        assert_eq!(b.dispatch(0), Dispatch::Request(t));
    }
    // 6192 sectors served of 10922: the next 6000 do not fit. Issuer 0 is
    // requeued, not yet eligible again, and issuer 1 gets its slot.
    for t in 32..56 {
        assert_eq!(b.dispatch(0), Dispatch::Request(t));
    }
    assert_eq!(b.in_service(), Some(1));
    // Issuer 1 is empty but has the smallest weight: the scenario counts
    // as symmetric for it, so no idling.
    assert_eq!(b.dispatch(0), Dispatch::Request(25));
    assert_eq!(b.in_service(), Some(0));
    // Issuer 0 is empty too, with the lighter issuer 1 still active (its
    // requests in flight): it keeps the device, for its share.
    assert_eq!(b.dispatch(0), Dispatch::Empty);
    for t in (0..26).chain(32..56) {
        b.completed(t, MS);
    }
    assert_eq!(b.check_invariants(), Ok(()));
    b
}

#[test]
fn heavier_seeky_queue_is_idled_on_nonrot_and_the_lightest_is_not() {
    let b = heavy_and_light_seeky();
    assert_eq!(b.in_service(), Some(0), "idling for the heavier queue");
    // The full slice (8 ms), although seeky: the scenario is asymmetric
    // (issuer 1 stopped being active only at the completions, after the
    // slice was armed, as BFQ's timer is armed once).
    assert!(still_idling(heavy_and_light_seeky(), 0, 60, MS, 7 * MS));
    assert!(!still_idling(
        heavy_and_light_seeky(),
        0,
        60,
        MS,
        8 * MS + 1
    ));
}

#[test]
fn seeky_queue_alone_gets_a_short_idle_slice() {
    // Counterpart of the test above: alone, a seeky queue is idled on
    // (see single_busy_queue_is_idled_until_another_turns_busy), but
    // only for BFQ_MIN_TT (2 ms).
    let alone = || {
        let mut b = nonrot(32, 2);
        seeky_reads(&mut b, 0, 0, 0, 24, 0);
        for t in 0..24 {
            assert_eq!(b.dispatch(0), Dispatch::Request(t));
            b.completed(t, 0);
        }
        b
    };
    assert!(still_idling(alone(), 0, 30, 0, 2 * MS - 1));
    assert!(!still_idling(alone(), 0, 30, 0, 2 * MS + 1));
}

#[test]
fn different_busy_classes_idle_even_when_seeky_on_nonrot() {
    let mut b = nonrot(64, 2);
    let rt = prio(PrioClass::RealTime, 4);
    for k in 0..24u64 {
        let d = RequestDesc {
            prio: rt,
            ..read(0, (1 << 32) + k * 1_000_000, 8)
        };
        b.insert(k as usize, &d, false, 0);
    }
    seeky_reads(&mut b, 1, 4, 24, 2, 0);
    for t in 0..24 {
        assert_eq!(b.dispatch(0), Dispatch::Request(t));
    }
    assert!(b.issuer_info(0).seeky);
    // Same weight, but a best-effort queue is busy beside the real-time
    // one: asymmetric.
    assert!(matches!(b.dispatch(0), Dispatch::IdleUntil(_)));
}

#[test]
fn weight_raised_queue_is_idled_while_non_raised_queues_are_busy() {
    // Issuer 1 is not raised (it arrives with low_latency off); issuer 0
    // arrives with it on and is raised as interactive. The second issuer of
    // each case comes `LATER`, so that it gets a queue of its own instead
    // of being merged into the first's.
    const LATER: u64 = 200 * MS;
    let mut b = nonrot(16, 3);
    b.insert(8, &read(1, 1 << 30, 8), false, 0);
    b.insert(9, &read(1, (1 << 30) + 8, 8), false, 0);
    b.set_tunable("low_latency", "1").unwrap();
    b.insert(0, &read(0, 0, 8), false, LATER);
    assert_eq!(b.issuer_info(0).merged_into, None);
    assert_eq!(b.issuer_info(0).wr_coeff, 30);
    assert_eq!(b.issuer_info(1).wr_coeff, 1);
    assert_eq!(b.dispatch(LATER), Dispatch::Request(0));
    assert!(matches!(b.dispatch(LATER), Dispatch::IdleUntil(_)));
    b.completed(0, LATER + MS);
    // Raised: at least 20 ms.
    assert_eq!(b.dispatch(LATER + MS), Dispatch::IdleUntil(LATER + 21 * MS));

    // Both raised, nothing else busy: no reason to idle.
    let mut b = bfq(16, 3);
    b.set_nonrotational(true);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(8, &read(1, 1 << 30, 8), false, LATER);
    assert_eq!(b.issuer_info(1).merged_into, None);
    assert_eq!(b.issuer_info(1).wr_coeff, 30);
    let first = tag_of(b.dispatch(LATER));
    let other = if first == 0 { 8 } else { 0 };
    assert_eq!(b.dispatch(LATER), Dispatch::Request(other));

    // Both raised, but four more requests in the drive than the raised
    // in-service queue's own: idle.
    let mut b = bfq(16, 3);
    b.set_nonrotational(true);
    for t in 0..4 {
        b.insert(10 + t, &write_async(2, 1 << 35, 8), true, 0);
    }
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(8, &read(1, 1 << 30, 8), false, LATER);
    for t in 0..4 {
        assert_eq!(b.dispatch(LATER), Dispatch::Request(10 + t));
    }
    let _ = tag_of(b.dispatch(LATER));
    assert!(matches!(b.dispatch(LATER), Dispatch::IdleUntil(_)));
}

#[test]
fn non_raised_queue_is_not_idled_while_a_raised_queue_is_busy() {
    // Rotational, so idling would boost the sequential issuer 1's
    // throughput; but the raised issuer 0 is busy, and BFQ then does not
    // idle for non-raised queues.
    let mut b = plain(16, 2);
    b.insert(8, &read(1, 1 << 30, 8), false, 0);
    b.set_tunable("low_latency", "1").unwrap();
    // Issuer 0 is raised, so its budget is 2 * min_budget = 1024 sectors:
    // its second 800-sector read does not fit, and issuer 1 gets a turn.
    b.insert(0, &read(0, 0, 800), false, 0);
    b.insert(1, &read(0, 800, 800), false, 0);
    assert_eq!(b.issuer_info(0).wr_coeff, 30);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert_eq!(b.dispatch(0), Dispatch::Request(8));
    assert_eq!(b.in_service(), Some(1));
    let i = b.issuer_info(1);
    assert!(!i.seeky && i.io_bound && i.short_think_time && i.wr_coeff == 1);
    assert_eq!(b.dispatch(0), Dispatch::Request(1));
}

#[test]
fn single_busy_queue_is_idled_until_another_turns_busy() {
    // Seeky, non-rotational, queueing: only being the sole busy queue
    // makes idling worth it (BFQ's `tot_busy_queues == 1`).
    let mut b = nonrot(64, 2);
    seeky_reads(&mut b, 0, 4, 0, 24, 0);
    for t in 0..24 {
        assert_eq!(b.dispatch(0), Dispatch::Request(t));
    }
    for t in 0..24 {
        b.completed(t, MS);
    }
    assert_eq!(b.in_service(), Some(0), "idling");
    // Another queue turns busy: the idling is no longer worth it, and the
    // newcomer is served at once.
    b.insert(30, &read(1, 1 << 40, 8), false, 2 * MS);
    assert_eq!(b.in_service(), None);
    assert_eq!(b.dispatch(2 * MS), Dispatch::Request(30));
    // With that second queue busy, the first is not idled on.
    b.insert(31, &read(0, 1 << 41, 8), false, 2 * MS);
    b.insert(32, &read(1, 1 << 42, 8), false, 2 * MS);
    let t = tag_of(b.dispatch(2 * MS));
    let q = b.in_service().unwrap();
    let other = tag_of(b.dispatch(2 * MS));
    assert_ne!(b.in_service(), Some(q), "{t} then {other}");
}

#[test]
fn hw_tag_detection_and_idling_without_queueing() {
    // Before detection a non-rotational device counts as queueing: two
    // sequential queues are served in turn without idling (the second
    // created 200 ms after the first, so that it is not merged into it).
    let mut b = nonrot(64, 3);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 30, 8), false, 200 * MS);
    assert_eq!(b.issuer_info(1).merged_into, None);
    let first = tag_of(b.dispatch(200 * MS));
    assert_eq!(tag_of(b.dispatch(200 * MS)), 1 - first);

    // 40 sequential requests of issuer 2, one in the driver at a time:
    // each completion with enough requests around is a sample, and the
    // 33rd decides: never more than 3 in the driver, so no queueing.
    let mut b = nonrot(64, 3);
    for t in 0..40 {
        b.insert(t, &read(2, t as u64 * 8, 8), false, 0);
    }
    let mut now = 0;
    for k in 1..=33 {
        let t = tag_of(b.dispatch(now));
        now += 100_000;
        b.completed(t, now);
        let want = if k < 33 { None } else { Some(false) };
        assert_eq!(b.hw_tag(), want, "after {k} completions");
    }
    while b.issuer_info(2).queued > 0 {
        let t = tag_of(b.dispatch(now));
        now += 100_000;
        b.completed(t, now);
    }
    b.issuer_exit(2, now);
    // Now the same two sequential queues are idled on.
    b.insert(50, &read(0, 0, 8), false, now);
    b.insert(51, &read(1, 1 << 30, 8), false, now);
    let _ = tag_of(b.dispatch(now));
    assert!(matches!(b.dispatch(now), Dispatch::IdleUntil(_)));

    // Up to five in the driver: a queueing device, for good.
    let mut b = nonrot(64, 3);
    keep_in_driver(&mut b, 5);
    assert_eq!(b.hw_tag(), Some(true));
}

/// 45 sequential requests of issuer 2 queued; then 40 completions, each
/// after topping the driver up to `n` requests.
fn keep_in_driver(b: &mut B, n: usize) {
    for t in 0..45 {
        b.insert(t, &read(2, t as u64 * 8, 8), false, 0);
    }
    let mut inflight = std::collections::VecDeque::new();
    for _ in 0..40 {
        while inflight.len() < n {
            inflight.push_back(tag_of(b.dispatch(0)));
        }
        b.completed(inflight.pop_front().unwrap(), 0);
    }
}

#[test]
fn hw_tag_counts_no_more_in_the_driver_than_the_device_holds() {
    // Four dispatched at a time, as blk-mq can take from the scheduler
    // while the device (depth 2) is full: queueing, unless the policy
    // knows the device holds only 2.
    for (depth, want) in [(0, Some(true)), (2, Some(false)), (4, Some(true))] {
        let mut b = nonrot(64, 3);
        b.set_device_depth(depth);
        keep_in_driver(&mut b, 4);
        assert_eq!(b.hw_tag(), want, "device depth {depth}");
    }
}

#[test]
fn hw_tag_ignores_a_short_thinking_in_service_queue_with_few_requests() {
    // Issuer 1 (not raised) keeps 40 requests queued; issuer 0 (raised,
    // so idled on) sends one request at a time. Its completions leave
    // plenty waiting, but the in-service queue alone may keep the driver
    // short: no samples, the device stays "maybe queueing".
    let mut b = nonrot(64, 2);
    for t in 0..40 {
        b.insert(20 + t, &read(1, (1 << 30) + t as u64 * 8, 8), false, 0);
    }
    b.set_tunable("low_latency", "1").unwrap();
    let mut now = 0;
    for k in 0..40u64 {
        b.insert(0, &read(0, k * 8, 8), false, now);
        assert_eq!(b.dispatch(now), Dispatch::Request(0));
        now += 100_000;
        b.completed(0, now);
        assert_eq!(b.in_service(), Some(0));
    }
    assert_eq!(b.hw_tag(), None);
}

/// One request of `issuer` at a time, `think` after the previous one
/// completed (1 ms service); returns whether the queue still has a short
/// think time after each arrival.
fn think_time_run(b: &mut B, issuer: usize, think: Nanos, rounds: usize) -> Vec<bool> {
    let mut now = 0;
    let mut short = Vec::new();
    let mut sector = 0;
    for _ in 0..rounds {
        b.insert(0, &read(issuer, sector, 8), false, now);
        short.push(b.issuer_info(issuer).short_think_time);
        sector += 8;
        for step in 0.. {
            assert!(step < 100, "queue {issuer} never served");
            match b.dispatch(now) {
                Dispatch::Request(t) => {
                    assert_eq!(t, 0);
                    break;
                }
                Dispatch::IdleUntil(t) => now = t,
                Dispatch::Empty => panic!("work was queued"),
            }
        }
        now += MS;
        b.completed(0, now);
        now += think;
    }
    short
}

#[test]
fn long_think_time_is_noticed_after_three_samples() {
    // 10 ms between a completion and the next request (more than
    // slice_idle / 2 = 4 ms; the 8 ms idle slice runs out first, so each
    // arrival finds the queue idle and is sampled; so is the first, at
    // creation, as 0). The sample count (decaying, fixed point: 32, 60,
    // 84) passes 80 at the third arrival.
    let mut b = plain(4, 2);
    let short = think_time_run(&mut b, 0, 10 * MS, 6);
    assert_eq!(short, vec![true, true, false, false, false, false]);
    // 3 ms: stays short. (On a rotational device the queue would be
    // idled on and never sampled; a second busy queue on a non-rotational
    // device prevents that.)
    let mut b = nonrot(4, 3);
    b.insert(3, &read(2, 1 << 40, 8), false, 0);
    let _ = b.dispatch(0);
    let short = think_time_run(&mut b, 0, 3 * MS, 20);
    assert!(short.iter().all(|s| *s), "{short:?}");
}

#[test]
fn queue_idle_most_of_the_time_is_not_io_bound() {
    let mut b = plain(4, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert!(b.issuer_info(0).io_bound);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.completed(0, MS);
    // Back after 10 ms idle out of 11: not I/O bound.
    b.insert(0, &read(0, 8, 8), false, 11 * MS);
    assert!(!b.issuer_info(0).io_bound);
    // A queue that always has requests stays I/O bound.
    let mut b = plain(8, 2);
    let mut now = 0;
    b.insert(0, &read(0, 0, 8), false, now);
    for k in 1..300u64 {
        b.insert((k % 2) as usize, &read(0, k * 8, 8), false, now);
        let t = tag_of(b.dispatch(now));
        now += MS;
        b.completed(t, now);
    }
    assert!(b.issuer_info(0).io_bound);
}

#[test]
fn exited_issuer_is_never_idled_on() {
    // Rotational, sequential: a live issuer would be idled on here.
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(0, 8, 8), false, 0);
    b.insert(2, &read(1, 1 << 30, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.issuer_exit(0, 0);
    assert!(!b.issuer_info(0).short_think_time);
    assert_eq!(b.dispatch(0), Dispatch::Request(1));
    // Empty, requests in flight, issuer gone: next queue.
    assert_eq!(b.dispatch(0), Dispatch::Request(2));
    b.completed(0, MS);
    b.completed(1, MS);
    assert!(b.issuer_is_free(0));
    // Even with strict_guarantees (which otherwise always idles).
    let mut b = plain(8, 2);
    b.set_tunable("strict_guarantees", "1").unwrap();
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(0, 8, 8), false, 0);
    b.insert(2, &read(1, 1 << 30, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.completed(0, MS);
    b.issuer_exit(0, MS);
    assert_eq!(b.dispatch(MS), Dispatch::Request(1));
    b.completed(1, 2 * MS);
    assert_eq!(b.dispatch(2 * MS), Dispatch::Request(2));
}

/// Creates issuer `i`'s queue at `t` with one queued read (tag `32 + i`).
fn create(b: &mut B, i: usize, t: Nanos) {
    b.insert(32 + i, &read(i, (i as u64) << 20, 8), false, t);
}

#[test]
fn large_burst_of_new_queues_is_not_raised() {
    // Twelve queues created 10 ms apart while nothing else is busy: the
    // first seven are raised as they come; the eighth makes the burst
    // large, and from then on none is raised.
    let mut b = bfq(64, 16);
    for i in 0..12 {
        create(&mut b, i, i as Nanos * 10 * MS);
        let info = b.issuer_info(i);
        if i < 7 {
            assert_eq!(info.wr_coeff, 30, "queue {i}");
        } else {
            assert_eq!(info.wr_coeff, 1, "queue {i}");
        }
        b.check_invariants().unwrap();
    }
    for i in 0..12 {
        assert!(b.issuer_info(i).in_large_burst, "queue {i}");
    }
    // The raised ones lose it when next served.
    let mut t = 200 * MS;
    while b.has_work() {
        if let Dispatch::Request(tag) = b.dispatch(t) {
            b.completed(tag, t + MS);
        }
        t += 2 * MS;
        assert!(t < 10_000 * MS, "never drained");
    }
    for i in 0..12 {
        assert_eq!(b.issuer_info(i).wr_coeff, 1, "queue {i}");
    }
}

#[test]
fn queues_created_far_apart_are_each_raised() {
    // More than the burst interval (180 ms) between creations: no burst.
    let mut b = bfq(64, 16);
    for i in 0..12 {
        create(&mut b, i, i as Nanos * 200 * MS);
        let info = b.issuer_info(i);
        assert_eq!(info.wr_coeff, 30, "queue {i}");
        assert!(!info.in_large_burst, "queue {i}");
    }
}

#[test]
fn no_burst_starts_while_another_queue_is_busy() {
    // A queue busy since long before: the creations that follow do not
    // start a burst (bfq_reset_burst_list leaves it empty), so all are
    // raised however close together.
    let mut b = bfq(64, 16);
    for k in 0..4 {
        b.insert(k, &read(15, k as u64 * 8, 8), false, 0);
    }
    for i in 0..10 {
        create(&mut b, i, 1_000 * MS + i as Nanos * MS);
        let info = b.issuer_info(i);
        assert_eq!(info.wr_coeff, 30, "queue {i}");
        assert!(!info.in_large_burst, "queue {i}");
    }
    b.check_invariants().unwrap();
}

#[test]
fn an_exiting_queue_leaves_the_burst() {
    // Seven queues of one burst; one of them is served, completes and its
    // process exits: the burst is one smaller, so it takes two more
    // creations, not one, to make it large.
    let mut b = bfq(64, 16);
    for i in 0..7 {
        create(&mut b, i, i as Nanos * MS);
    }
    let tag = tag_of(b.dispatch(7 * MS));
    let owner = tag - 32;
    b.completed(tag, 8 * MS);
    b.issuer_exit(owner, 9 * MS);
    assert!(b.issuer_is_free(owner));
    b.check_invariants().unwrap();
    create(&mut b, 7, 10 * MS);
    assert!(!b.issuer_info(7).in_large_burst);
    assert_eq!(b.issuer_info(7).wr_coeff, 30);
    create(&mut b, 8, 11 * MS);
    assert!(b.issuer_info(8).in_large_burst);
    assert_eq!(b.issuer_info(8).wr_coeff, 1);
}

#[test]
fn injects_while_idling_for_a_raised_queue() {
    // Two new (weight-raised) sync queues and an older-style one with a
    // set weight (not raised). The raised queue in service runs dry and is
    // idled for (its guarantees: non-raised queues are busy; 20 ms, as it
    // is raised). Once the drive has waited a whole slice_idle with no
    // baseline service time, one request of the other raised queue goes in
    // (bfq_choose_bfqq_for_injection; a raised queue with a short think
    // time lets only raised ones in); the in-service queue keeps the
    // device.
    let mut b = bfq(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 20, 8), false, 0);
    let heavy = RequestDesc {
        prio: prio(PrioClass::BestEffort, 0),
        ..read(2, 2 << 20, 8)
    };
    b.insert(2, &heavy, false, 0);
    assert_eq!(b.issuer_info(2).wr_coeff, 1);
    let first = tag_of(b.dispatch(0));
    assert!(first < 2, "a raised queue goes first, got {first}");
    let (is, other) = (first, 1 - first);
    b.completed(first, MS);
    // The completion starts the idle slice (raised: 20 ms).
    assert_eq!(b.idling_until(), Some(21 * MS));
    assert!(matches!(b.dispatch(MS), Dispatch::IdleUntil(_)));
    assert!(matches!(b.dispatch(5 * MS), Dispatch::IdleUntil(_)));
    assert_eq!(tag_of(b.dispatch(10 * MS)), other);
    assert!(b.issuer_info(is).in_service);
    // One in the drive: the limit is reached.
    assert!(matches!(b.dispatch(11 * MS), Dispatch::IdleUntil(_)));
    b.check_invariants().unwrap();
}

#[test]
fn no_injection_when_idling_is_for_throughput() {
    // Weight raising off, rotational drive: idling is for throughput, and
    // nothing is injected however long the drive waits.
    let mut b = plain(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 20, 8), false, 0);
    let first = tag_of(b.dispatch(0));
    b.completed(first, MS);
    assert!(matches!(b.dispatch(MS), Dispatch::IdleUntil(_)));
    assert!(matches!(b.dispatch(7 * MS), Dispatch::IdleUntil(_)));
}

#[test]
fn inject_limit_learns_a_baseline() {
    // A request that arrives for the in-service queue, at an empty drive,
    // is timed to its completion: the baseline service time, and the
    // limit becomes 1.
    let mut b = bfq(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(tag_of(b.dispatch(0)), 0);
    b.completed(0, 2 * MS);
    // Nothing queued: the queue stays in service, empty.
    assert_eq!(b.dispatch(2 * MS), Dispatch::Empty);
    assert!(b.issuer_info(0).in_service);
    assert_eq!(b.issuer_info(0).inject_limit, 0);
    b.insert(1, &read(0, 8, 8), false, 12 * MS);
    assert_eq!(tag_of(b.dispatch(12 * MS)), 1);
    b.completed(1, 15 * MS);
    assert_eq!(b.issuer_info(0).inject_limit, 1);
}

#[test]
fn only_weight_raised_queues_are_injected() {
    // Weights 2:1, weight raising off, a non-rotational drive of unknown
    // queueing (so idling does not boost throughput and injection is
    // considered). The heavier queue learns an inject limit of 1, then
    // idles again for its guarantees: C would inject the lighter queue's
    // request; here only raised queues are injected, and it is not.
    let mut b = plain(16, 4);
    b.set_nonrotational(true);
    let heavy = |sector: u64| RequestDesc {
        prio: prio(PrioClass::BestEffort, 0),
        ..read(0, sector, 8)
    };
    b.insert(0, &heavy(0), false, 0);
    b.insert(1, &read(1, 1 << 20, 8), false, 0);
    assert_eq!(tag_of(b.dispatch(0)), 0);
    b.completed(0, 9 * MS);
    assert!(b.idling_until().is_some());
    b.insert(2, &heavy(8), false, 10 * MS);
    assert_eq!(tag_of(b.dispatch(10 * MS)), 2);
    b.completed(2, 12 * MS);
    let a = b.issuer_info(0);
    assert_eq!(a.inject_limit, 1);
    assert!(a.in_service && a.io_bound && a.short_think_time && !a.seeky);
    assert_eq!(b.hw_tag(), None);
    assert!(matches!(b.dispatch(12 * MS), Dispatch::IdleUntil(_)));
}

#[test]
fn completion_with_nothing_queued_needs_no_run() {
    // Two issuers taking turns with one request each on a fast drive (fio
    // randread on null_blk): every completion finds nothing queued, though
    // the policy idles for the queue in service (the only busy one). No
    // timer and no run: the next request's insertion runs the queue, and a
    // slice that has passed ends at that dispatch, as of its deadline.
    let mut b = bfq(16, 4);
    b.set_nonrotational(true);
    let mut now = 0;
    let mut idled = 0;
    for i in 0..200u64 {
        let tag = (i % 2) as usize;
        b.insert(tag, &read(tag, (i * 7919 % 1000) << 12, 8), false, now);
        assert_eq!(tag_of(b.dispatch(now)), tag);
        now += 20_000;
        b.completed(tag, now);
        idled += usize::from(b.idling_until().is_some());
        assert_eq!(
            b.after_completion(),
            AfterCompletion::Nothing,
            "request {i}"
        );
        now += 5_000;
    }
    // The case this is about: C arms its idle timer here.
    assert!(idled > 100, "idled after {idled} of 200 completions");
    b.check_invariants().unwrap();
}

#[test]
fn completion_while_idling_for_others_runs_at_slice_end() {
    // The queue in service idles, and another queue's request waits: the
    // end of the slice must run the queue.
    let mut b = plain(16, 4);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 1 << 20, 8), false, 0);
    let first = tag_of(b.dispatch(0));
    b.completed(first, MS);
    let until = b.idling_until().expect("idles for the queue in service");
    assert_eq!(b.after_completion(), AfterCompletion::RunAt(until));
}

#[test]
fn completion_after_a_withheld_dispatch_runs_now() {
    // strict_guarantees: one request in the drive at a time, so the second
    // dispatch holds the queued request back; its completion, which leaves
    // nothing in flight, must run the queue, once.
    let mut b = plain(16, 4);
    b.set_tunable("strict_guarantees", "1").unwrap();
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(0, 1 << 20, 8), false, 0);
    let first = tag_of(b.dispatch(0));
    assert_eq!(b.dispatch(0), Dispatch::Empty);
    b.completed(first, MS);
    assert_eq!(b.after_completion(), AfterCompletion::RunNow);
    assert_eq!(b.after_completion(), AfterCompletion::Nothing);
    assert_eq!(tag_of(b.dispatch(MS)), 1 - first);
}

// ---------------------------------------------------------------------------
// Holding the queue in service's next request for merges.

/// Issuer 0 sequential on a device of depth 2, one request in flight:
/// its next request arrives at `now`.
fn one_in_flight_one_queued(now: Nanos) -> B {
    let mut b = plain(8, 2);
    b.set_device_depth(2);
    b.insert(0, &read(0, 0, 32), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(0, 32, 32), false, now);
    b
}

#[test]
fn next_request_waits_for_merges_before_taking_the_last_slot() {
    // Issuer 0 has a request on the device and sends its next one: it
    // waits 250 us for the bios that follow, not taking the free slot.
    let t0 = 10_000;
    let mut b = one_in_flight_one_queued(t0);
    assert_eq!(b.dispatch(t0), Dispatch::IdleUntil(t0 + 250_000));
    // A bio merged meanwhile: another 250 us from the look that saw it.
    b.back_merged(1, 64);
    assert_eq!(b.dispatch(t0 + 250_000), Dispatch::IdleUntil(t0 + 500_000));
    // Grown again, and again: never past 1 ms from its arrival.
    b.back_merged(1, 96);
    assert_eq!(b.dispatch(t0 + 500_000), Dispatch::IdleUntil(t0 + 750_000));
    b.back_merged(1, 128);
    assert_eq!(
        b.dispatch(t0 + 750_000),
        Dispatch::IdleUntil(t0 + 1_000_000)
    );
    b.back_merged(1, 160);
    assert_eq!(b.dispatch(t0 + 1_000_000), Dispatch::Request(1));
}

#[test]
fn a_held_request_goes_once_it_stops_growing_or_its_queue_empties_the_device() {
    // No merge since the last look: it goes.
    let t0 = 10_000;
    let mut b = one_in_flight_one_queued(t0);
    assert_eq!(b.dispatch(t0), Dispatch::IdleUntil(t0 + 250_000));
    assert_eq!(b.dispatch(t0 + 250_000), Dispatch::Request(1));
    // The request in flight completes first: nothing of the queue is on
    // the device, and the completion asks for a run.
    let mut b = one_in_flight_one_queued(t0);
    assert_eq!(b.dispatch(t0), Dispatch::IdleUntil(t0 + 250_000));
    b.completed(0, t0 + 100_000);
    assert_eq!(b.after_completion(), AfterCompletion::RunNow);
    assert_eq!(b.dispatch(t0 + 100_000), Dispatch::Request(1));
}

#[test]
fn no_hold_where_the_device_has_room_or_its_depth_is_unknown_or_one() {
    let t0 = 10_000;
    for depth in [0, 1, 3, 32] {
        let mut b = plain(8, 2);
        b.set_device_depth(depth);
        b.insert(0, &read(0, 0, 32), false, 0);
        assert_eq!(b.dispatch(0), Dispatch::Request(0));
        b.insert(1, &read(0, 32, 32), false, t0);
        assert_eq!(b.dispatch(t0), Dispatch::Request(1), "depth {depth}");
    }
    // Nothing of the queue in flight: its first request goes at once.
    let mut b = plain(8, 2);
    b.set_device_depth(2);
    b.insert(0, &read(0, 0, 32), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    // Weight-raised: raised for its latency, not held.
    let mut b = bfq(8, 2);
    b.set_device_depth(2);
    b.insert(0, &read(0, 0, 32), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(0, 32, 32), false, t0);
    assert!(b.weight_raised_busy());
    assert_eq!(b.dispatch(t0), Dispatch::Request(1));
}

#[test]
fn a_seeky_queue_is_not_held() {
    let mut b = plain(64, 2);
    b.set_device_depth(2);
    let mut now = 0;
    // 24 reads far apart, one at a time: the queue turns seeky.
    for k in 0..24u64 {
        b.insert(0, &read(0, k * 1_000_000, 8), false, now);
        assert_eq!(b.dispatch(now), Dispatch::Request(0));
        now += 100_000;
        b.completed(0, now);
    }
    b.insert(0, &read(0, 1 << 30, 8), false, now);
    assert_eq!(b.dispatch(now), Dispatch::Request(0));
    b.insert(1, &read(0, (1 << 30) + 8, 8), false, now + 10_000);
    assert_eq!(b.dispatch(now + 10_000), Dispatch::Request(1));
}
