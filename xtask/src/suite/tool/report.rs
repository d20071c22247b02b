//! The tool suites' report: a chart per device (each workload's first
//! figure relative to `none`'s), a table per device and workload (each
//! figure the tool reports, mean ± sd over repeats, and the wall time), the
//! schedulers' order by the workload's first figure, and the seed's order
//! beside ours.

use super::parse::{Metric, Tool};
use super::results::{Seed, SeedFigure, ToolResults, ToolSummary};
use crate::chart;
use crate::report::{self, distinct, num, pm, Page};
use crate::stats::{mean_sd_of, paired_ratios};
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Decimals for a figure of this size.
fn prec(x: f64) -> usize {
    match x.abs() {
        v if v >= 100.0 => 0,
        v if v >= 10.0 => 1,
        _ => 2,
    }
}

fn cell(s: Option<&super::results::Stat>) -> String {
    match s {
        Some(s) if s.n > 1 => pm(s.mean, s.sd, prec(s.mean)),
        Some(s) => num(s.mean, prec(s.mean)),
        None => "-".into(),
    }
}

/// The metric `key` of `tool`, or the wall time.
fn metric_of(tool: Tool, key: &str) -> Option<Metric> {
    if key == "elapsed_s" {
        return Some(Metric {
            key: "elapsed_s",
            label: "wall time",
            unit: "s",
            higher_better: false,
        });
    }
    tool.metrics().iter().find(|m| m.key == key).copied()
}

/// Schedulers from best to worst by a metric's means (`None`: not measured).
fn order(mut xs: Vec<(String, f64)>, higher_better: bool) -> Vec<String> {
    xs.retain(|(_, v)| v.is_finite());
    xs.sort_by(|a, b| {
        let o = a.1.total_cmp(&b.1);
        if higher_better {
            o.reverse()
        } else {
            o
        }
    });
    xs.into_iter().map(|(s, _)| s).collect()
}

fn mean_of(r: &ToolSummary, key: &str) -> Option<f64> {
    if key == "elapsed_s" {
        return r.elapsed.as_ref().map(|s| s.mean);
    }
    r.figures.get(key).map(|s| s.mean)
}

/// One device's and workload's table and its order line.
fn workload_table(s: &mut String, rows: &[&ToolSummary], tool: Tool) {
    let metrics = tool.metrics();
    let _ = write!(s, "| scheduler |");
    for m in metrics {
        let arrow = if m.higher_better { "↑" } else { "↓" };
        let unit = if m.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", m.unit)
        };
        let _ = write!(s, " {}{unit} {arrow} |", m.label);
    }
    let _ = writeln!(s, " wall time s | runs |");
    let _ = writeln!(s, "|---|{}---:|---:|", "---:|".repeat(metrics.len()));
    for r in rows {
        let _ = write!(s, "| {} |", r.scheduler);
        for m in metrics {
            let _ = write!(s, " {} |", cell(r.figures.get(m.key)));
        }
        let runs = if r.failed > 0 {
            format!("{} ({} failed)", r.runs, r.failed)
        } else {
            r.runs.to_string()
        };
        let _ = writeln!(s, " {} | {runs} |", cell(r.elapsed.as_ref()));
    }
    let first = metrics[0];
    let ord = order(
        rows.iter()
            .filter_map(|r| Some((r.scheduler.clone(), mean_of(r, first.key)?)))
            .collect(),
        first.higher_better,
    );
    if !ord.is_empty() {
        let _ = writeln!(s, "\nOrder by {}: {}", first.label, ord.join(" > "));
    }
}

/// The results as Markdown tables, one per device and workload.
pub fn table_markdown(res: &ToolResults) -> String {
    let mut s = String::new();
    for dev in distinct(res.summary.iter().map(|r| r.device.as_str())) {
        let path = res.devices.get(dev).map(|d| d.path.as_str()).unwrap_or("?");
        for w in distinct(
            res.summary
                .iter()
                .filter(|r| r.device == dev)
                .map(|r| r.workload.as_str()),
        ) {
            let rows: Vec<&ToolSummary> = res
                .summary
                .iter()
                .filter(|r| r.device == dev && r.workload == w)
                .collect();
            let args = res
                .runs
                .iter()
                .find(|r| r.run.device == dev && r.run.case.workload == w)
                .map(|r| format!("{} {}", r.run.case.tool.name(), r.run.case.args))
                .unwrap_or_default();
            let _ = writeln!(s, "\n### {dev} ({path}): {w} (`{args}`)\n");
            workload_table(&mut s, &rows, rows[0].tool);
        }
    }
    if let Some(seed) = &res.seed {
        s.push_str(&seed_section(seed, res));
    }
    s
}

