// SPDX-License-Identifier: GPL-2.0

//! Property tests for the CFQ policy: random operation sequences against a
//! model of the request life cycle (every request dispatched exactly once,
//! idling always ends), and runs of readers on a small simulated device
//! (no request waits beyond the bound in the policy's documentation).

use ironlift_policy::cfq::{Cfq, QueueSlot, ReqSlot};
use ironlift_policy::{
    Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc, NSEC_PER_MSEC,
};
use proptest::prelude::*;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

type C = Cfq<Vec<ReqSlot>, Vec<QueueSlot>>;

const MS: Nanos = NSEC_PER_MSEC;

fn cfq(n: usize, issuers: usize) -> C {
    Cfq::new(
        vec![ReqSlot::default(); n],
        vec![QueueSlot::default(); C::queue_slots(issuers)],
    )
    .unwrap()
}

// ---------------------------------------------------------------------------
// Random operation sequences against a life-cycle model.

#[derive(Clone, Debug)]
enum OpKind {
    Insert {
        issuer: usize,
        sector: u64,
        sectors: u32,
        sync: bool,
        class: u8,
        level: u8,
        at_head: bool,
    },
    Dispatch,
    Complete(usize),
    Requeue(usize, bool),
    Advance(Nanos),
    FrontMerge(usize),
    BackMerge(usize),
    Merge(usize, usize),
    Exit(usize),
    Tunable(usize, u32),
    BadTag(usize),
}

fn op_strategy() -> impl Strategy<Value = OpKind> {
    prop_oneof![
        6 => (0usize..7, 0u64..512, 1u32..64, any::<bool>(), 0u8..4, 0u8..9, prop::bool::weighted(0.05))
            .prop_map(|(issuer, s, sectors, sync, class, level, at_head)| OpKind::Insert {
                issuer,
                sector: s * 8,
                sectors,
                sync,
                class,
                level,
                at_head,
            }),
        6 => Just(OpKind::Dispatch),
        4 => any::<usize>().prop_map(OpKind::Complete),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, h)| OpKind::Requeue(i, h)),
        3 => prop_oneof![0u64..2 * MS, 0u64..300 * MS].prop_map(OpKind::Advance),
        1 => any::<usize>().prop_map(OpKind::FrontMerge),
        1 => any::<usize>().prop_map(OpKind::BackMerge),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| OpKind::Merge(a, b)),
        1 => (0usize..7).prop_map(OpKind::Exit),
        1 => (0usize..17, 0u32..400).prop_map(|(a, b)| OpKind::Tunable(a, b)),
        1 => any::<usize>().prop_map(OpKind::BadTag),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum M {
    Free,
    Queued,
    InFlight,
}

/// The longest an idle slice may be, given every value the idle tunables
/// took (an armed timer keeps the length it was armed with).
fn idle_max(c: &C, max: &mut Nanos) -> Nanos {
    for name in ["slice_idle_us", "group_idle_us"] {
        *max = (*max).max(c.tunable(name).unwrap() as Nanos * 1000);
    }
    *max
}

