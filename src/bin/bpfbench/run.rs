//! `bpfbench run` and `list`: turn the command line into a session plan,
//! run it, and show what it produced.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::Result;

use bpfbench::history::History;
use bpfbench::record::{ComparisonRecord, RunRecord};
use bpfbench::report::{self, compare_table};
use bpfbench::session::{self, Observer, RunArgs};
use bpfbench::{system, workloads};

use crate::output::gate_exit;

pub fn list(workload: Option<&str>) -> Result<ExitCode> {
    print!("{}", workloads::listing(workload)?);
    Ok(ExitCode::SUCCESS)
}

/// Shows a session's progress on stderr and its results where asked.
struct Terminal<'a> {
    args: &'a RunArgs,
    progress: bool,
}

impl Observer for Terminal<'_> {
    fn round_started(&mut self, round: u32, rounds: u32) {
        if rounds > 1 && self.progress {
            eprintln!("round {round} of {rounds}");
        }
    }

    fn scenario_started(&mut self, index: usize, count: usize, name: &str) {
        if self.progress {
            eprintln!("[{}/{count}] {name}", index + 1);
        }
    }

    fn sweep_started(&mut self, sweep: u32, sweeps: u32) {
        if self.progress && sweep > 0 {
            eprintln!("sweep {} of {sweeps}", sweep + 1);
        }
    }

    fn stored(&mut self, id: i64, history: &History) {
        eprintln!("bpfbench: stored as run {id} in {}", history.location());
    }

    fn measured(&mut self, run: &RunRecord) -> Result<()> {
        self.args.out.emit(&report::render(run, self.args.out.format, self.args.verbose)?)
    }

    fn compared(&mut self, cmp: &ComparisonRecord, remeasurement: Option<u32>) {
        let text = compare_table::render(cmp);
        match remeasurement {
            // Standard output stays machine-readable unless it carries the table.
            None if self.args.out.table_on_stdout() => print!("\n{text}"),
            None => eprint!("{text}"),
            Some(n) => eprint!("bpfbench: re-measurement {n} of up to {}:\n{text}", self.args.confirm),
        }
    }
}

pub fn run(args: &RunArgs, matches: &clap::ArgMatches) -> Result<ExitCode> {
    // A --metric the --runtime cannot count, or a form a run is not written in, is refused before anything is built.
    args.runtimes()?;
    bpfbench::report::check_run_format(args.out.format)?;
    let mut workload = workloads::build(args.workload.as_deref().unwrap_or(workloads::DEFAULT), matches)?;
    workload.set_timing(args.timing_mode)?;
    let scenarios = session::select(workload.as_ref(), &args.select.scenarios, &args.select.groups)?;
    system::check_privileges()?;
    // Open the history and find the reference before spending minutes measuring.
    let mut history = if args.needs_history() { Some(History::open(args.store.db.location())?) } else { None };
    let progress = std::io::stderr().is_terminal();
    let plan = args.plan(workload.as_ref(), scenarios, history.as_mut(), progress)?;
    let outcome = session::run(plan, &mut Terminal { args, progress })?;
    let last = outcome.last();
    if last.interrupted {
        return Ok(ExitCode::from(130));
    }
    let mut code = ExitCode::SUCCESS;
    if let Some((cmp, decision)) = &outcome.gate {
        code = gate_exit(decision, &args.gate, &cmp.a);
    }
    let failed = last.results.iter().filter(|r| r.failed()).count();
    if failed > 0 {
        eprintln!("bpfbench: {failed} scenario(s) failed; see above");
        return Ok(ExitCode::FAILURE);
    }
    Ok(code)
}
