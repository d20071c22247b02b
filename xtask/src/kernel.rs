//! `cargo xtask kernel`: the kernel build, cached outside the clone.
//!
//! Layout of the cache (see `util::cache_root`):
//!
//! ```text
//! <cache>/linux-<version>/src            Debian's source of the --kernel chosen
//!                                        (6.12 or 7.3), unpacked once, a git repo
//!                                        whose `pristine` tag is the tarball; our
//!                                        additions are synced onto it file by file
//! <cache>/linux-<version>/build-<flavor> make O=... output, one per config flavour
//!                                        .ironlift-key holds the key it was built for
//! <cache>/custom-<hash>/build-<flavor>   the same for --kernel-src trees
//! ```
//!
//! The key covers the source version, our additions (modules/linux, see
//! [`Additions`]) and the config fragments (configs/kernel). Same key and a bzImage present: no
//! build at all. A changed key: the additions are synced (only changed files
//! are touched) and make rebuilds incrementally.

use crate::deps::Toolchain;
use crate::kver::{Kver, Origin};
use crate::util::{self, note, run, run_logged, step, write_if_changed, Hasher};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Which config: the base one or the debug one (KASAN, lockdep, kmemleak...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Base,
    Debug,
}

impl Flavor {
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Base => "base",
            Flavor::Debug => "debug",
        }
    }
    /// The config fragments in configs/kernel, in merge order: after
    /// each, the kernel's own under configs/kernel/<kernel>/ where there
    /// is one (options of that kernel only).
    fn fragments(self, kernel: Kver, dir: &Path) -> Vec<String> {
        let names: &[&str] = match self {
            Flavor::Base => &["base"],
            Flavor::Debug => &["base", "debug"],
        };
        let mut out = Vec::new();
        for n in names {
            out.push(format!("{n}.config"));
            if let Some(sub) = kernel.series_subdir() {
                let own = format!("{sub}/{n}.config");
                if dir.join(&own).is_file() {
                    out.push(own);
                }
            }
        }
        out
    }
}

/// A built kernel.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub src: PathBuf,
    pub build: PathBuf,
    pub bzimage: PathBuf,
    pub release: String,
    pub key: String,
    pub flavor: Flavor,
    /// Where the source came from: `debian:linux-source-<kernel>=<version>`,
    /// or `custom:<dir>` for `--kernel-src`.
    pub source: String,
    /// Which kernel series it is (`--kernel`).
    pub kernel: Kver,
}

/// What to build.
pub struct KernelOpts {
    pub kernel: Kver,
    pub cache: PathBuf,
    pub kernel_src: Option<PathBuf>,
    pub flavor: Flavor,
    pub jobs: usize,
}

/// Options that must end up set in the final .config, or the guest cannot work.
const REQUIRED: &[&str] = &[
    "CONFIG_RUST",
    "CONFIG_MODULES",
    "CONFIG_PCI_MSI",
    "CONFIG_SYSVIPC",
    "CONFIG_9P_FS",
    "CONFIG_NET_9P_VIRTIO",
    "CONFIG_BLK_DEV_NVME",
    "CONFIG_VIRTIO_BLK",
    "CONFIG_BLK_DEV_NULL_BLK",
];

/// The make invocation every kernel step shares.
pub fn make(tc: &Toolchain, src: &Path, build: &Path) -> Command {
    let mut c = Command::new("make");
    c.current_dir(src)
        .arg(format!("LLVM={}", tc.llvm))
        .arg(format!("RUSTC={}", tc.rustc.display()))
        .arg(format!("RUST_LIB_SRC={}", tc.rust_lib_src.display()))
        .arg(format!("BINDGEN={}", tc.bindgen.display()))
        .arg(format!("O={}", build.display()))
        .env("LIBCLANG_PATH", &tc.libclang);
    c
}

/// The additions we put into the kernel tree: patches, then overlay files.
///
/// 6.12's are `modules/linux/patches/*.patch` and `modules/linux/files/`.
/// Another kernel's patches are its own, `modules/linux/<kernel>/patches/`;
/// its files are `modules/linux/files/`, each replaced by the file at the
/// same path under `modules/linux/<kernel>/files/` if there is one, plus
/// that folder's other files.
pub struct Additions {
    pub patches: Vec<PathBuf>,
    /// (path inside the kernel tree, file on disk)
    pub files: Vec<(String, PathBuf)>,
}

