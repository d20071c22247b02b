//! A KTAP (version 1) parser, and a scan of the guest console for kernel
//! trouble (oops, panic, WARN, BUG, KASAN, lockdep, kmemleak).
//!
//! The format is the kernel's own (Documentation/dev-tools/ktap.rst): a
//! version line, a plan `1..N`, then `ok`/`not ok` lines, with subtests
//! indented by four spaces before the line that gives their parent's result.
//! The verdict is strict: a run passes only if every test passes or is
//! skipped, every planned test has a result, and the structure is whole.

use anyhow::{bail, Context, Result};
use std::fmt;
use std::fs;
use std::path::Path;

/// A test's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    Skip,
}

/// One test result, with its subtests.
#[derive(Clone, Debug)]
pub struct TestResult {
    pub number: usize,
    pub name: String,
    pub status: Status,
    /// Text after `#` on the result line (a SKIP reason, a failure note).
    pub directive: Option<String>,
    /// `# ...` lines seen at this test's level before its result line.
    pub diagnostics: Vec<String>,
    pub subtests: Vec<TestResult>,
}

/// A parsed KTAP document.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub version: Option<u32>,
    pub plan: Option<usize>,
    pub tests: Vec<TestResult>,
    /// Structural problems: no version line, no plan, missing or
    /// out-of-order results, a subtest left open, `Bail out!`.
    pub problems: Vec<String>,
}

impl Report {
    /// Counts of leaf results (tests without subtests count themselves).
    pub fn counts(&self) -> (usize, usize, usize) {
        fn walk(t: &TestResult, c: &mut (usize, usize, usize)) {
            if t.subtests.is_empty() {
                match t.status {
                    Status::Pass => c.0 += 1,
                    Status::Fail => c.1 += 1,
                    Status::Skip => c.2 += 1,
                }
            } else {
                t.subtests.iter().for_each(|s| walk(s, c));
            }
        }
        let mut c = (0, 0, 0);
        self.tests.iter().for_each(|t| walk(t, &mut c));
        c
    }

    /// Every failed test, as a path like `write_verify/nvme0n1_bfq`, with
    /// its directive and diagnostics.
    pub fn failures(&self) -> Vec<String> {
        fn walk(t: &TestResult, prefix: &str, out: &mut Vec<String>) {
            let path = if prefix.is_empty() {
                t.name.clone()
            } else {
                format!("{prefix}/{}", t.name)
            };
            let failed_children = t.subtests.iter().any(|s| s.status == Status::Fail);
            if t.status == Status::Fail && !failed_children {
                let mut s = path.clone();
                if let Some(d) = &t.directive {
                    s.push_str(&format!(" ({d})"));
                }
                for d in &t.diagnostics {
                    s.push_str(&format!("\n      # {d}"));
                }
                out.push(s);
            }
            t.subtests.iter().for_each(|c| walk(c, &path, out));
        }
        let mut out = Vec::new();
        self.tests.iter().for_each(|t| walk(t, "", &mut out));
        out
    }

    /// Every skipped leaf as (path, reason): a leaf skipped itself, or a
    /// test whose every case was skipped with no reason of its own.
    pub fn skips(&self) -> Vec<(String, String)> {
        self.leaves(|t| {
            (t.status == Status::Skip).then(|| {
                t.directive
                    .as_deref()
                    .and_then(skip_reason)
                    .unwrap_or("")
                    .to_string()
            })
        })
    }

    /// Every leaf that passed on a retry (`ok N name # retried ...`), as
    /// (path, the directive).
    pub fn retried(&self) -> Vec<(String, String)> {
        self.leaves(|t| {
            t.directive
                .as_deref()
                .filter(|d| t.status == Status::Pass && d.starts_with("retried"))
                .map(String::from)
        })
    }

    /// (path, what `pick` says) for each leaf it says something of.
    fn leaves(&self, pick: impl Fn(&TestResult) -> Option<String>) -> Vec<(String, String)> {
        fn walk(
            t: &TestResult,
            prefix: &str,
            pick: &dyn Fn(&TestResult) -> Option<String>,
            out: &mut Vec<(String, String)>,
        ) {
            let path = if prefix.is_empty() {
                t.name.clone()
            } else {
                format!("{prefix}/{}", t.name)
            };
            if t.subtests.is_empty() {
                if let Some(x) = pick(t) {
                    out.push((path, x));
                }
            } else {
                t.subtests.iter().for_each(|c| walk(c, &path, pick, out));
            }
        }
        let mut out = Vec::new();
        self.tests.iter().for_each(|t| walk(t, "", &pick, &mut out));
        out
    }

