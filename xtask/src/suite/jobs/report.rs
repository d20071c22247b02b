//! The jobs suite's report: a table per device and pattern (MB/s mean ±
//! sd per job count, and the ratio to one job), a chart per device
//! (throughput against job count, a line per scheduler, a panel per
//! pattern), and the seeds' ratios beside ours.

use super::results::{JobsResults, JobsSummary};
use crate::line_chart::{self, Panel, Series};
use crate::report::{self, num, Page};
use crate::seeds::{self, Seed};
use anyhow::Result;
use std::fmt::Write as _;
use std::path::Path;

/// The job counts of a device and pattern, rising.
fn counts(res: &JobsResults, dev: &str, rw: &str) -> Vec<u32> {
    let mut c: Vec<u32> = res
        .summary
        .iter()
        .filter(|s| s.device == dev && s.rw == rw)
        .map(|s| s.jobs)
        .collect();
    c.sort();
    c.dedup();
    c
}

fn row<'a>(
    res: &'a JobsResults,
    dev: &str,
    rw: &str,
    jobs: u32,
    s: &str,
) -> Option<&'a JobsSummary> {
    res.summary
        .iter()
        .find(|x| x.device == dev && x.rw == rw && x.jobs == jobs && x.scheduler == s)
}

/// The results as Markdown: a table per device and pattern.
pub fn table_markdown(res: &JobsResults) -> String {
    let mut s = String::new();
    for dev in report::distinct(res.summary.iter().map(|x| x.device.as_str())) {
        for rw in report::distinct(
            res.summary
                .iter()
                .filter(|x| x.device == dev)
                .map(|x| x.rw.as_str()),
        ) {
            let cs = counts(res, dev, rw);
            let _ = write!(
                s,
                "\n#### {dev} — {rw}: MB/s (mean ± sd over repeats; × the same scheduler at {} job)\n\n| scheduler |",
                cs[0]
            );
            for c in &cs {
                let _ = write!(s, " {c} |");
            }
            s.push_str("\n|---|");
            s.push_str(&"---:|".repeat(cs.len()));
            s.push('\n');
            for sched in &res.schedulers {
                if !cs.iter().any(|&c| row(res, dev, rw, c, sched).is_some()) {
                    continue;
                }
                let _ = write!(s, "| {sched} |");
                for &c in &cs {
                    let cell = match row(res, dev, rw, c, sched) {
                        None => "".to_string(),
                        Some(r) => {
                            let mut t = report::pm(r.mb_s_mean, r.mb_s_sd, 1);
                            if let (Some(v), true) = (r.vs_fewest, c != cs[0]) {
                                let _ = write!(t, " (×{v:.2})");
                            }
                            if r.failed > 0 {
                                let _ = write!(t, " [{} of {} failed]", r.failed, r.runs);
                            }
                            t
                        }
                    };
                    let _ = write!(s, " {cell} |");
                }
                s.push('\n');
            }
        }
    }
    s
}

/// The seeds' ratios beside ours, for every device measured.
pub fn seeds_markdown(res: &JobsResults, seeds: &[Seed]) -> String {
    let mut s = String::new();
    for seed in seeds {
        for r in seed
            .jobs_ratio
            .iter()
            .filter(|r| r.suite == res.header.suite)
        {
            let ours = seed.ours(&r.scheduler);
            for dev in report::distinct(res.summary.iter().map(|x| x.device.as_str())) {
                let pair = (
                    row(res, dev, &r.rw, r.jobs, ours),
                    row(res, dev, &r.rw, r.over_jobs, ours),
                );
                let got = match pair {
                    (Some(a), Some(_)) if r.over_jobs == counts(res, dev, &r.rw)[0] => {
                        match (a.vs_fewest, a.vs_fewest_sd) {
                            (Some(v), Some(sd)) => report::pm(v, sd, 2),
                            _ => "no pair of runs".into(),
                        }
                    }
                    (Some(a), Some(b)) => num(a.mb_s_mean / b.mb_s_mean, 2),
                    _ => "not measured".into(),
                };
                let _ = writeln!(
                    s,
                    "| {} | {} {}: {} jobs / {} | {:.2} | {dev}: {ours} {got} |",
                    seed.cite(),
                    r.scheduler,
                    r.rw,
                    r.jobs,
                    r.over_jobs,
                    r.value,
                );
            }
        }
    }
    if s.is_empty() {
        return s;
    }
    let sources: String = seeds.iter().map(Seed::describe).collect();
    format!(
        "\n### Against the seeds\n\nThe seed's ratio of throughputs and ours (paired by repeat: mean ± sd).\n\n\
         | seed | ratio | seed's | ironlift |\n|---|---|---:|---|\n{s}\n{sources}"
    )
}