/// Runs `ops` against a scheduler with `n` tags and `m` issuers, checking
/// the life cycle after every step (each dispatched request was queued and
/// is dispatched once; nothing is idled for with nothing queued; an idle
/// slice ends in the future, within the longest idle slice; the policy
/// never waits with work queued and nothing in flight), then drains it
/// honouring idling: every request comes out exactly once and every idle
/// slice ends.
fn run_ops(n: usize, m: usize, nonrot: bool, ops: &[OpKind]) -> Result<(), TestCaseError> {
    let mut c = cfq(n, m);
    c.set_nonrotational(nonrot);
    let mut model = vec![M::Free; n];
    let mut descs = vec![RequestDesc::default(); n];
    let mut sent = vec![0u32; n];
    let mut now: Nanos = 0;
    let mut max_idle = 8 * MS;
    let names = c.tunables();
    for op in ops {
        match op {
            OpKind::Insert {
                issuer,
                sector,
                sectors,
                sync,
                class,
                level,
                at_head,
            } => {
                let Some(tag) = model.iter().position(|s| *s == M::Free) else {
                    continue;
                };
                let class = match class {
                    0 => PrioClass::RealTime,
                    1 | 2 => PrioClass::BestEffort,
                    _ => PrioClass::Idle,
                };
                let d = RequestDesc {
                    sector: *sector,
                    sectors: *sectors,
                    op: if *sync { Op::Read } else { Op::Write },
                    sync: *sync,
                    prio: IoPrio {
                        class,
                        level: *level,
                    },
                    issuer: *issuer,
                    arrival: now,
                };
                c.insert(tag, &d, *at_head, now);
                descs[tag] = d;
                model[tag] = M::Queued;
                sent[tag] = 0;
            }
            OpKind::Dispatch => {
                let queued = model.iter().filter(|s| **s == M::Queued).count();
                match c.dispatch(now) {
                    Dispatch::Request(t) => {
                        prop_assert!(t < n);
                        prop_assert_eq!(model[t], M::Queued, "dispatched a tag not queued");
                        model[t] = M::InFlight;
                        sent[t] += 1;
                        prop_assert_eq!(sent[t], 1);
                    }
                    Dispatch::IdleUntil(t) => {
                        prop_assert!(queued > 0, "idling with nothing queued");
                        prop_assert!(t > now, "an idle slice that already ended");
                        prop_assert!(t - now <= idle_max(&c, &mut max_idle));
                    }
                    Dispatch::Empty => {
                        let inflight = model.contains(&M::InFlight);
                        prop_assert!(queued == 0 || inflight, "stalled with work queued");
                    }
                }
            }
            OpKind::Complete(i) => {
                let inflight: Vec<_> = (0..n).filter(|t| model[*t] == M::InFlight).collect();
                if !inflight.is_empty() {
                    let t = inflight[i % inflight.len()];
                    c.completed(t, now);
                    model[t] = M::Free;
                }
            }
            OpKind::Requeue(i, at_head) => {
                let inflight: Vec<_> = (0..n).filter(|t| model[*t] == M::InFlight).collect();
                if !inflight.is_empty() {
                    let t = inflight[i % inflight.len()];
                    c.requeued(t, now);
                    c.insert(t, &descs[t], *at_head, now);
                    model[t] = M::Queued;
                    sent[t] = 0;
                }
            }
            OpKind::Advance(dt) => now += dt,
            OpKind::FrontMerge(i) => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if !queued.is_empty() {
                    let t = queued[i % queued.len()];
                    let d = descs[t];
                    let probe = MergeProbe {
                        bio_end: d.sector,
                        op: d.op,
                        prio: d.prio,
                    };
                    if let Some(x) = c.front_merge_candidate(&probe) {
                        prop_assert_eq!(model[x], M::Queued);
                        prop_assert_eq!(descs[x].sector, d.sector);
                        let grow = 8.min(descs[x].sector);
                        descs[x].sector -= grow;
                        descs[x].sectors += grow as u32;
                        c.front_merged(x, descs[x].sector, descs[x].sectors);
                    }
                }
            }
            OpKind::BackMerge(i) => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if !queued.is_empty() {
                    let t = queued[i % queued.len()];
                    descs[t].sectors += 8;
                    c.back_merged(t, descs[t].sectors);
                }
            }
            OpKind::Merge(a, b) => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if queued.len() >= 2 {
                    let x = queued[a % queued.len()];
                    let y = queued[b % queued.len()];
                    if x != y {
                        c.requests_merged(x, y);
                        let start = descs[x].sector.min(descs[y].sector);
                        let end = descs[x].end().max(descs[y].end());
                        descs[x].sector = start;
                        descs[x].sectors = (end - start) as u32;
                        model[y] = M::Free;
                    }
                }
            }
            OpKind::Exit(i) => c.issuer_exit(*i, now),
            OpKind::Tunable(k, v) => {
                let name = names[k % names.len()];
                let before = c.tunable(name).unwrap();
                if c.set_tunable(name, &v.to_string()).is_err() {
                    prop_assert_eq!(c.tunable(name).unwrap(), before);
                }
                idle_max(&c, &mut max_idle);
            }
            OpKind::BadTag(t) => {
                let t = n + t % 8;
                c.completed(t, now);
                c.requeued(t, now);
                c.insert(t, &RequestDesc::default(), false, now);
                c.front_merged(t, 0, 8);
                c.back_merged(t, 8);
                c.requests_merged(t, 0);
            }
        }
        if let Err(e) = c.check_invariants() {
            return Err(TestCaseError::fail(format!("after {op:?}: {e}")));
        }
        let queued = model.iter().filter(|s| **s == M::Queued).count();
        prop_assert_eq!(c.queued(), queued);
        prop_assert_eq!(c.has_work(), queued > 0);
        prop_assert_eq!(
            c.in_flight(),
            model.iter().filter(|s| **s == M::InFlight).count()
        );
    }
    // Drain: complete what is in flight, then dispatch everything,
    // completing each request 100 µs later and waiting out idle slices.
    for (t, s) in model.iter_mut().enumerate() {
        if *s == M::InFlight {
            c.completed(t, now);
            *s = M::Free;
        }
    }
    let mut steps = 0;
    let mut last_idle = None;
    while c.has_work() {
        steps += 1;
        prop_assert!(steps < 20 * n + 100, "the drain does not progress");
        match c.dispatch(now) {
            Dispatch::Request(t) => {
                prop_assert_eq!(model[t], M::Queued);
                model[t] = M::Free;
                sent[t] += 1;
                prop_assert_eq!(sent[t], 1);
                now += 100_000;
                c.completed(t, now);
                last_idle = None;
            }
            Dispatch::IdleUntil(t) => {
                prop_assert!(t > now);
                prop_assert!(t - now <= idle_max(&c, &mut max_idle));
                prop_assert!(
                    last_idle != Some(t),
                    "an idle slice did not end at its deadline"
                );
                last_idle = Some(t);
                now = t;
            }
            Dispatch::Empty => prop_assert!(false, "stalled with work queued, none in flight"),
        }
        c.check_invariants().map_err(TestCaseError::fail)?;
    }
    prop_assert!(model.iter().all(|s| *s == M::Free), "a request was lost");
    prop_assert_eq!(c.dispatch(now), Dispatch::Empty);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_request_is_dispatched_exactly_once(
        n in 1usize..40,
        m in 1usize..8,
        nonrot in any::<bool>(),
        ops in prop::collection::vec(op_strategy(), 1..300),
    ) {
        run_ops(n, m, nonrot, &ops)?;
    }
}

