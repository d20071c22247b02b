// SPDX-License-Identifier: GPL-2.0

//! `rust-bfq`: a BFQ-like proportional-share I/O scheduler in Rust.
//!
//! The scheduling decisions are the policy crate's [`Bfq`] (the very source
//! file the host tests, property tests and fuzzers exercise, included
//! below), run by the module core every ironlift scheduler shares (`sched`,
//! and `sched_bfq` for what is BFQ's) in the generic elevator glue
//! ([`glue::PolicyElevator`]).
//!
//! - Issuers are process I/O contexts: the scheduler asks for one [`IoCq`]
//!   per (context, queue) and keeps the context's issuer in its word
//!   ([`ContextIssuers`]): the first request a context inserts takes a free
//!   issuer slot; the last slot is shared by requests without a context,
//!   contexts that found no free slot, and contexts that already exited.
//!   `exit_icq` calls [`Bfq::issuer_exit`]; the policy frees the slot once
//!   the context's requests are done.
//! - Weights come from the requests' I/O priority (`ionice`), mapped as
//!   `bfq_ioprio_to_weight()` does: `(8 - level) * 10`.
//! - Idling: the end of the idle slice arms the abstraction's rerun
//!   hrtimer (BFQ's `idle_slice_timer`), from a dispatch or from the
//!   completion that starts the slice while other requests wait; the
//!   arrival of the request the device idles for cancels it; a request
//!   arriving earlier runs the queue anyway (the block layer does after
//!   every insertion), and an early or late run just asks the policy again.
//!   A completion that leaves nothing in flight after a dispatch held
//!   requests back schedules a run ([`Bfq::after_completion`]). C BFQ does
//!   either whenever requests could wait; here only when they do, so that
//!   on a fast device a completion neither arms a timer nor wakes a worker.
//! - Completions take the lock only while the policy holds queued requests
//!   (the core's `TimedLog`): otherwise nothing can follow from them until
//!   the next request arrives, and the insertion that brings it hands them
//!   to the policy first, with the times they happened. On a fast device
//!   this saves one of the three lock acquisitions per request (C BFQ takes
//!   `bfqd->lock` in every completion).
//! - `limit_depth`: the policy's async/sync-write depth fractions, applied
//!   to the current `nr_requests`; while a weight-raised queue is active,
//!   depth 1 for a process whose queue holds its share of the tags
//!   ([`Bfq::tag_depth`], as `bfqq_request_over_limit()`), found through
//!   its I/O context under the lock.
//!
//! Differences from C BFQ beyond the policy's own (see its module docs):
//! no cgroups; front merges look at every queue, not only the submitter's;
//! async requests use their context's queue, not shared per-priority
//! async queues.

use kernel::block::mq::elevator::{self, IoCq, IrqSafe, Queue, RequestRef};
use kernel::prelude::*;
use kernel::{c_str, str::CStr};

// The policy crate's sources, included at the crate root as in every
// ironlift module, so that their `super::` paths name each other.
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/bfq/mod.rs"]
mod bfq;
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
#[path = "../policy/src/sched_bfq.rs"]
mod sched_bfq;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
// The elevator glue, shared with the other scheduler modules.
#[allow(dead_code)]
mod glue;

use bfq::{Bfq, IssuerSlot, ReqSlot};
use glue::{Scheduler, SchedulerModule, Storage};
use sched_bfq::ContextIssuers;
use types::IssuerId;

// module!'s `author` is `authors: [..]` after 6.12 (modules/kernel/Kbuild
// sets the cfg).
#[cfg(not(ironlift_module_authors))]
module! {
    type: RustBfqModule,
    name: "rust_bfq",
    author: "ironlift developers",
    description: "BFQ-like proportional-share I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-bfq-iosched"],
}
#[cfg(ironlift_module_authors)]
module! {
    type: RustBfqModule,
    name: "rust_bfq",
    authors: ["ironlift developers"],
    description: "BFQ-like proportional-share I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-bfq-iosched"],
}

type RustBfqModule = SchedulerModule<RustBfq>;

/// Issuer slots: one per process I/O context with I/O in flight or queued
/// (slots are reused once a context exited and its requests are done),
/// the last one shared.
const ISSUERS: usize = 512;

/// BFQ, on the glue.
struct RustBfq;

impl Scheduler for RustBfq {
    type Policy = Bfq<Storage<ReqSlot>, Storage<IssuerSlot>>;
    type LockContext = IrqSafe;
    type Issuers = ContextIssuers;

    const NAME: &'static CStr = c_str!("rust-bfq");
    const IO_CONTEXTS: bool = true;

    #[inline]
    fn now() -> u64 {
        elevator::blk_time_get_ns()
    }

    fn init(queue: &Queue, capacity: usize) -> Result<(Self::Policy, ContextIssuers)> {
        let requests = Storage::new(capacity, ReqSlot::default)?;
        let issuers = Storage::new(ISSUERS, IssuerSlot::default)?;
        let mut policy = Bfq::new(requests, issuers).map_err(|_| EINVAL)?;
        policy.set_nonrotational(!queue.is_rotational());
        // One hardware queue's depth, not the sum over them: null_blk's
        // poll queue, for one, takes no normal I/O.
        policy.set_device_depth(queue.hw_queue_depth());
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

    #[inline]
    fn context_issuer(issuers: &ContextIssuers, word: usize) -> Option<IssuerId> {
        issuers.own(word)
    }
}
