// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the anticipatory policy with random operation sequences against
//! a small model of where each request is: the structures stay
//! consistent (per process too), queued()/has_work() match, only queued
//! requests are dispatched (at-head ones first, the latest first), each
//! at most once per insertion; a wait ([`Dispatch::IdleUntil`]) lies in
//! the future and within the largest `antic_expire` set, and dispatch
//! gives nothing with requests queued only while some request is out;
//! sysfs text of any kind leaves the tunables as the model has them;
//! issuer slots are reused only once free; and draining at the end
//! (completing what is out, waiting out the waits) dispatches everything.

#![no_main]

use arbitrary::Arbitrary;
use ironlift_policy::anticipatory::{AfterCompletion, Anticipatory, ContextSlot, Slot};
use ironlift_policy::{
    Dispatch, IssuerId, MergeProbe, Nanos, Op, Policy, RequestDesc, TunableError, NSEC_PER_MSEC,
};
use libfuzzer_sys::fuzz_target;

const MS: Nanos = NSEC_PER_MSEC;

type As = Anticipatory<Vec<Slot>, Vec<ContextSlot>>;

#[derive(Arbitrary, Debug)]
struct Input {
    cap: u8,
    issuers: u8,
    start: u64,
    ops: Vec<FuzzOp>,
}

