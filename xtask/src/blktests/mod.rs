//! `cargo xtask blktests`: upstream blktests in the guest, with every
//! `rust-*` elevator loaded, so that its tests that loop over a queue's
//! schedulers (block/005, 014, 015, 020, 021, 027, 040, 047, ...) drive
//! ours beside the kernel's.
//!
//! configs/blktests.toml says which commit, which groups, which test
//! devices, which tests must pass and which are left out and why
//! ([`source`]). The guest runs blktests' `check` (qemu/guest/blktests.sh);
//! its output and results folder become one row per test and device
//! ([`results`]), shown as a table and kept in the run's folder. A failed
//! test, a required test not run, an unfinished run or a kernel report on
//! the console fails the command.

mod results;
mod source;

use crate::flags::Blktests;
use crate::guest::{self, shell_words};
use crate::util::{self, note, step};
use crate::{devices, kernel, ktap};
use anyhow::{bail, Result};
use std::fs;
use std::time::Duration;

/// How long a whole blktests run may take before it counts as hung: its
/// timed tests run `timeout` seconds per device and scheduler loop, and
/// the debug kernel is several times slower.
fn boot_timeout(flavor: kernel::Flavor) -> Duration {
    Duration::from_secs(match flavor {
        kernel::Flavor::Base => 3600,
        kernel::Flavor::Debug => 3 * 3600,
    })
}

/// The groups and tests `check` runs: `--tests`, else the config's
/// groups. A name must be a group the config runs or a test of one, and
/// not excluded.
fn run_list(cfg: &source::Config, asked: Option<&[String]>) -> Result<Vec<String>> {
    let Some(asked) = asked else {
        return Ok(cfg.run.groups.clone());
    };
    for t in asked {
        let group = t.split('/').next().unwrap_or("");
        if !cfg.run.groups.iter().any(|g| g == group)
            || (t.contains('/') && !source::is_test_name(t))
        {
            bail!(
                "--tests {t:?}: not a group of configs/blktests.toml ({}) or a test of one, like block/005",
                cfg.run.groups.join(", ")
            );
        }
        if let Some(e) = cfg.excluded(t) {
            bail!(
                "--tests {t:?}: configs/blktests.toml excludes it: {}",
                e.reason
            );
        }
    }
    Ok(asked.to_vec())
}

/// Whether test `t` (group/NNN) is among the groups and tests run.
fn in_run(t: &str, run: &[String]) -> bool {
    let group = t.split('/').next().unwrap_or("");
    run.iter().any(|r| r == t || r == group)
}

// Long: one run's steps in order (config, kernel and modules, blktests'
// tree, job, boot, results, verdict), each a few lines.
/// `cargo xtask blktests`.
pub fn run(b: &Blktests) -> Result<()> {
    let root = util::repo_root();
    let cfg = source::Config::load(&root)?;
    let run = run_list(&cfg, b.tests.as_deref())?;
    let opts = b.k.kernel_opts();
    let tree = source::ensure(&cfg, &opts.cache, b.blktests_repo.as_deref())?;
    let p = guest::prepare(&b.k, &b.g)?;
    let flavor = p.kernel.flavor;
    let kmods = source::kernel_modules(&p.tc, &p.kernel, &opts.cache)?;
    let out = b.out.clone().unwrap_or_else(|| {
        root.join("target").join("ironlift-blktests").join(format!(
            "{}-{}",
            guest::now("+%Y%m%dT%H%M%S"),
            flavor.name()
        ))
    });
    fs::create_dir_all(&out)?;
    let all = devices::load(&root)?;
    let used = devices::pick(&all, cfg.run.test_devs.iter().map(String::as_str))?;
    let excluded: Vec<&source::Exclude> = cfg
        .exclude
        .iter()
        .filter(|e| in_run(&e.test, &run) || run.contains(&e.test))
        .collect();
    fs::write(
        out.join("job.env"),
        format!(
            "{}BLKTESTS_DIR='{}'\nKERNEL_MODULES='{}'\nBLKTESTS_RUN='{}'\n\
             BLKTESTS_EXCLUDE='{}'\nTEST_DEVS='{}'\nBLKTESTS_TIMEOUT='{}'\n",
            p.job_env(used.iter().map(|(_, d)| d), &[])?,
            tree.display(),
            kmods.display(),
            run.join(" "),
            shell_words(excluded.iter().map(|e| e.test.clone())),
            shell_words(used.iter().map(|(_, d)| d.path.clone())),
            cfg.run.timeout,
        ),
    )?;
    step(&format!(
        "blktests in the guest ({} kernel, {}): {} on {}, with {}",
        flavor.name(),
        p.accel.name().to_uppercase(),
        run.join(" "),
        shell_words(used.iter().map(|(_, d)| d.path.clone())),
        p.elevators().join(" ")
    ));
    note(&format!("output: {}", out.display()));
    let timeout = boot_timeout(flavor);
    let boot = qemu_boot(&p, b, &out, timeout);
    let r = boot.run()?;
    note(&format!(
        "guest ran for {}",
        util::human_secs(r.wall.as_secs())
    ));
    let mut problems = Vec::new();
    if let Err(e) = r.check_setup(&boot.console_log) {
        problems.push(format!("{e:#}"));
    }
    if r.timed_out {
        problems.push(format!(
            "the guest did not finish within {}s (console log kept: {})",
            timeout.as_secs(),
            boot.console_log.display()
        ));
    }
    for t in ktap::console_problems(&r.console) {
        problems.push(format!("trouble on the console:\n{t}"));
    }
    let mut rows = match results::read_run(&out) {
        Ok((rows, p)) => {
            problems.extend(p);
            rows
        }
        Err(e) => {
            problems.push(format!("{e:#}"));
            Vec::new()
        }
    };
    let required: Vec<String> = cfg
        .required(flavor)
        .into_iter()
        .filter(|t| in_run(t, &run))
        .collect();
    problems.extend(results::judge(&rows, &required));
    results::add_excluded(&mut rows, excluded);
    results::write(&out, &rows)?;
    println!(
        "blktests ({} kernel), {}:\n{}",
        flavor.name(),
        out.join("blktests.md").display(),
        results::markdown(&rows)
    );
    if !problems.is_empty() {
        bail!(
            "blktests: {}\n(console log: {})",
            problems.join("\n"),
            boot.console_log.display()
        );
    }
    Ok(())
}

