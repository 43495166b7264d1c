//! The workload-agnostic benchmark harness.
//!
//! A workload goes through three states, each a type, so no step can be
//! called out of order (the kernel selftests bench's `struct bench` has the
//! same steps: validate / setup / measure / report):
//! - [`Workload`]: configured from the command line; lists its scenarios;
//! - [`LoadedWorkload`]: its BPF objects loaded and maps filled ([`Workload::setup`]);
//! - [`PreparedScenario`]: one scenario configured and validated
//!   ([`LoadedWorkload::validate`]), ready for timed batches.
//!
//! The [`runner`] owns time: calibration, warm-up, sampling and the overhead
//! measurement. [`timing`] is the host side of the in-BPF timing loop.

pub mod activity;
pub mod inline;
pub mod loops;
pub mod paired;
pub mod runner;
pub mod spacer;
pub mod timing;

use std::borrow::Cow;
use std::os::fd::BorrowedFd;

use anyhow::Result;

use crate::kernel::prog_type::ProgKind;
use crate::record::{Body, InstructionCount, LoopConstruct, Runtime, ScenarioFacts, Timing, VerifierStats};
pub use runner::Profile;
pub use timing::BatchTiming;

/// A scenario as users see it in `bpfbench list`, and the facts its
/// results carry. Fixed suites name their scenarios statically;
/// parameterised ones (map type x op x size) build names.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScenarioInfo {
    pub name: Cow<'static, str>,
    pub group: Cow<'static, str>,
    pub description: Cow<'static, str>,
    pub facts: ScenarioFacts,
}

impl ScenarioInfo {
    /// A scenario of a fixed suite, shown as a table row.
    pub const fn fixed(name: &'static str, group: &'static str, description: &'static str) -> Self {
        Self {
            name: Cow::Borrowed(name),
            group: Cow::Borrowed(group),
            description: Cow::Borrowed(description),
            facts: ScenarioFacts::TABLE_ROW,
        }
    }
}

/// What validation established before a scenario was timed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Validation {
    /// The program's verdict, e.g. "XDP_TX".
    pub verdict: String,
    /// Packet sizes in and out, and what the user expected (own objects).
    pub outcome: Option<crate::record::Outcome>,
    /// How the scenario will be timed (in BPF unless the workload had to fall back).
    pub timing: Timing,
    /// Each check that passed, in words ("LRU misses: 0 of 8192").
    pub checks: Vec<String>,
    /// Facts worth showing with -v ("Flow diversity: 4096 source addresses").
    pub notes: Vec<String>,
    /// The program's verdict and packet for each input, where the workload
    /// keeps them (a user's object); two builds are compared by them.
    pub outputs: Vec<crate::kernel::test_run::RunOutput>,
    /// An attached program's events, runs and buffer records, and the
    /// trigger's slowdown (measured while the scenario is set up).
    pub attached: Option<Box<crate::record::attached::AttachedRun>>,
}

/// Which program a batch runs: the scenario's body, or the same loop and
/// reset block around an empty body (the harness's own cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Body,
    Overhead,
}

/// A benchmarkable unit with named scenarios, configured but not loaded.
pub trait Workload {
    /// Name on the command line, e.g. "xdp-lb".
    fn name(&self) -> &str;
    /// Every scenario, grouped and in display order.
    fn scenarios(&self) -> &[ScenarioInfo];
    /// Loads the BPF objects and fills maps; batches will run on `cpu`.
    fn setup(&self, cpu: usize) -> Result<Box<dyn LoadedWorkload + '_>>;
    /// Times batches as `choice` says from the next setup on (`--timing-mode`);
    /// refuses, in one line, a mode the workload does not have.
    fn set_timing(&mut self, choice: timing::TimingChoice) -> Result<()> {
        match choice {
            timing::TimingChoice::Auto => Ok(()),
            other => anyhow::bail!("{} has no --timing-mode {}: it times in BPF only", self.name(), other.as_str()),
        }
    }
    /// Where the body sits in the batch loop (`--body`); workloads that
    /// only call it refuse `inline` in one line.
    fn set_body(&mut self, choice: timing::BodyChoice) -> Result<()> {
        match choice {
            timing::BodyChoice::Inline => {
                anyhow::bail!("{} has no --body inline: its batch loop calls the body", self.name())
            }
            _ => Ok(()),
        }
    }
    /// Whether its cases are a suite's, each standing alone (a project's
    /// tests, a corpus): two builds of it are compared case by case on the
    /// cases both have, a case failing on one side is reported and the
    /// others go on, and a group's cases share each load (`bpfbench ab`).
    fn is_suite(&self) -> bool {
        false
    }
    /// As [`Workload::setup`], with the programs run by `runtime`.
    fn setup_in(&self, cpu: usize, runtime: Runtime) -> Result<Box<dyn LoadedWorkload + '_>> {
        match runtime {
            Runtime::Kernel => self.setup(cpu),
            Runtime::User => {
                anyhow::bail!("{} does not run in the userspace runtime yet; use --runtime kernel", self.name())
            }
        }
    }
}

