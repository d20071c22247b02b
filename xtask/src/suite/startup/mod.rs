//! The start-up latency benchmark (`kind = "startup"`;
//! configs/suites/startup.toml, startup-replay.toml): how long an
//! application takes to start cold while greedy sequential readers keep
//! the device busy — the case BFQ's `low_latency` is for (the S suite's
//! comm_startup_lat, Phoronix's "Application Start-up Time").
//!
//! An application is either a synthetic stand-in read whole with tar, or
//! a recorded start-up replayed by `tools/startup-replay` (built here for
//! the host, whose root the guest runs on). Each application is a case of
//! the plan, with its own table and floor in the report.
//!
//! A suite may also name background loads (`[[startup.load]]`: sequential
//! or random readers, with or without writers); each application then runs
//! under each load, a cell of the matrix (configs/suites/startup-matrix.toml),
//! and the report puts the seed's figures (configs/seeds/) beside ours.
//!
//! The guest side is `qemu/guest/startup.sh`; results.json is schema
//! `ironlift-startup/2` (docs/results-schema.md); `/1` files read back.

mod report;
mod results;
mod seeds;
mod spec;

pub use results::*;
pub use spec::StartupSpec;

use super::kind::{Kind, Suite};
use crate::devices::Device;
use crate::flags::QemuBench;
use crate::guest::Prepared;
use crate::results::{Header, Planned, Timing};
use crate::util;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The suite's `[startup]` table, checked.
fn spec_of(suite: &Suite) -> Result<StartupSpec> {
    let spec: StartupSpec = suite
        .table::<Startup, _>("startup")?
        .context("kind = \"startup\" needs a [startup] table")?;
    spec.validate(&util::repo_root())?;
    Ok(spec)
}

/// The startup kind, for one `qemu-bench` invocation.
pub struct Startup {
    spec: StartupSpec,
    /// tools/startup-replay built for the host (when an application replays).
    replayer: Option<PathBuf>,
}

/// The suite narrowed to the applications and loads named in
/// `--workloads` (either kind of name; a kind not named keeps all).
fn only(spec: &StartupSpec, only: &[String]) -> Result<StartupSpec> {
    let apps: Vec<String> = spec.app.iter().map(|a| a.name.clone()).collect();
    let loads: Vec<String> = spec.load.iter().map(|l| l.name.clone()).collect();
    if let Some(bad) = only
        .iter()
        .find(|w| !apps.contains(w) && !loads.contains(w))
    {
        let list = |xs: &[String]| {
            if xs.is_empty() {
                "none named".to_string()
            } else {
                xs.join(", ")
            }
        };
        bail!(
            "no application or load {bad:?}; the applications: {}; the loads: {}",
            list(&apps),
            list(&loads)
        );
    }
    let mut out = spec.clone();
    if only.iter().any(|w| apps.contains(w)) {
        out.app.retain(|a| only.contains(&a.name));
    }
    if only.iter().any(|w| loads.contains(w)) {
        out.load.retain(|l| only.contains(&l.name));
    }
    Ok(out)
}

/// The suite narrowed to its `[startup.quick]` applications and loads.
fn quick(spec: &StartupSpec) -> StartupSpec {
    let mut out = spec.clone();
    if let Some(q) = &spec.quick {
        out.app.retain(|a| q.apps.contains(&a.name));
        if !q.loads.is_empty() {
            out.load.retain(|l| q.loads.contains(&l.name));
        }
    }
    out
}

/// job.env's loads: `STARTUP_LOADS` (names, `-` for the implicit one)
/// and, for the i-th, `STARTUP_LOAD_<i>_READERS`, `_READER_FIO`,
/// `_WRITERS`, `_WRITER_FIO`, `_SYNC_S`.
fn loads_env(spec: &StartupSpec) -> String {
    let loads = spec.loads();
    let names: Vec<&str> = loads.iter().map(|l| l.name.as_str()).collect();
    let mut env = format!("STARTUP_LOADS='{}'\n", names.join(" "));
    for (i, l) in loads.iter().enumerate() {
        env.push_str(&format!(
            "STARTUP_LOAD_{i}_READERS={}\nSTARTUP_LOAD_{i}_READER_FIO='{}'\n\
             STARTUP_LOAD_{i}_WRITERS={}\nSTARTUP_LOAD_{i}_WRITER_FIO='{}'\nSTARTUP_LOAD_{i}_SYNC_S={}\n",
            l.readers,
            l.reader_fio,
            l.writers,
            l.writer_fio.as_deref().unwrap_or(""),
            l.sync_s
        ));
    }
    env
}

