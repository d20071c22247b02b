//! The two sides of a comparison: which tree of this repository each is,
//! which kernel source it builds, and running its xtask.
//!
//! Refs and patched trees are git worktrees in `<cache>/compare/trees`,
//! one per commit (and patch set), reused from run to run; each builds its
//! xtask into its own `target/`. What is rebuilt follows the
//! kernel cache (xtask/src/kernel.rs):
//! - a side whose kernel additions (modules/linux) and config fragments
//!   (configs/kernel) are this tree's shares the cached kernel: no kernel
//!   build; its modules (modules/kernel, modules/policy) build in a
//!   staging folder of its own, a minute or so;
//! - a side whose kernel differs gets its own clone of Debian's source in
//!   `<cache>/compare/linux-<key>` with its additions synced on, built as
//!   a `--kernel-src` tree: a cold build the first time (10–15 min on two
//!   cores), incremental afterwards.

use crate::flags::{Compare, Sides};
use crate::kernel::{self, Additions};
use crate::kver::Kver;
use crate::util::{self, note, run, Hasher};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One side of the comparison.
#[derive(Debug)]
pub struct Side {
    /// `base` or `candidate`.
    pub label: &'static str,
    /// What it is, for the report.
    pub what: String,
    /// The tree of this repository whose xtask builds and runs it.
    pub root: PathBuf,
    /// The kernel source it builds, unless the cache's Debian tree.
    pub kernel_src: Option<PathBuf>,
}

/// The sides the flags name: (base, candidate).
pub fn resolve(s: &Sides, root: &Path, cache: &Path, kernel: Kver) -> Result<[Side; 2]> {
    let trees = cache.join("compare").join("trees");
    let sides = if !s.patch.is_empty() {
        let head = commit(root, "HEAD")?;
        if !run(Command::new("git").current_dir(root).args([
            "status",
            "--porcelain",
            "--untracked-files=no",
        ]))?
        .trim()
        .is_empty()
        {
            note(&format!(
                "warning: {} has uncommitted changes; both sides are HEAD ({}) as committed",
                root.display(),
                &head[..12]
            ));
        }
        let mut h = Hasher::new();
        for p in &s.patch {
            h.add(
                &p.to_string_lossy(),
                &fs::read(p).with_context(|| format!("reading --patch {}", p.display()))?,
            );
        }
        let cand = worktree(
            root,
            &trees,
            &head,
            &format!("{}-{}", &head[..12], &h.hex()[..12]),
        )?;
        let applied = apply_patches(&cand, &s.patch, kernel)?;
        [
            Side::tree(
                "base",
                format!("HEAD {}", &head[..12]),
                worktree(root, &trees, &head, &head[..12])?,
            ),
            Side::tree(
                "candidate",
                format!("HEAD {} + {}", &head[..12], applied.join(", ")),
                cand,
            ),
        ]
    } else if !s.kernel_src.is_empty() {
        let [a, b] = two(&s.kernel_src, "--kernel-src")?;
        let side = |label, dir: &PathBuf| -> Result<Side> {
            let dir = fs::canonicalize(dir)
                .with_context(|| format!("--kernel-src {} does not exist", dir.display()))?;
            Ok(Side {
                label,
                what: format!("kernel tree {}", dir.display()),
                root: root.to_path_buf(),
                kernel_src: Some(dir),
            })
        };
        [side("base", a)?, side("candidate", b)?]
    } else {
        let [a, b] = two(&s.git_ref, "--ref")?;
        let side = |label, r: &String| -> Result<Side> {
            let c = commit(root, r)?;
            let what = format!("{r} ({})", &c[..12]);
            Ok(Side::tree(
                label,
                what,
                worktree(root, &trees, &c, &c[..12])?,
            ))
        };
        [side("base", a)?, side("candidate", b)?]
    };
    own_kernels(sides, root, cache, kernel)
}

/// Exactly two values of `flag`.
fn two<'a, T>(v: &'a [T], flag: &str) -> Result<[&'a T; 2]> {
    match v {
        [a, b] => Ok([a, b]),
        _ => bail!(
            "{flag} takes two values, base then candidate; got {}",
            v.len()
        ),
    }
}

