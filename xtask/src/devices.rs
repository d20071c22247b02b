//! The guest's block devices (`configs/devices/guest.toml`): the disks QEMU
//! attaches, and the job.env lines that make its null_blk devices.

use anyhow::{bail, Context, Result};
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::Path;

/// A guest device, as `configs/devices/guest.toml` describes it and as
/// results.json records it.
#[derive(Deserialize, Serialize, Debug, Clone)]
pub struct Device {
    pub path: String,
    pub kind: String,
    /// For a null_blk device the guest makes: how to make it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub null_blk: Option<NullBlk>,
    /// For a disk QEMU attaches: how to attach it (not recorded in
    /// results.json).
    #[serde(default, skip_serializing)]
    pub qemu: Option<QemuDisk>,
}

/// configfs settings of a null_blk device (see the kernel's
/// Documentation/block/null_blk.rst).
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NullBlk {
    pub size_mb: u64,
    pub memory_backed: bool,
    /// 0 none, 1 softirq, 2 timer (`completion_nsec` after submission).
    pub irqmode: u32,
    pub completion_nsec: u64,
    pub hw_queue_depth: u32,
}

/// A disk QEMU attaches: a sparse raw image of `size_mb`, one `-drive` for
/// it, and a `-device` for each of `devices`, in order (a controller before
/// the disk that sits on it). The one that names `drive=<id>` is the disk;
/// `<id>` is the drive's id.
#[derive(Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct QemuDisk {
    pub size_mb: u64,
    pub devices: Vec<String>,
}

impl QemuDisk {
    /// The id of the drive the disk's `-device` names (`drive=<id>`).
    pub fn drive_id(&self) -> Result<&str> {
        let ids: Vec<&str> = self
            .devices
            .iter()
            .flat_map(|d| d.split(','))
            .filter_map(|p| p.strip_prefix("drive="))
            .collect();
        match ids[..] {
            [id] if !id.is_empty() => Ok(id),
            _ => bail!(
                "exactly one of the qemu devices {:?} must name its drive (drive=<id>)",
                self.devices
            ),
        }
    }
}

/// The device every benchmark guest makes at `/dev/nullb0`, used or not,
/// so that each benchmark guest has the same devices.
pub const BENCH_NULLB0: &str = "nullb";

impl Device {
    /// The null_blk index of a `/dev/nullb<N>` path.
    fn nullb_index(&self) -> Option<u32> {
        self.path.strip_prefix("/dev/nullb")?.parse().ok()
    }

    /// The device as results.json records it: `null_blk` only for the
    /// devices made besides nullb0 (docs/results-schema.md).
    pub fn recorded(&self) -> Device {
        let mut d = self.clone();
        if d.nullb_index() == Some(0) {
            d.null_blk = None;
        }
        d
    }
}

/// Loads `configs/devices/guest.toml`.
pub fn load(root: &Path) -> Result<BTreeMap<String, Device>> {
    Ok(load_in_file_order(root)?.into_iter().collect())
}

/// Loads `configs/devices/guest.toml`, the devices in the file's order
/// (the order QEMU attaches its disks in).
pub fn load_in_file_order(root: &Path) -> Result<Vec<(String, Device)>> {
    let p = root.join("configs/devices/guest.toml");
    let text = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    let InFileOrder(all) =
        toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
    for (name, d) in &all {
        if d.null_blk.is_some() == d.qemu.is_some() {
            bail!("device {name:?}: needs either a null_blk or a qemu table, not both or neither");
        }
    }
    Ok(all)
}

/// The file's devices as the TOML parser hands them over: in the file's
/// order.
struct InFileOrder(Vec<(String, Device)>);

impl<'de> Deserialize<'de> for InFileOrder {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InFileOrder;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of devices")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<InFileOrder, A::Error> {
                let mut all = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    all.push(entry);
                }
                Ok(InFileOrder(all))
            }
        }
        de.deserialize_map(V)
    }
}

/// The devices named, in the order given, each looked up in `all`.
pub fn pick<'a>(
    all: &BTreeMap<String, Device>,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<(String, Device)>> {
    names
        .into_iter()
        .map(|n| {
            let d = all
                .get(n)
                .with_context(|| format!("configs/devices/guest.toml has no {n:?}"))?;
            Ok((n.to_string(), d.clone()))
        })
        .collect()
}

