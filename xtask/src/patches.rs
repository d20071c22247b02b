//! `cargo xtask patches`: ironlift's kernel additions as a `git
//! format-patch` series with a cover letter, checked with checkpatch.
//!
//! `modules/linux/series.toml` (6.12's; another kernel's is
//! `modules/linux/<kernel>/series.toml`) says which commit carries which
//! patch and which added file, with its subject and message; every patch
//! and file of that kernel's additions must be in exactly one commit. The
//! commits are made on top of the cache's pristine tree of the kernel
//! chosen with `--kernel` (without touching its files),
//! exported with `git format-patch --cover-letter`, then re-applied one by
//! one onto pristine as `git am` would, and run through
//! `scripts/checkpatch.pl --strict`.

use crate::kernel::Additions;
use crate::kver::Kver;
use crate::util::{self, note, run, step};
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Deserialize)]
struct Series {
    author: String,
    cover: Cover,
    commit: Vec<CommitSpec>,
}

#[derive(Deserialize)]
struct Cover {
    subject: String,
    /// Markdown-free text; `{results}` is replaced by the latest benchmark
    /// table if one is given with --results.
    body: String,
}

#[derive(Deserialize)]
struct CommitSpec {
    subject: String,
    body: String,
    #[serde(default)]
    patches: Vec<String>,
    #[serde(default)]
    files: Vec<String>,
}

fn git(dir: &Path, index: Option<&Path>) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir);
    if let Some(i) = index {
        c.env("GIT_INDEX_FILE", i);
    }
    c
}

// Long: the series' steps in order (scratch repo, one commit per patch,
// format-patch, cover letter), each a few lines.
/// Builds the series into `out`; returns the patch files.
pub fn write_series(
    src: &Path,
    out: &Path,
    results: Option<&str>,
    kernel: Kver,
) -> Result<Vec<PathBuf>> {
    let root = util::repo_root();
    let linux = root.join("modules/linux");
    // 6.12's series is modules/linux/series.toml, another kernel's is in
    // its folder (see `Additions`).
    let series_path = match kernel.series_subdir() {
        Some(d) => linux.join(d).join("series.toml"),
        None => linux.join("series.toml"),
    };
    let series: Series = toml::from_str(
        &fs::read_to_string(&series_path)
            .with_context(|| format!("reading {}", series_path.display()))?,
    )
    .with_context(|| format!("parsing {}", series_path.display()))?;
    let add = Additions::load(&root, kernel)?;

    // Every addition in exactly one commit.
    let mut listed_p: Vec<&str> = Vec::new();
    let mut listed_f: Vec<&str> = Vec::new();
    for c in &series.commit {
        listed_p.extend(c.patches.iter().map(String::as_str));
        listed_f.extend(c.files.iter().map(String::as_str));
    }
    for p in &add.patches {
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let n = listed_p.iter().filter(|x| **x == name).count();
        if n != 1 {
            bail!(
                "{} is in {n} commits of {}; it must be in exactly one",
                p.display(),
                series_path.display()
            );
        }
    }
    for (rel, _) in &add.files {
        let n = listed_f.iter().filter(|x| *x == rel).count();
        if n != 1 {
            bail!(
                "{rel} is in {n} commits of {}; it must be in exactly one",
                series_path.display()
            );
        }
    }

    let (name, email) = series
        .author
        .rsplit_once('<')
        .map(|(n, e)| {
            (
                n.trim().to_string(),
                e.trim_end_matches('>').trim().to_string(),
            )
        })
        .context("series.toml author must be 'Name <email>'")?;
    let index = src.join(".git").join("ironlift-series-index");
    let _ = fs::remove_file(&index);
    run(git(src, Some(&index)).args(["read-tree", "pristine"]))?;
    let mut parent = run(git(src, None).args(["rev-parse", "pristine^{commit}"]))?
        .trim()
        .to_string();
    for c in &series.commit {
        for p in &c.patches {
            let Some(path) = add
                .patches
                .iter()
                .find(|x| x.file_name().is_some_and(|n| n.to_string_lossy() == *p))
            else {
                bail!(
                    "series.toml names {p}, which is not among the {} patches",
                    kernel.name()
                );
            };
            run(git(src, Some(&index))
                .args(["apply", "--cached", "--whitespace=nowarn"])
                .arg(path))
            .with_context(|| format!("{p} does not apply"))?;
        }
        for f in &c.files {
            let Some((_, path)) = add.files.iter().find(|(rel, _)| rel == f) else {
                bail!(
                    "series.toml names {f}, which is not among the {} files",
                    kernel.name()
                );
            };
            let sha = run(git(src, None).args(["hash-object", "-w"]).arg(path))?;
            run(git(src, Some(&index)).args([
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{},{f}", sha.trim()),
            ]))?;
        }
        let tree = run(git(src, Some(&index)).arg("write-tree"))?
            .trim()
            .to_string();
        let msg = format!(
            "{}\n\n{}\n\nSigned-off-by: {} <{}>\n",
            c.subject.trim(),
            reflow(c.body.trim(), 72),
            name,
            email
        );
        parent = run(git(src, None)
            .env("GIT_AUTHOR_NAME", &name)
            .env("GIT_AUTHOR_EMAIL", &email)
            .env("GIT_COMMITTER_NAME", &name)
            .env("GIT_COMMITTER_EMAIL", &email)
            .args(["commit-tree", &tree, "-p", &parent, "-m", &msg]))?
        .trim()
        .to_string();
    }
    let _ = fs::remove_file(&index);
    let _ = fs::remove_dir_all(out);
    fs::create_dir_all(out)?;
    let listing = run(git(src, None)
        .args(["format-patch", "--cover-letter", "--no-signature", "-o"])
        .arg(out)
        .arg(format!("pristine..{parent}")))?;
    let files: Vec<PathBuf> = listing.lines().map(PathBuf::from).collect();
    // Fill in the cover letter.
    let cover = files
        .iter()
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("0000-"))
        })
        .context("format-patch wrote no cover letter")?;
    let text = fs::read_to_string(cover)?;
    let body = series.cover.body.replace(
        "{results}",
        results.unwrap_or(
            "(no benchmark results given: run `cargo xtask qemu-bench` and pass --results DIR)",
        ),
    );
    let text = text
        .replace("*** SUBJECT HERE ***", series.cover.subject.trim())
        .replace("*** BLURB HERE ***", body.trim());
    fs::write(cover, text)?;
    Ok(files)
}

