// SPDX-License-Identifier: GPL-2.0

//! What the AS rule tests share: a scheduler of a given size, request
//! descriptions, and dispatching and completing requests.

#![allow(dead_code, unused_imports)]

pub use ironlift_policy::anticipatory::{
    AfterCompletion, AnticStatus, Anticipatory, ContextSlot, Slot, MAXBACK, MAX_THINKTIME,
};
pub use ironlift_policy::sched::{ContextIssuers, SchedPolicy};
pub use ironlift_policy::{
    Dispatch, IssuerId, MergeProbe, Nanos, Op, Policy, RequestDesc, Sector, TunableError,
    NSEC_PER_MSEC,
};

pub const MS: Nanos = NSEC_PER_MSEC;
/// Issuer slots in the tests; the last is shared.
pub const ISSUERS: usize = 16;
pub const SHARED: IssuerId = ISSUERS - 1;

pub type As = Anticipatory<Vec<Slot>, Vec<ContextSlot>>;

pub fn sched(capacity: usize) -> As {
    Anticipatory::new(
        vec![Slot::default(); capacity],
        vec![ContextSlot::default(); ISSUERS],
    )
    .unwrap()
}

pub fn read(issuer: IssuerId, sector: Sector) -> RequestDesc {
    RequestDesc {
        sector,
        sectors: 8,
        op: Op::Read,
        sync: true,
        issuer,
        ..RequestDesc::default()
    }
}

pub fn write(issuer: IssuerId, sector: Sector) -> RequestDesc {
    RequestDesc {
        op: Op::Write,
        sync: false,
        ..read(issuer, sector)
    }
}

pub fn tag(d: Dispatch) -> usize {
    match d {
        Dispatch::Request(t) => t,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// Dispatches one request at `now` and completes it then.
pub fn take(a: &mut As, now: Nanos) -> usize {
    let t = tag(a.dispatch(now));
    a.completed(t, now);
    t
}

/// Dispatches and completes `n` requests at `now`.
pub fn take_n(a: &mut As, n: usize, now: Nanos) -> Vec<usize> {
    (0..n).map(|_| take(a, now)).collect()
}

pub fn set(a: &mut As, name: &str, value: &str) {
    a.set_tunable(name, value).unwrap();
}

pub fn check(a: &As) {
    a.check_invariants().unwrap();
}

/// Issuer 0's read at sector 0 and issuer 1's at `sector`, inserted at 0;
/// issuer 0's dispatched.
pub fn two_readers(sector: Sector) -> (As, usize) {
    let mut a = sched(16);
    a.insert(0, &read(0, 0), false, 0);
    a.insert(1, &read(1, sector), false, 0);
    let t = tag(a.dispatch(0));
    assert_eq!(t, 0);
    (a, t)
}

/// Issuer 0 makes `n` sequential reads, each `think` after the previous
/// completed (1 ms each); returns the time after the last.
pub fn history(a: &mut As, issuer: IssuerId, n: u64, think: Nanos, mut now: Nanos) -> Nanos {
    for k in 0..n {
        let t = 8 + issuer;
        a.insert(
            t,
            &read(issuer, ((issuer as Sector) << 30) | (k * 8)),
            false,
            now,
        );
        let d = tag(a.dispatch(now));
        assert_eq!(d, t);
        a.completed(t, now + MS);
        now += MS + think;
    }
    now
}
