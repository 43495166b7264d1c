//! Change points in a series (one benchmark's per-run medians, in the order
//! the runs were made): E-divisive means (Matteson & James, 2014), the
//! method Apache Otava (Hunter) uses, with a permutation test.
//!
//! Why this method: it needs no threshold set by hand and no model of the
//! noise. The split statistic is an energy distance, which sees a change in
//! any part of the distribution (this machine's runs land on a few speed
//! levels; a shift moves them all). The permutation test gives each change a
//! p-value that holds whatever the noise's shape: in a series with no change,
//! a split is reported with probability at most `alpha`. Splits are found
//! one at a time, the strongest first, each segment tested again, down to
//! segments of `min_segment` runs. Values are taken as logarithms so that a
//! 5 % shift counts the same at 10 ns and at 1000 ns.

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Significance of each split: the probability that a series of
    /// identical code is split there.
    pub alpha: f64,
    /// Permutations per test (its p-value's resolution is 1/(n+1)).
    pub permutations: usize,
    /// The fewest runs on each side of a change.
    pub min_segment: usize,
}

impl Default for Options {
    /// 1 % significance, 499 permutations, 4 runs a side: a series of
    /// identical code reports a change in about 1 % of cases, and a run
    /// landing once on a slow level is not a change.
    fn default() -> Options {
        Options { alpha: 0.01, permutations: 499, min_segment: 4 }
    }
}

/// A change: the series differs from `index` on (the first value of the
/// new segment).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    pub index: usize,
    /// The permutation test's p-value for this split within its segment
    /// (at most `alpha`: only significant splits are changes).
    pub p_value: f64,
}

/// The change points of `values` (all positive), in order.
pub fn e_divisive(values: &[f64], options: &Options) -> Vec<ChangePoint> {
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let seed = values.iter().fold(0x51_7cc1_b727_220au64, |h, x| (h ^ x.to_bits()).wrapping_mul(0x0100_0000_01b3));
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut found: Vec<ChangePoint> = Vec::new();
    // Segments still to test, as [start, end).
    let mut open = vec![(0, logs.len())];
    while !open.is_empty() {
        // The strongest split of any open segment is tested first.
        let best = open
            .iter()
            .enumerate()
            .filter_map(|(i, &(s, e))| best_split(&logs[s..e], options.min_segment).map(|(t, q)| (i, s + t, q)))
            .max_by(|a, b| a.2.total_cmp(&b.2));
        let Some((which, at, q)) = best else { break };
        let (s, e) = open.swap_remove(which);
        let p_value = permutation_p(&logs[s..e], q, options, &mut rng);
        if p_value <= options.alpha {
            found.push(ChangePoint { index: at, p_value });
            open.push((s, at));
            open.push((at, e));
        }
    }
    found.sort_by_key(|c| c.index);
    found
}

/// The split of `x` with the largest statistic, and that statistic: None
/// when `x` is too short for `min_segment` values on each side.
fn best_split(x: &[f64], min_segment: usize) -> Option<(usize, f64)> {
    let sums = PairSums::new(x);
    best_of(&sums, x.len(), min_segment)
}

