//! `cargo xtask qemu-bench --suite all`: every suite of configs/suites,
//! one boot each, in file-name order, into one run folder.
//!
//! Each suite runs as `--suite NAME` would, with the same options, into
//! `<out>/<name>/` (its own report.md, report.html, results.json in its
//! kind's schema, kcidb.json and runs/). The suites' devices, kinds and
//! guests differ, so a boot per suite is what each suite's own command
//! does, and its folder is the folder that command writes: `cargo xtask
//! report <out>/<name>` re-renders it like any other. A suite that fails
//! does not stop the others; `<out>/index.md` and `index.html` list every
//! suite with its verdict, wall time and report, and the command fails
//! after the last suite if any failed.

use super::kind::Suite;
use crate::flags::{QemuBench, SuiteArgs};
use crate::guest;
use crate::util::{self, note, step};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The `--suite` name that runs every suite.
pub const ALL: &str = "all";

/// One suite of the run: its name, kind, folder and options.
pub struct Part {
    pub name: String,
    pub kind: String,
    pub description: String,
    pub o: QemuBench,
}

/// What became of a suite.
pub struct Done {
    pub name: String,
    pub kind: String,
    pub description: String,
    pub wall_s: u64,
    /// The error, if it failed.
    pub error: Option<String>,
}

/// The suites' names: the .toml files of `dir`, sorted.
pub fn suite_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for e in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "toml") {
            if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                names.push(stem.to_string());
            }
        }
    }
    names.sort();
    if names.iter().any(|n| n == ALL) {
        bail!(
            "{}/{ALL}.toml: `{ALL}` names every suite, not a suite file",
            dir.display()
        );
    }
    Ok(names)
}

/// The run's parts: every suite of `root`'s configs/suites, each with
/// `o`'s options and its folder `out/<name>`. Options that name a part of
/// one suite (devices, workloads) or measure fio runs only (`--profile`,
/// `--count-insns`) are refused; every suite file must load.
pub fn plan(root: &Path, o: &QemuBench, out: &Path) -> Result<Vec<Part>> {
    if o.s.devices.is_some() || o.s.workloads.is_some() {
        bail!(
            "--suite {ALL}: --devices and --workloads name a suite's own devices and \
             workloads; run that suite alone"
        );
    }
    if o.profile || o.s.count_insns {
        bail!("--suite {ALL}: --profile and --count-insns measure fio runs; most suites run other tools");
    }
    let mut parts = Vec::new();
    for name in suite_names(&root.join("configs/suites"))? {
        let suite = Suite::load(root, &name)?;
        if !super::KINDS.contains(&suite.kind.as_str()) {
            bail!(
                "suite {name}: no kind {:?}; the kinds: {}",
                suite.kind,
                super::KINDS.join(", ")
            );
        }
        parts.push(Part {
            o: QemuBench {
                k: o.k.clone(),
                g: o.g.clone(),
                s: SuiteArgs {
                    suite: name.clone(),
                    ..o.s.clone()
                },
                out: Some(out.join(&name)),
                profile: false,
            },
            name,
            kind: suite.kind,
            description: suite.description,
        });
    }
    Ok(parts)
}

/// `--out`, or `results/<date>-<kernel>-all[-quick]`.
fn out_dir(root: &Path, o: &QemuBench, release: &str) -> PathBuf {
    o.out.clone().unwrap_or_else(|| {
        root.join("results").join(format!(
            "{}-{release}-{ALL}{}",
            guest::now("+%Y-%m-%dT%H%M"),
            if o.s.quick { "-quick" } else { "" }
        ))
    })
}

/// `cargo xtask qemu-bench --suite all`.
pub fn run(o: &QemuBench) -> Result<()> {
    let started = Instant::now();
    let root = util::repo_root();
    // The kernel and modules once, before any suite: a build that fails
    // stops the run here, and the suites find them cached.
    let p = guest::prepare(&o.k, &o.g)?;
    let out = out_dir(&root, o, &p.kernel.release);
    let parts = plan(&root, o, &out)?;
    fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    step(&format!(
        "All {} suites, one boot each: {}",
        parts.len(),
        parts
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    note(&format!("run folder: {}", out.display()));
    let mut done: Vec<Done> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        step(&format!("Suite {}/{}: {}", i + 1, parts.len(), part.name));
        let t = Instant::now();
        let r = super::qemu_bench_one(&part.o);
        done.push(Done {
            name: part.name.clone(),
            kind: part.kind.clone(),
            description: part.description.clone(),
            wall_s: t.elapsed().as_secs(),
            error: r.err().map(|e| format!("{e:#}")),
        });
        write_index(&out, o.s.quick, &done, parts.len())?;
    }
    note(&format!(
        "index: {}  (wall time {})",
        out.join("index.md").display(),
        util::human_secs(started.elapsed().as_secs())
    ));
    let failed: Vec<&str> = done
        .iter()
        .filter(|d| d.error.is_some())
        .map(|d| d.name.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} suites failed: {} (see {})",
            failed.len(),
            done.len(),
            failed.join(", "),
            out.join("index.md").display()
        );
    }
    Ok(())
}

