//! Owns time: calibrates a batch size, checks that cost is proportional to
//! iterations, warms up, collects samples and measures the overhead (once
//! per overhead key and run).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::OverheadKey;
use super::{LoadedWorkload, PreparedScenario, ScenarioInfo, Variant};
use crate::kernel::prog_info;
use crate::record::{Calibration, Figure, Measurement, Metric, Noise, Overhead, Runtime, Sampling, ScenarioRecord};
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
/// More outliers than this share of samples is said under `-v`.
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
    overheads: HashMap<OverheadKey, OverheadSamples>,
}

/// The empty loop's samples for one overhead key, gathered over the sweeps.
struct OverheadSamples {
    batch_iters: u32,
    samples: Vec<f64>,
    /// Sweeps that took their share.
    sweeps_done: u32,
}

/// A scenario's samples gathered over the sweeps so far.
#[derive(Default)]
struct Sampled {
    /// Calibrated on the first visit (0 before).
    batch_iters: u32,
    estimate: f64,
    linearity: Option<Linearity>,
    samples: Vec<f64>,
    /// Time spent sampling, against the scenario's cap.
    sampling_time: Duration,
    overhead_key: Option<OverheadKey>,
}

/// Sweep `sweep`'s share of `total` over `sweeps` sweeps (the first ones take the remainder).
fn share(total: usize, sweep: u32, sweeps: u32) -> usize {
    let (sweep, sweeps) = (sweep as usize, sweeps as usize);
    total / sweeps + usize::from(sweep < total % sweeps)
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

    /// Pairs of an N and a 2N batch (N a quarter of the calibrated size), taken
    /// next to each other and in alternating order so that the machine's
    /// speed of the moment cancels within a pair; judged by the median
    /// ratio's interval (`stats::linearity`).
    fn proportionality(&self, p: &mut dyn PreparedScenario, iters: u32) -> Result<Linearity> {
        // A quarter and a half batch: the check costs half what whole
        // batches would (1.6 s of the default suite) and a batch's fixed
        // cost, timed inside BPF, is still far below the 5 % it looks for.
        let half = (iters / 4).max(1);
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
        limit: Duration,
        label: &str,
    ) -> Result<Vec<f64>> {
        let pb = self.progress_bar(label, count);
        let start = Instant::now();
        let mut out = Vec::with_capacity(count);
        while out.len() < count && start.elapsed() < limit {
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

    /// Takes this sweep's share of the overhead samples for `p`'s key, the
    /// first time a scenario of that key is visited in the sweep
    /// (calibrating and warming up the first time in the run).
    fn overhead_turn(&mut self, p: &mut dyn PreparedScenario, sweep: u32, sweeps: u32) -> Result<()> {
        let key = p.overhead_key();
        let known = self.overheads.get(&key).map(|o| (o.batch_iters, o.sweeps_done));
        if known.is_some_and(|(_, done)| done > sweep) {
            return Ok(());
        }
        let iters = match known {
            Some((iters, _)) => {
                // Right after the body's samples on the same set-up: a short batch warms it.
                self.warm_up(p, Variant::Overhead, (iters / 4).max(MIN_BATCH), Duration::ZERO)?;
                iters
            }
            None => {
                let (iters, _) = self.calibrate(p, Variant::Overhead)?;
                self.warm_up(p, Variant::Overhead, iters, self.sampling.warmup())?;
                iters
            }
        };
        let count = share(self.sampling.overhead_samples(), sweep, sweeps);
        let samples = self.sample(p, Variant::Overhead, iters, count, Duration::MAX, "  loop overhead")?;
        let o = self.overheads.entry(key).or_insert(OverheadSamples {
            batch_iters: iters,
            samples: Vec::new(),
            sweeps_done: 0,
        });
        o.samples.extend(samples);
        o.sweeps_done = sweep + 1;
        Ok(())
    }

    /// The overhead measured so far for `key`.
    fn overhead(&self, key: &OverheadKey) -> Result<Overhead> {
        let o = self.overheads.get(key).context("no overhead measured")?;
        let summary = Summary::of(&o.samples).context("no overhead samples collected")?;
        Ok(Overhead { key: key.to_string(), batch_iters: o.batch_iters, samples_ns: o.samples.clone(), summary })
    }

    /// The warm-up of a scenario visited again, after other scenarios ran
    /// and it was set up again (the first visit had the whole `--warmup`):
    /// one batch of the timed size. The first batch after a resume ran up
    /// to 1.6x slower here (72.8 ns/op, 124 the batch after), more than
    /// caches explain: a quarter batch left one cold sample in each visit
    /// and tripled some rows' CV.
    fn rewarm(&self, p: &mut dyn PreparedScenario, variant: Variant, iters: u32) -> Result<()> {
        self.warm_up(p, variant, iters, Duration::ZERO)
    }

    /// One visit of sweep `sweep` of `sweeps` to a validated scenario:
    /// calibrates and checks proportionality on the first, warms up and
    /// takes this sweep's share of the samples, then the overhead's share.
    fn visit(
        &mut self,
        p: &mut dyn PreparedScenario,
        label: &str,
        (sweep, sweeps): (u32, u32),
        m: &mut Sampled,
    ) -> Result<()> {
        let checking = Instant::now();
        if m.batch_iters == 0 {
            let (iters, estimate) = self.calibrate(p, Variant::Body)?;
            m.linearity = Some(self.proportionality(p, iters)?);
            (m.batch_iters, m.estimate) = (iters, estimate);
            // The check's batches warmed the body as warm-up would: only the rest of its time is left.
            self.warm_up(p, Variant::Body, iters, self.sampling.warmup().saturating_sub(checking.elapsed()))?;
        } else {
            self.rewarm(p, Variant::Body, m.batch_iters)?;
        }
        let wanted = share(self.sampling.samples as usize, sweep, sweeps);
        let left = self.sampling.max_scenario_time().saturating_sub(m.sampling_time);
        let started = Instant::now();
        let samples = self.sample(p, Variant::Body, m.batch_iters, wanted, left, label)?;
        m.sampling_time += started.elapsed();
        m.samples.extend(samples);
        m.overhead_key = Some(p.overhead_key());
        self.overhead_turn(p, sweep, sweeps)
    }

    /// The measurement of a scenario whose sweeps are done.
    fn finish(&self, m: Sampled) -> Result<Measurement> {
        let summary = Summary::of(&m.samples).context("no samples collected")?;
        let overhead = self.overhead(m.overhead_key.as_ref().context("no overhead key")?)?;
        let linearity = m.linearity.context("no proportionality check")?;
        let wanted = self.sampling.samples as usize;
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
        if m.samples.len() < wanted {
            warnings.push(format!(
                "only {} of {wanted} samples within the {} s cap",
                m.samples.len(),
                self.sampling.max_scenario_s
            ));
        }
        let (lo, hi) = summary.median_ci95;
        let noise =
            Noise::judge(summary.cv, overhead.summary.cv, (hi - lo) / 2.0 / summary.median.max(f64::MIN_POSITIVE));
        let mut observations = Vec::new();
        let outliers = summary.outliers_low + summary.outliers_high;
        if outliers as f64 > OUTLIER_SHARE * summary.n as f64 {
            observations.push(format!("{outliers} of {} samples are outliers (Tukey fences)", summary.n));
        }
        Ok(Measurement {
            batch_iters: m.batch_iters,
            calibration: Calibration {
                estimate_ns_per_op: m.estimate,
                proportionality_ratio: linearity.ratio,
                proportionality_ci: Some(linearity.ci),
                proportionality_pairs: linearity.pairs as u32,
                proportional: linearity.linear,
            },
            samples_ns: m.samples,
            summary,
            overhead,
            warnings,
            noise: Some(noise),
            observations,
        })
    }

    /// Calibrates, checks proportionality, warms up and samples one
    /// validated scenario in one stretch: with nothing between them,
    /// sweeps would only add warm-up batches.
    pub fn measure(&mut self, p: &mut dyn PreparedScenario, label: &str) -> Result<Measurement> {
        let mut m = Sampled::default();
        self.visit(p, label, (0, 1), &mut m)?;
        self.finish(m)
    }

    /// Validates, then (if valid) measures one scenario of `workload`, all
    /// its sweeps in a row. Errors are recorded, so the suite can go on
    /// with the other scenarios; None when the stop flag cut the scenario short.
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
        let (mut rec, prepared) = self.begin(workload, runtime, w, s);
        if let Some(mut prepared) = prepared {
            match self.measure(prepared.as_mut(), &s.name) {
                Ok(m) => rec.figure = Some(Figure::Time(m)),
                Err(e) if e.is::<Interrupted>() => return None,
                Err(e) => {
                    rec.error = Some(format!("measurement failed: {reason}", reason = crate::record::error_line(&e)))
                }
            }
        }
        Some(rec)
    }

    /// Visits `s` in sweep `sweep` of a run: validates it (again after the
    /// first sweep, since a workload is configured for one scenario at a
    /// time) and takes the sweep's share of its samples. `pending` holds
    /// the scenario between sweeps. Returns false when the stop flag cut
    /// the visit short.
    pub fn sweep(
        &mut self,
        workload: &str,
        runtime: Runtime,
        w: &mut dyn LoadedWorkload,
        s: &ScenarioInfo,
        sweep: u32,
        pending: &mut Option<Pending>,
    ) -> bool {
        let sweeps = self.sampling.effective_sweeps();
        let visited = match pending {
            None => {
                let (rec, prepared) = self.begin(workload, runtime, w, s);
                let p = pending.insert(Pending { rec, sampled: None });
                prepared.map(|mut prepared| {
                    let mut sampled = Sampled::default();
                    let r = self.visit(prepared.as_mut(), &s.name, (sweep, sweeps), &mut sampled);
                    p.sampled = Some(sampled);
                    r
                })
            }
            Some(p) if p.sampled.is_some() => match w.resume(s) {
                Ok(mut prepared) => {
                    let sampled = p.sampled.as_mut().expect("checked");
                    Some(self.visit(prepared.as_mut(), &s.name, (sweep, sweeps), sampled))
                }
                Err(e) => Some(Err(e.context(format!("setting the scenario up again for sweep {}", sweep + 1)))),
            },
            Some(_) => None,
        };
        match visited {
            Some(Err(e)) if e.is::<Interrupted>() => false,
            Some(Err(e)) => {
                let p = pending.as_mut().expect("inserted above");
                p.rec.error = Some(format!("measurement failed: {reason}", reason = crate::record::error_line(&e)));
                p.sampled = None;
                true
            }
            _ => true,
        }
    }

    /// The record of a scenario whose sweeps are done (or cut short by the
    /// stop flag: then with the samples taken so far).
    pub fn conclude(&self, pending: Pending) -> ScenarioRecord {
        let Pending { mut rec, sampled } = pending;
        if let Some(sampled) = sampled.filter(|s| !s.samples.is_empty()) {
            match self.finish(sampled) {
                Ok(m) => rec.figure = Some(Figure::Time(m)),
                Err(e) => {
                    rec.error = Some(format!("measurement failed: {reason}", reason = crate::record::error_line(&e)))
                }
            }
        }
        rec
    }

    /// The record of `s` up to its validation (or why it is not timed),
    /// and the prepared scenario when it is to be timed; with the
    /// instruction metric, the count is taken here.
    fn begin<'w>(
        &mut self,
        workload: &str,
        runtime: Runtime,
        w: &'w mut dyn LoadedWorkload,
        s: &ScenarioInfo,
    ) -> (ScenarioRecord, Option<Box<dyn PreparedScenario + 'w>>) {
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
            outcome: None,
            checks: Vec::new(),
            notes: Vec::new(),
            error: None,
            program: None,
            runtime,
            figure: None,
            attached: None,
        };
        if let Some(why) = w.unavailable(s) {
            rec.unavailable = Some(why);
            return (rec, None);
        }
        let mut prepared = match w.validate(s) {
            Ok((v, prepared)) => {
                rec.validated = true;
                rec.verdict = Some(v.verdict);
                rec.outcome = v.outcome;
                rec.timing = v.timing;
                rec.checks = v.checks;
                rec.notes = v.notes;
                rec.attached = v.attached.map(|a| *a);
                prepared
            }
            Err(e) if e.is::<super::NotRunnable>() => {
                rec.unavailable = Some(crate::record::error_line(&e));
                return (rec, None);
            }
            Err(e) => {
                rec.error = Some(format!("validation failed: {reason}", reason = crate::record::error_line(&e)));
                return (rec, None);
            }
        };
        rec.program = prepared.program().and_then(|fd| prog_info::program_record(fd, prepared.verifier_stats()).ok());
        if self.metric == Metric::KernelInsns {
            match mark_kernel_regions(prepared.as_mut()) {
                Ok(k) => rec.figure = Some(Figure::KernelInsns(k)),
                Err(e) => {
                    rec.error = Some(format!(
                        "counting kernel instructions failed: {reason}",
                        reason = crate::record::error_line(&e)
                    ))
                }
            }
            return (rec, None);
        }
        if self.metric == Metric::Insns {
            match prepared.count_instructions(COUNT_ITERS, self.profile) {
                Ok(Some(c)) => rec.figure = Some(Figure::Insns(c)),
                Ok(None) => {
                    rec.error = Some(
                        "instructions are counted in the userspace runtime, which this scenario did not run in".into(),
                    )
                }
                Err(e) => {
                    rec.error =
                        Some(format!("counting instructions failed: {reason}", reason = crate::record::error_line(&e)))
                }
            }
            return (rec, None);
        }
        (rec, Some(prepared))
    }
}

