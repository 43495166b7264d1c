//! `bpfbench ab A B -- RUN_ARGS`: interleaved runs of two builds.
//!
//! Runs of one build minutes apart can differ by 10% or more on a shared
//! machine (measured on this project's VM: phases of ~146 and ~165 ns/op for
//! the same code, lasting minutes), which no within-run statistic can see.
//! Alternating the builds puts both under the same phases; comparing the
//! runs' medians then measures the change, not the machine.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, Result, bail};

use bpfbench::cli::{CompareFormat, GateArgs};
use bpfbench::compare::compare_runs;
use bpfbench::harness::system;
use bpfbench::report::model::{RunReport, parse_report};

use crate::stored::print_comparison;

/// Runs `binary run RUN_ARGS --format json --no-store` and reads its report.
fn one_run(binary: &Path, run_args: &[String]) -> Result<RunReport> {
    let out = Command::new(binary)
        .arg("run")
        .args(run_args)
        .args(["--format", "json", "--no-store"])
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !out.status.success() {
        bail!("{} run failed ({}); see its messages above", binary.display(), out.status);
    }
    let text = String::from_utf8(out.stdout).context("the run's output is not UTF-8")?;
    parse_report(&text).with_context(|| format!("the output of {}", binary.display()))
}

pub fn ab(a: &Path, b: &Path, rounds: usize, gate: &GateArgs, format: CompareFormat, run_args: &[String]) -> Result<ExitCode> {
    for p in [a, b] {
        if !p.is_file() {
            bail!("{} is not a file; give the paths of two bpfbench binaries", p.display());
        }
    }
    for forbidden in ["--format", "--output", "--compare-to", "--repeat"] {
        if run_args.iter().any(|x| x == forbidden) {
            bail!("{forbidden} is set by 'bpfbench ab' itself; leave it out of the run arguments");
        }
    }
    system::install_interrupt_handler();
    let (mut runs_a, mut runs_b) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Alternate which build goes first, so neither always runs second.
        let order = if round % 2 == 0 { [(a, true), (b, false)] } else { [(b, false), (a, true)] };
        for (binary, is_a) in order {
            if system::interrupted() {
                bail!("interrupted after {round} of {rounds} rounds");
            }
            eprintln!("bpfbench ab: round {} of {rounds}: {}", round + 1, binary.display());
            let report = one_run(binary, run_args)?;
            // Newest first, as comparisons take them.
            if is_a { runs_a.insert(0, report) } else { runs_b.insert(0, report) }
        }
    }
    let cmp = compare_runs(
        &runs_a,
        &format!("{} ({rounds} runs)", a.display()),
        &runs_b,
        &format!("{} ({rounds} runs, interleaved)", b.display()),
        gate.threshold / 100.0,
        &Default::default(),
    );
    if cmp.benchmarks.is_empty() {
        bail!("the two builds measured no benchmark in common");
    }
    print_comparison(&cmp, format, gate)
}
