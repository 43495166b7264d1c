//! Owns time: calibrates a batch size, checks that cost is proportional to
//! iterations, warms up, collects samples and measures the overhead baseline
//! (once per baseline key and run).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::system::interrupted;
use super::{ScenarioInfo, Variant, Workload};
use crate::report::model::{Baseline, Calibration, Measurement, ScenarioRecord};
use crate::stats::Summary;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub samples: usize,
    /// Target duration of one batch.
    pub batch_ms: f64,
    pub warmup: Duration,
    /// Sampling stops here even if fewer samples were collected.
    pub max_scenario_time: Duration,
    /// Samples of each overhead baseline.
    pub baseline_samples: usize,
    pub progress: bool,
}

/// Batch sizes stay within these bounds whatever the calibration says.
const MIN_BATCH: u32 = 64;
const MAX_BATCH: u32 = 50_000_000;
/// The 2N/N ratio may be off by this fraction before we warn.
const PROPORTIONALITY_TOLERANCE: f64 = 0.05;
/// A CV above this makes a noise warning.
const NOISY_CV: f64 = 0.05;

pub struct Runner {
    opts: RunOptions,
    baselines: HashMap<String, Baseline>,
}

/// Runs one batch of `iters`, returning ns/op and the iterations actually run.
fn batch(w: &mut dyn Workload, variant: Variant, iters: u32) -> Result<(f64, u64, u64)> {
    if interrupted() {
        bail!("interrupted");
    }
    let t = w.run_batch(variant, iters)?;
    if t.iters == 0 {
        bail!("the timing loop ran no iteration (may_goto budget exhausted at once?)");
    }
    Ok((t.ns_per_op(), t.elapsed_ns, t.iters))
}

/// Grows the batch until it takes ~1/10 of the target, then sizes it to the target.
fn calibrate(w: &mut dyn Workload, variant: Variant, target_ns: f64) -> Result<(u32, f64)> {
    let mut iters = 1_000u32;
    let (mut est, mut elapsed, _) = batch(w, variant, iters)?;
    while (elapsed as f64) < target_ns / 10.0 && iters < MAX_BATCH / 10 {
        iters *= 10;
        (est, elapsed, _) = batch(w, variant, iters)?;
    }
    let size = |est: f64| ((target_ns / est.max(0.01)) as u64).clamp(MIN_BATCH as u64, MAX_BATCH as u64) as u32;
    // One refinement at full size: the small batches ran with colder caches.
    let (refined, _, _) = batch(w, variant, size(est))?;
    Ok((size(refined), refined))
}

/// Median elapsed time of three N batches against three 2N batches.
fn proportionality(w: &mut dyn Workload, iters: u32) -> Result<f64> {
    let mut median_of = |n: u32| -> Result<f64> {
        let mut v = Vec::new();
        for _ in 0..3 {
            let (_, elapsed, done) = batch(w, Variant::Body, n)?;
            // Normalise to the requested count in case may_goto cut a loop short.
            v.push(elapsed as f64 * n as f64 / done as f64);
        }
        v.sort_by(f64::total_cmp);
        Ok(v[1])
    };
    let half = (iters / 2).max(MIN_BATCH);
    let one = median_of(half)?;
    let two = median_of(half * 2)?;
    Ok(two / one)
}

impl Runner {
    pub fn new(opts: RunOptions) -> Self {
        Self { opts, baselines: HashMap::new() }
    }

