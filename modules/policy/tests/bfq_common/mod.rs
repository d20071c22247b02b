// SPDX-License-Identifier: GPL-2.0

//! What the BFQ rule tests share: a scheduler of a given size, request
//! descriptions, and reading a dispatch.

#![allow(dead_code)]

pub use ironlift_policy::bfq::{Bfq, IssuerSlot, ReqSlot};
pub use ironlift_policy::{
    Dispatch, IoPrio, Nanos, Op, Policy, PrioClass, RequestDesc, NSEC_PER_MSEC,
};

pub type B = Bfq<Vec<ReqSlot>, Vec<IssuerSlot>>;

pub const MS: Nanos = NSEC_PER_MSEC;

pub fn bfq(n: usize, m: usize) -> B {
    Bfq::new(vec![ReqSlot::default(); n], vec![IssuerSlot::default(); m]).unwrap()
}

/// A scheduler with weight raising off, so that timing rules are plain.
pub fn plain(n: usize, m: usize) -> B {
    let mut b = bfq(n, m);
    b.set_tunable("low_latency", "0").unwrap();
    b
}

/// `plain` on a non-rotational device.
pub fn nonrot(n: usize, m: usize) -> B {
    let mut b = plain(n, m);
    b.set_nonrotational(true);
    b
}

/// `d` at best-effort priority `level`.
pub fn at_level(level: u8, d: RequestDesc) -> RequestDesc {
    RequestDesc {
        prio: prio(PrioClass::BestEffort, level),
        ..d
    }
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

pub fn tag_of(d: Dispatch) -> usize {
    match d {
        Dispatch::Request(t) => t,
        other => panic!("expected a request, got {other:?}"),
    }
}
