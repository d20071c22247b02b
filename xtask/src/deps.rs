//! `cargo xtask deps`: find or install what the kernel build, QEMU, the
//! guest and the host tests need, and name exactly what is missing when it
//! cannot install.

use crate::util::{note, run, step, which};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian packages, each with why it is needed.
pub const PACKAGES: &[(&str, &str)] = &[
    ("linux-source-6.12", "the kernel source tarball"),
    (
        "rustc-web",
        "a rustc that matches rust-web-src, for kernel Rust",
    ),
    ("rust-web-src", "the core library source the kernel builds"),
    (
        "rust-web-clippy",
        "clippy matching rustc-web, for `cargo xtask patches`",
    ),
    ("clang", "LLVM=1 kernel build"),
    ("lld", "LLVM=1 kernel build"),
    ("llvm", "LLVM=1 kernel build"),
    ("libclang-dev", "bindgen"),
    ("flex", "kernel build"),
    ("bison", "kernel build"),
    ("bc", "kernel build"),
    ("libelf-dev", "kernel build"),
    ("libssl-dev", "kernel build"),
    ("cpio", "kernel build"),
    ("make", "kernel build"),
    ("xz-utils", "unpacking the kernel source"),
    ("qemu-system-x86", "booting the guest"),
    ("fio", "benchmarks and tests in the guest"),
    ("kmod", "insmod/rmmod in the guest"),
    ("util-linux", "ionice, dmesg in the guest"),
    ("jq", "reading fio's JSON in the guest tests"),
    ("e2fsprogs", "mkfs.ext4 in the guest"),
    (
        "xfsprogs",
        "mkfs.xfs and xfs_repair in the guest (the emulated disks' tests)",
    ),
    ("mdadm", "md RAID5 over the emulated raptors in the guest"),
    ("bonnie++", "the bonnie-raid5 suite in the guest"),
    ("dbench", "the phoronix suite's dbench in the guest"),
    ("fsmark", "the phoronix suite's fs_mark in the guest"),
    (
        "sqlite3",
        "the phoronix suite's SQLite inserts in the guest",
    ),
    (
        "postgresql",
        "the phoronix suite's PostgreSQL server (initdb, pg_ctl) in the guest",
    ),
    (
        "postgresql-contrib",
        "the phoronix suite's pgbench in the guest",
    ),
    (
        "gcc",
        "the phoronix suite's compile (the CPU-bound control) in the guest",
    ),
    ("gawk", "GNU awk, which blktests' check requires"),
    (
        "g++",
        "building blktests' src/ helpers (C and C++) for `cargo xtask blktests`",
    ),
    (
        "binutils",
        "objdump: naming module functions for --count-insns",
    ),
    (
        "chromium",
        "the host tests that load report.html and compare.html headless",
    ),
    (
        "python3-venv",
        "the venv (with ensurepip) that the host tests fill with kcidb-io from PyPI",
    ),
    (
        "mount",
        "losetup, mount and umount for the host tests of host-bench on a loop device",
    ),
    (
        "git",
        "the host tests of compare's two sides (worktrees, commits)",
    ),
];

/// Where the kernel Rust toolchain lives.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub rustc: PathBuf,
    pub rust_lib_src: PathBuf,
    pub bindgen: PathBuf,
    /// The folder of the libclang that belongs to the LLVM which `LLVM=1`
    /// builds with (`llvm-config --libdir`): bindgen must parse the
    /// kernel's headers with the flags that clang takes, and left to
    /// itself it loads the newest libclang installed.
    pub libclang: PathBuf,
}

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

fn is_root() -> bool {
    run(Command::new("id").arg("-u"))
        .map(|s| s.trim() == "0")
        .unwrap_or(false)
}

fn cargo_bin() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo")
        });
    home.join("bin")
}