/// The guest's boot for the blktests job.
fn qemu_boot<'a>(
    p: &'a guest::Prepared,
    b: &Blktests,
    out: &'a std::path::Path,
    timeout: Duration,
) -> crate::qemu::Boot<'a> {
    crate::qemu::Boot {
        cmdline_extra: guest::flavor_cmdline(p.kernel.flavor).to_string(),
        ..p.boot(&b.g, "blktests", out, timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> source::Config {
        source::Config::parse(
            "[source]\nurl = \"u\"\ncommit = \"a608cb56341e0f4cacf473f5e0ac6052f1f12de9\"\n\
             [run]\ngroups = [\"block\", \"loop\"]\ntest_devs = []\ntimeout = 1\n\
             required = [\"block/005\"]\n\
             [[exclude]]\ntest = \"block/008\"\nreason = \"why\"\n",
        )
        .unwrap()
    }

    #[test]
    fn the_run_list_is_the_groups_or_what_was_asked() {
        let c = cfg();
        assert_eq!(run_list(&c, None).unwrap(), ["block", "loop"]);
        let asked = ["block/005".to_string(), "loop".to_string()];
        assert_eq!(run_list(&c, Some(&asked)).unwrap(), asked);
        let e = |t: &str| format!("{:#}", run_list(&c, Some(&[t.to_string()])).unwrap_err());
        assert!(e("nvme/001").contains("not a group"));
        assert!(e("block/5").contains("not a group"));
        assert!(e("block/008").contains("excludes it: why"));
    }

    #[test]
    fn the_guest_runs_blktests_sh_with_the_job_xtask_writes() {
        let read =
            |f: &str| fs::read_to_string(util::repo_root().join("qemu/guest").join(f)).unwrap();
        assert!(read("init").contains("blktests) \"$here/blktests.sh\" ;;"));
        let sh = read("blktests.sh");
        let me = fs::read_to_string(util::repo_root().join("xtask/src/blktests/mod.rs")).unwrap();
        for key in [
            "BLKTESTS_DIR",
            "KERNEL_MODULES",
            "BLKTESTS_RUN",
            "BLKTESTS_EXCLUDE",
            "TEST_DEVS",
            "BLKTESTS_TIMEOUT",
        ] {
            assert!(sh.contains(&format!("${key}")), "blktests.sh reads {key}");
            assert!(me.contains(&format!("{key}='{{}}'")), "xtask writes {key}");
        }
        // What read_run reads is what the script writes.
        for f in ["/run/out/blktests.log", "/run/out/blktests.rc", "/run/out/"] {
            assert!(sh.contains(f), "{f}");
        }
    }

    #[test]
    fn required_tests_count_only_when_run() {
        assert!(in_run("block/005", &["block".into()]));
        assert!(in_run("block/005", &["block/005".into()]));
        assert!(!in_run("block/005", &["block/027".into()]));
        assert!(!in_run("block/005", &["loop".into()]));
    }
}