/// Re-wraps each paragraph of plain text to `width` columns (commit
/// messages: checkpatch wants at most 75). Paragraphs with an indented
/// line (code, lists) are left as written.
pub fn reflow(text: &str, width: usize) -> String {
    let mut out = Vec::new();
    for para in text.split("\n\n") {
        // A list item ("- " then lines indented by two) wraps with a
        // hanging indent; other indented paragraphs (code) stay as written.
        let (first, rest) = if para.starts_with("- ")
            && para
                .lines()
                .skip(1)
                .all(|l| l.starts_with("  ") && !l.starts_with("   "))
        {
            ("- ", "  ")
        } else if para
            .lines()
            .any(|l| l.starts_with(' ') || l.starts_with('\t') || l.starts_with("- "))
        {
            out.push(para.to_string());
            continue;
        } else {
            ("", "")
        };
        let mut lines = Vec::new();
        let mut line = first.to_string();
        let words = para.trim_start_matches(first).split_whitespace();
        for word in words {
            let indent = if lines.is_empty() {
                first.len()
            } else {
                rest.len()
            };
            if line.len() > indent && line.len() + 1 + word.len() > width {
                lines.push(std::mem::replace(&mut line, rest.to_string()));
            }
            if line.len()
                > if lines.is_empty() {
                    first.len()
                } else {
                    rest.len()
                }
            {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.trim().is_empty() {
            lines.push(line);
        }
        out.push(lines.join("\n"));
    }
    out.join("\n\n")
}

/// Applies the series with `git am` onto the pristine kernel, in a
/// scratch worktree of the cache's source repository.
fn check_applies(src: &Path, files: &[PathBuf], kernel: Kver) -> Result<()> {
    let scratch = src.with_file_name("am-check");
    let _ = run(git(src, None)
        .args(["worktree", "remove", "--force"])
        .arg(&scratch));
    let _ = fs::remove_dir_all(&scratch);
    run(git(src, None)
        .args(["worktree", "add", "--detach", "-q"])
        .arg(&scratch)
        .arg("pristine"))?;
    let patches: Vec<&PathBuf> = files
        .iter()
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("0000-"))
        })
        .collect();
    let res = run(git(&scratch, None)
        .env("GIT_COMMITTER_NAME", "ironlift")
        .env("GIT_COMMITTER_EMAIL", "ironlift@localhost")
        .args(["am", "-q", "--whitespace=error-all"])
        .args(&patches));
    let _ = run(git(src, None)
        .args(["worktree", "remove", "--force"])
        .arg(&scratch));
    res.with_context(|| {
        format!(
            "the series does not apply with `git am` onto pristine {}",
            kernel.name()
        )
    })?;
    Ok(())
}

