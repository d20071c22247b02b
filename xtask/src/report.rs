//! report.md: what every suite's report has (the header table, the failed
//! runs, a chart per device, the tables, where the raw data is), filled in
//! with the suite's own rows, text, charts and tables.

use crate::devices::Device;
use crate::results::{Header, Planned, RunRecord};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// A suite's report, to write as report.md and its charts.
pub struct Page<'a> {
    pub header: &'a Header,
    pub schedulers: &'a [String],
    pub devices: &'a BTreeMap<String, Device>,
    /// The suite's rows of the header table, between the host and the
    /// schedulers: (name, value).
    pub rows: Vec<(&'static str, String)>,
    /// The paragraph under the header table that says how the runs went
    /// and how to read the figures.
    pub method: String,
    /// One line per failed run (what and why).
    pub failed: Vec<String>,
    /// One chart per device, in the tables' order: (device, file name, SVG).
    pub charts: Vec<(String, String, String)>,
    /// The tables (the suite's `table_markdown`).
    pub tables: String,
    /// What `runs/` holds besides results.json.
    pub raw_runs: &'static str,
}

impl Page<'_> {
    /// Writes report.md and the charts into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let h = self.header;
        let mut md = String::new();
        let _ = writeln!(md, "# ironlift benchmark: {}\n", h.suite);
        let _ = writeln!(md, "{}\n", h.suite_description);
        let _ = writeln!(md, "| | |\n|---|---|");
        let _ = writeln!(md, "| kernel | {} |", h.kernel_release);
        if h.accel == "host" {
            // `host-bench`: no guest; the host's kernel ran the suite.
            let _ = writeln!(
                md,
                "| guest | none: **the host's own kernel and disk** (`host-bench`), clocksource {}, {} CPUs, {} MiB |",
                h.guest_clocksource, h.guest_cpus, h.guest_memory_mb
            );
        } else {
            let _ = writeln!(
                md,
                "| guest | QEMU, accelerator **{}**, clocksource {}, {} vCPUs, {} MiB |",
                h.accel.to_uppercase(),
                h.guest_clocksource,
                h.guest_cpus,
                h.guest_memory_mb
            );
        }
        let _ = writeln!(md, "| host | {} |", h.host);
        for (name, value) in &self.rows {
            let _ = writeln!(md, "| {name} | {value} |");
        }
        let _ = writeln!(md, "| schedulers | {} |", self.schedulers.join(", "));
        let _ = writeln!(
            md,
            "| started / finished | {} / {} |",
            h.started, h.finished
        );
        let _ = writeln!(md, "\n{}\n", self.method);
        if !self.failed.is_empty() {
            let _ = writeln!(md, "**{} run(s) failed:**\n", self.failed.len());
            for f in &self.failed {
                let _ = writeln!(md, "- {f}");
            }
            md.push('\n');
        }
        for (d, name, svg) in &self.charts {
            fs::write(dir.join(name), svg).with_context(|| format!("writing {name}"))?;
            let kind = self.devices.get(d).map(|x| x.kind.as_str()).unwrap_or("");
            let _ = writeln!(md, "## {d}\n\n{kind}\n\n![{d}]({name})\n");
        }
        let _ = writeln!(md, "## Tables\n{}", self.tables);
        let _ = writeln!(
            md,
            "\nRaw data: `results.json` (schema `{}`, see docs/results-schema.md); {}",
            h.schema, self.raw_runs
        );
        fs::write(dir.join("report.md"), md)?;
        Ok(())
    }
}

/// One line per failed run for [`Page::failed`]: which run (`what`), and
/// why it failed.
pub fn failed_runs<C, M>(
    runs: &[RunRecord<C, M>],
    what: impl Fn(&Planned<C>) -> String,
) -> Vec<String> {
    runs.iter()
        .filter(|r| !r.ok)
        .map(|r| format!("{}: {}", what(&r.run), r.error.as_deref().unwrap_or("?")))
        .collect()
}

/// The `| timing |` row's `--quick` mark.
pub fn quick_mark(h: &Header) -> &'static str {
    if h.quick {
        ", `--quick`"
    } else {
        ""
    }
}

/// A number with `prec` decimals, or `-` when it is not finite.
pub fn num(x: f64, prec: usize) -> String {
    if x.is_finite() {
        format!("{x:.prec$}")
    } else {
        "-".into()
    }
}

/// `mean ± sd`, each with `prec` decimals.
pub fn pm(mean: f64, sd: f64, prec: usize) -> String {
    format!("{} ± {}", num(mean, prec), num(sd, prec))
}

/// The devices of summary rows, in their first appearance's order.
pub fn distinct<'a>(rows: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut v: Vec<&str> = Vec::new();
    for d in rows {
        if !v.contains(&d) {
            v.push(d);
        }
    }
    v
}
