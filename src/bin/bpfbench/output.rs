//! Writing results where the user asked, and the comparison output the
//! commands share.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

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
            // Written beside the target and renamed over it, so a reader
            // never sees half a file; errors name the file asked for.
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !dir.is_dir() {
                bail!(
                    "cannot write {}: the folder {} does not exist; create it or give another path",
                    p.display(),
                    dir.display()
                );
            }
            let tmp = p.with_extension("partial");
            let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, p));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&tmp);
                bail!("cannot write {}: {e}", p.display());
            }
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