    /// The strict verdict.
    pub fn passed(&self) -> bool {
        self.problems.is_empty()
            && !self.tests.is_empty()
            && self.counts().1 == 0
            && self.tests.iter().all(|t| t.status != Status::Fail)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (p, x, s) = self.counts();
        if let (Some(v), Some(n)) = (self.version, self.plan) {
            write!(f, "KTAP v{v}, {n} top-level tests: ")?;
        }
        write!(f, "{p} passed, {x} failed, {s} skipped")?;
        for p in &self.problems {
            write!(f, "\n  problem: {p}")?;
        }
        for t in self.failures() {
            write!(f, "\n  not ok: {t}")?;
        }
        Ok(())
    }
}

/// Removes a printk timestamp (`[   12.345678] `) and carriage returns.
fn clean(line: &str) -> &str {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Some(rest) = line.strip_prefix('[') {
        if let Some(end) = rest.find("] ") {
            let ts = &rest[..end];
            if ts.trim().chars().all(|c| c.is_ascii_digit() || c == '.') && !ts.trim().is_empty() {
                return &rest[end + 2..];
            }
        }
    }
    line
}

struct Line<'a> {
    indent: usize,
    text: &'a str,
}

fn lines(text: &str) -> Vec<Line<'_>> {
    text.lines()
        .map(clean)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let indent = l.len() - l.trim_start_matches(' ').len();
            Line {
                indent,
                text: l.trim(),
            }
        })
        .collect()
}