/// The full commit `r` names in `root`'s repository.
fn commit(root: &Path, r: &str) -> Result<String> {
    Ok(run(Command::new("git").current_dir(root).args([
        "rev-parse",
        "--verify",
        &format!("{r}^{{commit}}"),
    ]))
    .with_context(|| format!("{r:?} is not a commit of {}", root.display()))?
    .trim()
    .to_string())
}

/// A worktree of `commit` at `trees/name`, made or reset to it (files
/// added by an earlier run removed).
fn worktree(root: &Path, trees: &Path, commit: &str, name: &str) -> Result<PathBuf> {
    let dir = trees.join(name);
    let git = |dir: &Path, args: &[&str]| run(Command::new("git").current_dir(dir).args(args));
    if dir.join(".git").exists() {
        git(&dir, &["reset", "-q", "--hard", commit])?;
        git(&dir, &["clean", "-qfd"])?;
    } else {
        fs::create_dir_all(trees)?;
        git(root, &["worktree", "prune"])?;
        git(
            root,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                &dir.to_string_lossy(),
                commit,
            ],
        )?;
    }
    Ok(dir)
}

/// Applies each patch to `tree`: to its files if it applies there, else
/// into `kernel`'s series (modules/linux/patches for 6.12,
/// modules/linux/<kernel>/patches for another, after the others).
/// Returns what became of each, for the report.
fn apply_patches(tree: &Path, patches: &[PathBuf], kernel: Kver) -> Result<Vec<String>> {
    let mut done = Vec::new();
    for (i, p) in patches.iter().enumerate() {
        let p = fs::canonicalize(p).with_context(|| format!("--patch {}", p.display()))?;
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let ok = Command::new("git")
            .current_dir(tree)
            .args(["apply", "--check"])
            .arg(&p)
            .output()
            .with_context(|| "running git apply")?
            .status
            .success();
        if ok {
            run(Command::new("git").current_dir(tree).arg("apply").arg(&p))?;
            done.push(format!("{name} (to the repository)"));
        } else {
            let stem = name.trim_end_matches(".patch").trim_end_matches(".diff");
            let series = match kernel.series_subdir() {
                Some(d) => tree.join("modules/linux").join(d),
                None => tree.join("modules/linux"),
            };
            let dest = series
                .join("patches")
                .join(format!("9{i:03}-compare-{stem}.patch"));
            fs::copy(&p, &dest).with_context(|| format!("copying {}", p.display()))?;
            done.push(format!("{name} (to the kernel series)"));
        }
    }
    Ok(done)
}

/// What selects a side's kernel: its additions and config fragments.
fn kernel_key(root: &Path) -> Result<String> {
    let mut h = Hasher::new();
    for dir in ["modules/linux", "configs/kernel"] {
        for f in util::files_below(&root.join(dir))? {
            let rel = f.strip_prefix(root).unwrap_or(&f);
            h.add(&rel.to_string_lossy(), &fs::read(&f)?);
        }
    }
    Ok(h.hex())
}

/// Gives each side whose kernel differs from this tree's a source tree of
/// its own, so the two never rebuild the shared one in turn.
fn own_kernels(mut sides: [Side; 2], root: &Path, cache: &Path, kernel: Kver) -> Result<[Side; 2]> {
    let ours = kernel_key(root)?;
    for s in sides.iter_mut().filter(|s| s.kernel_src.is_none()) {
        let key = kernel_key(&s.root)?;
        if key == ours {
            continue;
        }
        // 6.12's trees keep their names; another kernel's name it.
        let dir = match kernel {
            Kver::V6_12 => cache.join("compare").join(format!("linux-{}", &key[..12])),
            k => cache
                .join("compare")
                .join(format!("linux-{}-{}", k.name(), &key[..12])),
        };
        if !dir.join(".git").is_dir() {
            let pristine = kernel::debian_source_dir(cache, kernel)?;
            note(&format!(
                "the {}'s kernel differs from this tree's: a source tree of its own in {} (once)",
                s.label,
                dir.display()
            ));
            let tmp = dir.with_extension("tmp");
            let _ = fs::remove_dir_all(&tmp);
            run(Command::new("git")
                .args(["clone", "-q", "--shared", "--no-checkout"])
                .arg(&pristine)
                .arg(&tmp))?;
            run(Command::new("git").current_dir(&tmp).args([
                "-c",
                "gc.auto=0",
                "checkout",
                "-q",
                "pristine",
            ]))?;
            run(Command::new("git")
                .current_dir(&tmp)
                .args(["config", "gc.auto", "0"]))?;
            fs::rename(&tmp, &dir)?;
        }
        kernel::sync_additions(&dir, &Additions::load(&s.root, kernel)?, kernel)?;
        s.kernel_src = Some(dir);
    }
    Ok(sides)
}

