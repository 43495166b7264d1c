//! The runner without a kernel: a fake workload whose batches cost exactly
//! what the test says shows that calibration, the proportionality check,
//! sampling, the time cap, outlier flags, the shared overhead measurement
//! and stopping (Ctrl-C) do what they claim.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Result, bail};
use bpfbench::harness::runner::Runner;
use bpfbench::harness::{BatchTiming, LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Variant};
use bpfbench::record::Sampling;

/// How a fake scenario's batches behave.
#[derive(Clone, Copy)]
struct Cost {
    /// ns per iteration of the body.
    ns_per_op: f64,
    /// ns every batch costs whatever its size (breaks proportionality).
    per_batch_ns: f64,
    /// Every n-th body batch takes ten times as long.
    spike_every: Option<u32>,
    /// Real time each batch takes, for the time cap.
    sleep: Duration,
    /// Set the stop flag after this many body batches.
    stop_after: Option<u32>,
    /// The machine's speed switches between 1 and 1.5 times slower every
    /// so many body batches (its phases).
    phase_every: Option<u32>,
    /// A batch of n iterations costs n^exponent times ns_per_op (scaled to
    /// agree at 1000 iterations): 1 is linear.
    exponent: f64,
}

const EXACT: Cost = Cost {
    ns_per_op: 50.0,
    per_batch_ns: 0.0,
    spike_every: None,
    sleep: Duration::ZERO,
    stop_after: None,
    phase_every: None,
    exponent: 1.0,
};
/// The overhead loop of every fake scenario costs this much per iteration.
const OVERHEAD_NS: f64 = 5.0;

struct Fake {
    cost: Cost,
    /// Body batches of every fake scenario so far: the machine's phases
    /// are the machine's, not one scenario's.
    machine_batches: &'static Cell<u32>,
    overhead_key: &'static str,
    stop: &'static AtomicBool,
    body_batches: u32,
    overhead_batches: &'static Cell<u32>,
}

impl PreparedScenario for Fake {
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming> {
        std::thread::sleep(self.cost.sleep);
        let per_op = match variant {
            Variant::Overhead => {
                self.overhead_batches.set(self.overhead_batches.get() + 1);
                OVERHEAD_NS
            }
            Variant::Body => {
                self.body_batches += 1;
                if self.cost.stop_after == Some(self.body_batches) {
                    self.stop.store(true, Ordering::SeqCst);
                }
                self.machine_batches.set(self.machine_batches.get() + 1);
                let phase = match self.cost.phase_every {
                    Some(n) if (self.machine_batches.get() / n) % 2 == 1 => 1.5,
                    _ => 1.0,
                };
                let growth = (iters as f64 / 1000.0).powf(self.cost.exponent - 1.0);
                phase
                    * growth
                    * match self.cost.spike_every {
                        Some(n) if self.body_batches.is_multiple_of(n) => self.cost.ns_per_op * 10.0,
                        _ => self.cost.ns_per_op,
                    }
            }
        };
        let elapsed = per_op * iters as f64 + self.cost.per_batch_ns;
        Ok(BatchTiming { started_ns: 0, elapsed_ns: elapsed as u64, iters: iters.into() })
    }

    fn overhead_key(&self) -> bpfbench::harness::OverheadKey {
        bpfbench::harness::OverheadKey::Named(self.overhead_key.into())
    }
}

/// A loaded fake workload: scenario "bad" fails validation, "na" is unavailable.
struct FakeWorkload {
    cost: Cost,
    machine_batches: &'static Cell<u32>,
    stop: &'static AtomicBool,
    overhead_batches: &'static Cell<u32>,
}

impl LoadedWorkload for FakeWorkload {
    fn unavailable(&mut self, s: &ScenarioInfo) -> Option<String> {
        (s.name == "na").then(|| "no such kernel feature".to_string())
    }

