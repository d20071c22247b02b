//! The seed's start-up figures (configs/seeds/startup/valente-bfq.toml: the
//! BFQ result pages of the S suite's `comm_startup_lat`), read at report
//! time and put beside ours: orderings and ratios, not absolute times
//! (our devices are models and our CPU is emulated).

use super::results::{StartupResults, StartupSummary};
use crate::report::num;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// The seed file, relative to the repository.
pub const SEED_FILE: &str = "configs/seeds/startup/valente-bfq.toml";

#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Seeds {
    pub source: Vec<Source>,
    pub figure: Vec<Figure>,
}

/// Where figures come from.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub id: String,
    pub url: String,
    pub title: String,
    /// The kernel and BFQ version the seed measured.
    pub kernel: String,
    /// What the source gives and how the figures were taken from it.
    pub note: String,
}

/// One of the seed's figures and the cell of ours that stands for it.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// A [`Source::id`].
    pub source: String,
    /// The seed's device and load (S's names: `10r-seq`, `5r5w-seq`, ...).
    pub seed_device: String,
    pub seed_load: String,
    /// Ours: device, application and load names of the matrix suite.
    pub device: String,
    pub app: String,
    pub load: String,
    pub scheduler: String,
    /// `x_alone`: the start-up time under the load / alone; `load_ratio`:
    /// the start-up time under `load` / under `over`.
    pub measure: String,
    #[serde(default)]
    pub over: Option<String>,
    /// The seed's figure as the seed states it, and its value when it is
    /// a number.
    pub seed: String,
    #[serde(default)]
    pub seed_value: Option<f64>,
}

impl Seeds {
    pub fn parse(text: &str) -> Result<Seeds> {
        let s: Seeds = toml::from_str(text)?;
        for f in &s.figure {
            if !s.source.iter().any(|x| x.id == f.source) {
                bail!("figure for {} cites no source {:?}", f.app, f.source);
            }
            match (f.measure.as_str(), &f.over) {
                ("x_alone", None) | ("load_ratio", Some(_)) => {}
                (m, _) => bail!(
                    "figure for {} under {}: measure {m:?}; x_alone (no over) or load_ratio (with over)",
                    f.app,
                    f.load
                ),
            }
        }
        Ok(s)
    }

    pub fn load(root: &Path) -> Result<Seeds> {
        let p = root.join(SEED_FILE);
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        Seeds::parse(&text).with_context(|| format!("parsing {}", p.display()))
    }
}

fn row<'a>(res: &'a StartupResults, f: &Figure, load: &str) -> Option<&'a StartupSummary> {
    res.summary.iter().find(|r| {
        r.device == f.device
            && r.app.as_deref() == Some(f.app.as_str())
            && r.load.as_deref() == Some(load)
            && r.scheduler == f.scheduler
    })
}

/// Our value of a figure: the ratio, and the times it comes from; None
/// when the run did not measure the cell(s).
pub fn ours(res: &StartupResults, f: &Figure) -> Option<(f64, String)> {
    let r = row(res, f, &f.load)?;
    match f.over.as_deref() {
        None => {
            let x = r.slowdown.as_ref()?.mean;
            Some((
                x,
                format!(
                    "{} s / {} s alone",
                    num(r.startup_mean_s, 2),
                    num(r.alone_mean_s?, 2)
                ),
            ))
        }
        Some(over) => {
            let o = row(res, f, over)?;
            let x = r.startup_mean_s / o.startup_mean_s;
            x.is_finite().then(|| {
                (
                    x,
                    format!(
                        "{} s / {} s under {over}",
                        num(r.startup_mean_s, 2),
                        num(o.startup_mean_s, 2)
                    ),
                )
            })
        }
    }
}

/// The seed's figures beside ours, as Markdown (empty when the seed file
/// is missing; a seed file that does not parse says so).
pub fn beside_ours(res: &StartupResults) -> String {
    let seeds = match Seeds::load(&crate::util::repo_root()) {
        Ok(s) => s,
        Err(e) if !crate::util::repo_root().join(SEED_FILE).exists() => {
            let _ = e;
            return String::new();
        }
        Err(e) => return format!("\nThe seed's figures: {e:#}\n"),
    };
    beside_ours_of(res, &seeds)
}

