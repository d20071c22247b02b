//! The command line: every subcommand and its flags.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "ironlift: build, boot, benchmark and test Rust I/O schedulers"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Install (or name) the Debian packages and tools everything needs
    Deps,
    /// Build the kernel with ironlift's additions (cached; incremental)
    Kernel {
        #[command(flatten)]
        k: KernelArgs,
    },
    /// Build the out-of-tree modules in modules/kernel
    Modules {
        #[command(flatten)]
        k: KernelArgs,
    },
    /// Run a benchmark suite in a QEMU guest and write a report
    QemuBench(QemuBench),
    /// Run the tests: cargo test over the workspace, then the in-guest KTAP suite
    Test(Test),
    /// Run upstream blktests (configs/blktests.toml) in the guest with
    /// every rust-* elevator loaded, and give a table of its results
    Blktests(Blktests),
    /// Boot a guest with the emulated disks (configs/devices/guest.toml's
    /// model devices), run ironlift-devmodel's fixed jobs on each with fio
    /// under `none`, and compare with the models' predictions
    Devices(DevicesCmd),
    /// Write the kernel additions as a git format-patch series with a cover
    /// letter, check that it applies to 6.12, run checkpatch --strict, then
    /// the kernel's clippy (make CLIPPY=1) over rust/ and the modules
    Patches(Patches),
    /// Re-render report.md and charts from a results.json
    Report {
        /// A results.json, or the folder holding it
        path: PathBuf,
    },
    /// Parse a KTAP log (and optionally scan a console log) and give the verdict
    Ktap {
        file: PathBuf,
        #[arg(long)]
        console: Option<PathBuf>,
    },
}

#[derive(Args, Clone)]
pub struct KernelArgs {
    /// Cache folder for kernel trees, builds and disk images
    /// [default: $IRONLIFT_CACHE, else ~/.cache/ironlift]
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Build this kernel source tree (out of tree, into the cache) instead of
    /// Debian's linux-source-6.12; it must already carry ironlift's additions
    #[arg(long, value_name = "DIR")]
    pub kernel_src: Option<PathBuf>,
    /// Use the debug kernel (KASAN, lockdep, DEBUG_LIST, kmemleak, ...)
    #[arg(long)]
    pub debug_kernel: bool,
    /// Parallel make jobs [default: CPUs + 1]
    #[arg(short, long)]
    pub jobs: Option<usize>,
}

#[derive(Args, Clone)]
pub struct GuestArgs {
    /// QEMU accelerator: auto (probe KVM, fall back to TCG), kvm or tcg
    #[arg(long, default_value = "auto")]
    pub accel: String,
    /// Guest vCPUs
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// Guest memory in MiB
    #[arg(long, default_value_t = 2048)]
    pub memory: u32,
}

