//! The `bpfbench` command.

mod ab;
mod run;
mod stored;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use bpfbench::cli::{Cli, Command, RunArgs};
use bpfbench::harness;

fn loops(cpu: Option<usize>, iters: u32, samples: usize) -> Result<ExitCode> {
    let cpu = run::prepare(cpu)?;
    let costs = harness::loops::measure_loop_constructs(cpu, iters, samples)?;
    println!("Loop constructs around an empty body, {iters} iterations/batch, CPU {cpu}:");
    for c in &costs {
        println!(
            "  {:<32} median {:>6.3} ns/iter  (p90 {:.3}, CV {:.2}%, n={})",
            c.construct,
            c.summary.median,
            c.summary.p90,
            c.summary.cv * 100.0,
            c.summary.n
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of stdout goes away (`| head`).
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    let result = match cli.command {
        None => run::run(RunArgs::default_suite()),
        Some(Command::List { workload }) => run::list(workload).map(|_| ExitCode::SUCCESS),
        Some(Command::Run(args)) => run::run(args),
        Some(Command::Loops { cpu, iters, samples }) => loops(cpu, iters, samples),
        Some(Command::History { scenario, limit, db }) => stored::history(scenario.as_deref(), limit, &db.path()),
        Some(Command::Show { run, format, output, verbose, db }) => stored::show(&run, format, output.as_deref(), verbose, &db.path()),
        Some(Command::Compare { a, b, gate, format, db }) => stored::compare(&a, &b, &gate, format, &db.path()),
        Some(Command::Ab { a, b, rounds, gate, format, run_args }) => ab::ab(&a, &b, rounds as usize, &gate, format, &run_args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("bpfbench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
