//! `cargo xtask test`: cargo test over the workspace, then the in-guest
//! KTAP suite (`qemu/guest/tests.sh`) on the base and the debug kernel.

use crate::devices;
use crate::flags::{self, GuestArgs, KernelArgs};
use crate::guest::{self, shell_words};
use crate::util::{self, note, step};
use crate::{blkserve, calibrate, fairness, faults, kernel, ktap, monitor, qemu, summary};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The in-guest tests, in the order tests.sh runs them.
const GUEST_TESTS: &[&str] = &[
    "policy_selftest",
    "select_every_scheduler",
    "write_verify",
    "switch_under_io",
    "rmmod_in_use",
    "tunables_reject_bad_input",
    "historical_tunables",
    "nr_requests_under_io",
    "read_starvation",
    "fairness",
    "bfq_tunables",
    "short_lived_procs",
    "kmemleak",
];

/// The in-guest tests of the emulated disks, which start device servers:
/// on the base kernel by default (about 2 minutes), on the debug kernel
/// with `--emulated-devices`, or as named by `--only`.
const EMULATED_TESTS: &[&str] = &[
    "emulated_fs_verify",
    "emulated_md_raid5",
    "emulated_model_timing",
];

/// emulated_model_timing's jobs (device, `ironlift_devmodel::jobs` name,
/// negative control): ones whose device time is long next to a TCG guest's
/// path to the server (about 0.5 ms a request), so the guest measures the
/// model, not itself: 16 random reads in flight on the disk (about 2 ms
/// each on a 2 GiB export), 1 MiB sequential reads (7 ms each), and the
/// eMMC's random 4 KiB writes (21 ms each). `cargo xtask devices` gives
/// every job, the ones the guest cannot show included. The control runs
/// the same job on another emulated device, whose model predicts a figure
/// well outside the band ([`CONTROL_APART`]): judged against the job's own
/// model it must miss the band, or the band cannot tell one device's
/// timing from another's (as when the guest measures its own overhead).
const TIMING_JOBS: &[(&str, &str, &str)] = &[
    ("hdd-7200", "rand-read-4k-qd16", "sata-ssd"),
    ("hdd-7200", "seq-read-1m-qd4", "sata-ssd"),
    ("emmc", "androbench-rand-write", "sata-ssd"),
];

/// How far apart a control's predicted figure must be from the job's own
/// (as a ratio, either way): a guest within ±15 % of either model is then
/// outside ±15 % of the other (1.15 / 0.85 = 1.35).
const CONTROL_APART: f64 = 1.4;

/// A timing job's model figure on device `dev`.
fn model_figure(
    all: &std::collections::BTreeMap<String, devices::Device>,
    dev: &str,
    job: &ironlift_devmodel::jobs::Job,
) -> Result<(f64, String)> {
    let d = all
        .get(dev)
        .with_context(|| format!("configs/devices/guest.toml has no {dev}"))?;
    let m = d.model.as_ref().context("an emulated device")?;
    let model = calibrate::predict(m, job).context("a model the crate knows")?;
    Ok((model, d.path.clone()))
}

/// /run/out/model_jobs.tsv for emulated_model_timing: per job, its name,
/// the disk, the figure judged, the model's prediction for the device as
/// configured, fio's arguments, and the control's disk.
fn model_jobs_tsv(all: &std::collections::BTreeMap<String, devices::Device>) -> Result<String> {
    let mut tsv = String::new();
    for (dev, job, control) in TIMING_JOBS {
        let j = ironlift_devmodel::jobs::find(job).context("a devmodel job")?;
        let (model, path) = model_figure(all, dev, j)?;
        let (other, control_path) = model_figure(all, control, j)?;
        let apart = (other / model).max(model / other);
        if apart < CONTROL_APART {
            bail!(
                "{job}: the control {control}'s model predicts {other:.1}, {dev}'s {model:.1}: \
                 less than {CONTROL_APART}x apart, so it cannot be told apart in the band"
            );
        }
        let metric = match calibrate::metric(j) {
            ironlift_devmodel::jobs::Metric::Iops => "iops",
            ironlift_devmodel::jobs::Metric::MbS => "mb_s",
        };
        tsv.push_str(&format!(
            "{dev}.{job}\t{path}\t{metric}\t{model:.1}\t{}\t{control_path}\n",
            calibrate::fio_args(j)
        ));
    }
    Ok(tsv)
}

