// SPDX-License-Identifier: GPL-2.0

//! One test per rule of the BFQ-like policy's waker detection and
//! waker/woken injection (`bfq_check_waker`, `bfq_select_queue`): a
//! process (issuer `P`) writes, then waits until a journal thread (issuer
//! `J`) has written its commit before it writes again, as an fsync chain
//! does.

mod bfq_common;
use bfq_common::*;

/// The fsync'ing process, the journal thread, and an unrelated issuer.
const P: usize = 0;
const J: usize = 1;
const OTHER: usize = 2;
/// Issuer slots: the three above and the shared last one.
const ISSUERS: usize = 4;
/// `slice_idle`'s default.
const SLICE_IDLE: Nanos = 8 * MS;
/// How long each request takes on the device.
const SERVICE: Nanos = 100_000;

/// A sync write of `issuer`.
fn sync_write(issuer: usize, sector: u64) -> RequestDesc {
    RequestDesc {
        op: Op::Write,
        ..read(issuer, sector, 8)
    }
}

/// The fsync chain as in the guest: `P` is a new, weight-raised queue,
/// `J` a journal thread whose queue is older and no longer raised. While
/// `P` is in service and empty, idling is needed for its share (raised,
/// beside a busy non-raised queue), `J` may not preempt it, and `J`, not
/// raised, is not a queue the general injection picks: without a waker,
/// `J`'s commit waits for `P`'s idle slice to run out.
struct Chain {
    b: B,
    now: Nanos,
    sector: u64,
}

/// What one transaction of the chain saw.
#[derive(Debug)]
struct Round {
    /// How long `J`'s commit waited in the scheduler.
    journal_wait: Nanos,
}

impl Chain {
    fn new() -> Self {
        let mut b = bfq(8, ISSUERS);
        // J's queue exists, and its weight raising ended (ended here by
        // turning raising off and on again).
        b.insert(1, &sync_write(J, 1 << 30), false, 0);
        assert_eq!(tag_of(b.dispatch(0)), 1);
        b.completed(1, SERVICE);
        b.set_tunable("low_latency", "0").unwrap();
        b.set_tunable("low_latency", "1").unwrap();
        Chain {
            b,
            now: MS,
            sector: 0,
        }
    }

    /// The chain without weight raising: `J`, as heavy as `P`, preempts
    /// `P`'s idling, so its commit is served at once.
    fn plain() -> Self {
        Chain {
            b: plain(8, ISSUERS),
            now: 0,
            sector: 0,
        }
    }

    /// Dispatches until `tag` goes out, following idle slices; returns
    /// when it did.
    fn dispatch_until(&mut self, tag: usize, mut now: Nanos) -> Nanos {
        for _ in 0..8 {
            match self.b.dispatch(now) {
                Dispatch::Request(t) => {
                    assert_eq!(t, tag, "at {now} ns");
                    return now;
                }
                Dispatch::IdleUntil(u) => {
                    assert!(u > now);
                    now = u;
                }
                Dispatch::Empty => panic!("nothing dispatched at {now} ns"),
            }
        }
        panic!("tag {tag} never dispatched");
    }

    /// One transaction: `P` writes (tag 0) and its write completes; `J`,
    /// woken, writes its commit (tag 1) `journal_delay` later; `P`'s next
    /// write comes `gap` after the commit completes.
    fn round(&mut self, journal_delay: Nanos, gap: Nanos) -> Round {
        self.sector += 64;
        self.b
            .insert(0, &sync_write(P, self.sector), false, self.now);
        let out = self.dispatch_until(0, self.now);
        self.b.completed(0, out + SERVICE);
        let arrival = out + SERVICE + journal_delay;
        self.b
            .insert(1, &sync_write(J, (1 << 30) + self.sector), false, arrival);
        let out = self.dispatch_until(1, arrival);
        self.b.completed(1, out + SERVICE);
        self.now = out + SERVICE + gap;
        assert_eq!(self.b.check_invariants(), Ok(()));
        Round {
            journal_wait: out - arrival,
        }
    }

