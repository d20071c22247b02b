//! What the suites' SVG charts share: the document, the title, the colours
//! and the axis numbers.

use std::fmt::Write as _;

/// One colour per scheduler, in the suite's scheduler order.
pub const PALETTE: &[&str] = &[
    "#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
];

/// The colour of the `i`th scheduler or bar.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Text escaped for SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
    fn documents_open_and_close() {
        let s = end(start(100.0, 50.0, 10.0, &esc("a<b")));
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert!(s.contains(">a&lt;b</text>"));
        assert_eq!(trim_num(2.50), "2.5");
        assert_eq!(trim_num(3.0), "3");
        assert_eq!(color(9), PALETTE[1]);
    }
}
