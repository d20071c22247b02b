//! The jobs suite's statistics and results file (schema `ironlift-jobs/1`,
//! docs/results-schema.md).

use super::{JobsCase, JobsSpec};
use crate::devices::Device;
use crate::results::{Header, RunRecord};
use crate::stats::{mean_sd, mean_sd_of, paired_ratios};
use crate::suite::fio::Measured;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One run's record in the results file.
pub type JobsRun = RunRecord<JobsCase, Measured>;

/// Statistics over the repeats of one (device, pattern, job count,
/// scheduler).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct JobsSummary {
    pub device: String,
    pub rw: String,
    pub jobs: u32,
    pub scheduler: String,
    pub runs: usize,
    pub failed: usize,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mb_s_mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mb_s_sd: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub iops_mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub iops_sd: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub lat_p99_us: f64,
    /// Mean and sd over repeats of this throughput over the same
    /// scheduler's with the suite's fewest jobs (1) in the same repeat:
    /// the seed's "BFQ at 2 jobs = 0.60 × 1 job".
    pub vs_fewest: Option<f64>,
    pub vs_fewest_sd: Option<f64>,
}

/// Summarises runs per device, pattern, job count (in the plan's order)
/// and scheduler (in the given order).
pub fn summarize(runs: &[JobsRun], schedulers: &[String]) -> Vec<JobsSummary> {
    let mut keys: Vec<(&str, &str, u32)> = Vec::new();
    for r in runs {
        let k = (
            r.run.device.as_str(),
            r.run.case.rw.as_str(),
            r.run.case.jobs,
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let of = |dev: &str, rw: &str, jobs: u32, s: &str| -> Vec<&JobsRun> {
        runs.iter()
            .filter(|r| {
                r.run.device == dev
                    && r.run.case.rw == rw
                    && r.run.case.jobs == jobs
                    && r.run.scheduler == s
            })
            .collect()
    };
    let by_repeat = |rs: &[&JobsRun]| -> Vec<(u32, f64)> {
        rs.iter()
            .filter_map(|r| r.measured.as_ref().map(|m| (r.run.repeat, m.mb_s)))
            .collect()
    };
    let mut out = Vec::new();
    for &(dev, rw, jobs) in &keys {
        let fewest = keys
            .iter()
            .filter(|k| k.0 == dev && k.1 == rw)
            .map(|k| k.2)
            .min()
            .unwrap_or(jobs);
        for s in schedulers {
            let rs = of(dev, rw, jobs, s);
            if rs.is_empty() {
                continue;
            }
            let ms: Vec<&Measured> = rs.iter().filter_map(|r| r.measured.as_ref()).collect();
            let col = |f: fn(&Measured) -> f64| -> Vec<f64> { ms.iter().map(|m| f(m)).collect() };
            let (mb_s_mean, mb_s_sd) = mean_sd(&col(|m| m.mb_s));
            let (iops_mean, iops_sd) = mean_sd(&col(|m| m.iops));
            let reference: BTreeMap<u32, f64> =
                by_repeat(&of(dev, rw, fewest, s)).into_iter().collect();
            let ratios = paired_ratios(by_repeat(&rs), &reference);
            let (vs_fewest, vs_fewest_sd) = match mean_sd_of(&ratios) {
                Some((m, sd)) => (Some(m), Some(sd)),
                None => (None, None),
            };
            out.push(JobsSummary {
                device: dev.to_string(),
                rw: rw.to_string(),
                jobs,
                scheduler: s.clone(),
                runs: rs.len(),
                failed: rs.len() - ms.len(),
                mb_s_mean,
                mb_s_sd,
                iops_mean,
                iops_sd,
                lat_p99_us: mean_sd(&col(|m| m.lat_p99_us)).0,
                vs_fewest,
                vs_fewest_sd,
            });
        }
    }
    out
}

/// The whole results file (schema `ironlift-jobs/1`).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct JobsResults {
    #[serde(flatten)]
    pub header: Header,
    pub schedulers: Vec<String>,
    pub devices: BTreeMap<String, Device>,
    /// The suite's `[jobs]` table.
    pub jobs: JobsSpec,
    pub runs: Vec<JobsRun>,
    pub summary: Vec<JobsSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Planned;
    use crate::suite::fio::parse_fio;

    /// fio's JSON of a group-reported run (trimmed to what is read).
    fn fio_json(bw_kib: f64, iops: f64) -> String {
        format!(
            r#"{{"fio version":"fio-3.33","jobs":[{{"jobname":"read-2","groupid":0,"error":0,
"ctx":1200,"read":{{"io_bytes":1,"bw":{bw_kib},"iops":{iops},"total_ios":2000,
"clat_ns":{{"mean":450000.0,"percentile":{{"50.000000":440000,"99.000000":1200000,"99.900000":4000000}}}}}},
"write":{{"io_bytes":0,"bw":0,"iops":0.0,"total_ios":0,"clat_ns":{{"mean":0.0}}}}}}]}}"#
        )
    }

    fn run(repeat: u32, s: &str, jobs: u32, outcome: Result<Measured, String>) -> JobsRun {
        RunRecord::new(
            Planned {
                id: String::new(),
                order: 0,
                repeat,
                device: "hdd-7200".into(),
                scheduler: s.into(),
                case: JobsCase {
                    rw: "read".into(),
                    jobs,
                    fio_args: String::new(),
                },
            },
            outcome,
        )
    }

    #[test]
    fn a_group_reported_run_is_read_and_summarised_against_one_job() {
        let m = |bw| parse_fio(&fio_json(bw, bw / 4.0)).unwrap();
        let one = m(100_000.0);
        assert!((one.mb_s - 102.4).abs() < 1e-9);
        assert!((one.lat_p99_us - 1200.0).abs() < 1e-9);
        let runs = vec![
            run(0, "bfq", 1, Ok(m(100_000.0))),
            run(0, "bfq", 2, Ok(m(60_000.0))),
            run(1, "bfq", 1, Ok(m(200_000.0))),
            run(1, "bfq", 2, Ok(m(100_000.0))),
            run(0, "bfq:low_latency=0", 1, Ok(m(100_000.0))),
            run(
                0,
                "bfq:low_latency=0",
                2,
                Err("bfq: setting tunable low_latency=0 failed".into()),
            ),
        ];
        let s = summarize(&runs, &["bfq".to_string(), "bfq:low_latency=0".to_string()]);
        assert_eq!(s.len(), 4);
        let two = s
            .iter()
            .find(|x| x.scheduler == "bfq" && x.jobs == 2)
            .unwrap();
        // Ratios 0.6 and 0.5, each against its own repeat's one job.
        assert!((two.vs_fewest.unwrap() - 0.55).abs() < 1e-9);
        assert!((two.mb_s_mean - 81.92).abs() < 1e-9);
        let var = s
            .iter()
            .find(|x| x.scheduler == "bfq:low_latency=0" && x.jobs == 2)
            .unwrap();
        assert_eq!((var.runs, var.failed, var.vs_fewest), (1, 1, None));
        assert!(var.mb_s_mean.is_nan());
        let first = &s[0];
        assert_eq!((first.jobs, first.vs_fewest), (1, Some(1.0)));
    }
}
