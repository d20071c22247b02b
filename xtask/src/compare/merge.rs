//! The boots' results pooled per side, and compared metric by metric.

use super::stats::{self, Comparison, Direction, Verdict};
use crate::insns;
use crate::suite::fio::{Measured, Results};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// A metric of a fio run that the comparison looks at.
pub struct Metric {
    pub name: &'static str,
    pub unit: &'static str,
    pub dir: Direction,
    /// Measured only with `--count-insns`.
    pub insns: bool,
    pub get: fn(&Measured) -> Option<f64>,
}

/// The metrics, in the report's order. Instructions per request are there
/// only with `--count-insns`.
pub const METRICS: &[Metric] = &[
    Metric {
        name: "IOPS",
        unit: "",
        dir: Direction::HigherIsBetter,
        insns: false,
        get: |m| Some(m.iops),
    },
    Metric {
        name: "mean latency",
        unit: "µs",
        dir: Direction::LowerIsBetter,
        insns: false,
        get: |m| Some(m.lat_mean_us),
    },
    Metric {
        name: "p99 latency",
        unit: "µs",
        dir: Direction::LowerIsBetter,
        insns: false,
        get: |m| Some(m.lat_p99_us),
    },
    Metric {
        name: "kernel insns / request",
        unit: "",
        dir: Direction::LowerIsBetter,
        insns: true,
        get: |m| m.insns.as_ref().map(|i| i.kernel_per_request),
    },
    Metric {
        name: "scheduler's insns / request",
        unit: "",
        dir: Direction::LowerIsBetter,
        insns: true,
        get: |m| m.insns.as_ref().map(|i| i.scheduler_per_request),
    },
];

/// (device, workload, scheduler).
pub type Case = (String, String, String);

/// The sides by index, as the report names them.
pub const SIDES: [&str; 2] = ["base", "candidate"];

/// A run that failed: its case, side, boot and why.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FailedRun {
    pub device: String,
    pub workload: String,
    pub scheduler: String,
    pub side: &'static str,
    /// The boot's folder name (`03-candidate`).
    pub boot: String,
    /// The run's id in that boot's results.json.
    pub id: String,
    pub error: String,
}

/// A case that one side measured and the other did not.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct OneSided {
    pub device: String,
    pub workload: String,
    pub scheduler: String,
    /// The side that measured it.
    pub measured_by: &'static str,
    /// In how many of its boots.
    pub boots: usize,
}

/// Every run's metrics, per case and side (0 base, 1 candidate), grouped
/// by boot, in the order the cases first appear, and the runs that failed.
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
    failed: Vec<FailedRun>,
    /// With `--count-insns`: per case and side, each boot's instructions
    /// per request by function (the mean of its runs' function tables).
    functions: BTreeMap<Case, [Vec<BTreeMap<String, f64>>; 2]>,
}

/// How many functions [`Merged::function_changes`] names per case.
const FUNCTIONS_NAMED: usize = 10;

