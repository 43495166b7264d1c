//! ASCII histogram of samples between p1 and p99, the tails counted apart,
//! like the kernel selftests' bench output.

use super::percentile_sorted;

const BAR_WIDTH: usize = 40;
const TARGET_BINS: f64 = 16.0;

/// Renders one line per bin: lower edge, count, bar.
pub fn render_histogram(samples: &[f64]) -> String {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.len() < 2 {
        return String::from("    (too few samples for a histogram)\n");
    }
    let (lo, hi) = (percentile_sorted(&sorted, 1.0), percentile_sorted(&sorted, 99.0));
    let width = nice_width((hi - lo) / TARGET_BINS);
    let start = (lo / width).floor() * width;
    let bins = (((hi - start) / width).floor() as usize + 1).max(1);
    let mut counts = vec![0usize; bins];
    let (mut below, mut above) = (0usize, 0usize);
    for &x in &sorted {
        if x < lo {
            below += 1;
        } else if x > hi {
            above += 1;
        } else {
            counts[(((x - start) / width) as usize).min(bins - 1)] += 1;
        }
    }
    let peak = counts.iter().copied().max().unwrap_or(1).max(1);
    let decimals = if width >= 1.0 { 0 } else { (-width.log10()).ceil() as usize };
    let mut out = String::new();
    if below > 0 {
        out.push_str(&format!("    {:>10} : {:<9} (below range)\n", "<p1", below));
    }
    for (i, &c) in counts.iter().enumerate() {
        let edge = start + i as f64 * width;
        let bar = "*".repeat((c * BAR_WIDTH).div_ceil(peak).min(BAR_WIDTH));
        out.push_str(&format!("    {:>10.*} : {:<9} |{:<BAR_WIDTH$}|\n", decimals, edge, c, bar));
    }
    if above > 0 {
        out.push_str(&format!("    {:>10} : {:<9} (above range)\n", ">p99", above));
    }
    out
}

/// Rounds a bin width up to 1, 2 or 5 times a power of ten.
fn nice_width(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1e-3;
    }
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|w| *w >= raw).unwrap_or(10.0 * mag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_sample_once() {
        let xs: Vec<f64> = (0..1000).map(|i| 800.0 + (i % 170) as f64).collect();
        let text = render_histogram(&xs);
        let total: usize = text
            .lines()
            .filter_map(|l| l.split(':').nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .filter_map(|c| c.parse::<usize>().ok())
            .sum();
        assert_eq!(total, 1000, "{text}");
        assert!(text.contains("|****************************************|"));
    }

    #[test]
    fn widths_are_round() {
        assert_eq!(nice_width(7.3), 10.0);
        assert_eq!(nice_width(0.13), 0.2);
        assert_eq!(nice_width(41.0), 50.0);
    }

    #[test]
    fn constant_samples_fall_into_one_full_bin() {
        let text = render_histogram(&[5.0; 10]);
        let bins: Vec<&str> = text.lines().collect();
        assert_eq!(bins.len(), 1, "{text}");
        let count: usize =
            bins[0].split(':').nth(1).and_then(|r| r.split_whitespace().next()).unwrap().parse().unwrap();
        assert_eq!(count, 10, "{text}");
        assert!(bins[0].contains(&format!("|{}|", "*".repeat(BAR_WIDTH))), "{text}");
    }
}
