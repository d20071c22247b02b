//! `cargo xtask qemu-bench` and `cargo xtask report`: the benchmark suites.
//!
//! A suite is a file in configs/suites; its `kind` names the module that
//! plans, reads and reports its runs ([`kind::Kind`]): [`fio`],
//! [`startup`], [`jobs`], [`androbench`] and [`tool`]. [`runner`] runs any
//! of them, under every scheduler entry ([`sched`]: an elevator or a
//! variant with tunables).
//!
//! Another suite of fio workloads is only a suite file. Another kind is a
//! module implementing [`kind::Kind`] (its cases, job.env, how a run's
//! output is read, its results file and report), its guest runner
//! `qemu/guest/<kind>.sh` or another kind's ([`kind::Kind::RUNNER`]; a function for one run, given to lib.sh's
//! `run_plan`), and its line in [`qemu_bench_one`] and [`report`] below.
//! `--suite all` ([`all`]) runs every suite, a boot each, into one folder.

pub mod all;
pub mod androbench;
pub mod fio;
pub mod host;
pub mod jobs;
pub mod kind;
pub mod runner;
pub mod sched;
pub mod startup;
pub mod tool;

use crate::flags::QemuBench;
use crate::util;
use anyhow::{bail, Context, Result};
use kind::{Kind, Suite};
use std::fs;
use std::path::Path;

/// The kinds of suite, by [`Kind::NAME`].
const KINDS: &[&str] = &[
    fio::Fio::NAME,
    startup::Startup::NAME,
    jobs::Jobs::NAME,
    androbench::Androbench::NAME,
    tool::ToolKind::NAME,
];

/// `cargo xtask qemu-bench`: one suite, or every suite (`--suite all`).
pub fn qemu_bench(o: &QemuBench) -> Result<()> {
    if o.s.suite == all::ALL {
        return all::run(o);
    }
    qemu_bench_one(o)
}

/// `cargo xtask qemu-bench --suite NAME`.
pub fn qemu_bench_one(o: &QemuBench) -> Result<()> {
    let suite = Suite::load(&util::repo_root(), &o.s.suite)?;
    match suite.kind.as_str() {
        fio::Fio::NAME => runner::run::<fio::Fio>(o, &suite),
        startup::Startup::NAME => runner::run::<startup::Startup>(o, &suite),
        jobs::Jobs::NAME => runner::run::<jobs::Jobs>(o, &suite),
        androbench::Androbench::NAME => runner::run::<androbench::Androbench>(o, &suite),
        tool::ToolKind::NAME => runner::run::<tool::ToolKind>(o, &suite),
        other => bail!(
            "suite {}: no kind {other:?}; the kinds: {}",
            suite.name,
            KINDS.join(", ")
        ),
    }
}

/// `cargo xtask report`: re-renders report.md and the charts from a
/// results.json (or the folder holding it), by its schema.
pub fn report(path: &Path) -> Result<()> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let schema = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("schema")?.as_str().map(str::to_string))
        .unwrap_or_default();
    let not_valid = format!("is not a valid {schema} file");
    if schema == startup::Startup::SCHEMA || schema == startup::SCHEMA_1 {
        return runner::rerender::<startup::Startup>(&file, &text, &not_valid);
    }
    if schema == jobs::Jobs::SCHEMA {
        return runner::rerender::<jobs::Jobs>(&file, &text, &not_valid);
    }
    if schema == androbench::Androbench::SCHEMA {
        return runner::rerender::<androbench::Androbench>(&file, &text, &not_valid);
    }
    if schema == tool::ToolKind::SCHEMA {
        return runner::rerender::<tool::ToolKind>(&file, &text, &not_valid);
    }
    let not_valid = format!("is not an {} results file", fio::Fio::SCHEMA);
    runner::rerender::<fio::Fio>(&file, &text, &not_valid)
}

#[cfg(test)]
mod tests {
    //! The reports of the canned results files in tests/reports: each
    //! folder holds a results.json and, in expected/, the report.md,
    //! charts and tables (`tables.md`, what `cargo xtask report` prints)
    //! rendered from it.