/// [`beside_ours`] with the seed given: the figures on the run's devices,
/// and how many are on others.
pub fn beside_ours_of(res: &StartupResults, seeds: &Seeds) -> String {
    let on = |f: &&Figure| res.summary.iter().any(|r| r.device == f.device);
    let here: Vec<&Figure> = seeds.figure.iter().filter(on).collect();
    let elsewhere: Vec<&str> = {
        let mut d: Vec<&str> = Vec::new();
        for f in seeds.figure.iter().filter(|f| !on(f)) {
            if !d.contains(&f.device.as_str()) {
                d.push(&f.device);
            }
        }
        d
    };
    let mut s =
        String::from("\n#### Against the seed (Valente's BFQ results, S `comm_startup_lat`)\n\n");
    if !here.is_empty() {
        s.push_str(
            "| seed device, load | ours | application | scheduler | measure | seed | ours |\n\
             |---|---|---|---|---|---|---|\n",
        );
    }
    for f in here {
        let what = match f.over.as_deref() {
            None => "start-up / alone".to_string(),
            Some(o) => format!("start-up under {} / under {o}", f.load),
        };
        let ours = match ours(res, f) {
            Some((x, from)) => format!("{} × ({from})", num(x, 2)),
            None => "not measured in this run".into(),
        };
        let seed = match f.seed_value {
            Some(v) => format!("{} (≈ {} ×)", f.seed, num(v, 1)),
            None => f.seed.clone(),
        };
        let _ = writeln!(
            s,
            "| {}, {} | {}, {} | {} | {} | {what} | {seed} | {ours} |",
            f.seed_device, f.seed_load, f.device, f.load, f.app, f.scheduler
        );
    }
    if !elsewhere.is_empty() {
        let n = seeds.figure.iter().filter(|f| !on(f)).count();
        if s.ends_with("|\n") {
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "{n} of the seed's figures stand for cells on devices this run did not measure ({}).",
            elsewhere.join(", ")
        );
    }
    s.push_str("\nSources: ");
    let cited: Vec<String> = seeds
        .source
        .iter()
        .map(|x| format!("[{}]({}) ({}; {})", x.title, x.url, x.kernel, x.note))
        .collect();
    s.push_str(&cited.join("; "));
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Planned, RunRecord, Timing};
    use crate::suite::kind::Suite;
    use crate::suite::startup::{summarize, StartupCase, StartupRun};

    fn run(rep: u32, load: &str, s: &str, t: f64, alone: f64) -> StartupRun {
        RunRecord::new(
            Planned {
                id: String::new(),
                order: 0,
                repeat: rep,
                device: "hdd-7200".into(),
                scheduler: s.into(),
                case: StartupCase {
                    app: Some("lowriter".into()),
                    load: Some(load.into()),
                },
            },
            Ok(super::super::test_measured(t, alone)),
        )
    }

    #[test]
    fn the_seed_file_parses_and_names_cells_of_the_matrix() {
        let root = crate::util::repo_root();
        let seeds = Seeds::load(&root).unwrap();
        assert!(seeds.figure.len() >= 8);
        let suite = Suite::load(&root, "startup-matrix").unwrap();
        let sp: super::super::StartupSpec = suite
            .table::<super::super::Startup, _>("startup")
            .unwrap()
            .unwrap();
        for f in &seeds.figure {
            assert!(suite.devices.contains(&f.device), "{}", f.device);
            assert!(sp.app.iter().any(|a| a.name == f.app), "{}", f.app);
            for l in std::iter::once(&f.load).chain(f.over.as_ref()) {
                assert!(sp.load.iter().any(|x| &x.name == l), "{l}");
            }
            assert!(seeds.source.iter().any(|s| s.id == f.source));
        }
        // A figure citing no source, or a ratio with nothing to divide by.
        let text = std::fs::read_to_string(root.join(SEED_FILE)).unwrap();
        assert!(
            Seeds::parse(&text.replacen("source = \"bfq-4.19-v10\"", "source = \"x\"", 1)).is_err()
        );
        assert!(Seeds::parse(&text.replace("over = \"seq-r\"\n", "")).is_err());
    }

    #[test]
    fn ours_beside_the_seed() {
        let runs = vec![
            run(0, "seq-r", "bfq", 3.0, 2.0),
            run(1, "seq-r", "bfq", 5.0, 2.0),
            run(0, "seq-rw", "bfq", 8.0, 2.0),
            run(1, "seq-rw", "bfq", 8.0, 2.0),
        ];
        let schedulers = vec!["bfq".to_string()];
        let res = StartupResults {
            header: super::super::test_header(
                "startup-matrix",
                Timing {
                    repeats: 2,
                    runtime_s: 120,
                    ramp_s: 26,
                },
            ),
            startup: super::super::spec_of(
                &Suite::load(&crate::util::repo_root(), "startup-matrix").unwrap(),
            )
            .unwrap(),
            summary: summarize(&runs, &schedulers),
            schedulers,
            devices: Default::default(),
            runs,
        };
        let seeds = Seeds::load(&crate::util::repo_root()).unwrap();
        let x_alone = seeds
            .figure
            .iter()
            .find(|f| {
                f.app == "lowriter"
                    && f.device == "hdd-7200"
                    && f.scheduler == "bfq"
                    && f.over.is_none()
            })
            .unwrap();
        // (3/2 + 5/2) / 2 = 2 x alone.
        let (x, from) = ours(&res, x_alone).unwrap();
        assert!((x - 2.0).abs() < 1e-12, "{x}");
        assert_eq!(from, "4.00 s / 2.00 s alone");
        let ratio = seeds
            .figure
            .iter()
            .find(|f| f.device == "hdd-7200" && f.over.is_some())
            .unwrap();
        let (x, _) = ours(&res, ratio).unwrap();
        assert!((x - 2.0).abs() < 1e-12, "{x}");
        let md = beside_ours_of(&res, &seeds);
        assert!(md.contains("| HITACHI HDD, 5r5w-seq over 10r-seq | hdd-7200, seq-rw | lowriter | bfq | start-up under seq-rw / under seq-r | almost doubles (≈ 2.0 ×) | 2.00 × (8.00 s / 4.00 s under seq-r) |"), "{md}");
        assert!(md.contains("| xterm | mq-deadline | start-up / alone | fails to start within 60 s | not measured in this run |"), "{md}");
        // The matrix table: a row per application and load, loaded / alone.
        let t = super::super::report::table_markdown(&res);
        assert!(
            t.contains("| lowriter | seq-r | seq | r | 4.00 / 2.00 |"),
            "{t}"
        );
        assert!(
            t.contains("| lowriter | seq-rw | seq | rw | 8.00 / 2.00 |"),
            "{t}"
        );
        assert!(
            t.contains("lowriter: start-up under seq-rw (3 sequential readers and 2 writers)"),
            "{t}"
        );
    }
}
