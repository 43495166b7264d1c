//! The paired engine: one case of two builds, A and B, timed in
//! alternation on one CPU in short batches (A B B A A B B A ...), each
//! adjacent pair giving one B/A ratio, in rounds that each load both
//! builds afresh.
//!
//! Two effects decide the design, both measured on this project's VM:
//! - The machine's speed moves between levels for milliseconds to minutes.
//!   Batches taken next to each other share the level, so their ratio does
//!   not see it; the ABBA order cancels a steady drift within each four.
//! - Where a load lands moves its speed for as long as it stays loaded:
//!   the kernel JITs each program at a random offset, and maps get memory
//!   and hash seeds of their own. Identical code loaded twice ran at a
//!   steady 0.94-1.06 of itself; reloading only the programs over the same
//!   maps still left the load balancer 2% apart from itself. One load of
//!   each side is one draw of that; a verdict about the code needs many.
//!   So each round sets both builds up afresh (programs, maps, state; in
//!   alternating order, each behind a spacer of random size, the old load
//!   freed only after the new one stands: see harness::spacer), validates
//!   the case on both, takes a few pairs, and contributes its median
//!   ratio: the rounds are the units of the interval (stats::paired),
//!   summarised so that a load landing far off (about one in fifteen)
//!   cannot move it.
//!   Measured on identical load-balancer builds over five processes each:
//!   freeing first and no spacer left B 1% faster throughout; freeing
//!   after, without spacers, spread the results 0.8-0.9% (SD); with both,
//!   0.1-0.6%, centred on 1.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::runner::calibrate;
use super::spacer::Spacer;
use super::{PreparedScenario, ScenarioInfo, Validation, Variant};
use crate::kernel::prog_info::program_record;
use crate::record::ProgramRecord;
use crate::record::paired::{PairedCase, RoundSpread};
use crate::stats::paired::{combined_ratio, round_ratio, verdict_over};
use crate::stats::two_sample::Verdict;
use crate::stats::{median_ci, percentile_sorted};

/// How a paired comparison samples each case.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct PairedSettings {
    /// Target duration of one batch of A (B runs as many iterations), in milliseconds.
    #[arg(long = "batch-ms", value_name = "MS", default_value_t = 1.0)]
    pub batch_ms: f64,
    /// Stop sampling a case after this many seconds even if undecided.
    #[arg(long = "max-time", value_name = "S", default_value_t = 10.0)]
    pub max_time_s: f64,
    /// Pairs of batches per round (each round sets both builds up afresh).
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub pairs_per_round: u32,
    /// Rounds a case takes at least before it may stop.
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u32).range(2..))]
    pub min_rounds: u32,
}

impl Default for PairedSettings {
    fn default() -> Self {
        PairedSettings { batch_ms: 1.0, max_time_s: 10.0, pairs_per_round: 16, min_rounds: 12 }
    }
}

/// Confidence of the interval that may stop a case early: stricter than
/// the reported 95%, since it is looked at many times (after the minimum,
/// then every eighth of the rounds so far).
const STOP_LEVEL: f64 = 0.99;
/// Batches of warm-up per side after each load.
const WARMUP_BATCHES: usize = 2;

/// One side of a paired comparison: a build that can be set up afresh.
pub trait Build {
    /// Why the case cannot run with this build here, if it cannot.
    fn unavailable(&mut self, s: &ScenarioInfo) -> Option<String>;
    /// Sets the build up anew (programs, maps and state, nothing kept from
    /// an earlier load) and validates `s` on it.
    fn fresh(&mut self, s: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)>;
    /// Validates `s` on the set-up the last [`fresh`](Build::fresh) made:
    /// the later cases of a round that share its load. A build that cannot
    /// keep a set-up between validations (a worker) sets up anew.
    fn again(&mut self, s: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        self.fresh(s)
    }
}

