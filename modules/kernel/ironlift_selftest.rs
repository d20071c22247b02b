// SPDX-License-Identifier: GPL-2.0

//! Runs the policy crate's self-checks inside the kernel.
//!
//! The scheduling policies in `modules/policy` are compiled into every
//! ironlift module by including their source files. This module includes
//! them the same way and checks, at load time, that they behave in the
//! kernel as they do on the host. It prints KTAP to the kernel log and
//! refuses to load if a check fails, so `insmod` itself is the verdict.

use kernel::prelude::*;

// The policy crate's sources, included as the elevator modules include
// them: at the crate root, so that their `super::` paths name each other.
// The selftest has no sysfs tunables: the policy's re-exported names go
// unused here.
#[allow(dead_code, unused_imports, unreachable_pub, missing_docs)]
#[path = "../policy/src/deadline/mod.rs"]
mod deadline;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/intrusive.rs"]
mod intrusive;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;

use deadline::{Deadline, Slot};
use kernel::alloc::{flags::GFP_KERNEL, KVec};
use types::{
    parse_sysfs_in_range, parse_sysfs_int, Dispatch, IoPrio, Op, Policy, PrioClass, RequestDesc,
    TunableError,
};

module! {
    type: IronliftSelftest,
    name: "ironlift_selftest",
    author: "ironlift developers",
    description: "In-kernel self-test of ironlift's scheduling policies",
    license: "GPL",
}

struct IronliftSelftest;

/// One named check.
struct Check {
    name: &'static str,
    run: fn() -> bool,
}

fn sysfs_parsing() -> bool {
    parse_sysfs_int("500\n") == Ok(500)
        && parse_sysfs_int("0x10") == Ok(16)
        && parse_sysfs_int("010") == Ok(8)
        && parse_sysfs_int("-3") == Ok(-3)
        && parse_sysfs_int("12abc") == Err(TunableError::Invalid)
        && parse_sysfs_int("") == Err(TunableError::Invalid)
        && parse_sysfs_int("99999999999999999999") == Err(TunableError::OutOfRange)
        && parse_sysfs_in_range("17", 1, 16) == Err(TunableError::OutOfRange)
}

fn ioprio_decoding() -> bool {
    // IOPRIO_PRIO_VALUE(IOPRIO_CLASS_RT, 3) and class none.
    let rt = IoPrio::from_kernel((1 << 13) | 3);
    let none = IoPrio::from_kernel(0);
    rt.class == PrioClass::RealTime && rt.level == 3 && none == IoPrio::DEFAULT
}

fn deadline_scenario() -> bool {
    let Ok(mut v) = KVec::from_elem(Slot::default(), 64, GFP_KERNEL) else {
        return false;
    };
    // A borrowed slice is storage enough for a policy that lives here.
    let Ok(mut dd) = Deadline::new(&mut v[..]) else {
        return false;
    };
    let req = |sector, op| RequestDesc {
        sector,
        sectors: 8,
        op,
        sync: op == Op::Read,
        ..RequestDesc::default()
    };
    // Two writes and three reads, out of sector order.
    dd.insert(0, &req(1000, Op::Write), false, 0);
    dd.insert(1, &req(300, Op::Read), false, 1);
    dd.insert(2, &req(100, Op::Read), false, 2);
    dd.insert(3, &req(200, Op::Read), false, 3);
    dd.insert(4, &req(50, Op::Write), false, 4);
    // As in C, dispatch starts as if a write batch were running
    // (`last_dir = DD_WRITE`): the writes go first, in sector order, then
    // the reads, in sector order.
    let mut order = [usize::MAX; 5];
    for slot in order.iter_mut() {
        match dd.dispatch(10) {
            Dispatch::Request(t) => *slot = t,
            _ => return false,
        }
    }
    let ok_order = order == [4, 0, 2, 3, 1];
    // A bad tunable write keeps the value; a good one takes.
    let tunables = dd.set_tunable("read_expire", "-1") == Err(TunableError::OutOfRange)
        && dd.set_tunable("read_expire", "abc\n") == Err(TunableError::Invalid)
        && dd.tunable("read_expire") == Ok(500)
        && dd.set_tunable("read_expire", "250\n").is_ok()
        && dd.tunable("read_expire") == Ok(250);
    ok_order && !dd.has_work() && dd.dispatch(20) == Dispatch::Empty && tunables
}

const CHECKS: &[Check] = &[
    Check {
        name: "sysfs_parsing",
        run: sysfs_parsing,
    },
    Check {
        name: "ioprio_decoding",
        run: ioprio_decoding,
    },
    Check {
        name: "deadline_scenario",
        run: deadline_scenario,
    },
];

impl kernel::Module for IronliftSelftest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        pr_info!("KTAP version 1\n");
        pr_info!("1..{}\n", CHECKS.len());
        let mut failed = 0;
        for (i, c) in CHECKS.iter().enumerate() {
            if (c.run)() {
                pr_info!("ok {} {}\n", i + 1, c.name);
            } else {
                failed += 1;
                pr_info!("not ok {} {}\n", i + 1, c.name);
            }
        }
        if failed > 0 {
            pr_err!("{} of {} policy self-checks failed\n", failed, CHECKS.len());
            return Err(EINVAL);
        }
        Ok(IronliftSelftest)
    }
}
