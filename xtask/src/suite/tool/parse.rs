//! The tools the `tool` kind runs, what each measures, and how its output
//! is read: bonnie++'s CSV line, dbench's closing line, fs_mark's table,
//! `time -p` (the SQLite inserts and the compile), pgbench's summary, fio's
//! JSON and the `key value` lines of tools/fsbench (the BlogBench-like and
//! compilebench-like generators).

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A tool a workload runs; its name is the guest runner's function
/// (`qemu/guest/tool.sh` `tool_<name>`).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Tool {
    Bonnie,
    Dbench,
    FsMark,
    Sqlite,
    Compile,
    Pgbench,
    Fio,
    Blogbench,
    Compilebench,
}

/// One figure a tool reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub key: &'static str,
    pub label: &'static str,
    pub unit: &'static str,
    pub higher_better: bool,
}

const fn up(key: &'static str, label: &'static str, unit: &'static str) -> Metric {
    Metric {
        key,
        label,
        unit,
        higher_better: true,
    }
}

const fn down(key: &'static str, label: &'static str, unit: &'static str) -> Metric {
    Metric {
        key,
        label,
        unit,
        higher_better: false,
    }
}

const BONNIE: &[Metric] = &[
    up("block_write_kb_s", "block write", "K/s"),
    up("rewrite_kb_s", "rewrite", "K/s"),
    up("block_read_kb_s", "block read", "K/s"),
    up("seeks_s", "seeks", "/s"),
    up("seq_create_s", "seq. create", "/s"),
    up("seq_delete_s", "seq. delete", "/s"),
    up("rand_create_s", "rand. create", "/s"),
    up("rand_delete_s", "rand. delete", "/s"),
];
const DBENCH: &[Metric] = &[
    up("mb_s", "throughput", "MB/s"),
    down("max_latency_ms", "max latency", "ms"),
];
const FS_MARK: &[Metric] = &[up("files_s", "files", "/s")];
const TIMED: &[Metric] = &[down("seconds", "time", "s")];
const PGBENCH: &[Metric] = &[up("tps", "tps", "/s"), down("latency_ms", "latency", "ms")];
const FIO: &[Metric] = &[up("mb_s", "bandwidth", "MB/s"), up("iops", "IOPS", "")];
const BLOGBENCH: &[Metric] = &[
    up("reads_s", "article reads", "/s"),
    up("writes_s", "article writes", "/s"),
];
const COMPILEBENCH: &[Metric] = &[
    up("create_mb_s", "initial create", "MB/s"),
    up("compile_mb_s", "compile", "MB/s"),
    up("read_mb_s", "read tree", "MB/s"),
];

impl Tool {
    /// The figures it reports, the first the one an ordering goes by.
    pub fn metrics(self) -> &'static [Metric] {
        match self {
            Tool::Bonnie => BONNIE,
            Tool::Dbench => DBENCH,
            Tool::FsMark => FS_MARK,
            Tool::Sqlite | Tool::Compile => TIMED,
            Tool::Pgbench => PGBENCH,
            Tool::Fio => FIO,
            Tool::Blogbench => BLOGBENCH,
            Tool::Compilebench => COMPILEBENCH,
        }
    }

    /// The name the suite file and the guest use.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Bonnie => "bonnie",
            Tool::Dbench => "dbench",
            Tool::FsMark => "fs-mark",
            Tool::Sqlite => "sqlite",
            Tool::Compile => "compile",
            Tool::Pgbench => "pgbench",
            Tool::Fio => "fio",
            Tool::Blogbench => "blogbench",
            Tool::Compilebench => "compilebench",
        }
    }

    /// The figures in the tool's output (runs/<id>.out).
    pub fn parse(self, out: &str) -> Result<BTreeMap<String, f64>> {
        let m = match self {
            Tool::Bonnie => bonnie_csv(out)?,
            Tool::Dbench => dbench(out)?,
            Tool::FsMark => fs_mark(out)?,
            Tool::Sqlite | Tool::Compile => time_p(out)?,
            Tool::Pgbench => pgbench(out)?,
            Tool::Fio => {
                let m = crate::suite::fio::parse_fio(out)?;
                pairs(&[("mb_s", m.mb_s), ("iops", m.iops)])
            }
            Tool::Blogbench | Tool::Compilebench => key_values(out, self.metrics())?,
        };
        if m.is_empty() {
            bail!("{}: no figure in its output", self.name());
        }
        Ok(m)
    }
}

