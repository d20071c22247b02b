//! What a tool run measured, the statistics over repeats, the seed's
//! figures, and the results file (schema `ironlift-tool/1`,
//! docs/results-schema.md).

use super::parse::Tool;
use crate::devices::Device;
use crate::results::{Header, RunRecord};
use crate::stats::mean_sd;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// The suite's `[tool]` table: the file system, and the md RAID under it.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// `ext4` or `xfs`.
    pub fs: String,
    /// mkfs's options.
    #[serde(default)]
    pub mkfs: String,
    /// md RAID level over every disk of the device (none: the file system
    /// on the device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raid_level: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raid_chunk_kb: Option<u32>,
    /// A seed's figures to set beside the results (configs/seeds/*.toml).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// The workloads `--quick` runs (default: all); `--workloads`
    /// replaces them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick_workloads: Option<Vec<String>>,
}

/// A `[[workload]]`: a tool and its arguments, full and `--quick`.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub name: String,
    pub tool: Tool,
    /// What the arguments mean, and what the workload stands for.
    pub about: String,
    pub full: String,
    pub quick: String,
    /// About how long one run takes under TCG, full and quick (s): the
    /// estimate and the guest's timeout.
    pub run_s: [u32; 2],
}

/// A planned run's workload: its tool and the arguments it ran with.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ToolCase {
    pub workload: String,
    pub tool: Tool,
    pub args: String,
}

/// What one run measured: the tool's figures (by [`super::parse::Metric`]
/// key) and the run's wall time.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ToolMeasured {
    pub elapsed_s: f64,
    pub figures: BTreeMap<String, f64>,
}

pub type ToolRun = RunRecord<ToolCase, ToolMeasured>;

/// Mean, sample standard deviation and count of a figure over repeats.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Stat {
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub sd: f64,
    pub n: usize,
}

impl Stat {
    fn of(xs: &[f64]) -> Option<Stat> {
        if xs.is_empty() {
            return None;
        }
        let (mean, sd) = mean_sd(xs);
        Some(Stat {
            mean,
            sd,
            n: xs.len(),
        })
    }
}

/// The statistics of one (device, workload, scheduler) over its repeats.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ToolSummary {
    pub device: String,
    pub workload: String,
    pub tool: Tool,
    pub scheduler: String,
    pub runs: usize,
    pub failed: usize,
    pub elapsed: Option<Stat>,
    pub figures: BTreeMap<String, Stat>,
}

/// A seed's published figures (configs/seeds/*.toml), with where they are
/// from and which of our schedulers stands for each of the seed's.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Seed {
    pub title: String,
    pub source: String,
    /// What the seed ran on, and what we could not take from it.
    pub notes: String,
    /// The seed's scheduler name → ours.
    pub schedulers: BTreeMap<String, String>,
    #[serde(default)]
    pub figure: Vec<SeedFigure>,
}

/// One measurement of the seed, per scheduler (the seed's names).
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SeedFigure {
    pub workload: String,
    /// A metric key of the workload's tool, or `elapsed_s`.
    pub metric: String,
    pub values: BTreeMap<String, f64>,
}

impl Seed {
    /// Loads and checks a seed file against the suite's workloads.
    pub fn load(root: &Path, rel: &str, workloads: &[Workload]) -> Result<Seed> {
        let p = root.join(rel);
        let text =
            fs::read_to_string(&p).with_context(|| format!("reading seed {}", p.display()))?;
        let seed: Seed =
            toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
        for f in &seed.figure {
            let Some(w) = workloads.iter().find(|w| w.name == f.workload) else {
                bail!(
                    "{}: figure of workload {:?}, which the suite lacks",
                    p.display(),
                    f.workload
                );
            };
            if f.metric != "elapsed_s" && !w.tool.metrics().iter().any(|m| m.key == f.metric) {
                bail!(
                    "{}: {} reports no {:?}",
                    p.display(),
                    w.tool.name(),
                    f.metric
                );
            }
            if let Some(s) = f.values.keys().find(|s| !seed.schedulers.contains_key(*s)) {
                bail!("{}: scheduler {s:?} is not in [schedulers]", p.display());
            }
            // An order names each of ours once: two of the seed's that one
            // of ours stands for go in figures of their own.
            let mut ours = BTreeMap::new();
            for s in f.values.keys() {
                if let Some(other) = ours.insert(&seed.schedulers[s], s) {
                    bail!(
                        "{}: {} {}: {other:?} and {s:?} are both our {:?}; give them separate [[figure]] tables",
                        p.display(),
                        f.workload,
                        f.metric,
                        seed.schedulers[s]
                    );
                }
            }
        }
        Ok(seed)
    }
}

