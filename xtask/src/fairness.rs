//! The in-guest fairness test's measurements as results: every attempt of
//! every scheduler (the judged ones and the controls, a retry included),
//! read from the guest's `fairness.tsv` and written beside its KTAP as
//! `fairness.json` and `fairness.md`, and shown in the terminal.
//!
//! The KTAP verdict stays the test's verdict; these files say what it was
//! made of: a scheduler that passed on its second attempt shows both.

use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

/// The band the ratio of level-0 to level-4 bytes is judged in (tests.sh's
/// `fair_in_band`): 2, the weights' ratio, ± 15 %.
pub const BAND: (f64, f64) = (1.70, 2.30);

/// One measurement: two readers at ionice levels 0 and 4 (BFQ weights 80
/// and 40) on the slow device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    pub scheduler: String,
    /// 1, or 2 for the measurement repeated after a first one outside the
    /// band.
    pub attempt: u32,
    /// Judged in the band (ours, weighted), or not: the negative control
    /// (mq-deadline, judged outside the band) and the reference (C bfq,
    /// only reported).
    pub judged: bool,
    /// `judged`, `control` or `reference`, as the guest recorded it.
    pub role: String,
    pub level0_bytes: u64,
    pub level4_bytes: u64,
    pub seconds: u32,
    /// How far apart the two readers finished.
    pub skew_ms: u64,
    /// The device's reads over the run, as the guest described them.
    pub requests: String,
    /// level0_bytes / level4_bytes.
    pub ratio: f64,
    pub in_band: bool,
}

/// Parses the guest's `fairness.tsv` (tests.sh's `fair_record`).
pub fn parse(text: &str) -> Result<Vec<Attempt>> {
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 8 {
            bail!(
                "fairness.tsv line {}: {} fields, want 8: {line:?}",
                i + 1,
                f.len()
            );
        }
        let num = |k: usize, what: &str| -> Result<u64> {
            f[k].trim()
                .parse()
                .with_context(|| format!("fairness.tsv line {}: {what} {:?}", i + 1, f[k]))
        };
        let judged = match f[2] {
            "judged" => true,
            "control" | "reference" => false,
            r => bail!("fairness.tsv line {}: role {r:?}", i + 1),
        };
        let (hi, lo) = (num(3, "level-0 bytes")?, num(4, "level-4 bytes")?);
        let ratio = if lo == 0 {
            f64::INFINITY
        } else {
            hi as f64 / lo as f64
        };
        out.push(Attempt {
            scheduler: f[0].to_string(),
            attempt: num(1, "attempt")? as u32,
            judged,
            role: f[2].to_string(),
            level0_bytes: hi,
            level4_bytes: lo,
            seconds: num(5, "seconds")? as u32,
            skew_ms: num(6, "skew")?,
            requests: f[7].to_string(),
            ratio,
            in_band: (BAND.0..=BAND.1).contains(&ratio),
        });
    }
    Ok(out)
}

/// The attempts as a Markdown table.
pub fn table(attempts: &[Attempt]) -> String {
    let mut s = String::from(
        "| scheduler | attempt | judged | level 0 MB | level 4 MB | ratio (want 1.70..2.30) | MB/s together | device reads |\n\
         |---|---:|---|---:|---:|---:|---:|---|\n",
    );
    for a in attempts {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {:.1} | {:.3}{} | {:.2} | {} |",
            a.scheduler,
            a.attempt,
            match a.role.as_str() {
                "judged" => "in the band",
                "control" => "outside the band (negative control)",
                _ => "no (reference)",
            },
            a.level0_bytes as f64 / 1e6,
            a.level4_bytes as f64 / 1e6,
            a.ratio,
            if a.in_band { "" } else { " (outside)" },
            (a.level0_bytes + a.level4_bytes) as f64 / 1e6 / f64::from(a.seconds.max(1)),
            a.requests
        );
    }
    s
}

/// Reads `out`/fairness.tsv, if the guest wrote one, and writes
/// `fairness.json` and `fairness.md` beside it; returns the table.
pub fn collect(out: &Path, kernel: &str) -> Result<Option<String>> {
    let tsv = out.join("fairness.tsv");
    let Ok(text) = fs::read_to_string(&tsv) else {
        return Ok(None);
    };
    let attempts = parse(&text)?;
    #[derive(Serialize)]
    struct File<'a> {
        schema: &'static str,
        kernel: &'a str,
        band: (f64, f64),
        attempts: &'a [Attempt],
    }
    let json = serde_json::to_string_pretty(&File {
        schema: "ironlift-fairness/1",
        kernel,
        band: BAND,
        attempts: &attempts,
    })?;
    fs::write(out.join("fairness.json"), json + "\n")?;
    let md = format!(
        "# fairness ({kernel} kernel)\n\nTwo sequential readers at ionice levels 0 and 4 \
         (BFQ weights 80 and 40) on the slow null_blk; the ratio of their bytes is judged \
         for our weighted schedulers, each measured again once if outside the band.\n\n{}",
        table(&attempts)
    );
    fs::write(out.join("fairness.md"), &md)?;
    Ok(Some(table(&attempts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TSV: &str = "mq-deadline\t1\tcontrol\t565300000\t564500000\t20\t49\tnr_requests 4, 21931 requests of 62.9 KiB on average, 64228 bios merged\n\
        bfq\t1\treference\t269900000\t134200000\t20\t204\tnr_requests 4\n\
        rust-bfq\t1\tjudged\t300000000\t180000000\t20\t10\tnr_requests 4\n\
        rust-bfq\t2\tjudged\t187000000\t93100000\t20\t10\tnr_requests 4\n";

    #[test]
    fn both_attempts_of_a_retried_scheduler_are_kept() {
        let a = parse(TSV).unwrap();
        assert_eq!(a.len(), 4);
        let rb: Vec<_> = a.iter().filter(|x| x.scheduler == "rust-bfq").collect();
        assert_eq!(rb.iter().map(|x| x.attempt).collect::<Vec<_>>(), [1, 2]);
        assert!(!rb[0].in_band && rb[1].in_band);
        assert!(!a[0].judged && a[2].judged);
        let t = table(&a);
        assert!(
            t.contains("| rust-bfq | 1 | in the band | 300.0 | 180.0 | 1.667 (outside) |"),
            "{t}"
        );
        assert!(
            t.contains("| rust-bfq | 2 | in the band | 187.0 | 93.1 | 2.009 |"),
            "{t}"
        );
        assert!(
            t.contains("| mq-deadline | 1 | outside the band (negative control) |"),
            "{t}"
        );
        assert!(t.contains("| bfq | 1 | no (reference) |"), "{t}");
    }

    #[test]
    fn a_malformed_line_is_an_error_that_names_it() {
        let e = parse("rust-bfq\t1\tjudged\t1\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("4 fields"), "{e}");
        let e = parse("rust-bfq\t1\tmaybe\t1\t1\t20\t0\tx\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("role"), "{e}");
    }
}
