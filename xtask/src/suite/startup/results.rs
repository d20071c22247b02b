//! What a start-up run measured, the statistics over repeats, and the
//! results file (schema `ironlift-startup/2`, docs/results-schema.md).

use super::spec::StartupSpec;
use crate::devices::Device;
use crate::results::{Header, RunRecord};
use crate::stats::{mean_of_some, mean_sd, mean_sd_of, paired_ratios, Ratio};
use crate::suite::fio::parse_fio;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// The schema before loads and writers; its files read back as the
/// current one's.
pub const SCHEMA_1: &str = "ironlift-startup/1";

/// The schedulers every start-up time is compared with, as ratios.
pub const REFERENCES: [&str; 2] = ["mq-deadline", "bfq"];

/// What a start-up run plans besides device and scheduler: the
/// application (absent for a suite's implicit tar stand-in) and the
/// background load (absent for a suite's implicit one).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct StartupCase {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
}

/// One run's record in the results file.
pub type StartupRun = RunRecord<StartupCase, StartupMeasured>;

/// What one run measured.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct StartupMeasured {
    /// Seconds the application takes to start cold (to read its files, or
    /// the replay's first operation until its last task is done).
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_s: f64,
    /// The same, right after, with the readers stopped (the device to
    /// itself): the floor. Absent in results written before it was
    /// measured.
    #[serde(default)]
    pub alone_s: Option<f64>,
    /// The application's files (a block trace: its threads' files) and
    /// the bytes it read.
    pub app_files: u64,
    pub app_bytes: u64,
    /// Bytes the device read during the start-up (application + readers).
    pub window_read_bytes: u64,
    /// The readers' aggregate throughput over their whole run (head start
    /// and start-up), MB/s (10^6 B/s), from fio.
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub readers_mb_s: f64,
    /// The writers' aggregate throughput likewise (absent without writers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writers_mb_s: Option<f64>,
    /// The device's `nr_requests` during the run (absent in results
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nr_requests: Option<u32>,
    /// The loaded start-up's tag samples (every 20 ms): the share with
    /// every tag taken, and the mean taken (absent when not sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<TagSamples>,
}

/// The device's tags as sampled during a loaded start-up (the scheduler's
/// tags, or the driver's under `none`).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub struct TagSamples {
    pub samples: u64,
    /// Samples that found every tag taken: a start-up request arriving
    /// then sleeps for a tag before any scheduler sees it.
    pub full_share: f64,
    /// Tags taken, mean over the samples.
    pub busy_mean: f64,
}

#[derive(Deserialize)]
struct GuestStartup {
    startup_s: f64,
    #[serde(default)]
    alone_s: Option<f64>,
    app_files: u64,
    app_bytes: u64,
    window_read_bytes: u64,
    #[serde(default)]
    nr_requests: Option<u32>,
    #[serde(default)]
    tag_samples: u64,
    #[serde(default)]
    tags_full_samples: u64,
    #[serde(default)]
    tags_busy_sum: u64,
}

/// The writers' MB/s (10^6 B/s) in the background's fio JSON: the group
/// of the job named `writer` (startup.sh starts readers and writers as two
/// groups of one fio process); None when it has no writers.
pub fn writers_mb_s(fio_json: &str) -> Result<Option<f64>> {
    let Some(start) = fio_json.find('{') else {
        bail!("no JSON object in fio output");
    };
    let v: serde_json::Value = serde_json::from_str(&fio_json[start..]).context("fio JSON")?;
    let jobs = v
        .get("jobs")
        .and_then(|j| j.as_array())
        .context("fio JSON has no jobs")?;
    let Some(w) = jobs
        .iter()
        .find(|j| j.get("jobname").and_then(|n| n.as_str()) == Some("writer"))
    else {
        return Ok(None);
    };
    if let Some(e) = w.get("error").and_then(|e| e.as_i64()).filter(|e| *e != 0) {
        bail!("fio reported error {e} for the writers");
    }
    let bw_kib = w
        .get("write")
        .and_then(|d| d.get("bw"))
        .and_then(|x| x.as_f64())
        .context("the writers' group has no write bandwidth")?;
    Ok(Some(bw_kib * 1024.0 / 1e6))
}