/// A function whose instructions per request moved between the sides.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct FunctionChange {
    pub device: String,
    pub workload: String,
    pub scheduler: String,
    /// As [`insns::short_name`] gives it.
    pub function: String,
    /// Mean over each side's boots of its instructions per request.
    pub base: f64,
    pub candidate: f64,
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
            let boot = dir.file_name().unwrap_or_default().to_string_lossy();
            m.add(*side, &boot, &res);
            m.add_functions(*side, &dir.join("runs"), &res)?;
        }
        Ok(m)
    }

    /// Adds the function tables of one boot's runs (`runs/<id>.functions.tsv`,
    /// where `--count-insns` wrote them), each case's runs averaged.
    pub fn add_functions(&mut self, side: usize, runs_dir: &Path, res: &Results) -> Result<()> {
        let mut boot: BTreeMap<Case, Vec<BTreeMap<String, f64>>> = BTreeMap::new();
        for r in &res.runs {
            let tsv = insns::functions_table(&runs_dir.join(&r.run.id));
            if r.measured.as_ref().and_then(|m| m.insns.as_ref()).is_none() || !tsv.exists() {
                continue;
            }
            let case = (
                r.run.device.clone(),
                r.run.case.workload.clone(),
                r.run.scheduler.clone(),
            );
            boot.entry(case)
                .or_default()
                .push(insns::read_functions(&tsv)?);
        }
        for (case, tables) in boot {
            self.functions.entry(case).or_default()[side].push(mean_table(&tables));
        }
        Ok(())
    }

    /// For each case whose instructions per request the comparison found
    /// better or worse (`rows`), the functions whose instructions per
    /// request moved most between the sides' means, at least one per
    /// request.
    pub fn function_changes(&self, rows: &[Row]) -> Vec<FunctionChange> {
        let mut out = Vec::new();
        for case in &self.cases {
            let moved = rows.iter().any(|r| {
                (&r.device, &r.workload, &r.scheduler) == (&case.0, &case.1, &case.2)
                    && r.metric.contains("insns")
                    && matches!(r.cmp.verdict, Verdict::Better | Verdict::Worse)
            });
            let Some([base, cand]) = self.functions.get(case) else {
                continue;
            };
            if !moved || base.is_empty() || cand.is_empty() {
                continue;
            }
            let (base, cand) = (mean_table(base), mean_table(cand));
            let mut names: Vec<&String> = base.keys().chain(cand.keys()).collect();
            names.sort();
            names.dedup();
            let get = |t: &BTreeMap<String, f64>, f: &str| t.get(f).copied().unwrap_or(0.0);
            let mut changes: Vec<(&String, f64, f64)> = names
                .into_iter()
                .map(|f| (f, get(&base, f), get(&cand, f)))
                .filter(|(_, b, c)| (c - b).abs() >= 1.0)
                .collect();
            changes.sort_by(|x, y| (y.2 - y.1).abs().total_cmp(&(x.2 - x.1).abs()));
            out.extend(
                changes
                    .into_iter()
                    .take(FUNCTIONS_NAMED)
                    .map(|(f, b, c)| FunctionChange {
                        device: case.0.clone(),
                        workload: case.1.clone(),
                        scheduler: case.2.clone(),
                        function: insns::short_name(f),
                        base: b,
                        candidate: c,
                    }),
            );
        }
        out
    }

    /// Adds the runs of one boot of `side`, whose folder is named `boot`:
    /// those that measured, and those that failed.
    pub fn add(&mut self, side: usize, boot: &str, res: &Results) {
        let mut measured: BTreeMap<Case, Vec<Measured>> = BTreeMap::new();
        for r in &res.runs {
            let case = (
                r.run.device.clone(),
                r.run.case.workload.clone(),
                r.run.scheduler.clone(),
            );
            if !self.samples.contains_key(&case) {
                self.cases.push(case.clone());
                self.samples.insert(case.clone(), Default::default());
            }
            match &r.measured {
                Some(m) if r.ok => measured.entry(case).or_default().push(m.clone()),
                _ => self.failed.push(FailedRun {
                    device: case.0,
                    workload: case.1,
                    scheduler: case.2,
                    side: SIDES[side],
                    boot: boot.to_string(),
                    id: r.run.id.clone(),
                    error: r
                        .error
                        .clone()
                        .unwrap_or_else(|| "no measurement recorded".into()),
                }),
            }
        }
        for (case, runs) in measured {
            self.samples.entry(case).or_default()[side].push(runs);
        }
    }

    /// The runs that failed, in the order their boots were added.
    pub fn failed_runs(&self) -> &[FailedRun] {
        &self.failed
    }

    /// The cases one side measured (in some boot) and the other never did.
    pub fn one_sided(&self) -> Vec<OneSided> {
        self.cases
            .iter()
            .filter_map(|case| {
                let sides = &self.samples[case];
                let side = match (sides[0].is_empty(), sides[1].is_empty()) {
                    (false, true) => 0,
                    (true, false) => 1,
                    _ => return None,
                };
                Some(OneSided {
                    device: case.0.clone(),
                    workload: case.1.clone(),
                    scheduler: case.2.clone(),
                    measured_by: SIDES[side],
                    boots: sides[side].len(),
                })
            })
            .collect()
    }

    /// Every metric of every case both sides measured, compared at
    /// `level`, all of them judged together ([`stats::compare_family`]).
    pub fn compare(&self, level: f64) -> Vec<Row> {
        // One value a boot: the mean of its runs'.
        let values = |boots: &[Vec<Measured>], metric: &Metric| -> Vec<f64> {
            boots
                .iter()
                .filter_map(|runs| {
                    let v: Vec<f64> = runs.iter().filter_map(|m| (metric.get)(m)).collect();
                    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                })
                .collect()
        };
        let mut judged: Vec<(&Case, &Metric, Vec<f64>, Vec<f64>)> = Vec::new();
        for case in &self.cases {
            let [base, cand] = &self.samples[case];
            if base.is_empty() || cand.is_empty() {
                continue;
            }
            for metric in METRICS {
                judged.push((case, metric, values(base, metric), values(cand, metric)));
            }
        }
        let family: Vec<(&[f64], &[f64], Direction)> = judged
            .iter()
            .map(|(_, m, b, c)| (b.as_slice(), c.as_slice(), m.dir))
            .collect();
        stats::compare_family(&family, level)
            .into_iter()
            .zip(&judged)
            .filter_map(|(cmp, (case, metric, _, _))| {
                Some(Row {
                    device: case.0.clone(),
                    workload: case.1.clone(),
                    scheduler: case.2.clone(),
                    metric: metric.name,
                    unit: metric.unit,
                    direction: metric.dir,
                    cmp: cmp?,
                })
            })
            .collect()
    }
}