// ---------------------------------------------------------------------------
// Readers on a simulated device: the longest wait.

/// A reader: `depth` requests at a time, sync reads (or async writes),
/// sequential or random, of one priority; a new request `think` after
/// each completion.
#[derive(Clone, Copy, Debug)]
struct Reader {
    depth: u32,
    sync: bool,
    random: bool,
    prio: IoPrio,
    think: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// Request `tag` completes.
    Done(usize),
    /// Reader `r` submits.
    Submit(usize),
    /// The idle timer.
    Timer,
}

/// Runs `readers` on a rotational device that serves `device_depth`
/// requests at a time, each for `service`, for `until`; returns each
/// reader's longest time a request waited in the scheduler (to its
/// dispatch, or to the end for one still waiting).
fn longest_waits(
    readers: &[Reader],
    device_depth: usize,
    service: Nanos,
    until: Nanos,
) -> Vec<Nanos> {
    let n = 64;
    let mut c = cfq(n, readers.len() + 1);
    let mut events = BinaryHeap::new();
    let mut free: Vec<usize> = (0..n).rev().collect();
    let mut arrival = vec![0; n];
    let mut owner = vec![0; n];
    let mut waiting = vec![false; n];
    let mut next_sector: Vec<u64> = (0..readers.len() as u64).map(|r| r << 32).collect();
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut in_device = 0;
    let mut longest = vec![0; readers.len()];
    for (r, reader) in readers.iter().enumerate() {
        for _ in 0..reader.depth {
            events.push(Reverse((0, Ev::Submit(r))));
        }
    }
    while let Some(Reverse((now, ev))) = events.pop() {
        if now > until {
            break;
        }
        match ev {
            Ev::Submit(r) => {
                let Some(tag) = free.pop() else { continue };
                let rd = readers[r];
                let sector = if rd.random {
                    rng = rng
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    ((r as u64) << 32) + (rng >> 40) * 8
                } else {
                    next_sector[r] += 8;
                    next_sector[r]
                };
                let d = RequestDesc {
                    sector,
                    sectors: 8,
                    op: if rd.sync { Op::Read } else { Op::Write },
                    sync: rd.sync,
                    prio: rd.prio,
                    issuer: r,
                    arrival: now,
                };
                c.insert(tag, &d, false, now);
                arrival[tag] = now;
                owner[tag] = r;
                waiting[tag] = true;
            }
            Ev::Done(tag) => {
                c.completed(tag, now);
                in_device -= 1;
                free.push(tag);
                let r = owner[tag];
                events.push(Reverse((now + readers[r].think, Ev::Submit(r))));
            }
            Ev::Timer => {}
        }
        // The queue run after each event.
        while in_device < device_depth {
            match c.dispatch(now) {
                Dispatch::Request(tag) => {
                    waiting[tag] = false;
                    let r = owner[tag];
                    longest[r] = longest[r].max(now - arrival[tag]);
                    in_device += 1;
                    events.push(Reverse((now + service, Ev::Done(tag))));
                }
                Dispatch::IdleUntil(t) => {
                    events.push(Reverse((t, Ev::Timer)));
                    break;
                }
                Dispatch::Empty => break,
            }
        }
    }
    for (tag, &w) in waiting.iter().enumerate() {
        if w {
            let r = owner[tag];
            longest[r] = longest[r].max(until - arrival[tag]);
        }
    }
    longest
}