/// One seed figure against ours: the seed's order in our names, ours over
/// the same schedulers on each device, and whether they agree.
fn seed_lines(f: &SeedFigure, seed: &Seed, res: &ToolResults) -> Vec<String> {
    let Some(w) = res.workloads.iter().find(|w| w.name == f.workload) else {
        return vec![format!(
            "- {} {}: the run had no such workload",
            f.workload, f.metric
        )];
    };
    let Some(m) = metric_of(w.tool, &f.metric) else {
        return vec![format!("- {} {}: no such figure", f.workload, f.metric)];
    };
    let ours_name = |s: &String| seed.schedulers.get(s).cloned().unwrap_or_else(|| s.clone());
    let theirs = order(
        f.values.iter().map(|(s, v)| (ours_name(s), *v)).collect(),
        m.higher_better,
    );
    let mut out = Vec::new();
    for dev in distinct(res.summary.iter().map(|r| r.device.as_str())) {
        let mine = order(
            res.summary
                .iter()
                .filter(|r| {
                    r.device == dev && r.workload == f.workload && theirs.contains(&r.scheduler)
                })
                .filter_map(|r| Some((r.scheduler.clone(), mean_of(r, &f.metric)?)))
                .collect(),
            m.higher_better,
        );
        let seed_same: Vec<&String> = theirs.iter().filter(|s| mine.contains(s)).collect();
        let verdict = if mine.len() < 2 {
            "too few of the seed's schedulers measured".to_string()
        } else if seed_same.iter().copied().eq(mine.iter()) {
            "same order".to_string()
        } else if seed_same.first().copied() == mine.first() {
            "same best, different order below".to_string()
        } else {
            "different best".to_string()
        };
        out.push(format!(
            "- {} {} ({}): seed {} · ironlift {dev}: {} — {verdict}",
            f.workload,
            m.label,
            if m.higher_better {
                "higher is better"
            } else {
                "lower is better"
            },
            theirs.join(" > "),
            if mine.is_empty() {
                "-".into()
            } else {
                mine.join(" > ")
            },
        ));
    }
    out
}

/// The seed's orders beside ours.
fn seed_section(seed: &Seed, res: &ToolResults) -> String {
    let mut s = format!(
        "\n### Against the seed: {}\n\nSource: {}\n\n{}\n\n",
        seed.title, seed.source, seed.notes
    );
    let names: Vec<String> = seed
        .schedulers
        .iter()
        .map(|(theirs, ours)| format!("{theirs} = {ours}"))
        .collect();
    let _ = writeln!(s, "Schedulers: {}.\n", names.join(", "));
    if seed.figure.is_empty() {
        s.push_str("The seed file holds no figures, so there is no order to compare.\n");
    }
    for f in &seed.figure {
        for l in seed_lines(f, seed, res) {
            let _ = writeln!(s, "{l}");
        }
    }
    s
}

/// The scheduler the charts divide by: `none` if it ran, else the first.
fn reference(res: &ToolResults) -> Option<&str> {
    res.schedulers
        .iter()
        .find(|s| *s == "none")
        .or(res.schedulers.first())
        .map(String::as_str)
}

/// Each workload's first figure on `dev` under `sched` relative to the
/// reference's in the same repeat, turned so that above 1 is better (the
/// reference's over ours for a figure where lower is better).
fn ratios_to(res: &ToolResults, dev: &str, workload: &str, sched: &str, refr: &str) -> Vec<f64> {
    let of = |s: &str| -> Vec<(u32, f64)> {
        res.runs
            .iter()
            .filter(|r| {
                r.run.device == dev && r.run.case.workload == workload && r.run.scheduler == s
            })
            .filter_map(|r| {
                let m = r.run.case.tool.metrics()[0];
                let v = *r.measured.as_ref()?.figures.get(m.key)?;
                Some((r.run.repeat, if m.higher_better { v } else { 1.0 / v }))
            })
            .collect()
    };
    let reference: BTreeMap<u32, f64> = of(refr).into_iter().collect();
    paired_ratios(of(sched), &reference)
}

/// The chart of a device: a group per workload, a bar per scheduler, the
/// workload's first figure relative to the reference's (mean ± sd over
/// repeats, above 1 better).
fn chart(res: &ToolResults, dev: &str) -> Result<Option<(String, String, String)>> {
    let Some(refr) = reference(res) else {
        return Ok(None);
    };
    let workloads = distinct(
        res.summary
            .iter()
            .filter(|r| r.device == dev)
            .map(|r| r.workload.as_str()),
    );
    let title = format!("{dev}: first figure relative to {refr}, above 1 better");
    let bars: Vec<Vec<Option<chart::Bar>>> = workloads
        .iter()
        .map(|w| {
            res.schedulers
                .iter()
                .map(|s| {
                    let xs = ratios_to(res, dev, w, s, refr);
                    let (mean, sd) = mean_sd_of(&xs)?;
                    mean.is_finite()
                        .then_some((mean, (xs.len() > 1).then_some(sd)))
                })
                .collect()
        })
        .collect();
    let y_max = bars
        .iter()
        .flatten()
        .flatten()
        .map(|&(m, sd)| m + sd.unwrap_or(0.0))
        .fold(1.2f64, f64::max)
        .min(5.0);
    let svg = chart::bars_svg(title, &workloads, &res.schedulers, y_max, |wi, si| {
        bars[wi][si]
    })?;
    Ok(Some((dev.to_string(), format!("chart-{dev}.svg"), svg)))
}

