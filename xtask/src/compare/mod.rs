//! `cargo xtask compare`: whether a candidate (a patch, a kernel tree, a
//! git ref) changes what a suite measures against a base.
//!
//! Each side is a tree of this repository ([`sides`]) whose own xtask
//! builds its kernel and modules and runs one suite per boot (two kernels
//! cannot share a boot). The boots alternate, base first in even rounds
//! and candidate first in odd ones, so a drift of the host over the run
//! falls on both sides alike. [`merge`] pools every run of every boot
//! per side and compares them metric by metric ([`stats`]); [`page`]
//! writes compare.md and compare.html.

pub mod merge;
pub mod page;
pub mod sides;
pub mod stats;

use crate::flags::Compare;
use crate::suite::kind::{Kind, Suite};
use crate::util::{self, note, step};
use anyhow::{bail, Context, Result};
use sides::Side;
use std::fs;
use std::path::{Path, PathBuf};

/// `cargo xtask compare`.
pub fn run(o: &Compare) -> Result<()> {
    let root = util::repo_root();
    let suite = Suite::load(&root, &o.s.suite)?;
    if suite.kind != crate::suite::fio::Fio::NAME {
        bail!(
            "suite {} is a {} suite; compare reads fio suites' results (e.g. fio-basic)",
            suite.name,
            suite.kind
        );
    }
    if !(50.0..100.0).contains(&o.level) {
        bail!(
            "--level {} is not a confidence level in percent (50 to 99.9…)",
            o.level
        );
    }
    // Names checked before anything is built.
    let known = crate::devices::load(&root)?;
    for d in o.s.devices.iter().flatten() {
        if !known.contains_key(d) {
            bail!(
                "unknown device {d:?}; known: {}",
                known.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    let cache = util::cache_root(o.cache_dir.as_deref());
    let sides = sides::resolve(&o.sides, &root, &cache, o.kernel)?;
    let out = o.out.clone().unwrap_or_else(|| {
        root.join("results").join(format!(
            "{}-compare{}",
            crate::guest::now("+%Y-%m-%dT%H%M"),
            if o.s.quick { "-quick" } else { "" }
        ))
    });
    for s in &sides {
        step(&format!("Building the {}: {}", s.label, s.what));
        s.build(o, &cache)?;
    }
    if o.build_only {
        note("--build-only: both sides are built; run again without it to boot them");
        return Ok(());
    }
    fs::create_dir_all(out.join("boots")).with_context(|| format!("creating {}", out.display()))?;
    note(&format!("results: {}", out.display()));
    let (boots, failures) = boot_alternately(o, &sides, &cache, &out)?;
    let merged = merge::Merged::read(&boots)?;
    let level = o.level / 100.0;
    let rows = merged.compare(level);
    let functions = merged.function_changes(&rows);
    let cmp = page::Comparison {
        suite: suite.name.clone(),
        quick: o.s.quick,
        level,
        boots: boots
            .iter()
            .map(|(i, d)| (sides[*i].label.to_string(), rel(&out, d)))
            .collect(),
        base: sides[0].what.clone(),
        candidate: sides[1].what.clone(),
        failures,
        rows,
        functions,
    };
    cmp.write(&out)?;
    println!("{}", cmp.markdown_tables());
    note(&format!(
        "comparison: {} and {}",
        out.join("compare.md").display(),
        out.join("compare.html").display()
    ));
    gate(o, &cmp)
}

/// `--fail-if-worse`: an error naming each metric significantly worse by
/// more than the percentage.
fn gate(o: &Compare, cmp: &page::Comparison) -> Result<()> {
    if let Some(pct) = o.fail_if_worse {
        let unjudged = cmp
            .rows
            .iter()
            .filter(|r| r.cmp.verdict == stats::Verdict::TooFewSamples)
            .count();
        if unjudged > 0 {
            note(&format!(
                "warning: {unjudged} metric(s) had too few samples for the {} % level: \
                 --fail-if-worse cannot judge them (more --repeats or --boots)",
                o.level
            ));
        }
        let worse = cmp.worse_than(pct);
        if !worse.is_empty() {
            bail!(
                "{} metric(s) significantly worse by more than {pct} %:\n{}",
                worse.len(),
                worse.join("\n")
            );
        }
    }
    Ok(())
}

/// A boot that wrote results: (side, its folder).
type Boot = (usize, PathBuf);

/// Boots the sides in turn, `--boots` rounds of two (base first in even
/// rounds, candidate first in odd ones), each into `out/boots/<n>-<side>`:
/// the boots that wrote results, (side, folder), and what failed.
fn boot_alternately(
    o: &Compare,
    sides: &[Side; 2],
    cache: &Path,
    out: &Path,
) -> Result<(Vec<Boot>, Vec<String>)> {
    let mut boots: Vec<Boot> = Vec::new();
    let mut failures = Vec::new();
    for round in 0..o.boots {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let s = &sides[i];
            let n = boots.len() + 1;
            let dir = out.join("boots").join(format!("{n:02}-{}", s.label));
            step(&format!(
                "Boot {n} of {}: the {} ({})",
                2 * o.boots,
                s.label,
                s.what
            ));
            if let Err(e) = s.bench(o, cache, &dir) {
                // Failed runs still leave results.json; a boot without one
                // is lost for the comparison, but says why.
                note(&format!("boot {n}: {e:#}"));
                failures.push(format!("boot {n} ({}): {e:#}", s.label));
            }
            if dir.join("results.json").is_file() {
                boots.push((i, dir));
            } else {
                bail!(
                    "boot {n} of the {} wrote no results.json: see {}",
                    s.label,
                    dir.display()
                );
            }
        }
    }
    Ok((boots, failures))
}

/// `dir` relative to `out`, for the report.
fn rel(out: &Path, dir: &Path) -> String {
    dir.strip_prefix(out)
        .unwrap_or(dir)
        .to_string_lossy()
        .into_owned()
}

impl Side {
    /// The suite flags both sides' `qemu-bench` get.
    pub(super) fn suite_args(o: &Compare) -> Vec<String> {
        let mut a = vec!["--suite".to_string(), o.s.suite.clone()];
        let list = |flag: &str, v: &Option<Vec<String>>, a: &mut Vec<String>| {
            if let Some(v) = v {
                a.extend([flag.to_string(), v.join(",")]);
            }
        };
        list("--schedulers", &o.s.schedulers, &mut a);
        list("--devices", &o.s.devices, &mut a);
        list("--workloads", &o.s.workloads, &mut a);
        for (flag, v) in [("--repeats", o.s.repeats), ("--runtime", o.s.runtime)] {
            if let Some(v) = v {
                a.extend([flag.to_string(), v.to_string()]);
            }
        }
        if o.s.quick {
            a.push("--quick".into());
        }
        if o.s.count_insns {
            a.push("--count-insns".into());
        }
        a.extend([
            "--accel".into(),
            o.g.accel.clone(),
            "--cpus".into(),
            o.g.cpus.to_string(),
            "--memory".into(),
            o.g.memory.to_string(),
        ]);
        a
    }
}

#[cfg(test)]
mod tests {
    use crate::flags::{Cli, Cmd};
    use clap::Parser;

    /// The `qemu-bench` and `modules` command lines compare gives each side
    /// are ones those commands accept, with the suite flags carried over.
    #[test]
    fn each_boot_gets_the_suite_flags_qemu_bench_accepts() {
        let Cmd::Compare(o) = Cli::try_parse_from([
            "xtask",
            "compare",
            "--ref",
            "a",
            "--ref",
            "b",
            "--quick",
            "--devices",
            "nullb",
            "--schedulers",
            "none,rust-deadline",
            "--workloads",
            "randread",
            "--repeats",
            "3",
            "--runtime",
            "4",
            "--count-insns",
            "--accel",
            "tcg",
            "--cpus",
            "2",
            "-j",
            "2",
        ])
        .unwrap()
        .cmd
        else {
            panic!("not compare");
        };
        let side = super::Side {
            label: "candidate",
            what: String::new(),
            root: "/elsewhere".into(),
            kernel_src: Some("/src/linux".into()),
        };
        let cache = std::path::Path::new("/cache");
        for sub in ["modules", "qemu-bench"] {
            let mut c = side.command(&o, cache, sub).unwrap();
            if sub == "qemu-bench" {
                c.args(super::Side::suite_args(&o)).args(["--out", "/out"]);
            }
            assert_eq!(c.get_program(), "cargo");
            let args: Vec<String> = c
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            assert_eq!(args[0], "xtask");
            let parsed = Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            match parsed.cmd {
                Cmd::QemuBench(q) => {
                    assert!(q.s.quick && q.s.count_insns);
                    assert_eq!(q.s.devices, Some(vec!["nullb".to_string()]));
                    assert_eq!(
                        q.s.schedulers,
                        Some(vec!["none".to_string(), "rust-deadline".to_string()])
                    );
                    assert_eq!((q.s.repeats, q.s.runtime), (Some(3), Some(4)));
                    assert_eq!(q.g.accel, "tcg");
                    assert_eq!(q.k.kernel_src, Some("/src/linux".into()));
                    assert_eq!(q.k.cache_dir, Some("/cache".into()));
                    assert_eq!(q.k.jobs, Some(2));
                    assert_eq!(q.out, Some("/out".into()));
                }
                Cmd::Modules { k } => {
                    assert_eq!(k.kernel_src, Some("/src/linux".into()));
                    assert_eq!(k.cache_dir, Some("/cache".into()));
                }
                _ => panic!("{args:?}"),
            }
        }
    }
}