/// The emulated devices the file-system test uses (`EMULATED_DEVS`: the
/// first disk of each).
const EMULATED_DEVICES: &[&str] = &["hdd-7200", "sata-ssd", "emmc"];

/// The md RAID test's device: its disks are `RAID_DEVS`.
const RAID_DEVICE: &str = "hdd-raptor";

/// The devices (names in configs/devices/guest.toml) every scheduler is
/// tested on (`DEVICES`): nullb0 memory backed, NVMe and virtio.
const DEVICES: &[&str] = &["nullb-verify", "nvme", "virtio"];

/// The debug kernel's devices unless `--full-matrix`: null_blk (one
/// hardware queue) and NVMe (one per vCPU). virtio-blk takes the same
/// paths through our code as NVMe.
const DEBUG_DEVICES: &[&str] = &["nullb-verify", "nvme"];

/// The tests the debug kernel's default run leaves to the base kernel,
/// with the reason. The debug kernel's checks (KASAN, lockdep, kmemleak,
/// Rust's overflow checks) are on our code, which its other tests drive
/// through every path these take; what these judge, the base kernel
/// judges better. `--full-matrix` runs them on the debug kernel too.
pub const BASE_KERNEL_ONLY: &[(&str, &str)] = &[
    (
        "write_verify",
        "data integrity on every device and scheduler; on the debug kernel \
         fault_alloc verifies every block each Rust elevator writes",
    ),
    (
        "read_starvation",
        "a latency bound, which timing under KASAN and lockdep cannot meet",
    ),
];

/// Whether the default suite runs `test` on kernel `flavor`.
fn on_kernel(test: &str, flavor: kernel::Flavor, full: bool) -> bool {
    on_kernel_all(flavor, full) || !BASE_KERNEL_ONLY.iter().any(|(t, _)| *t == test)
}

/// Whether the default suite runs every test on kernel `flavor`.
fn on_kernel_all(flavor: kernel::Flavor, full: bool) -> bool {
    flavor == kernel::Flavor::Base || full
}

/// The devices per-device tests use on kernel `flavor`.
fn test_devices(flavor: kernel::Flavor, full: bool) -> &'static [&'static str] {
    if flavor == kernel::Flavor::Debug && !full {
        DEBUG_DEVICES
    } else {
        DEVICES
    }
}

/// Whether the per-scheduler tests leave out the C schedulers
/// (`OURS_ONLY`, tests.sh `scheds_on`): on the debug kernel unless
/// `--full-matrix`, whose checks are on our code; the base kernel runs
/// the C schedulers beside ours as references.
fn ours_only(flavor: kernel::Flavor, full: bool) -> bool {
    flavor == kernel::Flavor::Debug && !full
}

/// The slow, shallow device of the fairness and short_lived_procs tests
/// (`SLOW_DEV`), so requests wait in the scheduler.
const SLOW_DEVICE: &str = "nullb-slow";

/// The read_starvation test's device (`STARVE_DEV`).
const STARVE_DEVICE: &str = "nullb-starve";

/// The elevators every kernel tests on every device; the debug kernel
/// tests the others on the first device only, unless `--full-matrix`.
const WIDE_ELEVATORS: &[&str] = &["rust-deadline", "rust-bfq"];

/// `NARROW_SCHEDULERS` for the guest (tests.sh `scheds_on`): the
/// schedulers left out on all but the first device.
fn narrow_schedulers(elevators: &[String], flavor: kernel::Flavor, full: bool) -> Vec<String> {
    if full || flavor == kernel::Flavor::Base {
        return Vec::new();
    }
    elevators
        .iter()
        .filter(|e| !WIDE_ELEVATORS.contains(&e.as_str()))
        .cloned()
        .collect()
}

/// The schedulers the fairness test judges: ours with weights. C bfq is
/// measured beside them as the reference, not judged.
fn fairness_schedulers(elevators: &[String]) -> Vec<String> {
    elevators
        .iter()
        .filter(|e| *e == "rust-bfq")
        .cloned()
        .collect()
}

