//! `cargo xtask`: ironlift's task runner.
//!
//! The README's two commands are `cargo xtask qemu-bench` (the benchmark
//! suite in a QEMU guest) and `cargo xtask test` (host tests, then the
//! in-guest KTAP suite). The other commands are their steps.

mod bench;
mod clippy;
mod deps;
mod insns;
mod kernel;
mod ktap;
mod modules;
mod patches;
mod qemu;
mod report;
mod startup;
mod util;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use util::{note, step};

/// The schedulers every 6.12 guest offers (built in by configs/kernel).
const BUILTIN_SCHEDULERS: &[&str] = &["none", "mq-deadline", "kyber", "bfq"];

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    about = "ironlift: build, boot, benchmark and test Rust I/O schedulers"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone)]
struct KernelArgs {
    /// Cache folder for kernel trees, builds and disk images
    /// [default: $IRONLIFT_CACHE, else ~/.cache/ironlift]
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Build this kernel source tree (out of tree, into the cache) instead of
    /// Debian's linux-source-6.12; it must already carry ironlift's additions
    #[arg(long, value_name = "DIR")]
    kernel_src: Option<PathBuf>,
    /// Use the debug kernel (KASAN, lockdep, DEBUG_LIST, kmemleak, ...)
    #[arg(long)]
    debug_kernel: bool,
    /// Parallel make jobs [default: CPUs + 1]
    #[arg(short, long)]
    jobs: Option<usize>,
}

#[derive(Args, Clone)]
struct GuestArgs {
    /// QEMU accelerator: auto (probe KVM, fall back to TCG), kvm or tcg
    #[arg(long, default_value = "auto")]
    accel: String,
    /// Guest vCPUs
    #[arg(long, default_value_t = 2)]
    cpus: u32,
    /// Guest memory in MiB
    #[arg(long, default_value_t = 2048)]
    memory: u32,
}

