//! A paired comparison of two builds (`bpfbench ab`): each case timed by
//! the paired engine (harness::paired) on one CPU, every round validating
//! it on A and on B and comparing their outputs first.
//!
//! A build is a workload set up in this process ([`LocalBuild`]: one of
//! your objects, or a built-in workload on a build of its BPF object), or a
//! bpfbench executable serving batches from a worker process (worker.rs).

use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use crate::harness::paired::{self, Build, PairedSettings};
use crate::harness::{LoadedWorkload, PreparedScenario, ScenarioInfo, Validation, Workload};
use crate::kernel::test_run::RunOutput;
use crate::packet::diff_packets;
use crate::record::Runtime;
use crate::record::paired::{PAIRED_SCHEMA, PairedCase, PairedRecord};
use crate::stats::two_sample::geomean;
use crate::system::environment;

/// What happens during a paired comparison, for the caller to show.
pub trait PairedObserver {
    fn case_started(&mut self, _index: usize, _count: usize, _name: &str) {}
    /// A case the workload cannot run here, and why (nothing was timed).
    fn case_skipped(&mut self, _name: &str, _why: &str) {}
    fn case_done(&mut self, _case: &PairedCase) {}
    /// Something the user should know before the figures (on stderr unless told).
    fn note(&mut self, text: &str) {
        eprintln!("bpfbench: {text}");
    }
}

/// Everything a paired comparison does, decided before it starts.
pub struct PairedPlan<'a> {
    pub workload: String,
    /// (A, B) as the user named them.
    pub labels: (String, String),
    pub scenarios: Vec<ScenarioInfo>,
    pub settings: PairedSettings,
    /// Relative change below which a difference counts as noise.
    pub threshold: f64,
    /// Time the cases even where A and B give different outputs.
    pub allow_different_output: bool,
    pub tag: Option<String>,
    /// The CPU both run on (the caller pinned the process to it).
    pub cpu: usize,
    pub stop: &'a AtomicBool,
}

/// A workload of this process as one side of a comparison, in the kernel
/// or in the userspace runtime.
pub struct LocalBuild<'w> {
    workload: &'w dyn Workload,
    cpu: usize,
    runtime: Runtime,
    /// The current set-up; replaced by each fresh one.
    loaded: Option<Box<dyn LoadedWorkload + 'w>>,
}

impl<'w> LocalBuild<'w> {
    pub fn new(workload: &'w dyn Workload, cpu: usize) -> Self {
        LocalBuild { workload, cpu, runtime: Runtime::Kernel, loaded: None }
    }

    /// The same build, run in `runtime`.
    pub fn in_runtime(mut self, runtime: Runtime) -> Self {
        self.runtime = runtime;
        self
    }
}

impl Build for LocalBuild<'_> {
    fn unavailable(&mut self, s: &ScenarioInfo) -> Option<String> {
        if self.loaded.is_none() {
            // A build that cannot be set up fails the validation that follows, loudly.
            self.loaded = Some(self.workload.setup_in(self.cpu, self.runtime).ok()?);
        }
        self.loaded.as_mut()?.unavailable(s)
    }

    fn fresh(&mut self, s: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        // The old set-up goes only once the new one stands, so that the new
        // one cannot take its place in the kernel's first-fit allocators
        // (see harness::spacer): placements then rotate between A and B.
        let fresh = self.workload.setup_in(self.cpu, self.runtime)?;
        self.loaded.insert(fresh).validate(s)
    }
}

/// Where two outputs of the same packet differ, if they do.
fn output_difference(i: usize, a: &RunOutput, b: &RunOutput) -> Option<String> {
    if a.retval != b.retval {
        return Some(format!("packet {i}: A returns {}, B returns {}", a.retval, b.retval));
    }
    diff_packets(&a.packet, &b.packet).map(|d| format!("packet {i}: B's output differs from A's:\n{d}"))
}

/// Where A's and B's validations of one case differ, if they do.
pub fn differences(a: &Validation, b: &Validation) -> Option<String> {
    if a.verdict != b.verdict {
        return Some(format!("verdict: A {}, B {}", a.verdict, b.verdict));
    }
    if a.outputs.len() != b.outputs.len() {
        return Some(format!("A gave {} outputs, B {}", a.outputs.len(), b.outputs.len()));
    }
    a.outputs.iter().zip(&b.outputs).enumerate().find_map(|(i, (x, y))| output_difference(i, x, y))
}

/// Runs `plan` on builds `a` and `b`: each case validated on both and
/// compared, then timed in pairs, round after round.
pub fn run(
    plan: PairedPlan<'_>,
    a: &mut dyn Build,
    b: &mut dyn Build,
    observer: &mut dyn PairedObserver,
) -> Result<PairedRecord> {
    let capture = environment::start(plan.cpu);
    let mut cases = Vec::new();
    let mut interrupted = false;
    for (i, s) in plan.scenarios.iter().enumerate() {
        if plan.stop.load(std::sync::atomic::Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        observer.case_started(i, plan.scenarios.len(), &s.name);
        if let Some(why) = a.unavailable(s).or_else(|| b.unavailable(s)) {
            observer.case_skipped(&s.name, &why);
            continue;
        }
        let mut timing = None;
        let mut output = None;
        let mut check = |va: &Validation, vb: &Validation| -> Result<()> {
            if let Some(d) = differences(va, vb)
                && !plan.allow_different_output
            {
                bail!("A and B do not do the same: {d}\n(--allow-different-output times them anyway)");
            }
            if va.timing.label() != vb.timing.label() {
                let inline = if va.timing.inline() != vb.timing.inline() {
                    " (--body call times both with the body called)"
                } else {
                    ""
                };
                bail!(
                    "A is timed {} and B {}; their figures would not compare{inline}",
                    va.timing.label(),
                    vb.timing.label()
                );
            }
            timing = Some(va.timing.clone());
            output = Some((va.verdict.clone(), va.outcome.as_ref().and_then(|o| o.bytes)));
            Ok(())
        };
        let mut case = match paired::run(a, b, s, &plan.settings, plan.threshold, plan.stop, &mut check) {
            Ok(case) => case,
            // Ctrl-C before the case had two rounds: it is left out.
            Err(_) if plan.stop.load(std::sync::atomic::Ordering::Relaxed) => {
                interrupted = true;
                break;
            }
            Err(e) => return Err(e.context(s.name.to_string())),
        };
        case.workload = plan.workload.clone();
        case.name = s.name.to_string();
        case.facts = s.facts.clone();
        case.timing = timing.unwrap_or_default();
        if let Some((returns, bytes)) = output.filter(|(_, bytes)| bytes.is_some()) {
            (case.returns, case.bytes) = (Some(returns), bytes);
        }
        interrupted |= case.stop == "interrupted";
        observer.case_done(&case);
        cases.push(case);
    }
    let ratios: Vec<f64> = cases.iter().map(|c| c.ratio).collect();
    Ok(PairedRecord {
        schema: PAIRED_SCHEMA.into(),
        a: plan.labels.0,
        b: plan.labels.1,
        tag: plan.tag,
        environment: capture.finish(),
        threshold: plan.threshold,
        geomean_ratio: geomean(&ratios),
        cases,
        interrupted,
        guests: Vec::new(),
    })
}
