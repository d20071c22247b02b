// SPDX-License-Identifier: GPL-2.0

//! The timed completion log (rust-bfq's completion path): completions are
//! handed over in the order they happened, each exactly once, with the time
//! they were given; and no completion is left behind once the policy is
//! busy: either the completion path is told to take the lock, or the lock
//! holder that made the policy busy is told to drain.

use ironlift_policy::completions::{words_for, DrainBatch, TimedLog, DRAIN_BATCH};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

type Log = TimedLog<Vec<AtomicU64>, Vec<AtomicU64>>;

fn log(tags: usize) -> Log {
    TimedLog::new(
        (0..words_for(tags)).map(|_| AtomicU64::new(0)).collect(),
        (0..tags).map(|_| AtomicU64::new(0)).collect(),
    )
}

fn drained(l: &Log) -> Vec<(usize, u64)> {
    let mut v = Vec::new();
    l.drain(&mut DrainBatch::default(), |tag, t| v.push((tag, t)));
    v
}

fn no_clock() -> u64 {
    panic!("the clock was read although the time was given")
}

#[test]
fn completions_come_out_in_time_order_with_their_times() {
    let l = log(256);
    // Completed in this order of time, on tags whose order differs.
    for (tag, t) in [(200, 30), (3, 50), (64, 10), (130, 40), (7, 20)] {
        l.set_time(tag, t);
        assert!(!l.complete(tag, no_clock), "not busy: no lock");
    }
    // No time given: the clock is read.
    assert!(!l.complete(9, || 60));
    assert_eq!(
        drained(&l),
        vec![(64, 10), (7, 20), (200, 30), (130, 40), (3, 50), (9, 60)]
    );
    assert!(l.is_empty());
    assert!(drained(&l).is_empty());
    // The time is used once: the tag's next completion has none until given.
    assert!(!l.complete(64, || 70));
    assert_eq!(drained(&l), vec![(64, 70)]);
}

#[test]
fn a_kept_batch_hands_over_what_a_fresh_one_does() {
    let (a, b) = (log(256), log(256));
    let mut kept = DrainBatch::default();
    // Rounds of different sizes, more than a batch holds among them, so
    // that the kept batch is left dirty with entries later rounds must not
    // see again.
    let rounds: [&[(usize, u64)]; 4] = [
        &[(5, 9), (70, 3), (200, 6)],
        &[(1, 12)],
        &[],
        &[(2, 20), (3, 19), (4, 18), (6, 17), (8, 16)],
    ];
    let mut big: Vec<(usize, u64)> = (0..DRAIN_BATCH + 5)
        .map(|i| (i * 7 % 256, 100 - i as u64))
        .collect();
    big.sort();
    big.dedup_by_key(|x| x.0);
    for round in rounds.iter().copied().chain([big.as_slice()]) {
        for l in [&a, &b] {
            for &(tag, t) in round {
                l.set_time(tag, t);
                l.complete(tag, no_clock);
            }
        }
        let fresh = drained(&a);
        let mut got = Vec::new();
        b.drain(&mut kept, |tag, t| got.push((tag, t)));
        assert_eq!(got, fresh);
        assert_eq!(got.len(), round.len());
    }
}

#[test]
fn a_time_of_zero_is_still_a_time() {
    let l = log(8);
    l.set_time(1, 0);
    assert!(!l.complete(1, no_clock));
    assert_eq!(drained(&l), vec![(1, 1)]);
}

#[test]
fn out_of_range_tags_are_ignored() {
    let l = log(10);
    l.set_time(10, 5);
    assert!(!l.complete(10, || 5));
    assert!(!l.complete(usize::MAX, || 5));
    assert!(l.is_empty());
    l.set_busy(true);
    assert!(
        !l.complete(10, || 5),
        "out of range: never asks for the lock"
    );
}

#[test]
fn more_than_a_batch_is_all_handed_over_each_batch_in_order() {
    let n = DRAIN_BATCH * 2 + 5;
    let l = log(n);
    for tag in 0..n {
        // Times decreasing with the tag: each batch must be reversed.
        l.set_time(tag, 10_000 - tag as u64);
        l.complete(tag, no_clock);
    }
    let got = drained(&l);
    assert_eq!(got.len(), n);
    let mut tags: Vec<usize> = got.iter().map(|&(tag, _)| tag).collect();
    tags.sort_unstable();
    assert_eq!(tags, (0..n).collect::<Vec<_>>());
    for batch in got.chunks(DRAIN_BATCH) {
        assert!(batch.windows(2).all(|w| w[0].1 <= w[1].1), "{batch:?}");
    }
    for &(tag, t) in &got {
        assert_eq!(t, 10_000 - tag as u64);
    }
}

#[test]
fn busy_completions_ask_for_the_lock_and_becoming_busy_asks_for_a_drain() {
    let l = log(64);
    assert!(!l.is_busy());
    // Idle: the completion waits in the log.
    assert!(!l.complete(1, || 5));
    // Becoming busy with a completion waiting: drain.
    assert!(l.set_busy(true));
    assert!(l.is_busy());
    assert_eq!(drained(&l), vec![(1, 5)]);
    // Staying busy: nothing more to do; completions now take the lock.
    assert!(!l.set_busy(true));
    assert!(l.complete(2, || 6));
    assert_eq!(drained(&l), vec![(2, 6)]);
    // Becoming idle never asks for a drain.
    assert!(l.complete(3, || 7));
    assert!(!l.set_busy(false));
    assert!(!l.is_busy());
    // Becoming busy with an empty log: no drain.
    assert_eq!(drained(&l), vec![(3, 7)]);
    assert!(!l.set_busy(true));
}

