// SPDX-License-Identifier: GPL-2.0

//! One test per rule of the BFQ-like policy: weights, budgets, classes,
//! weight raising, request order, merges and issuers (`bfq_idling.rs`
//! has the rules of idling, bursts and injection, `bfq_tunables.rs` those
//! of the sysfs tunables).

use ironlift_policy::bfq::ioprio_to_weight;
use ironlift_policy::MergeProbe;

mod bfq_common;
use bfq_common::*;

#[test]
fn setup_rejects_empty_storage() {
    assert!(Bfq::new(Vec::<ReqSlot>::new(), vec![IssuerSlot::default(); 1]).is_err());
    assert!(Bfq::new(vec![ReqSlot::default(); 1], Vec::<IssuerSlot>::new()).is_err());
}

#[test]
fn weights_follow_ioprio_levels() {
    assert_eq!(ioprio_to_weight(0), 80);
    assert_eq!(ioprio_to_weight(4), 40);
    assert_eq!(ioprio_to_weight(7), 10);
    assert_eq!(ioprio_to_weight(200), 10);
    let mut b = plain(4, 2);
    b.insert(
        0,
        &RequestDesc {
            prio: prio(PrioClass::BestEffort, 0),
            ..read(0, 0, 8)
        },
        false,
        0,
    );
    assert_eq!(b.issuer_info(0).weight, 80);
}

#[test]
fn idles_after_sync_queue_empties() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    // In flight and empty: wait for it rather than switch queues.
    b.insert(1, &read(1, 1000, 8), false, 0);
    assert!(matches!(b.dispatch(0), Dispatch::IdleUntil(_)));
    b.completed(0, MS);
    // The idle slice starts at the completion: slice_idle = 8 ms.
    assert_eq!(b.dispatch(MS), Dispatch::IdleUntil(9 * MS));
    assert_eq!(b.dispatch(5 * MS), Dispatch::IdleUntil(9 * MS));
    assert_eq!(b.in_service(), Some(0));
}

#[test]
fn idle_expiry_expires_queue() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(1, 1000, 8), false, 0);
    b.completed(0, MS);
    assert_eq!(b.dispatch(MS), Dispatch::IdleUntil(9 * MS));
    assert_eq!(b.dispatch(9 * MS), Dispatch::Request(1));
    assert_eq!(b.in_service(), Some(1));
    assert!(!b.issuer_info(0).busy);
}

#[test]
fn request_during_idle_ends_idle() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(1, 1000, 8), false, 0);
    b.completed(0, MS);
    assert_eq!(b.dispatch(MS), Dispatch::IdleUntil(9 * MS));
    b.insert(2, &read(0, 8, 8), false, 2 * MS);
    assert_eq!(b.dispatch(2 * MS), Dispatch::Request(2));
    assert_eq!(b.in_service(), Some(0));
}

#[test]
fn async_queue_does_not_idle() {
    let mut b = plain(8, 2);
    b.insert(0, &write_async(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(1, 1000, 8), false, 0);
    b.completed(0, MS);
    assert_eq!(b.dispatch(MS), Dispatch::Request(1));
}

#[test]
fn no_idling_when_slice_idle_is_zero() {
    let mut b = plain(8, 2);
    b.set_tunable("slice_idle", "0").unwrap();
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(1, 1000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(1));
}

#[test]
fn budget_timeout_expires_queue() {
    let mut b = plain(64, 2);
    for i in 0..20 {
        b.insert(i, &read(0, i as u64 * 8, 8), false, 0);
        b.insert(20 + i, &read(1, 1_000_000 + i as u64 * 8, 8), false, 0);
    }
    let first = tag_of(b.dispatch(0));
    assert!(first < 20);
    assert_eq!(b.in_service(), Some(0));
    b.completed(first, MS);
    assert!(tag_of(b.dispatch(MS)) < 20, "same queue within its budget");
    // timeout_sync is 125 ms: past it the queue is expired.
    let t = tag_of(b.dispatch(130 * MS));
    assert!(t >= 20, "budget timeout must switch queues");
    assert_eq!(b.in_service(), Some(1));
    // As in BFQ, a timed-out sync queue gets a doubled budget (capped at
    // the device maximum) and is charged for the time it held the device.
    assert_eq!(b.issuer_info(0).max_budget, 16384);
}

#[test]
fn budget_exhaustion_expires_queue_and_grows_budget() {
    let mut b = plain(64, 2);
    for i in 0..20 {
        b.insert(i, &read(0, i as u64 * 1024, 1024), false, 0);
    }
    for i in 0..4 {
        b.insert(20 + i, &read(1, 1 << 30, 8), false, 0);
    }
    let initial = b.issuer_info(0).max_budget;
    assert_eq!(initial, 16384 * 2 / 3);
    let mut served = 0;
    while b.in_service() != Some(1) {
        let t = tag_of(b.dispatch(0));
        if t < 20 {
            served += 1;
        }
    }
    // 10 requests of 1024 sectors fit 10922 sectors; the 11th does not.
    assert_eq!(served, 10);
    // Exhausted: max budget x4, capped at the device's maximum (16384).
    assert_eq!(b.issuer_info(0).max_budget, 16384);
}

#[test]
fn budget_shrinks_when_too_idle() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.completed(0, MS);
    let before = b.issuer_info(0).max_budget;
    b.insert(1, &read(1, 1000, 8), false, MS);
    assert_eq!(b.dispatch(10 * MS), Dispatch::Request(1));
    // Too idle with nothing in flight: budget - 4 * min_budget.
    assert_eq!(b.issuer_info(0).max_budget, before - 4 * (16384 / 32));
}

