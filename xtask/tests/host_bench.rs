//! `cargo xtask host-bench` on real block devices of this host: a loop
//! device over a sparse file (read-only, then `--destructive` on the fresh
//! device, then the refusals once it holds a file system and is mounted),
//! and a null_blk device. A missing tool fails a test, naming the Debian
//! package (`cargo xtask deps` installs them all). Not being root, and for
//! null_blk a host kernel without the module or with it loaded already,
//! are skips, recorded by [`skip::skip`].

#[path = "../src/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn xtask() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
}

/// The tools the loop device's test runs, itself or through host-bench,
/// each with the Debian package that has it.
const TOOLS: &[(&str, &str)] = &[
    ("losetup", "mount"),
    ("mount", "mount"),
    ("umount", "mount"),
    ("fio", "fio"),
    ("blkid", "util-linux"),
    ("wipefs", "util-linux"),
    ("mkfs.ext4", "e2fsprogs"),
];

/// Fails the test if one of `tools` (name, Debian package) is not on
/// PATH, saying how to install it.
fn require(test: &str, tools: &[(&str, &str)]) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let missing: Vec<&(&str, &str)> = tools
        .iter()
        .filter(|(t, _)| !std::env::split_paths(&path).any(|d| d.join(t).is_file()))
        .collect();
    let mut packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    packages.sort_unstable();
    packages.dedup();
    assert!(
        missing.is_empty(),
        "{test}: {} not on PATH; install with `apt-get install {}` (or `cargo xtask deps`)",
        missing
            .iter()
            .map(|(t, _)| *t)
            .collect::<Vec<_>>()
            .join(", "),
        packages.join(" ")
    );
}

/// Root, which host-bench needs (it selects schedulers in sysfs). Not
/// root: the test skips before it looks for tools, as a user's PATH may
/// leave out the sbin folders that hold them.
fn is_root() -> bool {
    let uid = Command::new("id")
        .arg("-u")
        .output()
        .expect("id (coreutils)");
    String::from_utf8_lossy(&uid.stdout).trim() == "0"
}

/// The reason recorded when a test skips for not being root.
const NOT_ROOT: &str = "not root (host-bench selects schedulers in sysfs)";

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A loop device over a sparse file, detached and removed on drop.
struct Loop {
    dev: String,
    file: PathBuf,
}