/// The results file.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ToolResults {
    #[serde(flatten)]
    pub header: Header,
    pub tool: ToolSpec,
    pub workloads: Vec<Workload>,
    pub schedulers: Vec<String>,
    pub devices: BTreeMap<String, Device>,
    pub runs: Vec<ToolRun>,
    pub summary: Vec<ToolSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<Seed>,
}

/// One summary row per (device, workload, scheduler), in the runs' device
/// and workload order and the schedulers' order.
pub fn summarize(runs: &[ToolRun], schedulers: &[String]) -> Vec<ToolSummary> {
    let mut groups: Vec<(String, String, Tool)> = Vec::new();
    for r in runs {
        let g = (
            r.run.device.clone(),
            r.run.case.workload.clone(),
            r.run.case.tool,
        );
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut out = Vec::new();
    for (device, workload, tool) in groups {
        for s in schedulers {
            let mine: Vec<&ToolRun> = runs
                .iter()
                .filter(|r| {
                    r.run.device == device
                        && r.run.case.workload == workload
                        && &r.run.scheduler == s
                })
                .collect();
            if mine.is_empty() {
                continue;
            }
            let ok: Vec<&ToolMeasured> = mine.iter().filter_map(|r| r.measured.as_ref()).collect();
            let figures = tool
                .metrics()
                .iter()
                .filter_map(|m| {
                    let xs: Vec<f64> = ok
                        .iter()
                        .filter_map(|x| x.figures.get(m.key).copied())
                        .collect();
                    Some((m.key.to_string(), Stat::of(&xs)?))
                })
                .collect();
            out.push(ToolSummary {
                device: device.clone(),
                workload: workload.clone(),
                tool,
                scheduler: s.clone(),
                runs: mine.len(),
                failed: mine.len() - ok.len(),
                elapsed: Stat::of(&ok.iter().map(|x| x.elapsed_s).collect::<Vec<_>>()),
                figures,
            });
        }
    }
    out
}

/// What the guest wrote for run `id`: the tool's output parsed, and the
/// wall time; or why the run failed.
pub fn read_run(runs_dir: &Path, id: &str, tool: Tool) -> Result<ToolMeasured, String> {
    if let Ok(e) = fs::read_to_string(runs_dir.join(format!("{id}.err"))) {
        return Err(e.trim().to_string());
    }
    let out = fs::read_to_string(runs_dir.join(format!("{id}.out")))
        .map_err(|e| format!("no output ({id}.out: {e})"))?;
    let elapsed_s = fs::read_to_string(runs_dir.join(format!("{id}.elapsed")))
        .ok()
        .and_then(|t| t.trim().parse::<f64>().ok())
        .ok_or_else(|| format!("no wall time ({id}.elapsed)"))?;
    let figures = tool.parse(&out).map_err(|e| format!("{e:#}"))?;
    Ok(ToolMeasured { elapsed_s, figures })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_its_output_and_wall_time_or_its_error() {
        let dir = std::env::temp_dir().join(format!("xtask-tool-runs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let canned = crate::util::repo_root().join("tests/tool-output/dbench.out");
        fs::copy(canned, dir.join("0000.out")).unwrap();
        fs::write(dir.join("0000.elapsed"), "12.345\n").unwrap();
        let m = read_run(&dir, "0000", Tool::Dbench).unwrap();
        assert_eq!((m.elapsed_s, m.figures["mb_s"]), (12.345, 163.201));
        // Output that is not the tool's is an error, not a zero.
        assert!(read_run(&dir, "0000", Tool::Pgbench)
            .unwrap_err()
            .contains("tps"));
        // No wall time, no output, or the guest's own error.
        fs::copy(dir.join("0000.out"), dir.join("0001.out")).unwrap();
        assert!(read_run(&dir, "0001", Tool::Dbench)
            .unwrap_err()
            .contains("wall time"));
        assert!(read_run(&dir, "0002", Tool::Dbench)
            .unwrap_err()
            .contains("no output"));
        fs::write(dir.join("0003.err"), "dbench failed (rc 1): x\n").unwrap();
        assert_eq!(
            read_run(&dir, "0003", Tool::Dbench).unwrap_err(),
            "dbench failed (rc 1): x"
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