/// `cargo xtask test`.
pub fn run(t: &flags::Test) -> Result<()> {
    let root = util::repo_root();
    let mut problems = Vec::new();
    let expected = summary::expected(&root)?;
    let mut sum = summary::Summary::default();
    if !t.guest_only {
        // Some host tests use the build dependencies (the instruction
        // counter's plugin is built with clang): a fresh machine gets
        // them first.
        crate::deps::ensure(t.k.kernel)?;
        step("Host tests: cargo test --workspace");
        let (counts, skips) = host_tests(&root)?;
        if counts.failed > 0 || counts.passed == 0 {
            note("host tests FAILED (output above); going on with the guest tests");
            problems.push(format!(
                "host tests: {} failed, {} passed (cargo test output above)",
                counts.failed, counts.passed
            ));
        }
        sum.host = counts;
        sum.skips.extend(skips);
    }
    let mode = faults::Mode::of(t.faults, t.soak);
    for x in t.only.iter().flatten() {
        let known = [
            GUEST_TESTS,
            EMULATED_TESTS,
            faults::FAULT_TESTS,
            &[faults::SOAK_TEST],
        ];
        if !known.iter().any(|l| l.contains(&x.as_str())) {
            bail!(
                "no in-guest test {x:?}; there are: {}",
                known.map(|l| l.join(", ")).join(", ")
            );
        }
    }
    let flavors: &[kernel::Flavor] = if t.host_only {
        &[]
    } else if t.k.debug_kernel || (t.soak.is_some() && !t.no_debug_kernel) {
        &[kernel::Flavor::Debug]
    } else if t.no_debug_kernel {
        &[kernel::Flavor::Base]
    } else {
        &[kernel::Flavor::Base, kernel::Flavor::Debug]
    };
    for &flavor in flavors {
        let mut k = t.k.clone();
        k.debug_kernel = flavor == kernel::Flavor::Debug;
        let tests = flavor_tests(t, flavor, mode);
        // The guest from a clone where its own tmpfs lies: with the whole
        // suite on the base kernel.
        let elsewhere =
            flavor == kernel::Flavor::Base && t.only.is_none() && mode == faults::Mode::Short;
        let r = guest_tests(&k, &t.g, &tests, elsewhere, t.full_matrix, mode)?;
        // A problem outside the KTAP cases (a timeout, a kernel report on
        // the console, a broken log) is a failed check too.
        let counts = summary::Counts {
            passed: r.passed,
            failed: r.failed.max(usize::from(!r.problems.is_empty())),
            skipped: r.skipped,
        };
        sum.add_guest(flavor.name(), counts, r.skips, r.retried);
        problems.extend(r.problems);
    }
    conclude(&sum, &expected, problems)
}