/// job.env's `STARTUP_APPS`: `name=tar` or `name=replay:/abs/trace`, space-separated.
fn apps_env(spec: &StartupSpec, root: &Path) -> String {
    spec.apps()
        .iter()
        .map(|a| match &a.trace {
            Some(t) => format!("{}={}:{}", a.name, a.kind, root.join(t).display()),
            None => format!("{}={}", a.name, a.kind),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Kind for Startup {
    const NAME: &'static str = "startup";
    const SCHEMA: &'static str = "ironlift-startup/2";
    const TABLES: &'static [&'static str] = &["startup"];
    const CASES: Option<&'static str> = Some("applications");
    const ROTATE_BY_DEVICE: bool = true;

    type Case = StartupCase;
    type Measured = StartupMeasured;
    type Results = StartupResults;

    fn new(suite: &Suite, o: &QemuBench) -> Result<Self> {
        if o.profile || o.s.count_insns {
            bail!(
                "--profile and --count-insns measure fio runs; suite {} is a start-up suite",
                suite.name
            );
        }
        let mut spec = spec_of(suite)?;
        // --workloads names the cells itself, --quick or not.
        if let Some(names) = &o.s.workloads {
            spec = only(&spec, names)
                .with_context(|| format!("--workloads of suite {}", suite.name))?;
        } else if o.s.quick {
            spec = quick(&spec);
        }
        Ok(Startup {
            spec,
            replayer: None,
        })
    }

    fn prepared(&mut self, _o: &QemuBench, _p: &Prepared) -> Result<()> {
        if self.spec.replays() {
            self.replayer = Some(util::build_host_tool(&util::repo_root(), "startup-replay")?);
        }
        Ok(())
    }

    fn check_schedulers(&self, schedulers: &[String], elevators: &[String]) -> Result<()> {
        for need in REFERENCES
            .iter()
            .map(|s| s.to_string())
            .chain(elevators.iter().cloned())
        {
            if !schedulers.contains(&need) {
                bail!(
                    "--schedulers must include {need}: start-up times are compared with \
                     mq-deadline and bfq, and every rust-* elevator built is measured"
                );
            }
        }
        Ok(())
    }

    /// One case per application and load (applications outer); the
    /// implicit tar stand-in and the implicit load keep the unnamed cases
    /// of suites without `[[startup.app]]` or `[[startup.load]]`.
    fn cases(&self, _timing: &Timing) -> Vec<StartupCase> {
        let apps: Vec<Option<String>> = if self.spec.app.is_empty() {
            vec![None]
        } else {
            self.spec.app.iter().map(|a| Some(a.name.clone())).collect()
        };
        let loads: Vec<Option<String>> = if self.spec.load.is_empty() {
            vec![None]
        } else {
            self.spec
                .load
                .iter()
                .map(|l| Some(l.name.clone()))
                .collect()
        };
        apps.iter()
            .flat_map(|app| {
                loads.iter().map(|load| StartupCase {
                    app: app.clone(),
                    load: load.clone(),
                })
            })
            .collect()
    }

    /// `startup`, the application, the load (`-`: the implicit one).
    fn tsv(case: &StartupCase) -> String {
        format!(
            "startup\t{}\t{}",
            case.app.as_deref().unwrap_or("tar"),
            case.load.as_deref().unwrap_or("-")
        )
    }

    /// job.env lines for startup.sh: the `[startup]` table (the tar
    /// stand-in's settings only when it has them), the applications, the
    /// loads, the replayer, the head start (`ramp_s`) and the cap on one
    /// start-up (`runtime_s`).
    fn job_env(&self, timing: &Timing) -> String {
        let sp = &self.spec;
        let mut env = String::new();
        if let Some((files, dirs, lo, hi)) = sp.tar() {
            env.push_str(&format!(
                "STARTUP_FILES={files}\nSTARTUP_DIRS={dirs}\nSTARTUP_FILE_KB_MIN={lo}\n\
                 STARTUP_FILE_KB_MAX={hi}\n"
            ));
        }
        env.push_str(&format!(
            "STARTUP_APPS='{}'\n",
            apps_env(sp, &util::repo_root())
        ));
        if let Some(r) = &self.replayer {
            env.push_str(&format!("STARTUP_REPLAY={}\n", r.display()));
        }
        env.push_str(&loads_env(sp));
        env + &format!(
            "STARTUP_READER_MB={}\nSTARTUP_NR_REQUESTS={}\nSTARTUP_RAMP_S={}\nSTARTUP_CAP_S={}\n",
            sp.reader_file_mb, sp.nr_requests, timing.ramp_s, timing.runtime_s
        )
    }

    /// Setup (mkfs, files) plus, per run, fio's start, the head start and a
    /// start-up of some seconds; the timeout allows every run its cap.
    fn duration(&self, runs: usize, timing: &Timing) -> (u64, u64) {
        let runs = runs as u64;
        let estimate = 120 + runs * (timing.ramp_s as u64 + 25);
        let timeout = 600 + runs * (timing.runtime_s as u64 + timing.ramp_s as u64 + 60);
        (estimate, timeout)
    }

    fn read_run(
        &self,
        runs_dir: &Path,
        run: &Planned<StartupCase>,
    ) -> Result<StartupMeasured, String> {
        read_run(runs_dir, &run.id)
    }

    fn results(
        &self,
        header: Header,
        schedulers: Vec<String>,
        devices: BTreeMap<String, Device>,
        runs: Vec<StartupRun>,
    ) -> StartupResults {
        StartupResults {
            header,
            startup: self.spec.clone(),
            summary: summarize(&runs, &schedulers),
            schedulers,
            devices,
            runs,
        }
    }

    fn write_report(dir: &Path, res: &StartupResults) -> Result<()> {
        report::write(dir, res)
    }

    fn table_markdown(res: &StartupResults) -> String {
        report::table_markdown(res)
    }

    fn header(res: &StartupResults) -> &Header {
        &res.header
    }

    fn kcidb_runs(res: &StartupResults) -> Vec<crate::kcidb::Run> {
        use crate::kcidb::Metric;
        crate::kcidb::runs_of(
            &res.runs,
            |c| {
                let app = c.app.clone().unwrap_or_else(|| "tar".into());
                match &c.load {
                    Some(load) => format!("{app}.{load}"),
                    None => app,
                }
            },
            |_, m| {
                let mut out = vec![
                    Metric::scaled("startup_time", m.startup_s, "s"),
                    Metric::scaled("readers_bandwidth", m.readers_mb_s * 1e6, "B/s"),
                ];
                if let Some(a) = m.alone_s {
                    out.push(Metric::scaled("alone_time", a, "s"));
                }
                out
            },
        )
    }
}

/// A results header for the kind's tests.
#[cfg(test)]
fn test_header(suite: &str, timing: Timing) -> Header {
    Header {
        schema: Startup::SCHEMA.into(),
        suite: suite.into(),
        suite_description: String::new(),
        quick: false,
        started: String::new(),
        finished: String::new(),
        kernel_release: String::new(),
        kernel_key: String::new(),
        accel: "tcg".into(),
        guest_clocksource: String::new(),
        host: String::new(),
        guest_cpus: 2,
        guest_memory_mb: 2048,
        timing,
        provenance: None,
    }
}

/// A run's measurement for the kind's tests: its times loaded and alone.
#[cfg(test)]
fn test_measured(startup_s: f64, alone_s: f64) -> StartupMeasured {
    StartupMeasured {
        startup_s,
        alone_s: Some(alone_s),
        app_files: 1,
        app_bytes: 1,
        window_read_bytes: 0,
        readers_mb_s: 10.0,
        writers_mb_s: None,
        nr_requests: None,
        tags: None,
    }
}

#[cfg(test)]
mod tests {
    use super::report::{chart_svg, floor_vs_mq_deadline, table_markdown};
    use super::*;
    use crate::results::RunRecord;
    use crate::suite::kind::plan;

    fn names(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|x| x.to_string()).collect()
    }

    fn suite() -> Suite {
        Suite::load(&crate::util::repo_root(), "startup").unwrap()
    }

    #[test]
    fn suite_file_parses_and_validates() {
        let s = suite();
        assert_eq!(s.kind, Startup::NAME);
        let sp = spec_of(&s).unwrap();
        let env = Startup {
            spec: sp.clone(),
            replayer: None,
        }
        .job_env(&s.full);
        assert!(env.starts_with("STARTUP_FILES="));
        assert!(env.contains(&format!("STARTUP_CAP_S={}\n", s.full.runtime_s)));
        assert!(env.contains(&format!("STARTUP_RAMP_S={}\n", s.full.ramp_s)));
        assert!(env.contains(&format!(
            "STARTUP_LOADS='-'\nSTARTUP_LOAD_0_READERS=4\nSTARTUP_LOAD_0_READER_FIO='{}'\n\
             STARTUP_LOAD_0_WRITERS=0\nSTARTUP_LOAD_0_WRITER_FIO=''\nSTARTUP_LOAD_0_SYNC_S=0\n",
            sp.reader_fio.as_deref().unwrap()
        )));
        let mut bad = sp.clone();
        bad.app_file_kb_min = bad.app_file_kb_max.map(|k| k + 1);
        assert!(bad.validate(&crate::util::repo_root()).is_err());
        bad = sp.clone();
        bad.reader_fio = Some("--name='x'".into());
        assert!(bad.validate(&crate::util::repo_root()).is_err());
        bad = sp;
        bad.reader_fio = None;
        assert!(bad.validate(&crate::util::repo_root()).is_err());
    }

    #[test]
    fn a_startup_suite_needs_its_table_and_no_other() {
        let head = "name = \"x\"\nkind = \"startup\"\ndescription = \"d\"\ndevices = [\"nullb\"]\n\
                    [full]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n\
                    [quick]\nrepeats = 1\nruntime_s = 1\nramp_s = 0\n";
        let st = "[startup]\napp_files = 2\napp_dirs = 1\napp_file_kb_min = 4\n\
                  app_file_kb_max = 8\nreaders = 1\nreader_file_mb = 1\n\
                  reader_fio = \"--rw=read\"\nnr_requests = 8\n";
        let wl = "[[workload]]\nname = \"r\"\nfio = \"--rw=read\"\n";
        let s = Suite::parse(&format!("{head}{st}")).unwrap();
        assert_eq!(s.kind, Startup::NAME);
        assert_eq!(spec_of(&s).unwrap().app_files, Some(2));
        assert!(spec_of(&Suite::parse(head).unwrap()).is_err());
        assert!(spec_of(&Suite::parse(&format!("{head}{st}{wl}")).unwrap()).is_err());
        let extra = st.replace("nr_requests = 8\n", "nr_requests = 8\nmore = 1\n");
        assert!(spec_of(&Suite::parse(&format!("{head}{extra}")).unwrap()).is_err());
    }

    #[test]
    fn plan_rotates_and_covers_every_scheduler_each_repeat() {
        let sch = names(&["mq-deadline", "kyber", "bfq"]);
        let p = plan(
            &names(&["nullb-slow"]),
            &[StartupCase {
                app: None,
                load: None,
            }],
            &sch,
            3,
            true,
        );
        assert_eq!(p.len(), 9);
        for (r, block) in p.chunks(3).enumerate() {
            let mut got: Vec<&str> = block.iter().map(|x| x.scheduler.as_str()).collect();
            assert!(block.iter().all(|x| x.repeat == r as u32));
            got.sort();
            assert_eq!(got, ["bfq", "kyber", "mq-deadline"]);
        }
        assert_ne!(p[0].scheduler, p[3].scheduler);
        assert_eq!(p[4].id, "0004");
        // A second device starts one further along the rotation.
        let p = plan(
            &names(&["a", "b"]),
            &[StartupCase {
                app: None,
                load: None,
            }],
            &sch,
            1,
            true,
        );
        assert_eq!(
            (p[0].scheduler.as_str(), p[3].scheduler.as_str()),
            ("mq-deadline", "kyber")
        );
        assert_eq!(
            Startup::tsv(&StartupCase {
                app: None,
                load: None
            }),
            "startup\ttar\t-"
        );
    }

    fn run(rep: u32, s: &str, t: Option<f64>) -> StartupRun {
        RunRecord::new(
            Planned {
                id: String::new(),
                order: 0,
                repeat: rep,
                device: "nullb-slow".into(),
                scheduler: s.into(),
                case: StartupCase {
                    app: None,
                    load: None,
                },
            },
            t.map(|t| test_measured(t, t / 4.0))
                .ok_or_else(|| "x".to_string()),
        )
    }

    #[test]
    fn ratios_pair_repeats_and_skip_failed_references() {
        let runs = vec![
            run(0, "mq-deadline", Some(10.0)),
            run(0, "bfq", Some(2.0)),
            run(0, "kyber", Some(8.0)),
            run(1, "mq-deadline", Some(20.0)),
            run(1, "bfq", Some(3.0)),
            run(1, "kyber", Some(10.0)),
            run(2, "mq-deadline", None),
            run(2, "bfq", Some(4.0)),
            run(2, "kyber", Some(9.0)),
        ];
        let s = summarize(&runs, &names(&["mq-deadline", "kyber", "bfq"]));
        assert_eq!(
            s.iter().map(|x| x.scheduler.as_str()).collect::<Vec<_>>(),
            ["mq-deadline", "kyber", "bfq"]
        );
        let md = &s[0];
        assert_eq!((md.runs, md.failed), (3, 1));
        assert!((md.startup_mean_s - 15.0).abs() < 1e-12);
        let r = &md.ratio_to["mq-deadline"];
        assert_eq!((r.mean, r.sd, r.n), (1.0, 0.0, 2));
        let bfq = &s[2];
        // (2/10 + 3/20) / 2; repeat 2 has no mq-deadline to pair with.
        let r = &bfq.ratio_to["mq-deadline"];
        assert_eq!(r.n, 2);
        assert!((r.mean - 0.175).abs() < 1e-12);
        let k = &s[1].ratio_to["bfq"];
        assert_eq!(k.n, 3);
        assert!((k.mean - (4.0 + 10.0 / 3.0 + 2.25) / 3.0).abs() < 1e-12);
        assert_eq!((bfq.startup_min_s, bfq.startup_max_s), (2.0, 4.0));
        let t = table_markdown(&StartupResults {
            header: test_header(
                "startup",
                Timing {
                    repeats: 3,
                    runtime_s: 60,
                    ramp_s: 1,
                },
            ),
            startup: spec_of(&suite()).unwrap(),
            schedulers: names(&["mq-deadline", "kyber", "bfq"]),
            devices: BTreeMap::new(),
            runs: runs.clone(),
            summary: s.clone(),
        });
        assert!(t.contains("| mq-deadline | 15.00 ± 7.07 | 10.00–20.00 | 1.00 ± 0.00 |"));
        // Every run's floor was a quarter of its loaded time.
        assert!(t.contains("| 3.75 ± 1.77 | 4.00 ± 0.00 |"), "{t}");
        assert_eq!(md.slowdown.as_ref().map(|r| r.n), Some(2));
        assert!(t.contains("| 3 (1 failed) |"));
        // Alone: the mean over the 8 measured runs (each a quarter of its
        // loaded time), 16.5 / 8 s, against mq-deadline's 15 s.
        assert!(
            t.contains("Floor: the start-up alone takes 2.06 s, 0.14 × mq-deadline's 15.00 s"),
            "{t}"
        );
        let (x, alone, mq) = floor_vs_mq_deadline(&s.iter().collect::<Vec<_>>()).unwrap();
        assert!(
            (alone - 16.5 / 8.0).abs() < 1e-12 && mq == 15.0 && (x - alone / 15.0).abs() < 1e-12
        );
        // No floor without mq-deadline, or without a time alone.
        assert!(floor_vs_mq_deadline(&s[1..].iter().collect::<Vec<_>>()).is_none());
        let mut no_alone = s.clone();
        for r in &mut no_alone {
            r.alone_mean_s = None;
        }
        assert!(floor_vs_mq_deadline(&no_alone.iter().collect::<Vec<_>>()).is_none());
        let rows: Vec<&StartupSummary> = s.iter().collect();
        let rs: Vec<&StartupRun> = runs.iter().collect();
        let svg = chart_svg("nullb-slow", &rows, &rs, "4 sequential readers").unwrap();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 8);
    }

    #[test]
    fn references_and_elevators_must_be_measured() {
        let k = Startup {
            spec: spec_of(&suite()).unwrap(),
            replayer: None,
        };
        let el = names(&["rust-bfq"]);
        assert!(k
            .check_schedulers(&names(&["mq-deadline", "bfq", "rust-bfq"]), &el)
            .is_ok());
        assert!(k
            .check_schedulers(&names(&["mq-deadline", "bfq"]), &el)
            .is_err());
        assert!(k
            .check_schedulers(&names(&["bfq", "rust-bfq"]), &el)
            .is_err());
        let t = suite().full;
        assert_eq!(
            k.duration(6, &t),
            (120 + 6 * (26 + 25), 600 + 6 * (120 + 26 + 60))
        );
    }

    #[test]
    fn a_scheduler_with_no_good_run_survives_the_results_file() {
        // Its means are NaN, which serde_json writes as null: `cargo xtask
        // report` must still read the file back.
        let runs = vec![run(0, "mq-deadline", Some(10.0)), run(0, "bfq", None)];
        let s = summarize(&runs, &names(&["mq-deadline", "bfq"]));
        assert!(s[1].startup_mean_s.is_nan());
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"startup_mean_s\":null"), "{text}");
        let back: Vec<StartupSummary> = serde_json::from_str(&text).unwrap();
        assert!(back[1].startup_mean_s.is_nan());
        assert_eq!(back[0].startup_mean_s, 10.0);
    }

    #[test]
    fn the_replay_suite_names_its_applications_and_leaves_the_tags() {
        let s = Suite::load(&crate::util::repo_root(), "startup-replay").unwrap();
        let sp = spec_of(&s).unwrap();
        assert_eq!(sp.nr_requests, 0);
        // Replays and the tar stand-in, which needs its numbers.
        assert!(sp.replays() && sp.tar().is_some());
        let k = Startup {
            spec: sp.clone(),
            replayer: Some("/x/startup-replay".into()),
        };
        let cases = k.cases(&s.full);
        assert_eq!(cases.len(), sp.app.len());
        assert_eq!(Startup::tsv(&cases[0]), "startup\ts-xterm\t-");
        let env = k.job_env(&s.full);
        assert!(env.contains("STARTUP_REPLAY=/x/startup-replay\n"), "{env}");
        assert!(env.contains("s-xterm=replay:/"), "{env}");
        assert!(env.contains("STARTUP_NR_REQUESTS=0\n") && env.contains("STARTUP_FILES=150\n"));
        assert!(env.contains("synthetic=tar"), "{env}");
        let o = only(&sp, &names(&["gcc-hello", "s-xterm"])).unwrap();
        assert_eq!(
            o.app.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            ["s-xterm", "gcc-hello"]
        );
        assert!(only(&sp, &names(&["nope"])).is_err());
        // --quick: S's xterm under the suite's one (implicit) load.
        let q = Startup {
            spec: quick(&sp),
            replayer: None,
        };
        assert_eq!(
            q.cases(&s.quick)
                .iter()
                .map(Startup::tsv)
                .collect::<Vec<_>>(),
            ["startup\ts-xterm\t-"]
        );
        // A replay needs its trace; a tar application needs the stand-in's numbers.
        let mut bad = sp.clone();
        bad.app[0].trace = Some("configs/startup/traces/missing.trace".into());
        assert!(bad.validate(&crate::util::repo_root()).is_err());
        bad = sp.clone();
        bad.app[0].kind = "tar".into();
        bad.app[0].trace = None;
        assert!(bad.validate(&crate::util::repo_root()).is_ok());
        bad.app_files = None;
        assert!(bad.validate(&crate::util::repo_root()).is_err());
        bad = sp.clone();
        bad.app[1].name = bad.app[0].name.clone();
        assert!(bad.validate(&crate::util::repo_root()).is_err());
    }

    fn matrix() -> Suite {
        Suite::load(&crate::util::repo_root(), "startup-matrix").unwrap()
    }

    #[test]
    fn the_matrix_crosses_applications_loads_and_devices() {
        let s = matrix();
        let sp = spec_of(&s).unwrap();
        assert_eq!(s.devices, ["nullb-8ms", "hdd-7200", "sata-ssd"]);
        assert_eq!(s.quick_devices.as_deref(), Some(&names(&["nullb-8ms"])[..]));
        let k = Startup {
            spec: sp.clone(),
            replayer: Some("/x/startup-replay".into()),
        };
        let cases = k.cases(&s.full);
        assert_eq!(cases.len(), 3 * 4);
        assert_eq!(
            Startup::tsv(&cases[1]),
            "startup\txterm\tseq-rw",
            "applications outer, loads inner"
        );
        // Every background and mix, each with its own readers and writers.
        let kinds: Vec<(String, String)> = sp
            .loads()
            .iter()
            .map(|l| (l.background.clone(), l.mix.clone()))
            .collect();
        for b in ["seq", "rand"] {
            for m in ["r", "rw"] {
                assert!(kinds.contains(&(b.into(), m.into())), "{b} {m}");
            }
        }
        let env = k.job_env(&s.full);
        assert!(
            env.contains("STARTUP_LOADS='seq-r seq-rw rand-r rand-rw'\n"),
            "{env}"
        );
        assert!(
            env.contains("STARTUP_LOAD_1_WRITERS=2\n") && env.contains("STARTUP_LOAD_1_SYNC_S=2\n")
        );
        assert!(
            env.contains("STARTUP_LOAD_1_WRITER_FIO='--rw=write "),
            "{env}"
        );
        assert!(env.contains("STARTUP_LOAD_0_WRITER_FIO=''\n"), "{env}");
        // --quick: the one cell of [startup.quick].
        let q = quick(&sp);
        let kq = Startup {
            spec: q,
            replayer: None,
        };
        let qc = kq.cases(&s.quick);
        assert_eq!(
            qc,
            [StartupCase {
                app: Some("xterm".into()),
                load: Some("seq-rw".into())
            }]
        );
        // --workloads names applications, loads or both.
        let o = only(&sp, &names(&["rand-r", "lowriter"])).unwrap();
        assert_eq!((o.app.len(), o.load.len()), (1, 1));
        let o = only(&sp, &names(&["rand-r"])).unwrap();
        assert_eq!((o.app.len(), o.load.len()), (3, 1));
        let e = only(&sp, &names(&["bash"])).unwrap_err().to_string();
        assert!(
            e.contains("the loads: seq-r, seq-rw, rand-r, rand-rw"),
            "{e}"
        );
    }

    #[test]
    fn loads_are_checked() {
        let sp = spec_of(&matrix()).unwrap();
        let root = crate::util::repo_root();
        let bad = |f: &dyn Fn(&mut StartupSpec)| {
            let mut b = sp.clone();
            f(&mut b);
            b.validate(&root).is_err()
        };
        assert!(bad(&|b| b.load[1].writers = 0));
        assert!(bad(&|b| b.load[1].writer_fio = None));
        assert!(bad(&|b| b.load[0].writers = 1));
        assert!(bad(&|b| b.load[0].mix = "w".into()));
        assert!(bad(&|b| b.load[0].background = "mixed".into()));
        assert!(bad(&|b| b.load[0].readers = 0));
        assert!(bad(&|b| b.load[0].name = "a b".into()));
        assert!(bad(&|b| b.load[1].name = b.load[0].name.clone()));
        assert!(bad(&|b| b.load[1].writer_fio = Some("--name='w'".into())));
        // Readers belong to the loads when there are loads.
        assert!(bad(&|b| b.readers = Some(5)));
        assert!(bad(&|b| b.quick.as_mut().unwrap().loads = names(&["nope"])));
        assert!(bad(&|b| b.quick.as_mut().unwrap().apps.clear()));
        assert!(!bad(&|_| {}));
        // A load of the suite file with an unknown key does not parse.
        let text = std::fs::read_to_string(root.join("configs/suites/startup-matrix.toml"))
            .unwrap()
            .replace("sync_s = 2\n", "sync_s = 2\nsyncs = 1\n");
        assert!(spec_of(&Suite::parse(&text).unwrap()).is_err());
    }
}
