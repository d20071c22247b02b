// SPDX-License-Identifier: GPL-2.0

//! `rust-cfq`: CFQ, the Completely Fair Queueing I/O scheduler of Linux
//! up to 4.20, in Rust on blk-mq. It can also be selected as `cfq`.
//!
//! The scheduling decisions are the policy crate's [`Cfq`] (the very source
//! file the host tests, property tests and fuzzers exercise, included
//! below), run by the module core every ironlift scheduler shares (`sched`,
//! and `sched_cfq` for what is CFQ's) in the generic elevator glue
//! ([`glue::PolicyElevator`]). The policy's documentation says what is
//! ported and where blk-mq makes it differ from the single-queue original.
//!
//! - Issuers are process I/O contexts, as for rust-bfq: the scheduler asks
//!   for one [`IoCq`] per (context, queue) and keeps the context's issuer
//!   in its word ([`ContextIssuers`]); the last issuer slot is shared by
//!   requests without a context, contexts that found no free slot, and
//!   contexts that already exited. An issuer's slot holds its sync queue
//!   and what C kept in its `cfq_io_cq` (think time, exit); `exit_icq`
//!   calls [`Cfq::issuer_exit`], and the slot is free again once the
//!   context's requests are done. Async requests go to the 17 async queues
//!   by priority, as in C.
//! - I/O priorities are the requests' (`rq->ioprio`, which blk-mq sets
//!   from the issuing task's I/O priority, or from its nice level when it
//!   set none, as CFQ's `cfq_init_prio_data` did).
//! - Idling: the end of the idle slice arms the abstraction's rerun
//!   hrtimer (CFQ's `idle_slice_timer`), from a dispatch or from the
//!   completion that starts the slice while other requests wait; the
//!   arrival of the request the device idles for cancels it. A completion
//!   after a dispatch that held requests back runs the queue (CFQ's
//!   drivers ran it after every completion).
//! - Completions take the lock only while the policy holds queued
//!   requests (the core's `TimedLog`), as rust-bfq's do.
//! - The clock is `blk_time_get_ns()`, `ktime_get_ns()` as CFQ read it,
//!   cached by the plug in task context.
//! - The sysfs tunables are CFQ's 17, under its names and units, with the
//!   `_us` forms; a write that is not a number in range fails with
//!   `EINVAL` and keeps the value. On a non-rotational device
//!   `slice_idle` starts at 0, as `cfq_registered_queue` set it.
//! - No `limit_depth`: CFQ had none.

use kernel::block::mq::elevator::{self, IoCq, IrqSafe, Queue, RequestRef};
use kernel::prelude::*;
use kernel::{c_str, str::CStr};

// The policy crate's sources, included at the crate root as in every
// ironlift module, so that their `super::` paths name each other.
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/cfq/mod.rs"]
mod cfq;
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
#[path = "../policy/src/sched_cfq.rs"]
mod sched_cfq;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
// The elevator glue, shared with the other scheduler modules.
#[allow(dead_code)]
mod glue;

use cfq::{Cfq, QueueSlot, ReqSlot};
use glue::{Scheduler, SchedulerModule, Storage};
use sched::ContextIssuers;
use types::IssuerId;

// module!'s `author` is `authors: [..]` after 6.12 (modules/kernel/Kbuild
// sets the cfg).
#[cfg(not(ironlift_module_authors))]
module! {
    type: RustCfqModule,
    name: "rust_cfq",
    author: "ironlift developers",
    description: "CFQ (Completely Fair Queueing) I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-cfq-iosched", "cfq-iosched"],
}
#[cfg(ironlift_module_authors)]
module! {
    type: RustCfqModule,
    name: "rust_cfq",
    authors: ["ironlift developers"],
    description: "CFQ (Completely Fair Queueing) I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-cfq-iosched", "cfq-iosched"],
}

type RustCfqModule = SchedulerModule<RustCfq>;

/// Issuer slots: one per process I/O context with I/O in flight or queued
/// (slots are reused once a context exited and its requests are done),
/// the last one shared.
const ISSUERS: usize = 512;

/// CFQ, on the glue.
struct RustCfq;

impl Scheduler for RustCfq {
    type Policy = Cfq<Storage<ReqSlot>, Storage<QueueSlot>>;
    type LockContext = IrqSafe;
    type Issuers = ContextIssuers;

    const NAME: &'static CStr = c_str!("rust-cfq");
    const ALIAS: Option<&'static CStr> = Some(c_str!("cfq"));
    const IO_CONTEXTS: bool = true;

    #[inline]
    fn now() -> u64 {
        elevator::blk_time_get_ns()
    }

    fn init(queue: &Queue, capacity: usize) -> Result<(Self::Policy, ContextIssuers)> {
        let requests = Storage::new(capacity, ReqSlot::default)?;
        let queues = Storage::new(Self::Policy::queue_slots(ISSUERS), QueueSlot::default)?;
        let mut policy = Cfq::new(requests, queues).map_err(|_| EINVAL)?;
        policy.set_nonrotational(!queue.is_rotational());
        Ok((policy, ContextIssuers::new(ISSUERS)))
    }

    #[inline]
    fn issuer(
        issuers: &mut ContextIssuers,
        policy: &Self::Policy,
        rq: &RequestRef,
        at_head: bool,
    ) -> IssuerId {
        let Some(icq) = rq.io_cq() else {
            return issuers.shared();
        };
        let mut word = icq.private();
        let was = word;
        let issuer = issuers.issuer(policy, &mut word, at_head);
        if word != was {
            icq.set_private(word);
        }
        issuer
    }

    fn exit_context(issuers: &ContextIssuers, icq: &IoCq) -> Option<IssuerId> {
        let mut word = icq.private();
        let issuer = issuers.exit(&mut word);
        icq.set_private(word);
        issuer
    }

    #[inline]
    fn context_issuer(issuers: &ContextIssuers, word: usize) -> Option<IssuerId> {
        issuers.own(word)
    }
}
