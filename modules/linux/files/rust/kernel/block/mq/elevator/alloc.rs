// SPDX-License-Identifier: GPL-2.0

//! A request being allocated, as [`Elevator::limit_depth`] sees it.
//!
//! C header: [`block/blk-mq.h`](srctree/block/blk-mq.h) (`struct blk_mq_alloc_data`)

use super::{data::ElevatorData, icq::IoCq, lock::LockContext, Elevator};
use crate::{bindings, sync::lock::Guard};

/// A request being allocated (`struct blk_mq_alloc_data`), in the context
/// of the process that allocates it: what [`Elevator::limit_depth`] may
/// look at besides the request's flags, as BFQ's `bfq_limit_depth()` finds
/// the process's queue and takes its lock to see whether that queue holds
/// more than its share of the tags.
pub struct Allocation<'a, T: Elevator> {
    pub(super) data: &'a ElevatorData<T>,
}

impl<T: Elevator> Allocation<'_, T> {
    /// The allocating process's I/O context on the queue, if the scheduler
    /// keeps them ([`Elevator::IO_CONTEXTS`]) and the process has one
    /// there: `ioc_lookup_icq()` under `queue_lock`, as BFQ's
    /// `bfq_bic_lookup()`. It takes and releases `queue_lock`, under which
    /// the block layer takes the elevator lock ([`Elevator::exit_icq`]),
    /// so it borrows the allocation: [`Allocation::lock`]'s guard cannot be
    /// held across it.
    pub fn io_cq(&self) -> Option<&IoCq> {
        if !T::IO_CONTEXTS {
            return None;
        }
        // SAFETY: The queue is entered for the allocation, so it is live;
        // the helper takes `queue_lock` around `ioc_lookup_icq()`.
        let icq = unsafe { bindings::ioc_lookup_current_icq(self.data.queue) };
        if icq.is_null() {
            return None;
        }
        // SAFETY: The icq links the current task's I/O context to this
        // queue. It is freed only once every task sharing the context has
        // exited (not this one, which is running) or when the elevator is
        // detached from the queue, which waits for the allocation to end
        // (the queue is entered): it outlives the borrow of `self`, which
        // lasts no longer than the hook. It comes from this elevator type's
        // icq cache, the type attached to the queue.
        Some(unsafe { IoCq::from_raw(icq) })
    }

    /// Takes the elevator lock; it is released when the guard is dropped.
    /// `limit_depth` runs in process context, without the lock.
    pub fn lock(&mut self) -> Guard<'_, T::Locked, <T::LockContext as LockContext>::Backend> {
        self.data.lock.lock()
    }
}
