// SPDX-License-Identifier: GPL-2.0

//! `rust-noop`: the single-queue noop elevator (Linux 2.6 to 4.20) on
//! blk-mq, in Rust. Selected as `rust-noop` or by its old name, `noop`.
//!
//! The scheduling decisions are the policy crate's [`Noop`] (the very
//! source file the host tests exercise, included below): one FIFO, with
//! the block layer's merging. It runs on the module core every ironlift
//! scheduler shares (`sched`, and `sched_noop`) in the generic elevator
//! glue ([`glue::PolicyElevator`]), with a plain spinlock
//! ([`ProcessContext`]) and lock-free completions, as `rust-deadline`.
//!
//! What blk-mq changes from the single-queue C (`block/noop-iosched.c`):
//!
//! - **No dispatch list to sort into.** C handed each request to
//!   `elv_dispatch_sort()`, which placed it on the queue's dispatch list
//!   in sector order behind the requests already there; the driver then
//!   pulled from that list. blk-mq asks the scheduler for one request at
//!   a time (`dispatch_request`) and sends it, so requests leave in FIFO
//!   order.
//! - **Requeues go through the scheduler.** The single-queue block layer
//!   put a requeued request back on the front of its dispatch list, past
//!   the elevator; blk-mq inserts it at head through the scheduler, which
//!   serves such requests first.
//! - **Merging** is the block layer's (`blk_mq_sched_try_merge()` and
//!   `blk_mq_sched_try_insert_merge()`, through the abstraction): back
//!   merges through the request hash, front merges only through the
//!   queue's last-merge hint, as C noop offered no candidates of its own.
//!   The abstraction has no `former_request`/`next_request` hooks, so a
//!   request grown by a bio is not then merged with its FIFO neighbour
//!   (C's `elevator_former_req_fn`/`elevator_latter_req_fn` allowed it).
//! - **Tags and hardware queues.** A request holds a scheduler tag while
//!   queued; the FIFO holds at most `nr_requests` per hardware queue. The
//!   scheduler is single-queue (`QUEUE_FLAG_SQ_SCHED`): one FIFO serves
//!   every hardware queue, as C's one FIFO served the one request queue.

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
#[path = "../policy/src/noop.rs"]
mod noop;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/sched.rs"]
mod sched;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/sched_noop.rs"]
mod sched_noop;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
// The elevator glue, shared with the other scheduler modules.
#[allow(dead_code)]
mod glue;

use glue::{Scheduler, SchedulerModule, Storage};
use noop::{Noop, Slot};

// module!'s `author` is `authors: [..]` after 6.12 (modules/kernel/Kbuild
// sets the cfg).
#[cfg(not(ironlift_module_authors))]
module! {
    type: RustNoopModule,
    name: "rust_noop",
    author: "ironlift developers",
    description: "noop I/O scheduler (one FIFO) in Rust",
    license: "GPL",
    alias: ["rust-noop-iosched", "noop-iosched"],
}
#[cfg(ironlift_module_authors)]
module! {
    type: RustNoopModule,
    name: "rust_noop",
    authors: ["ironlift developers"],
    description: "noop I/O scheduler (one FIFO) in Rust",
    license: "GPL",
    alias: ["rust-noop-iosched", "noop-iosched"],
}

type RustNoopModule = SchedulerModule<RustNoop>;

/// noop, on the glue.
struct RustNoop;

impl Scheduler for RustNoop {
    type Policy = Noop<Storage<Slot>>;
    type LockContext = ProcessContext;
    type Issuers = ();

    const NAME: &'static CStr = c_str!("rust-noop");
    const ALIAS: Option<&'static CStr> = Some(c_str!("noop"));

    /// noop reads no time; the completion log is given one anyway.
    #[inline]
    fn now() -> u64 {
        elevator::jiffies_ns()
    }

    fn init(_queue: &Queue, capacity: usize) -> Result<(Self::Policy, ())> {
        let policy = Noop::new(Storage::new(capacity, Slot::default)?).map_err(|_| EINVAL)?;
        Ok((policy, ()))
    }
}
