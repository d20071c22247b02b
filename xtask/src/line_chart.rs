//! A line chart panel for the suites' SVG reports: y against x, one line
//! per series (a scheduler), points with ± sd whiskers. Several panels
//! share one document ([`crate::chart::start`]).

use crate::chart::{self, esc};
use std::fmt::Write as _;

/// One line: its name and, per x of the panel, the mean and sd (None: no
/// figure there).
pub struct Series<'a> {
    pub name: &'a str,
    pub points: Vec<Option<(f64, f64)>>,
}

/// Where a panel goes and what it says.
pub struct Panel<'a> {
    pub x0: f64,
    pub y0: f64,
    pub width: f64,
    pub height: f64,
    pub title: &'a str,
    pub y_label: &'a str,
    pub x_label: &'a str,
    pub xs: &'a [f64],
}

/// Draws `panel` with `series` (colour by index, as the legend) into `s`.
pub fn panel(s: &mut String, p: &Panel, series: &[Series]) {
    let top = p.y0 + 20.0;
    let h = p.height - 55.0;
    let left = p.x0 + 45.0;
    let w = p.width - 55.0;
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().flatten().map(|(m, sd)| m + sd))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let max = if max > 0.0 {
        chart::nice_ceiling(max)
    } else {
        1.0
    };
    let (lo, hi) = (
        p.xs.first().copied().unwrap_or(0.0),
        p.xs.last().copied().unwrap_or(1.0),
    );
    let x = |v: f64| {
        left + if hi > lo {
            (v - lo) / (hi - lo) * w
        } else {
            0.0
        }
    };
    let y = |v: f64| top + h - (v / max).clamp(0.0, 1.0) * h;
    let _ = write!(
        s,
        r#"<text x="{left:.1}" y="{:.1}" font-weight="bold">{}</text>"#,
        top - 6.0,
        esc(p.title)
    );
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{left:.1}" x2="{:.1}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left + w,
            left - 4.0,
            y(v) + 4.0,
            chart::trim_num(v),
            yy = y(v)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        left + w / 2.0,
        top + h + 28.0,
        esc(p.x_label)
    );
    for &xv in p.xs {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x(xv),
            top + h + 14.0,
            chart::trim_num(xv)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" transform="rotate(-90 {0:.1} {1:.1})" text-anchor="middle">{}</text>"#,
        p.x0 + 10.0,
        top + h / 2.0,
        esc(p.y_label)
    );
    draw_series(s, p.xs, series, &x, &y);
}

/// The lines, points and whiskers of `series` over `xs`, placed by `x`
/// and `y`.
fn draw_series(
    s: &mut String,
    xs: &[f64],
    series: &[Series],
    x: &dyn Fn(f64) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    for (i, sr) in series.iter().enumerate() {
        let color = chart::color(i);
        let pts: Vec<(f64, f64, f64)> = xs
            .iter()
            .zip(&sr.points)
            .filter_map(|(&xv, pt)| pt.map(|(m, sd)| (x(xv), m, sd)))
            .filter(|(_, m, _)| m.is_finite())
            .collect();
        let line: Vec<String> = pts
            .iter()
            .map(|(px, m, _)| format!("{px:.1},{:.1}", y(*m)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5"><title>{}</title></polyline>"#,
            line.join(" "),
            esc(sr.name)
        );
        for (px, m, sd) in pts {
            let _ = write!(
                s,
                r#"<circle cx="{px:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#,
                y(m)
            );
            if sd.is_finite() && sd > 0.0 {
                let _ = write!(
                    s,
                    r#"<line x1="{px:.1}" x2="{px:.1}" y1="{:.1}" y2="{:.1}" stroke="{color}"/>"#,
                    y(m - sd),
                    y(m + sd)
                );
            }
        }
    }
}

/// A legend of `names` (colour by index) from (`x`, `y`) down.
pub fn legend(s: &mut String, x: f64, y: f64, names: &[String]) {
    for (i, n) in names.iter().enumerate() {
        let ly = y + i as f64 * 16.0;
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
            ly - 9.0,
            chart::color(i),
            x + 14.0,
            esc(n)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panel_draws_a_line_per_series_and_skips_gaps() {
        let mut s = String::new();
        let xs = [1.0, 2.0, 4.0];
        let p = Panel {
            x0: 0.0,
            y0: 0.0,
            width: 300.0,
            height: 200.0,
            title: "read",
            y_label: "MB/s",
            x_label: "jobs",
            xs: &xs,
        };
        panel(
            &mut s,
            &p,
            &[
                Series {
                    name: "bfq",
                    points: vec![Some((10.0, 1.0)), None, Some((40.0, 0.0))],
                },
                Series {
                    name: "a<b",
                    points: vec![Some((5.0, 0.0)), Some((5.0, 0.0)), Some((5.0, 0.0))],
                },
            ],
        );
        assert_eq!(s.matches("<polyline").count(), 2);
        assert_eq!(s.matches("<circle").count(), 5);
        // One whisker (the only sd above 0); the axis tops at 50.
        assert_eq!(s.matches(r##"stroke="#1f77b4"/>"##).count(), 0);
        assert_eq!(s.matches(r##"stroke="#7f7f7f"/>"##).count(), 1);
        assert!(s.contains(">50</text>"), "{s}");
        assert!(s.contains("a&lt;b"));
        // x = 1 at the left edge of the plot, x = 4 at its right.
        assert!(s.contains(r#"<circle cx="45.0""#) && s.contains(r#"<circle cx="290.0""#));
    }
}
