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
    /// Greedy sequential readers, one fio process each, and the size of
    /// each one's file (they wrap round it).
    pub readers: u32,
    pub reader_file_mb: u32,
    /// fio arguments of a reader (direct I/O, so it always reaches the device).
    pub reader_fio: String,
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
        if self.readers == 0 || self.reader_file_mb == 0 {
            bail!("[startup]: need readers >= 1 and reader_file_mb >= 1");
        }
        if self.reader_fio.contains(['\'', '\n']) {
            bail!("[startup]: reader_fio must not hold quotes or newlines");
        }
        Ok(())
    }

    fn validate_app(&self, a: &AppSpec, root: &Path) -> Result<()> {
        if a.name.is_empty()
            || !a
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            bail!(
                "[startup]: application name {:?}: letters, digits, - _ . only",
                a.name
            );
        }
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
