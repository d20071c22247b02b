// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the CFQ policy with random operation sequences against a model
//! of the request life cycle: the internal structures stay consistent
//! after every step (`check_invariants`), queued()/has_work()/in_flight()
//! match the model, only queued requests are dispatched and each at most
//! once, nothing is idled on when nothing is queued, an idle deadline is
//! never in the past, the policy never answers Empty while work waits and
//! nothing is in flight, front-merge candidates are queued requests at the
//! probed sector, rejected tunable writes keep the old value, protocol
//! violations (bad tags, double inserts, stray completions) are survived,
//! and draining at the end (honouring idling) dispatches everything
//! exactly once, every idle slice ending at its deadline.

#![no_main]

use arbitrary::Arbitrary;
use ironlift_policy::cfq::{Cfq, QueueSlot, ReqSlot};
use ironlift_policy::{Dispatch, IoPrio, MergeProbe, Nanos, Op, Policy, PrioClass, RequestDesc};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    cap: u8,
    issuers: u8,
    start: u64,
    nonrot: bool,
    ops: Vec<FuzzOp>,
}

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Insert {
        issuer: u8,
        sector: u64,
        small_sector: u8,
        use_small: bool,
        sectors: u32,
        small_len: u8,
        op: u8,
        sync: bool,
        class: u8,
        level: u8,
        at_head: bool,
    },
    Dispatch,
    Complete(u8),
    Requeue(u8),
    FrontMerge {
        pick: u8,
        grow: u16,
        own: bool,
    },
    BackMerge {
        pick: u8,
        grow: u16,
    },
    MergeRequests(u8, u8),
    Advance(u32),
    AdvanceFar(u64),
    Tune(u8, u32),
    TuneText(u8, String),
    Exit(u8),
    Stray {
        tag: u16,
        what: u8,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum M {
    Free,
    Queued,
    InFlight,
}

fn check<R, Q>(b: &Cfq<R, Q>, model: &[M], what: &dyn core::fmt::Debug)
where
    R: AsRef<[ReqSlot]> + AsMut<[ReqSlot]>,
    Q: AsRef<[QueueSlot]> + AsMut<[QueueSlot]>,
{
    if let Err(e) = b.check_invariants() {
        panic!("invariant broken after {what:?}: {e}");
    }
    let queued = model.iter().filter(|s| **s == M::Queued).count();
    let inflight = model.iter().filter(|s| **s == M::InFlight).count();
    assert_eq!(b.queued(), queued, "queued after {what:?}");
    assert_eq!(b.has_work(), queued > 0);
    assert_eq!(b.in_flight(), inflight, "in flight after {what:?}");
}

fuzz_target!(|input: Input| {
    let n = 1 + input.cap as usize % 48;
    let m = 1 + input.issuers as usize % 12;
    let mut b = Cfq::new(
        vec![ReqSlot::default(); n],
        vec![QueueSlot::default(); Cfq::<Vec<ReqSlot>, Vec<QueueSlot>>::queue_slots(m)],
    )
    .unwrap();
    b.set_nonrotational(input.nonrot);
    let mut model = vec![M::Free; n];
    let mut descs = vec![RequestDesc::default(); n];
    let mut now: Nanos = input.start;
    let names = b.tunables();

    for op in &input.ops {
        match op {
            FuzzOp::Insert {
                issuer,
                sector,
                small_sector,
                use_small,
                sectors,
                small_len,
                op,
                sync,
                class,
                level,
                at_head,
            } => {
                let Some(tag) = model.iter().position(|s| *s == M::Free) else {
                    continue;
                };
                let op = match op % 8 {
                    0..=3 => Op::Read,
                    4..=5 => Op::Write,
                    6 => Op::Flush,
                    _ => Op::Discard,
                };
                let class = match class % 4 {
                    0 => PrioClass::RealTime,
                    1 | 2 => PrioClass::BestEffort,
                    _ => PrioClass::Idle,
                };
                let d = RequestDesc {
                    sector: if *use_small {
                        *small_sector as u64 * 8
                    } else {
                        *sector
                    },
                    sectors: if *use_small {
                        *small_len as u32
                    } else {
                        *sectors
                    },
                    op,
                    sync: *sync || op.is_read(),
                    prio: IoPrio {
                        class,
                        level: *level,
                    },
                    issuer: *issuer as usize,
                    arrival: now,
                };
                b.insert(tag, &d, *at_head, now);
                descs[tag] = d;
                model[tag] = M::Queued;
            }
            FuzzOp::Dispatch => {
                let queued = model.iter().filter(|s| **s == M::Queued).count();
                match b.dispatch(now) {
                    Dispatch::Request(t) => {
                        assert!(t < n);
                        assert_eq!(model[t], M::Queued, "dispatched tag {t} not queued");
                        model[t] = M::InFlight;
                    }
                    Dispatch::IdleUntil(t) => {
                        assert!(queued > 0, "idling with nothing queued");
                        assert!(t >= now, "idle deadline in the past");
                    }
                    Dispatch::Empty => {
                        let inflight = model.contains(&M::InFlight);
                        assert!(
                            queued == 0 || inflight,
                            "stalled: work queued, none in flight"
                        );
                    }
                }
            }
            FuzzOp::Complete(i) => {
                let inflight: Vec<_> = (0..n).filter(|t| model[*t] == M::InFlight).collect();
                if !inflight.is_empty() {
                    let t = inflight[*i as usize % inflight.len()];
                    b.completed(t, now);
                    model[t] = M::Free;
                }
            }
            FuzzOp::Requeue(i) => {
                let inflight: Vec<_> = (0..n).filter(|t| model[*t] == M::InFlight).collect();
                if !inflight.is_empty() {
                    let t = inflight[*i as usize % inflight.len()];
                    b.requeued(t, now);
                    b.insert(t, &descs[t], true, now);
                    model[t] = M::Queued;
                }
            }
            FuzzOp::FrontMerge { pick, grow, own } => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if queued.is_empty() {
                    continue;
                }
                let t = queued[*pick as usize % queued.len()];
                let d = descs[t];
                let probe = MergeProbe {
                    bio_end: d.sector,
                    op: d.op,
                    prio: d.prio,
                };
                let _ = own;
                let found = b.front_merge_candidate(&probe);
                if let Some(c) = found {
                    assert!(c < n);
                    assert_eq!(model[c], M::Queued, "merge candidate not queued");
                    assert_eq!(descs[c].sector, d.sector, "merge candidate sector");
                    assert_ne!(descs[c].op, Op::Flush);
                    let g = (*grow as u64).min(descs[c].sector);
                    descs[c].sector -= g;
                    descs[c].sectors = descs[c].sectors.saturating_add(g as u32);
                    b.front_merged(c, descs[c].sector, descs[c].sectors);
                }
            }
            FuzzOp::BackMerge { pick, grow } => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if queued.is_empty() {
                    continue;
                }
                let t = queued[*pick as usize % queued.len()];
                descs[t].sectors = descs[t].sectors.saturating_add(*grow as u32);
                b.back_merged(t, descs[t].sectors);
            }
            FuzzOp::MergeRequests(i, j) => {
                let queued: Vec<_> = (0..n).filter(|t| model[*t] == M::Queued).collect();
                if queued.len() >= 2 {
                    let a = queued[*i as usize % queued.len()];
                    let c = queued[*j as usize % queued.len()];
                    if a != c {
                        b.requests_merged(a, c);
                        let start = descs[a].sector.min(descs[c].sector);
                        let end = descs[a]
                            .sector
                            .saturating_add(descs[a].sectors as u64)
                            .max(descs[c].sector.saturating_add(descs[c].sectors as u64));
                        descs[a].sector = start;
                        descs[a].sectors = (end - start).min(u32::MAX as u64) as u32;
                        model[c] = M::Free;
                    }
                }
            }
            FuzzOp::Advance(dt) => now = now.saturating_add(*dt as u64),
            FuzzOp::AdvanceFar(dt) => now = now.saturating_add(*dt),
            FuzzOp::Tune(k, v) => {
                let name = names[*k as usize % names.len()];
                let before = b.tunable(name).unwrap();
                if b.set_tunable(name, &format!("{v}")).is_err() {
                    assert_eq!(b.tunable(name).unwrap(), before);
                }
            }
            FuzzOp::TuneText(k, text) => {
                let name = names[*k as usize % names.len()];
                let before = b.tunable(name).unwrap();
                if b.set_tunable(name, text).is_err() {
                    assert_eq!(b.tunable(name).unwrap(), before);
                }
                let _ = b.set_tunable(text, "1");
                let _ = b.tunable(text);
            }
            FuzzOp::Exit(i) => {
                b.issuer_exit(*i as usize, now);
                let _ = b.issuer_is_free(*i as usize);
                let _ = b.queue_info(ironlift_policy::cfq::QueueId::Sync(*i as usize));
            }
            FuzzOp::Stray { tag, what } => {
                // Protocol violations on tags in states where they are not
                // allowed: out of range, or not in the right state.
                let t = *tag as usize % (n + 4);
                match what % 4 {
                    0 if t >= n || model[t] != M::InFlight => b.completed(t, now),
                    1 if t >= n || model[t] != M::InFlight => b.requeued(t, now),
                    2 if t >= n || model[t] == M::Queued => {
                        // Inserting a queued tag again is ignored.
                        if t < n {
                            b.insert(t, &descs[t], false, now);
                        } else {
                            b.insert(t, &RequestDesc::default(), false, now);
                        }
                    }
                    3 if t >= n || model[t] != M::Queued => {
                        b.front_merged(t, 0, 8);
                        b.back_merged(t, 8);
                    }
                    _ => {}
                }
            }
        }
        check(&b, &model, op);
    }

    // Drain: complete everything, honour idling, dispatch the rest.
    for (t, state) in model.iter_mut().enumerate() {
        if *state == M::InFlight {
            b.completed(t, now);
            *state = M::Free;
        }
    }
    let mut steps = 0;
    let mut last_idle = None;
    while b.has_work() {
        steps += 1;
        assert!(steps < 10 * n + 100, "drain does not progress");
        match b.dispatch(now) {
            Dispatch::Request(t) => {
                assert_eq!(model[t], M::Queued);
                model[t] = M::Free;
                now = now.saturating_add(1000);
                b.completed(t, now);
                last_idle = None;
            }
            Dispatch::IdleUntil(t) => {
                assert!(t > now, "an idle slice that already ended");
                assert_ne!(last_idle, Some(t), "an idle slice did not end at its deadline");
                last_idle = Some(t);
                now = t;
            }
            Dispatch::Empty => panic!("stalled with work queued"),
        }
        check(&b, &model, &"drain");
    }
    assert!(model.iter().all(|s| *s == M::Free), "a request was lost");
    assert_eq!(b.dispatch(now), Dispatch::Empty);
});
