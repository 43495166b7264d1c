//! Descriptive statistics of benchmark samples. Knows nothing of BPF.
//!
//! Percentiles interpolate linearly between order statistics (Hyndman & Fan
//! type 7, as numpy and R default to). The median's confidence interval is
//! distribution-free: it comes from the binomial distribution of how many
//! samples fall below the true median.

pub mod change_points;
mod histogram;
pub mod linearity;
pub mod paired;
pub mod two_sample;

pub use histogram::render_histogram;

use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, DiscreteCDF};

/// Summary of one sample set (values in ns/op).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub stddev: f64,
    /// Coefficient of variation, stddev / mean, as a fraction.
    pub cv: f64,
    pub min: f64,
    pub max: f64,
    pub p1: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    /// 95% confidence interval of the median, from order statistics.
    pub median_ci95: (f64, f64),
    /// Samples outside Tukey's fences (1.5 IQR): flagged, never dropped.
    pub outliers_low: usize,
    pub outliers_high: usize,
    /// Set when the tail is much longer than the body; see `skew_note`.
    pub skew: Option<Skew>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub enum SkewSide {
    Right,
    Left,
}

/// One tail is at least `SKEW_RATIO` times the other side's spread.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Skew {
    pub side: SkewSide,
    /// Tail length over body length.
    pub ratio: f64,
}

const SKEW_RATIO: f64 = 2.0;

impl Summary {
    /// Summarises `samples`; `None` for an empty set.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let var = if n > 1 { sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
        let stddev = var.sqrt();
        let q = |p: f64| percentile_sorted(&sorted, p);
        let (p1, p25, p50, p75, p99) = (q(1.0), q(25.0), q(50.0), q(75.0), q(99.0));
        let iqr = p75 - p25;
        let (lo_fence, hi_fence) = (p25 - 1.5 * iqr, p75 + 1.5 * iqr);
        Some(Summary {
            n,
            mean,
            median: p50,
            stddev,
            cv: if mean != 0.0 { stddev / mean } else { 0.0 },
            min: sorted[0],
            max: sorted[n - 1],
            p1,
            p50,
            p75,
            p90: q(90.0),
            p95: q(95.0),
            p99,
            median_ci95: median_ci(&sorted, 0.95),
            outliers_low: sorted.iter().filter(|&&x| x < lo_fence).count(),
            outliers_high: sorted.iter().filter(|&&x| x > hi_fence).count(),
            skew: skew(p1, p50, p99),
        })
    }

    /// A one-line note on a long tail, e.g. "right-skewed distribution (tail 3.6x the body)".
    pub fn skew_note(&self) -> Option<String> {
        self.skew.map(|s| {
            let side = match s.side {
                SkewSide::Right => "right",
                SkewSide::Left => "left",
            };
            format!("{side}-skewed distribution (tail {:.1}x the body)", s.ratio)
        })
    }
}

/// Tail (p99 - p50) against body (p50 - p1), or the mirror for the left side.
fn skew(p1: f64, p50: f64, p99: f64) -> Option<Skew> {
    let (body, tail) = (p50 - p1, p99 - p50);
    if body > 0.0 && tail / body >= SKEW_RATIO {
        Some(Skew { side: SkewSide::Right, ratio: tail / body })
    } else if tail > 0.0 && body / tail >= SKEW_RATIO {
        Some(Skew { side: SkewSide::Left, ratio: body / tail })
    } else {
        None
    }
}

/// The median of unsorted data (None when empty).
pub fn median(data: &[f64]) -> Option<f64> {
    let mut v = data.to_vec();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| percentile_sorted(&v, 50.0))
}

/// A sample this much slower than the fastest ran on a slower speed level
/// of the CPU (on this kind of VM 1.15-1.4 times slower, for 10 ms to
/// minutes), or was cut into.
pub const SPEED_LEVEL: f64 = 1.10;