/// Packets each region of `--metric kernel-insns` runs: enough that the
/// test run's entry and exit are a small share, few enough for TCG.
pub const KERNEL_COUNT_ITERS: u32 = 1000;
/// Rounds of each region: the host keeps the fewest (an interrupt only adds).
const KERNEL_COUNT_ROUNDS: usize = 3;

/// Runs the scenario's batches, and the empty loop's, in regions the TCG
/// plugin counts (system::tcg_counter): per round a batch of N packets and
/// one of 2N, whose difference leaves out what a batch costs once. Each
/// kind of batch runs its rounds together after one unmarked run of its
/// own, so that first-run effects (page faults, cold code) and an attached
/// program's attaching and detaching stay out of the regions.
fn mark_kernel_regions(p: &mut dyn PreparedScenario) -> anyhow::Result<crate::record::KernelInsns> {
    let iters = p.batch_cap().map_or(KERNEL_COUNT_ITERS, |cap| (cap / 2).min(KERNEL_COUNT_ITERS)).max(1);
    use super::HookBatch;
    use crate::system::tcg_counter;
    // An attached program's batches hold it alone on its hook (not its
    // object's others), the empty program, or nothing: the attach
    // mechanism is the empty program's regions less the last.
    let on_hook = p.run_hook_batch(HookBatch::Nothing, 2 * iters).transpose()?.is_some();
    // Each kind's JIT images (and trampolines) read while it is attached.
    type Regions = (Vec<(u64, u64)>, Vec<(u64, String)>);
    let mut rounds = |held: HookBatch, variant: Variant| -> anyhow::Result<Regions> {
        let regions = match on_hook {
            true => counted_rounds(iters, |n| p.run_hook_batch(held, n).expect("it ran before"))?,
            false => counted_rounds(iters, |n| p.run_batch(variant, n).map(drop))?,
        };
        Ok((regions, tcg_counter::jit_symbols()?))
    };
    let (body_regions, jit_symbols) = rounds(HookBatch::ProgramAlone, Variant::Body)?;
    let (loop_regions, loop_jit_symbols) = rounds(HookBatch::Empty, Variant::Overhead)?;
    let (bare_regions, bare_jit_symbols) = match on_hook {
        true => rounds(HookBatch::Nothing, Variant::Overhead)?,
        false => Default::default(),
    };
    Ok(crate::record::KernelInsns {
        iters,
        body_regions,
        loop_regions,
        bare_regions,
        jit_symbols,
        loop_jit_symbols,
        bare_jit_symbols,
        counts: None,
    })
}

/// One unmarked batch of 2N, then KERNEL_COUNT_ROUNDS marked pairs of N
/// and 2N: their region ids.
fn counted_rounds(iters: u32, mut batch: impl FnMut(u32) -> anyhow::Result<()>) -> anyhow::Result<Vec<(u64, u64)>> {
    use crate::system::tcg_counter::marked;
    batch(2 * iters)?;
    (0..KERNEL_COUNT_ROUNDS)
        .map(|_| {
            let (r, short) = marked(|| batch(iters));
            r?;
            let (r, long) = marked(|| batch(2 * iters));
            r?;
            Ok((short, long))
        })
        .collect()
}

/// A scenario between the sweeps of a run: its record so far and the
/// samples taken (None once it will not be timed).
pub struct Pending {
    rec: ScenarioRecord,
    sampled: Option<Sampled>,
}

impl Pending {
    /// The scenario is timed no further: its measurement failed, `why`.
    pub fn fail(&mut self, why: &str) {
        if self.sampled.take().is_some() {
            self.rec.error = Some(format!("measurement failed: {why}"));
        }
    }
}
