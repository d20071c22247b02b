// SPDX-License-Identifier: GPL-2.0

//! `rust-sio`: the Simple I/O scheduler of Android kernels on blk-mq, in
//! Rust. Selected as `rust-sio` or by its old name, `sio`.
//!
//! The scheduling decisions are the policy crate's [`Sio`] (the very
//! source file the host tests exercise, included below; its documentation
//! names the C source and what the port changes): four FIFOs by sync flag
//! and direction, deadlines, write starvation, no sorting. It runs on the
//! module core every ironlift scheduler shares (`sched`, and `sched_sio`)
//! in the generic elevator glue ([`glue::PolicyElevator`]), with a plain
//! spinlock ([`ProcessContext`]) and lock-free completions, as
//! `rust-deadline`. Time is [`elevator::jiffies_ns`], C's `jiffies` in
//! nanoseconds. The sysfs tunables are C's, with C's names, units (ms for
//! the expires) and defaults; a bad write fails with `EINVAL` and keeps
//! the value.
//!
//! What blk-mq changes from the single-queue C (`block/sio-iosched.c`):
//!
//! - **No dispatch list.** C moved the chosen request to the queue's
//!   dispatch list (`elv_dispatch_add_tail()`), which the driver drained;
//!   blk-mq asks the scheduler for one request at a time
//!   (`dispatch_request`). Each answer is one C dispatch, so the batch and
//!   starvation counts move as in C. C's `force` (dispatch everything
//!   now) has no counterpart: blk-mq drains a scheduler by asking until
//!   it answers nothing.
//! - **Requeues go through the scheduler.** The single-queue block layer
//!   put a requeued request back on the front of its dispatch list, past
//!   the elevator; blk-mq inserts it at head through the scheduler, which
//!   serves such requests first without counting them.
//! - **Merging** is the block layer's (`blk_mq_sched_try_merge()` and
//!   `blk_mq_sched_try_insert_merge()`, through the abstraction): back
//!   merges through the request hash, front merges only through the
//!   queue's last-merge hint, as C SIO offered no candidates of its own.
//!   When two queued requests merge, the survivor takes the earlier
//!   deadline and FIFO place, as in C. The abstraction has no
//!   `former_request`/`next_request` hooks, so a request grown by a bio is
//!   not then merged with its FIFO neighbour, which C allowed.
//! - **Tags and hardware queues.** A request holds a scheduler tag while
//!   queued: at most `nr_requests` per hardware queue wait, as the
//!   single-queue `nr_requests` limited C. The scheduler is single-queue
//!   (`QUEUE_FLAG_SQ_SCHED`): one set of FIFOs serves every hardware
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
#[path = "../policy/src/sched_sio.rs"]
mod sched_sio;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/sio/mod.rs"]
mod sio;
#[allow(dead_code, unreachable_pub, missing_docs)]
#[path = "../policy/src/types.rs"]
mod types;
// The elevator glue, shared with the other scheduler modules.
#[allow(dead_code)]
mod glue;

use glue::{Scheduler, SchedulerModule, Storage};
use sio::{Sio, Slot};

// module!'s `author` is `authors: [..]` after 6.12 (modules/kernel/Kbuild
// sets the cfg).
#[cfg(not(ironlift_module_authors))]
module! {
    type: RustSioModule,
    name: "rust_sio",
    author: "ironlift developers",
    description: "SIO (Simple I/O) scheduler in Rust",
    license: "GPL",
    alias: ["rust-sio-iosched", "sio-iosched"],
}
#[cfg(ironlift_module_authors)]
module! {
    type: RustSioModule,
    name: "rust_sio",
    authors: ["ironlift developers"],
    description: "SIO (Simple I/O) scheduler in Rust",
    license: "GPL",
    alias: ["rust-sio-iosched", "sio-iosched"],
}

type RustSioModule = SchedulerModule<RustSio>;

/// SIO, on the glue.
struct RustSio;

impl Scheduler for RustSio {
    type Policy = Sio<Storage<Slot>>;
    type LockContext = ProcessContext;
    type Issuers = ();

    const NAME: &'static CStr = c_str!("rust-sio");
    const ALIAS: Option<&'static CStr> = Some(c_str!("sio"));

    #[inline]
    fn now() -> u64 {
        elevator::jiffies_ns()
    }

    fn init(_queue: &Queue, capacity: usize) -> Result<(Self::Policy, ())> {
        let policy = Sio::new(Storage::new(capacity, Slot::default)?).map_err(|_| EINVAL)?;
        Ok((policy, ()))
    }
}
