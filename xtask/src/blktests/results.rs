//! blktests' results: its `check` output (one status line per test and
//! device, `[passed]`, `[failed]` or `[not run]`, then indented details:
//! the reasons a test did not run, what failed) and its results folder
//! (`results/<device or nodev>/<group>/<NNN>`, `key<TAB>value` lines with
//! `status` and, for a failure, `reason`), read into one row per test and
//! device, judged, and written as a table.

use super::source::Exclude;
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// What became of one test on one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Fail,
    /// blktests did not run it: something it needs is missing.
    NotRun,
    /// configs/blktests.toml leaves it out.
    Excluded,
}

impl Outcome {
    fn word(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "FAIL",
            Outcome::NotRun => "not run",
            Outcome::Excluded => "excluded",
        }
    }
}

/// One test on one device (or on none).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub test: String,
    /// The test device (`=> nvme0n1`), for the per-device tests.
    pub device: Option<String>,
    /// blktests' condition, for the tests run under several (`zoned`).
    pub condition: Option<String>,
    pub description: String,
    pub outcome: Outcome,
    /// Why it failed, did not run, or was left out.
    pub reason: String,
    /// blktests' runtime of the test, as it printed it.
    pub runtime: Option<String>,
}

/// A status line's parts.
struct Status<'a> {
    test: String,
    device: Option<String>,
    condition: Option<String>,
    description: String,
    status: &'a str,
}

/// `name [=> dev] [(cond) ](description)   [status]`.
fn status_line(line: &str) -> Option<Status<'_>> {
    let t = line.trim_end();
    let (head, status) = ["passed", "failed", "not run"].iter().find_map(|s| {
        t.strip_suffix(&format!("[{s}]"))
            .map(|h| (h.trim_end(), *s))
    })?;
    let (name, rest) = head.split_once(' ').unwrap_or((head, ""));
    if !super::source::is_test_name(name) {
        return None;
    }
    let rest = rest.trim_start();
    let (device, rest) = match rest.strip_prefix("=> ") {
        Some(r) => match r.split_once(" (") {
            Some((d, r)) => (Some(d.trim().to_string()), format!("({r}")),
            None => (Some(r.trim().to_string()), String::new()),
        },
        None => (None, rest.to_string()),
    };
    let inner = rest.trim().trim_start_matches('(').trim_end_matches(')');
    let (condition, description) = match inner.split_once(") (") {
        Some((c, d)) => (Some(c.to_string()), d.to_string()),
        None => (None, inner.to_string()),
    };
    Some(Status {
        test: name.to_string(),
        device,
        condition,
        description,
        status,
    })
}

/// Reads `check`'s output into rows, in its order.
pub fn parse_log(text: &str) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    let mut details: Vec<String> = Vec::new();
    let flush = |rows: &mut Vec<Row>, details: &mut Vec<String>| {
        if let Some(r) = rows.last_mut() {
            for d in details.drain(..) {
                let words: Vec<&str> = d.split_whitespace().collect();
                // `key ... value` (check's per-test figures), as against
                // a reason or a failure's details.
                let is_kv = words.len() >= 3 && words[1..words.len() - 1].contains(&"...");
                match r.outcome {
                    Outcome::Pass | Outcome::Fail if is_kv => {
                        if words[0] == "runtime" {
                            r.runtime = words.last().map(|s| s.to_string());
                        }
                    }
                    _ => {
                        if !r.reason.is_empty() {
                            r.reason.push_str("; ");
                        }
                        r.reason.push_str(d.trim());
                    }
                }
            }
        }
        details.clear();
    };
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(st) = status_line(line) {
            flush(&mut rows, &mut details);
            rows.push(Row {
                test: st.test,
                device: st.device,
                condition: st.condition,
                description: st.description,
                outcome: match st.status {
                    "passed" => Outcome::Pass,
                    "failed" => Outcome::Fail,
                    _ => Outcome::NotRun,
                },
                reason: String::new(),
                runtime: None,
            });
        } else if line.starts_with("    ") && !rows.is_empty() {
            details.push(line.to_string());
        } else if !line.trim().is_empty() {
            // A test's start line, or check's own words: the details of
            // the row before have ended.
            flush(&mut rows, &mut details);
        }
    }
    flush(&mut rows, &mut details);
    rows
}