fn pairs(xs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    xs.iter()
        .filter(|(_, v)| v.is_finite())
        .map(|(k, v)| (k.to_string(), *v))
        .collect()
}

/// bonnie++'s CSV line (`-q`; format 1.98, bonnie++ 1.98 and 2.00): block
/// write, rewrite, block read (K/s), random seeks, and the sequential and
/// random creates and deletes (/s). A test too quick to time (`+++++`) or
/// skipped (`-f`: the per-character ones) has no figure.
pub fn bonnie_csv(out: &str) -> Result<BTreeMap<String, f64>> {
    let line = out
        .lines()
        .find(|l| l.starts_with("1.9") || l.starts_with("2."))
        .context("no bonnie++ CSV line (the output of bonnie++ -q)")?;
    let f: Vec<&str> = line.split(',').collect();
    if f[0] != "1.98" {
        bail!("bonnie++ CSV format {} (read: 1.98)", f[0]);
    }
    if f.len() < 38 {
        bail!("bonnie++ CSV line has {} fields, not 50", f.len());
    }
    // 0 format, 1 version, 2 name, 3 concurrency, 4 seed, 5 size,
    // 6 chunk, 7 seeks, 8 seek processes, then each test's /s and %CPU:
    // 9 putc, 11 block write, 13 rewrite, 15 getc, 17 block read, 19 seeks,
    // 21..25 the file tests' settings, 26 seq. create, 28 seq. stat,
    // 30 seq. delete, 32 rand. create, 34 rand. stat, 36 rand. delete.
    let at = |i: usize| -> Option<f64> { f.get(i)?.trim().parse::<f64>().ok() };
    let mut m = BTreeMap::new();
    for (k, i) in [
        ("block_write_kb_s", 11),
        ("rewrite_kb_s", 13),
        ("block_read_kb_s", 17),
        ("seeks_s", 19),
        ("seq_create_s", 26),
        ("seq_delete_s", 30),
        ("rand_create_s", 32),
        ("rand_delete_s", 36),
    ] {
        if let Some(v) = at(i) {
            m.insert(k.to_string(), v);
        }
    }
    Ok(m)
}

/// dbench's closing line: `Throughput 163.201 MB/sec  2 clients  2 procs
/// max_latency=83.522 ms`.
pub fn dbench(out: &str) -> Result<BTreeMap<String, f64>> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with("Throughput "))
        .context("no \"Throughput\" line in dbench's output")?;
    let w: Vec<&str> = line.split_whitespace().collect();
    let mb_s: f64 = w
        .get(1)
        .and_then(|x| x.parse().ok())
        .context("dbench: unreadable throughput")?;
    let lat = w
        .iter()
        .find_map(|x| x.strip_prefix("max_latency="))
        .and_then(|x| x.parse::<f64>().ok());
    let mut m = pairs(&[("mb_s", mb_s)]);
    if let Some(l) = lat {
        m.insert("max_latency_ms".into(), l);
    }
    Ok(m)
}

