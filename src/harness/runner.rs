//! Owns time: calibrates a batch size, checks that cost is proportional to
//! iterations, warms up, collects samples and measures the overhead (once
//! per overhead key and run).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::{LoadedWorkload, PreparedScenario, ScenarioInfo, Variant};
use crate::kernel::prog_info;
use crate::record::{Calibration, Measurement, Metric, Overhead, Runtime, Sampling, ScenarioRecord};
use crate::stats::Summary;
use crate::stats::linearity::{self, Linearity};

/// Batch sizes stay within these bounds whatever the calibration says.
pub const MIN_BATCH: u32 = 64;
pub const MAX_BATCH: u32 = 50_000_000;
/// The 2N/N ratio may be off by this fraction before we warn.
const PROPORTIONALITY_TOLERANCE: f64 = 0.05;
/// Pairs of an N and a 2N batch the proportionality check takes: with
/// nine, the median's 95 % interval runs from the second to the eighth.
const PROPORTIONALITY_PAIRS: usize = 9;
/// A CV above this makes a noise warning.
const NOISY_CV: f64 = 0.05;
/// More outliers than this share of samples makes a warning.
const OUTLIER_SHARE: f64 = 0.05;
/// Iterations of the first calibration batch.
const FIRST_CALIBRATION_BATCH: u32 = 1_000;

/// A batch refused because the stop flag was set (Ctrl-C).
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

/// Iterations an instruction count covers: one pass over the diverse
/// flows, and even, so flows of two packets each come whole.
pub const COUNT_ITERS: u32 = 4096;

/// What an instruction count keeps beyond its totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Profile {
    #[default]
    Off,
    /// Instructions per source line (`ab --metric insns`: which lines changed).
    Lines,
    /// And where the time goes, sampled (`run --profile`).
    LinesAndTime,
}

pub struct Runner {
    metric: Metric,
    /// What instruction counts keep beyond the totals.
    profile: Profile,
    sampling: Sampling,
    progress: bool,
    stop: &'static AtomicBool,
    overheads: HashMap<String, Overhead>,
}

/// Runs one batch of `iters`, returning (ns/op, elapsed ns, iterations run).
fn batch(p: &mut dyn PreparedScenario, stop: &AtomicBool, variant: Variant, iters: u32) -> Result<(f64, u64, u64)> {
    if stop.load(Ordering::Relaxed) {
        return Err(Interrupted.into());
    }
    let t = p.run_batch(variant, iters)?;
    if t.iters == 0 {
        bail!("the timing loop ran no iteration (may_goto budget exhausted at once?)");
    }
    Ok((t.ns_per_op(), t.elapsed_ns, t.iters))
}

/// The batch size that takes `target_ns` at `ns_per_op`, within bounds.
fn batch_size(target_ns: f64, ns_per_op: f64) -> u32 {
    ((target_ns / ns_per_op.max(0.01)) as u64).clamp(MIN_BATCH as u64, MAX_BATCH as u64) as u32
}

/// Grows the batch tenfold until it takes a tenth of `target_ns`, then
/// sizes it to the target. Returns (batch size, ns/op estimate).
pub fn calibrate(
    p: &mut dyn PreparedScenario,
    variant: Variant,
    target_ns: f64,
    stop: &AtomicBool,
) -> Result<(u32, f64)> {
    // A loop the verifier walks runs at most so many iterations a batch.
    let cap = p.batch_cap().unwrap_or(MAX_BATCH);
    let mut iters = FIRST_CALIBRATION_BATCH.min(cap);
    let (mut est, mut elapsed, _) = batch(p, stop, variant, iters)?;
    while (elapsed as f64) < target_ns / 10.0 && iters < MAX_BATCH / 10 && iters < cap {
        iters = (iters * 10).min(cap);
        (est, elapsed, _) = batch(p, stop, variant, iters)?;
    }
    // One refinement at full size: the small batches ran with colder caches.
    let (refined, _, _) = batch(p, stop, variant, batch_size(target_ns, est).min(cap))?;
    Ok((batch_size(target_ns, refined).min(cap), refined))
}

impl Runner {
    /// A runner that stops between batches once `stop` is set (Ctrl-C).
    pub fn new(sampling: Sampling, progress: bool, stop: &'static AtomicBool) -> Self {
        Self { metric: Metric::Time, profile: Profile::Off, sampling, progress, stop, overheads: HashMap::new() }
    }

