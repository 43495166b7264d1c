//! Statistics of paired measurements: B/A ratios of batches taken next to
//! each other, grouped in rounds (each round a fresh load of both sides).
//!
//! A round's median ratio is one observation: pairing cancels the machine's
//! speed of the moment within it; what is left varies from round to round
//! with where each load landed and with the pairs' own noise. The rounds'
//! log ratios are summarised by their mean with a Student-t interval, which
//! holds its coverage from a dozen rounds on, where a bootstrap of so few
//! falls short. Rounds next to each other are not quite independent (the
//! machine's phases last longer than a round: lag-1 correlation up to 0.36
//! measured here), so the variance of the mean is widened by the rounds'
//! autocorrelation (Bartlett-weighted, never narrowed). Knows nothing of BPF.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::two_sample::Verdict;

/// The rounds' combined ratio (geometric mean of their medians) and its
/// two-sided Student-t interval at `level`; the interval is NaN with fewer
/// than two rounds.
pub fn combined_ratio(round_medians: &[f64], level: f64) -> (f64, (f64, f64)) {
    let logs: Vec<f64> = round_medians.iter().map(|r| r.ln()).collect();
    let n = logs.len();
    if n == 0 {
        return (f64::NAN, (f64::NAN, f64::NAN));
    }
    let mean = logs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean.exp(), (f64::NAN, f64::NAN));
    }
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n > 1 degrees of freedom").inverse_cdf(0.5 + level / 2.0);
    let half = t * (var * autocorrelation_factor(&logs, mean) / n as f64).sqrt();
    (mean.exp(), ((mean - half).exp(), (mean + half).exp()))
}

/// How much serial correlation inflates the variance of the mean of `x`
/// (mean `mean`): 1 + 2 sum of Bartlett-weighted autocorrelations up to lag
/// n^(1/3), never below 1.
fn autocorrelation_factor(x: &[f64], mean: f64) -> f64 {
    let n = x.len();
    let c0: f64 = x.iter().map(|v| (v - mean).powi(2)).sum();
    if c0 == 0.0 {
        return 1.0;
    }
    let lags = (n as f64).cbrt().floor() as usize;
    let mut factor = 1.0;
    for k in 1..=lags.min(n - 1) {
        let ck: f64 = (0..n - k).map(|i| (x[i] - mean) * (x[i + k] - mean)).sum();
        let weight = 1.0 - k as f64 / (lags + 1) as f64;
        factor += 2.0 * weight * ck / c0;
    }
    factor.max(1.0)
}

/// slower/faster when the whole interval lies beyond ±threshold, same when
/// it lies within, uncertain otherwise (and with no interval).
pub fn verdict(ci: (f64, f64), threshold: f64) -> Verdict {
    if ci.0.is_nan() || ci.1.is_nan() {
        Verdict::Uncertain
    } else if ci.0 > 1.0 + threshold {
        Verdict::Slower
    } else if ci.1 < 1.0 - threshold {
        Verdict::Faster
    } else if ci.0 >= 1.0 - threshold && ci.1 <= 1.0 + threshold {
        Verdict::Same
    } else {
        Verdict::Uncertain
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Round medians around `center` with log-normal spread `cv` (the
    /// placement of each load), as Box-Muller draws.
    fn rounds(n: usize, center: f64, cv: f64, seed: u64) -> Vec<f64> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (u1, u2): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
                center * (cv * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()).exp()
            })
            .collect()
    }

    #[test]
    fn the_interval_covers_the_true_ratio_about_95_percent_of_the_time_even_from_few_rounds() {
        for n in [12, 60] {
            let trials = 400;
            let covered = (0..trials)
                .filter(|&t| {
                    let (_, (lo, hi)) = combined_ratio(&rounds(n, 1.02, 0.035, t), 0.95);
                    lo <= 1.02 && 1.02 <= hi
                })
                .count();
            let rate = covered as f64 / trials as f64;
            assert!((0.92..=0.98).contains(&rate), "{n} rounds: coverage {rate}");
        }
    }

    /// Rounds whose level wanders: an AR(1) series with lag-1 correlation `rho`.
    fn correlated_rounds(n: usize, center: f64, cv: f64, rho: f64, seed: u64) -> Vec<f64> {
        let noise = rounds(n, 1.0, cv, seed);
        let mut level = 0.0;
        noise
            .iter()
            .map(|e| {
                level = rho * level + (1.0 - rho * rho).sqrt() * e.ln();
                center * level.exp()
            })
            .collect()
    }

    #[test]
    fn serially_correlated_rounds_keep_their_coverage() {
        let trials = 400;
        let covered = |widen: bool| {
            (0..trials)
                .filter(|&t| {
                    let r = correlated_rounds(60, 1.0, 0.03, 0.4, 1000 + t);
                    let (lo, hi) = if widen {
                        combined_ratio(&r, 0.95).1
                    } else {
                        // The plain t-interval, for contrast.
                        let logs: Vec<f64> = r.iter().map(|x| x.ln()).collect();
                        let m = logs.iter().sum::<f64>() / 60.0;
                        let sd = (logs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 59.0).sqrt();
                        ((m - 2.0 * sd / 60f64.sqrt()).exp(), (m + 2.0 * sd / 60f64.sqrt()).exp())
                    };
                    lo <= 1.0 && 1.0 <= hi
                })
                .count() as f64
                / trials as f64
        };
        let (plain, widened) = (covered(false), covered(true));
        assert!(plain < 0.91, "the plain interval should fall short here: {plain}");
        assert!((0.90..=0.99).contains(&widened), "widened coverage {widened}");
    }

    #[test]
    fn a_two_percent_change_with_placement_spread_is_seen_in_a_hundred_rounds() {
        let (r, ci) = combined_ratio(&rounds(100, 1.02, 0.035, 7), 0.95);
        assert!((r - 1.02).abs() < 0.008, "{r}");
        assert_eq!(verdict(ci, 0.01), Verdict::Slower, "{ci:?}");
        let (_, ci) = combined_ratio(&rounds(100, 1.0, 0.035, 8), 0.95);
        assert_eq!(verdict(ci, 0.01), Verdict::Same, "{ci:?}");
        let (_, ci) = combined_ratio(&rounds(100, 0.97, 0.035, 9), 0.95);
        assert_eq!(verdict(ci, 0.01), Verdict::Faster, "{ci:?}");
        let (_, ci) = combined_ratio(&rounds(10, 1.005, 0.05, 10), 0.95);
        assert_eq!(verdict(ci, 0.01), Verdict::Uncertain, "{ci:?}");
    }

    #[test]
    fn one_round_gives_no_interval_and_no_verdict() {
        let (r, ci) = combined_ratio(&[1.3], 0.95);
        assert_eq!(r, 1.3);
        assert_eq!(verdict(ci, 0.01), Verdict::Uncertain);
    }
}