/// fs_mark's table: `FSUse% Count Size Files/sec App Overhead`, one row
/// per loop; the mean of the rows' files/s.
pub fn fs_mark(out: &str) -> Result<BTreeMap<String, f64>> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for l in out.lines() {
        if l.trim_start().starts_with("FSUse%") {
            in_table = true;
            continue;
        }
        if in_table {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.get(3).map(|x| x.parse::<f64>()) {
                Some(Ok(v)) if w.len() >= 4 => rows.push(v),
                _ => in_table = false,
            }
        }
    }
    if rows.is_empty() {
        bail!("no rows under fs_mark's \"FSUse%  Count  Size  Files/sec\" heading");
    }
    Ok(pairs(&[(
        "files_s",
        rows.iter().sum::<f64>() / rows.len() as f64,
    )]))
}

/// `time -p` lines (`real 1.23`, `user ..`, `sys ..`), one block per
/// process timed together: the slowest's real time, the time the whole
/// took.
pub fn time_p(out: &str) -> Result<BTreeMap<String, f64>> {
    let reals: Vec<f64> = out
        .lines()
        .filter_map(|l| l.strip_prefix("real "))
        .map(|x| x.trim().parse::<f64>())
        .collect::<std::result::Result<_, _>>()
        .context("an unreadable \"real\" line of time -p")?;
    if reals.is_empty() {
        bail!("no \"real\" line of time -p in the output");
    }
    Ok(pairs(&[(
        "seconds",
        reals.iter().copied().fold(0.0, f64::max),
    )]))
}