#[test]
fn async_requests_are_charged_more() {
    let mut b = plain(8, 2);
    b.insert(0, &write_async(0, 0, 100), false, 0);
    b.insert(1, &write_async(0, 100, 100), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert_eq!(b.issuer_info(0).service, 300);
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 100), false, 0);
    b.insert(1, &read(0, 100, 100), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert_eq!(b.issuer_info(0).service, 100);
}

#[test]
fn back_merged_request_is_charged_its_grown_size() {
    // Bios back-merged into a waiting request make it longer; the queue
    // pays for all of it, as C charges blk_rq_sectors() at dispatch. Were
    // the size at insertion charged, a queue whose requests wait (and so
    // merge) would be undercharged and get more than its weight's share.
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 32), false, 0);
    b.back_merged(0, 256);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert_eq!(b.issuer_info(0).service, 256);
    // A request no longer queued is not resized.
    b.back_merged(0, 1024);
    b.completed(0, MS);
    b.insert(1, &read(0, 256, 32), false, MS);
    assert_eq!(b.dispatch(MS), Dispatch::Request(1));
    assert_eq!(b.issuer_info(0).service, 288);
}

#[test]
fn classes_served_in_strict_order() {
    let mut b = plain(16, 3);
    let classes = [PrioClass::Idle, PrioClass::BestEffort, PrioClass::RealTime];
    for (i, c) in classes.iter().enumerate() {
        for k in 0..3 {
            let d = RequestDesc {
                prio: prio(*c, 4),
                ..write_async(i, ((i as u64) << 20) | (k * 8), 8)
            };
            b.insert(i * 3 + k as usize, &d, false, 0);
        }
    }
    let mut order = Vec::new();
    for _ in 0..9 {
        order.push(tag_of(b.dispatch(0)) / 3);
    }
    assert_eq!(order, vec![2, 2, 2, 1, 1, 1, 0, 0, 0]);
}

#[test]
fn higher_class_arrival_preempts_in_service_queue() {
    let mut b = plain(64, 2);
    for i in 0..10 {
        b.insert(i, &read(0, i as u64 * 8, 8), false, 0);
    }
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    let rt = RequestDesc {
        prio: prio(PrioClass::RealTime, 4),
        ..read(1, 1 << 30, 8)
    };
    b.insert(20, &rt, false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(20));
}

#[test]
fn wf2q_serves_in_proportion_to_weight() {
    // Two always-backlogged async queues, levels 0 (80) and 4 (40).
    let mut b = plain(2048, 2);
    let mut next = [0u64; 2];
    let mut tag = 0;
    for _ in 0..600 {
        for (q, n) in next.iter_mut().enumerate() {
            let d = RequestDesc {
                prio: prio(PrioClass::BestEffort, if q == 0 { 0 } else { 4 }),
                ..write_async(q, ((q as u64) << 30) | *n, 64)
            };
            *n += 64;
            b.insert(tag, &d, false, 0);
            tag += 1;
        }
    }
    let mut sectors = [0u64; 2];
    for _ in 0..900 {
        let t = tag_of(b.dispatch(0));
        sectors[t % 2] += 64;
        b.completed(t, 0);
    }
    let ratio = sectors[0] as f64 / sectors[1] as f64;
    assert!((1.6..2.4).contains(&ratio), "ratio {ratio} {sectors:?}");
}