impl Additions {
    pub fn load(root: &Path, kernel: Kver) -> Result<Self> {
        let linux = root.join("modules").join("linux");
        let own = kernel.series_subdir().map(|d| linux.join(d));
        let mut patches: Vec<PathBuf> =
            util::files_below(&own.as_ref().unwrap_or(&linux).join("patches"))?
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "patch"))
                .collect();
        patches.sort();
        let below = |base: &Path| -> Result<Vec<(String, PathBuf)>> {
            Ok(util::files_below(base)?
                .into_iter()
                .map(|f| {
                    let rel = f
                        .strip_prefix(base)
                        .unwrap_or(&f)
                        .to_string_lossy()
                        .into_owned();
                    (rel, f)
                })
                .collect())
        };
        let mut files = below(&linux.join("files"))?;
        if let Some(own) = &own {
            for (rel, f) in below(&own.join("files"))? {
                match files.iter_mut().find(|(r, _)| *r == rel) {
                    Some(slot) => slot.1 = f,
                    None => files.push((rel, f)),
                }
            }
        }
        Ok(Additions { patches, files })
    }

    fn hash_into(&self, h: &mut Hasher) -> Result<()> {
        for p in &self.patches {
            h.add(
                &p.file_name().unwrap_or_default().to_string_lossy(),
                &fs::read(p)?,
            );
        }
        for (rel, f) in &self.files {
            h.add(rel, &fs::read(f)?);
        }
        Ok(())
    }
}

fn debian_source_version(kernel: Kver) -> String {
    match kernel.origin() {
        Origin::Installed => {
            run(Command::new("dpkg-query").args(["-W", "-f=${Version}", &kernel.package()]))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into())
        }
        Origin::Fetched { version, .. } => version.to_string(),
    }
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env("GIT_AUTHOR_NAME", "ironlift")
        .env("GIT_AUTHOR_EMAIL", "ironlift@localhost")
        .env("GIT_COMMITTER_NAME", "ironlift")
        .env("GIT_COMMITTER_EMAIL", "ironlift@localhost");
    c
}

/// Unpacks Debian's tarball into `dir` as a git repo tagged `pristine`.
fn unpack_debian(tarball: &Path, dir: &Path) -> Result<()> {
    let tmp = dir.with_extension("tmp");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    step(&format!("Unpacking {} (once; ~15 s)", tarball.display()));
    run(Command::new("tar")
        .arg("-xJf")
        .arg(tarball)
        .arg("-C")
        .arg(&tmp)
        .arg("--strip-components=1"))?;
    note("recording the pristine tree in git, so our additions can be synced onto it");
    run(git(&tmp).args(["init", "-q"]))?;
    // 80k loose objects would set off a background `git gc` that competes
    // with the kernel build for the CPUs.
    run(git(&tmp).args(["config", "gc.auto", "0"]))?;
    // -f: Debian's tarball ships a .gitignore that ignores everything.
    run(git(&tmp).args(["add", "-A", "-f"]))?;
    run(git(&tmp).args(["commit", "-q", "-m", "pristine"]))?;
    run(git(&tmp).args(["tag", "pristine"]))?;
    fs::rename(&tmp, dir)?;
    Ok(())
}

/// Makes the source tree `src` equal to pristine + additions, touching only
/// files whose content changes.
pub fn sync_additions(src: &Path, add: &Additions, kernel: Kver) -> Result<()> {
    let index = src.join(".git").join("ironlift-index");
    let _ = fs::remove_file(&index);
    let with_index = |c: &mut Command| {
        c.env("GIT_INDEX_FILE", &index);
    };
    let mut c = git(src);
    with_index(&mut c);
    run(c.args(["read-tree", "pristine"]))?;
    for p in &add.patches {
        let mut c = git(src);
        with_index(&mut c);
        run(c.args(["apply", "--cached", "--whitespace=nowarn"]).arg(p)).with_context(|| {
            format!(
                "patch {} does not apply to the pristine kernel source; refresh it against {}",
                p.display(),
                kernel.name()
            )
        })?;
    }
    for (rel, f) in &add.files {
        let sha = run(git(src).args(["hash-object", "-w"]).arg(f))?;
        let mut c = git(src);
        with_index(&mut c);
        run(c.args([
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{},{}", sha.trim(), rel),
        ]))?;
    }
    let mut c = git(src);
    with_index(&mut c);
    let tree = run(c.arg("write-tree"))?.trim().to_string();
    let _ = fs::remove_file(&index);

    // What differs between the wanted tree and the files on disk.
    let changed = run(git(src).args(["diff", "--name-only", "--no-renames", &tree]))?;
    let mut n = 0;
    for rel in changed.lines().filter(|l| !l.is_empty()) {
        let path = src.join(rel);
        let wanted = Command::new("git")
            .current_dir(src)
            .args(["cat-file", "blob", &format!("{tree}:{rel}")])
            .output()?;
        if wanted.status.success() {
            write_if_changed(&path, &wanted.stdout)?;
        } else {
            let _ = fs::remove_file(&path);
        }
        n += 1;
    }
    run(git(src).args(["read-tree", &tree]))?;
    note(&format!(
        "additions: {} patch(es), {} file(s); {n} file(s) in the tree changed",
        add.patches.len(),
        add.files.len()
    ));
    Ok(())
}

