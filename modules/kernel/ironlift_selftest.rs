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
#[path = "../policy/src/anticipatory/mod.rs"]
mod anticipatory;
#[allow(dead_code, unused_imports, unreachable_pub, missing_docs)]
#[path = "../policy/src/deadline/mod.rs"]
mod deadline;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/intrusive.rs"]
mod intrusive;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;

use anticipatory::{AnticStatus, Anticipatory, ContextSlot};
use deadline::{Deadline, Slot};
use kernel::alloc::{flags::GFP_KERNEL, KVec};
use types::{
    parse_sysfs_in_range, parse_sysfs_int, Dispatch, IoPrio, Op, Policy, PrioClass, RequestDesc,
    TunableError,
};

// module!'s `author` is `authors: [..]` after 6.12 (modules/kernel/Kbuild
// sets the cfg).
#[cfg(not(ironlift_module_authors))]
module! {
    type: IronliftSelftest,
    name: "ironlift_selftest",
    author: "ironlift developers",
    description: "In-kernel self-test of ironlift's scheduling policies",
    license: "GPL",
}
#[cfg(ironlift_module_authors)]
module! {
    type: IronliftSelftest,
    name: "ironlift_selftest",
    authors: ["ironlift developers"],
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

fn anticipatory_scenario() -> bool {
    let Ok(mut v) = KVec::from_elem(anticipatory::Slot::default(), 8, GFP_KERNEL) else {
        return false;
    };
    let Ok(mut c) = KVec::from_elem(ContextSlot::default(), 4, GFP_KERNEL) else {
        return false;
    };
    let Ok(mut a) = Anticipatory::new(&mut v[..], &mut c[..]) else {
        return false;
    };
    let ms = 1_000_000;
    let read = |issuer, sector| RequestDesc {
        sector,
        sectors: 8,
        issuer,
        ..RequestDesc::default()
    };
    // Process 0 reads at 0, process 1 far away. After process 0's read
    // went out, AS waits for its next one: until the read completes, then
    // for 6 ms (antic_expire).
    a.insert(0, &read(0, 0), false, 0);
    a.insert(1, &read(1, 10_000_000), false, 0);
    let first = a.dispatch(0) == Dispatch::Request(0);
    let waits = a.dispatch(0) == Dispatch::Empty && a.status() == AnticStatus::WaitRequest;
    a.completed(0, ms);
    let timed = a.dispatch(2 * ms) == Dispatch::IdleUntil(7 * ms);
    // Its next read, close by, ends the wait and goes first.
    a.insert(2, &read(0, 8), false, 3 * ms);
    let next = a.dispatch(3 * ms) == Dispatch::Request(2);
    a.completed(2, 3 * ms);
    // Then the wait for it times out, and process 1's read goes.
    let timeout = a.dispatch(9 * ms) == Dispatch::Request(1);
    a.completed(1, 10 * ms);
    let tunables = a.set_tunable("antic_expire", "-1") == Err(TunableError::OutOfRange)
        && a.set_tunable("est_time", "1") == Err(TunableError::ReadOnly)
        && a.tunable("antic_expire") == Ok(6)
        && a.set_tunable("antic_expire", "8\n").is_ok()
        && a.tunable("antic_expire") == Ok(8);
    first && waits && timed && next && timeout && tunables && !a.has_work()
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
    Check {
        name: "anticipatory_scenario",
        run: anticipatory_scenario,
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