/// Makes sure every package and tool is there, installing when it can.
pub fn ensure() -> Result<Toolchain> {
    step("Checking build and guest dependencies");
    let missing: Vec<&str> = PACKAGES
        .iter()
        .filter(|(p, _)| !installed(p))
        .map(|(p, _)| *p)
        .collect();
    if !missing.is_empty() {
        for (p, why) in PACKAGES.iter().filter(|(p, _)| missing.contains(p)) {
            note(&format!("missing Debian package {p} ({why})"));
        }
        if !is_root() || which("apt-get").is_none() {
            bail!(
                "missing Debian packages; install them with:\n    sudo apt-get install {}",
                missing.join(" ")
            );
        }
        note("installing them with apt-get (this takes a few minutes)");
        crate::util::run_logged(
            Command::new("apt-get").args(["update", "-q"]),
            &std::env::temp_dir().join("ironlift-apt-update.log"),
            "apt-get update",
        )?;
        let mut cmd = Command::new("apt-get");
        cmd.env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(&missing);
        crate::util::run_logged(
            &mut cmd,
            &std::env::temp_dir().join("ironlift-apt-install.log"),
            "apt-get install",
        )
        .context("apt-get could not install the packages above; check the network and apt sources, or install them by hand")?;
    } else {
        note("all Debian packages present");
    }

    let bindgen = cargo_bin().join("bindgen");
    let bindgen_ok = bindgen.is_file()
        && run(Command::new(&bindgen).arg("--version"))
            .map(|v| !v.contains(" 0.5") && !v.contains(" 0.60"))
            .unwrap_or(false);
    if !bindgen_ok {
        note("installing bindgen-cli with `cargo install bindgen-cli --locked` (Debian's bindgen is too old for 6.12)");
        crate::util::run_logged(
            Command::new("cargo").args(["install", "bindgen-cli", "--locked"]),
            &std::env::temp_dir().join("ironlift-bindgen-install.log"),
            "cargo install bindgen-cli",
        )
        .context(
            "could not install bindgen-cli; `cargo install bindgen-cli --locked` needs crates.io",
        )?;
    }

    let tc = find_toolchain(bindgen)?;
    note(&format!(
        "kernel Rust: {} with {}, bindgen {}",
        tc.rustc.display(),
        tc.rust_lib_src.display(),
        tc.bindgen.display()
    ));
    Ok(tc)
}

fn find_toolchain(bindgen: PathBuf) -> Result<Toolchain> {
    let rustc = PathBuf::from("/usr/bin/rustc");
    let version = run(Command::new(&rustc).arg("--version"))
        .context("Debian's rustc (package rustc-web) is not at /usr/bin/rustc")?;
    // "rustc 1.96.0 (...)"
    let ver = version
        .split_whitespace()
        .nth(1)
        .context("cannot read /usr/bin/rustc --version")?
        .to_string();
    let lib = PathBuf::from(format!("/usr/src/rustc-{ver}/library"));
    if !lib.join("core").join("src").join("lib.rs").is_file() {
        bail!(
            "no core library source for rustc {ver} at {}; install the matching rust-web-src \
             (`apt-get install rust-web-src`), which must have the same version as rustc-web",
            lib.display()
        );
    }
    let libclang = run(Command::new("llvm-config").arg("--libdir"))
        .map(|d| PathBuf::from(d.trim()))
        .context("`llvm-config --libdir` (Debian's llvm) names the libclang bindgen uses")?;
    if !libclang.join("libclang.so").exists() {
        bail!(
            "no libclang.so in {} (llvm-config --libdir): install libclang-dev",
            libclang.display()
        );
    }
    Ok(Toolchain {
        rustc,
        rust_lib_src: lib,
        bindgen,
        libclang,
    })
}

/// The Debian kernel source tarball, if installed.
pub fn debian_kernel_tarball() -> Result<PathBuf> {
    let p = Path::new("/usr/src/linux-source-6.12.tar.xz");
    if !p.is_file() {
        bail!(
            "{} is missing; install it with `apt-get install linux-source-6.12`",
            p.display()
        );
    }
    Ok(p.to_path_buf())
}
