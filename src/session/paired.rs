//! A paired comparison of two builds (`bpfbench ab`): each case timed by
//! the paired engine (harness::paired) on one CPU, every round validating
//! it on A and on B and comparing their outputs first.
//!
//! A build is a workload set up in this process ([`LocalBuild`]: one of
//! your objects, or a built-in workload on a build of its BPF object), or a
//! bpfbench executable serving batches from a worker process (worker.rs).

use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use crate::harness::paired::{self, Build, CaseEnd, FailsOn, PairedSettings};
use crate::harness::{LoadedWorkload, NotRunnable, PreparedScenario, ScenarioInfo, Validation, Workload};
use crate::kernel::test_run::RunOutput;
use crate::packet::diff_packets;
use crate::record::Runtime;
use crate::record::paired::{NotCompared, PAIRED_SCHEMA, PairedCase, PairedRecord};
use crate::stats::two_sample::geomean;
use crate::system::environment;

/// What happens during a paired comparison, for the caller to show.
pub trait PairedObserver {
    fn case_started(&mut self, _index: usize, _count: usize, _name: &str) {}
    /// The cases of a suite's group (a test object's tests) are timed together from here.
    fn group_started(&mut self, _group: &str, _cases: usize) {}
    /// A case the workload cannot run here, and why (nothing was timed).
    fn case_skipped(&mut self, _name: &str, _why: &str) {}
    fn case_done(&mut self, _case: &PairedCase) {}
    /// A suite's case that is not compared (it failed on A or B, or only one has it), and why.
    fn case_not_compared(&mut self, _name: &str, _why: &str) {}
    /// Something the user should know before the figures (on stderr unless told).
    fn note(&mut self, text: &str) {
        eprintln!("bpfbench: {text}");
    }
}

/// Shows progress on stderr: one line per case as it is decided.
pub struct PairedProgress {
    /// Whether stderr is a terminal: progress on it; else only what was skipped.
    pub progress: bool,
}

impl PairedObserver for PairedProgress {
    fn case_started(&mut self, index: usize, count: usize, name: &str) {
        if self.progress {
            eprint!("[{}/{count}] {name} ... ", index + 1);
        }
    }

    fn case_skipped(&mut self, name: &str, why: &str) {
        if self.progress {
            eprintln!("N/A ({why})");
        } else {
            eprintln!("bpfbench: {name}: N/A ({why})");
        }
    }

    fn group_started(&mut self, group: &str, cases: usize) {
        if self.progress {
            eprintln!("{group}: {cases} cases, timed together (they share each round's load) ...");
        }
    }

    fn case_not_compared(&mut self, name: &str, why: &str) {
        if self.progress {
            eprintln!("not compared ({why})");
        } else {
            eprintln!("bpfbench: {name}: not compared ({why})");
        }
    }

    fn case_done(&mut self, c: &PairedCase) {
        if self.progress {
            eprintln!(
                "B/A {:.4} [{:.4}, {:.4}] {} ({} loads, {:.1} s)",
                c.ratio,
                c.ratio_ci95.0,
                c.ratio_ci95.1,
                c.verdict.as_str(),
                c.round_ratios.len(),
                c.elapsed_s
            );
        }
    }
}

/// How every case of a paired comparison is sampled and judged, from the
/// command line to the plan.
#[derive(Debug, Clone)]
pub struct PairedRules {
    pub settings: PairedSettings,
    /// Relative change below which a difference counts as noise.
    pub threshold: f64,
    /// Time the cases even where A and B give different outputs.
    pub allow_different_output: bool,
}

