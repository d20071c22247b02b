//! What a fio run measured, the statistics over repeats, and the results
//! file (schema `ironlift-bench/1`, docs/results-schema.md).

use crate::devices::Device;
use crate::insns;
use crate::results::{Header, RunRecord};
use crate::stats::{mean_of_some, mean_sd, mean_sd_of, paired_ratios};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A `[[workload]]`: fio's arguments besides the device, time and output.
#[derive(Deserialize, Serialize, Debug, Clone)]
pub struct Workload {
    pub name: String,
    pub fio: String,
}

/// A planned run's workload and its whole fio command line.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct FioCase {
    pub workload: String,
    pub fio_args: String,
}

/// One run's record in the results file.
pub type RunResult = RunRecord<FioCase, Measured>;

/// What one fio run measured.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct Measured {
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub iops: f64,
    /// MB/s (10^6 bytes per second).
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mb_s: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_mean_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p50_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p99_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p999_us: f64,
    /// fio's context switches (`ctx`, all jobs) per 1000 I/Os: how often
    /// the issuing threads slept or were preempted. A scheduler that holds
    /// requests back, or wakes a worker per request, shows here first.
    #[serde(default)]
    pub ctx_per_kio: Option<f64>,
    /// I/Os fio completed, all jobs and directions.
    #[serde(default)]
    pub ios: Option<f64>,
    /// Context switches of the whole guest (`/proc/stat` `ctxt`, every
    /// CPU, workers and idle included) per 1000 I/Os.
    #[serde(default)]
    pub sys_ctx_per_kio: Option<f64>,
    /// Kernel instructions per request (`--count-insns`).
    #[serde(default)]
    pub insns: Option<insns::InsnCount>,
}

fn pct(clat: &serde_json::Value, key: &str) -> f64 {
    clat.get("percentile")
        .and_then(|p| p.get(key))
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN)
        / 1000.0
}

/// Parses fio's JSON output (one group-reported job).
pub fn parse_fio(text: &str) -> Result<Measured> {
    // fio may print notes before the JSON object.
    let start = text.find('{').context("no JSON object in fio output")?;
    let v: serde_json::Value = serde_json::from_str(&text[start..]).context("fio JSON")?;
    let job = v
        .get("jobs")
        .and_then(|j| j.get(0))
        .context("fio JSON has no jobs")?;
    if let Some(e) = job.get("error").and_then(|e| e.as_i64()) {
        if e != 0 {
            bail!("fio reported error {e}");
        }
    }
    let mut m = Measured::default();
    let mut ios = 0.0;
    let mut lat_from: Option<&serde_json::Value> = None;
    let mut best_ios = 0.0;
    for dir in ["read", "write", "trim"] {
        let d = match job.get(dir) {
            Some(d) => d,
            None => continue,
        };
        let iops = d.get("iops").and_then(|x| x.as_f64()).unwrap_or(0.0);
        ios += d.get("total_ios").and_then(|x| x.as_f64()).unwrap_or(0.0);
        let bw_kib = d.get("bw").and_then(|x| x.as_f64()).unwrap_or(0.0);
        m.iops += iops;
        m.mb_s += bw_kib * 1024.0 / 1e6;
        if iops > best_ios {
            best_ios = iops;
            lat_from = d.get("clat_ns");
        }
    }
    if let Some(c) = lat_from {
        m.lat_mean_us = c.get("mean").and_then(|x| x.as_f64()).unwrap_or(f64::NAN) / 1000.0;
        m.lat_p50_us = pct(c, "50.000000");
        m.lat_p99_us = pct(c, "99.000000");
        m.lat_p999_us = pct(c, "99.900000");
    }
    if m.iops <= 0.0 {
        bail!("fio measured no I/O");
    }
    m.ios = Some(ios).filter(|&n| n > 0.0);
    m.ctx_per_kio = per_kio(job.get("ctx").and_then(|x| x.as_f64()), m.ios);
    Ok(m)
}

/// `count` per 1000 of the run's I/Os, if both are known.
fn per_kio(count: Option<f64>, ios: Option<f64>) -> Option<f64> {
    Some(count? / ios? * 1000.0)
}

