//! A benchmark session: one workload set up once, its selected scenarios
//! measured in rounds, each round stored, and the gate applied against
//! reference runs (re-measuring suspects on the same loaded programs).
//! What happens along the way goes to an [`Observer`]; the binary renders.

pub mod builds;
pub mod cleanup;
pub mod kernel_run;
pub mod options;
pub mod output;
pub mod paired;
pub mod paired_request;
pub mod setting_build;
pub mod stored;
pub mod vm;
pub mod worker;

use anyhow::{Result, bail};

use crate::compare::{Gate, GateDecision, RunNoise, compare_runs, run_noise_from_history};
use crate::harness::runner::{Pending, Runner};
use crate::harness::{LoadedWorkload, ScenarioInfo, Workload, groups};
use crate::history::History;
use crate::record::{BenchmarkId, ComparisonRecord, Metric, RunRecord, Runtime, Sampling, ScenarioRecord, schema};
use crate::system::{self, environment, interrupt};

pub use options::{PairedArgs, RunArgs, RuntimeChoice};

/// What happens during a session, for the caller to show.
pub trait Observer {
    fn round_started(&mut self, _round: u32, _rounds: u32) {}
    fn scenario_started(&mut self, _index: usize, _count: usize, _name: &str) {}
    /// Sweep `sweep` (from 0) of `sweeps` over the scenarios begins.
    fn sweep_started(&mut self, _sweep: u32, _sweeps: u32) {}
    fn stored(&mut self, _id: i64, _history: &History) {}
    /// The last round is measured (shown before the gate re-measures).
    fn measured(&mut self, _run: &RunRecord) -> Result<()> {
        Ok(())
    }
    /// A comparison against the reference: the first, then one per re-measurement.
    fn compared(&mut self, _cmp: &ComparisonRecord, _remeasurement: Option<u32>) {}
}

/// Runs stored earlier to compare the session's rounds against.
pub struct Reference {
    /// How they were named ("tag main (5 runs)").
    pub label: String,
    /// Newest first.
    pub runs: Vec<RunRecord>,
}

impl Reference {
    /// The newest `count` runs stored with `tag` on this machine's testbed
    /// (a shared history holds other machines' runs of the tag too, which
    /// are no reference for this one's speed), or before testbeds.
    pub fn tagged(history: &History, tag: &str, count: usize) -> Result<Reference> {
        let testbed = environment::testbed();
        let ids = history.runs_with_tag_on_testbed(tag, count, &testbed.id)?;
        if ids.is_empty() {
            bail!(
                "no stored run has tag '{tag}' on this testbed ({}) in {}; run once here with --tag {tag} first",
                testbed.name,
                history.location()
            );
        }
        let label = format!("tag {tag} ({} run{})", ids.len(), if ids.len() == 1 { "" } else { "s" });
        Ok(Reference { label, runs: ids.iter().map(|&id| history.load(id)).collect::<Result<Vec<_>>>()? })
    }
}

/// Everything a session does, decided before it starts.
pub struct Plan<'a> {
    pub workload: &'a dyn Workload,
    pub scenarios: Vec<ScenarioInfo>,
    pub sampling: Sampling,
    /// The CPU to run on (default: the last allowed one).
    pub cpu: Option<usize>,
    /// Where the programs run; each scenario runs in each, in this order.
    pub runtimes: Vec<Runtime>,
    pub metric: Metric,
    /// What instruction counts keep beyond their totals (`--profile`).
    pub profile: crate::harness::runner::Profile,
    pub rounds: u32,
    pub tag: Option<String>,
    /// The history: where run-to-run noise is looked up for the comparison.
    pub history: Option<&'a mut History>,
    /// Store every round in the history.
    pub store: bool,
    pub reference: Option<Reference>,
    pub gate: Gate,
    /// Re-measurements a suspected regression must survive.
    pub confirm: u32,
    pub progress: bool,
}