    fn progress_bar(&self, label: &str, len: usize) -> ProgressBar {
        let target = if self.opts.progress { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
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
    fn sample(&self, w: &mut dyn Workload, variant: Variant, iters: u32, count: usize, label: &str) -> Result<Vec<f64>> {
        let pb = self.progress_bar(label, count);
        let start = Instant::now();
        let mut out = Vec::with_capacity(count);
        while out.len() < count && start.elapsed() < self.opts.max_scenario_time {
            let (ns, _, _) = batch(w, variant, iters)?;
            out.push(ns);
            pb.inc(1);
        }
        pb.finish_and_clear();
        Ok(out)
    }

    fn warm_up(&self, w: &mut dyn Workload, variant: Variant, iters: u32) -> Result<()> {
        let start = Instant::now();
        loop {
            batch(w, variant, iters)?;
            if start.elapsed() >= self.opts.warmup {
                return Ok(());
            }
        }
    }

    fn target_ns(&self) -> f64 {
        self.opts.batch_ms * 1e6
    }

    fn baseline(&mut self, w: &mut dyn Workload, key: &str) -> Result<Baseline> {
        if let Some(b) = self.baselines.get(key) {
            return Ok(b.clone());
        }
        let (iters, _) = calibrate(w, Variant::Baseline, self.target_ns())?;
        self.warm_up(w, Variant::Baseline, iters)?;
        let samples = self.sample(w, Variant::Baseline, iters, self.opts.baseline_samples, "  overhead baseline")?;
        let summary = Summary::of(&samples).context("no baseline samples collected")?;
        let b = Baseline { key: key.to_string(), batch_iters: iters, samples_ns: samples, summary };
        self.baselines.insert(key.to_string(), b.clone());
        Ok(b)
    }

    fn measure(&mut self, w: &mut dyn Workload, s: &ScenarioInfo) -> Result<Measurement> {
        let (iters, estimate) = calibrate(w, Variant::Body, self.target_ns())?;
        let ratio = proportionality(w, iters)?;
        let proportional = (ratio / 2.0 - 1.0).abs() <= PROPORTIONALITY_TOLERANCE;
        self.warm_up(w, Variant::Body, iters)?;
        let samples = self.sample(w, Variant::Body, iters, self.opts.samples, &s.name)?;
        let summary = Summary::of(&samples).context("no samples collected")?;
        let key = w.baseline_key(s);
        let overhead = self.baseline(w, &key)?;

        let mut warnings = Vec::new();
        if !proportional {
            warnings.push(format!(
                "proportionality check failed: a 2N batch took {ratio:.3}x an N batch (want 2 ± {:.0}%)",
                PROPORTIONALITY_TOLERANCE * 100.0
            ));
        }
        if samples.len() < self.opts.samples {
            warnings.push(format!(
                "only {} of {} samples within the {:.0} s cap",
                samples.len(),
                self.opts.samples,
                self.opts.max_scenario_time.as_secs_f64()
            ));
        }
        if summary.cv > NOISY_CV {
            warnings.push(format!("noisy: CV {:.1}% (is the machine idle? try --cpu on an isolated core)", summary.cv * 100.0));
        }
        let outliers = summary.outliers_low + summary.outliers_high;
        if outliers * 20 > summary.n {
            warnings.push(format!("{outliers} of {} samples are outliers (Tukey fences)", summary.n));
        }
        Ok(Measurement {
            batch_iters: iters,
            calibration: Calibration { estimate_ns_per_op: estimate, proportionality_ratio: ratio, proportional },
            samples_ns: samples,
            summary,
            overhead,
            warnings,
        })
    }

    /// Validates, then (if valid) measures one scenario. Never fails: errors
    /// are recorded so the suite can go on with the other scenarios.
    pub fn run_scenario(&mut self, w: &mut dyn Workload, s: &ScenarioInfo) -> ScenarioRecord {
        let mut rec = ScenarioRecord {
            workload: w.name().to_string(),
            name: s.name.to_string(),
            group: s.group.to_string(),
            description: s.description.to_string(),
            params: w.params(s).into_iter().collect(),
            unavailable: None,
            validated: false,
            verdict: None,
            checks: Vec::new(),
            notes: Vec::new(),
            error: None,
            program: None,
            measurement: None,
        };
        if let Some(why) = w.unavailable(s) {
            rec.unavailable = Some(why);
            return rec;
        }
        match w.validate(s) {
            Ok(v) => {
                rec.validated = true;
                rec.verdict = Some(v.verdict);
                rec.checks = v.checks;
                rec.notes = v.notes;
            }
            Err(e) => {
                rec.error = Some(format!("validation failed: {e:#}"));
                return rec;
            }
        }
        rec.program = w.body_program().and_then(|fd| super::prog_info::program_record(fd).ok());
        match self.measure(w, s) {
            Ok(m) => rec.measurement = Some(m),
            Err(e) => rec.error = Some(format!("measurement failed: {e:#}")),
        }
        rec
    }
}