    fn validate(&mut self, s: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        if s.name == "bad" {
            bail!("verdict: expected XDP_TX, got XDP_DROP");
        }
        let key = if s.name.starts_with("other") { "other loop" } else { "fake loop" };
        let v = Validation { verdict: "XDP_PASS".into(), checks: vec!["fake check".into()], ..Default::default() };
        let fake = Fake {
            cost: self.cost,
            machine_batches: self.machine_batches,
            overhead_key: key,
            stop: self.stop,
            body_batches: 0,
            overhead_batches: self.overhead_batches,
        };
        Ok((v, Box::new(fake)))
    }
}

fn scenario(name: &'static str) -> ScenarioInfo {
    ScenarioInfo::fixed(name, "fake", "a fake scenario")
}

fn leak<T>(v: T) -> &'static T {
    Box::leak(Box::new(v))
}

/// A runner and a fake workload sharing a fresh stop flag.
fn setup(cost: Cost, sampling: Sampling) -> (Runner, FakeWorkload) {
    let stop = leak(AtomicBool::new(false));
    let w = FakeWorkload { cost, stop, overhead_batches: leak(Cell::new(0)), machine_batches: leak(Cell::new(0)) };
    (Runner::new(sampling, false, stop), w)
}

fn sampling(samples: u64) -> Sampling {
    Sampling { samples, batch_ms: 1.0, warmup_s: 0.0, max_scenario_s: 10.0, sweeps: 1 }
}

#[test]
fn calibration_sizes_batches_to_the_target_duration() {
    let (mut runner, mut w) = setup(EXACT, sampling(30));
    let rec = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap();
    let m = rec.measurement().cloned().expect("measured");
    // 1 ms at 50 ns/op is 20 000 iterations.
    assert_eq!(m.batch_iters, 20_000);
    assert_eq!(m.calibration.estimate_ns_per_op, 50.0);
    let mut w2 = FakeWorkload { cost: Cost { ns_per_op: 0.5, ..EXACT }, ..w };
    let m = runner.run_scenario("fake", &mut w2, &scenario("s")).unwrap().measurement().cloned().unwrap();
    assert_eq!(m.batch_iters, 2_000_000, "cheap bodies get bigger batches");
}

#[test]
fn samples_are_ns_per_op_and_the_overhead_is_measured_beside_them() {
    let (mut runner, mut w) = setup(EXACT, sampling(30));
    let rec = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap();
    assert!(rec.validated && rec.checks == ["fake check"] && rec.error.is_none(), "{rec:?}");
    let m = rec.measurement().cloned().unwrap();
    assert_eq!(m.samples_ns, vec![50.0; 30]);
    assert_eq!((m.summary.n, m.summary.median, m.summary.cv), (30, 50.0, 0.0));
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    assert_eq!(m.overhead.summary.median, OVERHEAD_NS);
    assert_eq!(m.overhead.samples_ns.len(), 20, "a quarter of the samples, at least 20");
    assert_eq!(m.overhead.key, "fake loop");
}

#[test]
fn scenarios_with_one_overhead_key_share_one_overhead_measurement() {
    let (mut runner, mut w) = setup(EXACT, sampling(10));
    let counted = w.overhead_batches;
    runner.run_scenario("fake", &mut w, &scenario("a")).unwrap();
    let after_first = counted.get();
    assert!(after_first > 20, "calibration, warm-up and 20 samples: {after_first}");
    runner.run_scenario("fake", &mut w, &scenario("b")).unwrap();
    assert_eq!(counted.get(), after_first, "same key: measured once");
    runner.run_scenario("fake", &mut w, &scenario("other")).unwrap();
    assert!(counted.get() > after_first, "another key: measured again");
}

