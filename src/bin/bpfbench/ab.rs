//! `bpfbench ab A B -- RUN_ARGS`: interleaved runs of two builds, compared.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use bpfbench::compare::{Gate, RunNoise, compare_runs};
use bpfbench::session::builds;

use crate::cli::CompareFormat;
use crate::output::print_comparison;

pub fn ab(a: &Path, b: &Path, rounds: usize, gate: &Gate, format: CompareFormat, run_args: &[String]) -> Result<ExitCode> {
    let (runs_a, runs_b) = builds::interleave(a, b, rounds, run_args, |round, binary| {
        eprintln!("bpfbench ab: round {round} of {rounds}: {}", binary.display());
    })?;
    let cmp = compare_runs(
        &runs_a,
        &format!("{} ({rounds} runs)", a.display()),
        &runs_b,
        &format!("{} ({rounds} runs, interleaved)", b.display()),
        gate.threshold(),
        &RunNoise::new(),
    );
    if cmp.benchmarks.is_empty() {
        bail!("the two builds measured no benchmark in common");
    }
    print_comparison(&cmp, format, gate)
}