    use super::kind::Kind;
    use super::{fio::Fio, jobs::Jobs, startup::Startup, tool::ToolKind};
    use std::fs;
    use std::path::PathBuf;

    /// Renders tests/reports/<name> as `cargo xtask report` does into a
    /// scratch folder and compares with expected/.
    fn renders_as_expected<K: Kind>(name: &str) {
        let canned = crate::util::repo_root().join("tests/reports").join(name);
        let scratch: PathBuf =
            std::env::temp_dir().join(format!("xtask-report-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&scratch);
        fs::create_dir_all(&scratch).unwrap();
        let text = fs::read_to_string(canned.join("results.json")).unwrap();
        fs::write(scratch.join("results.json"), &text).unwrap();
        super::report(&scratch).unwrap();
        let mut res: K::Results = serde_json::from_str(&text).unwrap();
        K::reread(&mut res);
        fs::write(
            scratch.join("tables.md"),
            format!("{}\n", K::table_markdown(&res)),
        )
        .unwrap();
        for e in fs::read_dir(canned.join("expected")).unwrap() {
            let e = e.unwrap();
            let want = fs::read_to_string(e.path()).unwrap();
            let got = fs::read_to_string(scratch.join(e.file_name())).unwrap_or_default();
            assert!(
                want == got,
                "{name}: {} differs from {}",
                scratch.join(e.file_name()).display(),
                e.path().display()
            );
        }
        let _ = fs::remove_dir_all(&scratch);
    }

    #[test]
    fn fio_report_renders_as_expected() {
        renders_as_expected::<Fio>("fio-basic");
    }

    #[test]
    fn fio_report_of_a_file_without_the_newer_fields_renders_as_expected() {
        renders_as_expected::<Fio>("fio-basic-legacy");
    }

    #[test]
    fn startup_report_renders_as_expected() {
        renders_as_expected::<Startup>("startup");
    }

    #[test]
    fn startup_matrix_report_renders_as_expected() {
        renders_as_expected::<Startup>("startup-matrix");
    }

    /// A quick jobs-1-8 run on the emulated disk: its devices' `model`
    /// without QEMU's `-device`s, as results.json records them.
    #[test]
    fn jobs_report_of_an_emulated_disk_renders_as_expected() {
        renders_as_expected::<Jobs>("jobs-1-8");
    }

    #[test]
    fn tool_report_renders_as_expected() {
        renders_as_expected::<ToolKind>("bonnie-raid5");
    }

    /// A results file read and written again is the same file: the
    /// schema's fields, in its order, with the same values (serde_json
    /// reads a decimal to within a unit in the last place).
    fn round_trips<K: Kind>(name: &str) {
        let path = crate::util::repo_root()
            .join("tests/reports")
            .join(name)
            .join("results.json");
        let text = fs::read_to_string(path).unwrap();
        let mut res: K::Results = serde_json::from_str(&text).unwrap();
        K::reread(&mut res);
        let again = serde_json::to_string_pretty(&res).unwrap();
        assert_eq!(again.lines().count(), text.lines().count(), "{name}");
        for (i, (a, b)) in again.lines().zip(text.lines()).enumerate() {
            let number = |l: &str| -> Option<(String, f64)> {
                let (k, v) = l.split_once(": ")?;
                Some((k.to_string(), v.trim_end_matches(',').parse().ok()?))
            };
            let same = a == b
                || matches!((number(a), number(b)),
                    (Some((ka, x)), Some((kb, y))) if ka == kb && (x - y).abs() <= 1e-12 * y.abs());
            assert!(same, "{name}: line {}: {a:?} against {b:?}", i + 1);
        }
    }

    #[test]
    fn results_files_round_trip() {
        round_trips::<Fio>("fio-basic");
        round_trips::<Startup>("startup");
        round_trips::<Startup>("startup-matrix");
        round_trips::<Jobs>("jobs-1-8");
        round_trips::<ToolKind>("bonnie-raid5");
    }
}