#[test]
fn cost_that_does_not_grow_with_iterations_fails_the_proportionality_check() {
    let (mut runner, mut w) = setup(EXACT, sampling(10));
    let m = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap().measurement().cloned().unwrap();
    assert_eq!(m.calibration.proportionality_ratio, 2.0);
    assert!(m.calibration.proportional);
    // A fixed 0.5 ms per batch: calibration sizes batches of ~1 ms, most
    // of it the fixed part, so 2N takes far less than twice N.
    let cost = Cost { per_batch_ns: 500_000.0, ..EXACT };
    let (mut runner, mut w) = setup(cost, sampling(10));
    let m = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap().measurement().cloned().unwrap();
    assert!(!m.calibration.proportional, "{:?}", m.calibration);
    assert!(m.calibration.proportionality_ratio < 1.5, "{:?}", m.calibration);
    assert!(m.warnings.iter().any(|w| w.starts_with("proportionality check failed")), "{:?}", m.warnings);
}

#[test]
fn proportionality_sees_linearity_through_the_machines_phases_and_non_linearity_in_them() {
    // Speed switching every 5 batches: some pairs straddle a switch, the median does not.
    let phases = Cost { phase_every: Some(5), ..EXACT };
    for phase_every in [3, 5, 7] {
        let cost = Cost { phase_every: Some(phase_every), ..phases };
        let (mut runner, mut w) = setup(cost, sampling(10));
        let c =
            runner.run_scenario("fake", &mut w, &scenario("s")).unwrap().measurement().cloned().unwrap().calibration;
        assert!(c.proportional, "phases every {phase_every} batches: {c:?}");
        assert_eq!(c.proportionality_pairs, 9);
        let (lo, hi) = c.proportionality_ci.unwrap();
        assert!(lo <= 2.0 && 2.0 <= hi, "{c:?}");
    }
    // A body whose cost grows faster than its iterations (2N costs 2^1.2 N)
    // fails under the same phases, its interval wholly beyond the band.
    let (mut runner, mut w) = setup(Cost { exponent: 1.2, ..phases }, sampling(10));
    let m = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap().measurement().cloned().unwrap();
    assert!(!m.calibration.proportional, "{:?}", m.calibration);
    assert!(m.calibration.proportionality_ci.unwrap().0 > 2.1, "{:?}", m.calibration);
    assert!(m.warnings.iter().any(|w| w.contains("over 9 pairs")), "{:?}", m.warnings);
}

#[test]
fn outliers_are_flagged_and_kept() {
    let cost = Cost { spike_every: Some(5), ..EXACT };
    let (mut runner, mut w) = setup(cost, sampling(50));
    let m = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap().measurement().cloned().unwrap();
    let spikes = m.samples_ns.iter().filter(|&&x| x == 500.0).count();
    assert!(spikes >= 9, "every fifth body batch spikes: {:?}", m.samples_ns);
    assert_eq!(m.summary.outliers_high, spikes, "each spike is an outlier, and none is dropped");
    assert_eq!(m.samples_ns.len(), 50);
    assert!(
        m.observations.iter().any(|w| w == &format!("{spikes} of 50 samples are outliers (Tukey fences)")),
        "{:?}",
        m.observations
    );
    // Spikes the empty loop did not have, but the median stands: no noise to warn of.
    let noise = m.noise.expect("judged");
    assert!(noise.cv > 0.5 && noise.machine_cv < 0.01 && !noise.noisier, "{noise:?}");
    assert!(m.warnings.is_empty(), "spikes are no failure of the measurement: {:?}", m.warnings);
}

#[test]
fn a_row_whose_median_the_machines_phases_move_is_noisier_than_the_loop() {
    // 1.5x slower every other three batches: half the samples in each phase.
    let (mut runner, mut w) = setup(Cost { phase_every: Some(3), ..EXACT }, sampling(60));
    let m = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap().measurement().cloned().unwrap();
    let noise = m.noise.expect("judged");
    assert!(noise.noisier && noise.median_uncertainty > 0.01, "{noise:?}");
}

#[test]
fn a_row_as_steady_as_the_loop_is_not_noisy() {
    let (mut runner, mut w) = setup(EXACT, sampling(50));
    let m = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap().measurement().cloned().unwrap();
    assert!(!m.noise.expect("judged").noisier, "{:?}", m.noise);
    assert!(m.observations.is_empty(), "{:?}", m.observations);
}