/// The lock on a cache tree.
struct TreeLock(fs::File, PathBuf);

/// Shared locks this process holds on cache trees it built, by tree: kept
/// so that other runs do not rebuild under its guest, and given up when
/// this process comes back to lock the same tree again (the base and
/// debug passes of `cargo xtask test` share one source tree; a lock this
/// process still held would make it wait for itself).
static HELD: std::sync::Mutex<Vec<(PathBuf, fs::File)>> = std::sync::Mutex::new(Vec::new());

impl TreeLock {
    /// Locks `base` exclusively, first giving up this process's own shared
    /// lock on it (its earlier use of the tree is over), then waiting for
    /// other processes.
    fn exclusive(base: &Path) -> Result<TreeLock> {
        if let Ok(mut held) = HELD.lock() {
            held.retain(|(p, _)| p != base);
        }
        let lock = fs::File::create(base.join(".lock"))?;
        if lock.try_lock().is_err() {
            note(&format!(
                "another xtask is using {}; waiting for it",
                base.display()
            ));
            lock.lock()?;
        }
        Ok(TreeLock(lock, base.to_path_buf()))
    }

    /// Trades the exclusive lock for a shared one, held until the process
    /// exits or locks the tree again.
    fn downgrade(self) -> Result<()> {
        self.0.unlock()?;
        self.0.lock_shared()?;
        if let Ok(mut held) = HELD.lock() {
            held.push((self.1, self.0));
        }
        Ok(())
    }
}

/// The cache folder of a Debian source version: `linux-<upstream>`,
/// `7.3.4-1~bpo13+1` giving `linux-7.3.4`.
fn cache_dir_name(version: &str) -> String {
    format!("linux-{}", version.split('-').next().unwrap_or(version))
}

/// Debian's source of `kernel` in the cache, unpacked on first use (a
/// fetched package is fetched then, and only then): (base, src, version).
fn debian_source(cache: &Path, kernel: Kver) -> Result<(PathBuf, PathBuf, String)> {
    let installed = kernel.origin() == Origin::Installed;
    let tarball = if installed {
        Some(crate::deps::debian_kernel_tarball(kernel, cache)?)
    } else {
        None
    };
    let version = debian_source_version(kernel);
    let base = cache.join(cache_dir_name(&version));
    let src = base.join("src");
    if !src.join(".git").is_dir() {
        let tarball = match tarball {
            Some(t) => t,
            None => crate::deps::debian_kernel_tarball(kernel, cache)?,
        };
        fs::create_dir_all(&base)?;
        unpack_debian(&tarball, &src)?;
    }
    Ok((base, src, version))
}

/// The pristine Debian tree (a git repo with the `pristine` tag), for
/// building the patch series; nothing is built.
pub fn pristine_source(_tc: &Toolchain, opts: &KernelOpts) -> Result<PathBuf> {
    debian_source_dir(&opts.cache, opts.kernel)
}

/// Debian's source of `kernel` in the cache (a git repo with the
/// `pristine` tag), unpacked on first use.
pub fn debian_source_dir(cache: &Path, kernel: Kver) -> Result<PathBuf> {
    Ok(debian_source(cache, kernel)?.1)
}

