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
    Deps {
        /// The kernel whose toolchain to install (see `kernel --kernel`)
        #[arg(long, value_enum, default_value_t = crate::kver::Kver::DEFAULT)]
        kernel: crate::kver::Kver,
    },
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
    /// Run a fio suite on the host's own kernel and a real block device,
    /// with the schedulers it offers (as root); read-only workloads unless
    /// --destructive
    HostBench(HostBench),
    /// Compare two kernels or module sets: build both, boot them
    /// alternately running one suite each boot, and report per metric the
    /// ratio candidate/base with a confidence interval and a verdict
    Compare(Compare),
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
    /// The kernel: 6.12 (Debian bookworm's linux-source-6.12, installed)
    /// or 7.3 (trixie-backports' linux-source-7.3, fetched into the cache
    /// with a private apt configuration); each has its own series in
    /// modules/linux, toolchain and cache folder
    #[arg(long, value_enum, default_value_t = crate::kver::Kver::DEFAULT)]
    pub kernel: crate::kver::Kver,
    /// Cache folder for kernel trees, builds and disk images
    /// [default: $IRONLIFT_CACHE, else ~/.cache/ironlift]
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Build this kernel source tree (out of tree, into the cache) instead of
    /// Debian's source of --kernel; it must be of that kernel and already
    /// carry ironlift's additions for it
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

/// What suite and which part of it: `qemu-bench`'s and `compare`'s.
#[derive(Args, Clone)]
pub struct SuiteArgs {
    /// The short version of the suite
    #[arg(long)]
    pub quick: bool,
    /// Suite name (a file in configs/suites); `qemu-bench --suite all`
    /// runs every suite, a boot each, into one folder with an index
    #[arg(long, default_value = "fio-basic")]
    pub suite: String,
    /// Repeats per (device, workload, scheduler), overriding the suite
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Seconds per fio run, overriding the suite
    #[arg(long)]
    pub runtime: Option<u32>,
    /// Comma-separated schedulers, each an elevator or a variant with
    /// tunables, `elevator:tunable=value[:tunable=value]` (`bfq:low_latency=0`)
    /// [default: built-ins + every rust-* module + the suite's variants]
    #[arg(long, value_delimiter = ',')]
    pub schedulers: Option<Vec<String>>,
    /// Comma-separated devices (names in configs/devices/guest.toml)
    #[arg(long, value_delimiter = ',')]
    pub devices: Option<Vec<String>>,
    /// Comma-separated workloads of the suite (a start-up suite: its applications) [default: all]
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Count the guest kernel's instructions in each fio run with a
    /// QEMU TCG plugin (qemu/plugins/insn_count.c, built with clang):
    /// instructions per request by scheduler in the report, and each
    /// run's costliest functions in runs/<id>.insns.txt. Unlike IOPS,
    /// the counts do not move with the host's load. TCG only; slows the
    /// guest, so compare such runs only with each other
    #[arg(long)]
    pub count_insns: bool,
}

#[derive(Args)]
pub struct QemuBench {
    #[command(flatten)]
    pub k: KernelArgs,
    #[command(flatten)]
    pub g: GuestArgs,
    #[command(flatten)]
    pub s: SuiteArgs,
    /// Results folder [default: results/<date>-<kernel>[-quick]]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also record a perf profile of each fio run (cpu-clock, all CPUs,
    /// call graphs) into runs/<id>.perf.txt; needs the host's perf
    /// (Debian: linux-perf). Profiling costs throughput: compare
    /// profiled runs only with each other.
    #[arg(long, conflicts_with = "count_insns")]
    pub profile: bool,
}

/// The two sides of `cargo xtask compare`.
#[derive(Args, Clone, Debug)]
#[group(required = true, multiple = false)]
pub struct Sides {
    /// The candidate is this tree's HEAD with these patches on top: a patch
    /// to this repository (e.g. modules/kernel) is applied to its files; a
    /// patch to the kernel (e.g. block/mq-deadline.c) joins the series in
    /// modules/linux/patches. The base is HEAD as it is
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub patch: Vec<PathBuf>,
    /// Two kernel source trees, base then candidate (see `kernel --kernel-src`)
    #[arg(long = "kernel-src", value_name = "DIR", num_args = 1)]
    pub kernel_src: Vec<PathBuf>,
    /// Two git refs of this repository, base then candidate; each is
    /// checked out into the cache with `git worktree add`
    #[arg(long = "ref", value_name = "REF", num_args = 1)]
    pub git_ref: Vec<String>,
}