/// Sequential sync readers and async writers of the best-effort class,
/// thinking less than `slice_idle`.
fn reader_strategy() -> impl Strategy<Value = Reader> {
    (1u32..5, prop::bool::weighted(0.85), 0u8..8, 0u64..3 * MS).prop_map(
        |(depth, sync, level, think)| Reader {
            depth,
            sync,
            random: false,
            prio: IoPrio {
                class: PrioClass::BestEffort,
                level,
            },
            think,
        },
    )
}

/// The bounds of the policy's documentation (with the default tunables),
/// by reader, for `readers` of one class, their async writers all of one
/// level, on a device serving each request within `service`: with `Q`
/// queues of at most `D` requests each, a round `T = (Q + 1) (180 ms +
/// slice_idle + 140 ms + 2 (quantum + D) t) + target_latency`; `2 T` for
/// a sync request, `(D + 1) T` for an async one, `D` here the requests
/// its async queue may hold.
///
/// With async writers of two levels (two async queues) there is no bound,
/// by CFQ's rules (`cfq_should_preempt`, `cfq_preempt_queue`): an async
/// queue is never idled for (`cfq_should_idle` idles for a queue with an
/// idle window or the last sync queue of its tree), so while one is in
/// service with all its requests sent, a request of the other preempts
/// it ("an idle queue should not be idle now"). The preempting queue
/// goes a second before the first key of its tree, and the preempted one,
/// empty, leaves the tree. Neither slice ever starts (a slice starts at
/// the queue's first completion while in service, and each request
/// completes after its queue was preempted), so no slice end breaks the
/// alternation either. If each writer's next request arrives while the
/// other queue is in service and empty (depth-1 writers that do not
/// think, on a depth-1 device), the two alternate for as long as they
/// write, and a third queue of the tree, keyed later, waits all that time
/// ([`two_async_queues_preempting_each_other_starve_a_third`]).
fn starvation_bounds(readers: &[Reader], service: Nanos) -> Vec<Nanos> {
    // The requests each queue may hold: a sync queue its reader's, an
    // async queue (one per level) its writers'.
    let mut async_depth = [0u64; 8];
    for r in readers.iter().filter(|r| !r.sync) {
        async_depth[usize::from(r.prio.level)] += u64::from(r.depth);
    }
    let queue_depth = |r: &Reader| {
        if r.sync {
            u64::from(r.depth)
        } else {
            async_depth[usize::from(r.prio.level)]
        }
    };
    let queues =
        readers.iter().filter(|r| r.sync).count() + async_depth.iter().filter(|&&d| d > 0).count();
    let d = readers.iter().map(queue_depth).max().unwrap_or(1);
    let q1 = queues as u64 + 1;
    let round = q1 * (180 * MS + 8 * MS + 140 * MS + 2 * (8 + d) * service) + 300 * MS;
    readers
        .iter()
        .map(|r| {
            if r.sync {
                2 * round
            } else {
                (queue_depth(r) + 1) * round
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Sequential sync readers (one of them possibly random), of levels 0
    /// to 7, and async writers, all of one level (one async queue: the
    /// bound does not hold for two, see [`starvation_bounds`]), on a
    /// rotational device with or without command queueing, for longer
    /// than the longest bound.
    #[test]
    fn no_request_waits_beyond_the_documented_bound(
        mut readers in prop::collection::vec(reader_strategy(), 1..6),
        random in prop::option::of(0usize..6),
        async_level in 0u8..8,
        device_depth in prop_oneof![Just(1usize), Just(4)],
        service in 100_000u64..10 * MS,
    ) {
        if let Some(r) = random {
            let i = r % readers.len();
            readers[i].random = true;
            readers[i].sync = true;
        }
        for r in readers.iter_mut().filter(|r| !r.sync) {
            r.prio.level = async_level;
        }
        let bounds = starvation_bounds(&readers, service);
        let until = bounds.iter().max().copied().unwrap_or(0) + 1_000 * MS;
        let waits = longest_waits(&readers, device_depth, service, until);
        for (r, (&wait, &bound)) in waits.iter().zip(&bounds).enumerate() {
            prop_assert!(
                wait <= bound,
                "reader {} waited {} ms, bound {} ms", r, wait / MS, bound / MS
            );
        }
    }
}

/// An async writer of best-effort level `level`: one request at a time,
/// the next one as soon as it completes.
fn writer(level: u8) -> Reader {
    Reader {
        depth: 1,
        sync: false,
        random: false,
        prio: IoPrio {
            class: PrioClass::BestEffort,
            level,
        },
        think: 0,
    }
}

/// Three async writers of levels 3, 2 and 0 on a depth-1 device taking
/// 100 µs per request: levels 3 and 2 preempt each other at every
/// request, as CFQ's rules let them (see [`starvation_bounds`]), each
/// served as soon as the device is free, and level 0, keyed after the one
/// a second ahead, is never served. The same writers at one level share
/// one async queue and stay within the documented bound.
#[test]
fn two_async_queues_preempting_each_other_starve_a_third() {
    let service = 100_000;
    let until = 5_000 * MS;
    let readers = [writer(3), writer(2), writer(0)];
    let waits = longest_waits(&readers, 1, service, until);
    assert_eq!(&waits[..2], &[service, service], "levels 3 and 2 alternate");
    assert_eq!(waits[2], until, "level 0 waits the whole run");

    let readers = [writer(3), writer(3), writer(3)];
    let bounds = starvation_bounds(&readers, service);
    let waits = longest_waits(&readers, 1, service, until);
    for (r, (&wait, &bound)) in waits.iter().zip(&bounds).enumerate() {
        assert!(
            wait <= bound,
            "writer {r} waited {} ms, bound {} ms",
            wait / MS,
            bound / MS
        );
    }
}