/// Adds the guest's counters over a run (`runs/<id>.counters`, written by
/// `fio.sh`: one `name change` per line) to what fio measured, per 1000
/// I/Os. Unknown names and unreadable lines are skipped: the counters
/// explain a result, they are not one.
pub fn add_counters(m: &mut Measured, text: &str) {
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(name), Some(Ok(v))) = (it.next(), it.next().map(str::parse::<f64>)) else {
            continue;
        };
        if name == "ctx_switches" {
            m.sys_ctx_per_kio = per_kio(Some(v), m.ios);
        }
    }
}

/// Statistics over the repeats of one (device, workload, scheduler).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Summary {
    pub device: String,
    pub workload: String,
    pub scheduler: String,
    pub runs: usize,
    pub failed: usize,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub iops_mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub iops_sd: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mb_s_mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p50_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p99_us: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p999_us: f64,
    /// Mean over repeats of [`Measured::ctx_per_kio`].
    #[serde(default)]
    pub ctx_per_kio: Option<f64>,
    /// Mean over repeats of [`Measured::sys_ctx_per_kio`].
    #[serde(default)]
    pub sys_ctx_per_kio: Option<f64>,
    /// Mean over repeats of (this scheduler's IOPS / `none`'s IOPS in the
    /// same repeat), and its standard deviation.
    pub ratio_to_none: Option<f64>,
    pub ratio_sd: Option<f64>,
    /// For a Rust scheduler, the C scheduler it reimplements
    /// ([`counterpart`]), and the mean and standard deviation over repeats
    /// of (this scheduler's IOPS / the counterpart's in the same repeat).
    #[serde(default)]
    pub counterpart: Option<String>,
    #[serde(default)]
    pub ratio_to_counterpart: Option<f64>,
    #[serde(default)]
    pub counterpart_sd: Option<f64>,
    /// With `--count-insns`: mean and standard deviation over repeats of
    /// the kernel's instructions per request, and the mean of the
    /// scheduler's own share ([`insns::InsnCount`]).
    #[serde(default)]
    pub kernel_insns: Option<f64>,
    #[serde(default)]
    pub kernel_insns_sd: Option<f64>,
    #[serde(default)]
    pub scheduler_insns: Option<f64>,
}

/// The C scheduler a Rust one reimplements, by name: `rust-X` stands for
/// `mq-X` if that was measured, else for `X` (`rust-deadline` for
/// `mq-deadline`, `rust-bfq` for `bfq`).
pub fn counterpart(scheduler: &str, schedulers: &[String]) -> Option<String> {
    let base = scheduler.strip_prefix("rust-")?;
    [format!("mq-{base}"), base.to_string()]
        .into_iter()
        .find(|c| schedulers.contains(c))
}

/// Mean and standard deviation over repeats of `runs`' IOPS divided by
/// `reference`'s IOPS in the same repeat; `None` without a pair.
fn paired_ratio(runs: &[&RunResult], reference: &[&RunResult]) -> (Option<f64>, Option<f64>) {
    let iops = |rs: &[&RunResult]| -> Vec<(u32, f64)> {
        rs.iter()
            .filter_map(|r| r.measured.as_ref().map(|m| (r.run.repeat, m.iops)))
            .collect()
    };
    let by_repeat: BTreeMap<u32, f64> = iops(reference).into_iter().collect();
    match mean_sd_of(&paired_ratios(iops(runs), &by_repeat)) {
        Some((m, sd)) => (Some(m), Some(sd)),
        None => (None, None),
    }
}

