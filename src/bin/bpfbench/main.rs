//! The `bpfbench` command: parses the command line and hands each command
//! to the library; what remains here is output and exit codes.

mod cli;
mod live;
mod output;
mod paired;
mod run;
mod stored;
mod traffic;

use std::process::ExitCode;

use anyhow::{Context, Result};

use bpfbench::history::Stored;
use bpfbench::record::verifier::VerifierReport;
use bpfbench::report::render_as;
use bpfbench::session::output::OutputArgs;
use bpfbench::{harness, system};
use cli::Command;

fn verifier(
    a: &std::path::Path,
    b: Option<&std::path::Path>,
    open: &bpfbench::workloads::object::VerifierArgs,
    out: &OutputArgs,
) -> Result<ExitCode> {
    bpfbench::report::check_format::<VerifierReport>(out.format)?;
    system::check_privileges()?;
    let report = open.report(&std::iter::once(a).chain(b).collect::<Vec<_>>())?;
    out.emit(&render_as(&report, out.format)?)?;
    Ok(ExitCode::SUCCESS)
}

fn loops(cpu: Option<usize>, iters: u32, samples: usize) -> Result<ExitCode> {
    let cpu = system::prepare_for_timing(cpu)?;
    let costs = harness::loops::measure_loop_constructs(cpu, iters, samples)?;
    print!("{}", bpfbench::report::loops_table::render(&costs, iters, cpu));
    Ok(ExitCode::SUCCESS)
}

/// Parses the worker's arguments as those of `run`, and serves.
fn ab_worker(run_args: Vec<String>) -> Result<ExitCode> {
    let argv = ["bpfbench", "run"].into_iter().map(String::from).chain(run_args).map(Into::into).collect();
    let cli::Parsed { cli, workload_matches } = cli::parse_from(argv);
    let Command::Run(args) = cli.command else { unreachable!("parsed as run") };
    paired::serve(&args, workload_matches.as_ref().expect("run has matches"))
}

fn fuzz_uvm(programs: u64, seed: u64, budget: u64) -> Result<ExitCode> {
    system::check_privileges()?;
    eprintln!(
        "bpfbench: fuzzing the userspace runtime with {programs} programs (seed {seed}, budget {budget} instructions each)"
    );
    let (r, names) = bpfbench::workloads::xdp_lb::fuzz_uvm(programs, seed, budget)?;
    print!("{}", bpfbench::report::fuzz_table::render(&r, &names));
    r.panics.iter().for_each(|(n, msg)| eprintln!("bpfbench: program {n} (seed {seed}) panicked: {msg}"));
    Ok(if r.panics.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn features() -> Result<ExitCode> {
    system::check_privileges()?;
    bpfbench::kernel::libbpf_log::capture();
    let caps = bpfbench::kernel::features::probe().context("this process may not load BPF programs")?;
    print!("{}", bpfbench::report::features_table::render(&system::kernel_release(), caps));
    Ok(ExitCode::SUCCESS)
}

/// `bpfbench vm`: the runs on each kernel, as a matrix.
fn vm(args: &bpfbench::session::vm::VmArgs) -> Result<ExitCode> {
    bpfbench::report::check_format::<bpfbench::record::matrix::MatrixRecord>(args.out.format)?;
    let matrix = args.run(&mut |line| eprintln!("bpfbench vm: {line}"))?;
    args.out.emit(&args.render(&matrix)?)?;
    Ok(ExitCode::from(matrix.exit_code()))
}

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of stdout goes away (`| head`).
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli::Parsed { cli, workload_matches } = cli::parse();
    bpfbench::harness::activity::set_reporter(|line| eprintln!("bpfbench: {line}"));
    let result = match cli.command {
        Command::List { workload } => run::list(workload.as_deref()),
        Command::Run(args) => run::run(&args, workload_matches.as_ref().expect("run has matches")),
        Command::Loops { cpu, iters, samples } => loops(cpu, iters, samples),
        Command::Verifier { a, b, open, out } => verifier(&a, b.as_deref(), &open, &out),
        Command::History { scenario, limit, ab, live, select, db } => {
            stored::history(Stored::chosen(ab, live), scenario.as_deref(), limit, &select, &db.location())
        }
        Command::Show { run, ab, live, out, verbose, db } => {
            stored::show(Stored::chosen(ab, live), &run, &out, verbose, &db.location())
        }
        Command::Changes { scenario, select, alpha, min_runs, out, db } => {
            stored::changes(scenario.as_deref(), &select, (alpha, min_runs), &out, &db.location())
        }
        Command::Import { source, db } => stored::import(&bpfbench::history::Location::parse(&source), &db.location()),
        Command::Report { output, scenario, select, db } => {
            stored::report(&output, scenario.as_deref(), &select, &db.location())
        }
        Command::Compare { a, b, gate, tags, select, out, db } => {
            stored::compare((&a, &b), &gate, tags.tag_runs as usize, &select, &out, &db.location())
        }
        Command::Ab(args) => paired::ab(&args, workload_matches.as_ref().expect("ab has matches")),
        Command::AbWorker { run_args } => ab_worker(run_args),
        Command::Gen { options, out } => traffic::generate(&options, &out),
        Command::Live(args) => live::live(&args),
        Command::Cleanup => live::cleanup(),
        Command::Features => features(),
        Command::Vm(args) => vm(&args),
        Command::FuzzUvm { programs, seed, budget } => fuzz_uvm(programs, seed, budget),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bpfbench: error: {}", bpfbench::record::error_line(&e));
            ExitCode::FAILURE
        }
    }
}
