//! A line chart for the suites' reports, drawn with `plotters` as SVG: a
//! panel per workload, y against x in each, a line per series (a
//! scheduler) with its points and ± sd whiskers, one legend for all.

use crate::chart;
use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One line: per x of the panel, the mean and sd (None: no figure there).
pub type Series = Vec<Option<(f64, f64)>>;

/// One panel: its title, its xs (rising) and its lines, the `i`th in the
/// `i`th colour and named by the legend's `i`th name.
pub struct Panel<'a> {
    pub title: &'a str,
    pub xs: Vec<f64>,
    pub series: Vec<Series>,
}

/// The panels' size in pixels, and the legend's width.
const PANEL: (u32, u32) = (340, 240);
const LEGEND: u32 = 190;

/// A chart of `panels`, two abreast, under `title`, with the axes named
/// `x_label` and `y_label` and a legend of `names` on the right.
pub fn svg(
    title: &str,
    x_label: &str,
    y_label: &str,
    panels: &[Panel],
    names: &[String],
) -> Result<String> {
    let cols = panels.len().clamp(1, 2);
    let rows = panels.len().div_ceil(cols).max(1);
    let width = PANEL.0 * cols as u32 + LEGEND;
    let height = 40 + PANEL.1 * rows as u32;
    // A long title (a long device name) in smaller type stays inside.
    let title_size = if title.chars().count() > 60 { 13 } else { 17 };
    chart::svg(width, height, |root| {
        let body = root.titled(title, ("sans-serif", title_size))?;
        let (plots, legend) = body.split_horizontally(PANEL.0 * cols as u32);
        for (p, area) in panels.iter().zip(plots.split_evenly((rows, cols))) {
            panel(&area, p, x_label, y_label)?;
        }
        chart::legend(&legend, names)
    })
}

/// One panel on `area`: y from 0 to a round number above the highest
/// mean + sd, x over the panel's xs, ticked at each.
fn panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    p: &Panel,
    x_label: &str,
    y_label: &str,
) -> Result<()> {
    let top = p
        .series
        .iter()
        .flat_map(|s| s.iter().flatten().map(|(m, sd)| m + sd.max(0.0)))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let top = if top > 0.0 {
        chart::nice_ceiling(top)
    } else {
        1.0
    };
    let (lo, hi) = match (p.xs.first(), p.xs.last()) {
        (Some(&lo), Some(&hi)) if hi > lo => (lo, hi),
        (Some(&x), _) => (x - 1.0, x + 1.0),
        _ => (0.0, 1.0),
    };
    // A little room either side, so the end points and whiskers are clear
    // of the axis.
    let pad = (hi - lo) * 0.04;
    let mut c = ChartBuilder::on(area)
        .caption(p.title, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d((lo - pad)..(hi + pad), 0.0..top)?;
    c.configure_mesh()
        .label_style(("sans-serif", 12))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(6)
        .y_label_formatter(&|y| chart::trim_num(*y))
        .y_desc(y_label)
        .draw()?;
    // The xs themselves as the ticks (job counts, say 1, 2, 4, 8), which
    // plotters' own ticks on a linear axis would miss, and the axis's name
    // under them. `backend_coord` is the document's pixel, `area` draws
    // from its own corner.
    let (ax, ay) = area.get_base_pixel();
    let at = |x: f64| {
        let (bx, by) = c.backend_coord(&(x, 0.0));
        (bx - ax, by - ay)
    };
    let under = ("sans-serif", 12)
        .into_font()
        .into_text_style(area)
        .pos(Pos::new(HPos::Center, VPos::Top));
    for &x in &p.xs {
        let (bx, by) = at(x);
        area.draw(&PathElement::new(vec![(bx, by), (bx, by + 4)], BLACK))?;
        area.draw(&Text::new(chart::trim_num(x), (bx, by + 6), under.clone()))?;
    }
    let (mid, by) = at((lo + hi) / 2.0);
    area.draw(&Text::new(
        x_label.to_string(),
        (mid, by + 20),
        under.clone(),
    ))?;
    draw_lines(&mut c, p, top)
}

/// A panel's chart, x and y in the figures' own units.
type Plot<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Per series of `p`, in its colour: the line through its figures, a
/// point at each and a whisker of ± sd (cut at 0 and `top`) where the sd
/// is above 0.
fn draw_lines(c: &mut Plot, p: &Panel, top: f64) -> Result<()> {
    for (i, s) in p.series.iter().enumerate() {
        let color = chart::rgb(i);
        let pts: Vec<(f64, f64, f64)> =
            p.xs.iter()
                .zip(s)
                .filter_map(|(&x, pt)| pt.map(|(m, sd)| (x, m, sd)))
                .filter(|(_, m, _)| m.is_finite())
                .collect();
        c.draw_series(LineSeries::new(
            pts.iter().map(|&(x, m, _)| (x, m)),
            color.stroke_width(2),
        ))?;
        c.draw_series(
            pts.iter()
                .map(|&(x, m, _)| Circle::new((x, m), 3, color.filled())),
        )?;
        c.draw_series(
            pts.iter()
                .filter(|(_, _, sd)| sd.is_finite() && *sd > 0.0)
                .map(|&(x, m, sd)| {
                    PathElement::new(
                        vec![(x, (m - sd).max(0.0)), (x, (m + sd).min(top))],
                        color.stroke_width(1),
                    )
                }),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panel_draws_a_line_per_series_and_skips_gaps() {
        let panels = [Panel {
            title: "read",
            xs: vec![1.0, 2.0, 4.0],
            series: vec![
                vec![Some((10.0, 1.0)), None, Some((40.0, 0.0))],
                vec![Some((5.0, 0.0)), Some((5.0, 0.0)), Some((5.0, 0.0))],
            ],
        }];
        let names = ["bfq".to_string(), "a<b".to_string()];
        let s = svg("t", "jobs", "MB/s", &panels, &names).unwrap();
        // A line per series and one whisker (the only sd above 0), in the
        // series' colours; a point per figure; the axis tops at 50; names
        // escaped.
        assert_eq!(
            s.matches(r##"<polyline fill="none" opacity="1" stroke="#7F7F7F""##)
                .count(),
            2,
            "{s}"
        );
        assert_eq!(
            s.matches(r##"<polyline fill="none" opacity="1" stroke="#1F77B4""##)
                .count(),
            1,
            "{s}"
        );
        assert_eq!(s.matches("<circle").count(), 5, "{s}");
        assert!(s.contains(">\n50\n</text>"), "{s}");
        assert!(s.contains("a&lt;b") && !s.contains("a<b"), "{s}");
    }
}