/// The mean of function tables, a function missing from one counting 0
/// there.
fn mean_table(tables: &[BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let mut sum: BTreeMap<String, f64> = BTreeMap::new();
    for t in tables {
        for (f, v) in t {
            *sum.entry(f.clone()).or_default() += v;
        }
    }
    let n = tables.len().max(1) as f64;
    sum.into_iter().map(|(f, v)| (f, v / n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn functions_that_moved_are_named_where_the_count_moved() {
        let dir = std::env::temp_dir().join(format!("ironlift-merge-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let mut m = Merged::default();
        // Eight boots a side: the family is every metric of the canned
        // file's cases, and samples fully apart need eight a side to be
        // significant among so many (checked below).
        for boot in 0..8 {
            for (side, label) in SIDES.iter().enumerate() {
                let mut res = canned("none", 1.0);
                for r in res.runs.iter_mut() {
                    let extra = if side == 1 && r.run.scheduler == "rust-deadline" {
                        3000.0
                    } else {
                        0.0
                    };
                    let Some(c) = r.measured.as_mut().and_then(|m| m.insns.as_mut()) else {
                        continue;
                    };
                    c.kernel_per_request += extra + boot as f64;
                    let insert = 276.0 + extra + boot as f64;
                    let tsv = format!(
                        "# insns/request\tcalls/request\tfunction\n\
                         {insert}\t1\trust_deadline:_RNvNtCsx_13rust_deadline4glue6insert\n\
                         {}\t1\tblk_mq_submit_bio\n",
                        168.0 + boot as f64 * 0.1
                    );
                    fs::write(dir.join(format!("{}.functions.tsv", r.run.id)), tsv).unwrap();
                }
                m.add(side, &format!("{boot}-{label}"), &res);
                m.add_functions(side, &dir, &res).unwrap();
            }
        }
        let rows = m.compare(0.95);
        assert_eq!(stats::fewest_samples(0.95, rows.len()), Some(8));
        let changes = m.function_changes(&rows);
        fs::remove_dir_all(&dir).unwrap();
        assert!(!changes.is_empty());
        for c in &changes {
            assert_eq!(c.scheduler, "rust-deadline", "{c:?}");
            assert_eq!(c.function, "rust_deadline:glue::insert");
            assert!((c.candidate - c.base - 3000.0).abs() < 1e-9, "{c:?}");
        }
    }

    #[test]
    fn boots_pool_per_side_and_a_scaled_scheduler_stands_out() {
        let mut m = Merged::default();
        // Eight boots a side (as above); the candidate's mq-deadline does
        // 20 % fewer IOPS. A boot is one sample, whatever its runs.
        for boot in 0..8 {
            m.add(0, &format!("{boot}-base"), &canned("none", 1.0));
            m.add(1, &format!("{boot}-candidate"), &canned("mq-deadline", 0.8));
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
            assert_eq!((r.cmp.n_base, r.cmp.n_candidate), (8, 8));
            assert_eq!(r.cmp.family, rows.len());
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
        // The canned file's failed runs, in every boot of each side; both
        // sides measured every case.
        let per_boot = canned("none", 1.0).runs.iter().filter(|r| !r.ok).count();
        let failed = m.failed_runs();
        assert!(per_boot > 0);
        assert_eq!(failed.len(), 16 * per_boot, "{failed:?}");
        let f = &failed[per_boot];
        assert_eq!(
            (f.side, f.boot.as_str(), f.id.as_str(), f.scheduler.as_str()),
            ("candidate", "0-candidate", "0007", "kyber")
        );
        assert!(m.one_sided().is_empty());
    }
}
