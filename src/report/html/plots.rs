//! The HTML report's plots, drawn with plotters into SVG text that the page
//! holds inline (no file, no script, no font download: the viewer's own
//! sans-serif draws the labels).

use anyhow::{Result, anyhow};
use plotters::prelude::*;

const WIDTH: u32 = 900;

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing the report's plot: {e}")
}

/// plotters writes a fixed width and height; with them gone the viewBox
/// scales the plot to the page (a phone's width, or print).
pub(super) fn responsive(svg: String) -> String {
    match (svg.find("<svg"), svg.find("viewBox")) {
        (Some(start), Some(view)) if view > start => {
            let head_end = svg[start..].find('>').map_or(svg.len(), |e| start + e);
            let head = &svg[start..head_end];
            let cleaned: String = head
                .split(' ')
                .filter(|attr| !attr.starts_with("width=") && !attr.starts_with("height="))
                .collect::<Vec<_>>()
                .join(" ");
            format!("{}{}{}", &svg[..start], cleaned, &svg[head_end..])
        }
        _ => svg,
    }
}

/// One row of an interval plot: a name, a value and its 95 % interval.
pub struct Interval {
    pub name: String,
    pub value: f64,
    pub ci: Option<(f64, f64)>,
}

/// Label and axis text, large enough to read when the page scales the
/// plot down to a phone's width.
const LABELS: (&str, u32) = ("sans-serif", 16);

/// Values with their intervals, one row each (medians of a run, or B/A
/// ratios of a paired comparison with `reference` 1.0 drawn as a line).
/// Values spanning more than a factor of 10 are drawn on a log scale, so
/// that a 5 ns benchmark's interval shows beside a 300 ns one's.
pub fn intervals(rows: &[Interval], x_label: &str, reference: Option<f64>) -> Result<String> {
    crate::report::live_plot::register_font()?;
    // Every value and both ends of every interval are in range (a value
    // need not lie in its interval: a userspace row may carry the kernel's).
    let ends = |r: &Interval| [r.value, r.ci.map_or(r.value, |c| c.0), r.ci.map_or(r.value, |c| c.1)];
    let lo = rows.iter().flat_map(ends).chain(reference).fold(f64::MAX, f64::min);
    let hi = rows.iter().flat_map(ends).chain(reference).fold(f64::MIN, f64::max);
    let log = lo > 0.0 && hi / lo > 10.0;
    // Base 10: the axis's evenly spaced ticks then fall on decades and
    // their halves (10, 31.6, 100), not on powers of e (7.389, 20.09).
    let to_x = |v: f64| if log { v.log10() } else { v };
    let (lo, hi) = (to_x(lo), to_x(hi));
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 1e-3).max(1e-9);
    let height = 70 + 30 * rows.len() as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let n = rows.len();
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(44)
            .y_label_area_size(320)
            .build_cartesian_2d((lo - pad)..(hi + pad), -0.5..(n as f64 - 0.5))
            .map_err(err)?;
        let x_desc = if log { format!("{x_label} (log scale)") } else { x_label.to_string() };
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .label_style(LABELS)
            .axis_desc_style(LABELS)
            .x_label_formatter(&|x| if log { tick_label(10f64.powf(*x)) } else { plain_label(*x, hi - lo + 2.0 * pad) })
            .y_labels(n.max(1))
            .y_label_formatter(&|y| {
                let i = y.round() as i64;
                if (y - i as f64).abs() < 0.01 && i >= 0 && (i as usize) < n {
                    rows[n - 1 - i as usize].name.clone()
                } else {
                    String::new()
                }
            })
            .disable_y_mesh()
            .draw()
            .map_err(err)?;
        if let Some(r) = reference {
            let r = to_x(r);
            chart
                .draw_series(LineSeries::new([(r, -0.5), (r, n as f64 - 0.5)], BLACK.mix(0.4).stroke_width(1)))
                .map_err(err)?;
        }
        for (i, row) in rows.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            if let Some((a, b)) = row.ci {
                chart.draw_series(LineSeries::new([(to_x(a), y), (to_x(b), y)], BLUE.stroke_width(3))).map_err(err)?;
            }
            chart.draw_series([Circle::new((to_x(row.value), y), 5, RED.filled())]).map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(responsive(svg))
}