/// Sets `build` up afresh behind a spacer of random size, or validates on
/// its current set-up (`shared`).
fn load<'b>(
    build: &'b mut dyn Build,
    s: &ScenarioInfo,
    shared: bool,
    rng: &mut SmallRng,
) -> Result<(Validation, Box<dyn PreparedScenario + 'b>)> {
    if shared {
        return build.again(s);
    }
    let _spacer = Spacer::random(rng)?;
    build.fresh(s)
}

/// Warm-up, then `pairs` pairs in ABBA order on the loaded sides; returns
/// the pair ratios B/A (None if `stop` cut the round short) and adds each
/// batch's ns/op to `ns`.
fn round(
    sides: [&mut dyn PreparedScenario; 2],
    iters: u32,
    pairs: u32,
    ns: &mut [Vec<f64>; 2],
    stop: &AtomicBool,
) -> Result<Option<Vec<f64>>> {
    let mut batch = |side: usize| -> Result<f64> {
        let t = sides[side].run_batch(Variant::Body, iters)?;
        if t.iters == 0 {
            bail!("the timing loop ran no iteration");
        }
        Ok(t.ns_per_op())
    };
    // The warm-up ends with A, which goes first: then the first pair's A
    // follows its own batch as every second pair's does, and half the
    // pairs have A after A, half B after B. A state the program keeps warm
    // (the load balancer's LRU on misses) favoured B by 2-5 % between two
    // identical builds while the warm-up ended with B: the first pair then
    // followed neither side, and of the rest one more had B after B.
    // (Letting B go first in every second round as well left identical
    // workers' per-call cases 2.5 % apart, for reasons not found.)
    for k in 0..2 * WARMUP_BATCHES {
        batch(1 - k % 2)?;
    }
    let mut ratios = Vec::with_capacity(pairs as usize);
    for p in 0..pairs {
        if stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let mut pair = [0.0f64; 2];
        let order = if p % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            pair[side] = batch(side)?;
        }
        ns[0].push(pair[0]);
        ns[1].push(pair[1]);
        ratios.push(pair[1] / pair[0]);
    }
    Ok(Some(ratios))
}

/// Which builds a case's validation failed on: the context of the
/// error of [`CaseEnd::Failed`] (a failure on B only is one B brought).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailsOn {
    A,
    B,
    Both,
}

impl std::fmt::Display for FailsOn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailsOn::A => "fails on A only",
            FailsOn::B => "fails on B only",
            FailsOn::Both => "fails on A and B",
        })
    }
}

/// How a case of a group ended.
pub enum CaseEnd {
    Timed(Box<PairedCase>),
    /// Its validation failed on A or B (or `check` refused it).
    Failed(anyhow::Error),
    /// Ctrl-C came before it had two rounds.
    Interrupted,
}

/// A case of a group while it is sampled.
struct Sampling {
    rounds: Vec<f64>,
    ratios: Vec<Vec<f64>>,
    ns: [Vec<f64>; 2],
    iters: Option<u32>,
    next_look: usize,
    /// Time spent on it: its validations, the loads it was first in, its batches.
    spent: Duration,
    end: Option<&'static str>,
    failed: Option<anyhow::Error>,
    programs: Option<[ProgramRecord; 2]>,
}

