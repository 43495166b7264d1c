//! Statistics of paired measurements: B/A ratios of batches taken next to
//! each other, grouped in rounds (each round a fresh load of both sides).
//!
//! A round's median ratio is one observation: pairing cancels the machine's
//! speed of the moment within it; what is left varies from round to round
//! with where each load landed (the JIT places each load's image elsewhere)
//! and with the pairs' own noise. About one round in fifteen lands far off
//! (0.78-0.88 or 1.20-1.25 of the others, measured on an XDP load balancer),
//! and the mean of a dozen rounds moves with it. So the rounds' log ratios
//! are summarised by their 20% trimmed mean (the fifth of rounds at either
//! end left out: one outlier in five rounds cannot move it, and it keeps
//! ~94% of the mean's efficiency on well-behaved rounds) with the
//! Tukey-McLaughlin interval (the winsorized rounds' variance, Student-t
//! with n - 2g - 1 degrees of freedom), which holds its coverage from a
//! dozen rounds on. Rounds next to each other are not quite independent
//! (the machine's phases last longer than a round: lag-1 correlation up to
//! 0.36 measured here), so the variance is widened by the winsorized
//! rounds' autocorrelation (Bartlett-weighted, never narrowed). Knows
//! nothing of BPF.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::two_sample::Verdict;

/// The share of rounds trimmed at each end.
pub const TRIM: f64 = 0.2;

/// A round's ratio: the median of its pair ratios taken in logs, so that
/// B/A and A/B give inverse figures (an even count's middle two meet at
/// their geometric mean, not their arithmetic one, which leans above 1
/// when the pairs fall in two groups either side of it).
pub fn round_ratio(pair_ratios: &[f64]) -> Option<f64> {
    let logs: Vec<f64> = pair_ratios.iter().map(|r| r.ln()).collect();
    super::median(&logs).map(f64::exp)
}