#[test]
fn new_queue_is_weight_raised() {
    let mut b = bfq(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    let i = b.issuer_info(0);
    assert_eq!(i.wr_coeff, 30);
    assert_eq!(i.weight, 40 * 30);
}

#[test]
fn no_raising_without_low_latency() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.issuer_info(0).wr_coeff, 1);
}

#[test]
fn non_default_weight_is_not_raised() {
    let mut b = bfq(8, 2);
    let d = RequestDesc {
        prio: prio(PrioClass::BestEffort, 0),
        ..read(0, 0, 8)
    };
    b.insert(0, &d, false, 0);
    assert_eq!(b.issuer_info(0).wr_coeff, 1);
}

#[test]
fn async_queue_is_not_raised() {
    let mut b = bfq(8, 2);
    b.insert(0, &write_async(0, 0, 8), false, 0);
    assert_eq!(b.issuer_info(0).wr_coeff, 1);
}

#[test]
fn weight_raising_ends_after_wr_duration() {
    let mut b = bfq(8, 2);
    let dur = b.wr_duration();
    // Default peak rate: (14000 * 7000 ms) / (14000 * 2 / 3) = 10.5 s.
    assert_eq!(dur, 10_500 * MS);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(0, 8, 8), false, 0);
    b.completed(0, MS);
    assert_eq!(b.dispatch(2 * MS), Dispatch::Request(1));
    assert_eq!(b.issuer_info(0).wr_coeff, 30);
    b.completed(1, 3 * MS);
    b.insert(2, &read(0, 16, 8), false, 4 * MS);
    let t = dur + 10 * MS;
    let _ = b.dispatch(t);
    assert_eq!(b.issuer_info(0).wr_coeff, 1);
}

#[test]
fn greedy_queue_loses_weight_raising() {
    let mut b = bfq(64, 2);
    let mut now = 0;
    let mut sector = 0;
    b.insert(0, &read(0, sector, 1024), false, now);
    assert_eq!(b.issuer_info(0).wr_coeff, 30);
    // Read sequentially, one request at a time; after 120000 sectors of
    // raised service the queue counts as greedy.
    let mut tag = 0;
    let mut total = 0u64;
    while b.issuer_info(0).wr_coeff > 1 {
        assert!(total < 200_000, "still raised after {total} sectors");
        match b.dispatch(now) {
            Dispatch::Request(t) => {
                total += 1024;
                now += MS;
                b.completed(t, now);
                sector += 1024;
                tag = (tag + 1) % 64;
                b.insert(tag, &read(0, sector, 1024), false, now);
            }
            Dispatch::IdleUntil(t) => now = t,
            Dispatch::Empty => panic!("work was queued"),
        }
    }
    assert!(total > 120_000);
    assert_eq!(b.issuer_info(0).weight, 40);
}

#[test]
fn soft_real_time_queue_is_weight_raised() {
    let mut b = bfq(8, 2);
    // A small read every 50 ms: after its first period of service, the
    // queue is idle long enough between arrivals to count as soft RT.
    let mut now = 0;
    let mut seen_srt = false;
    for k in 0..6u64 {
        b.insert(0, &read(0, k * 8, 8), false, now);
        if b.issuer_info(0).wr_coeff == 30 * 100 {
            seen_srt = true;
        }
        assert_eq!(b.dispatch(now), Dispatch::Request(0));
        b.completed(0, now + MS);
        // Let the idle slice run out and the queue expire.
        let _ = b.dispatch(now + 30 * MS);
        now += 50 * MS;
    }
    assert!(seen_srt);
}

fn run_sequential(b: &mut B, rate_sectors: u32, service: Nanos, until: Nanos) -> Nanos {
    // One sequential reader, two requests in flight at a time.
    let mut now = 0;
    let mut sector = 0;
    let mut inflight: Vec<(Nanos, usize)> = Vec::new();
    let mut free: Vec<usize> = (0..32).collect();
    while now < until {
        while let Some(tag) = free.pop() {
            b.insert(tag, &read(0, sector, rate_sectors), false, now);
            sector += rate_sectors as u64;
        }
        while inflight.len() < 2 {
            match b.dispatch(now) {
                Dispatch::Request(t) => {
                    let start = inflight.last().map_or(now, |x| x.0.max(now));
                    inflight.push((start + service, t));
                }
                _ => break,
            }
        }
        let (t, tag) = inflight.remove(0);
        now = t;
        b.completed(tag, now);
        free.push(tag);
    }
    now
}