/// job.env lines that make the guest create every null_blk device in
/// `devices` (lib.sh `make_nullbs`): `NULLB_DEVICES` lists the indices, and
/// `NULLB<i>_*` holds each one's settings.
pub fn nullb_env(devices: &[(String, Device)]) -> Result<String> {
    let mut idx = Vec::new();
    let mut s = String::new();
    for (name, d) in devices {
        let Some(n) = &d.null_blk else { continue };
        let Some(i) = d.nullb_index() else {
            bail!(
                "device {name:?}: a [{name}.null_blk] device must be /dev/nullb<N>, not {:?}",
                d.path
            );
        };
        if idx.contains(&i) {
            bail!("device {name:?}: two null_blk devices are {}", d.path);
        }
        if n.irqmode > 2 || n.hw_queue_depth == 0 || n.size_mb == 0 {
            bail!(
                "device {name:?}: null_blk needs irqmode 0..=2, hw_queue_depth >= 1, size_mb >= 1"
            );
        }
        idx.push(i);
        s.push_str(&format!(
            "NULLB{i}_SIZE_MB={}\nNULLB{i}_MEMORY_BACKED={}\nNULLB{i}_IRQMODE={}\n\
             NULLB{i}_COMPLETION_NSEC={}\nNULLB{i}_HW_QUEUE_DEPTH={}\n",
            n.size_mb,
            u8::from(n.memory_backed),
            n.irqmode,
            n.completion_nsec,
            n.hw_queue_depth
        ));
    }
    let list: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    Ok(format!("NULLB_DEVICES='{}'\n{s}", list.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_blk_devices_become_job_env() {
        let all = load(&crate::util::repo_root()).unwrap();
        let slow = &all["nullb-slow"];
        assert_eq!(slow.path, "/dev/nullb1");
        let used = pick(&all, [BENCH_NULLB0, "nullb-8ms", "nullb-slow", "nvme"]).unwrap();
        let env = nullb_env(&used).unwrap();
        // In the order given.
        assert!(env.starts_with("NULLB_DEVICES='0 2 1'\n"), "{env}");
        assert!(
            env.contains("NULLB0_MEMORY_BACKED=0\nNULLB0_IRQMODE=1\n"),
            "{env}"
        );
        assert!(env.contains("NULLB2_COMPLETION_NSEC=8000000\n"), "{env}");
        assert!(env.contains("NULLB1_IRQMODE=2\n"));
        assert!(env.contains("NULLB1_MEMORY_BACKED=1\n"));
        let n = slow.null_blk.as_ref().unwrap();
        assert!(env.contains(&format!("NULLB1_COMPLETION_NSEC={}\n", n.completion_nsec)));
        assert!(env.contains(&format!("NULLB1_HW_QUEUE_DEPTH={}\n", n.hw_queue_depth)));
        // Devices without a null_blk table add nothing.
        let plain = pick(&all, ["nvme", "virtio", "sata-hdd"]).unwrap();
        assert_eq!(nullb_env(&plain).unwrap(), "NULLB_DEVICES=''\n");
        // The tests' nullb0 and the benchmarks' share the index.
        assert!(nullb_env(&pick(&all, [BENCH_NULLB0, "nullb-verify"]).unwrap()).is_err());
        let mut d = slow.clone();
        d.path = "/dev/vdb".into();
        assert!(nullb_env(&[("x".to_string(), d)]).is_err());
        assert!(pick(&all, ["no-such-device"]).is_err());
    }

    #[test]
    fn every_device_makes_null_blk_env_or_qemu_args() {
        let all = load_in_file_order(&crate::util::repo_root()).unwrap();
        let image = Path::new("/img");
        let mut attached = Vec::new();
        for (name, d) in &all {
            let one = [(name.clone(), d.clone())];
            match (&d.null_blk, &d.qemu) {
                (Some(_), None) => {
                    let env = nullb_env(&one).unwrap();
                    assert!(env.contains("_COMPLETION_NSEC="), "{name}: {env}");
                }
                (None, Some(q)) => {
                    let args = crate::qemu::disk_args(q, image).unwrap();
                    assert_eq!(args.len(), 2 + 2 * q.devices.len(), "{name}: {args:?}");
                    assert!(q.size_mb > 0, "{name}");
                    assert_eq!(nullb_env(&one).unwrap(), "NULLB_DEVICES=''\n");
                    attached.push(name.as_str());
                }
                _ => panic!("{name}: null_blk or qemu, one of them"),
            }
        }
        // The disks in the file's order, which is QEMU's.
        assert_eq!(attached, ["nvme", "virtio", "sata-hdd"]);
    }

    #[test]
    fn qemu_disks_give_their_drive_and_devices() {
        let all = load(&crate::util::repo_root()).unwrap();
        let args = |name: &str| {
            let q = all[name].qemu.as_ref().unwrap();
            crate::qemu::disk_args(q, Path::new("/d/x.img"))
                .unwrap()
                .join(" ")
        };
        assert_eq!(
            args("nvme"),
            "-drive file=/d/x.img,if=none,id=nvme0,format=raw,cache=none,aio=threads \
             -device nvme,serial=ironlift-nvme,drive=nvme0"
        );
        assert_eq!(
            args("sata-hdd"),
            "-drive file=/d/x.img,if=none,id=hdd0,format=raw,cache=none,aio=threads \
             -device ahci,id=ahci0 -device ide-hd,drive=hdd0,bus=ahci0.0,rotation_rate=7200"
        );
        let q = |devices: &[&str]| QemuDisk {
            size_mb: 1,
            devices: devices.iter().map(|d| d.to_string()).collect(),
        };
        assert_eq!(
            q(&["ahci,id=a", "ide-hd,drive=d0"]).drive_id().unwrap(),
            "d0"
        );
        assert!(q(&["virtio-blk-pci"]).drive_id().is_err());
        assert!(q(&["nvme,drive=a", "nvme,drive=b"]).drive_id().is_err());
        assert!(q(&["nvme,drive="]).drive_id().is_err());
    }

    #[test]
    fn results_record_null_blk_besides_nullb0_only() {
        let all = load(&crate::util::repo_root()).unwrap();
        assert!(all[BENCH_NULLB0].null_blk.is_some());
        let j = serde_json::to_string(&all[BENCH_NULLB0].recorded()).unwrap();
        assert!(!j.contains("\"null_blk\":"), "{j}");
        let j = serde_json::to_string(&all["nullb-slow"].recorded()).unwrap();
        assert!(j.contains("\"null_blk\":{\"size_mb\":2048"), "{j}");
        let j = serde_json::to_string(&all["nvme"].recorded()).unwrap();
        assert!(!j.contains("\"null_blk\":"));
        assert!(!j.contains("qemu"), "{j}");
    }
}
