//! Benchmark tools on a file system (`kind = "tool"`;
//! configs/suites/bonnie-raid5.toml, phoronix.toml): each workload runs a
//! tool (bonnie++, dbench, fs_mark, SQLite, pgbench, fio, a compile, or
//! tools/fsbench's BlogBench-like and compilebench-like generators) on a
//! file system made on the device, or on an md RAID over the device's
//! disks, and [`parse`] reads the tool's own output.
//!
//! The guest side is `qemu/guest/tool.sh`; results.json is schema
//! `ironlift-tool/1` (docs/results-schema.md). A suite may name a seed's
//! figures (configs/seeds/*.toml), which the report sets beside ours.

pub mod parse;
mod report;
mod results;

pub use results::*;

use super::kind::{Kind, Suite};
use crate::devices::{self, Device};
use crate::flags::QemuBench;
use crate::guest::Prepared;
use crate::results::{Header, Planned, Timing};
use crate::util;
use anyhow::{bail, Context, Result};
use parse::Tool;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The tool kind, for one `qemu-bench` invocation.
pub struct ToolKind {
    spec: ToolSpec,
    workloads: Vec<Workload>,
    quick: bool,
    /// job.env's TOOL_MEMBERS: `path=disk,disk` for each device of several disks.
    members: String,
    seed: Option<Seed>,
    /// tools/fsbench built for the host, when a workload runs it.
    fsbench: Option<PathBuf>,
}

/// Characters a workload's arguments may hold: they travel through
/// plan.tsv and word splitting in the guest.
fn check_args(w: &Workload) -> Result<()> {
    for a in [&w.full, &w.quick] {
        if a.trim().is_empty() {
            bail!("workload {}: empty arguments", w.name);
        }
        if let Some(c) = a
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || " =,._:/-".contains(*c)))
        {
            bail!("workload {}: {c:?} in its arguments {a:?}", w.name);
        }
    }
    if w.name.is_empty() || w.name.contains(|c: char| c.is_whitespace()) {
        bail!("workload name {:?}: one word", w.name);
    }
    Ok(())
}

