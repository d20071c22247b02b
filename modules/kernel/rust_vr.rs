// SPDX-License-Identifier: GPL-2.0

//! `rust-vr`: the V(R) scheduler of Android kernels on blk-mq, in Rust.
//! Selected as `rust-vr` or by its old name, `vr`.
//!
//! The scheduling decisions are the policy crate's [`Vr`] (the very
//! source file the host tests exercise, included below; its documentation
//! names the C source and what the port changes): one sector-sorted tree,
//! the nearest request to the head next with a penalty for reversing,
//! sync and async FIFOs with deadlines. It runs on the module core every
//! ironlift scheduler shares (`sched`, and `sched_vr`) in the generic
//! elevator glue ([`glue::PolicyElevator`]), with a plain spinlock
//! ([`ProcessContext`]) and lock-free completions, as `rust-deadline`.
//! Time is [`elevator::jiffies_ns`], C's `jiffies` in nanoseconds. The
//! sysfs tunables are C's, with C's names, units (ms for the expires) and
//! defaults; a bad write fails with `EINVAL` and keeps the value.
//!
//! What blk-mq changes from the single-queue C (`block/vr-iosched.c`):
//!
//! - **No dispatch list.** C moved the chosen request to the queue's
//!   dispatch list (`elv_dispatch_add_tail()`), which the driver drained;
//!   blk-mq asks the scheduler for one request at a time
//!   (`dispatch_request`). Each answer is one C dispatch, so the head and
//!   the batch count move as in C. C's `force` has no counterpart.
//! - **The head is where requests were dispatched, not where the disk
//!   is.** With several hardware queues, or a device that reorders
//!   (NCQ), requests may reach the media in another order; C on the
//!   single request queue had the same blind spot with a queueing disk.
//! - **Requeues go through the scheduler.** The single-queue block layer
//!   put a requeued request back on the front of its dispatch list, past
//!   the elevator; blk-mq inserts it at head through the scheduler, which
//!   serves such requests first without moving the head.
//! - **Merging** is the block layer's (`blk_mq_sched_try_merge()` and
//!   `blk_mq_sched_try_insert_merge()`, through the abstraction): back
//!   merges through the request hash, front merges through the policy's
//!   sort tree (`request_merge`, C's `vr_merge()`), a front-merged request
//!   moving in the tree (`request_merged`, C's `vr_merged_request()`).
//!   The abstraction has no `former_request`/`next_request` hooks, so a
//!   request grown by a bio is not then merged with its neighbour in
//!   sector order, which C allowed (`elv_rb_former_request()`,
//!   `elv_rb_latter_request()`).
//! - **Tags and hardware queues.** A request holds a scheduler tag while
//!   queued: at most `nr_requests` per hardware queue wait, as the
//!   single-queue `nr_requests` limited C. The scheduler is single-queue
//!   (`QUEUE_FLAG_SQ_SCHED`): one tree and one head serve every hardware
//!   queue. No depth limits: C had none.

use kernel::block::mq::elevator::{self, ProcessContext, Queue};
use kernel::prelude::*;
use kernel::{c_str, str::CStr};

// The policy crate's sources, included at the crate root as in every
// ironlift module, so that their `super::` paths name each other.
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
#[path = "../policy/src/sched_vr.rs"]
mod sched_vr;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/vr/mod.rs"]
mod vr;
// The elevator glue, shared with the other scheduler modules.
#[allow(dead_code)]
mod glue;

use glue::{Scheduler, SchedulerModule, Storage};
use vr::{Slot, Vr};

// module!'s `author` is `authors: [..]` after 6.12 (modules/kernel/Kbuild
// sets the cfg).
#[cfg(not(ironlift_module_authors))]
module! {
    type: RustVrModule,
    name: "rust_vr",
    author: "ironlift developers",
    description: "V(R) I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-vr-iosched", "vr-iosched"],
}
#[cfg(ironlift_module_authors)]
module! {
    type: RustVrModule,
    name: "rust_vr",
    authors: ["ironlift developers"],
    description: "V(R) I/O scheduler in Rust",
    license: "GPL",
    alias: ["rust-vr-iosched", "vr-iosched"],
}

type RustVrModule = SchedulerModule<RustVr>;

/// V(R), on the glue.
struct RustVr;

impl Scheduler for RustVr {
    type Policy = Vr<Storage<Slot>>;
    type LockContext = ProcessContext;
    type Issuers = ();

    const NAME: &'static CStr = c_str!("rust-vr");
    const ALIAS: Option<&'static CStr> = Some(c_str!("vr"));

    #[inline]
    fn now() -> u64 {
        elevator::jiffies_ns()
    }

    fn init(_queue: &Queue, capacity: usize) -> Result<(Self::Policy, ())> {
        let policy = Vr::new(Storage::new(capacity, Slot::default)?).map_err(|_| EINVAL)?;
        Ok((policy, ()))
    }
}
