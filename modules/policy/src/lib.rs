// SPDX-License-Identifier: GPL-2.0

//! ironlift's I/O scheduling policies.
//!
//! This crate is compiled twice: as an ordinary `no_std` crate for the host
//! simulator, tests and benches, and into the kernel modules, which include
//! the source files below with `#[path]`. For that reason the algorithm
//! files refer to each other only through `super::`, and attributes that
//! only a crate root may carry live here and nowhere else.

#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod anticipatory;
pub mod bfq;
pub mod cfq;
pub mod completions;
pub mod deadline;
mod intrusive;
pub mod noop;
pub mod sched;
pub mod sched_as;
pub mod sched_bfq;
pub mod sched_cfq;
pub mod sched_deadline;
pub mod sched_noop;
pub mod sched_sio;
pub mod sched_vr;
pub mod sio;
pub mod types;
pub mod vr;

pub use types::*;
