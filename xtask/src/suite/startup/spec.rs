//! The `[startup]` table of a start-up suite file, and its applications.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `[startup]` table of a suite file.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StartupSpec {
    /// Files of the synthetic application stand-in (the `tar` app) ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_files: Option<u32>,
    /// ... spread over this many folders ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_dirs: Option<u32>,
    /// ... with sizes log-uniform between these (KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_file_kb_min: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_file_kb_max: Option<u32>,
    /// The applications started, each a case of the plan (`[[startup.app]]`);
    /// without any, the one `tar` stand-in above.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub app: Vec<AppSpec>,
    /// Greedy readers (fio jobs) and the size of each one's file (they
    /// wrap round it); with `[[startup.load]]`, each load has its own
    /// readers and these are absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readers: Option<u32>,
    pub reader_file_mb: u32,
    /// fio arguments of a reader (direct I/O, so it always reaches the device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_fio: Option<String>,
    /// The background loads, each a case of the plan with every
    /// application (`[[startup.load]]`); without any, the one load of
    /// `readers` and `reader_fio`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load: Vec<LoadSpec>,
    /// What `--quick` runs of the applications and loads (`[startup.quick]`;
    /// without it, all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick: Option<QuickSpec>,
    /// `queue/nr_requests`, set after selecting each scheduler (selecting
    /// one resets it to twice the device depth); not under `none`, whose
    /// depth is the device's and cannot grow. 0 leaves the device's default.
    pub nr_requests: u32,
}

/// One application of a start-up suite.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Its name in the plan, results and report.
    pub name: String,
    /// `tar`: the synthetic stand-in (`app_files` ... of `[startup]`),
    /// read whole with tar; `replay`: a recorded start-up, `trace`,
    /// replayed by tools/startup-replay.
    pub kind: String,
    /// The trace, relative to the repository (configs/startup/traces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// One background load of a start-up suite (`[[startup.load]]`): greedy
/// readers and, for a mix of reads and writes, writers, all fio jobs of one
/// fio process.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// Its name in the plan, results and report.
    pub name: String,
    /// The I/O pattern: `seq` or `rand`.
    pub background: String,
    /// `r` (only reads) or `rw` (reads and writes: `writers` > 0).
    pub mix: String,
    pub readers: u32,
    pub reader_fio: String,
    #[serde(default)]
    pub writers: u32,
    /// fio arguments of a writer (absent without writers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_fio: Option<String>,
    /// Seconds between the `sync`s the guest starts while writers run (the
    /// S suite syncs every 2 s); 0 for none.
    #[serde(default)]
    pub sync_s: u32,
}

/// What `--quick` runs (`[startup.quick]`): application and load names
/// (no `loads`: every load, as for a suite of one implicit load).
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct QuickSpec {
    pub apps: Vec<String>,
    #[serde(default)]
    pub loads: Vec<String>,
}

/// A name the guest passes in job.env and plan.tsv unquoted.
fn plain_name(what: &str, name: &str) -> Result<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        bail!("[startup]: {what} name {name:?}: letters, digits, - _ . only");
    }
    Ok(())
}

/// fio arguments the guest passes in single quotes.
fn plain_fio(what: &str, args: &str) -> Result<()> {
    if args.contains(['\'', '\n']) {
        bail!("[startup]: {what} must not hold quotes or newlines");
    }
    Ok(())
}

impl LoadSpec {
    fn validate(&self) -> Result<()> {
        plain_name("load", &self.name)?;
        let n = &self.name;
        if !["seq", "rand"].contains(&self.background.as_str()) {
            bail!(
                "[startup]: load {n}: background {:?}; seq or rand",
                self.background
            );
        }
        match (self.mix.as_str(), self.writers, &self.writer_fio) {
            ("r", 0, None) | ("rw", 1.., Some(_)) => {}
            ("r", _, _) => bail!("[startup]: load {n}: mix r has no writers and no writer_fio"),
            ("rw", _, _) => bail!("[startup]: load {n}: mix rw needs writers >= 1 and writer_fio"),
            (m, _, _) => bail!("[startup]: load {n}: mix {m:?}; r or rw"),
        }
        if self.readers == 0 {
            bail!("[startup]: load {n}: need readers >= 1");
        }
        plain_fio(&format!("load {n}: reader_fio"), &self.reader_fio)?;
        if let Some(w) = &self.writer_fio {
            plain_fio(&format!("load {n}: writer_fio"), w)?;
        }
        Ok(())
    }
}