/// The samples at the CPU's fastest speed level: those within
/// [`SPEED_LEVEL`] of the fastest. Two figures taken at different levels
/// (one program's ns per run, another's slowdown) cannot be subtracted.
pub fn at_fastest_level(samples: &[f64]) -> Vec<f64> {
    let fastest = samples.iter().copied().fold(f64::INFINITY, f64::min);
    samples.iter().copied().filter(|s| *s <= fastest * SPEED_LEVEL).collect()
}

/// Whether the samples at the fastest level make a level of their own: at
/// least [`LEVEL_AT_LEAST`] of them and a fifth of all. A cost that spreads
/// wide (a wakeup's, 0.6-2.4 µs) has none: its fastest few are its tail.
pub fn makes_a_level(kept: usize, all: usize) -> bool {
    kept >= LEVEL_AT_LEAST && kept * 5 >= all
}

pub const LEVEL_AT_LEAST: usize = 8;

/// The least-squares slope of y on x (None with fewer than two distinct x).
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (points.len() >= 2 && sxx > 1e-12).then(|| sxy / sxx)
}

/// The widest 95 % interval half-width of a share estimated from `n`
/// independent samples (binomial, normal approximation, at a share of
/// one half), in percentage points.
pub fn share_halfwidth_95(n: u64) -> f64 {
    // Periodic samples of a periodic loop are not quite independent: a floor, not a bound.
    if n == 0 {
        return 100.0;
    }
    100.0 * 1.96 * (0.25 / n as f64).sqrt()
}

/// Percentile `p` (0..=100) of sorted data, linear interpolation.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * p.clamp(0.0, 100.0) / 100.0;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// Order-statistic confidence interval of the median: the narrowest symmetric
/// pair of ranks (j, n+1-j) whose binomial coverage reaches `level`. With
/// fewer than 6 samples no such pair exists and the whole range is returned.
pub fn median_ci(sorted: &[f64], level: f64) -> (f64, f64) {
    let n = sorted.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let binom = Binomial::new(0.5, n as u64).expect("p=0.5 is a valid probability");
    // Coverage of [X(j), X(n+1-j)] (1-based) is 1 - 2 * P(B <= j-1).
    let mut best = 1usize;
    for j in 1..=n.div_ceil(2) {
        let coverage = 1.0 - 2.0 * binom.cdf((j - 1) as u64);
        if coverage >= level {
            best = j;
        } else {
            break;
        }
    }
    (sorted[best - 1], sorted[n - best])
}

#[cfg(test)]
mod tests {
    #[test]
    fn samples_of_a_slower_speed_level_are_set_aside() {
        let kept = super::at_fastest_level(&[47.0, 55.2, 47.9, 54.8, 51.6, 52.0]);
        assert_eq!(kept, vec![47.0, 47.9, 51.6]);
    }

    use super::*;

    /// A deterministic normal sample (Box–Muller over a fixed LCG).
    pub(crate) fn normal_samples(n: usize, mean: f64, sd: f64, seed: u64) -> Vec<f64> {
        let mut state = seed;
        let mut uniform = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let (u1, u2) = (uniform(), uniform());
                mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }

    #[test]
    fn uniform_sequence_has_exact_percentiles() {
        let xs: Vec<f64> = (0..=100).map(f64::from).collect();
        let s = Summary::of(&xs).unwrap();
        assert_eq!(s.n, 101);
        assert_eq!(s.min, 0.0);
        assert_eq!(s.max, 100.0);
        assert_eq!(s.p50, 50.0);
        assert_eq!(s.p90, 90.0);
        assert_eq!(s.p99, 99.0);
        assert_eq!(s.mean, 50.0);
        // Sample stddev of 0..=100 is sqrt(101*102/12) = 29.3002
        assert!((s.stddev - 29.300_17).abs() < 1e-4, "{}", s.stddev);
        assert_eq!(s.outliers_low + s.outliers_high, 0);
        assert!(s.skew.is_none());
    }

