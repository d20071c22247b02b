//! The guest's block devices (`configs/devices/guest.toml`): the disks QEMU
//! attaches, the emulated disks the device server answers for, and the
//! job.env lines that make the null_blk devices.

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
    /// For an emulated disk (one or several) that `ironlift-blkserve`
    /// serves over NBD with a device model's timing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelDisk>,
    /// Every disk of a device that is several (md RAID members), in the
    /// order of its drives; `path` is the first. Empty for one disk.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
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

/// An emulated disk, or several alike: one `ironlift-blkserve` per entry
/// serves an export per drive, each its own model of `device` with its own
/// sparse backing file of `size_mb`. QEMU attaches each export as an NBD
/// `-blockdev` whose node name is the drive's id, and adds `devices` in
/// order (controllers before the disks on them). Every `-device` that names
/// `drive=<id>` is a disk; it carries `model=ironlift-<id>` (ATA) or
/// `serial=ironlift-<id>` (virtio), which the guest links as
/// `/dev/ironlift/<id>` (lib.sh `link_tagged_disks`), so the paths do not
/// depend on the order the guest probes its disks in.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ModelDisk {
    /// The model (`ironlift_devmodel::by_name`).
    pub device: String,
    pub size_mb: u64,
    /// Commands the model queues (NCQ); the model's own default if absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncq: Option<u32>,
    /// Microseconds of the guest-to-server path taken off every command's
    /// modelled latency (`--path-latency-us`).
    #[serde(default)]
    pub path_latency_us: u64,
    /// QEMU's `-device`s (not recorded in results.json, so absent when a
    /// report is rendered again from it).
    #[serde(default, skip_serializing)]
    pub devices: Vec<String>,
}

/// Where the guest links an emulated disk whose drive id is `id`.
pub const TAGGED_DIR: &str = "/dev/ironlift";

impl ModelDisk {
    /// The drive ids, in the order of `devices`: one export and one disk
    /// each.
    pub fn drive_ids(&self) -> Vec<&str> {
        self.devices
            .iter()
            .flat_map(|d| d.split(','))
            .filter_map(|p| p.strip_prefix("drive="))
            .collect()
    }

    /// The model's whole capacity in MiB, if the model crate knows it.
    pub fn capacity_mb(&self) -> Option<u64> {
        let model = ironlift_devmodel::by_name(&self.device, None)?;
        Some((model.capacity() * ironlift_devmodel::SECTOR_BYTES) >> 20)
    }

    /// Checks the entry against the model crate and the guest's naming
    /// rules; `paths` are the device's disks in the guest.
    pub fn validate(&self, paths: &[String]) -> Result<()> {
        let Some(cap_mb) = self.capacity_mb() else {
            bail!(
                "no model {:?}; the models: {}, null",
                self.device,
                ironlift_devmodel::MODELS.join(", ")
            );
        };
        if self.size_mb == 0 || self.size_mb > cap_mb {
            bail!(
                "size_mb {} must be 1..={cap_mb} (the {} model's capacity)",
                self.size_mb,
                self.device
            );
        }
        if self.ncq == Some(0) {
            bail!("ncq must be at least 1");
        }
        let ids = self.drive_ids();
        if ids.is_empty() || ids.iter().any(|i| i.is_empty()) {
            bail!("the devices {:?} name no drive (drive=<id>)", self.devices);
        }
        for (i, id) in ids.iter().enumerate() {
            if ids[..i].contains(id) {
                bail!("drive {id} named twice");
            }
            if !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                bail!("drive id {id:?}: letters, digits and '-' only (it names an NBD export)");
            }
            let line = self
                .devices
                .iter()
                .find(|d| d.split(',').any(|p| p == format!("drive={id}")))
                .map(String::as_str)
                .unwrap_or_default();
            let tag = format!("ironlift-{id}");
            let tagged = line
                .split(',')
                .any(|p| p == format!("model={tag}") || p == format!("serial={tag}"));
            if !tagged {
                bail!(
                    "disk {line:?} needs model={tag} (ATA) or serial={tag} (virtio), \
                     so that the guest links it as {TAGGED_DIR}/{id}"
                );
            }
            let want = format!("{TAGGED_DIR}/{id}");
            if paths.get(i) != Some(&want) {
                bail!(
                    "the disks' paths must be {TAGGED_DIR}/<drive id> in drive order: \
                     want {want:?} at {i}, have {:?}",
                    paths.get(i)
                );
            }
        }
        if paths.len() != ids.len() {
            bail!("{} paths for {} drives", paths.len(), ids.len());
        }
        Ok(())
    }
}