/// The rounds' combined ratio (the trimmed mean of their log medians) and
/// its two-sided interval at `level`; the interval is NaN with fewer than
/// two rounds.
pub fn combined_ratio(round_medians: &[f64], level: f64) -> (f64, (f64, f64)) {
    let logs: Vec<f64> = round_medians.iter().map(|r| r.ln()).collect();
    let n = logs.len();
    if n == 0 {
        return (f64::NAN, (f64::NAN, f64::NAN));
    }
    let mut sorted = logs.clone();
    sorted.sort_by(f64::total_cmp);
    let g = (TRIM * n as f64).floor() as usize;
    let kept = &sorted[g..n - g];
    let center = kept.iter().sum::<f64>() / kept.len() as f64;
    if n < 2 {
        return (center.exp(), (f64::NAN, f64::NAN));
    }
    // Winsorized: each round pulled in to the trimmed range, in the order taken.
    let (lo, hi) = (sorted[g], sorted[n - g - 1]);
    let wins: Vec<f64> = logs.iter().map(|x| x.clamp(lo, hi)).collect();
    let wmean = wins.iter().sum::<f64>() / n as f64;
    let wvar = wins.iter().map(|x| (x - wmean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let df = (n - 2 * g - 1).max(1) as f64;
    let t = StudentsT::new(0.0, 1.0, df).expect("positive degrees of freedom").inverse_cdf(0.5 + level / 2.0);
    let se = (wvar * autocorrelation_factor(&wins, wmean)).sqrt() * (n as f64).sqrt() / (n - 2 * g) as f64;
    let half = t * se;
    (center.exp(), ((center - half).exp(), (center + half).exp()))
}

/// How the rounds spread, beside the pairs within them: where loads land
/// against the noise of adjacent batches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The lowest and highest round ratio.
    pub rounds: (f64, f64),
    /// The rounds' spread (a robust SD of their log ratios: 1.4826 times the
    /// median absolute deviation), as a fraction.
    pub between: f64,
    /// The pairs' spread within a round, the same way, the median over rounds.
    pub within: f64,
}

/// The spread of `rounds` (each round's median ratio) and of the pair
/// ratios within each round (`pairs`, a round's in a row); None without rounds.
pub fn spread(rounds: &[f64], pairs: &[Vec<f64>]) -> Option<Spread> {
    let lo = rounds.iter().copied().reduce(f64::min)?;
    let hi = rounds.iter().copied().reduce(f64::max)?;
    let robust_sd = |v: &[f64]| -> Option<f64> {
        let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
        let m = super::median(&logs)?;
        let dev: Vec<f64> = logs.iter().map(|x| (x - m).abs()).collect();
        Some(1.4826 * super::median(&dev)?)
    };
    let within: Vec<f64> = pairs.iter().filter(|p| p.len() > 1).filter_map(|p| robust_sd(p)).collect();
    Some(Spread { rounds: (lo, hi), between: robust_sd(rounds)?, within: super::median(&within).unwrap_or(f64::NAN) })
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

/// The fewest rounds a verdict rests on. Each round is one load of each
/// build, one draw of where the JIT put its code (0.78-1.25 of the others,
/// one in fifteen); two or three draws that landed alike give a narrow
/// interval that says nothing of the code. Fewer rounds (a time cap that
/// ended a slow case early) leave it uncertain.
pub const VERDICT_FLOOR: usize = 4;

/// [`verdict`] of an interval over `rounds` rounds: uncertain below [`VERDICT_FLOOR`].
pub fn verdict_over(rounds: usize, ci: (f64, f64), threshold: f64) -> Verdict {
    if rounds < VERDICT_FLOOR { Verdict::Uncertain } else { verdict(ci, threshold) }
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

    #[test]
    fn a_rounds_ratio_inverts_when_a_and_b_swap() {
        let pairs = [0.909, 1.1, 0.909, 1.1, 1.02, 0.95];
        let swapped: Vec<f64> = pairs.iter().map(|r| 1.0 / r).collect();
        let (r, s) = (round_ratio(&pairs).unwrap(), round_ratio(&swapped).unwrap());
        assert!((r * s - 1.0).abs() < 1e-12, "{r} {s}");
        // Two groups either side of 1: they meet at 1, not at 1.0045.
        assert!((round_ratio(&[1.0 / 1.1, 1.1]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(round_ratio(&[]), None);
    }

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
    fn one_placement_outlier_in_fifteen_rounds_moves_neither_estimate_nor_verdict() {
        // A 2% change, rounds within ±1% of it, two loads landing far off
        // (the JIT image's placement): 0.80 and 1.25.
        let mut r = rounds(15, 1.02, 0.01, 21);
        let (clean, clean_ci) = combined_ratio(&r, 0.95);
        assert_eq!(verdict(clean_ci, 0.01), Verdict::Slower, "{clean_ci:?}");
        for (i, off) in [(3, 0.80), (11, 1.25)] {
            r[i] = off;
            let (ratio, ci) = combined_ratio(&r, 0.95);
            assert!((ratio / clean - 1.0).abs() < 0.004, "{off}: {ratio} against {clean}");
            assert_eq!(verdict(ci, 0.01), Verdict::Slower, "{off}: {ci:?}");
        }
        // The geometric mean, for contrast, moves by over a percent with one of them.
        r[11] = clean;
        let logs: f64 = r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64;
        assert!((logs.exp() / clean - 1.0).abs() > 0.01, "{}", logs.exp());
    }

    #[test]
    fn the_spread_of_rounds_is_told_apart_from_the_pairs_within_them() {
        let rounds = [0.80, 1.01, 1.02, 1.03, 1.25];
        let pairs = vec![vec![1.0, 1.01, 0.99], vec![1.02, 1.03, 1.01]];
        let s = spread(&rounds, &pairs).unwrap();
        assert_eq!(s.rounds, (0.80, 1.25));
        assert!(s.between > 0.01 && s.between < 0.03, "{s:?}");
        assert!((s.within - 0.0147).abs() < 0.001, "{s:?}");
        assert!(spread(&[], &[]).is_none());
    }

    #[test]
    fn fewer_rounds_than_the_floor_give_no_verdict_however_narrow_their_interval() {
        // Two loads that landed alike: a narrow interval, clear of ±1 %.
        let (_, ci) = combined_ratio(&[1.044, 1.046], 0.95);
        assert_eq!(verdict(ci, 0.01), Verdict::Slower, "{ci:?}");
        assert_eq!(verdict_over(2, ci, 0.01), Verdict::Uncertain);
        let four = [1.044, 1.046, 1.045, 1.047];
        let (_, ci) = combined_ratio(&four, 0.95);
        assert_eq!(verdict_over(four.len(), ci, 0.01), Verdict::Slower, "{ci:?}");
    }

    #[test]
    fn one_round_gives_no_interval_and_no_verdict() {
        let (r, ci) = combined_ratio(&[1.3], 0.95);
        assert_eq!(r, 1.3);
        assert_eq!(verdict(ci, 0.01), Verdict::Uncertain);
    }
}