    fn waker(&self) -> Option<usize> {
        self.b.issuer_info(P).waker
    }
}

/// Runs rounds with the given delays until `P`'s think time counts as
/// long when its write arrives: that arrival is the first checked for a
/// waker (a queue with a short think time is not), J's completion just
/// before it the first detection.
fn first_detection(journal_delay: Nanos, gap: Nanos) -> Chain {
    let mut c = Chain::new();
    for _ in 0..10 {
        c.round(journal_delay, gap);
        if !c.b.issuer_info(P).short_think_time {
            return c;
        }
    }
    panic!("P's think time never counted as long");
}

/// A chain whose `P` has `J` for waker.
fn detected() -> Chain {
    let mut c = first_detection(3 * MS, MS);
    c.round(3 * MS, MS);
    c.round(3 * MS, MS);
    assert_eq!(c.waker(), Some(J));
    c
}

#[test]
fn waker_detected_after_three_wakeups_within_4ms_of_its_completion() {
    // J's commit comes 3 ms after P's write completes, P's next write
    // 1 ms after the commit completes: three such arrivals in a row make
    // J P's waker.
    let mut c = first_detection(3 * MS, MS);
    assert_eq!(c.waker(), None);
    c.round(3 * MS, MS); // the second detection, at this round's start
    assert_eq!(c.waker(), None);
    c.round(3 * MS, MS); // the third: confirmed
    assert_eq!(c.waker(), Some(J));
    // J has no waker, nor does anyone else.
    assert_eq!(c.b.issuer_info(J).waker, None);
    assert_eq!(c.b.issuer_info(OTHER).waker, None);
}

#[test]
fn no_waker_when_new_io_comes_4ms_or_more_after_the_completion() {
    let mut c = first_detection(3 * MS, 4 * MS);
    for _ in 0..10 {
        c.round(3 * MS, 4 * MS);
    }
    assert_eq!(c.waker(), None);
}

#[test]
fn no_waker_detection_with_short_think_time() {
    // J's commit comes at once: the short wait for it keeps P's think
    // time short, and a queue with a short think time is not checked for
    // a waker, however closely it follows J's completions.
    let mut c = Chain::plain();
    for _ in 0..20 {
        c.round(0, 10_000);
        assert!(c.b.issuer_info(P).short_think_time);
    }
    assert_eq!(c.waker(), None);
}

#[test]
fn waker_detection_resets_after_128_slice_idle() {
    let mut c = first_detection(3 * MS, MS);
    // The second detection comes at the start of the next round; in that
    // round the journal thread sleeps for more than 128 idle slices, so
    // the third, at the start of the round after, starts detection over.
    c.round(128 * SLICE_IDLE + 10 * MS, MS);
    c.round(3 * MS, MS);
    assert_eq!(c.waker(), None);
    c.round(3 * MS, MS);
    assert_eq!(c.waker(), None);
    c.round(3 * MS, MS);
    assert_eq!(c.waker(), Some(J));
}

#[test]
fn a_different_completer_restarts_detection() {
    let mut c = first_detection(3 * MS, MS);
    c.round(3 * MS, MS); // J detected twice
                         // An unrelated issuer's request completes last before P's next write.
    c.b.insert(2, &sync_write(OTHER, 1 << 40), false, c.now);
    let out = c.dispatch_until(2, c.now);
    c.b.completed(2, out + SERVICE);
    c.now = out + SERVICE + MS;
    c.round(3 * MS, MS); // OTHER tentatively, once
    c.round(3 * MS, MS); // J once again
    c.round(3 * MS, MS); // twice
    assert_eq!(c.waker(), None);
    c.round(3 * MS, MS);
    assert_eq!(c.waker(), Some(J));
}

