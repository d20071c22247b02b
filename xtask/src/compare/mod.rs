//! `cargo xtask compare`: whether a candidate (a patch, a kernel tree, a
//! git ref) changes what a suite measures against a base.
//!
//! Each side is a tree of this repository ([`sides`]) whose own xtask
//! builds its kernel and modules and runs one suite per boot (two kernels
//! cannot share a boot). The boots alternate, base first in even rounds
//! and candidate first in odd ones, so a drift of the host over the run
//! falls on both sides alike. [`merge`] pools every run of every boot
//! per side and compares them metric by metric ([`stats`]); [`page`]
//! writes compare.md and compare.html. With `--fail-if-worse` the
//! comparison is a gate ([`gate`]), and `--boots` is checked up front
//! against what the gate must be able to judge ([`preflight`]).

pub mod merge;
pub mod page;
pub mod sides;
pub mod stats;

use crate::flags::Compare;
use crate::suite::fio::Fio;
use crate::suite::kind::{Kind, Suite};
use crate::suite::runner;
use crate::util::{self, note, step};
use anyhow::{bail, Context, Result};
use sides::Side;
use std::fs;
use std::path::{Path, PathBuf};

/// `cargo xtask compare`.
pub fn run(o: &Compare) -> Result<()> {
    let root = util::repo_root();
    let suite = preflight(o, &root)?;
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
    let mut cmp = page::Comparison {
        suite: suite.name.clone(),
        quick: o.s.quick,
        level: o.level / 100.0,
        boots: boots
            .iter()
            .map(|(i, d)| (sides[*i].label.to_string(), rel(&out, d)))
            .collect(),
        base: sides[0].what.clone(),
        candidate: sides[1].what.clone(),
        failures,
        failed_runs: Vec::new(),
        one_sided: Vec::new(),
        rows: Vec::new(),
        functions: Vec::new(),
    };
    judge(&mut cmp, &boots)?;
    cmp.write(&out)?;
    println!("{}", cmp.markdown_tables());
    note(&format!(
        "comparison: {} and {}",
        out.join("compare.md").display(),
        out.join("compare.html").display()
    ));
    gate(o.fail_if_worse, &cmp)
}