fn best_of(sums: &PairSums, n: usize, min_segment: usize) -> Option<(usize, f64)> {
    let min_segment = min_segment.max(2);
    if n < 2 * min_segment {
        return None;
    }
    (min_segment..=n - min_segment).map(|t| (t, sums.statistic(t))).max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The share of random orders of `x` whose best split is at least as
/// strong as `observed` (counting the observed order itself).
fn permutation_p(x: &[f64], observed: f64, options: &Options, rng: &mut SmallRng) -> f64 {
    let mut shuffled = x.to_vec();
    let mut as_strong = 0usize;
    // Past this many, p exceeds alpha whatever the rest give: a split that
    // is not significant costs a few permutations, not all of them.
    let enough = (options.alpha * (options.permutations + 1) as f64).floor() as usize;
    for _ in 0..options.permutations {
        shuffled.shuffle(rng);
        let sums = PairSums::new(&shuffled);
        if best_of(&sums, shuffled.len(), options.min_segment).is_some_and(|(_, q)| q >= observed) {
            as_strong += 1;
            if as_strong >= enough {
                break;
            }
        }
    }
    (as_strong + 1) as f64 / (options.permutations + 1) as f64
}

/// Two-dimensional prefix sums of the distances |x_i − x_j|, so that the
/// statistic of any split costs O(1).
struct PairSums {
    n: usize,
    /// prefix[a * (n + 1) + b] = Σ_{i<a, j<b} |x_i − x_j|.
    prefix: Vec<f64>,
}

impl PairSums {
    fn new(x: &[f64]) -> PairSums {
        let n = x.len();
        let w = n + 1;
        let mut prefix = vec![0.0; w * w];
        for a in 1..=n {
            let mut row = 0.0;
            for b in 1..=n {
                row += (x[a - 1] - x[b - 1]).abs();
                prefix[a * w + b] = prefix[(a - 1) * w + b] + row;
            }
        }
        PairSums { n, prefix }
    }

    /// Σ |x_i − x_j| over i in [a0, a1), j in [b0, b1).
    fn block(&self, a0: usize, a1: usize, b0: usize, b1: usize) -> f64 {
        let w = self.n + 1;
        let p = |a: usize, b: usize| self.prefix[a * w + b];
        p(a1, b1) - p(a0, b1) - p(a1, b0) + p(a0, b0)
    }

    /// Matteson & James's Q̂ for the split of the whole series at `t`:
    /// (|A||B| / n) · (2·mean|a−b| − mean|a−a'| − mean|b−b'|).
    fn statistic(&self, t: usize) -> f64 {
        let (n, na, nb) = (self.n as f64, t as f64, (self.n - t) as f64);
        let between = self.block(0, t, t, self.n) / (na * nb);
        // Each unordered pair is counted twice in a square block.
        let within_a = self.block(0, t, 0, t) / (na * (na - 1.0));
        let within_b = self.block(t, self.n, t, self.n) / (nb * (nb - 1.0));
        na * nb / n * (2.0 * between - within_a - within_b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Log-normal noise of spread `cv` around `center`.
    fn noise(n: usize, center: f64, cv: f64, seed: u64) -> Vec<f64> {
        crate::stats::tests::normal_samples(n, 0.0, cv, seed).into_iter().map(|z| center * z.exp()).collect()
    }

    #[test]
    fn the_statistic_matches_its_definition() {
        let x = [0.1, 0.4, 0.35, 1.2, 1.0, 0.9, 1.3];
        let sums = PairSums::new(&x);
        for t in 2..=5 {
            let (a, b) = x.split_at(t);
            let mean = |u: &[f64], v: &[f64], same: bool| {
                let mut s = 0.0;
                let mut k = 0.0;
                for (i, p) in u.iter().enumerate() {
                    for (j, q) in v.iter().enumerate() {
                        if !same || i != j {
                            s += (p - q).abs();
                            k += 1.0;
                        }
                    }
                }
                s / k
            };
            let direct = (t * (x.len() - t)) as f64 / x.len() as f64
                * (2.0 * mean(a, b, false) - mean(a, a, true) - mean(b, b, true));
            assert!((sums.statistic(t) - direct).abs() < 1e-12, "t={t}: {} vs {direct}", sums.statistic(t));
        }
    }

    #[test]
    fn finds_known_shifts_where_they_are() {
        let mut x = noise(30, 100.0, 0.01, 1);
        x.extend(noise(30, 110.0, 0.01, 2));
        x.extend(noise(30, 95.0, 0.01, 3));
        let found: Vec<usize> = e_divisive(&x, &Options::default()).iter().map(|c| c.index).collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].abs_diff(30) <= 1 && found[1].abs_diff(60) <= 1, "{found:?}");
    }

    #[test]
    fn a_series_without_a_shift_is_rarely_split() {
        let split =
            (0..100).filter(|&s| !e_divisive(&noise(40, 100.0, 0.05, s), &Options::default()).is_empty()).count();
        // alpha = 1 %: expected ~1 of 100; generous.
        assert!(split <= 6, "{split} of 100 series of identical values were split");
    }

    #[test]
    fn short_series_and_outliers_are_not_changes() {
        assert!(e_divisive(&[1.0, 2.0, 1.0], &Options::default()).is_empty());
        let mut x = noise(40, 100.0, 0.01, 9);
        x[20] = 150.0;
        x[21] = 140.0;
        assert!(e_divisive(&x, &Options::default()).is_empty(), "two outliers are not a segment");
    }
}