/// report.md.
pub fn write(dir: &Path, res: &ToolResults) -> Result<()> {
    let h = &res.header;
    let t = &res.tool;
    let raid = match (t.raid_level, t.raid_chunk_kb) {
        (Some(l), Some(c)) => {
            format!("md RAID{l} over every disk of the device, chunk {c} KiB (--assume-clean), ")
        }
        _ => String::new(),
    };
    let workloads: Vec<String> = res
        .workloads
        .iter()
        .map(|w| format!("{} ({})", w.name, w.about))
        .collect();
    let page = Page {
        header: h,
        schedulers: &res.schedulers,
        devices: &res.devices,
        rows: vec![
            (
                "file system",
                format!(
                    "{raid}{} (mkfs {})",
                    t.fs,
                    if t.mkfs.is_empty() {
                        "defaults"
                    } else {
                        &t.mkfs
                    }
                ),
            ),
            (
                "timing",
                format!(
                    "{} repeat(s), time-based tools {} s{}",
                    h.timing.repeats,
                    h.timing.runtime_s,
                    report::quick_mark(h)
                ),
            ),
            ("workloads", workloads.join("; ")),
        ],
        method: "Each run: the scheduler set on every disk of the device, caches dropped, the \
                 tool run in an empty folder of the file system, its files removed after. Runs \
                 are interleaved: for each repeat, device and workload, every scheduler once, \
                 in an order rotated from one to the next. The chart of a device: each \
                 workload's first figure under each scheduler relative to `none`'s (else the \
                 first scheduler's) in the same repeat, turned so that above 1 is better. \
                 ↑: higher is better; ↓: lower. \
                 Compare orders and ratios, not absolute figures: the devices are models and \
                 the CPU is emulated."
            .into(),
        failed: report::failed_runs(&res.runs, |p| {
            format!(
                "{} {} {} (repeat {})",
                p.device, p.case.workload, p.scheduler, p.repeat
            )
        }),
        charts: distinct(res.summary.iter().map(|r| r.device.as_str()))
            .into_iter()
            .filter_map(|d| chart(res, d).transpose())
            .collect::<Result<_>>()?,
        tables: table_markdown(res),
        raw_runs:
            "`runs/<id>.out` the tool's own output, `.log` its errors, `.elapsed` the wall time.",
    };
    page.write(dir)
}

#[cfg(test)]
mod tests {
    use super::super::results::*;
    use super::*;
    use crate::results::{Header, Planned, RunRecord, Timing};
    use std::collections::BTreeMap;

    fn run(rep: u32, s: &str, write: f64) -> ToolRun {
        RunRecord::new(
            Planned {
                id: format!("{rep}{s}"),
                order: 0,
                repeat: rep,
                device: "hdd-raptor-10".into(),
                scheduler: s.into(),
                case: ToolCase {
                    workload: "bonnie".into(),
                    tool: Tool::Bonnie,
                    args: "256 1".into(),
                },
            },
            Ok(ToolMeasured {
                elapsed_s: 100.0 / write,
                figures: [("block_write_kb_s".to_string(), write)]
                    .into_iter()
                    .collect(),
            }),
        )
    }

    fn results(runs: Vec<ToolRun>, seed: Option<Seed>) -> ToolResults {
        let schedulers: Vec<String> = ["mq-deadline", "rust-as", "rust-noop"]
            .map(String::from)
            .to_vec();
        ToolResults {
            header: Header {
                schema: "ironlift-tool/1".into(),
                suite: "bonnie-raid5".into(),
                suite_description: String::new(),
                quick: true,
                started: String::new(),
                finished: String::new(),
                kernel_release: String::new(),
                kernel_key: String::new(),
                accel: "tcg".into(),
                guest_clocksource: String::new(),
                host: String::new(),
                guest_cpus: 2,
                guest_memory_mb: 2048,
                timing: Timing {
                    repeats: 2,
                    runtime_s: 10,
                    ramp_s: 0,
                },
                provenance: None,
            },
            tool: ToolSpec {
                fs: "xfs".into(),
                mkfs: String::new(),
                raid_level: Some(5),
                raid_chunk_kb: Some(1024),
                seed: None,
                quick_workloads: None,
            },
            workloads: vec![Workload {
                name: "bonnie".into(),
                tool: Tool::Bonnie,
                about: "a".into(),
                full: "mem 16".into(),
                quick: "256 1".into(),
                run_s: [600, 60],
            }],
            summary: summarize(&runs, &schedulers),
            schedulers,
            devices: BTreeMap::new(),
            runs,
            seed,
        }
    }

