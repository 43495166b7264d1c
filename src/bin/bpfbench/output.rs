//! Writing results where the user asked, and the comparison output the
//! commands share.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use bpfbench::compare::{Gate, GateDecision};
use bpfbench::record::ComparisonRecord;
use bpfbench::report::{Format, compare_table, render_as};

/// Writes `text` to `path` (whole or not at all), or to standard output.
pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    match path {
        None => {
            print!("{text}");
            Ok(())
        }
        Some(p) => {
            let tmp = p.with_extension("partial");
            std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, p).with_context(|| format!("writing {}", p.display()))?;
            eprintln!("bpfbench: wrote {}", p.display());
            Ok(())
        }
    }
}

/// Prints the regressions the gate confirmed; the exit code it implies.
pub fn gate_exit(decision: &GateDecision, gate: &Gate, against: &str) -> ExitCode {
    for (name, round) in &decision.cleared {
        eprintln!("bpfbench: {name}: not slower on re-measurement {round}; counted as noise");
    }
    for b in &decision.regressions {
        eprintln!("bpfbench: {}", compare_table::regression_line(b, against, gate.fail_on_regression.unwrap_or(0.0)));
    }
    for d in &decision.instruction_regressions {
        eprintln!(
            "bpfbench: {}",
            compare_table::instruction_regression_line(d, against, gate.fail_on_regression.unwrap_or(0.0))
        );
    }
    if decision.failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Prints a comparison in `format` and applies the gate (no re-measurement).
pub fn print_comparison(cmp: &ComparisonRecord, format: Format, gate: &Gate) -> Result<ExitCode> {
    print!("{}", render_as(cmp, format)?);
    let decision = gate.decide(cmp, 0, |_, _| unreachable!("no re-measurement without --confirm"))?;
    Ok(gate_exit(&decision, gate, &cmp.a))
}
