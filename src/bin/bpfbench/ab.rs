//! `bpfbench ab A B`: a paired comparison of two builds, and the worker a
//! bpfbench executable runs when it is one of the two builds.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use bpfbench::compare::{RunNoise, compare_runs};
use bpfbench::harness::{ScenarioInfo, Workload};
use bpfbench::history::History;
use bpfbench::record::paired::{PairedCase, PairedRecord};
use bpfbench::record::{Metric, RunRecord, Runtime};
use bpfbench::report::ab_table;
use bpfbench::session::ab::{AbObserver, AbPlan, LocalBuild};
use bpfbench::session::worker::{self, Worker};
use bpfbench::session::{self, builds};
use bpfbench::stats::two_sample::Verdict;
use bpfbench::system::{self, interrupt};
use bpfbench::workloads;

use crate::cli::{AbArgs, CompareFormat, RunArgs, is_own_program};
use crate::output::{emit, print_comparison};

/// What A and B are.
enum Builds {
    /// Two of the user's BPF objects.
    Objects,
    /// Two builds of a built-in workload's BPF object.
    WorkloadObjects(String),
    /// Two bpfbench executables.
    Executables,
}

fn builds_of(args: &AbArgs) -> Result<Builds> {
    for p in [&args.a, &args.b] {
        if !p.is_file() {
            bail!("{} is not a file; give two BPF objects or two bpfbench executables", p.display());
        }
    }
    let (a, b) = (is_own_program(&args.a), is_own_program(&args.b));
    if a != b {
        let (obj, other) = if a { (&args.a, &args.b) } else { (&args.b, &args.a) };
        bail!(
            "{} is a BPF object (or spec file) but {} is not; A and B must be of one kind",
            obj.display(),
            other.display()
        );
    }
    Ok(match (&args.workload, a) {
        (Some(w), true) => Builds::WorkloadObjects(w.clone()),
        (None, true) => Builds::Objects,
        (Some(_), false) => bail!(
            "--workload takes two BPF objects built from that workload's source; for two bpfbench executables name the workload after --"
        ),
        (None, false) => Builds::Executables,
    })
}

/// Shows progress on stderr: one line per case as it is decided.
struct Terminal {
    progress: bool,
}

impl AbObserver for Terminal {
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

/// Loads `b` after checking it offers every scenario of `selected`.
fn check_same_scenarios(selected: &[ScenarioInfo], b_name: &str, b_scenarios: &[ScenarioInfo]) -> Result<()> {
    for s in selected {
        if !b_scenarios.iter().any(|x| x.name == s.name) {
            let have: Vec<&str> = b_scenarios.iter().map(|x| x.name.as_ref()).collect();
            bail!(
                "B ({b_name}) has no case '{}' (it has: {}); A and B must offer the same cases",
                s.name,
                have.join(", ")
            );
        }
    }
    Ok(())
}

/// `ab --workload W kernel user`: A and B name runtimes, not files.
fn runtimes_of(args: &AbArgs) -> Result<Option<(Runtime, Runtime)>> {
    use clap::ValueEnum;
    let word = |p: &Path| if p.exists() { None } else { p.to_str().and_then(|s| Runtime::from_str(s, true).ok()) };
    match (word(&args.a), word(&args.b)) {
        (Some(a), Some(b)) if args.workload.is_some() => {
            if a == b {
                bail!("A and B are both the {} runtime; compare kernel with user", a.label());
            }
            if args.metric == Metric::Insns {
                bail!("--metric insns counts in the userspace runtime only; compare kernel with user by time");
            }
            Ok(Some((a, b)))
        }
        (Some(_), Some(_)) => bail!("to compare runtimes name the workload: bpfbench ab --workload xdp-lb kernel user"),
        _ => Ok(None),
    }
}

pub fn ab(args: &AbArgs, matches: &clap::ArgMatches) -> Result<ExitCode> {
    if args.whole_runs {
        return whole_runs(args);
    }
    if let Some(runtimes) = runtimes_of(args)? {
        return runtime_pair(args, matches, runtimes);
    }
    let builds = builds_of(args)?;
    if matches!(builds, Builds::Executables) {
        for reserved in ["--cpu", "--format", "--output", "--repeat", "--compare-to"] {
            if args.run_args.iter().any(|x| x == reserved) {
                bail!("{reserved} is set by 'bpfbench ab' itself; leave it out of the run arguments");
            }
        }
    } else if !args.run_args.is_empty() {
        bail!("arguments after -- are for two bpfbench executables; with BPF objects give the options before A and B");
    }
    if args.metric == Metric::Insns {
        return count_both(args, matches, &builds);
    }
    let mut history = if args.store.no_store { None } else { Some(History::open(&args.store.db.path())?) };
    let cpu = system::prepare_for_timing(args.cpu)?;
    let labels = (args.a.display().to_string(), args.b.display().to_string());
    let plan =
        |workload: &str, scenarios: Vec<ScenarioInfo>| paired_plan(args, workload, labels.clone(), scenarios, cpu);
    let mut observer = Terminal { progress: std::io::stderr().is_terminal() };
    let record = match builds {
        Builds::Objects | Builds::WorkloadObjects(_) => {
            let build = |p: &Path| -> Result<Box<dyn Workload>> {
                match &builds {
                    Builds::WorkloadObjects(name) => workloads::build_with_object(name, matches, p),
                    _ => workloads::build(&p.display().to_string(), matches),
                }
            };
            let (wa, wb) = (build(&args.a)?, build(&args.b)?);
            let scenarios = session::select(wa.as_ref(), &args.select.scenarios, &args.select.groups)?;
            check_same_scenarios(&scenarios, wb.name(), wb.scenarios())?;
            let (mut la, mut lb) = (LocalBuild::new(wa.as_ref(), cpu), LocalBuild::new(wb.as_ref(), cpu));
            session::ab::run(plan(wa.name(), scenarios), &mut la, &mut lb, &mut observer)?
        }
        Builds::Executables => {
            let mut run_args = args.run_args.clone();
            run_args.extend(["--cpu".to_string(), cpu.to_string()]);
            let mut a = Worker::spawn(&args.a, &run_args)?;
            let mut b = Worker::spawn(&args.b, &run_args)?;
            let scenarios =
                session::select_from(&a.workload, &a.scenarios, &args.select.scenarios, &args.select.groups)?;
            check_same_scenarios(&scenarios, &b.workload.clone(), &b.scenarios.clone())?;
            let name = a.workload.clone();
            session::ab::run(plan(&name, scenarios), &mut a, &mut b, &mut observer)?
        }
    };
    finish(args, &record, history.as_mut())
}

/// The paired comparison `args` ask for, of `scenarios` of `workload`.
fn paired_plan(
    args: &AbArgs,
    workload: &str,
    labels: (String, String),
    scenarios: Vec<ScenarioInfo>,
    cpu: usize,
) -> AbPlan<'static> {
    AbPlan {
        workload: workload.to_string(),
        labels,
        scenarios,
        settings: args.paired.clone(),
        threshold: args.gate.threshold(),
        allow_different_output: args.allow_different_output,
        tag: args.store.tag.clone(),
        cpu,
        stop: interrupt::flag(),
    }
}