/// Times the cases of `group` on builds `a` and `b` in rounds, each case
/// until its combined ratio's interval is decided against `threshold`, or
/// the group has taken `settings.max_time_s` per case; but never fewer
/// than two rounds (an interval needs them; slow builds, such as emulated
/// guests, may take longer than the cap for two).
///
/// Each round sets both builds up afresh for its first case; the group's
/// later cases are validated on that set-up ([`Build::again`]): a group is
/// the cases that share a load (a test object's tests, whose load and
/// replay take seconds), and a case of its own is set up afresh every
/// round. `check` sees both validations of every round of case `i` and may
/// refuse them. `stop` is Ctrl-C. Names are filled in by the caller.
pub fn run(
    a: &mut dyn Build,
    b: &mut dyn Build,
    group: &[ScenarioInfo],
    settings: &PairedSettings,
    threshold: f64,
    stop: &AtomicBool,
    check: &mut dyn FnMut(usize, &Validation, &Validation) -> Result<()>,
) -> Vec<CaseEnd> {
    let start = Instant::now();
    let cap = Duration::from_secs_f64(settings.max_time_s * group.len() as f64);
    let mut cases: Vec<Sampling> = group
        .iter()
        .map(|_| Sampling {
            rounds: Vec::new(),
            ratios: Vec::new(),
            ns: [Vec::new(), Vec::new()],
            iters: None,
            next_look: settings.min_rounds as usize,
            spent: Duration::ZERO,
            end: None,
            failed: None,
            programs: None,
        })
        .collect();
    // Spacer sizes: seeded from the group's first case, so a comparison can be rerun as it was.
    let mut rng = SmallRng::seed_from_u64(
        group[0].name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)),
    );
    let mut round_no = 0usize;
    'rounds: while cases.iter().any(|c| c.end.is_none()) {
        // A load stands for the round's later cases until a case fails on it.
        let mut loaded = false;
        for (i, s) in group.iter().enumerate() {
            let c = &mut cases[i];
            if c.end.is_some() {
                continue;
            }
            if stop.load(Ordering::Relaxed) {
                break 'rounds;
            }
            let began = Instant::now();
            let sampled = sample(a, b, s, i, loaded, round_no, settings, stop, &mut rng, c, check);
            c.spent += began.elapsed();
            match sampled {
                Ok(true) => loaded = true,
                Ok(false) => break 'rounds,
                Err(e) => {
                    (c.failed, c.end, loaded) = (Some(e), Some("failed"), false);
                    continue;
                }
            }
            if c.rounds.len() >= c.next_look {
                let (_, ci) = combined_ratio(&c.rounds, STOP_LEVEL);
                if verdict_over(c.rounds.len(), ci, threshold) != Verdict::Uncertain {
                    c.end = Some("decided");
                }
                c.next_look = c.rounds.len() + (c.rounds.len() / 8).max(1);
            }
            if c.end.is_none() && start.elapsed() >= cap && c.rounds.len() >= 2 {
                c.end = Some("time cap");
            }
        }
        round_no += 1;
    }
    cases
        .into_iter()
        .map(|c| match (c.failed, c.end) {
            (Some(e), _) => CaseEnd::Failed(e),
            (None, _) if c.rounds.len() < 2 => CaseEnd::Interrupted,
            (None, end) => {
                let mut case =
                    finish(c.rounds, c.ratios, c.ns, c.iters, end.unwrap_or("interrupted"), c.spent, threshold);
                case.programs = c.programs;
                CaseEnd::Timed(Box::new(case))
            }
        })
        .collect()
}

/// One round of case `s` (number `i` of its group): both builds set up
/// afresh, or validated on the round's load, checked, then timed in pairs.
/// Ok(false): `stop` cut the round short.
#[allow(clippy::too_many_arguments)]
fn sample(
    a: &mut dyn Build,
    b: &mut dyn Build,
    s: &ScenarioInfo,
    i: usize,
    shared: bool,
    round_no: usize,
    settings: &PairedSettings,
    stop: &AtomicBool,
    rng: &mut SmallRng,
    c: &mut Sampling,
    check: &mut dyn FnMut(usize, &Validation, &Validation) -> Result<()>,
) -> Result<bool> {
    // Alternate which build is set up first, each behind a spacer; both
    // are tried, so that a failure says on which side it happens.
    let (ra, rb) = if round_no.is_multiple_of(2) {
        let x = load(a, s, shared, rng);
        (x, load(b, s, shared, rng))
    } else {
        let y = load(b, s, shared, rng);
        (load(a, s, shared, rng), y)
    };
    let ((va, mut pa), (vb, mut pb)) = match (ra, rb) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), Ok(_)) => return Err(e.context(FailsOn::A)),
        (Ok(_), Err(e)) => return Err(e.context(FailsOn::B)),
        (Err(e), Err(_)) => return Err(e.context(FailsOn::Both)),
    };
    check(i, &va, &vb)?;
    if c.programs.is_none() {
        let record = |p: &dyn PreparedScenario| p.program().and_then(|fd| program_record(fd, p.verifier_stats()).ok());
        c.programs = record(pa.as_ref()).zip(record(pb.as_ref())).map(|(x, y)| [x, y]);
    }
    let n = match c.iters {
        Some(n) => n,
        None => *c
            .iters
            .insert(calibrate(pa.as_mut(), Variant::Body, settings.batch_ms * 1e6, stop).context("calibrating A")?.0),
    };
    let Some(r) = round([pa.as_mut(), pb.as_mut()], n, settings.pairs_per_round, &mut c.ns, stop)? else {
        return Ok(false);
    };
    c.rounds.push(round_ratio(&r).context("a round took no pairs")?);
    c.ratios.push(r);
    Ok(true)
}

