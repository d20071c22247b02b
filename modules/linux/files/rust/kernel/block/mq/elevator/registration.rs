// SPDX-License-Identifier: GPL-2.0

//! Registering an elevator type with the block layer.
//!
//! C header: [`block/elevator.h`](srctree/block/elevator.h)

use super::{api, icq, vtable::Vtable, Elevator, MAX_TUNABLES};
use crate::{bindings, error::to_result, prelude::*, types::Opaque};
use core::{marker::PhantomData, ptr};

/// Length limit of an elevator name, including the terminating NUL
/// (`ELV_NAME_MAX`): `elv_iosched_store()` cannot select longer names.
const ELV_NAME_MAX: usize = bindings::ELV_NAME_MAX as usize;

/// A registered elevator type: `elv_register()` on creation,
/// `elv_unregister()` on drop. Keep it in the module's state, so the type
/// is registered exactly while the module is loaded. The elevator's owner
/// is the module: while a queue uses the scheduler, the block layer holds a
/// reference on the module and it cannot be unloaded.
pub struct Registration<T: Elevator> {
    /// Linked into the block layer's list of elevators: never moved out of
    /// its box while registered.
    ty: KBox<Opaque<bindings::elevator_type>>,
    /// The sysfs attributes `ty` points to, NUL-terminated.
    _attrs: KVec<bindings::elv_fs_entry>,
    _p: PhantomData<T>,
}

// SAFETY: The registration is only used to unregister, from any thread.
unsafe impl<T: Elevator> Send for Registration<T> {}
// SAFETY: `&Registration` gives no access to anything.
unsafe impl<T: Elevator> Sync for Registration<T> {}

impl<T: Elevator> Registration<T> {
    /// Registers elevator `T`, owned by `module`.
    pub fn new(module: &'static ThisModule) -> Result<Self> {
        if api::c_str_len(T::NAME) >= ELV_NAME_MAX
            || T::ALIAS.is_some_and(|a| api::c_str_len(a) >= ELV_NAME_MAX)
        {
            return Err(EINVAL);
        }
        if T::HAS_EXIT_ICQ && !T::IO_CONTEXTS {
            return Err(EINVAL);
        }
        if T::TUNABLES.len() > MAX_TUNABLES
            || !(T::TUNABLES.is_empty() || (T::HAS_TUNABLE_SHOW && T::HAS_TUNABLE_STORE))
        {
            return Err(EINVAL);
        }
        let mut attrs = KVec::with_capacity(T::TUNABLES.len() + 1, GFP_KERNEL)?;
        for (i, name) in T::TUNABLES.iter().enumerate() {
            let (show, store) = Vtable::<T>::TUNABLE_FNS[i];
            // SAFETY: All-zeroes is a valid `elv_fs_entry` (null pointers,
            // `None` functions).
            let mut entry: bindings::elv_fs_entry = unsafe { core::mem::zeroed() };
            entry.attr.name = api::c_str_ptr(name);
            entry.attr.mode = 0o644;
            #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
            {
                // `sysfs_attr_init()`: attributes not in static storage
                // need a static lockdep key.
                entry.attr.key = crate::static_lock_class!().as_ptr();
            }
            entry.show = Some(show);
            entry.store = Some(store);
            attrs.push(entry, GFP_KERNEL)?;
        }
        // SAFETY: As above: the zeroed terminator (`__ATTR_NULL`).
        attrs.push(unsafe { core::mem::zeroed() }, GFP_KERNEL)?;

        // SAFETY: All-zeroes is a valid `elevator_type` (null pointers,
        // `None` functions, empty list head, which `elv_register()` links).
        let mut ty: bindings::elevator_type = unsafe { core::mem::zeroed() };
        ty.ops = Vtable::<T>::OPS;
        ty.elevator_name = api::c_str_ptr(T::NAME);
        ty.elevator_alias = T::ALIAS.map_or(ptr::null(), api::c_str_ptr);
        ty.elevator_owner = module.as_ptr();
        if T::IO_CONTEXTS {
            // `elv_register()` makes the icq cache from these.
            ty.icq_size = icq::ICQ_SIZE;
            ty.icq_align = icq::ICQ_ALIGN;
        }
        ty.elevator_attrs = if T::TUNABLES.is_empty() {
            ptr::null_mut()
        } else {
            attrs.as_mut_ptr()
        };
        let ty = KBox::new(Opaque::new(ty), GFP_KERNEL)?;
        // SAFETY: `ty` is fully initialised and lives in a box that stays
        // put until `drop` unregisters it; its attributes live in `attrs`,
        // whose buffer does not move either (never pushed to again).
        to_result(unsafe { bindings::elv_register(ty.get()) })?;
        Ok(Registration {
            ty,
            _attrs: attrs,
            _p: PhantomData,
        })
    }
}

impl<T: Elevator> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: Registered in `new`. The module owns the type, so no
        // queue uses it any more when the module (and this) goes away.
        unsafe { bindings::elv_unregister(self.ty.get()) };
    }
}