impl Device {
    /// Every disk of the device in the guest: `paths`, or `path` alone.
    pub fn disk_paths(&self) -> Vec<String> {
        if self.paths.is_empty() {
            vec![self.path.clone()]
        } else {
            self.paths.clone()
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
        check(d).with_context(|| format!("{}: device {name:?}", p.display()))?;
    }
    Ok(all)
}

/// Checks one device's tables.
fn check(d: &Device) -> Result<()> {
    let tables = [d.null_blk.is_some(), d.qemu.is_some(), d.model.is_some()];
    if tables.iter().filter(|&&t| t).count() != 1 {
        bail!("needs exactly one of a null_blk, a qemu or a model table");
    }
    if !d.paths.is_empty() && d.paths[0] != d.path {
        bail!("path {:?} must be the first of paths {:?}", d.path, d.paths);
    }
    if let Some(m) = &d.model {
        m.validate(&d.disk_paths())?;
    } else if !d.paths.is_empty() {
        bail!("only a device with a model table may be several disks (paths)");
    }
    Ok(())
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
                _ if d.model.is_some() => {
                    assert_eq!(nullb_env(&one).unwrap(), "NULLB_DEVICES=''\n");
                    assert!(d.path.starts_with(TAGGED_DIR), "{name}");
                }
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
             -device nvme,serial=ironlift-nvme,drive=nvme0,id=nvme0-dev"
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

    /// A device table as guest.toml would hold it, checked.
    fn checked(toml_text: &str) -> Result<()> {
        let InFileOrder(all) = toml::from_str(toml_text)?;
        for (name, d) in &all {
            check(d).with_context(|| format!("device {name:?}"))?;
        }
        Ok(())
    }

    #[test]
    fn model_tables_are_checked() {
        let ok = r#"
            [a]
            path = "/dev/ironlift/d0"
            kind = "k"
            [a.model]
            device = "hdd-7200"
            size_mb = 64
            devices = ["ahci,id=x", "ide-hd,drive=d0,bus=x.0,model=ironlift-d0"]
        "#;
        checked(ok).unwrap();
        let err = |from: &str, to: &str| {
            let e = checked(&ok.replace(from, to)).unwrap_err();
            format!("{e:#}")
        };
        assert!(err("hdd-7200", "hdd-9000").contains("no model \"hdd-9000\""));
        assert!(err("size_mb = 64", "size_mb = 99999999").contains("capacity"));
        assert!(err("size_mb = 64", "size_mb = 0").contains("size_mb 0"));
        assert!(err("size_mb = 64", "size_mb = 64\nncq = 0").contains("ncq"));
        assert!(err(",model=ironlift-d0", "").contains("needs model=ironlift-d0"));
        assert!(err("/dev/ironlift/d0", "/dev/sdb").contains("/dev/ironlift/<drive id>"));
        assert!(err("drive=d0,", "").contains("name no drive"));
        assert!(err("size_mb = 64", "size_mb = 64\ncolour = 1").contains("colour"));
        let both = format!("{ok}\n[a.qemu]\nsize_mb = 1\ndevices = [\"nvme,drive=n\"]\n");
        assert!(format!("{:#}", checked(&both).unwrap_err()).contains("exactly one"));
        // Several disks: `paths` lists them in drive order.
        let two = ok
            .replace(
                "path = \"/dev/ironlift/d0\"",
                "path = \"/dev/ironlift/d0\"\npaths = [\"/dev/ironlift/d0\", \"/dev/ironlift/d1\"]",
            )
            .replace(
                "model=ironlift-d0\"]",
                "model=ironlift-d0\", \"ide-hd,drive=d1,bus=x.1,serial=ironlift-d1\"]",
            );
        checked(&two).unwrap();
        let swapped = two.replace(
            "[\"/dev/ironlift/d0\", \"/dev/ironlift/d1\"]",
            "[\"/dev/ironlift/d0\", \"/dev/ironlift/d2\"]",
        );
        assert!(
            format!("{:#}", checked(&swapped).unwrap_err()).contains("want \"/dev/ironlift/d1\"")
        );
        let twice = two.replace("drive=d1", "drive=d0");
        assert!(format!("{:#}", checked(&twice).unwrap_err()).contains("named twice"));
        let all = load(&crate::util::repo_root()).unwrap();
        assert_eq!(all["hdd-raptor"].disk_paths().len(), 4);
        assert_eq!(all["hdd-7200"].disk_paths(), ["/dev/ironlift/h7200"]);
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
