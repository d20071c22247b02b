//! Small helpers: running commands with logs and progress, hashing, paths.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The workspace root (the folder holding the top-level Cargo.toml).
pub fn repo_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

/// Prints a step header, so a user sees what is happening.
pub fn step(what: &str) {
    eprintln!("\x1b[1m==> {what}\x1b[0m");
}

/// Prints an indented note under the current step.
pub fn note(what: &str) {
    eprintln!("    {what}");
}

/// Renders a command line for messages.
pub fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs a command that should be quick; fails with its output if it fails.
pub fn run(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("could not start `{}`", show(cmd)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}):\n{}{}",
            show(cmd),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Progress of a long step: a bar with the time left on a terminal (a
/// spinner when the total is unknown), a line every 30 s otherwise (CI
/// logs), each with the estimate.
pub struct Progress {
    bar: Option<indicatif::ProgressBar>,
    what: String,
    len: Option<u64>,
    start: Instant,
    last_line: Instant,
}

impl Progress {
    /// A step of `len` units, if known.
    pub fn new(what: &str, len: Option<u64>) -> Self {
        let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = tty.then(|| {
            let (bar, template) = match len {
                Some(n) => (
                    indicatif::ProgressBar::new(n),
                    "    [{prefix}] {elapsed_precise} [{bar:30}] {pos}/{len} ~{eta} left  {wide_msg}",
                ),
                None => (
                    indicatif::ProgressBar::new_spinner(),
                    "    [{prefix}] {elapsed_precise} {spinner} {pos}  {wide_msg}",
                ),
            };
            if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(what.to_string());
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            what: what.to_string(),
            len,
            start: Instant::now(),
            last_line: Instant::now(),
        }
    }

    /// The time left at `pos`, from the rate so far.
    pub fn left(&self, pos: u64) -> Option<u64> {
        let len = self.len?;
        if pos == 0 {
            return None;
        }
        let secs = self.start.elapsed().as_secs_f64();
        Some((secs / pos as f64 * len.saturating_sub(pos) as f64) as u64)
    }

    /// At `pos` now, doing `msg`.
    pub fn set(&mut self, pos: u64, msg: &str) {
        let short: String = msg.trim().chars().take(90).collect();
        match &self.bar {
            Some(b) => {
                b.set_position(pos);
                b.set_message(short);
            }
            None if self.last_line.elapsed().as_secs() >= 30 => {
                let at = match (self.len, self.left(pos)) {
                    (Some(n), Some(l)) => format!("{pos}/{n}, ~{} left", human_secs(l)),
                    (Some(n), None) => format!("{pos}/{n}"),
                    (None, _) => format!("{pos}"),
                };
                eprintln!(
                    "    [{}] {}, {at}: {short}",
                    self.what,
                    human_secs(self.start.elapsed().as_secs())
                );
                self.last_line = Instant::now();
            }
            None => {}
        }
    }

    /// Whether a bar is drawn (a terminal).
    pub fn is_bar(&self) -> bool {
        self.bar.is_some()
    }

    /// A line above the bar (or just a line).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Runs a long command with its output going to `log`, showing progress:
/// output lines counted against `expect_lines` (a bar with the time left)
/// if given, else a spinner with the count; elapsed time and the latest
/// line. On failure, prints the tail of the log and names it.
pub fn run_logged(cmd: &mut Command, log: &Path, what: &str) -> Result<()> {
    run_logged_expecting(cmd, log, what, None)
}

/// [`run_logged`] for a command expected to print about `expect_lines`.
pub fn run_logged_expecting(
    cmd: &mut Command,
    log: &Path,
    what: &str,
    expect_lines: Option<u64>,
) -> Result<()> {
    if let Some(dir) = log.parent() {
        fs::create_dir_all(dir)?;
    }
    let mut file =
        fs::File::create(log).with_context(|| format!("cannot write {}", log.display()))?;
    writeln!(file, "$ {}", show(cmd))?;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("could not start `{}`", show(cmd)))?;
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let tx2 = tx.clone();
    let t_err = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx2.send(line);
        }
    });
    let stdout = child.stdout.take().expect("piped");
    let t_out = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let start = Instant::now();
    let mut lines = 0u64;
    // The total is an estimate: never let the bar run past it.
    let mut progress = Progress::new(what, expect_lines);
    for line in rx {
        writeln!(file, "{line}")?;
        lines += 1;
        let pos = expect_lines.map_or(lines, |n| lines.min(n.saturating_sub(1)));
        progress.set(pos, &line);
    }
    let _ = t_out.join();
    let _ = t_err.join();
    progress.finish();
    let _ = fs::write(log.with_extension("lines"), lines.to_string());
    let status = child.wait()?;
    let secs = start.elapsed().as_secs();
    if !status.success() {
        let text = fs::read_to_string(log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        eprintln!("---- last lines of {} ----", log.display());
        for l in tail.iter().rev() {
            eprintln!("{l}");
        }
        eprintln!("---- end ----");
        bail!(
            "{what} failed after {secs}s ({status}); the full log is {}",
            log.display()
        );
    }
    note(&format!("{what}: done in {secs}s (log: {})", log.display()));
    Ok(())
}

/// A hex SHA-256 over a sequence of labelled byte strings.
pub struct Hasher(Sha256);

impl Hasher {
    pub fn new() -> Self {
        Hasher(Sha256::new())
    }
    pub fn add(&mut self, label: &str, bytes: &[u8]) {
        self.0.update((label.len() as u64).to_le_bytes());
        self.0.update(label.as_bytes());
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }
    pub fn hex(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// Every regular file below `dir` (recursively), sorted; none if `dir` is missing.
pub fn files_below(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let e = e?;
            let p = e.path();
            let ft = e.file_type()?;
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Writes `bytes` to `path` only if the content differs, so that make's
/// timestamps stay put for unchanged files. Returns whether it wrote.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if fs::read(path).map(|old| old == bytes).unwrap_or(false) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(true)
}

/// Builds a tool of the workspace (`tools/<package>`, its binary named as
/// the package) in release for the host, whose root the guest runs on,
/// and returns the binary's path.
pub fn build_host_tool(root: &Path, package: &str) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run(Command::new(cargo).current_dir(root).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        package,
    ]))
    .with_context(|| format!("building tools/{package}"))?;
    let bin = root.join("target/release").join(package);
    if !bin.is_file() {
        bail!("{} was not built", bin.display());
    }
    Ok(bin)
}

/// The cache root: `--cache-dir`, else `$IRONLIFT_CACHE`, else
/// `$XDG_CACHE_HOME/ironlift`, else `~/.cache/ironlift`.
pub fn cache_root(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = std::env::var_os("IRONLIFT_CACHE") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(p).join("ironlift");
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache").join("ironlift")
}

/// Whether a program is on PATH (or is an existing path).
pub fn which(prog: &str) -> Option<PathBuf> {
    if prog.contains('/') {
        let p = PathBuf::from(prog);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// Formats a duration in seconds as `1m 23s`.
pub fn human_secs(secs: u64) -> String {
    if secs >= 60 {
        format!("{}m {:02}s", secs / 60, secs % 60)
    } else {
        format!("{secs}s")
    }
}

/// For `#[serde(deserialize_with)]` on the `f64` fields of results files:
/// `serde_json` writes a value that is not finite (a mean over no runs, a
/// latency fio did not give) as `null`, and cannot read `null` back as an
/// `f64`. This reads it as NaN, which the reports print as `-`.
pub fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    use serde::Deserialize;
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}