/// Whether the xtask of the tree at `root` takes `--kernel`.
fn knows_kernel_flag(root: &Path) -> bool {
    root.join("xtask/src/kver.rs").is_file()
}

impl Side {
    fn tree(label: &'static str, what: String, root: PathBuf) -> Side {
        Side {
            label,
            what,
            root,
            kernel_src: None,
        }
    }

    /// This side's xtask subcommand `sub`, run in its tree (this very
    /// program for this tree, else `cargo xtask` there), with the cache
    /// and this side's kernel flags.
    pub(super) fn command(&self, o: &Compare, cache: &Path, sub: &str) -> Result<Command> {
        let mut c = if self.root == util::repo_root() {
            Command::new(std::env::current_exe().context("finding this program")?)
        } else {
            // Its own target folder: cargo would take another tree's
            // xtask for fresh (its fingerprints are relative to the
            // workspace), and with it that tree's sources.
            let mut c = Command::new("cargo");
            c.arg("xtask")
                .env("CARGO_TARGET_DIR", self.root.join("target"));
            c
        };
        c.current_dir(&self.root)
            .arg(sub)
            .arg("--cache-dir")
            .arg(cache);
        if let Some(k) = &self.kernel_src {
            c.arg("--kernel-src").arg(k);
        }
        if let Some(j) = o.jobs {
            c.args(["--jobs", &j.to_string()]);
        }
        // A tree from before `--kernel` builds 6.12 and knows no flag.
        if knows_kernel_flag(&self.root) {
            c.args(["--kernel", o.kernel.name()]);
        } else if o.kernel != Kver::V6_12 {
            bail!(
                "the {} side ({}) predates `--kernel` and builds Linux 6.12 only; \
                 compare it with `--kernel 6.12`",
                self.label,
                self.what
            );
        }
        Ok(c)
    }

    /// Builds this side's kernel and modules (cached).
    pub fn build(&self, o: &Compare, cache: &Path) -> Result<()> {
        let mut c = self.command(o, cache, "modules")?;
        status(&mut c).with_context(|| format!("building the {} ({})", self.label, self.what))
    }

    /// One boot of the suite into `dir`.
    pub fn bench(&self, o: &Compare, cache: &Path, dir: &Path) -> Result<()> {
        let mut c = self.command(o, cache, "qemu-bench")?;
        c.args(Side::suite_args(o)).arg("--out").arg(dir);
        status(&mut c)
    }
}