impl StartupSpec {
    /// The applications: `app`, or the tar stand-in alone.
    pub fn apps(&self) -> Vec<AppSpec> {
        if self.app.is_empty() {
            vec![AppSpec {
                name: "tar".into(),
                kind: "tar".into(),
                trace: None,
            }]
        } else {
            self.app.clone()
        }
    }

    /// Whether some application replays a trace.
    pub fn replays(&self) -> bool {
        self.apps().iter().any(|a| a.kind == "replay")
    }

    /// The tar stand-in's numbers, when it has them all.
    pub fn tar(&self) -> Option<(u32, u32, u32, u32)> {
        Some((
            self.app_files?,
            self.app_dirs?,
            self.app_file_kb_min?,
            self.app_file_kb_max?,
        ))
    }

    /// Checks the table; `root` is the repository (where traces are).
    pub fn validate(&self, root: &Path) -> Result<()> {
        let apps = self.apps();
        for (i, a) in apps.iter().enumerate() {
            self.validate_app(a, root)?;
            if apps[..i].iter().any(|b| b.name == a.name) {
                bail!("[startup]: two applications named {:?}", a.name);
            }
        }
        if self.reader_file_mb == 0 {
            bail!("[startup]: need reader_file_mb >= 1");
        }
        if self.load.is_empty() {
            match (self.readers, &self.reader_fio) {
                (Some(1..), Some(f)) => plain_fio("reader_fio", f)?,
                _ => bail!("[startup]: need readers >= 1 and reader_fio, or [[startup.load]]"),
            }
        } else if self.readers.is_some() || self.reader_fio.is_some() {
            bail!("[startup]: with [[startup.load]], each load has its readers; no readers or reader_fio in [startup]");
        }
        for (i, l) in self.load.iter().enumerate() {
            l.validate()?;
            if self.load[..i].iter().any(|m| m.name == l.name) {
                bail!("[startup]: two loads named {:?}", l.name);
            }
        }
        if let Some(q) = &self.quick {
            let apps: Vec<String> = apps.iter().map(|a| a.name.clone()).collect();
            let loads: Vec<String> = self.load.iter().map(|l| l.name.clone()).collect();
            if q.apps.is_empty() {
                bail!("[startup.quick]: apps is empty");
            }
            for (what, names, known) in [("apps", &q.apps, &apps), ("loads", &q.loads, &loads)] {
                if let Some(bad) = names.iter().find(|n| !known.contains(n)) {
                    bail!(
                        "[startup.quick]: {what}: no {bad:?}; the suite's: {}",
                        known.join(", ")
                    );
                }
            }
        }
        Ok(())
    }

    /// The loads: `load`, or the one of `readers` and `reader_fio` (named
    /// `-`, sequential reads).
    pub fn loads(&self) -> Vec<LoadSpec> {
        if !self.load.is_empty() {
            return self.load.clone();
        }
        vec![LoadSpec {
            name: "-".into(),
            background: "seq".into(),
            mix: "r".into(),
            readers: self.readers.unwrap_or(0),
            reader_fio: self.reader_fio.clone().unwrap_or_default(),
            writers: 0,
            writer_fio: None,
            sync_s: 0,
        }]
    }

    fn validate_app(&self, a: &AppSpec, root: &Path) -> Result<()> {
        plain_name("application", &a.name)?;
        match (a.kind.as_str(), &a.trace) {
            ("tar", None) => {
                let Some((files, dirs, lo, hi)) = self.tar() else {
                    bail!("[startup]: the tar application needs app_files, app_dirs, app_file_kb_min, app_file_kb_max");
                };
                if files == 0 || dirs == 0 || dirs > files {
                    bail!("[startup]: need app_files >= app_dirs >= 1");
                }
                if lo == 0 || lo > hi {
                    bail!("[startup]: need 1 <= app_file_kb_min <= app_file_kb_max");
                }
            }
            ("replay", Some(t)) => {
                if t.contains(char::is_whitespace) || t.contains('\'') {
                    bail!("[startup]: trace path {t:?} must hold no spaces or quotes");
                }
                if !root.join(t).is_file() {
                    bail!("[startup]: application {}: no trace {t}", a.name);
                }
            }
            (k, _) => bail!(
                "[startup]: application {}: kind {k:?} with{} a trace; the kinds: tar (no trace), replay (with one)",
                a.name,
                if a.trace.is_some() { "" } else { "out" }
            ),
        }
        Ok(())
    }
}
