//! The reports' charts, drawn with `plotters` as SVG: what they share
//! (the colours, the document) and the comparison's interval chart.

use crate::compare::merge::Row;
use crate::compare::stats::Verdict;
use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;

/// One colour per scheduler, in the suite's scheduler order: enough for
/// the default set (4 built-in, 7 `rust-*`) and a variant before a colour
/// comes round again.
pub const PALETTE: &[&str] = &[
    "#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
    "#bcbd22", "#17becf", "#000080", "#ff9896",
];

/// The colour of the `i`th scheduler or bar.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The `i`th colour for plotters.
pub fn rgb(i: usize) -> RGBColor {
    hex(color(i))
}

/// `#rrggbb` as a plotters colour.
pub fn hex(h: &str) -> RGBColor {
    let c = |i: usize| u8::from_str_radix(h.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0);
    RGBColor(c(1), c(3), c(5))
}

/// An SVG of `width` × `height` on white, drawn by `draw`.
pub fn svg<F>(width: u32, height: u32, draw: F) -> Result<String>
where
    F: FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<()>,
{
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| anyhow!("drawing a chart: {e}"))?;
        draw(&root)?;
        root.present()
            .map_err(|e| anyhow!("drawing a chart: {e}"))?;
    }
    let mut s = s.trim_end().to_string();
    s.push('\n');
    Ok(s)
}

/// A legend of `names` in the palette's colours, a line each, on `area`.
pub fn legend(area: &DrawingArea<SVGBackend<'_>, Shift>, names: &[String]) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        let y = 40 + 16 * i as i32;
        area.draw(&Rectangle::new([(5, y), (15, y + 10)], rgb(i).filled()))?;
        area.draw(&Text::new(name.as_str(), (20, y), ("sans-serif", 13)))?;
    }
    Ok(())
}

/// A grouped bar chart of ratios to a reference, with a line at 1: a group
/// per `groups` entry (its name under it), a bar per scheduler in the
/// palette's colours, whiskers at ± one standard deviation, the legend on
/// the right. `value(group, scheduler)`, by index: the bar's mean and sd
/// (None: no bar; no sd: no whisker). Bars are cut at 5. The chart is
/// at least `min_width` wide.
pub fn ratio_bars_svg(
    title: &str,
    min_width: u32,
    groups: &[&str],
    schedulers: &[String],
    value: impl Fn(usize, usize) -> Option<(f64, Option<f64>)>,
) -> Result<String> {
    let nw = groups.len().max(1);
    let bars: Vec<(usize, usize, f64, Option<f64>)> = (0..groups.len())
        .flat_map(|wi| (0..schedulers.len()).map(move |si| (wi, si)))
        .filter_map(|(wi, si)| value(wi, si).map(|(m, sd)| (wi, si, m, sd)))
        .collect();
    let max_ratio = bars
        .iter()
        .map(|&(_, _, m, sd)| m + sd.unwrap_or(0.0))
        .fold(1.2f64, f64::max)
        .min(5.0);
    let width = (80 + (18 * schedulers.len() as u32 + 24) * nw as u32 + 170).max(min_width);
    let bar = 0.85 / schedulers.len().max(1) as f64;
    svg(width, 320, |root| {
        let (plot, legend_area) = root.split_horizontally(width - 160);
        let mut c = ChartBuilder::on(&plot)
            .caption(title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(25)
            .y_label_area_size(40)
            .build_cartesian_2d(0.0..nw as f64, 0.0..max_ratio)?;
        c.configure_mesh()
            .label_style(("sans-serif", 13))
            .light_line_style(TRANSPARENT)
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|y| format!("{y:.1}"))
            .draw()?;
        let under = ("sans-serif", 13)
            .into_font()
            .into_text_style(root)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (wi, w) in groups.iter().enumerate() {
            let (x, y) = c.backend_coord(&(wi as f64 + 0.5, 0.0));
            root.draw(&Text::new(w.to_string(), (x, y + 6), under.clone()))?;
        }
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 1.0), (nw as f64, 1.0)],
            BLACK,
        )))?;
        for si in 0..schedulers.len() {
            let color = rgb(si);
            for &(wi, _, ratio, sd) in bars.iter().filter(|b| b.1 == si) {
                let x = wi as f64 + 0.075 + si as f64 * bar;
                c.draw_series(std::iter::once(Rectangle::new(
                    [(x, 0.0), (x + bar * 0.9, ratio.min(max_ratio))],
                    color.filled(),
                )))?;
                if let Some(sd) = sd {
                    let cx = x + bar * 0.45;
                    c.draw_series(std::iter::once(PathElement::new(
                        vec![
                            (cx, (ratio - sd).max(0.0)),
                            (cx, (ratio + sd).min(max_ratio)),
                        ],
                        BLACK,
                    )))?;
                }
            }
        }
        legend(&legend_area, schedulers)
    })
}