#[derive(Subcommand)]
enum Cmd {
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
    QemuBench {
        #[command(flatten)]
        k: KernelArgs,
        #[command(flatten)]
        g: GuestArgs,
        /// The short version of the suite
        #[arg(long)]
        quick: bool,
        /// Suite name (a file in configs/suites)
        #[arg(long, default_value = "fio-basic")]
        suite: String,
        /// Repeats per (device, workload, scheduler), overriding the suite
        #[arg(long)]
        repeats: Option<u32>,
        /// Seconds per fio run, overriding the suite
        #[arg(long)]
        runtime: Option<u32>,
        /// Comma-separated schedulers [default: built-ins + every rust-* module]
        #[arg(long, value_delimiter = ',')]
        schedulers: Option<Vec<String>>,
        /// Comma-separated devices (names in configs/devices/guest.toml)
        #[arg(long, value_delimiter = ',')]
        devices: Option<Vec<String>>,
        /// Comma-separated workloads of the suite [default: all]
        #[arg(long, value_delimiter = ',')]
        workloads: Option<Vec<String>>,
        /// Results folder [default: results/<date>-<kernel>[-quick]]
        #[arg(long)]
        out: Option<PathBuf>,
        /// Also record a perf profile of each fio run (cpu-clock, all CPUs,
        /// call graphs) into runs/<id>.perf.txt; needs the host's perf
        /// (Debian: linux-perf). Profiling costs throughput: compare
        /// profiled runs only with each other.
        #[arg(long)]
        profile: bool,
        /// Count the guest kernel's instructions in each fio run with a
        /// QEMU TCG plugin (qemu/plugins/insn_count.c, built with clang):
        /// instructions per request by scheduler in the report, and each
        /// run's costliest functions in runs/<id>.insns.txt. Unlike IOPS,
        /// the counts do not move with the host's load. TCG only; slows the
        /// guest, so compare such runs only with each other
        #[arg(long, conflicts_with = "profile")]
        count_insns: bool,
    },
    /// Run the tests: cargo test over the workspace, then the in-guest KTAP suite
    Test {
        #[command(flatten)]
        k: KernelArgs,
        #[command(flatten)]
        g: GuestArgs,
        /// Only the host-side tests
        #[arg(long)]
        host_only: bool,
        /// Only the in-guest tests
        #[arg(long)]
        guest_only: bool,
        /// Run the guest suite on the base kernel only, not again on the
        /// debug kernel (KASAN, lockdep, kmemleak...); for quick iterations
        #[arg(long, conflicts_with = "debug_kernel")]
        no_debug_kernel: bool,
        /// Only these in-guest tests (comma-separated names)
        #[arg(long, value_delimiter = ',')]
        only: Option<Vec<String>>,
    },
    /// Write the kernel additions as a git format-patch series with a cover
    /// letter, check that it applies to 6.12, run checkpatch --strict, then
    /// the kernel's clippy (make CLIPPY=1) over rust/ and the modules
    Patches {
        #[command(flatten)]
        k: KernelArgs,
        /// Output folder [default: target/patches]
        #[arg(long)]
        out: Option<PathBuf>,
        /// A results folder (or results.json) whose table goes in the cover letter
        #[arg(long)]
        results: Option<PathBuf>,
    },
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

fn main() {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Deps => deps::ensure().map(|_| ()),
        Cmd::Kernel { k } => (|| {
            let tc = deps::ensure()?;
            kernel::ensure(&tc, &kernel_opts(&k)).map(|_| ())
        })(),
        Cmd::Modules { k } => (|| {
            let tc = deps::ensure()?;
            let kern = kernel::ensure(&tc, &kernel_opts(&k))?;
            modules::build(&tc, &kern, jobs(&k)).map(|_| ())
        })(),
        Cmd::QemuBench {
            k,
            g,
            quick,
            suite,
            repeats,
            runtime,
            schedulers,
            devices,
            workloads,
            out,
            profile,
            count_insns,
        } => qemu_bench(BenchOpts {
            k,
            g,
            quick,
            suite,
            repeats,
            runtime,
            schedulers,
            devices,
            workloads,
            out,
            profile,
            count_insns,
        }),
        Cmd::Test {
            k,
            g,
            host_only,
            guest_only,
            no_debug_kernel,
            only,
        } => test(&k, &g, host_only, guest_only, no_debug_kernel, only),
        Cmd::Patches { k, out, results } => (|| {
            let tc = deps::ensure()?;
            let mut opts = kernel_opts(&k);
            opts.kernel_src = None;
            let src = kernel::pristine_source(&tc, &opts)?;
            let out = out.unwrap_or_else(|| util::repo_root().join("target/patches"));
            patches::run_cmd(&src, &out, results.as_deref())?;
            // Clippy needs the kernel built with the additions.
            let built = kernel::ensure(&tc, &kernel_opts(&k))?;
            clippy::run(&tc, &built, jobs(&k))
        })(),
        Cmd::Report { path } => rerender(&path),
        Cmd::Ktap { file, console } => ktap_cmd(&file, console.as_deref()),
    };
    if let Err(e) = res {
        eprintln!("\x1b[1;31merror:\x1b[0m {e:#}");
        std::process::exit(1);
    }
}

fn jobs(k: &KernelArgs) -> usize {
    k.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get() + 1)
            .unwrap_or(3)
    })
}

fn kernel_opts(k: &KernelArgs) -> kernel::KernelOpts {
    kernel::KernelOpts {
        cache: util::cache_root(k.cache_dir.as_deref()),
        kernel_src: k.kernel_src.clone(),
        flavor: if k.debug_kernel {
            kernel::Flavor::Debug
        } else {
            kernel::Flavor::Base
        },
        jobs: jobs(k),
    }
}

/// Kernel, modules, accelerator and disks: what every guest job needs.
struct Prepared {
    kernel: kernel::Kernel,
    modules: Vec<modules::Module>,
    accel: qemu::Accel,
    disks: qemu::Disks,
}

fn prepare(k: &KernelArgs, g: &GuestArgs) -> Result<Prepared> {
    let tc = deps::ensure()?;
    let opts = kernel_opts(k);
    let kernel = kernel::ensure(&tc, &opts)?;
    let modules = modules::build(&tc, &kernel, jobs(k))?;
    let accel = qemu::choose_accel(&kernel, &opts.cache, &g.accel)?;
    let disks = qemu::disks(&opts.cache)?;
    Ok(Prepared {
        kernel,
        modules,
        accel,
        disks,
    })
}

fn shell_words(xs: impl IntoIterator<Item = String>) -> String {
    xs.into_iter().collect::<Vec<_>>().join(" ")
}

fn elevators(p: &Prepared) -> Vec<String> {
    p.modules
        .iter()
        .filter_map(|m| m.elevator.clone())
        .collect()
}