impl Loop {
    fn new(size_mb: u64) -> Loop {
        let file =
            std::env::temp_dir().join(format!("ironlift-host-bench-{}.img", std::process::id()));
        let f = std::fs::File::create(&file).unwrap();
        f.set_len(size_mb << 20).unwrap();
        let o = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(o.status.success(), "losetup: {}", text(&o));
        Loop {
            dev: String::from_utf8_lossy(&o.stdout).trim().to_string(),
            file,
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The device's scheduler in use.
fn scheduler(dev: &str) -> String {
    let name = Path::new(dev)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let s = std::fs::read_to_string(format!("/sys/block/{name}/queue/scheduler")).unwrap();
    s.split_whitespace()
        .find(|w| w.starts_with('['))
        .unwrap_or_default()
        .trim_matches(|c| c == '[' || c == ']')
        .to_string()
}

/// Runs `host-bench --quick` (one repeat of 1 s) on `dev` with `extra`
/// into `out`; returns the output and whether it succeeded.
fn host_bench(dev: &str, out: &Path, extra: &[&str]) -> (bool, String) {
    let o = xtask()
        .args([
            "host-bench",
            "--device",
            dev,
            "--quick",
            "--repeats",
            "1",
            "--runtime",
            "1",
        ])
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    (o.status.success(), text(&o))
}

/// The results file in `out`: every run ok, and the workloads run.
fn check_results(out: &Path, all_output: &str) -> Vec<String> {
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(r["accel"], "host");
    assert_eq!(r["schema"], "ironlift-bench/1");
    let runs = r["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    for run in runs {
        assert_eq!(run["ok"], true, "{run}\n{all_output}");
        assert!(run["measured"]["iops"].as_f64().unwrap() > 0.0);
    }
    assert!(out.join("report.md").is_file());
    let k: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("kcidb.json")).unwrap()).unwrap();
    assert_eq!(k["builds"][0]["config_name"], "host");
    let mut w: Vec<String> = runs
        .iter()
        .map(|r| r["workload"].as_str().unwrap().to_string())
        .collect();
    w.sort();
    w.dedup();
    w
}

#[test]
fn host_bench_on_a_loop_device() {
    const NAME: &str = "host_bench_on_a_loop_device";
    if !is_root() {
        return skip::skip(NAME, NOT_ROOT);
    }
    require(NAME, TOOLS);
    // Above 1 GiB: the sequential workloads start their second job at 512 MiB.
    let lo = Loop::new(1200);
    let before = scheduler(&lo.dev);
    let scratch =
        std::env::temp_dir().join(format!("ironlift-host-bench-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);

    // Read-only by default: the suite's read workloads only.
    let (ok, log) = host_bench(&lo.dev, &scratch.join("ro"), &[]);
    assert!(ok, "{log}");
    assert_eq!(
        check_results(&scratch.join("ro"), &log),
        ["randread", "seqread"]
    );
    assert_eq!(scheduler(&lo.dev), before, "the scheduler is put back");

    // --destructive on the fresh device (no signature): every workload.
    // (One scheduler: the writes are what this run shows.)
    let (ok, log) = host_bench(
        &lo.dev,
        &scratch.join("rw"),
        &["--destructive", "--schedulers", "none"],
    );
    assert!(ok, "{log}");
    assert!(log.contains("loop device over"), "names the device: {log}");
    assert_eq!(
        check_results(&scratch.join("rw"), &log),
        ["randread", "randwrite", "seqread", "seqwrite"]
    );
    assert_eq!(scheduler(&lo.dev), before);

    // A file system on it: refused, unless --force; mounted: refused.
    let o = Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&lo.dev)
        .output()
        .unwrap();
    assert!(o.status.success(), "mkfs.ext4: {}", text(&o));
    let (ok, log) = host_bench(&lo.dev, &scratch.join("fs"), &["--destructive"]);
    assert!(
        !ok && log.contains("holds data") && log.contains("ext4"),
        "{log}"
    );
    let mnt = scratch.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let o = Command::new("mount")
        .arg(&lo.dev)
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(o.status.success(), "mounting the ext4: {}", text(&o));
    let (ok, log) = host_bench(&lo.dev, &scratch.join("fs"), &["--destructive", "--force"]);
    let o = Command::new("umount").arg(&mnt).output().unwrap();
    assert!(!ok && log.contains("is mounted on"), "{log}");
    assert!(o.status.success(), "umount: {}", text(&o));
    let _ = std::fs::remove_dir_all(&scratch);
}

#[test]
fn host_bench_on_null_blk() {
    const NAME: &str = "host_bench_on_null_blk";
    if !is_root() {
        return skip::skip(NAME, NOT_ROOT);
    }
    require(
        NAME,
        &[
            ("fio", "fio"),
            ("blkid", "util-linux"),
            ("wipefs", "util-linux"),
            ("modprobe", "kmod"),
        ],
    );
    if Path::new("/sys/module/null_blk").exists() {
        return skip::skip(NAME, "null_blk is loaded already (not ours to change)");
    }
    // Whether the host kernel has the module at all (a dry run): kmod
    // says "Module null_blk not found" when it has not. Any other failure,
    // here or loading it, fails the test.
    let o = Command::new("modprobe")
        .args(["--dry-run", "null_blk"])
        .output()
        .unwrap();
    if !o.status.success() {
        let said = text(&o);
        assert!(
            said.contains("Module null_blk not found"),
            "modprobe --dry-run null_blk failed: {said}"
        );
        eprintln!("{NAME}: {}", said.trim());
        return skip::skip(NAME, "the host kernel has no null_blk module");
    }
    let o = Command::new("modprobe")
        .args(["null_blk", "nr_devices=1", "gb=2"])
        .output()
        .unwrap();
    assert!(o.status.success(), "modprobe null_blk: {}", text(&o));
    let out =
        std::env::temp_dir().join(format!("ironlift-host-bench-nullb-{}", std::process::id()));
    let (ok, log) = host_bench(
        "/dev/nullb0",
        &out,
        &["--destructive", "--schedulers", "none"],
    );
    let _ = Command::new("modprobe").args(["-r", "null_blk"]).status();
    assert!(ok, "{log}");
    assert_eq!(check_results(&out, &log).len(), 4);
    let _ = std::fs::remove_dir_all(&out);
}
