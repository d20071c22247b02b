// SPDX-License-Identifier: GPL-2.0

//! Runs the policy crate's self-checks inside the kernel.
//!
//! The scheduling policies in `modules/policy` are compiled into every
//! ironlift module by including their source files. This module includes
//! them the same way and checks, at load time, that they behave in the
//! kernel as they do on the host. It prints KTAP to the kernel log and
//! refuses to load if a check fails, so `insmod` itself is the verdict.

use kernel::prelude::*;

/// The policy crate's sources, included as the elevator modules include them.
#[allow(dead_code, unreachable_pub, missing_docs)]
mod policy {
    #[path = "../../policy/src/types.rs"]
    pub(crate) mod types;
}

use policy::types::{parse_sysfs_in_range, parse_sysfs_int, IoPrio, PrioClass, TunableError};

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

const CHECKS: &[Check] = &[
    Check {
        name: "sysfs_parsing",
        run: sysfs_parsing,
    },
    Check {
        name: "ioprio_decoding",
        run: ioprio_decoding,
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