/// Parses a run's `<id>.json` (startup.sh) and `<id>.readers.json` (fio:
/// the readers and, with a load's writers, the writers).
pub fn parse_run(startup_json: &str, readers_json: &str) -> Result<StartupMeasured> {
    let g: GuestStartup =
        serde_json::from_str(startup_json.trim()).context("the guest's start-up record")?;
    if !(g.startup_s.is_finite() && g.startup_s > 0.0) {
        bail!("implausible start-up time {}", g.startup_s);
    }
    if let Some(a) = g.alone_s {
        if !(a.is_finite() && a > 0.0) {
            bail!("implausible start-up time with no readers {a}");
        }
    }
    if g.app_files == 0 || g.app_bytes == 0 {
        bail!("the application had no files");
    }
    if g.tags_full_samples > g.tag_samples {
        bail!(
            "{} of {} tag samples with every tag taken",
            g.tags_full_samples,
            g.tag_samples
        );
    }
    let readers = parse_fio(readers_json).context("the readers' fio output")?;
    let writers = writers_mb_s(readers_json).context("the writers' fio output")?;
    Ok(StartupMeasured {
        startup_s: g.startup_s,
        alone_s: g.alone_s,
        app_files: g.app_files,
        app_bytes: g.app_bytes,
        window_read_bytes: g.window_read_bytes,
        readers_mb_s: readers.mb_s,
        writers_mb_s: writers,
        nr_requests: g.nr_requests,
        tags: (g.tag_samples > 0).then(|| TagSamples {
            samples: g.tag_samples,
            full_share: g.tags_full_samples as f64 / g.tag_samples as f64,
            busy_mean: g.tags_busy_sum as f64 / g.tag_samples as f64,
        }),
    })
}

/// Reads the guest's files for one run: the measurement, or why it failed.
pub fn read_run(runs_dir: &Path, id: &str) -> Result<StartupMeasured, String> {
    let base = runs_dir.join(id);
    if let Ok(e) = fs::read_to_string(base.with_extension("err")) {
        return Err(e.trim().to_string());
    }
    let Ok(s) = fs::read_to_string(base.with_extension("json")) else {
        return Err("no result: the guest stopped before this run".into());
    };
    let r = fs::read_to_string(runs_dir.join(format!("{id}.readers.json"))).unwrap_or_default();
    parse_run(&s, &r).map_err(|e| format!("{e:#}"))
}

/// Statistics over the repeats of one (device, application, load, scheduler).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct StartupSummary {
    pub device: String,
    /// The application (absent for the implicit tar stand-in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// The load (absent for the implicit one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
    pub scheduler: String,
    pub runs: usize,
    pub failed: usize,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_mean_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_sd_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_min_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub startup_max_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub readers_mb_s_mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub readers_mb_s_sd: f64,
    /// The writers' MB/s, mean over runs (absent without writers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writers_mb_s_mean: Option<f64>,
    /// Mean and sample standard deviation of the start-up time with no
    /// readers (null when not measured).
    #[serde(default)]
    pub alone_mean_s: Option<f64>,
    #[serde(default)]
    pub alone_sd_s: Option<f64>,
    /// The start-up time under the readers / with none, per run: how much
    /// the readers slow the start-up (null when not measured).
    #[serde(default)]
    pub slowdown: Option<Ratio>,
    /// This scheduler's start-up time / the reference's in the same
    /// repeat, keyed by reference scheduler (`mq-deadline`, `bfq`).
    pub ratio_to: BTreeMap<String, Ratio>,
    /// Mean over the runs of the share of tag samples with every tag
    /// taken, and of the tags taken (null when not sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags_full_share: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags_busy_mean: Option<f64>,
}

/// A cell of the matrix: device, application, load.
pub type Cell = (String, Option<String>, Option<String>);

