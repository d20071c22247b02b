// SPDX-License-Identifier: GPL-2.0

//! The lock-free completion log: every recorded tag is drained exactly once
//! (or once per drain it was recorded before), none is invented, and tags
//! recorded while a drain runs are not lost.

use ironlift_policy::completions::{words_for, CompletionLog};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

fn log(tags: usize) -> CompletionLog<Vec<AtomicU64>> {
    CompletionLog::new((0..words_for(tags)).map(|_| AtomicU64::new(0)).collect())
}

fn drained(l: &CompletionLog<Vec<AtomicU64>>) -> Vec<usize> {
    let mut v = Vec::new();
    l.drain(|t| v.push(t));
    v
}

#[test]
fn records_and_drains_each_tag_once() {
    let l = log(8192);
    assert_eq!(l.capacity(), 8192);
    assert!(l.is_empty());
    // Tags in words 0, 1, 64 and 65 share summary bits 0 and 1.
    for t in [0, 63, 64, 4096, 4097, 4160, 8191] {
        assert!(l.record(t));
    }
    assert!(l.record(63), "recording twice is allowed");
    assert!(!l.is_empty());
    let mut got = drained(&l);
    got.sort_unstable();
    assert_eq!(got, vec![0, 63, 64, 4096, 4097, 4160, 8191]);
    assert!(l.is_empty());
    assert!(drained(&l).is_empty());
}

#[test]
fn out_of_range_tags_are_refused() {
    let l = log(100);
    assert_eq!(l.capacity(), 128);
    assert!(l.record(127));
    assert!(!l.record(128));
    assert!(!l.record(usize::MAX));
    assert_eq!(drained(&l), vec![127]);
}

#[test]
fn empty_storage_holds_nothing() {
    let l = log(0);
    assert_eq!(l.capacity(), 0);
    assert!(!l.record(0));
    assert!(drained(&l).is_empty());
}

#[test]
fn bits_set_before_new_are_found() {
    let words: Vec<AtomicU64> = (0..70).map(|_| AtomicU64::new(0)).collect();
    words[69].store(1 << 5, Ordering::Relaxed);
    let l = CompletionLog::new(words);
    assert_eq!(drained(&l), vec![69 * 64 + 5]);
}

/// Several threads record disjoint tags, each only after the drainer has
/// handed the previous completion of that tag back (as the block layer
/// reuses a tag only after its completion): every record is drained
/// exactly once.
#[test]
fn concurrent_records_are_never_lost() {
    const THREADS: usize = 4;
    const TAGS_PER_THREAD: usize = 300;
    const ROUNDS: usize = 200;
    let l = Arc::new(log(THREADS * TAGS_PER_THREAD));
    let outstanding = Arc::new(Mutex::new(BTreeSet::new()));
    let done = Arc::new(AtomicBool::new(false));
    let drainer = {
        let (l, outstanding, done) = (l.clone(), outstanding.clone(), done.clone());
        std::thread::spawn(move || {
            let mut total = 0usize;
            loop {
                let finished = done.load(Ordering::Acquire);
                l.drain(|t| {
                    assert!(
                        outstanding.lock().unwrap().remove(&t),
                        "tag {t} drained but not recorded"
                    );
                    total += 1;
                });
                if finished && l.is_empty() {
                    return total;
                }
            }
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|i| {
            let (l, outstanding) = (l.clone(), outstanding.clone());
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    for k in 0..TAGS_PER_THREAD {
                        let t = i * TAGS_PER_THREAD + k;
                        // Wait until the previous completion of t is drained;
                        // a lost record would wait forever.
                        let start = std::time::Instant::now();
                        while outstanding.lock().unwrap().contains(&t) {
                            assert!(
                                start.elapsed().as_secs() < 20,
                                "the completion of tag {t} was never drained"
                            );
                            std::thread::yield_now();
                        }
                        outstanding.lock().unwrap().insert(t);
                        assert!(l.record(t));
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Release);
    let total = drainer.join().unwrap();
    assert_eq!(total, THREADS * TAGS_PER_THREAD * ROUNDS);
    assert!(outstanding.lock().unwrap().is_empty());
}
