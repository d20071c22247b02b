//! `cargo xtask test`'s closing summary: passed, failed and skipped counts
//! for the host and the guest, every skip by name with its reason, every
//! test that passed only on a retry, and the verdict on skips.
//!
//! A skip is a test that did not run, so it never counts as a pass: each
//! one is named, and any skip that `configs/expected-skips.toml` does not
//! list (with its reason) fails the run. Host tests report a deliberate
//! skip through the file `IRONLIFT_SKIP_LOG` names; the guest's through
//! KTAP's `# SKIP`.

use anyhow::{Context, Result};
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// The allow-list of skips, relative to the repository's root.
pub const EXPECTED_SKIPS: &str = "configs/expected-skips.toml";

/// Passed, failed and skipped tests of one side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Counts {
    fn line(&self) -> String {
        format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        )
    }
}

/// A test that did not run: its name (`host/NAME` or `FLAVOR/TEST/CASE`)
/// and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip {
    pub name: String,
    pub reason: String,
}

/// One entry of the allow-list: the test, the reason it gives when it
/// skips (`says`: the same test skipping for another reason is not
/// expected), and why that skip is acceptable.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub test: String,
    pub says: String,
    pub reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpectedFile {
    skip: Vec<Expected>,
}

/// Reads the allow-list; every entry needs a test name and a reason.
pub fn expected(root: &Path) -> Result<Vec<Expected>> {
    let path = root.join(EXPECTED_SKIPS);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    parse_expected(&text).with_context(|| format!("in {}", path.display()))
}

fn parse_expected(text: &str) -> Result<Vec<Expected>> {
    let f: ExpectedFile = toml::from_str(text)?;
    for e in &f.skip {
        anyhow::ensure!(
            [&e.test, &e.says, &e.reason]
                .iter()
                .all(|f| !f.trim().is_empty()),
            "an entry without a test name, what it says or a reason: {e:?}"
        );
    }
    Ok(f.skip)
}

/// What `cargo xtask test` ran.
#[derive(Debug, Default)]
pub struct Summary {
    pub host: Counts,
    pub guest: Counts,
    pub skips: Vec<Skip>,
    /// Tests that passed on a second attempt: (name, what the guest said).
    pub retried: Vec<(String, String)>,
}

impl Summary {
    /// Adds one guest kernel's counts, its skips and retries as
    /// (KTAP path, reason), named `FLAVOR/PATH`.
    pub fn add_guest(
        &mut self,
        flavor: &str,
        c: Counts,
        skips: Vec<(String, String)>,
        retried: Vec<(String, String)>,
    ) {
        self.guest.passed += c.passed;
        self.guest.failed += c.failed;
        self.guest.skipped += c.skipped;
        let name = |path: String| format!("{flavor}/{path}");
        self.skips
            .extend(skips.into_iter().map(|(path, reason)| Skip {
                name: name(path),
                reason,
            }));
        self.retried
            .extend(retried.into_iter().map(|(path, why)| (name(path), why)));
    }

    /// The skips the allow-list does not name.
    pub fn unexpected<'a>(&'a self, expected: &[Expected]) -> Vec<&'a Skip> {
        self.skips
            .iter()
            .filter(|s| {
                !expected
                    .iter()
                    .any(|e| e.test == s.name && e.says == s.reason)
            })
            .collect()
    }

    /// The summary as printed: skips and retries by name, then the counts,
    /// the last line giving host and guest.
    pub fn render(&self, expected: &[Expected]) -> String {
        let mut s = String::new();
        let unexpected = self.unexpected(expected);
        if !self.skips.is_empty() {
            let listed = self.skips.len() - unexpected.len();
            let _ = writeln!(s, "skipped ({listed} in {EXPECTED_SKIPS}):");
            for k in &self.skips {
                let tag = if unexpected.contains(&k) {
                    "UNEXPECTED "
                } else {
                    ""
                };
                let _ = writeln!(s, "  {tag}{}: {}", k.name, k.reason);
            }
        }
        if !self.retried.is_empty() {
            let _ = writeln!(s, "passed on a retry:");
            for (name, why) in &self.retried {
                let _ = writeln!(s, "  {name}: {why}");
            }
        }
        let total = Counts {
            passed: self.host.passed + self.guest.passed,
            failed: self.host.failed + self.guest.failed,
            skipped: self.host.skipped + self.guest.skipped,
        };
        let _ = writeln!(
            s,
            "{} unexpected skips, {} passed on a retry",
            unexpected.len(),
            self.retried.len()
        );
        let _ = writeln!(s, "total: {}", total.line());
        let _ = write!(
            s,
            "host: {}; guest: {}",
            self.host.line(),
            self.guest.line()
        );
        s
    }
}

