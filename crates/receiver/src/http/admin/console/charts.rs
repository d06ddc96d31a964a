//! SVG charts drawn on the server (no script, no image request): lines
//! over time and bars per bucket, scaled to their largest value, with a
//! title and a text summary for those who do not see them. Pure.
//!
//! Drawn small (480 units wide) with large text (14 units), so that on a
//! phone (some 350 px for the chart) the text stays at 10 px or more; the
//! page caps a chart's width so it does not grow huge on a desk. The value
//! axis carries numbers only (the unit is in the chart's heading), so no
//! label is wider than its margin.

use std::fmt::Write;

const W: f64 = 480.0;
const H: f64 = 200.0;
const LEFT: f64 = 50.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 26.0;
/// Text size in the chart's own units.
pub const FONT: f64 = 14.0;
// On a phone a chart is some 350 px wide: its text stays 10 px or more.
const _: () = assert!(FONT * 350.0 / W >= 10.0);
/// Half the width of a time label ("09:15") and a little more: labels stay
/// inside the drawing.
const HALF_LABEL: f64 = 22.0;

/// One line: its name, its colour, and `(unix ms, value)` points.
#[derive(Clone)]
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<(i64, f64)>,
}

/// The colours lines take, in order (dark enough on white).
pub const COLORS: [&str; 6] = [
    "#1f5fa8", "#b3261e", "#2e7d32", "#8a4b08", "#6a1b9a", "#00695c",
];

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A round number at or above `max`, for the axis.
fn ceiling(max: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(max.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= max {
            return m * p;
        }
    }
    10.0 * p
}

fn number(v: f64) -> String {
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn hhmm(ms: i64) -> String {
    let text = pointhook_common::clock::rfc3339(ms);
    text.get(11..16).unwrap_or("").to_string()
}

fn day(ms: i64) -> String {
    let text = pointhook_common::clock::rfc3339(ms);
    text.get(5..10).unwrap_or("").to_string()
}

fn frame(out: &mut String, title: &str, top: f64) {
    let _ = write!(
        out,
        "<svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{t}\" class=\"chart\">\
         <title>{t}</title>\
         <line x1=\"{LEFT}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#888\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{x1}\" y2=\"{TOP}\" stroke=\"#ddd\"/>\
         <text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\" font-size=\"{FONT}\">{top}</text>\
         <text x=\"{lx}\" y=\"{y0}\" text-anchor=\"end\" font-size=\"{FONT}\">0</text>",
        t = esc(title),
        y0 = H - BOTTOM,
        x1 = W - RIGHT,
        lx = LEFT - 5.0,
        ty = TOP + FONT / 2.0,
        top = number(top),
    );
}

/// Lines over `[from, to)`, with time marks (UTC) on the x axis.
pub fn lines(title: &str, from: i64, to: i64, series: &[Series]) -> String {
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|(_, v)| *v))
        .fold(0.0, f64::max);
    let top = ceiling(max);
    let span = (to - from).max(1) as f64;
    let x = |t: i64| LEFT + (t - from) as f64 / span * (W - LEFT - RIGHT);
    let y = |v: f64| H - BOTTOM - v / top * (H - BOTTOM - TOP);
    let mut out = String::new();
    frame(&mut out, title, top);
    let marks = 4;
    for i in 0..=marks {
        let t = from + (to - from) * i / marks;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{FONT}\">{}</text>",
            x(t).clamp(LEFT + HALF_LABEL, W - RIGHT - HALF_LABEL),
            H - 7.0,
            hhmm(t)
        );
    }
    for s in series {
        if s.points.is_empty() {
            continue;
        }
        let mut d = String::new();
        for (i, (t, v)) in s.points.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if i == 0 { "M" } else { " L" },
                x(*t),
                y(*v)
            );
        }
        let _ = write!(
            out,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"><title>{}</title></path>",
            s.color,
            esc(&s.name)
        );
    }
    out.push_str("</svg>");
    out
}

/// Bars, one per `(bucket start, value)`, `width_ms` wide, over `[from, to)`.
pub fn bars(
    title: &str,
    from: i64,
    to: i64,
    width_ms: i64,
    bars: &[(i64, f64)],
    daily: bool,
) -> String {
    let max = bars.iter().map(|(_, v)| *v).fold(0.0, f64::max);
    let top = ceiling(max);
    let span = (to - from).max(1) as f64;
    let x = |t: i64| LEFT + (t - from) as f64 / span * (W - LEFT - RIGHT);
    let mut out = String::new();
    frame(&mut out, title, top);
    let bw = (width_ms as f64 / span * (W - LEFT - RIGHT) - 2.0).max(1.0);
    for (t, v) in bars {
        let h = v / top * (H - BOTTOM - TOP);
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{h:.1}\" fill=\"#1f5fa8\">\
             <title>{}: {}</title></rect>",
            x(*t) + 1.0,
            H - BOTTOM - h,
            if daily { day(*t) } else { hhmm(*t) },
            number(*v)
        );
    }
    // At most five labels, so they never overlap.
    let buckets = ((to - from) / width_ms.max(1)).max(1);
    let step = (buckets + 4) / 5;
    let mut t = from;
    while t < to {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"{FONT}\">{}</text>",
            (x(t) + bw / 2.0).clamp(LEFT + HALF_LABEL, W - RIGHT - HALF_LABEL),
            H - 7.0,
            if daily { day(t) } else { hhmm(t) }
        );
        t += width_ms * step;
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_round_up_and_names_are_escaped() {
        assert_eq!(ceiling(0.0), 1.0);
        assert_eq!(ceiling(7.0), 10.0);
        assert_eq!(ceiling(120.0), 200.0);
        let svg = lines(
            "a <b>",
            0,
            60_000,
            &[Series {
                name: "x\"y".into(),
                color: COLORS[0],
                points: vec![(0, 1.0), (30_000, 3.0)],
            }],
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("a &lt;b&gt;") && svg.contains("x&quot;y"));
        assert!(!svg.contains("<b>"));
    }

    /// At 390 px a chart is some 350 px wide: its text stays 10 px or
    /// more, and no label starts left of the drawing.
    #[test]
    fn text_is_readable_on_a_phone_and_inside_the_drawing() {
        let svg = bars("b", 0, 86_400_000, 3_600_000, &[(0, 12345.0)], false);
        for size in svg.split("font-size=\"").skip(1) {
            let size: f64 = size.split('"').next().unwrap().parse().unwrap();
            assert!(size >= FONT, "{svg}");
        }
        // The widest value label ("20000") fits left of the axis.
        assert!(number(ceiling(12345.0)).len() as f64 * FONT * 0.55 <= LEFT - 5.0);
        assert_eq!(svg.matches("text-anchor=\"middle\"").count(), 5, "{svg}");
    }
}