#[test]
fn peak_rate_measurement_sets_max_budget_and_wr_duration() {
    let mut b = bfq(32, 2);
    let before = b.peak_rate();
    let dur_before = b.wr_duration();
    // 256 sectors every 100 us: 2.56 sectors/us, about 1.3 GB/s.
    run_sequential(&mut b, 256, 100_000, 3_000 * MS);
    assert!(
        b.peak_rate() > before * 5,
        "{} vs {}",
        b.peak_rate(),
        before
    );
    // Faster device: shorter raising, down to its 3 s floor.
    assert!(b.wr_duration() < dur_before);
    assert_eq!(b.wr_duration(), 3_000 * MS);
    // max_budget 0 = auto: peak rate x timeout_sync.
    let expected = (b.peak_rate() * 1000 * 125) >> 16;
    assert_eq!(b.max_budget(), expected);
    assert_eq!(b.tunable("max_budget"), Ok(0));
}

#[test]
fn back_seek_within_max_is_taken() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 10_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    // Head at 10008. 9500 is 508 behind (cost 1016 with penalty 2);
    // 12000 is 1992 ahead.
    b.insert(1, &read(0, 12_000, 8), false, 0);
    b.insert(2, &read(0, 9_500, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(2));
    assert_eq!(b.dispatch(0), Dispatch::Request(1));
}

#[test]
fn back_seek_penalty_prefers_forward() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 10_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    // 9000 is 1008 behind, costing 2016 > 1992 ahead.
    b.insert(1, &read(0, 12_000, 8), false, 0);
    b.insert(2, &read(0, 9_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(1));
    // With penalty 1 the back seek wins.
    let mut b = plain(8, 2);
    b.set_tunable("back_seek_penalty", "1").unwrap();
    b.insert(0, &read(0, 10_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(0, 12_000, 8), false, 0);
    b.insert(2, &read(0, 9_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(2));
}

#[test]
fn back_seek_beyond_max_is_not_taken() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 1_000_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    // back_seek_max 16384 KiB = 32768 sectors: 40000 behind wraps.
    b.insert(1, &read(0, 1_000_000 + 500_000, 8), false, 0);
    b.insert(2, &read(0, 1_000_008 - 40_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(1));
    // Raise back_seek_max to 32768 KiB and the same back seek is taken.
    let mut b = plain(8, 2);
    b.set_tunable("back_seek_max", "32768").unwrap();
    b.insert(0, &read(0, 1_000_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.insert(1, &read(0, 1_000_000 + 500_000, 8), false, 0);
    b.insert(2, &read(0, 1_000_008 - 40_000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(2));
}

#[test]
fn requests_served_in_sector_order() {
    let mut b = plain(8, 2);
    for (t, s) in [(0, 300u64), (1, 100), (2, 200), (3, 400)] {
        b.insert(t, &read(0, s, 8), false, 0);
    }
    let order: Vec<_> = (0..4).map(|_| tag_of(b.dispatch(0))).collect();
    assert_eq!(order, vec![1, 2, 0, 3]);
}

#[test]
fn sync_request_preferred_over_async() {
    let mut b = plain(8, 2);
    b.insert(0, &write_async(0, 100, 8), false, 0);
    b.insert(1, &read(0, 5000, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(1));
}

#[test]
fn fifo_expired_request_served_first() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 1_000_000, 8), false, 0);
    b.insert(1, &read(0, 0, 8), false, 0);
    b.insert(2, &read(0, 8, 8), false, 0);
    b.insert(3, &read(0, 16, 8), false, 0);
    // fifo_expire_sync is 125 ms: at 200 ms request 0 is overdue and goes
    // right after the request the queue starts with.
    let order: Vec<_> = (0..4).map(|_| tag_of(b.dispatch(200 * MS))).collect();
    assert_eq!(order, vec![1, 0, 2, 3]);
}

#[test]
fn fifo_not_expired_keeps_sector_order() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 1_000_000, 8), false, 0);
    b.insert(1, &read(0, 0, 8), false, 0);
    b.insert(2, &read(0, 8, 8), false, 0);
    let order: Vec<_> = (0..3).map(|_| tag_of(b.dispatch(100 * MS))).collect();
    assert_eq!(order, vec![1, 2, 0]);
}

