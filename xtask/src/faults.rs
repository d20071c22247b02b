//! The fault tests' part of `cargo xtask test` (qemu/guest/tests_faults.sh):
//! which of them run by default and which only with `--faults` or
//! `--soak`, their job.env lines, and the disks the hot-removal test
//! unplugs through QEMU's monitor ([`crate::monitor`]).

use crate::devices::Device;
use crate::guest::shell_words;
use crate::monitor::HotDisk;
use crate::qemu::Disks;
use anyhow::{Context, Result};
use std::collections::BTreeMap;

/// The fault tests, in the order tests_faults.sh's `FAULT_TESTS` lists
/// them; the suite runs them before `kmemleak`, so that it sees what their
/// failure paths leaked.
pub const FAULT_TESTS: &[&str] = &[
    "fault_requeue",
    "fault_timeout",
    "fault_hw_queues",
    "fault_switchers",
    "fault_cpu_hotplug",
    "fault_alloc",
    "fault_hot_remove",
];

/// The fault tests the default suite runs on the base kernel (short
/// cases): every fault test the base kernel can run but the timeout
/// injection, which costs the default suite more than it has left (45 s on
/// the base kernel: each case waits out its timed-out requests' 1 s
/// `io_timeout`). `--faults` runs them all, on both kernels, and `--only`
/// any of them.
pub const BASE_FAULT_TESTS: &[&str] = &[
    "fault_requeue",
    "fault_hw_queues",
    "fault_switchers",
    "fault_cpu_hotplug",
    "fault_hot_remove",
];

/// The fault tests the default suite runs on the debug kernel, before its
/// kmemleak scan: the failing allocations (failslab, fail_page_alloc),
/// which only the debug kernel has, on every Rust elevator, so that
/// kmemleak looks at each one's failure paths.
pub const DEBUG_FAULT_TESTS: &[&str] = &["fault_alloc"];

/// Tests that need the debug kernel's options (failslab, kmemleak): on the
/// base kernel they could only skip, so no list gives them there.
pub const DEBUG_ONLY: &[&str] = &["fault_alloc", "kmemleak"];

/// The soak (`--soak MINUTES`), never in the default list.
pub const SOAK_TEST: &str = "fault_soak";

/// The disks (configs/devices/guest.toml) `fault_hot_remove` unplugs.
pub const HOTPLUG_DEVICES: &[&str] = &["nvme", "virtio"];

/// How long the fault tests run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A few seconds a case, the debug kernel's narrow scheduler set: the
    /// default suite's.
    Short,
    /// `--faults`: each case longer, every scheduler on both kernels.
    Long,
    /// `--soak MINUTES`.
    Soak(u32),
}

impl Mode {
    pub fn of(faults: bool, soak: Option<u32>) -> Mode {
        match (faults, soak) {
            (_, Some(m)) => Mode::Soak(m),
            (true, None) => Mode::Long,
            (false, None) => Mode::Short,
        }
    }

    /// The guest tests this mode runs when `--only` names none: for
    /// `Short`, the default suite `suite` with the flavour's fault tests
    /// ([`BASE_FAULT_TESTS`] or [`DEBUG_FAULT_TESTS`]) after its other
    /// tests; the fault tests or the soak otherwise. `kmemleak` comes last
    /// on the debug kernel, and [`DEBUG_ONLY`] tests never on the base one
    /// (`base`).
    pub fn tests(self, suite: &[&str], base: bool) -> Vec<String> {
        let faults: &[&str] = if base {
            BASE_FAULT_TESTS
        } else {
            DEBUG_FAULT_TESTS
        };
        let before: Vec<&str> = match self {
            Mode::Short => suite
                .iter()
                .copied()
                .filter(|t| *t != "kmemleak")
                .chain(faults.iter().copied())
                .collect(),
            Mode::Long => FAULT_TESTS.to_vec(),
            Mode::Soak(_) => vec![SOAK_TEST],
        };
        before
            .into_iter()
            .chain(["kmemleak"])
            .filter(|t| !(base && DEBUG_ONLY.contains(t)))
            .map(String::from)
            .collect()
    }

    /// More seconds the guest may take than the default suite's.
    pub fn extra_timeout(self) -> u64 {
        match self {
            Mode::Short => 0,
            Mode::Long => 3600,
            Mode::Soak(m) => u64::from(m) * 60 + 600,
        }
    }