fn host_description() -> String {
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

fn now(fmt: &str) -> String {
    util::run(Command::new("date").arg(fmt))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

struct BenchOpts {
    k: KernelArgs,
    g: GuestArgs,
    quick: bool,
    suite: String,
    repeats: Option<u32>,
    runtime: Option<u32>,
    schedulers: Option<Vec<String>>,
    devices: Option<Vec<String>>,
    workloads: Option<Vec<String>>,
    out: Option<PathBuf>,
    profile: bool,
    count_insns: bool,
}

/// The perf the guest runs for `--profile` (the host's, over the 9p root).
const PERF: &str = "/usr/bin/perf";

impl BenchOpts {
    /// The suite's timing (full or quick), with `--repeats` and
    /// `--runtime` applied.
    fn timing(&self, suite: &bench::Suite) -> bench::Timing {
        let mut timing = if self.quick { suite.quick } else { suite.full };
        if let Some(r) = self.repeats {
            timing.repeats = r.max(1);
        }
        if let Some(r) = self.runtime {
            timing.runtime_s = r.max(1);
        }
        timing
    }

    /// `--devices`, or the suite's; each must be a known guest device.
    fn devices(
        &self,
        suite: &bench::Suite,
        all: &std::collections::BTreeMap<String, bench::Device>,
    ) -> Result<Vec<String>> {
        let devices = self
            .devices
            .clone()
            .unwrap_or_else(|| suite.devices.clone());
        for d in &devices {
            if !all.contains_key(d) {
                bail!(
                    "unknown device {d:?}; known: {}",
                    all.keys().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
        Ok(devices)
    }

    /// `--schedulers`, or the built-in ones and every elevator module built.
    fn schedulers(&self, p: &Prepared) -> Vec<String> {
        self.schedulers.clone().unwrap_or_else(|| {
            BUILTIN_SCHEDULERS
                .iter()
                .map(|s| s.to_string())
                .chain(elevators(p))
                .collect()
        })
    }

    /// `--out`, or `results/<date>-<kernel>[-<tag>][-quick]`.
    fn out_dir(&self, root: &Path, p: &Prepared, tag: Option<&str>) -> PathBuf {
        match &self.out {
            Some(d) => d.clone(),
            None => root.join("results").join(format!(
                "{}-{}{}{}",
                now("+%Y-%m-%dT%H%M"),
                p.kernel.release,
                tag.map(|t| format!("-{t}")).unwrap_or_default(),
                if self.quick { "-quick" } else { "" }
            )),
        }
    }

    /// The guest boot of a benchmark whose job folder is `out`.
    fn boot<'a>(
        &self,
        p: &'a Prepared,
        out: &'a Path,
        timeout: Duration,
        qemu_extra: Vec<String>,
    ) -> qemu::Boot<'a> {
        qemu::Boot {
            kernel: &p.kernel,
            accel: p.accel,
            disks: Some(&p.disks),
            out,
            job: "bench",
            timeout,
            console_log: out.join("console.log"),
            memory_mb: self.g.memory,
            cpus: self.g.cpus,
            cmdline_extra: String::new(),
            qemu_extra,
        }
    }
}

/// A run's instruction counts (`<base>.insns`, from the plugin), per
/// request; the listing goes to `<base>.insns.txt`. A run without counts,
/// or whose counts cannot be read, gets none, and says why.
fn count_insns(base: &Path, syms: &insns::Symbols, scheduler: &str) -> Option<insns::InsnCount> {
    let dump = match fs::read_to_string(base.with_extension("insns")) {
        Ok(d) => d,
        Err(e) => {
            note(&format!("{}: no instruction counts ({e})", base.display()));
            return None;
        }
    };
    match insns::summarize(&dump, syms, scheduler, &base.with_extension("insns.txt")) {
        Ok(c) => Some(c),
        Err(e) => {
            note(&format!("{}: instruction counts: {e:#}", base.display()));
            None
        }
    }
}

/// The end of a benchmark: `results.json`, the report (written by
/// `report`), the tables on stdout, then the verdict.
#[allow(clippy::too_many_arguments)]
fn finish_bench(
    out: &Path,
    results_json: String,
    report: impl FnOnce() -> Result<()>,
    table: String,
    started_at: Instant,
    boot: &qemu::Boot,
    r: &qemu::BootResult,
    (failed, total): (usize, usize),
) -> Result<()> {
    fs::write(out.join("results.json"), results_json)?;
    report()?;
    println!("{table}");
    note(&format!(
        "report: {}  (wall time {})",
        out.join("report.md").display(),
        util::human_secs(started_at.elapsed().as_secs())
    ));
    bench_verdict(boot, r, failed, total)
}

fn qemu_bench(o: BenchOpts) -> Result<()> {
    let started_at = Instant::now();
    let root = util::repo_root();
    let mut suite = bench::load_suite(&root, &o.suite)?;
    if let Some(want) = &o.workloads {
        for w in want {
            if !suite.workload.iter().any(|x| &x.name == w) {
                bail!(
                    "suite {} has no workload {w:?}; it has: {}",
                    suite.name,
                    suite
                        .workload
                        .iter()
                        .map(|x| x.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        suite.workload.retain(|x| want.contains(&x.name));
    }
    let all_devices = bench::load_devices(&root)?;
    if suite.kind == bench::SuiteKind::Startup {
        if o.profile || o.count_insns {
            bail!(
                "--profile and --count-insns measure fio runs; suite {} is a start-up suite",
                suite.name
            );
        }
        return startup_bench(o, suite, all_devices, started_at);
    }
    if o.profile && !Path::new(PERF).exists() {
        bail!(
            "--profile needs {PERF}, which the guest runs from the host's root: \
             install it with `apt-get install linux-perf` (as root)"
        );
    }
    let devices = o.devices(&suite, &all_devices)?;
    let p = prepare(&o.k, &o.g)?;
    let plugin = if o.count_insns {
        if p.accel != qemu::Accel::Tcg {
            bail!("--count-insns needs TCG (it is a TCG plugin): add --accel tcg");
        }
        Some(insns::plugin(&kernel_opts(&o.k).cache)?)
    } else {
        None
    };
    let timing = o.timing(&suite);
    let schedulers = o.schedulers(&p);
    if !schedulers.iter().any(|s| s == "none") {
        bail!("--schedulers must include none: every figure is a ratio to it");
    }
    let plan = bench::plan(&suite, &devices, &schedulers, timing);
    let out = o.out_dir(&root, &p, None);
    let used = write_bench_job(
        &out,
        &p,
        &devices,
        &all_devices,
        &bench::plan_tsv(&plan, &all_devices)?,
        &if o.profile {
            format!("PERF={PERF}\n")
        } else if o.count_insns {
            "INSN_COUNT=1\n".to_string()
        } else {
            String::new()
        },
    )?;
    let per_run = timing.runtime_s + timing.ramp_s + 6;
    let estimate = plan.len() as u64 * per_run as u64 + 60;
    step(&format!(
        "Benchmark {}: {} runs ({} repeats × {} devices × {} workloads × {} schedulers), \
         ~{} under {}",
        suite.name,
        plan.len(),
        timing.repeats,
        devices.len(),
        suite.workload.len(),
        schedulers.len(),
        util::human_secs(estimate),
        p.accel.name().to_uppercase()
    ));
    note(&format!("results: {}", out.display()));
    let started = now("-Iseconds");
    let qemu_extra = match &plugin {
        Some(so) => insns::qemu_args(so, &out)?,
        None => Vec::new(),
    };
    let boot = o.boot(
        &p,
        &out,
        Duration::from_secs(estimate * 2 + 300),
        qemu_extra,
    );
    let r = boot.run()?;
    let finished = now("-Iseconds");
    let symbols = if o.count_insns {
        Some(insns::Symbols::load(
            &p.kernel.build.join("System.map"),
            &fs::read_to_string(out.join("modules.txt")).unwrap_or_default(),
            &p.modules,
        )?)
    } else {
        None
    };
    let mut runs = Vec::new();
    for pr in &plan {
        let base = out.join("runs").join(&pr.id);
        let (ok, error, measured) = if let Ok(e) = fs::read_to_string(base.with_extension("err")) {
            (false, Some(e.trim().to_string()), None)
        } else if let Ok(j) = fs::read_to_string(base.with_extension("json")) {
            match bench::parse_fio(&j) {
                Ok(mut m) => {
                    if let Ok(c) = fs::read_to_string(base.with_extension("counters")) {
                        bench::add_counters(&mut m, &c);
                    }
                    if let Some(syms) = &symbols {
                        m.insns = count_insns(&base, syms, &pr.scheduler);
                    }
                    (true, None, Some(m))
                }
                Err(e) => (false, Some(format!("{e:#}")), None),
            }
        } else {
            (
                false,
                Some("no result: the guest stopped before this run".into()),
                None,
            )
        };
        runs.push(bench::RunResult {
            run: pr.clone(),
            ok,
            error,
            measured,
        });
    }
    let summary = bench::summarize(&runs, &schedulers);
    let res = bench::ResultsFile {
        schema: bench::SCHEMA.into(),
        suite: suite.name.clone(),
        suite_description: suite.description.clone(),
        quick: o.quick,
        started,
        finished,
        kernel_release: p.kernel.release.clone(),
        kernel_key: p.kernel.key.clone(),
        accel: p.accel.name().into(),
        guest_clocksource: qemu::guest_clocksource(&out),
        host: host_description(),
        guest_cpus: o.g.cpus,
        guest_memory_mb: o.g.memory,
        timing,
        schedulers: schedulers.clone(),
        devices: used,
        workloads: suite.workload.clone(),
        runs,
        summary,
    };
    let failed = res.runs.iter().filter(|r| !r.ok).count();
    finish_bench(
        &out,
        serde_json::to_string_pretty(&res)?,
        || report::write(&out, &res),
        bench::table_markdown(&res),
        started_at,
        &boot,
        &r,
        (failed, res.runs.len()),
    )
}

/// `qemu-bench` for a `kind = "startup"` suite: start-up time under
/// background readers, per scheduler (see xtask/src/startup.rs).
fn startup_bench(
    o: BenchOpts,
    suite: bench::Suite,
    all_devices: std::collections::BTreeMap<String, bench::Device>,
    started_at: Instant,
) -> Result<()> {
    let root = util::repo_root();
    let spec = suite
        .startup
        .clone()
        .context("startup suite without [startup]")?;
    spec.validate()?;
    let timing = o.timing(&suite);
    let devices = o.devices(&suite, &all_devices)?;
    let p = prepare(&o.k, &o.g)?;
    let schedulers = o.schedulers(&p);
    for need in startup::REFERENCES
        .iter()
        .map(|s| s.to_string())
        .chain(elevators(&p))
    {
        if !schedulers.contains(&need) {
            bail!(
                "--schedulers must include {need}: start-up times are compared with \
                 mq-deadline and bfq, and every rust-* elevator built is measured"
            );
        }
    }
    let plan = startup::plan(&devices, &schedulers, timing.repeats);
    let out = o.out_dir(&root, &p, Some(&suite.name));
    let used = write_bench_job(
        &out,
        &p,
        &devices,
        &all_devices,
        &startup::plan_tsv(&plan, &all_devices)?,
        &spec.job_env(&timing),
    )?;
    // Setup (mkfs, files) plus, per run, fio's start, the head start and a
    // start-up of some seconds; the timeout allows every run its cap.
    let estimate = 120 + plan.len() as u64 * (timing.ramp_s as u64 + 25);
    let timeout = 600 + plan.len() as u64 * (timing.runtime_s as u64 + timing.ramp_s as u64 + 60);
    step(&format!(
        "Benchmark {}: {} runs ({} repeats × {} devices × {} schedulers), ~{} under {}",
        suite.name,
        plan.len(),
        timing.repeats,
        devices.len(),
        schedulers.len(),
        util::human_secs(estimate),
        p.accel.name().to_uppercase()
    ));
    note(&format!("results: {}", out.display()));
    let started = now("-Iseconds");
    let boot = o.boot(&p, &out, Duration::from_secs(timeout), Vec::new());
    let r = boot.run()?;
    let finished = now("-Iseconds");
    let runs: Vec<startup::StartupRun> = plan
        .iter()
        .map(|pr| {
            let (ok, error, measured) = startup::read_run(&out.join("runs"), &pr.id);
            startup::StartupRun {
                run: pr.clone(),
                ok,
                error,
                measured,
            }
        })
        .collect();
    let summary = startup::summarize(&runs, &schedulers);
    let res = startup::StartupResults {
        schema: startup::SCHEMA.into(),
        suite: suite.name.clone(),
        suite_description: suite.description.clone(),
        quick: o.quick,
        started,
        finished,
        kernel_release: p.kernel.release.clone(),
        kernel_key: p.kernel.key.clone(),
        accel: p.accel.name().into(),
        guest_clocksource: qemu::guest_clocksource(&out),
        host: host_description(),
        guest_cpus: o.g.cpus,
        guest_memory_mb: o.g.memory,
        timing,
        startup: spec,
        schedulers,
        devices: used,
        runs,
        summary,
    };
    let failed = res.runs.iter().filter(|r| !r.ok).count();
    finish_bench(
        &out,
        serde_json::to_string_pretty(&res)?,
        || startup::write_report(&out, &res),
        startup::table_markdown(&res),
        started_at,
        &boot,
        &r,
        (failed, res.runs.len()),
    )
}

/// Lays out a benchmark's job folder for the guest: an empty `runs/`, the
/// plan, and job.env (the elevator modules to load, the devices, the
/// null_blk settings, then `extra_env`). Returns the devices used.
fn write_bench_job(
    out: &Path,
    p: &Prepared,
    devices: &[String],
    all_devices: &std::collections::BTreeMap<String, bench::Device>,
    plan_tsv: &str,
    extra_env: &str,
) -> Result<std::collections::BTreeMap<String, bench::Device>> {
    let _ = fs::remove_dir_all(out.join("runs"));
    fs::create_dir_all(out.join("runs"))?;
    fs::write(out.join("plan.tsv"), plan_tsv)?;
    let used: std::collections::BTreeMap<String, bench::Device> = devices
        .iter()
        .filter_map(|d| all_devices.get(d).map(|x| (d.clone(), x.clone())))
        .collect();
    fs::write(
        out.join("job.env"),
        format!(
            "MODULES='{}'\nDEVICES='{}'\nNULLB_MEMORY_BACKED=0\nNULLB_SIZE_MB=1024\nNULLB_IRQMODE=1\n{}{}",
            shell_words(
                p.modules
                    .iter()
                    .filter(|m| m.elevator.is_some())
                    .map(|m| m.path.display().to_string())
            ),
            shell_words(used.values().map(|d| d.path.clone())),
            bench::nullb_env(&used)?,
            extra_env,
        ),
    )?;
    Ok(used)
}

/// A benchmark fails when the guest hung, the kernel complained on the
/// console, or a run failed; the results are written before this check.
fn bench_verdict(
    boot: &qemu::Boot,
    r: &qemu::BootResult,
    failed: usize,
    total: usize,
) -> Result<()> {
    let trouble = ktap::console_problems(&r.console);
    if r.timed_out {
        bail!(
            "the guest did not finish within {}s; console log: {}",
            boot.timeout.as_secs(),
            boot.console_log.display()
        );
    }
    if !trouble.is_empty() {
        bail!(
            "the kernel reported trouble during the benchmark:\n{}\nconsole log: {}",
            trouble.join("\n---\n"),
            boot.console_log.display()
        );
    }
    if failed > 0 {
        bail!("{failed} of {total} runs failed (see the report and runs/*.err)");
    }
    Ok(())
}

fn rerender(path: &Path) -> Result<()> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let schema = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("schema")?.as_str().map(str::to_string))
        .unwrap_or_default();
    if schema == startup::SCHEMA {
        let res: startup::StartupResults = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a valid {schema} file", file.display()))?;
        startup::write_report(dir, &res)?;
        println!("{}", startup::table_markdown(&res));
        note(&format!("wrote {}", dir.join("report.md").display()));
        return Ok(());
    }
    let mut res: bench::ResultsFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not an {} results file",
            file.display(),
            bench::SCHEMA
        )
    })?;
    // The summary is derived from the runs: recompute it, so that a report
    // of an older file has every column this version computes.
    res.summary = bench::summarize(&res.runs, &res.schedulers);
    report::write(dir, &res)?;
    println!("{}", bench::table_markdown(&res));
    note(&format!("wrote {}", dir.join("report.md").display()));
    Ok(())
}

fn ktap_cmd(file: &Path, console: Option<&Path>) -> Result<()> {
    let text = fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let r = ktap::parse(&text, &file.display().to_string());
    println!("{r}");
    let mut ok = r.passed();
    if let Some(c) = console {
        let problems = ktap::console_problems(&fs::read_to_string(c)?);
        for p in &problems {
            println!("kernel trouble in {}:\n{p}", c.display());
        }
        ok &= problems.is_empty();
    }
    if !ok {
        bail!("KTAP verdict: fail");
    }
    Ok(())
}

/// The in-guest tests, in the order tests.sh runs them.
const GUEST_TESTS: &[&str] = &[
    "policy_selftest",
    "select_every_scheduler",
    "write_verify",
    "switch_under_io",
    "rmmod_in_use",
    "tunables_reject_bad_input",
    "nr_requests_under_io",
    "read_starvation",
    "fairness",
    "bfq_tunables",
    "short_lived_procs",
    "kmemleak",
];

/// The device (a name in configs/devices/guest.toml) of the fairness test
/// and the startup suite: slow and shallow, so requests wait in the scheduler.
const SLOW_DEVICE: &str = "nullb-slow";

/// The schedulers the fairness test judges: ours with weights. C bfq is
/// measured beside them as the reference, not judged.
fn fairness_schedulers(elevators: &[String]) -> Vec<String> {
    elevators
        .iter()
        .filter(|e| *e == "rust-bfq")
        .cloned()
        .collect()
}

fn test(
    k: &KernelArgs,
    g: &GuestArgs,
    host_only: bool,
    guest_only: bool,
    no_debug_kernel: bool,
    only: Option<Vec<String>>,
) -> Result<()> {
    let root = util::repo_root();
    let mut problems = Vec::new();
    if !guest_only {
        step("Host tests: cargo test --workspace");
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(&root)
            .args(["test", "--workspace"])
            .status()
            .context("running cargo test")?;
        if !status.success() {
            note("host tests FAILED (output above); going on with the guest tests");
            problems.push("host tests failed (cargo test output above)".to_string());
        }
    }
    let tests: Vec<String> = match only {
        Some(t) => {
            for x in &t {
                if !GUEST_TESTS.contains(&x.as_str()) {
                    bail!(
                        "no in-guest test {x:?}; there are: {}",
                        GUEST_TESTS.join(", ")
                    );
                }
            }
            t
        }
        None => GUEST_TESTS.iter().map(|s| s.to_string()).collect(),
    };
    let flavors: &[kernel::Flavor] = if host_only {
        &[]
    } else if k.debug_kernel {
        &[kernel::Flavor::Debug]
    } else if no_debug_kernel {
        &[kernel::Flavor::Base]
    } else {
        &[kernel::Flavor::Base, kernel::Flavor::Debug]
    };
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for &flavor in flavors {
        let mut k = k.clone();
        k.debug_kernel = flavor == kernel::Flavor::Debug;
        let r = guest_tests(&k, g, &tests)?;
        passed += r.passed;
        failed += r.failed;
        skipped += r.skipped;
        problems.extend(r.problems);
    }
    println!(
        "guest: {passed} passed, {} failed, {skipped} skipped",
        failed + usize::from(!problems.is_empty() && failed == 0)
    );
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    Ok(())
}

struct GuestOutcome {
    passed: usize,
    failed: usize,
    skipped: usize,
    problems: Vec<String>,
}

/// Boots one kernel flavour and runs the in-guest suite.
fn guest_tests(k: &KernelArgs, g: &GuestArgs, tests: &[String]) -> Result<GuestOutcome> {
    let root = util::repo_root();
    let p = prepare(k, g)?;
    let out = root.join("target").join("ironlift-test").join(format!(
        "{}-{}",
        now("+%Y%m%dT%H%M%S"),
        p.kernel.flavor.name()
    ));
    fs::create_dir_all(&out)?;
    let devices = bench::load_devices(&root)?;
    let dev_paths: Vec<String> = ["nullb", "nvme", "virtio"]
        .iter()
        .filter_map(|d| devices.get(*d).map(|x| x.path.clone()))
        .collect();
    let schedulers: Vec<String> = BUILTIN_SCHEDULERS
        .iter()
        .map(|s| s.to_string())
        .chain(elevators(&p))
        .collect();
    let selftest = p
        .modules
        .iter()
        .find(|m| m.name == "ironlift_selftest")
        .map(|m| m.path.display().to_string())
        .unwrap_or_default();
    let slow = devices
        .get(SLOW_DEVICE)
        .with_context(|| format!("configs/devices/guest.toml has no {SLOW_DEVICE:?}"))?;
    fs::write(
        out.join("job.env"),
        format!(
            "MODULES='{}'\nSELFTEST_MODULE='{}'\nDEVICES='{}'\nSCHEDULERS='{}'\nTESTS='{}'\n\
             NULLB_MEMORY_BACKED=1\nNULLB_SIZE_MB=512\nNULLB_IRQMODE=1\n\
             SLOW_DEV='{}'\nFAIRNESS_SCHEDULERS='{}'\nKERNEL_FLAVOR='{}'\n{}",
            shell_words(
                p.modules
                    .iter()
                    .filter(|m| m.elevator.is_some())
                    .map(|m| m.path.display().to_string())
            ),
            selftest,
            shell_words(dev_paths),
            shell_words(schedulers.clone()),
            shell_words(tests.iter().cloned()),
            slow.path,
            shell_words(fairness_schedulers(&elevators(&p))),
            p.kernel.flavor.name(),
            // The tests use only the slow device of the extra null_blks.
            bench::nullb_env([(&SLOW_DEVICE.to_string(), slow)])?,
        ),
    )?;
    step(&format!(
        "In-guest tests ({} kernel, {}): {}",
        p.kernel.flavor.name(),
        p.accel.name().to_uppercase(),
        tests.join(", ")
    ));
    note(&format!("output: {}", out.display()));
    let timeout = if p.kernel.flavor == kernel::Flavor::Debug {
        1800
    } else {
        900
    };
    let boot = qemu::Boot {
        kernel: &p.kernel,
        accel: p.accel,
        disks: Some(&p.disks),
        out: &out,
        job: "test",
        timeout: Duration::from_secs(timeout),
        console_log: out.join("console.log"),
        memory_mb: g.memory,
        cpus: g.cpus,
        // Under KASAN and lockdep the ACPI interpreter is so slow that
        // every PCI device's `_PRT` evaluation runs into the AML loop
        // timeout (30 s each, minutes per boot). The devices use MSI/MSI-X;
        // legacy interrupt routing comes from the BIOS table instead.
        //
        // `no5lvl`: with `-cpu max` TCG offers LA57, and under 5-level
        // paging inline KASAN gives a flaky false "wild-memory-access in
        // do_raw_spin_lock" at boot: identify_cpu() clears the boot CPU's
        // capabilities for a moment, KASAN_SHADOW_START is then computed
        // for 47-bit addresses, and an interrupt taking its descriptor lock
        // (a 5-level direct-map address) is reported (lkml, June 2026,
        // "kasan: Fix false-positive wild-memory-access on x86 under
        // 5-level paging"). CI hit it once; 4-level paging avoids it.
        cmdline_extra: if p.kernel.flavor == kernel::Flavor::Debug {
            "acpi=noirq no5lvl".to_string()
        } else {
            String::new()
        },
        qemu_extra: Vec::new(),
    };
    let r = boot.run()?;
    note(&format!(
        "guest ran for {}",
        util::human_secs(r.wall.as_secs())
    ));
    let ktap_text = fs::read_to_string(out.join("ktap.txt")).unwrap_or_default();
    let report = ktap::parse(&ktap_text, "guest");
    let trouble = ktap::console_problems(&r.console);
    let (passed, failed, skipped) = report.counts();
    println!("{} kernel: {report}", p.kernel.flavor.name());
    let mut problems = Vec::new();
    let which = p.kernel.flavor.name();
    if r.timed_out {
        problems.push(format!(
            "{which} kernel: the guest did not finish within {timeout}s (console log kept: {})",
            boot.console_log.display()
        ));
    }
    for t in &trouble {
        problems.push(format!("{which} kernel: trouble on the console:\n{t}"));
    }
    if !report.passed() {
        problems.push(format!(
            "{which} kernel: in-guest KTAP verdict: fail (ktap: {}, console: {})",
            out.join("ktap.txt").display(),
            boot.console_log.display()
        ));
    }
    Ok(GuestOutcome {
        passed,
        failed,
        skipped,
        problems,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn fairness_judges_rust_bfq_once_built() {
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(super::fairness_schedulers(&[]).is_empty());
        assert!(super::fairness_schedulers(&v(&["rust-deadline"])).is_empty());
        assert_eq!(
            super::fairness_schedulers(&v(&["rust-deadline", "rust-bfq"])),
            v(&["rust-bfq"])
        );
    }

    #[test]
    fn guest_test_names_match_tests_sh() {
        let sh =
            std::fs::read_to_string(crate::util::repo_root().join("qemu/guest/tests.sh")).unwrap();
        let line = sh
            .lines()
            .find_map(|l| l.strip_prefix("ALL_TESTS=\""))
            .expect("ALL_TESTS in tests.sh");
        let names: Vec<&str> = line.trim_end_matches('"').split_whitespace().collect();
        assert_eq!(names, super::GUEST_TESTS);
    }
}
