// SPDX-License-Identifier: GPL-2.0

//! The module core (`sched`): what it asks its caller to do, when
//! completions reach the policy, the depth limits it keeps, the tunables
//! by index, and the I/O contexts' issuers.

use ironlift_policy::bfq::{Bfq, IssuerSlot, ReqSlot};
use ironlift_policy::deadline::{Deadline, Slot};
use ironlift_policy::sched::{check_layout, Core, Effect, SchedPolicy, Shared};
use ironlift_policy::sched_bfq::ContextIssuers;
use ironlift_policy::{AsyncDepth, Nanos, Op, Policy, RequestDesc, TunableError, NSEC_PER_MSEC};
use std::sync::atomic::AtomicU64;

type B = Bfq<Vec<ReqSlot>, Vec<IssuerSlot>>;
type D = Deadline<Vec<Slot>>;
type Words = Vec<AtomicU64>;

const MS: Nanos = NSEC_PER_MSEC;

/// A module core around `policy` over `capacity` tags, `nr_requests` of
/// them in use.
fn core<P: SchedPolicy>(
    policy: P,
    capacity: usize,
    nr_requests: u32,
) -> (Core<P>, Shared<P, Words>) {
    let words = |n| (0..n).map(|_| AtomicU64::new(0)).collect();
    let (bitmap, times) = Shared::<P, Words>::log_words(capacity);
    let shared = Shared::new(words(bitmap), words(times), nr_requests);
    (Core::new(policy, capacity, &shared), shared)
}

fn bfq(capacity: usize, issuers: usize) -> B {
    let mut b = Bfq::new(
        vec![ReqSlot::default(); capacity],
        vec![IssuerSlot::default(); issuers],
    )
    .unwrap();
    b.set_tunable("low_latency", "0").unwrap();
    b
}

fn deadline(capacity: usize) -> D {
    let mut d = Deadline::new(vec![Slot::default(); capacity]).unwrap();
    d.depth_updated(capacity as u32);
    d
}

fn read(issuer: usize, sector: u64) -> RequestDesc {
    RequestDesc {
        sector,
        sectors: 8,
        issuer,
        ..RequestDesc::default()
    }
}

fn insert<P: SchedPolicy>(
    c: &mut Core<P>,
    s: &Shared<P, Words>,
    tag: usize,
    desc: &RequestDesc,
    now: Nanos,
) -> Effect {
    c.begin_insert(s, now);
    c.insert(tag, desc, false, now);
    c.end_insert(s, now)
}

#[test]
fn sysfs_names_and_depth_limits_match_the_policies() {
    assert_eq!(check_layout(&bfq(8, 2), AsyncDepth::Elevator), Ok(()));
    assert_eq!(check_layout(&deadline(8), AsyncDepth::Elevator), Ok(()));
}

#[test]
fn deadline_completions_never_take_the_lock() {
    let (mut c, s) = core(deadline(8), 8, 8);
    assert_eq!(insert(&mut c, &s, 0, &read(0, 0), 0), Effect::Nothing);
    assert_eq!(c.dispatch(&s, 0, Some), (Some(0), Effect::Nothing));
    assert_eq!(insert(&mut c, &s, 1, &read(0, 100), 0), Effect::Nothing);
    // Queued requests or not, the completion path only records.
    s.completed(0, MS);
    assert!(!s.finish(0, || MS));
    assert_eq!(
        c.policy()
            .level_queued(ironlift_policy::PrioClass::BestEffort),
        2
    );
    // The next hook hands it over before deciding.
    assert_eq!(c.dispatch(&s, 2 * MS, Some), (Some(1), Effect::Nothing));
    assert_eq!(
        c.policy()
            .level_queued(ironlift_policy::PrioClass::BestEffort),
        1
    );
}

