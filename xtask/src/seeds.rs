//! The seeds' published figures, `configs/seeds/*.toml`: the benchmarks
//! this project grew from, each file one publication (its source) and what
//! it measured, as data. A suite's report puts a seed's ratios and
//! orderings beside its own where the seed measured the same thing:
//! orderings and ratios, not absolute figures, since our devices are
//! models and our CPU is emulated.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Where a seed was published.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub author: String,
    /// The list, site or venue.
    pub published_in: String,
    pub year: u32,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub message_id: Option<String>,
    /// The setup as the seed describes it (device, kernel, tool).
    pub setup: String,
    /// Whether the figures were checked against the publication itself
    /// (false: as quoted elsewhere; the report says so).
    pub verified: bool,
}

/// A ratio the seed published: `scheduler`'s throughput at `jobs` jobs
/// over its throughput at `over_jobs` jobs, on `rw` (the jobs-1-8 suite).
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct JobsRatio {
    pub suite: String,
    pub rw: String,
    pub scheduler: String,
    pub jobs: u32,
    pub over_jobs: u32,
    pub value: f64,
}

/// A figure the seed published for one test under one scheduler (the
/// androbench suite: `test` is the suite's test name); `unit` as the seed
/// gives it.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    pub suite: String,
    pub test: String,
    pub scheduler: String,
    pub value: f64,
    #[serde(default)]
    pub sd: Option<f64>,
    pub unit: String,
}

/// One seed file.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct Seed {
    pub source: Source,
    /// What the seed published that this file lacks, and why.
    pub missing: String,
    /// The seed's scheduler names as ironlift's (`noop` = `rust-noop`);
    /// a name not listed is the same here.
    #[serde(default)]
    pub names: BTreeMap<String, String>,
    #[serde(default)]
    pub jobs_ratio: Vec<JobsRatio>,
    #[serde(default)]
    pub figure: Vec<Figure>,
}

impl Seed {
    /// The scheduler of ours that stands for the seed's `name`.
    pub fn ours<'a>(&'a self, name: &'a str) -> &'a str {
        self.names.get(name).map(String::as_str).unwrap_or(name)
    }

    /// "author, published_in year" with the URL or message id.
    pub fn cite(&self) -> String {
        let s = &self.source;
        let mut c = format!("{}, {} {}", s.author, s.published_in, s.year);
        if let Some(u) = &s.url {
            c.push_str(&format!(", <{u}>"));
        } else if let Some(m) = &s.message_id {
            c.push_str(&format!(", message-id `{m}`"));
        }
        if !s.verified {
            c.push_str(" (as quoted; not checked against the original)");
        }
        c
    }
}

impl Seed {
    /// A Markdown list item: the citation, the setup and what is missing.
    pub fn describe(&self) -> String {
        let missing = self
            .missing
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        format!(
            "- {}: {}. Not in the data: {missing}\n",
            self.cite(),
            self.source.setup
        )
    }
}

/// Every seed file in `root/configs/seeds`, by file name, in name order.
pub fn load(root: &Path) -> Result<Vec<(String, Seed)>> {
    let dir = root.join("configs/seeds");
    let mut out = Vec::new();
    let mut paths: Vec<_> = fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    for p in paths {
        let text = fs::read_to_string(&p)?;
        let seed: Seed =
            toml::from_str(&text).with_context(|| format!("parsing {}", p.display()))?;
        for r in &seed.jobs_ratio {
            if r.jobs == 0 || r.over_jobs == 0 || r.value.is_nan() || r.value <= 0.0 {
                bail!(
                    "{}: a jobs_ratio needs job counts and a value above 0",
                    p.display()
                );
            }
        }
        let name = p.file_stem().unwrap_or_default().to_string_lossy().into();
        out.push((name, seed));
    }
    Ok(out)
}

/// The seeds of `suite`, or none (with a note on stderr) when
/// configs/seeds cannot be read: a report renders without them.
pub fn for_suite(suite: &str) -> Vec<Seed> {
    match load(&crate::util::repo_root()) {
        Ok(all) => all
            .into_iter()
            .map(|(_, s)| s)
            .filter(|s| {
                s.jobs_ratio.iter().any(|r| r.suite == suite)
                    || s.figure.iter().any(|f| f.suite == suite)
            })
            .collect(),
        Err(e) => {
            crate::util::note(&format!("the seeds' figures are left out: {e:#}"));
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_seed_files_parse_and_cite_their_source() {
        let all = load(&crate::util::repo_root()).unwrap();
        assert!(!all.is_empty());
        for (name, s) in &all {
            assert!(
                s.source.url.is_some() || s.source.message_id.is_some() || !s.missing.is_empty(),
                "{name}: no URL, no message id, and missing says nothing"
            );
            assert!(
                !s.jobs_ratio.is_empty() || !s.figure.is_empty(),
                "{name}: no figures"
            );
            assert!(s.cite().contains(&s.source.year.to_string()));
        }
    }

    #[test]
    fn names_map_to_ours() {
        let s: Seed = toml::from_str(
            "missing = \"\"\n[source]\nauthor = \"a\"\npublished_in = \"b\"\nyear = 2014\n\
             setup = \"s\"\nverified = true\n[names]\nnoop = \"rust-noop\"\n",
        )
        .unwrap();
        assert_eq!(s.ours("noop"), "rust-noop");
        assert_eq!(s.ours("bfq"), "bfq");
        assert_eq!(s.cite(), "a, b 2014");
        let bad = toml::from_str::<Seed>("missing = \"\"\nother = 1\n");
        assert!(bad.is_err());
    }
}