/// `ab --workload W kernel user`: the workload's own object in the kernel
/// (A) and in the userspace runtime's JIT (B), timed in alternation as any
/// two builds are, so B/A is the userspace/kernel ratio with its interval.
fn runtime_pair(args: &AbArgs, matches: &clap::ArgMatches, (ra, rb): (Runtime, Runtime)) -> Result<ExitCode> {
    let name = args.workload.as_deref().expect("runtimes_of checked");
    let w = workloads::build(name, matches)?;
    let scenarios = session::select(w.as_ref(), &args.select.scenarios, &args.select.groups)?;
    let mut history = if args.store.no_store { None } else { Some(History::open(&args.store.db.path())?) };
    let cpu = system::prepare_for_timing(args.cpu)?;
    let plan = paired_plan(args, w.name(), (ra.label().to_string(), rb.label().to_string()), scenarios, cpu);
    let mut observer = Terminal { progress: std::io::stderr().is_terminal() };
    let (mut a, mut b) =
        (LocalBuild::new(w.as_ref(), cpu).in_runtime(ra), LocalBuild::new(w.as_ref(), cpu).in_runtime(rb));
    let record = session::ab::run(plan, &mut a, &mut b, &mut observer)?;
    finish(args, &record, history.as_mut())
}

/// `ab --metric insns`: A's and B's instructions per packet, counted in
/// the userspace runtime after the same validation. Counts are exact, so
/// one count a side is the comparison: no pairing, no statistics.
fn count_both(args: &AbArgs, matches: &clap::ArgMatches, builds: &Builds) -> Result<ExitCode> {
    let build = |p: &Path| -> Result<Box<dyn Workload>> {
        match builds {
            Builds::WorkloadObjects(name) => workloads::build_with_object(name, matches, p),
            Builds::Objects => workloads::build(&p.display().to_string(), matches),
            Builds::Executables => bail!(
                "--metric insns compares two BPF objects; for two bpfbench executables run each with --metric insns and use 'bpfbench compare'"
            ),
        }
    };
    let (wa, wb) = (build(&args.a)?, build(&args.b)?);
    let scenarios = session::select(wa.as_ref(), &args.select.scenarios, &args.select.groups)?;
    check_same_scenarios(&scenarios, wb.name(), wb.scenarios())?;
    let count = |w: &dyn Workload| -> Result<RunRecord> {
        let plan = session::Plan {
            workload: w,
            scenarios: scenarios.clone(),
            sampling: Default::default(),
            cpu: args.cpu,
            runtimes: vec![Runtime::User],
            metric: Metric::Insns,
            // Lines, so that the comparison can say which changed.
            profile: bpfbench::harness::runner::Profile::Lines,
            rounds: 1,
            tag: None,
            history: None,
            store: false,
            reference: None,
            gate: Default::default(),
            confirm: 0,
            progress: false,
        };
        let outcome = session::run(plan, &mut session::Quiet)?;
        let run = outcome.rounds.into_iter().next().expect("one round");
        if let Some(r) = run.results.iter().find(|r| r.failed()) {
            bail!("{}: {}", r.benchmark_name(), r.error.as_deref().unwrap_or("not counted"));
        }
        Ok(run)
    };
    let (ra, rb) = (count(wa.as_ref())?, count(wb.as_ref())?);
    let cmp = compare_runs(
        &[ra],
        &args.a.display().to_string(),
        &[rb],
        &args.b.display().to_string(),
        args.gate.threshold(),
        &RunNoise::new(),
    );
    if cmp.instructions.is_empty() {
        bail!("A and B counted no scenario in common");
    }
    print_comparison(&cmp, comparison_format(args.format, "--metric insns")?, &args.gate)
}