/// Summarises runs, keeping the plan's device/workload order and the
/// given scheduler order.
pub fn summarize(results: &[RunResult], schedulers: &[String]) -> Vec<Summary> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in results {
        let k = (r.run.device.as_str(), r.run.case.workload.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for (dev, wl) in keys {
        let of = |s: &str| -> Vec<&RunResult> {
            results
                .iter()
                .filter(|r| {
                    r.run.device == dev && r.run.case.workload == wl && r.run.scheduler == s
                })
                .collect()
        };
        let none = of("none");
        for s in schedulers {
            let rs = of(s);
            if rs.is_empty() {
                continue;
            }
            let ms: Vec<&Measured> = rs.iter().filter_map(|r| r.measured.as_ref()).collect();
            let col = |f: fn(&Measured) -> f64| -> Vec<f64> { ms.iter().map(|m| f(m)).collect() };
            let mean_of = |f: fn(&Measured) -> Option<f64>| mean_of_some(ms.iter().map(|m| f(m)));
            let (iops_mean, iops_sd) = mean_sd(&col(|m| m.iops));
            let (ratio, ratio_sd) = paired_ratio(&rs, &none);
            let counterpart = counterpart(s, schedulers);
            let per_request: Vec<f64> = ms
                .iter()
                .filter_map(|m| m.insns.as_ref().map(|c| c.kernel_per_request))
                .collect();
            let (kernel_insns, kernel_insns_sd) = match mean_sd_of(&per_request) {
                Some((m, sd)) => (Some(m), Some(sd)),
                None => (None, None),
            };
            let (ratio_to_counterpart, counterpart_sd) = match &counterpart {
                Some(c) => paired_ratio(&rs, &of(c)),
                None => (None, None),
            };
            out.push(Summary {
                device: dev.to_string(),
                workload: wl.to_string(),
                scheduler: s.clone(),
                runs: rs.len(),
                failed: rs.len() - ms.len(),
                iops_mean,
                iops_sd,
                mb_s_mean: mean_sd(&col(|m| m.mb_s)).0,
                lat_p50_us: mean_sd(&col(|m| m.lat_p50_us)).0,
                lat_p99_us: mean_sd(&col(|m| m.lat_p99_us)).0,
                lat_p999_us: mean_sd(&col(|m| m.lat_p999_us)).0,
                ctx_per_kio: mean_of(|m| m.ctx_per_kio),
                sys_ctx_per_kio: mean_of(|m| m.sys_ctx_per_kio),
                ratio_to_none: ratio,
                ratio_sd,
                counterpart,
                ratio_to_counterpart,
                counterpart_sd,
                kernel_insns,
                kernel_insns_sd,
                scheduler_insns: mean_of(|m| m.insns.as_ref().map(|c| c.scheduler_per_request)),
            });
        }
    }
    out
}

/// The whole results file (schema `ironlift-bench/1`).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Results {
    #[serde(flatten)]
    pub header: Header,
    pub schedulers: Vec<String>,
    pub devices: BTreeMap<String, Device>,
    pub workloads: Vec<Workload>,
    pub runs: Vec<RunResult>,
    pub summary: Vec<Summary>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Planned;

    #[test]
    fn fio_json_is_parsed() {
        let text = r#"note: both iodepth >= 1 and synchronous I/O engine are selected
{"jobs":[{"error":0,"ctx":50,"read":{"iops":1000.5,"bw":4002,"total_ios":10000,"clat_ns":{"mean":31000.0,
"percentile":{"50.000000":30000,"99.000000":90000,"99.900000":150000}}},
"write":{"iops":0,"bw":0,"clat_ns":{"mean":0}}}]}"#;
        let m = parse_fio(text).unwrap();
        assert!((m.iops - 1000.5).abs() < 1e-9);
        assert!((m.lat_p99_us - 90.0).abs() < 1e-9);
        assert!((m.mb_s - 4002.0 * 1024.0 / 1e6).abs() < 1e-9);
        assert!((m.ctx_per_kio.unwrap() - 5.0).abs() < 1e-9);
        // Files from before the field: no figure, not zero.
        let old: Measured = serde_json::from_str(
            r#"{"iops":1,"mb_s":1,"lat_mean_us":1,"lat_p50_us":1,"lat_p99_us":1,"lat_p999_us":1}"#,
        )
        .unwrap();
        assert_eq!(old.ctx_per_kio, None);
        // What is not finite is written as null, and read back as NaN.
        let gap = Measured {
            iops: 5.0,
            lat_p99_us: f64::NAN,
            ..Default::default()
        };
        let text = serde_json::to_string(&gap).unwrap();
        assert!(text.contains("\"lat_p99_us\":null"), "{text}");
        let back: Measured = serde_json::from_str(&text).unwrap();
        assert!(back.lat_p99_us.is_nan());
        assert_eq!(back.iops, 5.0);
        assert!(parse_fio(r#"{"jobs":[{"error":5,"read":{"iops":1}}]}"#).is_err());
        assert!(parse_fio("fio: failed").is_err());
    }

    fn run(rep: u32, s: &str, m: Option<Measured>) -> RunResult {
        RunRecord::new(
            Planned {
                id: String::new(),
                order: 0,
                repeat: rep,
                device: "nullb".into(),
                scheduler: s.into(),
                case: FioCase {
                    workload: "randread".into(),
                    fio_args: String::new(),
                },
            },
            m.ok_or_else(|| "failed".to_string()),
        )
    }

    #[test]
    fn guest_counters_are_per_thousand_ios() {
        let mut m =
            parse_fio(r#"{"jobs":[{"ctx":7,"read":{"iops":10,"total_ios":20000}}]}"#).unwrap();
        assert_eq!(m.ios, Some(20000.0));
        add_counters(&mut m, "ctx_switches 500\nnoise\nother 1\n");
        assert_eq!(m.sys_ctx_per_kio, Some(25.0));
        // No counters file, or no line for it: no figure, not zero.
        let mut m = parse_fio(r#"{"jobs":[{"read":{"iops":10,"total_ios":1000}}]}"#).unwrap();
        add_counters(&mut m, "other 10\n");
        assert_eq!(m.sys_ctx_per_kio, None);
        // The summary averages over the runs that have the figure.
        let with = |x: Option<f64>| Measured {
            iops: 1.0,
            sys_ctx_per_kio: x,
            ..Default::default()
        };
        let rs = vec![
            run(0, "none", Some(with(Some(2.0)))),
            run(1, "none", Some(with(Some(4.0)))),
            run(2, "none", Some(with(None))),
            run(0, "bfq", Some(with(None))),
        ];
        let s = summarize(&rs, &["none".to_string(), "bfq".to_string()]);
        assert_eq!(s[0].sys_ctx_per_kio, Some(3.0));
        assert_eq!(s[1].sys_ctx_per_kio, None);
    }

    #[test]
    fn ratios_pair_runs_of_the_same_repeat() {
        let iops = |x| {
            Some(Measured {
                iops: x,
                ..Default::default()
            })
        };
        let rs = vec![
            run(0, "none", iops(100.0)),
            run(0, "bfq", iops(50.0)),
            run(0, "rust-bfq", iops(75.0)),
            run(1, "none", iops(200.0)),
            run(1, "bfq", iops(120.0)),
            run(1, "rust-bfq", iops(120.0)),
            run(1, "rust-deadline", iops(10.0)),
            run(2, "rust-deadline", None),
        ];
        let scheds: Vec<String> = ["none", "bfq", "rust-bfq", "rust-deadline"]
            .map(String::from)
            .to_vec();
        let s = summarize(&rs, &scheds);
        let bfq = s.iter().find(|x| x.scheduler == "bfq").unwrap();
        assert!((bfq.ratio_to_none.unwrap() - 0.55).abs() < 1e-9);
        assert_eq!(bfq.runs, 2);
        assert_eq!(bfq.counterpart, None);
        let rb = s.iter().find(|x| x.scheduler == "rust-bfq").unwrap();
        assert_eq!(rb.counterpart.as_deref(), Some("bfq"));
        assert!((rb.ratio_to_counterpart.unwrap() - 1.25).abs() < 1e-9);
        // Ratios 1.5 and 1.0: sample standard deviation sqrt(0.125).
        assert!((rb.counterpart_sd.unwrap() - 0.125f64.sqrt()).abs() < 1e-9);
        // No C counterpart measured: no ratio.
        let rd = s.iter().find(|x| x.scheduler == "rust-deadline").unwrap();
        assert_eq!(rd.counterpart, None);
        assert_eq!(rd.ratio_to_counterpart, None);
        assert_eq!((rd.runs, rd.failed), (2, 1));
    }

    #[test]
    fn counterparts_prefer_the_mq_name() {
        let s: Vec<String> = ["none", "mq-deadline", "bfq", "rust-deadline", "rust-bfq"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            counterpart("rust-deadline", &s).as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(counterpart("rust-bfq", &s).as_deref(), Some("bfq"));
        assert_eq!(counterpart("bfq", &s), None);
        assert_eq!(counterpart("rust-kyber", &s), None);
    }
}
