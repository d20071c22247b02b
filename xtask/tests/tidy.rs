//! Tidy: the tree's own rules, checked on every `cargo test`.
//!
//! - Every Rust source file opens with module docs (`//!`), after an
//!   optional SPDX line and attributes.
//! - Code, configs, scripts and docs describe the project as it is: no
//!   narration of its history (a work session's or a tracker issue's
//!   number). Dated measurement notes (`docs/measurements/`) are records
//!   and are exempt.
//! - Functions stay under a length budget unless a comment right above them
//!   says why they are long (a line starting `// Long:`); unit tests are
//!   tables of cases and are exempt.

use std::fs;
use std::path::{Path, PathBuf};

/// Lines a function may span before it needs a `// Long:` comment.
const FN_LINES: usize = 80;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root")
        .to_path_buf()
}

/// The files git tracks (or would: untracked, not ignored), relative to the
/// root; without git, every file outside build output.
fn tracked_files() -> Vec<PathBuf> {
    let root = root();
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(&root)
        .args([
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => o
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            .filter(|p| root.join(p).is_file())
            .collect(),
        _ => {
            let mut files = Vec::new();
            walk(&root, &root, &mut files);
            files
        }
    }
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" || name == "results" {
            continue;
        }
        if p.is_dir() {
            walk(root, &p, files);
        } else if let Ok(rel) = p.strip_prefix(root) {
            files.push(rel.to_path_buf());
        }
    }
}

fn ext(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or("")
}

/// Rust sources of the project (not tests' canned data, not fuzz corpora).
fn rust_sources() -> Vec<PathBuf> {
    tracked_files()
        .into_iter()
        .filter(|p| ext(p) == "rs" && !p.starts_with("tests"))
        .collect()
}

#[test]
fn every_rust_file_has_module_docs() {
    let root = root();
    let mut missing = Vec::new();
    for p in rust_sources() {
        let text = fs::read_to_string(root.join(&p)).unwrap_or_default();
        let first = text
            .lines()
            .map(str::trim)
            .find(|l| {
                !l.is_empty()
                    && !l.starts_with("// SPDX")
                    && !l.starts_with("#![")
                    && !l.starts_with("// ")
                    && *l != "//"
            })
            .unwrap_or("");
        if !first.starts_with("//!") {
            missing.push(p.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "files without module docs (`//!` at the top):\n  {}",
        missing.join("\n  ")
    );
}

/// Words that narrate history: a work session's or a tracker issue's
/// number.
fn narration(line: &str) -> Option<&'static str> {
    let lower = line.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        let number = pair[1].chars().all(|c| c.is_ascii_digit());
        match pair[0] {
            "session" | "sessions" if number => return Some("a session number"),
            "issue" | "issues" if number => return Some("an issue number"),
            _ => {}
        }
    }
    None
}

#[test]
fn the_tree_does_not_narrate_its_history() {
    let root = root();
    let mut found = Vec::new();
    for p in tracked_files() {
        let checked = matches!(
            ext(&p),
            "rs" | "c" | "h" | "sh" | "toml" | "md" | "config" | "txt" | ""
        );
        if !checked || p.starts_with("docs/measurements") || p.starts_with("tests") {
            continue;
        }
        let Ok(text) = fs::read_to_string(root.join(&p)) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if let Some(what) = narration(line) {
                found.push(format!(
                    "{}:{}: {what}: {}",
                    p.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "history narration (say what is, not how it came to be; dated notes in \
         docs/measurements/ may record it):\n  {}",
        found.join("\n  ")
    );
}

/// Functions longer than [`FN_LINES`] without a `// Long:` comment above.
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        let is_fn = t.contains("fn ")
            && (t.starts_with("fn ")
                || t.starts_with("pub ")
                || t.starts_with("pub(")
                || t.starts_with("const fn")
                || t.starts_with("unsafe fn")
                || t.starts_with("unsafe extern")
                || t.starts_with("extern \"C\" fn")
                || t.starts_with("async fn"))
            && !t.starts_with("//");
        if !is_fn {
            i += 1;
            continue;
        }
        let name = t
            .split("fn ")
            .nth(1)
            .and_then(|s| s.split(['(', '<']).next())
            .unwrap_or("?")
            .to_string();
        // Find the body's opening brace (a declaration ends with `;`).
        let mut j = i;
        let mut depth: i64 = 0;
        let mut opened = false;
        while j < lines.len() {
            for c in strip_strings(lines[j]).chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened && depth == 0 => {
                        depth = -1;
                    }
                    _ => {}
                }
            }
            if depth < 0 || (opened && depth == 0) {
                break;
            }
            j += 1;
        }
        if opened {
            let len = j - i + 1;
            let above = lines[..i].iter().rev().take_while(|l| {
                let l = l.trim_start();
                l.starts_with("//") || l.starts_with("#[")
            });
            // A unit test is a table of cases, not code to keep short.
            let justified = above
                .map(|l| l.trim_start())
                .any(|l| l.starts_with("// Long:") || l == "#[test]");
            if len > FN_LINES && !justified {
                out.push((i + 1, name, len));
            }
            // Nested functions are part of their parent's budget.
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The line without string and char literals and comments, so that their
/// braces do not count.
fn strip_strings(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '/' if chars.peek() == Some(&'/') => break,
            '\'' => {
                // A char literal such as '{' (not a lifetime).
                let rest: String = chars.clone().take(3).collect();
                if rest.len() >= 2 && rest.chars().nth(1) == Some('\'') {
                    chars.next();
                    chars.next();
                } else if rest.starts_with('\\') {
                    for d in chars.by_ref() {
                        if d == '\'' {
                            break;
                        }
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[test]
fn functions_fit_the_length_budget() {
    let root = root();
    let mut found = Vec::new();
    for p in rust_sources() {
        // Tests and benches are tables of cases; the budget is for code.
        let s = p.to_string_lossy();
        if s.contains("/tests/") || s.contains("/benches/") || s.contains("/fuzz/") {
            continue;
        }
        let text = fs::read_to_string(root.join(&p)).unwrap_or_default();
        for (line, name, len) in long_functions(&text) {
            found.push(format!("{}:{line}: fn {name} is {len} lines", p.display()));
        }
    }
    assert!(
        found.is_empty(),
        "functions over {FN_LINES} lines without a `// Long:` comment saying why:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_scanner_measures_functions() {
    let body = "x();\n".repeat(FN_LINES);
    let long = format!("fn big() {{\n{body}}}\nfn small() {{ '{{'; \"}}\" }}\n");
    assert_eq!(long_functions(&long), vec![(1, "big".into(), FN_LINES + 2)]);
    let justified = format!("// Long: one table.\n{long}");
    assert!(long_functions(&justified).is_empty());
    let said = format!("as in {} 12, fine", "session");
    assert_eq!(narration(&said), Some("a session number"));
    assert_eq!(narration("the issuer 3 slot"), None);
}
