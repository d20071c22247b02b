//! The reports as HTML: a report's Markdown rendered to one page, with
//! its charts inline as SVG where the Markdown links their files.

#[cfg(test)]
mod browser;

use anyhow::{Context, Result};
use pulldown_cmark::{html, Options, Parser};
use std::fs;
use std::path::Path;

const STYLE: &str = "body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:2px 8px}\
th{background:#f2f2f2}td{font-variant-numeric:tabular-nums}tr:nth-child(even) td{background:#fafafa}\
figure{margin:0 0 1.5em}code{background:#f4f4f4;padding:0 3px}";

/// `md` as an HTML page titled `title`; each chart `(_, file, svg)` inline
/// where the Markdown shows `file` as an image.
pub fn page(title: &str, md: &str, charts: &[(String, String, String)]) -> String {
    let mut body = String::new();
    html::push_html(&mut body, Parser::new_ext(md, Options::ENABLE_TABLES));
    for (_, file, svg) in charts {
        let tag = format!("<img src=\"{file}\"");
        if let Some(start) = body.find(&tag) {
            let end = body[start..]
                .find("/>")
                .map_or(body.len(), |e| start + e + 2);
            let svg = svg.trim_start_matches(|c| c != '<');
            let svg = svg.strip_prefix("<?xml").map_or(svg, |rest| {
                rest.split_once("?>").map_or(rest, |(_, s)| s.trim_start())
            });
            body.replace_range(start..end, &format!("<figure>{svg}</figure>"));
        }
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        crate::chart::esc(title)
    )
}

/// Writes [`page`] to `path`.
pub fn write(
    path: &Path,
    title: &str,
    md: &str,
    charts: &[(String, String, String)],
) -> Result<()> {
    fs::write(path, page(title, md, charts)).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tables_render_and_charts_go_inline() {
        let md = "# T\n\n| a | b |\n|---|---:|\n| x<y | 2 |\n\n![d](c.svg)\n";
        let charts = [(
            "d".to_string(),
            "c.svg".to_string(),
            "<?xml version=\"1.0\"?>\n<svg><rect/></svg>".to_string(),
        )];
        let p = super::page("T", md, &charts);
        assert!(
            p.contains("<table>") && p.contains("<td>x&lt;y</td>"),
            "{p}"
        );
        assert!(p.contains("<figure><svg><rect/></svg></figure>"), "{p}");
        assert!(!p.contains("<img") && !p.contains("<?xml"), "{p}");
    }
}