/// Counts from `cargo test`'s output: the sum of its `test result:` lines,
/// less the tests that reported a deliberate skip (`skip_log`: lines of
/// `name<TAB>reason`, which cargo counts as passed), with tests marked
/// `#[ignore]` as skips named by their `test NAME ... ignored` lines.
pub fn cargo_test(output: &str, skip_log: &str) -> (Counts, Vec<Skip>) {
    let mut c = Counts::default();
    let mut skips: Vec<Skip> = Vec::new();
    for l in output.lines() {
        let l = l.trim();
        if let Some(r) = l.strip_prefix("test result: ") {
            for part in r.split(';') {
                let mut w = part.split_whitespace().rev();
                let (Some(what), Some(n)) = (w.next(), w.next()) else {
                    continue;
                };
                let n: usize = n.parse().unwrap_or(0);
                match what {
                    "passed" => c.passed += n,
                    "failed" => c.failed += n,
                    "ignored" => c.skipped += n,
                    _ => {}
                }
            }
        } else if let Some(name) = l
            .strip_prefix("test ")
            .and_then(|r| r.split_once(" ... ignored"))
            .map(|(n, _)| n)
        {
            skips.push(Skip {
                name: format!("host/{name}"),
                reason: "#[ignore]".into(),
            });
        }
    }
    for l in skip_log.lines().filter(|l| !l.trim().is_empty()) {
        let (name, reason) = l.split_once('\t').unwrap_or((l, ""));
        skips.push(Skip {
            name: format!("host/{name}"),
            reason: reason.to_string(),
        });
        c.passed = c.passed.saturating_sub(1);
        c.skipped += 1;
    }
    (c, skips)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CARGO: &str = "\
running 3 tests
test a::one ... ok
test a::two ... ignored, needs KVM
test a::three ... ok

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

running 2 tests
test host_bench_on_null_blk ... ok
test host_bench_on_a_loop_device ... FAILED

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.2s
";

    #[test]
    fn cargo_counts_take_logged_skips_out_of_the_passes() {
        let (c, skips) = cargo_test(CARGO, "host_bench_on_null_blk\tno null_blk\n");
        assert_eq!(
            c,
            Counts {
                passed: 2,
                failed: 1,
                skipped: 2
            }
        );
        assert_eq!(
            skips,
            [
                Skip {
                    name: "host/a::two".into(),
                    reason: "#[ignore]".into()
                },
                Skip {
                    name: "host/host_bench_on_null_blk".into(),
                    reason: "no null_blk".into()
                }
            ]
        );
    }

    #[test]
    fn an_unlisted_skip_is_unexpected_and_said_so() {
        let s = Summary {
            host: Counts {
                passed: 5,
                failed: 0,
                skipped: 1,
            },
            guest: Counts {
                passed: 7,
                failed: 0,
                skipped: 1,
            },
            skips: vec![
                Skip {
                    name: "host/x".into(),
                    reason: "no null_blk".into(),
                },
                Skip {
                    name: "debug/fairness/rust-bfq".into(),
                    reason: "ratio judged on the base kernel only".into(),
                },
            ],
            retried: vec![("base/fairness/rust-bfq".into(), "retried".into())],
        };
        let listed = vec![
            Expected {
                test: "debug/fairness/rust-bfq".into(),
                says: "ratio judged on the base kernel only".into(),
                reason: "the debug kernel's CPU decides".into(),
            },
            Expected {
                test: "host/x".into(),
                says: "not root".into(),
                reason: "another reason than the one it gave".into(),
            },
        ];
        let u = s.unexpected(&listed);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].name, "host/x");
        let text = s.render(&listed);
        assert!(text.contains("  UNEXPECTED host/x: no null_blk"), "{text}");
        assert!(text.contains("  debug/fairness/rust-bfq: ratio"), "{text}");
        assert!(text.contains("base/fairness/rust-bfq: retried"), "{text}");
        assert_eq!(
            text.lines().last().unwrap(),
            "host: 5 passed, 0 failed, 1 skipped; guest: 7 passed, 0 failed, 1 skipped"
        );
        assert!(text.contains("\ntotal: 12 passed, 0 failed, 2 skipped\n"));
        assert!(s.unexpected(&[]).len() == 2);
    }

    #[test]
    fn the_allow_list_parses_and_every_entry_has_a_reason() {
        let list = expected(&crate::util::repo_root()).unwrap();
        assert!(list.iter().all(|e| !e.reason.is_empty()));
        assert!(
            parse_expected("[[skip]]\ntest = \"host/x\"\nsays = \"why\"\nreason = \"\"\n").is_err()
        );
        assert!(parse_expected("[[skip]]\ntest = \"host/x\"\nreason = \"why\"\n").is_err());
    }
}