    /// Scenarios are measured by `metric` (time unless told).
    pub fn with_metric(mut self, metric: Metric) -> Self {
        self.metric = metric;
        self
    }

    /// What instruction counts keep beyond the totals (with `Metric::Insns`).
    pub fn with_profile(mut self, profile: Profile) -> Self {
        self.profile = profile;
        self
    }

    fn batch(&self, p: &mut dyn PreparedScenario, variant: Variant, iters: u32) -> Result<(f64, u64, u64)> {
        batch(p, self.stop, variant, iters)
    }

    fn calibrate(&self, p: &mut dyn PreparedScenario, variant: Variant) -> Result<(u32, f64)> {
        calibrate(p, variant, self.sampling.batch_ms * 1e6, self.stop)
    }

    /// Pairs of an N and a 2N batch (N half the calibrated size), taken
    /// next to each other and in alternating order so that the machine's
    /// speed of the moment cancels within a pair; judged by the median
    /// ratio's interval (`stats::linearity`).
    fn proportionality(&self, p: &mut dyn PreparedScenario, iters: u32) -> Result<Linearity> {
        let half = (iters / 2).max(1);
        let mut elapsed = |n: u32| -> Result<f64> {
            let (_, elapsed, done) = self.batch(p, Variant::Body, n)?;
            // Normalise to the requested count in case may_goto cut a loop short.
            Ok(elapsed as f64 * n as f64 / done as f64)
        };
        let mut ratios = Vec::with_capacity(PROPORTIONALITY_PAIRS);
        for pair in 0..PROPORTIONALITY_PAIRS {
            let (one, two) = if pair % 2 == 0 {
                let one = elapsed(half)?;
                (one, elapsed(half * 2)?)
            } else {
                let two = elapsed(half * 2)?;
                (elapsed(half)?, two)
            };
            ratios.push(two / one);
        }
        linearity::judge(&ratios, PROPORTIONALITY_TOLERANCE, 0.95).context("no proportionality pairs")
    }

    fn progress_bar(&self, label: &str, len: usize) -> ProgressBar {
        let target = if self.progress { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let pb = ProgressBar::with_draw_target(Some(len as u64), target);
        pb.set_style(
            ProgressStyle::with_template("{msg:<28} [{bar:30}] {pos}/{len} samples")
                .expect("static template")
                .progress_chars("=> "),
        );
        pb.set_message(label.to_string());
        pb
    }

    /// Collects up to `count` samples within the time cap.
    fn sample(
        &self,
        p: &mut dyn PreparedScenario,
        variant: Variant,
        iters: u32,
        count: usize,
        label: &str,
    ) -> Result<Vec<f64>> {
        let pb = self.progress_bar(label, count);
        let start = Instant::now();
        let mut out = Vec::with_capacity(count);
        while out.len() < count && start.elapsed() < self.sampling.max_scenario_time() {
            let (ns, _, _) = self.batch(p, variant, iters)?;
            out.push(ns);
            pb.inc(1);
        }
        pb.finish_and_clear();
        Ok(out)
    }

    /// Runs batches for `time` (at least one).
    fn warm_up(&self, p: &mut dyn PreparedScenario, variant: Variant, iters: u32, time: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            self.batch(p, variant, iters)?;
            if start.elapsed() >= time {
                return Ok(());
            }
        }
    }

    /// The overhead for `p`'s key, measured on first use in this run.
    fn overhead(&mut self, p: &mut dyn PreparedScenario) -> Result<Overhead> {
        let key = p.overhead_key();
        if let Some(o) = self.overheads.get(&key) {
            return Ok(o.clone());
        }
        let (iters, _) = self.calibrate(p, Variant::Overhead)?;
        self.warm_up(p, Variant::Overhead, iters, self.sampling.warmup())?;
        let samples = self.sample(p, Variant::Overhead, iters, self.sampling.overhead_samples(), "  loop overhead")?;
        let summary = Summary::of(&samples).context("no overhead samples collected")?;
        let o = Overhead { key: key.clone(), batch_iters: iters, samples_ns: samples, summary };
        self.overheads.insert(key, o.clone());
        Ok(o)
    }