/// A linear axis's tick, with as many decimals as ticks a tenth of the
/// axis's `span` apart need to read differently (14.05, 14.10, not 14.1
/// twice), and none beyond.
fn plain_label(v: f64, span: f64) -> String {
    let step = (span / 10.0).max(1e-12);
    let digits = (-step.log10().floor()).max(0.0) as usize;
    format!("{v:.digits$}")
}

/// A log axis's tick, to two significant digits: 3.2, 10, 32, 100, 320.
fn tick_label(v: f64) -> String {
    if v <= 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (1 - v.log10().floor() as i32).max(0) as usize;
    let rounded = format!("{v:.digits$}");
    if v >= 100.0 {
        // Two significant digits of a larger number: 316 -> 320.
        let scale = 10f64.powi(v.log10().floor() as i32 - 1);
        format!("{:.0}", (v / scale).round() * scale)
    } else {
        rounded
    }
}

/// One run in a trend.
pub struct TrendPoint {
    pub median: f64,
    pub ci: Option<(f64, f64)>,
}

/// A benchmark's per-run medians with their intervals, oldest first; each
/// change point as a dashed line before its first run, each segment's
/// median as a flat line.
pub fn trend(points: &[TrendPoint], changes: &[usize], segment_medians: &[f64]) -> Result<String> {
    crate::report::live_plot::register_font()?;
    let ends = |p: &TrendPoint| [p.median, p.ci.map_or(p.median, |c| c.0), p.ci.map_or(p.median, |c| c.1)];
    let lo = points.iter().flat_map(ends).fold(f64::MAX, f64::min);
    let hi = points.iter().flat_map(ends).fold(f64::MIN, f64::max);
    let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.01).max(1e-9);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 260)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let n = points.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(44)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..(n - 0.5), (lo - pad)..(hi + pad))
            .map_err(err)?;
        chart
            .configure_mesh()
            .label_style(LABELS)
            .axis_desc_style(LABELS)
            .x_desc("run, oldest first")
            .y_desc("ns/op (median, 95 % CI)")
            .x_label_formatter(&|x| format!("{}", x.round() as i64 + 1))
            .draw()
            .map_err(err)?;
        let bounds: Vec<usize> = std::iter::once(0).chain(changes.iter().copied()).chain([points.len()]).collect();
        for (k, m) in segment_medians.iter().enumerate() {
            let (a, b) = (bounds[k] as f64 - 0.5, bounds[k + 1] as f64 - 0.5);
            chart.draw_series(LineSeries::new([(a, *m), (b, *m)], GREEN.stroke_width(2))).map_err(err)?;
        }
        for &c in changes {
            let x = c as f64 - 0.5;
            chart
                .draw_series(DashedLineSeries::new([(x, lo - pad), (x, hi + pad)], 6, 4, RED.stroke_width(2)))
                .map_err(err)?;
        }
        chart
            .draw_series(points.iter().enumerate().filter_map(|(i, p)| {
                p.ci.map(|(a, b)| PathElement::new(vec![(i as f64, a), (i as f64, b)], BLUE.mix(0.6).stroke_width(1)))
            }))
            .map_err(err)?;
        chart
            .draw_series(points.iter().enumerate().map(|(i, p)| Circle::new((i as f64, p.median), 3, BLUE.filled())))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(responsive(svg))
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_ticks_read_as_round_numbers() {
        let ticks: Vec<String> = [0.5, 1.0, 1.5, 2.0, 2.5].iter().map(|e| super::tick_label(10f64.powf(*e))).collect();
        assert_eq!(ticks, ["3.2", "10", "32", "100", "320"]);
        assert_eq!(super::tick_label(4.2), "4.2");
        // A narrow linear axis's ticks read differently from each other.
        let ticks: Vec<String> = (0..6).map(|i| super::plain_label(14.05 + 0.05 * f64::from(i), 0.4)).collect();
        assert_eq!(ticks, ["14.05", "14.10", "14.15", "14.20", "14.25", "14.30"]);
        assert_eq!(super::plain_label(150.0, 300.0), "150");
        assert_eq!(super::tick_label(0.042), "0.042");
    }

    #[test]
    fn plots_scale_to_the_page() {
        let svg = super::responsive(
            r#"<?xml version="1.0"?><svg width="900" height="260" viewBox="0 0 900 260" xmlns="x"><rect/></svg>"#
                .to_string(),
        );
        assert_eq!(svg, r#"<?xml version="1.0"?><svg viewBox="0 0 900 260" xmlns="x"><rect/></svg>"#);
    }
}