/// One results file: its `key<TAB>value` lines.
fn results_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Checks each run test's row against its results file (`results/<device
/// or nodev>/<test>`), and puts blktests' failure reason (output, exit,
/// dmesg, kmemleak) first in a failure's reason. Returns the problems: a
/// run test with no results file, or one whose status disagrees.
pub fn merge_results_dir(rows: &mut [Row], dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for r in rows.iter_mut() {
        if !matches!(r.outcome, Outcome::Pass | Outcome::Fail) {
            continue;
        }
        // check's RESULTS_DIR: the device or nodev, and the condition.
        let mut sub = r.device.clone().unwrap_or_else(|| "nodev".into());
        if let Some(c) = &r.condition {
            sub.push('_');
            sub.push_str(&c.replace([' ', '='], "_"));
        }
        let p = dir.join(&sub).join(&r.test);
        let Ok(text) = fs::read_to_string(&p) else {
            problems.push(format!(
                "{} ({sub}): no results file {}",
                r.test,
                p.display()
            ));
            continue;
        };
        let kv = results_file(&text);
        let want = if r.outcome == Outcome::Pass {
            "pass"
        } else {
            "fail"
        };
        let status = kv.get("status").map(String::as_str).unwrap_or("");
        if status != want {
            problems.push(format!(
                "{} ({sub}): check printed {want} but its results file says {status:?}",
                r.test
            ));
        }
        if let Some(why) = kv.get("reason").filter(|_| r.outcome == Outcome::Fail) {
            r.reason = if r.reason.is_empty() {
                why.clone()
            } else {
                format!("{why}: {}", r.reason)
            };
        }
    }
    problems
}

/// Adds a row for every excluded test or group, with its reason.
pub fn add_excluded<'a>(rows: &mut Vec<Row>, excluded: impl IntoIterator<Item = &'a Exclude>) {
    for e in excluded {
        rows.push(Row {
            test: e.test.clone(),
            device: None,
            condition: None,
            description: String::new(),
            outcome: Outcome::Excluded,
            reason: e.reason.clone(),
            runtime: None,
        });
    }
}

/// What fails the run: a failed test; a required test (of those asked
/// for) that did not run everywhere it was run, or has no result; no
/// result at all.
pub fn judge(rows: &[Row], required: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    if !rows
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Pass | Outcome::Fail | Outcome::NotRun))
    {
        problems.push("blktests printed no test result".to_string());
    }
    for r in rows.iter().filter(|r| r.outcome == Outcome::Fail) {
        problems.push(format!("{} failed: {}", label(r), r.reason));
    }
    for t in required {
        let mine: Vec<&Row> = rows.iter().filter(|r| &r.test == t).collect();
        if mine.is_empty() {
            problems.push(format!("{t} (required) has no result"));
        }
        for r in mine.iter().filter(|r| r.outcome == Outcome::NotRun) {
            problems.push(format!("{} (required) was not run: {}", label(r), r.reason));
        }
    }
    problems
}

fn label(r: &Row) -> String {
    let mut s = r.test.clone();
    if let Some(c) = &r.condition {
        s.push_str(&format!(" ({c})"));
    }
    if let Some(d) = &r.device {
        s.push_str(&format!(" => {d}"));
    }
    s
}

/// Counts: passed, failed, not run, excluded.
pub fn counts(rows: &[Row]) -> [usize; 4] {
    let mut c = [0; 4];
    for r in rows {
        c[r.outcome as usize] += 1;
    }
    c
}

/// The table, test × result with the reason, as Markdown.
pub fn markdown(rows: &[Row]) -> String {
    let mut s =
        String::from("| test | device | result | reason | runtime |\n|---|---|---|---|---|\n");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            match &r.condition {
                Some(c) => format!("{} ({c})", r.test),
                None => r.test.clone(),
            },
            r.device.as_deref().unwrap_or(""),
            r.outcome.word(),
            r.reason.replace('|', "\\|"),
            r.runtime.as_deref().unwrap_or("")
        );
    }
    let [p, f, n, x] = counts(rows);
    let _ = writeln!(s, "\n{p} passed, {f} failed, {n} not run, {x} excluded");
    s
}

/// Writes `blktests.md` and `blktests.json` into `out`.
pub fn write(out: &Path, rows: &[Row]) -> Result<()> {
    fs::write(out.join("blktests.md"), markdown(rows))?;
    fs::write(
        out.join("blktests.json"),
        serde_json::to_string_pretty(rows)?,
    )?;
    Ok(())
}

