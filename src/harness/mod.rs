//! The workload-agnostic benchmark harness.
//!
//! A workload (the load balancer, a map benchmark, a user's program)
//! implements [`Workload`]; the [`runner`] owns time: calibration, warm-up,
//! sampling and the overhead baseline. Compare the kernel selftests bench's
//! `struct bench` (validate / setup / measure / report).

pub mod loops;
pub mod packet_diff;
pub mod runner;
pub mod system;
pub mod test_run;
pub mod timing;

use anyhow::Result;

pub use timing::BatchTiming;

/// A scenario as users see it in `bpfbench list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScenarioInfo {
    pub name: &'static str,
    pub group: &'static str,
    pub description: &'static str,
}

/// What validation established before a scenario was timed.
#[derive(Debug, Clone, Default)]
pub struct Validation {
    /// The program's verdict, e.g. "XDP_TX".
    pub verdict: String,
    /// Each check that passed, in words ("LRU misses: 0 of 8192").
    pub checks: Vec<String>,
    /// Facts worth showing with -v ("Flow diversity: 4096 source addresses").
    pub notes: Vec<String>,
}

/// Which program a batch runs: the workload's body, or the same loop and
/// reset block around an empty body (the harness's own cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Body,
    Baseline,
}

/// One benchmarkable unit with named scenarios.
pub trait Workload {
    /// Name on the command line, e.g. "xdp-lb".
    fn name(&self) -> &'static str;
    /// Every scenario, grouped and in display order.
    fn scenarios(&self) -> &'static [ScenarioInfo];
    /// Loads BPF objects and fills maps; `cpu` is where batches will run.
    fn setup(&mut self, cpu: usize) -> Result<()>;
    /// Configures `scenario` and checks that it does what it claims: return
    /// code, output packet and the counters proving the code path. An error
    /// is a validation failure; the scenario is then not timed.
    fn validate(&mut self, scenario: &ScenarioInfo) -> Result<Validation>;
    /// One timed invocation of `iters` iterations of the validated scenario.
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming>;
    /// Scenarios with the same key share one overhead baseline in a run
    /// (same loop, same reset block, same packet shape).
    fn baseline_key(&self, scenario: &ScenarioInfo) -> String;
}

/// Distinct groups of `scenarios`, in first-seen order.
pub fn groups(scenarios: &[ScenarioInfo]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for s in scenarios {
        if !out.contains(&s.group) {
            out.push(s.group);
        }
    }
    out
}