#[derive(Arbitrary, Debug)]
enum FuzzOp {
    Insert {
        hint: u8,
        issuer: u8,
        sector: u64,
        small_sector: u16,
        use_small: bool,
        sectors: u16,
        op: u8,
        sync: bool,
        at_head: bool,
    },
    Dispatch,
    Complete(u8),
    Requeue(u8),
    Reinsert(u8, bool),
    FrontMerge(u8, u8),
    MergeRequests(u8, u8),
    Exit(u8),
    Advance(u32),
    AdvanceFar(u64),
    Tune(u8, u16),
    TuneText(u8, String),
    Abuse(u16, u8),
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
    at_head: Vec<usize>,
    dispatched: Vec<bool>,
    /// Tunables by name (ms), as the model expects them.
    tun: Vec<(&'static str, i64)>,
    max_antic: Nanos,
    now: Nanos,
    fresh: u64,
    gone: u64,
}

impl Model {
    fn pick(&self, n: u8, f: impl Fn(St) -> bool) -> Option<usize> {
        let tags: Vec<usize> = (0..self.st.len()).filter(|&t| f(self.st[t])).collect();
        (!tags.is_empty()).then(|| tags[n as usize % tags.len()])
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

    fn dispatch(&mut self, a: &mut As) -> Dispatch {
        let d = a.dispatch(self.now);
        match d {
            Dispatch::Request(t) => {
                assert!(t < self.st.len());
                assert!(
                    matches!(self.st[t], St::Queued | St::AtHead),
                    "dispatched {t} in {:?}",
                    self.st[t]
                );
                if let Some(&top) = self.at_head.last() {
                    assert_eq!(t, top, "at-head order");
                    self.at_head.pop();
                }
                assert!(!self.dispatched[t], "dispatched twice");
                self.dispatched[t] = true;
                self.st[t] = St::InFlight;
            }
            Dispatch::IdleUntil(until) => {
                assert!(self.queued() > 0, "waits with nothing queued");
                let ahead = until.wrapping_sub(self.now) as i64;
                assert!(ahead > 0, "a wait already over");
                assert!(ahead as Nanos <= self.max_antic, "a wait too long");
                assert_eq!(a.idling_until(), Some(until));
            }
            Dispatch::Empty => {
                assert!(
                    self.queued() == 0 || self.out_there(),
                    "nothing out, {} queued, no wait",
                    self.queued()
                );
            }
        }
        d
    }

    fn complete(&mut self, a: &mut As, t: usize) {
        a.completed(t, self.now);
        self.st[t] = St::Free;
        self.dispatched[t] = false;
        self.gone += 1;
    }

    fn reinsert(&mut self, a: &mut As, t: usize, at_head: bool) {
        a.insert(t, &self.desc[t], at_head, self.now);
        self.dispatched[t] = false;
        if at_head {
            self.st[t] = St::AtHead;
            self.at_head.push(t);
        } else {
            self.st[t] = St::Queued;
        }
    }
}

fn check(a: &As, m: &Model) {
    if let Err(e) = a.check_invariants() {
        panic!("invariant: {e}");
    }
    assert_eq!(a.queued(), m.queued());
    assert_eq!(a.has_work(), m.queued() > 0);
    for &(name, v) in &m.tun {
        assert_eq!(a.tunable(name), Ok(v), "{name}");
    }
}

fuzz_target!(|input: Input| {
    let cap = usize::from(input.cap % 48) + 1;
    let issuers = usize::from(input.issuers % 8) + 1;
    let mut a = Anticipatory::new(
        vec![Slot::default(); cap],
        vec![ContextSlot::default(); issuers],
    )
    .unwrap();
    let mut m = Model {
        st: vec![St::Free; cap],
        desc: vec![RequestDesc::default(); cap],
        at_head: Vec::new(),
        dispatched: vec![false; cap],
        tun: vec![
            ("read_expire", 125),
            ("write_expire", 250),
            ("antic_expire", 6),
            ("read_batch_expire", 500),
            ("write_batch_expire", 125),
        ],
        max_antic: 6 * MS,
        now: input.start,
        fresh: 0,
        gone: 0,
    };
    for op in input.ops.into_iter().take(2000) {
        match op {
            FuzzOp::Insert {
                hint,
                issuer,
                sector,
                small_sector,
                use_small,
                sectors,
                op,
                sync,
                at_head,
            } => {
                let Some(t) = m.pick(hint, |s| s == St::Free) else {
                    continue;
                };
                let op = match op % 8 {
                    0..=3 => Op::Read,
                    4..=5 => Op::Write,
                    6 => Op::Discard,
                    _ => Op::Flush,
                };
                let desc = RequestDesc {
                    sector: if use_small {
                        u64::from(small_sector)
                    } else {
                        sector
                    },
                    sectors: u32::from(sectors % 512),
                    op,
                    sync: op.is_read() || sync,
                    issuer: IssuerId::from(issuer),
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
            FuzzOp::Dispatch => {
                m.dispatch(&mut a);
            }
            FuzzOp::Complete(n) => {
                if let Some(t) = m.pick(n, |s| s == St::InFlight) {
                    m.complete(&mut a, t);
                    if let AfterCompletion::RunAt(until) = a.after_completion() {
                        let ahead = until.wrapping_sub(m.now) as i64;
                        assert!(ahead <= m.max_antic as i64, "a wait too long");
                        assert!(a.has_work());
                    }
                }
            }
            FuzzOp::Requeue(n) => {
                if let Some(t) = m.pick(n, |s| s == St::InFlight) {
                    a.requeued(t, m.now);
                    m.st[t] = St::Requeued;
                }
            }
            FuzzOp::Reinsert(n, at_head) => {
                if let Some(t) = m.pick(n, |s| s == St::Requeued) {
                    m.reinsert(&mut a, t, at_head);
                }
            }
            FuzzOp::FrontMerge(n, grow) => {
                if let Some(t) = m.pick(n, |s| s == St::Queued) {
                    let d = m.desc[t];
                    let probe = MergeProbe {
                        bio_end: d.sector,
                        op: d.op,
                        prio: d.prio,
                    };
                    if let Some(c) = a.front_merge_candidate(&probe) {
                        assert_eq!(m.st[c], St::Queued, "candidate not queued");
                        assert_eq!((m.desc[c].sector, m.desc[c].op), (d.sector, d.op));
                        let g = u64::from(grow).min(m.desc[c].sector);
                        m.desc[c].sector -= g;
                        m.desc[c].sectors += g as u32;
                        a.front_merged(c, m.desc[c].sector, m.desc[c].sectors);
                    }
                }
            }
            FuzzOp::MergeRequests(x, y) => {
                let into = m.pick(x, |s| matches!(s, St::Queued | St::AtHead));
                let next = m.pick(y, |s| s == St::Queued);
                if let (Some(i), Some(n)) = (into, next) {
                    if i != n {
                        a.requests_merged(i, n);
                        m.st[n] = St::Free;
                        m.gone += 1;
                    }
                }
            }
            FuzzOp::Exit(i) => {
                let i = IssuerId::from(i);
                let free = a.issuer_is_free(i);
                a.issuer_exit(i, m.now);
                if free {
                    assert!(a.issuer_is_free(i), "exit of a free issuer took it");
                }
            }
            FuzzOp::Advance(dt) => m.now = m.now.wrapping_add(u64::from(dt) * 1000),
            // Far (up to 18 minutes; with `start`, across the wrap), but
            // forward: a clock does not go back, as steps adding up to
            // 2^64 would make it.
            FuzzOp::AdvanceFar(dt) => m.now = m.now.wrapping_add(dt % (1 << 40)),
            FuzzOp::Tune(n, v) => {
                let i = usize::from(n) % m.tun.len();
                let name = m.tun[i].0;
                a.set_tunable(name, &v.to_string()).unwrap();
                m.tun[i].1 = i64::from(v);
                if name == "antic_expire" {
                    m.max_antic = m.max_antic.max(u64::from(v) * MS);
                }
            }
            FuzzOp::TuneText(n, text) => {
                let names = a.tunables();
                let name = names[usize::from(n) % names.len()];
                let res = a.set_tunable(name, &text);
                if name == "est_time" {
                    assert_eq!(res, Err(TunableError::ReadOnly));
                } else if res.is_ok() {
                    let v = a.tunable(name).unwrap();
                    assert!((0..=i64::from(i32::MAX)).contains(&v));
                    let i = m.tun.iter().position(|t| t.0 == name).unwrap();
                    m.tun[i].1 = v;
                    if name == "antic_expire" {
                        m.max_antic = m.max_antic.max(v as u64 * MS);
                    }
                }
            }
            FuzzOp::Abuse(t, kind) => {
                // Calls that break the protocol change nothing the model
                // sees: a tag out of range, a completion or requeue of a
                // request not out.
                let t = usize::from(t);
                let out_of_range = t >= cap;
                let not_out = !out_of_range && !matches!(m.st[t], St::InFlight | St::Requeued);
                match kind % 3 {
                    0 if out_of_range || not_out => a.completed(t, m.now),
                    1 if out_of_range || not_out => a.requeued(t, m.now),
                    2 if out_of_range => a.front_merged(t, 0, 8),
                    _ => {}
                }
            }
        }
        check(&a, &m);
    }
    // Drain.
    for _ in 0..10 * cap + 10 {
        for t in 0..cap {
            match m.st[t] {
                St::InFlight => m.complete(&mut a, t),
                St::Requeued => m.reinsert(&mut a, t, t % 2 == 1),
                _ => {}
            }
        }
        match m.dispatch(&mut a) {
            Dispatch::IdleUntil(until) => m.now = until,
            Dispatch::Empty if !a.has_work() => break,
            _ => {}
        }
        check(&a, &m);
    }
    assert!(!a.has_work(), "not drained");
    assert_eq!(m.gone, m.fresh, "each request completed or merged once");
});
