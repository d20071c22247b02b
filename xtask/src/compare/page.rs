//! The comparison's report: compare.json (every row), compare.md with a
//! chart of the intervals per device, and compare.html (the same page
//! with the charts inline).

use super::merge::{FailedRun, FunctionChange, OneSided, Row};
use super::stats::{self, Verdict};
use crate::chart;
use crate::report::{distinct, num};
use anyhow::{Context, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// A finished comparison.
#[derive(Serialize, Debug)]
pub struct Comparison {
    pub suite: String,
    pub quick: bool,
    /// The confidence level, e.g. 0.95.
    pub level: f64,
    /// Each boot in order: (side, folder under the comparison's).
    pub boots: Vec<(String, String)>,
    pub base: String,
    pub candidate: String,
    /// Boots whose suite reported a failure.
    pub failures: Vec<String>,
    /// Runs that failed inside the boots' results.
    pub failed_runs: Vec<FailedRun>,
    /// Cases only one side measured (not in `rows`).
    pub one_sided: Vec<OneSided>,
    pub rows: Vec<Row>,
    /// With `--count-insns`: where the instructions per request moved, for
    /// the cases whose count was better or worse.
    pub functions: Vec<FunctionChange>,
}

/// A figure with as many decimals as its size deserves.
fn fig(x: f64) -> String {
    let prec = match x.abs() {
        a if a >= 1000.0 => 0,
        a if a >= 10.0 => 1,
        _ => 2,
    };
    num(x, prec)
}

fn verdict_md(v: Verdict) -> String {
    match v {
        Verdict::Better | Verdict::Worse => format!("**{}**", v.text()),
        _ => v.text().to_string(),
    }
}

impl Comparison {
    /// The metrics significantly worse by more than `pct` percent, a line each.
    pub fn worse_than(&self, pct: f64) -> Vec<String> {
        self.rows
            .iter()
            .filter(|r| r.cmp.verdict == Verdict::Worse && r.cmp.worse_by_pct(r.direction) > pct)
            .map(|r| {
                format!(
                    "{} {} {}: {} {:.1} % worse (ratio of medians {:.3}, interval {:.3}–{:.3}, \
                     Holm p {:.3})",
                    r.device,
                    r.workload,
                    r.scheduler,
                    r.metric,
                    r.cmp.worse_by_pct(r.direction),
                    r.cmp.ratio,
                    r.cmp.ratio_lo,
                    r.cmp.ratio_hi,
                    r.cmp.p_holm
                )
            })
            .collect()
    }

    /// What the gate (`--fail-if-worse PCT`) fails on, a line each: boots
    /// and runs that failed, cases one side only measured, metrics it
    /// could not judge, and metrics worse by more than `pct` percent.
    pub fn gate_failures(&self, pct: f64) -> Vec<String> {
        let mut out: Vec<String> = self
            .failures
            .iter()
            .map(|f| format!("{} failed", f.lines().next().unwrap_or("")))
            .collect();
        out.extend(self.failed_runs.iter().map(|f| {
            format!(
                "{} {} {}: run {} of the {}'s boot {} failed: {}",
                f.device,
                f.workload,
                f.scheduler,
                f.id,
                f.side,
                f.boot,
                f.error.lines().next().unwrap_or("")
            )
        }));
        out.extend(self.one_sided.iter().map(|o| {
            format!(
                "{} {} {}: measured by the {} only (in {} boot(s))",
                o.device, o.workload, o.scheduler, o.measured_by, o.boots
            )
        }));
        for r in self.rows.iter().filter(|r| r.cmp.verdict.unjudged()) {
            let why = match r.cmp.verdict {
                Verdict::TooFewSamples => format!(
                    "{} + {} samples, where {} metrics at {} % need {} a side (--boots)",
                    r.cmp.n_base,
                    r.cmp.n_candidate,
                    r.cmp.family,
                    self.level * 100.0,
                    stats::fewest_samples(self.level, r.cmp.family)
                        .map_or("more".to_string(), |n| n.to_string())
                ),
                _ => format!(
                    "Holm p {:.3}, yet a ratio of medians of {:.3}",
                    r.cmp.p_holm, r.cmp.ratio
                ),
            };
            out.push(format!(
                "{} {} {}: {} not judged: {} ({why})",
                r.device,
                r.workload,
                r.scheduler,
                r.metric,
                r.cmp.verdict.text()
            ));
        }
        out.extend(self.worse_than(pct));
        out
    }

    /// The family the verdicts were corrected over: how many metrics.
    fn family(&self) -> usize {
        self.rows.first().map_or(0, |r| r.cmp.family)
    }

    /// The tables, one per device and workload.
    pub fn markdown_tables(&self) -> String {
        let mut s = String::new();
        let mut last: Option<(&str, &str)> = None;
        for r in &self.rows {
            let k = (r.device.as_str(), r.workload.as_str());
            if last != Some(k) {
                let _ = write!(
                    s,
                    "\n#### {} — {}\n\n| scheduler | metric | base (median) | \
                     candidate (median) | candidate / base | {:.0} % interval | p | Holm p | \
                     samples | verdict |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n",
                    r.device,
                    r.workload,
                    self.level * 100.0
                );
                last = Some(k);
            }
            let unit = if r.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", r.unit)
            };
            let _ = writeln!(
                s,
                "| {} | {}{} | {} | {} | {:.3} | {:.3}–{:.3} | {:.3} | {:.3} | {} + {} | {} |",
                r.scheduler,
                r.metric,
                unit,
                fig(r.cmp.base_median),
                fig(r.cmp.candidate_median),
                r.cmp.ratio,
                r.cmp.ratio_lo,
                r.cmp.ratio_hi,
                r.cmp.p,
                r.cmp.p_holm,
                r.cmp.n_base,
                r.cmp.n_candidate,
                verdict_md(r.cmp.verdict)
            );
        }
        s
    }

    /// How many rows got each verdict, as a sentence.
    fn tally(&self) -> String {
        let count = |v| self.rows.iter().filter(|r| r.cmp.verdict == v).count();
        [
            Verdict::Better,
            Verdict::Worse,
            Verdict::Inconsistent,
            Verdict::NoDifference,
            Verdict::TooFewSamples,
        ]
        .into_iter()
        .map(|v| format!("{} {}", count(v), v.text()))
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// One chart per device: every IOPS and instruction count interval.
    pub fn charts(&self) -> Result<Vec<(String, String, String)>> {
        distinct(self.rows.iter().map(|r| r.device.as_str()))
            .into_iter()
            .map(|d| {
                let rows: Vec<&Row> = self
                    .rows
                    .iter()
                    .filter(|r| r.device == d && (r.metric == "IOPS" || r.metric.contains("insns")))
                    .collect();
                Ok((
                    d.to_string(),
                    format!("compare-{d}.svg"),
                    chart::intervals_svg(d, &rows, self.level)?,
                ))
            })
            .collect()
    }

    /// compare.md.
    pub fn markdown(&self, charts: &[(String, String, String)]) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# ironlift comparison: {}\n", self.suite);
        let _ = writeln!(md, "| | |\n|---|---|");
        let _ = writeln!(md, "| base | {} |", self.base);
        let _ = writeln!(md, "| candidate | {} |", self.candidate);
        let _ = writeln!(
            md,
            "| suite | {}{} |",
            self.suite,
            if self.quick { ", `--quick`" } else { "" }
        );
        let order: Vec<&str> = self.boots.iter().map(|(s, _)| s.as_str()).collect();
        let _ = writeln!(md, "| boots | {} |", order.join(", "));
        let _ = writeln!(md, "| level | {:.0} % |", self.level * 100.0);
        let alpha = 1.0 - self.level;
        let _ = writeln!(
            md,
            "| correction | Holm over {} metrics: a verdict needs Holm's adjusted p at most {alpha:.2} |",
            self.family()
        );
        let _ = writeln!(md, "| verdicts | {} |", self.tally());
        let _ = writeln!(
            md,
            "\nEach side ran the suite in its own boots, alternating. A boot is one sample \
             (the mean of its runs): the runs of one boot share its speed. \"base\" and \
             \"candidate\" are the medians of the side's samples and \"candidate / base\" \
             their ratio; the interval is a bootstrap percentile interval of that ratio \
             (10 000 resamples of each side, fixed seed), for the metric alone. p is the \
             rank-sum test's (Mann–Whitney U) exact two-sided p on the samples; every \
             metric of the comparison is judged at once, so \"Holm p\" is p adjusted by \
             Holm's step-down procedure over all {} of them, which holds the chance of \
             calling any metric better or worse where nothing changed to {alpha:.2}. A metric is better or worse only when its Holm p \
             is at most {alpha:.2} and the test and the ratio of medians point the same \
             way, by its direction (IOPS: higher is better; latency and instructions per \
             request: lower is better); \"test and medians disagree\" where they do not. \
             \"too few samples to tell\": even samples entirely apart could not reach \
             {alpha:.2} / {} (what Holm asks of a metric that is the only one to differ) \
             with so few; run more boots.\n",
            self.family(),
            self.family()
        );
        md.push_str(&self.failures_markdown());
        for (d, name, _) in charts {
            let _ = writeln!(md, "## {d}\n\n![{d}]({name})\n");
        }
        let _ = writeln!(md, "## Tables\n{}", self.markdown_tables());
        md.push_str(&self.functions_markdown());
        let _ = writeln!(
            md,
            "\nRaw data: `compare.json` (every row), and each boot's own report under {}.",
            self.boots
                .iter()
                .map(|(_, d)| format!("`{d}/`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        md
    }

    /// The boots and runs that failed and the cases one side only
    /// measured, a list each; empty without any.
    fn failures_markdown(&self) -> String {
        let mut md = String::new();
        if !self.failures.is_empty() {
            let _ = writeln!(md, "**Boots that reported a failure:**\n");
            for f in &self.failures {
                let _ = writeln!(md, "- {}", f.lines().next().unwrap_or(""));
            }
            md.push('\n');
        }
        if !self.failed_runs.is_empty() {
            let _ = writeln!(md, "**Runs that failed:**\n");
            for f in &self.failed_runs {
                let _ = writeln!(
                    md,
                    "- {} {} {}: run {} of the {}'s boot `{}`: {}",
                    f.device,
                    f.workload,
                    f.scheduler,
                    f.id,
                    f.side,
                    f.boot,
                    f.error.lines().next().unwrap_or("")
                );
            }
            md.push('\n');
        }
        if !self.one_sided.is_empty() {
            let _ = writeln!(md, "**Cases measured by one side only** (not compared):\n");
            for o in &self.one_sided {
                let _ = writeln!(
                    md,
                    "- {} {} {}: by the {} only, in {} boot(s)",
                    o.device, o.workload, o.scheduler, o.measured_by, o.boots
                );
            }
            md.push('\n');
        }
        md
    }

    /// The functions whose instructions per request moved most, a table
    /// per case; empty without any.
    fn functions_markdown(&self) -> String {
        let mut md = String::new();
        if self.functions.is_empty() {
            return md;
        }
        let _ = writeln!(
            md,
            "\n## Where the instructions per request moved\n\n\
             For each case whose instructions per request came out better or worse, the \
             functions whose count moved most (the mean of each side's boots; each boot's \
             runs' `runs/<id>.functions.tsv`). A function that only one side has is one \
             that was renamed, added, removed or inlined."
        );
        let mut last: Option<(&str, &str, &str)> = None;
        for f in &self.functions {
            let case = (f.device.as_str(), f.workload.as_str(), f.scheduler.as_str());
            if last != Some(case) {
                let _ = writeln!(
                    md,
                    "\n### {} {} {}\n\n| function | base | candidate | change |\n|---|---:|---:|---:|",
                    case.0, case.1, case.2
                );
                last = Some(case);
            }
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {:+.1} |",
                f.function,
                num(f.base, 1),
                num(f.candidate, 1),
                f.candidate - f.base
            );
        }
        md
    }

    /// Writes compare.json, compare.md, its charts and compare.html.
    pub fn write(&self, dir: &Path) -> Result<()> {
        fs::write(
            dir.join("compare.json"),
            serde_json::to_string_pretty(self)?,
        )?;
        let charts = self.charts()?;
        for (_, name, svg) in &charts {
            fs::write(dir.join(name), svg).with_context(|| format!("writing {name}"))?;
        }
        let md = self.markdown(&charts);
        fs::write(dir.join("compare.md"), &md)?;
        let title = format!("ironlift comparison: {}", self.suite);
        crate::html::write(&dir.join("compare.html"), &title, &md, &charts)
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::compare::stats::{self, Direction};

    /// The rows of `metrics` (workload, metric, base, candidate) of
    /// nullb rust-deadline, judged together at 95 %.
    fn rows(metrics: &[(&str, &'static str, &[f64], &[f64])]) -> Vec<Row> {
        let dir = |metric: &str| {
            if metric == "IOPS" {
                Direction::HigherIsBetter
            } else {
                Direction::LowerIsBetter
            }
        };
        let family: Vec<_> = metrics.iter().map(|&(_, m, b, c)| (b, c, dir(m))).collect();
        stats::compare_family(&family, 0.95)
            .into_iter()
            .zip(metrics)
            .map(|(cmp, &(workload, metric, _, _))| Row {
                device: "nullb".into(),
                workload: workload.into(),
                scheduler: "rust-deadline".into(),
                metric,
                unit: "",
                direction: dir(metric),
                cmp: cmp.unwrap(),
            })
            .collect()
    }

    /// A comparison with one worse metric, one unchanged and one too small.
    pub fn sample() -> Comparison {
        let base = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0];
        let slower = [80.0, 82.0, 79.0, 81.0, 80.0, 78.0];
        Comparison {
            suite: "fio-basic".into(),
            quick: true,
            level: 0.95,
            boots: vec![
                ("base".into(), "boots/01-base".into()),
                ("candidate".into(), "boots/02-candidate".into()),
            ],
            base: "HEAD 0123456789ab".into(),
            candidate: "HEAD 0123456789ab + slow.patch (to the repository)".into(),
            failures: vec![],
            failed_runs: vec![],
            one_sided: vec![],
            rows: rows(&[
                ("randread", "IOPS", &base, &slower),
                ("randread", "kernel insns / request", &base, &base),
                ("seqread", "IOPS", &base[..2], &slower[..2]),
            ]),
            functions: vec![FunctionChange {
                device: "nullb".into(),
                workload: "randread".into(),
                scheduler: "rust-deadline".into(),
                function: "rust_deadline:block::mq::elevator::vtable::Vtable::insert_requests"
                    .into(),
                base: 276.4,
                candidate: 3789.0,
            }],
        }
    }

    #[test]
    fn the_page_holds_every_row_and_the_gate_names_the_worse_one() {
        let c = sample();
        let md = c.markdown(&c.charts().unwrap());
        assert!(
            md.contains("| rust-deadline | IOPS | 100.0 | 80.0 | 0.800 |"),
            "{md}"
        );
        assert!(md.contains("**worse**") && md.contains("too few samples to tell"));
        assert!(md.contains(
            "| verdicts | 0 better, 1 worse, 0 test and medians disagree, 1 no difference \
             detected, 1 too few samples to tell |"
        ));
        assert!(md.contains("![nullb](compare-nullb.svg)"));
        assert!(
            md.contains(
                "| `rust_deadline:block::mq::elevator::vtable::Vtable::insert_requests` \
             | 276.4 | 3789.0 | +3512.6 |"
            ),
            "{md}"
        );
        let worse = c.worse_than(10.0);
        assert_eq!(worse.len(), 1, "{worse:?}");
        assert!(worse[0].starts_with("nullb randread rust-deadline: IOPS 20.0 % worse"));
        assert!(c.worse_than(25.0).is_empty());
    }
}
