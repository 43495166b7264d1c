//! Interleaved runs of two bpfbench builds (`bpfbench ab A B -- RUN_ARGS`).
//!
//! Runs of one build minutes apart can differ by 10% or more on a shared
//! machine (measured on this project's VM: phases of ~146 and ~165 ns/op for
//! the same code, lasting minutes), which no within-run statistic can see.
//! Alternating the builds puts both under the same phases; comparing the
//! runs' medians then measures the change, not the machine.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::record::{RunRecord, parse_run};
use crate::system::interrupt;

/// Options `ab` sets itself (the CPU both builds run on, the output it
/// reads); the run arguments of two executables must not carry them.
pub const RESERVED_RUN_ARGS: [&str; 5] = ["--cpu", "--format", "--output", "--compare-to", "--repeat"];

/// Fails with one line on a run argument `ab` sets itself.
pub fn check_run_args(run_args: &[String]) -> Result<()> {
    for reserved in RESERVED_RUN_ARGS {
        if run_args.iter().any(|x| x == reserved) {
            bail!("{reserved} is set by 'bpfbench ab' itself; leave it out of the run arguments");
        }
    }
    Ok(())
}

/// `run RUN_ARGS OWN`, with `own` (the options bpfbench sets itself) before
/// a `--` in the run's arguments, where what follows is a command's
/// (`overhead -- opensnoop`, `--trigger -- CMD`).
pub(crate) fn run_arguments(run_args: &[String], own: &[String]) -> Vec<String> {
    let split = run_args.iter().position(|a| a == "--").unwrap_or(run_args.len());
    let mut words = vec!["run".to_string()];
    words.extend(run_args[..split].iter().cloned());
    words.extend(own.iter().cloned());
    words.extend(run_args[split..].iter().cloned());
    words
}

/// Runs `binary run RUN_ARGS --cpu CPU --format json --no-store` and reads its record.
fn one_run(binary: &Path, run_args: &[String], cpu: usize) -> Result<RunRecord> {
    let own = ["--cpu", &cpu.to_string(), "--format", "json", "--no-store"].map(String::from);
    let out = Command::new(binary)
        .args(run_arguments(run_args, &own))
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !out.status.success() {
        bail!("{} run failed ({}); see its messages above", binary.display(), out.status);
    }
    let text = String::from_utf8(out.stdout).context("the run's output is not UTF-8")?;
    parse_run(&text).with_context(|| format!("the output of {}", binary.display()))
}

/// Runs the two builds `rounds` times each on `cpu`, alternating which
/// goes first. Returns each build's runs, newest first. `on_run(round,
/// binary)` is told before each run starts.
pub fn interleave(
    a: &Path,
    b: &Path,
    rounds: usize,
    run_args: &[String],
    cpu: usize,
    mut on_run: impl FnMut(usize, &Path),
) -> Result<(Vec<RunRecord>, Vec<RunRecord>)> {
    for p in [a, b] {
        if !p.is_file() {
            bail!("{} is not a file; give the paths of two bpfbench binaries", p.display());
        }
    }
    check_run_args(run_args)?;
    interrupt::install_handler();
    let (mut runs_a, mut runs_b) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = if round % 2 == 0 { [(a, true), (b, false)] } else { [(b, false), (a, true)] };
        for (binary, is_a) in order {
            if interrupt::interrupted() {
                bail!("interrupted after {round} of {rounds} rounds");
            }
            on_run(round + 1, binary);
            let record = one_run(binary, run_args, cpu)?;
            if is_a { runs_a.insert(0, record) } else { runs_b.insert(0, record) }
        }
    }
    Ok((runs_a, runs_b))
}
