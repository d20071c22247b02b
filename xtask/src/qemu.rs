//! Booting the guest: the machine definition, disks, accelerator probe,
//! console capture with progress, and the timeout that cuts a hang.
//!
//! The guest's root file system is the host's `/`, shared read-only over
//! 9p, so the guest runs the host's fio, sqlite3 and friends unchanged and
//! sees this clone and the cache at the same paths. A second, writable 9p
//! share (`out`) carries the job in and the results out.

use crate::devices::{Device, QemuDisk};
use crate::kernel::Kernel;
use crate::util::{self, note, run, step};
use anyhow::{bail, Context, Result};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Which accelerator QEMU uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    Kvm,
    Tcg,
}

impl Accel {
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// The disks QEMU attaches (the devices with a `qemu` table in
/// `configs/devices/guest.toml`). Each run gets its own sparse images (QEMU
/// locks images, and tests write to them), removed when the run ends.
#[derive(Debug)]
pub struct Disks {
    /// The `-drive` and `-device` arguments for every disk.
    args: Vec<String>,
    dir: PathBuf,
}

impl Drop for Disks {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// How QEMU opens every disk image: raw (the image is a plain sparse
/// file), `cache=none` (O_DIRECT: the host's page cache does not absorb
/// the guest's I/O), `aio=threads`.
const DRIVE_OPTIONS: &str = "format=raw,cache=none,aio=threads";

/// The `-drive` value (and HMP `drive_add`'s) of `disk` with `image` as
/// its backing file.
pub fn drive_spec(disk: &QemuDisk, image: &Path) -> Result<String> {
    Ok(format!(
        "file={},if=none,id={},{DRIVE_OPTIONS}",
        image.display(),
        disk.drive_id()?
    ))
}

/// The QEMU arguments that attach `disk` with `image` as its backing file.
pub fn disk_args(disk: &QemuDisk, image: &Path) -> Result<Vec<String>> {
    let mut args = vec!["-drive".to_string(), drive_spec(disk, image)?];
    for d in &disk.devices {
        args.extend(["-device".to_string(), d.clone()]);
    }
    Ok(args)
}

impl Disks {
    /// The backing file of device `name` (in configs/devices/guest.toml).
    pub fn image(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.img"))
    }
}

/// Creates this run's backing files (sparse, raw; `<name>.img`) for every
/// device of `devices` that QEMU attaches, in that order.
pub fn disks(cache: &Path, devices: &[(String, Device)]) -> Result<Disks> {
    let dir = cache
        .join("disks")
        .join(format!("run-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    // Made before the images, so that the folder goes on error too.
    let mut disks = Disks {
        args: Vec::new(),
        dir,
    };
    for (name, d) in devices {
        let Some(q) = &d.qemu else { continue };
        let p = disks.image(name);
        let f =
            fs::File::create(&p).with_context(|| format!("creating disk image {}", p.display()))?;
        f.set_len(q.size_mb << 20)?;
        let args = disk_args(q, &p).with_context(|| format!("device {name:?}"))?;
        disks.args.extend(args);
    }
    Ok(disks)
}

/// One guest boot.
pub struct Boot<'a> {
    pub kernel: &'a Kernel,
    pub accel: Accel,
    pub disks: Option<&'a Disks>,
    /// The writable share: job files in, results out.
    pub out: &'a Path,
    /// What the guest's init runs: `bench`, `test`, `probe`.
    pub job: &'a str,
    pub timeout: Duration,
    pub console_log: PathBuf,
    pub memory_mb: u32,
    pub cpus: u32,
    /// Extra kernel command line.
    pub cmdline_extra: String,
    /// Extra QEMU arguments (`--count-insns`: the plugin).
    pub qemu_extra: Vec<String>,
    /// The folder of the guest's init and scripts, if not this clone's
    /// `qemu/guest`.
    pub guest_dir: Option<PathBuf>,
}

/// How a boot ended.
#[derive(Debug)]
pub struct BootResult {
    pub console: String,
    pub timed_out: bool,
    pub wall: Duration,
}

impl BootResult {
    /// An error if the guest's setup (modules, devices: `setup_guest` in
    /// qemu/guest/lib.sh) failed, with what the guest said up to then and
    /// the console log: no run or test could have been done.
    pub fn check_setup(&self, console_log: &Path) -> Result<()> {
        if !self.console.contains("IRONLIFT: guest done (setup-failed)") {
            return Ok(());
        }
        bail!(
            "the guest's setup failed, so nothing ran; the guest said:\n{}\nconsole log: {}",
            guest_said(&self.console),
            console_log.display()
        )
    }
}

/// Reads the console to its end: into the log, and the `IRONLIFT:` lines
/// of `who` (the guest, or the host's runner under `host-bench`) to the
/// user, with a progress bar once it counts its runs or tests. Returns
/// all of it.
pub fn read_console(stdout: &mut impl Read, log_path: &Path, who: &str) -> String {
    // A bar once the guest counts its runs or tests.
    let mut progress: Option<util::Progress> = None;
    let mut log = fs::File::create(log_path).ok();
    let mut all = Vec::new();
    let mut line = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stdout.read(&mut buf) {
        if n == 0 {
            break;
        }
        if let Some(f) = log.as_mut() {
            let _ = f.write_all(&buf[..n]);
        }
        all.extend_from_slice(&buf[..n]);
        for &b in &buf[..n] {
            if b == b'\n' {
                let l = String::from_utf8_lossy(&line);
                let l = l.trim_end_matches('\r');
                if let Some(msg) = guest_message(l) {
                    guest_line(&mut progress, who, msg);
                }
                line.clear();
            } else {
                line.push(b);
            }
        }
    }
    if let Some(p) = &progress {
        p.finish();
    }
    String::from_utf8_lossy(&all).into_owned()
}

/// `(n, total)` of a guest line `run n/total: ...` or `test n/total: ...`.
fn counted(msg: &str) -> Option<(u64, u64)> {
    let rest = msg
        .strip_prefix("run ")
        .or_else(|| msg.strip_prefix("test "))?;
    let (n, rest) = rest.split_once('/')?;
    let (total, _) = rest.split_once(':')?;
    Some((n.parse().ok()?, total.parse().ok()?))
}

/// Shows one of the guest's `IRONLIFT:` lines; a counted one moves the
/// progress bar and carries the estimate of the time left.
fn guest_line(progress: &mut Option<util::Progress>, who: &str, msg: &str) {
    let Some((n, total)) = counted(msg) else {
        match progress {
            Some(p) => p.println(&format!("    [{who}] {msg}")),
            None => eprintln!("    [{who}] {msg}"),
        }
        return;
    };
    let p = progress.get_or_insert_with(|| util::Progress::new(who, Some(total)));
    let done = n.saturating_sub(1);
    let left = p
        .left(done)
        .map(|l| format!("  (~{} left)", util::human_secs(l)))
        .unwrap_or_default();
    p.println(&format!("    [{who}] {msg}{left}"));
    if p.is_bar() {
        p.set(done, msg);
    }
}

/// What a console line says to the user, if it is one of the guest's
/// `IRONLIFT: ` lines (qemu/guest/lib.sh `say`).
fn guest_message(line: &str) -> Option<&str> {
    line.find("IRONLIFT: ").map(|i| &line[i + 10..])
}

/// The guest's `IRONLIFT:` lines, indented.
fn guest_said(console: &str) -> String {
    console
        .lines()
        .filter_map(|l| guest_message(l).map(str::trim_end))
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The kernel option that picks the guest's clocksource under TCG.
///
/// A TCG guest's TSC is the host's own (QEMU reads the host's cycle
/// counter for `rdtsc`), so on a host whose TSC is constant and keeps
/// running in sleep states it is as good a clock as the host's, and the
/// guest calibrates it to the host's rate (2445.39 MHz here, against the
/// host's 2445.42). `tsc=reliable` keeps the clocksource watchdog, which a
/// vCPU thread delayed by the host can fool, from switching away from it.
/// Otherwise the guest runs on the emulated HPET (`tsc=unstable`): every
/// clock read is then an emulated MMIO access, which cost 20-26 % of all
/// guest CPU time on the null_blk benchmark and hides what the schedulers
/// themselves cost. The guest reports the clocksource it ends up with
/// ([`GUEST_CLOCKSOURCE_FILE`]).
fn tcg_tsc_option() -> &'static str {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if host_tsc_is_stable(&cpuinfo) {
        " tsc=reliable"
    } else {
        " tsc=unstable"
    }
}

/// Whether the host's first CPU has a constant, non-stop TSC.
fn host_tsc_is_stable(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .map(|l| {
            let flags: Vec<&str> = l.split_whitespace().collect();
            flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc")
        })
        .unwrap_or(false)
}

/// Where the guest writes the name of its clocksource, in its output
/// folder.
pub const GUEST_CLOCKSOURCE_FILE: &str = "clocksource";

/// The clocksource the guest wrote into `out`, or "unknown".
pub fn guest_clocksource(out: &Path) -> String {
    fs::read_to_string(out.join(GUEST_CLOCKSOURCE_FILE))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(crate::results::unknown_clocksource)
}

fn qemu_bin() -> &'static str {
    "qemu-system-x86_64"
}

impl Boot<'_> {
    fn command(&self) -> Command {
        let init = self
            .guest_dir
            .clone()
            .unwrap_or_else(|| util::repo_root().join("qemu").join("guest"))
            .join("init");
        let mut cmdline = format!(
            "console=ttyS0 root=root rootfstype=9p \
             rootflags=trans=virtio,version=9p2000.L,msize=524288,cache=loose ro \
             init={} panic=-1 null_blk.nr_devices=0 ironlift.job={} {}",
            init.display(),
            self.job,
            self.cmdline_extra
        );
        if self.accel == Accel::Tcg {
            cmdline.push_str(tcg_tsc_option());
        }
        let mut c = Command::new(qemu_bin());
        c.args([
            "-nographic",
            "-no-reboot",
            "-nodefaults",
            "-serial",
            "stdio",
        ])
        .args(["-smp", &self.cpus.to_string()])
        .args(["-m", &format!("{}M", self.memory_mb)]);
        match self.accel {
            Accel::Kvm => c.args(["-accel", "kvm", "-cpu", "host"]),
            Accel::Tcg => c.args(["-accel", "tcg", "-cpu", "max"]),
        };
        c.arg("-kernel")
            .arg(&self.kernel.bzimage)
            .arg("-append")
            .arg(cmdline)
            .args([
                "-virtfs",
                "local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap",
            ])
            .arg("-virtfs")
            .arg(format!(
                "local,path={},mount_tag=out,security_model=none",
                self.out.display()
            ));
        if let Some(d) = self.disks {
            c.args(&d.args);
        }
        c.args(&self.qemu_extra);
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Boots, streams the console to the log (and `IRONLIFT:` lines to the
    /// user), and cuts the guest at the timeout. QEMU killed by a signal
    /// (its own crash, not the timeout's kill) is an error naming it; if
    /// that happened before the guest said anything (`IRONLIFT:`), so that
    /// no test ran, the guest is booted once more, the first console kept
    /// beside the log (`.crashed`).
    pub fn run(&self) -> Result<BootResult> {
        let (r, signal) = self.run_once()?;
        let Some(sig) = signal else { return Ok(r) };
        if r.console.contains("IRONLIFT:") {
            bail!(
                "QEMU died of signal {sig} {} s into the boot, the guest's job under way \
                 (console log: {})",
                r.wall.as_secs(),
                self.console_log.display()
            );
        }
        let kept = self.console_log.with_extension("crashed");
        let _ = fs::rename(&self.console_log, &kept);
        crate::util::note(&format!(
            "QEMU died of signal {sig} {} s into the boot, before the guest started its \
             job (console: {}): booting once more",
            r.wall.as_secs(),
            kept.display()
        ));
        match self.run_once()? {
            (r, None) => Ok(r),
            (_, Some(sig)) => bail!(
                "QEMU died of signal {sig} twice (console log: {})",
                self.console_log.display()
            ),
        }
    }

    /// One boot: its result, and the signal that killed QEMU if one did
    /// (other than the timeout's kill).
    fn run_once(&self) -> Result<(BootResult, Option<i32>)> {
        use std::os::unix::process::ExitStatusExt;
        let mut cmd = self.command();
        if let Some(d) = self.console_log.parent() {
            fs::create_dir_all(d)?;
        }
        fs::write(
            self.console_log.with_extension("cmd"),
            util::show(&cmd) + "\n",
        )?;
        let start = Instant::now();
        let mut child = cmd
            .spawn()
            .with_context(|| format!("could not start {}", qemu_bin()))?;
        let mut stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let log_path = self.console_log.clone();
        let reader = std::thread::spawn(move || read_console(&mut stdout, &log_path, "guest"));
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let mut timed_out = false;
        let mut signal = None;
        loop {
            if let Some(status) = child.try_wait()? {
                signal = status.signal();
                break;
            }
            if start.elapsed() > self.timeout {
                timed_out = true;
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let console = reader.join().unwrap_or_default();
        let qemu_err = err_reader.join().unwrap_or_default();
        if !qemu_err.trim().is_empty() {
            fs::write(self.console_log.with_extension("qemu-stderr"), &qemu_err)?;
        }
        if console.trim().is_empty() && !qemu_err.trim().is_empty() && !timed_out {
            bail!("QEMU failed to start the guest:\n{qemu_err}");
        }
        Ok((
            BootResult {
                console,
                timed_out,
                wall: start.elapsed(),
            },
            signal,
        ))
    }
}

/// Picks the accelerator: `tcg` or `kvm` when asked, else a probe boot of
/// `kernel` under KVM decides. Whether KVM works is the host's matter (its
/// KVM, its QEMU), so the result is cached per QEMU and host kernel: the
/// base and the debug guest kernel share one probe.
pub fn choose_accel(kernel: &Kernel, cache: &Path, want: &str) -> Result<Accel> {
    match want {
        "tcg" => return Ok(Accel::Tcg),
        "kvm" => return Ok(Accel::Kvm),
        "auto" => {}
        other => bail!("--accel must be auto, kvm or tcg, not {other:?}"),
    }
    if !Path::new("/dev/kvm").exists() {
        note("accelerator: TCG (no /dev/kvm)");
        return Ok(Accel::Tcg);
    }
    let qemu_version = run(Command::new(qemu_bin()).arg("--version")).unwrap_or_default();
    let mut h = util::Hasher::new();
    h.add("qemu", qemu_version.as_bytes());
    let host = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    h.add("host kernel", host.trim().as_bytes());
    let stamp = cache.join("accel-probe").join(h.hex());
    if let Ok(s) = fs::read_to_string(&stamp) {
        let accel = if s.trim() == "kvm" {
            Accel::Kvm
        } else {
            Accel::Tcg
        };
        note(&format!(
            "accelerator: {} (probe result cached in {})",
            accel.name().to_uppercase(),
            stamp.display()
        ));
        return Ok(accel);
    }
    step("Probing whether a KVM guest boots here (once per QEMU and host kernel)");
    let out = cache.join("accel-probe").join("out");
    fs::create_dir_all(&out)?;
    let boot = Boot {
        kernel,
        accel: Accel::Kvm,
        disks: None,
        out: &out,
        job: "probe",
        timeout: Duration::from_secs(40),
        console_log: cache.join("accel-probe").join("kvm-console.log"),
        memory_mb: 512,
        cpus: 1,
        cmdline_extra: String::new(),
        qemu_extra: Vec::new(),
        guest_dir: None,
    };
    let ok = match boot.run() {
        Ok(r) => !r.timed_out && r.console.contains("IRONLIFT: probe ok"),
        Err(_) => false,
    };
    let accel = if ok { Accel::Kvm } else { Accel::Tcg };
    fs::write(&stamp, accel.name())?;
    note(&format!(
        "accelerator: {} ({})",
        accel.name().to_uppercase(),
        if ok {
            "a KVM guest booted"
        } else {
            "a KVM guest did not reach userspace within 40 s; see accel-probe/kvm-console.log"
        }
    ));
    Ok(accel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_guest_lines_give_the_position() {
        assert_eq!(
            counted("run 24/144: nullb0 kyber seqwrite"),
            Some((24, 144))
        );
        assert_eq!(counted("test 3/12: write_verify"), Some((3, 12)));
        assert_eq!(counted("test 3: write_verify"), None);
        assert_eq!(counted("loaded rust_bfq.ko"), None);
    }

    #[test]
    fn a_failed_setup_is_an_error_naming_the_reason_and_the_log() {
        let r = |console: &str| BootResult {
            console: console.into(),
            timed_out: false,
            wall: Duration::ZERO,
        };
        let log = Path::new("/out/console.log");
        let failed = r("[    1.0] x\r\nIRONLIFT: guest up: kernel 6.12\r\n\
                        IRONLIFT: insmod /c/rust_bfq.ko failed\r\nIRONLIFT: setup failed\r\n\
                        IRONLIFT: guest done (setup-failed)\r\n");
        let e = failed.check_setup(log).unwrap_err().to_string();
        assert!(e.contains("    insmod /c/rust_bfq.ko failed\n"), "{e}");
        assert!(e.ends_with("console log: /out/console.log"), "{e}");
        assert!(r("IRONLIFT: guest done (rc=0)\n").check_setup(log).is_ok());
    }

    #[test]
    fn tsc_needs_constant_and_nonstop() {
        let both = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rep_good nonstop_tsc cpuid\n";
        assert!(host_tsc_is_stable(both));
        let constant_only = "flags\t\t: fpu tsc constant_tsc rep_good cpuid\n";
        assert!(!host_tsc_is_stable(constant_only));
        // A flag name containing the word does not count.
        let lookalike = "flags\t\t: constant_tsc_x nonstop_tsc\n";
        assert!(!host_tsc_is_stable(lookalike));
        assert!(!host_tsc_is_stable(""));
    }

    #[test]
    fn clocksource_file_missing_or_empty_is_unknown() {
        let dir = std::env::temp_dir().join(format!("ironlift-cs-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(guest_clocksource(&dir), "unknown");
        fs::write(dir.join(GUEST_CLOCKSOURCE_FILE), "\n").unwrap();
        assert_eq!(guest_clocksource(&dir), "unknown");
        fs::write(dir.join(GUEST_CLOCKSOURCE_FILE), "tsc\n").unwrap();
        assert_eq!(guest_clocksource(&dir), "tsc");
        fs::remove_dir_all(&dir).unwrap();
    }
}