#[derive(Args)]
pub struct Compare {
    #[command(flatten)]
    pub sides: Sides,
    /// The kernel both sides build on (see `kernel --kernel`)
    #[arg(long, value_enum, default_value_t = crate::kver::Kver::DEFAULT)]
    pub kernel: crate::kver::Kver,
    #[command(flatten)]
    pub g: GuestArgs,
    /// Cache folder [default: $IRONLIFT_CACHE, else ~/.cache/ironlift]
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Parallel make jobs [default: CPUs + 1]
    #[arg(short, long)]
    pub jobs: Option<usize>,
    /// Build both sides (cached) and stop before booting: on a shared
    /// machine, build outside the lock the boots need, then run again
    #[arg(long)]
    pub build_only: bool,
    /// Boots of each side, alternating (base, candidate, then candidate,
    /// base, ...). A boot's mean is one sample: 4 against 4 is the fewest
    /// that can reach 95 % for one metric, and Holm's correction over all
    /// the metrics compared asks more
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub boots: u32,
    /// Confidence level in percent for the intervals and verdicts
    #[arg(long, default_value_t = 95.0)]
    pub level: f64,
    /// Exit non-zero when a metric is significantly worse by more than PCT
    /// percent (its ratio of medians), and on any boot or run that failed,
    /// any case one side only measured and any metric not judged. Refused
    /// before building when --boots is too few to judge every metric
    #[arg(long, value_name = "PCT")]
    pub fail_if_worse: Option<f64>,
    /// The suite each boot runs (a fio suite), and which part
    #[command(flatten)]
    pub s: SuiteArgs,
    /// Results folder [default: results/<date>-compare[-quick]]
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args)]
pub struct HostBench {
    /// The block device: a whole disk (/dev/sdb, /dev/nvme1n1, /dev/loop0)
    #[arg(long, value_name = "DEV")]
    pub device: PathBuf,
    /// The short version of the suite
    #[arg(long)]
    pub quick: bool,
    /// Suite name (a fio suite in configs/suites)
    #[arg(long, default_value = "fio-basic")]
    pub suite: String,
    /// Repeats per (workload, scheduler), overriding the suite
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Seconds per fio run, overriding the suite
    #[arg(long)]
    pub runtime: Option<u32>,
    /// Comma-separated schedulers [default: every one the device offers]
    #[arg(long, value_delimiter = ',')]
    pub schedulers: Option<Vec<String>>,
    /// Comma-separated workloads of the suite [default: its read-only
    /// ones; with --destructive, all]
    #[arg(long, value_delimiter = ',')]
    pub workloads: Option<Vec<String>>,
    /// Results folder [default: results/<date>-host-<device>[-quick]]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also run the write workloads, overwriting the device's data. Names
    /// the device, its size and model first; refuses a device in use
    /// (mounted, swap, held by md or device-mapper), and one holding a
    /// partition table or file-system signature unless --force
    #[arg(long)]
    pub destructive: bool,
    /// With --destructive: overwrite a partition table or file-system
    /// signature (never a device in use)
    #[arg(long, requires = "destructive")]
    pub force: bool,
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
    /// The whole matrix on the debug kernel too: every scheduler on every
    /// device, the C schedulers as well, the fault tests on the C
    /// references, and the tests left to the base kernel (by default the
    /// debug kernel tests our elevators on null_blk and NVMe, the ones
    /// beyond rust-deadline and rust-bfq on null_blk only)
    #[arg(long)]
    pub full_matrix: bool,
    /// The fault tests only (qemu/guest/tests_faults.sh), the long way:
    /// each case longer, every scheduler on both kernels, switchers on
    /// every device; for a release (the default suite runs them a few
    /// seconds a case)
    #[arg(long)]
    pub faults: bool,
    /// A soak of MINUTES (fault_soak: verified mixed I/O, scheduler
    /// switches, tunable writes, short-lived processes) on the debug
    /// kernel (the base one with --no-debug-kernel)
    #[arg(long, value_name = "MINUTES", conflicts_with = "faults")]
    pub soak: Option<u32>,
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
            kernel: self.kernel,
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
