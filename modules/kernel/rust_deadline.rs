// SPDX-License-Identifier: GPL-2.0

//! `rust-deadline`: mq-deadline in Rust.
//!
//! The scheduling decisions are the policy crate's [`Deadline`] (the very
//! source file the host tests exercise, included below), run by the
//! module core every ironlift scheduler shares (`sched`, and
//! `sched_deadline` for what is mq-deadline's) in the generic elevator
//! glue ([`glue::PolicyElevator`]).
//!
//! Time is [`elevator::jiffies_ns`]: mq-deadline's `jiffies`, in
//! nanoseconds, and no clocksource read per request.
//!
//! Completions take no lock, as in mq-deadline (`dd_finish_request()` is
//! one atomic increment): `finish_request` records the request's index in
//! a `CompletionLog`, and insertion and dispatch, under the lock, hand the
//! recorded completions to the policy before anything else. The block
//! layer frees a scheduler tag only after `finish_request` returned, so the
//! policy learns of a completion before the index can be inserted again.
//!
//! As mq-deadline, it has no `requeue_request` hook: a requeued request is
//! simply inserted again, which the policy takes as a requeue (its index
//! is still in flight). So the lock is never taken in interrupt context
//! and is a plain spinlock ([`ProcessContext`]).

use kernel::block::mq::elevator::{self, ProcessContext, Queue};
use kernel::prelude::*;
use kernel::{c_str, str::CStr};

// The policy crate's sources, included at the crate root as in every
// ironlift module, so that their `super::` paths name each other.
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/completions.rs"]
mod completions;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/deadline/mod.rs"]
mod deadline;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/intrusive.rs"]
mod intrusive;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/sched.rs"]
mod sched;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/sched_deadline.rs"]
mod sched_deadline;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
// The elevator glue, shared with the other scheduler modules.
#[allow(dead_code)]
mod glue;

use deadline::{Deadline, Slot};
use glue::{Scheduler, SchedulerModule, Storage};

// module!'s `author` is `authors: [..]` after 6.12 (modules/kernel/Kbuild
// sets the cfg).
#[cfg(not(ironlift_module_authors))]
module! {
    type: RustDeadlineModule,
    name: "rust_deadline",
    author: "ironlift developers",
    description: "mq-deadline I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-deadline-iosched"],
}
#[cfg(ironlift_module_authors)]
module! {
    type: RustDeadlineModule,
    name: "rust_deadline",
    authors: ["ironlift developers"],
    description: "mq-deadline I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-deadline-iosched"],
}

type RustDeadlineModule = SchedulerModule<RustDeadline>;

/// mq-deadline, on the glue.
struct RustDeadline;

impl Scheduler for RustDeadline {
    type Policy = Deadline<Storage<Slot>>;
    type LockContext = ProcessContext;
    type Issuers = ();

    const NAME: &'static CStr = c_str!("rust-deadline");

    #[inline]
    fn now() -> u64 {
        elevator::jiffies_ns()
    }

    fn init(queue: &Queue, capacity: usize) -> Result<(Self::Policy, ())> {
        let mut policy =
            Deadline::new(Storage::new(capacity, Slot::default)?).map_err(|_| EINVAL)?;
        policy.depth_updated(queue.nr_requests());
        Ok((policy, ()))
    }
}
