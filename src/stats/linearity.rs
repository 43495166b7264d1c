//! Is a batch's cost proportional to its iterations? Judged from pairs of
//! batches, one of N iterations and one of 2N, taken next to each other.
//!
//! A pair's ratio (2N's time over N's) is 2 when the cost is linear. One
//! pair is not enough on a machine whose speed changes between batches (a
//! 2N batch taken in a slow phase looks non-linear): pairs taken next to
//! each other mostly share a phase, and the median over several pairs,
//! with its distribution-free interval, sets aside the few that straddle a
//! change. Cost is judged non-linear only when the whole interval lies
//! outside 2 ± tolerance, so a figure the machine's phases blurred is not
//! called non-linear, and one that truly grows faster (or slower) than its
//! iterations is. Knows nothing of BPF.

use super::median_ci;

/// The verdict on one scenario's pairs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linearity {
    /// Median of the pairs' 2N/N ratios.
    pub ratio: f64,
    /// Its order-statistic interval at the level asked for.
    pub ci: (f64, f64),
    pub pairs: usize,
    /// False when the whole interval lies outside 2 ± tolerance.
    pub linear: bool,
}

/// Judges the 2N/N `ratios` of pairs: linear unless the median's interval at
/// `level` lies wholly outside `2 (1 ± tolerance)`. None without pairs.
pub fn judge(ratios: &[f64], tolerance: f64, level: f64) -> Option<Linearity> {
    let mut sorted: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let ratio = super::percentile_sorted(&sorted, 50.0);
    let ci = median_ci(&sorted, level);
    let (low, high) = (2.0 * (1.0 - tolerance), 2.0 * (1.0 + tolerance));
    let linear = ci.1 >= low && ci.0 <= high;
    Some(Linearity { ratio, ci, pairs: sorted.len(), linear })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ratios of pairs on a machine that switches between two speeds: most
    /// pairs share a phase, every `straddle`-th has its 2N batch in the
    /// other one (`slow` times slower or faster, alternately).
    fn phased(exponent: f64, n: usize, straddle: usize, slow: f64) -> Vec<f64> {
        (0..n)
            .map(|i| {
                let linear = 2f64.powf(exponent);
                match (i % straddle == straddle - 1, i % 2) {
                    (true, 0) => linear * slow,
                    (true, _) => linear / slow,
                    _ => linear,
                }
            })
            .collect()
    }

    #[test]
    fn linear_cost_passes_under_phases_that_fool_a_single_pair() {
        let ratios = phased(1.0, 11, 3, 1.5);
        assert!(ratios.iter().any(|r| (r / 2.0 - 1.0).abs() > 0.05), "some pairs straddle: {ratios:?}");
        let l = judge(&ratios, 0.05, 0.95).unwrap();
        assert!(l.linear, "{l:?}");
        assert_eq!(l.ratio, 2.0);
        assert_eq!(l.pairs, 11);
    }

    #[test]
    fn cost_growing_faster_than_iterations_fails_under_the_same_phases() {
        // 2N costs 2^1.2 = 2.30 times N: 15 % beyond linear.
        let l = judge(&phased(1.2, 11, 5, 1.5), 0.05, 0.95).unwrap();
        assert!(!l.linear, "{l:?}");
        assert!(l.ci.0 > 2.1, "{l:?}");
        // A fixed cost per batch makes 2N cost less than twice N.
        let l = judge(&phased(0.8, 11, 5, 1.5), 0.05, 0.95).unwrap();
        assert!(!l.linear && l.ci.1 < 1.9, "{l:?}");
    }

    #[test]
    fn an_interval_that_reaches_the_band_is_not_called_non_linear() {
        let l = judge(&[1.7, 1.8, 1.95, 2.0, 2.3, 2.4, 2.5], 0.05, 0.95).unwrap();
        assert!(l.linear, "{l:?}");
        assert!(judge(&[], 0.05, 0.95).is_none());
    }
}