// Long: one build's steps in order (source, key, lock, sync, config,
// make, record), each a few lines that read best where they run.
/// Builds (or finds built) the kernel.
pub fn ensure(tc: &Toolchain, opts: &KernelOpts) -> Result<Kernel> {
    let root = util::repo_root();
    let add = Additions::load(&root, opts.kernel)?;
    let (src, base_dir, source_id) = match &opts.kernel_src {
        Some(dir) => {
            let dir = fs::canonicalize(dir)
                .with_context(|| format!("--kernel-src {} does not exist", dir.display()))?;
            if !dir.join("Makefile").is_file() || !dir.join("rust").is_dir() {
                bail!(
                    "{} does not look like a Linux source tree with Rust support",
                    dir.display()
                );
            }
            let mut h = Hasher::new();
            h.add("path", dir.to_string_lossy().as_bytes());
            // A tree built as another kernel than 6.12 gets its own
            // folder (another toolchain); 6.12's keeps its name.
            if opts.kernel != Kver::V6_12 {
                h.add("kernel", opts.kernel.name().as_bytes());
            }
            let id = format!("custom-{}", &h.hex()[..12]);
            (
                dir.clone(),
                opts.cache.join(&id),
                format!("custom:{}", dir.display()),
            )
        }
        None => {
            let (base, src, version) = debian_source(&opts.cache, opts.kernel)?;
            (
                src,
                base,
                format!("debian:{}={version}", opts.kernel.package()),
            )
        }
    };
    let build = base_dir.join(format!("build-{}", opts.flavor.name()));
    fs::create_dir_all(&base_dir)?;
    // Exclusive while we check and build; shared (see `downgrade`) while
    // the modules build and the guest use the tree, so several runs of the
    // same tree can boot side by side but none rebuilds under another.
    let lock = TreeLock::exclusive(&base_dir)?;

    let mut h = Hasher::new();
    h.add("source", source_id.as_bytes());
    add.hash_into(&mut h)?;
    let cfg_dir = root.join("configs").join("kernel");
    let mut fragments = Vec::new();
    for f in opts.flavor.fragments(opts.kernel, &cfg_dir) {
        let p = cfg_dir.join(&f);
        h.add(
            &f,
            &fs::read(&p).with_context(|| format!("config fragment {}", p.display()))?,
        );
        fragments.push(p);
    }
    h.add("rustc", tc.rustc.to_string_lossy().as_bytes());
    h.add("rust_lib_src", tc.rust_lib_src.to_string_lossy().as_bytes());
    let key = h.hex();
    let key_file = build.join(".ironlift-key");
    let bzimage = build.join("arch/x86/boot/bzImage");
    let custom = opts.kernel_src.is_some();

    step(&format!(
        "Kernel ({} config) from {} in {}",
        opts.flavor.name(),
        src.display(),
        build.display()
    ));
    if !custom
        && bzimage.is_file()
        && fs::read_to_string(&key_file)
            .map(|k| k.trim() == key)
            .unwrap_or(false)
    {
        let release = release(&build)?;
        note(&format!(
            "up to date ({release}, key {}): no build",
            &key[..12]
        ));
        return Ok(Kernel {
            src,
            build,
            bzimage,
            release,
            key,
            flavor: opts.flavor,
            source: source_id,
            kernel: opts.kernel,
        });
    }

    if custom {
        check_custom_tree(&src, &add);
    } else {
        sync_additions(&src, &add, opts.kernel)?;
    }
    fs::create_dir_all(&build)?;
    // The tree is about to change under the old key: a build cut short
    // (Ctrl-C, a killed job) must not leave it looking up to date, with
    // the old bzImage beside the new .config that modules build against.
    match fs::remove_file(&key_file) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", key_file.display()))
        }
        _ => {}
    }
    let logs = build.join("ironlift-logs");
    // Config: allnoconfig + our fragments + olddefconfig. Kconfig rewrites
    // only what changed, so an unchanged config rebuilds nothing.
    note("configuring: allnoconfig + configs/kernel fragments + olddefconfig");
    run_logged(
        make(tc, &src, &build).arg("allnoconfig"),
        &logs.join("config-1-allnoconfig.log"),
        "allnoconfig",
    )?;
    let mut merge = Command::new(src.join("scripts/kconfig/merge_config.sh"));
    merge
        .current_dir(&src)
        .arg("-m")
        .arg("-O")
        .arg(&build)
        .arg(build.join(".config"))
        .args(&fragments);
    run_logged(&mut merge, &logs.join("config-2-merge.log"), "merge_config")?;
    run_logged(
        make(tc, &src, &build).arg("olddefconfig"),
        &logs.join("config-3-olddefconfig.log"),
        "olddefconfig",
    )?;
    check_config(&build.join(".config"), &fragments, opts.kernel)?;

    step(&format!(
        "Building bzImage and modules with LLVM={} -j{} (cold: ~16 min on 2 cores; incremental: less)",
        tc.llvm,
        opts.jobs
    ));
    let start = std::time::Instant::now();
    // A cold build prints about as many lines as the last cold build of
    // this flavour did: the bar's total. An incremental one has none.
    let cold = !build.join("vmlinux").exists();
    let cold_lines = build
        .parent()
        .unwrap_or(&build)
        .join(format!("cold-build-{}.lines", opts.flavor.name()));
    let expect = cold
        .then(|| fs::read_to_string(&cold_lines).ok())
        .flatten()
        .and_then(|s| s.trim().parse().ok());
    util::run_logged_expecting(
        make(tc, &src, &build)
            .arg(format!("-j{}", opts.jobs))
            .args(["bzImage", "modules"]),
        &logs.join("build.log"),
        "kernel build",
        expect,
    )
    .context("the kernel build failed: its tail is above; fix the error (or the additions in modules/linux) and run again, the build resumes incrementally")?;
    if cold {
        let _ = fs::copy(logs.join("build.lines"), &cold_lines);
    }
    fs::write(&key_file, &key)?;
    lock.downgrade()?;
    let release = release(&build)?;
    note(&format!(
        "built {release} in {}",
        util::human_secs(start.elapsed().as_secs())
    ));
    Ok(Kernel {
        src,
        build,
        bzimage,
        release,
        key,
        flavor: opts.flavor,
        source: source_id,
        kernel: opts.kernel,
    })
}

