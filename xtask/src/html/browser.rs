//! The HTML reports in a browser: headless Chromium (Debian `chromium`)
//! loads each page with a checker added around it, and the dumped DOM
//! says whether the page loaded without errors, whether every chart drew
//! something, and what the tables hold. Without Chromium the tests fail,
//! saying how to install it.

use crate::suite::fio::Results;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Records every error (scripts, resources) from the first moment.
const HEAD_CHECK: &str = "<script>window.__errors=[];addEventListener('error',\
e=>__errors.push(String(e.message||(e.target&&e.target.outerHTML))),true);</script>";

/// Once the page and what it loads are in (the load event): how many
/// SVGs, how many drew shapes with an extent, and the errors, as the
/// body's `data-check`.
const TAIL_CHECK: &str = "<script>addEventListener('load',()=>{const s=[...document.querySelectorAll('svg')];\
const drawn=s.filter(g=>{const b=g.getBBox();return g.querySelectorAll('rect,path,circle,polyline,line').length>1&&b.width>0&&b.height>0;}).length;\
document.body.setAttribute('data-check',JSON.stringify({svgs:s.length,drawn:drawn,errors:window.__errors}));});</script>";

/// Chromium on PATH; fails the test, saying how to install it, if none.
fn chromium() -> PathBuf {
    crate::util::which("chromium").unwrap_or_else(|| {
        panic!(
            "no chromium on PATH to check the HTML reports in: install it with \
             `apt-get install chromium` (or `cargo xtask deps`)"
        )
    })
}

