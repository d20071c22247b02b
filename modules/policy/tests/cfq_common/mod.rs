// SPDX-License-Identifier: GPL-2.0

//! What the CFQ tests share: a scheduler of a given size, request
//! descriptions, and reading a dispatch.

#![allow(dead_code)]

pub use ironlift_policy::cfq::{Cfq, QueueId, QueueSlot, ReqSlot, Workload};
pub use ironlift_policy::{
    Dispatch, IoPrio, Nanos, Op, Policy, PrioClass, RequestDesc, NSEC_PER_MSEC, NSEC_PER_USEC,
};

pub type C = Cfq<Vec<ReqSlot>, Vec<QueueSlot>>;

pub const MS: Nanos = NSEC_PER_MSEC;
pub const US: Nanos = NSEC_PER_USEC;

/// A scheduler with `n` tags and `issuers` issuers (the last shared).
pub fn cfq(n: usize, issuers: usize) -> C {
    Cfq::new(
        vec![ReqSlot::default(); n],
        vec![QueueSlot::default(); C::queue_slots(issuers)],
    )
    .unwrap()
}

/// The same with `low_latency` off, so that slices are plain.
pub fn plain(n: usize, issuers: usize) -> C {
    let mut c = cfq(n, issuers);
    c.set_tunable("low_latency", "0").unwrap();
    c
}

pub fn read(issuer: usize, sector: u64, sectors: u32) -> RequestDesc {
    RequestDesc {
        sector,
        sectors,
        op: Op::Read,
        sync: true,
        prio: IoPrio::DEFAULT,
        issuer,
        arrival: 0,
    }
}

pub fn write_async(issuer: usize, sector: u64, sectors: u32) -> RequestDesc {
    RequestDesc {
        op: Op::Write,
        sync: false,
        ..read(issuer, sector, sectors)
    }
}

pub fn prio(class: PrioClass, level: u8) -> IoPrio {
    IoPrio { class, level }
}

pub fn with_prio(d: RequestDesc, class: PrioClass, level: u8) -> RequestDesc {
    RequestDesc {
        prio: prio(class, level),
        ..d
    }
}

pub fn tag_of(d: Dispatch) -> usize {
    match d {
        Dispatch::Request(t) => t,
        other => panic!("expected a request, got {other:?}"),
    }
}

/// Dispatches one request at `now` and completes it at `done`.
pub fn serve(c: &mut C, now: Nanos, done: Nanos) -> usize {
    let t = tag_of(c.dispatch(now));
    c.completed(t, done);
    t
}