    #[test]
    fn interpolates_between_order_statistics() {
        assert_eq!(percentile_sorted(&[1.0, 2.0, 3.0, 4.0], 50.0), 2.5);
        assert_eq!(percentile_sorted(&[10.0], 99.0), 10.0);
    }

    #[test]
    fn normal_distribution_recovers_parameters() {
        let xs = normal_samples(20_000, 100.0, 5.0, 7);
        let s = Summary::of(&xs).unwrap();
        assert!((s.mean - 100.0).abs() < 0.2, "mean {}", s.mean);
        assert!((s.median - 100.0).abs() < 0.2, "median {}", s.median);
        assert!((s.stddev - 5.0).abs() < 0.15, "sd {}", s.stddev);
        assert!((s.cv - 0.05).abs() < 0.002);
        // p90 of N(100, 5) is 100 + 1.2816 * 5
        assert!((s.p90 - 106.41).abs() < 0.3, "p90 {}", s.p90);
        assert!((s.p99 - 111.63).abs() < 0.5, "p99 {}", s.p99);
        // Tukey fences flag about 0.7% of a normal sample on both sides together.
        let flagged = (s.outliers_low + s.outliers_high) as f64 / xs.len() as f64;
        assert!((0.003..0.012).contains(&flagged), "flagged {flagged}");
    }

    #[test]
    fn median_ci_covers_the_true_median_about_95_percent_of_the_time() {
        let trials = 2000;
        let covered = (0..trials)
            .filter(|&t| {
                let mut xs = normal_samples(200, 50.0, 3.0, 1000 + t);
                xs.sort_by(f64::total_cmp);
                let (lo, hi) = median_ci(&xs, 0.95);
                lo <= 50.0 && 50.0 <= hi
            })
            .count();
        let rate = covered as f64 / trials as f64;
        assert!((0.93..=0.98).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn median_and_slope() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[]), None);
        let line: Vec<(f64, f64)> = (0..5).map(|i| (i as f64, 7.0 + 2.5 * i as f64)).collect();
        assert!((slope(&line).unwrap() - 2.5).abs() < 1e-9);
        assert_eq!(slope(&[(1.0, 2.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn median_ci_ranks_match_tables() {
        // For n = 100 the 95% ranks are 40 and 61 (Conover, Practical Nonparametric Statistics).
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median_ci(&xs, 0.95), (40.0, 61.0));
        // Too few samples for 95%: the full range.
        assert_eq!(median_ci(&[1.0, 2.0, 3.0], 0.95), (1.0, 3.0));
    }

    #[test]
    fn a_share_of_ten_thousand_samples_is_known_to_about_one_point() {
        // 1.96 * sqrt(0.25 / 10,000) = 0.0098.
        assert!((share_halfwidth_95(10_000) - 0.98).abs() < 1e-9);
        assert!((share_halfwidth_95(100) - 9.8).abs() < 1e-9);
        assert_eq!(share_halfwidth_95(0), 100.0);
    }

    #[test]
    fn outliers_are_flagged_not_dropped() {
        let mut xs = vec![10.0; 50];
        xs.extend([10.1, 9.9, 10.2, 9.8, 50.0]);
        let s = Summary::of(&xs).unwrap();
        assert_eq!(s.n, 55);
        assert_eq!(s.max, 50.0);
        assert!(s.outliers_high >= 1);
    }

    #[test]
    fn long_right_tail_is_noted() {
        // Exponential-like: body tight, tail long.
        let xs: Vec<f64> = (0..1000).map(|i| 100.0 + (-(1.0 - (i as f64 + 0.5) / 1000.0).ln()) * 5.0).collect();
        let s = Summary::of(&xs).unwrap();
        let note = s.skew_note().expect("skew note");
        assert!(note.starts_with("right-skewed"), "{note}");
        let sym = normal_samples(5000, 100.0, 2.0, 3);
        assert!(Summary::of(&sym).unwrap().skew.is_none());
    }

    #[test]
    fn empty_input_has_no_summary() {
        assert!(Summary::of(&[]).is_none());
    }
}
