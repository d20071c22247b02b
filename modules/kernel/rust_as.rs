// SPDX-License-Identifier: GPL-2.0

//! `rust-as`: the anticipatory I/O scheduler (Linux 2.6.32's
//! `as-iosched.c`) in Rust, also selectable as `anticipatory`.
//!
//! The scheduling decisions are the policy crate's [`Anticipatory`] (the
//! very source file the host tests, property tests and fuzzer exercise,
//! included below; its documentation says where blk-mq makes it differ
//! from C), run by the module core every ironlift scheduler shares
//! (`sched`, and `sched_as` for what is AS's) in the generic elevator glue
//! ([`glue::PolicyElevator`]).
//!
//! - Processes are I/O contexts, as in rust-bfq: the scheduler asks for one
//!   [`IoCq`] per (context, queue) and keeps the context's issuer in its
//!   word ([`ContextIssuers`]); the last of the [`ISSUERS`] slots is for
//!   requests without a context of their own, which AS never waits for.
//!   `exit_icq` tells the policy the process exited (C's
//!   `exit_as_io_context()`); its slot is freed once nothing refers to it.
//! - The anticipation timer (C's `antic_timer`) is the abstraction's rerun
//!   hrtimer: armed for the end of the wait from the completion that
//!   starts it or from a dispatch that waits, cancelled by the insertion
//!   that ends it. A run at or after its time does C's time-out
//!   bookkeeping and dispatches.
//! - Completions go through the core's `TimedLog`, with the time the block
//!   layer read: they take the lock only while requests wait, since only
//!   then can one start a wait or let a new batch start (C's
//!   `kblockd_schedule_work()`); otherwise the next insertion hands them
//!   over, in order and with their times, before anything else.
//! - The clock is `blk_time_get_ns()`, the rerun timer's.
//! - Tunables: C's names, units (ms) and defaults at `HZ=1000`; bad writes
//!   fail with `EINVAL` and keep the value; `est_time` is read-only (a
//!   write fails with `EINVAL`) and shows the mean think time of new
//!   processes in ms.

use kernel::block::mq::elevator::{self, IoCq, IrqSafe, Queue, RequestRef};
use kernel::prelude::*;
use kernel::{c_str, str::CStr};

// The policy crate's sources, included at the crate root as in every
// ironlift module, so that their `super::` paths name each other.
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/anticipatory/mod.rs"]
mod anticipatory;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/completions.rs"]
mod completions;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/intrusive.rs"]
mod intrusive;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/sched.rs"]
mod sched;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/sched_as.rs"]
mod sched_as;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
// The elevator glue, shared with the other scheduler modules.
#[allow(dead_code)]
mod glue;

use anticipatory::{Anticipatory, ContextSlot, Slot};
use glue::{Scheduler, SchedulerModule, Storage};
use sched::ContextIssuers;
use types::IssuerId;

// module!'s `author` is `authors: [..]` after 6.12 (modules/kernel/Kbuild
// sets the cfg).
#[cfg(not(ironlift_module_authors))]
module! {
    type: RustAsModule,
    name: "rust_as",
    author: "ironlift developers",
    description: "Anticipatory I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-as-iosched", "anticipatory-iosched"],
}
#[cfg(ironlift_module_authors)]
module! {
    type: RustAsModule,
    name: "rust_as",
    authors: ["ironlift developers"],
    description: "Anticipatory I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-as-iosched", "anticipatory-iosched"],
}

type RustAsModule = SchedulerModule<RustAs>;

/// Process slots: one per I/O context with I/O queued or in flight, or
/// anticipated on (slots are reused once a context exited and nothing
/// refers to it), the last one for requests of no process.
const ISSUERS: usize = 512;

/// AS, on the glue.
struct RustAs;

impl Scheduler for RustAs {
    type Policy = Anticipatory<Storage<Slot>, Storage<ContextSlot>>;
    type LockContext = IrqSafe;
    type Issuers = ContextIssuers;

    const NAME: &'static CStr = c_str!("rust-as");
    const ALIAS: Option<&'static CStr> = Some(c_str!("anticipatory"));
    const IO_CONTEXTS: bool = true;

    #[inline]
    fn now() -> u64 {
        elevator::blk_time_get_ns()
    }

    fn init(_queue: &Queue, capacity: usize) -> Result<(Self::Policy, ContextIssuers)> {
        let requests = Storage::new(capacity, Slot::default)?;
        let contexts = Storage::new(ISSUERS, ContextSlot::default)?;
        let policy = Anticipatory::new(requests, contexts).map_err(|_| EINVAL)?;
        Ok((policy, ContextIssuers::new(ISSUERS)))
    }

    #[inline]
    fn issuer(
        issuers: &mut ContextIssuers,
        policy: &Self::Policy,
        rq: &RequestRef,
        at_head: bool,
    ) -> IssuerId {
        glue::context_issuer(issuers, policy, rq, at_head)
    }

    fn exit_context(issuers: &ContextIssuers, icq: &IoCq) -> Option<IssuerId> {
        glue::context_exit(issuers, icq)
    }
}
