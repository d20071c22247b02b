// SPDX-License-Identifier: GPL-2.0

//! Property tests of the anticipatory scheduler.
//!
//! - `random_operations_keep_it_consistent_and_dispatch_each_request_once`:
//!   random sequences of inserts (at head or not, of several processes),
//!   dispatches, completions, requeues, merges, process exits, tunable
//!   writes and time steps, against a model of where each request is: the
//!   structures stay consistent, only queued requests go out (at-head ones
//!   first), every wait ends within `antic_expire`, and draining at the
//!   end dispatches every request exactly once.
//! - `on_a_device_no_request_starves_and_every_wait_ends`: processes
//!   reading and writing on a simulated device of fixed service time,
//!   dispatch asked whenever the device has room, a completion calls for
//!   it or the wait's timer fires: the oldest request of each direction
//!   goes out within the documented bound
//!   ([`starvation_bound`]), the device never stays idle with requests
//!   queued for longer than one service time and `antic_expire`, and every
//!   request is dispatched exactly once.

use std::collections::{BTreeMap, VecDeque};

use ironlift_policy::anticipatory::{AfterCompletion, Anticipatory, ContextSlot, Slot};
use ironlift_policy::{
    Dispatch, IssuerId, MergeProbe, Nanos, Op, Policy, RequestDesc, Sector, NSEC_PER_MSEC,
};
use proptest::prelude::*;

const MS: Nanos = NSEC_PER_MSEC;
const ISSUERS: usize = 6;

type As = Anticipatory<Vec<Slot>, Vec<ContextSlot>>;

fn sched(capacity: usize) -> As {
    Anticipatory::new(
        vec![Slot::default(); capacity],
        vec![ContextSlot::default(); ISSUERS],
    )
    .unwrap()
}

// ---- random operations ----------------------------------------------------

#[derive(Clone, Debug)]
enum Step {
    Insert {
        hint: usize,
        issuer: IssuerId,
        sector: Sector,
        sectors: u32,
        write: bool,
        sync: bool,
        at_head: bool,
    },
    Dispatch,
    Complete(usize),
    /// The driver gives an in-flight request back.
    Requeue(usize),
    /// A request given back is inserted again, at head or not.
    Reinsert(usize, bool),
    /// Probe for a front merge at a queued request's start and, on a hit,
    /// grow it at its front.
    FrontMerge(usize, u32),
    MergeRequests(usize, usize),
    Exit(IssuerId),
    Advance(Nanos),
    Tune(usize, i64),
}

fn sector() -> impl Strategy<Value = Sector> {
    prop_oneof![
        6 => 0..4096u64,
        2 => 0..(1u64 << 32),
        1 => any::<u64>(),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (
            any::<usize>(),
            0..ISSUERS + 1,
            sector(),
            0..64u32,
            prop::bool::weighted(0.3),
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.1),
        )
            .prop_map(|(hint, issuer, sector, sectors, write, sync, at_head)| Step::Insert {
                hint,
                issuer,
                sector,
                sectors,
                write,
                sync,
                at_head,
            }),
        10 => Just(Step::Dispatch),
        6 => any::<usize>().prop_map(Step::Complete),
        1 => any::<usize>().prop_map(Step::Requeue),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(t, h)| Step::Reinsert(t, h)),
        1 => (any::<usize>(), 1..16u32).prop_map(|(t, g)| Step::FrontMerge(t, g)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::MergeRequests(a, b)),
        1 => (0..ISSUERS + 1).prop_map(Step::Exit),
        5 => prop_oneof![0..MS, 0..20 * MS, 0..2_000 * MS].prop_map(Step::Advance),
        1 => (1..6usize, 0..300i64).prop_map(|(n, v)| Step::Tune(n, v)),
    ]
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum St {
    Free,
    Queued,
    AtHead,
    InFlight,
    Requeued,
}

struct Model {
    st: Vec<St>,
    desc: Vec<RequestDesc>,
    /// At-head requests, the latest last.
    at_head: Vec<usize>,
    /// Per request lifetime (fresh insertion to completion or merge):
    /// dispatches less requeues.
    out: Vec<u32>,
    /// The largest `antic_expire` set so far.
    max_antic: Nanos,
    now: Nanos,
    fresh: u64,
    done: u64,
}

impl Model {
    fn pick(&self, n: usize, f: impl Fn(St) -> bool) -> Option<usize> {
        let tags: Vec<usize> = (0..self.st.len()).filter(|&t| f(self.st[t])).collect();
        (!tags.is_empty()).then(|| tags[n % tags.len()])
    }

