// SPDX-License-Identifier: GPL-2.0

//! A kernel spinlock taken with interrupts disabled.
//!
//! This module allows Rust code to use the kernel's `spinlock_t` with
//! `spin_lock_irqsave()` and `spin_unlock_irqrestore()`, as data shared with
//! hard-IRQ context needs.

use crate::ffi::{c_char, c_ulong};

/// Creates an [`IrqSaveSpinLock`] initialiser with the given name and a newly-created lock class.
///
/// It uses the name if one is given, otherwise it generates one based on the file name and line
/// number.
#[macro_export]
macro_rules! new_irqsave_spinlock {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::sync::IrqSaveSpinLock::new(
            $inner, $crate::optional_name!($($name)?), $crate::static_lock_class!())
    };
}
pub use new_irqsave_spinlock;

/// A spinlock taken with interrupts disabled.
///
/// Exposes the kernel's [`spinlock_t`], as [`SpinLock`] does, but locks it with
/// `spin_lock_irqsave()`: interrupts are disabled on the local CPU while the lock is held, and
/// restored to their previous state when the guard is dropped. Use it for data that is also
/// accessed in hard-IRQ context, where a plain [`SpinLock`] could deadlock against an interrupt
/// on the CPU that holds it.
///
/// The saved interrupt state is kept in the guard. Guards of two such locks held at once must be
/// dropped in the reverse order of their locking, as `spin_unlock_irqrestore()` calls must be in
/// C: dropping the outer guard first would enable interrupts while the inner lock is still held.
///
/// Instances of [`IrqSaveSpinLock`] need a lock class and to be pinned. The recommended way to
/// create such instances is with the [`pin_init`](crate::pin_init) and [`new_irqsave_spinlock`]
/// macros.
///
/// # Examples
///
/// ```
/// use kernel::sync::{new_irqsave_spinlock, IrqSaveSpinLock};
///
/// struct Counters {
///     completed: u64,
///     failed: u64,
/// }
///
/// #[pin_data]
/// struct Device {
///     #[pin]
///     counters: IrqSaveSpinLock<Counters>,
/// }
///
/// impl Device {
///     fn new() -> impl PinInit<Self> {
///         pin_init!(Self {
///             counters <- new_irqsave_spinlock!(Counters { completed: 0, failed: 0 }),
///         })
///     }
///
///     // Callable from the completion interrupt as well as from process context.
///     fn complete(&self, ok: bool) {
///         let mut c = self.counters.lock();
///         if ok {
///             c.completed += 1;
///         } else {
///             c.failed += 1;
///         }
///     }
/// }
///
/// let d = KBox::pin_init(Device::new(), GFP_KERNEL)?;
/// d.complete(true);
/// assert_eq!(d.counters.lock().completed, 1);
/// # Ok::<(), Error>(())
/// ```
///
/// [`spinlock_t`]: srctree/include/linux/spinlock.h
/// [`SpinLock`]: super::spinlock::SpinLock
pub type IrqSaveSpinLock<T> = super::Lock<T, IrqSaveSpinLockBackend>;

/// A kernel `spinlock_t` lock backend that disables interrupts while the lock is held.
///
/// The guard state is the saved interrupt flags, restored on unlock.
pub struct IrqSaveSpinLockBackend;

// SAFETY: The underlying kernel `spinlock_t` object ensures mutual exclusion.
// `spin_unlock_irqrestore()` is called with the flags the matching `spin_lock_irqsave()` returned,
// on the same CPU, since the guard cannot be sent to another thread. `relock` uses the default
// implementation, which calls `lock` again and keeps the flags it returns.
unsafe impl super::Backend for IrqSaveSpinLockBackend {
    type State = bindings::spinlock_t;
    type GuardState = c_ulong;

    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut bindings::lock_class_key) {
        // SAFETY: The safety requirements ensure that `ptr` is valid for writes, and `name` and
        // `key` are valid for read indefinitely.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    #[inline]
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: The safety requirements of this function ensure that `ptr` points to valid
        // memory, and that it has been initialised before.
        unsafe { bindings::spin_lock_irqsave(ptr) }
    }

    #[inline]
    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: The safety requirements of this function ensure that `ptr` is valid and that the
        // caller is the owner of the spinlock; `flags` is what the matching `lock` returned.
        unsafe { bindings::spin_unlock_irqrestore(ptr, *flags) }
    }

    #[inline]
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        let mut flags: c_ulong = 0;
        // SAFETY: The safety requirements of this function ensure that `ptr` points to valid
        // memory, and that it has been initialised before; `flags` is a valid place for the
        // helper to save the interrupt state in.
        let locked = unsafe { bindings::spin_trylock_irqsave(ptr, &mut flags) };
        (locked != 0).then_some(flags)
    }

    #[inline]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The safety requirements of this function ensure that `ptr` points to valid
        // memory, and that it has been initialised before.
        unsafe { bindings::spin_assert_is_held(ptr) }
    }
}