    #[test]
    fn tables_give_means_and_the_order() {
        let runs = vec![
            run(0, "mq-deadline", 10.0),
            run(0, "rust-as", 30.0),
            run(0, "rust-noop", 20.0),
            run(1, "mq-deadline", 20.0),
            run(1, "rust-as", 40.0),
            run(1, "rust-noop", 20.0),
        ];
        let res = results(runs, None);
        let t = table_markdown(&res);
        assert!(t.contains("| mq-deadline | 15.0 ± 7.1 |"), "{t}");
        assert!(
            t.contains("Order by block write: rust-as > rust-noop > mq-deadline"),
            "{t}"
        );
        // The figures bonnie++ left out show as "-".
        assert!(t.contains("| rust-noop | 20.0 ± 0.0 | - |"), "{t}");
    }

    #[test]
    fn chart_ratios_are_paired_by_repeat_and_above_1_is_better() {
        let runs = vec![
            run(0, "mq-deadline", 10.0),
            run(0, "rust-as", 30.0),
            run(1, "mq-deadline", 20.0),
            run(1, "rust-as", 40.0),
            run(1, "rust-noop", 10.0),
        ];
        let mut res = results(runs, None);
        // No `none`: the first scheduler is the reference.
        assert_eq!(reference(&res), Some("mq-deadline"));
        let r = |res: &ToolResults, s: &str| {
            ratios_to(res, "hdd-raptor-10", "bonnie", s, "mq-deadline")
        };
        assert_eq!(r(&res, "rust-as"), [3.0, 2.0]);
        // Only repeat 1 has rust-noop.
        assert_eq!(r(&res, "rust-noop"), [0.5]);
        // A time (lower is better): half the time is twice as good.
        for run in &mut res.runs {
            run.run.case.tool = Tool::Sqlite;
            let m = run.measured.as_mut().unwrap();
            m.figures = [("seconds".to_string(), m.elapsed_s)].into_iter().collect();
        }
        let near = |xs: Vec<f64>, want: &[f64]| {
            xs.len() == want.len() && xs.iter().zip(want).all(|(x, w)| (x - w).abs() < 1e-9)
        };
        assert!(
            near(r(&res, "rust-as"), &[3.0, 2.0]),
            "{:?}",
            r(&res, "rust-as")
        );
        let (_, file, svg) = chart(&res, "hdd-raptor-10").unwrap().unwrap();
        assert_eq!(file, "chart-hdd-raptor-10.svg");
        assert!(svg.contains("relative to mq-deadline") && svg.contains("rust-noop"));
        res.schedulers.insert(0, "none".into());
        assert_eq!(reference(&res), Some("none"));
    }

    #[test]
    fn the_seed_order_is_set_beside_ours() {
        let runs = vec![
            run(0, "mq-deadline", 10.0),
            run(0, "rust-as", 30.0),
            run(0, "rust-noop", 20.0),
        ];
        let seed = Seed {
            title: "t".into(),
            source: "s".into(),
            notes: "n".into(),
            schedulers: [
                ("deadline", "mq-deadline"),
                ("anticipatory", "rust-as"),
                ("noop", "rust-noop"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .into_iter()
            .collect(),
            figure: vec![
                SeedFigure {
                    workload: "bonnie".into(),
                    metric: "block_write_kb_s".into(),
                    values: [("deadline", 1.0), ("anticipatory", 3.0), ("noop", 2.0)]
                        .map(|(a, b)| (a.to_string(), b))
                        .into_iter()
                        .collect(),
                },
                SeedFigure {
                    workload: "bonnie".into(),
                    metric: "elapsed_s".into(),
                    values: [("deadline", 1.0), ("anticipatory", 3.0)]
                        .map(|(a, b)| (a.to_string(), b))
                        .into_iter()
                        .collect(),
                },
            ],
        };
        let t = table_markdown(&results(runs, Some(seed)));
        assert!(
            t.contains("seed rust-as > rust-noop > mq-deadline · ironlift hdd-raptor-10: rust-as > rust-noop > mq-deadline — same order"),
            "{t}"
        );
        // Wall time, lower is better: the seed has deadline first, we have rust-as.
        assert!(t.contains("seed mq-deadline > rust-as · ironlift hdd-raptor-10: rust-as > mq-deadline — different best"), "{t}");
    }
}
