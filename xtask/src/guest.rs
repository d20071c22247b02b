//! What every guest job needs: the kernel, the modules, the accelerator
//! and the disks, and the job.env lines every job has.

use crate::devices::{self, Device};
use crate::flags::{GuestArgs, KernelArgs};
use crate::{deps, kernel, modules, qemu, util};
use anyhow::Result;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The schedulers every 6.12 guest offers (built in by configs/kernel).
pub const BUILTIN_SCHEDULERS: &[&str] = &["none", "mq-deadline", "kyber", "bfq"];

/// Kernel, modules, accelerator and disks: what every guest job needs.
pub struct Prepared {
    pub tc: deps::Toolchain,
    pub kernel: kernel::Kernel,
    pub modules: Vec<modules::Module>,
    pub accel: qemu::Accel,
    pub disks: qemu::Disks,
}

/// Builds (or finds built) the kernel and modules, and picks the
/// accelerator and disks.
pub fn prepare(k: &KernelArgs, g: &GuestArgs) -> Result<Prepared> {
    let tc = deps::ensure(k.kernel)?;
    let opts = k.kernel_opts();
    let kernel = kernel::ensure(&tc, &opts)?;
    let modules = modules::build(&tc, &kernel, k.jobs())?;
    let accel = qemu::choose_accel(&kernel, &opts.cache, &g.accel)?;
    let disks = qemu::disks(
        &opts.cache,
        &devices::load_in_file_order(&util::repo_root())?,
    )?;
    Ok(Prepared {
        tc,
        kernel,
        modules,
        accel,
        disks,
    })
}

impl Prepared {
    /// The elevators of the modules built (`rust-*`).
    pub fn elevators(&self) -> Vec<String> {
        self.modules
            .iter()
            .filter_map(|m| m.elevator.clone())
            .collect()
    }

    /// The built-in schedulers and every elevator built.
    pub fn all_schedulers(&self) -> Vec<String> {
        BUILTIN_SCHEDULERS
            .iter()
            .map(|s| s.to_string())
            .chain(self.elevators())
            .collect()
    }

    /// A boot of this guest for `job`, whose folder is `out`, with the
    /// console log there; no extra kernel or QEMU arguments.
    pub fn boot<'a>(
        &'a self,
        g: &GuestArgs,
        job: &'a str,
        out: &'a Path,
        timeout: Duration,
    ) -> qemu::Boot<'a> {
        qemu::Boot {
            kernel: &self.kernel,
            accel: self.accel,
            disks: Some(&self.disks),
            out,
            job,
            timeout,
            console_log: out.join("console.log"),
            memory_mb: g.memory,
            cpus: g.cpus,
            cmdline_extra: String::new(),
            qemu_extra: Vec::new(),
            guest_dir: None,
        }
    }

    /// job.env's first lines: the elevator modules to load, the devices the
    /// job uses (`DEVICES`, the first one first), every disk of the
    /// emulated ones (`MODEL_DISKS`, which the guest links and waits for),
    /// and every null_blk device to make (`made`).
    pub fn job_env<'a>(
        &self,
        used: impl IntoIterator<Item = &'a Device>,
        made: &[(String, Device)],
    ) -> Result<String> {
        let used: Vec<&Device> = used.into_iter().collect();
        Ok(format!(
            "MODULES='{}'\nDEVICES='{}'\nMODEL_DISKS='{}'\n{}",
            shell_words(
                self.modules
                    .iter()
                    .filter(|m| m.elevator.is_some())
                    .map(|m| m.path.display().to_string())
            ),
            shell_words(used.iter().map(|d| d.path.clone())),
            shell_words(
                used.iter()
                    .filter(|d| d.model.is_some())
                    .flat_map(|d| d.disk_paths())
            ),
            devices::nullb_env(made)?,
        ))
    }
}

/// The kernel command line a test guest of this flavour adds: on the
/// debug kernel, `acpi=noirq no5lvl`.
///
/// Under KASAN and lockdep the ACPI interpreter is so slow that
/// every PCI device's `_PRT` evaluation runs into the AML loop
/// timeout (30 s each, minutes per boot). The devices use MSI/MSI-X;
/// legacy interrupt routing comes from the BIOS table instead.
///
/// `no5lvl`: with `-cpu max` TCG offers LA57, and under 5-level
/// paging inline KASAN gives a flaky false "wild-memory-access in
/// do_raw_spin_lock" at boot: identify_cpu() clears the boot CPU's
/// capabilities for a moment, KASAN_SHADOW_START is then computed
/// for 47-bit addresses, and an interrupt taking its descriptor lock
/// (a 5-level direct-map address) is reported (lkml, June 2026,
/// "kasan: Fix false-positive wild-memory-access on x86 under
/// 5-level paging"). CI hit it once; 4-level paging avoids it.
pub fn flavor_cmdline(flavor: kernel::Flavor) -> &'static str {
    match flavor {
        kernel::Flavor::Debug => "acpi=noirq no5lvl",
        kernel::Flavor::Base => "",
    }
}

/// Words for a job.env value: space-separated.
pub fn shell_words(xs: impl IntoIterator<Item = String>) -> String {
    xs.into_iter().collect::<Vec<_>>().join(" ")
}

/// The host, for results: kernel, CPU count and model.
pub fn host_description() -> String {
    let uname = util::run(Command::new("uname").arg("-srm")).unwrap_or_default();
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|x| x.trim().to_string())
        })
        .unwrap_or_default();
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    format!("{}, {n} × {cpu}", uname.trim())
}

/// The time now, as `date <fmt>` gives it.
pub fn now(fmt: &str) -> String {
    util::run(Command::new("date").arg(fmt))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}
