//! A live sweep drawn (`bpfbench live --sweep ... --plot FILE.svg|png`):
//! the packet rate, the program's ns/packet and, for the load balancer,
//! the LRU hit rate, each in its own panel against the swept quantity.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::record::live::LiveRecord;

/// Where Debian's fonts-dejavu-core puts the font the labels are drawn in.
const FONT_FILES: &[&str] = &["/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf"];
const WIDTH: u32 = 900;
const PANEL_HEIGHT: u32 = 320;

/// Makes the labels' font known to the plotting library (once): it
/// measures text with it, also for SVG.
pub(crate) fn register_font() -> Result<()> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let path = FONT_FILES
            .iter()
            .find(|p| Path::new(p).exists())
            .ok_or("no DejaVuSans.ttf for the plot's labels; install fonts-dejavu-core")?;
        let bytes: &'static [u8] =
            Box::leak(std::fs::read(path).map_err(|e| format!("reading {path}: {e}"))?.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{path} is not a font the plot can use"))
    })
    .clone()
    .map_err(|e| anyhow::anyhow!(e))
}

/// A named, coloured line of (x, y) points.
type Series = (String, RGBColor, Vec<(f64, f64)>);

/// One panel: a y quantity with its series, over the swept x. The first
/// series (the reference: offered, predicted) is drawn wide, the measured
/// one over it, so both show where they coincide.
struct Panel {
    title: String,
    y_label: &'static str,
    series: Vec<Series>,
}

fn panels(rec: &LiveRecord) -> Vec<Panel> {
    let x = |v: Option<u64>| v.unwrap_or(0) as f64;
    let steps = &rec.steps;
    let mut out = vec![Panel {
        title: "Packet rate".into(),
        y_label: "Mpps",
        series: vec![
            (
                "offered (generator)".into(),
                BLUE,
                steps.iter().map(|s| (x(s.value), s.rates.offered_pps / 1e6)).collect(),
            ),
            (
                "received (program)".into(),
                RED,
                steps.iter().map(|s| (x(s.value), s.rates.received_pps / 1e6)).collect(),
            ),
        ],
    }];
    let mut ns = Vec::new();
    if let Some(cc) = &rec.cross_check {
        ns.push((
            "in-BPF prediction from hit rate".into(),
            BLUE,
            cc.steps.iter().map(|r| (x(r.value), r.predicted_ns)).collect(),
        ));
    }
    ns.push((
        "live (bpf_stats)".into(),
        RED,
        steps.iter().filter_map(|s| Some((x(s.value), s.ns_per_packet?))).collect(),
    ));
    out.push(Panel { title: "Program run time".into(), y_label: "ns per packet", series: ns });
    // A panel per ratio of the program's own: measured, and predicted.
    let mut names: Vec<&str> = Vec::new();
    for r in steps.iter().flat_map(|s| &s.ratios) {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    for name in names {
        let how = steps.iter().find_map(|s| s.ratio(name)?.prediction.clone()).unwrap_or_else(|| "predicted".into());
        out.push(Panel {
            title: name.to_string(),
            y_label: "percent",
            series: vec![
                (
                    format!("predicted: {how}"),
                    BLUE,
                    steps.iter().filter_map(|s| Some((x(s.value), s.ratio(name)?.predicted? * 100.0))).collect(),
                ),
                (
                    "measured".into(),
                    RED,
                    steps.iter().filter_map(|s| Some((x(s.value), s.ratio(name)?.value * 100.0))).collect(),
                ),
            ],
        });
    }
    out
}

/// A panel's pixels outside its plotting area: caption, x labels, margins.
const PANEL_FRAME_PX: u32 = 100;
/// A legend's height: a row per series and its frame.
const LEGEND_ROW_PX: f64 = 20.0;
const LEGEND_FRAME_PX: f64 = 16.0;

/// The top of a panel's y axis: room above the data's maximum for the
/// legend, which sits in the upper right, so that it hides no point (in
/// the lower right it hid the last step's, when the last was the lowest).
fn y_top(data_max: f64, series: usize, plot_px: u32) -> f64 {
    let legend_px = LEGEND_ROW_PX * series as f64 + LEGEND_FRAME_PX;
    let below_legend = (1.0 - legend_px / f64::from(plot_px.max(1))).max(0.3);
    data_max.max(1e-9) * 1.05 / below_legend
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    x_label: &str,
    x_range: (i64, i64),
    xs: &[i64],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let ys = panel.series.iter().flat_map(|s| s.2.iter().map(|p| p.1));
    let data_max = ys.fold(0.0f64, f64::max);
    let (_, height) = area.dim_in_pixel();
    let y_max = y_top(data_max, panel.series.len(), height.saturating_sub(PANEL_FRAME_PX));
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        // Ticks at the sweep's values only: evenly spaced ticks put
        // "1 1 1 2 2 2" under a sweep of threads=1,2.
        .build_cartesian_2d((x_range.0..x_range.1).with_key_points(xs.to_vec()), 0.0..y_max)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart.configure_mesh().x_desc(x_label).y_desc(panel.y_label).draw().map_err(|e| anyhow::anyhow!("{e}"))?;
    for (i, (name, color, points)) in panel.series.iter().enumerate() {
        let color = *color;
        let width = if i == 0 && panel.series.len() > 1 { 5 } else { 2 };
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|&(x, y)| (x as i64, y)),
                color.mix(if width == 5 { 0.5 } else { 1.0 }).stroke_width(width),
            ))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width)));
        chart
            .draw_series(points.iter().map(|&(x, y)| Circle::new((x as i64, y), 4, color.filled())))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, rec: &LiveRecord, panels: &[Panel]) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let sweep = rec.sweep.context("a plot needs a sweep (--sweep VAR=...)")?;
    // A sweep's values are whole numbers (threads, sizes, ports).
    let xs: Vec<i64> = rec.steps.iter().map(|s| s.value.unwrap_or(0) as i64).collect();
    let (lo, hi) = (*xs.iter().min().unwrap_or(&0), *xs.iter().max().unwrap_or(&0));
    let pad = ((hi - lo) / 20).max(1);
    let areas = root.split_evenly((panels.len(), 1));
    for (area, panel) in areas.iter().zip(panels) {
        draw_panel(area, panel, sweep.axis_label(), (lo - pad, hi + pad), &xs)?;
    }
    root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

