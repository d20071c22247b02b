// SPDX-License-Identifier: GPL-2.0

//! ironlift's host model: the policies the kernel modules run (the
//! `ironlift-policy` crate, the same source), against device models, in a
//! deterministic discrete-event simulation of blk-mq around them.
//!
//! - [`device`]: null_blk with a fixed completion time, and
//!   `ironlift-devmodel`'s NVMe, SATA SSD, eMMC and hard disks (seeks,
//!   rotation, caches, command queueing).
//! - [`guest`]: the guest's null_blk devices (configs/devices/guest.toml),
//!   which the null_blk models of its devices are made from.
//! - [`sim`]: scheduler tags, the device's depth, back merges, the dispatch
//!   list and restart, the idle timer, rust-bfq's deferred completions;
//!   fio-like readers and writers, and an application reading files one at
//!   a time.
//! - [`fifo`]: `none`, for the baseline.
//! - [`scenario`]: a scheduler by name, fio-like jobs, the startup suite.
//!
//! `cargo run -p ironlift-host-model --example compare --release` prints
//! what each scheduler gives on each device.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod device;
pub mod fifo;
pub mod guest;
pub mod scenario;
pub mod sim;

/// One step of the 64-bit LCG (Knuth's MMIX constants) behind the model's
/// deterministic randomness; its high bits are the random ones.
pub(crate) fn lcg_next(x: u64) -> u64 {
    x.wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}
