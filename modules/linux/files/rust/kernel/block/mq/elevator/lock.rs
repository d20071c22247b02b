// SPDX-License-Identifier: GPL-2.0

//! The elevator lock: how it is taken, and taking it on demand.
//!
//! C header: [`include/linux/spinlock.h`](srctree/include/linux/spinlock.h)

use super::{api::ClassKey, data::arm_rerun, Elevator};
use crate::{
    bindings, c_str,
    str::CStr,
    sync::lock::{
        spinlock::SpinLockBackend, spinlock_irqsave::IrqSaveSpinLockBackend, Backend, Guard, Lock,
    },
    types::Opaque,
};

mod sealed {
    pub trait Sealed {}
}

/// The contexts an elevator's lock is taken from, chosen by
/// [`Elevator::LockContext`]: [`IrqSafe`] or [`ProcessContext`].
pub trait LockContext: sealed::Sealed {
    /// How the spinlock is taken.
    type Backend: Backend<State = bindings::spinlock_t>;
    /// Whether the lock may be taken in interrupt context.
    const IRQ: bool;

    /// The lockdep name and class of the lock. One per lock context, not
    /// per elevator: a static in the generic `init_sched` would be a single
    /// class for every elevator (lockdep would then see one class taken
    /// both with and without interrupts disabled), and a name literal
    /// there would be copied into each module (lockdep warns about one
    /// key with several names).
    fn lock_class() -> (&'static CStr, ClassKey);
}

/// The elevator lock is taken with `spin_lock_irqsave()`, so that the
/// completion path may take it: [`LockOnDemand::lock`] in
/// [`Elevator::finish_request`], and [`Elevator::requeue_request`]. Needed
/// by [`Elevator::IO_CONTEXTS`] schedulers (`exit_icq` runs with
/// interrupts off). BFQ's choice.
pub struct IrqSafe;

/// The elevator lock is taken with plain `spin_lock()` and never in
/// interrupt context: [`Elevator::finish_request`] cannot take it, and a
/// scheduler with this choice may implement neither
/// [`Elevator::requeue_request`] nor [`Elevator::IO_CONTEXTS`] (a build
/// error says so). Saves disabling and restoring interrupts twice per
/// request. mq-deadline's choice.
pub struct ProcessContext;

impl sealed::Sealed for IrqSafe {}
impl sealed::Sealed for ProcessContext {}

impl LockContext for IrqSafe {
    type Backend = IrqSaveSpinLockBackend;
    const IRQ: bool = true;

    fn lock_class() -> (&'static CStr, ClassKey) {
        static NAME: &CStr = c_str!("elevator_data::lock(irqsafe)");
        (NAME, crate::static_lock_class!())
    }
}

impl LockContext for ProcessContext {
    type Backend = SpinLockBackend;
    const IRQ: bool = false;

    fn lock_class() -> (&'static CStr, ClassKey) {
        static NAME: &CStr = c_str!("elevator_data::lock");
        (NAME, crate::static_lock_class!())
    }
}

/// The lock type of an elevator's per-queue state.
pub(super) type ElevatorLock<T> =
    Lock<<T as Elevator>::Locked, <<T as Elevator>::LockContext as LockContext>::Backend>;

/// The elevator lock, for a hook that runs without it and may need it
/// ([`Elevator::finish_request`]).
pub struct LockOnDemand<'a, T: Elevator> {
    pub(super) lock: &'a ElevatorLock<T>,
    pub(super) rerun: &'a Opaque<bindings::hrtimer>,
}

impl<T: Elevator> LockOnDemand<'_, T> {
    /// Runs the hardware queues at `at_ns`, as an answer of
    /// [`Elevator::rerun_at`] does: for a scheduler that starts idling when
    /// a request completes (C BFQ arms its `idle_slice_timer` there).
    pub fn rerun_at(&self, at_ns: u64) {
        arm_rerun(self.rerun, at_ns);
    }
}

impl<T: Elevator<LockContext = IrqSafe>> LockOnDemand<'_, T> {
    /// Takes the elevator lock (`spin_lock_irqsave()`); it is released when
    /// the guard is dropped.
    pub fn lock(&self) -> Guard<'_, T::Locked, IrqSaveSpinLockBackend> {
        self.lock.lock()
    }
}