    fn queued(&self) -> usize {
        self.st
            .iter()
            .filter(|&&s| matches!(s, St::Queued | St::AtHead))
            .count()
    }

    fn out_there(&self) -> bool {
        self.st
            .iter()
            .any(|&s| matches!(s, St::InFlight | St::Requeued))
    }

    /// One dispatch, checked.
    fn dispatch(&mut self, a: &mut As) -> Result<Dispatch, TestCaseError> {
        let d = a.dispatch(self.now);
        match d {
            Dispatch::Request(t) => {
                prop_assert!(t < self.st.len());
                prop_assert!(
                    matches!(self.st[t], St::Queued | St::AtHead),
                    "dispatched {t} in state {:?}",
                    self.st[t]
                );
                if let Some(&latest) = self.at_head.last() {
                    prop_assert_eq!(t, latest, "at-head requests go first, latest first");
                    self.at_head.pop();
                }
                self.st[t] = St::InFlight;
                self.out[t] += 1;
                prop_assert_eq!(self.out[t], 1, "dispatched twice: {}", t);
            }
            Dispatch::IdleUntil(until) => {
                prop_assert!(self.queued() > 0);
                let ahead = until.wrapping_sub(self.now) as i64;
                prop_assert!(ahead > 0, "a wait that ended");
                prop_assert!(ahead as Nanos <= self.max_antic, "a wait too long");
                prop_assert_eq!(a.idling_until(), Some(until));
            }
            Dispatch::Empty => {
                prop_assert!(
                    self.queued() == 0 || self.out_there(),
                    "nothing out, requests queued, no wait"
                );
            }
        }
        Ok(d)
    }

    fn reinsert(&mut self, a: &mut As, t: usize, at_head: bool) {
        a.insert(t, &self.desc[t], at_head, self.now);
        if at_head {
            self.st[t] = St::AtHead;
            self.at_head.push(t);
        } else {
            self.st[t] = St::Queued;
        }
    }

    fn complete(&mut self, a: &mut As, t: usize) {
        a.completed(t, self.now);
        self.st[t] = St::Free;
        self.out[t] = 0;
        self.done += 1;
    }
}

