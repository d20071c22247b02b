//! The `[startup]` table of a start-up suite file.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// The `[startup]` table of a suite file.
#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StartupSpec {
    /// Files of the application stand-in ...
    pub app_files: u32,
    /// ... spread over this many folders ...
    pub app_dirs: u32,
    /// ... with sizes log-uniform between these (KiB).
    pub app_file_kb_min: u32,
    pub app_file_kb_max: u32,
    /// Greedy sequential readers, one fio process each, and the size of
    /// each one's file (they wrap round it).
    pub readers: u32,
    pub reader_file_mb: u32,
    /// fio arguments of a reader (direct I/O, so it always reaches the device).
    pub reader_fio: String,
    /// `queue/nr_requests`, set after selecting each scheduler (selecting
    /// one resets it to twice the device depth); not under `none`, whose
    /// depth is the device's and cannot grow.
    pub nr_requests: u32,
}

impl StartupSpec {
    pub fn validate(&self) -> Result<()> {
        if self.app_files == 0 || self.app_dirs == 0 || self.app_dirs > self.app_files {
            bail!("[startup]: need app_files >= app_dirs >= 1");
        }
        if self.app_file_kb_min == 0 || self.app_file_kb_min > self.app_file_kb_max {
            bail!("[startup]: need 1 <= app_file_kb_min <= app_file_kb_max");
        }
        if self.readers == 0 || self.reader_file_mb == 0 {
            bail!("[startup]: need readers >= 1 and reader_file_mb >= 1");
        }
        if self.reader_fio.contains(['\'', '\n']) {
            bail!("[startup]: reader_fio must not hold quotes or newlines");
        }
        if self.nr_requests == 0 {
            bail!("[startup]: nr_requests must be >= 1");
        }
        Ok(())
    }
}