#[test]
fn waker_injected_while_the_in_service_queue_idles() {
    // Before detection, J's commit waits for P's idle slice to run out.
    let mut c = first_detection(3 * MS, MS);
    let r = c.round(3 * MS, MS);
    assert!(r.journal_wait >= 10 * MS, "{r:?}");
    c.round(3 * MS, MS);
    assert_eq!(c.waker(), Some(J));
    // Then P is in service, and the drive idles for it, when the commit
    // arrives, and the commit goes to the drive at once.
    for _ in 0..5 {
        c.sector += 64;
        c.b.insert(0, &sync_write(P, c.sector), false, c.now);
        assert_eq!(tag_of(c.b.dispatch(c.now)), 0);
        c.b.completed(0, c.now + SERVICE);
        let arrival = c.now + SERVICE + 3 * MS;
        assert_eq!(c.b.in_service(), Some(P));
        assert!(c.b.idling_until().is_some_and(|t| t > arrival));
        c.b.insert(1, &sync_write(J, (1 << 30) + c.sector), false, arrival);
        // J, not raised, cannot preempt P: it is injected. (Served at
        // once, it soon counts as soft real-time, raised above P, and
        // then preempts it.)
        let injected = c.b.issuer_info(J).wr_coeff == 1;
        assert_eq!(tag_of(c.b.dispatch(arrival)), 1);
        assert!(!injected || c.b.in_service() == Some(P));
        c.b.completed(1, arrival + SERVICE);
        c.now = arrival + SERVICE + MS;
        assert_eq!(c.b.check_invariants(), Ok(()));
    }
    assert_eq!(c.waker(), Some(J));
}

#[test]
fn woken_queue_injected_while_its_waker_idles() {
    // J in service and idling for its share (raising off, J weighted
    // above P), P's write arrives: as J's woken queue it goes to the drive
    // at once, J still in service.
    let mut c = detected();
    c.b.set_tunable("low_latency", "0").unwrap();
    // Later than P's budget timeout, so that P does not come back in time
    // to preempt J.
    let mut now = c.now + 200 * MS;
    assert_eq!(c.b.dispatch(now), Dispatch::Empty);
    let heavy = RequestDesc {
        prio: prio(PrioClass::BestEffort, 0),
        ..sync_write(J, 1 << 31)
    };
    c.b.insert(1, &heavy, false, now);
    assert_eq!(tag_of(c.b.dispatch(now)), 1);
    c.b.completed(1, now + SERVICE);
    now += SERVICE + MS;
    assert_eq!(c.b.in_service(), Some(J));
    c.b.insert(0, &sync_write(P, 1 << 20), false, now);
    assert_eq!(c.b.in_service(), Some(J));
    assert!(c.b.idling_until().is_some());
    assert_eq!(tag_of(c.b.dispatch(now)), 0);
    assert_eq!(c.b.in_service(), Some(J));
    assert_eq!(c.b.check_invariants(), Ok(()));
}

#[test]
fn waker_exit_clears_the_woken_queues_waker() {
    let mut c = detected();
    // J's issuer goes away with nothing outstanding: its slot is released
    // at once, and P has no waker any more.
    c.b.issuer_exit(J, c.now);
    assert!(c.b.issuer_is_free(J));
    assert_eq!(c.waker(), None);
    assert_eq!(c.b.check_invariants(), Ok(()));
    // A new issuer in J's slot is not P's waker.
    c.round(3 * MS, MS);
    assert_eq!(c.waker(), None);
    assert_eq!(c.b.check_invariants(), Ok(()));
}

#[test]
fn waker_exit_with_requests_clears_it_when_they_complete() {
    let mut c = detected();
    c.b.insert(1, &sync_write(J, 1 << 31), false, c.now);
    let out = c.dispatch_until(1, c.now);
    c.b.issuer_exit(J, out);
    // Still in flight: the queue, and P's waker, stay until it completes.
    assert_eq!(c.waker(), Some(J));
    c.b.completed(1, out + SERVICE);
    assert!(c.b.issuer_is_free(J));
    assert_eq!(c.waker(), None);
    assert_eq!(c.b.check_invariants(), Ok(()));
}