/// Reads a saved run: its log, results folder and exit status.
pub fn read_run(out: &Path) -> Result<(Vec<Row>, Vec<String>)> {
    let log = out.join("blktests.log");
    let Ok(text) = fs::read_to_string(&log) else {
        bail!("no {}: blktests' check did not start", log.display());
    };
    let mut rows = parse_log(&text);
    let mut problems = merge_results_dir(&mut rows, &out.join("results"));
    match fs::read_to_string(out.join("blktests.rc")) {
        Ok(rc) if rc.trim() == "0" => {}
        Ok(rc) if rows.iter().any(|r| r.outcome == Outcome::Fail) => {
            let _ = rc;
        }
        Ok(rc) => problems.push(format!(
            "blktests' check exited with status {} and no failed test (its log: {})",
            rc.trim(),
            log.display()
        )),
        Err(_) => problems.push(format!(
            "blktests' check did not finish (no exit status; its log: {})",
            log.display()
        )),
    }
    Ok((rows, problems))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canned(name: &str) -> std::path::PathBuf {
        crate::util::repo_root().join("tests/blktests").join(name)
    }

    #[test]
    fn status_lines_give_test_device_and_status() {
        let s =
            status_line("block/005 => nvme0n1 (switch schedulers while doing IO)       [passed]")
                .unwrap();
        assert_eq!(
            (s.test.as_str(), s.device.as_deref(), s.status),
            ("block/005", Some("nvme0n1"), "passed")
        );
        assert_eq!(s.description, "switch schedulers while doing IO");
        assert!(s.condition.is_none());
        let s = status_line("block/009 (check page-cache coherency after BLKDISCARD) [not run]")
            .unwrap();
        assert_eq!(
            (s.test.as_str(), s.device, s.status),
            ("block/009", None, "not run")
        );
        let s = status_line("zbd/001 (zoned) (sysfs and ioctl)                  [failed]").unwrap();
        assert_eq!(s.condition.as_deref(), Some("zoned"));
        assert_eq!(s.description, "sysfs and ioctl");
        assert!(status_line("block/005 => nvme0n1 (switch schedulers while doing IO)").is_none());
        assert!(status_line("    runtime  ...  10.2s").is_none());
        assert!(status_line("something [passed]").is_none());
    }

    #[test]
    fn a_passing_run_reads_whole() {
        let dir = canned("pass");
        let (rows, problems) = read_run(&dir).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let [p, f, n, _] = counts(&rows);
        assert_eq!((p, f, n), (4, 0, 2), "{rows:#?}");
        let r005 = rows.iter().find(|r| r.test == "block/005").unwrap();
        assert_eq!(r005.device.as_deref(), Some("nvme0n1"));
        assert_eq!(r005.runtime.as_deref(), Some("21.3s"));
        let r009 = rows.iter().find(|r| r.test == "block/009").unwrap();
        assert_eq!(r009.outcome, Outcome::NotRun);
        assert_eq!(r009.reason, "module scsi_debug is not available");
        let r001 = rows.iter().find(|r| r.test == "block/001").unwrap();
        assert_eq!(
            r001.reason,
            "driver sr_mod is not available; command setpci is not available"
        );
        assert!(judge(&rows, &["block/005".into()]).is_empty());
    }

    #[test]
    fn a_failure_gives_blktests_reason_and_fails() {
        let dir = canned("fail");
        let (rows, problems) = read_run(&dir).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let bad: Vec<&Row> = rows.iter().filter(|r| r.outcome == Outcome::Fail).collect();
        assert_eq!(bad.len(), 2, "{rows:#?}");
        assert_eq!(bad[0].test, "block/015");
        assert!(
            bad[0]
                .reason
                .starts_with("dmesg: something found in dmesg:"),
            "{}",
            bad[0].reason
        );
        assert!(
            bad[0].reason.contains("WARNING: CPU: 1 PID: 812"),
            "{}",
            bad[0].reason
        );
        assert!(
            bad[1].reason.starts_with("output: --- tests/block/021.out"),
            "{}",
            bad[1].reason
        );
        let j = judge(&rows, &[]);
        assert_eq!(j.len(), 2, "{j:?}");
    }

    #[test]
    fn a_required_test_not_run_fails_with_its_reason() {
        let (rows, _) = read_run(&canned("pass")).unwrap();
        let j = judge(&rows, &["block/009".into(), "block/027".into()]);
        assert_eq!(j.len(), 2, "{j:?}");
        assert!(
            j[0].contains("block/009 (required) was not run: module scsi_debug"),
            "{j:?}"
        );
        assert!(j[1].contains("block/027 (required) has no result"), "{j:?}");
    }

    #[test]
    fn an_unfinished_run_and_a_missing_results_file_fail() {
        let dir = canned("truncated");
        let (rows, problems) = read_run(&dir).unwrap();
        assert_eq!(rows.len(), 2, "{rows:#?}");
        assert!(
            problems.iter().any(|p| p.contains("did not finish")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("block/014 (nodev): no results file")),
            "{problems:?}"
        );
        assert!(judge(&[], &[]).iter().any(|p| p.contains("no test result")));
    }

    #[test]
    fn the_table_lists_every_row_with_its_reason() {
        let (mut rows, _) = read_run(&canned("pass")).unwrap();
        let cfg = super::super::source::Config::parse(
            "[source]\nurl = \"u\"\ncommit = \"a608cb56341e0f4cacf473f5e0ac6052f1f12de9\"\n\
             [run]\ngroups = [\"block\"]\ntest_devs = []\ntimeout = 1\n\
             [[exclude]]\ntest = \"block/008\"\nreason = \"hangs | here\"\n",
        )
        .unwrap();
        add_excluded(&mut rows, &cfg.exclude);
        let md = markdown(&rows);
        assert!(
            md.contains("| block/005 | nvme0n1 | pass |  | 21.3s |"),
            "{md}"
        );
        assert!(
            md.contains("| block/008 |  | excluded | hangs \\| here |  |"),
            "{md}"
        );
        assert!(
            md.contains("4 passed, 0 failed, 2 not run, 1 excluded"),
            "{md}"
        );
    }
}