/// The index as Markdown, its links to each suite's report `report.<ext>`.
pub fn index_markdown(quick: bool, done: &[Done], planned: usize, ext: &str) -> String {
    let total: u64 = done.iter().map(|d| d.wall_s).sum();
    let mut s = format!(
        "# All suites{}\n\n{} of {planned} suites run, one boot each, wall time {}.\n\n\
         | suite | kind | verdict | wall time | report |\n|---|---|---|---:|---|\n",
        if quick { " (quick)" } else { "" },
        done.len(),
        util::human_secs(total)
    );
    for d in done {
        let verdict = match &d.error {
            None => "passed".to_string(),
            Some(e) => format!(
                "**failed**: {}",
                e.lines().next().unwrap_or_default().replace('|', "\\|")
            ),
        };
        s.push_str(&format!(
            "| {} | {} | {verdict} | {} | [report.{ext}]({}/report.{ext}) |\n",
            d.name,
            d.kind,
            util::human_secs(d.wall_s),
            d.name
        ));
    }
    s.push_str("\n## The suites\n\n");
    for d in done {
        s.push_str(&format!("- **{}**: {}\n", d.name, d.description));
    }
    s
}

/// Writes index.md and index.html into `out` for the suites done so far.
fn write_index(out: &Path, quick: bool, done: &[Done], planned: usize) -> Result<()> {
    fs::write(
        out.join("index.md"),
        index_markdown(quick, done, planned, "md"),
    )?;
    crate::html::write(
        &out.join("index.html"),
        "ironlift: all suites",
        &index_markdown(quick, done, planned, "html"),
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::{Cli, Cmd};
    use clap::Parser;

    fn qemu_bench(args: &[&str]) -> QemuBench {
        let mut all = vec!["xtask", "qemu-bench"];
        all.extend(args);
        match Cli::try_parse_from(all).unwrap().cmd {
            Cmd::QemuBench(q) => q,
            _ => panic!("not qemu-bench"),
        }
    }

    /// `--suite all` plans every suite file, each into its own folder
    /// with the options given.
    #[test]
    fn all_plans_every_suite_with_the_options() {
        let root = util::repo_root();
        let o = qemu_bench(&[
            "--suite",
            "all",
            "--quick",
            "--schedulers",
            "none,bfq:low_latency=0",
            "--repeats",
            "2",
            "--accel",
            "tcg",
            "--out",
            "/o",
        ]);
        assert_eq!(o.s.suite, ALL);
        let parts = plan(&root, &o, Path::new("/o")).unwrap();
        let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
        let mut files = Vec::new();
        for e in fs::read_dir(root.join("configs/suites")).unwrap() {
            let n = e.unwrap().file_name().into_string().unwrap();
            if let Some(stem) = n.strip_suffix(".toml") {
                files.push(stem.to_string());
            }
        }
        files.sort();
        assert_eq!(names, files);
        for want in [
            "phoronix",
            "jobs-1-8",
            "androbench",
            "bonnie-raid5",
            "startup-matrix",
        ] {
            assert!(names.contains(&want), "{want} not in {names:?}");
        }
        for p in &parts {
            assert_eq!(p.o.s.suite, p.name);
            assert_eq!(p.o.out, Some(PathBuf::from("/o").join(&p.name)));
            assert!(p.o.s.quick);
            assert_eq!(p.o.s.repeats, Some(2));
            assert_eq!(
                p.o.s.schedulers,
                Some(vec!["none".to_string(), "bfq:low_latency=0".to_string()])
            );
            assert_eq!(p.o.g.accel, "tcg");
            assert!(super::super::KINDS.contains(&p.kind.as_str()));
        }
        let kinds: Vec<&str> = parts.iter().map(|p| p.kind.as_str()).collect();
        for kind in super::super::KINDS {
            assert!(kinds.contains(kind), "no suite of kind {kind}");
        }
    }

    #[test]
    fn all_refuses_the_options_of_one_suite() {
        let root = util::repo_root();
        for args in [
            &["--suite", "all", "--devices", "nvme"][..],
            &["--suite", "all", "--workloads", "randread"],
            &["--suite", "all", "--profile"],
            &["--suite", "all", "--count-insns"],
        ] {
            let o = qemu_bench(args);
            assert!(plan(&root, &o, Path::new("/o")).is_err(), "{args:?}");
        }
    }

    #[test]
    fn a_suite_file_named_all_is_refused() {
        let dir = std::env::temp_dir().join(format!("xtask-all-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("b.toml"), "").unwrap();
        fs::write(dir.join("a.toml"), "").unwrap();
        fs::write(dir.join("notes.md"), "").unwrap();
        assert_eq!(suite_names(&dir).unwrap(), ["a", "b"]);
        fs::write(dir.join("all.toml"), "").unwrap();
        assert!(suite_names(&dir).is_err());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_index_links_each_report_and_says_what_failed() {
        let done = [
            Done {
                name: "androbench".into(),
                kind: "androbench".into(),
                description: "d1".into(),
                wall_s: 600,
                error: None,
            },
            Done {
                name: "phoronix".into(),
                kind: "tool".into(),
                description: "d2".into(),
                wall_s: 61,
                error: Some("2 of 9 runs failed | x\nmore".into()),
            },
        ];
        let md = index_markdown(true, &done, 3, "md");
        assert!(md.starts_with("# All suites (quick)\n"), "{md}");
        assert!(md.contains("2 of 3 suites run"), "{md}");
        assert!(md.contains(
            "| androbench | androbench | passed | 10m 00s | [report.md](androbench/report.md) |"
        ));
        assert!(md.contains("| phoronix | tool | **failed**: 2 of 9 runs failed \\| x | 1m 01s |"));
        assert!(!md.contains("more"));
        let html = index_markdown(false, &done, 2, "html");
        assert!(html.contains("(phoronix/report.html)") && !html.contains("(quick)"));
    }
}