/// The suite's `[tool]` and `[[workload]]`s, checked; only the ones named
/// in `only` (`--workloads`), if given, else under `quick` those of
/// `[tool] quick_workloads`, if given.
fn read_suite(
    suite: &Suite,
    only: Option<&[String]>,
    quick: bool,
) -> Result<(ToolSpec, Vec<Workload>)> {
    let spec: ToolSpec = suite
        .table::<ToolKind, _>("tool")?
        .context("kind = \"tool\" needs a [tool] table")?;
    if !["ext4", "xfs"].contains(&spec.fs.as_str()) {
        bail!("[tool] fs = {:?}: ext4 or xfs", spec.fs);
    }
    if spec.raid_level.is_some() != spec.raid_chunk_kb.is_some() {
        bail!("[tool] raid_level and raid_chunk_kb go together");
    }
    let all: Vec<Workload> = suite
        .table::<ToolKind, _>("workload")?
        .context("kind = \"tool\" needs [[workload]]s")?;
    for w in &all {
        check_args(w)?;
    }
    for (i, w) in all.iter().enumerate() {
        if all[..i].iter().any(|x| x.name == w.name) {
            bail!("two workloads named {}", w.name);
        }
    }
    if let Some(bad) = spec
        .quick_workloads
        .iter()
        .flatten()
        .find(|n| !all.iter().any(|w| &w.name == *n))
    {
        bail!("[tool] quick_workloads: no workload {bad:?}");
    }
    let (only, what) = match (only, &spec.quick_workloads) {
        (Some(only), _) => (only, "--workloads"),
        (None, Some(q)) if quick => (&q[..], "quick_workloads"),
        _ => return Ok((spec, all)),
    };
    if let Some(bad) = only.iter().find(|n| !all.iter().any(|w| &w.name == *n)) {
        bail!(
            "{what}: no workload {bad:?}; the workloads: {}",
            all.iter()
                .map(|w| w.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let only = only.to_vec();
    Ok((
        spec,
        all.into_iter().filter(|w| only.contains(&w.name)).collect(),
    ))
}

/// TOOL_MEMBERS for the devices: each one of several disks with them all;
/// an md RAID needs at least three.
fn members(spec: &ToolSpec, devices: &[(String, Device)]) -> Result<String> {
    let mut out = Vec::new();
    for (name, d) in devices {
        let disks = d.disk_paths();
        if spec.raid_level.is_some() && disks.len() < 3 {
            bail!(
                "device {name}: {} disk(s), too few for md RAID",
                disks.len()
            );
        }
        if disks.len() > 1 {
            out.push(format!("{}={}", d.path, disks.join(",")));
        }
    }
    Ok(out.join(" "))
}

impl Kind for ToolKind {
    const NAME: &'static str = "tool";
    const SCHEMA: &'static str = "ironlift-tool/1";
    const TABLES: &'static [&'static str] = &["tool", "workload"];
    const CASES: Option<&'static str> = Some("workloads");

    type Case = ToolCase;
    type Measured = ToolMeasured;
    type Results = ToolResults;

    fn new(suite: &Suite, o: &QemuBench) -> Result<Self> {
        if o.profile || o.s.count_insns {
            bail!(
                "--profile and --count-insns measure fio runs; suite {} runs tools",
                suite.name
            );
        }
        let (spec, workloads) = read_suite(suite, o.s.workloads.as_deref(), o.s.quick)
            .with_context(|| format!("suite {}", suite.name))?;
        let root = util::repo_root();
        let all = devices::load(&root)?;
        let names = o.s.devices.clone().unwrap_or_else(|| suite.devices.clone());
        let picked = devices::pick(&all, names.iter().map(String::as_str))?;
        let seed = spec
            .seed
            .as_deref()
            .map(|s| Seed::load(&root, s, &workloads))
            .transpose()?;
        Ok(ToolKind {
            members: members(&spec, &picked)?,
            spec,
            workloads,
            quick: o.s.quick,
            seed,
            fsbench: None,
        })
    }

    fn prepared(&mut self, _o: &QemuBench, _p: &Prepared) -> Result<()> {
        if self
            .workloads
            .iter()
            .any(|w| matches!(w.tool, Tool::Blogbench | Tool::Compilebench))
        {
            self.fsbench = Some(util::build_host_tool(&util::repo_root(), "fsbench")?);
        }
        Ok(())
    }

    fn cases(&self, _timing: &Timing) -> Vec<ToolCase> {
        self.workloads
            .iter()
            .map(|w| ToolCase {
                workload: w.name.clone(),
                tool: w.tool,
                args: if self.quick { &w.quick } else { &w.full }.clone(),
            })
            .collect()
    }

    fn tsv(case: &ToolCase) -> String {
        format!("{}\t{} {}", case.workload, case.tool.name(), case.args)
    }

    fn job_env(&self, timing: &Timing) -> String {
        let s = &self.spec;
        let opt = |x: Option<u32>| x.map(|v| v.to_string()).unwrap_or_default();
        format!(
            "TOOL_FS={}\nTOOL_MKFS='{}'\nTOOL_RAID_LEVEL={}\nTOOL_RAID_CHUNK_KB={}\n\
             TOOL_MEMBERS='{}'\nTOOL_RUNTIME_S={}\nTOOL_FSBENCH={}\n",
            s.fs,
            s.mkfs,
            opt(s.raid_level),
            opt(s.raid_chunk_kb),
            self.members,
            timing.runtime_s,
            self.fsbench
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )
    }

    /// The workloads' own estimates per run, 2 s around each run (the
    /// scheduler, dropping caches, removing the run's files: 2.4 s a run
    /// on average in the phoronix suite's quick run under TCG), and 60 s
    /// of setup per device; the timeout allows three times that and 10
    /// minutes.
    fn duration(&self, runs: usize, _timing: &Timing) -> (u64, u64) {
        let per_round: u64 = self
            .workloads
            .iter()
            .map(|w| w.run_s[usize::from(self.quick)] as u64 + 2)
            .sum();
        let rounds = runs as u64 / self.workloads.len().max(1) as u64;
        let estimate = 60 + rounds * per_round;
        (estimate, 600 + 3 * estimate)
    }

    fn read_run(&self, runs_dir: &Path, run: &Planned<ToolCase>) -> Result<ToolMeasured, String> {
        read_run(runs_dir, &run.id, run.case.tool)
    }

    fn results(
        &self,
        header: Header,
        schedulers: Vec<String>,
        devices: BTreeMap<String, Device>,
        runs: Vec<ToolRun>,
    ) -> ToolResults {
        ToolResults {
            header,
            tool: self.spec.clone(),
            workloads: self.workloads.clone(),
            summary: summarize(&runs, &schedulers),
            schedulers,
            devices,
            runs,
            seed: self.seed.clone(),
        }
    }

    fn reread(res: &mut ToolResults) {
        res.summary = summarize(&res.runs, &res.schedulers);
    }

    fn write_report(dir: &Path, res: &ToolResults) -> Result<()> {
        report::write(dir, res)
    }

    fn table_markdown(res: &ToolResults) -> String {
        report::table_markdown(res)
    }

    fn header(res: &ToolResults) -> &Header {
        &res.header
    }

    fn kcidb_runs(res: &ToolResults) -> Vec<crate::kcidb::Run> {
        use crate::kcidb::Metric;
        crate::kcidb::runs_of(
            &res.runs,
            |c| c.workload.clone(),
            |c, m| {
                let mut out = vec![Metric::scaled("elapsed", m.elapsed_s, "s")];
                for metric in c.tool.metrics() {
                    if let Some(&v) = m.figures.get(metric.key) {
                        out.push(Metric::plain(metric.key, v, metric.unit));
                    }
                }
                out
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(name: &str) -> Suite {
        Suite::load(&util::repo_root(), name).unwrap()
    }

    #[test]
    fn a_seed_figure_names_each_of_our_schedulers_once() {
        use std::fs;
        let (_, w) = read_suite(&suite("phoronix"), None, false).unwrap();
        let dir = std::env::temp_dir().join(format!("xtask-tool-seed-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let head = "title = \"t\"\nsource = \"s\"\nnotes = \"n\"\n\
            [schedulers]\nDeadline = \"mq-deadline\"\nmq-deadline = \"mq-deadline\"\nNone = \"none\"\n";
        let both = "[[figure]]\nworkload = \"sqlite-1\"\nmetric = \"seconds\"\n\
            values = { Deadline = 1.0, mq-deadline = 2.0, None = 3.0 }\n";
        fs::write(dir.join("both.toml"), format!("{head}{both}")).unwrap();
        let e = Seed::load(&dir, "both.toml", &w).unwrap_err().to_string();
        assert!(
            e.contains("\"Deadline\" and \"mq-deadline\" are both our \"mq-deadline\""),
            "{e}"
        );
        let apart = "[[figure]]\nworkload = \"sqlite-1\"\nmetric = \"seconds\"\n\
            values = { Deadline = 1.0, None = 3.0 }\n\
            [[figure]]\nworkload = \"sqlite-1\"\nmetric = \"seconds\"\n\
            values = { mq-deadline = 2.0, None = 3.0 }\n";
        fs::write(dir.join("apart.toml"), format!("{head}{apart}")).unwrap();
        assert_eq!(Seed::load(&dir, "apart.toml", &w).unwrap().figure.len(), 2);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_suites_parse_and_their_seed_loads() {
        for name in ["bonnie-raid5", "phoronix"] {
            let s = suite(name);
            assert_eq!(s.kind, ToolKind::NAME);
            let (spec, w) = read_suite(&s, None, false).unwrap();
            assert!(!w.is_empty(), "{name}");
            if let Some(seed) = &spec.seed {
                Seed::load(&util::repo_root(), seed, &w).unwrap();
            }
        }
        let s = suite("bonnie-raid5");
        let (spec, w) = read_suite(&s, None, false).unwrap();
        assert_eq!((spec.raid_level, spec.raid_chunk_kb), (Some(5), Some(1024)));
        assert_eq!(w[0].tool, Tool::Bonnie);
        let all = devices::load(&util::repo_root()).unwrap();
        let picked = devices::pick(&all, s.devices.iter().map(String::as_str)).unwrap();
        let m = members(&spec, &picked).unwrap();
        assert_eq!(m.split(',').count(), 10, "{m}");
        // md RAID over one disk is refused.
        let one = devices::pick(&all, ["hdd-7200"]).unwrap();
        assert!(members(&spec, &one).is_err());
    }

    #[test]
    fn workloads_are_checked_and_chosen() {
        let head = "name = \"x\"\nkind = \"tool\"\ndescription = \"d\"\ndevices = [\"nvme\"]\n\
                    [full]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n\
                    [quick]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n[tool]\nfs = \"ext4\"\n";
        let w = |name: &str, args: &str| {
            format!(
                "[[workload]]\nname = \"{name}\"\ntool = \"dbench\"\nabout = \"a\"\n\
                 full = \"{args}\"\nquick = \"1\"\nrun_s = [10, 5]\n"
            )
        };
        let ok = Suite::parse(&format!("{head}{}{}", w("a", "4"), w("b", "12"))).unwrap();
        let (_, all) = read_suite(&ok, None, false).unwrap();
        assert_eq!(all.len(), 2);
        let (_, one) = read_suite(&ok, Some(&["b".to_string()]), false).unwrap();
        assert_eq!(one[0].name, "b");
        assert!(read_suite(&ok, Some(&["c".to_string()]), false).is_err());
        for bad in [
            format!("{head}{}{}", w("a", "4"), w("a", "5")),
            format!("{head}{}", w("a", "4; rm -rf /")),
            format!("{head}{}", w("a", "")),
            format!("{head}{}", w("a", "4").replace("dbench", "iozone")),
            format!("{}{}", head.replace("ext4", "btrfs"), w("a", "4")),
            head.to_string(),
        ] {
            let parsed = Suite::parse(&bad);
            assert!(
                parsed.is_err() || read_suite(&parsed.unwrap(), None, false).is_err(),
                "{bad}"
            );
        }
    }

    /// `--quick` runs `[tool] quick_workloads`, `--workloads` replaces
    /// them, and a name that is no workload is refused.
    #[test]
    fn quick_runs_the_quick_workloads() {
        let s = suite("phoronix");
        let (spec, all) = read_suite(&s, None, false).unwrap();
        let q = spec.quick_workloads.clone().unwrap();
        assert!(!q.is_empty() && q.len() < all.len());
        let (_, quick) = read_suite(&s, None, true).unwrap();
        let names: Vec<&String> = quick.iter().map(|w| &w.name).collect();
        assert_eq!(names, q.iter().collect::<Vec<_>>());
        let only = ["sqlite-8".to_string()];
        let (_, picked) = read_suite(&s, Some(&only), true).unwrap();
        assert_eq!(picked.len(), 1);
        assert_eq!(picked[0].name, "sqlite-8");
        let mut bad = s.clone();
        bad.tables["tool"].as_table_mut().unwrap().insert(
            "quick_workloads".into(),
            toml::Value::Array(vec!["nope".into()]),
        );
        assert!(read_suite(&bad, None, false).is_err());
    }

    #[test]
    fn cases_take_the_quick_or_full_arguments() {
        let s = suite("phoronix");
        let (spec, workloads) = read_suite(&s, None, false).unwrap();
        let mut k = ToolKind {
            spec,
            workloads,
            quick: true,
            members: String::new(),
            seed: None,
            fsbench: Some("/x/fsbench".into()),
        };
        let quick = k.cases(&s.quick);
        k.quick = false;
        let full = k.cases(&s.full);
        assert_eq!(quick.len(), full.len());
        assert!(quick.iter().zip(&full).any(|(q, f)| q.args != f.args));
        let dbench = full.iter().find(|c| c.tool == Tool::Dbench).unwrap();
        assert!(ToolKind::tsv(dbench).starts_with(&format!("{}\tdbench ", dbench.workload)));
        let env = k.job_env(&s.full);
        assert!(env.contains("TOOL_FS=ext4\n") && env.contains("TOOL_FSBENCH=/x/fsbench\n"));
        assert!(env.contains(&format!("TOOL_RUNTIME_S={}\n", s.full.runtime_s)));
        let (est, timeout) = k.duration(k.workloads.len() * 2, &s.full);
        assert!(est > 60 && timeout == 600 + 3 * est);
    }
}