    /// Calibrates, checks proportionality, warms up and samples a validated scenario.
    pub fn measure(&mut self, p: &mut dyn PreparedScenario, label: &str) -> Result<Measurement> {
        let (iters, estimate) = self.calibrate(p, Variant::Body)?;
        let checking = Instant::now();
        let linearity = self.proportionality(p, iters)?;
        // The check's batches warmed the body as warm-up would: only the rest of its time is left.
        self.warm_up(p, Variant::Body, iters, self.sampling.warmup().saturating_sub(checking.elapsed()))?;
        let wanted = self.sampling.samples as usize;
        let samples = self.sample(p, Variant::Body, iters, wanted, label)?;
        let summary = Summary::of(&samples).context("no samples collected")?;
        let overhead = self.overhead(p)?;

        let mut warnings = Vec::new();
        if !linearity.linear {
            warnings.push(format!(
                "proportionality check failed: a 2N batch took {:.3}x an N batch (95% CI {:.3}-{:.3} over {} pairs; want 2 ± {:.0}%)",
                linearity.ratio,
                linearity.ci.0,
                linearity.ci.1,
                linearity.pairs,
                PROPORTIONALITY_TOLERANCE * 100.0
            ));
        }
        if samples.len() < wanted {
            warnings.push(format!(
                "only {} of {wanted} samples within the {} s cap",
                samples.len(),
                self.sampling.max_scenario_s
            ));
        }
        if summary.cv > NOISY_CV {
            warnings.push(format!(
                "noisy: CV {:.1}% (is the machine idle? try --cpu on an isolated core)",
                summary.cv * 100.0
            ));
        }
        let outliers = summary.outliers_low + summary.outliers_high;
        if outliers as f64 > OUTLIER_SHARE * summary.n as f64 {
            warnings.push(format!("{outliers} of {} samples are outliers (Tukey fences)", summary.n));
        }
        Ok(Measurement {
            batch_iters: iters,
            calibration: Calibration {
                estimate_ns_per_op: estimate,
                proportionality_ratio: linearity.ratio,
                proportionality_ci: Some(linearity.ci),
                proportionality_pairs: linearity.pairs as u32,
                proportional: linearity.linear,
            },
            samples_ns: samples,
            summary,
            overhead,
            warnings,
        })
    }

    /// Validates, then (if valid) measures one scenario of `workload`.
    /// Errors are recorded, so the suite can go on with the other scenarios;
    /// None when the stop flag cut the scenario short.
    pub fn run_scenario(
        &mut self,
        workload: &str,
        w: &mut dyn LoadedWorkload,
        s: &ScenarioInfo,
    ) -> Option<ScenarioRecord> {
        self.run_scenario_in(workload, Runtime::Kernel, w, s)
    }

    /// [`Runner::run_scenario`] of a workload whose programs run in `runtime`.
    pub fn run_scenario_in(
        &mut self,
        workload: &str,
        runtime: Runtime,
        w: &mut dyn LoadedWorkload,
        s: &ScenarioInfo,
    ) -> Option<ScenarioRecord> {
        let mut rec = ScenarioRecord {
            workload: workload.to_string(),
            name: s.name.to_string(),
            group: s.group.to_string(),
            description: s.description.to_string(),
            facts: s.facts.clone(),
            timing: Default::default(),
            unavailable: None,
            validated: false,
            verdict: None,
            checks: Vec::new(),
            notes: Vec::new(),
            error: None,
            program: None,
            measurement: None,
            runtime,
            instructions: None,
        };
        if let Some(why) = w.unavailable(s) {
            rec.unavailable = Some(why);
            return Some(rec);
        }
        let mut prepared = match w.validate(s) {
            Ok((v, prepared)) => {
                rec.validated = true;
                rec.verdict = Some(v.verdict);
                rec.timing = v.timing;
                rec.checks = v.checks;
                rec.notes = v.notes;
                prepared
            }
            Err(e) => {
                rec.error = Some(format!("validation failed: {e:#}"));
                return Some(rec);
            }
        };
        rec.program = prepared.program().and_then(|fd| prog_info::program_record(fd, prepared.verifier_stats()).ok());
        if self.metric == Metric::Insns {
            match prepared.count_instructions(COUNT_ITERS, self.profile) {
                Ok(Some(c)) => rec.instructions = Some(c),
                Ok(None) => {
                    rec.error = Some(
                        "instructions are counted in the userspace runtime, which this scenario did not run in".into(),
                    )
                }
                Err(e) => rec.error = Some(format!("counting instructions failed: {e:#}")),
            }
            return Some(rec);
        }
        match self.measure(prepared.as_mut(), &s.name) {
            Ok(m) => rec.measurement = Some(m),
            Err(e) if e.is::<Interrupted>() => return None,
            Err(e) => rec.error = Some(format!("measurement failed: {e:#}")),
        }
        Some(rec)
    }
}