/// `ok 3 name # directive` / `not ok 3 - name`.
fn result_line(text: &str) -> Option<(bool, usize, String, Option<String>)> {
    let (ok, rest) = if let Some(r) = text.strip_prefix("not ok ") {
        (false, r)
    } else if let Some(r) = text.strip_prefix("ok ") {
        (true, r)
    } else {
        return None;
    };
    let (num, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    let number = num.parse().ok()?;
    let (name, directive) = match rest.split_once('#') {
        Some((n, d)) => (n, Some(d.trim().to_string())),
        None => (rest, None),
    };
    let name = name.trim().trim_start_matches("- ").trim().to_string();
    Some((ok, number, name, directive))
}

/// The reason of a `SKIP` directive (`SKIP why` gives `why`), or None for
/// any other directive.
fn skip_reason(directive: &str) -> Option<&str> {
    let d = directive.trim_start();
    d.get(..4)
        .filter(|k| k.eq_ignore_ascii_case("SKIP"))
        .map(|_| d[4..].trim())
}

struct Level {
    version: Option<u32>,
    plan: Option<usize>,
    /// The plan line's `# SKIP reason`, if any (`1..0 # SKIP reason`).
    plan_skip: Option<String>,
    name: Option<String>,
    tests: Vec<TestResult>,
    problems: Vec<String>,
}

// Long: one state machine over a level's lines; its arms share the
// level's state and read best side by side.
fn parse_level(ls: &[Line<'_>], pos: &mut usize, indent: usize, what: &str) -> Level {
    let mut lv = Level {
        version: None,
        plan: None,
        plan_skip: None,
        name: None,
        tests: Vec::new(),
        problems: Vec::new(),
    };
    let mut pending: Option<Level> = None;
    let mut diags: Vec<String> = Vec::new();
    while *pos < ls.len() {
        let l = &ls[*pos];
        if l.indent < indent {
            break;
        }
        if l.indent > indent {
            let child = parse_level(ls, pos, l.indent, what);
            if let Some(old) = pending.replace(child) {
                let n = old.name.unwrap_or_else(|| "?".into());
                lv.problems
                    .push(format!("{what}: subtest '{n}' has no result line"));
            }
            continue;
        }
        *pos += 1;
        let t = l.text;
        if let Some(v) = t
            .strip_prefix("KTAP version ")
            .or_else(|| t.strip_prefix("TAP version "))
        {
            lv.version = v.trim().parse().ok();
        } else if let Some(n) = t.strip_prefix("1..") {
            let (n, directive) = n.split_once('#').unwrap_or((n, ""));
            match n.trim().parse() {
                Ok(n) => lv.plan = Some(n),
                Err(_) => lv.problems.push(format!("{what}: bad plan line '{t}'")),
            }
            lv.plan_skip = skip_reason(directive.trim()).map(String::from);
        } else if let Some(name) = t.strip_prefix("# Subtest:") {
            lv.name = Some(name.trim().to_string());
        } else if let Some((ok, number, name, directive)) = result_line(t) {
            // `# SKIP`: not run. A failure marked `# TODO` is still a
            // failure: a known failure that does not count is a test that
            // cannot fail.
            let skip = directive.as_deref().and_then(skip_reason).is_some();
            let mut directive = directive;
            let mut status = match (ok, skip) {
                (_, true) => Status::Skip,
                (true, false) => Status::Pass,
                (false, false) => Status::Fail,
            };
            let mut subtests = Vec::new();
            if let Some(child) = pending.take() {
                let cname = child.name.clone().unwrap_or_else(|| name.clone());
                let sub_what = format!("{what}/{cname}");
                check_level(&child, &sub_what, false, &mut lv.problems);
                lv.problems.extend(child.problems);
                if status == Status::Pass && child.tests.iter().any(|c| c.status == Status::Fail) {
                    lv.problems
                        .push(format!("{sub_what}: reported ok although a subtest failed"));
                    status = Status::Fail;
                }
                // A test that ran no case did not pass: `1..0 # SKIP why`
                // makes it a skip; a bare `1..0` under `ok` is a test that
                // cannot fail.
                if status == Status::Pass && child.plan == Some(0) {
                    match &child.plan_skip {
                        Some(why) => {
                            status = Status::Skip;
                            directive = Some(format!("SKIP {why}"));
                        }
                        None => {
                            lv.problems.push(format!(
                                "{sub_what}: reported ok but ran no case (plan 1..0 without SKIP)"
                            ));
                            status = Status::Fail;
                        }
                    }
                }
                subtests = child.tests;
            }
            lv.tests.push(TestResult {
                number,
                name,
                status,
                directive,
                diagnostics: std::mem::take(&mut diags),
                subtests,
            });
        } else if let Some(d) = t.strip_prefix('#') {
            diags.push(d.trim().to_string());
        } else if t.starts_with("Bail out!") {
            lv.problems.push(format!("{what}: {t}"));
        }
        // Anything else is free text, which KTAP allows.
    }
    if let Some(child) = pending {
        let n = child.name.unwrap_or_else(|| "?".into());
        lv.problems.push(format!(
            "{what}: subtest '{n}' has no result line (output truncated?)"
        ));
        lv.problems.extend(child.problems);
    }
    lv
}

fn check_level(lv: &Level, what: &str, top: bool, problems: &mut Vec<String>) {
    if top && lv.version.is_none() {
        problems.push(format!("{what}: no 'KTAP version' line"));
    }
    match lv.plan {
        None if top => problems.push(format!("{what}: no plan line (1..N)")),
        None => {}
        Some(n) => {
            let got: Vec<usize> = lv.tests.iter().map(|t| t.number).collect();
            let missing: Vec<usize> = (1..=n).filter(|i| !got.contains(i)).collect();
            if !missing.is_empty() {
                problems.push(format!(
                    "{what}: plan 1..{n} but no result for test(s) {missing:?} (output truncated?)"
                ));
            }
            let extra: Vec<usize> = got.iter().copied().filter(|&i| i == 0 || i > n).collect();
            if !extra.is_empty() {
                problems.push(format!("{what}: results {extra:?} outside the plan 1..{n}"));
            }
        }
    }
    for w in lv.tests.windows(2) {
        if w[1].number != w[0].number + 1 {
            problems.push(format!(
                "{what}: result {} follows {} (out of order or duplicated)",
                w[1].number, w[0].number
            ));
        }
    }
}

/// Parses a KTAP document. `what` names it in problem messages.
pub fn parse(text: &str, what: &str) -> Report {
    let ls = lines(text);
    // Start at the first version line, if free text comes before it.
    let start = ls
        .iter()
        .position(|l| l.text.starts_with("KTAP version") || l.text.starts_with("TAP version"))
        .unwrap_or(0);
    let indent = ls.get(start).map(|l| l.indent).unwrap_or(0);
    let mut pos = start;
    let lv = parse_level(&ls, &mut pos, indent, what);
    let mut problems = Vec::new();
    check_level(&lv, what, true, &mut problems);
    problems.extend(lv.problems);
    if pos < ls.len() {
        problems.push(format!(
            "{what}: unparsed text after the top level at '{}'",
            ls[pos].text
        ));
    }
    Report {
        version: lv.version,
        plan: lv.plan,
        tests: lv.tests,
        problems,
    }
}

/// Console lines that mean the kernel is in trouble.
const TROUBLE: &[&str] = &[
    "Oops:",
    "Kernel panic",
    "BUG:",
    "WARNING:",
    "general protection fault",
    "KASAN:",
    "UBSAN:",
    "unreferenced object",
    "possible circular locking",
    "inconsistent lock state",
    "scheduling while atomic",
    "rcu_sched self-detected stall",
    "rcu: INFO: rcu_preempt detected stalls",
    "soft lockup",
    "hung_task",
    "blocked for more than",
    "list_add corruption",
    "list_del corruption",
    "panicked at",
];

/// The guest's line before each top-level test (`qemu/guest/tests.sh`).
const TEST_MARKER: &str = "IRONLIFT: test ";

/// How many console lines a report may take before it is cut.
const REPORT_MAX_LINES: usize = 80;

/// Reports of kernel trouble on the console, each one whole (from its first
/// line to the kernel's end marker, the next test's marker, or
/// [`REPORT_MAX_LINES`]) and headed by when it happened: during boot, or
/// during which in-guest test (the guest's `IRONLIFT: test N: name` lines).
pub fn console_problems(console: &str) -> Vec<String> {
    let all: Vec<&str> = console.lines().map(clean).collect();
    let mut out = Vec::new();
    let mut during = "during boot, before the first test".to_string();
    let mut i = 0;
    while i < all.len() {
        let l = all[i];
        if let Some(t) = l.strip_prefix(TEST_MARKER) {
            during = format!("during test {t}");
            i += 1;
            continue;
        }
        if !TROUBLE.iter().any(|t| l.contains(t)) {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end < all.len() && end - i < REPORT_MAX_LINES {
            let e = all[end];
            if e.starts_with(TEST_MARKER) {
                break;
            }
            end += 1;
            // KASAN and kmemleak close with a rule, WARN/BUG with an end trace.
            if e.starts_with("---[ end trace") || (e.len() > 20 && e.bytes().all(|b| b == b'=')) {
                break;
            }
        }
        let mut block = format!("({during})\n{}", all[i..end].join("\n"));
        if end - i == REPORT_MAX_LINES {
            block.push_str("\n[... cut; the whole report is in the console log]");
        }
        out.push(block);
        i = end;
    }
    out
}

/// `cargo xtask ktap`: the verdict on a KTAP log, and on a console log's
/// kernel reports.
pub fn cmd(file: &Path, console: Option<&Path>) -> Result<()> {
    let text = fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let r = parse(&text, &file.display().to_string());
    println!("{r}");
    let mut ok = r.passed();
    if let Some(c) = console {
        let problems = console_problems(&fs::read_to_string(c)?);
        for p in &problems {
            println!("kernel trouble in {}:\n{p}", c.display());
        }
        ok &= problems.is_empty();
    }
    if !ok {
        bail!("KTAP verdict: fail");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canned(name: &str) -> String {
        let p = crate::util::repo_root().join("tests/ktap").join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn passing_nested_log_passes() {
        let r = parse(&canned("pass-nested.ktap"), "pass");
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert!(r.passed());
        assert_eq!(r.counts(), (5, 0, 0));
        assert_eq!(r.tests[1].subtests[1].name, "vda_bfq");
    }

    #[test]
    fn failing_subtest_fails_and_is_named() {
        let r = parse(&canned("fail-nested.ktap"), "fail");
        assert!(!r.passed());
        assert_eq!(r.counts().1, 1);
        let f = r.failures();
        assert_eq!(f.len(), 1);
        assert!(f[0].starts_with("write_verify/nvme0n1_kyber"), "{f:?}");
        assert!(f[0].contains("fio verify failed"), "{f:?}");
        assert!(f[0].contains("crc32c mismatch"), "{f:?}");
    }

    #[test]
    fn skipped_tests_do_not_fail() {
        let r = parse(&canned("skip.ktap"), "skip");
        assert!(r.passed(), "{r}");
        assert_eq!(r.counts(), (1, 0, 2));
    }

    #[test]
    fn parent_ok_with_failed_child_fails() {
        let r = parse(&canned("inconsistent.ktap"), "inc");
        assert!(!r.passed());
        assert!(
            r.problems.iter().any(|p| p.contains("reported ok")),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn truncated_log_fails_with_missing_results() {
        let r = parse(&canned("truncated.ktap"), "trunc");
        assert!(!r.passed());
        assert!(
            r.problems.iter().any(|p| p.contains("no result line")),
            "{:?}",
            r.problems
        );
        assert!(
            r.problems
                .iter()
                .any(|p| p.contains("plan 1..3 but no result")),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn missing_plan_and_version_fail() {
        let r = parse("ok 1 a\nok 2 b\n", "bare");
        assert!(!r.passed());
        assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
        let r = parse("", "empty");
        assert!(!r.passed());
    }

    #[test]
    fn kernel_timestamps_are_stripped() {
        let r = parse(&canned("kunit-console.log"), "kunit");
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert!(r.passed());
        assert_eq!(r.counts(), (2, 0, 0));
    }

    #[test]
    fn out_of_order_results_fail() {
        let r = parse("KTAP version 1\n1..2\nok 2 b\nok 1 a\n", "order");
        assert!(!r.passed());
    }

    #[test]
    fn empty_plan_with_skip_is_a_skip_with_its_reason() {
        let r = parse(
            "KTAP version 1\n1..1\n    1..0 # SKIP nothing to test\nok 1 a\n",
            "p0",
        );
        assert!(r.passed(), "{r}");
        assert_eq!(r.counts(), (0, 0, 1));
        assert_eq!(
            r.skips(),
            [("a".to_string(), "nothing to test".to_string())]
        );
    }

    #[test]
    fn ok_with_no_case_run_fails() {
        let r = parse("KTAP version 1\n1..1\n    1..0\nok 1 a\n", "p0");
        assert!(!r.passed(), "{r}");
        assert!(
            r.problems.iter().any(|p| p.contains("ran no case")),
            "{:?}",
            r.problems
        );
    }

    #[test]
    fn skips_and_retries_are_named_with_their_reasons() {
        let r = parse(&canned("skip.ktap"), "skip");
        assert_eq!(
            r.skips(),
            [
                ("rotational".to_string(), "no rotational device".to_string()),
                (
                    "debug_only".to_string(),
                    "needs the debug kernel".to_string()
                )
            ]
        );
        let r = parse(
            "KTAP version 1\n1..1\n    1..2\n    ok 1 x # retried: 1.62 then 2.01\n    ok 2 y\nok 1 fairness\n",
            "retry",
        );
        assert!(r.passed(), "{r}");
        assert_eq!(
            r.retried(),
            [(
                "fairness/x".to_string(),
                "retried: 1.62 then 2.01".to_string()
            )]
        );
    }

    #[test]
    fn todo_failure_counts_as_a_failure() {
        let r = parse(
            "KTAP version 1\n1..2\nok 1 a\nnot ok 2 b # TODO known bug\n",
            "todo",
        );
        assert!(!r.passed(), "{r}");
        assert_eq!(r.tests[1].directive.as_deref(), Some("TODO known bug"));
        // A plain failure still fails.
        assert!(!parse("KTAP version 1\n1..1\nnot ok 1 b # timed out\n", "x").passed());
    }

    #[test]
    fn bail_out_fails() {
        let r = parse(
            "KTAP version 1\n1..1\nBail out! disk gone\nok 1 a\n",
            "bail",
        );
        assert!(!r.passed());
    }

    #[test]
    fn oops_in_console_is_found() {
        let p = console_problems(&canned("oops-console.log"));
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(p[0].contains("BUG: kernel NULL pointer dereference"));
        assert!(p[1].contains("WARNING: CPU: 1 PID: 63"));
        // Each report is whole and says when it happened.
        assert!(p[0].starts_with("(during boot"), "{}", p[0]);
        assert!(
            p[0].contains("__blk_mq_sched_dispatch_requests"),
            "{}",
            p[0]
        );
        assert!(!p[0].contains("IRONLIFT"), "{}", p[0]);
        assert!(
            p[1].starts_with("(during test 2: write_verify)"),
            "{}",
            p[1]
        );
    }

    #[test]
    fn kasan_report_is_kept_whole_up_to_its_rule() {
        let p = console_problems(&canned("kasan-console.log"));
        assert_eq!(p.len(), 1, "{p:#?}");
        assert!(p[0].starts_with("(during boot"), "{}", p[0]);
        assert!(p[0].contains("BUG: KASAN: wild-memory-access"), "{}", p[0]);
        // The frames past the first few lines are what says where it came from.
        assert!(p[0].contains("identify_boot_cpu"), "{}", p[0]);
        assert!(!p[0].contains("Freeing unused"), "{}", p[0]);
    }

    #[test]
    fn clean_console_has_no_problems() {
        assert!(console_problems(&canned("kunit-console.log")).is_empty());
    }
}
