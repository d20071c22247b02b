//! blktests' source: `configs/blktests.toml` (where from, which commit,
//! what runs, what is left out and why) and the tree xtask fetches and
//! builds into the cache.
//!
//! Fetched rather than vendored: blktests is GPL-3.0 and changes weekly; a
//! pinned commit of its public repository gives every run the same tests
//! without carrying a copy of them in this tree. `--blktests-repo` clones
//! a local clone or mirror instead of the URL, for hosts that cannot reach
//! it; the commit must be in it.

use crate::util::{self, note, run, run_logged, step};
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `configs/blktests.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub source: SourceCfg,
    pub run: RunCfg,
    #[serde(default)]
    pub exclude: Vec<Exclude>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceCfg {
    pub url: String,
    pub commit: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCfg {
    /// blktests groups (`block`, `loop`, ...) given to `check`.
    pub groups: Vec<String>,
    /// Device names of configs/devices/guest.toml: blktests' TEST_DEVS.
    pub test_devs: Vec<String>,
    /// blktests' TIMEOUT, in seconds.
    pub timeout: u32,
    /// Tests that must run and pass.
    #[serde(default)]
    pub required: Vec<String>,
    /// Tests that must run and pass on the debug kernel.
    #[serde(default)]
    pub debug_required: Vec<String>,
}

/// A test (or a group) not run, and why.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Exclude {
    pub test: String,
    pub reason: String,
}

/// Whether `name` is a blktests test name, `group/NNN`.
pub fn is_test_name(name: &str) -> bool {
    match name.split_once('/') {
        Some((g, n)) => {
            !g.is_empty()
                && g.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && n.len() == 3
                && n.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

impl Config {
    /// Reads and checks `configs/blktests.toml` under `root`.
    pub fn load(root: &Path) -> Result<Config> {
        let p = root.join("configs").join("blktests.toml");
        let text = fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        Self::parse(&text).with_context(|| format!("in {}", p.display()))
    }

    /// Parses and checks the config's text.
    pub fn parse(text: &str) -> Result<Config> {
        let c: Config = toml::from_str(text)?;
        if c.source.commit.len() != 40 || !c.source.commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!(
                "source.commit must be a full 40-digit commit id, not {:?}",
                c.source.commit
            );
        }
        if c.run.groups.is_empty() {
            bail!("run.groups is empty: nothing would run");
        }
        for t in c.run.required.iter().chain(&c.run.debug_required) {
            if !is_test_name(t) {
                bail!("run.required: {t:?} is not a test name like block/005");
            }
        }
        for e in &c.exclude {
            if !is_test_name(&e.test) && !c.run.groups.contains(&e.test) {
                bail!(
                    "exclude: {:?} is neither a test name like block/005 nor a group run",
                    e.test
                );
            }
            if e.reason.trim().is_empty() {
                bail!("exclude: {} has no reason", e.test);
            }
            if c.run.required.contains(&e.test) || c.run.debug_required.contains(&e.test) {
                bail!("{} is both required and excluded", e.test);
            }
        }
        Ok(c)
    }

    /// The tests that must run and pass on this kernel.
    pub fn required(&self, flavor: crate::kernel::Flavor) -> Vec<String> {
        let mut r = self.run.required.clone();
        if flavor == crate::kernel::Flavor::Debug {
            r.extend(self.run.debug_required.iter().cloned());
        }
        r
    }

    /// The excluded test or group `test` falls under, if any.
    pub fn excluded(&self, test: &str) -> Option<&Exclude> {
        let group = test.split('/').next().unwrap_or("");
        self.exclude
            .iter()
            .find(|e| e.test == test || e.test == group)
    }
}

/// Where the built tree of `commit` lives in the cache.
pub fn tree_dir(cache: &Path, commit: &str) -> PathBuf {
    cache.join("blktests").join(&commit[..12])
}

/// The marker a finished fetch and build leaves, holding the commit.
const BUILT: &str = ".ironlift-built";

/// Clones blktests (from `repo`, else the configured URL) into the cache,
/// checks out the pinned commit and builds its helpers (`make`), unless
/// that was done before. Returns the tree.
pub fn ensure(cfg: &Config, cache: &Path, repo: Option<&Path>) -> Result<PathBuf> {
    let commit = &cfg.source.commit;
    let dir = tree_dir(cache, commit);
    if fs::read_to_string(dir.join(BUILT)).is_ok_and(|c| c.trim() == commit) {
        note(&format!("blktests {} in {}", &commit[..12], dir.display()));
        return Ok(dir);
    }
    let from = match repo {
        Some(p) => {
            let p = fs::canonicalize(p)
                .with_context(|| format!("--blktests-repo {}: no such folder", p.display()))?;
            p.display().to_string()
        }
        None => cfg.source.url.clone(),
    };
    step(&format!("blktests {} from {from}", &commit[..12]));
    let tmp = dir.with_extension("tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(dir.parent().unwrap_or(cache))?;
    let mut clone = Command::new("git");
    clone
        .args(["clone", "--quiet", "--no-checkout", &from])
        .arg(&tmp);
    if let Err(e) = run(&mut clone) {
        let hint = if repo.is_none() {
            "; without network access to it, clone it elsewhere and pass --blktests-repo PATH"
        } else {
            ""
        };
        return Err(e.context(format!("cloning blktests from {from}{hint}")));
    }
    run(Command::new("git").arg("-C").arg(&tmp).args([
        "-c",
        "advice.detachedHead=false",
        "checkout",
        "--quiet",
        commit,
    ]))
    .with_context(|| {
        format!("blktests commit {commit} (configs/blktests.toml) is not in {from}")
    })?;
    if ["make", "cc", "c++"]
        .iter()
        .any(|p| util::which(p).is_none())
    {
        bail!("building blktests' helpers needs make and C and C++ compilers (Debian: make, g++)");
    }
    run_logged(
        Command::new("nice")
            .args(["-n", "19", "make", "-C"])
            .arg(&tmp),
        &tmp.join("ironlift-make.log"),
        "make (blktests' src/ helpers)",
    )?;
    let _ = fs::remove_dir_all(&dir);
    fs::rename(&tmp, &dir)
        .with_context(|| format!("moving {} to {}", tmp.display(), dir.display()))?;
    fs::write(dir.join(BUILT), commit)?;
    Ok(dir)
}

/// The kernel's own modules (scsi_debug, and what it needs), installed
/// with `make modules_install` into the cache once per kernel build, for
/// the guest's `modprobe`: blktests loads scsi_debug with the parameters
/// of each test. Returns the install root (holding `lib/modules/<release>`).
pub fn kernel_modules(
    tc: &crate::deps::Toolchain,
    k: &crate::kernel::Kernel,
    cache: &Path,
) -> Result<PathBuf> {
    let dir = cache.join("blktests").join("modules").join(format!(
        "{}-{}",
        k.flavor.name(),
        &k.key[..12]
    ));
    let done = dir.join(BUILT);
    if done.exists() {
        return Ok(dir);
    }
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir)?;
    run_logged(
        crate::kernel::make(tc, &k.src, &k.build)
            .arg("modules_install")
            .arg(format!("INSTALL_MOD_PATH={}", dir.display())),
        &dir.join("ironlift-modules-install.log"),
        "make modules_install (the kernel's modules, for modprobe in the guest)",
    )?;
    if !dir.join("lib/modules").join(&k.release).is_dir() {
        bail!(
            "make modules_install left no {}",
            dir.join("lib/modules").join(&k.release).display()
        );
    }
    fs::write(&done, &k.key)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_projects_config_loads() {
        use crate::kernel::Flavor;
        let c = Config::load(&util::repo_root()).unwrap();
        assert!(c.run.groups.iter().any(|g| g == "block"));
        let base = c.required(Flavor::Base);
        assert!(base.iter().any(|t| t == "block/014"));
        for t in [
            "block/005",
            "block/014",
            "block/015",
            "block/020",
            "block/021",
            "block/027",
            "block/040",
            "block/047",
        ] {
            assert!(
                c.required(Flavor::Debug).iter().any(|r| r == t),
                "{t} required"
            );
        }
    }

    const OK: &str = r#"
[source]
url = "https://example.org/blktests.git"
commit = "a608cb56341e0f4cacf473f5e0ac6052f1f12de9"
[run]
groups = ["block", "loop"]
test_devs = ["nvme"]
timeout = 20
required = ["block/005"]
[[exclude]]
test = "block/008"
reason = "because"
[[exclude]]
test = "loop"
reason = "a whole group"
"#;

    #[test]
    fn exclusions_name_a_test_or_group() {
        let c = Config::parse(OK).unwrap();
        assert_eq!(c.excluded("block/008").unwrap().reason, "because");
        assert_eq!(c.excluded("loop/001").unwrap().reason, "a whole group");
        assert!(c.excluded("block/005").is_none());
    }

    #[test]
    fn bad_configs_are_refused_with_the_reason() {
        let bad = |from: &str, to: &str| {
            let e = Config::parse(&OK.replace(from, to)).unwrap_err();
            format!("{e:#}")
        };
        assert!(bad("a608cb56341e0f4cacf473f5e0ac6052f1f12de9", "main").contains("40-digit"));
        assert!(bad("reason = \"because\"", "reason = \" \"").contains("no reason"));
        assert!(bad("test = \"block/008\"", "test = \"block/5\"").contains("neither"));
        assert!(bad("test = \"block/008\"", "test = \"block/005\"").contains("both"));
        assert!(bad("timeout = 20", "timeout = 20\nfoo = 1").contains("unknown field"));
        assert!(bad("[\"block\", \"loop\"]", "[]").contains("nothing would run"));
    }

    #[test]
    fn test_names() {
        assert!(is_test_name("block/005"));
        assert!(is_test_name("zbd/010"));
        assert!(!is_test_name("block"));
        assert!(!is_test_name("block/5"));
        assert!(!is_test_name("Block/005"));
    }
}
