//! What `run`, `ab` and `compare` share: a comparison printed and gated.

use std::process::ExitCode;

use anyhow::Result;

use bpfbench::compare::{Gate, GateDecision};
use bpfbench::record::ComparisonRecord;
use bpfbench::report::render_as;
use bpfbench::session::output::{OutputArgs, gate_lines};

/// Prints the regressions the gate confirmed; the exit code it implies.
pub fn gate_exit(decision: &GateDecision, gate: &Gate, against: &str) -> ExitCode {
    gate_lines(decision, gate, against).iter().for_each(|l| eprintln!("bpfbench: {l}"));
    if decision.failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Writes a comparison where asked and applies the gate (no re-measurement).
pub fn print_comparison(cmp: &ComparisonRecord, out: &OutputArgs, gate: &Gate) -> Result<ExitCode> {
    out.emit(&render_as(cmp, out.format)?)?;
    let decision = gate.decide(cmp, 0, |_, _| unreachable!("no re-measurement without --confirm"))?;
    Ok(gate_exit(&decision, gate, &cmp.a))
}