/// A case's figures from its rounds.
fn finish(
    rounds: Vec<f64>,
    ratios: Vec<Vec<f64>>,
    ns: [Vec<f64>; 2],
    iters: Option<u32>,
    stopped: &str,
    spent: Duration,
    threshold: f64,
) -> PairedCase {
    let (ratio, ci) = combined_ratio(&rounds, 0.95);
    let spread = crate::stats::paired::spread(&rounds, &ratios).map(|s| RoundSpread {
        low: s.rounds.0,
        high: s.rounds.1,
        between: s.between,
        within: s.within,
    });
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (percentile_sorted(v, 50.0), median_ci(v, 0.95))
    };
    let [mut ns_a, mut ns_b] = ns;
    let ((median_a, median_a_ci95), (median_b, median_b_ci95)) = (median(&mut ns_a), median(&mut ns_b));
    PairedCase {
        workload: String::new(),
        name: String::new(),
        timing: Default::default(),
        facts: crate::record::ScenarioFacts::TABLE_ROW,
        returns: None,
        bytes: None,
        batch_iters: iters.unwrap_or(0),
        median_a,
        median_b,
        median_a_ci95,
        median_b_ci95,
        ratio,
        ratio_ci95: ci,
        verdict: verdict_over(rounds.len(), ci, threshold),
        stop: stopped.into(),
        elapsed_s: spent.as_secs_f64(),
        round_ratios: rounds,
        ratios: ratios.concat(),
        spread,
        programs: None,
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::harness::OverheadKey;
    use crate::harness::timing::BatchTiming;

    /// A side whose batch runs 10 % faster right after a batch of its own
    /// (its state still in the caches), as the load balancer's LRU misses do.
    struct Warm {
        side: usize,
        last: Rc<RefCell<Option<usize>>>,
    }

    impl PreparedScenario for Warm {
        fn run_batch(&mut self, _: Variant, iters: u32) -> Result<BatchTiming> {
            let warm = self.last.replace(Some(self.side)) == Some(self.side);
            let ns = if warm { 100 } else { 110 };
            Ok(BatchTiming { started_ns: 0, elapsed_ns: ns * u64::from(iters), iters: u64::from(iters) })
        }

        fn overhead_key(&self) -> OverheadKey {
            OverheadKey::Named("warm".into())
        }
    }

    #[test]
    fn identical_sides_that_stay_warm_come_out_equal() {
        let last = Rc::new(RefCell::new(None));
        let (mut a, mut b) = (Warm { side: 0, last: last.clone() }, Warm { side: 1, last: last.clone() });
        let mut ns = [Vec::new(), Vec::new()];
        let ratios = round([&mut a, &mut b], 10, 16, &mut ns, &AtomicBool::new(false)).unwrap().unwrap();
        // A pair where B ran after its own batch has B/A below 1.
        let b_after_own = ratios.iter().filter(|&&r| r < 1.0).count();
        let a_after_own = ratios.iter().filter(|&&r| r > 1.0).count();
        assert_eq!((a_after_own, b_after_own), (8, 8), "{ratios:?}");
        assert!((round_ratio(&ratios).unwrap() - 1.0).abs() < 1e-12, "{ratios:?}");
    }
}