#[test]
fn bfq_idles_on_the_rerun_timer_and_cancels_it_when_the_request_comes() {
    let (mut c, s) = core(bfq(8, 3), 8, 8);
    assert_eq!(insert(&mut c, &s, 0, &read(0, 0), 0), Effect::Nothing);
    assert_eq!(c.dispatch(&s, 0, Some), (Some(0), Effect::Nothing));
    assert_eq!(insert(&mut c, &s, 1, &read(1, 1000), 0), Effect::Nothing);
    // Issuer 0's queue is empty with a request in flight: the device
    // waits for it.
    let (rq, effect) = c.dispatch(&s, 0, Some);
    assert_eq!(rq, None);
    let Effect::ArmRerun(until) = effect else {
        panic!("{effect:?}");
    };
    assert_eq!(c.rerun_at(), Some(until));
    // Requests wait: the completion takes the lock, and starts the idle
    // slice there.
    s.completed(0, MS);
    assert!(s.finish(0, || unreachable!("the time was given")));
    assert_eq!(c.finished(&s, || unreachable!()), Effect::ArmRerun(9 * MS));
    assert_eq!(c.rerun_at(), Some(9 * MS));
    // Issuer 0's next request ends the idling.
    assert_eq!(
        insert(&mut c, &s, 2, &read(0, 8), 2 * MS),
        Effect::CancelRerun
    );
    assert_eq!(c.rerun_at(), None);
    assert_eq!(c.dispatch(&s, 2 * MS, Some), (Some(2), Effect::Nothing));
}

#[test]
fn bfq_completions_with_nothing_queued_wait_for_the_next_hook() {
    let (mut c, s) = core(bfq(8, 2), 8, 8);
    assert_eq!(insert(&mut c, &s, 0, &read(0, 0), 0), Effect::Nothing);
    assert_eq!(c.dispatch(&s, 0, Some), (Some(0), Effect::Nothing));
    s.completed(0, MS);
    assert!(!s.finish(0, || unreachable!("the time was given")));
    assert_eq!(c.policy().in_flight(), 1);
    // The insertion hands it over first, with its time.
    assert_eq!(insert(&mut c, &s, 0, &read(0, 8), 2 * MS), Effect::Nothing);
    assert_eq!(c.policy().in_flight(), 0);
}

#[test]
fn an_issuer_exit_with_requests_waiting_reruns_the_queue_now() {
    let (mut c, s) = core(bfq(8, 3), 8, 8);
    assert_eq!(c.issuer_exit(&s, Some(0), 0), Effect::Nothing);
    assert_eq!(insert(&mut c, &s, 0, &read(1, 0), 0), Effect::Nothing);
    assert_eq!(c.issuer_exit(&s, Some(1), 0), Effect::RerunNow);
    assert_eq!(c.rerun_at(), None);
}

#[test]
fn deadline_depth_limits_follow_async_depth() {
    let (mut c, s) = core(deadline(64), 64, 64);
    assert_eq!(s.depth_limit(Op::Read, true), None);
    assert_eq!(s.depth_limit(Op::Write, false), Some(64));
    c.set_tunable(&s, 4, "16").unwrap();
    assert_eq!(s.depth_limit(Op::Write, true), Some(16));
    c.depth_updated(&s, 8, None);
    assert_eq!(s.depth_limit(Op::Write, true), Some(8));
    assert_eq!(s.depth_limit(Op::Read, true), None);
}

#[test]
fn bfq_depth_limits_are_scaled_to_nr_requests() {
    // Async: half the tags; sync writes: three quarters; sync reads: all.
    let (mut c, s) = core(bfq(256, 2), 256, 64);
    assert_eq!(s.depth_limit(Op::Read, true), None);
    assert_eq!(s.depth_limit(Op::Write, false), Some(32));
    assert_eq!(s.depth_limit(Op::Write, true), Some(48));
    c.depth_updated(&s, 128, None);
    assert_eq!(s.depth_limit(Op::Write, false), Some(64));
}