#[derive(Args)]
pub struct QemuBench {
    #[command(flatten)]
    pub k: KernelArgs,
    #[command(flatten)]
    pub g: GuestArgs,
    /// The short version of the suite
    #[arg(long)]
    pub quick: bool,
    /// Suite name (a file in configs/suites)
    #[arg(long, default_value = "fio-basic")]
    pub suite: String,
    /// Repeats per (device, workload, scheduler), overriding the suite
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Seconds per fio run, overriding the suite
    #[arg(long)]
    pub runtime: Option<u32>,
    /// Comma-separated schedulers [default: built-ins + every rust-* module]
    #[arg(long, value_delimiter = ',')]
    pub schedulers: Option<Vec<String>>,
    /// Comma-separated devices (names in configs/devices/guest.toml)
    #[arg(long, value_delimiter = ',')]
    pub devices: Option<Vec<String>>,
    /// Comma-separated workloads of the suite (a start-up suite: its applications) [default: all]
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Results folder [default: results/<date>-<kernel>[-quick]]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also record a perf profile of each fio run (cpu-clock, all CPUs,
    /// call graphs) into runs/<id>.perf.txt; needs the host's perf
    /// (Debian: linux-perf). Profiling costs throughput: compare
    /// profiled runs only with each other.
    #[arg(long)]
    pub profile: bool,
    /// Count the guest kernel's instructions in each fio run with a
    /// QEMU TCG plugin (qemu/plugins/insn_count.c, built with clang):
    /// instructions per request by scheduler in the report, and each
    /// run's costliest functions in runs/<id>.insns.txt. Unlike IOPS,
    /// the counts do not move with the host's load. TCG only; slows the
    /// guest, so compare such runs only with each other
    #[arg(long, conflicts_with = "profile")]
    pub count_insns: bool,
}

#[derive(Args)]
pub struct Test {
    #[command(flatten)]
    pub k: KernelArgs,
    #[command(flatten)]
    pub g: GuestArgs,
    /// Only the host-side tests
    #[arg(long)]
    pub host_only: bool,
    /// Only the in-guest tests
    #[arg(long)]
    pub guest_only: bool,
    /// Run the guest suite on the base kernel only, not again on the
    /// debug kernel (KASAN, lockdep, kmemleak...); for quick iterations
    #[arg(long, conflicts_with = "debug_kernel")]
    pub no_debug_kernel: bool,
    /// Also run the in-guest tests of the emulated disks (ext4 and XFS on
    /// each, md RAID5 over four) on the debug kernel; the base kernel runs
    /// them by default
    #[arg(long)]
    pub emulated_devices: bool,
    /// Only these in-guest tests (comma-separated names)
    #[arg(long, value_delimiter = ',')]
    pub only: Option<Vec<String>>,
    /// The whole matrix on the debug kernel too: every elevator on every
    /// device (by default the debug kernel tests the elevators beyond
    /// rust-deadline and rust-bfq on the first device only)
    #[arg(long)]
    pub full_matrix: bool,
}

#[derive(Args)]
pub struct Blktests {
    #[command(flatten)]
    pub k: KernelArgs,
    #[command(flatten)]
    pub g: GuestArgs,
    /// Clone blktests from this local clone or mirror instead of the URL
    /// in configs/blktests.toml (it must hold the pinned commit)
    #[arg(long, value_name = "PATH")]
    pub blktests_repo: Option<PathBuf>,
    /// Only these groups or tests, comma-separated (block,loop/001,block/005)
    /// [default: configs/blktests.toml's groups]
    #[arg(long, value_delimiter = ',')]
    pub tests: Option<Vec<String>>,
    /// Results folder [default: target/ironlift-blktests/<time>-<kernel>]
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args)]
pub struct DevicesCmd {
    #[command(flatten)]
    pub k: KernelArgs,
    #[command(flatten)]
    pub g: GuestArgs,
    /// Comma-separated emulated devices [default: every one]
    #[arg(long, value_delimiter = ',')]
    pub devices: Option<Vec<String>>,
    /// Results folder [default: results/<date>-devices]
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Exports of configs/devices/guest.toml's size_mb, as the suites see
    /// them, instead of the model's whole capacity
    #[arg(long)]
    pub configured_size: bool,
}

#[derive(Args)]
pub struct Patches {
    #[command(flatten)]
    pub k: KernelArgs,
    /// Output folder [default: target/patches]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A results folder (or results.json) whose table goes in the cover letter
    #[arg(long)]
    pub results: Option<PathBuf>,
}

impl KernelArgs {
    /// `--jobs`, or the CPUs + 1.
    pub fn jobs(&self) -> usize {
        self.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get() + 1)
                .unwrap_or(3)
        })
    }

    /// What `kernel::ensure` builds.
    pub fn kernel_opts(&self) -> crate::kernel::KernelOpts {
        crate::kernel::KernelOpts {
            cache: crate::util::cache_root(self.cache_dir.as_deref()),
            kernel_src: self.kernel_src.clone(),
            flavor: if self.debug_kernel {
                crate::kernel::Flavor::Debug
            } else {
                crate::kernel::Flavor::Base
            },
            jobs: self.jobs(),
        }
    }
}