#[test]
fn at_head_requests_go_first_in_order() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(1, &read(1, 0, 8), true, 0);
    b.insert(2, &read(0, 8, 8), true, 0);
    assert_eq!(b.queued(), 3);
    assert_eq!(b.dispatch(0), Dispatch::Request(1));
    assert_eq!(b.dispatch(0), Dispatch::Request(2));
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert!(!b.has_work());
}

#[test]
fn front_merge_finds_adjacent_request() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 100, 8), false, 0);
    b.insert(1, &read(1, 200, 8), false, 0);
    let probe = MergeProbe {
        bio_end: 100,
        op: Op::Read,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(b.front_merge_candidate(&probe), Some(0));
    assert_eq!(b.front_merge_candidate_for(0, &probe), Some(0));
    assert_eq!(b.front_merge_candidate_for(1, &probe), None);
    let wrong_op = MergeProbe {
        op: Op::Write,
        ..probe
    };
    assert_eq!(b.front_merge_candidate(&wrong_op), None);
    b.front_merged(0, 92, 16);
    assert_eq!(b.front_merge_candidate(&probe), None);
    assert_eq!(
        b.front_merge_candidate(&MergeProbe {
            bio_end: 92,
            ..probe
        }),
        Some(0)
    );
}

#[test]
fn merged_request_is_never_dispatched() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 100, 8), false, 0);
    b.insert(1, &read(0, 108, 8), false, 0);
    b.requests_merged(0, 1);
    assert_eq!(b.queued(), 1);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert!(!b.has_work());
}

#[test]
fn merge_keeps_the_earlier_fifo_deadline() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 1_000_000, 8), false, 0);
    b.insert(1, &read(0, 0, 8), false, 0);
    b.insert(2, &read(0, 8, 8), false, 0);
    b.insert(3, &read(0, 900_000, 8), false, 50 * MS);
    // Request 3 absorbs request 0 and with it request 0's deadline.
    b.requests_merged(3, 0);
    let order: Vec<_> = (0..3).map(|_| tag_of(b.dispatch(130 * MS))).collect();
    assert_eq!(order, vec![1, 3, 2]);
}

#[test]
fn out_of_range_issuer_uses_last_slot() {
    let mut b = plain(8, 3);
    b.insert(0, &read(99, 0, 8), false, 0);
    assert_eq!(b.issuer_info(2).queued, 1);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
}

#[test]
fn out_of_range_tags_are_ignored() {
    let mut b = plain(4, 2);
    b.insert(4, &read(0, 0, 8), false, 0);
    b.insert(usize::MAX, &read(0, 0, 8), false, 0);
    assert_eq!(b.queued(), 0);
    b.completed(7, 0);
    b.requeued(7, 0);
    b.front_merged(9, 0, 0);
    b.requests_merged(9, 10);
    assert_eq!(b.dispatch(0), Dispatch::Empty);
}