#[test]
fn tunables_by_index_keep_their_value_on_bad_input() {
    let (mut c, s) = core(bfq(8, 2), 8, 8);
    let slice_idle = 4;
    assert_eq!(
        B::TUNABLES[slice_idle].to_str(),
        Ok("slice_idle"),
        "the index of slice_idle"
    );
    assert_eq!(c.tunable(slice_idle), Ok(8));
    assert_eq!(
        c.set_tunable(&s, slice_idle, "abc"),
        Err(TunableError::Invalid)
    );
    assert_eq!(c.tunable(slice_idle), Ok(8));
    c.set_tunable(&s, slice_idle, "3\n").unwrap();
    assert_eq!(c.tunable(slice_idle), Ok(3));
    assert_eq!(c.tunable(B::TUNABLES.len()), Err(TunableError::UnknownName));
}

#[test]
fn contexts_take_free_issuers_and_share_the_last() {
    let b = bfq(8, 3);
    let mut ids = ContextIssuers::new(3);
    let (mut w0, mut w1, mut w2) = (ContextIssuers::UNASSIGNED, 0, 0);
    // At head: no slot taken.
    assert_eq!(ids.issuer(&b, &mut w0, true), 2);
    assert_eq!(w0, ContextIssuers::UNASSIGNED);
    assert_eq!(ids.issuer(&b, &mut w0, false), 0);
    assert_eq!(ids.issuer(&b, &mut w0, false), 0);
    assert_eq!(ids.issuer(&b, &mut w1, false), 1);
    // Slot 0 is still free to the policy until a request uses it.
    let mut b = b;
    b.insert(0, &read(0, 0), false, 0);
    b.insert(1, &read(1, 100), false, 0);
    assert_eq!(ids.issuer(&b, &mut w2, false), 2, "none free: shared");
    assert_eq!(ids.issuer(&b, &mut w2, false), 2);
    // An exited context names its own slot once, then the shared one.
    assert_eq!(ids.exit(&mut w0), Some(0));
    assert_eq!(ids.exit(&mut w0), None);
    assert_eq!(ids.issuer(&b, &mut w0, false), 2);
    assert_eq!(ids.exit(&mut w2), None);
}

/// A module core as on a kernel that keeps `async_depth` where `home`
/// says, attached as the kernel attaches it: the queue's `async_depth`
/// starts at `queue_before` (what the queue had) and becomes what the
/// policy sets, before or after its first depth update as it says.
fn core_on<P: SchedPolicy>(
    policy: P,
    capacity: usize,
    nr_requests: u32,
    home: AsyncDepth,
    queue_before: u32,
) -> (Core<P>, Shared<P, Words>, Option<u32>) {
    let words = |n| (0..n).map(|_| AtomicU64::new(0)).collect();
    let (bitmap, times) = Shared::<P, Words>::log_words(capacity);
    let shared = Shared::new(words(bitmap), words(times), nr_requests);
    let mut c = Core::with_async_depth(policy, capacity, &shared, home);
    let queue = match (home, P::initial_queue_async_depth(nr_requests)) {
        (AsyncDepth::Elevator, _) => None,
        (AsyncDepth::Queue, None) => Some(queue_before),
        (AsyncDepth::Queue, Some((depth, false))) => Some(depth),
        (AsyncDepth::Queue, Some((depth, true))) => {
            c.depth_updated(&shared, nr_requests, Some(queue_before));
            return (c, shared, Some(depth));
        }
    };
    c.depth_updated(&shared, nr_requests, queue);
    (c, shared, queue)
}