/// The cells of the runs, in plan order.
pub fn groups(runs: &[StartupRun]) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    for r in runs {
        let g = (
            r.run.device.clone(),
            r.run.case.app.clone(),
            r.run.case.load.clone(),
        );
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

// Long: one pass per cell computing every column of a summary row; the
// columns share the filtered runs.
/// Summaries per cell (plan order) × scheduler (given order).
pub fn summarize(runs: &[StartupRun], schedulers: &[String]) -> Vec<StartupSummary> {
    let mut out = Vec::new();
    for (dev, app, load) in groups(runs) {
        let of = |s: &str| -> Vec<&StartupRun> {
            runs.iter()
                .filter(|r| {
                    r.run.device == dev
                        && r.run.case.app == app
                        && r.run.case.load == load
                        && r.run.scheduler == s
                })
                .collect()
        };
        let by_repeat = |s: &str| -> BTreeMap<u32, f64> {
            of(s)
                .iter()
                .filter_map(|r| r.measured.as_ref().map(|m| (r.run.repeat, m.startup_s)))
                .collect()
        };
        let refs: Vec<(&str, BTreeMap<u32, f64>)> =
            REFERENCES.iter().map(|s| (*s, by_repeat(s))).collect();
        for s in schedulers {
            let rs = of(s);
            if rs.is_empty() {
                continue;
            }
            let ms: Vec<(u32, &StartupMeasured)> = rs
                .iter()
                .filter_map(|r| r.measured.as_ref().map(|m| (r.run.repeat, m)))
                .collect();
            let times: Vec<f64> = ms.iter().map(|(_, m)| m.startup_s).collect();
            let (startup_mean_s, startup_sd_s) = mean_sd(&times);
            let (readers_mb_s_mean, readers_mb_s_sd) =
                mean_sd(&ms.iter().map(|(_, m)| m.readers_mb_s).collect::<Vec<_>>());
            let writers_mb_s_mean = mean_of_some(ms.iter().map(|(_, m)| m.writers_mb_s));
            let alone: Vec<f64> = ms.iter().filter_map(|(_, m)| m.alone_s).collect();
            let (alone_mean_s, alone_sd_s) = match mean_sd_of(&alone) {
                Some((m, sd)) => (Some(m), Some(sd)),
                None => (None, None),
            };
            let slowdowns: Vec<f64> = ms
                .iter()
                .filter_map(|(_, m)| Some(m.startup_s / m.alone_s?))
                .collect();
            let tags_full_share =
                mean_of_some(ms.iter().map(|(_, m)| m.tags.map(|t| t.full_share)));
            let tags_busy_mean = mean_of_some(ms.iter().map(|(_, m)| m.tags.map(|t| t.busy_mean)));
            let mut ratio_to = BTreeMap::new();
            for (name, base) in &refs {
                let ratios = paired_ratios(ms.iter().map(|(rep, m)| (*rep, m.startup_s)), base);
                if let Some(r) = Ratio::of(&ratios) {
                    ratio_to.insert(name.to_string(), r);
                }
            }
            out.push(StartupSummary {
                device: dev.to_string(),
                app: app.clone(),
                load: load.clone(),
                scheduler: s.clone(),
                runs: rs.len(),
                failed: rs.len() - ms.len(),
                startup_mean_s,
                startup_sd_s,
                startup_min_s: times.iter().copied().fold(f64::NAN, f64::min),
                startup_max_s: times.iter().copied().fold(f64::NAN, f64::max),
                readers_mb_s_mean,
                readers_mb_s_sd,
                writers_mb_s_mean,
                alone_mean_s,
                alone_sd_s,
                slowdown: Ratio::of(&slowdowns),
                ratio_to,
                tags_full_share,
                tags_busy_mean,
            });
        }
    }
    out
}

/// The whole results file (schema `ironlift-startup/2`; `/1` files, from
/// before loads and writers, read back as `/2` without them). In its header,
/// `timing.runtime_s` caps one start-up and `timing.ramp_s` is the
/// readers' head start.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct StartupResults {
    #[serde(flatten)]
    pub header: Header,
    pub startup: StartupSpec,
    pub schedulers: Vec<String>,
    pub devices: BTreeMap<String, Device>,
    pub runs: Vec<StartupRun>,
    pub summary: Vec<StartupSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIO: &str =
        r#"{"jobs":[{"error":0,"read":{"iops":200,"bw":12800,"clat_ns":{"mean":1e6}}}]}"#;

    #[test]
    fn run_files_are_parsed_and_checked() {
        let g = r#"{"startup_s": 2.5, "alone_s": 0.5, "app_files": 150, "app_bytes": 3000000, "window_read_bytes": 90000000}"#;
        let m = parse_run(g, FIO).unwrap();
        assert_eq!(m.startup_s, 2.5);
        assert_eq!(m.alone_s, Some(0.5));
        // Results of guests that did not measure it yet.
        let old = r#"{"startup_s": 2.5, "app_files": 150, "app_bytes": 3000000, "window_read_bytes": 90000000}"#;
        assert_eq!(parse_run(old, FIO).unwrap().alone_s, None);
        assert!(parse_run(
            r#"{"startup_s": 2.5, "alone_s": 0, "app_files": 1, "app_bytes": 1, "window_read_bytes": 0}"#,
            FIO
        )
        .is_err());
        assert_eq!(m.app_files, 150);
        assert!((m.readers_mb_s - 12800.0 * 1024.0 / 1e6).abs() < 1e-9);
        assert!(parse_run(g, "").is_err());
        assert!(parse_run(
            r#"{"startup_s": 0, "app_files": 1, "app_bytes": 1, "window_read_bytes": 0}"#,
            FIO
        )
        .is_err());
        assert!(parse_run(r#"{"startup_s": 1}"#, FIO).is_err());
        // No tag samples (none taken, or an older guest): no figure.
        assert_eq!(m.tags, None);
    }

    #[test]
    fn tag_samples_become_shares() {
        let g = r#"{"startup_s": 2.5, "alone_s": 0.5, "app_files": 150, "app_bytes": 3000000,
            "window_read_bytes": 90000000, "nr_requests": 4, "tag_samples": 200,
            "tags_full_samples": 150, "tags_busy_sum": 700}"#;
        let t = parse_run(g, FIO).unwrap().tags.unwrap();
        assert_eq!(t.samples, 200);
        assert!((t.full_share - 0.75).abs() < 1e-12);
        assert!((t.busy_mean - 3.5).abs() < 1e-12);
        let none = g
            .replace(r#""tag_samples": 200"#, r#""tag_samples": 0"#)
            .replace(r#""tags_full_samples": 150"#, r#""tags_full_samples": 0"#)
            .replace(r#""tags_busy_sum": 700"#, r#""tags_busy_sum": 0"#);
        assert_eq!(parse_run(&none, FIO).unwrap().tags, None);
        let more_full = g.replace(r#""tags_full_samples": 150"#, r#""tags_full_samples": 201"#);
        assert!(parse_run(&more_full, FIO).is_err());
    }

    #[test]
    fn writers_are_the_second_group() {
        // fio --group_reporting with readers, then writers as --new_group.
        let two = r#"note: both groups
{"jobs":[{"jobname":"reader","error":0,"read":{"iops":100,"bw":10000,"clat_ns":{"mean":1e6}},"write":{"iops":0,"bw":0}},
 {"jobname":"writer","error":0,"read":{"iops":0,"bw":0},"write":{"iops":30,"bw":3906.25}}]}"#;
        let g = r#"{"startup_s": 2.5, "alone_s": 0.5, "app_files": 3, "app_bytes": 30, "window_read_bytes": 9}"#;
        let m = parse_run(g, two).unwrap();
        assert!((m.readers_mb_s - 10000.0 * 1024.0 / 1e6).abs() < 1e-9);
        assert_eq!(m.writers_mb_s, Some(4.0));
        assert_eq!(parse_run(g, FIO).unwrap().writers_mb_s, None);
        let failed = two.replace(
            r#""jobname":"writer","error":0"#,
            r#""jobname":"writer","error":5"#,
        );
        assert!(parse_run(g, &failed).is_err());
        let no_bw = two.replace(r#""write":{"iops":30,"bw":3906.25}"#, r#""write":{}"#);
        assert!(parse_run(g, &no_bw).is_err());
    }
}