    /// job.env's lines for tests_faults.sh; `hotplug`: the disks
    /// fault_hot_remove may unplug, as NAME=PATH.
    pub fn job_env(self, hotplug: &[(String, String)]) -> String {
        format!(
            "FAULTS_LONG='{}'\nSOAK_MINUTES='{}'\nHOTPLUG_DEVS='{}'\n",
            u8::from(self == Mode::Long),
            match self {
                Mode::Soak(m) => m,
                _ => 0,
            },
            shell_words(hotplug.iter().map(|(n, p)| format!("{n}={p}")))
        )
    }
}

/// The disks fault_hot_remove unplugs, by name, with this run's images.
pub fn hot_disks(
    all: &BTreeMap<String, Device>,
    disks: &Disks,
) -> Result<BTreeMap<String, (String, HotDisk)>> {
    let mut out = BTreeMap::new();
    for name in HOTPLUG_DEVICES {
        let d = all
            .get(*name)
            .with_context(|| format!("configs/devices/guest.toml has no {name}"))?;
        let q = d.qemu.as_ref().context("a disk QEMU attaches")?;
        let h = HotDisk::new(q, &disks.image(name)).with_context(|| format!("device {name}"))?;
        out.insert(name.to_string(), (d.path.clone(), h));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fault_tests_run_before_kmemleak_and_none_only_skips() {
        let suite = ["write_verify", "kmemleak"];
        let base = Mode::Short.tests(&suite, true);
        assert_eq!(base.first().unwrap(), "write_verify");
        assert_eq!(base.len(), 1 + BASE_FAULT_TESTS.len());
        let debug = Mode::Short.tests(&suite, false);
        assert_eq!(debug, ["write_verify", "fault_alloc", "kmemleak"]);
        for f in BASE_FAULT_TESTS
            .iter()
            .chain(DEBUG_FAULT_TESTS)
            .chain(DEBUG_ONLY)
        {
            assert!(FAULT_TESTS.contains(f) || *f == "kmemleak", "{f}");
        }
        // The base kernel lists no test that can only skip there.
        for mode in [Mode::Short, Mode::Long, Mode::Soak(30)] {
            let t = mode.tests(&suite, true);
            assert!(t.iter().all(|t| !DEBUG_ONLY.contains(&t.as_str())), "{t:?}");
        }
        let long = Mode::Long.tests(&suite, false);
        assert_eq!(long.len(), FAULT_TESTS.len() + 1);
        assert_eq!(long.last().unwrap(), "kmemleak");
        assert_eq!(Mode::Long.tests(&suite, true).len(), FAULT_TESTS.len() - 1);
        assert_eq!(Mode::Soak(30).tests(&suite, false), [SOAK_TEST, "kmemleak"]);
        assert_eq!(Mode::Soak(30).tests(&suite, true), [SOAK_TEST]);
        assert!(!base.contains(&SOAK_TEST.to_string()));
    }

    #[test]
    fn job_env_says_the_mode() {
        let e = Mode::Soak(5).job_env(&[("nvme".into(), "/dev/nvme0n1".into())]);
        assert_eq!(
            e,
            "FAULTS_LONG='0'\nSOAK_MINUTES='5'\nHOTPLUG_DEVS='nvme=/dev/nvme0n1'\n"
        );
        assert!(Mode::Long.job_env(&[]).starts_with("FAULTS_LONG='1'\n"));
        assert_eq!(Mode::of(false, None), Mode::Short);
        assert_eq!(Mode::of(true, Some(3)), Mode::Soak(3));
    }

    #[test]
    fn fault_test_names_match_tests_faults_sh() {
        let sh =
            std::fs::read_to_string(crate::util::repo_root().join("qemu/guest/tests_faults.sh"))
                .unwrap();
        let listed: Vec<&str> = sh
            .lines()
            .find_map(|l| l.strip_prefix("FAULT_TESTS=\""))
            .unwrap()
            .trim_end_matches('"')
            .split_whitespace()
            .collect();
        assert_eq!(listed, FAULT_TESTS);
        for t in FAULT_TESTS.iter().chain([&SOAK_TEST]) {
            assert!(
                sh.contains(&format!("\n{t}() {{")),
                "{t} in tests_faults.sh"
            );
        }
        assert!(
            std::fs::read_to_string(crate::util::repo_root().join("qemu/guest/tests.sh"))
                .unwrap()
                .contains("/tests_faults.sh\"")
        );
    }
}
