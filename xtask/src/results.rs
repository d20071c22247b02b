//! What every suite's results.json has (docs/results-schema.md): the
//! header fields and the record of each planned run.

use serde::{Deserialize, Serialize};

/// A suite's timing (`[full]` and `[quick]` in its file).
#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub repeats: u32,
    pub runtime_s: u32,
    pub ramp_s: u32,
}

/// The fields every results file begins with.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Header {
    pub schema: String,
    pub suite: String,
    pub suite_description: String,
    pub quick: bool,
    pub started: String,
    pub finished: String,
    pub kernel_release: String,
    pub kernel_key: String,
    pub accel: String,
    /// The guest's clocksource (`tsc`, `hpet`, ...), as it reported it.
    #[serde(default = "unknown_clocksource")]
    pub guest_clocksource: String,
    pub host: String,
    pub guest_cpus: u32,
    pub guest_memory_mb: u32,
    /// The suite's timing, with `--quick`, `--repeats` and `--runtime`
    /// applied; what its fields mean is the suite's.
    pub timing: Timing,
    /// Where the kernel came from and how it was built (for kcidb.json);
    /// absent from files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
}

/// The kernel's source, additions and build, and this repository's
/// commit: what a KCIDB checkout and build say (`crate::kcidb`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// `debian:linux-source-6.12=<version>`, `custom:<dir>` (`--kernel-src`)
    /// or `host:<release>` (`host-bench`: the running kernel).
    pub kernel_source: String,
    /// KCIDB's patchset hash of modules/linux/patches as applied: SHA-256
    /// over each patch's SHA-256 (hex, newline-terminated), in order;
    /// empty when none were applied (`--kernel-src`, `host-bench`).
    pub patchset_sha256: String,
    /// This repository's `git describe --always --dirty --abbrev=40`.
    pub ironlift_commit: String,
    /// The kernel config: `base`, `debug` (configs/kernel), or `host`.
    pub kernel_config: String,
    /// The kernel's architecture (`x86_64`).
    pub arch: String,
    /// The compilers the kernel was built with (C, then Rust).
    pub compiler: String,
}

impl Header {
    /// A header for a test's results file of `schema` and `suite`.
    #[cfg(test)]
    pub fn for_test(schema: &str, suite: &str, timing: Timing) -> Header {
        Header {
            schema: schema.into(),
            suite: suite.into(),
            suite_description: "d".into(),
            quick: true,
            started: "s".into(),
            finished: "f".into(),
            kernel_release: "6.12".into(),
            kernel_key: "k".into(),
            accel: "tcg".into(),
            guest_clocksource: "tsc".into(),
            host: "h".into(),
            guest_cpus: 2,
            guest_memory_mb: 1024,
            timing,
            provenance: None,
        }
    }
}

/// The clocksource of a guest that did not say (or of results from before
/// it was recorded).
pub fn unknown_clocksource() -> String {
    "unknown".into()
}

/// One planned run: which device and scheduler, and the suite's own case
/// (for fio, the workload and its arguments).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Planned<C> {
    pub id: String,
    pub order: usize,
    pub repeat: u32,
    pub device: String,
    pub scheduler: String,
    #[serde(flatten)]
    pub case: C,
}

/// One run's record in the results file: the plan's entry, and what the
/// run measured or why it failed.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct RunRecord<C, M> {
    #[serde(flatten)]
    pub run: Planned<C>,
    pub ok: bool,
    pub error: Option<String>,
    pub measured: Option<M>,
}

impl<C, M> RunRecord<C, M> {
    /// The record of `run` from what reading its output gave.
    pub fn new(run: Planned<C>, outcome: Result<M, String>) -> Self {
        match outcome {
            Ok(m) => RunRecord {
                run,
                ok: true,
                error: None,
                measured: Some(m),
            },
            Err(e) => RunRecord {
                run,
                ok: false,
                error: Some(e),
                measured: None,
            },
        }
    }
}
