//! The clippy step of `cargo xtask patches`: the kernel's own `make
//! CLIPPY=1` (the lints of the kernel's Makefile and `.clippy.toml`) over
//! the Rust the series adds to the kernel crate and over the modules, with
//! Debian's `clippy-driver` from `rust-web-clippy`, which matches
//! `rustc-web`.
//!
//! It runs in a copy of the kernel's build tree (`build-<flavor>-clippy`
//! in the cache), so the cached build keeps its plain-rustc objects: the
//! copy rebuilds only the Rust crates and relinks (about a minute on two
//! cores).

use crate::deps::Toolchain;
use crate::kernel::{make, Kernel};
use crate::modules;
use crate::util::{self, note, run_logged, step};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `clippy-driver` beside the kernel's rustc.
fn driver(tc: &Toolchain) -> Result<PathBuf> {
    let d = tc.rustc.with_file_name("clippy-driver");
    if !d.is_file() {
        bail!(
            "{} is missing: install Debian's rust-web-clippy (apt-get install rust-web-clippy; \
             `cargo xtask deps` does it as root), the clippy that matches {}",
            d.display(),
            tc.rustc.display()
        );
    }
    Ok(d)
}

/// Clippy's findings in a build log: its `warning:` and `error:` lines,
/// without the summaries ("N warnings emitted"), each with the location
/// line that follows it.
pub fn findings(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        let kind = t.starts_with("warning:") || t.starts_with("error:");
        let summary = t.contains("warnings emitted")
            || t.contains("warning emitted")
            || t.starts_with("error: aborting")
            || t.starts_with("error: could not compile");
        if kind && !summary {
            let at = lines
                .get(i + 1)
                .map(|n| n.trim())
                .filter(|n| n.starts_with("-->"))
                .unwrap_or("");
            out.push(format!("{t} {at}").trim_end().to_string());
        }
    }
    out
}

/// Runs clippy over the kernel crate and the modules; fails on any finding.
pub fn run(tc: &Toolchain, k: &Kernel, jobs: usize) -> Result<()> {
    step("clippy (make CLIPPY=1) over rust/kernel and modules/kernel");
    let driver = driver(tc)?;
    let dir = k
        .build
        .with_file_name(format!("build-{}-clippy", k.flavor.name()));
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    util::run(Command::new("cp").arg("-a").arg(&k.build).arg(&dir))?;
    let clippy = |cmd: &mut Command| {
        cmd.arg("CLIPPY=1")
            .arg(format!("CLIPPY_DRIVER={}", driver.display()))
            .arg(format!("-j{jobs}"));
    };
    let kernel_log = dir.join("ironlift-logs/clippy-kernel.log");
    let mut cmd = make(tc, &k.src, &dir);
    clippy(&mut cmd);
    run_logged(&mut cmd, &kernel_log, "clippy, kernel crate")
        .context("the kernel build with CLIPPY=1 failed: the compiler's message is above")?;
    let ext = dir.join("ironlift-ext");
    modules::stage_sources(&ext)?;
    let modules_log = dir.join("ironlift-logs/clippy-modules.log");
    let mut cmd = make(tc, &k.src, &dir);
    clippy(&mut cmd);
    cmd.arg(format!("M={}", ext.join("kernel").display()))
        .arg("modules");
    run_logged(&mut cmd, &modules_log, "clippy, modules")
        .context("the module build with CLIPPY=1 failed: the compiler's message is above")?;
    // Name the repo's files, not the copies the build read.
    let root = util::repo_root();
    let ours = [
        (ext.join("kernel"), root.join("modules/kernel")),
        (ext.join("policy/src"), root.join("modules/policy/src")),
        (k.src.join("rust"), root.join("modules/linux/files/rust")),
    ];
    let mut all = Vec::new();
    for log in [&kernel_log, &modules_log] {
        all.extend(
            findings(&read(log)?)
                .into_iter()
                .map(|f| repo_paths(&f, &ours)),
        );
    }
    for f in &all {
        note(&format!("    {f}"));
    }
    if !all.is_empty() {
        bail!(
            "clippy reported {} finding(s) (above; whole messages in {} and {})",
            all.len(),
            kernel_log.display(),
            modules_log.display()
        );
    }
    note("clippy: no findings in rust/ or modules/kernel");
    Ok(())
}

/// `finding` with each staged or kernel-tree path that has a file in the
/// repo behind it (`(copy, repo)` folder pairs) replaced by the repo's.
fn repo_paths(finding: &str, pairs: &[(PathBuf, PathBuf)]) -> String {
    let Some((text, at)) = finding.split_once(" --> ") else {
        return finding.to_string();
    };
    for (copy, repo) in pairs {
        let Some(rest) = at.strip_prefix(&format!("{}/", copy.display())) else {
            continue;
        };
        let file = rest.split(':').next().unwrap_or(rest);
        if repo.join(file).is_file() {
            return format!("{text} --> {}/{rest}", repo.display());
        }
    }
    finding.to_string()
}

fn read(p: &Path) -> Result<String> {
    fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_keep_lints_and_drop_summaries() {
        let log = "\
  CLIPPY L rust/kernel.o
warning: this `map_or` can be simplified
    --> src/rust/kernel/block/mq/elevator.rs:2207:45
     |
warning: 1 warning emitted

error: unsafe block missing a safety comment
  --> x.rs:1:1
error: aborting due to 1 previous error
";
        assert_eq!(
            findings(log),
            vec![
                "warning: this `map_or` can be simplified --> src/rust/kernel/block/mq/elevator.rs:2207:45",
                "error: unsafe block missing a safety comment --> x.rs:1:1",
            ]
        );
        assert!(findings("  CLIPPY L rust/kernel.o\n  AR built-in.a\n").is_empty());
    }

    #[test]
    fn repo_paths_name_the_repos_files_only() {
        let repo = crate::util::repo_root();
        let pairs = [(
            PathBuf::from("/cache/ext/kernel"),
            repo.join("modules/kernel"),
        )];
        assert_eq!(
            repo_paths("warning: w --> /cache/ext/kernel/rust_bfq.rs:3:4", &pairs),
            format!(
                "warning: w --> {}/modules/kernel/rust_bfq.rs:3:4",
                repo.display()
            )
        );
        // Not in the repo: left as the build named it.
        assert_eq!(
            repo_paths("warning: w --> /cache/ext/kernel/nope.rs:3:4", &pairs),
            "warning: w --> /cache/ext/kernel/nope.rs:3:4"
        );
        assert_eq!(repo_paths("warning: w", &pairs), "warning: w");
    }
}
