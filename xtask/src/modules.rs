//! `cargo xtask modules`: builds the out-of-tree modules in modules/kernel
//! against the cached kernel build.
//!
//! The sources are staged into the cache with the repo's layout
//! (`kernel/`, `policy/src/`), so the modules' `#[path]` includes of the
//! policy crate resolve, and the clone stays free of build products.

use crate::deps::Toolchain;
use crate::kernel::{make, Kernel};
use crate::util::{self, note, run_logged, step, write_if_changed};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};

/// A built module.
#[derive(Clone, Debug)]
pub struct Module {
    pub name: String,
    pub path: PathBuf,
    /// The elevator it registers, for modules named `rust_<x>`.
    pub elevator: Option<String>,
}

/// Elevator name for a module file stem: `rust_deadline` → `rust-deadline`.
pub fn elevator_of(stem: &str) -> Option<String> {
    stem.strip_prefix("rust_")
        .map(|rest| format!("rust-{}", rest.replace('_', "-")))
}

/// The modules a Kbuild file builds (its `obj-m` lines), by file stem.
pub fn kbuild_modules(kbuild: &str) -> Vec<String> {
    kbuild
        .lines()
        .filter_map(|line| line.trim().strip_prefix("obj-m"))
        .flat_map(|rest| {
            rest.trim_start_matches([' ', '+', ':', '='])
                .split_whitespace()
        })
        .map(|obj| obj.trim_end_matches(".o").to_string())
        .collect()
}

/// The elevators `root`'s modules/kernel registers once built.
pub fn elevators_in(root: &Path) -> Result<Vec<String>> {
    let file = root.join("modules/kernel/Kbuild");
    let kbuild =
        fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    Ok(kbuild_modules(&kbuild)
        .iter()
        .filter_map(|stem| elevator_of(stem))
        .collect())
}

fn stage(from: &Path, to: &Path) -> Result<()> {
    let wanted: Vec<PathBuf> = util::files_below(from)?;
    for f in &wanted {
        let rel = f.strip_prefix(from).unwrap_or(f);
        write_if_changed(&to.join(rel), &fs::read(f)?)?;
    }
    Ok(())
}

/// Copies the modules' sources into `dir` with the repo's layout:
/// `kernel/` (modules/kernel) and `policy/src/`.
pub fn stage_sources(dir: &Path) -> Result<()> {
    let root = util::repo_root();
    stage(&root.join("modules/kernel"), &dir.join("kernel"))?;
    stage(&root.join("modules/policy/src"), &dir.join("policy/src"))
}

pub fn build(tc: &Toolchain, k: &Kernel, jobs: usize) -> Result<Vec<Module>> {
    let root = util::repo_root();
    let stage_dir =
        k.build
            .parent()
            .unwrap_or(&k.build)
            .join(format!("modules-{}-{}", k.flavor.name(), {
                // One staging folder per clone, so clones sharing a cache
                // don't build into each other's folder.
                let mut h = util::Hasher::new();
                h.add("root", root.to_string_lossy().as_bytes());
                h.hex()[..8].to_string()
            }));
    step(&format!("Building modules/kernel against {}", k.release));
    let kdir = stage_dir.join("kernel");
    // Sources removed from the repo must not linger as stale objects.
    for f in util::files_below(&kdir)? {
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        let rel = f.strip_prefix(&kdir).unwrap_or(&f);
        let source = matches!(ext, "rs" | "c" | "h") || rel == Path::new("Kbuild");
        if source && !root.join("modules/kernel").join(rel).exists() {
            fs::remove_file(&f)?;
        }
    }
    stage_sources(&stage_dir)?;
    let src = k.src.clone();
    run_logged(
        make(tc, &src, &k.build)
            .arg(format!("-j{jobs}"))
            .arg(format!("M={}", kdir.display()))
            .arg("modules"),
        &stage_dir.join("build.log"),
        "module build",
    )
    .context("building the out-of-tree modules failed: the compiler's message is above")?;
    let kbuild = fs::read_to_string(kdir.join("Kbuild")).context("modules/kernel/Kbuild")?;
    let mut out = Vec::new();
    for stem in kbuild_modules(&kbuild) {
        let ko = kdir.join(format!("{stem}.ko"));
        if !ko.is_file() {
            bail!("{} was not built", ko.display());
        }
        out.push(Module {
            elevator: elevator_of(&stem),
            name: stem,
            path: ko,
        });
    }
    note(&format!(
        "modules: {}",
        out.iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn elevator_names_follow_module_names() {
        assert_eq!(
            super::elevator_of("rust_deadline").as_deref(),
            Some("rust-deadline")
        );
        assert_eq!(super::elevator_of("rust_bfq").as_deref(), Some("rust-bfq"));
        assert_eq!(super::elevator_of("ironlift_selftest"), None);
    }
}