#[test]
fn deadline_async_depth_on_each_kernel() {
    for home in [AsyncDepth::Elevator, AsyncDepth::Queue] {
        let (mut c, s, queue) = core_on(deadline(64), 64, 64, home, 256);
        assert_eq!(check_layout(c.policy(), home), Ok(()), "{home:?}");
        // Both start at nr_requests: 6.12's tunable, 7.3's queue value
        // (`dd_init_sched()` sets it before `dd_depth_updated()`).
        assert_eq!(s.depth_limit(Op::Write, false), Some(64), "{home:?}");
        assert_eq!(s.depth_limit(Op::Read, true), None, "{home:?}");
        let names: Vec<_> = c.policy().tunables().to_vec();
        match home {
            AsyncDepth::Elevator => {
                assert_eq!(queue, None);
                assert!(names.contains(&"async_depth"));
                let i = names.iter().position(|n| *n == "async_depth").unwrap();
                c.set_tunable(&s, i, "16").unwrap();
                assert_eq!(s.depth_limit(Op::Write, true), Some(16));
                // 6.12: a depth change resets it to nr_requests.
                c.depth_updated(&s, 32, None);
                assert_eq!(s.depth_limit(Op::Write, true), Some(32));
            }
            AsyncDepth::Queue => {
                assert_eq!(queue, Some(64));
                // 7.3's mq-deadline has no async_depth of its own: six
                // tunables, in sysfs order.
                assert_eq!(
                    names,
                    [
                        "read_expire",
                        "write_expire",
                        "writes_starved",
                        "front_merges",
                        "fifo_batch",
                        "prio_aging_expire"
                    ]
                );
                assert_eq!(
                    c.policy_mut().set_tunable("async_depth", "16"),
                    Err(TunableError::UnknownName)
                );
                assert_eq!(c.tunable(6), Err(TunableError::UnknownName));
                assert_eq!(c.tunable(4), Ok(16), "index 4 is fifo_batch");
                // A write to queue/async_depth, then an nr_requests change
                // that the block layer scales it with (48 * 32 / 64).
                c.depth_updated(&s, 64, Some(48));
                assert_eq!(s.depth_limit(Op::Write, true), Some(48));
                c.depth_updated(&s, 32, Some(24));
                assert_eq!(s.depth_limit(Op::Flush, false), Some(24));
                c.depth_updated(&s, 32, Some(0));
                assert_eq!(s.depth_limit(Op::Write, false), Some(1));
            }
        }
    }
}

#[test]
fn bfq_depth_limits_on_each_kernel() {
    for home in [AsyncDepth::Elevator, AsyncDepth::Queue] {
        // The queue had 256 (`none` leaves the tag set's depth) when
        // rust-bfq was attached with 64 scheduler tags.
        let (mut c, s, queue) = core_on(bfq(256, 2), 256, 64, home, 256);
        assert_eq!(check_layout(c.policy(), home), Ok(()), "{home:?}");
        assert_eq!(s.depth_limit(Op::Read, true), None, "{home:?}");
        match home {
            AsyncDepth::Elevator => {
                // 6.12: fractions of the tags scaled to nr_requests.
                assert_eq!(queue, None);
                assert_eq!(s.depth_limit(Op::Write, false), Some(32));
                assert_eq!(s.depth_limit(Op::Write, true), Some(48));
            }
            AsyncDepth::Queue => {
                // 7.3: `bfq_init_queue()` derives the limits from the
                // queue's async_depth as it was (256) and sets it to 3/4
                // of nr_requests afterwards.
                assert_eq!(queue, Some(48));
                assert_eq!(s.depth_limit(Op::Write, true), Some(256));
                assert_eq!(s.depth_limit(Op::Write, false), Some(170));
                // The next depth change derives them from 48: all of it
                // for sync writes, two thirds for async requests.
                c.depth_updated(&s, 64, Some(48));
                assert_eq!(s.depth_limit(Op::Write, true), Some(48));
                assert_eq!(s.depth_limit(Op::Write, false), Some(32));
                assert_eq!(s.depth_limit(Op::Read, false), Some(32));
                c.depth_updated(&s, 64, Some(1));
                assert_eq!(s.depth_limit(Op::Write, false), Some(1));
            }
        }
    }
}