/// The error of a validation that cannot run where it was asked to (the
/// userspace runtime lacks a helper the case's path calls): the scenario
/// is reported N/A with this reason, not failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotRunnable(pub String);

/// A workload whose BPF objects are loaded.
pub trait LoadedWorkload {
    /// Why `scenario` cannot run here (a kernel feature is missing), if it
    /// cannot. Reported as "N/A (reason)", which is not a failure.
    fn unavailable(&mut self, _scenario: &ScenarioInfo) -> Option<String> {
        None
    }
    /// Configures `scenario` and checks that it does what it claims: return
    /// code, output packet and the counters proving the code path. An error
    /// is a validation failure; the scenario is then not timed.
    fn validate(&mut self, scenario: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)>;
    /// Configures `scenario` again after other scenarios ran, for another
    /// sweep of samples: it validated before, so a workload that can put
    /// its state back (its maps as the scenario left them) need not check
    /// it again. Validates again unless the workload says otherwise.
    fn resume(&mut self, scenario: &ScenarioInfo) -> Result<Box<dyn PreparedScenario + '_>> {
        self.validate(scenario).map(|(_, prepared)| prepared)
    }
    /// A new sweep begins: a workload that keeps its timed programs loaded
    /// across scenarios loads them again, so that each sweep times another
    /// placement of their code in memory (a workload whose resume loads
    /// its programs anyway has nothing to do).
    fn new_sweep(&mut self) -> Result<()> {
        Ok(())
    }
}

/// What a scenario's overhead is measured with: scenarios with equal keys
/// share one measurement in a run. Shown in outputs as its `Display`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OverheadKey {
    /// A driver's batch loop around an empty call or an empty inline body,
    /// `restore` bytes of one of `packets` packets written back per iteration.
    DriverLoop { kind: ProgKind, construct: LoopConstruct, body: Body, restore: u32, packets: usize },
    /// The chain loop, `per_run` passes per test run, each a tail call into
    /// an empty program, `restore` bytes written back per pass.
    ChainLoop { kind: ProgKind, per_run: u32, restore: u32, packets: usize },
    /// One test run of a program of the type that returns at once.
    EmptyTestRun { kind: ProgKind },
    /// An empty program attached at `point` (a section's name), fired by
    /// `trigger`: what bpf_stats reports for a run that does nothing.
    EmptyAttached { kind: ProgKind, point: String, trigger: String },
    /// A workload's own empty loop, in its words ("map-ops empty loop").
    Named(Cow<'static, str>),
}

impl std::fmt::Display for OverheadKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OverheadKey::DriverLoop { kind, construct, body, restore, packets } => write!(
                f,
                "{kind:?} driver loop ({}, body {}), {restore} bytes written back, {packets} packet(s)",
                construct.as_str(),
                body.as_str()
            ),
            OverheadKey::ChainLoop { kind, per_run, restore, packets } => write!(
                f,
                "{kind:?} chain loop ({per_run} passes per run, a tail call into an empty program), {restore} bytes written back, {packets} packet(s)"
            ),
            OverheadKey::EmptyTestRun { kind } => write!(f, "{kind:?} test run of an empty program"),
            OverheadKey::EmptyAttached { kind, point, trigger } => {
                write!(f, "an empty {kind:?} program at {point}, fired by {trigger}")
            }
            OverheadKey::Named(words) => f.write_str(words),
        }
    }
}

/// A validated scenario, ready to be timed.
/// What an attached program's hook holds in a batch counted apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookBatch {
    /// The program alone, its object's others detached.
    ProgramAlone,
    /// The empty program of its type on the same hook.
    Empty,
    /// Nothing: the trigger's workload alone.
    Nothing,
}