fn run_ops(steps: Vec<Step>, cap: usize, start: Nanos) -> Result<(), TestCaseError> {
    let mut a = sched(cap);
    let mut m = Model {
        st: vec![St::Free; cap],
        desc: vec![RequestDesc::default(); cap],
        at_head: Vec::new(),
        out: vec![0; cap],
        max_antic: 6 * MS,
        now: start,
        fresh: 0,
        done: 0,
    };
    let names = a.tunables();
    for step in steps {
        match step {
            Step::Insert {
                hint,
                issuer,
                sector,
                sectors,
                write,
                sync,
                at_head,
            } => {
                let Some(t) = m.pick(hint, |s| s == St::Free) else {
                    continue;
                };
                let desc = RequestDesc {
                    sector,
                    sectors,
                    op: if write { Op::Write } else { Op::Read },
                    sync: !write || sync,
                    issuer,
                    arrival: m.now,
                    ..RequestDesc::default()
                };
                a.insert(t, &desc, at_head, m.now);
                m.desc[t] = desc;
                m.fresh += 1;
                if at_head {
                    m.st[t] = St::AtHead;
                    m.at_head.push(t);
                } else {
                    m.st[t] = St::Queued;
                }
            }
            Step::Dispatch => {
                m.dispatch(&mut a)?;
            }
            Step::Complete(n) => {
                if let Some(t) = m.pick(n, |s| s == St::InFlight) {
                    m.complete(&mut a, t);
                    let after = a.after_completion();
                    if let AfterCompletion::RunAt(until) = after {
                        let ahead = until.wrapping_sub(m.now) as i64;
                        prop_assert!(ahead <= m.max_antic as i64, "a wait too long");
                    }
                }
            }
            Step::Requeue(n) => {
                if let Some(t) = m.pick(n, |s| s == St::InFlight) {
                    a.requeued(t, m.now);
                    m.out[t] -= 1;
                    m.st[t] = St::Requeued;
                }
            }
            Step::Reinsert(n, at_head) => {
                if let Some(t) = m.pick(n, |s| s == St::Requeued) {
                    m.reinsert(&mut a, t, at_head);
                }
            }
            Step::FrontMerge(n, grow) => {
                if let Some(t) = m.pick(n, |s| s == St::Queued) {
                    let d = m.desc[t];
                    let probe = MergeProbe {
                        bio_end: d.sector,
                        op: d.op,
                        prio: d.prio,
                    };
                    if let Some(c) = a.front_merge_candidate(&probe) {
                        prop_assert!(matches!(m.st[c], St::Queued));
                        prop_assert_eq!(m.desc[c].sector, d.sector);
                        prop_assert_eq!(m.desc[c].op, d.op);
                        let g = u64::from(grow).min(m.desc[c].sector);
                        m.desc[c].sector -= g;
                        m.desc[c].sectors += g as u32;
                        a.front_merged(c, m.desc[c].sector, m.desc[c].sectors);
                    }
                }
            }
            Step::MergeRequests(x, y) => {
                let into = m.pick(x, |s| s == St::Queued);
                let next = m.pick(y, |s| s == St::Queued);
                if let (Some(i), Some(n)) = (into, next) {
                    if i != n {
                        a.requests_merged(i, n);
                        m.st[n] = St::Free;
                        m.done += 1;
                    }
                }
            }
            Step::Exit(issuer) => a.issuer_exit(issuer, m.now),
            Step::Advance(dt) => m.now = m.now.wrapping_add(dt),
            Step::Tune(n, v) => {
                a.set_tunable(names[n], &v.to_string()).unwrap();
                if names[n] == "antic_expire" {
                    m.max_antic = m.max_antic.max(v as Nanos * MS);
                }
            }
        }
        if let Err(e) = a.check_invariants() {
            return Err(TestCaseError::fail(format!("invariant: {e}")));
        }
        prop_assert_eq!(a.queued(), m.queued());
        prop_assert_eq!(a.has_work(), m.queued() > 0);
    }
    // Drain: complete what is out, wait out the waits; everything goes,
    // each once.
    for _ in 0..10 * cap + 10 {
        for t in 0..cap {
            match m.st[t] {
                St::InFlight => m.complete(&mut a, t),
                St::Requeued => m.reinsert(&mut a, t, t % 2 == 0),
                _ => {}
            }
        }
        match m.dispatch(&mut a)? {
            Dispatch::IdleUntil(until) => m.now = until,
            Dispatch::Empty if !a.has_work() => break,
            _ => {}
        }
        prop_assert!(a.check_invariants().is_ok());
    }
    prop_assert!(!a.has_work(), "not drained");
    prop_assert_eq!(m.done, m.fresh, "every request completed or merged once");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_operations_keep_it_consistent_and_dispatch_each_request_once(
        steps in prop::collection::vec(step(), 1..300),
        cap in 1..24usize,
        start in prop_oneof![Just(0u64), any::<u64>(), Just(u64::MAX - 100 * MS)],
    ) {
        run_ops(steps, cap, start)?;
    }
}

// ---- on a device ------------------------------------------------------------

/// One request the processes make: when, whose, where, which way.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    at: Nanos,
    issuer: IssuerId,
    sector: Sector,
    write: bool,
}

/// Up to 300 requests over 3 s, or crowded into 300 ms.
fn arrivals() -> impl Strategy<Value = Vec<Arrival>> {
    prop_oneof![Just(300 * MS), Just(3_000 * MS)].prop_flat_map(arrivals_over)
}

fn arrivals_over(span: Nanos) -> impl Strategy<Value = Vec<Arrival>> {
    prop::collection::vec(
        (
            0..span,
            0..ISSUERS,
            prop_oneof![0..2048u64, 0..(1u64 << 31)],
            prop::bool::weighted(0.3),
        )
            .prop_map(|(at, issuer, sector, write)| Arrival {
                at,
                issuer,
                sector,
                write,
            }),
        1..300,
    )
    .prop_map(|mut v| {
        v.sort_by_key(|a| a.at);
        v
    })
}

/// How long the oldest request of a direction may wait: the FIFO is
/// checked once per expire interval, so an expired head goes out within
/// two of them in a batch of its direction; otherwise the other
/// direction's batch runs out first (after its requests in flight
/// complete, and a wait for a reader), and the new batch starts with the
/// oldest request. A few service times on top for the requests in flight
/// at each change.
fn starvation_bound(a: &As, service: Nanos) -> Nanos {
    let t = |n: &str| a.tunable(n).unwrap() as Nanos * MS;
    2 * t("read_expire").max(t("write_expire"))
        + t("read_batch_expire").max(t("write_batch_expire"))
        + t("antic_expire")
        + 4 * service
}