/// One SVG per device: a panel per pattern, MB/s against job count, a
/// line per scheduler measured on the device.
pub fn chart_svg(res: &JobsResults, dev: &str) -> Result<String> {
    let rws = report::distinct(
        res.summary
            .iter()
            .filter(|x| x.device == dev)
            .map(|x| x.rw.as_str()),
    );
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
    // A scheduler's (mean, sd) per job count of a pattern.
    let line = |rw: &str, cs: &[u32], sched: &str| -> Series {
        cs.iter()
            .map(|&c| row(res, dev, rw, c, sched).map(|r| (r.mb_s_mean, r.mb_s_sd)))
            .collect()
    };
    let panels: Vec<Panel> = rws
        .iter()
        .map(|rw| {
            let cs = counts(res, dev, rw);
            Panel {
                title: rw,
                xs: cs.iter().map(|&c| c as f64).collect(),
                series: shown.iter().map(|sched| line(rw, &cs, sched)).collect(),
            }
        })
        .collect();
    line_chart::svg(
        &format!("{dev}: MB/s against fio jobs (mean ± sd over repeats)"),
        "fio jobs",
        "MB/s",
        &panels,
        &shown,
    )
}

/// Writes report.md and one chart per device into `dir`.
pub fn write(dir: &Path, res: &JobsResults) -> Result<()> {
    let h = &res.header;
    let charts = report::distinct(res.summary.iter().map(|s| s.device.as_str()))
        .into_iter()
        .map(|d| Ok((d.to_string(), format!("chart-{d}.svg"), chart_svg(res, d)?)))
        .collect::<Result<_>>()?;
    let seeds = seeds::for_suite(&h.suite);
    Page {
        header: h,
        schedulers: &res.schedulers,
        devices: &res.devices,
        rows: vec![(
            "timing",
            format!(
                "{} repeats × {} s per run, no ramp{}; regions of {} MiB, one per job; fio {}",
                h.timing.repeats,
                h.timing.runtime_s,
                report::quick_mark(h),
                res.jobs.region_mb,
                res.jobs.fio
            ),
        )],
        method: "Runs are interleaved (every scheduler once per device, pattern, job count and \
                 repeat, order rotated between repeats). Each run is one fio invocation with \
                 `--numjobs` jobs, each on its own region (`--offset_increment`), reported as a \
                 group: the MB/s are all jobs' together. \"×\" is the mean over repeats of this \
                 throughput over the same scheduler's at the fewest jobs in the same repeat. \
                 Measured from the jobs' start, as the seed did: BFQ's weight raising of new \
                 queues is part of what is measured."
            .into(),
        failed: report::failed_runs(&res.runs, |r| {
            format!(
                "{} {} {} {} jobs",
                r.device, r.scheduler, r.case.rw, r.case.jobs
            )
        }),
        charts,
        tables: format!("{}{}", table_markdown(res), seeds_markdown(res, &seeds)),
        raw_runs: "fio's own output per run under `runs/`.",
    }
    .write(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Header, Planned, RunRecord, Timing};
    use crate::suite::fio::Measured;
    use crate::suite::jobs::{summarize, JobsCase, JobsSpec};

    /// A results file of two schedulers at 1, 2 and 4 jobs on read, as a
    /// run would leave it (one failed run).
    pub fn results() -> JobsResults {
        let scheds: Vec<String> = ["bfq", "bfq:low_latency=0"].map(String::from).to_vec();
        let mut runs = Vec::new();
        for (repeat, scale) in [(0, 1.0), (1, 1.1)] {
            for jobs in [1, 2, 4] {
                for s in &scheds {
                    let mb_s = if s == "bfq" && jobs > 1 { 60.0 } else { 100.0 } * scale;
                    let failed = s == "bfq" && jobs == 4 && repeat == 1;
                    runs.push(RunRecord::new(
                        Planned {
                            id: format!("{:04}", runs.len()),
                            order: runs.len(),
                            repeat,
                            device: "hdd-7200".into(),
                            scheduler: s.clone(),
                            case: JobsCase {
                                rw: "read".into(),
                                jobs,
                                fio_args: String::new(),
                            },
                        },
                        if failed {
                            Err("bfq: setting tunable x=1 failed: Invalid argument".into())
                        } else {
                            Ok(Measured {
                                mb_s,
                                iops: mb_s * 244.0,
                                ..Default::default()
                            })
                        },
                    ));
                }
            }
        }
        let devices = crate::devices::load(&crate::util::repo_root()).unwrap();
        JobsResults {
            header: Header::for_test(
                "ironlift-jobs/1",
                "jobs-1-8",
                Timing {
                    repeats: 2,
                    runtime_s: 3,
                    ramp_s: 0,
                },
            ),
            summary: summarize(&runs, &scheds),
            schedulers: scheds,
            devices: [("hdd-7200".to_string(), devices["hdd-7200"].recorded())].into(),
            jobs: JobsSpec {
                rw: vec!["read".into()],
                counts: vec![1, 2, 4],
                quick_rw: vec!["read".into()],
                quick_counts: vec![1, 2, 4],
                region_mb: 256,
                fio: "--direct=1".into(),
            },
            runs,
        }
    }

    #[test]
    fn the_report_has_the_table_the_chart_and_the_seeds_ratio() {
        let res = results();
        let t = table_markdown(&res);
        assert!(t.contains("| scheduler | 1 | 2 | 4 |"), "{t}");
        assert!(
            t.contains(
                "| bfq | 105.0 ± 7.1 | 63.0 ± 4.2 (×0.60) | 60.0 ± 0.0 (×0.60) [1 of 2 failed] |"
            ),
            "{t}"
        );
        let seeds = crate::seeds::for_suite("jobs-1-8");
        let s = seeds_markdown(&res, &seeds);
        assert!(
            s.contains("| bfq read: 2 jobs / 1 | 0.60 | hdd-7200: bfq 0.60 ± 0.00 |"),
            "{s}"
        );
        let svg = chart_svg(&res, "hdd-7200").unwrap();
        // A point per scheduler and job count; per scheduler, in its
        // colour, a line and a whisker per point with an sd above 0 (bfq
        // at 4 jobs has one run).
        assert_eq!(svg.matches("<circle").count(), 6, "{svg}");
        let lines = |c: &str| {
            svg.matches(&format!(
                "<polyline fill=\"none\" opacity=\"1\" stroke=\"{c}\""
            ))
            .count()
        };
        assert_eq!(
            (lines("#7F7F7F"), lines("#1F77B4")),
            (1 + 2, 1 + 3),
            "{svg}"
        );
        let dir = std::env::temp_dir().join(format!("xtask-jobs-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, &res).unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.contains("![hdd-7200](chart-hdd-7200.svg)"));
        assert!(md.contains("hdd-7200 bfq read 4 jobs: bfq: setting tunable x=1 failed"));
        assert!(md.contains("### Against the seeds"));
        assert!(dir.join("chart-hdd-7200.svg").is_file());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