/// The colour of a verdict: green better, red worse, grey otherwise.
fn verdict_color(v: Verdict) -> RGBColor {
    match v {
        Verdict::Better => hex("#2ca02c"),
        Verdict::Worse => hex("#d62728"),
        _ => hex("#7f7f7f"),
    }
}

/// The comparison's chart for one device: a row per (workload, scheduler,
/// metric), the ratio candidate/base as a dot and its interval as a bar,
/// coloured by the verdict, against a line at 1 (no change).
pub fn intervals_svg(device: &str, rows: &[&Row], level: f64) -> Result<String> {
    let n = rows.len().max(1) as i32;
    let (lo, hi) = rows.iter().fold((1.0f64, 1.0f64), |(lo, hi), r| {
        let fin = |x: f64, d: f64| if x.is_finite() { x } else { d };
        (
            lo.min(fin(r.cmp.ratio_lo, lo)),
            hi.max(fin(r.cmp.ratio_hi, hi)),
        )
    });
    let pad = ((hi - lo) * 0.1).max(0.01);
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {} {}", r.workload, r.scheduler, r.metric))
        .collect();
    let height = 90 + 18 * n as u32;
    let title = format!(
        "{device}: candidate / base, {:.0} % intervals",
        level * 100.0
    );
    svg(820, height, |root| {
        let mut c = ChartBuilder::on(root)
            .caption(title, ("sans-serif", 17))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(300)
            .build_cartesian_2d((lo - pad)..(hi + pad), -1..n)?;
        // Row i is drawn at n - 1 - i: the first on top.
        let y = |i: usize| n - 1 - i as i32;
        c.configure_mesh()
            .label_style(("sans-serif", 13))
            .light_line_style(TRANSPARENT)
            .y_labels(n as usize + 1)
            .y_label_formatter(&|v| {
                usize::try_from(n - 1 - *v)
                    .ok()
                    .and_then(|i| labels.get(i).cloned())
                    .unwrap_or_default()
            })
            .x_desc("candidate / base (green: better, red: worse, grey: no difference shown)")
            .draw()?;
        c.draw_series(std::iter::once(PathElement::new(
            vec![(1.0, -1), (1.0, n)],
            BLACK.stroke_width(1),
        )))?;
        c.draw_series(rows.iter().enumerate().map(|(i, r)| {
            PathElement::new(
                vec![(r.cmp.ratio_lo, y(i)), (r.cmp.ratio_hi, y(i))],
                verdict_color(r.cmp.verdict).stroke_width(3),
            )
        }))?;
        c.draw_series(rows.iter().enumerate().map(|(i, r)| {
            Circle::new(
                (r.cmp.ratio, y(i)),
                4,
                verdict_color(r.cmp.verdict).filled(),
            )
        }))?;
        Ok(())
    })
}

/// Text escaped for SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The smallest of 1, 2, 5 × 10^k at or above `x`.
pub fn nice_ceiling(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x * (1.0 - 1e-12) {
            return m * p;
        }
    }
    10.0 * p
}

/// An SVG document of `width` × `height` on white, with `title` (escaped
/// by the caller) at `title_x`; [`end`] closes it.
pub fn start(width: f64, height: f64, title_x: f64, title: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{title_x}" y="20" font-size="14" font-weight="bold">{title}</text>"#
    );
    s
}

/// Closes a document of [`start`].
pub fn end(mut s: String) -> String {
    s.push_str("</svg>\n");
    s
}

/// An axis number: two decimals at most, no trailing zeros.
pub fn trim_num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ceiling_rounds_up() {
        assert_eq!(nice_ceiling(0.7), 1.0);
        assert_eq!(nice_ceiling(1.0), 1.0);
        assert_eq!(nice_ceiling(13.0), 20.0);
        assert_eq!(nice_ceiling(42.0), 50.0);
    }

    #[test]
    fn documents_are_svg_on_white_and_text_is_escaped() {
        use plotters::prelude::*;
        let s = svg(100, 50, |root| {
            root.draw(&Text::new("a<b&c", (5, 5), ("sans-serif", 13)))?;
            Ok(())
        })
        .unwrap();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"), "{s}");
        assert!(s.contains("fill=\"#FFFFFF\""), "{s}");
        assert!(s.contains("a&lt;b&amp;c") && !s.contains("a<b"), "{s}");
        assert_eq!(esc("a<b"), "a&lt;b");
        assert_eq!(color(PALETTE.len() + 1), PALETTE[1]);
        // The default schedulers and a variant, each its own colour.
        let mut distinct = PALETTE.to_vec();
        distinct.sort();
        distinct.dedup();
        assert!(distinct.len() == PALETTE.len() && PALETTE.len() >= 12);
        assert_eq!(hex("#1f77b4"), RGBColor(0x1f, 0x77, 0xb4));
    }
}