impl<'a> Plan<'a> {
    /// One round of `scenarios` of `workload`, timed in the kernel with the
    /// default sampling on the default CPU, stored nowhere and compared with
    /// nothing; set the other fields with `Plan { field, ..Plan::new(w, s) }`.
    pub fn new(workload: &'a dyn Workload, scenarios: Vec<ScenarioInfo>) -> Plan<'a> {
        Plan {
            workload,
            scenarios,
            sampling: Sampling::default(),
            cpu: None,
            runtimes: vec![Runtime::Kernel],
            metric: Metric::Time,
            profile: crate::harness::runner::Profile::Off,
            rounds: 1,
            tag: None,
            history: None,
            store: false,
            reference: None,
            gate: Gate::default(),
            confirm: 0,
            progress: false,
        }
    }
}

/// What a session produced.
pub struct Outcome {
    /// Every round, newest first (the order comparisons take).
    pub rounds: Vec<RunRecord>,
    /// The comparison against the reference, and the gate's decision on it.
    pub gate: Option<(ComparisonRecord, GateDecision)>,
}

impl Outcome {
    /// The last round measured.
    pub fn last(&self) -> &RunRecord {
        &self.rounds[0]
    }
}

/// Which of a workload's scenarios `run` and `ab` take (all when neither is given).
#[derive(Debug, clap::Args, Clone)]
pub struct Selection {
    /// Only this scenario (repeatable).
    #[arg(long = "scenario", short = 's')]
    pub scenarios: Vec<String>,
    /// Only this group of scenarios (repeatable).
    #[arg(long = "group", short = 'g')]
    pub groups: Vec<String>,
}

/// The scenarios named by `names` or `group_names` (all when neither is given).
pub fn select(w: &dyn Workload, names: &[String], group_names: &[String]) -> Result<Vec<ScenarioInfo>> {
    select_from(w.name(), w.scenarios(), names, group_names)
}

/// [`select`] over the scenarios `all` of the workload called `workload`.
pub fn select_from(
    workload: &str,
    all: &[ScenarioInfo],
    names: &[String],
    group_names: &[String],
) -> Result<Vec<ScenarioInfo>> {
    for name in names {
        if !all.iter().any(|s| s.name == name.as_str()) {
            let valid: Vec<&str> = all.iter().map(|s| s.name.as_ref()).collect();
            bail!("unknown scenario '{name}' for {workload}; valid scenarios: {}", valid.join(", "));
        }
    }
    let gs = groups(all);
    for g in group_names {
        if !gs.iter().any(|x| x.eq_ignore_ascii_case(g)) {
            let valid: Vec<String> = gs.iter().map(|g| format!("'{g}'")).collect();
            bail!("unknown group '{g}' for {workload}; valid groups: {}", valid.join(", "));
        }
    }
    Ok(all
        .iter()
        .filter(|s| {
            (names.is_empty() && group_names.is_empty())
                || names.iter().any(|n| *n == s.name)
                || group_names.iter().any(|g| g.eq_ignore_ascii_case(&s.group))
        })
        .cloned()
        .collect())
}

/// The workload set up in one runtime, with its runner (each runtime has
/// its own loop overhead).
struct Side<'w> {
    runtime: Runtime,
    loaded: Box<dyn LoadedWorkload + 'w>,
    runner: Runner,
}

/// The parts of a session that measure: the loaded workload, per runtime.
struct Measurer<'w> {
    name: &'w str,
    sides: Vec<Side<'w>>,
    cpu: usize,
}

impl Measurer<'_> {
    /// Validates and times each scenario once, in sweeps: each sweep
    /// visits every scenario in turn and takes its share of the samples,
    /// so a slow phase of the machine falls on all of them alike. What
    /// Ctrl-C cut short keeps the samples taken so far.
    fn round(
        &mut self,
        scenarios: &[ScenarioInfo],
        tag: &Option<String>,
        sampling: &Sampling,
        observer: &mut dyn Observer,
    ) -> RunRecord {
        let capture = environment::start(self.cpu);
        let sweeps = sampling.effective_sweeps();
        let mut pending: Vec<Vec<Option<Pending>>> =
            self.sides.iter().map(|_| scenarios.iter().map(|_| None).collect()).collect();
        'sweeps: for sweep in 0..sweeps {
            observer.sweep_started(sweep, sweeps);
            if sweep > 0 {
                for (side, slots) in self.sides.iter_mut().zip(&mut pending) {
                    if let Err(e) = side.loaded.new_sweep() {
                        let why = format!(
                            "loading the timed programs again for sweep {}: {reason}",
                            sweep + 1,
                            reason = crate::record::error_line(&e)
                        );
                        slots.iter_mut().flatten().for_each(|p| p.fail(&why));
                    }
                }
            }
            for (i, s) in scenarios.iter().enumerate() {
                if interrupt::interrupted() {
                    break 'sweeps;
                }
                if sweep == 0 {
                    observer.scenario_started(i, scenarios.len(), &s.name);
                }
                for (side, slots) in self.sides.iter_mut().zip(&mut pending) {
                    let w = side.loaded.as_mut();
                    if !side.runner.sweep(self.name, side.runtime, w, s, sweep, &mut slots[i]) {
                        break 'sweeps;
                    }
                }
            }
        }
        let mut results: Vec<ScenarioRecord> = Vec::new();
        for i in 0..scenarios.len() {
            for (side, slots) in self.sides.iter().zip(&mut pending) {
                if let Some(p) = slots[i].take() {
                    results.push(side.runner.conclude(p));
                }
            }
        }
        RunRecord {
            schema: schema(),
            tag: tag.clone(),
            environment: capture.finish(),
            options: sampling.clone(),
            results,
            interrupted: interrupt::interrupted(),
        }
    }
}

