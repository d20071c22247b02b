// SPDX-License-Identifier: GPL-2.0

//! The guest's null_blk devices as `configs/devices/guest.toml` describes
//! them (the file the guest makes them from), so that a model of one of
//! them takes its completion time and depth from there.

use ironlift_policy::Nanos;

/// `configs/devices/guest.toml`.
const GUEST_DEVICES: &str = include_str!("../../configs/devices/guest.toml");

/// A null_blk device's timing: its `null_blk` table's settings that the
/// models use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NullBlk {
    /// 0 none, 1 softirq, 2 timer (`completion_nsec` after submission).
    pub irqmode: u32,
    /// With `irqmode` 2, how long every request takes.
    pub completion_nsec: Nanos,
    /// Requests the driver holds at once.
    pub hw_queue_depth: usize,
}

/// Every device of the file that has a `null_blk` table, by name, in name
/// order.
///
/// Panics if the file does not parse or a `null_blk` table lacks one of
/// the settings.
pub fn null_blk_devices() -> Vec<(String, NullBlk)> {
    let all: toml::Table = GUEST_DEVICES
        .parse()
        .expect("configs/devices/guest.toml parses");
    all.iter()
        .filter_map(|(name, d)| {
            let t = d.get("null_blk")?.as_table()?;
            let int = |k: &str| {
                t.get(k)
                    .and_then(toml::Value::as_integer)
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or_else(|| panic!("[{name}.null_blk] has no {k} >= 0"))
            };
            let n = NullBlk {
                irqmode: int("irqmode") as u32,
                completion_nsec: int("completion_nsec"),
                hw_queue_depth: int("hw_queue_depth") as usize,
            };
            Some((name.clone(), n))
        })
        .collect()
}

/// The null_blk device `name` of the file. Panics if it has none by that
/// name.
pub fn null_blk(name: &str) -> NullBlk {
    null_blk_devices()
        .into_iter()
        .find_map(|(n, d)| (n == name).then_some(d))
        .unwrap_or_else(|| panic!("configs/devices/guest.toml has no null_blk device {name:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_null_blk_device_of_the_file_parses() {
        let all = null_blk_devices();
        assert!(all.len() >= 4, "{all:?}");
        // QEMU's disks are not null_blk devices.
        assert!(all.iter().all(|(n, _)| n != "nvme"), "{all:?}");
        for (name, d) in &all {
            assert!(d.irqmode <= 2 && d.hw_queue_depth >= 1, "{name}: {d:?}");
        }
        // The file's own figures, not a copy of them.
        let text: toml::Table = GUEST_DEVICES.parse().unwrap();
        let slow = &text["nullb-slow"]["null_blk"];
        let d = null_blk("nullb-slow");
        assert_eq!(
            d.completion_nsec as i64,
            slow["completion_nsec"].as_integer().unwrap()
        );
        assert_eq!(
            d.hw_queue_depth as i64,
            slow["hw_queue_depth"].as_integer().unwrap()
        );
    }
}
