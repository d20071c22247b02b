// SPDX-License-Identifier: GPL-2.0

//! What the examples share: the device models and schedulers their tables
//! compare, and the machine around each device.

use ironlift_host_model::device::{by_name, Device, Emmc, Fixed, Flash};
use ironlift_host_model::scenario::Scheduler;
use ironlift_host_model::sim::Machine;

pub type MakeDevice = fn() -> Box<dyn Device>;

/// The device models, in the tables' order.
pub const DEVICES: [MakeDevice; 6] = [
    // The guest's nullb-slow, completions up to 20 µs late.
    || Box::new(Fixed::guest("nullb-slow").with_jitter(20_000)),
    || Box::new(Flash::nvme()),
    || Box::new(Flash::sata_ssd()),
    || Box::new(Emmc::galaxy_s()),
    // The 7200 rpm disk without command queueing, and with NCQ's 32.
    || by_name("hdd-7200", Some(1)).expect("a known model"),
    || by_name("hdd-7200", None).expect("a known model"),
];

/// The schedulers the tables compare, in their columns' order.
pub const SCHEDULERS: [Scheduler; 5] = [
    Scheduler::None,
    Scheduler::Deadline,
    Scheduler::Bfq,
    Scheduler::As,
    Scheduler::Cfq,
];

/// The block layer around `dev`: its scheduler tags, request size and the
/// cost of a queue run.
pub fn machine(dev: &dyn Device) -> Machine {
    Machine {
        sched_tags: (2 * dev.depth()).clamp(64, 256),
        max_sectors: 255,
        run_cost: 2_000,
    }
}