/// Runs `plan`: prepares the process, sets the workload up, measures the
/// rounds (storing each one that was not interrupted), then compares
/// against the reference and lets the gate re-measure suspects.
pub fn run(plan: Plan<'_>, observer: &mut dyn Observer) -> Result<Outcome> {
    let Plan {
        workload,
        scenarios,
        sampling,
        cpu,
        runtimes,
        metric,
        profile,
        rounds,
        tag,
        mut history,
        store,
        reference,
        gate,
        confirm,
        progress,
    } = plan;
    let cpu = system::prepare_for_timing(cpu)?;
    if metric == crate::record::Metric::KernelInsns {
        // The same buckets on every boot and kernel (kernel::hash_seed).
        crate::kernel::hash_seed::use_zero_seed();
    }
    let mut sides = Vec::new();
    for runtime in runtimes {
        let loaded = workload.setup_in(cpu, runtime)?;
        let runner =
            Runner::new(sampling.clone(), progress, interrupt::flag()).with_metric(metric).with_profile(profile);
        sides.push(Side { runtime, loaded, runner });
    }
    let mut m = Measurer { name: workload.name(), sides, cpu };

    let mut done: Vec<RunRecord> = Vec::new();
    for round in 1..=rounds {
        observer.round_started(round, rounds);
        let record = m.round(&scenarios, &tag, &sampling, observer);
        if store
            && !record.interrupted
            && let Some(h) = history.as_deref_mut()
        {
            let id = h.store(&record)?;
            observer.stored(id, h);
        }
        done.insert(0, record);
        if interrupt::interrupted() {
            break;
        }
    }
    observer.measured(&done[0])?;
    let mut outcome = Outcome { rounds: done, gate: None };
    let Some(reference) = reference.filter(|_| !interrupt::interrupted()) else {
        return Ok(outcome);
    };

    let noise: RunNoise = match (history.as_deref(), reference.runs.first()) {
        (Some(h), Some(newest)) => run_noise_from_history(h, newest)?,
        _ => RunNoise::new(),
    };
    let compare = |runs: &[RunRecord], label: &str| {
        compare_runs(&reference.runs, &reference.label, runs, label, gate.threshold(), &noise)
    };
    let label = match outcome.rounds.len() {
        1 => "this run".to_string(),
        n => format!("this run ({n} rounds)"),
    };
    let first = compare(&outcome.rounds, &label);
    observer.compared(&first, None);
    let newest = &outcome.rounds[0];
    let decision = gate.decide(&first, confirm, |suspects, number| {
        let rerun: Vec<ScenarioInfo> = scenarios
            .iter()
            .filter(|s| {
                suspects.iter().any(|b| BenchmarkId::parse(b).is_some_and(|id| id.is_scenario(m.name, &s.name)))
            })
            .cloned()
            .collect();
        let again = m.round(&rerun, &newest.tag, &sampling, &mut Quiet);
        let cmp = compare(std::slice::from_ref(&again), &format!("re-measurement {number}"));
        observer.compared(&cmp, Some(number));
        Ok(cmp)
    })?;
    outcome.gate = Some((first, decision));
    Ok(outcome)
}

/// An observer that shows nothing (re-measurements report through `compared`).
pub struct Quiet;

impl Observer for Quiet {}
