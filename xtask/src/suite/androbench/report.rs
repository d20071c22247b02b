//! The androbench suite's report: a table per device (each test in
//! Androbench's unit, mean ± sd per scheduler) and the seeds' orderings
//! beside ours.

use super::results::{AndrobenchResults, AndrobenchSummary};
use super::TESTS;
use crate::chart;
use crate::report::{self, Page};
use crate::seeds::{self, Seed};
use anyhow::Result;
use std::fmt::Write as _;
use std::path::Path;

fn row<'a>(
    res: &'a AndrobenchResults,
    dev: &str,
    test: &str,
    s: &str,
) -> Option<&'a AndrobenchSummary> {
    res.summary
        .iter()
        .find(|x| x.device == dev && x.test == test && x.scheduler == s)
}

/// The results as Markdown: a table per device, a column per test.
pub fn table_markdown(res: &AndrobenchResults) -> String {
    let mut s = String::new();
    for dev in report::distinct(res.summary.iter().map(|x| x.device.as_str())) {
        let tests: Vec<&str> = TESTS
            .iter()
            .map(|t| t.0)
            .filter(|t| res.summary.iter().any(|x| x.device == dev && x.test == *t))
            .collect();
        let _ = write!(
            s,
            "\n#### {dev}: Androbench (read file {} MiB, write file {} MiB; mean ± sd over repeats)\n\n| scheduler |",
            res.read_file_mb, res.write_file_mb
        );
        for t in &tests {
            let unit = if super::in_mb_s(t) { "MB/s" } else { "IOPS" };
            let _ = write!(s, " {t} ({unit}) |");
        }
        s.push_str("\n|---|");
        s.push_str(&"---:|".repeat(tests.len()));
        s.push('\n');
        for sched in &res.schedulers {
            let cells: Vec<String> = tests
                .iter()
                .map(|t| match row(res, dev, t, sched) {
                    None => String::new(),
                    Some(r) => {
                        let prec = if r.unit == "MB/s" { 2 } else { 0 };
                        let mut c = report::pm(r.mean, r.sd, prec);
                        if r.failed > 0 {
                            let _ = write!(c, " [{} of {} failed]", r.failed, r.runs);
                        }
                        c
                    }
                })
                .collect();
            if cells.iter().all(String::is_empty) {
                continue;
            }
            let _ = writeln!(s, "| {sched} | {} |", cells.join(" | "));
        }
    }
    s
}

/// `(name, value)` best first.
fn ordered(mut xs: Vec<(String, f64)>) -> Vec<(String, f64)> {
    xs.retain(|x| x.1.is_finite());
    xs.sort_by(|a, b| b.1.total_cmp(&a.1));
    xs
}

/// "a 1.00 > b 0.97 > ...": each relative to the first.
fn order_text(xs: &[(String, f64)]) -> String {
    let best = xs.first().map(|x| x.1).unwrap_or(f64::NAN);
    xs.iter()
        .map(|(n, v)| format!("{n} {:.2}", v / best))
        .collect::<Vec<_>>()
        .join(" > ")
}

/// Of the pairs of schedulers both measured, how many are in the same
/// order in both, and how many there are.
pub fn pairs_agreeing(seed: &[(String, f64)], ours: &[(String, f64)]) -> (usize, usize) {
    let pos = |xs: &[(String, f64)], n: &str| xs.iter().position(|x| x.0 == n);
    let names: Vec<&str> = seed
        .iter()
        .map(|x| x.0.as_str())
        .filter(|n| pos(ours, n).is_some())
        .collect();
    let (mut same, mut all) = (0, 0);
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            all += 1;
            let s = pos(seed, a) < pos(seed, b);
            let o = pos(ours, a) < pos(ours, b);
            same += usize::from(s == o);
        }
    }
    (same, all)
}