#[test]
fn sampling_stops_at_the_time_cap_and_says_so() {
    let cost = Cost { sleep: Duration::from_millis(5), ..EXACT };
    let (mut runner, mut w) = setup(cost, Sampling { max_scenario_s: 0.1, ..sampling(200) });
    let m = runner.run_scenario("fake", &mut w, &scenario("s")).unwrap().measurement().cloned().unwrap();
    let n = m.samples_ns.len();
    assert!((5..=25).contains(&n), "about 0.1 s / 5 ms samples, got {n}");
    assert!(m.warnings.contains(&format!("only {n} of 200 samples within the 0.1 s cap")), "{:?}", m.warnings);
}

#[test]
fn a_stop_request_ends_the_scenario_between_batches() {
    let cost = Cost { stop_after: Some(25), ..EXACT };
    let (mut runner, mut w) = setup(cost, sampling(100));
    assert!(runner.run_scenario("fake", &mut w, &scenario("s")).is_none(), "an interrupted scenario leaves no record");
    assert!(w.stop.load(Ordering::SeqCst));
    // Once stopped, the runner starts no new batch at all.
    let mut fresh = FakeWorkload { cost: EXACT, ..w };
    assert!(runner.run_scenario("fake", &mut fresh, &scenario("t")).is_none());
}

#[test]
fn failed_validation_and_unavailable_scenarios_are_recorded_untimed() {
    let (mut runner, mut w) = setup(EXACT, sampling(10));
    let bad = runner.run_scenario("fake", &mut w, &scenario("bad")).unwrap();
    assert!(!bad.validated && bad.measurement().is_none() && bad.failed());
    assert_eq!(bad.error.as_deref(), Some("validation failed: verdict: expected XDP_TX, got XDP_DROP"));
    let na = runner.run_scenario("fake", &mut w, &scenario("na")).unwrap();
    assert_eq!(na.unavailable.as_deref(), Some("no such kernel feature"));
    assert!(na.measurement().is_none() && !na.failed(), "N/A is not a failure");
}

#[test]
fn sweeps_interleave_scenarios_and_each_gets_all_its_samples() {
    // The machine is 1.5x slower from its 150th body batch to its 300th:
    // sampled in one stretch, "a" would see only the fast phase; in
    // sweeps, both scenarios see both phases.
    let cost = Cost { phase_every: Some(150), ..EXACT };
    let (mut runner, mut w) = setup(cost, Sampling { sweeps: 10, ..sampling(100) });
    let mut pending = [None, None];
    for sweep in 0..10 {
        for (i, name) in ["a", "b"].into_iter().enumerate() {
            let s = scenario(name);
            assert!(runner.sweep("fake", bpfbench::record::Runtime::Kernel, &mut w, &s, sweep, &mut pending[i]));
        }
    }
    let [a, b] = pending.map(|p| runner.conclude(p.expect("visited")));
    let (ma, mb) = (a.measurement().cloned().expect("measured"), b.measurement().cloned().expect("measured"));
    assert_eq!((ma.summary.n, mb.summary.n), (100, 100), "each scenario has all its samples");
    for m in [&ma, &mb] {
        assert!(m.summary.max / m.summary.min > 1.4, "both saw the slow phase: {:?}", m.summary);
    }
    assert_eq!(ma.overhead.summary.n, mb.overhead.summary.n, "one overhead measurement, shared");

    // The same in one stretch each: "a" never meets the slow phase.
    let (mut runner, mut w) = setup(cost, Sampling { sweeps: 1, ..sampling(100) });
    let a = runner.run_scenario("fake", &mut w, &scenario("a")).unwrap().measurement().cloned().unwrap();
    assert!(a.summary.max / a.summary.min < 1.1, "{:?}", a.summary);
}
