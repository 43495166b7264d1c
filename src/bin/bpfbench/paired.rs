//! `bpfbench ab A B`: a paired comparison of two builds, and the worker a
//! bpfbench executable runs when it is one of the two builds.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Result, bail};

use bpfbench::history::History;
use bpfbench::record::ComparisonRecord;
use bpfbench::record::Metric;
use bpfbench::record::paired::PairedRecord;
use bpfbench::report::{check_format, render_as};
use bpfbench::session::output::paired_gate_lines;
use bpfbench::session::paired::PairedProgress;
use bpfbench::session::{self, PairedArgs, RunArgs, worker};
use bpfbench::system;
use bpfbench::workloads::{self, FromCommandLine};

use crate::output::print_comparison;

pub fn ab(args: &PairedArgs, matches: &clap::ArgMatches) -> Result<ExitCode> {
    // Counts and whole runs are run-against-run comparisons.
    if !args.metric.sampled() || args.whole_runs {
        check_format::<ComparisonRecord>(args.out.format)?;
    } else {
        check_format::<PairedRecord>(args.out.format)?;
    }
    if args.metric == Metric::KernelInsns {
        let cmp = args.compare_kernel_counts(&mut |line| eprintln!("bpfbench ab: {line}"))?;
        return print_comparison(&cmp, &args.out, &args.gate);
    }
    if args.whole_runs {
        let cmp = args.compare_whole_runs(|round, binary| {
            eprintln!("bpfbench ab: round {round} of {}: {}", args.rounds, binary.display());
        })?;
        return print_comparison(&cmp, &args.out, &args.gate);
    }
    let source = FromCommandLine(matches);
    let request = args.request(&source);
    let builds = request.builds()?;
    if args.metric == Metric::Insns {
        let cmp = request.count(&builds)?;
        return print_comparison(&cmp, &args.out, &args.gate);
    }
    let mut history = if args.store.no_store { None } else { Some(History::open(args.store.db.location())?) };
    let record = request.compare(&builds, &mut PairedProgress { progress: std::io::stderr().is_terminal() })?;
    finish(args, &record, history.as_mut())
}

/// Shows, stores and gates a finished comparison.
fn finish(args: &PairedArgs, record: &PairedRecord, history: Option<&mut History>) -> Result<ExitCode> {
    if record.cases.is_empty() {
        if record.interrupted {
            eprintln!("bpfbench: interrupted before any case was compared");
            return Ok(ExitCode::from(130));
        }
        bail!("no case was compared");
    }
    args.out.emit(&render_as(record, args.out.format)?)?;
    if record.interrupted {
        return Ok(ExitCode::from(130));
    }
    if let Some(h) = history {
        let id = h.store_paired(record)?;
        eprintln!("bpfbench: stored as paired comparison {id} in {} ('bpfbench show --ab {id}')", h.location());
    }
    Ok(gate(record, &args.gate))
}

/// Exit 1 when a case is confidently slower than --fail-on-regression allows.
pub fn gate(record: &PairedRecord, gate: &bpfbench::compare::Gate) -> ExitCode {
    let lines = paired_gate_lines(record, gate);
    lines.iter().for_each(|l| eprintln!("bpfbench: {l}"));
    if lines.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// `bpfbench ab-worker RUN_ARGS`: loads the workload `run RUN_ARGS` would,
/// on the CPU given there, and serves the coordinator's requests.
pub fn serve(args: &RunArgs, matches: &clap::ArgMatches) -> Result<ExitCode> {
    let mut workload = workloads::build(args.workload.as_deref().unwrap_or(workloads::DEFAULT), matches)?;
    workload.set_timing(args.timing_mode)?;
    let scenarios = session::select(workload.as_ref(), &args.select.scenarios, &args.select.groups)?;
    let cpu = system::prepare_for_timing(args.cpu)?;
    worker::serve(workload.as_ref(), cpu, &scenarios)?;
    Ok(ExitCode::SUCCESS)
}
