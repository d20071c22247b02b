//! The reports' charts, drawn with `plotters` as SVG: what they share
//! (the colours, the document, the legend), the suites' grouped bar chart
//! and the comparison's interval chart.

use crate::compare::merge::Row;
use crate::compare::stats::Verdict;
use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

/// A legend of `names` in the palette's colours, a line each, from the
/// top of `area`.
pub fn legend(area: &DrawingArea<SVGBackend<'_>, Shift>, names: &[String]) -> Result<()> {
    for (i, name) in names.iter().enumerate() {
        let y = 15 + 16 * i as i32;
        area.draw(&Rectangle::new([(5, y), (15, y + 10)], rgb(i).filled()))?;
        area.draw(&Text::new(name.as_str(), (20, y), ("sans-serif", 13)))?;
    }
    Ok(())
}

/// One bar of [`bars_svg`]: its height and, if known, its sd (a whisker
/// from height - sd to height + sd).
pub type Bar = (f64, Option<f64>);

/// A grouped bar chart on 0..`y_max`: a group per `groups` item (named
/// under it), in each a bar per `series` item in the palette's colours
/// (named in the legend), `bar(group, series)` its height and whisker, and
/// a line at 1, the level the bars are relative to.
pub fn bars_svg<F>(
    title: String,
    groups: &[&str],
    series: &[String],
    y_max: f64,
    bar: F,
) -> Result<String>
where
    F: Fn(usize, usize) -> Option<Bar>,
{
    let ng = groups.len().max(1);
    // Wide enough for the bars and the legend, and for the title, which
    // spans both.
    let width = (80 + (18 * series.len() as u32 + 24) * ng as u32 + 170)
        .max(9 * title.chars().count() as u32 + 40);
    let w = 0.85 / series.len().max(1) as f64;
    svg(width, 320, |root| {
        let body = root.titled(&title, ("sans-serif", 17))?;
        let (plot, legend_area) = body.split_horizontally(width - 160);
        let mut c = ChartBuilder::on(&plot)
            .margin(10)
            .x_label_area_size(25)
            .y_label_area_size(40)
            .build_cartesian_2d(0.0..ng as f64, 0.0..y_max)?;
        c.configure_mesh()
            .label_style(("sans-serif", 13))
            .light_line_style(TRANSPARENT)
            .disable_x_mesh()
            .x_labels(0)
            .y_label_formatter(&|y| format!("{y:.1}"))
            .draw()?;
        // The groups' names under them.
        let under = ("sans-serif", 13)
            .into_font()
            .into_text_style(root)
            .pos(Pos::new(HPos::Center, VPos::Top));
        for (gi, g) in groups.iter().enumerate() {
            let (x, y) = c.backend_coord(&(gi as f64 + 0.5, 0.0));
            root.draw(&Text::new(g.to_string(), (x, y + 6), under.clone()))?;
        }
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 1.0), (ng as f64, 1.0)],
            BLACK,
        )))?;
        for si in 0..series.len() {
            let color = rgb(si);
            let bars = (0..groups.len()).filter_map(|gi| {
                let (h, sd) = bar(gi, si)?;
                Some((gi as f64 + 0.075 + si as f64 * w, h, sd))
            });
            for (x, h, sd) in bars {
                c.draw_series(std::iter::once(Rectangle::new(
                    [(x, 0.0), (x + w * 0.9, h.min(y_max))],
                    color.filled(),
                )))?;
                if let Some(sd) = sd {
                    let cx = x + w * 0.45;
                    c.draw_series(std::iter::once(PathElement::new(
                        vec![(cx, (h - sd).max(0.0)), (cx, (h + sd).min(y_max))],
                        BLACK,
                    )))?;
                }
            }
        }
        legend(&legend_area, series)
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
        assert_eq!(hex("#1f77b4"), RGBColor(0x1f, 0x77, 0xb4));
    }
}
