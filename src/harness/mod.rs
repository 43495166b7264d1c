//! The workload-agnostic benchmark harness.
//!
//! A workload (the load balancer, a map benchmark, a user's program)
//! implements [`Workload`]; the [`runner`] owns time: calibration, warm-up,
//! sampling and the overhead baseline. Compare the kernel selftests bench's
//! `struct bench` (validate / setup / measure / report).

pub mod loops;
pub mod packet_diff;
pub mod prog_info;
pub mod runner;
pub mod skel_fds;
pub mod system;
pub mod test_run;
pub mod timing;

use std::borrow::Cow;

use anyhow::Result;

pub use timing::BatchTiming;

/// A scenario as users see it in `bpfbench list`. Fixed suites name their
/// scenarios statically; parameterised ones (map type x op x size) build names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioInfo {
    pub name: Cow<'static, str>,
    pub group: Cow<'static, str>,
    pub description: Cow<'static, str>,
}

impl ScenarioInfo {
    pub const fn fixed(name: &'static str, group: &'static str, description: &'static str) -> Self {
        Self { name: Cow::Borrowed(name), group: Cow::Borrowed(group), description: Cow::Borrowed(description) }
    }
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
    fn scenarios(&self) -> &[ScenarioInfo];
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
    /// Why `scenario` cannot run here (a kernel feature is missing), if it
    /// cannot. Reported as "N/A (reason)", which is not a failure.
    fn unavailable(&mut self, _scenario: &ScenarioInfo) -> Option<String> {
        None
    }
    /// The program a validated scenario times, to record its tag and sizes.
    fn body_program(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }
    /// The scenario's parameters, recorded with its result.
    fn params(&self, _scenario: &ScenarioInfo) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Distinct groups of `scenarios`, in first-seen order.
pub fn groups(scenarios: &[ScenarioInfo]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for s in scenarios {
        if !out.contains(&s.group.as_ref()) {
            out.push(&s.group);
        }
    }
    out
}
