//! `cargo xtask host-bench`: a fio suite on the host's own kernel and a
//! real block device, with the schedulers the device offers.
//!
//! The same plan, guest runner and results as `qemu-bench`: xtask writes
//! the job (plan.tsv, job.env) into the results folder and runs
//! `qemu/guest/fio.sh` on the host with `IRONLIFT_OUT` naming that folder
//! (lib.sh's `OUT`), then reads the runs as [`runner::finish`] does for a
//! guest. Read-only workloads unless `--destructive`, which checks the
//! device first ([`check_destructive`]). The device's scheduler is put
//! back when the runner ends, however it ends.

use super::fio::Fio;
use super::kind::{plan, plan_tsv, Kind, Suite};
use super::runner;
use crate::devices::Device;
use crate::flags::HostBench;
use crate::results::Header;
use crate::util::{self, note, step};
use crate::{guest, kcidb, qemu};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A whole disk of the host, as sysfs describes it.
#[derive(Debug, Clone)]
pub struct HostDisk {
    /// `/dev/<name>`.
    pub path: PathBuf,
    /// The kernel's name: `sdb`, `nvme1n1`, `loop0`.
    pub name: String,
    pub size_bytes: u64,
    /// Vendor and model, or what backs a loop device.
    pub model: String,
    /// The schedulers it offers, and the one in use.
    pub offered: Vec<String>,
    pub current: String,
}