/// `rec` drawn as SVG text (the HTML report holds it inline).
pub fn svg(rec: &LiveRecord) -> Result<String> {
    ensure!(rec.sweep.is_some() && !rec.steps.is_empty(), "a plot needs a sweep with steps");
    register_font()?;
    let panels = panels(rec);
    let mut out = String::new();
    draw(
        SVGBackend::with_string(&mut out, (WIDTH, PANEL_HEIGHT * panels.len() as u32)).into_drawing_area(),
        rec,
        &panels,
    )?;
    Ok(out)
}

/// Draws `rec` to `path`, SVG or PNG by its extension.
pub fn plot(rec: &LiveRecord, path: &Path) -> Result<()> {
    ensure!(rec.sweep.is_some(), "--plot draws a sweep; give --sweep VAR=V1,V2,...");
    ensure!(!rec.steps.is_empty(), "no step was measured, so there is nothing to plot");
    register_font()?;
    let panels = panels(rec);
    let size = (WIDTH, PANEL_HEIGHT * panels.len() as u32);
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("svg") => draw(SVGBackend::new(path, size).into_drawing_area(), rec, &panels),
        Some("png") => {
            let mut rgb = vec![0u8; 3 * size.0 as usize * size.1 as usize];
            draw(BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area(), rec, &panels)?;
            write_png(path, size, &rgb)
        }
        _ => bail!("--plot {}: give a file ending in .svg or .png", path.display()),
    }
    .with_context(|| format!("drawing {}", path.display()))
}

/// Writes 8-bit RGB pixels as a PNG file. The png crate, not plotters'
/// own encoder, which brings the whole image crate (JPEG and all) to the
/// build for this one format.
fn write_png(path: &Path, (width, height): (u32, u32), rgb: &[u8]) -> Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header()?.write_image_data(rgb)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legend_gets_a_band_above_every_point() {
        for (series, plot_px) in [(1, 200), (2, 250), (3, 400)] {
            let top = y_top(100.0, series, plot_px);
            // Pixels from the top of the plot down to the highest point.
            let free_px = (1.0 - 100.0 / top) * f64::from(plot_px);
            let legend_px = LEGEND_ROW_PX * series as f64 + LEGEND_FRAME_PX;
            assert!(free_px >= legend_px, "{series} series in {plot_px} px: {free_px:.0} px free, legend {legend_px}");
        }
    }
}