fn release(build: &Path) -> Result<String> {
    Ok(
        fs::read_to_string(build.join("include/config/kernel.release"))
            .context("no include/config/kernel.release in the build tree")?
            .trim()
            .to_string(),
    )
}

/// Every option a fragment sets must survive olddefconfig; the required
/// ones must be `=y`.
fn check_config(config: &Path, fragments: &[PathBuf], kernel: Kver) -> Result<()> {
    let text = fs::read_to_string(config)?;
    let set = |name: &str| -> Option<String> {
        text.lines().find_map(|l| {
            l.strip_prefix(name)
                .and_then(|r| r.strip_prefix('='))
                .map(str::to_string)
        })
    };
    let mut lost = Vec::new();
    for f in fragments {
        for line in fs::read_to_string(f)?.lines() {
            let line = line.trim();
            if let Some((name, val)) = line.split_once('=') {
                if name.starts_with("CONFIG_")
                    && val != "n"
                    && !kernel.gone_options().contains(&name)
                    && set(name).as_deref() != Some(val)
                {
                    lost.push(format!(
                        "{name}={val} (got {})",
                        set(name).unwrap_or("unset".into())
                    ));
                }
            }
        }
    }
    for l in &lost {
        note(&format!("warning: config fragment option not applied: {l}"));
    }
    let missing: Vec<&&str> = REQUIRED
        .iter()
        .filter(|n| set(n).as_deref() != Some("y"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "the kernel config lacks {:?}; for CONFIG_RUST check `make LLVM=1 rustavailable` \
             (rustc-web, rust-web-src, bindgen-cli, libclang-dev)",
            missing
        );
    }
    Ok(())
}

fn check_custom_tree(src: &Path, add: &Additions) {
    let missing: Vec<&String> = add
        .files
        .iter()
        .filter(|(rel, f)| fs::read(src.join(rel)).ok() != fs::read(f).ok())
        .map(|(rel, _)| rel)
        .collect();
    if !missing.is_empty() {
        note(&format!(
            "warning: {} lacks ironlift's kernel additions ({} differ, e.g. {}); the Rust \
             elevator modules need them: apply the series from `cargo xtask patches` with git am",
            src.display(),
            missing.len(),
            missing[0]
        ));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tree_this_process_built_can_be_locked_again() {
        // The base pass downgrades to a shared lock it keeps; the debug
        // pass of the same process must get the exclusive lock without
        // waiting for itself (it used to wait forever).
        let dir = std::env::temp_dir().join(format!("ironlift-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        super::TreeLock::exclusive(&dir)
            .unwrap()
            .downgrade()
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let d = dir.clone();
        std::thread::spawn(move || {
            let again = super::TreeLock::exclusive(&d).map(|_| ());
            let _ = tx.send(again.is_ok());
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            got,
            Ok(true),
            "locking the tree again waited for this process"
        );
    }
}
