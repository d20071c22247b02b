//! The boots' results pooled per side, and compared metric by metric.

use super::stats::{self, Comparison, Direction};
use crate::suite::fio::{Measured, Results};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

/// A metric of a fio run that the comparison looks at.
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub dir: Direction,
    pub get: fn(&Measured) -> Option<f64>,
}

/// The metrics, in the report's order. Instructions per request are there
/// only with `--count-insns`.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "IOPS",
        unit: "",
        dir: Direction::HigherIsBetter,
        get: |m| Some(m.iops),
    },
    Metric {
        name: "mean latency",
        unit: "µs",
        dir: Direction::LowerIsBetter,
        get: |m| Some(m.lat_mean_us),
    },
    Metric {
        name: "p99 latency",
        unit: "µs",
        dir: Direction::LowerIsBetter,
        get: |m| Some(m.lat_p99_us),
    },
    Metric {
        name: "kernel insns / request",
        unit: "",
        dir: Direction::LowerIsBetter,
        get: |m| m.insns.as_ref().map(|i| i.kernel_per_request),
    },
    Metric {
        name: "scheduler's insns / request",
        unit: "",
        dir: Direction::LowerIsBetter,
        get: |m| m.insns.as_ref().map(|i| i.scheduler_per_request),
    },
];

/// (device, workload, scheduler).
pub type Case = (String, String, String);

/// Every run's metrics, per case and side (0 base, 1 candidate), grouped
/// by boot, in the order the cases first appear.
///
/// The sample is a boot's mean, not a run: the runs of one boot share its
/// speed (its placement on the host, what else ran then), which moves a
/// boot's IOPS by tens of percent, and even its instruction counts by a
/// few, against another boot's. Pooling runs as independent samples made a
/// comment-only patch "better" (docs/measurements/
/// 2026-12-04-compare-both-ways.md).
#[derive(Default)]
pub struct Merged {
    pub cases: Vec<Case>,
    samples: BTreeMap<Case, [Vec<Vec<Measured>>; 2]>,
}

/// One metric of one case compared.
#[derive(Serialize, Debug, Clone)]
pub struct Row {
    pub device: String,
    pub workload: String,
    pub scheduler: String,
    pub metric: &'static str,
    pub unit: &'static str,
    pub direction: Direction,
    #[serde(flatten)]
    pub cmp: Comparison,
}

impl Merged {
    /// Reads each boot's results.json: (side, folder).
    pub fn read(boots: &[(usize, PathBuf)]) -> Result<Merged> {
        let mut m = Merged::default();
        for (side, dir) in boots {
            let file = dir.join("results.json");
            let text =
                fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            let res: Results = serde_json::from_str(&text)
                .with_context(|| format!("{} is not a fio results file", file.display()))?;
            m.add(*side, &res);
        }
        Ok(m)
    }

    /// Adds the measured runs of one boot of `side`.
    pub fn add(&mut self, side: usize, res: &Results) {
        let mut boot: BTreeMap<Case, Vec<Measured>> = BTreeMap::new();
        for r in &res.runs {
            let Some(measured) = &r.measured else {
                continue;
            };
            let case = (
                r.run.device.clone(),
                r.run.case.workload.clone(),
                r.run.scheduler.clone(),
            );
            if !self.samples.contains_key(&case) && !boot.contains_key(&case) {
                self.cases.push(case.clone());
            }
            boot.entry(case).or_default().push(measured.clone());
        }
        for (case, runs) in boot {
            self.samples.entry(case).or_default()[side].push(runs);
        }
    }

    /// Every metric of every case both sides measured, compared at `level`.
    pub fn compare(&self, level: f64) -> Vec<Row> {
        let mut rows = Vec::new();
        for case in &self.cases {
            let [base, cand] = &self.samples[case];
            for metric in METRICS {
                // One value a boot: the mean of its runs'.
                let values = |boots: &[Vec<Measured>]| -> Vec<f64> {
                    boots
                        .iter()
                        .filter_map(|runs| {
                            let v: Vec<f64> = runs.iter().filter_map(|m| (metric.get)(m)).collect();
                            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                        })
                        .collect()
                };
                let Some(cmp) = stats::compare(&values(base), &values(cand), metric.dir, level)
                else {
                    continue;
                };
                rows.push(Row {
                    device: case.0.clone(),
                    workload: case.1.clone(),
                    scheduler: case.2.clone(),
                    metric: metric.name,
                    unit: metric.unit,
                    direction: metric.dir,
                    cmp,
                });
            }
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::Verdict;

    /// The canned fio results, its IOPS scaled by `scale` for every run
    /// of `scheduler`.
    fn canned(scheduler: &str, scale: f64) -> Results {
        let path = crate::util::repo_root().join("tests/reports/fio-basic/results.json");
        let mut res: Results = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        for r in res.runs.iter_mut().filter(|r| r.run.scheduler == scheduler) {
            if let Some(m) = &mut r.measured {
                m.iops *= scale;
            }
        }
        res
    }

    #[test]
    fn boots_pool_per_side_and_a_scaled_scheduler_stands_out() {
        let mut m = Merged::default();
        // Four boots a side; the candidate's mq-deadline does 20 % fewer
        // IOPS. A boot is one sample, whatever its runs.
        for _ in 0..4 {
            m.add(0, &canned("none", 1.0));
            m.add(1, &canned("mq-deadline", 0.8));
        }
        let rows = m.compare(0.95);
        let iops = |sched: &str| -> Vec<&Row> {
            rows.iter()
                .filter(|r| r.scheduler == sched && r.metric == "IOPS")
                .collect()
        };
        assert!(!iops("mq-deadline").is_empty());
        for r in iops("mq-deadline") {
            assert!((r.cmp.ratio - 0.8).abs() < 1e-9, "{r:?}");
            assert_eq!((r.cmp.n_base, r.cmp.n_candidate), (4, 4));
            assert_ne!(r.cmp.verdict, Verdict::Better, "{r:?}");
        }
        assert!(iops("mq-deadline")
            .iter()
            .any(|r| r.cmp.verdict == Verdict::Worse));
        for r in iops("none") {
            assert_eq!(r.cmp.ratio, 1.0);
            assert_ne!(r.cmp.verdict, Verdict::Worse);
            assert_ne!(r.cmp.verdict, Verdict::Better);
        }
        // Latency is there too; instruction counts only where counted.
        assert!(rows.iter().any(|r| r.metric == "p99 latency"));
    }
}
