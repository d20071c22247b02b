//! `cargo xtask deps`: find or install what the kernel build, QEMU, the
//! guest and the host tests need, and name exactly what is missing when it
//! cannot install.

use crate::kver::{Kver, Origin};
use crate::util::{note, run, step, which};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Debian packages every kernel needs, each with why it is needed; see
/// [`packages`] for all of one kernel's.
pub const PACKAGES: &[(&str, &str)] = &[
    (
        "rustc-web",
        "a rustc that matches rust-web-src, for kernel Rust",
    ),
    ("rust-web-src", "the core library source the kernel builds"),
    (
        "rust-web-clippy",
        "clippy matching rustc-web, for `cargo xtask patches`",
    ),
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

/// The Debian packages `kernel` needs: [`PACKAGES`], its LLVM toolchain
/// and, for a kernel whose source package is installed, that package.
/// A fetched source package needs apt-get and dpkg-deb, which every
/// Debian system has.
pub fn packages(kernel: Kver) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    if kernel.origin() == Origin::Installed {
        out.push((kernel.package(), "the kernel source tarball"));
    }
    out.extend(PACKAGES.iter().map(|(p, why)| (p.to_string(), *why)));
    out.extend(
        kernel
            .llvm_packages()
            .iter()
            .map(|(p, why)| (p.to_string(), *why)),
    );
    out
}

/// Where the kernel Rust toolchain lives, and which LLVM the kernel's C
/// and bindgen use.
#[derive(Clone, Debug)]
pub struct Toolchain {
    pub rustc: PathBuf,
    pub rust_lib_src: PathBuf,
    pub bindgen: PathBuf,
    /// make's `LLVM=` value (`1`, or a suffix such as `-19`).
    pub llvm: &'static str,
    /// The folder of the libclang that belongs to the LLVM the kernel
    /// builds with (`LIBCLANG_PATH` for bindgen): bindgen must parse the
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

/// Makes sure every package and tool `kernel` needs is there, installing
/// when it can.
pub fn ensure(kernel: Kver) -> Result<Toolchain> {
    step("Checking build and guest dependencies");
    let wanted = packages(kernel);
    let missing: Vec<&str> = wanted
        .iter()
        .filter(|(p, _)| !installed(p))
        .map(|(p, _)| p.as_str())
        .collect();
    if !missing.is_empty() {
        for (p, why) in wanted.iter().filter(|(p, _)| missing.contains(&p.as_str())) {
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
            .map(|v| {
                !v.contains(" 0.5")
                    && !v.contains(" 0.60")
                    && version_at_least(&v, kernel.min_bindgen())
            })
            .unwrap_or(false);
    if !bindgen_ok {
        note(&format!("installing bindgen-cli with `cargo install bindgen-cli --locked` (Debian's bindgen is too old for {})", kernel.name()));
        crate::util::run_logged(
            Command::new("cargo").args(["install", "bindgen-cli", "--locked"]),
            &std::env::temp_dir().join("ironlift-bindgen-install.log"),
            "cargo install bindgen-cli",
        )
        .context(
            "could not install bindgen-cli; `cargo install bindgen-cli --locked` needs crates.io",
        )?;
    }

    let tc = find_toolchain(bindgen, kernel)?;
    note(&format!(
        "kernel Rust: {} with {}, bindgen {}; LLVM={}",
        tc.rustc.display(),
        tc.rust_lib_src.display(),
        tc.bindgen.display(),
        tc.llvm
    ));
    Ok(tc)
}

/// Whether the first `x.y.z` in `text` (a `--version` line) is at least
/// `min`.
fn version_at_least(text: &str, min: (u32, u32, u32)) -> bool {
    text.split_whitespace()
        .find_map(|w| {
            let mut it = w.split('.').map(|n| n.parse::<u32>());
            match (it.next(), it.next(), it.next()) {
                (Some(Ok(a)), Some(Ok(b)), Some(Ok(c))) => Some((a, b, c) >= min),
                _ => None,
            }
        })
        .unwrap_or(false)
}

fn find_toolchain(bindgen: PathBuf, kernel: Kver) -> Result<Toolchain> {
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
    let libclang = match kernel.libclang_path() {
        Some(dir) => dir,
        None => run(Command::new("llvm-config").arg("--libdir"))
            .map(|d| PathBuf::from(d.trim()))
            .context("`llvm-config --libdir` (Debian's llvm) names the libclang bindgen uses")?,
    };
    if !libclang.join("libclang.so").exists() {
        bail!(
            "no libclang.so in {}: install {}",
            libclang.display(),
            kernel
                .llvm_packages()
                .iter()
                .filter(|(p, _)| p.starts_with("libclang"))
                .map(|(p, _)| *p)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Ok(Toolchain {
        rustc,
        rust_lib_src: lib,
        bindgen,
        llvm: kernel.llvm(),
        libclang,
    })
}

/// The Debian kernel source tarball of `kernel` (installed, or fetched
/// into `cache`).
pub fn debian_kernel_tarball(kernel: Kver, cache: &Path) -> Result<PathBuf> {
    let package = kernel.package();
    let tarball = format!("usr/src/{package}.tar.xz");
    match kernel.origin() {
        Origin::Installed => {
            let p = Path::new("/").join(&tarball);
            if !p.is_file() {
                bail!(
                    "{} is missing; install it with `apt-get install {package}`",
                    p.display()
                );
            }
            Ok(p)
        }
        Origin::Fetched { suite, version } => {
            let dir = crate::debsrc::fetch(cache, &package, version, suite)?;
            let p = dir.join(&tarball);
            if !p.is_file() {
                bail!("{package} {version} holds no {tarball}");
            }
            Ok(p)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindgen_versions_compare_by_number() {
        assert!(version_at_least("bindgen 0.73.2", (0, 71, 1)));
        assert!(version_at_least("bindgen 0.71.1", (0, 71, 1)));
        assert!(!version_at_least("bindgen 0.69.4", (0, 71, 1)));
        assert!(!version_at_least("bindgen 0.9.0", (0, 71, 1)));
        assert!(!version_at_least("bindgen", (0, 0, 0)));
    }

    #[test]
    fn each_kernel_gets_its_own_llvm_and_only_6_12_its_installed_source() {
        let names = |k: Kver| -> Vec<String> { packages(k).into_iter().map(|(p, _)| p).collect() };
        let old = names(Kver::V6_12);
        assert!(old.contains(&"linux-source-6.12".to_string()));
        assert!(old.contains(&"clang".to_string()) && !old.contains(&"clang-19".to_string()));
        let new = names(Kver::V7_3);
        assert!(
            !new.iter().any(|p| p.starts_with("linux-source")),
            "{new:?}"
        );
        for p in [
            "clang-19",
            "lld-19",
            "llvm-19",
            "libclang-19-dev",
            "rustc-web",
        ] {
            assert!(new.contains(&p.to_string()), "{p} missing from {new:?}");
        }
    }
}