/// The form of a run-against-run comparison `ab` prints in `mode`
/// (`--metric insns`, `--whole-runs`): a table or JSON.
fn comparison_format(format: ab_table::AbFormat, mode: &str) -> Result<CompareFormat> {
    match format {
        ab_table::AbFormat::Table => Ok(CompareFormat::Table),
        ab_table::AbFormat::Json => Ok(CompareFormat::Json),
        other => bail!("{mode} prints a table or JSON, not {other:?}"),
    }
}

/// Shows, stores and gates a finished comparison.
fn finish(args: &AbArgs, record: &PairedRecord, history: Option<&mut History>) -> Result<ExitCode> {
    if record.cases.is_empty() {
        if record.interrupted {
            eprintln!("bpfbench: interrupted before any case was compared");
            return Ok(ExitCode::from(130));
        }
        bail!("no case was compared");
    }
    emit(&ab_table::render(record, args.format)?, args.output.as_deref())?;
    if record.interrupted {
        return Ok(ExitCode::from(130));
    }
    if let Some(h) = history {
        let id = h.store_paired(record)?;
        eprintln!("bpfbench: stored as paired comparison {id} in {} ('bpfbench show --ab {id}')", h.path().display());
    }
    Ok(gate(record, args.gate.fail_on_regression))
}

/// Exit 1 when a case is confidently slower than `limit_pct` allows.
pub fn gate(record: &PairedRecord, limit_pct: Option<f64>) -> ExitCode {
    let Some(pct) = limit_pct else { return ExitCode::SUCCESS };
    let regressions: Vec<&PairedCase> =
        record.cases.iter().filter(|c| c.verdict == Verdict::Slower && c.ratio_ci95.0 > 1.0 + pct / 100.0).collect();
    for c in &regressions {
        eprintln!("bpfbench: {}", ab_table::regression_line(c, pct));
    }
    if regressions.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// The older mode for two executables: whole runs interleaved, per-run medians compared.
fn whole_runs(args: &AbArgs) -> Result<ExitCode> {
    let rounds = args.rounds as usize;
    let (a, b) = (&args.a, &args.b);
    let (runs_a, runs_b) = builds::interleave(a, b, rounds, &args.run_args, |round, binary| {
        eprintln!("bpfbench ab: round {round} of {rounds}: {}", binary.display());
    })?;
    let cmp = compare_runs(
        &runs_a,
        &format!("{} ({rounds} runs)", a.display()),
        &runs_b,
        &format!("{} ({rounds} runs, interleaved)", b.display()),
        args.gate.threshold(),
        &RunNoise::new(),
    );
    if cmp.benchmarks.is_empty() {
        bail!("the two builds measured no benchmark in common");
    }
    print_comparison(&cmp, comparison_format(args.format, "--whole-runs")?, &args.gate)
}

/// `bpfbench ab-worker RUN_ARGS`: loads the workload `run RUN_ARGS` would,
/// on the CPU given there, and serves the coordinator's requests.
pub fn serve(args: &RunArgs, matches: &clap::ArgMatches) -> Result<ExitCode> {
    let workload = workloads::build(args.workload.as_deref().unwrap_or(workloads::DEFAULT), matches)?;
    let scenarios = session::select(workload.as_ref(), &args.select.scenarios, &args.select.groups)?;
    let cpu = system::prepare_for_timing(args.cpu)?;
    worker::serve(workload.as_ref(), cpu, &scenarios)?;
    Ok(ExitCode::SUCCESS)
}