/// Spins until `a` holds `v`, yielding now and then: the tests of a binary
/// run in parallel, and on two cores a pure spin can wait a whole time
/// slice for the thread it waits for.
fn wait_for(a: &AtomicUsize, v: usize) {
    let mut spins = 0u32;
    while a.load(Ordering::Acquire) != v {
        spins += 1;
        if spins.is_multiple_of(256) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// The store-buffer litmus test on the two sides of the protocol: one
/// thread completes a request while another makes the policy busy, both
/// released at once by spinning on a round counter, with a varying delay
/// to sweep the window. The outcome in which the completion sees the
/// policy idle *and* the other side sees no completion (so nobody hands it
/// over while requests wait) must never happen. Without the fence in
/// `set_busy`, x86's store buffer allows it.
#[test]
fn a_completion_racing_with_becoming_busy_is_never_left_behind() {
    const ROUNDS: usize = 100_000;
    let l = Arc::new(log(64));
    // Odd: released for round `go / 2`; the completer acknowledges with
    // `done`.
    let go = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let completer_saw_busy = Arc::new(AtomicBool::new(false));
    let completer = {
        let (l, go, done, saw) = (
            l.clone(),
            go.clone(),
            done.clone(),
            completer_saw_busy.clone(),
        );
        std::thread::spawn(move || {
            for round in 0..ROUNDS {
                wait_for(&go, 2 * round + 1);
                for _ in 0..(round % 7) {
                    std::hint::spin_loop();
                }
                l.set_time(round % 64, round as u64 + 1);
                saw.store(l.complete(round % 64, no_clock), Ordering::Relaxed);
                done.store(round + 1, Ordering::Release);
            }
        })
    };
    let mut left_behind = 0;
    for round in 0..ROUNDS {
        go.store(2 * round + 1, Ordering::Release);
        for _ in 0..(round % 5) {
            std::hint::spin_loop();
        }
        let must_drain = l.set_busy(true);
        wait_for(&done, round + 1);
        if !must_drain && !completer_saw_busy.load(Ordering::Relaxed) {
            left_behind += 1;
        }
        // Reset: hand the completion over, become idle.
        let got = drained(&l);
        assert_eq!(got, vec![(round % 64, round as u64 + 1)]);
        l.set_busy(false);
    }
    completer.join().unwrap();
    assert_eq!(left_behind, 0, "completions left behind in {ROUNDS} rounds");
}

/// Completions on several threads while a "scheduler" thread becomes busy
/// and idle under the lock: every completion is handed over exactly once,
/// under the lock, and once the scheduler stays busy none remains.
#[test]
fn concurrent_completions_are_handed_over_once_under_the_lock() {
    const THREADS: usize = 3;
    const TAGS_PER_THREAD: usize = 64;
    const ROUNDS: usize = 300;
    let l = Arc::new(log(THREADS * TAGS_PER_THREAD));
    // The scheduler lock, holding the tags whose completion is not yet
    // handed over (as the policy would count them in flight).
    let lock = Arc::new(Mutex::new(std::collections::BTreeSet::new()));
    let handed = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let hand_over =
        |l: &Log, in_flight: &mut std::collections::BTreeSet<usize>, n: &AtomicUsize| {
            l.drain(&mut DrainBatch::default(), |tag, _| {
                assert!(in_flight.remove(&tag), "tag {tag} handed over twice");
                n.fetch_add(1, Ordering::Relaxed);
            });
        };
    let scheduler = {
        let (l, lock, handed, stop) = (l.clone(), lock.clone(), handed.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut busy = false;
            while !stop.load(Ordering::Relaxed) {
                let mut in_flight = lock.lock().unwrap();
                hand_over(&l, &mut in_flight, &handed);
                busy = !busy;
                if l.set_busy(busy) {
                    hand_over(&l, &mut in_flight, &handed);
                }
                drop(in_flight);
                std::thread::yield_now();
            }
            // Stay busy: from now on every completion takes the lock.
            let mut in_flight = lock.lock().unwrap();
            hand_over(&l, &mut in_flight, &handed);
            if l.set_busy(true) {
                hand_over(&l, &mut in_flight, &handed);
            }
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (l, lock, handed) = (l.clone(), lock.clone(), handed.clone());
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    for k in 0..TAGS_PER_THREAD {
                        let tag = i * TAGS_PER_THREAD + k;
                        // A tag is reused only after its completion was
                        // handed over (the block layer frees it after
                        // `finish_request`, and every insertion drains).
                        let begin = std::time::Instant::now();
                        loop {
                            let mut in_flight = lock.lock().unwrap();
                            if !in_flight.contains(&tag) {
                                in_flight.insert(tag);
                                break;
                            }
                            // An insertion would drain first.
                            hand_over(&l, &mut in_flight, &handed);
                            drop(in_flight);
                            assert!(begin.elapsed().as_secs() < 20, "tag {tag} stuck");
                        }
                        l.set_time(tag, (round * TAGS_PER_THREAD + k) as u64 + 1);
                        if l.complete(tag, no_clock) {
                            let mut in_flight = lock.lock().unwrap();
                            hand_over(&l, &mut in_flight, &handed);
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    scheduler.join().unwrap();
    let in_flight = lock.lock().unwrap();
    assert!(l.is_busy());
    assert!(l.is_empty(), "a completion was left in the log while busy");
    assert!(in_flight.is_empty(), "not handed over: {in_flight:?}");
    assert_eq!(
        handed.load(Ordering::Relaxed),
        THREADS * TAGS_PER_THREAD * ROUNDS
    );
}