fn run_device(
    arrivals: Vec<Arrival>,
    depth: usize,
    service: Nanos,
    antic_ms: u32,
) -> Result<(), TestCaseError> {
    let cap = arrivals.len();
    let mut a = sched(cap);
    a.set_tunable("antic_expire", &antic_ms.to_string())
        .unwrap();
    let antic = Nanos::from(antic_ms) * MS;
    let bound = starvation_bound(&a, service);
    let mut next = 0;
    let mut now = 0;
    // Completion time -> tags completing then.
    let mut device: BTreeMap<Nanos, Vec<usize>> = BTreeMap::new();
    let mut on_device = 0;
    let mut timer: Option<Nanos> = None;
    // By direction (0 async, 1 sync): requests queued, oldest first, with
    // when each became the oldest.
    let mut fifo: [VecDeque<usize>; 2] = Default::default();
    let mut head_since = [0; 2];
    let mut dir = vec![0usize; cap];
    let mut dispatched = vec![false; cap];
    // Since when the device has had room and requests waited, undispatched.
    let mut stalled_since: Option<Nanos> = None;
    loop {
        // Run the queue.
        let mut run = true;
        while run && on_device < depth && a.has_work() {
            match a.dispatch(now) {
                Dispatch::Request(t) => {
                    prop_assert!(!dispatched[t], "dispatched twice");
                    dispatched[t] = true;
                    let q = &mut fifo[dir[t]];
                    let pos = q.iter().position(|&x| x == t);
                    prop_assert!(pos.is_some());
                    q.remove(pos.unwrap());
                    if pos == Some(0) {
                        head_since[dir[t]] = now;
                    }
                    device.entry(now + service).or_default().push(t);
                    on_device += 1;
                    stalled_since = None;
                }
                Dispatch::IdleUntil(until) => {
                    prop_assert!(until > now && until - now <= antic);
                    timer = Some(until);
                    run = false;
                }
                Dispatch::Empty => {
                    prop_assert!(on_device > 0, "stalled with the device empty");
                    run = false;
                }
            }
        }
        if on_device >= depth || !a.has_work() {
            stalled_since = None;
        } else {
            let since = *stalled_since.get_or_insert(now);
            prop_assert!(
                now - since <= service + antic,
                "device idle with requests queued for {} ns",
                now - since
            );
        }
        for d in 0..2 {
            if !fifo[d].is_empty() {
                prop_assert!(
                    now - head_since[d] <= bound,
                    "the oldest {} request waited {} ms (bound {} ms)",
                    if d == 1 { "sync" } else { "async" },
                    (now - head_since[d]) / MS,
                    bound / MS
                );
            }
        }
        // The next event.
        let arrival = arrivals.get(next).map(|x| x.at.max(now));
        let completion = device.keys().next().copied();
        let Some(t) = [arrival, completion, timer].into_iter().flatten().min() else {
            break;
        };
        now = t;
        if timer.is_some_and(|u| u <= now) {
            timer = None;
        }
        if completion == Some(now) {
            for tag in device.remove(&now).unwrap() {
                a.completed(tag, now);
                on_device -= 1;
                match a.after_completion() {
                    AfterCompletion::RunAt(until) => timer = Some(until.max(now)),
                    AfterCompletion::RunNow | AfterCompletion::Nothing => {}
                }
            }
        }
        while arrivals.get(next).is_some_and(|x| x.at <= now) {
            let x = arrivals[next];
            let d = usize::from(!x.write);
            if fifo[d].is_empty() {
                head_since[d] = now;
            }
            fifo[d].push_back(next);
            dir[next] = d;
            let desc = RequestDesc {
                sector: x.sector,
                sectors: 8,
                op: if x.write { Op::Write } else { Op::Read },
                sync: !x.write,
                issuer: x.issuer,
                arrival: now,
                ..RequestDesc::default()
            };
            a.insert(next, &desc, false, now);
            next += 1;
        }
        if let Err(e) = a.check_invariants() {
            return Err(TestCaseError::fail(format!("invariant: {e}")));
        }
    }
    prop_assert!(!a.has_work(), "requests left");
    prop_assert!(dispatched.iter().all(|&d| d), "a request never went out");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn on_a_device_no_request_starves_and_every_wait_ends(
        arrivals in arrivals(),
        depth in 1..4usize,
        service in 100_000..15 * MS,
        antic_ms in prop_oneof![Just(6u32), 0..30u32],
    ) {
        run_device(arrivals, depth, service, antic_ms)?;
    }
}