/// Everything a paired comparison does, decided before it starts.
pub struct PairedPlan<'a> {
    pub workload: String,
    /// (A, B) as the user named them.
    pub labels: (String, String),
    pub scenarios: Vec<ScenarioInfo>,
    pub rules: PairedRules,
    pub tag: Option<String>,
    /// The CPU both run on (the caller pinned the process to it).
    pub cpu: usize,
    pub stop: &'a AtomicBool,
    /// A and B are two builds of a suite (a project's tests, a corpus):
    /// each group of cases shares a load per round (a test object's load
    /// and replay take seconds), and a case that fails on either side, or
    /// is only one's, is recorded as not compared while the others go on.
    pub suite: bool,
    /// Cases left out before any was timed, and why (a suite's cases only
    /// one build has).
    pub left_out: Vec<NotCompared>,
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

    fn again(&mut self, s: &ScenarioInfo) -> Result<(Validation, Box<dyn PreparedScenario + '_>)> {
        if self.loaded.is_none() {
            return self.fresh(s);
        }
        self.loaded.as_mut().expect("set up").validate(s)
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

/// The groups `plan` times together: in a suite, consecutive cases of one
/// group share each round's load; otherwise each case is its own.
fn groups(plan: &PairedPlan<'_>) -> Vec<std::ops::Range<usize>> {
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, s) in plan.scenarios.iter().enumerate() {
        match groups.last_mut() {
            Some(g) if plan.suite && plan.scenarios[g.start].group == s.group => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    groups
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
    let mut not_compared = plan.left_out.clone();
    let mut interrupted = false;
    let count = plan.scenarios.len();
    let stopped = || plan.stop.load(std::sync::atomic::Ordering::Relaxed);
    let index_of = |s: &ScenarioInfo| plan.scenarios.iter().position(|x| x.name == s.name).unwrap_or(0);
    for range in groups(&plan) {
        if stopped() {
            interrupted = true;
            break;
        }
        let mut group = Vec::new();
        for (i, s) in plan.scenarios[range.clone()].iter().enumerate() {
            match a.unavailable(s).or_else(|| b.unavailable(s)) {
                Some(why) => {
                    observer.case_started(range.start + i, count, &s.name);
                    observer.case_skipped(&s.name, &why);
                }
                None => group.push(s.clone()),
            }
        }
        // A case of its own is announced before it is timed; a group's
        // cases, which are timed together, as each is decided.
        match group.as_slice() {
            [] => continue,
            [s] => observer.case_started(index_of(s), count, &s.name),
            [first, ..] => observer.group_started(&first.group, group.len()),
        }
        // Per case: how it was timed, and what A's program did.
        let mut seen: Vec<Option<(crate::record::Timing, String, Option<crate::record::PacketBytes>)>> =
            vec![None; group.len()];
        let mut check = |i: usize, va: &Validation, vb: &Validation| -> Result<()> {
            // A suite's test judges each build's output by its own CHECK (a
            // SNAT port is drawn afresh by every load): the builds must give
            // the same verdict, not the same bytes.
            let differ = match plan.suite {
                true => (va.verdict != vb.verdict).then(|| format!("verdict: A {}, B {}", va.verdict, vb.verdict)),
                false => differences(va, vb),
            };
            if let Some(d) = differ
                && !plan.rules.allow_different_output
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
            seen[i] = Some((va.timing.clone(), va.verdict.clone(), va.outcome.as_ref().and_then(|o| o.bytes)));
            Ok(())
        };
        let ends = paired::run(a, b, &group, &plan.rules.settings, plan.rules.threshold, plan.stop, &mut check);
        for ((s, end), seen) in group.iter().zip(ends).zip(seen) {
            let announce = |observer: &mut dyn PairedObserver| {
                if group.len() > 1 {
                    observer.case_started(index_of(s), count, &s.name);
                }
            };
            let mut case = match end {
                CaseEnd::Timed(case) => *case,
                // Ctrl-C before the case had two rounds: it is left out.
                CaseEnd::Interrupted => {
                    interrupted = true;
                    continue;
                }
                CaseEnd::Failed(_) if stopped() => {
                    interrupted = true;
                    continue;
                }
                // Not timed on either build (no steady state to time): N/A, as in a run.
                CaseEnd::Failed(e)
                    if plan.suite
                        && e.downcast_ref::<FailsOn>() == Some(&FailsOn::Both)
                        && e.downcast_ref::<NotRunnable>().is_some() =>
                {
                    announce(observer);
                    let why = e.downcast_ref::<NotRunnable>().map(|n| n.0.clone()).unwrap_or_default();
                    observer.case_skipped(&s.name, &why);
                    continue;
                }
                CaseEnd::Failed(e) if plan.suite => {
                    // One line: an output's difference spans several.
                    let why = crate::record::error_line(&e)
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .collect::<Vec<_>>()
                        .join("; ");
                    announce(observer);
                    observer.case_not_compared(&s.name, &why);
                    let fails_on_b_only = e.downcast_ref::<FailsOn>() == Some(&FailsOn::B);
                    not_compared.push(NotCompared { name: s.name.to_string(), why, fails_on_b_only });
                    continue;
                }
                CaseEnd::Failed(e) => return Err(e.context(s.name.to_string())),
            };
            case.workload = plan.workload.clone();
            case.name = s.name.to_string();
            case.facts = s.facts.clone();
            if let Some((timing, returns, bytes)) = seen {
                case.timing = timing;
                if bytes.is_some() {
                    (case.returns, case.bytes) = (Some(returns), bytes);
                }
            }
            interrupted |= case.stop == "interrupted";
            announce(observer);
            observer.case_done(&case);
            cases.push(case);
        }
    }
    let ratios: Vec<f64> = cases.iter().map(|c| c.ratio).collect();
    Ok(PairedRecord {
        schema: PAIRED_SCHEMA.into(),
        a: plan.labels.0,
        b: plan.labels.1,
        tag: plan.tag,
        environment: capture.finish(),
        threshold: plan.rules.threshold,
        geomean_ratio: geomean(&ratios),
        cases,
        not_compared,
        suite: plan.suite,
        interrupted,
        guests: Vec::new(),
    })
}
