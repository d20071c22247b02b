//! The androbench suite's statistics and results file (schema
//! `ironlift-androbench/1`, docs/results-schema.md).

use super::{in_mb_s, AndrobenchCase, AndrobenchSpec};
use crate::devices::Device;
use crate::results::{Header, RunRecord};
use crate::stats::mean_sd;
use crate::suite::fio::Measured;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One run's record in the results file.
pub type AndrobenchRun = RunRecord<AndrobenchCase, Measured>;

/// Statistics over the repeats of one (device, test, scheduler), in
/// Androbench's unit for the test.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct AndrobenchSummary {
    pub device: String,
    pub test: String,
    pub scheduler: String,
    pub runs: usize,
    pub failed: usize,
    /// `MB/s` (10^6 B/s) for the sequential tests, `IOPS` for the random.
    pub unit: String,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub mean: f64,
    #[serde(deserialize_with = "crate::util::nan_if_null")]
    pub sd: f64,
}

/// Androbench's figure for a run of `test`.
pub fn figure(test: &str, m: &Measured) -> f64 {
    if in_mb_s(test) {
        m.mb_s
    } else {
        m.iops
    }
}

/// Summarises runs per device and test (in the plan's order) and
/// scheduler (in the given order).
pub fn summarize(runs: &[AndrobenchRun], schedulers: &[String]) -> Vec<AndrobenchSummary> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in runs {
        let k = (r.run.device.as_str(), r.run.case.test.as_str());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for (dev, test) in keys {
        for s in schedulers {
            let rs: Vec<&AndrobenchRun> = runs
                .iter()
                .filter(|r| r.run.device == dev && r.run.case.test == test && &r.run.scheduler == s)
                .collect();
            if rs.is_empty() {
                continue;
            }
            let xs: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.measured.as_ref().map(|m| figure(test, m)))
                .collect();
            let (mean, sd) = mean_sd(&xs);
            out.push(AndrobenchSummary {
                device: dev.into(),
                test: test.into(),
                scheduler: s.clone(),
                runs: rs.len(),
                failed: rs.len() - xs.len(),
                unit: if in_mb_s(test) { "MB/s" } else { "IOPS" }.into(),
                mean,
                sd,
            });
        }
    }
    out
}

/// The whole results file (schema `ironlift-androbench/1`).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct AndrobenchResults {
    #[serde(flatten)]
    pub header: Header,
    pub schedulers: Vec<String>,
    pub devices: BTreeMap<String, Device>,
    /// The suite's `[androbench]` table, and the file sizes this run used.
    pub androbench: AndrobenchSpec,
    pub read_file_mb: u32,
    pub write_file_mb: u32,
    pub runs: Vec<AndrobenchRun>,
    pub summary: Vec<AndrobenchSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Planned;
    use crate::suite::fio::parse_fio;

    /// fio 3.33's JSON for a one-pass psync run (trimmed to what is read).
    const SEQ_WRITE: &str = r#"{"fio version":"fio-3.33","jobs":[{"jobname":"seq-write","error":0,
"ctx":9,"read":{"io_bytes":0,"bw":0,"iops":0.0,"total_ios":0,"clat_ns":{"mean":0.0}},
"write":{"io_bytes":1048576,"bw":6836,"iops":26.70,"total_ios":4,"clat_ns":{"mean":37400000.0,
"percentile":{"50.000000":37000000,"99.000000":39000000,"99.900000":39000000}}}}]}"#;

    fn run(repeat: u32, s: &str, test: &str, m: Option<Measured>) -> AndrobenchRun {
        RunRecord::new(
            Planned {
                id: String::new(),
                order: 0,
                repeat,
                device: "emmc".into(),
                scheduler: s.into(),
                case: AndrobenchCase {
                    test: test.into(),
                    fio_args: String::new(),
                },
            },
            m.ok_or_else(|| "fio failed".to_string()),
        )
    }

    #[test]
    fn sequential_tests_in_mb_s_random_in_iops() {
        let m = parse_fio(SEQ_WRITE).unwrap();
        assert!((figure("seq-write", &m) - 6836.0 * 1024.0 / 1e6).abs() < 1e-9);
        assert!((figure("rand-write", &m) - 26.70).abs() < 1e-9);
        let iops = |x| {
            Some(Measured {
                iops: x,
                mb_s: x / 100.0,
                ..Default::default()
            })
        };
        let runs = vec![
            run(0, "none", "rand-read", iops(1000.0)),
            run(1, "none", "rand-read", iops(1200.0)),
            run(0, "none", "seq-read", iops(1800.0)),
            run(0, "bfq", "rand-read", None),
        ];
        let s = summarize(&runs, &["none".into(), "bfq".into()]);
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].test.as_str(), s[0].unit.as_str(), s[0].mean),
            ("rand-read", "IOPS", 1100.0)
        );
        assert_eq!((s[1].scheduler.as_str(), s[1].failed), ("bfq", 1));
        assert!(s[1].mean.is_nan());
        assert_eq!((s[2].unit.as_str(), s[2].mean), ("MB/s", 18.0));
    }
}
