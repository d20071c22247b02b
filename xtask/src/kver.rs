//! The kernels ironlift builds on (`--kernel`): where each one's source
//! comes from, the toolchain it needs, and its part of `modules/linux`.
//!
//! Each kernel is Debian's source package of that series: 6.12 the
//! bookworm package installed on the system, 7.3 the trixie-backports
//! package fetched into the cache with a private apt configuration
//! ([`crate::debsrc`]). The version fetched is [`V7_3_DEBIAN_VERSION`],
//! the one place to change for the next upload.

use std::path::PathBuf;

/// The Debian version of `linux-source-7.3` that is fetched from
/// trixie-backports.
pub const V7_3_DEBIAN_VERSION: &str = "7.3.4-1~bpo13+1";

/// A kernel series ironlift builds on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Kver {
    /// Linux 6.12 LTS (bookworm's linux-source-6.12)
    #[value(name = "6.12")]
    V6_12,
    /// Linux 7.3 (trixie-backports' linux-source-7.3)
    #[value(name = "7.3")]
    V7_3,
}

/// Where a kernel's source tarball comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A Debian package installed on the system (apt-get install).
    Installed,
    /// A Debian package of another suite, fetched into the cache with a
    /// private apt configuration; never installed.
    Fetched {
        suite: &'static str,
        version: &'static str,
    },
}

impl Kver {
    /// The kernel the commands build unless told otherwise.
    pub const DEFAULT: Kver = Kver::V6_12;

    /// `6.12`, `7.3`: how `--kernel` names it.
    pub fn name(self) -> &'static str {
        match self {
            Kver::V6_12 => "6.12",
            Kver::V7_3 => "7.3",
        }
    }

    /// Debian's source package.
    pub fn package(self) -> String {
        format!("linux-source-{}", self.name())
    }

    pub fn origin(self) -> Origin {
        match self {
            Kver::V6_12 => Origin::Installed,
            Kver::V7_3 => Origin::Fetched {
                suite: "trixie-backports",
                version: V7_3_DEBIAN_VERSION,
            },
        }
    }

    /// The value of make's `LLVM=`: 6.12 builds with the system's default
    /// LLVM (14); 7.3 needs LLVM 17 or later and builds with the versioned
    /// LLVM 19 tools (`clang-19`, `ld.lld-19`, ...).
    pub fn llvm(self) -> &'static str {
        match self {
            Kver::V6_12 => "1",
            Kver::V7_3 => "-19",
        }
    }

    /// The libclang bindgen loads (`LIBCLANG_PATH`), when not the one of
    /// the system's default LLVM.
    pub fn libclang_path(self) -> Option<PathBuf> {
        match self {
            Kver::V6_12 => None,
            Kver::V7_3 => Some(PathBuf::from("/usr/lib/llvm-19/lib")),
        }
    }

    /// The Debian packages of this kernel's C toolchain, each with why.
    pub fn llvm_packages(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Kver::V6_12 => &[
                ("clang", "LLVM=1 kernel build"),
                ("lld", "LLVM=1 kernel build"),
                ("llvm", "LLVM=1 kernel build"),
                ("libclang-dev", "bindgen"),
            ],
            Kver::V7_3 => &[
                ("clang-19", "LLVM=-19 kernel build (7.3 needs LLVM >= 17)"),
                ("lld-19", "LLVM=-19 kernel build"),
                ("llvm-19", "LLVM=-19 kernel build"),
                (
                    "libclang-19-dev",
                    "bindgen (LIBCLANG_PATH=/usr/lib/llvm-19/lib)",
                ),
            ],
        }
    }

    /// The oldest bindgen this kernel's scripts/min-tool-version.sh takes.
    pub fn min_bindgen(self) -> (u32, u32, u32) {
        match self {
            Kver::V6_12 => (0, 65, 1),
            Kver::V7_3 => (0, 71, 1),
        }
    }

    /// Options of configs/kernel's fragments that this kernel no longer
    /// has: not reported as lost when olddefconfig drops them.
    pub fn gone_options(self) -> &'static [&'static str] {
        match self {
            Kver::V6_12 => &[],
            Kver::V7_3 => &["CONFIG_SCHED_DEBUG"],
        }
    }

    /// This kernel's folder under `modules/linux` for what differs from
    /// the other kernel's additions (its patches, its series.toml, its
    /// own files); 6.12's are `modules/linux` itself.
    pub fn series_subdir(self) -> Option<&'static str> {
        match self {
            Kver::V6_12 => None,
            Kver::V7_3 => Some("7.3"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn kernel_names_parse_back() {
        for k in Kver::value_variants() {
            assert_eq!(Kver::from_str(k.name(), false), Ok(*k));
        }
        assert!(Kver::from_str("7.2", false).is_err());
    }

    #[test]
    fn the_fetched_version_is_of_the_series() {
        let Origin::Fetched { version, .. } = Kver::V7_3.origin() else {
            panic!("7.3 is fetched");
        };
        assert!(version.starts_with("7.3."), "{version}");
        assert_eq!(Kver::V7_3.package(), "linux-source-7.3");
        assert_eq!(Kver::V6_12.origin(), Origin::Installed);
    }
}