pub trait PreparedScenario {
    /// One timed invocation of `iters` iterations.
    fn run_batch(&mut self, variant: Variant, iters: u32) -> Result<BatchTiming>;
    /// The most iterations a batch runs, where the loop is capped (a bounded
    /// loop the verifier walks); the runner sizes batches within it.
    fn batch_cap(&self) -> Option<u32> {
        None
    }
    /// Scenarios with the same key share one overhead measurement in a run
    /// (same loop, same reset block, same packet shape).
    fn overhead_key(&self) -> OverheadKey;
    /// Runs `iters` events of the scenario's trigger with the program
    /// alone on its hook, the empty program, or nothing attached, where it
    /// has a hook (attached programs), the run-time statistics off:
    /// kernel-instruction regions of the program without its object's
    /// others, and of the workload alone, which the empty program's exceed
    /// by the attach mechanism. None elsewhere.
    fn run_hook_batch(&mut self, _attached: HookBatch, _iters: u32) -> Option<Result<()>> {
        None
    }
    /// The program the body batches time, to record its tag and sizes.
    fn program(&self) -> Option<BorrowedFd<'_>> {
        None
    }
    /// What the verifier said when it loaded that program, if the workload
    /// kept its log (the kernel keeps only the count of verified instructions).
    fn verifier_stats(&self) -> Option<VerifierStats> {
        None
    }
    /// Counts what a body batch of `iters` executes beyond the empty
    /// loop's, where the programs run in the userspace runtime (None elsewhere).
    /// `profile` says what the count keeps beyond its totals (see
    /// [`count_instructions`]).
    fn count_instructions(&mut self, _iters: u32, _profile: Profile) -> Result<Option<InstructionCount>> {
        Ok(None)
    }
}

/// How long `--profile` samples a scenario's timed batches.
const PROFILE_SAMPLING: std::time::Duration = std::time::Duration::from_secs(1);

/// What one iteration of the body executes beyond one of the empty loop,
/// in the userspace runtime `rt`, where `batch` runs a timed batch: each
/// is counted as a batch of 2N less a batch of N, so the validation
/// iteration and each batch's fixed instructions drop out and a path's
/// count is a whole number. `profile` adds the counts per source line,
/// and with [`Profile::LinesAndTime`] body batches then run in the JIT for
/// [`PROFILE_SAMPLING`] under the sampling profiler
/// ([`crate::uvm::sampler`]): where the time goes.
pub fn count_instructions(
    rt: &timing::SharedRuntime,
    iters: u32,
    profile: Profile,
    mut batch: impl FnMut(Variant, u32) -> Result<BatchTiming>,
) -> Result<InstructionCount> {
    let mut per_iteration = |variant: Variant| -> Result<crate::uvm::RunCounts> {
        rt.borrow_mut().take_counts();
        batch(variant, iters)?;
        let once = rt.borrow_mut().take_counts();
        batch(variant, 2 * iters)?;
        Ok(rt.borrow_mut().take_counts().minus(&once))
    };
    // Counting is the interpreter's job: the JIT counts nothing.
    let engine = rt.borrow_mut().set_engine(crate::uvm::runtime::Engine::Interpreter);
    rt.borrow_mut().set_profiling(profile != Profile::Off);
    let counted = per_iteration(Variant::Body).and_then(|body| Ok((body, per_iteration(Variant::Overhead)?)));
    rt.borrow_mut().set_profiling(false);
    rt.borrow_mut().set_engine(engine);
    let (body, empty) = counted?;
    let mut count = body.beyond(empty, u64::from(iters));
    if profile == Profile::LinesAndTime {
        let (sampled, batches) = sample_time(rt, iters, &mut batch)?;
        count.add_samples(sampled, batches);
    }
    Ok(count)
}

/// Samples body batches of `iters` in the runtime's engine (the JIT) for
/// [`PROFILE_SAMPLING`]: where the samples fell, and each batch's ns/packet.
fn sample_time(
    rt: &timing::SharedRuntime,
    iters: u32,
    batch: &mut impl FnMut(Variant, u32) -> Result<BatchTiming>,
) -> Result<(crate::record::SampledTime, crate::stats::Summary)> {
    // One batch first: the programs are compiled before sampling starts.
    batch(Variant::Body, iters)?;
    let ranges = rt.borrow().compiled_ranges();
    let sampler = crate::uvm::sampler::Sampler::start(&ranges)?;
    let mut per_batch = Vec::new();
    let started = std::time::Instant::now();
    let timed = loop {
        match batch(Variant::Body, iters) {
            Ok(t) => per_batch.push(t.ns_per_op()),
            Err(e) => break Err(e),
        }
        if started.elapsed() >= PROFILE_SAMPLING {
            break Ok(());
        }
    };
    let samples = sampler.finish();
    timed?;
    let batches = crate::stats::Summary::of(&per_batch).expect("at least one batch ran");
    Ok((rt.borrow().attribute(&samples), batches))
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