/// The in-guest tests on kernel `flavor`: `--only`'s, or the default
/// suite's for `mode` (saying what the debug kernel leaves to the base one).
fn flavor_tests(t: &flags::Test, flavor: kernel::Flavor, mode: faults::Mode) -> Vec<String> {
    if let Some(only) = &t.only {
        return only.clone();
    }
    let full = t.full_matrix;
    if mode == faults::Mode::Short && !on_kernel_all(flavor, full) {
        note(&format!(
            "the {} kernel leaves to the base kernel: {}",
            flavor.name(),
            BASE_KERNEL_ONLY
                .iter()
                .map(|(t, why)| format!("{t} ({why})"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let emulated =
        mode == faults::Mode::Short && (flavor == kernel::Flavor::Base || t.emulated_devices);
    mode.tests(GUEST_TESTS, flavor == kernel::Flavor::Base)
        .into_iter()
        .filter(|t| on_kernel(t, flavor, full))
        .chain(
            EMULATED_TESTS
                .iter()
                .filter(|_| emulated)
                .map(|s| s.to_string()),
        )
        .collect()
}

/// Prints the problems and the summary; fails on any problem or on a skip
/// the allow-list does not name.
fn conclude(
    sum: &summary::Summary,
    expected: &[summary::Expected],
    mut problems: Vec<String>,
) -> Result<()> {
    let unexpected: Vec<String> = sum
        .unexpected(expected)
        .iter()
        .map(|s| format!("{}: {}", s.name, s.reason))
        .collect();
    if !unexpected.is_empty() {
        problems.push(format!(
            "{} skip(s) that {} does not list (a test that did not run is not a pass: \
             install what it needs (`cargo xtask deps`), or list it there with the reason):\n  {}",
            unexpected.len(),
            summary::EXPECTED_SKIPS,
            unexpected.join("\n  ")
        ));
    }
    if !problems.is_empty() {
        eprintln!("{}", problems.join("\n"));
    }
    println!("{}", sum.render(expected));
    if !problems.is_empty() {
        bail!(
            "cargo xtask test failed: {} problem(s) above",
            problems.len()
        );
    }
    Ok(())
}

/// Runs `cargo test --workspace`, its output passed through: the counts,
/// and the skips its tests reported (`IRONLIFT_SKIP_LOG`) or `#[ignore]`d.
fn host_tests(root: &Path) -> Result<(summary::Counts, Vec<summary::Skip>)> {
    use std::io::{BufRead, BufReader, Write};
    let dir = root.join("target").join("ironlift-test");
    fs::create_dir_all(&dir)?;
    let log = dir.join("host-skips.tsv");
    fs::write(&log, "")?;
    let mut child = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args(["test", "--workspace"])
        .env("IRONLIFT_SKIP_LOG", &log)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("running cargo test")?;
    let mut output = String::new();
    let stdout = child.stdout.take().context("cargo test's output")?;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        let _ = std::io::stdout().flush();
        output.push_str(&line);
        output.push('\n');
    }
    let status = child.wait().context("waiting for cargo test")?;
    let (mut counts, skips) = summary::cargo_test(&output, &fs::read_to_string(&log)?);
    if !status.success() && counts.failed == 0 {
        // A build error or a crashed test binary: no `test result` says so.
        counts.failed = 1;
    }
    Ok((counts, skips))
}

struct GuestOutcome {
    passed: usize,
    failed: usize,
    skipped: usize,
    /// Skipped cases, (KTAP path, reason).
    skips: Vec<(String, String)>,
    /// Cases that passed on a retry, (KTAP path, what the guest said).
    retried: Vec<(String, String)>,
    problems: Vec<String>,
}

// Long: one boot's steps in order (kernel, modules, devices, boot, KTAP,
// console, verdict), each a few lines.
/// Boots one kernel flavour and runs the in-guest suite.
fn guest_tests(
    k: &KernelArgs,
    g: &GuestArgs,
    tests: &[String],
    elsewhere: bool,
    full_matrix: bool,
    mode: faults::Mode,
) -> Result<GuestOutcome> {
    let root = util::repo_root();
    let p = guest::prepare(k, g)?;
    let out = root.join("target").join("ironlift-test").join(format!(
        "{}-{}",
        guest::now("+%Y%m%dT%H%M%S"),
        p.kernel.flavor.name()
    ));
    fs::create_dir_all(&out)?;
    let all = devices::load(&root)?;
    let used = devices::pick(
        &all,
        test_devices(p.kernel.flavor, full_matrix).iter().copied(),
    )?;
    let made = devices::pick(&all, [DEVICES[0], SLOW_DEVICE, STARVE_DEVICE])?;
    let emulated = tests.iter().any(|t| EMULATED_TESTS.contains(&t.as_str()));
    let models = if emulated {
        devices::pick(&all, EMULATED_DEVICES.iter().chain([&RAID_DEVICE]).copied())?
    } else {
        Vec::new()
    };
    // The disks fault_hot_remove may unplug, through a monitor thread.
    let hot = if tests.iter().any(|t| t == "fault_hot_remove") {
        faults::hot_disks(&all, &p.disks)?
    } else {
        Default::default()
    };
    let hotplug: Vec<(String, String)> = hot
        .iter()
        .map(|(n, (path, _))| (n.clone(), path.clone()))
        .collect();
    let selftest = p
        .modules
        .iter()
        .find(|m| m.name == "ironlift_selftest")
        .map(|m| m.path.display().to_string())
        .unwrap_or_default();
    fs::write(
        out.join("job.env"),
        format!(
            "{}SELFTEST_MODULE='{}'\nSCHEDULERS='{}'\nTESTS='{}'\n\
             SLOW_DEV='{}'\nSTARVE_DEV='{}'\nFAIRNESS_SCHEDULERS='{}'\nKERNEL_FLAVOR='{}'\n\
             EMULATED_DEVS='{}'\nRAID_DEVS='{}'\nNARROW_SCHEDULERS='{}'\nFULL_MATRIX='{}'\n\
             OURS_ONLY='{}'\n",
            p.job_env(used.iter().map(|(_, d)| d), &made)? + &mode.job_env(&hotplug),
            selftest,
            shell_words(p.all_schedulers()),
            shell_words(tests.iter().cloned()),
            made[1].1.path,
            made[2].1.path,
            shell_words(fairness_schedulers(&p.elevators())),
            p.kernel.flavor.name(),
            shell_words(
                models
                    .iter()
                    .filter(|(n, _)| n != RAID_DEVICE)
                    .map(|(_, d)| d.path.clone())
            ),
            shell_words(
                models
                    .iter()
                    .filter(|(n, _)| n == RAID_DEVICE)
                    .flat_map(|(_, d)| d.disk_paths())
            ),
            shell_words(narrow_schedulers(
                &p.elevators(),
                p.kernel.flavor,
                full_matrix
            )),
            u8::from(full_matrix),
            u8::from(ours_only(p.kernel.flavor, full_matrix)),
        ),
    )?;
    if tests.iter().any(|t| t == "emulated_model_timing") {
        fs::write(out.join("model_jobs.tsv"), model_jobs_tsv(&all)?)?;
    }
    let servers = blkserve::start_for(k, &out, models.iter().map(|(n, d)| (n, d)))?;
    step(&format!(
        "In-guest tests ({} kernel, {}): {}",
        p.kernel.flavor.name(),
        p.accel.name().to_uppercase(),
        tests.join(", ")
    ));
    note(&format!("output: {}", out.display()));
    // The debug kernel's full matrix runs every elevator where the
    // default runs two: each fault test up to four times longer.
    let timeout = mode.extra_timeout()
        + match (p.kernel.flavor, full_matrix) {
            (kernel::Flavor::Debug, true) => 1800 + 3600,
            (kernel::Flavor::Debug, false) => 2700,
            _ => 1200,
        };
    let monitor = if hot.is_empty() {
        None
    } else {
        Some(monitor::Monitor::start(
            &out,
            hot.into_iter().map(|(n, (_, h))| (n, h)).collect(),
        )?)
    };
    let boot = qemu::Boot {
        cmdline_extra: guest::flavor_cmdline(p.kernel.flavor).to_string(),
        qemu_extra: servers
            .as_ref()
            .map(|s| s.qemu_args())
            .unwrap_or_default()
            .into_iter()
            .chain(monitor.iter().flat_map(|m| m.qemu_args()))
            .collect(),
        ..p.boot(g, "test", &out, Duration::from_secs(timeout))
    };
    let r = boot.run();
    if let Some(m) = monitor {
        let log = m.stop();
        if !log.is_empty() {
            fs::write(out.join("monitor.log"), log.join("\n") + "\n")?;
        }
    }
    let r = r?;
    let lags = servers.map(|s| s.stop()).transpose();
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
    match lags {
        Ok(Some(l)) => println!("device servers' lag:\n{}", blkserve::lag_markdown(&l)),
        Ok(None) => {}
        Err(e) => problems.push(format!("{which} kernel: {e:#}")),
    }
    let fairness = fairness::collect(&out, p.kernel.flavor.name());
    match &fairness {
        Ok(Some(table)) => println!(
            "fairness, every attempt ({}):\n{table}",
            out.join("fairness.md").display()
        ),
        Ok(None) => {}
        Err(e) => problems.push(format!("{which} kernel: the guest's fairness.tsv: {e:#}")),
    }
    if let Err(e) = r.check_setup(&boot.console_log) {
        problems.push(format!("{which} kernel: {e:#}"));
    }
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
    let (mut passed, mut failed) = (passed, failed);
    if elsewhere {
        for place in HIDDEN_PLACES {
            match boot_from(&p, g, &out, Path::new(place)) {
                Ok(None) => passed += 1,
                Ok(Some(problem)) => {
                    failed += 1;
                    problems.push(format!("{which} kernel: {problem}"));
                }
                Err(e) => {
                    failed += 1;
                    problems.push(format!(
                        "{which} kernel: the guest from a clone under {place} could not run: {e:#}"
                    ));
                }
            }
        }
    }
    Ok(GuestOutcome {
        passed,
        failed,
        skipped,
        skips: report.skips(),
        retried: report.retried(),
        problems,
    })
}

/// Where a clone may lie that the guest's own tmpfs covers (qemu/guest/init
/// mounts one on /tmp and on /run, over the host's).
const HIDDEN_PLACES: &[&str] = &["/tmp", "/run"];

/// Boots the guest with its scripts copied into a folder under `place`, as
/// from a clone there, and runs `select_every_scheduler`: `Some(problem)`
/// if the guest could not run from there, an error if no copy could be
/// made (`place` not writable) or the guest could not be booted.
fn boot_from(
    p: &guest::Prepared,
    g: &GuestArgs,
    out: &Path,
    place: &Path,
) -> Result<Option<String>> {
    let root = util::repo_root();
    let clone = place.join(format!("ironlift-clone-{}", std::process::id()));
    let dir = clone.join("qemu").join("guest");
    let copy = || -> Result<()> {
        let from = root.join("qemu").join("guest");
        for f in util::files_below(&from)? {
            let to = dir.join(f.strip_prefix(&from)?);
            fs::create_dir_all(to.parent().unwrap_or(&dir))?;
            fs::copy(&f, &to).with_context(|| format!("copying {}", f.display()))?;
        }
        Ok(())
    };
    if let Err(e) = copy() {
        let _ = fs::remove_dir_all(&clone);
        return Err(e.context(format!("could not copy qemu/guest to {}", dir.display())));
    }
    let name = format!("from-{}", place.display().to_string().trim_matches('/'));
    let o = out.join(&name);
    fs::create_dir_all(&o)?;
    let all = devices::load(&root)?;
    let used = devices::pick(&all, [DEVICES[0]])?;
    fs::write(
        o.join("job.env"),
        format!(
            "{}SELFTEST_MODULE=''\nSCHEDULERS='{}'\nTESTS='select_every_scheduler'\n",
            p.job_env(used.iter().map(|(_, d)| d), &used)?,
            shell_words(p.all_schedulers()),
        ),
    )?;
    step(&format!(
        "The guest from a clone under {}: select_every_scheduler",
        place.display()
    ));
    let boot = qemu::Boot {
        guest_dir: Some(dir.clone()),
        ..p.boot(g, "test", &o, Duration::from_secs(600))
    };
    let r = boot.run();
    let _ = fs::remove_dir_all(&clone);
    let r = r?;
    if let Err(e) = r.check_setup(&boot.console_log) {
        return Ok(Some(format!("from {}: {e:#}", dir.display())));
    }
    let report = ktap::parse(
        &fs::read_to_string(o.join("ktap.txt")).unwrap_or_default(),
        &name,
    );
    let (passed, ..) = report.counts();
    if r.timed_out || !report.passed() || passed == 0 {
        return Ok(Some(format!(
            "the guest from {} did not pass select_every_scheduler ({report}; console: {})",
            dir.display(),
            boot.console_log.display()
        )));
    }
    note(&format!("ok: {report}"));
    Ok(None)
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
    fn the_debug_kernel_tests_the_other_elevators_on_the_first_device() {
        use crate::kernel::Flavor;
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let els = v(&["rust-deadline", "rust-bfq", "rust-cfq", "rust-noop"]);
        assert!(super::narrow_schedulers(&els, Flavor::Base, false).is_empty());
        assert_eq!(
            super::narrow_schedulers(&els, Flavor::Debug, false),
            v(&["rust-cfq", "rust-noop"])
        );
        assert!(super::narrow_schedulers(&els, Flavor::Debug, true).is_empty());
    }

    #[test]
    fn the_debug_kernel_leaves_timing_and_integrity_to_the_base_kernel() {
        use crate::kernel::Flavor;
        for (t, _) in super::BASE_KERNEL_ONLY {
            assert!(super::GUEST_TESTS.contains(t), "{t}");
            assert!(super::on_kernel(t, Flavor::Base, false));
            assert!(!super::on_kernel(t, Flavor::Debug, false));
            assert!(super::on_kernel(t, Flavor::Debug, true));
        }
        assert!(super::on_kernel("fairness", Flavor::Debug, false));
        assert_eq!(
            super::test_devices(Flavor::Debug, false),
            super::DEBUG_DEVICES
        );
        assert_eq!(super::test_devices(Flavor::Debug, true), super::DEVICES);
        assert_eq!(super::test_devices(Flavor::Base, false), super::DEVICES);
        assert!(super::ours_only(Flavor::Debug, false));
        assert!(!super::ours_only(Flavor::Debug, true) && !super::ours_only(Flavor::Base, false));
    }

    #[test]
    fn timing_jobs_carry_the_models_prediction_fios_arguments_and_a_control() {
        let all = crate::devices::load(&crate::util::repo_root()).unwrap();
        let tsv = super::model_jobs_tsv(&all).unwrap();
        let lines: Vec<Vec<&str>> = tsv.lines().map(|l| l.split('\t').collect()).collect();
        assert_eq!(lines.len(), super::TIMING_JOBS.len());
        for l in &lines {
            assert_eq!(l.len(), 6, "{l:?}");
            assert!(l[1].starts_with("/dev/ironlift/"), "{l:?}");
            assert!(l[3].parse::<f64>().unwrap() > 0.0, "{l:?}");
            assert!(l[4].starts_with(&format!("--name={}", &l[0][l[0].find('.').unwrap() + 1..])));
            assert!(l[5].starts_with("/dev/ironlift/") && l[5] != l[1], "{l:?}");
        }
        assert_eq!(lines[0][2], "iops");
        assert_eq!(lines[1][2], "mb_s");
        assert!(lines[2][4].contains("--rw=randwrite") && lines[2][4].contains("--size=1048576"));
        // A control the band cannot tell from the job's own device is
        // refused.
        let mut same = all.clone();
        let hdd = same["hdd-7200"].clone();
        same.insert("sata-ssd".into(), hdd);
        assert!(super::model_jobs_tsv(&same).is_err());
    }

    #[test]
    fn guest_test_names_match_tests_sh() {
        let read = |f: &str| {
            std::fs::read_to_string(crate::util::repo_root().join("qemu/guest").join(f)).unwrap()
        };
        // The names `var="..."` lists in `sh`.
        let listed = |sh: &str, var: &str| -> Vec<String> {
            sh.lines()
                .find_map(|l| l.strip_prefix(&format!("{var}=\"")))
                .unwrap_or_else(|| panic!("{var} in the guest's test scripts"))
                .trim_end_matches('"')
                .split_whitespace()
                .map(String::from)
                .collect()
        };
        assert_eq!(listed(&read("tests.sh"), "ALL_TESTS"), super::GUEST_TESTS);
        let emulated = read("tests_emulated.sh");
        assert_eq!(listed(&emulated, "EMULATED_TESTS"), super::EMULATED_TESTS);
        assert!(read("tests.sh").contains("/tests_emulated.sh\""));
        assert!(read("tests.sh").contains("/tests_historical.sh\""));
        assert!(read("tests_historical.sh").contains("\nhistorical_tunables() {"));
        for t in super::EMULATED_TESTS {
            assert!(
                emulated.contains(&format!("\n{t}() {{")),
                "{t} in tests_emulated.sh"
            );
        }
    }

    #[test]
    fn the_test_devices_are_described() {
        let all = crate::devices::load(&crate::util::repo_root()).unwrap();
        let made = crate::devices::pick(
            &all,
            [super::DEVICES[0], super::SLOW_DEVICE, super::STARVE_DEVICE],
        )
        .unwrap();
        assert!(crate::devices::nullb_env(&made)
            .unwrap()
            .starts_with("NULLB_DEVICES='0 1 9'\n"));
        assert!(made[0].1.null_blk.as_ref().unwrap().memory_backed);
        crate::devices::pick(&all, super::DEVICES.iter().copied()).unwrap();
        let emulated = crate::devices::pick(&all, super::EMULATED_DEVICES.iter().copied()).unwrap();
        assert!(emulated
            .iter()
            .all(|(_, d)| d.model.is_some() && d.paths.is_empty()));
        assert_eq!(all[super::RAID_DEVICE].disk_paths().len(), 4);
    }
}