impl HostDisk {
    /// The disk at `dev` (a `/dev` path or a link to one); fails for what
    /// is not a block device, and for a partition (the scheduler is the
    /// whole disk's).
    pub fn open(dev: &Path) -> Result<HostDisk> {
        let path = fs::canonicalize(dev).with_context(|| format!("no device {}", dev.display()))?;
        let meta = fs::metadata(&path)?;
        if !meta.file_type().is_block_device() {
            bail!("{} is not a block device", path.display());
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let class = PathBuf::from("/sys/class/block").join(&name);
        if class.join("partition").exists() {
            let disk = fs::canonicalize(&class)
                .ok()
                .and_then(|p| Some(p.parent()?.file_name()?.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "its disk".into());
            bail!(
                "{} is a partition; give the whole disk, /dev/{disk}: the scheduler is the disk's",
                path.display()
            );
        }
        let sys = PathBuf::from("/sys/block").join(&name);
        let sched = fs::read_to_string(sys.join("queue/scheduler")).with_context(|| {
            format!(
                "{} has no queue/scheduler: not a blk-mq disk",
                sys.display()
            )
        })?;
        let (offered, current) = parse_schedulers(&sched);
        let sectors: u64 = read_trim(&sys.join("size")).parse().unwrap_or(0);
        Ok(HostDisk {
            model: model_of(&sys),
            path,
            name,
            size_bytes: sectors * 512,
            offered,
            current,
        })
    }

    /// The device's `queue/scheduler`.
    fn scheduler_file(&self) -> PathBuf {
        PathBuf::from("/sys/block")
            .join(&self.name)
            .join("queue/scheduler")
    }

    /// One line naming the disk: path, size and model.
    pub fn describe(&self) -> String {
        format!(
            "{}: {} ({} bytes), {}",
            self.path.display(),
            human_bytes(self.size_bytes),
            self.size_bytes,
            self.model
        )
    }
}

/// A file of sysfs, trimmed; empty if unreadable.
fn read_trim(p: &Path) -> String {
    fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// `queue/scheduler`'s offers, and the one in brackets.
fn parse_schedulers(text: &str) -> (Vec<String>, String) {
    let mut current = String::new();
    let offered = text
        .split_whitespace()
        .map(|w| {
            let name = w.trim_matches(|c| c == '[' || c == ']');
            if w.starts_with('[') {
                current = name.to_string();
            }
            name.to_string()
        })
        .collect();
    (offered, current)
}

/// A disk's vendor and model from sysfs, or the file behind a loop device.
fn model_of(sys: &Path) -> String {
    let backing = read_trim(&sys.join("loop/backing_file"));
    if !backing.is_empty() {
        return format!("loop device over {backing}");
    }
    let words: Vec<String> = ["device/vendor", "device/model"]
        .iter()
        .map(|f| read_trim(&sys.join(f)))
        .filter(|s| !s.is_empty())
        .collect();
    if words.is_empty() {
        "model unknown (sysfs has no device/model)".into()
    } else {
        words.join(" ")
    }
}

fn human_bytes(b: u64) -> String {
    let gib = b as f64 / (1u64 << 30) as f64;
    if gib >= 1.0 {
        format!("{gib:.1} GiB")
    } else {
        format!("{} MiB", b >> 20)
    }
}

/// The disk and its partitions: `(name, major:minor)` from sysfs.
fn disk_and_partitions(disk: &HostDisk) -> Vec<(String, String)> {
    let sys = PathBuf::from("/sys/block").join(&disk.name);
    let mut out = vec![(disk.name.clone(), read_trim(&sys.join("dev")))];
    if let Ok(rd) = fs::read_dir(&sys) {
        for e in rd.flatten() {
            if e.path().join("partition").exists() {
                let name = e.file_name().to_string_lossy().into_owned();
                out.push((name, read_trim(&e.path().join("dev"))));
            }
        }
    }
    out.sort();
    out
}

/// Why writing to `disk` would destroy something in use: a mount (of it or
/// a partition), swap, or a holder (md, device-mapper). Empty: none.
pub fn in_use(disk: &HostDisk) -> Vec<String> {
    let parts = disk_and_partitions(disk);
    let mut why = Vec::new();
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for l in mountinfo.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if let Some((name, _)) = parts
            .iter()
            .find(|(_, dev)| f.get(2) == Some(&dev.as_str()))
        {
            why.push(format!(
                "/dev/{name} is mounted on {}",
                f.get(4).unwrap_or(&"?")
            ));
        }
    }
    let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
    for l in swaps.lines().skip(1) {
        let dev = l.split_whitespace().next().unwrap_or_default();
        let base = Path::new(dev).file_name().map(|n| n.to_string_lossy());
        if let Some((name, _)) = parts.iter().find(|(n, _)| base.as_deref() == Some(n)) {
            why.push(format!("/dev/{name} is in use as swap"));
        }
    }
    for (name, _) in &parts {
        let holders = PathBuf::from("/sys/class/block").join(name).join("holders");
        let held: Vec<String> = fs::read_dir(holders)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        if !held.is_empty() {
            why.push(format!("/dev/{name} is held by {}", held.join(", ")));
        }
    }
    why
}

/// What `disk` holds that writing would destroy: partitions, and the
/// partition table and file-system signatures `blkid -p` and `wipefs`
/// find. Empty: none. Fails when blkid or wipefs is missing.
pub fn signatures(disk: &HostDisk) -> Result<Vec<String>> {
    let mut found = Vec::new();
    let parts: Vec<String> = disk_and_partitions(disk)
        .into_iter()
        .skip(1)
        .map(|(n, _)| n)
        .collect();
    if !parts.is_empty() {
        found.push(format!("partitions: {}", parts.join(", ")));
    }
    for tool in ["blkid", "wipefs"] {
        if util::which(tool).is_none() {
            bail!("{tool} is missing: install util-linux (apt-get install util-linux)");
        }
    }
    let out = Command::new("blkid")
        .args(["-p", "-o", "export"])
        .arg(&disk.path)
        .output()?;
    match out.status.code() {
        // 2: nothing found.
        Some(2) => {}
        Some(0) => {
            let what: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.starts_with("TYPE=") || l.starts_with("PTTYPE="))
                .map(str::to_string)
                .collect();
            found.push(format!("blkid -p: {}", what.join(" ")));
        }
        code => found.push(format!(
            "blkid -p could not tell (exit {code:?}: {})",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
    let out = Command::new("wipefs")
        .args(["-n", "--noheadings", "--output", "TYPE,OFFSET"])
        .arg(&disk.path)
        .output()?;
    let listed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        found.push(format!(
            "wipefs -n failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    } else if !listed.is_empty() {
        found.push(format!("wipefs -n: {}", listed.replace('\n', "; ")));
    }
    Ok(found)
}

/// `--destructive`: names the device, its size and model and what will be
/// written; refuses a device in use, and one holding data unless `force`.
fn check_destructive(disk: &HostDisk, writes: &[String], force: bool) -> Result<()> {
    step(&format!(
        "--destructive: the write workloads ({}) overwrite {}",
        writes.join(", "),
        disk.describe()
    ));
    let busy = in_use(disk);
    if !busy.is_empty() {
        bail!(
            "refusing to write to {}: it is in use ({}); --force does not override this",
            disk.path.display(),
            busy.join("; ")
        );
    }
    let held = signatures(disk)?;
    if !held.is_empty() {
        if !force {
            bail!(
                "refusing to write to {}: it holds data ({}); add --force to overwrite it",
                disk.path.display(),
                held.join("; ")
            );
        }
        note(&format!(
            "--force: overwriting what it holds: {}",
            held.join("; ")
        ));
    }
    Ok(())
}

/// Root, or a clear error.
fn require_root() -> Result<()> {
    let uid = util::run(Command::new("id").arg("-u")).unwrap_or_default();
    if uid.trim() != "0" {
        bail!(
            "host-bench needs root: it selects the device's scheduler in sysfs and \
             opens the device for direct I/O; run it with sudo (e.g. `sudo -E cargo xtask \
             host-bench --device /dev/X`)"
        );
    }
    Ok(())
}

/// The schedulers to compare: `--schedulers` (each offered), or all the
/// device offers.
fn schedulers(o: &HostBench, disk: &HostDisk) -> Result<Vec<String>> {
    let Some(want) = &o.schedulers else {
        return Ok(disk.offered.clone());
    };
    if let Some(s) = want.iter().find(|s| !disk.offered.contains(s)) {
        bail!(
            "{} does not offer {s:?}; it offers: {} (a module's scheduler needs its module \
             loaded in the host kernel)",
            disk.path.display(),
            disk.offered.join(", ")
        );
    }
    Ok(want.clone())
}

/// The host, as a results file's header records it: its kernel in
/// `kernel_release`, `accel` `host`, its CPUs and memory.
fn header(suite: &Suite, o: &HostBench, timing: crate::results::Timing) -> Header {
    let version = read_trim(Path::new("/proc/version"));
    let mut h = util::Hasher::new();
    h.add("proc_version", version.as_bytes());
    let mem_kb: u64 = fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    Header {
        schema: Fio::SCHEMA.into(),
        suite: suite.name.clone(),
        suite_description: suite.description.clone(),
        quick: o.quick,
        started: String::new(),
        finished: String::new(),
        kernel_release: read_trim(Path::new("/proc/sys/kernel/osrelease")),
        kernel_key: format!("host-{}", &h.hex()[..16]),
        accel: "host".into(),
        guest_clocksource: read_trim(Path::new(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )),
        host: guest::host_description(),
        guest_cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(0),
        guest_memory_mb: (mem_kb / 1024) as u32,
        timing,
        provenance: Some(kcidb::host_provenance()),
    }
}

/// Runs fio.sh on the host over the job in `out`, putting the device's
/// scheduler back when it ends (by a trap, so also on Ctrl-C).
fn run_on_host(out: &Path, disk: &HostDisk) -> Result<()> {
    let runner = util::repo_root().join("qemu/guest/fio.sh");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(
            "restore() { echo \"$2\" > \"$1\" 2>/dev/null || \
             echo \"IRONLIFT: could not put $2 back in $1\"; }\n\
             trap 'restore \"$1\" \"$2\"' EXIT\n\
             trap 'exit 130' INT TERM HUP\n\
             bash \"$3\"",
        )
        .arg("host-bench")
        .arg(disk.scheduler_file())
        .arg(&disk.current)
        .arg(&runner)
        .env("IRONLIFT_OUT", out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting bash")?;
    let mut stdout = child.stdout.take().context("no stdout")?;
    qemu::read_console(&mut stdout, &out.join("host.log"), "host");
    let status = child.wait()?;
    if !status.success() {
        bail!(
            "the host's runner {} failed ({status}); its output: {}",
            runner.display(),
            out.join("host.log").display()
        );
    }
    let now = HostDisk::open(&disk.path)
        .map(|d| d.current)
        .unwrap_or_default();
    if now != disk.current {
        bail!(
            "{}'s scheduler is {now}, not {} as before: put it back with \
             `echo {} > {}`",
            disk.path.display(),
            disk.current,
            disk.current,
            disk.scheduler_file().display()
        );
    }
    Ok(())
}

// Long: the host's pipeline (checks, plan, job, run, results, verdict)
// in the order it happens, as `runner::run` is for a guest.
/// `cargo xtask host-bench`.
pub fn host_bench(o: &HostBench) -> Result<()> {
    let started_at = std::time::Instant::now();
    let root = util::repo_root();
    let suite = Suite::load(&root, &o.suite)?;
    if suite.kind != Fio::NAME {
        bail!(
            "host-bench runs fio suites; {} is a {} suite",
            suite.name,
            suite.kind
        );
    }
    require_root()?;
    let disk = HostDisk::open(&o.device)?;
    if util::which("fio").is_none() {
        bail!("host-bench runs fio on the host: install it with `apt-get install fio`");
    }
    let (fio, left_out) = Fio::for_host(&suite, o.workloads.as_deref(), o.destructive)?;
    if !left_out.is_empty() {
        note(&format!(
            "read-only: leaving out the write workloads {} (--destructive runs them)",
            left_out.join(", ")
        ));
    }
    if o.destructive {
        let writes = fio.writing_workloads();
        if !writes.is_empty() {
            check_destructive(&disk, &writes, o.force)?;
        }
    }
    let schedulers = schedulers(o, &disk)?;
    fio.check_schedulers(&schedulers, &[])?;
    let timing = runner::timing(&suite, o.quick, o.repeats, o.runtime);
    let cases = fio.cases(&timing);
    let plan = plan(
        std::slice::from_ref(&disk.name),
        &cases,
        &schedulers,
        timing.repeats,
        false,
    );
    let out = o.out.clone().unwrap_or_else(|| {
        root.join("results").join(format!(
            "{}-host-{}{}",
            guest::now("+%Y-%m-%dT%H%M"),
            disk.name,
            if o.quick { "-quick" } else { "" }
        ))
    });
    let devices: BTreeMap<String, Device> = [(
        disk.name.clone(),
        Device {
            path: disk.path.display().to_string(),
            kind: format!(
                "host disk: {}, {}",
                human_bytes(disk.size_bytes),
                disk.model
            ),
            null_blk: None,
            qemu: None,
            model: None,
            paths: Vec::new(),
        },
    )]
    .into();
    let _ = fs::remove_dir_all(out.join("runs"));
    fs::create_dir_all(out.join("runs"))?;
    fs::write(out.join("plan.tsv"), plan_tsv::<Fio>(&plan, &devices)?)?;
    fs::write(
        out.join("job.env"),
        format!("SUITE_KIND={}\n{}", Fio::NAME, fio.job_env(&timing)),
    )?;
    let (estimate, _) = fio.duration(plan.len(), &timing);
    step(&format!(
        "Host benchmark {} on {} under Linux {}: {} runs ({} repeats × {} workloads × {} \
         schedulers), ~{}",
        suite.name,
        disk.describe(),
        read_trim(Path::new("/proc/sys/kernel/osrelease")),
        plan.len(),
        timing.repeats,
        cases.len(),
        schedulers.len(),
        util::human_secs(estimate.saturating_sub(60))
    ));
    note(&format!("results: {}", out.display()));
    let mut header = header(&suite, o, timing);
    header.started = guest::now("-Iseconds");
    run_on_host(&out, &disk)?;
    header.finished = guest::now("-Iseconds");
    let (failed, total) = runner::finish(&fio, &out, plan, header, schedulers, devices)?;
    note(&format!(
        "report: {}  (wall time {})",
        out.join("report.md").display(),
        util::human_secs(started_at.elapsed().as_secs())
    ));
    if failed > 0 {
        bail!("{failed} of {total} runs failed (see the report and runs/*.err)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offered_schedulers_and_the_one_in_use() {
        let (offered, current) = parse_schedulers("none [mq-deadline] kyber bfq\n");
        assert_eq!(offered, ["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(current, "mq-deadline");
        let (offered, current) = parse_schedulers("[none] \n");
        assert_eq!((offered.len(), current.as_str()), (1, "none"));
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }

    #[test]
    fn what_is_not_a_whole_disk_is_refused() {
        let e = HostDisk::open(Path::new("/dev/null")).unwrap_err();
        assert!(format!("{e}").contains("not a block device"), "{e}");
        let e = HostDisk::open(Path::new("/dev/ironlift-no-such-disk")).unwrap_err();
        assert!(format!("{e}").contains("no device"), "{e}");
    }
}