/// What is checked before anything is built: the suite, the level, the
/// devices, and with `--fail-if-worse` that `--boots` can judge every
/// metric the plan compares. Returns the suite.
fn preflight(o: &Compare, root: &Path) -> Result<Suite> {
    let suite = Suite::load(root, &o.s.suite)?;
    if suite.kind != Fio::NAME {
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
    let known = crate::devices::load(root)?;
    for d in o.s.devices.iter().flatten() {
        if !known.contains_key(d) {
            bail!(
                "unknown device {d:?}; known: {}",
                known.keys().cloned().collect::<Vec<_>>().join(", ")
            );
        }
    }
    if o.fail_if_worse.is_some() {
        let (family, how) = planned_metrics(o, &suite, root)?;
        let (level, n) = (o.level / 100.0, o.boots as usize);
        if !stats::can_judge(n, n, level, family) {
            bail!(
                "--fail-if-worse cannot judge anything with --boots {n}: a boot is one sample \
                 of each side, and {family} metrics ({how}) judged at once at {} % with \
                 Holm's correction need {}",
                o.level,
                stats::fewest_samples(level, family)
                    .map_or("more boots than any run can have".to_string(), |b| format!(
                        "--boots {b} or more"
                    ))
            );
        }
    }
    Ok(suite)
}

/// How many metrics a comparison of the suite compares at most, as this
/// tree plans it (devices × workloads × schedulers × a case's metrics),
/// and that product in words. The sides' own plans may differ: a case
/// one side has alone fails the gate.
fn planned_metrics(o: &Compare, suite: &Suite, root: &Path) -> Result<(usize, String)> {
    let devices = runner::planned_devices(suite, &o.s).len();
    let workloads = Fio::planned_workload_names(suite, &o.s)?.len();
    let schedulers = match &o.s.schedulers {
        Some(s) => s.len(),
        None => {
            crate::guest::BUILTIN_SCHEDULERS.len()
                + crate::modules::elevators_in(root)?.len()
                + suite.variants.len()
        }
    };
    let metrics = merge::METRICS
        .iter()
        .filter(|m| o.s.count_insns || !m.insns)
        .count();
    Ok((
        devices * workloads * schedulers * metrics,
        format!(
            "{devices} device(s) × {workloads} workload(s) × {schedulers} scheduler(s) × \
             {metrics} metrics"
        ),
    ))
}

/// Reads the boots' results (side, folder) into `cmp`, whose header is
/// filled: the rows compared at its level, the functions that moved, the
/// runs that failed and the cases one side only measured.
fn judge(cmp: &mut page::Comparison, boots: &[Boot]) -> Result<()> {
    let merged = merge::Merged::read(boots)?;
    cmp.rows = merged.compare(cmp.level);
    cmp.functions = merged.function_changes(&cmp.rows);
    cmp.failed_runs = merged.failed_runs().to_vec();
    cmp.one_sided = merged.one_sided();
    Ok(())
}

/// `--fail-if-worse PCT`: an error naming every reason to fail
/// ([`page::Comparison::gate_failures`]).
fn gate(fail_if_worse: Option<f64>, cmp: &page::Comparison) -> Result<()> {
    let Some(pct) = fail_if_worse else {
        return Ok(());
    };
    let failed = cmp.gate_failures(pct);
    if !failed.is_empty() {
        bail!(
            "--fail-if-worse {pct}: {} reason(s) to fail:\n{}",
            failed.len(),
            failed.join("\n")
        );
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

    /// The gate on boots written as `qemu-bench` writes them: the canned
    /// fio results' nvme randread runs under none and rust-deadline (two
    /// repeats each, no instruction counts: 2 cases × 3 metrics), each
    /// boot's figures moved by a noise of its own.
    mod gate {
        use super::super::{gate, judge, merge::Merged, page, stats::Verdict, Boot};
        use crate::suite::fio::Results;
        use std::fs;
        use std::path::PathBuf;

        /// A number in [-1, 1] for `seed` (SplitMix64).
        fn noise(seed: u64) -> f64 {
            let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z % 2001) as f64 / 1000.0 - 1.0
        }

        /// One boot: its figures scaled by 1 ± 1 % (the boot's speed),
        /// each run's by a further ± 0.5 %, and IOPS of `none` by `iops`.
        fn boot(seed: u64, iops: f64) -> Results {
            let path = crate::util::repo_root().join("tests/reports/fio-basic/results.json");
            let mut res: Results =
                serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
            res.runs.retain(|r| {
                r.run.device == "nvme"
                    && r.run.case.workload == "randread"
                    && ["none", "rust-deadline"].contains(&r.run.scheduler.as_str())
            });
            assert_eq!(res.runs.len(), 4);
            for (i, r) in res.runs.iter_mut().enumerate() {
                let m = r.measured.as_mut().unwrap();
                assert!(m.insns.is_none());
                let f = |k: u64| {
                    1.0 + 0.01 * noise(seed * 1000 + k)
                        + 0.005 * noise(seed * 1000 + 100 + 10 * i as u64 + k)
                };
                m.iops *= f(0) * if r.run.scheduler == "none" { iops } else { 1.0 };
                m.lat_mean_us *= f(1);
                m.lat_p99_us *= f(2);
            }
            res
        }

        /// `base` and `candidate` boots, alternating as compare boots them,
        /// written to a scratch folder and judged at 95 %.
        fn compared(name: &str, base: Vec<Results>, candidate: Vec<Results>) -> page::Comparison {
            let dir =
                std::env::temp_dir().join(format!("xtask-gate-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            let mut boots: Vec<Boot> = Vec::new();
            let mut sides = [base.into_iter(), candidate.into_iter()];
            for round in 0.. {
                let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
                let before = boots.len();
                for side in order {
                    if let Some(res) = sides[side].next() {
                        let d: PathBuf = dir.join("boots").join(format!(
                            "{:02}-{}",
                            boots.len() + 1,
                            ["base", "candidate"][side]
                        ));
                        fs::create_dir_all(&d).unwrap();
                        fs::write(d.join("results.json"), serde_json::to_string(&res).unwrap())
                            .unwrap();
                        boots.push((side, d));
                    }
                }
                if boots.len() == before {
                    break;
                }
            }
            let mut cmp = page::Comparison {
                suite: "fio-basic".into(),
                quick: false,
                level: 0.95,
                boots: Vec::new(),
                base: "base".into(),
                candidate: "candidate".into(),
                failures: Vec::new(),
                failed_runs: Vec::new(),
                one_sided: Vec::new(),
                rows: Vec::new(),
                functions: Vec::new(),
            };
            judge(&mut cmp, &boots).unwrap();
            // What compare.md says is what the gate read.
            let md = cmp.markdown(&[]);
            fs::remove_dir_all(&dir).unwrap();
            for f in &cmp.failed_runs {
                assert!(
                    md.contains(&format!(
                        "run {} of the {}'s boot `{}`",
                        f.id, f.side, f.boot
                    )),
                    "{md}"
                );
            }
            for o in &cmp.one_sided {
                assert!(
                    md.contains(&format!(
                        "{} {} {}: by the {} only",
                        o.device, o.workload, o.scheduler, o.measured_by
                    )),
                    "{md}"
                );
            }
            cmp
        }

        /// `n` boots of a side whose `none` does `iops` of the base's IOPS.
        fn boots(side: u64, n: u64, iops: f64) -> Vec<Results> {
            (0..n).map(|b| boot(2 * b + side, iops)).collect()
        }

        fn gate_error(pct: f64, cmp: &page::Comparison) -> String {
            format!("{:#}", gate(Some(pct), cmp).unwrap_err())
        }

        #[test]
        fn a_no_op_candidate_passes() {
            let cmp = compared("no-op", boots(0, 5, 1.0), boots(1, 5, 1.0));
            if let Err(e) = gate(Some(5.0), &cmp) {
                panic!("{e:#}");
            }
            // It passed having judged every metric: five boots a side can
            // tell among six.
            assert_eq!(cmp.rows.len(), 6);
            for r in &cmp.rows {
                assert_eq!(
                    (r.cmp.family, r.cmp.verdict),
                    (6, Verdict::NoDifference),
                    "{r:?}"
                );
            }
        }

        #[test]
        fn a_failed_run_fails_the_gate() {
            let mut cand = boots(1, 5, 1.0);
            let r = cand[2]
                .runs
                .iter_mut()
                .find(|r| r.run.scheduler == "rust-deadline")
                .unwrap();
            (r.ok, r.measured, r.error) = (false, None, Some("fio failed: fio: err=5".into()));
            let cmp = compared("failed-run", boots(0, 5, 1.0), cand);
            let e = gate_error(5.0, &cmp);
            assert!(
                e.contains("nvme randread rust-deadline: run 0016 of the candidate's boot 06-candidate failed: fio failed"),
                "{e}"
            );
            assert!(e.contains("1 reason(s)"), "{e}");
        }

        #[test]
        fn a_case_one_side_did_not_measure_fails_the_gate() {
            let mut cand = boots(1, 5, 1.0);
            for res in &mut cand {
                res.runs.retain(|r| r.run.scheduler != "rust-deadline");
            }
            let cmp = compared("one-sided", boots(0, 5, 1.0), cand);
            assert!(cmp.rows.iter().all(|r| r.scheduler == "none"));
            let e = gate_error(5.0, &cmp);
            assert!(
                e.contains("nvme randread rust-deadline: measured by the base only (in 5 boot(s))"),
                "{e}"
            );
        }

        #[test]
        fn too_few_samples_fail_the_gate() {
            // 2/70 from four boots a side is above 0.05 / 6.
            let cmp = compared("too-few", boots(0, 4, 1.0), boots(1, 4, 1.0));
            let e = gate_error(5.0, &cmp);
            assert!(e.contains("6 reason(s)"), "{e}");
            assert!(
                e.contains(
                    "nvme randread none: IOPS not judged: too few samples to tell \
                     (4 + 4 samples, where 6 metrics at 95 % need 5 a side (--boots))"
                ),
                "{e}"
            );
        }

        /// 15 of the candidate's 20 boots do 5 % fewer IOPS under none,
        /// below every one of the base's; 5 do ten times as many. The mean
        /// is far better, the median and the ranks worse.
        #[test]
        fn most_boots_worse_with_a_better_mean_fail_the_gate() {
            let cand: Vec<Results> = (0..20)
                .map(|b| boot(2 * b + 1, if b % 4 == 3 { 10.0 } else { 0.95 }))
                .collect();
            let cmp = compared("counterexample", boots(0, 20, 1.0), cand);
            let iops = cmp
                .rows
                .iter()
                .find(|r| r.scheduler == "none" && r.metric == "IOPS")
                .unwrap();
            assert_eq!(iops.cmp.verdict, Verdict::Worse, "{iops:?}");
            let e = gate_error(2.0, &cmp);
            assert!(e.contains("1 reason(s)"), "{e}");
            assert!(e.contains("nvme randread none: IOPS "), "{e}");
            // Not by more than 10 %.
            assert!(gate(Some(10.0), &cmp).is_ok());
            assert!(iops.cmp.ratio > 0.93 && iops.cmp.ratio < 0.97, "{iops:?}");
        }

        #[test]
        fn merged_boots_name_the_runs_that_failed() {
            // The canned file as it is has failed runs: every one is named.
            let path = crate::util::repo_root().join("tests/reports/fio-basic/results.json");
            let res: Results = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
            let mut m = Merged::default();
            m.add(0, "01-base", &res);
            assert_eq!(
                m.failed_runs().len(),
                res.runs.iter().filter(|r| !r.ok).count()
            );
        }
    }

    /// `--fail-if-worse` with fewer boots than the family needs is refused
    /// before anything is built, naming the fewest that can judge.
    #[test]
    fn too_few_boots_for_the_gate_are_refused_up_front() {
        let parse = |extra: &[&str]| {
            let mut args = vec![
                "xtask",
                "compare",
                "--ref",
                "a",
                "--ref",
                "b",
                "--devices",
                "nvme",
                "--workloads",
                "randread",
                "--schedulers",
                "none,rust-deadline",
            ];
            args.extend(extra);
            let Cmd::Compare(o) = Cli::try_parse_from(args).unwrap().cmd else {
                panic!("not compare");
            };
            o
        };
        let root = crate::util::repo_root();
        // 1 × 1 × 2 × 3 metrics: 0.05 / 6 needs 5 boots a side (2/252).
        let e =
            super::preflight(&parse(&["--fail-if-worse", "5", "--boots", "4"]), &root).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("--boots 4"), "{e}");
        assert!(e.contains("need --boots 5 or more"), "{e}");
        assert!(
            e.contains("6 metrics (1 device(s) × 1 workload(s) × 2 scheduler(s) × 3 metrics)"),
            "{e}"
        );
        super::preflight(&parse(&["--fail-if-worse", "5", "--boots", "5"]), &root).unwrap();
        // Instruction counts add two metrics a case: 10 need 6 (2/924).
        let e = super::preflight(
            &parse(&["--fail-if-worse", "5", "--boots", "5", "--count-insns"]),
            &root,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("need --boots 6 or more"), "{e:#}");
        // At 99 %, 0.01 / 6 needs 7 (2/3432); without the gate nothing is
        // refused.
        let e = super::preflight(
            &parse(&["--fail-if-worse", "5", "--boots", "5", "--level", "99"]),
            &root,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("need --boots 7 or more"), "{e:#}");
        super::preflight(&parse(&["--boots", "1"]), &root).unwrap();
    }
}