/// Each seed's ordering of the schedulers it shares with us, per test and
/// device, beside ours over the same schedulers (each figure relative to
/// the best of the set).
pub fn seeds_markdown(res: &AndrobenchResults, seeds: &[Seed]) -> String {
    let mut s = String::new();
    for seed in seeds {
        for dev in report::distinct(res.summary.iter().map(|x| x.device.as_str())) {
            for &(test, ..) in TESTS {
                let figures: Vec<_> = seed
                    .figure
                    .iter()
                    .filter(|f| f.suite == res.header.suite && f.test == test)
                    .filter_map(|f| {
                        let ours = row(res, dev, test, seed.ours(&f.scheduler))?;
                        Some((
                            (ours.scheduler.clone(), f.value),
                            (ours.scheduler.clone(), ours.mean),
                        ))
                    })
                    .collect();
                if figures.len() < 2 {
                    continue;
                }
                let raw: Vec<String> = seed
                    .figure
                    .iter()
                    .filter(|f| f.suite == res.header.suite && f.test == test)
                    .map(|f| match f.sd {
                        Some(sd) => format!("{} {} ± {} {}", f.scheduler, f.value, sd, f.unit),
                        None => format!("{} {} {}", f.scheduler, f.value, f.unit),
                    })
                    .collect();
                let seed_order = ordered(figures.iter().map(|f| f.0.clone()).collect());
                let our_order = ordered(figures.iter().map(|f| f.1.clone()).collect());
                let (same, all) = pairs_agreeing(&seed_order, &our_order);
                let _ = writeln!(
                    s,
                    "| {test} | {} | {dev}: {} | {same} of {all} | {} |",
                    order_text(&seed_order),
                    order_text(&our_order),
                    raw.join(", ")
                );
            }
        }
        if !s.is_empty() {
            let _ = write!(s, "\n{}", seed.describe());
        }
    }
    if s.is_empty() {
        return s;
    }
    format!(
        "\n### Against the seeds\n\nEach seed's ordering of the schedulers it shares with this run \
         (its names as ours), best first, each figure relative to the best, and ours over the same \
         schedulers; \"pairs\" counts the pairs of schedulers in the same order in both; the last \
         column is the seed's own figures (its names).\n\n\
         | test | seed | ironlift | pairs in the same order | seed's figures |\n|---|---|---|---:|---|\n{s}"
    )
}

/// A chart per device: a group per test, a bar per scheduler, its mean
/// relative to the test's best scheduler (the tests' units differ), with
/// ± sd whiskers on the same scale.
pub fn chart_svg(res: &AndrobenchResults, dev: &str) -> Result<String> {
    let shown: Vec<String> = res
        .schedulers
        .iter()
        .filter(|x| {
            res.summary
                .iter()
                .any(|r| r.device == dev && &r.scheduler == *x)
        })
        .cloned()
        .collect();
    let tests: Vec<&str> = TESTS.iter().map(|t| t.0).collect();
    // Each test's (mean, sd) per scheduler over the test's best mean.
    let bars: Vec<Vec<Option<chart::Bar>>> = tests
        .iter()
        .map(|test| {
            let best = shown
                .iter()
                .filter_map(|sc| row(res, dev, test, sc).map(|r| r.mean))
                .filter(|v| v.is_finite())
                .fold(0.0f64, f64::max);
            shown
                .iter()
                .map(|sc| {
                    let r = row(res, dev, test, sc).filter(|r| r.mean.is_finite() && best > 0.0)?;
                    Some((r.mean / best, Some(r.sd / best).filter(|x| x.is_finite())))
                })
                .collect()
        })
        .collect();
    let top = bars
        .iter()
        .flatten()
        .flatten()
        .map(|(v, sd)| v + sd.unwrap_or(0.0))
        .fold(1.2f64, f64::max)
        .min(2.0);
    chart::bars_svg(
        format!("{dev}: Androbench, each test relative to its best scheduler (mean ± sd)"),
        &tests,
        &shown,
        top,
        |ti, si| bars[ti][si],
    )
}