#[test]
fn woken_exit_leaves_its_wakers_list() {
    let mut c = detected();
    c.b.issuer_exit(P, c.now);
    assert!(c.b.issuer_is_free(P));
    assert_eq!(c.b.check_invariants(), Ok(()));
    // The next issuer in P's slot starts without a waker.
    c.round(3 * MS, MS);
    assert_eq!(c.waker(), None);
    assert_eq!(c.b.check_invariants(), Ok(()));
}

/// Pseudo-random fsync chains among three pairs of issuers (each one's
/// completion wakes its partner, sometimes within 4 ms, sometimes not),
/// with issuers exiting and their slots reused by new ones, on a device
/// of depth 2: the policy's invariants hold after every step, no queue
/// ever names a released slot as its waker, and wakers are found.
#[test]
fn chains_with_exits_keep_waker_links_consistent() {
    const PAIRS: usize = 3;
    const N: usize = 2 * PAIRS;
    let mut found = 0u32;
    for seed in 1..=8u64 {
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rand = move |n: u64| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (rng >> 33) % n
        };
        let mut b = bfq(16, N + 1);
        let mut now: Nanos = 0;
        let mut in_flight: Vec<(Nanos, usize)> = Vec::new();
        let mut pending: Vec<(Nanos, usize)> = (0..PAIRS).map(|p| (0, 2 * p)).collect();
        let mut free_tags: Vec<usize> = (0..16).collect();
        let mut owner = [0usize; 16];
        let mut alive = [true; N];
        let mut sector = [0u64; N];
        for step in 0..4000 {
            now += rand(3 * MS);
            // Completions due, each waking its issuer's partner.
            in_flight.sort();
            while in_flight.first().is_some_and(|&(t, _)| t <= now) {
                let (t, tag) = in_flight.remove(0);
                b.completed(tag, t);
                free_tags.push(tag);
                let partner = owner[tag] ^ 1;
                pending.push((t + rand(6 * MS), partner));
            }
            // Arrivals due, from live issuers.
            pending.sort();
            while pending.first().is_some_and(|&(t, _)| t <= now) {
                let (t, i) = pending.remove(0);
                if !alive[i] {
                    continue;
                }
                let Some(tag) = free_tags.pop() else { continue };
                owner[tag] = i;
                sector[i] += 64;
                let desc = sync_write(i, (i as u64) << 32 | sector[i]);
                b.insert(tag, &desc, false, t);
            }
            // The device takes what the policy gives, two at a time.
            while in_flight.len() < 2 {
                match b.dispatch(now) {
                    Dispatch::Request(tag) => {
                        in_flight.push((now + 50_000 + rand(2 * MS), tag));
                    }
                    _ => break,
                }
            }
            // Now and then an issuer exits, and a new one takes a free
            // slot and starts a chain.
            if rand(50) == 0 {
                let i = rand(N as u64) as usize;
                if alive[i] {
                    alive[i] = false;
                    b.issuer_exit(i, now);
                }
            }
            if rand(20) == 0 {
                let i = rand(N as u64) as usize;
                if !alive[i] && b.issuer_is_free(i) {
                    alive[i] = true;
                    pending.push((now + rand(MS), i));
                }
            }
            assert_eq!(b.check_invariants(), Ok(()), "seed {seed} step {step}");
            for i in 0..N {
                if let Some(w) = b.issuer_info(i).waker {
                    assert!(!b.issuer_is_free(w), "seed {seed} step {step}");
                    assert_ne!(w, i);
                    found += 1;
                }
            }
        }
    }
    assert!(found > 0, "no waker found: the test exercises nothing");
    eprintln!("issuer-steps with a waker: {found}");
}
