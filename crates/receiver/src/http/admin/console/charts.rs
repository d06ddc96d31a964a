//! SVG charts drawn on the server (no script, no image request): lines
//! over time and bars per bucket, scaled to their largest value, with a
//! title and a text summary for those who do not see them. Pure.

use std::fmt::Write;

const W: f64 = 600.0;
const H: f64 = 170.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 22.0;

/// One line: its name, its colour, and `(unix ms, value)` points.
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

fn frame(out: &mut String, title: &str, top: f64, unit: &str) {
    let _ = write!(
        out,
        "<svg viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{t}\" class=\"chart\">\
         <title>{t}</title>\
         <line x1=\"{LEFT}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#888\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{x1}\" y2=\"{TOP}\" stroke=\"#ddd\"/>\
         <text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\" font-size=\"11\">{top} {unit}</text>\
         <text x=\"{lx}\" y=\"{y0}\" text-anchor=\"end\" font-size=\"11\">0</text>",
        t = esc(title),
        y0 = H - BOTTOM,
        x1 = W - RIGHT,
        lx = LEFT - 4.0,
        ty = TOP + 4.0,
        top = number(top),
        unit = esc(unit),
    );
}

/// Lines over `[from, to)`, with the hour marks of the x axis.
pub fn lines(title: &str, unit: &str, from: i64, to: i64, series: &[Series]) -> String {
    let max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|(_, v)| *v))
        .fold(0.0, f64::max);
    let top = ceiling(max);
    let span = (to - from).max(1) as f64;
    let x = |t: i64| LEFT + (t - from) as f64 / span * (W - LEFT - RIGHT);
    let y = |v: f64| H - BOTTOM - v / top * (H - BOTTOM - TOP);
    let mut out = String::new();
    frame(&mut out, title, top, unit);
    let marks = 4;
    for i in 0..=marks {
        let t = from + (to - from) * i / marks;
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
            x(t).clamp(LEFT + 14.0, W - RIGHT - 14.0),
            H - 6.0,
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
    unit: &str,
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
    frame(&mut out, title, top, unit);
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
    let step = if daily { 1 } else { 6 };
    let mut t = from;
    while t < to {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
            (x(t) + bw / 2.0).clamp(LEFT + 14.0, W - RIGHT - 14.0),
            H - 6.0,
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
            "ms",
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
}