/// Runs `c` with its output on the terminal; an error if it fails.
fn status(c: &mut Command) -> Result<()> {
    let st = c
        .status()
        .with_context(|| format!("could not start `{}`", util::show(c)))?;
    if !st.success() {
        bail!("`{}` failed ({st})", util::show(c));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `compare`'s flags as the command line gives them.
    fn compare_flags(args: &[&str]) -> Compare {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            c: Compare,
        }
        use clap::Parser;
        Cli::try_parse_from(
            ["compare", "--ref", "HEAD"]
                .into_iter()
                .chain(args.iter().copied()),
        )
        .unwrap()
        .c
    }

    #[test]
    fn each_side_is_told_the_kernel_unless_it_predates_the_flag() {
        let tmp = std::env::temp_dir().join(format!("xtask-kernel-flag-{}", std::process::id()));
        fs::create_dir_all(&tmp).unwrap();
        let cache = tmp.join("cache");
        let old = Side::tree("base", "an old tree".into(), tmp.clone());
        let new = Side::tree("candidate", "this tree".into(), util::repo_root());
        let args = |c: &Command| -> Vec<String> {
            c.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        for k in ["6.12", "7.3"] {
            let o = compare_flags(&["--kernel", k]);
            let c = new.command(&o, &cache, "modules").unwrap();
            assert!(
                args(&c).windows(2).any(|w| w == ["--kernel", k]),
                "{k}: {:?}",
                args(&c)
            );
        }
        // A tree without `--kernel` builds 6.12 unasked, and nothing else.
        let c = old.command(&compare_flags(&["--kernel", "6.12"]), &cache, "modules");
        assert!(!args(&c.unwrap()).iter().any(|a| a == "--kernel"));
        let e = old
            .command(&compare_flags(&["--kernel", "7.3"]), &cache, "modules")
            .unwrap_err();
        assert!(format!("{e:#}").contains("predates `--kernel`"), "{e:#}");
        fs::remove_dir_all(&tmp).unwrap();
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        run(Command::new("git")
            .current_dir(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args))
        .unwrap()
    }

    #[test]
    fn patches_go_to_the_tree_or_the_kernel_series_and_trees_are_reused_clean() {
        let tmp = std::env::temp_dir().join(format!("xtask-sides-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let repo = tmp.join("repo");
        for (f, text) in [
            ("modules/kernel/a.rs", "fn a() {}\n"),
            ("modules/linux/patches/0001-x.patch", "x\n"),
            ("configs/kernel/base.config", "CONFIG_X=y\n"),
        ] {
            fs::create_dir_all(repo.join(f).parent().unwrap()).unwrap();
            fs::write(repo.join(f), text).unwrap();
        }
        git(&repo, &["init", "-q"]);
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", "base"]);
        let head = commit(&repo, "HEAD").unwrap();
        // A patch to the repository and one to the kernel.
        fs::write(repo.join("modules/kernel/a.rs"), "fn a() { b(); }\n").unwrap();
        let ours = tmp.join("ours.patch");
        fs::write(&ours, git(&repo, &["diff"])).unwrap();
        git(&repo, &["checkout", "-q", "."]);
        let theirs = tmp.join("mq.patch");
        fs::write(
            &theirs,
            "--- a/block/mq-deadline.c\n+++ b/block/mq-deadline.c\n@@ -1 +1 @@\n-a\n+b\n",
        )
        .unwrap();

        let trees = tmp.join("trees");
        let base = worktree(&repo, &trees, &head, "base").unwrap();
        let cand = worktree(&repo, &trees, &head, "cand").unwrap();
        let done = apply_patches(&cand, &[ours.clone(), theirs.clone()], Kver::V6_12).unwrap();
        assert_eq!(
            done,
            [
                "ours.patch (to the repository)",
                "mq.patch (to the kernel series)"
            ]
        );
        assert_eq!(
            fs::read_to_string(cand.join("modules/kernel/a.rs")).unwrap(),
            "fn a() { b(); }\n"
        );
        let series = cand.join("modules/linux/patches/9001-compare-mq.patch");
        assert!(series.is_file());
        // On 7.3 a kernel patch joins 7.3's series.
        let other = worktree(&repo, &trees, &head, "cand73").unwrap();
        fs::create_dir_all(other.join("modules/linux/7.3/patches")).unwrap();
        apply_patches(&other, std::slice::from_ref(&theirs), Kver::V7_3).unwrap();
        assert!(other
            .join("modules/linux/7.3/patches/9000-compare-mq.patch")
            .is_file());
        assert!(!other
            .join("modules/linux/patches/9000-compare-mq.patch")
            .exists());
        // The kernel differs only where the series does.
        assert_eq!(kernel_key(&base).unwrap(), kernel_key(&repo).unwrap());
        assert_ne!(kernel_key(&cand).unwrap(), kernel_key(&repo).unwrap());
        // Made again: the same folder, clean.
        let again = worktree(&repo, &trees, &head, "cand").unwrap();
        assert_eq!(again, cand);
        assert!(!series.exists());
        assert_eq!(
            fs::read_to_string(cand.join("modules/kernel/a.rs")).unwrap(),
            "fn a() {}\n"
        );
        // A missing patch and a bad ref are named.
        let e = apply_patches(&cand, &[tmp.join("nope.patch")], Kver::V6_12).unwrap_err();
        assert!(format!("{e:#}").contains("nope.patch"), "{e:#}");
        let e = commit(&repo, "no-such-ref").unwrap_err();
        assert!(format!("{e:#}").contains("no-such-ref"), "{e:#}");
        git(
            &repo,
            &["worktree", "remove", "--force", &base.to_string_lossy()],
        );
        for t in [&cand, &other] {
            git(
                &repo,
                &["worktree", "remove", "--force", &t.to_string_lossy()],
            );
        }
        let _ = fs::remove_dir_all(&tmp);
    }
}