/// What Chromium made of `page`: (the DOM, its console lines).
fn load(chromium: &Path, page: &Path) -> (String, String) {
    let checked = page.with_extension("checked.html");
    let html = fs::read_to_string(page).unwrap();
    let html = html
        .replacen("<head>", &format!("<head>\n{HEAD_CHECK}"), 1)
        .replacen("</body>", &format!("{TAIL_CHECK}\n</body>"), 1);
    fs::write(&checked, html).unwrap();
    let profile = page.with_extension("profile");
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", checked.display()))
        .output()
        .unwrap();
    let _ = fs::remove_dir_all(&profile);
    assert!(out.status.success(), "chromium failed: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("CONSOLE"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The checker's findings in the dumped DOM.
fn verdict(dom: &str) -> serde_json::Value {
    let check = dom
        .split_once("data-check=\"")
        .and_then(|(_, r)| r.split_once('"'))
        .map(|(c, _)| c.replace("&quot;", "\""))
        .unwrap_or_else(|| panic!("the checker did not run:\n{dom}"));
    serde_json::from_str(&check).unwrap()
}

/// The text of every table cell of `dom`, tags stripped, entities undone.
fn cells(dom: &str) -> Vec<String> {
    dom.split("<td")
        .skip(1)
        .filter_map(|c| Some(c.split_once('>')?.1.split_once("</td>")?.0))
        .map(|c| {
            let mut text = String::new();
            let mut in_tag = false;
            for ch in c.chars() {
                match ch {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    _ if !in_tag => text.push(ch),
                    _ => {}
                }
            }
            text.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
                .trim()
                .to_string()
        })
        .collect()
}

/// The body cells of the Markdown tables in `md` (not their header rows,
/// which come before a `|---` line), inline marks removed.
fn md_cells(md: &str) -> Vec<String> {
    let lines: Vec<&str> = md.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(i, l)| {
            let header = lines.get(i + 1).is_some_and(|n| n.starts_with("|---"));
            l.starts_with('|') && !l.starts_with("|---") && !header
        })
        .flat_map(|(_, l)| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().replace("**", "").replace('`', ""))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Loads `page` and checks it: no errors, `charts` SVGs all drawn, and
/// the cells of `md`'s tables in its tables, in order.
fn check(chromium: &Path, page: &Path, md: &str, charts: usize) -> Vec<String> {
    let (dom, console) = load(chromium, page);
    let v = verdict(&dom);
    let check = v.to_string();
    assert_eq!(
        v["errors"],
        serde_json::json!([]),
        "{}: {check}",
        page.display()
    );
    assert!(
        !console.contains("Uncaught") && !console.contains("ERROR"),
        "{}: {console}",
        page.display()
    );
    assert_eq!(v["svgs"], charts, "{}: {check}", page.display());
    assert_eq!(v["drawn"], charts, "{}: {check}", page.display());
    let got = cells(&dom);
    let want = md_cells(md);
    let body: Vec<&String> = want.iter().filter(|c| !c.is_empty()).collect();
    let found: Vec<&String> = got.iter().filter(|c| !c.is_empty()).collect();
    assert!(
        body.len() > 10,
        "{}: few cells in the Markdown",
        page.display()
    );
    assert_eq!(
        found.len(),
        body.len(),
        "{}: {found:?}\nagainst {body:?}",
        page.display()
    );
    for (a, b) in found.iter().zip(&body) {
        assert_eq!(a, b, "{}", page.display());
    }
    got
}

/// A scratch folder with the canned results of tests/reports/`name`,
/// rendered as `cargo xtask report` does.
fn rendered(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-html-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let canned = crate::util::repo_root().join("tests/reports").join(name);
    fs::copy(canned.join("results.json"), dir.join("results.json")).unwrap();
    crate::suite::report(&dir).unwrap();
    dir
}

#[test]
fn run_reports_load_draw_and_hold_the_figures_in_chromium() {
    let chromium = chromium();
    for (name, charts) in [("fio-basic", 3), ("startup", 2), ("jobs-1-8", 1)] {
        let dir = rendered(name);
        let md = fs::read_to_string(dir.join("report.md")).unwrap();
        let got = check(&chromium, &dir.join("report.html"), &md, charts);
        if name == "fio-basic" {
            // A figure from the runs themselves: the first summary row's
            // mean IOPS over its repeats, as the table prints it.
            let text = fs::read_to_string(dir.join("results.json")).unwrap();
            let res: Results = serde_json::from_str(&text).unwrap();
            let s = &res.summary[0];
            let iops: Vec<f64> = res
                .runs
                .iter()
                .filter(|r| {
                    r.run.device == s.device
                        && r.run.scheduler == s.scheduler
                        && r.run.case.workload == s.workload
                })
                .filter_map(|r| r.measured.as_ref().map(|m| m.iops))
                .collect();
            let mean = iops.iter().sum::<f64>() / iops.len() as f64;
            let shown = format!("{:.1}K", mean / 1000.0);
            assert!(
                got.iter().any(|c| c.starts_with(&shown)),
                "{shown} not in {got:?}"
            );
        }
        let _ = fs::remove_dir_all(&dir);
    }
}

#[test]
fn the_comparison_page_loads_draws_and_holds_the_figures_in_chromium() {
    let chromium = chromium();
    let dir = std::env::temp_dir().join(format!("xtask-html-compare-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let c = crate::compare::page::tests::sample();
    c.write(&dir).unwrap();
    let md = fs::read_to_string(dir.join("compare.md")).unwrap();
    let got = check(&chromium, &dir.join("compare.html"), &md, 1);
    assert!(got.iter().any(|c| c == "0.800"), "{got:?}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn the_checker_catches_errors_and_empty_charts() {
    let chromium = chromium();
    let dir = std::env::temp_dir().join(format!("xtask-html-broken-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let page = dir.join("broken.html");
    let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"></svg>";
    fs::write(
        &page,
        format!("<html><head></head><body>{svg}<img src=\"missing.png\"><script>nosuch();</script></body></html>"),
    )
    .unwrap();
    let (dom, _) = load(&chromium, &page);
    let _ = fs::remove_dir_all(&dir);
    let v = verdict(&dom);
    assert_eq!((&v["svgs"], &v["drawn"]), (&1.into(), &0.into()), "{v}");
    let errors = v["errors"].to_string();
    assert!(
        errors.contains("missing.png") && errors.contains("nosuch"),
        "{v}"
    );
}