#[test]
fn double_insert_is_ignored() {
    let mut b = plain(4, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    b.insert(0, &read(1, 50, 8), false, 0);
    assert_eq!(b.queued(), 1);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert_eq!(b.dispatch(0), Dispatch::Empty);
}

#[test]
fn requeued_request_can_be_inserted_again() {
    let mut b = plain(4, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert_eq!(b.in_flight(), 1);
    b.requeued(0, 0);
    assert_eq!(b.in_flight(), 0);
    b.insert(0, &read(0, 0, 8), true, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
}

#[test]
fn issuer_slot_is_released_after_exit_and_drain() {
    let mut b = plain(4, 2);
    assert!(b.issuer_is_free(0));
    assert!(!b.issuer_is_free(5));
    b.insert(0, &read(0, 0, 8), false, 0);
    assert!(!b.issuer_is_free(0));
    b.issuer_exit(0, 0);
    assert!(!b.issuer_is_free(0), "a request is still queued");
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    assert!(!b.issuer_is_free(0), "a request is still in flight");
    // No idling for an exited issuer.
    b.completed(0, MS);
    assert!(b.issuer_is_free(0));
    assert_eq!(b.in_service(), None);
    // A new context in the slot starts as a new queue.
    let mut b2 = bfq(4, 2);
    b2.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b2.dispatch(0), Dispatch::Request(0));
    b2.completed(0, MS);
    b2.issuer_exit(0, 2 * MS);
    assert!(b2.issuer_is_free(0));
    b2.insert(1, &read(0, 0, 8), false, 3 * MS);
    assert_eq!(b2.issuer_info(0).wr_coeff, 30);
}

#[test]
fn exiting_idle_issuer_stops_idling() {
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    b.completed(0, MS);
    b.insert(1, &read(1, 100, 8), false, MS);
    assert!(matches!(b.dispatch(MS), Dispatch::IdleUntil(_)));
    b.issuer_exit(0, 2 * MS);
    assert_eq!(b.dispatch(2 * MS), Dispatch::Request(1));
    assert!(b.issuer_is_free(0));
}

#[test]
fn empty_scheduler_dispatches_nothing() {
    let mut b = bfq(4, 2);
    assert!(!b.has_work());
    assert_eq!(b.dispatch(0), Dispatch::Empty);
    assert_eq!(b.queued(), 0);
}

#[test]
fn merge_of_at_head_request_extends_into() {
    // Found by the fuzzer: `next` at head, `into` queued.
    let mut b = plain(8, 2);
    b.insert(0, &read(0, 100, 8), true, 0);
    b.insert(1, &read(0, 108, 8), false, 0);
    b.requests_merged(1, 0);
    assert_eq!(b.queued(), 1);
    let probe = MergeProbe {
        bio_end: 100,
        op: Op::Read,
        prio: IoPrio::DEFAULT,
    };
    assert_eq!(b.front_merge_candidate(&probe), Some(1));
    assert_eq!(b.check_invariants(), Ok(()));
}

#[test]
fn fresh_queue_dispatches_even_at_the_end_of_time() {
    // Found by the fuzzer: with the clock saturated, the budget timeout of
    // a queue just put in service equals `now`; it must still dispatch.
    let mut b = plain(8, 2);
    b.insert(0, &write_async(0, 0, 8), false, u64::MAX);
    assert_eq!(b.dispatch(u64::MAX), Dispatch::Request(0));
}

#[test]
fn async_depth_is_limited_as_bfq_limit_depth() {
    let mut b = bfq(64, 2);
    assert_eq!(b.async_depth_limit(Op::Read, true), None);
    assert_eq!(b.async_depth_limit(Op::Write, false), Some(32));
    assert_eq!(b.async_depth_limit(Op::Write, true), Some(48));
    assert_eq!(b.async_depth_limit(Op::Read, false), Some(32));
    // A weight-raised queue is busy: tighter limits.
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.issuer_info(0).wr_coeff, 30);
    assert_eq!(b.async_depth_limit(Op::Write, false), Some(12));
    assert_eq!(b.async_depth_limit(Op::Write, true), Some(24));
    let tiny = bfq(1, 1);
    assert_eq!(tiny.async_depth_limit(Op::Write, false), Some(1));
}

/// Issuer 0 idles out (TooIdle at 9 ms) while issuer 1 waits with four
/// requests; issuer 1 is put in service and dispatches one.
fn idled_out_scenario() -> B {
    let mut b = plain(16, 2);
    b.insert(0, &read(0, 0, 8), false, 0);
    assert_eq!(b.dispatch(0), Dispatch::Request(0));
    for i in 0..4 {
        b.insert(1 + i, &read(1, 1_000_000 + i as u64 * 8, 8), false, 0);
    }
    b.completed(0, MS);
    assert_eq!(b.dispatch(MS), Dispatch::IdleUntil(9 * MS));
    assert_eq!(b.dispatch(9 * MS), Dispatch::Request(1));
    assert_eq!(b.in_service(), Some(1));
    b
}

#[test]
fn queue_back_in_time_keeps_budget_and_preempts() {
    let mut b = idled_out_scenario();
    // Back within 3 * slice_idle of its last completion, with budget left:
    // it preempts and serves the rest of its budget.
    b.insert(8, &read(0, 8, 8), false, 10 * MS);
    assert_eq!(b.in_service(), None);
    assert_eq!(b.dispatch(10 * MS), Dispatch::Request(8));
    assert_eq!(b.in_service(), Some(0));
}

#[test]
fn queue_back_late_waits_its_turn() {
    let mut b = idled_out_scenario();
    b.insert(8, &read(0, 8, 8), false, 40 * MS);
    assert_eq!(b.in_service(), Some(1));
    assert_eq!(b.dispatch(40 * MS), Dispatch::Request(2));
}