/// Writes report.md and a chart per device into `dir`.
pub fn write(dir: &Path, res: &AndrobenchResults) -> Result<()> {
    let h = &res.header;
    let seeds = seeds::for_suite(&h.suite);
    Page {
        header: h,
        schedulers: &res.schedulers,
        devices: &res.devices,
        rows: vec![(
            "timing",
            format!(
                "{} repeats; each test one pass over its file (read {} MiB, write {} MiB), capped at {} s{}; fio {}",
                h.timing.repeats,
                res.read_file_mb,
                res.write_file_mb,
                h.timing.runtime_s,
                report::quick_mark(h),
                res.androbench.fio
            ),
        )],
        method: "Runs are interleaved (every scheduler once per device, test and repeat, order \
                 rotated between repeats), on ext4 made once per device, caches dropped before \
                 each run. Figures as Androbench reports them: MB/s (10^6 B/s) for the sequential \
                 tests, IOPS for the random ones."
            .into(),
        failed: report::failed_runs(&res.runs, |r| {
            format!("{} {} {}", r.device, r.scheduler, r.case.test)
        }),
        charts: report::distinct(res.summary.iter().map(|x| x.device.as_str()))
            .into_iter()
            .map(|d| Ok((d.to_string(), format!("chart-{d}.svg"), chart_svg(res, d)?)))
            .collect::<Result<_>>()?,
        tables: format!("{}{}", table_markdown(res), seeds_markdown(res, &seeds)),
        raw_runs: "fio's own output per run under `runs/`.",
    }
    .write(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(xs: &[(&str, f64)]) -> Vec<(String, f64)> {
        ordered(xs.iter().map(|(n, v)| (n.to_string(), *v)).collect())
    }

    #[test]
    fn orderings_are_compared_pair_by_pair() {
        let seed = named(&[("a", 3.0), ("b", 2.0), ("c", 1.0)]);
        assert_eq!(order_text(&seed), "a 1.00 > b 0.67 > c 0.33");
        assert_eq!(pairs_agreeing(&seed, &seed), (3, 3));
        let ours = named(&[("a", 1.0), ("b", 2.0), ("c", f64::NAN)]);
        // c has no figure of ours: one pair (a, b), in the other order.
        assert_eq!(pairs_agreeing(&seed, &ours), (0, 1));
    }
}

#[cfg(test)]
mod render_tests {
    use super::*;
    use crate::results::{Header, Planned, RunRecord, Timing};
    use crate::suite::androbench::{summarize, AndrobenchCase, AndrobenchSpec};
    use crate::suite::fio::Measured;

    /// Two repeats of the four tests under three schedulers, rust-noop
    /// the fastest and mq-deadline the slowest everywhere.
    fn results() -> AndrobenchResults {
        let scheds: Vec<String> = ["mq-deadline", "rust-noop", "rust-sio"]
            .map(String::from)
            .to_vec();
        let mut runs = Vec::new();
        for repeat in 0..2 {
            for &(test, ..) in TESTS {
                for (i, s) in scheds.iter().enumerate() {
                    let f = [1.0, 1.2, 1.1][i] * (1.0 + repeat as f64 / 100.0);
                    runs.push(RunRecord::new(
                        Planned {
                            id: format!("{:04}", runs.len()),
                            order: runs.len(),
                            repeat,
                            device: "emmc".into(),
                            scheduler: s.clone(),
                            case: AndrobenchCase {
                                test: test.into(),
                                fio_args: String::new(),
                            },
                        },
                        Ok(Measured {
                            mb_s: 15.0 * f,
                            iops: 1000.0 * f,
                            ..Default::default()
                        }),
                    ));
                }
            }
        }
        AndrobenchResults {
            header: Header::for_test(
                "ironlift-androbench/1",
                "androbench",
                Timing {
                    repeats: 2,
                    runtime_s: 30,
                    ramp_s: 0,
                },
            ),
            summary: summarize(&runs, &scheds),
            schedulers: scheds,
            devices: Default::default(),
            androbench: AndrobenchSpec {
                read_file_mb: 32,
                write_file_mb: 2,
                quick_read_file_mb: 16,
                quick_write_file_mb: 1,
                seq_bs_kb: 256,
                rand_bs_kb: 4,
                fio: "--direct=1".into(),
            },
            read_file_mb: 16,
            write_file_mb: 1,
            runs,
        }
    }

    #[test]
    fn the_report_has_androbench_units_and_the_seeds_ordering() {
        let res = results();
        let t = table_markdown(&res);
        assert!(t.contains("| scheduler | seq-read (MB/s) | seq-write (MB/s) | rand-read (IOPS) | rand-write (IOPS) |"), "{t}");
        assert!(
            t.contains("| rust-noop | 18.09 ± 0.13 | 18.09 ± 0.13 | 1206 ± 8 | 1206 ± 8 |"),
            "{t}"
        );
        let seeds = crate::seeds::for_suite("androbench");
        let s = seeds_markdown(&res, &seeds);
        // The seed's seq-read: noop 59.34 > sio 58.32 > deadline 53.37, as ours.
        assert!(
            s.contains("| seq-read | rust-noop 1.00 > rust-sio 0.98 > mq-deadline 0.90 | emmc: rust-noop 1.00 > rust-sio 0.92 > mq-deadline 0.83 | 3 of 3 |"),
            "{s}"
        );
        // rand-read: the seed has sio > deadline > noop; ours reverses two pairs.
        assert!(
            s.contains("| rand-read | rust-sio 1.00 > mq-deadline 0.97 > rust-noop 0.97 |"),
            "{s}"
        );
        assert!(s.contains("| 1 of 3 |"), "{s}");
        assert!(s.contains("andrux-and-me"));
        let dir =
            std::env::temp_dir().join(format!("xtask-androbench-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, &res).unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        let svg = std::fs::read_to_string(dir.join("chart-emmc.svg")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        // A bar per scheduler and test, a legend entry per scheduler, and
        // the white ground.
        assert_eq!(svg.matches("<rect ").count(), 12 + 3 + 1, "{svg}");
        assert!(svg.contains(">\nrust-noop\n</text>"), "{svg}");
        assert!(
            md.contains("# ironlift benchmark: androbench") && md.contains("### Against the seeds")
        );
    }
}
