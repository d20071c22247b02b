//! The guest's block devices (`configs/devices/guest.toml`) and the job.env
//! lines that make its null_blk devices.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
    let p = root.join("configs/devices/guest.toml");
    let text = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))
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
    fn results_record_null_blk_besides_nullb0_only() {
        let all = load(&crate::util::repo_root()).unwrap();
        assert!(all[BENCH_NULLB0].null_blk.is_some());
        let j = serde_json::to_string(&all[BENCH_NULLB0].recorded()).unwrap();
        assert!(!j.contains("\"null_blk\":"), "{j}");
        let j = serde_json::to_string(&all["nullb-slow"].recorded()).unwrap();
        assert!(j.contains("\"null_blk\":{\"size_mb\":2048"), "{j}");
        let j = serde_json::to_string(&all["nvme"].recorded()).unwrap();
        assert!(!j.contains("\"null_blk\":"));
    }
}