/// `cargo xtask patches`: the series, then the kernel's clippy, which
/// needs the kernel built with the additions.
pub fn cmd(p: &crate::flags::Patches) -> Result<()> {
    let tc = crate::deps::ensure(p.k.kernel)?;
    let mut opts = p.k.kernel_opts();
    opts.kernel_src = None;
    let src = crate::kernel::pristine_source(&tc, &opts)?;
    let out = p
        .out
        .clone()
        .unwrap_or_else(|| util::repo_root().join("target/patches"));
    series_cmd(&src, &out, p.results.as_deref(), p.k.kernel)?;
    let built = crate::kernel::ensure(&tc, &p.k.kernel_opts())?;
    crate::clippy::run(&tc, &built, p.k.jobs())
}

/// The series: written, checked to apply, run through checkpatch.
fn series_cmd(src: &Path, out: &Path, results: Option<&Path>, kernel: Kver) -> Result<()> {
    step("Writing the kernel additions as a patch series");
    let table = match results {
        Some(dir) => {
            let file = if dir.is_dir() {
                dir.join("results.json")
            } else {
                dir.to_path_buf()
            };
            let res: crate::suite::fio::Results = serde_json::from_str(
                &fs::read_to_string(&file)
                    .with_context(|| format!("reading {}", file.display()))?,
            )?;
            Some(format!(
                "Measured with `cargo xtask qemu-bench` ({}; {} guest, clocksource {}, \
                 kernel {}; {} repeats, interleaved):\n{}",
                res.header.suite,
                res.header.accel.to_uppercase(),
                res.header.guest_clocksource,
                res.header.kernel_release,
                res.header.timing.repeats,
                crate::suite::fio::table_markdown(&res)
            ))
        }
        None => None,
    };
    let files = write_series(src, out, table.as_deref(), kernel)?;
    check_applies(src, &files, kernel)?;
    note(&format!(
        "{} patches + cover letter in {}; `git am` applies them onto pristine {}",
        files.len() - 1,
        out.display(),
        kernel.name()
    ));
    step("checkpatch.pl --strict");
    let mut errors = 0;
    // The cover letter is prose for people, not a patch.
    for f in files.iter().filter(|p| {
        !p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("0000-"))
    }) {
        let o = Command::new("perl")
            .current_dir(src)
            .args([
                "scripts/checkpatch.pl",
                "--strict",
                "--no-tree",
                "--terse",
                "--showfile",
            ])
            .arg(f)
            .output()
            .context("running scripts/checkpatch.pl (perl)")?;
        let text = String::from_utf8_lossy(&o.stdout);
        let name = f.file_name().unwrap_or_default().to_string_lossy();
        let summary = text
            .lines()
            .find(|l| l.starts_with("total:"))
            .unwrap_or("total: 0 errors, 0 warnings, 0 checks (clean)");
        note(&format!("{name}: {summary}"));
        for l in text
            .lines()
            .filter(|l| !l.starts_with("total:") && !l.trim().is_empty())
        {
            note(&format!("    {l}"));
            if l.contains("ERROR:") {
                errors += 1;
            }
        }
    }
    if errors > 0 {
        bail!("checkpatch reported {errors} error(s) (above): fix them");
    }
    note("no checkpatch errors; every remaining warning must be justified in the cover letter (modules/linux/series.toml)");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn reflow_wraps_paragraphs_and_keeps_indented_ones() {
        let text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen\n\n    code stays  as is\n";
        let r = super::reflow(text.trim(), 30);
        assert!(
            r.lines().all(|l| l.len() <= 30 || l.starts_with(' ')),
            "{r}"
        );
        assert!(r.contains("    code stays  as is"));
        assert_eq!(
            r.split_whitespace().count(),
            text.split_whitespace().count()
        );
        let item = "- a list item whose words go on and on past the width\n  of the line";
        let r = super::reflow(item, 24);
        assert!(r.starts_with("- a list item"), "{r}");
        assert!(
            r.lines()
                .skip(1)
                .all(|l| l.starts_with("  ") && l.len() <= 24),
            "{r}"
        );
    }
}