/// pgbench's summary: `tps = 257.027431 (without initial connection time)`
/// and `latency average = 7.781 ms`; fails on failed transactions.
pub fn pgbench(out: &str) -> Result<BTreeMap<String, f64>> {
    let value = |prefix: &str| -> Option<f64> {
        out.lines()
            .find_map(|l| l.strip_prefix(prefix))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    let tps = value("tps = ").context("no \"tps = \" line in pgbench's output")?;
    if let Some(f) = value("number of failed transactions: ") {
        if f > 0.0 {
            bail!("pgbench: {f} failed transactions");
        }
    }
    let mut m = pairs(&[("tps", tps)]);
    if let Some(l) = value("latency average = ") {
        m.insert("latency_ms".into(), l);
    }
    Ok(m)
}

/// `key value` lines (tools/fsbench): the metrics named, every one needed.
pub fn key_values(out: &str, want: &[Metric]) -> Result<BTreeMap<String, f64>> {
    let mut m = BTreeMap::new();
    for l in out.lines() {
        let mut w = l.split_whitespace();
        if let (Some(k), Some(v), None) = (w.next(), w.next(), w.next()) {
            if let (Some(metric), Ok(v)) = (want.iter().find(|m| m.key == k), v.parse::<f64>()) {
                m.insert(metric.key.to_string(), v);
            }
        }
    }
    if let Some(missing) = want.iter().find(|w| !m.contains_key(w.key)) {
        bail!("no \"{} <value>\" line in the output", missing.key);
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    //! Each parser on its tool's real output (tests/tool-output/, from
    //! Debian 12's bonnie++ 2.00a, dbench 4.00, fs_mark 3.3, pgbench 15,
    //! fio 3.33, and qemu/guest/tool.sh's sqlite and compile and
    //! tools/fsbench run on the host).

    use super::*;

    fn canned(name: &str) -> String {
        let p = crate::util::repo_root()
            .join("tests/tool-output")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn bonnie_csv_gives_the_block_seek_and_file_figures() {
        let m = bonnie_csv(&canned("bonnie.csv")).unwrap();
        assert_eq!(m["block_write_kb_s"], 91064.0);
        assert_eq!(m["seq_create_s"], 649.0);
        // "+++++": too quick to time; no figure rather than a wrong one.
        assert!(!m.contains_key("rewrite_kb_s") && !m.contains_key("seeks_s"));
        let m = bonnie_csv(&canned("bonnie-host-1g.csv")).unwrap();
        assert_eq!(
            (m["block_write_kb_s"], m["rewrite_kb_s"], m["seeks_s"]),
            (179282.0, 926951.0, 12890.0)
        );
        assert_eq!(m["seq_create_s"], 6260.0);
        assert!(!m.contains_key("block_read_kb_s") && !m.contains_key("rand_delete_s"));
        assert!(bonnie_csv("1.97,1.97,x,1").is_err());
        assert!(bonnie_csv("Version 2.00a ------Sequential Output------").is_err());
        assert!(bonnie_csv("1.98,2.00a,x,1,2").is_err());
    }

    #[test]
    fn dbench_gives_throughput_and_max_latency() {
        let m = dbench(&canned("dbench.out")).unwrap();
        assert_eq!((m["mb_s"], m["max_latency_ms"]), (163.201, 83.522));
        // The per-second progress lines are not the result.
        let cut: String = canned("dbench.out")
            .lines()
            .filter(|l| !l.starts_with("Throughput"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(dbench(&cut).is_err());
    }

    #[test]
    fn fs_mark_gives_files_per_second() {
        let m = fs_mark(&canned("fsmark.out")).unwrap();
        assert_eq!(m["files_s"], 216.7);
        let two = format!(
            "{}    71           80      1048576        183.3             4000\n",
            canned("fsmark.out")
        );
        assert!((fs_mark(&two).unwrap()["files_s"] - 200.0).abs() < 1e-9);
        assert!(fs_mark("#  fs_mark  -d  /x\n").is_err());
    }

    #[test]
    fn time_p_gives_the_slowest_copy() {
        let m = time_p(&canned("sqlite.time")).unwrap();
        assert_eq!(m["seconds"], 2.13);
        assert!(time_p("real abc\n").is_err());
        assert!(time_p("user 1.0\n").is_err());
    }

    #[test]
    fn pgbench_gives_tps_and_latency() {
        let m = pgbench(&canned("pgbench.out")).unwrap();
        assert_eq!((m["tps"], m["latency_ms"]), (257.027431, 7.781));
        let failed = canned("pgbench.out").replace(
            "number of failed transactions: 0",
            "number of failed transactions: 3",
        );
        assert!(pgbench(&failed).is_err());
        assert!(pgbench("pgbench: error: connection failed\n").is_err());
    }

    #[test]
    fn key_values_need_every_metric() {
        let m = key_values("reads_s 10.5\nwrites_s 2\nnoise\n", BLOGBENCH).unwrap();
        assert_eq!((m["reads_s"], m["writes_s"]), (10.5, 2.0));
        assert!(key_values("reads_s 10.5\n", BLOGBENCH).is_err());
    }

    #[test]
    fn every_tool_parses_through_its_name() {
        for (tool, file, key, want) in [
            (Tool::Bonnie, "bonnie.csv", "block_write_kb_s", 91064.0),
            (Tool::Dbench, "dbench.out", "mb_s", 163.201),
            (Tool::FsMark, "fsmark.out", "files_s", 216.7),
            (Tool::Sqlite, "sqlite.time", "seconds", 2.13),
            (Tool::Compile, "compile.time", "seconds", 0.59),
            (Tool::Pgbench, "pgbench.out", "tps", 257.027431),
            (Tool::Blogbench, "blogbench.out", "writes_s", 5261.487),
            (Tool::Compilebench, "compilebench.out", "read_mb_s", 52.875),
        ] {
            let m = tool.parse(&canned(file)).unwrap();
            assert_eq!(m[key], want, "{file}");
            assert!(tool.metrics().iter().any(|x| x.key == key));
        }
        // fio's JSON (4 threads, group-reported): bandwidth and IOPS.
        let m = Tool::Fio.parse(&canned("fio-tiotester.json")).unwrap();
        assert!(m["mb_s"] > 0.0 && m["iops"] > 0.0);
        assert!(Tool::Dbench.parse("").is_err());
        let t: Tool = serde_json::from_str("\"fs-mark\"").unwrap();
        assert_eq!(t.name(), "fs-mark");
    }
}
